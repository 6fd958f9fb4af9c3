/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/pods/podworker.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/pods/containerspec.h"
#include "agent/pods/hook.h"
#include "agent/core/offload.h"
#include "agent/pods/prober.h"
#include "agent/k8s/qos.h"
#include "agent/pods/statusgen.h"
#include "cgroups/cgroup.h"
#include "lib/cleanup.h"
#include "lib/file.h"
#include "runtime/container.h"
#include "runtime/image.h"
#include "runtime/sandbox.h"
#include "agent/pods/stats.h"
#include "status/podstatus.h"

#define REASON_MAX       64
#define MESSAGE_MAX      1024
#define SANDBOX_RETRY_MS 10000
#define HOOK_PRESTOP     1
#define HOOK_POSTSTART   2
/* An httpGet postStart hook has no deadline in the kubelet; cubelet gives it
 * this long. */
#define POSTSTART_HTTP_TIMEOUT_MS 60000

struct pull_job;
struct sandbox_job;
struct start_job;

struct ctr {
        const struct k8s_container *spec;
        bool init;
        struct ag_pod_worker *w;
        struct ag_container_obs obs;
        char id[RT_ID_MAX];       /* the current runtime container, "" when none */
        char cid[RT_ID_MAX + 16]; /* "cubelet://<id>" */
        char image[512], image_id[700];
        char wait_reason[REASON_MAX], wait_message[MESSAGE_MAX];
        char term_reason[REASON_MAX], term_message[MESSAGE_MAX], term_cid[RT_ID_MAX + 16];
        char last_reason[REASON_MAX], last_message[MESSAGE_MAX], last_cid[RT_ID_MAX + 16];
        bool running;
        bool exited;                    /* the current instance has terminated */
        struct st_container_state term; /* its terminated state, when exited */
        int stop_signal;                /* the image StopSignal, else SIGTERM */
        struct ag_prober *startup, *liveness, *readiness;
        struct ag_timer *kill_timer; /* SIGKILL after a failed liveness/startup probe */
        int hook_pidfd, hook_out;    /* a running preStop exec */
        struct ag_io *hook_io;
        struct ag_timer *hook_timer; /* a preStop sleep */
        bool in_prestop, signalled;
        bool in_poststart;              /* started; its postStart hook runs */
        int hook_kind;                  /* HOOK_PRESTOP / HOOK_POSTSTART while one runs */
        struct ag_http_hook *http_hook; /* an httpGet hook in flight */
        int exit_fd;
        struct ag_io *exit_io;
        struct st_backoff backoff;
        struct st_backoff pull_backoff;
        int64_t pull_failed_at;
        struct ag_timer *timer; /* restart or pull backoff */
        bool waiting_timer;
        struct pull_job *pull_job;   /* a pull in progress */
        struct start_job *start_job; /* a container being created and started */
        struct rt_image *pulled;     /* its result, not yet used */
};

struct ag_pod_worker {
        const struct ag_node_env *env;
        const struct ag_pod_worker_ops *ops;
        void *data;
        struct k8s_pod *pod;    /* the spec that runs */
        struct k8s_pod *latest; /* the newest API object, or NULL */
        struct ctr *ctrs;       /* init containers, then regular ones */
        size_t n_init, n;
        char pod_cgroup[1024];
        struct k8s_pod_cgroup_plan plan;
        bool have_plan;
        bool cgroup_created;
        bool sandbox_ready;
        struct sandbox_job *sandbox_job; /* being made, off the loop */
        struct rt_sandbox sandbox;
        char pod_ip_buf[2][64];
        const char *pod_ips[2];
        size_t n_pod_ips;
        int64_t start_time;
        enum st_phase phase; /* cached phase */
        char *last_status;   /* printed, to send only changes */
        char *saved;         /* worker.json as last written */
        cJSON *status;
        struct ag_timer *kick; /* run advance() from the loop */
        struct ag_timer *sandbox_timer;
        struct ag_timer *deadline; /* activeDeadlineSeconds */
        struct ag_timer *grace;    /* termination grace period */
        bool terminating, killed, torn_down, done;
        bool adopted;               /* state from an earlier agent was found */
        bool grace_extended;        /* the 2 s after a preStop hook used the grace period */
        uint64_t grace_deadline_ms; /* when the grace period ends (monotonic) */
        struct step {
                char name[96];
                uint64_t mono_us; /* CLOCK_MONOTONIC */
                int64_t wall_us;  /* CLOCK_REALTIME */
        } steps[AG_TIMELINE_MAX];
        size_t n_steps;
        enum st_phase forced;
        char reason[REASON_MAX], message[MESSAGE_MAX];
};

static void advance(struct ag_pod_worker *w);

static int64_t now_s(void)
{
        return (int64_t)time(NULL);
}

static const char *pod_ns(const struct k8s_pod *p)
{
        return p->meta.namespace_ ? p->meta.namespace_ : "default";
}

static void emit_event(struct ag_pod_worker *w, const struct ctr *c, const char *type,
                       const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static void emit_event(struct ag_pod_worker *w, const struct ctr *c, const char *type,
                       const char *reason, const char *fmt, ...)
{
        if (w->ops->event == NULL)
                return;
        char msg[MESSAGE_MAX], path[512] = "";
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        if (c != NULL)
                snprintf(path, sizeof(path), "spec.%s{%s}",
                         c->init ? "initContainers" : "containers", c->spec->name);
        w->ops->event(w, type, reason, msg, c ? path : NULL, w->data);
}

/* ---- the phase-transition timeline ------------------------------------------ */

void ag_pod_worker_mark(struct ag_pod_worker *w, const char *step, const char *container)
{
        if (w->n_steps >= AG_TIMELINE_MAX)
                return;
        struct step *st = &w->steps[w->n_steps++];
        snprintf(st->name, sizeof(st->name), "%s%s%s", step, container ? ":" : "",
                 container ? container : "");
        struct timespec m, r;
        clock_gettime(CLOCK_MONOTONIC, &m);
        clock_gettime(CLOCK_REALTIME, &r);
        st->mono_us = (uint64_t)m.tv_sec * 1000000u + (uint64_t)m.tv_nsec / 1000u;
        st->wall_us = (int64_t)r.tv_sec * 1000000 + r.tv_nsec / 1000;
        if (w->ops->timeline != NULL)
                w->ops->timeline(w, st->name, st->mono_us - w->steps[0].mono_us, w->data);
}

cJSON *ag_pod_worker_timeline_json(const struct ag_pod_worker *w)
{
        cJSON *arr = cJSON_CreateArray();
        for (size_t i = 0; arr != NULL && i < w->n_steps; i++) {
                const struct step *st = &w->steps[i];
                cJSON *o = cJSON_CreateObject();
                cJSON_AddStringToObject(o, "step", st->name);
                cJSON_AddNumberToObject(o, "offsetUs", (double)(st->mono_us - w->steps[0].mono_us));
                char ts[96];
                time_t sec = (time_t)(st->wall_us / 1000000);
                struct tm tm;
                gmtime_r(&sec, &tm);
                snprintf(ts, sizeof(ts), "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", tm.tm_year + 1900,
                         tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                         (int)((uint64_t)st->wall_us % 1000000u));
                cJSON_AddStringToObject(o, "time", ts);
                cJSON_AddItemToArray(arr, o);
        }
        return arr;
}

/* ---- status ----------------------------------------------------------------- */

static void fill_obs(struct ctr *c)
{
        struct ag_container_obs *o = &c->obs;
        o->image = c->image[0] ? c->image : NULL;
        o->image_id = c->image_id[0] ? c->image_id : NULL;
        o->container_id = c->cid[0] ? c->cid : NULL;
        if (c->running && c->in_poststart) {
                /* Not Running until its postStart hook has completed. */
                o->known = true;
                o->state.kind = ST_STATE_WAITING;
                o->state.reason = "ContainerCreating";
                o->state.message = NULL;
        } else if (c->running) {
                o->known = true;
                o->state.kind = ST_STATE_RUNNING;
                o->state.reason = o->state.message = NULL;
        } else if (c->wait_reason[0]) {
                o->state.kind = ST_STATE_WAITING;
                o->state.reason = c->wait_reason;
                o->state.message = c->wait_message[0] ? c->wait_message : NULL;
        } else if (c->exited) {
                o->known = true;
                o->state = c->term;
                o->state.reason = c->term_reason;
                o->state.message = c->term_message[0] ? c->term_message : NULL;
                o->state.container_id = c->term_cid;
        }
        if (o->last_state.kind == ST_STATE_TERMINATED) {
                o->last_state.reason = c->last_reason;
                o->last_state.message = c->last_message[0] ? c->last_message : NULL;
                o->last_state.container_id = c->last_cid;
        }
}

static void compute_status(struct ag_pod_worker *w)
{
        struct ag_container_obs *init = calloc(w->n_init + 1, sizeof(*init));
        struct ag_container_obs *reg = calloc(w->n - w->n_init + 1, sizeof(*reg));
        if (init == NULL || reg == NULL)
                goto out;
        for (size_t i = 0; i < w->n; i++) {
                fill_obs(&w->ctrs[i]);
                if (i < w->n_init)
                        init[i] = w->ctrs[i].obs;
                else
                        reg[i - w->n_init] = w->ctrs[i].obs;
        }
        const struct k8s_pod *api = w->latest ? w->latest : w->pod;
        struct ag_pod_obs obs = {
            .init_containers = init,
            .containers = reg,
            .cached_phase = w->phase,
            .is_terminal = w->terminating,
            .sandbox_ready = w->sandbox_ready,
            .pod_ips = w->pod_ips,
            .n_pod_ips = w->n_pod_ips,
            .host_ips = w->env->host_ips,
            .n_host_ips = w->env->n_host_ips,
            .start_time = w->start_time,
            .forced_phase = w->forced,
            .reason = w->reason[0] ? w->reason : NULL,
            .message = w->message[0] ? w->message : NULL,
        };
        /* Conditions and the API phase come from the newest object; the
         * spec from the one we run. */
        struct k8s_pod view = *w->pod;
        view.status = api->status;
        view.meta.deletion_timestamp = api->meta.deletion_timestamp;
        enum st_phase phase = ag_pod_phase(&view, &obs);
        cJSON *st = ag_pod_status_json(&view, &obs, now_s());
        if (st == NULL)
                goto out;
        if (phase != w->phase)
                ag_pod_worker_mark(w, "phase", st_phase_name(phase));
        w->phase = phase;
        char *text = cJSON_PrintUnformatted(st);
        if (text != NULL && (w->last_status == NULL || strcmp(text, w->last_status) != 0)) {
                free(w->last_status);
                w->last_status = text;
                cJSON_Delete(w->status);
                w->status = st;
                if (w->ops->status)
                        w->ops->status(w, st, w->data);
        } else {
                free(text);
                cJSON_Delete(st);
        }
out:
        free(init);
        free(reg);
}

/* ---- teardown ----------------------------------------------------------------- */

static void stop_watch(struct ctr *c)
{
        if (c->exit_io != NULL) {
                ag_io_free(c->exit_io);
                c->exit_io = NULL;
        }
        if (c->exit_fd >= 0) {
                close(c->exit_fd);
                c->exit_fd = -1;
        }
}

static void remove_container(struct ag_pod_worker *w, struct ctr *c)
{
        if (c->id[0] == '\0')
                return;
        struct cb_error err = {0};
        if (rt_container_remove(w->env->root_dir, c->id, &err) < 0)
                emit_event(w, c, "Warning", "FailedKillPod", "error removing container %s: %s",
                           c->spec->name, err.msg);
        c->id[0] = '\0';
}

/* ---- restart safety: the worker's state on disk -------------------------------
 *
 * <root>/pods/<uid>/worker.json (written atomically after every step) keeps
 * what the runtime does not know: which runtime container is the current
 * instance of which spec container, restart counts, backoff, lastState, and
 * whether the sandbox and the pod cgroup exist. A restarted agent reads it
 * and re-adopts: running containers are watched again (never restarted),
 * containers that exited meanwhile report their exit record. */

static void state_path(const struct ag_pod_worker *w, char *buf, size_t size)
{
        snprintf(buf, size, "%s/pods/%s/worker.json", w->env->root_dir, w->pod->meta.uid);
}

static cJSON *term_json(const struct st_container_state *t, const char *reason, const char *message,
                        const char *cid)
{
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "exitCode", t->exit_code);
        cJSON_AddNumberToObject(o, "startedAt", (double)t->started_at);
        cJSON_AddNumberToObject(o, "finishedAt", (double)t->finished_at);
        cJSON_AddStringToObject(o, "reason", reason);
        cJSON_AddStringToObject(o, "message", message);
        cJSON_AddStringToObject(o, "containerID", cid);
        return o;
}

