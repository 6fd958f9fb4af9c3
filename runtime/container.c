/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent side of containers: configuration checks, the state dir,
 * spawning the monitor (pattern 14), and state/signal/stop/remove/list
 * addressed by pidfd plus start time (pattern 11).
 */
#include "runtime/container.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/sendfile.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cgroups/cgroup.h"
#include "lib/arena.h"
#include "lib/cleanup.h"
#include "lib/file.h"
#include "runtime/container_internal.h"
#include "runtime/image.h"
#include "runtime/syscalls.h"

#define START_TIMEOUT_MS 120000

/* ---- helpers ----------------------------------------------------------------- */

static bool id_valid(const char *id)
{
        size_t n = id != NULL ? strlen(id) : 0;
        if (n == 0 || n >= RT_ID_MAX || id[0] == '.')
                return false;
        for (size_t i = 0; i < n; i++) {
                char ch = id[i];
                if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                      (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '.'))
                        return false;
        }
        return true;
}

int rt_container_dir(const char *root_dir, const char *id, char *buf, size_t size,
                     struct cb_error *err)
{
        if (!id_valid(id))
                return cb_error_set(err, EINVAL,
                                    "container id \"%s\": want 1..%d characters of "
                                    "[A-Za-z0-9_.-], not starting with '.'",
                                    id != NULL ? id : "", RT_ID_MAX - 1);
        if (root_dir == NULL || root_dir[0] != '/')
                return cb_error_set(err, EINVAL, "root dir \"%s\" is not an absolute path",
                                    root_dir != NULL ? root_dir : "");
        if ((size_t)snprintf(buf, size, "%s/containers/%s", root_dir, id) >= size)
                return cb_error_set(err, ENAMETOOLONG, "container dir of %s is too long", id);
        return 0;
}

/* Fields 3 (state), 9 (flags) and 22 (starttime) of /proc/<pid>/stat. */
static int proc_stat(pid_t pid, char *ret_state, unsigned long *ret_flags, uint64_t *ret_start,
                     struct cb_error *err)
{
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        char buf[1024];
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return cb_error_set(err, errno, "cannot open %s", path);
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        if (n <= 0)
                return cb_error_set(err, n < 0 ? errno : EIO, "cannot read %s", path);
        buf[n] = '\0';
        /* the command name (field 2) may contain spaces and ')' */
        char *p = strrchr(buf, ')');
        if (p == NULL || p[1] != ' ' || p[2] == '\0')
                return cb_error_set(err, EINVAL, "%s: no ')'", path);
        *ret_state = p[2];
        p++;
        /* p is at " S ppid ...": field 3 is the first token */
        for (int field = 3; field < 22; field++) {
                p = strchr(p + 1, ' ');
                if (p == NULL)
                        return cb_error_set(err, EINVAL, "%s: too few fields", path);
                if (field == 8) {
                        char *end;
                        *ret_flags = strtoul(p + 1, &end, 10);
                        if (end == p + 1)
                                return cb_error_set(err, EINVAL, "%s: bad flags", path);
                }
        }
        char *end;
        unsigned long long v = strtoull(p + 1, &end, 10);
        if (end == p + 1)
                return cb_error_set(err, EINVAL, "%s: bad starttime", path);
        *ret_start = v;
        return 0;
}

int rt_proc_start_time(pid_t pid, uint64_t *ret, struct cb_error *err)
{
        char state;
        unsigned long flags;
        return proc_stat(pid, &state, &flags, ret, err);
}

/* PF_EXITING of include/linux/sched.h: set when the exit begins (a PID
 * namespace's init keeps it while it kills and waits for its namespace). */
#define PROC_PF_EXITING 0x00000004UL

bool rt_proc_alive(pid_t pid, uint64_t start_time)
{
        char state;
        unsigned long flags;
        uint64_t st;
        return pid > 0 && proc_stat(pid, &state, &flags, &st, NULL) == 0 && st == start_time &&
               state != 'Z' && state != 'X' && (flags & PROC_PF_EXITING) == 0;
}

/* A killed process stays a zombie until its parent (not us: the monitor
 * runs in its own session, re-parented) reaps it: that is not alive. */
static bool proc_matches(pid_t pid, uint64_t start_time)
{
        return rt_proc_alive(pid, start_time);
}

/* ---- config <-> JSON ---------------------------------------------------------- */

static cJSON *strv_json(const char *const *v, size_t n)
{
        cJSON *a = cJSON_CreateArray();
        for (size_t i = 0; a != NULL && (n == SIZE_MAX ? v != NULL && v[i] != NULL : i < n); i++)
                cJSON_AddItemToArray(a, cJSON_CreateString(v[i]));
        return a;
}

static void add_str(cJSON *o, const char *k, const char *v)
{
        if (v != NULL)
                cJSON_AddStringToObject(o, k, v);
}

cJSON *rt_cg_location_to_json(const struct cg_location *l)
{
        cJSON *cl = cJSON_CreateObject();
        if (cl == NULL)
                return NULL;
        cJSON_AddNumberToObject(cl, "version", l->version);
        cJSON *dirs = cJSON_AddArrayToObject(cl, "dirs");
        for (size_t i = 0; dirs != NULL && i < l->n_dirs; i++)
                cJSON_AddItemToArray(dirs, cJSON_CreateString(l->dirs[i]));
        cJSON_AddStringToObject(cl, "memoryDir", l->memory_dir);
        return cl;
}

void rt_cg_location_from_json(const cJSON *cl, struct cg_location *l)
{
        *l = (struct cg_location){0};
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(cl, "version");
        l->version = cJSON_IsNumber(v) ? (int)v->valuedouble : 0;
        const cJSON *d;
        cJSON_ArrayForEach(d, cJSON_GetObjectItemCaseSensitive(cl, "dirs"))
        {
                if (cJSON_IsString(d) && l->n_dirs < CG_LOC_MAX_DIRS)
                        snprintf(l->dirs[l->n_dirs++], CG_LOC_DIR_MAX, "%s", d->valuestring);
        }
        const cJSON *md = cJSON_GetObjectItemCaseSensitive(cl, "memoryDir");
        if (cJSON_IsString(md))
                snprintf(l->memory_dir, CG_LOC_DIR_MAX, "%s", md->valuestring);
}

