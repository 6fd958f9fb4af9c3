/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cubelet timeline [POD...] [-n NAMESPACE] [-w|--watch] [-o text|json|trace]
 *                  [--history=false] [--endpoint URL]
 *
 * Each pod's phase-transition timeline: its steps with their offset from
 * the first, the time since the step before with a proportional bar, its
 * phases as spans, and the status changes and spec changes cubelet saw.
 * The data comes from the running agent's local endpoint (/timelines, the
 * address in <root-dir>/endpoint.address and the token in
 * <root-dir>/endpoint.token, both written by the agent), or, when no agent
 * answers there, from the state dir: the timeline each pod worker saves in
 * <root-dir>/pods/<uid>/worker.json (steps only; the history lives in the
 * agent's memory).
 *
 * POD is NAME, NAMESPACE/NAME or a uid; none: every pod. -n keeps one
 * namespace (without it, every namespace: the node's view). -w follows the
 * agent's event stream (/timelines?watch=true; no polling) and prints each
 * step and history entry as it happens, after the current view. -o json is
 * the /timelines document (with -w: one {"event","data"} line per change);
 * -o trace the Trace Event Format (agent/core/trace.h). --history=false
 * leaves the status and spec changes and events out of the text view.
 */
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/cmd/cli.h"
#include "agent/core/trace.h"
#include "lib/cleanup.h"
#include "lib/file.h"
#include "lib/json.h"

#define BAR_WIDTH 30

struct opts {
        const char *ns;
        const char *output; /* text, json, trace */
        bool watch;
        bool no_history; /* --history=false: steps and phases only */
        const char *endpoint;
        char **pods;
        int n_pods;
};

/* ---- where the data comes from ---- */

static char *read_trimmed(const char *path)
{
        char *buf = NULL;
        size_t len = 0;
        struct cb_error err = {0};
        if (cb_read_file(path, 4096, &buf, &len, &err) < 0)
                return NULL;
        while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
                buf[--len] = '\0';
        return buf;
}

struct body {
        char *p;
        size_t n;
};

static size_t collect(char *ptr, size_t size, size_t nmemb, void *data)
{
        struct body *b = data;
        size_t n = size * nmemb;
        char *np = realloc(b->p, b->n + n + 1);
        if (np == NULL)
                return 0;
        memcpy(np + b->n, ptr, n);
        b->n += n;
        np[b->n] = '\0';
        b->p = np;
        return n;
}

/* GET base+path with the token: 0 and the body, or -1 with err. */
static int fetch(const char *base, const char *token, const char *path, char **ret,
                 struct cb_error *err)
{
        CURL *c = curl_easy_init();
        if (c == NULL)
                return cb_error_set(err, 0, "cannot initialize libcurl");
        char url[1200], auth[300];
        snprintf(url, sizeof(url), "%s%s", base, path);
        snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
        struct curl_slist *h = curl_slist_append(NULL, auth);
        struct body b = {0};
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
        curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
        CURLcode rc = curl_easy_perform(c);
        long status = 0;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        curl_slist_free_all(h);
        curl_easy_cleanup(c);
        if (rc != CURLE_OK || status != 200) {
                int r = rc != CURLE_OK ? cb_error_set(err, 0, "%s: %s", url, curl_easy_strerror(rc))
                                       : cb_error_set(err, 0, "%s: HTTP %ld: %.200s", url, status,
                                                      b.p ? b.p : "");
                free(b.p);
                return r;
        }
        *ret = b.p != NULL ? b.p : strdup("");
        return 0;
}

/* The agent's endpoint (base URL) and token from the root dir; -1 when the
 * agent did not leave them (not running, or --healthz-port 0). */
static int agent_address(const char *root, const struct opts *o, char *base, size_t size,
                         char *token, size_t tsize, struct cb_error *err)
{
        char path[4200];
        snprintf(path, sizeof(path), "%s/endpoint.token", root);
        _cleanup_free_ char *t = read_trimmed(path);
        if (t == NULL)
                return cb_error_set(err, errno, "%s: cannot read the endpoint's token", path);
        snprintf(token, tsize, "%s", t);
        if (o->endpoint != NULL) {
                snprintf(base, size, "%s", o->endpoint);
                return 0;
        }
        snprintf(path, sizeof(path), "%s/endpoint.address", root);
        _cleanup_free_ char *a = read_trimmed(path);
        if (a == NULL)
                return cb_error_set(err, errno, "%s: no endpoint address (is the agent running?)",
                                    path);
        snprintf(base, size, "%s", a);
        return 0;
}

/* The state dir's view: each pod's worker.json timeline and pod.json name. */
static cJSON *from_state_dir(const char *root, struct cb_error *err)
{
        char dir[4200];
        snprintf(dir, sizeof(dir), "%s/pods", root);
        DIR *d = opendir(dir);
        if (d == NULL)
                return cb_error_set(err, errno, "%s", dir), NULL;
        cJSON *doc = cJSON_CreateObject();
        cJSON *arr = cJSON_AddArrayToObject(doc, "pods");
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
                if (de->d_name[0] == '.')
                        continue;
                char path[4500];
                char *text = NULL;
                size_t len;
                struct cb_error e2 = {0};
                snprintf(path, sizeof(path), "%s/%s/worker.json", dir, de->d_name);
                if (cb_read_file(path, 4u << 20, &text, &len, &e2) < 0)
                        continue;
                cJSON *w = cJSON_Parse(text);
                free(text);
                text = NULL;
                snprintf(path, sizeof(path), "%s/%s/pod.json", dir, de->d_name);
                cJSON *pod = NULL;
                if (cb_read_file(path, 4u << 20, &text, &len, &e2) == 0)
                        pod = cJSON_Parse(text);
                free(text);
                const cJSON *meta = cJSON_GetObjectItemCaseSensitive(pod, "metadata");
                cJSON *e = cJSON_CreateObject();
                cJSON_AddStringToObject(
                    e, "namespace",
                    cb_json_str(meta, "namespace")[0] ? cb_json_str(meta, "namespace") : "default");
                cJSON_AddStringToObject(e, "name", cb_json_str(meta, "name"));
                cJSON_AddStringToObject(e, "uid", de->d_name);
                cJSON *tl = cJSON_DetachItemFromObjectCaseSensitive(w, "timeline");
                cJSON_AddItemToObject(e, "timeline", tl ? tl : cJSON_CreateArray());
                cJSON_AddItemToObject(e, "history", cJSON_CreateArray());
                cJSON_AddItemToArray(arr, e);
                cJSON_Delete(w);
                cJSON_Delete(pod);
        }
        closedir(d);
        return doc;
}

/* ---- which pods ---- */

static bool wanted(const struct opts *o, const char *ns, const char *name, const char *uid)
{
        if (o->ns != NULL && strcmp(o->ns, ns) != 0)
                return false;
        if (o->n_pods == 0)
                return true;
        for (int i = 0; i < o->n_pods; i++) {
                const char *p = o->pods[i], *slash = strchr(p, '/');
                if (strcmp(p, uid) == 0 || (slash == NULL && strcmp(p, name) == 0) ||
                    (slash != NULL && strncmp(p, ns, (size_t)(slash - p)) == 0 &&
                     ns[slash - p] == '\0' && strcmp(slash + 1, name) == 0))
                        return true;
        }
        return false;
}

static void filter(cJSON *doc, const struct opts *o)
{
        cJSON *pods = cJSON_GetObjectItemCaseSensitive(doc, "pods");
        for (int i = cJSON_GetArraySize(pods) - 1; i >= 0; i--) {
                const cJSON *p = cJSON_GetArrayItem(pods, i);
                if (!wanted(o, cb_json_str(p, "namespace"), cb_json_str(p, "name"),
                            cb_json_str(p, "uid")))
                        cJSON_DeleteItemFromArray(pods, i);
        }
}

/* ---- the text view ---- */

static void fmt_ms(char *buf, size_t size, double us)
{
        snprintf(buf, size, "%.1fms", us / 1000.0);
}

static void print_diff(const cJSON *diff, const char *indent)
{
        const cJSON *op;
        cJSON_ArrayForEach(op, diff)
        {
                char *o = cJSON_GetObjectItemCaseSensitive(op, "old")
                              ? cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(op, "old"))
                              : NULL;
                char *n = cJSON_GetObjectItemCaseSensitive(op, "new")
                              ? cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(op, "new"))
                              : NULL;
                if (strcmp(cb_json_str(op, "op"), "truncated") == 0)
                        printf("%s(%d more)\n", indent, (int)cb_json_num(op, "omitted"));
                else
                        printf("%s%-6s %s%s%.120s%s%.120s\n", indent, cb_json_str(op, "op"),
                               cb_json_str(op, "path"), o ? "  " : "", o ? o : "",
                               n ? (o ? " -> " : "  ") : "", n ? n : "");
                free(o);
                free(n);
        }
}

