/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Container processes (CRI CreateContainer/StartContainer/StopContainer/
 * ContainerStatus/RemoveContainer in spirit), without Kubernetes types: the
 * agent resolves command/args, capabilities, volumes and limits and fills
 * struct rt_container_config.
 *
 * Process model (docs/child-setup-order.md):
 *
 *   agent --posix_spawn--> cubelet __monitor (M0) --fork--> monitor (M1)
 *   M0 exits at once, so the monitor is not the agent's child (double
 *   fork) and lives in its own session: the agent can die and restart.
 *   M1 (a child subreaper) --fork--> C0 --unshare(PID), fork--> C (pid 1)
 *   C does the namespace/mount/security setup and execs the container's
 *   argv; M1 pumps its stdout/stderr into the CRI log file and, when C
 *   exits, writes exit.json and exits itself.
 *
 * Layout: <root_dir>/containers/<id>/
 *     state.json  id, status, monitor pid + start time, container pid +
 *                 start time (/proc/<pid>/stat field 22), cgroup, log path
 *     exit.json   exit code, signal, finishedAt, oomKilled, reason, message
 *     attach      the monitor's attach socket, with stdin_open only
 *                 (runtime/attach.h)
 *     rootfs/ upper/ work/   overlay mount point and its writable layer
 *
 * The overlay and every other container mount exist only in the
 * container's own mount namespace, so nothing is left mounted on the host
 * when the container's processes are gone.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cgroups/plan.h"
#include "lib/error.h"
#include "runtime/sandbox.h"

enum rt_seccomp_kind {
        RT_SECCOMP_RUNTIME_DEFAULT, /* the built-in allowlist (runtime/seccomp.c) */
        RT_SECCOMP_UNCONFINED,      /* no filter */
        RT_SECCOMP_LOCALHOST,       /* <root_dir>/seccomp/<seccomp_profile>, OCI JSON */
};

enum rt_mount_type {
        RT_MOUNT_BIND,  /* source is a host file or directory */
        RT_MOUNT_TMPFS, /* source ignored; options e.g. "size=64m" */
};

struct rt_mount {
        enum rt_mount_type type;
        const char *source;      /* absolute host path (bind) */
        const char *destination; /* absolute path in the container */
        bool read_only;
        const char *options; /* tmpfs mount data (NULL: mode=1777) */
};

struct rt_container_config {
        const char *id;           /* unique on the node, [A-Za-z0-9_.-], < RT_ID_MAX */
        const char *name;         /* for messages */
        const char *root_dir;     /* cubelet --root-dir */
        const char *monitor_path; /* the cubelet binary (the agent's /proc/self/exe) */
        /* The pod sandbox whose net/IPC/UTS namespaces the container joins:
         * an empty ns path means the host's namespace (hostNetwork, hostIPC)
         * and host_pid keeps the host PID namespace. NULL means no sandbox:
         * the container gets new net, IPC and UTS namespaces of its own
         * (hostname below) and its own PID namespace. */
        const struct rt_sandbox *sandbox;
        const char *hostname; /* only used when sandbox is NULL */
        /* Root filesystem: lower_dirs (bottom first) become an overlay with a
         * per-container upper dir; or rootfs_dir, a plain directory used as
         * it is (tests). Exactly one of them. */
        const char *const *lower_dirs;
        size_t n_lower;
        const char *rootfs_dir;
        const char *const *argv; /* NULL-terminated, already resolved; argv[0] via PATH */
        const char *const *env;  /* NULL-terminated "KEY=value", may be NULL */
        const char *cwd;         /* NULL: "/" */
        uint32_t uid, gid;
        const uint32_t *groups; /* supplementary groups */
        size_t n_groups;
        /* The effective capability set by name ("CAP_CHOWN" or "CHOWN", any
         * case); the caller computes default +/- add/drop (rt_caps_default).
         * privileged: every capability, no seccomp filter. */
        const char *const *caps;
        size_t n_caps;
        bool privileged;
        bool no_new_privs;
        enum rt_seccomp_kind seccomp;
        const char *seccomp_profile; /* LOCALHOST: relative to <root_dir>/seccomp */
        bool read_only_rootfs;
        const struct rt_mount *mounts;
        size_t n_mounts;
        int oom_score_adj;
        const char *cgroup_path; /* created with cg_create(cgroup_path, &limits) */
        struct cg_limits limits;
        const char *log_path; /* CRI log file (created, appended to) */
        int stop_signal;      /* 0: SIGTERM; kept in state.json for the caller */
        /* stdin_open: the monitor keeps the write end of a pipe that is the
         * container's stdin (EOF only when the monitor closes it) and serves
         * the attach socket (runtime/attach.h). tty: the container's stdin,
         * stdout and stderr are a terminal allocated in its own devpts; its
         * output is logged as stdout. stdin_once: the first attach session
         * ending closes stdin for good. */
        bool stdin_open;
        bool stdin_once;
        bool tty;
        /* Set by rt_container_create_start, never by callers: the cgroup it
         * made (the monitor attaches and reads OOM counts there without
         * initialising libcgroup) and its OOM kill count before the start. */
        const struct cg_location *cg_loc;
        uint64_t oom_before;
};