int rt_config_to_json(const struct rt_container_config *c, char **ret_json, struct cb_error *err)
{
        _cleanup_cjson_ cJSON *o = cJSON_CreateObject();
        if (o == NULL)
                return cb_error_set(err, ENOMEM, "cannot encode the container config");
        add_str(o, "id", c->id);
        add_str(o, "name", c->name);
        add_str(o, "rootDir", c->root_dir);
        add_str(o, "hostname", c->hostname);
        if (c->sandbox != NULL) {
                const struct rt_sandbox *s = c->sandbox;
                cJSON *sb = cJSON_AddObjectToObject(o, "sandbox");
                add_str(sb, "id", s->id);
                add_str(sb, "netns", s->netns_path);
                add_str(sb, "ipcns", s->ipcns_path);
                add_str(sb, "utsns", s->utsns_path);
                add_str(sb, "pinsMntns", s->pins_mntns);
                add_str(sb, "pidns", s->pidns_path);
                add_str(sb, "procfs", s->procfs_path);
                cJSON_AddBoolToObject(sb, "hostPid", s->host_pid);
        }
        if (c->lower_dirs != NULL)
                cJSON_AddItemToObject(o, "lowerDirs", strv_json(c->lower_dirs, c->n_lower));
        add_str(o, "rootfsDir", c->rootfs_dir);
        cJSON_AddItemToObject(o, "argv", strv_json(c->argv, SIZE_MAX));
        if (c->env != NULL)
                cJSON_AddItemToObject(o, "env", strv_json(c->env, SIZE_MAX));
        add_str(o, "cwd", c->cwd);
        cJSON_AddNumberToObject(o, "uid", c->uid);
        cJSON_AddNumberToObject(o, "gid", c->gid);
        cJSON *g = cJSON_AddArrayToObject(o, "groups");
        for (size_t i = 0; i < c->n_groups; i++)
                cJSON_AddItemToArray(g, cJSON_CreateNumber(c->groups[i]));
        cJSON_AddItemToObject(o, "caps", strv_json(c->caps, c->n_caps));
        cJSON_AddBoolToObject(o, "privileged", c->privileged);
        cJSON_AddBoolToObject(o, "noNewPrivs", c->no_new_privs);
        cJSON_AddNumberToObject(o, "seccomp", c->seccomp);
        add_str(o, "seccompProfile", c->seccomp_profile);
        cJSON_AddBoolToObject(o, "readOnlyRootfs", c->read_only_rootfs);
        cJSON *ms = cJSON_AddArrayToObject(o, "mounts");
        for (size_t i = 0; i < c->n_mounts; i++) {
                cJSON *m = cJSON_CreateObject();
                cJSON_AddNumberToObject(m, "type", c->mounts[i].type);
                add_str(m, "source", c->mounts[i].source);
                add_str(m, "destination", c->mounts[i].destination);
                cJSON_AddBoolToObject(m, "readOnly", c->mounts[i].read_only);
                add_str(m, "options", c->mounts[i].options);
                cJSON_AddItemToArray(ms, m);
        }
        cJSON_AddNumberToObject(o, "oomScoreAdj", c->oom_score_adj);
        add_str(o, "cgroupPath", c->cgroup_path);
        cJSON *l = cJSON_AddObjectToObject(o, "limits");
        cJSON_AddNumberToObject(l, "cpuShares", (double)c->limits.cpu_shares);
        cJSON_AddNumberToObject(l, "cpuQuotaUs", (double)c->limits.cpu_quota_us);
        cJSON_AddNumberToObject(l, "cpuPeriodUs", (double)c->limits.cpu_period_us);
        cJSON_AddNumberToObject(l, "memoryLimit", (double)c->limits.memory_limit);
        cJSON_AddNumberToObject(l, "pidsLimit", (double)c->limits.pids_limit);
        add_str(o, "logPath", c->log_path);
        cJSON_AddNumberToObject(o, "stopSignal", c->stop_signal);
        cJSON_AddBoolToObject(o, "stdin", c->stdin_open);
        cJSON_AddBoolToObject(o, "stdinOnce", c->stdin_once);
        cJSON_AddBoolToObject(o, "tty", c->tty);
        if (c->cg_loc != NULL) {
                cJSON_AddItemToObject(o, "cgroupLocation", rt_cg_location_to_json(c->cg_loc));
                cJSON_AddNumberToObject(o, "oomBefore", (double)c->oom_before);
        }
        char *s = cJSON_PrintUnformatted(o);
        if (s == NULL)
                return cb_error_set(err, ENOMEM, "cannot encode the container config");
        *ret_json = s;
        return 0;
}

static const char *jstr(struct cb_arena *a, const cJSON *o, const char *k)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
        return cJSON_IsString(v) ? cb_arena_strdup(a, v->valuestring) : NULL;
}

static double jnum(const cJSON *o, const char *k)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
        return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static bool jbool(const cJSON *o, const char *k)
{
        return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, k));
}

/* NULL-terminated copy of a string array; *ret_n entries. */
static const char *const *jstrv(struct cb_arena *a, const cJSON *o, const char *k, size_t *ret_n)
{
        const cJSON *arr = cJSON_GetObjectItemCaseSensitive(o, k);
        if (!cJSON_IsArray(arr)) {
                if (ret_n != NULL)
                        *ret_n = 0;
                return NULL;
        }
        size_t n = (size_t)cJSON_GetArraySize(arr);
        const char **v = cb_arena_calloc(a, n + 1, sizeof(char *));
        if (v == NULL)
                return NULL;
        size_t i = 0;
        const cJSON *it;
        cJSON_ArrayForEach(it, arr)
        {
                if (cJSON_IsString(it))
                        v[i++] = cb_arena_strdup(a, it->valuestring);
        }
        if (ret_n != NULL)
                *ret_n = i;
        return v;
}

/* Checks ids, paths and required fields before anything is created. */
static int config_validate(const struct rt_container_config *c, struct cb_error *err);

