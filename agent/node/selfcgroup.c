/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Moving the agent into a leaf of its delegated cgroup (selfcgroup.h).
 *
 * The move writes cgroup.procs directly instead of going through
 * cgroups/cgroup.h:
 *   - cg_attach() refuses the agent's own pid by design: the cgroups
 *     library never puts the agent into a cgroup it manages (pod and
 *     container cgroups, which it kills and destroys). The leaf here is the
 *     opposite: the agent's own, never managed by the cgroups library;
 *   - cg_create() enables cpu, memory and pids in every ancestor of the new
 *     cgroup, the agent's own cgroup included, and the kernel refuses that
 *     (EBUSY) while the agent still lives there: the leaf has to exist and
 *     the agent be in it before any controller is enabled. The leaf itself
 *     needs no controller (its limits are the service's), so a plain
 *     mkdir is all it takes; cg_create() of the pods' cgroups later enables
 *     the controllers in the then empty own cgroup.
 */
#include "agent/node/selfcgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroups/cgroup.h"
#include "lib/cleanup.h"
#include "lib/file.h"

#define PROC_CGROUP_MAX  (64 * 1024)
#define CGROUP_PROCS_MAX (1024 * 1024)
#define MOVE_ROUNDS      8
#define LEAF_NAME_MAX    64
#define CGROUP_DIR_MAX   4096

static int check_leaf_name(const char *name, struct cb_error *err)
{
        size_t len = name != NULL ? strlen(name) : 0;
        if (len == 0)
                return cb_error_set(err, EINVAL, "the agent's leaf cgroup name is empty");
        if (len > LEAF_NAME_MAX)
                return cb_error_set(err, EINVAL,
                                    "the agent's leaf cgroup name \"%.16s...\" is longer than "
                                    "%d characters",
                                    name, LEAF_NAME_MAX);
        for (size_t i = 0; i < len; i++) {
                char c = name[i];
                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '_'))
                        return cb_error_set(err, EINVAL,
                                            "the agent's leaf cgroup name \"%s\" has '%c' at "
                                            "offset %zu; use letters, digits, '-' and '_' only "
                                            "(e.g. \"supervisor\")",
                                            name, c, i);
        }
        return 0;
}

int ag_selfcgroup_plan(const char *proc_cgroup, const char *leaf_name,
                       struct ag_selfcgroup_plan *ret, struct cb_error *err)
{
        if (check_leaf_name(leaf_name, err) < 0)
                return -1;
        char path[AG_SELFCGROUP_PATH_MAX];
        if (cg_parse_proc_cgroup(proc_cgroup, NULL, path, sizeof(path), err) < 0)
                return cb_error_prefix(err, "cannot find the agent's cgroup");
        if (path[0] != '/')
                return cb_error_set(err, EINVAL,
                                    "the agent's cgroup \"%s\" in /proc/self/cgroup is not an "
                                    "absolute path",
                                    path);
        /* Components: no "." or "..", no empty ones except a trailing '/'
         * of the root. "/../x" is what the kernel shows for a cgroup
         * outside the reader's cgroup namespace. */
        const char *rel = path + 1;
        size_t rlen = strlen(rel);
        if (rlen > 0 && rel[rlen - 1] == '/')
                return cb_error_set(err, EINVAL,
                                    "the agent's cgroup \"%s\" in /proc/self/cgroup ends in '/'",
                                    path);
        for (const char *p = rel; *p != '\0';) {
                size_t n = strcspn(p, "/");
                if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
                        return cb_error_set(err, EINVAL,
                                            "the agent's cgroup \"%s\" in /proc/self/cgroup has "
                                            "an empty, \".\" or \"..\" component (a cgroup "
                                            "outside the agent's cgroup namespace?); run the "
                                            "agent in its own cgroup namespace or none",
                                            path);
                p += n;
                if (*p == '/')
                        p++;
        }

