/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pod sandboxes (runtime/sandbox.h).
 *
 * Creation is a list of steps, each recorded in state.json before (CNI)
 * or after (everything else) it runs, so rt_sandbox_remove can tear down
 * from the disk alone whatever a crash left behind:
 *   1. the dir and config.json (the config is what teardown needs: the
 *      CNI dirs, hostNetwork);
 *   2. the namespace pins under ns/ (remove unpins whatever is there);
 *   3. CNI ADD: state "cniAdd": "started" is written first, so a crash in
 *      the middle still leads to a DEL (the CNI cache holds the config);
 *   4. hosts, hostname, resolv.conf; then "complete": true.
 * rt_sandbox_load refuses an incomplete sandbox: it can only be removed.
 */
#include "runtime/sandbox.h"

#include <dirent.h>
#include <stdarg.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "lib/cleanup.h"
#include "lib/file.h"
#include "runtime/cni.h"
#include "runtime/nsutil.h"

#define JSON_MAX (1u << 20)

static const char *const ns_names[] = {"net", "ipc", "uts"};

/* The pin of the pin space (runtime/nsutil.h): not a valid sandbox id, so
 * rt_sandbox_list never takes it for one. */
#define PINSPACE_NAME ".pins-mntns"

#define PROC_SUPER_MAGIC_ 0x9fa0

/* The pod's procfs (runtime/pause.c) is mounted at path. */
static bool procfs_mounted(const char *path)
{
        struct statfs sfs;
        return statfs(path, &sfs) == 0 && (unsigned long)sfs.f_type == PROC_SUPER_MAGIC_;
}

/* Unmounts the pod's procfs at path (every layer an interrupted attempt
 * left) and removes the directory. */
static int procfs_unmount(const char *path, struct cb_error *err)
{
        for (int i = 0; i < 16 && procfs_mounted(path); i++)
                if (umount2(path, MNT_DETACH) < 0 && errno != EINVAL && errno != ENOENT)
                        return cb_error_set(err, errno, "cannot unmount the pod's procfs %s", path);
        if (procfs_mounted(path))
                return cb_error_set(err, EBUSY, "cannot unmount the pod's procfs %s", path);
        if (rmdir(path) < 0 && errno != ENOENT)
                return cb_error_set(err, errno, "cannot remove %s", path);
        return 0;
}

/* ---- names and paths ------------------------------------------------------- */

static int validate_id(const char *id, struct cb_error *err)
{
        size_t n = strnlen(id, RT_ID_MAX);
        if (n == 0 || n >= RT_ID_MAX)
                return cb_error_set(err, EINVAL,
                                    "sandbox id \"%.*s\" must be 1 to %d characters long", (int)n,
                                    id, RT_ID_MAX - 1);
        for (size_t i = 0; i < n; i++) {
                char c = id[i];
                bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (c == '-' && i > 0);
                if (!ok)
                        return cb_error_set(err, EINVAL,
                                            "sandbox id \"%s\" may only hold [a-z0-9-] and must "
                                            "not start with '-'",
                                            id);
        }
        return 0;
}

static int path_join(char *buf, size_t size, struct cb_error *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int path_join(char *buf, size_t size, struct cb_error *err, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(buf, size, fmt, ap);
        va_end(ap);
        if (n < 0 || (size_t)n >= size)
                return cb_error_set(err, ENAMETOOLONG, "path too long: %s...", buf);
        return 0;
}

static int sandbox_dir(const char *root_dir, const char *id, char *buf, size_t size,
                       struct cb_error *err)
{
        if (root_dir == NULL || root_dir[0] != '/')
                return cb_error_set(err, EINVAL, "root dir \"%s\" must be an absolute path",
                                    root_dir ? root_dir : "");
        if (strlen(root_dir) > RT_ROOT_DIR_MAX)
                return cb_error_set(err, ENAMETOOLONG,
                                    "root dir \"%.64s...\" is %zu bytes long; at most %d are "
                                    "supported",
                                    root_dir, strlen(root_dir), RT_ROOT_DIR_MAX);
        if (validate_id(id, err) < 0)
                return -1;
        return path_join(buf, size, err, "%s/sandboxes/%s", root_dir, id);
}

/* ---- config.json and state.json ------------------------------------------- */

static void add_str(cJSON *o, const char *key, const char *v)
{
        if (v != NULL)
                cJSON_AddStringToObject(o, key, v);
        else
                cJSON_AddNullToObject(o, key);
}

static cJSON *config_to_json(const struct rt_sandbox_config *cfg)
{
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "version", 1);
        cJSON_AddStringToObject(o, "id", cfg->id);
        add_str(o, "rootDir", cfg->root_dir);
        add_str(o, "name", cfg->name);
        add_str(o, "namespace", cfg->namespace_);
        add_str(o, "uid", cfg->uid);
        add_str(o, "hostname", cfg->hostname);
        add_str(o, "dnsDomain", cfg->dns_domain);
        cJSON_AddBoolToObject(o, "hostNetwork", cfg->host_network);
        cJSON_AddBoolToObject(o, "hostIPC", cfg->host_ipc);
        cJSON_AddBoolToObject(o, "hostPID", cfg->host_pid);
        cJSON *ports = cJSON_AddArrayToObject(o, "ports");
        for (size_t i = 0; i < cfg->n_ports; i++) {
                cJSON *p = cJSON_CreateObject();
                cJSON_AddItemToArray(ports, p);
                cJSON_AddNumberToObject(p, "hostPort", cfg->ports[i].host_port);
                cJSON_AddNumberToObject(p, "containerPort", cfg->ports[i].container_port);
                cJSON_AddStringToObject(p, "protocol", cfg->ports[i].protocol);
                cJSON_AddStringToObject(p, "hostIP", cfg->ports[i].host_ip);
        }
        cJSON *cni = cJSON_AddObjectToObject(o, "cni");
        add_str(cni, "confDir", cfg->cni.conf_dir);
        add_str(cni, "binDirs", cfg->cni.bin_dirs);
        add_str(cni, "cacheDir", cfg->cni.cache_dir);
        add_str(o, "resolvConf", cfg->resolv_conf);
        add_str(o, "cgroupParent", cfg->cgroup_parent);
        cJSON_AddBoolToObject(o, "sharePID", cfg->share_pid && !cfg->host_pid);
        return o;
}