int rt_config_from_json(struct cb_arena *a, const char *json, struct rt_container_config *ret,
                        struct cb_error *err)
{
        _cleanup_cjson_ cJSON *o = cJSON_Parse(json);
        if (!cJSON_IsObject(o))
                return cb_error_set(err, EINVAL, "container config: not a JSON object");
        struct rt_container_config c = {0};
        c.id = jstr(a, o, "id");
        c.name = jstr(a, o, "name");
        c.root_dir = jstr(a, o, "rootDir");
        c.hostname = jstr(a, o, "hostname");
        const cJSON *sb = cJSON_GetObjectItemCaseSensitive(o, "sandbox");
        if (cJSON_IsObject(sb)) {
                struct rt_sandbox *s = cb_arena_calloc(a, 1, sizeof(*s));
                if (s == NULL)
                        return cb_error_set(err, ENOMEM, "container config");
                const struct {
                        const char *key;
                        char *dst;
                        size_t size;
                } f[] = {{"id", s->id, sizeof(s->id)},
                         {"netns", s->netns_path, sizeof(s->netns_path)},
                         {"ipcns", s->ipcns_path, sizeof(s->ipcns_path)},
                         {"utsns", s->utsns_path, sizeof(s->utsns_path)},
                         {"pinsMntns", s->pins_mntns, sizeof(s->pins_mntns)},
                         {"pidns", s->pidns_path, sizeof(s->pidns_path)},
                         {"procfs", s->procfs_path, sizeof(s->procfs_path)}};
                for (size_t i = 0; i < CB_ARRAY_SIZE(f); i++) {
                        const cJSON *v = cJSON_GetObjectItemCaseSensitive(sb, f[i].key);
                        if (cJSON_IsString(v))
                                snprintf(f[i].dst, f[i].size, "%s", v->valuestring);
                }
                s->host_pid = jbool(sb, "hostPid");
                c.sandbox = s;
        }
        c.lower_dirs = jstrv(a, o, "lowerDirs", &c.n_lower);
        c.rootfs_dir = jstr(a, o, "rootfsDir");
        c.argv = jstrv(a, o, "argv", NULL);
        c.env = jstrv(a, o, "env", NULL);
        c.cwd = jstr(a, o, "cwd");
        c.uid = (uint32_t)jnum(o, "uid");
        c.gid = (uint32_t)jnum(o, "gid");
        const cJSON *g = cJSON_GetObjectItemCaseSensitive(o, "groups");
        size_t ng = (size_t)cJSON_GetArraySize(g);
        uint32_t *groups = cb_arena_calloc(a, ng + 1, sizeof(uint32_t));
        const cJSON *it;
        cJSON_ArrayForEach(it, g)
        {
                if (cJSON_IsNumber(it) && groups != NULL)
                        groups[c.n_groups++] = (uint32_t)it->valuedouble;
        }
        c.groups = groups;
        c.caps = jstrv(a, o, "caps", &c.n_caps);
        c.privileged = jbool(o, "privileged");
        c.no_new_privs = jbool(o, "noNewPrivs");
        c.seccomp = (enum rt_seccomp_kind)(int)jnum(o, "seccomp");
        c.seccomp_profile = jstr(a, o, "seccompProfile");
        c.read_only_rootfs = jbool(o, "readOnlyRootfs");
        const cJSON *ms = cJSON_GetObjectItemCaseSensitive(o, "mounts");
        size_t nm = (size_t)cJSON_GetArraySize(ms);
        struct rt_mount *mounts = cb_arena_calloc(a, nm + 1, sizeof(*mounts));
        cJSON_ArrayForEach(it, ms)
        {
                if (mounts == NULL)
                        break;
                struct rt_mount *m = &mounts[c.n_mounts++];
                m->type = (enum rt_mount_type)(int)jnum(it, "type");
                m->source = jstr(a, it, "source");
                m->destination = jstr(a, it, "destination");
                m->read_only = jbool(it, "readOnly");
                m->options = jstr(a, it, "options");
        }
        c.mounts = mounts;
        c.oom_score_adj = (int)jnum(o, "oomScoreAdj");
        c.cgroup_path = jstr(a, o, "cgroupPath");
        const cJSON *l = cJSON_GetObjectItemCaseSensitive(o, "limits");
        c.limits.cpu_shares = (uint64_t)jnum(l, "cpuShares");
        c.limits.cpu_quota_us = (int64_t)jnum(l, "cpuQuotaUs");
        c.limits.cpu_period_us = (uint64_t)jnum(l, "cpuPeriodUs");
        c.limits.memory_limit = (int64_t)jnum(l, "memoryLimit");
        c.limits.pids_limit = (int64_t)jnum(l, "pidsLimit");
        c.log_path = jstr(a, o, "logPath");
        c.stop_signal = (int)jnum(o, "stopSignal");
        c.stdin_open = jbool(o, "stdin");
        c.stdin_once = jbool(o, "stdinOnce");
        c.tty = jbool(o, "tty");
        const cJSON *cl = cJSON_GetObjectItemCaseSensitive(o, "cgroupLocation");
        if (cJSON_IsObject(cl)) {
                struct cg_location *loc = cb_arena_calloc(a, 1, sizeof(*loc));
                if (loc == NULL)
                        return cb_error_set(err, ENOMEM, "container config: out of memory");
                rt_cg_location_from_json(cl, loc);
                c.cg_loc = loc;
                c.oom_before = (uint64_t)jnum(o, "oomBefore");
        }
        if (cb_arena_over_limit(a) || groups == NULL || mounts == NULL)
                return cb_error_set(err, ENOMEM, "container config: out of memory");
        if (config_validate(&c, err) < 0)
                return -1;
        *ret = c;
        return 0;
}

/* dest is /dev itself, /proc or anything in /proc ("//proc/./sys/" too).
 * The runtime checks the resolved target again when it mounts
 * (runtime/mounts.c), which also catches an image's symlink to them. */
static bool covers_dev_or_proc(const char *dest)
{
        char first[16] = "";
        size_t n = 0;
        const char *p = dest;
        for (;;) {
                while (*p == '/' || (p[0] == '.' && (p[1] == '/' || p[1] == '\0')))
                        p++;
                if (*p == '\0')
                        break;
                size_t len = strcspn(p, "/");
                if (n == 0 && len < sizeof(first))
                        snprintf(first, sizeof(first), "%.*s", (int)len, p);
                n++;
                p += len;
        }
        return (strcmp(first, "dev") == 0 && n == 1) || strcmp(first, "proc") == 0;
}

static int config_validate(const struct rt_container_config *c, struct cb_error *err)
{
        char dir[RT_PATH_MAX];
        if (rt_container_dir(c->root_dir, c->id, dir, sizeof(dir), err) < 0)
                return -1;
        const char *id = c->id;
        if (c->argv == NULL || c->argv[0] == NULL || c->argv[0][0] == '\0')
                return cb_error_set(err, EINVAL,
                                    "container %s: argv is empty (the caller "
                                    "resolves command/args/Entrypoint/Cmd)",
                                    id);
        if ((c->rootfs_dir == NULL) == (c->n_lower == 0))
                return cb_error_set(err, EINVAL,
                                    "container %s: give either lower_dirs or "
                                    "rootfs_dir",
                                    id);
        if (c->rootfs_dir != NULL && c->rootfs_dir[0] != '/')
                return cb_error_set(err, EINVAL,
                                    "container %s: rootfs_dir \"%s\" is not "
                                    "absolute",
                                    id, c->rootfs_dir);
        for (size_t i = 0; i < c->n_lower; i++)
                if (c->lower_dirs[i] == NULL || c->lower_dirs[i][0] != '/')
                        return cb_error_set(err, EINVAL,
                                            "container %s: lower_dirs[%zu] is not "
                                            "an absolute path",
                                            id, i);
        if (c->cwd != NULL && c->cwd[0] != '\0' && c->cwd[0] != '/')
                return cb_error_set(err, EINVAL,
                                    "container %s: working dir \"%s\" is not "
                                    "absolute",
                                    id, c->cwd);
        for (size_t i = 0; i < c->n_mounts; i++) {
                const struct rt_mount *m = &c->mounts[i];
                if (m->destination == NULL || m->destination[0] != '/')
                        return cb_error_set(err, EINVAL,
                                            "container %s: mounts[%zu]: "
                                            "destination is not an absolute path",
                                            id, i);
                if (m->type == RT_MOUNT_BIND && (m->source == NULL || m->source[0] != '/'))
                        return cb_error_set(err, EINVAL,
                                            "container %s: mounts[%zu] (%s): bind "
                                            "source is not an absolute path",
                                            id, i, m->destination);
                if (m->type != RT_MOUNT_BIND && m->type != RT_MOUNT_TMPFS)
                        return cb_error_set(err, EINVAL,
                                            "container %s: mounts[%zu]: unknown "
                                            "type %d",
                                            id, i, (int)m->type);
                if (!c->privileged && covers_dev_or_proc(m->destination))
                        return cb_error_set(err, EPERM,
                                            "container %s: mounts[%zu]: destination %s covers "
                                            "the runtime's /dev or /proc, which only a "
                                            "privileged container may replace",
                                            id, i, m->destination);
        }
        if (c->seccomp != RT_SECCOMP_RUNTIME_DEFAULT && c->seccomp != RT_SECCOMP_UNCONFINED &&
            c->seccomp != RT_SECCOMP_LOCALHOST)
                return cb_error_set(err, EINVAL, "container %s: unknown seccomp kind %d", id,
                                    (int)c->seccomp);
        if (c->oom_score_adj < -1000 || c->oom_score_adj > 1000)
                return cb_error_set(err, EINVAL,
                                    "container %s: oom_score_adj %d is outside "
                                    "-1000..1000",
                                    id, c->oom_score_adj);
        return 0;
}