static void print_pod(const cJSON *p, bool history)
{
        const cJSON *tl = cJSON_GetObjectItemCaseSensitive(p, "timeline");
        const cJSON *hist = cJSON_GetObjectItemCaseSensitive(p, "history");
        const char *phase = "";
        double max = 1, prev = 0, last = 0;
        const cJSON *s;
        cJSON_ArrayForEach(s, tl)
        {
                double off = cb_json_num(s, "offsetUs");
                if (off - prev > max)
                        max = off - prev;
                prev = last = off;
                if (strncmp(cb_json_str(s, "step"), "phase:", 6) == 0)
                        phase = cb_json_str(s, "step") + 6;
        }
        printf("%s/%s  uid %s  phase %s%s\n", cb_json_str(p, "namespace"), cb_json_str(p, "name"),
               cb_json_str(p, "uid"), phase[0] ? phase : "-",
               cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "gone")) ? "  (gone)" : "");
        if (cJSON_GetArraySize(tl) == 0)
                printf("  (no steps yet)\n");
        else
                printf("  %-32s %12s %12s  %s\n", "STEP", "OFFSET", "+SINCE PREV", "");
        prev = 0;
        cJSON_ArrayForEach(s, tl)
        {
                double off = cb_json_num(s, "offsetUs");
                char a[32], b[32], bar[BAR_WIDTH + 1];
                fmt_ms(a, sizeof(a), off);
                fmt_ms(b, sizeof(b), off - prev);
                int w = (int)((off - prev) / max * BAR_WIDTH + 0.5);
                memset(bar, '#', (size_t)w);
                bar[w] = '\0';
                printf("  %-32s %12s %12s  |%s\n", cb_json_str(s, "step"), a, b, bar);
                prev = off;
        }
        /* The phases as spans. */
        const char *open = NULL;
        double from = 0;
        bool first = true;
        cJSON_ArrayForEach(s, tl)
        {
                if (strncmp(cb_json_str(s, "step"), "phase:", 6) != 0)
                        continue;
                double off = cb_json_num(s, "offsetUs");
                char a[32], b[32];
                if (open != NULL) {
                        fmt_ms(a, sizeof(a), from);
                        fmt_ms(b, sizeof(b), off - from);
                        printf("%s%s from %s for %s", first ? "  phases: " : ", ", open, a, b);
                        first = false;
                }
                open = cb_json_str(s, "step") + 6;
                from = off;
        }
        if (open != NULL) {
                char a[32];
                fmt_ms(a, sizeof(a), from);
                bool gone = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "gone"));
                char b[32];
                fmt_ms(b, sizeof(b), last - from);
                printf("%s%s from %s %s %s%s\n", first ? "  phases: " : ", ", open, a,
                       gone ? "for" : "(still; last step", b, gone ? "" : " later)");
        }
        if (!history)
                hist = NULL;
        if (cJSON_GetArraySize(hist) > 0)
                printf("  history:\n");
        const cJSON *h;
        cJSON_ArrayForEach(h, hist)
        {
                char a[32];
                fmt_ms(a, sizeof(a), cb_json_num(h, "offsetUs"));
                const char *kind = cb_json_str(h, "kind");
                if (strcmp(kind, "status") == 0) {
                        printf("    %10s  status sent%s%s%s\n", a,
                               cb_json_str(h, "phase")[0] ? " (" : "", cb_json_str(h, "phase"),
                               cb_json_str(h, "phase")[0] ? ")" : "");
                        print_diff(cJSON_GetObjectItemCaseSensitive(h, "diff"),
                                   "                  ");
                } else if (strcmp(kind, "statusAck") == 0) {
                        printf("    %10s  status %s (%d)\n", a,
                               cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(h, "accepted"))
                                   ? "acknowledged"
                                   : "not accepted",
                               (int)cb_json_num(h, "code"));
                } else if (strcmp(kind, "spec") == 0) {
                        printf("    %10s  spec change of %s\n", a, cb_json_str(h, "object"));
                        print_diff(cJSON_GetObjectItemCaseSensitive(h, "diff"),
                                   "                  ");
                } else if (strcmp(kind, "event") == 0) {
                        printf("    %10s  event %s %s: %s\n", a, cb_json_str(h, "type"),
                               cb_json_str(h, "reason"), cb_json_str(h, "message"));
                }
        }
        printf("\n");
}

