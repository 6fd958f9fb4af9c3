/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Pod sysctls as the kubelet admits them (k/k pkg/kubelet/sysctl:
 * safe_sysctls.go, allowlist.go, namespace.go; component-helpers
 * node/util/sysctl): the safe sysctls plus the node's
 * --allowed-unsafe-sysctls patterns (a name, or a prefix ending in '*'),
 * each of which must be namespaced (net.*, kernel.shm*, kernel.msg*,
 * kernel.sem, fs.mqueue.*); a pod with any other sysctl, or a net one with
 * hostNetwork, an IPC one with hostIPC, is rejected with reason
 * SysctlForbidden. Names may use '/' as the separator (then '.' and '/'
 * swap, as ConvertSysctlVariableToDotsSeparator). The kernel versions of
 * the safe list (3.16 to 4.6) are below what cubelet needs (openat2: 5.6),
 * so every safe sysctl is on. Pure.
 */

#include <stdbool.h>
#include <stddef.h>

#include "agent/k8s/admit.h"
#include "agent/k8s/k8s.h"
#include "lib/error.h"

#define K8S_SYSCTL_NAME_MAX     253
#define K8S_SYSCTL_MAX_PATTERNS 64

enum k8s_sysctl_ns {
        K8S_SYSCTL_NS_UNKNOWN = 0,
        K8S_SYSCTL_NS_IPC,
        K8S_SYSCTL_NS_NET,
};

struct k8s_sysctl_allowlist {
        struct {
                char name[K8S_SYSCTL_NAME_MAX + 1]; /* dots; a prefix without its '*' */
                bool prefix;
                enum k8s_sysctl_ns ns;
        } items[K8S_SYSCTL_MAX_PATTERNS];
        size_t n;
};

/* ConvertSysctlVariableToDotsSeparator into out (size >= strlen(in) + 1). */
void k8s_sysctl_to_dots(const char *in, char *out, size_t size);

/* NamespacedBy. */
enum k8s_sysctl_ns k8s_sysctl_namespaced_by(const char *name);

/* The safe sysctls plus the unsafe patterns allowed on this node. -1 with
 * the kubelet's start-up error for a pattern that is not valid or not
 * namespaced. */
int k8s_sysctl_allowlist_init(struct k8s_sysctl_allowlist *w, const char *const *unsafe,
                              size_t n_unsafe, struct cb_error *err);

/* The same from "a,b*" (--allowed-unsafe-sysctls; NULL or "": none). */
int k8s_sysctl_allowlist_parse(struct k8s_sysctl_allowlist *w, const char *csv,
                               struct cb_error *err);

/* The kubelet's sysctl admit handler; w NULL: the safe sysctls only. */
void k8s_sysctl_admit(const struct k8s_sysctl_allowlist *w, const struct k8s_pod *pod,
                      struct k8s_admit_result *res);
