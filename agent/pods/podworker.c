/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/pods/worker_internal.h"
#include "agent/core/log.h"
#include "agent/k8s/jsondiff.h"

static void advance(struct ag_pod_worker *w);

int64_t pw_now_s(void)
{
        return cb_wall_now();
}

void pw_set_exited_boot(struct ctr *c, int64_t finished_at_realtime)
{
        int64_t boot = cb_boot_now(), age = (int64_t)time(NULL) - finished_at_realtime;
        if (age < 0 || finished_at_realtime <= 0)
                age = 0;
        c->exited_boot = age < boot ? boot - age : 0;
}

static uint64_t pw_wall_ms(void)
{
        return (uint64_t)(cb_wall_now_us() / 1000);
}

const char *pw_pod_ns(const struct k8s_pod *p)
{
        return p->meta.namespace_ ? p->meta.namespace_ : "default";
}

void pw_emit_event(struct ag_pod_worker *w, const struct ctr *c, const char *type,
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

/* Room for one more step: false when the timeline is full (or out of
 * memory), and the step is not recorded. */
static bool step_room(struct ag_pod_worker *w)
{
        if (w->n_steps >= AG_TIMELINE_MAX)
                return false;
        if (w->n_steps < w->cap_steps)
                return true;
        size_t cap = w->cap_steps ? w->cap_steps * 2 : 16;
        if (cap > AG_TIMELINE_MAX)
                cap = AG_TIMELINE_MAX;
        struct step *g = realloc(w->steps, cap * sizeof(*g));
        if (g == NULL)
                return false;
        w->steps = g;
        w->cap_steps = cap;
        return true;
}

void ag_pod_worker_mark(struct ag_pod_worker *w, const char *step, const char *container)
{
        if (!step_room(w))
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

void ag_pod_worker_mark_at(struct ag_pod_worker *w, const char *step, uint64_t mono_us,
                           int64_t wall_us)
{
        if (mono_us == 0 || !step_room(w))
                return;
        if (wall_us == 0) { /* the wall time of mono_us, from the clocks now */
                struct timespec m, r;
                clock_gettime(CLOCK_MONOTONIC, &m);
                clock_gettime(CLOCK_REALTIME, &r);
                uint64_t now = (uint64_t)m.tv_sec * 1000000u + (uint64_t)m.tv_nsec / 1000u;
                wall_us = (int64_t)r.tv_sec * 1000000 + r.tv_nsec / 1000 -
                          (int64_t)(now > mono_us ? now - mono_us : 0);
        }
        /* In time order: a step from before the worker existed (the watch
         * event that brought the pod) goes first and becomes the base of
         * every offset. */
        size_t i = w->n_steps;
        while (i > 0 && w->steps[i - 1].mono_us > mono_us)
                i--;
        memmove(&w->steps[i + 1], &w->steps[i], (w->n_steps - i) * sizeof(w->steps[0]));
        w->n_steps++;
        struct step *st = &w->steps[i];
        snprintf(st->name, sizeof(st->name), "%s", step);
        st->mono_us = mono_us;
        st->wall_us = wall_us;
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
        o->image = c->image;
        o->image_id = c->image_id;
        o->container_id = c->cid[0] ? c->cid : NULL;
        o->has_user = c->has_user;
        o->uid = c->uid;
        o->gid = c->gid;
        o->groups = c->groups;
        o->n_groups = c->n_groups;
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
                o->state.message = c->wait_message;
        } else if (c->exited) {
                o->known = true;
                o->state = c->term;
                o->state.reason = c->term_reason;
                o->state.message = c->term_message;
                o->state.container_id = c->term_cid;
        } else if (o->state.kind == ST_STATE_WAITING) {
                /* kept from before (a start in progress cleared the reason):
                 * the messages are malloc'd, so never the pointer it was */
                o->state.message = c->wait_message;
        } else if (o->state.kind == ST_STATE_TERMINATED) {
                o->state.message = c->term_message;
        }
        if (o->last_state.kind == ST_STATE_TERMINATED) {
                o->last_state.reason = c->last_reason;
                o->last_state.message = c->last_message;
                o->last_state.container_id = c->last_cid;
        }
}

void pw_compute_status(struct ag_pod_worker *w)
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
            .own_status = w->status,
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
        cJSON *st = ag_pod_status_json(&view, &obs, pw_now_s());
        if (st == NULL)
                goto out;
        /* Reported terminal only once no container can run (mergePodStatus):
         * the old phase is the one last reported, else the API's. */
        const cJSON *old = w->status;
        const cJSON *op = cJSON_GetObjectItemCaseSensitive(old, "phase");
        const cJSON *orr = cJSON_GetObjectItemCaseSensitive(old, "reason");
        const cJSON *om = cJSON_GetObjectItemCaseSensitive(old, "message");
        if (old != NULL)
                ag_pod_status_hold_terminal(st, cJSON_GetStringValue(op), cJSON_GetStringValue(orr),
                                            cJSON_GetStringValue(om), pw_any_running(w));
        else
                ag_pod_status_hold_terminal(st, api->status.phase, api->status.reason,
                                            api->status.message, pw_any_running(w));
        bool phase_changed = phase != w->phase;
        if (phase_changed)
                ag_pod_worker_mark(w, "phase", st_phase_name(phase));
        w->phase = phase;
        if (phase_changed)
                pw_save_state(w); /* the phase step reaches worker.json */
        char *text = cJSON_PrintUnformatted(st);
        if (text != NULL && (w->last_status == NULL || strcmp(text, w->last_status) != 0)) {
                free(w->last_status);
                w->last_status = text;
                cJSON_Delete(w->status);
                w->status = st;
                w->sent_digests[w->n_sent_digests++ % PW_SENT_DIGESTS] = k8s_json_digest(st);
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

/* ---- pw_teardown ----------------------------------------------------------------- */

void pw_stop_watch(struct ctr *c)
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

/* ---- container exits ------------------------------------------------------------ */

/* The last max bytes of a file (tail.ReadAtMost). 0 with *ret_len 0 when
 * it does not exist. */
static int read_at_most(const char *path, char *buf, size_t max, size_t *ret_len)
{
        *ret_len = 0;
        buf[0] = '\0';
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
        struct stat sb;
        if (fd < 0)
                return errno == ENOENT ? 0 : -1;
        if (fstat(fd, &sb) < 0)
                return -1;
        if (!S_ISREG(sb.st_mode)) {
                errno = EINVAL;
                return -1;
        }
        off_t off = sb.st_size > (off_t)max ? sb.st_size - (off_t)max : 0;
        size_t len = 0;
        while (len < max) {
                ssize_t r = pread(fd, buf + len, max - len, off + (off_t)len);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0)
                        return -1;
                if (r == 0)
                        break;
                len += (size_t)r;
        }
        buf[len] = '\0';
        *ret_len = strlen(buf); /* a NUL ends the message as it would the JSON string */
        return 0;
}

/* state.terminated.message of the instance that just exited
 * (convertToKubeContainerStatus): the runtime's message, then the file at
 * terminationMessagePath, or with FallbackToLogsOnError and a failure the
 * tail of its log. Both are a few KiB of local files, read once per exit. */
static void termination_message(struct ag_pod_worker *w, struct ctr *c, const char *runtime_msg)
{
        char path[RT_PATH_MAX], tmsg[ST_TERMINATION_MESSAGE_MAX + 1] = "";
        size_t len = 0;
        if (c->id[0] && pw_termination_log_path(w, c, c->id, path, sizeof(path)) == 0 &&
            read_at_most(path, tmsg, ST_TERMINATION_MESSAGE_MAX, &len) < 0) {
                snprintf(tmsg, sizeof(tmsg), "Error on reading termination log %.3000s: %s", path,
                         strerror(errno));
        } else if (st_termination_use_logs(c->spec->termination_message_fallback, c->term.exit_code,
                                           c->term_reason, len)) {
                char dir[RT_PATH_MAX], log[RT_PATH_MAX + 32];
                struct cb_error err = {0};
                if (ag_cri_log_dir(dir, sizeof(dir), w->env->pod_logs_dir, pw_pod_ns(w->pod),
                                   w->pod->meta.name, w->pod->meta.uid, c->spec->name) == 0) {
                        snprintf(log, sizeof(log), "%s/%d.log", dir, c->obs.restart_count);
                        _Static_assert(ST_TERMINATION_LOG_BYTES < ST_TERMINATION_MESSAGE_MAX,
                                       "the log tail fits");
                        if (ag_podlogs_tail_text(log, ST_TERMINATION_LOG_LINES,
                                                 ST_TERMINATION_LOG_BYTES, tmsg, &len, &err) < 0)
                                tmsg[0] = '\0';
                }
        }
        char msg[TERM_MESSAGE_MAX];
        st_termination_message(msg, sizeof(msg), runtime_msg, tmsg);
        pw_msg_set(&c->term_message, msg);
}

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
                /* The monitor is gone without an exit record. Its container
                 * may live on, untracked: kill its tree, so the restart does
                 * not run a second one beside it (found by tests/faults). */
                struct cb_error e2 = {0};
                if (rt_container_abort(w->env->root_dir, c->id, &e2) < 0)
                        log_warning("pod %s/%s: container %s lost its monitor: %s",
                                    pw_pod_ns(w->pod), w->pod->meta.name, c->spec->name, e2.msg);
                memset(&st, 0, sizeof(st));
                st.exit_code = 137;
                snprintf(st.reason, sizeof(st.reason), "%s", ST_REASON_CONTAINER_STATUS_UNKNOWN);
                snprintf(st.message, sizeof(st.message),
                         "The container could not be located when the pod was terminated");
                st.finished_at = (int64_t)time(NULL) * 1000000000LL; /* the monitors' clock */
        }
        pw_stop_watch(c);
        pw_stop_probers(c);
        pw_end_hook(c);
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
        pw_set_exited_boot(c, c->term.finished_at);
        snprintf(c->term_reason, sizeof(c->term_reason), "%s", st.reason);
        termination_message(w, c, st.message);
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

