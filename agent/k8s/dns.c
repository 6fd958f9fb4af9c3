/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/k8s/dns.h"

#include <errno.h>
#include <stdlib.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

struct list {
        struct cb_arena *a;
        char **v;
        size_t n, cap;
        bool oom;
};

static void push(struct list *l, const char *s, size_t len)
{
        if (l->oom)
                return;
        if (l->n == l->cap) {
                size_t cap = l->cap ? l->cap * 2 : 8;
                char **v = cb_arena_calloc(l->a, cap + 1, sizeof(char *));
                if (v == NULL) {
                        l->oom = true;
                        return;
                }
                if (l->n)
                        memcpy(v, l->v, l->n * sizeof(char *));
                l->v = v;
                l->cap = cap;
        }
        char *c = cb_arena_strndup(l->a, s, len);
        if (c == NULL) {
                l->oom = true;
                return;
        }
        l->v[l->n++] = c;
}

static void push_str(struct list *l, const char *s)
{
        push(l, s, strlen(s));
}

static bool has(const struct list *l, const char *s)
{
        for (size_t i = 0; i < l->n; i++)
                if (strcmp(l->v[i], s) == 0)
                        return true;
        return false;
}

/* omitDuplicates: the first of equal entries stays. */
static void push_unique(struct list *l, const char *s)
{
        if (!has(l, s))
                push_str(l, s);
}

static size_t opt_name_len(const char *o)
{
        const char *c = strchr(o, ':');
        return c ? (size_t)(c - o) : strlen(o);
}

/* An option replaces the one of the same name (appendOptions,
 * mergeDNSOptions), in the place the name first had. */
static void push_option(struct list *l, const char *o)
{
        size_t n = opt_name_len(o);
        for (size_t i = 0; i < l->n; i++)
                if (opt_name_len(l->v[i]) == n && strncmp(l->v[i], o, n) == 0) {
                        char *c = cb_arena_strdup(l->a, o);
                        if (c == NULL)
                                l->oom = true;
                        else
                                l->v[i] = c;
                        return;
                }
        push_str(l, o);
}

struct lists {
        struct list servers, searches, options;
};

static int parse(struct cb_arena *a, const char *text, struct lists *ls, struct cb_error *err)
{
        *ls = (struct lists){{.a = a}, {.a = a}, {.a = a}};
        bool empty_ns = false;
        for (const char *p = text ? text : ""; *p;) {
                const char *nl = strchr(p, '\n');
                size_t len = nl ? (size_t)(nl - p) : strlen(p);
                /* fields of the line */
                const char *f[64];
                size_t fl[64], nf = 0;
                const char *q = p, *end = p + len;
                while (q < end && nf < 64) {
                        while (q < end &&
                               (*q == ' ' || *q == '\t' || *q == '\r' || *q == '\f' || *q == '\v'))
                                q++;
                        if (q == end)
                                break;
                        const char *s = q;
                        while (q < end &&
                               !(*q == ' ' || *q == '\t' || *q == '\r' || *q == '\f' || *q == '\v'))
                                q++;
                        f[nf] = s;
                        fl[nf++] = (size_t)(q - s);
                }
                p = nl ? nl + 1 : end;
                if (nf == 0 || f[0][0] == '#')
                        continue;
                if (fl[0] == 10 && strncmp(f[0], "nameserver", 10) == 0) {
                        if (nf >= 2)
                                push(&ls->servers, f[1], fl[1]);
                        else
                                empty_ns = true;
                } else if (fl[0] == 6 && strncmp(f[0], "search", 6) == 0) {
                        /* the last search line wins; "x." and "x" count once */
                        ls->searches.n = 0;
                        for (size_t i = 1; i < nf; i++) {
                                if (fl[i] == 1 && f[i][0] == '.')
                                        continue;
                                size_t n = fl[i];
                                if (n > 0 && f[i][n - 1] == '.')
                                        n--;
                                push(&ls->searches, f[i], n);
                        }
                } else if (fl[0] == 7 && strncmp(f[0], "options", 7) == 0) {
                        for (size_t i = 1; i < nf; i++) {
                                char *o = cb_arena_strndup(a, f[i], fl[i]);
                                if (o == NULL)
                                        return cb_error_set(err, ENOMEM, "resolv.conf");
                                push_option(&ls->options, o);
                        }
                }
        }
        if (ls->servers.oom || ls->searches.oom || ls->options.oom)
                return cb_error_set(err, ENOMEM, "resolv.conf");
        if (empty_ns)
                return cb_error_set(err, 0, "nameserver list is empty ");
        return 0;
}

