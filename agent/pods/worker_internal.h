/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
/* The pod worker's insides, shared by its files (agent/pods/podworker.c:
 * the state machine; worker_state.c: its state on disk and re-adoption;
 * worker_jobs.c: image pulls, sandboxes and container starts off the
 * loop; worker_hooks.c: lifecycle hooks and stopping a container). Nothing
 * outside those files includes it. */
#include "agent/pods/podworker.h"
#include "lib/wallclock.h"

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
#include "agent/pods/podlogs.h"
#include "agent/core/offload.h"
#include "agent/pods/prober.h"
#include "agent/pods/services.h"
#include "agent/k8s/dns.h"
#include "agent/k8s/keyring.h"
#include "agent/k8s/qos.h"
#include "agent/pods/statusgen.h"
#include "cgroups/cgroup.h"
#include "lib/cleanup.h"
#include "lib/file.h"
#include "runtime/container.h"
#include "runtime/image.h"
#include "runtime/sandbox.h"
#include "agent/pods/stats.h"
#include "agent/pods/subpath.h"
#include "agent/pods/volumes.h"
#include "status/podstatus.h"

#define REASON_MAX  64
#define MESSAGE_MAX 1024
_Static_assert(CB_ERROR_MSG_MAX <= MESSAGE_MAX, "an error message fits a status message");
/* A terminated message: the runtime's, ": ", the termination message. */
#define TERM_MESSAGE_MAX (MESSAGE_MAX + 2 + ST_TERMINATION_MESSAGE_MAX)
#define SANDBOX_RETRY_MS 10000
/* statuses whose watch echo is recognised: the last ones sent, each echo
 * coming a round trip after its PATCH */
#define PW_SENT_DIGESTS 8
#define HOOK_PRESTOP    1
#define HOOK_POSTSTART  2
/* An httpGet postStart hook has no deadline in the kubelet; cubelet gives it
 * this long. */
#define POSTSTART_HTTP_TIMEOUT_MS 60000

struct pull_job;
struct sandbox_job;
struct start_job;
struct files_job;
struct teardown_job;
struct retire_job;

struct ctr;
/* *dst becomes a copy of s (NULL when s is NULL or empty; cut at
 * TERM_MESSAGE_MAX - 1 bytes); the old one is freed. */
void pw_msg_set(char **dst, const char *s);
/* c's user.linux from now on (groups copied). */
void pw_set_user(struct ctr *c, uint32_t uid, uint32_t gid, const uint32_t *groups, size_t n);

