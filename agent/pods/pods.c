/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/pods/pods.h"
#include "agent/pods/podhistory.h"
#include "agent/pods/stats.h"
#include "agent/k8s/sysctl.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/k8s/admit.h"
#include "agent/k8s/eviction.h"
#include "agent/core/heap.h"
#include "agent/core/log.h"
#include "agent/core/offload.h"
#include "agent/core/metrics.h"
#include "agent/pods/statusgen.h"
#include "agent/k8s/jsondiff.h"
#include "agent/k8s/shutdown.h"
#include "agent/k8s/taint.h"
#include "agent/k8s/validate.h"
#include "lib/wallclock.h"
#include "lib/cleanup.h"
#include "lib/file.h"
#include "runtime/container.h"
#include "status/podstatus.h"

#define DELETE_RETRY_MS 2000

struct rec {
        struct rec *next;
        struct ag_pods *p;
        char *uid, *ns, *name;
        /* A reference to the newest object as the reflector (or the file
         * source) decoded it; its JSON is k8s_pod_json_text(pod). */
        struct k8s_pod *pod;
        struct ag_pod_worker *worker;
        bool admitted_checked; /* admission ran */
        bool rejected;
        bool finished;          /* the worker is done: terminal and torn down */
        bool gone;              /* the API object no longer exists */
        bool deleting;          /* deletionTimestamp seen */
        bool is_static;         /* from the file source (agent/pods/staticpods.h) */
        cJSON *rejected_status; /* the status admission gave it, when rejected */
        int64_t grace;          /* effective grace period, -1 = none yet */
        /* NoExecute */
        bool evict_scheduled, evicted;
        struct ag_timer *evict_timer;
        /* the final DELETE */
        struct ag_request *del_req;
        struct ag_timer *del_timer;
        struct ag_request *aux_req; /* the DisruptionTarget patch / the eviction DELETE */
        char *delivered_phase;      /* the last phase the apiserver accepted */
        /* Stopped by the kubelet itself (node pressure, node shutdown): the
         * DisruptionTarget message, and when (its lastTransitionTime). */
        char *disruption_message;
        char disruption_time[32];
        /* When the first event (or list) with this pod reached the agent:
         * the timeline's `watched` step (0: a static pod, the worker's own
         * start is the first step). */
        uint64_t watched_mono_us;
        int64_t watched_wall_us;
};

struct ag_pods {
        const struct ag_node_env *env;
        struct ag_api *api;
        struct ag_events *events;
        struct ag_status_mgr *status;
        struct k8s_node *node;
        struct rec *recs;
        size_t n;
        bool swept;  /* left-over pods from an earlier run handled */
        bool synced; /* the first pod list arrived */
        struct ag_metrics *metrics;
        unsigned pressure;  /* node conditions for admission (K8S_PRESSURE_*) */
        bool shutting_down; /* the node shuts down: admission refuses new pods */
        void (*finished)(const char *uid, void *data); /* ag_pods_set_finished_hook */
        void *finished_data;
        struct ag_stats *stats; /* rate samples of /stats/summary */
        struct ag_pods_static_hooks hooks;
        struct ag_podhist *hist; /* steps, status diffs, spec changes, events */
};

static void maybe_final_delete(struct rec *r);
static void maybe_sweep(struct ag_pods *p);
static void check_noexecute(struct rec *r);

static const char *pod_ns(const struct rec *r)
{
        return r->ns ? r->ns : "default";
}

static struct rec *find(struct ag_pods *p, const char *uid)
{
        for (struct rec *r = p->recs; r; r = r->next)
                if (strcmp(r->uid, uid) == 0)
                        return r;
        return NULL;
}

static void record_event(struct rec *r, const char *type, const char *reason, const char *message,
                         const char *field_path)
{
        ag_podhist_event(r->p->hist, r->uid, type, reason, message, field_path);
        if (r->p->events == NULL)
                return; /* standalone: no apiserver to record events in */
        struct ag_event_object o = {
            .kind = "Pod",
            .namespace_ = pod_ns(r),
            .name = r->name,
            .uid = r->uid,
            .field_path = field_path,
        };
        ag_events_record(r->p->events, &o, type, reason, message);
}

static void rec_free(struct rec *r)
{
        if (r->worker)
                ag_pod_worker_free(r->worker);
        if (r->del_req)
                ag_api_cancel(r->del_req);
        if (r->aux_req)
                ag_api_cancel(r->aux_req);
        if (r->evict_timer)
                ag_timer_free(r->evict_timer);
        if (r->del_timer)
                ag_timer_free(r->del_timer);
        k8s_pod_free(r->pod);
        cJSON_Delete(r->rejected_status);
        free(r->delivered_phase);
        free(r->disruption_message);
        free(r->uid);
        free(r->ns);
        free(r->name);
        free(r);
}

static void rec_remove(struct rec *r)
{
        struct ag_pods *p = r->p;
        for (struct rec **pp = &p->recs; *pp; pp = &(*pp)->next)
                if (*pp == r) {
                        *pp = r->next;
                        p->n--;
                        break;
                }
        ag_status_mgr_forget(p->status, r->uid);
        ag_podhist_gone(p->hist, r->uid);
        rec_free(r);
        ag_heap_release_soon(); /* a burst of deletions gives its memory back */
}

/* The newest object as the API gave it, parsed anew (NULL when it did not
 * decode). */
static cJSON *rec_json(const struct rec *r)
{
        return k8s_pod_json_parse(r->pod);
}

/* ---- worker callbacks ---------------------------------------------------------- */

/* A pod the kubelet stopped itself (node pressure, node shutdown) gets the DisruptionTarget
 * condition together with its terminal phase, as the kubelet's status manager merges it
 * (mergePodStatus). Returns a copy of status with it, or NULL. */
