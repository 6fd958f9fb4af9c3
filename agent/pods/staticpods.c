/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/pods/staticpods.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/core/inotify.h"
#include "agent/k8s/k8s.h"
#include "agent/core/log.h"
#include "lib/wallclock.h"
#include "lib/cleanup.h"
#include "lib/file.h"

/* ---- FNV-128a ---- */

__extension__ typedef unsigned __int128 u128;

void ag_fnv128a_hex(const void *data, size_t len, char ret[33])
{
        /* offset basis 0x6c62272e07bb014262b821756295c58d, prime 2^88 + 0x13b */
        u128 h = ((u128)0x6c62272e07bb0142ULL << 64) | 0x62b821756295c58dULL;
        const u128 prime = ((u128)1 << 88) | 0x13b;
        const unsigned char *p = data;
        for (size_t i = 0; i < len; i++) {
                h ^= p[i];
                h *= prime;
        }
        snprintf(ret, 33, "%016llx%016llx", (unsigned long long)(h >> 64),
                 (unsigned long long)(h & 0xffffffffffffffffULL));
}

/* ---- defaulting ---- */

static bool valid_subdomain(const char *s)
{
        size_t n = strlen(s);
        if (n == 0 || n > 253)
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = s[i];
                bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
                if (!alnum && c != '-' && c != '.')
                        return false;
                if ((i == 0 || i == n - 1) && !alnum)
                        return false;
        }
        return true;
}

static cJSON *object_member(cJSON *parent, const char *key)
{
        cJSON *o = cJSON_GetObjectItemCaseSensitive(parent, key);
        if (o == NULL)
                return cJSON_AddObjectToObject(parent, key);
        if (cJSON_IsNull(o)) {
                cJSON *n = cJSON_CreateObject();
                cJSON_ReplaceItemInObjectCaseSensitive(parent, key, n);
                return n;
        }
        return cJSON_IsObject(o) ? o : NULL;
}

static void set_string(cJSON *obj, const char *key, const char *value)
{
        cJSON *s = cJSON_CreateString(value);
        if (cJSON_GetObjectItemCaseSensitive(obj, key) != NULL)
                cJSON_ReplaceItemInObjectCaseSensitive(obj, key, s);
        else
                cJSON_AddItemToObject(obj, key, s);
}