static const char *jstr(const cJSON *o, const char *key)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
        return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool jbool(const cJSON *o, const char *key)
{
        return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, key));
}

static cJSON *read_json(const char *path, struct cb_error *err)
{
        _cleanup_free_ char *text = NULL;
        if (cb_read_file(path, JSON_MAX, &text, NULL, err) < 0)
                return NULL;
        cJSON *j = cJSON_Parse(text);
        if (!cJSON_IsObject(j)) {
                cJSON_Delete(j);
                cb_error_set(err, 0, "%s is not a JSON object; the file is corrupt", path);
                return NULL;
        }
        return j;
}

/* durable: fsync'd (lib/file.h), for the records a DEL after a power
 * failure needs: the config and the state before the CNI ADD. */
static int write_json_as(const char *dir, const char *name, const cJSON *j, bool durable,
                         struct cb_error *err)
{
        char path[RT_PATH_MAX];
        if (path_join(path, sizeof(path), err, "%s/%s", dir, name) < 0)
                return -1;
        _cleanup_free_ char *text = cJSON_Print(j);
        if (text == NULL)
                return cb_error_set(err, ENOMEM, "cannot write %s", path);
        return durable ? cb_write_file_atomic(path, text, strlen(text), 0600, err)
                       : cb_write_file_replace(path, text, strlen(text), 0600, err);
}

static int write_json(const char *dir, const char *name, const cJSON *j, struct cb_error *err)
{
        return write_json_as(dir, name, j, false, err);
}

/* The ports of a loaded config (owned by the caller's array). */
static size_t config_ports(const cJSON *cfg, struct rt_port_mapping *ports, size_t max)
{
        size_t n = 0;
        const cJSON *p;
        cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(cfg, "ports"))
        {
                if (n == max)
                        break;
                struct rt_port_mapping *m = &ports[n++];
                memset(m, 0, sizeof(*m));
                const cJSON *hp = cJSON_GetObjectItemCaseSensitive(p, "hostPort");
                const cJSON *cp = cJSON_GetObjectItemCaseSensitive(p, "containerPort");
                m->host_port = cJSON_IsNumber(hp) ? hp->valueint : 0;
                m->container_port = cJSON_IsNumber(cp) ? cp->valueint : 0;
                snprintf(m->protocol, sizeof(m->protocol), "%s",
                         jstr(p, "protocol") ? jstr(p, "protocol") : "");
                snprintf(m->host_ip, sizeof(m->host_ip), "%s",
                         jstr(p, "hostIP") ? jstr(p, "hostIP") : "");
        }
        return n;
}

/* The CNI context and pod of a loaded config. */
static void cni_of(const cJSON *cfg, const char *root_dir, char *cache_buf, size_t cache_size,
                   struct rt_cni_ctx *ctx)
{
        const cJSON *cni = cJSON_GetObjectItemCaseSensitive(cfg, "cni");
        memset(ctx, 0, sizeof(*ctx));
        ctx->conf_dir = jstr(cni, "confDir") ? jstr(cni, "confDir") : "/etc/cni/net.d";
        ctx->bin_dirs = jstr(cni, "binDirs");
        const char *cache = jstr(cni, "cacheDir");
        if (cache != NULL && cache[0] != '\0')
                snprintf(cache_buf, cache_size, "%s", cache);
        else
                snprintf(cache_buf, cache_size, "%s/cni-cache", root_dir);
        ctx->cache_dir = cache_buf;
}

/* ---- hosts, hostname, resolv.conf ------------------------------------------- */

int rt_sandbox_hosts_content(const char *hostname, const char *dns_domain,
                             const char *const *pod_ips, size_t n_ips, const char *host_hosts,
                             const char *extra, char **ret)
{
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        if (f == NULL)
                return -1;
        if (host_hosts != NULL) {
                /* hostNetwork: the node's file (kubelet nodeHostsFileContent). */
                fputs("# Kubernetes-managed hosts file (host network).\n", f);
                fputs(host_hosts, f);
        } else {
                fputs("# Kubernetes-managed hosts file.\n"
                      "127.0.0.1\tlocalhost\n"
                      "::1\tlocalhost ip6-localhost ip6-loopback\n"
                      "fe00::0\tip6-localnet\n"
                      "fe00::0\tip6-mcastprefix\n"
                      "fe00::1\tip6-allnodes\n"
                      "fe00::2\tip6-allrouters\n",
                      f);
                for (size_t i = 0; i < n_ips; i++) {
                        if (dns_domain != NULL && dns_domain[0] != '\0')
                                fprintf(f, "%s\t%s.%s\t%s\n", pod_ips[i], hostname, dns_domain,
                                        hostname);
                        else
                                fprintf(f, "%s\t%s\n", pod_ips[i], hostname);
                }
        }
        if (extra != NULL)
                fputs(extra, f);
        if (fclose(f) != 0) {
                free(buf);
                return -1;
        }
        *ret = buf;
        return 0;
}