struct ctr {
        const struct k8s_container *spec;
        bool init;
        struct ag_pod_worker *w;
        struct ag_container_obs obs;
        char id[RT_ID_MAX];       /* the current runtime container, "" when none */
        char cid[RT_ID_MAX + 16]; /* "cubelet://<id>" */
        /* the image of its current instance, its ref and imageID;
         * malloc'd (pw_msg_set), NULL before the first start */
        char *image, *image_id;
        /* the identity its current instance was started with (worker.json
         * keeps it): user.linux of its status */
        bool has_user;
        uint32_t uid, gid;
        uint32_t *groups; /* malloc'd */
        size_t n_groups;
        /* The messages are malloc'd, NULL when empty (pw_msg_set): the
         * waiting one up to MESSAGE_MAX - 1 bytes (pw_set_waiting), the
         * others up to TERM_MESSAGE_MAX - 1 (rarely more than a line). */
        char wait_reason[REASON_MAX], *wait_message;
        char term_reason[REASON_MAX], *term_message, term_cid[RT_ID_MAX + 16];
        char last_reason[REASON_MAX], *last_message, last_cid[RT_ID_MAX + 16];
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
        bool awaiting_turn;             /* a sidecar whose stop signal waits for its turn */
        uint64_t signal_ms;             /* when a sidecar got its stop signal in turn */
        bool in_poststart;              /* started; its postStart hook runs */
        int hook_kind;                  /* HOOK_PRESTOP / HOOK_POSTSTART while one runs */
        struct ag_http_hook *http_hook; /* an httpGet hook in flight */
        int exit_fd;
        struct ag_io *exit_io;
        /* Back-offs run on CLOCK_BOOTTIME seconds (cb_boot_now), never on
         * the wall clock: a wall jump neither stalls nor skips them. */
        struct st_backoff backoff;
        struct st_backoff pull_backoff;
        int64_t exited_boot;    /* when the current instance exited */
        int64_t pull_failed_at; /* when the last pull failed */
        struct ag_timer *timer; /* restart or pull backoff */
        bool waiting_timer;
        struct pull_job *pull_job;   /* a pull in progress */
        char *pull_error;            /* the last failed pull's (pw_msg_set), for ImagePullBackOff */
        struct start_job *start_job; /* a container being created and started */
        struct rt_image *pulled;     /* its result, or a lookup's, not yet used */
        bool prefetched;             /* pulled came from a lookup in the store (a files
                                      * job's, off the loop): the start still owes the
                                      * "already present" Pulled event */
        /* The image looked up in the store and its /etc/passwd and
         * /etc/group read, off the loop, before each start (files_job while
         * it runs, files its result). */
        struct files_job *files_job, *files;
        /* The id of that start, saved in worker.json (pendingId) before the
         * monitor is spawned: an agent killed mid-start leaves a container
         * the next agent must adopt, not start a second one beside. */
        char pending_id[RT_ID_MAX];
        /* Earlier instances that are no longer current (a restart's exited
         * one, a start undone) and whose removal is not confirmed yet: a
         * retire_job removes them off the loop (pw_retire); one whose
         * removal failed stays for the next job or the teardown. worker.json
         * keeps them ("retired"), ag_pod_worker_owns claims them. */
        char (*retired)[RT_ID_MAX]; /* malloc'd */
        size_t n_retired;
        struct retire_job *retire_job; /* in flight, or NULL */
        /* What restart_or_backoff changed for the start in flight, undone
         * when that start failed only because the pod's sandbox died
         * meanwhile (pw_start_undo): the instance never ran. */
        struct {
                bool valid;
                struct st_backoff backoff;
                struct st_container_state last_state;
                char last_reason[REASON_MAX], *last_message;
                char last_cid[RT_ID_MAX + 16];
        } undo;
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
        struct sandbox_job *sandbox_job;   /* being made, off the loop */
        struct teardown_job *teardown_job; /* being torn down, off the loop */
        char (*tearing)[RT_ID_MAX];        /* the container ids it removes (the loop's copy) */
        size_t n_tearing;
        unsigned teardown_retries;      /* failed sandbox/cgroup teardowns so far */
        struct ag_pod_volumes *volumes; /* configMap/secret/projected/... (worker_volumes.c) */
        struct rt_sandbox sandbox;
        char pod_ip_buf[2][64];
        const char *pod_ips[2];
        size_t n_pod_ips;
        int64_t start_time;
        enum st_phase phase; /* cached phase */
        char *last_status;   /* printed, to send only changes */
        char *saved;         /* worker.json as last written */
        cJSON *status;
        /* k8s_json_digest of the statuses handed on last (a ring): their
         * watch echoes are no reason to sync (ag_pod_worker_update) */
        uint64_t sent_digests[PW_SENT_DIGESTS];
        size_t n_sent_digests;
        struct ag_timer *kick; /* run advance() from the loop */
        struct ag_timer *sandbox_timer;
        struct ag_timer *deadline; /* activeDeadlineSeconds */
        struct ag_timer *grace;    /* termination grace period */
        struct ag_timer *retry;    /* a failed sync's retry (pw_sync_failed) */
        bool terminating, killed, torn_down, done;
        bool initialized;           /* every init container was done once */
        bool net_waiting;           /* waits for the runtime's network (event sent) */
        bool volumes_marked;        /* the volumesReady step is in the timeline */
        bool sandbox_lost;          /* its pause process died: being made again */
        bool ordered_stop;          /* sidecars stop after the main containers, in reverse order */
        bool adopted;               /* state from an earlier agent was found */
        bool grace_extended;        /* the 2 s after a preStop hook used the grace period */
        uint64_t grace_deadline_ms; /* when the grace period ends (monotonic) */
        struct step {
                char name[96];
                uint64_t mono_us; /* CLOCK_MONOTONIC */
                int64_t wall_us;  /* CLOCK_REALTIME */
        } * steps;                /* grown as steps come (step_room), to AG_TIMELINE_MAX */
        size_t n_steps, cap_steps;
        enum st_phase forced;
        char reason[REASON_MAX], message[MESSAGE_MAX];
};