static cJSON *with_disruption_target(const struct rec *r, const cJSON *status)
{
        const cJSON *phase = cJSON_GetObjectItemCaseSensitive(status, "phase");
        if (r->disruption_message == NULL || !cJSON_IsString(phase) ||
            (strcmp(phase->valuestring, "Failed") != 0 &&
             strcmp(phase->valuestring, "Succeeded") != 0))
                return NULL;
        cJSON *st = cJSON_Duplicate(status, true);
        if (st == NULL)
                return NULL;
        cJSON *conds = cJSON_GetObjectItemCaseSensitive(st, "conditions");
        if (!cJSON_IsArray(conds)) {
                cJSON_DeleteItemFromObjectCaseSensitive(st, "conditions");
                conds = cJSON_AddArrayToObject(st, "conditions");
        }
        for (int i = cJSON_GetArraySize(conds) - 1; i >= 0; i--) {
                const cJSON *t =
                    cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(conds, i), "type");
                if (cJSON_IsString(t) && strcmp(t->valuestring, "DisruptionTarget") == 0)
                        cJSON_DeleteItemFromArray(conds, i);
        }
        cJSON *c = cJSON_CreateObject();
        cJSON_AddStringToObject(c, "type", "DisruptionTarget");
        cJSON_AddStringToObject(c, "status", "True");
        cJSON_AddNullToObject(c, "lastProbeTime");
        cJSON_AddStringToObject(c, "lastTransitionTime", r->disruption_time);
        cJSON_AddStringToObject(c, "reason", "TerminationByKubelet");
        cJSON_AddStringToObject(c, "message", r->disruption_message);
        cJSON_InsertItemInArray(conds, 0, c);
        return st;
}

static void on_worker_status(struct ag_pod_worker *w, const cJSON *status, void *data)
{
        struct rec *r = data;
        (void)w;
        struct cb_error err = {0};
        const cJSON *phase = cJSON_GetObjectItemCaseSensitive(status, "phase");
        log_v(1, "pod %s/%s: phase %s", pod_ns(r), r->name,
              cJSON_IsString(phase) ? phase->valuestring : "?");
        _cleanup_cjson_ cJSON *evicted = with_disruption_target(r, status);
        if (r->is_static) {
                /* Its status goes to its mirror pod (standalone: nowhere but
                 * the local endpoint). */
                if (!r->gone && r->p->hooks.status != NULL)
                        r->p->hooks.status(r->uid, evicted ? evicted : status, r->p->hooks.data);
                return;
        }
        if (!r->gone && ag_status_mgr_set(r->p->status, pod_ns(r), r->name, r->uid,
                                          evicted ? evicted : status, &err) < 0)
                log_error("pod %s/%s: %s", pod_ns(r), r->name, err.msg);
}

static void on_worker_event(struct ag_pod_worker *w, const char *type, const char *reason,
                            const char *message, const char *field_path, void *data)
{
        struct rec *r = data;
        (void)w;
        log_v(1, "pod %s/%s%s%s: %s %s: %s", pod_ns(r), r->name, field_path ? " " : "",
              field_path ? field_path : "", type, reason, message);
        if (!r->gone)
                record_event(r, type, reason, message, field_path);
}

static void on_worker_done(struct ag_pod_worker *w, void *data)
{
        struct rec *r = data;
        (void)w;
        r->finished = true;
        log_info("pod %s/%s: terminated and cleaned up", pod_ns(r), r->name);
        if (r->p->finished != NULL)
                r->p->finished(r->uid, r->p->finished_data);
        if (r->gone) {
                rec_remove(r);
                return;
        }
        maybe_final_delete(r);
}

static void on_worker_timeline(struct ag_pod_worker *w, const char *step, uint64_t offset_us,
                               void *data)
{
        struct rec *r = data;
        (void)w;
        log_v(2, "pod %s/%s: timeline %s +%.3fms", pod_ns(r), r->name, step,
              (double)offset_us / 1000.0);
        ag_podhist_step(r->p->hist, r->uid, step, offset_us);
        if (r->p->metrics != NULL) {
                /* The step without its container: "containerStarted:web" -> containerStarted. */
                char name[64];
                snprintf(name, sizeof(name), "%.*s", (int)strcspn(step, ":"), step);
                ag_metrics_observe(r->p->metrics, "cubelet_pod_step_duration_seconds",
                                   "Seconds from a pod worker's start to each step of its "
                                   "phase-transition timeline.",
                                   (const char *const[]){"step", name, NULL},
                                   (double)offset_us / 1e6, NULL);
        }
}

static const struct ag_pod_worker_ops worker_ops = {on_worker_status, on_worker_event,
                                                    on_worker_done, on_worker_timeline};

/* The pod as admitted, next to the worker's state: after an agent restart
 * it lets the agent stop and clean up a pod deleted while it was away. */
static void save_pod_json(const struct rec *r)
{
        char dir[4096], path[4200];
        snprintf(dir, sizeof(dir), "%s/pods/%s", r->p->env->root_dir, r->uid);
        snprintf(path, sizeof(path), "%s/pod.json", dir);
        const char *text = k8s_pod_json_text(r->pod);
        struct cb_error err = {0};
        char pods[4096];
        snprintf(pods, sizeof(pods), "%s/pods", r->p->env->root_dir);
        mkdir(pods, 0700);
        if (text == NULL || (mkdir(dir, 0700) < 0 && errno != EEXIST) ||
            cb_write_file_replace(path, text, strlen(text), 0600, &err) < 0)
                log_warning("pod %s/%s: cannot save pod.json: %s", pod_ns(r), r->name,
                            err.msg[0] ? err.msg : strerror(errno));
}

/* ---- admission ------------------------------------------------------------------ */

/* Admission refused the pod: phase Failed with the kubelet's reason and
 * "Pod was rejected: <message>", an event, nothing run. */
static void reject(struct rec *r, const char *reason, const char *message)
{
        struct ag_pods *p = r->p;
        char msg[600];
        snprintf(msg, sizeof(msg), "Pod was rejected: %s", message);
        log_warning("pod %s/%s: rejected: %s: %s", pod_ns(r), r->name, reason, message);
        /* No worker will mark its steps: the timeline gets them here (and
         * statusDelivered:Failed in on_status_delivered). */
        if (r->watched_mono_us != 0)
                ag_podhist_step_at(p->hist, r->uid, "watched", r->watched_mono_us);
        ag_podhist_step_at(p->hist, r->uid, "rejected", 0);
        ag_podhist_step_at(p->hist, r->uid, "phase:Failed", 0);
        record_event(r, "Warning", reason, message, NULL);
        struct ag_pod_obs obs = {
            .rejected = true, .reason = reason, .message = msg, .start_time = cb_wall_now()};
        cJSON *st = ag_pod_status_json(r->pod, &obs, cb_wall_now());
        struct cb_error err = {0};
        if (st != NULL && r->is_static) {
                if (p->hooks.status != NULL)
                        p->hooks.status(r->uid, st, p->hooks.data);
        } else if (st != NULL &&
                   ag_status_mgr_set(p->status, pod_ns(r), r->name, r->uid, st, &err) < 0)
                log_error("pod %s/%s: %s", pod_ns(r), r->name, err.msg);
        cJSON_Delete(r->rejected_status);
        r->rejected_status = st;
        r->rejected = true;
        r->finished = true;
}

