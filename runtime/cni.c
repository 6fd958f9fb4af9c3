/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CNI networking (runtime/cni.h): configuration loading, plugin stdin and
 * CNI_ARGS construction, result parsing, plugin execution and the ADD /
 * CHECK / DEL sequences with their result cache.
 *
 * Plugins are started with posix_spawn, never with fork-then-work, because
 * the agent is multi-threaded: glibc's posix_spawn uses a CLONE_VFORK child
 * that only applies the file actions and attributes and then execs. All
 * signal dispositions are reset and the mask is cleared (a plugin must not
 * inherit the agent's ignored SIGPIPE or blocked SIGCHLD), and every fd
 * other than the three stdio ends is closed (closefrom), since libraries
 * in the agent (Debian's libcurl 7.88) leave sockets without O_CLOEXEC.
 * stdin is a socketpair rather than a pipe so writes can use MSG_NOSIGNAL:
 * a plugin that exits without reading its input must not kill the agent
 * with SIGPIPE. Waiting is event-driven: poll() on the stdio ends and the
 * plugin's pidfd, with the deadline as poll's timeout.
 */
#include "runtime/cni.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/cleanup.h"
#include "lib/file.h"

#define CONF_MAX   (1u << 20)
#define OUT_MAX    (1u << 20)
#define ERROUT_MAX (16u << 10)

/* ---- configuration ------------------------------------------------------ */

void rt_cni_netconf_release(struct rt_cni_netconf *nc)
{
        if (nc->list != NULL)
                cJSON_Delete(nc->list);
        memset(nc, 0, sizeof(*nc));
}

static const char *json_str(const cJSON *obj, const char *key)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
        return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Takes ownership of list. */
static int netconf_validate(cJSON *list, struct rt_cni_netconf *ret, struct cb_error *err)
{
        _cleanup_cjson_ cJSON *owned = list;
        const char *name = json_str(list, "name");
        if (name == NULL || name[0] == '\0')
                return cb_error_set(err, 0, "\"name\" is missing; every CNI network needs one");
        const char *version = json_str(list, "cniVersion");
        if (version == NULL || version[0] == '\0')
                return cb_error_set(err, 0, "network %s: \"cniVersion\" is missing", name);
        const cJSON *plugins = cJSON_GetObjectItemCaseSensitive(list, "plugins");
        int n = cJSON_GetArraySize(plugins);
        if (!cJSON_IsArray(plugins) || n == 0)
                return cb_error_set(err, 0, "network %s: \"plugins\" must be a non-empty list",
                                    name);
        for (int i = 0; i < n; i++) {
                const cJSON *p = cJSON_GetArrayItem(plugins, i);
                const char *type = json_str(p, "type");
                if (!cJSON_IsObject(p) || type == NULL || type[0] == '\0')
                        return cb_error_set(err, 0, "network %s: plugins[%d].type is missing", name,
                                            i);
                if (strchr(type, '/') != NULL || strcmp(type, ".") == 0 || strcmp(type, "..") == 0)
                        return cb_error_set(err, 0,
                                            "network %s: plugins[%d].type %s is not a plain "
                                            "file name",
                                            name, i, type);
        }
        memset(ret, 0, sizeof(*ret));
        ret->list = steal_pointer(&owned);
        ret->name = name;
        ret->cni_version = version;
        ret->n_plugins = (size_t)n;
        return 0;
}

int rt_cni_parse_netconf(const char *text, bool single_plugin, struct rt_cni_netconf *ret,
                         struct cb_error *err)
{
        cJSON *j = cJSON_Parse(text);
        if (j == NULL || !cJSON_IsObject(j)) {
                cJSON_Delete(j);
                return cb_error_set(err, 0, "not a JSON object");
        }
        /* A .conf holds a single plugin: wrap it into a list, as libcni's
         * ConfListFromConf does. A file that already has "plugins" is a
         * list whatever its extension. */
        if (single_plugin && cJSON_GetObjectItemCaseSensitive(j, "plugins") == NULL) {
                cJSON *list = cJSON_CreateObject();
                cJSON *plugins = cJSON_AddArrayToObject(list, "plugins");
                const char *v = json_str(j, "cniVersion");
                const char *name = json_str(j, "name");
                if (v != NULL)
                        cJSON_AddStringToObject(list, "cniVersion", v);
                if (name != NULL)
                        cJSON_AddStringToObject(list, "name", name);
                cJSON_AddItemToArray(plugins, j);
                j = list;
        }
        return netconf_validate(j, ret, err);
}

static int conf_filter(const struct dirent *d)
{
        const char *dot = strrchr(d->d_name, '.');
        if (d->d_name[0] == '.' || dot == NULL)
                return 0;
        return strcmp(dot, ".conf") == 0 || strcmp(dot, ".conflist") == 0 ||
               strcmp(dot, ".json") == 0;
}

int rt_cni_load_netconf(const char *conf_dir, struct rt_cni_netconf *ret, struct cb_error *err)
{
        struct dirent **names = NULL;
        int n = scandir(conf_dir, &names, conf_filter, alphasort);
        if (n < 0)
                return cb_error_set(err, errno, "cannot read the CNI config dir %s", conf_dir);
        char path[RT_PATH_MAX] = "";
        for (int i = 0; i < n; i++) {
                if (path[0] == '\0') {
                        char p[RT_PATH_MAX];
                        struct stat st;
                        snprintf(p, sizeof(p), "%s/%s", conf_dir, names[i]->d_name);
                        if (stat(p, &st) == 0 && S_ISREG(st.st_mode))
                                memcpy(path, p, sizeof(path));
                }
                free(names[i]);
        }
        free(names);
        if (path[0] == '\0')
                return cb_error_set(err, ENOENT,
                                    "no CNI network config (*.conf, *.conflist, *.json) in %s; "
                                    "install a CNI network or use hostNetwork",
                                    conf_dir);
        _cleanup_free_ char *text = NULL;
        if (cb_read_file(path, CONF_MAX, &text, NULL, err) < 0)
                return -1;
        size_t len = strlen(path);
        bool single = !(len > 9 && strcmp(path + len - 9, ".conflist") == 0);
        if (rt_cni_parse_netconf(text, single, ret, err) < 0)
                return cb_error_prefix(err, "CNI config %s", path);
        snprintf(ret->path, sizeof(ret->path), "%s", path);
        return 0;
}

/* ---- stdin, CNI_ARGS, runtimeConfig -------------------------------------- */

static bool arg_value_ok(const char *v)
{
        return v != NULL && v[0] != '\0' && strpbrk(v, ";=") == NULL;
}

int rt_cni_build_args(const struct rt_cni_pod *pod, char *buf, size_t size, struct cb_error *err)
{
        const struct {
                const char *key, *value;
        } kv[] = {
            {"K8S_POD_NAMESPACE", pod->namespace_},
            {"K8S_POD_NAME", pod->name},
            {"K8S_POD_INFRA_CONTAINER_ID", pod->container_id},
            {"K8S_POD_UID", pod->uid},
        };
        for (size_t i = 0; i < CB_ARRAY_SIZE(kv); i++)
                if (!arg_value_ok(kv[i].value))
                        return cb_error_set(err, 0,
                                            "CNI_ARGS: %s \"%s\" must be non-empty without ';' "
                                            "or '='",
                                            kv[i].key, kv[i].value ? kv[i].value : "");
        int n =
            snprintf(buf, size, "IgnoreUnknown=1;%s=%s;%s=%s;%s=%s;%s=%s", kv[0].key, kv[0].value,
                     kv[1].key, kv[1].value, kv[2].key, kv[2].value, kv[3].key, kv[3].value);
        if (n < 0 || (size_t)n >= size)
                return cb_error_set(err, ENAMETOOLONG, "CNI_ARGS for pod %s/%s is too long",
                                    pod->namespace_, pod->name);
        return 0;
}

cJSON *rt_cni_capability_args(const struct rt_port_mapping *ports, size_t n_ports)
{
        cJSON *caps = cJSON_CreateObject();
        cJSON *pm = cJSON_AddArrayToObject(caps, "portMappings");
        if (pm == NULL) {
                cJSON_Delete(caps);
                return NULL;
        }
        for (size_t i = 0; i < n_ports; i++) {
                cJSON *m = cJSON_CreateObject();
                cJSON_AddItemToArray(pm, m);
                cJSON_AddNumberToObject(m, "hostPort", ports[i].host_port);
                cJSON_AddNumberToObject(m, "containerPort", ports[i].container_port);
                cJSON_AddStringToObject(m, "protocol",
                                        ports[i].protocol[0] ? ports[i].protocol : "tcp");
                if (ports[i].host_ip[0] != '\0')
                        cJSON_AddStringToObject(m, "hostIP", ports[i].host_ip);
        }
        return caps;
}

cJSON *rt_cni_plugin_stdin(const struct rt_cni_netconf *nc, size_t i, const cJSON *prev_result,
                           const cJSON *capability_args, struct cb_error *err)
{
        const cJSON *plugins = cJSON_GetObjectItemCaseSensitive(nc->list, "plugins");
        const cJSON *p = cJSON_GetArrayItem(plugins, (int)i);
        cJSON *conf = cJSON_Duplicate(p, 1);
        if (conf == NULL) {
                cb_error_set(err, ENOMEM, "cannot build the stdin of CNI plugin %zu", i);
                return NULL;
        }
        cJSON_DeleteItemFromObjectCaseSensitive(conf, "name");
        cJSON_DeleteItemFromObjectCaseSensitive(conf, "cniVersion");
        cJSON_DeleteItemFromObjectCaseSensitive(conf, "prevResult");
        cJSON_DeleteItemFromObjectCaseSensitive(conf, "runtimeConfig");
        cJSON_AddStringToObject(conf, "name", nc->name);
        cJSON_AddStringToObject(conf, "cniVersion", nc->cni_version);
        if (prev_result != NULL)
                cJSON_AddItemToObject(conf, "prevResult", cJSON_Duplicate(prev_result, 1));
        /* runtimeConfig carries only what the plugin asked for through its
         * "capabilities" (libcni's injectRuntimeConfig). */
        const cJSON *caps = cJSON_GetObjectItemCaseSensitive(p, "capabilities");
        cJSON *rc = NULL;
        const cJSON *c;
        cJSON_ArrayForEach(c, caps)
        {
                const cJSON *arg = cJSON_GetObjectItemCaseSensitive(capability_args, c->string);
                if (!cJSON_IsTrue(c) || arg == NULL)
                        continue;
                if (rc == NULL)
                        rc = cJSON_AddObjectToObject(conf, "runtimeConfig");
                cJSON_AddItemToObject(rc, c->string, cJSON_Duplicate(arg, 1));
        }
        return conf;
}

/* ---- results and errors -------------------------------------------------- */

static void add_ip(struct rt_cni_result *r, const char *cidr)
{
        char ip[64];
        snprintf(ip, sizeof(ip), "%s", cidr);
        char *slash = strchr(ip, '/');
        if (slash != NULL)
                *slash = '\0';
        if (ip[0] == '\0' || r->n_ips >= CB_ARRAY_SIZE(r->ips))
                return;
        memcpy(r->ips[r->n_ips++], ip, sizeof(ip));
}

int rt_cni_parse_result(const cJSON *result, struct rt_cni_result *ret, struct cb_error *err)
{
        memset(ret, 0, sizeof(*ret));
        if (!cJSON_IsObject(result))
                return cb_error_set(err, 0, "the CNI result is not a JSON object");
        const cJSON *ips = cJSON_GetObjectItemCaseSensitive(result, "ips");
        const cJSON *it;
        cJSON_ArrayForEach(it, ips)
        {
                const char *addr = json_str(it, "address");
                if (addr == NULL)
                        return cb_error_set(err, 0,
                                            "the CNI result has an ips[] entry without "
                                            "\"address\"");
                add_ip(ret, addr);
        }
        /* Results of spec 0.2.0 and older: ip4.ip / ip6.ip. */
        const char *legacy[] = {"ip4", "ip6"};
        for (size_t i = 0; i < 2; i++) {
                const char *a = json_str(cJSON_GetObjectItemCaseSensitive(result, legacy[i]), "ip");
                if (a != NULL)
                        add_ip(ret, a);
        }
        cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(result, "interfaces"))
        {
                const char *name = json_str(it, "name");
                if (name != NULL && ret->n_interfaces < CB_ARRAY_SIZE(ret->interfaces))
                        snprintf(ret->interfaces[ret->n_interfaces++], sizeof(ret->interfaces[0]),
                                 "%s", name);
        }
        ret->n_routes =
            (size_t)cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(result, "routes"));
        /* The pod IPs: the first IPv4 address, then the first IPv6 one. */
        for (int v6 = 0; v6 <= 1; v6++) {
                for (size_t i = 0; i < ret->n_ips; i++) {
                        if ((strchr(ret->ips[i], ':') != NULL) == (v6 == 1)) {
                                memcpy(ret->pod_ips[ret->n_pod_ips++], ret->ips[i],
                                       sizeof(ret->ips[i]));
                                break;
                        }
                }
        }
        return 0;
}

