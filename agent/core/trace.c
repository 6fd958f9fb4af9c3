/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/core/trace.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/json.h"

/* Threads (tracks) of one pod: 1 = the pod, 2.. = containers. */
#define MAX_TRACKS 64

struct ev {
        int pid, tid;
        int64_t ts;
        unsigned seq; /* emission order: ties keep it */
        cJSON *json;
};

struct out {
        struct ev *evs;
        size_t n, cap;
        unsigned seq;
        int oom;
};

int64_t ag_trace_parse_time(const char *s)
{
        if (s == NULL)
                return -1;
        struct tm tm = {0};
        int n = 0;
        if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                   &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &n) != 6 ||
            n != 19)
                return -1;
        tm.tm_year -= 1900;
        tm.tm_mon -= 1;
        const char *p = s + n;
        int64_t frac = 0;
        if (*p == '.') {
                int digits = 0;
                for (p++; *p >= '0' && *p <= '9'; p++, digits++)
                        if (digits < 6)
                                frac = frac * 10 + (*p - '0');
                if (digits == 0)
                        return -1;
                for (; digits < 6; digits++)
                        frac *= 10;
        }
        if (strcmp(p, "Z") != 0)
                return -1;
        time_t t = timegm(&tm);
        if (t == (time_t)-1)
                return -1;
        return (int64_t)t * 1000000 + frac;
}

int ag_trace_step_container(const char *step, char *name, size_t size)
{
        const char *colon = step ? strchr(step, ':') : NULL;
        if (colon == NULL || colon[1] == '\0')
                return 0;
        size_t plen = (size_t)(colon - step);
        if ((plen == 5 && strncmp(step, "phase", 5) == 0) ||
            (plen == 15 && strncmp(step, "statusDelivered", 15) == 0))
                return 0;
        if (name != NULL)
                snprintf(name, size, "%s", colon + 1);
        return 1;
}

static cJSON *ev_new(struct out *o, int pid, int tid, int64_t ts, const char *ph, const char *name)
{
        if (o->oom)
                return NULL;
        if (o->n == o->cap) {
                size_t cap = o->cap ? o->cap * 2 : 256;
                struct ev *e = realloc(o->evs, cap * sizeof(*e));
                if (e == NULL) {
                        o->oom = 1;
                        return NULL;
                }
                o->evs = e;
                o->cap = cap;
        }
        cJSON *j = cJSON_CreateObject();
        if (j == NULL) {
                o->oom = 1;
                return NULL;
        }
        cJSON_AddStringToObject(j, "name", name);
        cJSON_AddStringToObject(j, "ph", ph);
        cJSON_AddNumberToObject(j, "pid", pid);
        cJSON_AddNumberToObject(j, "tid", tid);
        if (strcmp(ph, "M") != 0)
                cJSON_AddNumberToObject(j, "ts", (double)ts);
        o->evs[o->n++] = (struct ev){pid, tid, strcmp(ph, "M") == 0 ? -1 : ts, o->seq++, j};
        return j;
}

static void meta(struct out *o, int pid, int tid, const char *what, const char *value)
{
        cJSON *j = ev_new(o, pid, tid, 0, "M", what);
        if (j != NULL)
                cJSON_AddStringToObject(cJSON_AddObjectToObject(j, "args"), "name", value);
}

static void span(struct out *o, int pid, int tid, int64_t ts, int64_t end, const char *name,
                 const char *cat, int restart)
{
        cJSON *j = ev_new(o, pid, tid, ts, "X", name);
        if (j == NULL)
                return;
        cJSON_AddNumberToObject(j, "dur", (double)(end > ts ? end - ts : 0));
        cJSON_AddStringToObject(j, "cat", cat);
        if (restart >= 0)
                cJSON_AddNumberToObject(cJSON_AddObjectToObject(j, "args"), "restart", restart);
}