static bool is_loopback_ip(const char *ip)
{
        return strncmp(ip, "127.", 4) == 0 || strcmp(ip, "::1") == 0 ||
               strcmp(ip, "0:0:0:0:0:0:0:1") == 0;
}

int rt_sandbox_resolv_without_loopback(const char *text, char **ret, size_t *ret_n_servers)
{
        char *buf = NULL;
        size_t len = 0, servers = 0;
        FILE *f = open_memstream(&buf, &len);
        if (f == NULL)
                return -1;
        const char *p = text;
        while (*p != '\0') {
                const char *nl = strchr(p, '\n');
                size_t n = nl ? (size_t)(nl - p) : strlen(p);
                char ip[128] = "";
                char line[1024];
                snprintf(line, sizeof(line), "%.*s", (int)(n < 1023 ? n : 1023), p);
                bool drop = false;
                if (sscanf(line, " nameserver %127s", ip) == 1) {
                        /* A stub resolver on the host's loopback (systemd-
                         * resolved's 127.0.0.53) is unreachable from the pod. */
                        drop = is_loopback_ip(ip);
                        if (!drop)
                                servers++;
                }
                if (!drop)
                        fprintf(f, "%.*s\n", (int)n, p);
                p += n;
                if (*p == '\n')
                        p++;
        }
        if (fclose(f) != 0) {
                free(buf);
                return -1;
        }
        *ret = buf;
        if (ret_n_servers != NULL)
                *ret_n_servers = servers;
        return 0;
}

static int write_text(const char *dir, const char *name, const char *text, struct cb_error *err)
{
        char path[RT_PATH_MAX];
        if (path_join(path, sizeof(path), err, "%s/%s", dir, name) < 0)
                return -1;
        return cb_write_file_replace(path, text, strlen(text), 0644, err); /* derived */
}

static int make_resolv_conf(const struct rt_sandbox_config *cfg, char **ret, struct cb_error *err)
{
        if (cfg->resolv_conf != NULL) {
                size_t n = strlen(cfg->resolv_conf);
                bool nl = n > 0 && cfg->resolv_conf[n - 1] == '\n';
                if (asprintf(ret, "%s%s", cfg->resolv_conf, nl || n == 0 ? "" : "\n") < 0)
                        return cb_error_set(err, ENOMEM, "cannot build resolv.conf");
                return 0;
        }
        _cleanup_free_ char *host = NULL;
        struct cb_error e;
        if (cb_read_file("/etc/resolv.conf", JSON_MAX, &host, NULL, &e) < 0) {
                /* A host without resolv.conf: the pod gets an empty one. */
                *ret = strdup("");
                return *ret ? 0 : cb_error_set(err, ENOMEM, "cannot build resolv.conf");
        }
        if (cfg->host_network) {
                *ret = steal_pointer(&host);
                return 0;
        }
        size_t servers = 0;
        if (rt_sandbox_resolv_without_loopback(host, ret, &servers) < 0)
                return cb_error_set(err, ENOMEM, "cannot build resolv.conf");
        if (servers > 0)
                return 0;
        /* Only a loopback stub: use the upstream list systemd-resolved keeps,
         * as the kubelet's --resolv-conf default on such hosts does. */
        _cleanup_free_ char *upstream = NULL;
        if (cb_read_file("/run/systemd/resolve/resolv.conf", JSON_MAX, &upstream, NULL, &e) == 0) {
                free(*ret);
                *ret = NULL;
                if (rt_sandbox_resolv_without_loopback(upstream, ret, NULL) < 0)
                        return cb_error_set(err, ENOMEM, "cannot build resolv.conf");
        }
        return 0;
}

static int write_files(const struct rt_sandbox_config *cfg, const char *dir,
                       const struct rt_sandbox *sb, struct cb_error *err)
{
        _cleanup_free_ char *host_hosts = NULL;
        if (cfg->host_network && cb_read_file("/etc/hosts", JSON_MAX, &host_hosts, NULL, err) < 0)
                return -1;
        const char *ips[2] = {sb->pod_ips[0], sb->pod_ips[1]};
        _cleanup_free_ char *hosts = NULL;
        if (rt_sandbox_hosts_content(cfg->hostname, cfg->dns_domain, ips, sb->n_pod_ips, host_hosts,
                                     cfg->extra_hosts, &hosts) < 0)
                return cb_error_set(err, ENOMEM, "cannot build the hosts file");
        if (write_text(dir, "hosts", hosts, err) < 0)
                return -1;
        char hostname[300];
        if (cfg->host_network) {
                /* The host's UTS namespace: its hostname. */
                char h[256] = "";
                gethostname(h, sizeof(h) - 1);
                snprintf(hostname, sizeof(hostname), "%s\n", h);
        } else {
                snprintf(hostname, sizeof(hostname), "%s\n",
                         cfg->uts_hostname ? cfg->uts_hostname : cfg->hostname);
        }
        if (write_text(dir, "hostname", hostname, err) < 0)
                return -1;
        _cleanup_free_ char *resolv = NULL;
        if (make_resolv_conf(cfg, &resolv, err) < 0)
                return -1;
        return write_text(dir, "resolv.conf", resolv, err);
}

