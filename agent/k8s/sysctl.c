/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/k8s/sysctl.h"

#include <errno.h>
#include <regex.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "lib/cleanup.h"

static const char *const safe_sysctls[] = {
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.ip_local_reserved_ports", /* kernel 3.16 */
    "net.ipv4.tcp_keepalive_time",      /* 4.5 */
    "net.ipv4.tcp_fin_timeout",         /* 4.6 */
    "net.ipv4.tcp_keepalive_intvl",     /* 4.5 */
    "net.ipv4.tcp_keepalive_probes",    /* 4.5 */
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
};

void k8s_sysctl_to_dots(const char *in, char *out, size_t size)
{
        if (size == 0)
                return;
        size_t n = strlen(in);
        if (n >= size)
                n = size - 1;
        const char *sep = strpbrk(in, "./");
        bool swap = sep != NULL && *sep == '/';
        for (size_t i = 0; i < n; i++)
                out[i] = !swap ? in[i] : in[i] == '.' ? '/' : in[i] == '/' ? '.' : in[i];
        out[n] = '\0';
}

enum k8s_sysctl_ns k8s_sysctl_namespaced_by(const char *name)
{
        if (strcmp(name, "kernel.sem") == 0)
                return K8S_SYSCTL_NS_IPC;
        static const struct {
                const char *prefix;
                enum k8s_sysctl_ns ns;
        } prefixes[] = {
            {"kernel.shm", K8S_SYSCTL_NS_IPC},
            {"kernel.msg", K8S_SYSCTL_NS_IPC},
            {"fs.mqueue.", K8S_SYSCTL_NS_IPC},
            {"net.", K8S_SYSCTL_NS_NET},
        };
        for (size_t i = 0; i < CB_ARRAY_SIZE(prefixes); i++)
                if (strncmp(name, prefixes[i].prefix, strlen(prefixes[i].prefix)) == 0)
                        return prefixes[i].ns;
        return K8S_SYSCTL_NS_UNKNOWN;
}

/* policy validation's IsValidSysctlPattern: at most 253 characters,
 * segments [a-z0-9]([-_a-z0-9]*[a-z0-9])? separated by '.' or '/', the last
 * one ([a-z0-9][-_a-z0-9]*)?[a-z0-9*] (so it may end in '*'). */
#define PATTERN_RE "([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*([a-z0-9][-_a-z0-9]*)?[a-z0-9*]"
static bool valid_pattern(const char *s)
{
        if (strlen(s) > K8S_SYSCTL_NAME_MAX)
                return false;
        static const char re[] = "^" PATTERN_RE "$";
        regex_t r;
        if (regcomp(&r, re, REG_EXTENDED | REG_NOSUB) != 0)
                return false;
        bool ok = regexec(&r, s, 0, NULL, 0) == 0;
        regfree(&r);
        return ok;
}

static int add(struct k8s_sysctl_allowlist *w, const char *pattern, struct cb_error *err)
{
        if (!valid_pattern(pattern))
                return cb_error_set(err, 0,
                                    "sysctl \"%s\" must have at most 253 characters and match "
                                    "regex " PATTERN_RE,
                                    pattern);
        if (w->n == K8S_SYSCTL_MAX_PATTERNS)
                return cb_error_set(err, 0, "more than %d allowed sysctl patterns",
                                    K8S_SYSCTL_MAX_PATTERNS);
        char dots[K8S_SYSCTL_NAME_MAX + 1];
        k8s_sysctl_to_dots(pattern, dots, sizeof(dots));
        size_t n = strlen(dots);
        bool prefix = n > 0 && dots[n - 1] == '*';
        if (prefix)
                dots[n - 1] = '\0';
        enum k8s_sysctl_ns ns = k8s_sysctl_namespaced_by(dots);
        if (ns == K8S_SYSCTL_NS_UNKNOWN)
                return cb_error_set(err, 0, "the sysctl%s \"%s%s\" are not known to be namespaced",
                                    prefix ? "s" : "", dots, prefix ? "*" : "");
        snprintf(w->items[w->n].name, sizeof(w->items[w->n].name), "%s", dots);
        w->items[w->n].prefix = prefix;
        w->items[w->n].ns = ns;
        w->n++;
        return 0;
}

