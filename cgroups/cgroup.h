/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Creating, applying and destroying pod and container cgroups (the
 * "cgroupfs" driver), on cgroup v1 (legacy and hybrid hosts) and v2
 * (unified), through libcgroup. What a cgroup gets written comes from
 * cg_render_files() (plan.h): one source of truth for names and values.
 *
 * Paths are relative to the hierarchy roots, e.g. "kubepods/burstable/
 * pod<uid>" (a leading '/' is accepted and ignored); on v1 the same path
 * exists once in each controller hierarchy (cpu, cpuacct, memory, pids).
 *
 * Delegation rules (cgroup v2 "no internal processes", and what keeps the
 * agent safe on both versions):
 *   - processes live only in leaves: a pod cgroup holds no process itself,
 *     its containers' processes live in container leaf cgroups under it;
 *   - cg_create() enables cpu, memory and pids in cgroup.subtree_control of
 *     every ancestor of the new cgroup (root included when missing there),
 *     which the kernel refuses (EBUSY) for an ancestor holding processes;
 *   - the agent's own pid is never attached to a cgroup this library
 *     creates: cg_attach() refuses getpid(), and cg_destroy() refuses a
 *     cgroup with processes in it (EBUSY naming them) instead of migrating
 *     them, so the caller kills first (cg_kill_all) and then destroys.
 * In hybrid mode the controllers are on v1; the empty cgroup2 "unified"
 * hierarchy is not used.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cgroups/plan.h"
#include "lib/error.h"

enum cg_mode {
        CG_MODE_LEGACY,  /* v1 hierarchies only */
        CG_MODE_HYBRID,  /* v1 controllers + an empty cgroup2 at <mount>/unified */
        CG_MODE_UNIFIED, /* cgroup2 mounted at <mount> */
};

/* "legacy", "hybrid", "unified". */
const char *cg_mode_name(enum cg_mode mode);
/* CG_V2 for unified, CG_V1 for legacy and hybrid (controllers are on v1). */
enum cg_version cg_mode_version(enum cg_mode mode);

/* The mode of /sys/fs/cgroup, detected with statfs as crun does. */
int cg_detect_mode(enum cg_mode *ret, struct cb_error *err);
/* The same for another mount point (tests). */
int cg_detect_mode_at(const char *mount, enum cg_mode *ret, struct cb_error *err);

/* Initialises libcgroup (cgroup_init) and detects the mode, once per
 * process; later calls return the first result. Every call below calls it. */
int cg_init(struct cb_error *err);
/* The mode found by cg_init (call cg_init first). */
enum cg_mode cg_current_mode(void);

/* Creates path (and its missing parents) in every controller cgroups need
 * (v1: cpu, cpuacct, memory, pids; v2: cpu, memory, pids enabled in the
 * ancestors' subtree_control) and writes the limits. Idempotent: an
 * existing cgroup gets the limits written again. limits may be NULL. */
int cg_create(const char *path, const struct cg_limits *limits, struct cb_error *err);
/* Writes the limits of an existing cgroup. */
int cg_update(const char *path, const struct cg_limits *limits, struct cb_error *err);
/* Moves process pid (all its threads) into path in every hierarchy. */
int cg_attach(const char *path, pid_t pid, struct cb_error *err);
/* The device policy of an unprivileged container (cgroups/devices.c):
 * mknod anything, read/write only the standard nodes. Call on a cgroup
 * that has no process yet. */
int cg_restrict_devices(const char *path, struct cb_error *err);

/* Where a cgroup lives on disk, resolved by a process that has libcgroup
 * initialised, for one that must not initialise it: the container monitor
 * (libcgroup's static tables, dirtied by cgroup_init, were a third of a
 * monitor's private memory). */
struct cg_oom;
#define CG_LOC_MAX_DIRS 8
#define CG_LOC_DIR_MAX  512
struct cg_location {
        int version;                                /* 1 or 2 */
        size_t n_dirs;                              /* one per hierarchy */
        char dirs[CG_LOC_MAX_DIRS][CG_LOC_DIR_MAX]; /* absolute directories */
        char memory_dir[CG_LOC_DIR_MAX];            /* the one with memory.* */
};
int cg_locate(const char *path, struct cg_location *ret, struct cb_error *err);
/* No libcgroup: writes pid to cgroup.procs in every directory (a missing
 * devices directory, from an older agent, is skipped). */
int cg_attach_at(const struct cg_location *l, pid_t pid, struct cb_error *err);
/* No libcgroup: the calling process into the cgroup of l, by itself. On
 * v1 it writes "0" (itself) to each hierarchy's `tasks`: a single thread
 * that moves itself takes no cgroup_threadgroup_rwsem, so it waits for no
 * RCU grace period (cg_attach_at's cgroup.procs write does: 19 ms of a
 * lone container start here, bench.sh figure 8). So the caller must be
 * single-threaded: `tasks` moves only the thread that writes. On v2 (no
 * `tasks` in a domain cgroup) it is cg_attach_at of its own pid. */
int cg_join_self_at(const struct cg_location *l, struct cb_error *err);
/* No libcgroup: fork() for a process that is to live in the cgroup of l.
 * On cgroup v2 the child is born in it (clone3 with CLONE_INTO_CGROUP,
 * Linux 5.7), *placed = true: no cgroup.procs write, so no wait for the
 * RCU grace period every migration costs (percpu_down_write of the
 * kernel's cgroup_threadgroup_rwsem: 6-16 ms here, after a quiet spell).
 * Otherwise (v1 and hybrid, an older kernel, a cgroup clone3 refuses)
 * a plain fork() in the caller's cgroup, *placed = false: the child joins
 * by itself (cg_join_self_at), or the caller attaches it (cg_attach_at),
 * before it runs anything of its own.
 * Returns as fork() does (0 in the child; -1 with err). Call it from a
 * single-threaded process (the monitor): the raw clone3 child keeps
 * glibc's cached thread id of the parent, which nothing of glibc >= 2.34
 * that a single-threaded child calls (fork, raise, stdio) depends on. */
