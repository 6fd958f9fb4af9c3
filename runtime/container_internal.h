/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Declarations shared by the container runtime's files only. */

#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#include <cjson/cJSON.h>

#include "lib/error.h"
#include "runtime/container.h"
#include "runtime/sync.h"

struct cb_arena;

/* ---- the attach socket (attach.c, monitor.c) ------------------------------ */

#define RT_ATTACH_SOCKET "attach" /* in the container's state dir */
/* The address of the attach socket in the directory open as dirfd
 * ("/proc/self/fd/N/attach"). */
int rt_attach_sockaddr(int dirfd, struct sockaddr_un *ret, socklen_t *ret_len);

/* ---- the configuration as JSON (container.c) ----------------------------- */

int rt_config_to_json(const struct rt_container_config *c, char **ret_json, struct cb_error *err);
/* Strings and arrays live in arena. */
int rt_config_from_json(struct cb_arena *arena, const char *json, struct rt_container_config *ret,
                        struct cb_error *err);

/* <root_dir>/containers/<id> */
int rt_container_dir(const char *root_dir, const char *id, char *buf, size_t size,
                     struct cb_error *err);
/* Field 22 of /proc/<pid>/stat. */
int rt_proc_start_time(pid_t pid, uint64_t *ret, struct cb_error *err);
/* pid is the process that started at start_time and neither a zombie nor
 * exiting: a killed process whose parent has not reaped it yet, or a PID
 * namespace init killing its namespace, is not alive. */
bool rt_proc_alive(pid_t pid, uint64_t start_time);
int64_t rt_now_ns(void);
/* RFC 3339 with nanoseconds, UTC: "2024-01-02T03:04:05.123456789Z". */
void rt_format_time(int64_t ns, char *buf, size_t size);

/* state.json / exit.json of a container dir */
int rt_state_write(const char *dir, const struct rt_container_state *s, struct cb_error *err);
int rt_exit_write(const char *dir, const struct rt_container_state *s, struct cb_error *err);

/* ---- seccomp (seccomp.c) ------------------------------------------------- */

/* The compiled filter for config as a sealed memfd (a new fd the caller
 * closes), or -1 in *ret_fd when no filter applies (unconfined,
 * privileged). Compiled once per (profile, relevant capabilities) and
 * cached for the life of the process. Thread-safe. */
int rt_seccomp_fd(const struct rt_container_config *c, uint64_t caps, int *ret_fd,
                  struct cb_error *err);
/* Reads the BPF program of fd into memory (before fork). */
int rt_seccomp_read(int fd, void **ret_prog, size_t *ret_len, struct cb_error *err);
/* Drops the in-memory filter cache (tests: the next rt_seccomp_fd goes to
 * the disk cache under <root_dir>/cache/seccomp, or compiles). */
void rt_seccomp_cache_forget(void);
/* Installs a program read by rt_seccomp_read (the child, last step). */
int rt_seccomp_load(const void *prog, size_t len, struct cb_error *err);

/* ---- capabilities, child side (caps.c) ----------------------------------- */

/* Highest capability number the kernel knows. */
int rt_cap_last(void);
/* Drops every capability not in caps from the bounding set. */
int rt_caps_drop_bounding(uint64_t caps, struct cb_error *err);
/* After setresuid with KEEPCAPS: effective = permitted = caps, inheritable
 * and ambient empty. */
int rt_caps_set(uint64_t caps, struct cb_error *err);

/* ---- mounts, child side (mounts.c) ---------------------------------------- */

/* From mount propagation to pivot_root; the process must be in its new
 * mount namespace. state_dir holds rootfs/, upper/ and work/. proc_src:
 * NULL leaves /proc to rt_mounts_finish (a process inside the container's
 * new PID namespace must mount it), "" mounts a procfs of the caller's own
 * PID namespace, a path binds that procfs (the pod's, runtime/pause.c).
 * *ret_null_fd: the runtime's /dev/null, checked, for the masks (-1 when
 * privileged); the caller closes it. */
int rt_mounts_setup(const struct rt_container_config *c, const char *state_dir,
                    const char *proc_src, int *ret_null_fd, struct cb_error *err);
/* The fallback when sysfs cannot be mounted (a network namespace the
 * runtime does not own): the host's /sys bound on the rootfs's /sys,
 * recursively, every submount read-only (not for privileged). */
int rt_mounts_bind_host_sys(int rootfd, bool privileged, struct cb_error *err);
/* After rt_mounts_setup, in the container's root: /proc when mount_proc,
 * then the masked and read-only paths and the read-only "/". */
int rt_mounts_finish(const struct rt_container_config *c, bool mount_proc, int null_fd,
                     struct cb_error *err);

/* ---- the container's init (init.c) --------------------------------------- */

struct rt_init_args {
        const struct rt_container_config *config;
        const char *state_dir;
        uint64_t caps;
        const void *bpf; /* NULL: no seccomp */
        size_t bpf_len;
        int sync_fd;
        int stdin_fd, stdout_fd, stderr_fd; /* with config->tty: all /dev/null */
        bool join_cgroup;                   /* C0 joins config->cg_loc itself after sync 1 (v1) */
};

/* C0: waits for sync 1, unshares the PID namespace, forks C and reports its
 * pid; C runs the setup and execs. Never returns. */
__attribute__((noreturn)) void rt_init_run(const struct rt_init_args *a);

/* Shared by the container init and exec (runtime/init.c): supplementary
 * groups, then gid and uid with the permitted capabilities kept (capset
 * follows); every signal disposition back to SIG_DFL and an empty mask. */
int rt_set_user(const struct rt_container_config *c, struct cb_error *err);
/* The PATH for a container whose env has none (the OCI/Docker default). */
#define RT_DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
/* argv[0] as execvpe would find it, through the container's PATH (runtime/
 * init.c; used by the container init and by exec). 0, or ENOENT/EACCES. */
int rt_resolve_exec(const struct rt_container_config *c, char *buf, size_t size);
void rt_reset_signals(void);

/* runtime/container.c: a memfd (MFD_CLOEXEC) holding data, and
 * a close-on-exec duplicate of fd numbered 10 or above. */
int rt_memfd_with(const char *name, const char *data, struct cb_error *err);
/* A cgroup location (cgroups/cgroup.h: cg_locate) as the JSON object the
 * monitor's config carries, and back (missing fields stay empty): how a
 * runtime mode gets it from the agent (the monitor, the pause process). */
cJSON *rt_cg_location_to_json(const struct cg_location *l);
void rt_cg_location_from_json(const cJSON *o, struct cg_location *l);
int rt_high_fd(int fd, struct cb_error *err);
/* A sealed memfd copy of the binary exe, made once and cached (do not close
 * it): what the hidden modes are executed from (runtime/container.c). */
int rt_exe_clone(const char *exe, struct cb_error *err);
/* The settings every helper process is spawned with: stdin, stdout and
 * stderr on /dev/null, every signal default and unblocked, plus flags
 * (POSIX_SPAWN_*). The caller adds its own fds and destroys both. */
void rt_spawn_init(posix_spawn_file_actions_t *fa, posix_spawnattr_t *attr, short flags);
/* posix_spawn of the cubelet binary in one of its hidden modes: a new
 * session, every signal default and unblocked, stdin/stdout/stderr on
 * /dev/null, fds[i] (callers pass fds numbered 10 or above, see
 * rt_high_fd; -1 = skip) as fd 3 + i, everything else closed, PATH only. */
int rt_spawn_self(const char *exe, char *const argv[], const int *fds, size_t n_fds, pid_t *ret,
                  struct cb_error *err);