int ag_static_pod_from_text(const char *text, size_t len, const char *path, const char *node_name,
                            const char *seen, cJSON **ret, struct cb_error *err)
{
        _cleanup_cjson_ cJSON *pod = NULL;
        if (k8s_parse_text(text, len, &pod, err) < 0)
                return -1;
        if (!cJSON_IsObject(pod))
                return cb_error_set(err, 0, "want one Pod object");
        const cJSON *kind = cJSON_GetObjectItemCaseSensitive(pod, "kind");
        const cJSON *av = cJSON_GetObjectItemCaseSensitive(pod, "apiVersion");
        if (!cJSON_IsString(kind) || strcmp(kind->valuestring, "Pod") != 0)
                return cb_error_set(err, 0, "kind: want Pod (one pod per file)");
        if (!cJSON_IsString(av) || strcmp(av->valuestring, "v1") != 0)
                return cb_error_set(err, 0, "apiVersion: want v1");
        cJSON *meta = object_member(pod, "metadata");
        if (meta == NULL)
                return cb_error_set(err, 0, "metadata: want an object");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(meta, "name");
        if (!cJSON_IsString(name) || name->valuestring[0] == '\0')
                return cb_error_set(err, 0, "metadata.name: Required value: name is required");
        /* The spec must decode like any pod's (errors name the field). */
        struct k8s_pod *decoded = NULL;
        if (k8s_pod_from_json(pod, &decoded, err) < 0)
                return -1;
        k8s_pod_free(decoded);

        /* The uid: the hash of the manifest as written, the node and the
         * file, before any defaulting (like the kubelet's applyDefaults). */
        const cJSON *uid = cJSON_GetObjectItemCaseSensitive(meta, "uid");
        char hash[128];
        if (cJSON_IsString(uid) && uid->valuestring[0] != '\0') {
                if (strlen(uid->valuestring) >= sizeof(hash))
                        return cb_error_set(err, 0, "metadata.uid: too long");
                snprintf(hash, sizeof(hash), "%s", uid->valuestring);
        } else {
                _cleanup_free_ char *canon = cJSON_PrintUnformatted(pod);
                if (canon == NULL)
                        return cb_error_set(err, ENOMEM, "out of memory");
                size_t n = strlen(canon) + strlen(node_name) + strlen(path) + 16;
                _cleanup_free_ char *buf = malloc(n);
                if (buf == NULL)
                        return cb_error_set(err, ENOMEM, "out of memory");
                int w = snprintf(buf, n, "%shost:%sfile:%s", canon, node_name, path);
                ag_fnv128a_hex(buf, (size_t)w, hash);
                set_string(meta, "uid", hash);
        }
        /* name-node, with the node name in lower case. */
        char full[512];
        int w = snprintf(full, sizeof(full), "%s-%s", name->valuestring, node_name);
        for (char *p = full + strlen(name->valuestring); *p; p++)
                if (*p >= 'A' && *p <= 'Z')
                        *p = (char)(*p - 'A' + 'a');
        if (w < 0 || (size_t)w >= sizeof(full) || !valid_subdomain(full))
                return cb_error_set(err, 0,
                                    "metadata.name: Invalid value: \"%s\": a lowercase RFC 1123 "
                                    "subdomain of at most 253 characters is required",
                                    full);
        set_string(meta, "name", full);
        const cJSON *ns = cJSON_GetObjectItemCaseSensitive(meta, "namespace");
        if (!cJSON_IsString(ns) || ns->valuestring[0] == '\0')
                set_string(meta, "namespace", "default");
        cJSON *spec = object_member(pod, "spec");
        if (spec == NULL)
                return cb_error_set(err, 0, "spec: want an object");
        set_string(spec, "nodeName", node_name);
        cJSON *ann = object_member(meta, "annotations");
        if (ann == NULL)
                return cb_error_set(err, 0, "metadata.annotations: want an object");
        set_string(ann, "kubernetes.io/config.hash", hash);
        set_string(ann, "kubernetes.io/config.source", "file");
        set_string(ann, "kubernetes.io/config.seen", seen);
        /* Static pods are not evicted for node problems. */
        cJSON *tols = cJSON_GetObjectItemCaseSensitive(spec, "tolerations");
        if (tols == NULL || cJSON_IsNull(tols)) {
                tols = cJSON_CreateArray();
                if (cJSON_GetObjectItemCaseSensitive(spec, "tolerations") != NULL)
                        cJSON_ReplaceItemInObjectCaseSensitive(spec, "tolerations", tols);
                else
                        cJSON_AddItemToObject(spec, "tolerations", tols);
        }
        bool has = false;
        const cJSON *t;
        cJSON_ArrayForEach(t, tols)
        {
                const cJSON *op = cJSON_GetObjectItemCaseSensitive(t, "operator");
                const cJSON *eff = cJSON_GetObjectItemCaseSensitive(t, "effect");
                const cJSON *key = cJSON_GetObjectItemCaseSensitive(t, "key");
                has = has || (cJSON_IsString(op) && strcmp(op->valuestring, "Exists") == 0 &&
                              cJSON_IsString(eff) && strcmp(eff->valuestring, "NoExecute") == 0 &&
                              (key == NULL || (cJSON_IsString(key) && key->valuestring[0] == 0)) &&
                              cJSON_GetObjectItemCaseSensitive(t, "tolerationSeconds") == NULL);
        }
        if (!has) {
                cJSON *tol = cJSON_CreateObject();
                cJSON_AddStringToObject(tol, "operator", "Exists");
                cJSON_AddStringToObject(tol, "effect", "NoExecute");
                cJSON_AddItemToArray(tols, tol);
        }
        cJSON *status = object_member(pod, "status");
        if (status == NULL)
                return cb_error_set(err, 0, "status: want an object");
        set_string(status, "phase", "Pending");
        *ret = steal_pointer(&pod);
        return 0;
}

/* ---- the watcher ---- */

struct entry {
        struct entry *next;
        char *name;         /* file name in the directory */
        char text_hash[33]; /* of the file's content */
        char *uid;          /* NULL: never decoded */
        char *seen;
        cJSON *pod;
        bool present; /* seen in the current scan */
};

struct ag_static_pods {
        struct ag_loop *loop;
        char *dir, *node_name;
        uint64_t rescan_ms;
        struct ag_static_pods_ops ops;
        void *data;
        int inotify_fd;
        int wd;
        bool dir_missing_logged;
        struct ag_io *io;
        struct ag_timer *rescan, *settle;
        struct entry *entries;
};

static void entry_free(struct entry *e)
{
        free(e->name);
        free(e->uid);
        free(e->seen);
        cJSON_Delete(e->pod);
        free(e);
}

