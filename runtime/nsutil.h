/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Namespace pinning without a pause process (as CRI-O's pinns does): a
 * short-lived helper child unshares the namespaces, the parent bind-mounts
 * the child's /proc/<pid>/ns/<type> files onto empty files, and the child
 * exits. The agent process itself never enters a new namespace.
 */

#include <stdbool.h>
#include <sys/types.h>

#include "lib/error.h"

/* Makes dir a mount point of its own with private propagation (a bind of
 * dir onto itself when it is not one yet, then MS_PRIVATE), as `ip netns`
 * does for /run/netns, so pins made under it neither propagate to nor
 * receive events from the parent mount's peers. Idempotent. */
int rt_ns_make_private_dir(const char *dir, struct cb_error *err);

/* Undoes rt_ns_make_private_dir (lazy unmount of dir when it is a mount
 * point). Returns 0 when dir is not a mount point or does not exist. */
int rt_ns_release_private_dir(const char *dir, struct cb_error *err);

/* Creates the namespaces in clone_flags (a subset of CLONE_NEWNET |
 * CLONE_NEWIPC | CLONE_NEWUTS) in a thread of its own (the caller's
 * namespaces do not change) and bind-mounts each onto
 * <ns_dir>/{net,ipc,uts} (ns_dir must exist). In a new UTS namespace the
 * hostname is set to hostname; in a new net namespace "lo" is brought up.
 * On failure nothing stays pinned. */
int rt_ns_pin(const char *ns_dir, int clone_flags, const char *hostname, struct cb_error *err);

/* Pins /proc/<pid>/ns/<name> at <ns_dir>/<name>. */
int rt_ns_pin_process(pid_t pid, const char *ns_dir, const char *name, struct cb_error *err);
/* Unmounts a pin and removes the file; ENOENT and "not mounted" are fine. */
int rt_ns_unpin(const char *path, struct cb_error *err);

/* True when path is a mounted namespace file (nsfs). */
bool rt_ns_is_pinned(const char *path);