/* ---- the sandbox struct ------------------------------------------------------ */

static int fill_sandbox(const char *dir, const cJSON *cfg, const cJSON *state,
                        struct rt_sandbox *ret, struct cb_error *err)
{
        memset(ret, 0, sizeof(*ret));
        snprintf(ret->id, sizeof(ret->id), "%s", jstr(cfg, "id") ? jstr(cfg, "id") : "");
        bool host_net = jbool(cfg, "hostNetwork"), host_ipc = jbool(cfg, "hostIPC");
        if (path_join(ret->dir, sizeof(ret->dir), err, "%s", dir) < 0 ||
            (!host_net &&
             path_join(ret->netns_path, sizeof(ret->netns_path), err, "%s/ns/net", dir) < 0) ||
            (!host_ipc &&
             path_join(ret->ipcns_path, sizeof(ret->ipcns_path), err, "%s/ns/ipc", dir) < 0) ||
            (!host_net &&
             path_join(ret->utsns_path, sizeof(ret->utsns_path), err, "%s/ns/uts", dir) < 0) ||
            path_join(ret->hosts_path, sizeof(ret->hosts_path), err, "%s/hosts", dir) < 0 ||
            path_join(ret->hostname_path, sizeof(ret->hostname_path), err, "%s/hostname", dir) <
                0 ||
            path_join(ret->resolv_conf_path, sizeof(ret->resolv_conf_path), err, "%s/resolv.conf",
                      dir) < 0)
                return -1;
        if (jbool(state, "pinSpace")) {
                /* <root_dir>/sandboxes/<id> -> <root_dir>/sandboxes/.pins-mntns */
                const char *slash = strrchr(dir, '/');
                if (path_join(ret->pins_mntns, sizeof(ret->pins_mntns), err, "%.*s/" PINSPACE_NAME,
                              (int)(slash - dir), dir) < 0)
                        return -1;
        }
        const cJSON *ip;
        cJSON_ArrayForEach(ip, cJSON_GetObjectItemCaseSensitive(state, "podIPs"))
        {
                if (cJSON_IsString(ip) && ret->n_pod_ips < 2)
                        snprintf(ret->pod_ips[ret->n_pod_ips++], sizeof(ret->pod_ips[0]), "%s",
                                 ip->valuestring);
        }
        ret->host_pid = jbool(cfg, "hostPID");
        const cJSON *pp = cJSON_GetObjectItemCaseSensitive(state, "pausePid");
        const cJSON *ps = cJSON_GetObjectItemCaseSensitive(state, "pauseStartTime");
        if (jbool(cfg, "sharePID") && cJSON_IsNumber(pp) && cJSON_IsNumber(ps)) {
                ret->pause_pid = (pid_t)pp->valuedouble;
                ret->pause_start_time = (uint64_t)ps->valuedouble;
                if (path_join(ret->pidns_path, sizeof(ret->pidns_path), err, "%s/ns/pid", dir) < 0)
                        return -1;
                if (jbool(state, "procfs") && path_join(ret->procfs_path, sizeof(ret->procfs_path),
                                                        err, "%s/ns/proc", dir) < 0)
                        return -1;
        }
        return 0;
}

/* ---- create ------------------------------------------------------------------ */

static int validate_config(const struct rt_sandbox_config *cfg, struct cb_error *err)
{
        const struct {
                const char *field, *value;
        } req[] = {
            {"name", cfg->name},
            {"namespace", cfg->namespace_},
            {"uid", cfg->uid},
            {"hostname", cfg->hostname},
        };
        for (size_t i = 0; i < CB_ARRAY_SIZE(req); i++)
                if (req[i].value == NULL || req[i].value[0] == '\0')
                        return cb_error_set(err, EINVAL, "sandbox %s: %s must be set", cfg->id,
                                            req[i].field);
        if (strlen(cfg->hostname) > 64 ||
            (cfg->uts_hostname != NULL && strlen(cfg->uts_hostname) > 64))
                return cb_error_set(err, EINVAL,
                                    "sandbox %s: hostname \"%s\" is longer than 64 characters",
                                    cfg->id, cfg->uts_hostname ? cfg->uts_hostname : cfg->hostname);
        if (cfg->share_pid && !cfg->host_pid &&
            (cfg->pause_path == NULL || cfg->pause_path[0] != '/'))
                return cb_error_set(err, EINVAL,
                                    "sandbox %s: a shared PID namespace needs pause_path, the "
                                    "absolute path of the cubelet binary",
                                    cfg->id);
        if (!cfg->host_network && (cfg->cni.conf_dir == NULL || cfg->cni.conf_dir[0] == '\0'))
                return cb_error_set(
                    err, EINVAL, "sandbox %s: cni.conf_dir must be set for a pod network", cfg->id);
        return 0;
}

static uint64_t mono_us(void)
{
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (uint64_t)t.tv_sec * 1000000u + (uint64_t)t.tv_nsec / 1000u;
}

/* *ns_us, *net_us: when the namespaces were pinned and the CNI ADD
 * answered (0: not taken). */