static void now_rfc3339nano(char *buf, size_t size)
{
        int64_t ns = cb_wall_now_ns();
        struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000LL),
                              .tv_nsec = (long)(ns % 1000000000LL)};
        struct tm tm;
        gmtime_r(&ts.tv_sec, &tm);
        char base[32];
        strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
        snprintf(buf, size, "%s.%09ldZ", base, ts.tv_nsec);
}

static void add_watch(struct ag_static_pods *s)
{
        if (s->wd >= 0 || s->inotify_fd < 0)
                return;
        s->wd = inotify_add_watch(s->inotify_fd, s->dir,
                                  IN_CREATE | IN_DELETE | IN_MODIFY | IN_CLOSE_WRITE |
                                      IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB | IN_DELETE_SELF |
                                      IN_MOVE_SELF | IN_ONLYDIR);
}

/* One file: read, and when its content changed, decode and compare uids. */
static void scan_file(struct ag_static_pods *s, struct entry *e)
{
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", s->dir, e->name);
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        struct cb_error err = {0};
        if (cb_read_file(path, K8S_MAX_DOC_BYTES, &text, &len, &err) < 0) {
                log_error("static pod %s: %s", path, err.msg);
                return; /* the previous pod stays */
        }
        char h[33];
        ag_fnv128a_hex(text, len, h);
        if (strcmp(h, e->text_hash) == 0)
                return; /* unchanged (or the same bad content, logged once) */
        snprintf(e->text_hash, sizeof(e->text_hash), "%s", h);
        char seen[64];
        now_rfc3339nano(seen, sizeof(seen));
        cJSON *pod = NULL;
        if (ag_static_pod_from_text(text, len, path, s->node_name, seen, &pod, &err) < 0) {
                log_error("static pod %s: %s%s", path, err.msg,
                          e->uid ? " (the pod from its previous content keeps running)" : "");
                return;
        }
        const char *uid = cJSON_GetObjectItemCaseSensitive(
                              cJSON_GetObjectItemCaseSensitive(pod, "metadata"), "uid")
                              ->valuestring;
        if (e->uid != NULL && strcmp(e->uid, uid) == 0) {
                /* Still the pod first seen then. */
                set_string(cJSON_GetObjectItemCaseSensitive(
                               cJSON_GetObjectItemCaseSensitive(pod, "metadata"), "annotations"),
                           "kubernetes.io/config.seen", e->seen);
                cJSON_Delete(e->pod);
                e->pod = pod;
                log_info("static pod %s: changed, same uid %s", path, uid);
                s->ops.update(e->pod, path, s->data);
                return;
        }
        if (e->uid != NULL) {
                log_info("static pod %s: changed: replacing pod uid %s", path, e->uid);
                s->ops.remove(e->uid, s->data);
        }
        /* A new uid is a new pod: it is first seen now. */
        free(e->uid);
        free(e->seen);
        cJSON_Delete(e->pod);
        e->uid = strdup(uid);
        e->seen = strdup(seen);
        e->pod = pod;
        if (e->uid == NULL || e->seen == NULL) {
                free(e->uid);
                e->uid = NULL;
                log_error("static pod %s: out of memory", path);
                return;
        }
        log_info("static pod %s: pod %s uid=%s", path,
                 cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(pod, "metadata"),
                                                  "name")
                     ->valuestring,
                 uid);
        s->ops.add(e->pod, path, s->data);
}