static void admit(struct rec *r)
{
        struct ag_pods *p = r->p;
        if (p->node == NULL || r->admitted_checked)
                return; /* the kubelet waits for its Node first */
        r->admitted_checked = true;
        /* Names that become paths on this node must have the shapes the
         * apiserver validates, before anything is read or written under
         * them (even for a pod already terminal). */
        struct cb_error verr = {0};
        if (k8s_pod_validate_paths(r->pod, &verr) < 0) {
                reject(r, "InvalidPod", verr.msg);
                return;
        }
        /* and fields cubelet does not implement are refused, not dropped */
        const char *why = NULL;
        if (k8s_pod_validate_supported(r->pod, &why, &verr) < 0) {
                reject(r, why, verr.msg);
                return;
        }
        const char *phase = r->pod->status.phase;
        if (phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0)) {
                /* Terminal already: nothing to run. If an earlier agent left
                 * state behind (it crashed before the teardown finished),
                 * re-adopt the pod only to tear it down. */
                char state[4200];
                snprintf(state, sizeof(state), "%s/pods/%s/worker.json", p->env->root_dir, r->uid);
                struct k8s_pod *copy = access(state, F_OK) == 0 ? k8s_pod_ref(r->pod) : NULL;
                struct cb_error err = {0};
                if (copy != NULL &&
                    ag_pod_worker_new(p->env, copy, &worker_ops, r, &r->worker, &err) == 0) {
                        log_info("pod %s/%s is %s but its sandbox was not torn down: cleaning up",
                                 pod_ns(r), r->name, phase);
                        ag_pod_worker_terminate(r->worker, 2, NULL, NULL);
                        return;
                }
                if (copy != NULL)
                        log_error("pod %s/%s: cannot clean up: %s", pod_ns(r), r->name, err.msg);
                r->finished = true;
                r->rejected = true;
                maybe_final_delete(r);
                return;
        }
        struct k8s_pod **admitted = calloc(p->n + 1, sizeof(*admitted));
        size_t n = 0;
        /* Like the kubelet's filterOutInactivePods: a pod whose termination
         * was requested (deleted, or its manifest removed) no longer counts. */
        for (struct rec *o = p->recs; o && admitted; o = o->next)
                if (o != r && o->worker && !o->finished && !o->gone && !o->deleting)
                        admitted[n++] = (struct k8s_pod *)ag_pod_worker_pod(o->worker);
        struct k8s_admit_result res;
        /* The eviction manager's handler runs first, as the kubelet's. A pod
         * this node already ran (its state is on disk: an agent restart) is
         * not rejected for pressure: its containers run. */
        char state[4200];
        snprintf(state, sizeof(state), "%s/pods/%s/worker.json", p->env->root_dir, r->uid);
        k8s_eviction_admit(r->pod, access(state, F_OK) == 0 ? 0 : p->pressure, &res);
        if (res.admitted) /* then the sysctl allowlist, as the kubelet's handlers */
                k8s_sysctl_admit(p->env->sysctls, r->pod, &res);
        if (res.admitted)
                k8s_admit(r->pod, p->node, admitted, n, &res);
        free(admitted);
        /* The node shutdown manager's handler comes last, as the kubelet's. */
        if (res.admitted && p->shutting_down) {
                reject(r, K8S_SHUTDOWN_REJECT_REASON, K8S_SHUTDOWN_REJECT_MESSAGE);
                return;
        }
        if (!res.admitted) {
                reject(r, res.reason, res.message);
                return;
        }
        struct k8s_pod *copy = k8s_pod_ref(r->pod);
        struct cb_error err = {0};
        save_pod_json(r);
        if (copy == NULL || ag_pod_worker_new(p->env, copy, &worker_ops, r, &r->worker, &err) < 0) {
                log_error("pod %s/%s: cannot start its worker: %s", pod_ns(r), r->name, err.msg);
                return;
        }
        log_info("pod %s/%s uid=%s admitted", pod_ns(r), r->name, r->uid);
        ag_pod_worker_mark_at(r->worker, "watched", r->watched_mono_us, r->watched_wall_us);
        ag_pod_worker_mark(r->worker, "admitted", NULL);
        if (r->deleting) {
                /* Deleted before admission (which waits for the Node): the
                 * termination asked for then applies to the worker now; it
                 * was lost, and a restarted agent ran the containers of a
                 * pod being deleted until it restarted again (found by
                 * tests/faults/agent_kill seed 618536). */
                ag_pod_worker_terminate(r->worker, r->grace >= 1 ? r->grace : 1, NULL, NULL);
                return;
        }
        check_noexecute(r);
}

/* ---- deletion -------------------------------------------------------------------- */

static void on_delete_done(struct ag_api_result *res, void *data)
{
        struct rec *r = data;
        r->del_req = NULL;
        if ((res->status >= 200 && res->status < 300) || res->status == 404 || res->status == 409) {
                /* Removed (the watch delivers DELETED), or already gone, or the
                 * name belongs to another pod now. */
                log_v(1, "pod %s/%s: deleted (%ld)", pod_ns(r), r->name, res->status);
                return;
        }
        log_warning("pod %s/%s: final delete failed (%s); retrying", pod_ns(r), r->name,
                    res->error ? res->error : "no response");
        ag_timer_arm(r->del_timer, DELETE_RETRY_MS);
}

static void send_delete(struct rec *r, int64_t grace, bool precondition, struct ag_request **slot,
                        ag_api_done_fn done)
{
        _cleanup_free_ char *ns = ag_api_escape(pod_ns(r));
        _cleanup_free_ char *name = ag_api_escape(r->name);
        char path[1024];
        snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", ns ? ns : "",
                 name ? name : "");
        cJSON *b = cJSON_CreateObject();
        cJSON_AddStringToObject(b, "kind", "DeleteOptions");
        cJSON_AddStringToObject(b, "apiVersion", "v1");
        if (grace >= 0)
                cJSON_AddNumberToObject(b, "gracePeriodSeconds", (double)grace);
        if (precondition)
                cJSON_AddStringToObject(cJSON_AddObjectToObject(b, "preconditions"), "uid", r->uid);
        _cleanup_free_ char *body = cJSON_PrintUnformatted(b);
        cJSON_Delete(b);
        struct ag_api_req_opts opts = {.body = body, .body_len = body ? strlen(body) : 0};
        struct cb_error err = {0};
        *slot = ag_api_request(r->p->api, "DELETE", path, &opts, done, r, &err);
        if (*slot == NULL) {
                log_warning("pod %s/%s: delete: %s", pod_ns(r), r->name, err.msg);
                ag_timer_arm(r->del_timer, DELETE_RETRY_MS);
        }
}