        size_t llen = strlen(leaf_name);
        if (rlen == 0) {
                ret->where = AG_SELF_AT_ROOT;
                ret->parent[0] = '\0';
                memcpy(ret->leaf, leaf_name, llen + 1);
                return 0;
        }
        /* Already in <parent>/<leaf_name>, or in /<leaf_name>? */
        if (strcmp(rel, leaf_name) == 0) {
                ret->where = AG_SELF_IN_LEAF;
                ret->parent[0] = '\0';
                memcpy(ret->leaf, rel, rlen + 1);
                return 0;
        }
        if (rlen > llen && rel[rlen - llen - 1] == '/' &&
            strcmp(rel + rlen - llen, leaf_name) == 0) {
                ret->where = AG_SELF_IN_LEAF;
                memcpy(ret->parent, rel, rlen - llen - 1);
                ret->parent[rlen - llen - 1] = '\0';
                memcpy(ret->leaf, rel, rlen + 1);
                return 0;
        }
        if (rlen + 1 + llen + 1 > sizeof(ret->leaf))
                return cb_error_set(err, ENAMETOOLONG,
                                    "the agent's leaf cgroup \"%s/%s\" is longer than %zu bytes",
                                    path, leaf_name, sizeof(ret->leaf) - 1);
        ret->where = AG_SELF_MOVE;
        memcpy(ret->parent, rel, rlen + 1);
        snprintf(ret->leaf, sizeof(ret->leaf), "%s/%s", rel, leaf_name);
        return 0;
}

static int dir_of(char *buf, size_t size, const char *mount, const char *rel, struct cb_error *err)
{
        int n = rel[0] == '\0' ? snprintf(buf, size, "%s", mount)
                               : snprintf(buf, size, "%s/%s", mount, rel);
        if (n < 0 || (size_t)n >= size)
                return cb_error_set(err, ENAMETOOLONG, "cgroup directory %s/%s is too long", mount,
                                    rel);
        return 0;
}

/* Writes pid to <dir>/cgroup.procs (every thread of the process moves).
 * Returns 1 when the process no longer exists (ESRCH), 0 when moved. */