enum rt_container_status {
        RT_CONTAINER_UNKNOWN,
        RT_CONTAINER_CREATED,
        RT_CONTAINER_RUNNING,
        RT_CONTAINER_EXITED,
};

struct rt_container_state {
        char id[RT_ID_MAX];
        enum rt_container_status status;
        pid_t pid;           /* host pid of the container's first process, 0 if none */
        uint64_t start_time; /* its /proc/<pid>/stat starttime (clock ticks after boot) */
        pid_t monitor_pid;
        uint64_t monitor_start_time;
        int64_t created_at, started_at, finished_at; /* ns since the epoch, 0: not yet */
        int exit_code;     /* exited: the status, 128+signal for signal deaths */
        int signal;        /* exited: the killing signal, 0 if it exited */
        bool oom_killed;   /* exited: the cgroup's OOM kill counter went up */
        bool start_failed; /* exited: the exec or the setup failed (exit code 128) */
        int stop_signal;
        bool stdin_open, stdin_once, tty; /* as configured (runtime/attach.h) */
        char reason[32];   /* exited: "Completed", "Error", "OOMKilled", "StartError" */
        char message[512]; /* exited: the start error, "" otherwise */
        char cgroup_path[RT_PATH_MAX];
        char log_path[RT_PATH_MAX];
};

/* Validates config, creates the state dir, spawns the monitor and waits
 * until the container's process runs (exec succeeded: *ret_state is
 * RUNNING) or the start failed: then it returns -1 with the init's error in
 * err ("exec \"nosuch\": No such file or directory", err->code ENOENT) and
 * exit.json records StartError / 128. Once the state dir exists (every
 * failure after validation and the id check), the container must be
 * removed with rt_container_remove. Safe to call from a multi-threaded
 * agent: nothing but posix_spawn runs between fork and exec. */
int rt_container_create_start(const struct rt_container_config *config,
                              struct rt_container_state *ret_state, struct cb_error *err);

/* The state from state.json and exit.json, checked against the live
 * processes (pid + start time). A container whose monitor died without
 * writing exit.json is UNKNOWN. A missing container fails with ENOENT. */
int rt_container_state(const char *root_dir, const char *id, struct rt_container_state *ret,
                       struct cb_error *err);

/* An fd (O_CLOEXEC) for epoll that becomes readable when the container has
 * exited AND its exit record is written: the pidfd of the container's
 * monitor (opened with pidfd_open and checked against its start time),
 * which exits right after writing exit.json. Watching the container's own
 * pid would race with that write; inotify would need a watch per dir.
 * Works for non-children and after an agent restart. When the monitor is
 * already gone the fd is an eventfd that is readable at once. */
int rt_container_exit_fd(const char *root_dir, const char *id, int *ret_fd, struct cb_error *err);

/* Sends sig to the container's first process through a pidfd opened after
 * checking the start time (never a bare pid). A container that is not
 * running fails with err->code ESRCH. */
int rt_container_signal(const char *root_dir, const char *id, int sig, struct cb_error *err);

