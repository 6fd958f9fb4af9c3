/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Namespace pinning without a pause process (as CRI-O's pinns does): a
 * short-lived helper child unshares the namespaces, the parent bind-mounts
 * the child's /proc/<pid>/ns/<type> files onto empty files, and the child
 * exits. The agent process itself never enters a new namespace.
 *
 * Only network namespace pins are in the host's mount table (CNI plugins
 * open them by path). The others are in the pin space, a mount namespace
 * of the runtime's own kept by one pin in the host, so the host's mount
 * table (which every container start copies) does not grow with them.
 * Paths name the same files in both: the pin space holds the sandboxes
 * dir at its host path.
 */

#include <stdbool.h>
#include <stddef.h>
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

/* Makes sure the pin space for the sandboxes dir dir (absolute) exists,
 * kept by a pin at pinspace (a file in dir): made once, found again after
 * a restart. Thread-safe. */
int rt_ns_pinspace_ensure(const char *dir, const char *pinspace, struct cb_error *err);
/* (The pin space goes with its pin: rt_ns_unpin(pinspace).) */

/* Runs fn(arg, err) in a short-lived thread inside the pin space kept at
 * pinspace; NULL or "": in the calling thread, in the host's mount table.
 * fn's return value. */
int rt_ns_in_pinspace(const char *pinspace, int (*fn)(void *arg, struct cb_error *err), void *arg,
                      struct cb_error *err);

/* Creates the namespaces in clone_flags (a subset of CLONE_NEWNET |
 * CLONE_NEWIPC | CLONE_NEWUTS) in a thread of its own (the caller's
 * namespaces do not change) and bind-mounts each onto
 * <ns_dir>/{net,ipc,uts} (ns_dir must exist): net in the host's mount
 * table, ipc and uts in the pin space (NULL or "": in the host's too). In a
 * new UTS namespace the hostname is set to hostname; in a new net
 * namespace "lo" is brought up. On failure nothing stays pinned. */
int rt_ns_pin(const char *ns_dir, int clone_flags, const char *hostname, const char *pinspace,
              struct cb_error *err);

/* Pins /proc/<pid>/ns/<name> at <ns_dir>/<name>, in the pin space (NULL or
 * "": the host's mount table). */
int rt_ns_pin_process(pid_t pid, const char *ns_dir, const char *name, const char *pinspace,
                      struct cb_error *err);
/* Opens the n pins at paths (read-only, close-on-exec) inside the pin space
 * (NULL or "": in the host's mount table); "" or NULL paths give -1. On
 * failure no fd stays open. */
int rt_ns_open_pins(const char *pinspace, const char *const *paths, int *fds, size_t n,
                    struct cb_error *err);
/* rt_ns_open_pins for a single-threaded process (a container's C0): it
 * enters the pin space itself and returns to its mount namespace and
 * working directory, with no thread. */
int rt_ns_open_pins_here(const char *pinspace, const char *const *paths, int *fds, size_t n,
                         struct cb_error *err);
/* rt_ns_unpin of each of the n paths inside the pin space. */
int rt_ns_unpin_in(const char *pinspace, const char *const *paths, size_t n, struct cb_error *err);
/* rt_ns_is_pinned of each of the n paths ("" or NULL: skipped) inside the
 * pin space, in one trip: true when all are. */
bool rt_ns_all_pinned_in(const char *pinspace, const char *const *paths, size_t n);
/* Unmounts a pin and removes the file; ENOENT and "not mounted" are fine. */
int rt_ns_unpin(const char *path, struct cb_error *err);

/* True when path is a mounted namespace file (nsfs). */
bool rt_ns_is_pinned(const char *path);