static void out(struct k8s_pod_dns *ret, const struct lists *ls)
{
        ret->servers = ls->servers.v;
        ret->n_servers = ls->servers.n;
        ret->searches = ls->searches.v;
        ret->n_searches = ls->searches.n;
        ret->options = ls->options.v;
        ret->n_options = ls->options.n;
}

int k8s_parse_resolv_conf(struct cb_arena *a, const char *text, struct k8s_pod_dns *ret,
                          struct cb_error *err)
{
        *ret = (struct k8s_pod_dns){0};
        struct lists ls;
        if (parse(a, text, &ls, err) < 0)
                return -1;
        out(ret, &ls);
        return 0;
}

static void warn(struct cb_arena *a, struct k8s_pod_dns *ret, const char *reason, char *msg)
{
        if (ret->n_warnings < K8S_DNS_MAX_WARNINGS && msg != NULL)
                ret->warnings[ret->n_warnings++] = (struct k8s_dns_warning){reason, msg};
        (void)a;
}

static char *join(struct cb_arena *a, char **v, size_t n, const char *sep)
{
        size_t len = 1;
        for (size_t i = 0; i < n; i++)
                len += strlen(v[i]) + strlen(sep);
        char *s = cb_arena_alloc(a, len);
        if (s == NULL)
                return NULL;
        size_t o = 0;
        for (size_t i = 0; i < n; i++) {
                if (i) {
                        memcpy(s + o, sep, strlen(sep));
                        o += strlen(sep);
                }
                memcpy(s + o, v[i], strlen(v[i]));
                o += strlen(v[i]);
        }
        s[o] = '\0';
        return s;
}

/* formDNSNameserversFitsLimits and formDNSSearchFitsLimits */
static void fit_limits(struct cb_arena *a, struct lists *ls, struct k8s_pod_dns *ret)
{
        if (ls->servers.n > K8S_DNS_MAX_NAMESERVERS) {
                ls->servers.n = K8S_DNS_MAX_NAMESERVERS;
                char *line = join(a, ls->servers.v, ls->servers.n, " ");
                warn(a, ret, "DNSConfigForming",
                     line ? cb_arena_printf(a,
                                            "Nameserver limits were exceeded, some nameservers "
                                            "have been omitted, the applied nameserver line is: %s",
                                            line)
                          : NULL);
        }
        struct list *s = &ls->searches;
        bool exceeded = false;
        if (s->n > K8S_DNS_MAX_SEARCHES) {
                s->n = K8S_DNS_MAX_SEARCHES;
                exceeded = true;
        }
        size_t k = 0;
        for (size_t i = 0; i < s->n; i++) {
                if (strlen(s->v[i]) > K8S_DNS_MAX_SEARCH_DOMAIN) {
                        exceeded = true;
                        continue;
                }
                s->v[k++] = s->v[i];
        }
        s->n = k;
        size_t total = 0;
        for (size_t i = 0; i < s->n; i++)
                total += strlen(s->v[i]) + (i ? 1 : 0);
        if (total > K8S_DNS_MAX_SEARCH_CHARS) {
                /* cut whole domains from the end until the line fits */
                size_t cut = 0;
                while (cut < s->n) {
                        total -= strlen(s->v[s->n - 1 - cut]) + 1;
                        cut++;
                        if (total <= K8S_DNS_MAX_SEARCH_CHARS)
                                break;
                }
                s->n -= cut;
                exceeded = true;
        }
        if (exceeded) {
                char *line = join(a, s->v, s->n, " ");
                warn(a, ret, "DNSConfigForming",
                     line ? cb_arena_printf(a,
                                            "Search Line limits were exceeded, some search paths "
                                            "have been omitted, the applied search line is: %s",
                                            line)
                          : NULL);
        }
}