/* SIGKILLs every process in the container's cgroup. Returns the count. */
int rt_container_kill_all(const char *root_dir, const char *id, struct cb_error *err);

/* A container whose start is abandoned: SIGKILLs its monitor (pidfd,
 * checked start time) and then every process of its cgroup, so nothing of
 * it goes on untracked. */
int rt_container_abort(const char *root_dir, const char *id, struct cb_error *err);

/* Sends sig (0: the configured stop signal), waits up to grace_seconds on
 * the exit fd with poll(), then kill_all and waits for the exit record.
 * For CLIs and tests; the agent uses its own timerfd. */
int rt_container_stop(const char *root_dir, const char *id, int sig, int grace_seconds,
                      struct cb_error *err);

/* Removes a stopped container: kills what is left in its cgroup (processes
 * of a container whose main process is gone), detaches any mount left
 * under its dir, destroys the cgroup and removes the state dir. A running
 * container fails with EBUSY. Idempotent: a missing container is success. */
int rt_container_remove(const char *root_dir, const char *id, struct cb_error *err);

/* The ids of every container under root_dir, sorted (for re-adoption after
 * an agent restart). Free with rt_container_list_free. */
int rt_container_list(const char *root_dir, char ***ret_ids, size_t *ret_n, struct cb_error *err);
void rt_container_list_free(char **ids, size_t n);
/* The containers of rt_container_list that none of claimed[0..n_claimed)
 * names and whose directory is unchanged since before before_ms (ms since
 * the epoch): what a garbage collection may take (a container being made
 * now is not claimed yet, and its directory is newer). Free with
 * rt_container_list_free. */
int rt_container_list_unclaimed(const char *root_dir, char *const *claimed, size_t n_claimed,
                                int64_t before_ms, char ***ret_ids, size_t *ret_n,
                                struct cb_error *err);

/* ---- capabilities (runtime/caps.c) ------------------------------------ */

/* The containerd default set: NULL-terminated names (static storage). */
const char *const *rt_caps_default(size_t *ret_n);
/* Names to a bit mask (bit n = capability n). Unknown names fail. "ALL"
 * sets every capability the kernel knows. */
int rt_caps_parse(const char *const *names, size_t n, uint64_t *ret_mask, struct cb_error *err);

/* ---- the monitor (runtime/monitor.c) ------------------------------------ */

/* The hidden `cubelet __monitor CONFIG_FD SECCOMP_FD|none SYNC_FD` entry point
 * (argv[0] is "__monitor"). Returns the process exit status. */
int rt_monitor_main(int argc, char **argv);

/* ---- CRI log files (runtime/crilog.c) ----------------------------------- */

#define RT_CRILOG_MAX_LINE 16384 /* longer lines are split into P chunks */

enum rt_stream { RT_STREAM_STDOUT, RT_STREAM_STDERR };

struct rt_crilog_writer {
        int fd;
        char buf[2][RT_CRILOG_MAX_LINE]; /* the partial line per stream */
        size_t len[2];
};

/* Initialises w to append to fd (not owned). */
void rt_crilog_init(struct rt_crilog_writer *w, int fd);
/* Adds data read from a stream: every complete line is written as
 * "<RFC3339Nano UTC> <stdout|stderr> F <line>\n"; a line reaching
 * RT_CRILOG_MAX_LINE bytes is written as P chunks first. */
int rt_crilog_write(struct rt_crilog_writer *w, enum rt_stream s, const char *data, size_t len,
                    struct cb_error *err);
/* Writes out a pending partial line of s as F (the stream ended). */
int rt_crilog_flush(struct rt_crilog_writer *w, enum rt_stream s, struct cb_error *err);
/* Formats one record into buf; returns its length (or the length needed). */
size_t rt_crilog_format(char *buf, size_t size, int64_t ts_ns, enum rt_stream s, bool partial,
                        const char *line, size_t len);

struct rt_crilog_entry {
        int64_t ts_ns;
        enum rt_stream stream;
        bool partial;
        const char *content; /* points into the parsed line, not NUL-terminated */
        size_t len;
};

/* Parses one record (without its '\n'). */
int rt_crilog_parse(const char *line, size_t len, struct rt_crilog_entry *ret,
                    struct cb_error *err);