/* The config as <state dir>/config.json, which exec (runtime/exec.c) reads. */
int rt_container_save_config(const struct rt_container_config *c, struct cb_error *err)
{
        char dir[RT_PATH_MAX], path[RT_PATH_MAX + 16];
        if (rt_container_dir(c->root_dir, c->id, dir, sizeof(dir), err) < 0)
                return -1;
        _cleanup_free_ char *json = NULL;
        if (rt_config_to_json(c, &json, err) < 0)
                return cb_error_prefix(err, "container %s", c->id);
        snprintf(path, sizeof(path), "%s/config.json", dir);
        if (cb_write_file_replace(path, json, strlen(json), 0600, err) < 0)
                return cb_error_prefix(err, "container %s", c->id);
        return 0;
}

/* ---- state.json / exit.json --------------------------------------------------- */

static const char *status_name(enum rt_container_status s)
{
        switch (s) {
        case RT_CONTAINER_CREATED:
                return "created";
        case RT_CONTAINER_RUNNING:
                return "running";
        case RT_CONTAINER_EXITED:
                return "exited";
        default:
                return "unknown";
        }
}

static int write_json(const char *dir, const char *name, cJSON *o, struct cb_error *err)
{
        char path[RT_PATH_MAX];
        if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
                return cb_error_set(err, ENAMETOOLONG, "%s/%s is too long", dir, name);
        _cleanup_free_ char *s = cJSON_PrintUnformatted(o);
        if (s == NULL)
                return cb_error_set(err, ENOMEM, "cannot encode %s", path);
        /* Records of live processes: no fsync (lib/file.h). */
        return cb_write_file_replace(path, s, strlen(s), 0600, err);
}

static void add_time(cJSON *o, const char *k, int64_t ns)
{
        /* ns as a string: a double loses precision above 2^53 */
        char buf[32], rfc[48];
        snprintf(buf, sizeof(buf), "%lld", (long long)ns);
        cJSON_AddStringToObject(o, k, buf);
        if (ns > 0) {
                char k2[48];
                snprintf(k2, sizeof(k2), "%sRFC3339", k);
                rt_format_time(ns, rfc, sizeof(rfc));
                cJSON_AddStringToObject(o, k2, rfc);
        }
}

static int64_t get_time(const cJSON *o, const char *k)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
        return cJSON_IsString(v) ? strtoll(v->valuestring, NULL, 10) : 0;
}

static void add_u64(cJSON *o, const char *k, uint64_t v)
{
        char buf[32];
        snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
        cJSON_AddStringToObject(o, k, buf);
}

static uint64_t get_u64(const cJSON *o, const char *k)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
        return cJSON_IsString(v) ? strtoull(v->valuestring, NULL, 10) : 0;
}

int rt_state_write(const char *dir, const struct rt_container_state *s, struct cb_error *err)
{
        _cleanup_cjson_ cJSON *o = cJSON_CreateObject();
        if (o == NULL)
                return cb_error_set(err, ENOMEM, "cannot encode state.json");
        cJSON_AddStringToObject(o, "id", s->id);
        cJSON_AddStringToObject(o, "status", status_name(s->status));
        cJSON_AddNumberToObject(o, "pid", s->pid);
        add_u64(o, "startTime", s->start_time);
        cJSON_AddNumberToObject(o, "monitorPid", s->monitor_pid);
        add_u64(o, "monitorStartTime", s->monitor_start_time);
        add_time(o, "createdAt", s->created_at);
        add_time(o, "startedAt", s->started_at);
        cJSON_AddStringToObject(o, "cgroupPath", s->cgroup_path);
        cJSON_AddStringToObject(o, "logPath", s->log_path);
        cJSON_AddNumberToObject(o, "stopSignal", s->stop_signal);
        cJSON_AddBoolToObject(o, "stdin", s->stdin_open);
        cJSON_AddBoolToObject(o, "stdinOnce", s->stdin_once);
        cJSON_AddBoolToObject(o, "tty", s->tty);
        return write_json(dir, "state.json", o, err);
}

int rt_exit_write(const char *dir, const struct rt_container_state *s, struct cb_error *err)
{
        _cleanup_cjson_ cJSON *o = cJSON_CreateObject();
        if (o == NULL)
                return cb_error_set(err, ENOMEM, "cannot encode exit.json");
        cJSON_AddNumberToObject(o, "exitCode", s->exit_code);
        cJSON_AddNumberToObject(o, "signal", s->signal);
        add_time(o, "finishedAt", s->finished_at);
        cJSON_AddBoolToObject(o, "oomKilled", s->oom_killed);
        cJSON_AddBoolToObject(o, "startFailed", s->start_failed);
        cJSON_AddStringToObject(o, "reason", s->reason);
        cJSON_AddStringToObject(o, "message", s->message);
        return write_json(dir, "exit.json", o, err);
}

static int read_json(const char *dir, const char *name, cJSON **ret, struct cb_error *err)
{
        char path[RT_PATH_MAX];
        if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
                return cb_error_set(err, ENAMETOOLONG, "%s/%s is too long", dir, name);
        _cleanup_free_ char *buf = NULL;
        if (cb_read_file(path, 1 << 20, &buf, NULL, err) < 0)
                return -1;
        cJSON *o = cJSON_Parse(buf);
        if (!cJSON_IsObject(o)) {
                cJSON_Delete(o);
                return cb_error_set(err, EINVAL, "%s is not a JSON object", path);
        }
        *ret = o;
        return 0;
}

static void copy_str(char *dst, size_t size, const cJSON *o, const char *k)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
        snprintf(dst, size, "%s", cJSON_IsString(v) ? v->valuestring : "");
}