static int print_doc(cJSON *doc, const struct opts *o)
{
        if (strcmp(o->output, "json") == 0 || strcmp(o->output, "trace") == 0) {
                cJSON *out = doc;
                if (strcmp(o->output, "trace") == 0) {
                        struct timespec ts;
                        clock_gettime(CLOCK_REALTIME, &ts);
                        out = ag_trace_from_timelines(doc, (int64_t)ts.tv_sec * 1000000 +
                                                               ts.tv_nsec / 1000);
                }
                char *text = out ? cJSON_Print(out) : NULL;
                if (out != doc)
                        cJSON_Delete(out);
                if (text == NULL)
                        return 1;
                printf("%s\n", text);
                free(text);
                return 0;
        }
        const cJSON *p;
        cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(doc, "pods"))
            print_pod(p, !o->no_history);
        if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "pods")) > 0)
                return 0;
        if (o->n_pods == 0) {
                printf("no pods%s\n", o->ns ? " in that namespace" : "");
                return 0;
        }
        /* As kubectl get: a pod asked for by name that is not there is an error. */
        fprintf(stderr,
                "cubelet timeline: no pod %s%s%s on this node (NAME, NAMESPACE/NAME or uid)\n",
                o->pods[0], o->ns ? " in namespace " : "", o->ns ? o->ns : "");
        return 1;
}