/* Work done off the loop (worker_jobs.c). */
struct pull_job {
        struct ctr *c;
        char *root_dir, *image, *unpack_helper;
        char **insecure;
        size_t n_insecure;
        /* the credentials: the pod's pull secrets (origin 0), read on the
         * loop; the node's config.json (origin 1), read by the job */
        struct cb_arena *arena;
        struct k8s_keyring keyring;
        int secrets_rc; /* -1: a pull secret does not parse; the pull fails with it */
        struct cb_error secrets_err;
        const char *node_config; /* the node file used, or NULL (for the log) */
        size_t n_creds;          /* credentials tried */
        int rc;
        struct cb_error err;
        struct rt_image *img;
        uint64_t submitted_us, started_us, finished_us;
};

/* The image's /etc/passwd and /etc/group for a start (rt_image_read_file:
 * resolved inside the image, regular files only); each rc -1 with its
 * error when the file is not a regular one, reported only if the start
 * needs that file. */
struct files_job {
        struct ctr *c; /* NULL once the worker is gone */
        /* With lookup set, img is found in the store by ref (NULL when the
         * node does not have it, lookup_rc -1 when the store cannot be
         * read) before the files are read. */
        bool lookup, found;
        bool prefetch; /* queued while the sandbox is made (prefetch_files) */
        char *ref;
        char *root_dir;
        int lookup_rc;
        struct cb_error lookup_err;
        struct rt_image *img;
        char *passwd, *group;
        int passwd_rc, group_rc;
        struct cb_error passwd_err, group_err;
};

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
        /* subPaths to bind before the start (agent/pods/subpath.h); a
         * failure is a CreateContainerConfigError, not a start error. */
        struct ag_subpath *subpaths;
        const char **subpath_targets;
        size_t n_subpaths;
        bool config_error;
        char err_detail[sizeof(((struct cb_error *)0)->msg)];
        const char *container_name;
        bool adopt;        /* the start of an earlier agent: wait for it, not create */
        bool vanished;     /* adopt: it never ran (removed); start afresh */
        bool sandbox_lost; /* failed: the pod's PID namespace is dead or dying */
};

struct sandbox_job {
        struct ag_pod_worker *w;
        struct cb_arena *arena;
        struct k8s_pod *pod; /* a reference, for the DNS settings */
        const char *resolv_path;
        struct k8s_dns_node dns;
        struct k8s_pod_dns dns_out; /* its warnings become events on the loop */
        struct rt_sandbox_config cfg;
        bool make_cgroup;        /* the pod cgroup (cfg.cgroup_parent) is made first */
        struct cg_limits limits; /* its limits */
        bool cgroup_made;        /* it was: the worker's cgroup_created */
        int rc;
        struct cb_error err;
        struct rt_sandbox sandbox;
};