/* state.json and exit.json as written, without looking at processes. */
static int load_state(const char *root_dir, const char *id, char *dir, size_t dsize,
                      struct rt_container_state *s, bool *ret_has_exit, struct cb_error *err)
{
        if (rt_container_dir(root_dir, id, dir, dsize, err) < 0)
                return -1;
        memset(s, 0, sizeof(*s));
        _cleanup_cjson_ cJSON *o = NULL;
        if (read_json(dir, "state.json", &o, err) < 0) {
                if (err != NULL && err->code == ENOENT)
                        return cb_error_set(err, ENOENT, "container %s not found under %s", id,
                                            root_dir);
                return -1;
        }
        snprintf(s->id, sizeof(s->id), "%s", id);
        s->pid = (pid_t)jnum(o, "pid");
        s->start_time = get_u64(o, "startTime");
        s->monitor_pid = (pid_t)jnum(o, "monitorPid");
        s->monitor_start_time = get_u64(o, "monitorStartTime");
        s->created_at = get_time(o, "createdAt");
        s->started_at = get_time(o, "startedAt");
        s->stop_signal = (int)jnum(o, "stopSignal");
        s->stdin_open = jbool(o, "stdin");
        s->stdin_once = jbool(o, "stdinOnce");
        s->tty = jbool(o, "tty");
        copy_str(s->cgroup_path, sizeof(s->cgroup_path), o, "cgroupPath");
        copy_str(s->log_path, sizeof(s->log_path), o, "logPath");
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(o, "status");
        s->status = RT_CONTAINER_UNKNOWN;
        if (cJSON_IsString(st)) {
                if (strcmp(st->valuestring, "created") == 0)
                        s->status = RT_CONTAINER_CREATED;
                else if (strcmp(st->valuestring, "running") == 0)
                        s->status = RT_CONTAINER_RUNNING;
                else if (strcmp(st->valuestring, "exited") == 0)
                        s->status = RT_CONTAINER_EXITED;
        }
        _cleanup_cjson_ cJSON *x = NULL;
        struct cb_error e;
        *ret_has_exit = read_json(dir, "exit.json", &x, &e) == 0;
        if (*ret_has_exit) {
                s->exit_code = (int)jnum(x, "exitCode");
                s->signal = (int)jnum(x, "signal");
                s->finished_at = get_time(x, "finishedAt");
                s->oom_killed = jbool(x, "oomKilled");
                s->start_failed = jbool(x, "startFailed");
                copy_str(s->reason, sizeof(s->reason), x, "reason");
                copy_str(s->message, sizeof(s->message), x, "message");
        }
        return 0;
}

int rt_container_state(const char *root_dir, const char *id, struct rt_container_state *ret,
                       struct cb_error *err)
{
        char dir[RT_PATH_MAX];
        struct rt_container_state s;
        bool has_exit;
        if (load_state(root_dir, id, dir, sizeof(dir), &s, &has_exit, err) < 0)
                return -1;
        bool monitor = proc_matches(s.monitor_pid, s.monitor_start_time);
        if (has_exit)
                s.status = RT_CONTAINER_EXITED;
        else if (s.pid > 0 && (proc_matches(s.pid, s.start_time) || monitor))
                /* a container that just died is RUNNING until its monitor
                 * wrote exit.json (the exit fd fires after that) */
                s.status = RT_CONTAINER_RUNNING;
        else if (s.pid <= 0 && monitor)
                s.status = RT_CONTAINER_CREATED;
        else
                s.status = RT_CONTAINER_UNKNOWN; /* the monitor died without a record */
        *ret = s;
        return 0;
}

/* ---- spawning the monitor ------------------------------------------------------ */

int rt_memfd_with(const char *name, const char *data, struct cb_error *err)
{
        _cleanup_close_ int fd = memfd_create(name, MFD_CLOEXEC);
        if (fd < 0)
                return cb_error_set(err, errno, "cannot create a memfd");
        size_t len = strlen(data), off = 0;
        while (off < len) {
                ssize_t n = write(fd, data + off, len - off);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return cb_error_set(err, errno, "cannot write the config memfd");
                off += (size_t)n;
        }
        return take_fd(&fd);
}

/* fds above the ones the monitor receives, so no dup2 is a no-op that
 * would keep close-on-exec set */
int rt_high_fd(int fd, struct cb_error *err)
{
        int h = fcntl(fd, F_DUPFD_CLOEXEC, 10);
        if (h < 0)
                return cb_error_set(err, errno, "fcntl(F_DUPFD_CLOEXEC)");
        return h;
}

/*
 * The runtime's hidden modes (__monitor, __exec, __pause) run from a sealed
 * memfd copy of the cubelet binary, never from the file on the host (runc's
 * answer to CVE-2019-5736, its cloned binary): the container's first
 * process and every exec'd command are forks of those modes, so before
 * their execve /proc/<pid>/exe is the copy, which nobody can write
 * (F_SEAL_WRITE, _GROW, _SHRINK, _SEAL), and the host binary is reachable
 * from nothing in a container. Made once per binary (path, inode, mtime)
 * and kept for the life of the process; thread-safe. The fd is the cache's:
 * callers do not close it.
 */
#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif
static pthread_mutex_t exe_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
        int fd;
        char path[RT_PATH_MAX];
        dev_t dev;
        ino_t ino;
        struct timespec mtime;
} exe_clone = {.fd = -1};

static int make_exe_clone(const char *exe, const struct stat *st, struct cb_error *err)
{
        _cleanup_close_ int src = open(exe, O_RDONLY | O_CLOEXEC);
        if (src < 0)
                return cb_error_set(err, errno, "cannot open %s", exe);
        _cleanup_close_ int fd =
            memfd_create("cubelet", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_EXEC);
        if (fd < 0 && errno == EINVAL) /* before Linux 6.3: executable anyway */
                fd = memfd_create("cubelet", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0)
                return cb_error_set(err, errno, "cannot create a memfd for the runtime's binary");
        off_t off = 0;
        while (off < st->st_size) {
                ssize_t n = sendfile(fd, src, &off, (size_t)(st->st_size - off));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return cb_error_set(err, n < 0 ? errno : EIO, "cannot copy %s", exe);
        }
        if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0)
                return cb_error_set(err, errno, "cannot seal the copy of %s", exe);
        return take_fd(&fd);
}

int rt_exe_clone(const char *exe, struct cb_error *err)
{
        struct stat st;
        if (stat(exe, &st) < 0)
                return cb_error_set(err, errno, "cannot stat %s", exe);
        pthread_mutex_lock(&exe_lock);
        int fd = exe_clone.fd;
        if (fd < 0 || strcmp(exe_clone.path, exe) != 0 || exe_clone.dev != st.st_dev ||
            exe_clone.ino != st.st_ino || exe_clone.mtime.tv_sec != st.st_mtim.tv_sec ||
            exe_clone.mtime.tv_nsec != st.st_mtim.tv_nsec) {
                fd = make_exe_clone(exe, &st, err);
                if (fd >= 0) {
                        /* an older copy stays open: a spawn of another
                         * thread may still be using it */
                        exe_clone.fd = fd;
                        snprintf(exe_clone.path, sizeof(exe_clone.path), "%s", exe);
                        exe_clone.dev = st.st_dev;
                        exe_clone.ino = st.st_ino;
                        exe_clone.mtime = st.st_mtim;
                }
        }
        pthread_mutex_unlock(&exe_lock);
        return fd;
}

/*
 * posix_spawn (clone(CLONE_VM|CLONE_VFORK) in glibc): nothing of the
 * multi-threaded agent runs in the child between fork and exec. fd 3: the
 * config memfd, 4: the seccomp memfd, 5: the sync socket; every other fd
 * is closed (libcurl's sockets are not close-on-exec on Debian 12), signal
 * dispositions and the mask are reset, and the monitor starts a new
 * session so the agent's process group and terminal do not reach it.
 */