static void trim_copy(char *buf, size_t size, const char *s)
{
        while (*s == ' ' || *s == '\n' || *s == '\t' || *s == '\r')
                s++;
        snprintf(buf, size, "%s", s);
        size_t n = strlen(buf);
        while (n > 0 && (buf[n - 1] == ' ' || buf[n - 1] == '\n' || buf[n - 1] == '\t' ||
                         buf[n - 1] == '\r'))
                buf[--n] = '\0';
}

void rt_cni_describe_failure(const char *out, const char *errout, int status, char *buf,
                             size_t size, int *ret_code)
{
        *ret_code = 0;
        _cleanup_cjson_ cJSON *j = out != NULL ? cJSON_Parse(out) : NULL;
        const char *msg = json_str(j, "msg");
        if (msg != NULL) {
                const cJSON *code = cJSON_GetObjectItemCaseSensitive(j, "code");
                const char *details = json_str(j, "details");
                *ret_code = cJSON_IsNumber(code) ? code->valueint : 0;
                if (details != NULL && details[0] != '\0')
                        snprintf(buf, size, "%s (code %d): %s", msg, *ret_code, details);
                else
                        snprintf(buf, size, "%s (code %d)", msg, *ret_code);
                return;
        }
        if (errout != NULL && errout[0] != '\0') {
                trim_copy(buf, size, errout);
                if (buf[0] != '\0')
                        return;
        }
        if (WIFSIGNALED(status))
                snprintf(buf, size, "killed by signal %d", WTERMSIG(status));
        else
                snprintf(buf, size, "exit status %d without an error message", WEXITSTATUS(status));
}