static void scan(struct ag_static_pods *s)
{
        add_watch(s);
        for (struct entry *e = s->entries; e; e = e->next)
                e->present = false;
        DIR *d = opendir(s->dir);
        if (d == NULL) {
                if (!s->dir_missing_logged)
                        log_warning("static pod path %s: %s (looked for again every %llus)", s->dir,
                                    strerror(errno), (unsigned long long)(s->rescan_ms / 1000));
                s->dir_missing_logged = true;
        } else {
                s->dir_missing_logged = false;
                struct dirent *de;
                while ((de = readdir(d)) != NULL) {
                        if (de->d_name[0] == '.')
                                continue; /* dotfiles, editors' swap files, . and .. */
                        char path[4096];
                        struct stat st;
                        snprintf(path, sizeof(path), "%s/%s", s->dir, de->d_name);
                        if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
                                continue;
                        struct entry *e = s->entries;
                        while (e && strcmp(e->name, de->d_name) != 0)
                                e = e->next;
                        if (e == NULL) {
                                e = calloc(1, sizeof(*e));
                                if (e == NULL || (e->name = strdup(de->d_name)) == NULL) {
                                        free(e);
                                        continue;
                                }
                                e->next = s->entries;
                                s->entries = e;
                        }
                        e->present = true;
                }
                closedir(d);
        }
        /* Removed files first (a renamed manifest keeps its uid only when
         * its path is the same, so this is remove + add). */
        size_t n = 0;
        for (struct entry **pp = &s->entries; *pp;) {
                struct entry *e = *pp;
                if (!e->present) {
                        if (e->uid != NULL) {
                                log_info("static pod %s/%s: removed: stopping pod uid %s", s->dir,
                                         e->name, e->uid);
                                s->ops.remove(e->uid, s->data);
                        }
                        *pp = e->next;
                        entry_free(e);
                        continue;
                }
                pp = &e->next;
        }
        for (struct entry *e = s->entries; e; e = e->next) {
                scan_file(s, e);
                if (e->uid != NULL)
                        n++;
        }
        if (s->ops.scanned)
                s->ops.scanned(n, s->data);
}

static void on_rescan(struct ag_timer *t, void *data)
{
        struct ag_static_pods *s = data;
        scan(s);
        ag_timer_arm(t, s->rescan_ms);
}

static void on_settle(struct ag_timer *t, void *data)
{
        (void)t;
        scan(data);
}

static void on_dir_event(const struct inotify_event *ev, void *data)
{
        struct ag_static_pods *s = data;
        if (ev->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF)) {
                /* The directory itself went: watch it again when a rescan
                 * finds it. */
                if (s->wd >= 0 && (ev->mask & IN_IGNORED) == 0)
                        inotify_rm_watch(s->inotify_fd, s->wd);
                s->wd = -1;
        }
}

static void on_inotify(struct ag_io *io, int fd, uint32_t events, void *data)
{
        struct ag_static_pods *s = data;
        (void)io;
        (void)events;
        ag_inotify_drain(fd, on_dir_event, s);
        /* Changes come in bursts (an editor writes, renames, chmods): read
         * the directory once they settle. */
        if (!ag_timer_armed(s->settle))
                ag_timer_arm(s->settle, AG_STATIC_POD_SETTLE_MS);
}

int ag_static_pods_new(struct ag_loop *loop, const char *dir, const char *node_name,
                       uint64_t rescan_ms, const struct ag_static_pods_ops *ops, void *data,
                       struct ag_static_pods **ret, struct cb_error *err)
{
        struct ag_static_pods *s = calloc(1, sizeof(*s));
        if (s == NULL)
                return cb_error_set(err, ENOMEM, "out of memory");
        s->loop = loop;
        s->rescan_ms = rescan_ms > 0 ? rescan_ms : AG_STATIC_POD_RESCAN_MS;
        s->ops = *ops;
        s->data = data;
        s->wd = -1;
        s->dir = strdup(dir);
        s->node_name = strdup(node_name);
        s->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (s->dir == NULL || s->node_name == NULL) {
                ag_static_pods_free(s);
                return cb_error_set(err, ENOMEM, "out of memory");
        }
        if (s->inotify_fd < 0) {
                int e = errno;
                ag_static_pods_free(s);
                return cb_error_set(err, e, "static pods: inotify_init1");
        }
        s->io = ag_io_new(loop, s->inotify_fd, EPOLLIN, on_inotify, s, err);
        s->rescan = ag_timer_new(loop, on_rescan, s, err);
        s->settle = ag_timer_new(loop, on_settle, s, err);
        if (s->io == NULL || s->rescan == NULL || s->settle == NULL) {
                ag_static_pods_free(s);
                return -1;
        }
        *ret = s;
        return 0;
}

void ag_static_pods_start(struct ag_static_pods *s)
{
        scan(s);
        ag_timer_arm(s->rescan, s->rescan_ms);
}

void ag_static_pods_free(struct ag_static_pods *s)
{
        if (s == NULL)
                return;
        if (s->io)
                ag_io_free(s->io);
        if (s->rescan)
                ag_timer_free(s->rescan);
        if (s->settle)
                ag_timer_free(s->settle);
        if (s->inotify_fd >= 0)
                close(s->inotify_fd);
        while (s->entries) {
                struct entry *e = s->entries;
                s->entries = e->next;
                entry_free(e);
        }
        free(s->dir);
        free(s->node_name);
        free(s);
}
