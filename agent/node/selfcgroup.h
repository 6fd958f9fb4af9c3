/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The agent's own cgroup under systemd's delegation (Delegate=yes in
 * cubelet.service; systemd's docs/CGROUP_DELEGATION.md).
 *
 * systemd starts the agent in the service cgroup, e.g.
 * /system.slice/cubelet.service, and hands that subtree over. cgroup v2 has
 * the "no internal processes" rule: a cgroup that enables controllers for
 * its children (cgroup.subtree_control) must hold no process itself. So
 * before pod cgroups with cpu, memory and pids can be created below the
 * service cgroup, the agent moves itself into a leaf next to them:
 *
 *   /system.slice/cubelet.service/            delegated, inner node
 *   /system.slice/cubelet.service/supervisor  the agent (a leaf)
 *   /system.slice/cubelet.service/kubepods/   pods (created by cgroups/)
 *
 * On cgroup v1 (legacy or hybrid hosts) there is no such rule and systemd
 * delegates nothing useful: pods go under kubepods at the hierarchy roots,
 * as the kubelet's cgroupfs driver does, and nothing moves.
 */

#include <stddef.h>

#include "lib/error.h"

#define AG_SELFCGROUP_PATH_MAX 512

enum ag_self_where {
        /* In a cgroup that is not the leaf: move there. */
        AG_SELF_MOVE,
        /* Already in <parent>/<leaf_name> (a second call, or a process
         * started there): nothing to move. */
        AG_SELF_IN_LEAF,
        /* At "/" of the hierarchy (or of the cgroup namespace): the caller
         * decides (the real root cgroup may hold processes and have
         * children with controllers; a namespace root may not). */
        AG_SELF_AT_ROOT,
};

struct ag_selfcgroup_plan {
        enum ag_self_where where;
        /* The delegated cgroup, relative to the hierarchy root, without a
         * leading '/': "system.slice/cubelet.service"; "" for the root. */
        char parent[AG_SELFCGROUP_PATH_MAX];
        /* parent/leaf_name, relative, without a leading '/'. */
        char leaf[AG_SELFCGROUP_PATH_MAX];
};

/* Pure: from the text of /proc/self/cgroup (its "0::" line, never just the
 * first line) and the leaf name, where the agent is and where it goes.
 * leaf_name is one path component of letters, digits, '-' and '_' (a dot
 * could collide with an interface file such as cgroup.procs). Fails on a
 * missing "0::" line, a relative path, a path with "." or ".." components
 * (a cgroup outside the agent's cgroup namespace shows as "/../.."), or a
 * path too long for the plan. */
int ag_selfcgroup_plan(const char *proc_cgroup, const char *leaf_name,
                       struct ag_selfcgroup_plan *ret, struct cb_error *err);

/*
 * On a cgroup v2 (unified) host: moves the agent (and any other process
 * left in its cgroup) into <own cgroup>/<leaf_name>, creating it, so the
 * own cgroup becomes an inner node whose other children can be pod
 * cgroups; writes the own (delegated) cgroup, relative to the hierarchy
 * root and without a leading '/', to ret_parent: the caller puts
 * "<ret_parent>/kubepods" under it (just "kubepods" when ret_parent is "").
 *
 * At the real root cgroup nothing moves and ret_parent is "". At the root
 * of a cgroup namespace (a container, where "/" is not the real root and
 * the no-internal-processes rule applies) the processes move into
 * /<leaf_name> and ret_parent is "".
 *
 * On v1 (legacy or hybrid): a no-op, ret_parent is "".
 *
 * Idempotent: an agent already in the leaf stays there. Must run before
 * the agent creates any pod cgroup (cg_create enables controllers in the
 * own cgroup, which the kernel refuses while a process lives in it).
 */
int ag_move_self_to_leaf(const char *leaf_name, char *ret_parent, size_t size,
                         struct cb_error *err);

/* The same against a cgroup mount other than /sys/fs/cgroup (tests, or a
 * host mounting cgroup2 elsewhere). */
int ag_move_self_to_leaf_at(const char *mount, const char *leaf_name, char *ret_parent, size_t size,
                            struct cb_error *err);