/* Shared between the worker's files. */
void pw_adopt(struct ag_pod_worker *w);
bool pw_any_running(const struct ag_pod_worker *w);
void pw_arm_ctr_timer(struct ctr *c, int64_t seconds);
void pw_compute_status(struct ag_pod_worker *w);
void pw_emit_event(struct ag_pod_worker *w, const struct ctr *c, const char *type,
                   const char *reason, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
void pw_end_hook(struct ctr *c);
int pw_ensure_sandbox(struct ag_pod_worker *w);
void pw_finish(struct ag_pod_worker *w);
void pw_hook_finished(struct ctr *c, bool ok, const char *msg);
uint64_t pw_mono_us(void);
int64_t pw_now_s(void);
/* Records when the current instance exited on the back-off clock, from
 * the age of its exit stamp (seconds of CLOCK_REALTIME, the monitor's). */
void pw_set_exited_boot(struct ctr *c, int64_t finished_at_realtime);
void pw_on_hook_timer(struct ag_timer *t, void *data);
const char *pw_pod_ns(const struct k8s_pod *p);
void pw_probe_kill_quiet(struct ag_pod_worker *w, struct ctr *c);
/* rt_container_remove, which blocks (it unmounts and removes the overlay's
 * upper dir, whatever the container wrote): only off the loop. A call from
 * a loop callback is a bug and logged as one ("removed on the event loop":
 * integration tests look for the line). */
int pw_container_remove(const char *root_dir, const char *id, struct cb_error *err);
/* c's current instance is no longer current: its id joins c->retired and
 * its removal is queued (pw_retire_submit). */
void pw_retire(struct ag_pod_worker *w, struct ctr *c);
/* Queues a retire_job for c->retired unless one is in flight (its end
 * queues the ids retired meanwhile) or there is nothing to remove. */
void pw_retire_submit(struct ag_pod_worker *w, struct ctr *c);
/* The worker is freed (agent shutdown): the job no longer reports. */
void pw_retire_detach(struct retire_job *j);
/* Adds id to c->retired (no duplicates); false when out of memory. */
bool pw_retired_add(struct ctr *c, const char *id);
void pw_save_state(struct ag_pod_worker *w);
void pw_send_stop_signal(struct ag_pod_worker *w, struct ctr *c);
void pw_set_waiting(struct ctr *c, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void pw_start_container(struct ag_pod_worker *w, struct ctr *c);
/* The pod's sync failed (a container that could not be configured or
 * started for a reason a retry may cure): advance() again after the
 * kubelet's jittered 10-15 s (st_jitter_ms), re-armed from each failure;
 * any kick meanwhile retries at once. */
void pw_sync_failed(struct ag_pod_worker *w);
void pw_files_job_free(struct files_job *j);
void pw_start_undo(struct ag_pod_worker *w, struct ctr *c, const char *id, const char *why);
void pw_adopt_pending(struct ag_pod_worker *w, struct ctr *c, const char *id);
bool pw_start_hook(struct ag_pod_worker *w, struct ctr *c, const struct k8s_handler *h, int kind,
                   int64_t http_timeout_ms);
void pw_start_probers(struct ag_pod_worker *w, struct ctr *c);
void pw_stop_probers(struct ctr *c);
void pw_stop_watch(struct ctr *c);
int pw_teardown(struct ag_pod_worker *w); /* 1: running off the loop, pw_finish again at its end */
void pw_teardown_detach(struct ag_pod_worker *w);
/* fn with each container id the teardown in flight removes */
void pw_teardown_claimed(const struct ag_pod_worker *w, void (*fn)(const char *id, void *data),
                         void *data);
bool pw_sidecar_must_wait(struct ag_pod_worker *w, struct ctr *c);
int pw_termination_log_path(const struct ag_pod_worker *w, const struct ctr *c, const char *id,
                            char *buf, size_t size);
void pw_watch_exit(struct ag_pod_worker *w, struct ctr *c);
/* worker_volumes.c */
int pw_volumes_start(struct ag_pod_worker *w, struct cb_error *err);
bool pw_volumes_ready(struct ag_pod_worker *w);
void pw_volumes_stop(struct ag_pod_worker *w);
int pw_env_objects(struct ag_pod_worker *w, const struct ctr *c, struct cb_arena *a,
                   struct ag_env_context *ctx, struct cb_error *err);
int pw_volume_source(struct ag_pod_worker *w, const struct k8s_volume *v, struct cb_arena *a,
                     struct ag_volume_source *ret, struct cb_error *err);