/* The kubelet's final delete: only for a pod being deleted whose
 * containers are gone and whose terminal phase the apiserver has. */
static void maybe_final_delete(struct rec *r)
{
        if (!r->deleting || !r->finished || r->gone || r->del_req != NULL)
                return;
        if (!r->rejected && !ag_status_mgr_synced(r->p->status, r->uid))
                return; /* the status manager calls back when it is */
        log_v(1, "pod %s/%s: terminal and cleaned up: deleting it", pod_ns(r), r->name);
        send_delete(r, 0, true, &r->del_req, on_delete_done);
}

static void on_del_timer(struct ag_timer *t, void *data)
{
        (void)t;
        maybe_final_delete(data);
}

static void on_status_delivered(const char *uid, bool delivered, void *data)
{
        struct ag_pods *p = data;
        (void)delivered;
        struct rec *r = find(p, uid);
        if (r == NULL)
                return;
        if (delivered && r->worker != NULL) {
                const cJSON *st = ag_pod_worker_status(r->worker);
                const cJSON *phase = cJSON_GetObjectItemCaseSensitive(st, "phase");
                if (cJSON_IsString(phase) &&
                    (r->delivered_phase == NULL ||
                     strcmp(r->delivered_phase, phase->valuestring) != 0)) {
                        free(r->delivered_phase);
                        r->delivered_phase = strdup(phase->valuestring);
                        ag_pod_worker_mark(r->worker, "statusDelivered", phase->valuestring);
                }
        } else if (delivered && r->rejected_status != NULL && r->worker == NULL &&
                   r->delivered_phase == NULL) {
                r->delivered_phase = strdup("Failed");
                ag_podhist_step_at(p->hist, r->uid, "statusDelivered:Failed", 0);
        }
        maybe_final_delete(r);
}

static void on_status_sent(const char *uid, const char *body, void *data)
{
        struct ag_pods *p = data;
        ag_podhist_status_sent(p->hist, uid, body);
}

static void on_status_answered(const char *uid, bool accepted, long code, void *data)
{
        struct ag_pods *p = data;
        ag_podhist_status_answer(p->hist, uid, accepted, code);
}

static void start_termination(struct rec *r, int64_t grace, const char *why)
{
        if (r->grace >= 0 && grace > r->grace)
                grace = r->grace; /* the grace period only shrinks */
        if (grace < 1)
                grace = 1;
        r->grace = grace;
        log_info("pod %s/%s: %s: stopping it (grace %llds)", pod_ns(r), r->name, why,
                 (long long)grace);
        if (r->worker != NULL && !r->finished)
                ag_pod_worker_terminate(r->worker, grace, NULL, NULL);
        else
                maybe_final_delete(r);
}

/* ---- NoExecute taints --------------------------------------------------------------- */

static void on_evict_delete_done(struct ag_api_result *res, void *data)
{
        struct rec *r = data;
        r->aux_req = NULL;
        if (res->status >= 300 && res->status != 404 && res->status != 409) {
                log_warning("pod %s/%s: eviction delete failed (%s); retrying", pod_ns(r), r->name,
                            res->error ? res->error : "no response");
                r->evicted = false;
                ag_timer_arm(r->evict_timer, DELETE_RETRY_MS);
        }
}

static void on_disruption_done(struct ag_api_result *res, void *data)
{
        struct rec *r = data;
        r->aux_req = NULL;
        if (res->status >= 300)
                log_warning("pod %s/%s: DisruptionTarget condition not set: %s", pod_ns(r), r->name,
                            res->error ? res->error : "no response");
        /* A graceful delete with the pod's own grace period, as the taint
         * manager does; the deletion path stops the containers. */
        send_delete(r, -1, false, &r->aux_req, on_evict_delete_done);
}

static void evict(struct rec *r)
{
        if (r->evicted || r->deleting || r->gone)
                return;
        r->evicted = true;
        if (r->worker != NULL)
                ag_pod_worker_mark(r->worker, "evicting", NULL);
        char msg[600];
        snprintf(msg, sizeof(msg), "Marking for deletion Pod %s/%s", pod_ns(r), r->name);
        log_info("pod %s/%s: evicting: a NoExecute taint is not tolerated", pod_ns(r), r->name);
        record_event(r, "Normal", "TaintManagerEviction", msg, NULL);
        char ts[32];
        time_t t = (time_t)cb_wall_now();
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
        cJSON *b = cJSON_CreateObject();
        cJSON_AddStringToObject(cJSON_AddObjectToObject(b, "metadata"), "uid", r->uid);
        cJSON *conds = cJSON_AddArrayToObject(cJSON_AddObjectToObject(b, "status"), "conditions");
        cJSON *c = cJSON_CreateObject();
        cJSON_AddStringToObject(c, "type", "DisruptionTarget");
        cJSON_AddStringToObject(c, "status", "True");
        cJSON_AddNullToObject(c, "lastProbeTime");
        cJSON_AddStringToObject(c, "lastTransitionTime", ts);
        cJSON_AddStringToObject(c, "reason", "DeletionByTaintManager");
        cJSON_AddStringToObject(c, "message", "Taint manager: deleting due to NoExecute taint");
        cJSON_AddItemToArray(conds, c);
        _cleanup_free_ char *body = cJSON_PrintUnformatted(b);
        cJSON_Delete(b);
        _cleanup_free_ char *ns = ag_api_escape(pod_ns(r));
        _cleanup_free_ char *name = ag_api_escape(r->name);
        char path[1024];
        snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/status", ns ? ns : "",
                 name ? name : "");
        struct ag_api_req_opts opts = {.content_type = "application/strategic-merge-patch+json",
                                       .body = body,
                                       .body_len = body ? strlen(body) : 0};
        struct cb_error err = {0};
        r->aux_req = ag_api_request(r->p->api, "PATCH", path, &opts, on_disruption_done, r, &err);
        if (r->aux_req == NULL) {
                log_warning("pod %s/%s: %s", pod_ns(r), r->name, err.msg);
                r->evicted = false;
                ag_timer_arm(r->evict_timer, DELETE_RETRY_MS);
        }
}

static void on_evict_timer(struct ag_timer *t, void *data)
{
        struct rec *r = data;
        (void)t;
        r->evict_scheduled = false;
        evict(r);
}