/* ---- plugin execution ----------------------------------------------------- */

/* Finds the plugin type along the colon-separated bin_dirs. */
static int find_plugin(const char *bin_dirs, const char *type, char *buf, size_t size,
                       struct cb_error *err)
{
        const char *dirs = bin_dirs != NULL && bin_dirs[0] ? bin_dirs : RT_CNI_DEFAULT_BIN_DIRS;
        const char *p = dirs;
        while (*p != '\0') {
                const char *end = strchr(p, ':');
                size_t n = end ? (size_t)(end - p) : strlen(p);
                if (n > 0 && (size_t)snprintf(buf, size, "%.*s/%s", (int)n, p, type) < size &&
                    access(buf, X_OK) == 0)
                        return 0;
                p += n;
                if (*p == ':')
                        p++;
        }
        return cb_error_set(err, ENOENT, "CNI plugin \"%s\" not found in %s", type, dirs);
}

struct sink {
        char *buf;
        size_t len, max;
        bool overflow;
};

/* Reads what is available; returns 1 on EOF, 0 otherwise, -1 on error. */
static int sink_read(int fd, struct sink *s)
{
        char tmp[8192];
        ssize_t n = read(fd, tmp, sizeof(tmp));
        if (n < 0)
                return errno == EINTR || errno == EAGAIN ? 0 : -1;
        if (n == 0)
                return 1;
        size_t take = (size_t)n;
        if (s->len + take > s->max) {
                s->overflow = true;
                take = s->max - s->len;
        }
        if (take > 0) {
                char *nb = realloc(s->buf, s->len + take + 1);
                if (nb == NULL)
                        return -1;
                s->buf = nb;
                memcpy(s->buf + s->len, tmp, take);
                s->len += take;
                s->buf[s->len] = '\0';
        }
        return 0;
}