static char *format(struct cb_arena *a, const struct lists *ls)
{
        char *search = join(a, ls->searches.v, ls->searches.n, " ");
        char *ns = join(a, ls->servers.v, ls->servers.n, "\nnameserver ");
        char *opts = join(a, ls->options.v, ls->options.n, " ");
        if (search == NULL || ns == NULL || opts == NULL)
                return NULL;
        return cb_arena_printf(a, "%s%s%s%s%s%s%s%s%s", ls->searches.n ? "search " : "", search,
                               ls->searches.n ? "\n" : "", ls->servers.n ? "nameserver " : "", ns,
                               ls->servers.n ? "\n" : "", ls->options.n ? "options " : "", opts,
                               ls->options.n ? "\n" : "");
}

enum dns_type { DNS_NONE, DNS_CLUSTER, DNS_HOST };

int k8s_pod_dns(struct cb_arena *a, const struct k8s_pod *pod, const struct k8s_dns_node *node,
                struct k8s_pod_dns *ret, struct cb_error *err)
{
        *ret = (struct k8s_pod_dns){0};
        struct lists ls;
        if (parse(a, node->host_resolv, &ls, err) < 0)
                return cb_error_prefix(err,
                                       "Encountered error while parsing resolv conf file. Error");
        const char *policy = pod->spec.dns_policy ? pod->spec.dns_policy : "ClusterFirst";
        const char *ns =
            pod->meta.namespace_ && pod->meta.namespace_[0] ? pod->meta.namespace_ : "default";
        enum dns_type type = DNS_CLUSTER; /* an unknown policy: ClusterFirst, as the kubelet */
        if (strcmp(policy, "None") == 0)
                type = DNS_NONE;
        else if (strcmp(policy, "Default") == 0 ||
                 (strcmp(policy, "ClusterFirst") == 0 && pod->spec.host_network))
                type = DNS_HOST;
        if (type == DNS_NONE) {
                ls.servers.n = ls.searches.n = ls.options.n = 0;
        } else if (type == DNS_CLUSTER && node->n_cluster_dns > 0) {
                ls.servers.n = 0;
                for (size_t i = 0; i < node->n_cluster_dns; i++)
                        push_str(&ls.servers, node->cluster_dns[i]);
                const char *d = node->cluster_domain;
                if (d != NULL && d[0] != '\0') {
                        struct list host = ls.searches;
                        ls.searches = (struct list){.a = a};
                        char *nsd = cb_arena_printf(a, "%s.svc.%s", ns, d);
                        char *svc = cb_arena_printf(a, "svc.%s", d);
                        if (nsd == NULL || svc == NULL)
                                return cb_error_set(err, ENOMEM, "resolv.conf");
                        push_unique(&ls.searches, nsd);
                        push_unique(&ls.searches, svc);
                        push_unique(&ls.searches, d);
                        for (size_t i = 0; i < host.n; i++)
                                push_unique(&ls.searches, host.v[i]);
                }
                ls.options.n = 0;
                push_str(&ls.options, "ndots:5");
        } else {
                if (type == DNS_CLUSTER) {
                        const char *msg =
                            "kubelet does not have ClusterDNS IP configured and cannot create Pod "
                            "using \"ClusterFirst\" policy. Falling back to \"Default\" policy.";
                        warn(a, ret, "MissingClusterDNS",
                             cb_arena_printf(a, "pod: \"%s_%s(%s)\". %s",
                                             pod->meta.name ? pod->meta.name : "", ns,
                                             pod->meta.uid ? pod->meta.uid : "", msg));
                }
                if (node->host_resolv == NULL) {
                        /* --resolv-conf "": lookups go to the node itself */
                        for (size_t i = 0; i < node->n_node_ips; i++)
                                push_str(&ls.servers,
                                         strchr(node->node_ips[i], ':') ? "::1" : "127.0.0.1");
                        if (ls.servers.n == 0)
                                push_str(&ls.servers, "127.0.0.1");
                        ls.searches.n = 0;
                        push_str(&ls.searches, ".");
                }
        }
        if (pod->spec.has_dns_config) {
                const struct k8s_pod_dns_config *c = &pod->spec.dns_config;
                struct list dedup = {.a = a};
                for (size_t i = 0; i < ls.servers.n; i++)
                        push_unique(&dedup, ls.servers.v[i]);
                for (size_t i = 0; i < c->n_nameservers; i++)
                        push_unique(&dedup, c->nameservers[i]);
                ls.servers = dedup;
                dedup = (struct list){.a = a};
                for (size_t i = 0; i < ls.searches.n; i++)
                        push_unique(&dedup, ls.searches.v[i]);
                for (size_t i = 0; i < c->n_searches; i++)
                        push_unique(&dedup, c->searches[i]);
                ls.searches = dedup;
                for (size_t i = 0; i < c->n_options; i++) {
                        const struct k8s_dns_option *o = &c->options[i];
                        const char *name = o->name ? o->name : "";
                        char *op = o->value && o->value[0]
                                       ? cb_arena_printf(a, "%s:%s", name, o->value)
                                       : cb_arena_strdup(a, name);
                        if (op == NULL)
                                return cb_error_set(err, ENOMEM, "resolv.conf");
                        push_option(&ls.options, op);
                }
        }
        if (ls.servers.oom || ls.searches.oom || ls.options.oom)
                return cb_error_set(err, ENOMEM, "resolv.conf");
        fit_limits(a, &ls, ret);
        out(ret, &ls);
        ret->resolv_conf = format(a, &ls);
        if (ret->resolv_conf == NULL)
                return cb_error_set(err, ENOMEM, "resolv.conf");
        return 0;
}