static void check_noexecute(struct rec *r)
{
        struct ag_pods *p = r->p;
        if (p->node == NULL || r->worker == NULL || r->finished || r->deleting || r->evicted ||
            k8s_pod_is_static(r->pod))
                return;
        struct k8s_noexecute_verdict v;
        k8s_noexecute_verdict(r->pod->spec.tolerations, r->pod->spec.n_tolerations, p->node->taints,
                              p->node->n_taints, &v);
        switch (v.action) {
        case K8S_NOEXEC_EVICT_NOW:
                ag_timer_disarm(r->evict_timer);
                r->evict_scheduled = false;
                evict(r);
                break;
        case K8S_NOEXEC_EVICT_AFTER: {
                /* The clock starts when the eviction is first scheduled;
                 * re-evaluations only move it earlier. */
                if (!r->evict_scheduled) {
                        r->evict_scheduled = true;
                        log_info("pod %s/%s: tolerates the NoExecute taints for %llds: eviction "
                                 "scheduled",
                                 pod_ns(r), r->name, (long long)v.seconds);
                        ag_timer_arm(r->evict_timer, (uint64_t)v.seconds * 1000);
                }
                break;
        }
        case K8S_NOEXEC_NO_TAINTS:
        case K8S_NOEXEC_TOLERATE_FOREVER:
                if (r->evict_scheduled) {
                        char msg[600];
                        snprintf(msg, sizeof(msg), "Cancelling deletion of Pod %s/%s", pod_ns(r),
                                 r->name);
                        log_info("pod %s/%s: eviction cancelled", pod_ns(r), r->name);
                        record_event(r, "Normal", "TaintManagerEviction", msg, NULL);
                        ag_timer_disarm(r->evict_timer);
                        r->evict_scheduled = false;
                }
                break;
        }
}

/* ---- reflector callbacks --------------------------------------------------------------- */

static struct rec *rec_new(struct ag_pods *p, const struct ag_object *o)
{
        struct rec *r = calloc(1, sizeof(*r));
        if (r == NULL)
                return NULL;
        struct cb_error err = {0};
        r->p = p;
        r->grace = -1;
        r->uid = strdup(o->uid);
        r->ns = strdup(o->namespace_ ? o->namespace_ : "default");
        r->name = strdup(o->name ? o->name : "");
        r->evict_timer = ag_timer_new(p->env->loop, on_evict_timer, r, &err);
        r->del_timer = ag_timer_new(p->env->loop, on_del_timer, r, &err);
        if (!r->uid || !r->ns || !r->name || !r->evict_timer || !r->del_timer) {
                rec_free(r);
                return NULL;
        }
        r->next = p->recs;
        p->recs = r;
        p->n++;
        ag_podhist_pod(p->hist, r->uid, r->ns, r->name);
        return r;
}

/* Takes a reference to the object's decoded pod: a watched pod was
 * decoded once, by the reflector's store. Only a static pod (the file
 * source hands JSON) is decoded here. */
static void update_object(struct rec *r, const struct ag_object *o)
{
        struct k8s_pod *pod = k8s_pod_ref(o->pod);
        if (pod == NULL) {
                struct cb_error err = {0};
                if (o->json == NULL)
                        cb_error_set(&err, 0, "no object");
                if (o->json == NULL || k8s_pod_decode(o->json, &pod, &err) < 0)
                        log_error("pod %s/%s: %s", pod_ns(r), r->name, err.msg);
        }
        /* The spec changes cubelet observes (deletionTimestamp set, ...). */
        if (r->pod != NULL && pod != NULL) {
                _cleanup_cjson_ cJSON *was = k8s_pod_json_parse(r->pod);
                _cleanup_cjson_ cJSON *is = o->json != NULL ? NULL : k8s_pod_json_parse(pod);
                ag_podhist_spec(r->p->hist, r->uid, "Pod",
                                k8s_pod_spec_diff(was, o->json != NULL ? o->json : is));
        }
        k8s_pod_free(r->pod);
        r->pod = pod;
        if (pod != NULL)
                r->is_static = k8s_pod_is_static(pod);
}

/* A mirror pod: the apiserver's copy of a static pod, never run itself. */
static bool is_mirror(const struct ag_object *o)
{
        const cJSON *ann = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(o->json, "metadata"), "annotations");
        return cJSON_GetObjectItemCaseSensitive(ann, "kubernetes.io/config.mirror") != NULL;
}

void ag_pods_change(struct ag_pods *p, enum ag_change change, const struct ag_object *o)
{
        if (is_mirror(o)) {
                if (p->hooks.mirror != NULL)
                        p->hooks.mirror(change, o, p->hooks.data);
                return;
        }
        struct rec *r = find(p, o->uid);
        if (change == AG_DELETED) {
                if (r == NULL)
                        return;
                r->gone = true;
                if (r->worker != NULL)
                        ag_pod_worker_mark(r->worker, "deleted", NULL);
                ag_status_mgr_forget(p->status, r->uid);
                if (r->worker != NULL && !r->finished) {
                        /* Force-deleted: stop with the minimal grace period. */
                        log_info("pod %s/%s: removed from the apiserver: stopping it", pod_ns(r),
                                 r->name);
                        ag_pod_worker_terminate(r->worker, 1, NULL, NULL);
                } else {
                        log_v(1, "pod %s/%s: removed", pod_ns(r), r->name);
                        rec_remove(r);
                }
                return;
        }
        if (r == NULL) {
                r = rec_new(p, o);
                if (r == NULL) {
                        log_error("pod %s/%s: out of memory", o->namespace_ ? o->namespace_ : "",
                                  o->name ? o->name : "");
                        return;
                }
                log_v(1, "pod %s/%s uid=%s seen", pod_ns(r), r->name, r->uid);
                r->watched_mono_us = o->received_mono_us;
                r->watched_wall_us = o->received_wall_us;
        }
        update_object(r, o);
        if (r->pod == NULL)
                return;
        if (!r->admitted_checked)
                admit(r);
        else if (r->worker != NULL) {
                struct k8s_pod *copy = k8s_pod_ref(r->pod);
                if (copy != NULL)
                        ag_pod_worker_update(r->worker, copy);
        }
        if (r->pod->meta.deletion_timestamp != NULL && !r->deleting) {
                r->deleting = true;
                int64_t grace = r->pod->meta.has_deletion_grace_period
                                    ? r->pod->meta.deletion_grace_period_seconds
                                : r->pod->spec.has_termination_grace_period
                                    ? r->pod->spec.termination_grace_period_seconds
                                    : 30;
                start_termination(r, grace, "deletionTimestamp set");
        } else if (r->deleting && r->pod->meta.has_deletion_grace_period &&
                   r->pod->meta.deletion_grace_period_seconds < r->grace) {
                start_termination(r, r->pod->meta.deletion_grace_period_seconds,
                                  "grace period shortened");
        }
        check_noexecute(r);
}