static int create_steps(const struct rt_sandbox_config *cfg, const char *dir, const char *pinspace,
                        cJSON *state, struct rt_sandbox *ret, uint64_t *ns_us, uint64_t *net_us,
                        struct cb_error *err)
{
        char ns_dir[RT_PATH_MAX];
        if (path_join(ns_dir, sizeof(ns_dir), err, "%s/ns", dir) < 0)
                return -1;
        int flags = (cfg->host_network ? 0 : CLONE_NEWNET | CLONE_NEWUTS) |
                    (cfg->host_ipc ? 0 : CLONE_NEWIPC);
        if (flags != 0) {
                if (mkdir(ns_dir, 0700) < 0 && errno != EEXIST)
                        return cb_error_set(err, errno, "cannot create %s", ns_dir);
                if (rt_ns_pin(ns_dir, flags, cfg->uts_hostname ? cfg->uts_hostname : cfg->hostname,
                              pinspace, err) < 0)
                        return cb_error_prefix(err, "sandbox %s", cfg->id);
        }
        if (cfg->share_pid && !cfg->host_pid) {
                if (mkdir(ns_dir, 0700) < 0 && errno != EEXIST)
                        return cb_error_set(err, errno, "cannot create %s", ns_dir);
                char procfs[RT_PATH_MAX];
                if (path_join(procfs, sizeof(procfs), err, "%s/proc", ns_dir) < 0)
                        return -1;
                if (mkdir(procfs, 0700) < 0)
                        return cb_error_set(err, errno, "cannot create %s", procfs);
                pid_t pid;
                uint64_t start;
                if (rt_pause_start(cfg->pause_path, cfg->cgroup_parent, procfs, &pid, &start, err) <
                    0)
                        return cb_error_prefix(err, "sandbox %s", cfg->id);
                /* Recorded before the pin: a crash now still stops it. */
                cJSON_AddNumberToObject(state, "pausePid", (double)pid);
                cJSON_AddNumberToObject(state, "pauseStartTime", (double)start);
                cJSON_AddBoolToObject(state, "procfs", true);
                if (write_json(dir, "state.json", state, err) < 0 ||
                    rt_ns_pin_process(pid, ns_dir, "pid", pinspace, err) < 0)
                        return cb_error_prefix(err, "sandbox %s", cfg->id);
        }
        cJSON_ReplaceItemInObjectCaseSensitive(state, "namespaces", cJSON_CreateBool(true));
        if (write_json(dir, "state.json", state, err) < 0)
                return -1;
        if (flags != 0 || cfg->share_pid)
                *ns_us = mono_us();
        if (cfg->n_sysctls > 0) {
                char net[RT_PATH_MAX] = "", ipc[RT_PATH_MAX] = "";
                if ((!cfg->host_network &&
                     path_join(net, sizeof(net), err, "%s/net", ns_dir) < 0) ||
                    (!cfg->host_ipc && path_join(ipc, sizeof(ipc), err, "%s/ipc", ns_dir) < 0))
                        return -1;
                if (rt_sysctls_apply(net, ipc, pinspace, cfg->sysctls, cfg->n_sysctls, err) < 0)
                        return cb_error_prefix(err, "sandbox %s", cfg->id);
        }

        struct rt_cni_result res = {0};
        if (!cfg->host_network) {
                /* Recorded before the ADD: a crash inside it must lead to a DEL. */
                cJSON_ReplaceItemInObjectCaseSensitive(state, "cniAdd",
                                                       cJSON_CreateString("started"));
                if (write_json_as(dir, "state.json", state, true, err) < 0)
                        return -1;
                char cache[RT_PATH_MAX];
                if (cfg->cni.cache_dir != NULL && cfg->cni.cache_dir[0] != '\0')
                        snprintf(cache, sizeof(cache), "%s", cfg->cni.cache_dir);
                else if (path_join(cache, sizeof(cache), err, "%s/cni-cache", cfg->root_dir) < 0)
                        return -1;
                struct rt_cni_ctx ctx = {cfg->cni.conf_dir, cfg->cni.bin_dirs, cache, 0};
                char netns[RT_PATH_MAX];
                if (path_join(netns, sizeof(netns), err, "%s/net", ns_dir) < 0)
                        return -1;
                struct rt_cni_pod pod = {cfg->id,  netns,      cfg->name,   cfg->namespace_,
                                         cfg->uid, cfg->ports, cfg->n_ports};
                if (rt_cni_add(&ctx, &pod, &res, err) < 0)
                        return -1;
                cJSON *ips = cJSON_CreateArray();
                for (size_t i = 0; i < res.n_pod_ips; i++)
                        cJSON_AddItemToArray(ips, cJSON_CreateString(res.pod_ips[i]));
                cJSON_ReplaceItemInObjectCaseSensitive(state, "podIPs", ips);
                cJSON_ReplaceItemInObjectCaseSensitive(state, "cniAdd", cJSON_CreateString("done"));
                if (write_json(dir, "state.json", state, err) < 0)
                        return -1;
                *net_us = mono_us();
        }
        ret->n_pod_ips = res.n_pod_ips;
        for (size_t i = 0; i < res.n_pod_ips; i++)
                memcpy(ret->pod_ips[i], res.pod_ips[i], sizeof(ret->pod_ips[i]));
        if (write_files(cfg, dir, ret, err) < 0)
                return cb_error_prefix(err, "sandbox %s", cfg->id);
        cJSON_ReplaceItemInObjectCaseSensitive(state, "complete", cJSON_CreateBool(true));
        return write_json(dir, "state.json", state, err);
}