void rt_spawn_init(posix_spawn_file_actions_t *fa, posix_spawnattr_t *attr, short flags)
{
        posix_spawn_file_actions_init(fa);
        posix_spawnattr_init(attr);
        posix_spawn_file_actions_addopen(fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(fa, 1, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_adddup2(fa, 1, 2);
        sigset_t all, none;
        sigfillset(&all);
        sigemptyset(&none);
        posix_spawnattr_setsigdefault(attr, &all);
        posix_spawnattr_setsigmask(attr, &none);
        posix_spawnattr_setflags(attr, flags | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
}

int rt_spawn_self(const char *exe, char *const argv[], const int *fds, size_t n_fds, pid_t *ret,
                  struct cb_error *err)
{
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t attr;
        rt_spawn_init(&fa, &attr, POSIX_SPAWN_SETSID);
        for (size_t i = 0; i < n_fds; i++)
                if (fds[i] >= 0)
                        posix_spawn_file_actions_adddup2(&fa, fds[i], 3 + (int)i);
        /* the sealed copy as the fd after the child's own, executed as
         * /proc/self/fd/N; the mode closes it first thing (rt_*_main) */
        int clone = rt_exe_clone(exe, err);
        if (clone < 0) {
                posix_spawn_file_actions_destroy(&fa);
                posix_spawnattr_destroy(&attr);
                return -1;
        }
        int slot = 3 + (int)n_fds;
        posix_spawn_file_actions_adddup2(&fa, clone, slot);
        posix_spawn_file_actions_addclosefrom_np(&fa, slot + 1);
        char path[32];
        snprintf(path, sizeof(path), "/proc/self/fd/%d", slot);
        char *envp[] = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", NULL};
        int rc = posix_spawn(ret, path, &fa, &attr, argv, envp);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&attr);
        if (rc != 0)
                return cb_error_set(err, rc, "cannot start %s %s", exe, argv[1] ? argv[1] : "");
        return 0;
}

static int spawn_monitor(const char *exe, int cfg, int bpf, int sock, pid_t *ret,
                         struct cb_error *err)
{
        _cleanup_close_ int hc = rt_high_fd(cfg, err);
        _cleanup_close_ int hb = bpf >= 0 ? rt_high_fd(bpf, err) : -1;
        _cleanup_close_ int hs = rt_high_fd(sock, err);
        if (hc < 0 || hs < 0 || (bpf >= 0 && hb < 0))
                return -1;
        int fds[] = {hc, hb, hs}; /* 3, 4, 5 */
        char *argv[] = {(char *)exe, "__monitor", "3", hb >= 0 ? "4" : "none", "5", NULL};
        return rt_spawn_self(exe, argv, fds, 3, ret, err);
}

static int wait_running(int fd, const char *id, struct cb_error *err)
{
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int n;
        do
                n = poll(&p, 1, START_TIMEOUT_MS);
        while (n < 0 && errno == EINTR);
        if (n == 0)
                return cb_error_set(err, ETIMEDOUT,
                                    "container %s: the monitor did not report "
                                    "within %d s",
                                    id, START_TIMEOUT_MS / 1000);
        struct rt_sync_msg m;
        int r = rt_sync_recv(fd, &m, err);
        if (r < 0)
                return cb_error_prefix(err, "container %s", id);
        if (r == 0)
                return cb_error_set(err, EPIPE,
                                    "container %s: the monitor exited before "
                                    "reporting",
                                    id);
        if (m.type == RT_SYNC_ERROR) {
                if (err != NULL) {
                        err->code = m.code;
                        snprintf(err->msg, sizeof(err->msg), "%s", m.msg);
                }
                return -1;
        }
        if (m.type != RT_SYNC_RUNNING)
                return cb_error_set(err, EPROTO,
                                    "container %s: unexpected message %d from the "
                                    "monitor",
                                    id, m.type);
        return 0;
}

int rt_container_create_start(const struct rt_container_config *config,
                              struct rt_container_state *ret_state, struct cb_error *err)
{
        if (config_validate(config, err) < 0)
                return -1;
        if (config->monitor_path == NULL || config->monitor_path[0] != '/')
                return cb_error_set(err, EINVAL,
                                    "container %s: monitor_path must be the "
                                    "absolute path of the cubelet binary",
                                    config->id);
        uint64_t caps = 0;
        if (!config->privileged && rt_caps_parse(config->caps, config->n_caps, &caps, err) < 0)
                return cb_error_prefix(err, "container %s", config->id);
        _cleanup_close_ int bpf = -1;
        if (rt_seccomp_fd(config, caps, &bpf, err) < 0)
                return cb_error_prefix(err, "container %s", config->id);

        char dir[RT_PATH_MAX], sub[RT_PATH_MAX + 16];
        if (rt_container_dir(config->root_dir, config->id, dir, sizeof(dir), err) < 0)
                return -1;
        snprintf(sub, sizeof(sub), "%s/containers", config->root_dir);
        if (cb_mkdir_p(sub, 0700, 0700, err) < 0)
                return -1;
        if (mkdir(dir, 0700) < 0)
                return cb_error_set(err, errno,
                                    errno == EEXIST ? "container %s already exists "
                                                      "(remove it first)"
                                                    : "cannot create %s",
                                    errno == EEXIST ? config->id : dir);
        static const char *const subs[] = {"rootfs", "upper", "work"};
        for (size_t i = 0; i < CB_ARRAY_SIZE(subs); i++) {
                snprintf(sub, sizeof(sub), "%s/%s", dir, subs[i]);
                if (mkdir(sub, 0755) < 0)
                        return cb_error_set(err, errno, "cannot create %s", sub);
        }
        struct rt_container_state st = {.status = RT_CONTAINER_CREATED,
                                        .created_at = rt_now_ns(),
                                        .stop_signal = config->stop_signal,
                                        .stdin_open = config->stdin_open,
                                        .stdin_once = config->stdin_once,
                                        .tty = config->tty};
        snprintf(st.id, sizeof(st.id), "%s", config->id);
        snprintf(st.cgroup_path, sizeof(st.cgroup_path), "%s",
                 config->cgroup_path != NULL ? config->cgroup_path : "");
        snprintf(st.log_path, sizeof(st.log_path), "%s",
                 config->log_path != NULL ? config->log_path : "");
        if (rt_state_write(dir, &st, err) < 0)
                return -1;
        /* config.json: what exec (probes, and later kubectl exec) needs to
         * enter the container with the same security settings. */
        if (rt_container_save_config(config, err) < 0)
                return -1;

        /* The container cgroup, its device policy and the OOM baseline are
         * made here, where libcgroup is initialised already; the monitor
         * only attaches and reads (see cg_locate). */
        struct rt_container_config cfg2 = *config;
        struct cg_location loc;
        if (config->cgroup_path != NULL && config->cgroup_path[0] != '\0') {
                struct cg_oom oom;
                if (cg_create(config->cgroup_path, &config->limits, err) < 0 ||
                    (!config->privileged && cg_restrict_devices(config->cgroup_path, err) < 0) ||
                    cg_read_oom(config->cgroup_path, &oom, err) < 0 ||
                    cg_locate(config->cgroup_path, &loc, err) < 0)
                        return cb_error_prefix(err, "container %s", config->id);
                cfg2.cg_loc = &loc;
                cfg2.oom_before = oom.oom_kill;
        }
        _cleanup_free_ char *json = NULL;
        if (rt_config_to_json(&cfg2, &json, err) < 0)
                return -1;
        _cleanup_close_ int cfg = rt_memfd_with("cubelet-config", json, err);
        if (cfg < 0)
                return -1;
        int sp[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
                return cb_error_set(err, errno, "cannot create the monitor socket");
        _cleanup_close_ int mine = sp[0];
        pid_t m0;
        int r = spawn_monitor(config->monitor_path, cfg, bpf, sp[1], &m0, err);
        close(sp[1]);
        if (r < 0)
                return -1;
        /* M0 forks the monitor and exits at once */
        while (waitpid(m0, NULL, 0) < 0 && errno == EINTR)
                ;
        if (wait_running(mine, config->id, err) < 0)
                return -1;
        if (ret_state != NULL) {
                struct cb_error e2;
                if (rt_container_state(config->root_dir, config->id, ret_state, &e2) < 0) {
                        if (err != NULL)
                                *err = e2;
                        return -1;
                }
        }
        return 0;
}

/* ---- signals, exit fd, stop ------------------------------------------------------ */

/* pidfd of pid, only if it is still the process that started at start_time:
 * open first, check second, so a recycled pid cannot slip in between.
 * Returns the pidfd, or -1 with err set. The fd is the return value rather
 * than an output parameter, so no caller can read one that was never set. */
static int open_checked(pid_t pid, uint64_t start_time, struct cb_error *err)
{
        if (pid <= 0)
                return cb_error_set(err, ESRCH, "no process");
        int fd = rt_pidfd_open(pid, 0);
        if (fd < 0) {
                if (errno == ESRCH || errno == EINVAL)
                        return cb_error_set(err, ESRCH, "process %d is gone", (int)pid);
                return cb_error_set(err, errno, "pidfd_open(%d)", (int)pid);
        }
        if (!proc_matches(pid, start_time)) {
                close(fd);
                return cb_error_set(err, ESRCH, "process %d is gone (pid reused)", (int)pid);
        }
        return fd;
}

int rt_container_exit_fd(const char *root_dir, const char *id, int *ret_fd, struct cb_error *err)
{
        struct rt_container_state s;
        char dir[RT_PATH_MAX];
        bool has_exit;
        if (load_state(root_dir, id, dir, sizeof(dir), &s, &has_exit, err) < 0)
                return -1;
        struct cb_error e;
        int fd = open_checked(s.monitor_pid, s.monitor_start_time, &e);
        if (fd >= 0) {
                *ret_fd = fd;
                return 0;
        }
        if (e.code != ESRCH) {
                if (err != NULL)
                        *err = e;
                return -1;
        }
        /* monitor already gone: an fd that is readable at once */
        fd = eventfd(1, EFD_CLOEXEC);
        if (fd < 0)
                return cb_error_set(err, errno, "eventfd");
        *ret_fd = fd;
        return 0;
}

int rt_container_signal(const char *root_dir, const char *id, int sig, struct cb_error *err)
{
        struct rt_container_state s;
        if (rt_container_state(root_dir, id, &s, err) < 0)
                return -1;
        if (s.status != RT_CONTAINER_RUNNING)
                return cb_error_set(err, ESRCH, "container %s is not running", id);
        _cleanup_close_ int fd = open_checked(s.pid, s.start_time, err);
        if (fd < 0)
                return cb_error_prefix(err, "container %s is not running", id);
        if (rt_pidfd_send_signal(fd, sig, NULL, 0) < 0) {
                if (errno == ESRCH)
                        return cb_error_set(err, ESRCH, "container %s is not running", id);
                return cb_error_set(err, errno, "cannot signal container %s", id);
        }
        return 0;
}

int rt_container_kill_all(const char *root_dir, const char *id, struct cb_error *err)
{
        struct rt_container_state s;
        if (rt_container_state(root_dir, id, &s, err) < 0)
                return -1;
        if (s.cgroup_path[0] == '\0') {
                struct cb_error e;
                return rt_container_signal(root_dir, id, SIGKILL, &e) == 0 ? 1 : 0;
        }
        bool exists;
        if (cg_exists(s.cgroup_path, &exists, err) < 0)
                return -1;
        if (!exists)
                return 0;
        return cg_kill_all(s.cgroup_path, SIGKILL, err);
}

int rt_container_abort(const char *root_dir, const char *id, struct cb_error *err)
{
        struct rt_container_state s;
        if (rt_container_state(root_dir, id, &s, err) < 0)
                return -1;
        struct cb_error e;
        _cleanup_close_ int fd = open_checked(s.monitor_pid, s.monitor_start_time, &e);
        if (fd >= 0)
                (void)rt_pidfd_send_signal(fd, SIGKILL, NULL, 0);
        return rt_container_kill_all(root_dir, id, err);
}

static int wait_fd(int fd, int64_t ms)
{
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int64_t deadline = rt_now_ns() / 1000000 + ms;
        for (;;) {
                int64_t left = deadline - rt_now_ns() / 1000000;
                if (left < 0)
                        left = 0;
                int n = poll(&p, 1, (int)left);
                if (n > 0)
                        return 1;
                if (n == 0)
                        return 0;
                if (errno != EINTR)
                        return -1;
        }
}

int rt_container_stop(const char *root_dir, const char *id, int sig, int grace_seconds,
                      struct cb_error *err)
{
        struct rt_container_state s;
        if (rt_container_state(root_dir, id, &s, err) < 0)
                return -1;
        if (s.status == RT_CONTAINER_EXITED)
                return 0;
        _cleanup_close_ int fd = -1;
        if (rt_container_exit_fd(root_dir, id, &fd, err) < 0)
                return -1;
        if (sig == 0)
                sig = s.stop_signal > 0 ? s.stop_signal : SIGTERM;
        struct cb_error e;
        if (rt_container_signal(root_dir, id, sig, &e) < 0 && e.code != ESRCH) {
                if (err != NULL)
                        *err = e;
                return -1;
        }
        if (wait_fd(fd, (int64_t)(grace_seconds > 0 ? grace_seconds : 0) * 1000) > 0)
                return 0;
        if (rt_container_kill_all(root_dir, id, err) < 0)
                return -1;
        if (wait_fd(fd, 30000) <= 0)
                return cb_error_set(err, ETIMEDOUT,
                                    "container %s did not exit 30 s after "
                                    "SIGKILL",
                                    id);
        return 0;
}

/* ---- remove, list ---------------------------------------------------------------- */

/* SIGKILLs what is left in the cgroup and waits on pidfds until it is gone. */
static int empty_cgroup(const char *path, struct cb_error *err)
{
        for (int round = 0; round < 50; round++) {
                _cleanup_free_ pid_t *pids = NULL;
                size_t n;
                if (cg_list_pids(path, &pids, &n, err) < 0)
                        return -1;
                if (n == 0)
                        return 0;
                for (size_t i = 0; i < n; i++) {
                        int fd = rt_pidfd_open(pids[i], 0);
                        if (fd < 0)
                                continue;
                        if (rt_pidfd_send_signal(fd, SIGKILL, NULL, 0) == 0)
                                (void)wait_fd(fd, 5000);
                        close(fd);
                }
        }
        return cb_error_set(err, EBUSY, "cgroup %s keeps getting new processes", path);
}

/* Lazily unmounts anything mounted under dir in our mount namespace. */
static void unmount_under(const char *dir)
{
        _cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
        if (f == NULL)
                return;
        size_t dlen = strlen(dir);
        char line[8192];
        char targets[32][512];
        size_t n = 0;
        while (fgets(line, sizeof(line), f) != NULL && n < CB_ARRAY_SIZE(targets)) {
                /* id parent major:minor root mountpoint ... */
                char mp[512];
                if (sscanf(line, "%*s %*s %*s %*s %511s", mp) != 1)
                        continue;
                if (strncmp(mp, dir, dlen) == 0 && (mp[dlen] == '/' || mp[dlen] == '\0'))
                        snprintf(targets[n++], sizeof(targets[0]), "%s", mp);
        }
        while (n-- > 0) /* deepest (latest) first */
                (void)umount2(targets[n], MNT_DETACH);
}

int rt_container_remove(const char *root_dir, const char *id, struct cb_error *err)
{
        char dir[RT_PATH_MAX];
        if (rt_container_dir(root_dir, id, dir, sizeof(dir), err) < 0)
                return -1;
        struct stat sb;
        if (lstat(dir, &sb) < 0 && errno == ENOENT)
                return 0;
        struct rt_container_state s;
        struct cb_error e;
        if (rt_container_state(root_dir, id, &s, &e) == 0) {
                if ((s.status == RT_CONTAINER_RUNNING || s.status == RT_CONTAINER_CREATED) &&
                    proc_matches(s.monitor_pid, s.monitor_start_time))
                        return cb_error_set(err, EBUSY,
                                            "container %s is %s; stop it before "
                                            "removing it",
                                            id, status_name(s.status));
                /* Without its monitor (killed) nothing tracks the container:
                 * what still runs of it (dying, or a zombie nobody reaped
                 * yet) goes with its cgroup below; it used to be refused as
                 * "running" and left behind for good (tests/faults). */
                if (s.status == RT_CONTAINER_RUNNING && s.cgroup_path[0] == '\0')
                        (void)rt_container_signal(root_dir, id, SIGKILL, &e);
                if (s.cgroup_path[0] != '\0') {
                        bool exists = false;
                        if (cg_exists(s.cgroup_path, &exists, err) < 0)
                                return -1;
                        if (exists && (empty_cgroup(s.cgroup_path, err) < 0 ||
                                       cg_destroy(s.cgroup_path, err) < 0))
                                return cb_error_prefix(err, "container %s", id);
                }
        }
        unmount_under(dir);
        if (rt_rm_rf(dir, err) < 0)
                return cb_error_prefix(err, "container %s", id);
        return 0;
}

static int cmp_str(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

void rt_container_list_free(char **ids, size_t n)
{
        if (ids == NULL)
                return;
        for (size_t i = 0; i < n; i++)
                free(ids[i]);
        free(ids);
}

int rt_container_list(const char *root_dir, char ***ret_ids, size_t *ret_n, struct cb_error *err)
{
        char path[RT_PATH_MAX];
        if ((size_t)snprintf(path, sizeof(path), "%s/containers", root_dir) >= sizeof(path))
                return cb_error_set(err, ENAMETOOLONG, "%s is too long", root_dir);
        *ret_ids = NULL;
        *ret_n = 0;
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) {
                if (errno == ENOENT)
                        return 0;
                return cb_error_set(err, errno, "cannot open %s", path);
        }
        DIR *d = fdopendir(fd);
        if (d == NULL) {
                close(fd);
                return cb_error_set(err, errno, "cannot read %s", path);
        }
        char **ids = NULL;
        size_t n = 0;
        struct dirent *de;
        int r = 0;
        while ((de = readdir(d)) != NULL) {
                if (de->d_type != DT_DIR || !id_valid(de->d_name))
                        continue;
                char **nv = realloc(ids, (n + 1) * sizeof(char *));
                char *s = strdup(de->d_name);
                if (nv == NULL || s == NULL) {
                        free(s);
                        if (nv != NULL)
                                ids = nv;
                        r = cb_error_set(err, ENOMEM, "cannot list %s", path);
                        break;
                }
                ids = nv;
                ids[n++] = s;
        }
        closedir(d);
        if (r < 0) {
                rt_container_list_free(ids, n);
                return -1;
        }
        if (n > 1)
                qsort(ids, n, sizeof(char *), cmp_str);
        *ret_ids = ids;
        *ret_n = n;
        return 0;
}

int rt_container_list_unclaimed(const char *root_dir, char *const *claimed, size_t n_claimed,
                                int64_t before_ms, char ***ret_ids, size_t *ret_n,
                                struct cb_error *err)
{
        char **ids = NULL;
        size_t n = 0, kept = 0;
        if (rt_container_list(root_dir, &ids, &n, err) < 0)
                return -1;
        for (size_t i = 0; i < n; i++) {
                bool claimed_now = false;
                for (size_t k = 0; k < n_claimed && !claimed_now; k++)
                        claimed_now = strcmp(claimed[k], ids[i]) == 0;
                char dir[RT_PATH_MAX];
                struct stat st;
                if (claimed_now ||
                    (size_t)snprintf(dir, sizeof(dir), "%s/containers/%s", root_dir, ids[i]) >=
                        sizeof(dir) ||
                    lstat(dir, &st) < 0 ||
                    (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000 >= before_ms) {
                        free(ids[i]);
                        continue;
                }
                ids[kept++] = ids[i];
        }
        *ret_ids = ids;
        *ret_n = kept;
        return 0;
}

/* ---- images in use ------------------------------------------------------- */

/* 1 when the container's lower dirs are exactly the image's layer dirs. */
static bool same_layers(const struct rt_container_config *c, const struct rt_image *img)
{
        if (c->n_lower != img->n_layers || c->n_lower == 0)
                return false;
        for (size_t i = 0; i < c->n_lower; i++)
                if (strcmp(c->lower_dirs[i], img->layer_dirs[i]) != 0)
                        return false;
        return true;
}

int rt_images_in_use(const char *root_dir, struct rt_image *const *imgs, size_t n, bool *ret_in_use,
                     struct cb_error *err)
{
        for (size_t i = 0; i < n; i++)
                ret_in_use[i] = false;
        char **ids = NULL;
        size_t n_ids = 0;
        if (rt_container_list(root_dir, &ids, &n_ids, err) < 0)
                return -1;
        for (size_t k = 0; k < n_ids; k++) {
                char dir[RT_PATH_MAX], path[RT_PATH_MAX + 16];
                if (rt_container_dir(root_dir, ids[k], dir, sizeof(dir), NULL) < 0)
                        continue;
                snprintf(path, sizeof(path), "%s/config.json", dir);
                _cleanup_free_ char *json = NULL;
                if (cb_read_file(path, 4u << 20, &json, NULL, NULL) < 0)
                        continue; /* being created (no config yet) or removed */
                struct cb_arena *a = cb_arena_new(0);
                struct rt_container_config c;
                if (a != NULL && rt_config_from_json(a, json, &c, NULL) == 0)
                        for (size_t i = 0; i < n; i++)
                                ret_in_use[i] = ret_in_use[i] || same_layers(&c, imgs[i]);
                cb_arena_free(a);
        }
        rt_container_list_free(ids, n_ids);
        return 0;
}