void ag_pods_remove_static(struct ag_pods *p, const char *uid)
{
        struct rec *r = find(p, uid);
        if (r == NULL || !r->is_static || r->gone)
                return;
        r->gone = true;
        if (r->worker != NULL)
                ag_pod_worker_mark(r->worker, "deleted", NULL);
        if (r->worker == NULL || r->finished) {
                log_v(1, "pod %s/%s: removed", pod_ns(r), r->name);
                rec_remove(r);
                return;
        }
        /* The kubelet kills a pod removed from its source with the pod's
         * own grace period. */
        int64_t grace = r->pod != NULL && r->pod->spec.has_termination_grace_period
                            ? r->pod->spec.termination_grace_period_seconds
                            : 30;
        start_termination(r, grace, "static pod manifest removed");
}

void ag_pods_set_static_hooks(struct ag_pods *p, const struct ag_pods_static_hooks *h)
{
        p->hooks = *h;
}

const struct k8s_node *ag_pods_current_node(void *pods)
{
        return pods != NULL ? ((struct ag_pods *)pods)->node : NULL;
}

void ag_pods_node(struct ag_pods *p, const struct ag_object *node)
{
        k8s_node_free(p->node);
        /* The reflector decoded it; only the standalone node comes as JSON. */
        p->node = node != NULL ? k8s_node_ref(node->node) : NULL;
        if (node != NULL && node->node == NULL && node->json != NULL) {
                struct cb_error err = {0};
                if (k8s_node_from_json(node->json, &p->node, &err) < 0)
                        log_error("node: %s", err.msg);
        }
        /* A taint added, a label changed: into each pod's history. */
        if (node != NULL && node->json != NULL)
                ag_podhist_node(p->hist, node->name, node->json);
        for (struct rec *r = p->recs; r; r = r->next) {
                if (!r->admitted_checked && r->pod != NULL)
                        admit(r);
                check_noexecute(r);
        }
        maybe_sweep(p);
}

/* Container garbage collection after a restart: runtime containers that no
 * pod worker claims (left by a crash between creating a container and
 * recording it, or by an older agent) are stopped and removed. Off the
 * loop, on the sandboxes queue: a stop waits up to 2 s for each running
 * orphan and a removal walks its upper dir. The claims are taken on the
 * loop when the job is made; a container made after that (its directory
 * changed since) is left alone, as the periodic container GC does. */
struct orphans_job {
        char *root_dir;
        char **claimed;
        size_t n_claimed;
        int64_t snapshot_ms;
        char *log; /* lines for the loop to log: "I..." or "W..." */
        size_t log_len, log_cap;
};

static void orphans_say(struct orphans_job *j, char level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void orphans_say(struct orphans_job *j, char level, const char *fmt, ...)
{
        char line[CB_ERROR_MSG_MAX + 128];
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(line + 1, sizeof(line) - 2, fmt, ap);
        va_end(ap);
        if (n < 0)
                return;
        line[0] = level;
        size_t len = strlen(line);
        if (j->log_len + len + 2 > j->log_cap) {
                size_t cap = (j->log_cap + len + 2) * 2;
                char *g = realloc(j->log, cap);
                if (g == NULL)
                        return;
                j->log = g;
                j->log_cap = cap;
        }
        memcpy(j->log + j->log_len, line, len);
        j->log_len += len;
        j->log[j->log_len++] = '\n';
        j->log[j->log_len] = '\0';
}

static void orphans_work(void *data)
{
        struct orphans_job *j = data;
        char **ids = NULL;
        size_t n = 0;
        struct cb_error err = {0};
        if (rt_container_list_unclaimed(j->root_dir, j->claimed, j->n_claimed, j->snapshot_ms, &ids,
                                        &n, &err) < 0) {
                orphans_say(j, 'W', "container garbage collection: %s", err.msg);
                return;
        }
        for (size_t i = 0; i < n; i++) {
                struct rt_container_state st;
                if (rt_container_state(j->root_dir, ids[i], &st, &err) == 0 &&
                    st.status == RT_CONTAINER_RUNNING) {
                        orphans_say(j, 'W', "container %s runs but belongs to no pod: stopping it",
                                    ids[i]);
                        rt_container_stop(j->root_dir, ids[i], 0, 2, NULL);
                }
                if (rt_container_remove(j->root_dir, ids[i], &err) < 0)
                        orphans_say(j, 'W', "container %s: %s", ids[i], err.msg);
                else
                        orphans_say(j, 'I', "removed container %s, which belonged to no pod",
                                    ids[i]);
        }
        rt_container_list_free(ids, n);
}

static void orphans_done(void *data, bool cancelled)
{
        struct orphans_job *j = data;
        for (char *line = j->log; !cancelled && line != NULL && *line != '\0';) {
                char *nl = strchr(line, '\n');
                if (nl != NULL)
                        *nl = '\0';
                if (line[0] == 'W')
                        log_warning("%s", line + 1);
                else
                        log_info("%s", line + 1);
                line = nl != NULL ? nl + 1 : NULL;
        }
        ag_pods_claimed_free(j->claimed, j->n_claimed);
        free(j->root_dir);
        free(j->log);
        free(j);
}

static void collect_orphans(struct ag_pods *p)
{
        struct cb_error err = {0};
        struct orphans_job *j = calloc(1, sizeof(*j));
        if (j == NULL || (j->root_dir = strdup(p->env->root_dir)) == NULL ||
            ag_pods_claimed(p, &j->claimed, &j->n_claimed) < 0) {
                log_warning("container garbage collection: out of memory");
                if (j != NULL)
                        orphans_done(j, true);
                return;
        }
        j->snapshot_ms = cb_wall_now_us() / 1000;
        if (ag_offload_submit(p->env->sandboxes, orphans_work, orphans_done, j, &err) < 0) {
                log_warning("container garbage collection: %s", err.msg);
                orphans_done(j, true);
        }
}

void ag_pods_synced(struct ag_pods *p)
{
        p->synced = true;
        maybe_sweep(p);
}

/* The sweep and the container GC run once, after the first pod list AND
 * after every listed pod went through admission (which waits for the
 * Node): until then a pod's containers are not claimed by its worker yet
 * and would be mistaken for orphans. */
static void maybe_sweep(struct ag_pods *p)
{
        if (p->swept || !p->synced || p->node == NULL)
                return;
        for (const struct rec *r = p->recs; r; r = r->next)
                if (!r->admitted_checked && !r->gone && r->pod != NULL)
                        return;
        p->swept = true;
        /* Pods that ran here but were deleted while the agent was away:
         * re-adopt them from their saved state, then stop and clean up. */
        char dir[4096];
        snprintf(dir, sizeof(dir), "%s/pods", p->env->root_dir);
        DIR *d = opendir(dir);
        if (d == NULL)
                return;
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
                if (de->d_name[0] == '.' || find(p, de->d_name) != NULL)
                        continue;
                char path[4400];
                snprintf(path, sizeof(path), "%s/%s/pod.json", dir, de->d_name);
                _cleanup_free_ char *text = NULL;
                struct cb_error err = {0};
                _cleanup_cjson_ cJSON *json = NULL;
                if (cb_read_file(path, K8S_MAX_DOC_BYTES, &text, NULL, &err) < 0 ||
                    (json = cJSON_Parse(text)) == NULL) {
                        log_warning("left-over pod state %s/%s: %s", dir, de->d_name,
                                    err.msg[0] ? err.msg : "pod.json unreadable");
                        continue;
                }
                struct k8s_pod *pod = NULL;
                if (k8s_pod_decode(json, &pod, &err) < 0) {
                        log_warning("left-over pod state %s/%s: %s", dir, de->d_name, err.msg);
                        continue;
                }
                if (pod->meta.uid == NULL || strcmp(pod->meta.uid, de->d_name) != 0) {
                        log_warning("left-over pod state %s/%s: %s", dir, de->d_name,
                                    err.msg[0] ? err.msg : "uid mismatch");
                        k8s_pod_free(pod);
                        continue;
                }
                struct ag_object o = {.uid = pod->meta.uid,
                                      .namespace_ = pod->meta.namespace_,
                                      .name = pod->meta.name,
                                      .json = json,
                                      .pod = pod};
                struct rec *r = rec_new(p, &o);
                if (r == NULL) {
                        k8s_pod_free(pod);
                        continue;
                }
                r->pod = pod;
                r->gone = true;
                r->admitted_checked = true;
                log_info("pod %s/%s uid=%s was deleted while the agent was away: stopping it",
                         pod_ns(r), r->name, r->uid);
                struct k8s_pod *copy = k8s_pod_ref(r->pod);
                if (copy == NULL ||
                    ag_pod_worker_new(p->env, copy, &worker_ops, r, &r->worker, &err) < 0) {
                        log_error("pod %s/%s: %s", pod_ns(r), r->name, err.msg);
                        rec_remove(r);
                        continue;
                }
                ag_pod_worker_terminate(r->worker, 2, NULL, NULL);
        }
        closedir(d);
        collect_orphans(p);
}