int rt_sandbox_create(const struct rt_sandbox_config *cfg, struct rt_sandbox *ret,
                      struct cb_error *err)
{
        char dir[RT_PATH_MAX], sbs[RT_PATH_MAX], pinspace[RT_PATH_MAX];
        if (sandbox_dir(cfg->root_dir, cfg->id, dir, sizeof(dir), err) < 0 ||
            validate_config(cfg, err) < 0 ||
            path_join(sbs, sizeof(sbs), err, "%s/sandboxes", cfg->root_dir) < 0 ||
            path_join(pinspace, sizeof(pinspace), err, "%s/" PINSPACE_NAME, sbs) < 0)
                return -1;
        if (cb_mkdir_p(sbs, 0711, 0711, err) < 0 || rt_ns_make_private_dir(sbs, err) < 0 ||
            rt_ns_pinspace_ensure(sbs, pinspace, err) < 0)
                return -1;
        if (mkdir(dir, 0700) < 0) {
                if (errno == EEXIST)
                        return cb_error_set(err, EEXIST,
                                            "sandbox %s already exists in %s; remove it first",
                                            cfg->id, sbs);
                return cb_error_set(err, errno, "cannot create %s", dir);
        }
        _cleanup_cjson_ cJSON *config = config_to_json(cfg);
        _cleanup_cjson_ cJSON *state = cJSON_CreateObject();
        int rc = -1;
        uint64_t ns_us = 0, net_us = 0;
        if (config == NULL || state == NULL) {
                cb_error_set(err, ENOMEM, "sandbox %s", cfg->id);
        } else {
                cJSON_AddNumberToObject(state, "version", 1);
                cJSON_AddBoolToObject(state, "namespaces", false);
                /* its IPC, UTS and PID pins are in the pin space */
                cJSON_AddBoolToObject(state, "pinSpace", true);
                cJSON_AddStringToObject(state, "cniAdd", "none");
                cJSON_AddArrayToObject(state, "podIPs");
                cJSON_AddBoolToObject(state, "complete", false);
                /* durable only before a CNI ADD: a host-network sandbox
                 * leaves nothing that outlives a reboot (its pins and
                 * cgroups go with it), so its record needs no fsync */
                if (write_json_as(dir, "config.json", config, !cfg->host_network, err) == 0 &&
                    write_json(dir, "state.json", state, err) == 0 &&
                    create_steps(cfg, dir, pinspace, state, ret, &ns_us, &net_us, err) == 0 &&
                    (rc = fill_sandbox(dir, config, state, ret, err)) == 0) {
                        /* fill_sandbox clears ret: the stamps after it */
                        ret->namespaces_mono_us = ns_us;
                        ret->network_mono_us = net_us;
                }
        }
        if (rc < 0) {
                struct cb_error e2;
                cb_error_clear(&e2);
                if (rt_sandbox_remove(cfg->root_dir, cfg->id, &e2) < 0) {
                        size_t n = strlen(err->msg);
                        snprintf(err->msg + n, sizeof(err->msg) - n, "; teardown also failed: %s",
                                 e2.msg);
                }
        }
        return rc;
}

/* ---- load, check --------------------------------------------------------------- */

static int load_json_pair(const char *root_dir, const char *id, char *dir, cJSON **ret_cfg,
                          cJSON **ret_state, struct cb_error *err)
{
        char p[RT_PATH_MAX];
        if (sandbox_dir(root_dir, id, dir, RT_PATH_MAX, err) < 0 ||
            path_join(p, sizeof(p), err, "%s/config.json", dir) < 0)
                return -1;
        if (access(dir, F_OK) < 0)
                return cb_error_set(err, errno, "sandbox %s not found in %s/sandboxes", id,
                                    root_dir);
        *ret_cfg = read_json(p, err);
        if (*ret_cfg == NULL)
                return cb_error_prefix(err, "sandbox %s", id);
        if (path_join(p, sizeof(p), err, "%s/state.json", dir) < 0 ||
            (*ret_state = read_json(p, err)) == NULL) {
                cJSON_Delete(*ret_cfg);
                *ret_cfg = NULL;
                return cb_error_prefix(err, "sandbox %s", id);
        }
        return 0;
}

int rt_sandbox_load(const char *root_dir, const char *id, struct rt_sandbox *ret,
                    struct cb_error *err)
{
        char dir[RT_PATH_MAX];
        _cleanup_cjson_ cJSON *cfg = NULL;
        _cleanup_cjson_ cJSON *state = NULL;
        if (load_json_pair(root_dir, id, dir, &cfg, &state, err) < 0)
                return -1;
        if (!jbool(state, "complete"))
                return cb_error_set(err, 0,
                                    "sandbox %s was not completely created (the agent stopped "
                                    "during its creation); remove it and create it again",
                                    id);
        return fill_sandbox(dir, cfg, state, ret, err);
}

