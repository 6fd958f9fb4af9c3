/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/pods/worker_internal.h"
#include "agent/core/log.h"

/* ---- restart safety: the worker's state on disk -------------------------------
 *
 * <root>/pods/<uid>/worker.json (written atomically after every step that
 * changes it; no fsync: lib/file.h) keeps
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
        cJSON_AddStringToObject(o, "message", message != NULL ? message : "");
        cJSON_AddStringToObject(o, "containerID", cid);
        return o;
}

void pw_save_state(struct ag_pod_worker *w)
{
        if (w->torn_down || w->teardown_job != NULL)
                return;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "startTime", (double)w->start_time);
        cJSON_AddBoolToObject(o, "cgroupCreated", w->cgroup_created);
        cJSON_AddBoolToObject(o, "sandbox", w->sandbox_ready);
        /* the phase: its changes are the steps `cubelet timeline` must
         * find in the state dir when the agent is down */
        cJSON_AddStringToObject(o, "phase", st_phase_name(w->phase));
        cJSON *arr = cJSON_AddArrayToObject(o, "containers");
        for (size_t i = 0; i < w->n; i++) {
                const struct ctr *c = &w->ctrs[i];
                cJSON *j = cJSON_CreateObject();
                cJSON_AddStringToObject(j, "name", c->spec->name);
                cJSON_AddBoolToObject(j, "init", c->init);
                cJSON_AddStringToObject(j, "id", c->id);
                if (c->pending_id[0] != '\0')
                        cJSON_AddStringToObject(j, "pendingId", c->pending_id);
                if (c->n_retired > 0) {
                        cJSON *r = cJSON_AddArrayToObject(j, "retired");
                        for (size_t k = 0; k < c->n_retired; k++)
                                cJSON_AddItemToArray(r, cJSON_CreateString(c->retired[k]));
                }
                cJSON_AddStringToObject(j, "image", c->image ? c->image : "");
                cJSON_AddStringToObject(j, "imageID", c->image_id ? c->image_id : "");
                if (c->has_user) {
                        cJSON *u = cJSON_AddObjectToObject(j, "user");
                        cJSON_AddNumberToObject(u, "uid", c->uid);
                        cJSON_AddNumberToObject(u, "gid", c->gid);
                        cJSON *g = cJSON_AddArrayToObject(u, "groups");
                        for (size_t k = 0; k < c->n_groups; k++)
                                cJSON_AddItemToArray(g, cJSON_CreateNumber(c->groups[k]));
                }
                cJSON_AddNumberToObject(j, "restartCount", c->obs.restart_count);
                cJSON_AddNumberToObject(j, "backoff", (double)c->backoff.backoff);
                /* CLOCK_BOOTTIME seconds (a new key: backoffUpdate was wall time) */
                cJSON_AddNumberToObject(j, "backoffUpdateBoot", (double)c->backoff.last_update);
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
        /* The timeline goes along, but a new step alone is no reason to
         * write: it is served from memory (/timelines), and a file create +
         * rename per step was a measurable part of a burst's CPU. */
        char *key = cJSON_PrintUnformatted(o);
        if (key == NULL || (w->saved != NULL && strcmp(w->saved, key) == 0)) {
                free(key); /* unchanged: no write */
                cJSON_Delete(o);
                return;
        }
        cJSON_AddItemToObject(o, "timeline", ag_pod_worker_timeline_json(w));
        char *text = cJSON_PrintUnformatted(o);
        cJSON_Delete(o);
        if (text == NULL) {
                free(key);
                return;
        }
        char path[RT_PATH_MAX], dir[RT_PATH_MAX];
        snprintf(dir, sizeof(dir), "%s/pods/%s", w->env->root_dir, w->pod->meta.uid);
        state_path(w, path, sizeof(path));
        struct cb_error err = {0};
        if (cb_mkdir_p(dir, 0755, 0700, &err) < 0 ||
            cb_write_file_replace(path, text, strlen(text), 0600, &err) < 0) {
                pw_emit_event(w, NULL, "Warning", "FailedSync", "cannot save the pod's state: %s",
                              err.msg[0] ? err.msg : strerror(errno));
                free(text);
                free(key);
                return;
        }
        free(text);
        free(w->saved);
        w->saved = key;
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
                      char **message, char *cid, size_t cs)
{
        *s = (struct st_container_state){
            .kind = ST_STATE_TERMINATED,
            .exit_code = (int32_t)jint(t, "exitCode"),
            .started_at = jint(t, "startedAt"),
            .finished_at = jint(t, "finishedAt"),
        };
        jstr(t, "reason", reason, rs);
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(t, "message");
        pw_msg_set(message, cJSON_IsString(m) ? m->valuestring : NULL);
        jstr(t, "containerID", cid, cs);
}

