/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/node/netready.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "agent/core/inotify.h"
#include "lib/cleanup.h"
#include "lib/file.h"

#define CNI_CONF_MAX (1 << 20)

struct ag_netready {
        struct ag_loop *loop;
        char *dir;
        int fd, wd;
        struct ag_io *io;
        bool ready;
        void (*on_change)(bool ready, void *data);
        void *data;
};

static bool has_suffix(const char *s, const char *suf)
{
        size_t a = strlen(s), b = strlen(suf);
        return a > b && strcmp(s + a - b, suf) == 0;
}

static bool is_network_config(const char *path)
{
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        if (cb_read_file(path, CNI_CONF_MAX, &text, &len, NULL) < 0)
                return false;
        _cleanup_cjson_ cJSON *j = cJSON_ParseWithLength(text, len);
        if (!cJSON_IsObject(j))
                return false;
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(j, "type");
        const cJSON *plugins = cJSON_GetObjectItemCaseSensitive(j, "plugins");
        return (cJSON_IsString(type) && type->valuestring[0]) ||
               (cJSON_IsArray(plugins) && cJSON_GetArraySize(plugins) > 0);
}

bool ag_cni_dir_has_config(const char *dir)
{
        DIR *d = opendir(dir);
        if (d == NULL)
                return false;
        bool found = false;
        struct dirent *e;
        while (!found && (e = readdir(d)) != NULL) {
                if (e->d_name[0] == '.' ||
                    !(has_suffix(e->d_name, ".conf") || has_suffix(e->d_name, ".conflist") ||
                      has_suffix(e->d_name, ".json")))
                        continue;
                char path[4096];
                if (snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) < (int)sizeof(path))
                        found = is_network_config(path);
        }
        closedir(d);
        return found;
}

static void watch_dir(struct ag_netready *nr)
{
        if (nr->wd >= 0)
                return;
        cb_mkdir_p(nr->dir, 0755, 0755, NULL);
        nr->wd = inotify_add_watch(nr->fd, nr->dir,
                                   IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM |
                                       IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR);
}

static void recheck(struct ag_netready *nr)
{
        bool ready = ag_cni_dir_has_config(nr->dir);
        if (ready == nr->ready)
                return;
        nr->ready = ready;
        if (nr->on_change != NULL)
                nr->on_change(ready, nr->data);
}

static void on_event(const struct inotify_event *ev, void *data)
{
        struct ag_netready *nr = data;
        if (ev->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF))
                nr->wd = -1; /* the directory went: watch it again (made anew) */
}

static void on_io(struct ag_io *io, int fd, uint32_t events, void *data)
{
        struct ag_netready *nr = data;
        (void)io;
        (void)events;
        ag_inotify_drain(fd, on_event, nr);
        watch_dir(nr);
        recheck(nr);
}

int ag_netready_new(struct ag_loop *loop, const char *dir,
                    void (*on_change)(bool ready, void *data), void *data, struct ag_netready **ret,
                    struct cb_error *err)
{
        struct ag_netready *nr = calloc(1, sizeof(*nr));
        if (nr == NULL || (nr->dir = strdup(dir)) == NULL) {
                free(nr);
                return cb_error_set(err, ENOMEM, "network readiness");
        }
        nr->loop = loop;
        nr->on_change = on_change;
        nr->data = data;
        nr->wd = -1;
        nr->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (nr->fd < 0) {
                int e = errno;
                ag_netready_free(nr);
                return cb_error_set(err, e, "--cni-conf-dir %s: inotify_init1", dir);
        }
        watch_dir(nr);
        if (nr->wd < 0) {
                int e = errno;
                ag_netready_free(nr);
                return cb_error_set(err, e, "--cni-conf-dir %s: cannot watch it", dir);
        }
        nr->io = ag_io_new(loop, nr->fd, EPOLLIN, on_io, nr, err);
        if (nr->io == NULL) {
                ag_netready_free(nr);
                return -1;
        }
        nr->ready = ag_cni_dir_has_config(nr->dir);
        *ret = nr;
        return 0;
}

bool ag_netready_ready(const struct ag_netready *nr)
{
        return nr == NULL || nr->ready;
}

const bool *ag_netready_flag(const struct ag_netready *nr)
{
        return nr ? &nr->ready : NULL;
}

void ag_netready_free(struct ag_netready *nr)
{
        if (nr == NULL)
                return;
        if (nr->io != NULL)
                ag_io_free(nr->io);
        if (nr->fd >= 0)
                close(nr->fd);
        free(nr->dir);
        free(nr);
}