pid_t cg_fork_into(const struct cg_location *l, bool *placed, struct cb_error *err);
/* No libcgroup: cg_read_oom from the memory directory. */
int cg_read_oom_at(const struct cg_location *l, struct cg_oom *ret, struct cb_error *err);
/* Removes path and every cgroup below it, children first, from every
 * hierarchy. A path that does not exist is success. Fails with EBUSY,
 * naming the cgroup and the pids, while any process is left in the
 * subtree. */
int cg_destroy(const char *path, struct cb_error *err);
/* Sends sig to every process in path and below. On v2 with SIGKILL,
 * cgroup.kill is used when the kernel has it. Returns the number of
 * processes signalled (cgroup.kill: those present before the write). */
int cg_kill_all(const char *path, int sig, struct cb_error *err);

/* True when path exists (in the memory hierarchy, which both versions have). */
int cg_exists(const char *path, bool *ret, struct cb_error *err);
/* The pids in path and below (union over the hierarchies on v1), sorted,
 * without duplicates; malloc'd array (free() it), *ret_n entries. */
int cg_list_pids(const char *path, pid_t **ret_pids, size_t *ret_n, struct cb_error *err);
/* The names of the child cgroups of parent (union over the hierarchies on
 * v1), sorted; for cleaning up pod cgroups left by a crash. Free with
 * cg_free_names(). */
int cg_list_children(const char *parent, char ***ret_names, size_t *ret_n, struct cb_error *err);
void cg_free_names(char **names, size_t n);

/* The directory of path in the hierarchy of controller ("memory", "cpu",
 * ...; on v2 every controller has the one unified directory). Returns the
 * length, or -1 when buf is too small or the controller is not mounted. */
int cg_dir(const char *path, const char *controller, char *buf, size_t size, struct cb_error *err);

/* The root directory of controller's hierarchy (the mount point; on v2
 * the unified mount). Returns the length, or -1. */
int cg_root_dir(const char *controller, char *buf, size_t size, struct cb_error *err);

struct cg_oom {
        /* Processes the OOM killer killed in this cgroup: v1 memory.oom_control
         * "oom_kill" (this cgroup only), v2 memory.events "oom_kill" (this
         * cgroup and below). May be non-zero while oom is 0 (conmon). */
        uint64_t oom_kill;
        /* v2 memory.events "oom": the limit was hit and reclaim failed;
         * v1 has no such counter (0). */
        uint64_t oom;
        /* Times usage hit the limit: v1 memory.failcnt, v2 memory.events "max". */
        uint64_t limit_hits;
        /* v1 memory.oom_control "under_oom" (v2: false). */
        bool under_oom;
};

struct cg_stats {
        uint64_t cpu_usage_ns;       /* v1 cpuacct.usage; v2 cpu.stat usage_usec * 1000 */
        uint64_t memory_usage;       /* v1 memory.usage_in_bytes; v2 memory.current */
        uint64_t memory_working_set; /* usage minus inactive file pages, at least 0 */
        uint64_t pids_current;       /* pids.current */
};

int cg_read_oom(const char *path, struct cg_oom *ret, struct cb_error *err);
int cg_read_stats(const char *path, struct cg_stats *ret, struct cb_error *err);

/* The node's memory as the root cgroup shows it (cgroups/node.c): v1 root
 * memory.usage_in_bytes minus total_inactive_file; v2 MemTotal - MemFree of
 * /proc/meminfo minus the root's inactive_file. */
struct cg_node_memory {
        uint64_t usage;
        uint64_t working_set;
};

int cg_read_node_memory(struct cg_node_memory *ret, struct cb_error *err);

/*
 * Pure parsers (cgroups/parse.c), no I/O.
 */

/* The value of key in a flat-keyed file ("key value" lines: memory.events,
 * memory.stat, cpu.stat, memory.oom_control). Returns 1 when found, 0 when
 * the key is absent, -1 on a malformed value. */
int cg_parse_keyed(const char *buf, const char *key, uint64_t *ret, struct cb_error *err);
/* A single-value file ("123\n"); "max" gives UINT64_MAX. */
int cg_parse_u64(const char *buf, uint64_t *ret, struct cb_error *err);
/* The cgroup path in /proc/<pid>/cgroup: controller NULL picks the v2
 * "0::" line (never just the first line), else the v1 line whose
 * controller list names controller (e.g. "cpu" in "4:cpu,cpuacct:/x",
 * "name=systemd"). Returns the length written to buf, -1 when missing. */
int cg_parse_proc_cgroup(const char *buf, const char *controller, char *path, size_t size,
                         struct cb_error *err);
/* A /proc/meminfo line ("MemTotal:  24683620 kB") in bytes. Returns 1 when
 * found, 0 when absent, -1 when malformed. */
int cg_parse_meminfo(const char *buf, const char *key, uint64_t *ret, struct cb_error *err);
/* Appends the pids of a cgroup.procs file to *pids (malloc'd, *n entries). */
int cg_parse_pids(const char *buf, pid_t **pids, size_t *n, struct cb_error *err);
/* memory.oom_control (v1) or memory.events (v2) into ret (limit_hits is
 * left alone: it comes from memory.failcnt on v1). */
int cg_parse_oom(const char *buf, enum cg_version v, struct cg_oom *ret, struct cb_error *err);