/* Re-adopts one container from its saved record and the runtime's view. */
static void adopt_container(struct ag_pod_worker *w, struct ctr *c, const cJSON *j)
{
        /* earlier instances an earlier agent had not seen removed: queued
         * again (pw_adopt) */
        const cJSON *rj;
        cJSON_ArrayForEach(rj, cJSON_GetObjectItemCaseSensitive(j, "retired"))
        {
                if (cJSON_IsString(rj) && rj->valuestring[0] != '\0' &&
                    strlen(rj->valuestring) < RT_ID_MAX && !pw_retired_add(c, rj->valuestring))
                        log_error("pod %s/%s: container %s: out of memory, instance %s left to "
                                  "the orphan collection",
                                  pw_pod_ns(w->pod), w->pod->meta.name, c->spec->name,
                                  rj->valuestring);
        }
        jstr(j, "id", c->id, sizeof(c->id));
        char buf[RT_PATH_MAX];
        jstr(j, "image", buf, sizeof(buf));
        pw_msg_set(&c->image, buf);
        jstr(j, "imageID", buf, sizeof(buf));
        pw_msg_set(&c->image_id, buf);
        const cJSON *u = cJSON_GetObjectItemCaseSensitive(j, "user");
        if (cJSON_IsObject(u)) {
                const cJSON *g = cJSON_GetObjectItemCaseSensitive(u, "groups"), *it;
                uint32_t *groups = calloc((size_t)cJSON_GetArraySize(g) + 1, sizeof(*groups));
                if (groups != NULL) {
                        size_t n = 0;
                        cJSON_ArrayForEach(it, g)
                        {
                                if (cJSON_IsNumber(it))
                                        groups[n++] = (uint32_t)it->valuedouble;
                        }
                        pw_set_user(c, (uint32_t)jint(u, "uid"), (uint32_t)jint(u, "gid"), groups,
                                    n);
                        free(groups);
                }
        }
        c->obs.restart_count = (int32_t)jint(j, "restartCount");
        c->backoff.backoff = jint(j, "backoff");
        c->backoff.last_update = jint(j, "backoffUpdateBoot");
        if (c->backoff.last_update > cb_boot_now()) /* saved before a reboot */
                c->backoff = (struct st_backoff){0};
        const cJSON *last = cJSON_GetObjectItemCaseSensitive(j, "lastState");
        if (cJSON_IsObject(last))
                load_term(last, &c->obs.last_state, c->last_reason, sizeof(c->last_reason),
                          &c->last_message, c->last_cid, sizeof(c->last_cid));
        const cJSON *term = cJSON_GetObjectItemCaseSensitive(j, "term");
        char pending[RT_ID_MAX];
        jstr(j, "pendingId", pending, sizeof(pending));
        if (pending[0] != '\0' && strcmp(pending, c->id) != 0) {
                /* Killed while it started this instance (the earlier one is
                 * lastState already): adopt the start, never a second one. */
                c->id[0] = '\0';
                pw_adopt_pending(w, c, pending);
                return;
        }
        if (c->id[0] == '\0') {
                if (cJSON_IsObject(term)) {
                        c->exited = true;
                        c->obs.known = true;
                        load_term(term, &c->term, c->term_reason, sizeof(c->term_reason),
                                  &c->term_message, c->term_cid, sizeof(c->term_cid));
                        pw_set_exited_boot(c, c->term.finished_at);
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
                pw_watch_exit(w, c);
                pw_start_probers(w, c);
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
                pw_msg_set(&c->term_message, st.message);
        } else if (cJSON_IsObject(term)) {
                load_term(term, &c->term, c->term_reason, sizeof(c->term_reason), &c->term_message,
                          c->term_cid, sizeof(c->term_cid));
        } else {
                c->term = (struct st_container_state){
                    .kind = ST_STATE_TERMINATED, .exit_code = 137, .finished_at = pw_now_s()};
                snprintf(c->term_reason, sizeof(c->term_reason), "%s",
                         ST_REASON_CONTAINER_STATUS_UNKNOWN);
                pw_msg_set(&c->term_message,
                           "The container could not be located when the pod was terminated");
        }
        pw_set_exited_boot(c, c->term.finished_at);
}

/* Reads worker.json when an earlier agent left one. */
void pw_adopt(struct ag_pod_worker *w)
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
        for (size_t i = 0; i < w->n; i++)
                pw_retire_submit(w, &w->ctrs[i]);
}