static long long now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int spawn_plugin(const char *path, char *const env[], int in_fd, int out_fd, int err_fd,
                        pid_t *ret_pid)
{
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t attr;
        int r = posix_spawn_file_actions_init(&fa);
        if (r != 0)
                return r;
        r = posix_spawnattr_init(&attr);
        if (r != 0) {
                posix_spawn_file_actions_destroy(&fa);
                return r;
        }
        sigset_t all, none;
        sigfillset(&all);
        sigemptyset(&none);
        if ((r = posix_spawn_file_actions_adddup2(&fa, in_fd, 0)) == 0 &&
            (r = posix_spawn_file_actions_adddup2(&fa, out_fd, 1)) == 0 &&
            (r = posix_spawn_file_actions_adddup2(&fa, err_fd, 2)) == 0 &&
            (r = posix_spawn_file_actions_addclosefrom_np(&fa, 3)) == 0 &&
            (r = posix_spawnattr_setsigdefault(&attr, &all)) == 0 &&
            (r = posix_spawnattr_setsigmask(&attr, &none)) == 0 &&
            (r = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK)) ==
                0) {
                char *argv[] = {(char *)path, NULL};
                r = posix_spawn(ret_pid, path, &fa, &attr, argv, env);
        }
        posix_spawnattr_destroy(&attr);
        posix_spawn_file_actions_destroy(&fa);
        return r;
}

struct exec_state {
        int in_fd, out_fd, err_fd, pidfd;
        const char *input;
        size_t in_len, in_off;
        struct sink out, errout;
        bool exited;
        int status;
};

static void exec_state_close(struct exec_state *st)
{
        int *fds[] = {&st->in_fd, &st->out_fd, &st->err_fd, &st->pidfd};
        for (size_t i = 0; i < CB_ARRAY_SIZE(fds); i++) {
                cb_closep(fds[i]);
                *fds[i] = -1;
        }
        free(st->out.buf);
        free(st->errout.buf);
}

static void feed_stdin(struct exec_state *st)
{
        while (st->in_off < st->in_len) {
                ssize_t n = send(st->in_fd, st->input + st->in_off, st->in_len - st->in_off,
                                 MSG_NOSIGNAL | MSG_DONTWAIT);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        return;
                if (n < 0) /* EPIPE: the plugin does not want (more) input */
                        break;
                st->in_off += (size_t)n;
        }
        close(st->in_fd);
        st->in_fd = -1;
}

static int reap(struct exec_state *st, pid_t pid)
{
        for (;;) {
                pid_t r = waitpid(pid, &st->status, 0);
                if (r == pid) {
                        st->exited = true;
                        return 0;
                }
                if (r < 0 && errno != EINTR)
                        return -1;
        }
}