static void save_state(struct ag_pod_worker *w)
{
        if (w->torn_down)
                return;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "startTime", (double)w->start_time);
        cJSON_AddBoolToObject(o, "cgroupCreated", w->cgroup_created);
        cJSON_AddBoolToObject(o, "sandbox", w->sandbox_ready);
        cJSON_AddItemToObject(o, "timeline", ag_pod_worker_timeline_json(w));
        cJSON *arr = cJSON_AddArrayToObject(o, "containers");
        for (size_t i = 0; i < w->n; i++) {
                const struct ctr *c = &w->ctrs[i];
                cJSON *j = cJSON_CreateObject();
                cJSON_AddStringToObject(j, "name", c->spec->name);
                cJSON_AddBoolToObject(j, "init", c->init);
                cJSON_AddStringToObject(j, "id", c->id);
                cJSON_AddStringToObject(j, "image", c->image);
                cJSON_AddStringToObject(j, "imageID", c->image_id);
                cJSON_AddNumberToObject(j, "restartCount", c->obs.restart_count);
                cJSON_AddNumberToObject(j, "backoff", (double)c->backoff.backoff);
                cJSON_AddNumberToObject(j, "backoffUpdate", (double)c->backoff.last_update);
                if (c->exited)
                        cJSON_AddItemToObject(
                            j, "term",
                            term_json(&c->term, c->term_reason, c->term_message, c->term_cid));
                if (c->obs.last_state.kind == ST_STATE_TERMINATED)
                        cJSON_AddItemToObject(j, "lastState",
                                              term_json(&c->obs.last_state, c->last_reason,
                                                        c->last_message, c->last_cid));
                cJSON_AddItemToArray(arr, j);
        }
        char *text = cJSON_PrintUnformatted(o);
        cJSON_Delete(o);
        if (text == NULL)
                return;
        if (w->saved != NULL && strcmp(w->saved, text) == 0) {
                free(text); /* unchanged: no write, no fsync */
                return;
        }
        char path[RT_PATH_MAX], dir[RT_PATH_MAX];
        snprintf(dir, sizeof(dir), "%s/pods/%s", w->env->root_dir, w->pod->meta.uid);
        state_path(w, path, sizeof(path));
        struct cb_error err = {0};
        if (cb_mkdir_p(dir, 0755, 0700, &err) < 0 ||
            cb_write_file_atomic(path, text, strlen(text), 0600, &err) < 0) {
                emit_event(w, NULL, "Warning", "FailedSync", "cannot save the pod's state: %s",
                           err.msg[0] ? err.msg : strerror(errno));
                free(text);
                return;
        }
        free(w->saved);
        w->saved = text;
}

static int64_t jint(const cJSON *o, const char *k)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
        return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : 0;
}

static void jstr(const cJSON *o, const char *k, char *buf, size_t size)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
        snprintf(buf, size, "%s", cJSON_IsString(v) ? v->valuestring : "");
}

static void load_term(const cJSON *t, struct st_container_state *s, char *reason, size_t rs,
                      char *message, size_t ms, char *cid, size_t cs)
{
        *s = (struct st_container_state){
            .kind = ST_STATE_TERMINATED,
            .exit_code = (int32_t)jint(t, "exitCode"),
            .started_at = jint(t, "startedAt"),
            .finished_at = jint(t, "finishedAt"),
        };
        jstr(t, "reason", reason, rs);
        jstr(t, "message", message, ms);
        jstr(t, "containerID", cid, cs);
}

static void watch_exit(struct ag_pod_worker *w, struct ctr *c);
static void start_probers(struct ag_pod_worker *w, struct ctr *c);
static void stop_probers(struct ctr *c);
static void end_hook(struct ctr *c);
static void probe_kill_quiet(struct ag_pod_worker *w, struct ctr *c);

/* Re-adopts one container from its saved record and the runtime's view. */
static void adopt_container(struct ag_pod_worker *w, struct ctr *c, const cJSON *j)
{
        jstr(j, "id", c->id, sizeof(c->id));
        jstr(j, "image", c->image, sizeof(c->image));
        jstr(j, "imageID", c->image_id, sizeof(c->image_id));
        c->obs.restart_count = (int32_t)jint(j, "restartCount");
        c->backoff.backoff = jint(j, "backoff");
        c->backoff.last_update = jint(j, "backoffUpdate");
        const cJSON *last = cJSON_GetObjectItemCaseSensitive(j, "lastState");
        if (cJSON_IsObject(last))
                load_term(last, &c->obs.last_state, c->last_reason, sizeof(c->last_reason),
                          c->last_message, sizeof(c->last_message), c->last_cid,
                          sizeof(c->last_cid));
        const cJSON *term = cJSON_GetObjectItemCaseSensitive(j, "term");
        if (c->id[0] == '\0') {
                if (cJSON_IsObject(term)) {
                        c->exited = true;
                        c->obs.known = true;
                        load_term(term, &c->term, c->term_reason, sizeof(c->term_reason),
                                  c->term_message, sizeof(c->term_message), c->term_cid,
                                  sizeof(c->term_cid));
                }
                return;
        }
        snprintf(c->cid, sizeof(c->cid), "cubelet://%s", c->id);
        struct rt_container_state st;
        struct cb_error err = {0};
        c->obs.known = true;
        int r = rt_container_state(w->env->root_dir, c->id, &st, &err);
        if (r == 0 && st.status == RT_CONTAINER_RUNNING) {
                c->running = true;
                c->stop_signal = st.stop_signal;
                c->obs.state = (struct st_container_state){
                    .kind = ST_STATE_RUNNING, .started_at = st.started_at / 1000000000LL};
                watch_exit(w, c);
                start_probers(w, c);
                return;
        }
        c->exited = true;
        snprintf(c->term_cid, sizeof(c->term_cid), "%s", c->cid);
        if (r == 0 && st.status == RT_CONTAINER_EXITED) {
                /* It ended while the agent was away: its exit record. */
                c->term = (struct st_container_state){
                    .kind = ST_STATE_TERMINATED,
                    .exit_code = st.exit_code,
                    .started_at = st.started_at / 1000000000LL,
                    .finished_at = st.finished_at / 1000000000LL,
                };
                snprintf(c->term_reason, sizeof(c->term_reason), "%s", st.reason);
                snprintf(c->term_message, sizeof(c->term_message), "%s", st.message);
        } else if (cJSON_IsObject(term)) {
                load_term(term, &c->term, c->term_reason, sizeof(c->term_reason), c->term_message,
                          sizeof(c->term_message), c->term_cid, sizeof(c->term_cid));
        } else {
                c->term = (struct st_container_state){
                    .kind = ST_STATE_TERMINATED, .exit_code = 137, .finished_at = now_s()};
                snprintf(c->term_reason, sizeof(c->term_reason), "%s",
                         ST_REASON_CONTAINER_STATUS_UNKNOWN);
                snprintf(c->term_message, sizeof(c->term_message),
                         "The container could not be located when the pod was terminated");
        }
}