/* ---- -w: the event stream ---- */

struct watch {
        const struct opts *o;
        cJSON *names; /* uid -> "ns/name" of wanted pods */
        struct body buf;
        bool json;
};

static void note_pod(struct watch *w, const cJSON *p)
{
        const char *uid = cb_json_str(p, "uid");
        cJSON_DeleteItemFromObjectCaseSensitive(w->names, uid);
        if (!wanted(w->o, cb_json_str(p, "namespace"), cb_json_str(p, "name"), uid))
                return;
        char n[600];
        snprintf(n, sizeof(n), "%s/%s", cb_json_str(p, "namespace"), cb_json_str(p, "name"));
        cJSON_AddStringToObject(w->names, uid, n);
}

static void clock_now(char *buf, size_t size)
{
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        struct tm tm;
        localtime_r(&ts.tv_sec, &tm);
        snprintf(buf, size, "%02d:%02d:%02d.%03d", tm.tm_hour, tm.tm_min, tm.tm_sec,
                 (int)(ts.tv_nsec / 1000000));
}

/* -w -o json: one {"event","data"} line; takes data. */
static void print_json_line(const char *event, cJSON *data)
{
        cJSON *line = cJSON_CreateObject();
        if (line == NULL || !cJSON_AddStringToObject(line, "event", event) ||
            !cJSON_AddItemToObject(line, "data", data)) {
                cJSON_Delete(line);
                cJSON_Delete(data);
                return;
        }
        char *t = cJSON_PrintUnformatted(line);
        printf("%s\n", t ? t : "");
        free(t);
        cJSON_Delete(line);
}

