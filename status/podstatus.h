/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Pod status computation with the kubelet's rules: phase (getPhase),
 * conditions (status/generate.go plus the status manager's
 * lastTransitionTime handling), the containerStatuses JSON
 * (convertToAPIContainerStatuses plus the prober's started/ready), the
 * terminated reasons and the CrashLoopBackOff schedule and messages.
 *
 * Everything here is a pure function of its arguments. The input structs
 * speak Kubernetes vocabulary but know nothing of the object decoder in
 * agent/: the agent converts its decoded pod and its runtime view into
 * them. Strings are borrowed (never freed here); NULL reads as "".
 * Times are unix seconds, 0 meaning "unset" (rendered as JSON null, as the
 * API renders a zero metav1.Time).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "lib/error.h"

/* Exact reason strings (k/k kubelet_pods.go, status/generate.go,
 * container/sync_result.go, containerd's CRI helpers). */
#define ST_REASON_CONTAINER_CREATING         "ContainerCreating"
#define ST_REASON_POD_INITIALIZING           "PodInitializing"
#define ST_REASON_CRASH_LOOP_BACK_OFF        "CrashLoopBackOff"
#define ST_REASON_COMPLETED                  "Completed"
#define ST_REASON_ERROR                      "Error"
#define ST_REASON_OOM_KILLED                 "OOMKilled"
#define ST_REASON_START_ERROR                "StartError"             /* exit code 128 */
#define ST_REASON_CONTAINER_STATUS_UNKNOWN   "ContainerStatusUnknown" /* exit code 137 */
#define ST_REASON_POD_COMPLETED              "PodCompleted"
#define ST_REASON_POD_FAILED                 "PodFailed"
#define ST_REASON_CONTAINERS_NOT_READY       "ContainersNotReady"
#define ST_REASON_CONTAINERS_NOT_INITIALIZED "ContainersNotInitialized"
#define ST_REASON_READINESS_GATES_NOT_READY  "ReadinessGatesNotReady"

enum st_restart_policy {
        ST_RESTART_ALWAYS = 0, /* the API default */
        ST_RESTART_ON_FAILURE,
        ST_RESTART_NEVER,
};

enum st_phase {
        ST_PHASE_NONE = 0, /* no status known yet (no cached or API phase) */
        ST_PHASE_PENDING,
        ST_PHASE_RUNNING,
        ST_PHASE_SUCCEEDED,
        ST_PHASE_FAILED,
        ST_PHASE_UNKNOWN,
};

enum st_state_kind {
        ST_STATE_NONE = 0, /* rendered as waiting{} (the kubelet's default case) */
        ST_STATE_WAITING,
        ST_STATE_RUNNING,
        ST_STATE_TERMINATED,
};

/* One v1.ContainerState. For lastState, kind NONE renders as {}. */
struct st_container_state {
        enum st_state_kind kind;
        const char *reason, *message; /* waiting, terminated; NULL or "" = omitted */
        int32_t exit_code;            /* terminated */
        /* terminated. The kubelet never fills this (the CRI has no signal
         * field), so leave it 0 to match; non-zero values are rendered. */
        int32_t signal;
        int64_t started_at;       /* running, terminated */
        int64_t finished_at;      /* terminated */
        const char *container_id; /* terminated; "<runtime>://<id>" */
};

/* One entry of a v1.ResourceList: the resource name and its quantity as
 * the apiserver stores it (canonical text). Rendered sorted by name, as Go
 * marshals a map. */
struct st_quantity {
        const char *name;
        const char *value;
};

struct st_resource_list {
        const struct st_quantity *items;
        size_t n;
};

/* One v1.VolumeMountStatus. */
struct st_volume_mount {
        const char *name;
        const char *mount_path;
        bool read_only;                  /* omitted when false */
        const char *recursive_read_only; /* "Disabled", "Enabled"; NULL = omitted */
};

/* One container of the spec together with what the runtime and the probes
 * know about it. */
struct st_container {
        const char *name;
        const char *image;        /* spec image, or as the runtime reports it */
        const char *image_id;     /* digested reference, "" before the pull */
        const char *container_id; /* "<runtime>://<id>", omitted when empty */
        bool is_sidecar;          /* init container with restartPolicy: Always */
        /* false: the runtime has never seen this container; its state is
         * then the default waiting{ContainerCreating|PodInitializing}
         * (and `state` is ignored) while last_state and restart_count still
         * count (the kubelet carries them over from the previous status). */
        bool has_status;
        struct st_container_state state;
        struct st_container_state last_state;
        int32_t restart_count;
        /* Probe results decide `started` and `ready` (prober_manager.go):
         * started = running && (no startup probe || it succeeded);
         * ready = started && running && (no readiness probe || it succeeded);
         * a regular init container is ready when it exited 0. */
        bool has_startup_probe, startup_succeeded;
        bool has_readiness_probe, readiness_succeeded;
        /* allocatedResources (omitted when n is 0) and resources
         * (has_resources: rendered, as {} when both lists are empty), as
         * convertToAPIContainerStatuses fills them (agent/pods/statusgen.c). */
        struct st_resource_list allocated;
        bool has_resources;
        struct st_resource_list limits, requests;
        /* volumeMounts, in order; omitted when n_volume_mounts is 0. */
        const struct st_volume_mount *volume_mounts;
        size_t n_volume_mounts;
        /* user.linux (has_user): the identity the runtime gave the
         * container's first process, as the CRI status reports it. */
        bool has_user;
        uint32_t uid, gid;
        const uint32_t *supplemental_groups;
        size_t n_supplemental_groups;
};

/* A pod condition as last reported (cached status, else the API status). */
struct st_condition {
        const char *type, *status, *reason, *message;
        int64_t last_transition_time; /* 0 = null */
        int64_t last_probe_time;      /* 0 = null */
};

struct st_pod_input {
        enum st_restart_policy restart_policy;
        bool is_static;             /* static pods never get a terminal phase from podIsTerminal */
        bool is_terminal;           /* podIsTerminal: being deleted or evicted */
        enum st_phase cached_phase; /* the status manager's last phase, or NONE */
        enum st_phase api_phase;    /* pod.status.phase from the API server, or NONE */
        const char *const *readiness_gates; /* spec.readinessGates[].conditionType */
        size_t n_readiness_gates;
        const struct st_condition *conditions; /* last reported status.conditions */
        size_t n_conditions;
        /* The conditions of the status this agent computed last for the pod
         * (the kubelet's status manager cache): when has_own, a generated
         * condition keeps its lastTransitionTime from there, not from the
         * API's copy, which lags one update behind (each echo would flip
         * the time back and forth). */
        bool has_own;
        const struct st_condition *own_conditions;
        size_t n_own_conditions;
        bool sandbox_ready;                         /* a ready sandbox with networking exists */
        const struct st_container *init_containers; /* spec order */
        size_t n_init_containers;
        const struct st_container *containers; /* spec order */
        size_t n_containers;
};

/* "Pending", "Running", "Succeeded", "Failed", "Unknown"; "" for NONE. */
const char *st_phase_name(enum st_phase phase);
/* The inverse; NULL or an unknown string gives ST_PHASE_NONE. */
enum st_phase st_phase_from_name(const char *name);

/* getPhase (v1.29-1.31 shape, as the reference describes it) followed by
 * generateAPIPodStatus's rule that a terminal phase (cached or API) never
 * changes. */
enum st_phase st_compute_phase(const struct st_pod_input *in);

/* status.conditions as a JSON array: the preserved conditions not owned by
 * the kubelet (DisruptionTarget included) in their order, then
 * PodReadyToStartContainers, Initialized, Ready, ContainersReady,
 * PodScheduled. lastTransitionTime is copied from the previous condition of
 * the same type when its status did not change, else `now`. Returns NULL
 * only when out of memory. */
cJSON *st_conditions_json(const struct st_pod_input *in, enum st_phase phase, int64_t now);

/* status.containerStatuses (init false: sorted by name, as the kubelet
 * sorts them) or status.initContainerStatuses (init true: spec order).
 * has_init_containers selects the default waiting reason (PodInitializing
 * instead of ContainerCreating, for every container of such a pod).
 * Returns NULL only when out of memory. */
cJSON *st_container_statuses_json(const struct st_container *cs, size_t n, bool init,
                                  bool has_init_containers);

/* Terminated reason as containerd sets it: "OOMKilled" when the OOM killer
 * hit the container, else "Completed" for exit code 0, else "Error". */
const char *st_terminated_reason(int32_t exit_code, bool oom_killed);
/* The exit code of a container: 128+signal for a signal death (137 for
 * SIGKILL, 143 for SIGTERM), else its exit status. */
int32_t st_exit_code(int32_t exit_status, int32_t signal);

/* RFC 3339 in UTC with seconds, "2026-11-29T17:47:39Z". buf needs
 * ST_TIME_MAX bytes. -1 (err filled) when the time has no 4-digit year. */
#define ST_TIME_MAX 32
int st_time_format(int64_t t, char *buf, size_t len, struct cb_error *err);
/* Parses RFC 3339 ("...Z", "...+02:00", fractional seconds dropped). */
int st_time_parse(const char *s, int64_t *ret, struct cb_error *err);

/* Go's time.Duration.String() for whole seconds: "0s", "10s", "1m20s",
 * "5m0s", "1h0m0s". Returns what snprintf returns. */
#define ST_DURATION_MAX 32
int st_duration_format(int64_t seconds, char *buf, size_t len);

/*
 * Container restart backoff (client-go flowcontrol.Backoff as the kubelet
 * configures it): 10 s initial, doubling, capped at 300 s, no jitter; an
 * entry expires (starts over) when the exit came more than 600 s after
 * the last update. A base above the cap is lowered to the cap
 * (KubeletCrashLoopBackOffMax).
 */
#define ST_BACKOFF_BASE_DEFAULT  10
#define ST_BACKOFF_CAP_DEFAULT   300
#define ST_BACKOFF_RESET_SECONDS 600

/* One per podName_namespace_uid_containerName_hash key. Zero = no entry. */
struct st_backoff {
        int64_t backoff;     /* the current window in seconds; 0 = no entry */
        int64_t last_update; /* when st_backoff_next last ran */
};

/* IsInBackOffSince: true when the container, which exited at finished_at,
 * must not be restarted yet at `now`. */
bool st_backoff_active(const struct st_backoff *b, int64_t finished_at, int64_t now);
/* Next: records a restart at `now` of a container that exited at
 * finished_at: a new or expired entry gets `base`, otherwise the window
 * doubles up to `cap`. */
void st_backoff_next(struct st_backoff *b, int64_t finished_at, int64_t now, int64_t base,
                     int64_t cap);
/* The delay before the next restart of a container restarted `restarts`
 * times without a reset: 0, base, 2*base, ... capped (0,10,20,40,80,160,300,300...). */
int64_t st_backoff_delay(int32_t restarts, int64_t base, int64_t cap);

/*
 * A pod sync that failed (a container config that cannot be built, a
 * subPath refused, ...) is synced again after wait.Jitter(backOffPeriod,
 * workerBackOffPeriodJitterFactor) (pkg/kubelet/pod_workers.go:
 * completeWork): 10 s plus up to half of it, i.e. in [10 s, 15 s); an
 * update of the pod meanwhile syncs it at once (UpdatePod does not look
 * at the work queue) and the next failure queues it again.
 */
#define ST_SYNC_BACKOFF_MS     10000
#define ST_SYNC_BACKOFF_JITTER 0.5
/* A random source: a value in [0, 1) (as Go's rand.Float64); values out
 * of that range are clamped. */
typedef double (*st_random_fn)(void *ctx);
/* wait.Jitter(base_ms, max_factor): base_ms + r * max_factor * base_ms,
 * r from rnd (a factor <= 0 is 1.0, as in Go). In [base_ms, base_ms *
 * (1 + max_factor)); base_ms itself when rnd is NULL. */
uint64_t st_jitter_ms(uint64_t base_ms, double max_factor, st_random_fn rnd, void *ctx);

/* The waiting message while in backoff:
 * "back-off 40s restarting failed container=<c> pod=<name>_<ns>(<uid>)".
 * malloc'd; NULL when out of memory. */
char *st_crashloop_message(int64_t backoff_seconds, const char *container, const char *pod_name,
                           const char *pod_namespace, const char *pod_uid);
/* The Warning BackOff event message:
 * "Back-off restarting failed container <c> in pod <name>_<ns>(<uid>)". */
char *st_backoff_event_message(const char *container, const char *pod_name,
                               const char *pod_namespace, const char *pod_uid);

/*
 * Termination messages (kuberuntime_container.go, status_manager.go):
 * the file at terminationMessagePath (the runtime binds a per-instance
 * host file there) is read when the container has exited, its last
 * ST_TERMINATION_MESSAGE_MAX bytes. With terminationMessagePolicy
 * FallbackToLogsOnError, a container that failed (exit code != 0, reason
 * not ContainerCannotRun) and left the file missing or empty gets the last
 * ST_TERMINATION_LOG_LINES lines of its log, at most
 * ST_TERMINATION_LOG_BYTES bytes (the end kept). The status manager then
 * cuts every terminated message of the pod to
 * ST_POD_TERMINATION_MESSAGE_MAX / (number of containers) bytes.
 */
#define ST_TERMINATION_MESSAGE_MAX     4096
#define ST_TERMINATION_LOG_LINES       80
#define ST_TERMINATION_LOG_BYTES       2048
#define ST_POD_TERMINATION_MESSAGE_MAX (12 * 1024)
#define ST_DEFAULT_TERMINATION_PATH    "/dev/termination-log"

/* Whether the log tail replaces the file's contents. file_len is what was
 * read (0 also when the file does not exist). */
bool st_termination_use_logs(bool fallback_policy, int32_t exit_code, const char *reason,
                             size_t file_len);
/* The terminated message: the runtime's message, then ": " and the
 * termination message when both are non-empty (convertToKubeContainerStatus).
 * Truncated to fit buf; returns the length written. */
size_t st_termination_message(char *buf, size_t size, const char *runtime_message,
                              const char *termination_message);
/* The per-container byte budget of a pod with n containers (init,
 * regular and ephemeral): ST_POD_TERMINATION_MESSAGE_MAX / n. */
size_t st_termination_message_budget(size_t n_containers);
/* Cuts state.terminated.message and lastState.terminated.message of every
 * containerStatuses and initContainerStatuses entry of a status object to
 * budget bytes (normalizeStatus), and replaces bytes that are not UTF-8 by
 * U+FFFD as the kubelet's JSON encoder does. */
void st_normalize_termination_messages(cJSON *status, size_t budget);

/*
 * Sidecar decisions (kuberuntime_manager.go computePodActions,
 * kuberuntime_termination_order.go), on a plain view of each container.
 */
struct st_run_view {
        bool sidecar;      /* an init container with restartPolicy: Always */
        bool running;      /* running, or being started */
        bool started;      /* running, postStart done and the startup probe (if any) passed */
        bool exited;       /* the current instance terminated */
        int32_t exit_code; /* when exited */
        bool will_restart; /* exited and the restart policy brings it back */
};

/* An init container the next one may follow: a sidecar once started, a
 * regular init container once it exited 0. */
bool st_init_done(const struct st_run_view *c);
/* Every regular container has terminated and none will be restarted: the
 * sidecars are stopped so that the pod completes (KillPod with no
 * restartable init container restarted). False without regular containers. */
bool st_regular_done(const struct st_run_view *regular, size_t n);
/* At termination, sidecar init[i] gets its stop signal only once every
 * regular container and every sidecar after it in spec order have
 * stopped (sidecars stop in reverse order, after the main containers). */
bool st_sidecar_may_stop(const struct st_run_view *init, size_t n_init,
                         const struct st_run_view *regular, size_t n_regular, size_t i);