/* The teardown runs off the loop (container removal: unmounts and
 * recursive removal; the sandbox: CNI DEL, namespace pins; the pod cgroup,
 * which waits for its processes to go; the volumes), in parallel for many
 * pods; its errors become events on the loop. */
#define TEARDOWN_ERRORS_MAX 8
struct teardown_job {
        struct ag_pod_worker *w; /* NULL once the worker is gone */
        char *root_dir, *uid, *pod_cgroup;
        /* the containers' current instances and their retired ones */
        size_t n;
        char (*ids)[RT_ID_MAX];
        char (*names)[256];
        char (*term_paths)[RT_PATH_MAX];    /* "" when none */
        size_t *ctr;                        /* the index of each one's container */
        bool *retired;                      /* one of c->retired, not c->id */
        bool sandbox_failed, cgroup_failed; /* retried: the pod stays Terminating meanwhile */
        size_t n_errors;
        struct {
                char msg[sizeof(((struct cb_error *)0)->msg) + 340];
        } errors[TEARDOWN_ERRORS_MAX];
};

static void teardown_job_free(struct teardown_job *j)
{
        if (j == NULL)
                return;
        free(j->root_dir);
        free(j->uid);
        free(j->pod_cgroup);
        free(j->ids);
        free(j->names);
        free(j->term_paths);
        free(j->ctr);
        free(j->retired);
        free(j);
}

static void teardown_error(struct teardown_job *j, const char *what, const char *msg)
{
        if (j->n_errors < TEARDOWN_ERRORS_MAX)
                snprintf(j->errors[j->n_errors++].msg, sizeof(j->errors[0].msg), "%s: %s", what,
                         msg);
}

static void teardown_work(void *data)
{
        struct teardown_job *j = data;
        struct cb_error err = {0};
        for (size_t i = 0; i < j->n; i++) {
                if (j->ids[i][0] == '\0')
                        continue;
                char what[320];
                snprintf(what, sizeof(what), "error removing container %s", j->names[i]);
                if (pw_container_remove(j->root_dir, j->ids[i], &err) < 0) {
                        teardown_error(j, what, err.msg);
                        continue; /* its id stays: teardown_done tries it again */
                }
                if (j->term_paths[i][0] != '\0')
                        unlink(j->term_paths[i]);
                j->ids[i][0] = '\0';
        }
        if (rt_sandbox_remove(j->root_dir, j->uid, &err) < 0) {
                j->sandbox_failed = true;
                teardown_error(j, "error tearing down the pod sandbox", err.msg);
        }
        /* Always, not only when the worker knows it made the cgroup: the
         * flag reaches worker.json at the worker's next save, so an agent
         * stopped in between (crash point pod-cgroup-made) restarts with a
         * worker that says "no cgroup" for a cgroup that is there. A
         * cgroup that is not there is nothing to do (cg_destroy: 0). */
        if (cg_destroy(j->pod_cgroup, &err) < 0) {
                j->cgroup_failed = true;
                teardown_error(j, "error removing the pod cgroup", err.msg);
        }
        /* The volumes' tmpfs, local PV and subPath binds go before the
         * directory; one left mounted keeps it (the removal would reach
         * into the volume: a local PV's data, a hostPath's files). */
        if (ag_pod_volumes_unmount_all(j->root_dir, j->uid, &err) < 0) {
                teardown_error(j, "error unmounting the pod's volumes", err.msg);
                return;
        }
        char dir[RT_PATH_MAX];
        snprintf(dir, sizeof(dir), "%s/pods/%s", j->root_dir, j->uid);
        rt_rm_rf(dir, NULL);
}