/* Reads worker.json when an earlier agent left one. */
static void adopt(struct ag_pod_worker *w)
{
        char path[RT_PATH_MAX];
        state_path(w, path, sizeof(path));
        _cleanup_free_ char *text = NULL;
        if (cb_read_file(path, 4 << 20, &text, NULL, NULL) < 0)
                return;
        _cleanup_cjson_ cJSON *o = cJSON_Parse(text);
        if (!cJSON_IsObject(o))
                return;
        w->adopted = true;
        if (jint(o, "startTime") != 0)
                w->start_time = jint(o, "startTime");
        w->cgroup_created = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "cgroupCreated"));
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "sandbox")) &&
            rt_sandbox_load(w->env->root_dir, w->pod->meta.uid, &w->sandbox, NULL) == 0) {
                w->sandbox_ready = true;
                for (size_t i = 0; i < w->sandbox.n_pod_ips && i < 2; i++) {
                        snprintf(w->pod_ip_buf[i], sizeof(w->pod_ip_buf[i]), "%s",
                                 w->sandbox.pod_ips[i]);
                        w->pod_ips[w->n_pod_ips++] = w->pod_ip_buf[i];
                }
        }
        const cJSON *j;
        cJSON_ArrayForEach(j, cJSON_GetObjectItemCaseSensitive(o, "containers"))
        {
                char name[256];
                jstr(j, "name", name, sizeof(name));
                bool init = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "init"));
                for (size_t i = 0; i < w->n; i++)
                        if (w->ctrs[i].init == init && strcmp(w->ctrs[i].spec->name, name) == 0)
                                adopt_container(w, &w->ctrs[i], j);
        }
}

static void teardown(struct ag_pod_worker *w)
{
        if (w->torn_down)
                return;
        struct cb_error err = {0};
        for (size_t i = 0; i < w->n; i++) {
                stop_watch(&w->ctrs[i]);
                remove_container(w, &w->ctrs[i]);
        }
        const char *uid = w->pod->meta.uid;
        if (rt_sandbox_remove(w->env->root_dir, uid, &err) < 0)
                emit_event(w, NULL, "Warning", "FailedKillPod",
                           "error tearing down the pod sandbox: %s", err.msg);
        if (w->cgroup_created && cg_destroy(w->pod_cgroup, &err) < 0)
                emit_event(w, NULL, "Warning", "FailedKillPod", "error removing the pod cgroup: %s",
                           err.msg);
        char dir[RT_PATH_MAX];
        snprintf(dir, sizeof(dir), "%s/pods/%s", w->env->root_dir, uid);
        rt_rm_rf(dir, NULL);
        w->sandbox_ready = false;
        ag_pod_worker_mark(w, "tornDown", NULL);
        w->torn_down = true;
}

/* Running, or being started off the loop. */
static bool any_running(const struct ag_pod_worker *w)
{
        for (size_t i = 0; i < w->n; i++)
                if (w->ctrs[i].running || w->ctrs[i].start_job != NULL)
                        return true;
        return false;
}

static void finish(struct ag_pod_worker *w)
{
        if (w->done)
                return;
        if (w->sandbox_job != NULL)
                return; /* sandbox_done() kicks the worker again */
        for (size_t i = 0; i < w->n; i++)
                if (w->ctrs[i].start_job != NULL)
                        return; /* start_done() kicks the worker again */
        for (size_t i = 0; i < w->n; i++)
                if (w->ctrs[i].timer)
                        ag_timer_disarm(w->ctrs[i].timer);
        ag_timer_disarm(w->deadline);
        ag_timer_disarm(w->grace);
        teardown(w);
        compute_status(w);
        w->done = true;
        if (w->ops->done)
                w->ops->done(w, w->data);
}

/* ---- container exits ------------------------------------------------------------ */

static void on_exit_fd(struct ag_io *io, int fd, uint32_t events, void *data)
{
        struct ctr *c = data;
        struct ag_pod_worker *w = c->w;
        (void)io;
        (void)fd;
        (void)events;
        struct rt_container_state st;
        struct cb_error err = {0};
        if (rt_container_state(w->env->root_dir, c->id, &st, &err) < 0 ||
            st.status != RT_CONTAINER_EXITED) {
                /* The monitor is gone without an exit record. */
                memset(&st, 0, sizeof(st));
                st.exit_code = 137;
                snprintf(st.reason, sizeof(st.reason), "%s", ST_REASON_CONTAINER_STATUS_UNKNOWN);
                snprintf(st.message, sizeof(st.message),
                         "The container could not be located when the pod was terminated");
                st.finished_at = (int64_t)time(NULL) * 1000000000LL;
        }
        stop_watch(c);
        stop_probers(c);
        end_hook(c);
        c->in_prestop = false;
        c->in_poststart = false;
        c->hook_kind = 0;
        ag_timer_disarm(c->kill_timer);
        ag_pod_worker_mark(w, "containerExited", c->spec->name);
        c->running = false;
        c->exited = true;
        c->term = (struct st_container_state){
            .kind = ST_STATE_TERMINATED,
            .exit_code = st.exit_code,
            .started_at = st.started_at ? st.started_at / 1000000000LL : c->obs.state.started_at,
            .finished_at = st.finished_at / 1000000000LL,
        };
        snprintf(c->term_reason, sizeof(c->term_reason), "%s", st.reason);
        snprintf(c->term_message, sizeof(c->term_message), "%s", st.message);
        snprintf(c->term_cid, sizeof(c->term_cid), "%s", c->cid);
        advance(w);
}

/* ---- probes ------------------------------------------------------------------
 *
 * As the kubelet's prober manager: a startup probe first (the container is
 * not "started" until it succeeds), then liveness and readiness. A liveness
 * or startup failure kills the container (stop signal, then SIGKILL after
 * the grace period) and the restart policy decides what follows; readiness
 * only moves `ready`. Every failed attempt is an Unhealthy event. */

static void stop_probers(struct ctr *c)
{
        ag_prober_free(c->startup);
        ag_prober_free(c->liveness);
        ag_prober_free(c->readiness);
        c->startup = c->liveness = c->readiness = NULL;
}

static void on_probe(struct ag_prober *p, const struct ag_probe_update *u, void *data);

static struct ag_prober *new_prober(struct ag_pod_worker *w, struct ctr *c, enum ag_probe_kind k,
                                    const struct k8s_probe *probe)
{
        struct ag_probe_target t = {
            .ip = w->pod->spec.host_network || w->n_pod_ips == 0 ? "127.0.0.1" : w->pod_ips[0],
            .ports = c->spec->ports,
            .n_ports = c->spec->n_ports,
            .root_dir = w->env->root_dir,
            .container_id = c->id,
            .monitor_path = w->env->monitor_path,
        };
        struct cb_error err = {0};
        struct ag_prober *p = ag_prober_new(w->env->loop, k, probe, &t, on_probe, c, &err);
        if (p == NULL)
                emit_event(w, c, "Warning", "Unhealthy", "%s probe errored: %s",
                           k == AG_PROBE_LIVENESS  ? "Liveness"
                           : k == AG_PROBE_STARTUP ? "Startup"
                                                   : "Readiness",
                           err.msg);
        return p;
}

static void start_liveness_readiness(struct ag_pod_worker *w, struct ctr *c)
{
        if (c->spec->liveness_probe.present)
                c->liveness = new_prober(w, c, AG_PROBE_LIVENESS, &c->spec->liveness_probe);
        if (c->spec->readiness_probe.present)
                c->readiness = new_prober(w, c, AG_PROBE_READINESS, &c->spec->readiness_probe);
}

static void start_probers(struct ag_pod_worker *w, struct ctr *c)
{
        stop_probers(c);
        c->obs.startup_succeeded = !c->spec->startup_probe.present;
        c->obs.readiness_succeeded = !c->spec->readiness_probe.present;
        if (c->spec->startup_probe.present)
                c->startup = new_prober(w, c, AG_PROBE_STARTUP, &c->spec->startup_probe);
        else
                start_liveness_readiness(w, c);
}

static void on_kill_timer(struct ag_timer *t, void *data)
{
        struct ctr *c = data;
        (void)t;
        if (c->running)
                rt_container_kill_all(c->w->env->root_dir, c->id, NULL);
}

/* A failed liveness or startup probe: stop the container; its exit goes
 * through the restart policy like any other. */
static int64_t pod_grace(const struct ag_pod_worker *w)
{
        return w->pod->spec.has_termination_grace_period
                   ? w->pod->spec.termination_grace_period_seconds
                   : 30;
}

/* The stop signal now, SIGKILL to the cgroup after grace (at least 2 s). */
static void kill_with_grace(struct ag_pod_worker *w, struct ctr *c, int64_t grace)
{
        if (grace < 2)
                grace = 2;
        struct cb_error err = {0};
        if (rt_container_signal(w->env->root_dir, c->id,
                                c->stop_signal > 0 ? c->stop_signal : SIGTERM, &err) < 0 &&
            err.code != ESRCH)
                emit_event(w, c, "Warning", "FailedKillPod", "%s", err.msg);
        ag_timer_arm(c->kill_timer, (uint64_t)grace * 1000);
}

static void probe_kill(struct ag_pod_worker *w, struct ctr *c, const char *which,
                       const struct k8s_probe *probe)
{
        emit_event(w, c, "Normal", "Killing", "Container %s failed %s probe, will be restarted",
                   c->spec->name, which);
        kill_with_grace(w, c,
                        probe->has_termination_grace_period
                            ? probe->termination_grace_period_seconds
                            : pod_grace(w));
}

static void probe_kill_quiet(struct ag_pod_worker *w, struct ctr *c)
{
        kill_with_grace(w, c, pod_grace(w));
}

static void on_probe(struct ag_prober *p, const struct ag_probe_update *u, void *data)
{
        struct ctr *c = data;
        struct ag_pod_worker *w = c->w;
        if (u->message != NULL && !w->terminating)
                emit_event(w, c, "Warning", "Unhealthy", "%s", u->message);
        if (!u->changed || !c->running || w->terminating)
                return;
        if (p == c->startup) {
                if (u->result == AG_PROBE_SUCCESS) {
                        c->obs.startup_succeeded = true;
                        ag_pod_worker_mark(w, "startupProbeSucceeded", c->spec->name);
                        ag_prober_free(c->startup); /* allowed from its own callback */
                        c->startup = NULL;
                        start_liveness_readiness(w, c);
                        compute_status(w);
                } else if (u->result == AG_PROBE_FAILURE) {
                        stop_probers(c);
                        probe_kill(w, c, "startup", &c->spec->startup_probe);
                }
        } else if (p == c->liveness) {
                if (u->result == AG_PROBE_FAILURE) {
                        stop_probers(c);
                        probe_kill(w, c, "liveness", &c->spec->liveness_probe);
                }
        } else if (p == c->readiness) {
                c->obs.readiness_succeeded = u->result == AG_PROBE_SUCCESS;
                ag_pod_worker_mark(w, c->obs.readiness_succeeded ? "ready" : "notReady",
                                   c->spec->name);
                compute_status(w);
        }
}