static cJSON *instant(struct out *o, int pid, int tid, int64_t ts, const char *name,
                      const char *cat)
{
        cJSON *j = ev_new(o, pid, tid, ts, "i", name);
        if (j != NULL) {
                cJSON_AddStringToObject(j, "s", "t");
                cJSON_AddStringToObject(j, "cat", cat);
        }
        return j;
}

static int cmp_ev(const void *a, const void *b)
{
        const struct ev *x = a, *y = b;
        if (x->pid != y->pid)
                return x->pid < y->pid ? -1 : 1;
        if ((x->ts < 0) != (y->ts < 0)) /* metadata first */
                return x->ts < 0 ? -1 : 1;
        if (x->tid != y->tid)
                return x->tid < y->tid ? -1 : 1;
        if (x->ts != y->ts)
                return x->ts < y->ts ? -1 : 1;
        return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The wall µs of a pod's first step (its offsets count from it). */
static int64_t pod_start(const cJSON *pod)
{
        const cJSON *tl = cJSON_GetObjectItemCaseSensitive(pod, "timeline");
        const cJSON *first = cJSON_GetArrayItem(tl, 0);
        int64_t t = ag_trace_parse_time(cb_json_str(first, "time"));
        return t < 0 ? -1 : t - (int64_t)cb_json_num(first, "offsetUs");
}

struct tracks {
        char names[MAX_TRACKS][128];
        int n;
};

/* The thread of container name (new ones get the next tid; the last one
 * is shared when a pod has more than MAX_TRACKS - 1 containers). */
static int track_of(struct tracks *t, const char *name, struct out *o, int pid)
{
        for (int i = 0; i < t->n; i++)
                if (strcmp(t->names[i], name) == 0)
                        return i + 2;
        if (t->n == MAX_TRACKS - 1)
                return t->n + 1;
        snprintf(t->names[t->n], sizeof(t->names[0]), "%s", name);
        char label[160];
        snprintf(label, sizeof(label), "container %s", name);
        meta(o, pid, t->n + 2, "thread_name", label);
        return ++t->n + 1;
}

static void one_pod(struct out *o, const cJSON *pod, int pid, int64_t base, int64_t now_us)
{
        const cJSON *tl = cJSON_GetObjectItemCaseSensitive(pod, "timeline");
        int64_t start = pod_start(pod);
        if (start < 0 || !cJSON_IsArray(tl))
                return;
        start -= base;
        char label[600];
        snprintf(label, sizeof(label), "%s/%s", cb_json_str(pod, "namespace"),
                 cb_json_str(pod, "name"));
        meta(o, pid, 1, "process_name", label);
        meta(o, pid, 1, "thread_name", "pod");
        const cJSON *gone = cJSON_GetObjectItemCaseSensitive(pod, "gone");
        const cJSON *last = cJSON_GetArrayItem(tl, cJSON_GetArraySize(tl) - 1);
        int64_t end = start + (int64_t)cb_json_num(last, "offsetUs");
        if (!cJSON_IsTrue(gone) && now_us - base > end)
                end = now_us - base;

        struct tracks t = {.n = 0};
        /* Open spans: the pod's phase, and a run per container track. */
        char phase[64] = "";
        int64_t phase_ts = 0;
        int64_t run_ts[MAX_TRACKS];
        int runs[MAX_TRACKS] = {0};
        for (int i = 0; i < MAX_TRACKS; i++)
                run_ts[i] = -1;
        const cJSON *s;
        cJSON_ArrayForEach(s, tl)
        {
                const char *step = cb_json_str(s, "step");
                if (step[0] == '\0')
                        continue;
                int64_t ts = start + (int64_t)cb_json_num(s, "offsetUs");
                char cname[128];
                int tid = 1;
                if (ag_trace_step_container(step, cname, sizeof(cname)))
                        tid = track_of(&t, cname, o, pid);
                instant(o, pid, tid, ts, step, "step");
                if (strncmp(step, "phase:", 6) == 0) {
                        if (phase[0])
                                span(o, pid, 1, phase_ts, ts, phase, "phase", -1);
                        snprintf(phase, sizeof(phase), "%s", step + 6);
                        phase_ts = ts;
                } else if (tid > 1 && strncmp(step, "containerStarted:", 17) == 0) {
                        if (run_ts[tid - 2] >= 0) /* no exit seen: it ended here */
                                span(o, pid, tid, run_ts[tid - 2], ts, "running", "container",
                                     runs[tid - 2]++);
                        run_ts[tid - 2] = ts;
                } else if (tid > 1 && strncmp(step, "containerExited:", 16) == 0 &&
                           run_ts[tid - 2] >= 0) {
                        span(o, pid, tid, run_ts[tid - 2], ts, "running", "container",
                             runs[tid - 2]++);
                        run_ts[tid - 2] = -1;
                }
        }
        if (phase[0])
                span(o, pid, 1, phase_ts, end, phase, "phase", -1);
        for (int i = 0; i < t.n; i++)
                if (run_ts[i] >= 0)
                        span(o, pid, i + 2, run_ts[i], end, "running", "container", runs[i]);

        const cJSON *hist = cJSON_GetObjectItemCaseSensitive(pod, "history");
        const cJSON *h;
        cJSON_ArrayForEach(h, hist)
        {
                const char *kind = cb_json_str(h, "kind");
                char name[160];
                const char *reason = cb_json_str(h, "reason");
                snprintf(name, sizeof(name), "%s%s%s", kind[0] ? kind : "entry",
                         reason[0] ? " " : "", reason);
                cJSON *j = instant(o, pid, 1, start + (int64_t)cb_json_num(h, "offsetUs"), name,
                                   "history");
                if (j != NULL)
                        cJSON_AddItemToObject(j, "args", cJSON_Duplicate(h, true));
        }
}

cJSON *ag_trace_from_timelines(const cJSON *timelines, int64_t now_us)
{
        const cJSON *pods = cJSON_GetObjectItemCaseSensitive(timelines, "pods");
        int64_t base = -1;
        const cJSON *pod;
        cJSON_ArrayForEach(pod, pods)
        {
                int64_t s = pod_start(pod);
                if (s >= 0 && (base < 0 || s < base))
                        base = s;
        }
        if (base < 0)
                base = now_us > 0 ? now_us : 0;
        if (now_us <= 0)
                now_us = base;
        struct out o = {0};
        int pid = 0;
        cJSON_ArrayForEach(pod, pods) one_pod(&o, pod, ++pid, base, now_us);
        cJSON *root = cJSON_CreateObject();
        cJSON *arr = root ? cJSON_AddArrayToObject(root, "traceEvents") : NULL;
        if (o.oom || arr == NULL) {
                for (size_t i = 0; i < o.n; i++)
                        cJSON_Delete(o.evs[i].json);
                free(o.evs);
                cJSON_Delete(root);
                return NULL;
        }
        if (o.n > 0)
                qsort(o.evs, o.n, sizeof(o.evs[0]), cmp_ev);
        for (size_t i = 0; i < o.n; i++)
                cJSON_AddItemToArray(arr, o.evs[i].json);
        free(o.evs);
        cJSON_AddStringToObject(root, "displayTimeUnit", "ms");
        cJSON *other = cJSON_AddObjectToObject(root, "otherData");
        char ts[64];
        time_t sec = (time_t)(base / 1000000);
        struct tm tm;
        gmtime_r(&sec, &tm);
        snprintf(ts, sizeof(ts), "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                 (int)(base % 1000000));
        cJSON_AddStringToObject(other, "baseTime", ts);
        cJSON_AddNumberToObject(other, "baseTimeUs", (double)base);
        cJSON_AddStringToObject(other, "source", "cubelet /timelines");
        return root;
}