static void torn_down(struct ag_pod_worker *w)
{
        w->sandbox_ready = false;
        ag_pod_worker_mark(w, "tornDown", NULL);
        w->torn_down = true;
}

static void teardown_done(void *data, bool cancelled)
{
        struct teardown_job *j = data;
        struct ag_pod_worker *w = j->w;
        (void)cancelled; /* at shutdown: the next agent finds what is left */
        if (w != NULL) {
                w->teardown_job = NULL;
                free(w->tearing);
                w->tearing = NULL;
                w->n_tearing = 0;
                for (size_t i = 0; i < j->n_errors; i++)
                        pw_emit_event(w, NULL, "Warning", "FailedKillPod", "%s", j->errors[i].msg);
                bool ctr_failed = false;
                for (size_t i = 0; i < j->n; i++) {
                        if (j->ids[i][0] == '\0' || j->ctr[i] >= w->n)
                                continue;
                        /* not removed (e.g. the disk was full): again */
                        struct ctr *c = &w->ctrs[j->ctr[i]];
                        ctr_failed = true;
                        if (!j->retired[i])
                                snprintf(c->id, sizeof(c->id), "%s", j->ids[i]);
                        else if (!pw_retired_add(c, j->ids[i]))
                                log_error("pod %s/%s: container %s: out of memory, instance %s "
                                          "left to the orphan collection",
                                          pw_pod_ns(w->pod), w->pod->meta.name, c->spec->name,
                                          j->ids[i]);
                }
                if (!cancelled && (j->sandbox_failed || j->cgroup_failed || ctr_failed)) {
                        /* As the kubelet, whose pod stays terminating while
                         * KillPodSandbox fails: the sandbox (CNI DEL, its IP)
                         * and the cgroup are tried again with backoff
                         * (1 s doubling to 32 s), nothing of them leaked. */
                        unsigned n = w->teardown_retries < 5 ? w->teardown_retries : 5;
                        w->teardown_retries++;
                        ag_timer_arm(w->kick, 1000u << n);
                        teardown_job_free(j);
                        return;
                }
                torn_down(w);
                pw_finish(w);
        }
        teardown_job_free(j);
}

/* Starts the teardown: 1 while it runs off the loop (pw_finish is called
 * again at its end, or after a retry's delay when the job could not be
 * queued), 0 when it is done. Nothing of it runs on the loop. */