/* The poll loop: feeds stdin, collects stdout/stderr, notices the exit. */
static int exec_loop(struct exec_state *st, pid_t pid, int timeout_ms, const char *path,
                     struct cb_error *err)
{
        long long deadline = now_ms() + timeout_ms;
        while (!st->exited || st->out_fd >= 0 || st->err_fd >= 0) {
                struct pollfd pfd[4];
                int n = 0, i_in = -1, i_out = -1, i_err = -1, i_pid = -1;
                if (st->in_fd >= 0 && !st->exited) {
                        i_in = n;
                        pfd[n++] = (struct pollfd){.fd = st->in_fd, .events = POLLOUT};
                }
                if (st->out_fd >= 0) {
                        i_out = n;
                        pfd[n++] = (struct pollfd){.fd = st->out_fd, .events = POLLIN};
                }
                if (st->err_fd >= 0) {
                        i_err = n;
                        pfd[n++] = (struct pollfd){.fd = st->err_fd, .events = POLLIN};
                }
                if (!st->exited && st->pidfd >= 0) {
                        i_pid = n;
                        pfd[n++] = (struct pollfd){.fd = st->pidfd, .events = POLLIN};
                }
                /* After the exit everything the plugin wrote is in the
                 * pipes: drain without waiting (a daemon it left behind may
                 * hold them open). */
                long long left = deadline - now_ms();
                int wait_ms = st->exited ? 0 : (left > 0 ? (int)left : 0);
                int r = poll(pfd, (nfds_t)n, wait_ms);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0)
                        return cb_error_set(err, errno, "cannot poll CNI plugin %s", path);
                if (r == 0) {
                        if (st->exited)
                                break;
                        kill(pid, SIGKILL); /* not reaped yet: the pid is still ours */
                        reap(st, pid);
                        return cb_error_set(err, ETIMEDOUT,
                                            "CNI plugin %s did not finish within %d s; killed it",
                                            path, timeout_ms / 1000);
                }
                if (i_in >= 0 && pfd[i_in].revents)
                        feed_stdin(st);
                struct {
                        int idx;
                        int *fd;
                        struct sink *s;
                } outs[] = {{i_out, &st->out_fd, &st->out}, {i_err, &st->err_fd, &st->errout}};
                for (size_t k = 0; k < 2; k++) {
                        if (outs[k].idx < 0 || !pfd[outs[k].idx].revents)
                                continue;
                        int rr = sink_read(*outs[k].fd, outs[k].s);
                        if (rr != 0) {
                                close(*outs[k].fd);
                                *outs[k].fd = -1;
                        }
                }
                if (i_pid >= 0 && pfd[i_pid].revents && reap(st, pid) < 0)
                        return cb_error_set(err, errno, "cannot wait for CNI plugin %s", path);
                /* Without a pidfd, the exit shows as EOF on both pipes. */
                if (st->pidfd < 0 && !st->exited && st->out_fd < 0 && st->err_fd < 0 &&
                    reap(st, pid) < 0)
                        return cb_error_set(err, errno, "cannot wait for CNI plugin %s", path);
        }
        return 0;
}

int rt_cni_exec(const char *path, char *const env[], const char *stdin_data, int timeout_ms,
                char **ret_out, int *ret_cni_code, struct cb_error *err)
{
        if (ret_cni_code != NULL)
                *ret_cni_code = 0;
        struct exec_state st = {.in_fd = -1, .out_fd = -1, .err_fd = -1, .pidfd = -1};
        st.input = stdin_data;
        st.in_len = strlen(stdin_data);
        st.out.max = OUT_MAX;
        st.errout.max = ERROUT_MAX;
        int in[2], out[2], er[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) < 0)
                return cb_error_set(err, errno, "cannot create a socketpair for %s", path);
        if (pipe2(out, O_CLOEXEC) < 0) {
                int e = errno;
                close(in[0]);
                close(in[1]);
                return cb_error_set(err, e, "cannot create a pipe for %s", path);
        }
        if (pipe2(er, O_CLOEXEC) < 0) {
                int e = errno;
                close(in[0]);
                close(in[1]);
                close(out[0]);
                close(out[1]);
                return cb_error_set(err, e, "cannot create a pipe for %s", path);
        }
        st.in_fd = in[0];
        st.out_fd = out[0];
        st.err_fd = er[0];
        pid_t pid;
        int r = spawn_plugin(path, env, in[1], out[1], er[1], &pid);
        close(in[1]);
        close(out[1]);
        close(er[1]);
        if (r != 0) {
                exec_state_close(&st);
                return cb_error_set(err, r, "cannot execute CNI plugin %s", path);
        }
        st.pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
        int rc = exec_loop(&st, pid, timeout_ms > 0 ? timeout_ms : RT_CNI_TIMEOUT_MS, path, err);
        if (rc == 0 && !st.exited && reap(&st, pid) < 0)
                rc = cb_error_set(err, errno, "cannot wait for CNI plugin %s", path);
        if (rc == 0 && st.out.overflow)
                rc = cb_error_set(err, EFBIG, "CNI plugin %s wrote more than %u bytes", path,
                                  OUT_MAX);
        if (rc == 0 && !(WIFEXITED(st.status) && WEXITSTATUS(st.status) == 0)) {
                char msg[CB_ERROR_MSG_MAX / 2];
                int code;
                rt_cni_describe_failure(st.out.buf, st.errout.buf, st.status, msg, sizeof(msg),
                                        &code);
                rc = cb_error_set(err, 0, "%s", msg);
                if (ret_cni_code != NULL)
                        *ret_cni_code = code;
        }
        if (rc == 0)
                *ret_out = st.out.buf != NULL ? steal_pointer(&st.out.buf) : strdup("");
        exec_state_close(&st);
        return rc;
}

/* ---- cache ----------------------------------------------------------------- */