int k8s_sysctl_allowlist_init(struct k8s_sysctl_allowlist *w, const char *const *unsafe,
                              size_t n_unsafe, struct cb_error *err)
{
        memset(w, 0, sizeof(*w));
        for (size_t i = 0; i < CB_ARRAY_SIZE(safe_sysctls); i++)
                if (add(w, safe_sysctls[i], err) < 0)
                        return -1;
        for (size_t i = 0; i < n_unsafe; i++)
                if (unsafe[i] != NULL && add(w, unsafe[i], err) < 0)
                        return -1;
        return 0;
}

int k8s_sysctl_allowlist_parse(struct k8s_sysctl_allowlist *w, const char *csv,
                               struct cb_error *err)
{
        _cleanup_free_ char *copy = strdup(csv != NULL ? csv : "");
        if (copy == NULL)
                return cb_error_set(err, ENOMEM, "out of memory");
        const char *items[K8S_SYSCTL_MAX_PATTERNS];
        size_t n = 0;
        char *save = NULL;
        for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                if (n == CB_ARRAY_SIZE(items))
                        return cb_error_set(err, 0, "more than %zu patterns", n);
                items[n++] = t;
        }
        return k8s_sysctl_allowlist_init(w, items, n, err);
}

/* validateSysctl: exact names first, then prefixes. */
static bool check(const struct k8s_sysctl_allowlist *w, const char *name, bool host_net,
                  bool host_ipc, char *why, size_t size)
{
        for (int pass = 0; pass < 2; pass++)
                for (size_t i = 0; i < w->n; i++) {
                        bool hit =
                            pass == 0
                                ? !w->items[i].prefix && strcmp(w->items[i].name, name) == 0
                                : w->items[i].prefix && strncmp(name, w->items[i].name,
                                                                strlen(w->items[i].name)) == 0;
                        if (!hit)
                                continue;
                        if ((w->items[i].ns == K8S_SYSCTL_NS_IPC && host_ipc) ||
                            (w->items[i].ns == K8S_SYSCTL_NS_NET && host_net)) {
                                snprintf(why, size, "\"%s\" not allowed with host %s enabled", name,
                                         w->items[i].ns == K8S_SYSCTL_NS_IPC ? "ipc" : "net");
                                return false;
                        }
                        return true;
                }
        snprintf(why, size, "\"%s\" not allowlisted", name);
        return false;
}

void k8s_sysctl_admit(const struct k8s_sysctl_allowlist *w, const struct k8s_pod *pod,
                      struct k8s_admit_result *res)
{
        memset(res, 0, sizeof(*res));
        res->admitted = true;
        const struct k8s_pod_security_context *sc = &pod->spec.security_context;
        if (sc->n_sysctls == 0)
                return;
        struct k8s_sysctl_allowlist safe;
        if (w == NULL) {
                struct cb_error e;
                (void)k8s_sysctl_allowlist_init(&safe, NULL, 0, &e); /* the safe list is valid */
                w = &safe;
        }
        for (size_t i = 0; i < sc->n_sysctls; i++) {
                char name[K8S_SYSCTL_NAME_MAX + 1], why[400];
                k8s_sysctl_to_dots(sc->sysctls[i].name ? sc->sysctls[i].name : "", name,
                                   sizeof(name));
                if (!check(w, name, pod->spec.host_network, pod->spec.host_ipc, why, sizeof(why))) {
                        res->admitted = false;
                        snprintf(res->reason, sizeof(res->reason), "SysctlForbidden");
                        snprintf(res->message, sizeof(res->message), "forbidden sysctl: %s", why);
                        return;
                }
        }
}