static int write_procs(const char *dir, pid_t pid, struct cb_error *err)
{
        char file[CGROUP_DIR_MAX + 16], value[16];
        snprintf(file, sizeof(file), "%s/cgroup.procs", dir);
        int len = snprintf(value, sizeof(value), "%d", (int)pid);
        _cleanup_close_ int fd = open(file, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return cb_error_set(err, errno, "cannot open %s", file);
        if (write(fd, value, (size_t)len) != len) {
                if (errno == ESRCH)
                        return 1;
                return cb_error_set(err, errno, "cannot move pid %d into %s", (int)pid, file);
        }
        return 0;
}

static int set_parent(const struct ag_selfcgroup_plan *plan, char *ret_parent, size_t size,
                      struct cb_error *err)
{
        if ((size_t)snprintf(ret_parent, size, "%s", plan->parent) >= size)
                return cb_error_set(err, ENAMETOOLONG,
                                    "the agent's cgroup \"%s\" does not fit in %zu bytes",
                                    plan->parent, size);
        return 0;
}

int ag_move_self_to_leaf_at(const char *mount, const char *leaf_name, char *ret_parent, size_t size,
                            struct cb_error *err)
{
        if (check_leaf_name(leaf_name, err) < 0)
                return -1;
        if (size == 0)
                return cb_error_set(err, EINVAL, "no room for the agent's cgroup path");
        enum cg_mode mode;
        if (cg_detect_mode_at(mount, &mode, err) < 0)
                return -1;
        if (mode != CG_MODE_UNIFIED) {
                /* v1 controllers: no delegation to honour, no
                 * no-internal-processes rule; kubepods at the roots. */
                ret_parent[0] = '\0';
                return 0;
        }

        _cleanup_free_ char *text = NULL;
        struct ag_selfcgroup_plan plan;
        if (cb_read_file("/proc/self/cgroup", PROC_CGROUP_MAX, &text, NULL, err) < 0 ||
            ag_selfcgroup_plan(text, leaf_name, &plan, err) < 0)
                return -1;
        if (plan.where == AG_SELF_IN_LEAF)
                return set_parent(&plan, ret_parent, size, err);

        char parent_dir[CGROUP_DIR_MAX], leaf_dir[CGROUP_DIR_MAX];
        if (dir_of(parent_dir, sizeof(parent_dir), mount, plan.parent, err) < 0 ||
            dir_of(leaf_dir, sizeof(leaf_dir), mount, plan.leaf, err) < 0)
                return -1;
        if (plan.where == AG_SELF_AT_ROOT) {
                /* Only non-root cgroups have cgroup.type: at the real root
                 * (which may hold processes and still enable controllers)
                 * nothing moves; at a cgroup namespace root (a container)
                 * the rule applies and the processes move. */
                char type[CGROUP_DIR_MAX + 16];
                snprintf(type, sizeof(type), "%s/cgroup.type", parent_dir);
                if (access(type, F_OK) < 0) {
                        if (errno != ENOENT)
                                return cb_error_set(err, errno, "cannot check %s", type);
                        return set_parent(&plan, ret_parent, size, err);
                }
        }

        if (mkdir(leaf_dir, 0755) < 0 && errno != EEXIST)
                return cb_error_set(err, errno,
                                    "cannot create the agent's leaf cgroup %s (is the service "
                                    "started with Delegate=yes?)",
                                    leaf_dir);
        /* The agent first, then whatever else systemd started in the
         * service cgroup (ExecStartPre leftovers, a process the old agent
         * forked before KillMode=process left it behind): the own cgroup
         * must end up empty. A process may fork while this runs, hence the
         * rounds. */
        if (write_procs(leaf_dir, getpid(), err) != 0)
                return cb_error_prefix(err, "cannot move the agent into its leaf cgroup");
        for (int round = 0;; round++) {
                _cleanup_free_ char *procs = NULL;
                _cleanup_free_ pid_t *pids = NULL;
                size_t n = 0;
                char file[CGROUP_DIR_MAX + 16];
                snprintf(file, sizeof(file), "%s/cgroup.procs", parent_dir);
                if (cb_read_file(file, CGROUP_PROCS_MAX, &procs, NULL, err) < 0 ||
                    cg_parse_pids(procs, &pids, &n, err) < 0)
                        return cb_error_prefix(err, "cannot list the processes in %s", parent_dir);
                if (n == 0)
                        break;
                if (round == MOVE_ROUNDS)
                        return cb_error_set(err, EBUSY,
                                            "%zu processes are still in %s after %d rounds of "
                                            "moving them to %s (pid %d first); stop what keeps "
                                            "forking there",
                                            n, parent_dir, MOVE_ROUNDS, leaf_dir, (int)pids[0]);
                for (size_t i = 0; i < n; i++)
                        if (write_procs(leaf_dir, pids[i], err) < 0)
                                return -1;
        }

        /* The kernel's word, not ours: the agent is where it meant to go. */
        _cleanup_free_ char *after = NULL;
        struct ag_selfcgroup_plan check;
        if (cb_read_file("/proc/self/cgroup", PROC_CGROUP_MAX, &after, NULL, err) < 0 ||
            ag_selfcgroup_plan(after, leaf_name, &check, err) < 0)
                return -1;
        if (check.where != AG_SELF_IN_LEAF || strcmp(check.leaf, plan.leaf) != 0)
                return cb_error_set(err, EIO,
                                    "the agent is in cgroup /%s after moving it to /%s; "
                                    "something moved it back",
                                    check.where == AG_SELF_IN_LEAF ? check.leaf : check.parent,
                                    plan.leaf);
        return set_parent(&plan, ret_parent, size, err);
}

int ag_move_self_to_leaf(const char *leaf_name, char *ret_parent, size_t size, struct cb_error *err)
{
        return ag_move_self_to_leaf_at("/sys/fs/cgroup", leaf_name, ret_parent, size, err);
}