int pw_teardown(struct ag_pod_worker *w)
{
        if (w->torn_down)
                return 0;
        if (w->teardown_job != NULL)
                return 1;
        size_t n = 0;
        for (size_t i = 0; i < w->n; i++) {
                pw_stop_watch(&w->ctrs[i]);
                n += 1 + w->ctrs[i].n_retired;
        }
        pw_volumes_stop(w);
        struct teardown_job *j = calloc(1, sizeof(*j));
        if (j != NULL) {
                j->w = w;
                j->root_dir = strdup(w->env->root_dir);
                j->uid = strdup(w->pod->meta.uid);
                j->pod_cgroup = strdup(w->pod_cgroup);
                j->ids = calloc(n + 1, sizeof(*j->ids));
                j->names = calloc(n + 1, sizeof(*j->names));
                j->term_paths = calloc(n + 1, sizeof(*j->term_paths));
                j->ctr = calloc(n + 1, sizeof(*j->ctr));
                j->retired = calloc(n + 1, sizeof(*j->retired));
        }
        struct cb_error err = {0};
        if (j == NULL || !j->root_dir || !j->uid || !j->pod_cgroup || !j->ids || !j->names ||
            !j->term_paths || !j->ctr || !j->retired) {
                cb_error_set(&err, ENOMEM, "out of memory");
                goto retry;
        }
        for (size_t i = 0; i < w->n; i++) {
                struct ctr *c = &w->ctrs[i];
                for (size_t k = 0; k <= c->n_retired; k++) {
                        const char *id = k < c->n_retired ? c->retired[k] : c->id;
                        if (id[0] == '\0')
                                continue;
                        size_t e = j->n++;
                        snprintf(j->ids[e], sizeof(j->ids[e]), "%s", id);
                        snprintf(j->names[e], sizeof(j->names[e]), "%s", c->spec->name);
                        if (pw_termination_log_path(w, c, id, j->term_paths[e],
                                                    sizeof(j->term_paths[e])) < 0)
                                j->term_paths[e][0] = '\0';
                        j->ctr[e] = i;
                        j->retired[e] = k < c->n_retired;
                }
        }
        if (w->env->sandboxes == NULL)
                cb_error_set(&err, 0, "no sandbox queue");
        else if (ag_offload_submit(w->env->sandboxes, teardown_work, teardown_done, j, &err) == 0) {
                /* the job has them now; teardown_done gives back what failed */
                free(w->tearing);
                w->tearing = malloc((j->n + 1) * sizeof(*w->tearing));
                w->n_tearing = w->tearing != NULL ? j->n : 0;
                if (w->n_tearing > 0)
                        memcpy(w->tearing, j->ids, j->n * sizeof(*w->tearing));
                for (size_t i = 0; i < w->n; i++) {
                        w->ctrs[i].id[0] = '\0';
                        w->ctrs[i].n_retired = 0;
                }
                w->teardown_job = j;
                return 1;
        }
retry:
        /* Not queued: tried again later, as a failed teardown is (nothing
         * of it on the loop; the containers keep their ids meanwhile). */
        teardown_job_free(j);
        log_warning("pod %s/%s: the teardown is not queued (retried): %s", pw_pod_ns(w->pod),
                    w->pod->meta.name, err.msg);
        unsigned k = w->teardown_retries < 5 ? w->teardown_retries : 5;
        w->teardown_retries++;
        ag_timer_arm(w->kick, 1000u << k);
        return 1;
}

void pw_teardown_claimed(const struct ag_pod_worker *w, void (*fn)(const char *id, void *data),
                         void *data)
{
        for (size_t i = 0; i < w->n_tearing; i++)
                fn(w->tearing[i], data);
}

void pw_teardown_detach(struct ag_pod_worker *w)
{
        if (w->teardown_job != NULL)
                w->teardown_job->w = NULL;
        w->teardown_job = NULL;
        free(w->tearing);
        w->tearing = NULL;
        w->n_tearing = 0;
}

/* Running, or being started off the loop. */
bool pw_any_running(const struct ag_pod_worker *w)
{
        for (size_t i = 0; i < w->n; i++)
                if (w->ctrs[i].running || w->ctrs[i].start_job != NULL)
                        return true;
        return false;
}

void pw_finish(struct ag_pod_worker *w)
{
        if (w->done)
                return;
        if (w->sandbox_job != NULL)
                return; /* sandbox_done() kicks the worker again */
        for (size_t i = 0; i < w->n; i++)
                if (w->ctrs[i].start_job != NULL || w->ctrs[i].retire_job != NULL)
                        return; /* start_done(), retire_done() kick the worker again */
        if (ag_pod_volumes_busy(w->volumes))
                return; /* the volume job's end kicks the worker again */
        for (size_t i = 0; i < w->n; i++)
                if (w->ctrs[i].timer)
                        ag_timer_disarm(w->ctrs[i].timer);
        ag_timer_disarm(w->deadline);
        ag_timer_disarm(w->grace);
        if (pw_teardown(w) > 0)
                return; /* teardown_done() calls again */
        pw_compute_status(w);
        w->done = true;
        if (w->ops->done)
                w->ops->done(w, w->data);
}