/* Path of the cache entry for a container. */
static int cache_path(const char *cache_dir, const char *network, const char *container_id,
                      char *buf, size_t size)
{
        int n = snprintf(buf, size, "%s/results/%s-%s-%s", cache_dir, network, container_id,
                         RT_CNI_IFNAME);
        return n < 0 || (size_t)n >= size ? -1 : 0;
}

static int cache_write(const char *path, const cJSON *entry, struct cb_error *err)
{
        _cleanup_free_ char *text = cJSON_PrintUnformatted(entry);
        if (text == NULL)
                return cb_error_set(err, ENOMEM, "cannot write the CNI cache %s", path);
        return cb_write_file_atomic(path, text, strlen(text), 0600, err);
}

/* Finds the cache entry of container_id whatever its network name
 * (the config may have changed since the ADD). 1 found, 0 none, -1 error. */
static int cache_find(const char *cache_dir, const char *container_id, char *buf, size_t size,
                      struct cb_error *err)
{
        char dir[RT_PATH_MAX], suffix[RT_ID_MAX + 16];
        snprintf(dir, sizeof(dir), "%s/results", cache_dir);
        snprintf(suffix, sizeof(suffix), "-%s-%s", container_id, RT_CNI_IFNAME);
        DIR *d = opendir(dir);
        if (d == NULL)
                return errno == ENOENT ? 0 : cb_error_set(err, errno, "cannot read %s", dir);
        int found = 0;
        struct dirent *de;
        size_t sl = strlen(suffix);
        while ((de = readdir(d)) != NULL) {
                size_t l = strlen(de->d_name);
                if (l > sl && strcmp(de->d_name + l - sl, suffix) == 0) {
                        int n = snprintf(buf, size, "%s/%s", dir, de->d_name);
                        found = n >= 0 && (size_t)n < size ? 1 : 0;
                        break;
                }
        }
        closedir(d);
        return found;
}

static cJSON *cache_read(const char *path, struct cb_error *err)
{
        _cleanup_free_ char *text = NULL;
        if (cb_read_file(path, 4 * CONF_MAX, &text, NULL, err) < 0)
                return NULL;
        cJSON *j = cJSON_Parse(text);
        if (!cJSON_IsObject(j) || !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(j, "config"))) {
                cJSON_Delete(j);
                cb_error_set(err, 0, "the CNI cache %s is corrupt", path);
                return NULL;
        }
        return j;
}

/* ---- operations ------------------------------------------------------------ */

struct invocation {
        const char *command; /* ADD, CHECK, DEL */
        const struct rt_cni_ctx *ctx;
        const struct rt_cni_pod *pod;
        const char *cni_args;
};

static int run_plugin(const struct invocation *inv, const struct rt_cni_netconf *nc, size_t i,
                      const cJSON *prev, const cJSON *caps, char **ret_out, int *ret_code,
                      struct cb_error *err)
{
        *ret_code = 0;
        const cJSON *p =
            cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(nc->list, "plugins"), (int)i);
        const char *type = json_str(p, "type");
        const char *bin_dirs = inv->ctx->bin_dirs && inv->ctx->bin_dirs[0]
                                   ? inv->ctx->bin_dirs
                                   : RT_CNI_DEFAULT_BIN_DIRS;
        char path[RT_PATH_MAX];
        if (find_plugin(bin_dirs, type, path, sizeof(path), err) < 0) {
                *ret_code = -ENOENT; /* no binary: nothing of it can exist */
                return -1;
        }
        _cleanup_cjson_ cJSON *conf = rt_cni_plugin_stdin(nc, i, prev, caps, err);
        if (conf == NULL)
                return -1;
        _cleanup_free_ char *input = cJSON_PrintUnformatted(conf);
        if (input == NULL)
                return cb_error_set(err, ENOMEM, "cannot build the stdin of %s", type);
        const char *sys_path = getenv("PATH");
        _cleanup_free_ char *e_cmd = NULL, *e_id = NULL, *e_ns = NULL, *e_if = NULL, *e_args = NULL,
                            *e_path = NULL, *e_syspath = NULL;
        if (asprintf(&e_cmd, "CNI_COMMAND=%s", inv->command) < 0 ||
            asprintf(&e_id, "CNI_CONTAINERID=%s", inv->pod->container_id) < 0 ||
            asprintf(&e_ns, "CNI_NETNS=%s", inv->pod->netns ? inv->pod->netns : "") < 0 ||
            asprintf(&e_if, "CNI_IFNAME=%s", RT_CNI_IFNAME) < 0 ||
            asprintf(&e_args, "CNI_ARGS=%s", inv->cni_args) < 0 ||
            asprintf(&e_path, "CNI_PATH=%s", bin_dirs) < 0 ||
            /* Plugins run helpers (portmap runs iptables): keep a PATH. */
            asprintf(&e_syspath, "PATH=%s",
                     sys_path ? sys_path
                              : "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:"
                                "/sbin:/bin") < 0)
                return cb_error_set(err, ENOMEM, "cannot build the environment of %s", type);
        char *env[] = {e_cmd, e_id, e_ns, e_if, e_args, e_path, e_syspath, NULL};
        return rt_cni_exec(path, env, input, inv->ctx->timeout_ms, ret_out, ret_code, err);
}