static void on_event(struct watch *w, const char *event, const char *data)
{
        cJSON *d = cJSON_Parse(data);
        if (d == NULL)
                return;
        if (strcmp(event, "snapshot") == 0) {
                cJSON_Delete(w->names);
                w->names = cJSON_CreateObject();
                const cJSON *p;
                cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(d, "pods")) note_pod(w, p);
                filter(d, w->o);
                if (w->json) {
                        print_json_line(event, d);
                } else {
                        print_doc(d, w->o);
                        printf("--- following (Ctrl-C to stop)\n");
                        cJSON_Delete(d);
                }
                fflush(stdout);
                return;
        }
        if (strcmp(event, "pod") == 0)
                note_pod(w, d);
        const char *name = cb_json_str(w->names, cb_json_str(d, "uid"));
        if (name[0] == '\0') {
                cJSON_Delete(d);
                return; /* not a pod asked for */
        }
        if (w->json) {
                print_json_line(event, d);
                fflush(stdout);
                return;
        }
        char now[32], off[32];
        clock_now(now, sizeof(now));
        if (strcmp(event, "step") == 0) {
                fmt_ms(off, sizeof(off), cb_json_num(d, "offsetUs"));
                printf("%s  %-40s %12s  %s\n", now, name, off, cb_json_str(d, "step"));
        } else if (strcmp(event, "pod") == 0) {
                printf("%s  %-40s %12s  %s\n", now, name, "",
                       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(d, "gone")) ? "(gone)"
                                                                                 : "(seen)");
        } else if (strcmp(event, "entry") == 0) {
                const cJSON *e = cJSON_GetObjectItemCaseSensitive(d, "entry");
                fmt_ms(off, sizeof(off), cb_json_num(e, "offsetUs"));
                const char *kind = cb_json_str(e, "kind");
                if (strcmp(kind, "event") == 0)
                        printf("%s  %-40s %12s  event %s %s: %s\n", now, name, off,
                               cb_json_str(e, "type"), cb_json_str(e, "reason"),
                               cb_json_str(e, "message"));
                else if (strcmp(kind, "statusAck") == 0)
                        printf("%s  %-40s %12s  status %s (%d)\n", now, name, off,
                               cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "accepted"))
                                   ? "acknowledged"
                                   : "not accepted",
                               (int)cb_json_num(e, "code"));
                else {
                        printf("%s  %-40s %12s  %s%s\n", now, name, off,
                               strcmp(kind, "status") == 0 ? "status sent" : "spec change of ",
                               strcmp(kind, "status") == 0 ? "" : cb_json_str(e, "object"));
                        print_diff(cJSON_GetObjectItemCaseSensitive(e, "diff"),
                                   "                                                  ");
                }
        }
        fflush(stdout);
        cJSON_Delete(d);
}

/* Splits the stream into messages ("\n\n"), each "event:" and "data:" lines. */
static size_t on_stream(char *ptr, size_t size, size_t nmemb, void *data)
{
        struct watch *w = data;
        size_t n = collect(ptr, size, nmemb, &w->buf);
        if (n == 0)
                return 0;
        char *start = w->buf.p, *end;
        while ((end = strstr(start, "\n\n")) != NULL) {
                *end = '\0';
                char event[64] = "message";
                const char *payload = NULL;
                for (char *line = start, *next; line != NULL; line = next) {
                        next = strchr(line, '\n');
                        if (next != NULL)
                                *next++ = '\0';
                        if (strncmp(line, "event: ", 7) == 0)
                                snprintf(event, sizeof(event), "%s", line + 7);
                        else if (strncmp(line, "data: ", 6) == 0)
                                payload = line + 6;
                }
                if (payload != NULL)
                        on_event(w, event, payload);
                start = end + 2;
        }
        size_t rest = w->buf.n - (size_t)(start - w->buf.p);
        memmove(w->buf.p, start, rest);
        w->buf.n = rest;
        w->buf.p[rest] = '\0';
        return n;
}

static int follow(const char *base, const char *token, const struct opts *o)
{
        CURL *c = curl_easy_init();
        if (c == NULL)
                return 1;
        char url[1200], auth[300];
        snprintf(url, sizeof(url), "%s/timelines?watch=true", base);
        snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
        struct curl_slist *h = curl_slist_append(NULL, auth);
        struct watch w = {
            .o = o, .names = cJSON_CreateObject(), .json = strcmp(o->output, "json") == 0};
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_stream);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &w);
        /* No overall timeout: the stream lasts; a dead agent is noticed
         * by its keepalive comments stopping (every 15 s). */
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 45L);
        CURLcode rc = curl_easy_perform(c);
        long status = 0;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        curl_slist_free_all(h);
        curl_easy_cleanup(c);
        free(w.buf.p);
        cJSON_Delete(w.names);
        if (status != 200 && status != 0) {
                fprintf(stderr, "cubelet timeline: %s: HTTP %ld\n", url, status);
                return 1;
        }
        fprintf(stderr, "cubelet timeline: the agent's event stream ended: %s\n",
                rc == CURLE_OK ? "the agent stopped" : curl_easy_strerror(rc));
        return 1;
}