int rt_sandbox_check(const char *root_dir, const char *id, struct cb_error *err)
{
        char dir[RT_PATH_MAX];
        _cleanup_cjson_ cJSON *cfg = NULL;
        _cleanup_cjson_ cJSON *state = NULL;
        struct rt_sandbox sb;
        if (load_json_pair(root_dir, id, dir, &cfg, &state, err) < 0)
                return -1;
        if (!jbool(state, "complete"))
                return cb_error_set(err, 0, "sandbox %s was not completely created", id);
        if (fill_sandbox(dir, cfg, state, &sb, err) < 0)
                return -1;
        /* net in the host, the others in the pin space: one trip there
         * (and one per pin only to name a missing one) */
        const char *pins[] = {sb.netns_path, sb.ipcns_path, sb.utsns_path};
        bool space_ok = rt_ns_all_pinned_in(sb.pins_mntns, pins + 1, 2);
        for (size_t i = 0; i < CB_ARRAY_SIZE(pins); i++)
                if (pins[i][0] != '\0' &&
                    (i == 0 ? !rt_ns_is_pinned(pins[i])
                            : !space_ok && !rt_ns_all_pinned_in(sb.pins_mntns, pins + i, 1)))
                        return cb_error_set(err, 0,
                                            "sandbox %s: the %s namespace pin %s is not mounted",
                                            id, ns_names[i], pins[i]);
        if (sb.pidns_path[0] != '\0' && !rt_pause_alive(sb.pause_pid, sb.pause_start_time))
                return cb_error_set(err, 0,
                                    "sandbox %s: the pause process %d (the pod's PID namespace "
                                    "init) is gone",
                                    id, (int)sb.pause_pid);
        if (sb.procfs_path[0] != '\0' && !procfs_mounted(sb.procfs_path))
                return cb_error_set(err, 0, "sandbox %s: the pod's procfs %s is not mounted", id,
                                    sb.procfs_path);
        if (jbool(cfg, "hostNetwork"))
                return 0;
        char cache[RT_PATH_MAX];
        struct rt_cni_ctx ctx;
        cni_of(cfg, root_dir, cache, sizeof(cache), &ctx);
        struct rt_port_mapping ports[64];
        size_t n_ports = config_ports(cfg, ports, CB_ARRAY_SIZE(ports));
        struct rt_cni_pod pod = {
            id,    sb.netns_path, jstr(cfg, "name"), jstr(cfg, "namespace"), jstr(cfg, "uid"),
            ports, n_ports};
        return rt_cni_check(&ctx, &pod, err);
}

/* ---- remove -------------------------------------------------------------------- */

/* Removes dir's files and subdirs (never crossing a mount point: a pin
 * still mounted makes the rmdir fail, which is reported). */
static int remove_tree(const char *dir, struct cb_error *err)
{
        DIR *d = opendir(dir);
        if (d == NULL)
                return errno == ENOENT ? 0 : cb_error_set(err, errno, "cannot open %s", dir);
        struct dirent *de;
        int rc = 0;
        while ((de = readdir(d)) != NULL) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                char p[RT_PATH_MAX];
                if (path_join(p, sizeof(p), err, "%s/%s", dir, de->d_name) < 0) {
                        rc = -1;
                        continue;
                }
                if (rt_ns_is_pinned(p) && rt_ns_unpin(p, err) < 0) {
                        rc = -1;
                        continue;
                }
                if (procfs_mounted(p)) { /* never walked into */
                        if (procfs_unmount(p, err) < 0)
                                rc = -1;
                        continue;
                }
                struct stat st;
                if (lstat(p, &st) < 0)
                        continue;
                if (S_ISDIR(st.st_mode)) {
                        if (remove_tree(p, err) < 0)
                                rc = -1;
                } else if (unlink(p) < 0 && errno != ENOENT) {
                        rc = cb_error_set(err, errno, "cannot remove %s", p);
                }
        }
        closedir(d);
        if (rc == 0 && rmdir(dir) < 0 && errno != ENOENT)
                rc = cb_error_set(err, errno, "cannot remove %s", dir);
        return rc;
}

