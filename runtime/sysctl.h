/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Namespaced sysctls of a sandbox, written as the runtimes write them (runc
 * for the pause container of a CRI pod): each value into /proc/sys/<name>
 * by a short-lived child that has joined the sandbox's network and IPC
 * namespaces, so only the pod sees them. Which sysctls a pod may set is the
 * agent's decision (agent/k8s/sysctl.h); this module only checks that a
 * name is a path beneath /proc/sys and nothing else.
 */

#include <stddef.h>

#include "lib/error.h"

struct rt_sysctl {
        const char *name; /* dots as the separator ("net.ipv4.tcp_syncookies") */
        const char *value;
};

/* Writes each sysctl in the namespaces pinned at netns_path and ipcns_path
 * (NULL or "": that namespace is the host's and its sysctls are refused:
 * net.* needs netns_path, kernel.shm*, kernel.msg*, kernel.sem and
 * fs.mqueue.* need ipcns_path; any other name is refused). ipcns_path is a
 * pin in the pin space kept at pins_mntns (runtime/nsutil.h; NULL or "":
 * in the host's mount table). -1 with which sysctl and why. */
int rt_sysctls_apply(const char *netns_path, const char *ipcns_path, const char *pins_mntns,
                     const struct rt_sysctl *s, size_t n, struct cb_error *err);