static int usage(void)
{
        fprintf(stderr, "usage: cubelet timeline [POD...] [-n NAMESPACE] [-w|--watch] "
                        "[-o text|json|trace] [--history=false] [--endpoint URL]\n"
                        "  POD is NAME, NAMESPACE/NAME or a uid (none: every pod on the node)\n");
        return 2;
}

int cmd_timeline(int argc, char **argv, const struct cb_global_opts *g)
{
        struct opts o = {.output = "text"};
        _cleanup_free_ char **pods = calloc((size_t)argc + 1, sizeof(char *));
        if (pods == NULL)
                return 1;
        o.pods = pods;
        for (int i = 1; i < argc; i++) {
                const char *a = argv[i];
                const char *v = NULL;
                if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
                        usage();
                        return 0;
                }
                if (strcmp(a, "--history=false") == 0 || strcmp(a, "--history=true") == 0 ||
                    strcmp(a, "--history") == 0) {
                        o.no_history = strcmp(a, "--history=false") == 0;
                        continue;
                }
                if (strcmp(a, "-w") == 0 || strcmp(a, "--watch") == 0) {
                        o.watch = true;
                        continue;
                }
                static const char *const flags[][2] = {
                    {"-n", "--namespace"}, {"-o", "--output"}, {"--endpoint", "--endpoint"}};
                int which = -1;
                for (int k = 0; k < 3 && which < 0; k++)
                        for (int f = 0; f < 2; f++) {
                                size_t len = strlen(flags[k][f]);
                                if (strcmp(a, flags[k][f]) == 0 && i + 1 < argc) {
                                        v = argv[++i];
                                        which = k;
                                        break;
                                }
                                if (strncmp(a, flags[k][f], len) == 0 && a[len] == '=') {
                                        v = a + len + 1;
                                        which = k;
                                        break;
                                }
                        }
                if (which == 0)
                        o.ns = v;
                else if (which == 1)
                        o.output = v;
                else if (which == 2)
                        o.endpoint = v;
                else if (a[0] == '-')
                        return usage();
                else
                        o.pods[o.n_pods++] = argv[i];
        }
        if (strcmp(o.output, "text") != 0 && strcmp(o.output, "json") != 0 &&
            strcmp(o.output, "trace") != 0) {
                fprintf(stderr, "cubelet timeline: -o %s: want text, json or trace\n", o.output);
                return 2;
        }
        if (o.watch && strcmp(o.output, "trace") == 0) {
                fprintf(stderr, "cubelet timeline: -w with -o trace: a trace is a whole file; "
                                "use -o json to follow, or -o trace without -w\n");
                return 2;
        }
        curl_global_init(CURL_GLOBAL_DEFAULT);
        char base[1024], token[256];
        struct cb_error err = {0};
        bool have_agent =
            agent_address(g->root_dir, &o, base, sizeof(base), token, sizeof(token), &err) == 0;
        char *text = NULL;
        if (have_agent && fetch(base, token, "/timelines", &text, &err) < 0)
                have_agent = false;
        if (o.watch) {
                free(text);
                if (!have_agent) {
                        fprintf(stderr,
                                "cubelet timeline -w: %s: following needs the running "
                                "agent\n",
                                err.msg);
                        return 1;
                }
                return follow(base, token, &o);
        }
        cJSON *doc = NULL;
        if (have_agent) {
                doc = cJSON_Parse(text);
                free(text);
                if (doc == NULL) {
                        fprintf(stderr, "cubelet timeline: %s/timelines: not JSON\n", base);
                        return 1;
                }
        } else {
                fprintf(stderr,
                        "cubelet timeline: %s; reading the state dir %s/pods (steps only)\n",
                        err.msg, g->root_dir);
                struct cb_error e2 = {0};
                doc = from_state_dir(g->root_dir, &e2);
                if (doc == NULL) {
                        fprintf(stderr, "cubelet timeline: %s\n", e2.msg);
                        return 1;
                }
        }
        filter(doc, &o);
        int r = print_doc(doc, &o);
        cJSON_Delete(doc);
        return r;
}