void pw_stop_probers(struct ctr *c)
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
            .http = w->env->probe_http,
        };
        struct cb_error err = {0};
        struct ag_prober *p = ag_prober_new(w->env->loop, k, probe, &t, on_probe, c, &err);
        if (p == NULL)
                pw_emit_event(w, c, "Warning", "Unhealthy", "%s probe errored: %s",
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

void pw_start_probers(struct ag_pod_worker *w, struct ctr *c)
{
        pw_stop_probers(c);
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
                pw_emit_event(w, c, "Warning", "FailedKillPod", "%s", err.msg);
        ag_timer_arm(c->kill_timer, (uint64_t)grace * 1000);
}

static void probe_kill(struct ag_pod_worker *w, struct ctr *c, const char *which,
                       const struct k8s_probe *probe)
{
        pw_emit_event(w, c, "Normal", "Killing", "Container %s failed %s probe, will be restarted",
                      c->spec->name, which);
        kill_with_grace(w, c,
                        probe->has_termination_grace_period
                            ? probe->termination_grace_period_seconds
                            : pod_grace(w));
}

void pw_probe_kill_quiet(struct ag_pod_worker *w, struct ctr *c)
{
        kill_with_grace(w, c, pod_grace(w));
}

static void on_probe(struct ag_prober *p, const struct ag_probe_update *u, void *data)
{
        struct ctr *c = data;
        struct ag_pod_worker *w = c->w;
        if (u->message != NULL && !w->terminating)
                pw_emit_event(w, c, "Warning", "Unhealthy", "%s", u->message);
        if (!u->changed || !c->running || w->terminating)
                return;
        if (p == c->startup) {
                if (u->result == AG_PROBE_SUCCESS) {
                        c->obs.startup_succeeded = true;
                        ag_pod_worker_mark(w, "startupProbeSucceeded", c->spec->name);
                        ag_prober_free(c->startup); /* allowed from its own callback */
                        c->startup = NULL;
                        start_liveness_readiness(w, c);
                        pw_compute_status(w);
                        ag_timer_arm(w->kick, 0); /* a started sidecar lets the next one go */
                } else if (u->result == AG_PROBE_FAILURE) {
                        pw_stop_probers(c);
                        probe_kill(w, c, "startup", &c->spec->startup_probe);
                }
        } else if (p == c->liveness) {
                if (u->result == AG_PROBE_FAILURE) {
                        pw_stop_probers(c);
                        probe_kill(w, c, "liveness", &c->spec->liveness_probe);
                }
        } else if (p == c->readiness) {
                c->obs.readiness_succeeded = u->result == AG_PROBE_SUCCESS;
                ag_pod_worker_mark(w, c->obs.readiness_succeeded ? "ready" : "notReady",
                                   c->spec->name);
                pw_compute_status(w);
        }
}

void pw_watch_exit(struct ag_pod_worker *w, struct ctr *c)
{
        struct cb_error err = {0};
        if (rt_container_exit_fd(w->env->root_dir, c->id, &c->exit_fd, &err) < 0 ||
            (c->exit_io = ag_io_new(w->env->loop, c->exit_fd, EPOLLIN, on_exit_fd, c, &err)) ==
                NULL)
                pw_emit_event(w, c, "Warning", "Failed", "cannot watch container %s: %s",
                              c->spec->name, err.msg);
}

/* ---- starting containers --------------------------------------------------------- */

void pw_set_waiting(struct ctr *c, const char *reason, const char *fmt, ...)
{
        snprintf(c->wait_reason, sizeof(c->wait_reason), "%s", reason);
        char msg[MESSAGE_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        pw_msg_set(&c->wait_message, msg);
}

static void on_ctr_timer(struct ag_timer *t, void *data)
{
        struct ctr *c = data;
        (void)t;
        c->waiting_timer = false;
        advance(c->w);
}

void pw_arm_ctr_timer(struct ctr *c, int64_t seconds)
{
        c->waiting_timer = true;
        ag_timer_arm(c->timer, (uint64_t)(seconds > 0 ? seconds : 0) * 1000);
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
        int64_t now = cb_boot_now();
        int64_t finished = c->exited_boot;
        if (st_backoff_active(&c->backoff, finished, now)) {
                if (!c->waiting_timer) {
                        char *msg = st_crashloop_message(c->backoff.backoff, c->spec->name,
                                                         w->pod->meta.name, pw_pod_ns(w->pod),
                                                         w->pod->meta.uid);
                        pw_set_waiting(c, ST_REASON_CRASH_LOOP_BACK_OFF, "%s", msg ? msg : "");
                        free(msg);
                        char *ev = st_backoff_event_message(c->spec->name, w->pod->meta.name,
                                                            pw_pod_ns(w->pod), w->pod->meta.uid);
                        pw_emit_event(w, c, "Warning", "BackOff", "%s", ev ? ev : "");
                        free(ev);
                        pw_arm_ctr_timer(c, finished + c->backoff.backoff - now);
                }
                return false;
        }
        /* The old instance's exit is in memory only (on_exit_fd): worker.json
         * gets it before the runtime's record goes with the container below.
         * An agent killed between that removal and the next save used to
         * find the instance neither in the runtime nor with an exit in
         * worker.json and report it killed, 137 ContainerStatusUnknown, in
         * place of its real exit (tests/faults agent_kill under ASan; now
         * tests/faults/crash_points.sh). */
        pw_save_state(w);
        /* Kept until the start is done: undone if the sandbox dies under it. */
        c->undo.valid = true;
        c->undo.backoff = c->backoff;
        c->undo.last_state = c->obs.last_state;
        snprintf(c->undo.last_reason, sizeof(c->undo.last_reason), "%s", c->last_reason);
        pw_msg_set(&c->undo.last_message, c->last_message);
        snprintf(c->undo.last_cid, sizeof(c->undo.last_cid), "%s", c->last_cid);
        st_backoff_next(&c->backoff, finished, now, w->env->backoff_base, w->env->backoff_cap);
        /* The old instance becomes lastState. */
        c->obs.last_state = c->term;
        snprintf(c->last_reason, sizeof(c->last_reason), "%s", c->term_reason);
        pw_msg_set(&c->last_message, c->term_message);
        snprintf(c->last_cid, sizeof(c->last_cid), "%s", c->term_cid);
        c->obs.restart_count++;
        /* The old instance (its exit record, the upper dir with whatever it
         * wrote) is removed off the loop, beside the next start: retired
         * until the removal is confirmed (worker_jobs.c retire_work). */
        pw_retire(w, c);
        c->exited = false;
        pw_start_container(w, c);
        return c->running;
}

/* A start that failed because the pod's PID namespace died under it (its
 * pause was killed: tests/faults/process_kill): the new instance never
 * ran, so it is retired (removed off the loop) and the restart undone (restartCount, lastState,
 * backoff as before; the current state the exit that came with the
 * namespace's death). advance() then finds the sandbox lost and makes it
 * again, and the container restarts once in the new one: one restart per
 * container for the sandbox change, as the kubelet counts it, not a
 * StartError besides. */
void pw_start_undo(struct ag_pod_worker *w, struct ctr *c, const char *id, const char *why)
{
        log_v(2, "pod %s/%s: container %s not started: its sandbox is gone (%s)", pw_pod_ns(w->pod),
              w->pod->meta.name, c->spec->name, why);
        snprintf(c->id, sizeof(c->id), "%s", id);
        pw_retire(w, c); /* removed off the loop */
        c->running = false;
        if (c->undo.valid) {
                c->obs.restart_count--;
                c->backoff = c->undo.backoff;
                c->obs.last_state = c->undo.last_state;
                snprintf(c->last_reason, sizeof(c->last_reason), "%s", c->undo.last_reason);
                pw_msg_set(&c->last_message, c->undo.last_message);
                snprintf(c->last_cid, sizeof(c->last_cid), "%s", c->undo.last_cid);
                c->exited = true; /* c->term is still the instance that died */
        } else {
                c->exited = false; /* its first start: again, in the new sandbox */
        }
        c->undo.valid = false;
}

/* ---- the state machine ------------------------------------------------------------------- */

static void on_sandbox_timer(struct ag_timer *t, void *data)
{
        (void)t;
        advance(data);
}

static bool is_sidecar(const struct ctr *c)
{
        return c->init && k8s_container_is_sidecar(c->spec);
}

static void run_view(const struct ag_pod_worker *w, const struct ctr *c, struct st_run_view *v)
{
        *v = (struct st_run_view){
            .sidecar = is_sidecar(c),
            .running = c->running || c->start_job != NULL,
            .started = c->running && !c->in_poststart && c->obs.startup_succeeded,
            .exited = c->exited && !c->running,
            .exit_code = c->term.exit_code,
            .will_restart = c->exited && !w->terminating && should_restart(w, c),
        };
}

/* Views of all containers: init ones, then regular ones. */
static struct st_run_view *run_views(const struct ag_pod_worker *w)
{
        struct st_run_view *v = calloc(w->n + 1, sizeof(*v));
        for (size_t i = 0; v != NULL && i < w->n; i++)
                run_view(w, &w->ctrs[i], &v[i]);
        return v;
}

static bool init_done(const struct ag_pod_worker *w, const struct ctr *c)
{
        struct st_run_view v;
        run_view(w, c, &v);
        return st_init_done(&v);
}

static bool has_sidecars(const struct ag_pod_worker *w)
{
        for (size_t i = 0; i < w->n_init; i++)
                if (is_sidecar(&w->ctrs[i]))
                        return true;
        return false;
}

/* Termination order: a sidecar's stop signal waits until the regular
 * containers and the sidecars after it have stopped. */
bool pw_sidecar_must_wait(struct ag_pod_worker *w, struct ctr *c)
{
        if (!w->terminating || !w->ordered_stop || !is_sidecar(c) || !c->running)
                return false;
        _cleanup_free_ struct st_run_view *v = run_views(w);
        if (v == NULL || st_sidecar_may_stop(v, w->n_init, v + w->n_init, w->n - w->n_init,
                                             (size_t)(c - w->ctrs)))
                return false;
        c->awaiting_turn = true;
        return true;
}

/* The sidecars whose turn came: the stop signal, SIGKILL after what is
 * left of the grace period (at least 2 s, killContainer's minimum). */
static void stop_sidecars_in_turn(struct ag_pod_worker *w)
{
        for (size_t i = w->n_init; i-- > 0;) {
                struct ctr *c = &w->ctrs[i];
                if (!c->awaiting_turn)
                        continue;
                if (!c->running) {
                        c->awaiting_turn = false;
                        continue;
                }
                _cleanup_free_ struct st_run_view *v = run_views(w);
                if (v == NULL ||
                    !st_sidecar_may_stop(v, w->n_init, v + w->n_init, w->n - w->n_init, i))
                        continue;
                c->awaiting_turn = false;
                uint64_t now = ag_now_ms();
                uint64_t left = w->grace_deadline_ms > now ? w->grace_deadline_ms - now : 0;
                ag_pod_worker_mark(w, "sidecarStop", c->spec->name);
                pw_send_stop_signal(w, c);
                c->signal_ms = now;
                ag_timer_arm(c->kill_timer, left < 2000 ? 2000 : left);
        }
}

/* Init containers, one at a time. Returns true when all are done. Once
 * the pod is initialized, only the sidecars are looked after: one that
 * exited is restarted whatever the pod's restartPolicy, without holding
 * the regular containers back. */
static bool run_init(struct ag_pod_worker *w)
{
        for (size_t i = w->n_init; !w->initialized && i < w->n; i++)
                if (w->ctrs[i].id[0] || w->ctrs[i].exited || w->ctrs[i].obs.restart_count > 0)
                        w->initialized = true; /* adopted after the init phase */
        if (w->initialized) {
                for (size_t i = 0; i < w->n_init; i++) {
                        struct ctr *c = &w->ctrs[i];
                        if (!is_sidecar(c) || c->running || c->waiting_timer || c->start_job ||
                            c->files_job)
                                continue;
                        if (c->exited)
                                restart_or_backoff(w, c);
                        else
                                /* a restart whose image files were being
                                 * read (ensure_files): it goes on now */
                                pw_start_container(w, c);
                }
                return true;
        }
        for (size_t i = 0; i < w->n_init; i++) {
                struct ctr *c = &w->ctrs[i];
                if (init_done(w, c))
                        continue;
                if (c->running || c->waiting_timer || c->start_job)
                        return false;
                if (c->exited) {
                        if (!should_restart(w, c))
                                return false; /* the phase turns Failed */
                        restart_or_backoff(w, c);
                        return false;
                }
                pw_start_container(w, c);
                return false;
        }
        w->initialized = true;
        ag_pod_worker_mark(w, "initialized", NULL);
        return true;
}

/* Every regular container is done for good: the sidecars must not keep
 * the pod alive (computePodActions' KillPod), so they are stopped in
 * order with the pod's grace period and the pod completes. */
static bool job_complete(const struct ag_pod_worker *w)
{
        if (!w->initialized || !has_sidecars(w))
                return false;
        _cleanup_free_ struct st_run_view *v = run_views(w);
        return v != NULL && st_regular_done(v + w->n_init, w->n - w->n_init);
}

static void run_regular(struct ag_pod_worker *w)
{
        for (size_t i = w->n_init; i < w->n; i++) {
                struct ctr *c = &w->ctrs[i];
                if (c->running || c->waiting_timer || c->start_job)
                        continue;
                if (!c->exited) {
                        pw_start_container(w, c);
                } else if (should_restart(w, c)) {
                        restart_or_backoff(w, c);
                }
        }
}

/* A pod with a shared PID namespace whose pause process died (killed from
 * outside; tests/faults/process_kill): its containers died with the
 * namespace and none can start in it again ("cannot fork ... Cannot
 * allocate memory" for ever). As the kubelet does for a sandbox that is not
 * ready: the containers are stopped, the sandbox is made again once none
 * runs (sandbox_work removes the old one first: CNI DEL, unpins), and they
 * restart per policy. True while that waits for the containers' exits. */
static bool sandbox_lost(struct ag_pod_worker *w)
{
        if (!w->sandbox_ready || w->sandbox.pidns_path[0] == '\0' ||
            rt_pause_alive(w->sandbox.pause_pid, w->sandbox.pause_start_time))
                return false;
        if (!w->sandbox_lost) {
                w->sandbox_lost = true;
                pw_emit_event(w, NULL, "Normal", "SandboxChanged",
                              "Pod sandbox changed, it will be killed and re-created.");
                for (size_t i = 0; i < w->n; i++)
                        if (w->ctrs[i].running)
                                rt_container_abort(w->env->root_dir, w->ctrs[i].id, NULL);
        }
        if (pw_any_running(w))
                return true; /* each exit advances the worker again */
        w->sandbox_lost = false;
        w->sandbox_ready = false;
        w->n_pod_ips = 0;
        return false;
}

static void advance(struct ag_pod_worker *w)
{
        if (w->done)
                return;
        if (w->terminating) {
                stop_sidecars_in_turn(w);
                pw_save_state(w);
                pw_compute_status(w);
                if (!pw_any_running(w))
                        pw_finish(w);
                return;
        }
        if (w->status == NULL)
                pw_compute_status(w); /* Pending, ContainerCreating: before any slow step */
        if (sandbox_lost(w)) {
                pw_save_state(w);
                pw_compute_status(w);
                return;
        }
        if (pw_ensure_sandbox(w) == 0 && run_init(w))
                run_regular(w);
        if (job_complete(w)) {
                ag_pod_worker_mark(w, "regularContainersDone", NULL);
                ag_pod_worker_terminate(w, pod_grace(w), NULL, NULL);
                return;
        }
        pw_save_state(w);
        pw_compute_status(w);
        if (w->phase == ST_PHASE_SUCCEEDED || w->phase == ST_PHASE_FAILED) {
                if (pw_any_running(w)) /* e.g. the deadline: stop what still runs */
                        ag_pod_worker_terminate(w, 0, NULL, NULL);
                else
                        pw_finish(w);
        }
}

static void on_kick(struct ag_timer *t, void *data)
{
        (void)t;
        advance(data);
}

static void on_retry(struct ag_timer *t, void *data)
{
        struct ag_pod_worker *w = data;
        (void)t;
        log_v(2, "pod %s/%s: synced again after a failed sync", pw_pod_ns(w->pod),
              w->pod->meta.name);
        advance(w);
}

/* rand.Float64() for the retry's jitter: [0, 1) from the kernel's pool. */
static double sync_random(void *ctx)
{
        (void)ctx;
        uint64_t x = 0;
        if (getrandom(&x, sizeof(x), GRND_NONBLOCK) != (ssize_t)sizeof(x))
                x = (uint64_t)random() << 32 ^ (uint64_t)random();
        return (double)(x >> 11) / 9007199254740992.0;
}

void pw_sync_failed(struct ag_pod_worker *w)
{
        if (w->done || w->terminating || w->retry == NULL)
                return;
        /* completeWork: each failed sync queues the pod again from now */
        uint64_t ms = st_jitter_ms(ST_SYNC_BACKOFF_MS, ST_SYNC_BACKOFF_JITTER, sync_random, NULL);
        log_v(1, "pod %s/%s: sync failed, retried in %" PRIu64 ".%03" PRIu64 "s", pw_pod_ns(w->pod),
              w->pod->meta.name, ms / 1000, ms % 1000);
        ag_timer_arm(w->retry, ms);
}

static void on_deadline(struct ag_timer *t, void *data)
{
        struct ag_pod_worker *w = data;
        (void)t;
        const char *msg = "Pod was active on the node longer than the specified deadline";
        pw_emit_event(w, NULL, "Normal", "DeadlineExceeded", "%s", msg);
        /* Killed with the pod's own grace period, preStop hooks included. */
        ag_pod_worker_terminate(w,
                                w->pod->spec.has_termination_grace_period
                                    ? w->pod->spec.termination_grace_period_seconds
                                    : 30,
                                "DeadlineExceeded", msg);
}

static bool start_prestop(struct ag_pod_worker *w, struct ctr *c, int64_t grace_seconds)
{
        if (c->spec->pre_stop.kind == K8S_HANDLER_NONE)
                return false;
        c->in_prestop = true;
        /* When it cannot start, pw_hook_finished() has sent the stop signal. */
        pw_start_hook(w, c, &c->spec->pre_stop, HOOK_PRESTOP, grace_seconds * 1000);
        return true;
}

static void on_grace(struct ag_timer *t, void *data)
{
        struct ag_pod_worker *w = data;
        /* Containers still in their preStop hook get the stop signal now
         * and 2 s more (the kubelet's minimum); the others are killed. */
        bool extended = false;
        w->ordered_stop = false; /* the grace period is over: no more waiting for turns */
        uint64_t now = ag_now_ms();
        for (size_t i = 0; i < w->n; i++) {
                struct ctr *c = &w->ctrs[i];
                if (c->running && c->awaiting_turn) {
                        /* its turn never came: the stop signal now, SIGKILL in 2 s */
                        c->awaiting_turn = false;
                        pw_send_stop_signal(w, c);
                        c->signal_ms = now;
                        ag_timer_arm(c->kill_timer, 2000);
                } else if (c->running && c->signal_ms && now - c->signal_ms < 2000) {
                        continue; /* its kill timer keeps the 2 s minimum */
                } else if (c->running && c->in_prestop && !w->grace_extended) {
                        pw_end_hook(c);
                        pw_send_stop_signal(w, c);
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
        if (first) {
                w->ordered_stop = grace_seconds > 0;
                ag_pod_worker_mark(w, "terminating", NULL); /* the stop signals go now */
        }
        for (size_t i = 0; i < w->n; i++) {
                struct ctr *c = &w->ctrs[i];
                if (c->timer)
                        ag_timer_disarm(c->timer);
                c->waiting_timer = false;
                pw_stop_probers(c);
                if (!c->running || !first)
                        continue;
                pw_emit_event(w, c, "Normal", "Killing", "Stopping container %s", c->spec->name);
                if (grace_seconds <= 0 || !start_prestop(w, c, grace_seconds))
                        pw_send_stop_signal(w, c);
        }
        ag_timer_disarm(w->deadline);
        ag_timer_disarm(w->retry);
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

/* activeDeadlineSeconds counts from status.startTime and is read from the
 * newest object on every sync (the kubelet's activeDeadlineHandler): the
 * API lets it be set on a running pod or lowered, and the new value takes
 * effect at once (a deadline already past fires now). */
static void arm_deadline(struct ag_pod_worker *w, const struct k8s_pod *pod)
{
        if (!pod->spec.has_active_deadline || w->terminating || w->done)
                return;
        int64_t ads = pod->spec.active_deadline_seconds > 0 ? pod->spec.active_deadline_seconds : 0;
        int64_t left_ms = (w->start_time + ads) * 1000 - (int64_t)pw_wall_ms();
        ag_timer_arm(w->deadline, (uint64_t)(left_ms > 0 ? left_ms : 0));
}

void ag_pod_worker_update(struct ag_pod_worker *w, struct k8s_pod *pod)
{
        /* The echo of our own status PATCH is no reason to sync: it would
         * retry a refused start (CreateContainerConfigError) at once,
         * before the failed sync's backoff (pw_sync_failed), two or three
         * times in its first 0.4 s (the echo of the status before the
         * refusal, too, which comes after it). The object is the newest
         * all the same. */
        const struct k8s_pod *prev = w->latest ? w->latest : w->pod;
        size_t n = w->n_sent_digests < PW_SENT_DIGESTS ? w->n_sent_digests : PW_SENT_DIGESTS;
        _cleanup_cjson_ cJSON *prev_json = k8s_pod_json_parse(prev);
        _cleanup_cjson_ cJSON *pod_json = k8s_pod_json_parse(pod);
        bool echo = k8s_pod_is_status_echo(prev_json, pod_json, w->sent_digests, n);
        k8s_pod_free(w->latest);
        w->latest = pod;
        arm_deadline(w, pod);
        if (echo) {
                log_v(4, "pod %s/%s: the update is the status we sent: no sync", pw_pod_ns(w->pod),
                      w->pod->meta.name);
                return;
        }
        ag_timer_arm(w->kick, 0);
}

void ag_pod_worker_wall_changed(struct ag_pod_worker *w)
{
        if (w->done)
                return;
        arm_deadline(w, w->latest ? w->latest : w->pod);
        if (w->volumes != NULL)
                ag_pod_volumes_resync(w->volumes);
}

void ag_pod_worker_kick(struct ag_pod_worker *w)
{
        if (!w->done)
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
                ag_cri_log_dir(logdir[n], sizeof(logdir[n]), w->env->pod_logs_dir,
                               pw_pod_ns(w->pod), w->pod->meta.name, w->pod->meta.uid,
                               c->spec->name);
                cs[n] = (struct ag_stats_container){.name = c->spec->name,
                                                    .cgroup = cg[n],
                                                    .started_ns = rs.started_at,
                                                    .log_dir = logdir[n]};
                n++;
        }
        struct ag_stats_pod p = {.ns = pw_pod_ns(w->pod),
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
        for (size_t i = 0; i < w->n; i++) {
                if ((w->ctrs[i].id[0] && strcmp(w->ctrs[i].id, container_id) == 0) ||
                    (w->ctrs[i].pending_id[0] && strcmp(w->ctrs[i].pending_id, container_id) == 0))
                        return true;
                for (size_t k = 0; k < w->ctrs[i].n_retired; k++)
                        if (strcmp(w->ctrs[i].retired[k], container_id) == 0)
                                return true; /* its removal is not confirmed yet */
        }
        for (size_t i = 0; i < w->n_tearing; i++)
                if (strcmp(w->tearing[i], container_id) == 0)
                        return true; /* its teardown removes it */
        return false;
}

void ag_pod_worker_claimed(const struct ag_pod_worker *w, void (*fn)(const char *id, void *data),
                           void *data)
{
        for (size_t i = 0; i < w->n; i++) {
                const struct ctr *c = &w->ctrs[i];
                if (c->id[0] != '\0')
                        fn(c->id, data);
                if (c->pending_id[0] != '\0')
                        fn(c->pending_id, data);
                for (size_t k = 0; k < c->n_retired; k++)
                        fn(c->retired[k], data);
        }
        pw_teardown_claimed(w, fn, data);
}

size_t ag_pod_worker_n_containers(const struct ag_pod_worker *w)
{
        return w->n;
}

const char *ag_pod_worker_container(const struct ag_pod_worker *w, size_t i, long *ret_current)
{
        if (i >= w->n)
                return NULL;
        *ret_current = w->ctrs[i].obs.restart_count;
        return w->ctrs[i].spec->name;
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
        w->ctrs = calloc(w->n > 0 ? w->n : 1, sizeof(*w->ctrs));
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
                c->hook_timer = ag_timer_new(env->loop, pw_on_hook_timer, c, err);
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
        w->retry = ag_timer_new(env->loop, on_retry, w, err);
        if (!w->kick || !w->sandbox_timer || !w->deadline || !w->grace || !w->retry)
                goto fail;
        if (pw_volumes_start(w, err) < 0)
                goto fail;
        w->start_time = pw_now_s();
        if (pod->status.start_time != NULL)
                st_time_parse(pod->status.start_time, &w->start_time, NULL);
        pw_adopt(w);
        if (!w->adopted)
                ag_pod_worker_mark(w, "workerStarted", NULL);
        else
                ag_pod_worker_mark(w, "adopted", NULL);
        arm_deadline(w, pod);
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
        pw_teardown_detach(w);
        for (size_t i = 0; w->ctrs && i < w->n; i++) {
                if (w->ctrs[i].pull_job)
                        w->ctrs[i].pull_job->c = NULL;
                if (w->ctrs[i].start_job)
                        w->ctrs[i].start_job->c = NULL;
                if (w->ctrs[i].files_job)
                        w->ctrs[i].files_job->c = NULL;
                if (w->ctrs[i].retire_job)
                        pw_retire_detach(w->ctrs[i].retire_job);
                free(w->ctrs[i].retired);
                pw_files_job_free(w->ctrs[i].files);
                free(w->ctrs[i].groups);
                free(w->ctrs[i].image);
                free(w->ctrs[i].image_id);
                free(w->ctrs[i].wait_message);
                free(w->ctrs[i].pull_error);
                free(w->ctrs[i].term_message);
                free(w->ctrs[i].last_message);
                free(w->ctrs[i].undo.last_message);
                rt_image_free(w->ctrs[i].pulled);
                pw_stop_watch(&w->ctrs[i]);
                pw_stop_probers(&w->ctrs[i]);
                if (w->ctrs[i].timer)
                        ag_timer_free(w->ctrs[i].timer);
                if (w->ctrs[i].kill_timer)
                        ag_timer_free(w->ctrs[i].kill_timer);
                pw_end_hook(&w->ctrs[i]);
                if (w->ctrs[i].hook_timer)
                        ag_timer_free(w->ctrs[i].hook_timer);
        }
        free(w->ctrs);
        free(w->steps);
        pw_volumes_stop(w);
        if (w->kick)
                ag_timer_free(w->kick);
        if (w->sandbox_timer)
                ag_timer_free(w->sandbox_timer);
        if (w->deadline)
                ag_timer_free(w->deadline);
        if (w->grace)
                ag_timer_free(w->grace);
        if (w->retry)
                ag_timer_free(w->retry);
        if (w->have_plan)
                k8s_pod_cgroup_plan_free(&w->plan);
        free(w->last_status);
        free(w->saved);
        cJSON_Delete(w->status);
        k8s_pod_free(w->latest);
        k8s_pod_free(w->pod);
        free(w);
}