cJSON *ag_pods_list_json(const struct ag_pods *p)
{
        cJSON *list = cJSON_CreateObject();
        cJSON_AddStringToObject(list, "kind", "PodList");
        cJSON_AddStringToObject(list, "apiVersion", "v1");
        cJSON_AddObjectToObject(list, "metadata");
        cJSON *items = cJSON_AddArrayToObject(list, "items");
        for (const struct rec *r = p->recs; r && items; r = r->next) {
                if (r->gone || !k8s_pod_has_json(r->pod))
                        continue;
                cJSON *pod = rec_json(r);
                /* The status as this node knows it (what it last computed). */
                const cJSON *st = r->worker ? ag_pod_worker_status(r->worker) : r->rejected_status;
                if (pod != NULL && st != NULL)
                        cJSON_ReplaceItemInObjectCaseSensitive(pod, "status",
                                                               cJSON_Duplicate(st, true));
                if (pod != NULL)
                        cJSON_AddItemToArray(items, pod);
        }
        return list;
}

cJSON *ag_pods_timelines_json(const struct ag_pods *p)
{
        return ag_podhist_json(p->hist);
}

struct ag_podhist *ag_pods_history(struct ag_pods *p)
{
        return p->hist;
}

void ag_pods_set_metrics(struct ag_pods *p, struct ag_metrics *m)
{
        p->metrics = m;
}

void ag_pods_wall_changed(struct ag_pods *p)
{
        for (struct rec *r = p->recs; r; r = r->next)
                if (r->worker != NULL)
                        ag_pod_worker_wall_changed(r->worker);
}

void ag_pods_kick(struct ag_pods *p)
{
        for (struct rec *r = p->recs; r; r = r->next)
                if (r->worker != NULL)
                        ag_pod_worker_kick(r->worker);
}

void ag_pods_update_metrics(const struct ag_pods *p)
{
        static const char *const phases[] = {"Pending", "Running", "Succeeded", "Failed"};
        if (p->metrics == NULL)
                return;
        for (size_t i = 0; i < CB_ARRAY_SIZE(phases); i++) {
                int n = 0;
                for (const struct rec *r = p->recs; r; r = r->next) {
                        const cJSON *st = r->worker ? ag_pod_worker_status(r->worker) : NULL;
                        const cJSON *ph = cJSON_GetObjectItemCaseSensitive(st, "phase");
                        if (cJSON_IsString(ph) && strcmp(ph->valuestring, phases[i]) == 0)
                                n++;
                        else if (r->rejected && strcmp(phases[i], "Failed") == 0)
                                n++;
                }
                ag_metrics_gauge_set(p->metrics, "cubelet_pods", "Pods this node runs, by phase.",
                                     (const char *const[]){"phase", phases[i], NULL}, n, NULL);
        }
}

/* ---- node pressure ------------------------------------------------------------------ */

static bool active(const struct rec *r)
{
        if (r->worker == NULL || r->finished || r->gone || r->deleting || r->evicted ||
            r->disruption_message != NULL || r->pod == NULL)
                return false;
        const cJSON *st = ag_pod_worker_status(r->worker);
        const cJSON *ph = cJSON_GetObjectItemCaseSensitive(st, "phase");
        return !(cJSON_IsString(ph) && (strcmp(ph->valuestring, "Failed") == 0 ||
                                        strcmp(ph->valuestring, "Succeeded") == 0));
}

int ag_pods_active(const struct ag_pods *p, struct ag_pod_ref **ret, size_t *ret_n)
{
        struct ag_pod_ref *v = calloc(p->n + 1, sizeof(*v));
        if (v == NULL)
                return -1;
        size_t n = 0;
        for (const struct rec *r = p->recs; r; r = r->next)
                if (active(r))
                        v[n++] = (struct ag_pod_ref){.uid = r->uid,
                                                     .pod = ag_pod_worker_pod(r->worker),
                                                     .status = ag_pod_worker_status(r->worker)};
        *ret = v;
        *ret_n = n;
        return 0;
}