/* Reads a CRI log file and calls fn for every complete line, P chunks of a
 * stream joined with its following F record (what kubectl logs shows). */
typedef int (*rt_crilog_line_fn)(enum rt_stream s, int64_t ts_ns, const char *line, size_t len,
                                 void *ud);
int rt_crilog_read(const char *path, rt_crilog_line_fn fn, void *ud, struct cb_error *err);

/* CRI ReopenContainerLog: asks the monitor of the running container id
 * (SIGHUP through a checked pidfd) to open its log file at its path again,
 * after the caller renamed it away. Returns once the new file exists;
 * ETIMEDOUT after timeout_ms, ESRCH when the container or its monitor is
 * gone (the old file is then still the one written). Blocks: call it off the
 * event loop. */
int rt_container_reopen_log(const char *root_dir, const char *id, int timeout_ms,
                            struct cb_error *err);

/* ---- exec in a running container (runtime/exec.c) ----------------------- */

/* Saves the container's config as <state dir>/config.json, which
 * rt_container_exec_start reads (call it once the state dir exists, e.g.
 * right after rt_container_create_start created it). */
int rt_container_save_config(const struct rt_container_config *c, struct cb_error *err);

/* Runs argv (argv[0] through the container's PATH) in the RUNNING container
 * id, confined exactly like the container: its mount/PID/net/IPC/UTS
 * namespaces, cgroup, uid/gid/groups, capabilities, no_new_privs, seccomp
 * filter, cwd and env, in a fresh process (`monitor_path __exec`, pattern
 * 14) with every other fd closed and signals reset. *ret_pidfd (for epoll:
 * readable when the command has ended) and *ret_out_fd (O_NONBLOCK read end
 * of a pipe with the command's stdout+stderr) are O_CLOEXEC and the
 * caller's. Exit code: the command's, 128+signal, 126 cannot execute (or a
 * setup step failed), 127 not found; the reason is in the output. A
 * container that is not running fails with err->code ESRCH. */
int rt_container_exec_start(const char *root_dir, const char *id, const char *monitor_path,
                            const char *const *argv, int *ret_pidfd, int *ret_out_fd,
                            struct cb_error *err);
/* The same with the caller's fds as the command's stdin, stdout and stderr
 * (-1: /dev/null; the fds are dup'ed, not taken). tty: stdin is a terminal
 * (a pty slave) and becomes the command's controlling terminal. The
 * helper's own errors (exec failures, setup steps) go to stderr. */
struct rt_exec_stdio {
        int stdin_fd, stdout_fd, stderr_fd;
        bool tty;
};
int rt_container_exec_start_stdio(const char *root_dir, const char *id, const char *monitor_path,
                                  const char *const *argv, const struct rt_exec_stdio *io,
                                  int *ret_pidfd, struct cb_error *err);
/* Stops a running exec: the command's whole process group is SIGKILLed. */
int rt_container_exec_kill(int pidfd, struct cb_error *err);
/* Reaps the exec (waitid P_PIDFD): 1 with *ret_exit_code when it has
 * ended, 0 when it still runs (block false), -1 on error. */
int rt_container_exec_reap(int pidfd, bool block, int *ret_exit_code, struct cb_error *err);
/* Reads what out_fd has now into buf[*len..cap), dropping the excess;
 * returns the new *len. */
size_t rt_container_exec_read(int out_fd, char *buf, size_t cap, size_t *len);
/* For CLIs and tests: waits with poll() up to timeout_ms (-1: forever) and
 * reaps; out gets the output (NUL-terminated, truncated to out_size - 1).
 * On timeout the command is killed and -1 returned with ETIMEDOUT. */
int rt_container_exec_wait(int pidfd, int out_fd, int timeout_ms, int *ret_exit_code, char *out,
                           size_t out_size, struct cb_error *err);
/* The hidden `cubelet __exec CONFIG_FD SECCOMP_FD|none PID STARTTIME`
 * entry point (argv[0] is "__exec"), with "tty" as a sixth argument for a
 * terminal. */
int rt_exec_main(int argc, char **argv);
/* ---- end of exec -------------------------------------------------------- */