static void watch_exit(struct ag_pod_worker *w, struct ctr *c)
{
        struct cb_error err = {0};
        if (rt_container_exit_fd(w->env->root_dir, c->id, &c->exit_fd, &err) < 0 ||
            (c->exit_io = ag_io_new(w->env->loop, c->exit_fd, EPOLLIN, on_exit_fd, c, &err)) ==
                NULL)
                emit_event(w, c, "Warning", "Failed", "cannot watch container %s: %s",
                           c->spec->name, err.msg);
}

/* ---- starting containers --------------------------------------------------------- */

static void set_waiting(struct ctr *c, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_waiting(struct ctr *c, const char *reason, const char *fmt, ...)
{
        snprintf(c->wait_reason, sizeof(c->wait_reason), "%s", reason);
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->wait_message, sizeof(c->wait_message), fmt, ap);
        va_end(ap);
}

static void on_ctr_timer(struct ag_timer *t, void *data)
{
        struct ctr *c = data;
        (void)t;
        c->waiting_timer = false;
        advance(c->w);
}

static void arm_ctr_timer(struct ctr *c, int64_t seconds)
{
        c->waiting_timer = true;
        ag_timer_arm(c->timer, (uint64_t)(seconds > 0 ? seconds : 0) * 1000);
}

/* ---- image pulls, off the loop --------------------------------------------------------
 *
 * Pulls run on the agent's pull queue (one at a time, as the kubelet's
 * default serializeImagePulls), never on the event loop. The job owns
 * copies of its inputs; c is cleared when the worker goes away first. */

struct pull_job {
        struct ctr *c;
        char *root_dir, *image;
        char **insecure;
        size_t n_insecure;
        int rc;
        struct cb_error err;
        struct rt_image *img;
        uint64_t submitted_us, started_us, finished_us;
};