void ag_pods_gc_snapshot_free(struct ag_pods_gc_pod *v, size_t n)
{
        for (size_t i = 0; v != NULL && i < n; i++) {
                for (size_t k = 0; k < v[i].n; k++)
                        free(v[i].c[k].name);
                free(v[i].c);
                free(v[i].uid);
        }
        free(v);
}

int ag_pods_gc_snapshot(const struct ag_pods *p, struct ag_pods_gc_pod **ret, size_t *ret_n,
                        bool *ret_ready)
{
        struct ag_pods_gc_pod *v = calloc(p->n + 1, sizeof(*v));
        if (v == NULL)
                return -1;
        size_t n = 0;
        for (const struct rec *r = p->recs; r; r = r->next) {
                struct ag_pods_gc_pod *e = &v[n++];
                e->uid = strdup(r->uid);
                e->terminated = r->worker == NULL || r->finished;
                size_t nc = r->worker != NULL ? ag_pod_worker_n_containers(r->worker) : 0;
                e->c = calloc(nc + 1, sizeof(*e->c));
                if (e->uid == NULL || e->c == NULL)
                        goto oom;
                for (size_t k = 0; k < nc; k++) {
                        long cur = -1;
                        const char *name = ag_pod_worker_container(r->worker, k, &cur);
                        if ((e->c[e->n].name = strdup(name)) == NULL)
                                goto oom;
                        e->c[e->n++].current = cur;
                }
        }
        *ret = v;
        *ret_n = n;
        *ret_ready = p->swept;
        return 0;
oom:
        ag_pods_gc_snapshot_free(v, n);
        return -1;
}

struct claimed {
        char **ids;
        size_t n, cap;
        bool failed;
};

static void add_claimed(const char *id, void *data)
{
        struct claimed *c = data;
        if (c->failed)
                return;
        if (c->n == c->cap) {
                size_t cap = c->cap ? c->cap * 2 : 64;
                char **v = realloc(c->ids, cap * sizeof(*v));
                if (v == NULL) {
                        c->failed = true;
                        return;
                }
                c->ids = v;
                c->cap = cap;
        }
        if ((c->ids[c->n] = strdup(id)) == NULL)
                c->failed = true;
        else
                c->n++;
}

void ag_pods_claimed_free(char **ids, size_t n)
{
        for (size_t i = 0; ids != NULL && i < n; i++)
                free(ids[i]);
        free(ids);
}

int ag_pods_claimed(const struct ag_pods *p, char ***ret, size_t *ret_n)
{
        struct claimed c = {0};
        for (const struct rec *r = p->recs; r; r = r->next)
                if (r->worker != NULL)
                        ag_pod_worker_claimed(r->worker, add_claimed, &c);
        if (c.failed) {
                ag_pods_claimed_free(c.ids, c.n);
                return -1;
        }
        *ret = c.ids;
        *ret_n = c.n;
        return 0;
}

bool ag_pods_cleaned_up(const struct ag_pods *p, const char *uid)
{
        const struct rec *r = find((struct ag_pods *)p, uid);
        return r == NULL || r->finished;
}

int ag_pods_terminate_by_kubelet(struct ag_pods *p, const char *uid, int64_t grace_s,
                                 const char *reason, const char *message, bool event)
{
        struct rec *r = find(p, uid);
        if (r == NULL || !active(r))
                return -1;
        r->disruption_message = strdup(message);
        if (r->disruption_message == NULL)
                return -1;
        time_t t = (time_t)cb_wall_now();
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(r->disruption_time, sizeof(r->disruption_time), "%Y-%m-%dT%H:%M:%SZ", &tm);
        log_info("pod %s/%s: %s (grace %llds): %s", pod_ns(r), r->name, reason, (long long)grace_s,
                 message);
        if (event)
                record_event(r, "Warning", reason, message, NULL);
        ag_pod_worker_terminate(r->worker, grace_s, reason, message);
        return 0;
}

int ag_pods_evict_pressure(struct ag_pods *p, const char *uid, int64_t grace_s, const char *message)
{
        return ag_pods_terminate_by_kubelet(p, uid, grace_s, K8S_EVICTION_REASON, message, true);
}

void ag_pods_set_shutting_down(struct ag_pods *p, bool shutting_down)
{
        p->shutting_down = shutting_down;
}

void ag_pods_set_finished_hook(struct ag_pods *p, void (*fn)(const char *uid, void *data),
                               void *data)
{
        p->finished = fn;
        p->finished_data = data;
}

void ag_pods_set_pressure(struct ag_pods *p, unsigned conditions)
{
        p->pressure = conditions;
}

size_t ag_pods_count(const struct ag_pods *p)
{
        return p->n;
}

int ag_pods_new(const struct ag_node_env *env, struct ag_api *api, struct ag_events *events,
                struct ag_pods **ret, struct cb_error *err)
{
        struct ag_pods *p = calloc(1, sizeof(*p));
        if (p == NULL)
                return cb_error_set(err, ENOMEM, "pods");
        p->env = env;
        p->api = api;
        p->events = events;
        if ((p->hist = ag_podhist_new()) == NULL) {
                free(p);
                return cb_error_set(err, ENOMEM, "pods");
        }
        if (ag_status_mgr_new(env->loop, api, on_status_delivered, p, &p->status, err) < 0) {
                ag_podhist_free(p->hist);
                free(p);
                return -1;
        }
        static const struct ag_status_observer obs = {on_status_sent, on_status_answered, NULL};
        struct ag_status_observer o = obs;
        o.data = p;
        ag_status_mgr_observe(p->status, &o);
        *ret = p;
        return 0;
}

void ag_pods_free(struct ag_pods *p)
{
        if (p == NULL)
                return;
        while (p->recs) {
                struct rec *r = p->recs;
                p->recs = r->next;
                rec_free(r);
        }
        ag_status_mgr_free(p->status);
        ag_podhist_free(p->hist);
        k8s_node_free(p->node);
        ag_stats_free(p->stats);
        free(p);
}

cJSON *ag_pods_stats_summary(struct ag_pods *p)
{
        if (p->stats == NULL && (p->stats = ag_stats_new()) == NULL)
                return NULL;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToObject(o, "node",
                              ag_stats_node_json(p->stats, p->env->node_name, p->env->root_dir,
                                                 p->env->node_memory_capacity));
        cJSON *arr = cJSON_AddArrayToObject(o, "pods");
        for (const struct rec *r = p->recs; r && arr; r = r->next)
                if (r->worker != NULL && !r->gone)
                        cJSON_AddItemToArray(arr, ag_pod_worker_stats_json(r->worker, p->stats));
        return o;
}