int rt_sandbox_remove(const char *root_dir, const char *id, struct cb_error *err)
{
        char dir[RT_PATH_MAX], p[RT_PATH_MAX];
        if (sandbox_dir(root_dir, id, dir, sizeof(dir), err) < 0)
                return -1;
        struct stat st;
        if (lstat(dir, &st) < 0) {
                if (errno == ENOENT)
                        return 0;
                return cb_error_set(err, errno, "cannot inspect %s", dir);
        }
        struct cb_error ignored;
        _cleanup_cjson_ cJSON *cfg = NULL;
        _cleanup_cjson_ cJSON *state = NULL;
        if (path_join(p, sizeof(p), err, "%s/config.json", dir) < 0)
                return -1;
        cfg = read_json(p, &ignored); /* missing: the crash came before any setup */
        if (path_join(p, sizeof(p), err, "%s/state.json", dir) < 0)
                return -1;
        state = read_json(p, &ignored);
        const char *cni_add = jstr(state, "cniAdd");
        /* Without a readable state the ADD may have run: DEL to be sure. */
        bool need_del = cfg != NULL && !jbool(cfg, "hostNetwork") &&
                        (state == NULL || cni_add == NULL || strcmp(cni_add, "none") != 0);
        if (need_del) {
                char cache[RT_PATH_MAX], netns[RT_PATH_MAX];
                struct rt_cni_ctx ctx;
                cni_of(cfg, root_dir, cache, sizeof(cache), &ctx);
                if (path_join(netns, sizeof(netns), err, "%s/ns/net", dir) < 0)
                        return -1;
                if (!rt_ns_is_pinned(netns))
                        netns[0] = '\0'; /* gone: plugins still release IPAM */
                struct rt_port_mapping ports[64];
                size_t n_ports = config_ports(cfg, ports, CB_ARRAY_SIZE(ports));
                struct rt_cni_pod pod = {id,
                                         netns,
                                         jstr(cfg, "name") ? jstr(cfg, "name") : id,
                                         jstr(cfg, "namespace") ? jstr(cfg, "namespace") : "-",
                                         jstr(cfg, "uid") ? jstr(cfg, "uid") : id,
                                         ports,
                                         n_ports};
                if (rt_cni_del(&ctx, &pod, err) < 0)
                        return cb_error_prefix(err, "sandbox %s", id);
                /* Record the DEL, so a failure below does not repeat it. */
                if (state != NULL) {
                        cJSON_ReplaceItemInObjectCaseSensitive(state, "cniAdd",
                                                               cJSON_CreateString("none"));
                        cJSON_ReplaceItemInObjectCaseSensitive(state, "complete",
                                                               cJSON_CreateBool(false));
                        write_json(dir, "state.json", state, &ignored);
                }
        }
        const cJSON *pp = cJSON_GetObjectItemCaseSensitive(state, "pausePid");
        const cJSON *ps = cJSON_GetObjectItemCaseSensitive(state, "pauseStartTime");
        if (cJSON_IsNumber(pp) && cJSON_IsNumber(ps) &&
            rt_pause_stop((pid_t)pp->valuedouble, (uint64_t)ps->valuedouble, err) < 0)
                return cb_error_prefix(err, "sandbox %s", id);
        /* ipc, uts and pid in the pin space (when there is one: gone, its
         * pins went with it), then all in the host (a sandbox of an older
         * cubelet, and the net pin) */
        char pins[4][RT_PATH_MAX], space[RT_PATH_MAX];
        const char *pin_list[4];
        for (size_t i = 0; i < CB_ARRAY_SIZE(pins); i++) {
                const char *name = i < CB_ARRAY_SIZE(ns_names) ? ns_names[i] : "pid";
                if (path_join(pins[i], sizeof(pins[i]), err, "%s/ns/%s", dir, name) < 0)
                        return -1;
                pin_list[i] = pins[i];
        }
        if (path_join(space, sizeof(space), err, "%s/sandboxes/" PINSPACE_NAME, root_dir) < 0)
                return -1;
        if (rt_ns_is_pinned(space) && rt_ns_unpin_in(space, pin_list + 1, 3, err) < 0)
                return cb_error_prefix(err, "sandbox %s", id);
        if (rt_ns_unpin_in(NULL, pin_list, 4, err) < 0)
                return cb_error_prefix(err, "sandbox %s", id);
        if (path_join(p, sizeof(p), err, "%s/ns/proc", dir) < 0 || procfs_unmount(p, err) < 0)
                return cb_error_prefix(err, "sandbox %s", id);
        if (remove_tree(dir, err) < 0)
                return cb_error_prefix(err, "sandbox %s", id);
        return 0;
}

/* ---- list ------------------------------------------------------------------------ */

void rt_sandbox_ids_free(char **ids, size_t n)
{
        for (size_t i = 0; i < n; i++)
                free(ids[i]);
        free(ids);
}

static int cmp_str(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

int rt_sandbox_list(const char *root_dir, char ***ret_ids, size_t *ret_n, struct cb_error *err)
{
        char sbs[RT_PATH_MAX];
        *ret_ids = NULL;
        *ret_n = 0;
        if (path_join(sbs, sizeof(sbs), err, "%s/sandboxes", root_dir) < 0)
                return -1;
        DIR *d = opendir(sbs);
        if (d == NULL)
                return errno == ENOENT ? 0 : cb_error_set(err, errno, "cannot read %s", sbs);
        char **ids = NULL;
        size_t n = 0;
        struct dirent *de;
        struct cb_error ignored;
        while ((de = readdir(d)) != NULL) {
                if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
                        continue;
                if (validate_id(de->d_name, &ignored) < 0)
                        continue;
                char **nids = realloc(ids, (n + 1) * sizeof(*ids));
                char *s = strdup(de->d_name);
                if (nids == NULL || s == NULL) {
                        free(s);
                        closedir(d);
                        rt_sandbox_ids_free(nids ? nids : ids, n);
                        return cb_error_set(err, ENOMEM, "cannot list %s", sbs);
                }
                ids = nids;
                ids[n++] = s;
        }
        closedir(d);
        if (n > 0)
                qsort(ids, n, sizeof(*ids), cmp_str);
        *ret_ids = ids;
        *ret_n = n;
        return 0;
}

int rt_sandbox_release_root(const char *root_dir, struct cb_error *err)
{
        char **ids;
        size_t n;
        if (rt_sandbox_list(root_dir, &ids, &n, err) < 0)
                return -1;
        rt_sandbox_ids_free(ids, n);
        if (n > 0)
                return 0;
        char sbs[RT_PATH_MAX], space[RT_PATH_MAX];
        if (path_join(sbs, sizeof(sbs), err, "%s/sandboxes", root_dir) < 0 ||
            path_join(space, sizeof(space), err, "%s/" PINSPACE_NAME, sbs) < 0 ||
            rt_ns_unpin(space, err) < 0 || rt_ns_release_private_dir(sbs, err) < 0)
                return -1;
        if (rmdir(sbs) < 0 && errno != ENOENT && errno != ENOTEMPTY)
                return cb_error_set(err, errno, "cannot remove %s", sbs);
        return 0;
}