static const char *plugin_type(const struct rt_cni_netconf *nc, size_t i)
{
        return json_str(
            cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(nc->list, "plugins"), (int)i),
            "type");
}

static cJSON *cache_entry(const struct rt_cni_netconf *nc, const struct rt_cni_pod *pod,
                          const char *cni_args, const cJSON *caps)
{
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "kind", "cniCacheV1");
        cJSON_AddStringToObject(e, "containerId", pod->container_id);
        cJSON_AddStringToObject(e, "ifName", RT_CNI_IFNAME);
        cJSON_AddStringToObject(e, "networkName", nc->name);
        cJSON_AddStringToObject(e, "netns", pod->netns ? pod->netns : "");
        cJSON_AddStringToObject(e, "cniArgs", cni_args);
        cJSON_AddItemToObject(e, "capabilityArgs", cJSON_Duplicate(caps, 1));
        cJSON_AddItemToObject(e, "config", cJSON_Duplicate(nc->list, 1));
        cJSON_AddNullToObject(e, "result");
        return e;
}

int rt_cni_add(const struct rt_cni_ctx *ctx, const struct rt_cni_pod *pod,
               struct rt_cni_result *ret, struct cb_error *err)
{
        struct rt_cni_netconf nc;
        if (rt_cni_load_netconf(ctx->conf_dir, &nc, err) < 0)
                return -1;
        char cni_args[1024];
        _cleanup_cjson_ cJSON *caps = rt_cni_capability_args(pod->ports, pod->n_ports);
        _cleanup_cjson_ cJSON *entry = NULL;
        _cleanup_cjson_ cJSON *prev = NULL;
        char cache[RT_PATH_MAX], results[RT_PATH_MAX];
        snprintf(results, sizeof(results), "%s/results", ctx->cache_dir);
        int rc = -1;
        if (rt_cni_build_args(pod, cni_args, sizeof(cni_args), err) < 0 || caps == NULL)
                goto out;
        if (cache_path(ctx->cache_dir, nc.name, pod->container_id, cache, sizeof(cache)) < 0) {
                cb_error_set(err, ENAMETOOLONG, "CNI cache path under %s", ctx->cache_dir);
                goto out;
        }
        /* The cache is written before the first plugin runs, so a DEL after
         * a crash in the middle of the ADD has the config to tear down. */
        entry = cache_entry(&nc, pod, cni_args, caps);
        if (entry == NULL || cb_mkdir_p(results, 0700, 0700, err) < 0 ||
            cache_write(cache, entry, err) < 0)
                goto out;
        struct invocation inv = {"ADD", ctx, pod, cni_args};
        for (size_t i = 0; i < nc.n_plugins; i++) {
                _cleanup_free_ char *out = NULL;
                int code;
                if (run_plugin(&inv, &nc, i, prev, caps, &out, &code, err) < 0) {
                        cb_error_prefix(err,
                                        "CNI plugin %s failed to add pod %s/%s (sandbox %s) "
                                        "to network %s",
                                        plugin_type(&nc, i), pod->namespace_, pod->name,
                                        pod->container_id, nc.name);
                        goto out;
                }
                cJSON *res = cJSON_Parse(out);
                if (!cJSON_IsObject(res)) {
                        cJSON_Delete(res);
                        cb_error_set(err, 0,
                                     "CNI plugin %s returned no valid result adding pod %s/%s "
                                     "(sandbox %s)",
                                     plugin_type(&nc, i), pod->namespace_, pod->name,
                                     pod->container_id);
                        goto out;
                }
                cJSON_Delete(prev);
                prev = res;
                /* Keep the partial result: DEL passes it as prevResult. */
                cJSON_ReplaceItemInObjectCaseSensitive(entry, "result", cJSON_Duplicate(prev, 1));
                if (cache_write(cache, entry, err) < 0)
                        goto out;
        }
        if (rt_cni_parse_result(prev, ret, err) < 0) {
                cb_error_prefix(err, "network %s, pod %s/%s", nc.name, pod->namespace_, pod->name);
                goto out;
        }
        rc = 0;
out:
        rt_cni_netconf_release(&nc);
        return rc;
}

/* Loads the cached entry of a pod into nc (its config), *ret_entry. */
static int load_cached(const struct rt_cni_ctx *ctx, const struct rt_cni_pod *pod,
                       struct rt_cni_netconf *nc, cJSON **ret_entry, struct cb_error *err)
{
        char path[RT_PATH_MAX];
        int f = cache_find(ctx->cache_dir, pod->container_id, path, sizeof(path), err);
        if (f <= 0)
                return f;
        cJSON *entry = cache_read(path, err);
        if (entry == NULL)
                return -1;
        cJSON *config = cJSON_DetachItemFromObjectCaseSensitive(entry, "config");
        if (netconf_validate(config, nc, err) < 0) {
                cJSON_Delete(entry);
                return cb_error_prefix(err, "the CNI cache %s", path);
        }
        snprintf(nc->path, sizeof(nc->path), "%s", path);
        *ret_entry = entry;
        return 1;
}