/* ---- hostname, domain, host aliases ---- */

int k8s_pod_names(struct cb_arena *a, const struct k8s_pod *pod, const char *cluster_domain,
                  struct k8s_pod_names *ret, struct cb_error *err)
{
        memset(ret, 0, sizeof(*ret));
        const char *ns =
            pod->meta.namespace_ && pod->meta.namespace_[0] ? pod->meta.namespace_ : "default";
        const char *name = pod->spec.hostname && pod->spec.hostname[0] ? pod->spec.hostname
                           : pod->meta.name                            ? pod->meta.name
                                                                       : "";
        /* truncatePodHostnameIfNeeded: 63 characters, then no trailing
         * '-' or '.' */
        size_t n = strlen(name);
        if (n > 63) {
                n = 63;
                while (n > 0 && (name[n - 1] == '-' || name[n - 1] == '.'))
                        n--;
        }
        ret->hostname = cb_arena_strndup(a, name, n);
        const char *sub = pod->spec.subdomain;
        ret->domain = sub && sub[0] ? cb_arena_printf(a, "%s.%s.svc.%s", sub, ns,
                                                      cluster_domain ? cluster_domain : "")
                                    : cb_arena_strdup(a, "");
        if (ret->hostname == NULL || ret->domain == NULL)
                return cb_error_set(err, ENOMEM, "pod names");
        ret->uts = ret->hostname;
        if (ret->domain[0] != '\0' && pod->spec.set_hostname_as_fqdn) {
                char *fqdn = cb_arena_printf(a, "%s.%s", ret->hostname, ret->domain);
                if (fqdn == NULL)
                        return cb_error_set(err, ENOMEM, "pod names");
                if (strlen(fqdn) > 64)
                        return cb_error_set(err, 0,
                                            "failed to construct FQDN from pod hostname and "
                                            "cluster domain, FQDN %s is too long (64 characters "
                                            "is the max, %zu characters requested)",
                                            fqdn, strlen(fqdn));
                ret->uts = fqdn;
        }
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        if (f == NULL)
                return cb_error_set(err, ENOMEM, "host aliases");
        if (pod->spec.n_host_aliases > 0)
                fputs("\n# Entries added by HostAliases.\n", f);
        for (size_t i = 0; i < pod->spec.n_host_aliases; i++) {
                const struct k8s_host_alias *h = &pod->spec.host_aliases[i];
                fputs(h->ip ? h->ip : "", f);
                for (size_t j = 0; j < h->n_hostnames; j++)
                        fprintf(f, "\t%s", h->hostnames[j] ? h->hostnames[j] : "");
                fputc('\n', f);
        }
        if (fclose(f) != 0) {
                free(buf);
                return cb_error_set(err, ENOMEM, "host aliases");
        }
        ret->alias_lines = cb_arena_strdup(a, buf);
        free(buf);
        return ret->alias_lines ? 0 : cb_error_set(err, ENOMEM, "host aliases");
}