static uint64_t mono_us(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void pull_job_free(struct pull_job *j)
{
        if (j == NULL)
                return;
        free(j->root_dir);
        free(j->image);
        for (size_t i = 0; i < j->n_insecure; i++)
                free(j->insecure[i]);
        free(j->insecure);
        rt_image_free(j->img);
        free(j);
}

static void pull_work(void *data)
{
        struct pull_job *j = data;
        j->started_us = mono_us();
        struct rt_pull_opts opts = {
            .insecure_registries = (const char *const *)j->insecure,
            .n_insecure = j->n_insecure,
        };
        j->rc = rt_image_pull(j->root_dir, j->image, &opts, NULL, &j->err);
        if (j->rc == 0) {
                j->rc = rt_image_lookup(j->root_dir, j->image, &j->img, &j->err);
                if (j->rc == 0 && j->img == NULL)
                        j->rc = cb_error_set(&j->err, 0, "image not found after the pull");
        }
        j->finished_us = mono_us();
}

static void pull_done(void *data, bool cancelled)
{
        struct pull_job *j = data;
        struct ctr *c = j->c;
        if (c == NULL) {
                pull_job_free(j);
                return;
        }
        struct ag_pod_worker *w = c->w;
        c->pull_job = NULL;
        if (cancelled || w->done || w->terminating) {
                pull_job_free(j);
                return;
        }
        int64_t now = now_s();
        if (j->rc < 0) {
                st_backoff_next(&c->pull_backoff, now, now, w->env->pull_backoff_base,
                                w->env->pull_backoff_cap);
                c->pull_failed_at = now;
                set_waiting(c, "ErrImagePull", "%s", j->err.msg);
                emit_event(w, c, "Warning", "Failed", "Failed to pull image \"%s\": %s", j->image,
                           j->err.msg);
                emit_event(w, c, "Warning", "Failed", "Error: ErrImagePull");
                /* The kubelet syncs the pod again soon after a failed sync;
                 * that sync finds the pull in back-off (ImagePullBackOff) and
                 * the next pull happens when the back-off has passed. */
                arm_ctr_timer(c, 1);
        } else {
                double secs = (double)(j->finished_us - j->started_us) / 1e6;
                double total = (double)(j->finished_us - j->submitted_us) / 1e6;
                emit_event(w, c, "Normal", "Pulled",
                           "Successfully pulled image \"%s\" in %.3fs (%.3fs including waiting). "
                           "Image size: %" PRIu64 " bytes.",
                           j->image, secs, total, j->img->size);
                c->pull_failed_at = 0;
                rt_image_free(c->pulled);
                c->pulled = j->img;
                j->img = NULL;
        }
        pull_job_free(j);
        ag_timer_arm(w->kick, 0);
}

/* Queues the pull; 1 (in progress) or -1. */
static int submit_pull(struct ag_pod_worker *w, struct ctr *c, const char *image)
{
        struct pull_job *j = calloc(1, sizeof(*j));
        if (j == NULL)
                return -1;
        j->c = c;
        j->root_dir = strdup(w->env->root_dir);
        j->image = strdup(image);
        j->insecure = calloc(w->env->n_insecure_registries + 1, sizeof(char *));
        bool ok = j->root_dir && j->image && j->insecure;
        for (size_t i = 0; ok && i < w->env->n_insecure_registries; i++) {
                j->insecure[i] = strdup(w->env->insecure_registries[i]);
                ok = j->insecure[i] != NULL;
                j->n_insecure += ok;
        }
        struct cb_error err = {0};
        if (!ok) {
                cb_error_set(&err, ENOMEM, "queueing the pull");
        } else {
                j->submitted_us = mono_us();
                if (ag_offload_submit(w->env->pulls, pull_work, pull_done, j, &err) == 0) {
                        c->pull_job = j;
                        emit_event(w, c, "Normal", "Pulling", "Pulling image \"%s\"", image);
                        return 1;
                }
        }
        pull_job_free(j);
        set_waiting(c, "ErrImagePull", "%s", err.msg);
        arm_ctr_timer(c, 1);
        return -1;
}

/* Makes sure the image is present under the pull policy. 0: present, 1: a pull is
 * in progress (the worker is kicked when it ends), -1: not available. */
static int ensure_image(struct ag_pod_worker *w, struct ctr *c, struct rt_image **ret)
{
        const char *image = c->spec->image ? c->spec->image : "";
        if (c->pull_job != NULL)
                return 1;
        if (c->pulled != NULL) {
                *ret = c->pulled;
                c->pulled = NULL;
                return 0;
        }
        struct cb_error err = {0};
        struct rt_image_ref ref;
        if (rt_image_ref_parse(image, &ref, &err) < 0) {
                set_waiting(c, "InvalidImageName", "Failed to apply default image tag \"%s\": %s",
                            image, err.msg);
                emit_event(w, c, "Warning", "InspectFailed", "%s", c->wait_message);
                return -1;
        }
        enum k8s_pull_policy policy = ag_pull_policy(c->spec);
        struct rt_image *img = NULL;
        if (rt_image_lookup(w->env->root_dir, image, &img, &err) < 0) {
                set_waiting(c, "ImageInspectError", "Failed to inspect image \"%s\": %s", image,
                            err.msg);
                return -1;
        }
        if (img != NULL && policy != K8S_PULL_ALWAYS) {
                emit_event(w, c, "Normal", "Pulled",
                           "Container image \"%s\" already present on machine", image);
                *ret = img;
                return 0;
        }
        if (img == NULL && policy == K8S_PULL_NEVER) {
                set_waiting(c, "ErrImageNeverPull",
                            "Container image \"%s\" is not present with pull policy of Never",
                            image);
                emit_event(w, c, "Warning", "ErrImageNeverPull", "%s", c->wait_message);
                return -1;
        }
        rt_image_free(img);
        img = NULL;
        int64_t now = now_s();
        if (c->pull_failed_at && st_backoff_active(&c->pull_backoff, c->pull_failed_at, now)) {
                set_waiting(c, "ImagePullBackOff", "Back-off pulling image \"%s\"", image);
                emit_event(w, c, "Normal", "BackOff", "Back-off pulling image \"%s\"", image);
                arm_ctr_timer(c, c->pull_failed_at + c->pull_backoff.backoff - now);
                return -1;
        }
        return submit_pull(w, c, image);
}

/* Makes the pod's volumes ready on the node (the emptyDir directories,
 * hostPath checks and creation) for ag_container_config_build. Only the
 * volumes this container mounts. */
static int resolve_volumes(struct ag_pod_worker *w, struct ctr *c, struct cb_arena *a,
                           struct ag_volume_source **ret, size_t *ret_n, struct cb_error *err)
{
        const struct k8s_container *s = c->spec;
        struct ag_volume_source *out = cb_arena_calloc(a, s->n_volume_mounts + 1, sizeof(*out));
        if (out == NULL)
                return cb_error_set(err, ENOMEM, "volumes");
        size_t n = 0;
        for (size_t i = 0; i < s->n_volume_mounts; i++) {
                const struct k8s_volume *v = NULL;
                for (size_t k = 0; k < w->pod->spec.n_volumes && v == NULL; k++)
                        if (w->pod->spec.volumes[k].name &&
                            strcmp(w->pod->spec.volumes[k].name, s->volume_mounts[i].name) == 0)
                                v = &w->pod->spec.volumes[k];
                bool seen = false;
                for (size_t k = 0; k < n && !seen; k++)
                        seen = v != NULL && strcmp(out[k].name, v->name) == 0;
                if (v == NULL || seen)
                        continue; /* the builder names a missing one */
                struct ag_volume_source src = {.name = v->name};
                if (v->kind == K8S_VOLUME_EMPTY_DIR && v->empty_dir_medium &&
                    strcmp(v->empty_dir_medium, "Memory") == 0) {
                        src.type = RT_MOUNT_TMPFS;
                        if (v->has_size_limit)
                                src.options = cb_arena_printf(a, "size=%" PRId64 ",mode=1777",
                                                              v->size_limit.value);
                } else if (v->kind == K8S_VOLUME_EMPTY_DIR) {
                        char *dir =
                            cb_arena_printf(a, "%s/pods/%s/volumes/kubernetes.io~empty-dir/%s",
                                            w->env->root_dir, w->pod->meta.uid, v->name);
                        if (dir == NULL || cb_mkdir_p(dir, 0755, 0777, NULL) < 0 ||
                            chmod(dir, 0777) < 0)
                                return cb_error_set(err, errno, "volume %s: cannot create %s",
                                                    v->name, dir ? dir : "");
                        src.type = RT_MOUNT_BIND;
                        src.source = dir;
                } else if (v->kind == K8S_VOLUME_HOST_PATH) {
                        const char *type = v->host_path_type ? v->host_path_type : "";
                        struct stat sb;
                        if (strcmp(type, "DirectoryOrCreate") == 0 &&
                            cb_mkdir_p(v->host_path, 0755, 0755, NULL) < 0)
                                return cb_error_set(err, errno, "volume %s: cannot create %s",
                                                    v->name, v->host_path);
                        if (strcmp(type, "FileOrCreate") == 0) {
                                int fd = open(v->host_path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
                                if (fd < 0)
                                        return cb_error_set(err, errno,
                                                            "volume %s: cannot create %s", v->name,
                                                            v->host_path);
                                close(fd);
                        }
                        if (stat(v->host_path, &sb) < 0)
                                return cb_error_set(err, errno, "volume %s: hostPath %s", v->name,
                                                    v->host_path);
                        if ((strcmp(type, "Directory") == 0 && !S_ISDIR(sb.st_mode)) ||
                            (strcmp(type, "File") == 0 && !S_ISREG(sb.st_mode)))
                                return cb_error_set(err, 0, "volume %s: hostPath %s is not a %s",
                                                    v->name, v->host_path, type);
                        src.type = RT_MOUNT_BIND;
                        src.source = v->host_path;
                } else {
                        return cb_error_set(err, 0,
                                            "volume \"%s\": %s volumes are not supported by "
                                            "cubelet yet",
                                            v->name,
                                            v->other_kind ? v->other_kind : "this kind of");
                }
                out[n++] = src;
        }
        *ret = out;
        *ret_n = n;
        return 0;
}

static const struct k8s_container_cgroup *plan_for(const struct ag_pod_worker *w,
                                                   const struct ctr *c)
{
        for (size_t i = 0; i < w->plan.n_containers; i++)
                if (w->plan.containers[i].container == c->spec)
                        return &w->plan.containers[i];
        return NULL;
}

static void new_id(char *buf, size_t size)
{
        unsigned char r[16];
        if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                memcpy(r, &ts, sizeof(r) < sizeof(ts) ? sizeof(r) : sizeof(ts));
        }
        size_t o = 0;
        for (size_t i = 0; i < sizeof(r) && o + 2 < size; i++)
                o += (size_t)snprintf(buf + o, size - o, "%02x", r[i]);
}

/* ---- creating and starting a container, off the loop ---------------------------------- */

struct start_job {
        struct ctr *c; /* NULL once the worker is gone */
        char id[RT_ID_MAX];
        struct cb_arena *arena;
        struct rt_image *img;
        struct rt_sandbox sandbox;
        struct rt_container_config cfg;
        int rc;
        struct cb_error err;
        struct rt_container_state state;
};

static void start_job_free(struct start_job *j)
{
        cb_arena_free(j->arena);
        rt_image_free(j->img);
        free(j);
}

static void start_work(void *data)
{
        struct start_job *j = data;
        j->rc = rt_container_create_start(&j->cfg, &j->state, &j->err);
}

static void start_done(void *data, bool cancelled);
static void send_stop_signal(struct ag_pod_worker *w, struct ctr *c);
static bool start_hook(struct ag_pod_worker *w, struct ctr *c, const struct k8s_handler *h,
                       int kind, int64_t http_timeout_ms);

static void start_container(struct ag_pod_worker *w, struct ctr *c)
{
        if (c->start_job != NULL)
                return;
        struct rt_image *img = NULL;
        c->wait_reason[0] = c->wait_message[0] = '\0';
        if (ensure_image(w, c, &img) != 0)
                return;
        ag_pod_worker_mark(w, "imageReady", c->spec->name);
        snprintf(c->image, sizeof(c->image), "%s", img->ref);
        ag_image_id(c->image_id, sizeof(c->image_id), img->ref, img->manifest_digest);

        struct cb_arena *a = cb_arena_new(0);
        struct cb_error err = {0};
        struct ag_env_context ctx = {
            .node_name = w->env->node_name,
            .pod_ip = w->n_pod_ips ? w->pod_ips[0] : "",
            .pod_ips = w->pod_ips,
            .n_pod_ips = w->n_pod_ips,
            .host_ip = w->env->n_host_ips ? w->env->host_ips[0] : "",
            .host_ips = w->env->host_ips,
            .n_host_ips = w->env->n_host_ips,
            .node_allocatable_milli_cpu = w->env->alloc_milli_cpu,
            .node_allocatable_memory = w->env->alloc_memory,
            .node_allocatable_ephemeral = w->env->alloc_ephemeral,
        };
        struct start_job *j = calloc(1, sizeof(*j));
        if (j == NULL || a == NULL) {
                set_waiting(c, "CreateContainerError", "out of memory");
                free(j);
                goto out;
        }
        new_id(j->id, sizeof(j->id));
        /* The job owns everything the config points at: the arena, the
         * image (its layer dirs) and a copy of the sandbox. */
        j->c = c;
        j->sandbox = w->sandbox;
        _cleanup_free_ char *passwd = NULL, *group = NULL;
        struct ag_volume_source *vols = NULL;
        size_t n_vols = 0;
        char log_dir[4096];
        struct ag_container_inputs in = {
            .pod = w->pod,
            .container = c->spec,
            .image = img,
            .ctx = &ctx,
            .sandbox = &j->sandbox,
            .plan = plan_for(w, c),
            .id = j->id,
            .pod_cgroup = w->pod_cgroup,
            .root_dir = w->env->root_dir,
            .monitor_path = w->env->monitor_path,
            .pod_logs_dir = w->env->pod_logs_dir,
            .restart_count = c->obs.restart_count,
        };
        int r = rt_image_read_file(img, "etc/passwd", 1 << 20, &passwd, &err);
        if (r == 0)
                r = rt_image_read_file(img, "etc/group", 1 << 20, &group, &err);
        if (r == 0)
                r = resolve_volumes(w, c, a, &vols, &n_vols, &err);
        in.passwd = passwd;
        in.group = group;
        in.volumes = vols;
        in.n_volumes = n_vols;
        if (r < 0 || ag_container_config_build(a, &in, &j->cfg, NULL, &err) < 0) {
                set_waiting(c, "CreateContainerConfigError", "%s", err.msg);
                emit_event(w, c, "Warning", "Failed", "Error: %s", err.msg);
                free(j);
                goto out;
        }
        if (ag_cri_log_dir(log_dir, sizeof(log_dir), w->env->pod_logs_dir, pod_ns(w->pod),
                           w->pod->meta.name, w->pod->meta.uid, c->spec->name) < 0 ||
            cb_mkdir_p(log_dir, 0755, 0755, NULL) < 0) {
                set_waiting(c, "CreateContainerError", "cannot create the log directory %s",
                            log_dir);
                free(j);
                goto out;
        }
        c->stop_signal = j->cfg.stop_signal;
        emit_event(w, c, "Normal", "Created", "Created container: %s", c->spec->name);
        j->arena = a;
        j->img = img;
        a = NULL;
        img = NULL;
        if (ag_offload_submit(w->env->sandboxes, start_work, start_done, j, &err) < 0) {
                j->rc = -1;
                j->err = err;
                start_done(j, false); /* reported as a failed start */
                goto out;
        }
        c->start_job = j;
out:
        cb_arena_free(a);
        rt_image_free(img);
}

static void start_done(void *data, bool cancelled)
{
        struct start_job *j = data;
        struct ctr *c = j->c;
        if (c == NULL || cancelled) {
                /* The worker is gone (agent shutdown): the next agent finds
                 * the container unowned and removes it, or it never ran. */
                if (c != NULL)
                        c->start_job = NULL;
                start_job_free(j);
                return;
        }
        struct ag_pod_worker *w = c->w;
        c->start_job = NULL;
        snprintf(c->id, sizeof(c->id), "%s", j->id);
        snprintf(c->cid, sizeof(c->cid), "cubelet://%s", c->id);
        struct rt_container_state st = j->state;
        struct cb_error err = j->err;
        if (j->rc < 0) {
                /* containerd reports a failed start as terminated StartError / 128. */
                c->running = false;
                c->exited = true;
                c->obs.known = true;
                c->term = (struct st_container_state){
                    .kind = ST_STATE_TERMINATED, .exit_code = 128, .finished_at = now_s()};
                snprintf(c->term_reason, sizeof(c->term_reason), "%s", ST_REASON_START_ERROR);
                snprintf(c->term_message, sizeof(c->term_message), "%s", err.msg);
                snprintf(c->term_cid, sizeof(c->term_cid), "%s", c->cid);
                emit_event(w, c, "Warning", "Failed", "Error: %s", err.msg);
                start_job_free(j);
                ag_timer_arm(w->kick, 0);
                return;
        }
        start_job_free(j);
        c->running = true;
        c->exited = false;
        c->obs.known = true;
        c->obs.state = (struct st_container_state){.kind = ST_STATE_RUNNING,
                                                   .started_at = st.started_at / 1000000000LL};
        emit_event(w, c, "Normal", "Started", "Started container %s", c->spec->name);
        ag_pod_worker_mark(w, "containerStarted", c->spec->name);
        watch_exit(w, c);
        if (w->terminating) {
                /* Deleted while it started: stop it as the others were. */
                emit_event(w, c, "Normal", "Killing", "Stopping container %s", c->spec->name);
                send_stop_signal(w, c);
        } else if (c->spec->post_start.kind != K8S_HANDLER_NONE) {
                /* Probes start once the postStart hook has succeeded. */
                c->in_poststart = true;
                start_hook(w, c, &c->spec->post_start, HOOK_POSTSTART, POSTSTART_HTTP_TIMEOUT_MS);
        } else {
                start_probers(w, c);
        }
        ag_timer_arm(w->kick, 0);
}

/* ---- restarts ------------------------------------------------------------------------ */

static bool should_restart(const struct ag_pod_worker *w, const struct ctr *c)
{
        if (c->init && k8s_container_is_sidecar(c->spec))
                return true;
        switch (w->pod->spec.restart_policy) {
        case K8S_RESTART_ALWAYS:
                return !c->init || c->term.exit_code != 0;
        case K8S_RESTART_ON_FAILURE:
                return c->term.exit_code != 0;
        case K8S_RESTART_NEVER:
                return false;
        }
        return false;
}

/* The container exited and policy wants it back: restart now or enter
 * CrashLoopBackOff. Returns true when it was (re)started. */
static bool restart_or_backoff(struct ag_pod_worker *w, struct ctr *c)
{
        int64_t now = now_s();
        int64_t finished = c->term.finished_at;
        if (st_backoff_active(&c->backoff, finished, now)) {
                if (!c->waiting_timer) {
                        char *msg = st_crashloop_message(c->backoff.backoff, c->spec->name,
                                                         w->pod->meta.name, pod_ns(w->pod),
                                                         w->pod->meta.uid);
                        set_waiting(c, ST_REASON_CRASH_LOOP_BACK_OFF, "%s", msg ? msg : "");
                        free(msg);
                        char *ev = st_backoff_event_message(c->spec->name, w->pod->meta.name,
                                                            pod_ns(w->pod), w->pod->meta.uid);
                        emit_event(w, c, "Warning", "BackOff", "%s", ev ? ev : "");
                        free(ev);
                        arm_ctr_timer(c, finished + c->backoff.backoff - now);
                }
                return false;
        }
        st_backoff_next(&c->backoff, finished, now, w->env->backoff_base, w->env->backoff_cap);
        /* The old instance becomes lastState. */
        c->obs.last_state = c->term;
        snprintf(c->last_reason, sizeof(c->last_reason), "%s", c->term_reason);
        snprintf(c->last_message, sizeof(c->last_message), "%s", c->term_message);
        snprintf(c->last_cid, sizeof(c->last_cid), "%s", c->term_cid);
        c->obs.restart_count++;
        remove_container(w, c);
        c->exited = false;
        start_container(w, c);
        return c->running;
}

/* ---- the state machine ------------------------------------------------------------------- */

static void on_sandbox_timer(struct ag_timer *t, void *data)
{
        (void)t;
        advance(data);
}

/* ---- the sandbox, off the loop ----------------------------------------------------------
 *
 * Namespaces and the CNI ADD run on the agent's sandbox queue. The job owns
 * copies of everything it reads (an arena); w is cleared when the worker is
 * freed first (agent shutdown: the half-made sandbox is found, removed and
 * made again by the next agent). A terminating worker waits for the job
 * before it tears down, so teardown never races a CNI ADD. */

struct sandbox_job {
        struct ag_pod_worker *w;
        struct cb_arena *arena;
        struct rt_sandbox_config cfg;
        int rc;
        struct cb_error err;
        struct rt_sandbox sandbox;
};

static void sandbox_job_free(struct sandbox_job *j)
{
        if (j == NULL)
                return;
        cb_arena_free(j->arena);
        free(j);
}

static void sandbox_work(void *data)
{
        struct sandbox_job *j = data;
        /* A sandbox left by an earlier attempt is torn down first. */
        rt_sandbox_remove(j->cfg.root_dir, j->cfg.id, NULL);
        j->rc = rt_sandbox_create(&j->cfg, &j->sandbox, &j->err);
}

static void sandbox_done(void *data, bool cancelled)
{
        struct sandbox_job *j = data;
        struct ag_pod_worker *w = j->w;
        if (w == NULL) {
                sandbox_job_free(j);
                return;
        }
        w->sandbox_job = NULL;
        if (cancelled) {
                sandbox_job_free(j);
                return;
        }
        if (j->rc < 0) {
                if (!w->terminating)
                        emit_event(w, NULL, "Warning", "FailedCreatePodSandBox",
                                   "Failed to create pod sandbox: %s", j->err.msg);
                ag_timer_arm(w->sandbox_timer, SANDBOX_RETRY_MS);
        } else {
                /* Also when terminating: teardown removes it. */
                w->sandbox = j->sandbox;
                w->sandbox_ready = true;
                ag_pod_worker_mark(w, "sandboxReady", NULL);
                w->n_pod_ips = 0;
                for (size_t i = 0; i < w->sandbox.n_pod_ips && i < 2; i++) {
                        snprintf(w->pod_ip_buf[i], sizeof(w->pod_ip_buf[i]), "%s",
                                 w->sandbox.pod_ips[i]);
                        w->pod_ips[w->n_pod_ips++] = w->pod_ip_buf[i];
                }
        }
        sandbox_job_free(j);
        ag_timer_arm(w->kick, 0);
}

/* 0: ready; 1: being made (the worker is kicked when it is); -1: failed
 * (retried by the sandbox timer). */
static int ensure_sandbox(struct ag_pod_worker *w)
{
        if (w->sandbox_ready)
                return 0;
        if (w->sandbox_job != NULL)
                return 1;
        if (ag_timer_armed(w->sandbox_timer))
                return -1;
        struct cb_error err = {0};
        const struct k8s_pod *p = w->pod;
        if (!w->cgroup_created) {
                if (cg_create(w->pod_cgroup, &w->plan.limits, &err) < 0) {
                        emit_event(w, NULL, "Warning", "FailedCreatePodSandBox",
                                   "Failed to create pod sandbox: cgroup %s: %s", w->pod_cgroup,
                                   err.msg);
                        ag_timer_arm(w->sandbox_timer, SANDBOX_RETRY_MS);
                        return -1;
                }
                w->cgroup_created = true;
        }
        struct sandbox_job *j = calloc(1, sizeof(*j));
        if (j == NULL)
                return -1;
        j->w = w;
        j->arena = cb_arena_new(0);
        if (j->arena == NULL) {
                free(j);
                return -1;
        }
        struct cb_arena *a = j->arena;
        size_t n_ports = 0;
        for (size_t i = 0; i < p->spec.n_containers; i++)
                for (size_t jj = 0; jj < p->spec.containers[i].n_ports; jj++)
                        n_ports += p->spec.containers[i].ports[jj].host_port > 0;
        struct rt_port_mapping *ports = cb_arena_calloc(a, n_ports + 1, sizeof(*ports));
        size_t k = 0;
        for (size_t i = 0; ports && i < p->spec.n_containers; i++)
                for (size_t jj = 0; jj < p->spec.containers[i].n_ports; jj++) {
                        const struct k8s_container_port *cp = &p->spec.containers[i].ports[jj];
                        if (cp->host_port <= 0)
                                continue;
                        ports[k].host_port = cp->host_port;
                        ports[k].container_port = cp->container_port;
                        snprintf(ports[k].protocol, sizeof(ports[k].protocol), "%s",
                                 cp->protocol == K8S_PROTO_UDP    ? "udp"
                                 : cp->protocol == K8S_PROTO_SCTP ? "sctp"
                                                                  : "tcp");
                        snprintf(ports[k].host_ip, sizeof(ports[k].host_ip), "%s",
                                 cp->host_ip ? cp->host_ip : "");
                        k++;
                }
        const char *hostname =
            p->spec.hostname && p->spec.hostname[0] ? p->spec.hostname : p->meta.name;
        j->cfg = (struct rt_sandbox_config){
            .root_dir = cb_arena_strdup(a, w->env->root_dir),
            .name = cb_arena_strdup(a, p->meta.name),
            .namespace_ = cb_arena_strdup(a, pod_ns(p)),
            .uid = cb_arena_strdup(a, p->meta.uid),
            .hostname = cb_arena_strndup(a, hostname, 63),
            .dns_domain = "",
            .host_network = p->spec.host_network,
            .host_ipc = p->spec.host_ipc,
            .host_pid = p->spec.host_pid,
            .ports = ports,
            .n_ports = k,
            .cni = {.conf_dir = cb_arena_strdup(a, w->env->cni_conf_dir),
                    .bin_dirs = cb_arena_strdup(a, w->env->cni_bin_dir),
                    .cache_dir = cb_arena_printf(a, "%s/cni-cache", w->env->root_dir)},
            .cgroup_parent = cb_arena_strdup(a, w->pod_cgroup),
            .share_pid = p->spec.share_process_namespace,
            .pause_path = cb_arena_strdup(a, w->env->monitor_path),
        };
        snprintf(j->cfg.id, sizeof(j->cfg.id), "%s", p->meta.uid);
        if (ports == NULL || cb_arena_over_limit(a) || !j->cfg.root_dir || !j->cfg.name ||
            !j->cfg.namespace_ || !j->cfg.uid || !j->cfg.hostname || !j->cfg.cni.conf_dir ||
            !j->cfg.cni.bin_dirs || !j->cfg.cni.cache_dir || !j->cfg.cgroup_parent ||
            !j->cfg.pause_path) {
                sandbox_job_free(j);
                return -1;
        }
        if (ag_offload_submit(w->env->sandboxes, sandbox_work, sandbox_done, j, &err) < 0) {
                sandbox_job_free(j);
                emit_event(w, NULL, "Warning", "FailedCreatePodSandBox",
                           "Failed to create pod sandbox: %s", err.msg);
                ag_timer_arm(w->sandbox_timer, SANDBOX_RETRY_MS);
                return -1;
        }
        w->sandbox_job = j;
        return 1;
}

static bool init_done(const struct ctr *c)
{
        if (k8s_container_is_sidecar(c->spec))
                return c->running;
        return c->exited && c->term.exit_code == 0;
}

/* Init containers, one at a time. Returns true when all are done. */
static bool run_init(struct ag_pod_worker *w)
{
        for (size_t i = 0; i < w->n_init; i++) {
                struct ctr *c = &w->ctrs[i];
                if (init_done(c))
                        continue;
                if (c->running || c->waiting_timer || c->start_job)
                        return false;
                if (c->exited) {
                        if (!should_restart(w, c))
                                return false; /* the phase turns Failed */
                        restart_or_backoff(w, c);
                        return false;
                }
                start_container(w, c);
                return false;
        }
        return true;
}

static void run_regular(struct ag_pod_worker *w)
{
        for (size_t i = w->n_init; i < w->n; i++) {
                struct ctr *c = &w->ctrs[i];
                if (c->running || c->waiting_timer || c->start_job)
                        continue;
                if (!c->exited) {
                        start_container(w, c);
                } else if (should_restart(w, c)) {
                        restart_or_backoff(w, c);
                }
        }
}

static void advance(struct ag_pod_worker *w)
{
        if (w->done)
                return;
        if (w->terminating) {
                save_state(w);
                compute_status(w);
                if (!any_running(w))
                        finish(w);
                return;
        }
        if (w->status == NULL)
                compute_status(w); /* Pending, ContainerCreating: before any slow step */
        if (ensure_sandbox(w) == 0 && run_init(w))
                run_regular(w);
        save_state(w);
        compute_status(w);
        if (w->phase == ST_PHASE_SUCCEEDED || w->phase == ST_PHASE_FAILED) {
                if (any_running(w)) /* e.g. the deadline: stop what still runs */
                        ag_pod_worker_terminate(w, 0, NULL, NULL);
                else
                        finish(w);
        }
}

static void on_kick(struct ag_timer *t, void *data)
{
        (void)t;
        advance(data);
}

static void on_deadline(struct ag_timer *t, void *data)
{
        struct ag_pod_worker *w = data;
        (void)t;
        const char *msg = "Pod was active on the node longer than the specified deadline";
        emit_event(w, NULL, "Normal", "DeadlineExceeded", "%s", msg);
        /* Killed with the pod's own grace period, preStop hooks included. */
        ag_pod_worker_terminate(w,
                                w->pod->spec.has_termination_grace_period
                                    ? w->pod->spec.termination_grace_period_seconds
                                    : 30,
                                "DeadlineExceeded", msg);
}

/* ---- stopping a container: preStop hook, then the stop signal ---------------
 *
 * As the kubelet's killContainer: with a grace period, the preStop hook
 * runs first (exec inside the container, or sleep) and may use the whole
 * grace period; then the stop signal; SIGKILL to the container's cgroup when
 * the grace period is over, with at least 2 s after the signal when the
 * hook used it all. */

static void send_stop_signal(struct ag_pod_worker *w, struct ctr *c)
{
        struct cb_error err = {0};
        c->in_prestop = false;
        c->signalled = true;
        if (!c->running)
                return;
        if (rt_container_signal(w->env->root_dir, c->id,
                                c->stop_signal > 0 ? c->stop_signal : SIGTERM, &err) < 0 &&
            err.code != ESRCH)
                emit_event(w, c, "Warning", "FailedKillPod", "%s", err.msg);
}

static void end_hook(struct ctr *c)
{
        if (c->http_hook != NULL) {
                ag_http_hook_cancel(c->http_hook);
                c->http_hook = NULL;
        }
        if (c->hook_io != NULL) {
                ag_io_free(c->hook_io);
                c->hook_io = NULL;
        }
        if (c->hook_pidfd >= 0) {
                rt_container_exec_kill(c->hook_pidfd, NULL);
                int code;
                rt_container_exec_reap(c->hook_pidfd, true, &code, NULL);
                close(c->hook_pidfd);
                c->hook_pidfd = -1;
        }
        if (c->hook_out >= 0) {
                close(c->hook_out);
                c->hook_out = -1;
        }
        if (c->hook_timer != NULL)
                ag_timer_disarm(c->hook_timer);
}

static void pod_ref(const struct ag_pod_worker *w, char *buf, size_t size)
{
        /* The kubelet's format.Pod: name_namespace(uid) */
        snprintf(buf, size, "%s_%s(%s)", w->pod->meta.name, pod_ns(w->pod), w->pod->meta.uid);
}

/* A postStart or preStop hook ended (ok, or msg: the kubelet's event text). */
static void hook_finished(struct ctr *c, bool ok, const char *msg)
{
        struct ag_pod_worker *w = c->w;
        int kind = c->hook_kind;
        c->hook_kind = 0;
        end_hook(c);
        if (kind == HOOK_PRESTOP) {
                if (!ok)
                        emit_event(w, c, "Warning", "FailedPreStopHook", "%s", msg);
                ag_pod_worker_mark(w, "preStopDone", c->spec->name);
                send_stop_signal(w, c);
                return;
        }
        if (kind != HOOK_POSTSTART)
                return;
        c->in_poststart = false;
        if (ok) {
                ag_pod_worker_mark(w, "postStartDone", c->spec->name);
                if (!w->terminating && c->running)
                        start_probers(w, c);
        } else if (c->running && !w->terminating) {
                /* As the kubelet: the container is killed; its exit goes
                 * through the restart policy. */
                emit_event(w, c, "Warning", "FailedPostStartHook", "%s", msg);
                emit_event(w, c, "Normal", "Killing", "FailedPostStartHook");
                probe_kill_quiet(w, c);
        }
        compute_status(w);
        ag_timer_arm(w->kick, 0);
}

static void on_hook_exit(struct ag_io *io, int fd, uint32_t events, void *data)
{
        struct ctr *c = data;
        struct ag_pod_worker *w = c->w;
        (void)io;
        (void)fd;
        (void)events;
        int code = -1;
        char out[1024] = "";
        size_t len = 0;
        if (c->hook_out >= 0)
                rt_container_exec_read(c->hook_out, out, sizeof(out) - 1, &len);
        out[len] = '\0';
        if (rt_container_exec_reap(c->hook_pidfd, false, &code, NULL) < 0)
                code = -1;
        close(c->hook_pidfd);
        c->hook_pidfd = -1;
        const struct k8s_handler *h =
            c->hook_kind == HOOK_POSTSTART ? &c->spec->post_start : &c->spec->pre_stop;
        char cmd[512] = "", ref[512], msg[4096];
        for (size_t i = 0, n = 0; i < h->n_command && n < sizeof(cmd); i++)
                n +=
                    (size_t)snprintf(cmd + n, sizeof(cmd) - n, "%s%s", i ? " " : "", h->command[i]);
        pod_ref(w, ref, sizeof(ref));
        snprintf(msg, sizeof(msg),
                 "Exec lifecycle hook ([%.500s]) for Container \"%.253s\" in Pod \"%.500s\" "
                 "failed - error: command '%.500s' exited with %d: , message: \"%.1000s\"",
                 cmd, c->spec->name, ref, cmd, code, out);
        hook_finished(c, code == 0, msg);
}

static void on_http_hook(bool ok, const char *error, void *data)
{
        struct ctr *c = data;
        c->http_hook = NULL;
        const struct k8s_handler *h =
            c->hook_kind == HOOK_POSTSTART ? &c->spec->post_start : &c->spec->pre_stop;
        char ref[512], msg[4096];
        pod_ref(c->w, ref, sizeof(ref));
        snprintf(msg, sizeof(msg),
                 "HTTP lifecycle hook (%.500s) for Container \"%.253s\" in Pod \"%.500s\" failed - "
                 "error: %.2500s",
                 h->path ? h->path : "", c->spec->name, ref, error ? error : "");
        hook_finished(c, ok, msg);
}

static void on_hook_timer(struct ag_timer *t, void *data)
{
        struct ctr *c = data;
        (void)t;
        hook_finished(c, true, NULL);
}

/* Starts a hook of kind HOOK_PRESTOP/HOOK_POSTSTART. false: nothing runs
 * (no handler, or it could not start: then the failure is reported as the
 * hook's and hook_finished() has run). */
static bool start_hook(struct ag_pod_worker *w, struct ctr *c, const struct k8s_handler *h,
                       int kind, int64_t http_timeout_ms)
{
        struct cb_error err = {0};
        c->hook_kind = kind;
        switch (h->kind) {
        case K8S_HANDLER_NONE:
                c->hook_kind = 0;
                return false;
        case K8S_HANDLER_SLEEP:
                ag_timer_arm(c->hook_timer,
                             (uint64_t)(h->sleep_seconds > 0 ? h->sleep_seconds : 0) * 1000);
                return true;
        case K8S_HANDLER_EXEC: {
                const char **argv = calloc(h->n_command + 1, sizeof(char *));
                if (argv == NULL) {
                        cb_error_set(&err, ENOMEM, "exec hook");
                        break;
                }
                for (size_t i = 0; i < h->n_command; i++)
                        argv[i] = h->command[i];
                int r = rt_container_exec_start(w->env->root_dir, c->id, w->env->monitor_path, argv,
                                                &c->hook_pidfd, &c->hook_out, &err);
                free(argv);
                if (r == 0)
                        c->hook_io =
                            ag_io_new(w->env->loop, c->hook_pidfd, EPOLLIN, on_hook_exit, c, &err);
                if (r == 0 && c->hook_io != NULL)
                        return true;
                break;
        }
        case K8S_HANDLER_HTTP_GET:
                c->http_hook = ag_http_hook_start(
                    w->env->hooks, h,
                    w->pod->spec.host_network || w->n_pod_ips == 0 ? "127.0.0.1" : w->pod_ips[0],
                    c->spec->ports, c->spec->n_ports, http_timeout_ms, on_http_hook, c, &err);
                if (c->http_hook != NULL)
                        return true;
                break;
        default:
                cb_error_set(&err, 0, "a %s hook is not supported",
                             h->kind == K8S_HANDLER_TCP_SOCKET ? "tcpSocket" : "gRPC");
                break;
        }
        char ref[512], msg[4096];
        pod_ref(w, ref, sizeof(ref));
        snprintf(msg, sizeof(msg),
                 "%s lifecycle hook for Container \"%s\" in Pod \"%s\" failed - error: %s",
                 h->kind == K8S_HANDLER_EXEC       ? "Exec"
                 : h->kind == K8S_HANDLER_HTTP_GET ? "HTTP"
                                                   : "Unknown",
                 c->spec->name, ref, err.msg);
        hook_finished(c, false, msg);
        return false;
}

/* Starts the preStop hook; false when there is none (or it cannot run:
 * then the stop signal goes at once). */
static bool start_prestop(struct ag_pod_worker *w, struct ctr *c, int64_t grace_seconds)
{
        if (c->spec->pre_stop.kind == K8S_HANDLER_NONE)
                return false;
        c->in_prestop = true;
        /* When it cannot start, hook_finished() has sent the stop signal. */
        start_hook(w, c, &c->spec->pre_stop, HOOK_PRESTOP, grace_seconds * 1000);
        return true;
}

static void on_grace(struct ag_timer *t, void *data)
{
        struct ag_pod_worker *w = data;
        /* Containers still in their preStop hook get the stop signal now
         * and 2 s more (the kubelet's minimum); the others are killed. */
        bool extended = false;
        for (size_t i = 0; i < w->n; i++) {
                struct ctr *c = &w->ctrs[i];
                if (c->running && c->in_prestop && !w->grace_extended) {
                        end_hook(c);
                        send_stop_signal(w, c);
                        extended = true;
                } else if (c->running) {
                        rt_container_kill_all(w->env->root_dir, c->id, NULL);
                }
        }
        if (extended) {
                w->grace_extended = true;
                ag_timer_arm(t, 2000);
                return;
        }
        w->killed = true;
}

void ag_pod_worker_terminate(struct ag_pod_worker *w, int64_t grace_seconds, const char *reason,
                             const char *message)
{
        if (w->done)
                return;
        /* A verdict (reason) only for a pod that is not terminal already. */
        if (reason != NULL && w->phase != ST_PHASE_SUCCEEDED && w->phase != ST_PHASE_FAILED) {
                snprintf(w->reason, sizeof(w->reason), "%s", reason);
                snprintf(w->message, sizeof(w->message), "%s", message ? message : "");
                if (w->forced == ST_PHASE_NONE)
                        w->forced = ST_PHASE_FAILED;
        }
        bool first = !w->terminating;
        w->terminating = true;
        for (size_t i = 0; i < w->n; i++) {
                struct ctr *c = &w->ctrs[i];
                if (c->timer)
                        ag_timer_disarm(c->timer);
                c->waiting_timer = false;
                stop_probers(c);
                if (!c->running || !first)
                        continue;
                emit_event(w, c, "Normal", "Killing", "Stopping container %s", c->spec->name);
                if (grace_seconds <= 0 || !start_prestop(w, c, grace_seconds))
                        send_stop_signal(w, c);
        }
        ag_timer_disarm(w->deadline);
        /* The kubelet's minimum of 2 s per container; the grace period can
         * only shrink (a later, shorter deletion moves the deadline). */
        int64_t grace = grace_seconds < 2 ? 2 : grace_seconds;
        uint64_t deadline = ag_now_ms() + (uint64_t)grace * 1000;
        if (first || w->killed || deadline < w->grace_deadline_ms) {
                w->grace_deadline_ms = deadline;
                ag_timer_arm(w->grace, (uint64_t)grace * 1000);
        }
        ag_timer_arm(w->kick, 0);
}

void ag_pod_worker_update(struct ag_pod_worker *w, struct k8s_pod *pod)
{
        k8s_pod_free(w->latest);
        w->latest = pod;
        ag_timer_arm(w->kick, 0);
}

const struct k8s_pod *ag_pod_worker_pod(const struct ag_pod_worker *w)
{
        return w->latest ? w->latest : w->pod;
}

const cJSON *ag_pod_worker_status(const struct ag_pod_worker *w)
{
        return w->status;
}

cJSON *ag_pod_worker_stats_json(const struct ag_pod_worker *w, struct ag_stats *st)
{
        struct ag_stats_container cs[64];
        char cg[64][1200], logdir[64][1200];
        size_t n = 0;
        pid_t net_pid = 0;
        for (size_t i = 0; i < w->n && n < CB_ARRAY_SIZE(cs); i++) {
                const struct ctr *c = &w->ctrs[i];
                struct rt_container_state rs;
                if (!c->id[0] || rt_container_state(w->env->root_dir, c->id, &rs, NULL) < 0 ||
                    rs.status != RT_CONTAINER_RUNNING)
                        continue;
                if (net_pid == 0)
                        net_pid = rs.pid;
                snprintf(cg[n], sizeof(cg[n]), "%s/%s", w->pod_cgroup, c->id);
                ag_cri_log_dir(logdir[n], sizeof(logdir[n]), w->env->pod_logs_dir, pod_ns(w->pod),
                               w->pod->meta.name, w->pod->meta.uid, c->spec->name);
                cs[n] = (struct ag_stats_container){.name = c->spec->name,
                                                    .cgroup = cg[n],
                                                    .started_ns = rs.started_at,
                                                    .log_dir = logdir[n]};
                n++;
        }
        struct ag_stats_pod p = {.ns = pod_ns(w->pod),
                                 .name = w->pod->meta.name,
                                 .uid = w->pod->meta.uid,
                                 .started_ns = w->start_time * 1000000000,
                                 .cgroup = w->cgroup_created ? w->pod_cgroup : "",
                                 .net_pid = w->sandbox.netns_path[0] ? net_pid : 0,
                                 .containers = cs,
                                 .n_containers = n};
        return ag_stats_pod_json(st, &p);
}

bool ag_pod_worker_owns(const struct ag_pod_worker *w, const char *container_id)
{
        for (size_t i = 0; i < w->n; i++)
                if (w->ctrs[i].id[0] && strcmp(w->ctrs[i].id, container_id) == 0)
                        return true;
        return false;
}

int ag_pod_worker_new(const struct ag_node_env *env, struct k8s_pod *pod,
                      const struct ag_pod_worker_ops *ops, void *data, struct ag_pod_worker **ret,
                      struct cb_error *err)
{
        if (pod->meta.uid == NULL || pod->meta.name == NULL) {
                k8s_pod_free(pod);
                return cb_error_set(err, 0, "the pod has no metadata.uid or metadata.name");
        }
        struct ag_pod_worker *w = calloc(1, sizeof(*w));
        if (w == NULL) {
                k8s_pod_free(pod);
                return cb_error_set(err, ENOMEM, "pod worker");
        }
        w->env = env;
        w->ops = ops;
        w->data = data;
        w->pod = pod;
        w->n_init = pod->spec.n_init_containers;
        w->n = w->n_init + pod->spec.n_containers;
        w->ctrs = calloc(w->n + 1, sizeof(*w->ctrs));
        if (w->ctrs == NULL)
                goto fail_nomem;
        for (size_t i = 0; i < w->n; i++) {
                struct ctr *c = &w->ctrs[i];
                c->init = i < w->n_init;
                c->spec =
                    c->init ? &pod->spec.init_containers[i] : &pod->spec.containers[i - w->n_init];
                c->w = w;
                c->exit_fd = -1;
                c->hook_pidfd = c->hook_out = -1;
                c->timer = ag_timer_new(env->loop, on_ctr_timer, c, err);
                c->kill_timer = ag_timer_new(env->loop, on_kill_timer, c, err);
                c->hook_timer = ag_timer_new(env->loop, on_hook_timer, c, err);
                if (c->timer == NULL || c->kill_timer == NULL || c->hook_timer == NULL)
                        goto fail;
        }
        if (k8s_pod_cgroup_plan(pod, env->node_memory_capacity, env->pod_pids_limit,
                                env->cgroup_root, &w->plan, err) < 0)
                goto fail;
        w->have_plan = true;
        snprintf(w->pod_cgroup, sizeof(w->pod_cgroup), "%s", w->plan.path);
        w->kick = ag_timer_new(env->loop, on_kick, w, err);
        w->sandbox_timer = ag_timer_new(env->loop, on_sandbox_timer, w, err);
        w->deadline = ag_timer_new(env->loop, on_deadline, w, err);
        w->grace = ag_timer_new(env->loop, on_grace, w, err);
        if (!w->kick || !w->sandbox_timer || !w->deadline || !w->grace)
                goto fail;
        w->start_time = now_s();
        if (pod->status.start_time != NULL)
                st_time_parse(pod->status.start_time, &w->start_time, NULL);
        adopt(w);
        if (!w->adopted)
                ag_pod_worker_mark(w, "workerStarted", NULL);
        else
                ag_pod_worker_mark(w, "adopted", NULL);
        if (pod->spec.has_active_deadline)
                ag_timer_arm(w->deadline, (uint64_t)(pod->spec.active_deadline_seconds > 0
                                                         ? pod->spec.active_deadline_seconds
                                                         : 0) *
                                              1000);
        ag_timer_arm(w->kick, 0);
        *ret = w;
        return 0;
fail_nomem:
        cb_error_set(err, ENOMEM, "pod worker");
fail:
        ag_pod_worker_free(w);
        return -1;
}

void ag_pod_worker_free(struct ag_pod_worker *w)
{
        if (w == NULL)
                return;
        if (w->sandbox_job)
                w->sandbox_job->w = NULL;
        for (size_t i = 0; w->ctrs && i < w->n; i++) {
                if (w->ctrs[i].pull_job)
                        w->ctrs[i].pull_job->c = NULL;
                if (w->ctrs[i].start_job)
                        w->ctrs[i].start_job->c = NULL;
                rt_image_free(w->ctrs[i].pulled);
                stop_watch(&w->ctrs[i]);
                stop_probers(&w->ctrs[i]);
                if (w->ctrs[i].timer)
                        ag_timer_free(w->ctrs[i].timer);
                if (w->ctrs[i].kill_timer)
                        ag_timer_free(w->ctrs[i].kill_timer);
                end_hook(&w->ctrs[i]);
                if (w->ctrs[i].hook_timer)
                        ag_timer_free(w->ctrs[i].hook_timer);
        }
        free(w->ctrs);
        if (w->kick)
                ag_timer_free(w->kick);
        if (w->sandbox_timer)
                ag_timer_free(w->sandbox_timer);
        if (w->deadline)
                ag_timer_free(w->deadline);
        if (w->grace)
                ag_timer_free(w->grace);
        if (w->have_plan)
                k8s_pod_cgroup_plan_free(&w->plan);
        free(w->last_status);
        free(w->saved);
        cJSON_Delete(w->status);
        k8s_pod_free(w->latest);
        k8s_pod_free(w->pod);
        free(w);
}