static bool version_at_least(const char *v, int major, int minor)
{
        int a = 0, b = 0;
        if (sscanf(v, "%d.%d", &a, &b) < 1)
                return false;
        return a > major || (a == major && b >= minor);
}

int rt_cni_check(const struct rt_cni_ctx *ctx, const struct rt_cni_pod *pod, struct cb_error *err)
{
        struct rt_cni_netconf nc = {0};
        _cleanup_cjson_ cJSON *entry = NULL;
        int f = load_cached(ctx, pod, &nc, &entry, err);
        if (f < 0)
                return -1;
        if (f == 0)
                return cb_error_set(err, ENOENT,
                                    "no cached CNI result for pod %s/%s (sandbox %s): the "
                                    "network was never set up",
                                    pod->namespace_, pod->name, pod->container_id);
        int rc = -1;
        const cJSON *result = cJSON_GetObjectItemCaseSensitive(entry, "result");
        const char *cni_args = json_str(entry, "cniArgs");
        const cJSON *caps = cJSON_GetObjectItemCaseSensitive(entry, "capabilityArgs");
        if (!cJSON_IsObject(result)) {
                cb_error_set(err, 0, "pod %s/%s (sandbox %s): the CNI ADD never completed",
                             pod->namespace_, pod->name, pod->container_id);
                goto out;
        }
        /* CHECK exists from spec 0.4.0 on; older networks cannot be checked. */
        if (!version_at_least(nc.cni_version, 0, 4)) {
                rc = 0;
                goto out;
        }
        struct invocation inv = {"CHECK", ctx, pod, cni_args ? cni_args : ""};
        for (size_t i = 0; i < nc.n_plugins; i++) {
                _cleanup_free_ char *out = NULL;
                int code;
                if (run_plugin(&inv, &nc, i, result, caps, &out, &code, err) < 0) {
                        cb_error_prefix(err,
                                        "CNI plugin %s: CHECK of pod %s/%s (sandbox %s) in "
                                        "network %s failed",
                                        plugin_type(&nc, i), pod->namespace_, pod->name,
                                        pod->container_id, nc.name);
                        goto out;
                }
        }
        rc = 0;
out:
        rt_cni_netconf_release(&nc);
        return rc;
}

/* DEL outcomes that mean "already gone". */
static bool del_ignorable(int code, const struct cb_error *e)
{
        if (code == 3 || code == -ENOENT)
                return true;
        const char *pats[] = {"not found", "does not exist", "no such", "not exist"};
        for (size_t i = 0; i < CB_ARRAY_SIZE(pats); i++)
                if (strcasestr(e->msg, pats[i]) != NULL)
                        return true;
        return false;
}

int rt_cni_del(const struct rt_cni_ctx *ctx, const struct rt_cni_pod *pod, struct cb_error *err)
{
        struct rt_cni_netconf nc = {0};
        _cleanup_cjson_ cJSON *entry = NULL;
        int f = load_cached(ctx, pod, &nc, &entry, err);
        if (f < 0)
                return -1;
        _cleanup_cjson_ cJSON *caps = NULL;
        char args_buf[1024];
        const cJSON *result = NULL;
        const char *cni_args;
        if (f == 1) {
                result = cJSON_GetObjectItemCaseSensitive(entry, "result");
                if (!cJSON_IsObject(result))
                        result = NULL;
                cni_args = json_str(entry, "cniArgs");
                caps =
                    cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(entry, "capabilityArgs"), 1);
        } else {
                /* No cache: DEL with the current config, as libcni does;
                 * without one either, nothing was ever set up. */
                struct cb_error e2;
                if (rt_cni_load_netconf(ctx->conf_dir, &nc, &e2) < 0)
                        return 0;
                if (rt_cni_build_args(pod, args_buf, sizeof(args_buf), err) < 0) {
                        rt_cni_netconf_release(&nc);
                        return -1;
                }
                cni_args = args_buf;
                caps = rt_cni_capability_args(pod->ports, pod->n_ports);
        }
        struct invocation inv = {"DEL", ctx, pod, cni_args ? cni_args : ""};
        int rc = 0;
        for (size_t i = nc.n_plugins; i-- > 0;) {
                _cleanup_free_ char *out = NULL;
                struct cb_error e;
                int code;
                cb_error_clear(&e);
                if (run_plugin(&inv, &nc, i, result, caps, &out, &code, &e) == 0 ||
                    del_ignorable(code, &e))
                        continue;
                if (rc == 0) {
                        /* Report the first failure, but still run the rest. */
                        if (err != NULL)
                                *err = e;
                        cb_error_prefix(err,
                                        "CNI plugin %s failed to delete pod %s/%s (sandbox "
                                        "%s) from network %s",
                                        plugin_type(&nc, i), pod->namespace_, pod->name,
                                        pod->container_id, nc.name);
                        rc = -1;
                }
        }
        if (rc == 0 && f == 1 && unlink(nc.path) < 0 && errno != ENOENT)
                rc = cb_error_set(err, errno, "cannot remove the CNI cache %s", nc.path);
        rt_cni_netconf_release(&nc);
        return rc;
}
