/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/pods/logrotate.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "agent/core/log.h"
#include "agent/core/offload.h"
#include "lib/cleanup.h"
#include "runtime/container.h"

#define TMP_SUFFIX ".tmp"
#define GZ_SUFFIX  ".gz"
/* rotated files considered per container (MaxFiles is far below) */
#define MAX_ROTATED 1024

static bool has_suffix(const char *s, const char *suffix)
{
        size_t n = strlen(s), m = strlen(suffix);
        return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int cmp_str(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

struct names {
        char *v[MAX_ROTATED];
        size_t n;
};

static void names_clear(struct names *ns)
{
        for (size_t i = 0; i < ns->n; i++)
                free(ns->v[i]);
        ns->n = 0;
}

static bool names_has(const struct names *ns, const char *base, const char *suffix)
{
        size_t bl = strlen(base);
        for (size_t i = 0; i < ns->n; i++)
                if (strncmp(ns->v[i], base, bl) == 0 && strcmp(ns->v[i] + bl, suffix) == 0)
                        return true;
        return false;
}

/* <name>.* in the directory, sorted oldest first (the timestamp sorts). */
static int list_rotated(int dfd, const char *name, struct names *ret, struct cb_error *err)
{
        int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return cb_error_set(err, errno, "cannot read the log directory");
        DIR *d = fdopendir(fd);
        if (d == NULL) {
                close(fd);
                return cb_error_set(err, errno, "cannot read the log directory");
        }
        size_t nl = strlen(name);
        struct dirent *de;
        ret->n = 0;
        while ((de = readdir(d)) != NULL) {
                if (strncmp(de->d_name, name, nl) != 0 || de->d_name[nl] != '.' ||
                    de->d_name[nl + 1] == '\0')
                        continue;
                if (ret->n == MAX_ROTATED)
                        break;
                if ((ret->v[ret->n] = strdup(de->d_name)) == NULL) {
                        closedir(d);
                        names_clear(ret);
                        return cb_error_set(err, ENOMEM, "out of memory");
                }
                ret->n++;
        }
        closedir(d);
        qsort(ret->v, ret->n, sizeof(ret->v[0]), cmp_str);
        return 0;
}

static int remove_at(int dfd, const char *name, const char *what, struct cb_error *err)
{
        if (unlinkat(dfd, name, 0) < 0 && errno != ENOENT)
                return cb_error_set(err, errno, "failed to remove %s log %s", what, name);
        return 0;
}

/* <name> -> <name>.gz through <name>.tmp, then <name> goes (compressLog). */
static int compress_log(int dfd, const char *name, struct cb_error *err)
{
        _cleanup_close_ int in = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
        struct stat st;
        if (in < 0 || fstat(in, &st) < 0)
                return cb_error_set(err, errno, "failed to open log %s", name);
        if (!S_ISREG(st.st_mode))
                return cb_error_set(err, EINVAL, "log %s is not a regular file", name);
        char tmp[NAME_MAX + 8], gz[NAME_MAX + 8];
        if ((size_t)snprintf(tmp, sizeof(tmp), "%s" TMP_SUFFIX, name) >= sizeof(tmp) ||
            (size_t)snprintf(gz, sizeof(gz), "%s" GZ_SUFFIX, name) >= sizeof(gz))
                return cb_error_set(err, ENAMETOOLONG, "log name %s is too long", name);
        const int oflags = O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC;
        _cleanup_close_ int out = openat(dfd, tmp, oflags, st.st_mode & 07777); /* O_CLOEXEC */
        if (out < 0)
                return cb_error_set(err, errno, "failed to create temporary log %s", tmp);
        /* gzclose closes the fd it was given: give it a copy, keep ours
         * for the fsync. Level 1 (the kubelet's Go gzip uses the default, 6):
         * about three times as fast, so a flooding container's files are
         * compressed before the next interval; still a gzip file. */
        int gzfd = fcntl(out, F_DUPFD_CLOEXEC, 0);
        gzFile z = gzfd >= 0 ? gzdopen(gzfd, "wb1") : NULL;
        if (z == NULL) {
                if (gzfd >= 0)
                        close(gzfd);
                unlinkat(dfd, tmp, 0);
                return cb_error_set(err, errno ? errno : ENOMEM, "failed to compress %s", name);
        }
        /* On the heap: a thread-local buffer would be zeroed into the TLS
         * of every thread the agent starts (64 KiB of RSS each). */
        enum { COPY_BUF = 65536 };
        _cleanup_free_ char *buf = malloc(COPY_BUF);
        if (buf == NULL) {
                gzclose(z);
                unlinkat(dfd, tmp, 0);
                return cb_error_set(err, ENOMEM, "out of memory compressing %s", name);
        }
        int r = 0;
        for (;;) {
                ssize_t n = read(in, buf, COPY_BUF);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        r = cb_error_set(err, errno, "failed to read %s", name);
                        break;
                }
                if (n == 0)
                        break;
                if (gzwrite(z, buf, (unsigned)n) != (int)n) {
                        int ez;
                        const char *m = gzerror(z, &ez);
                        r = cb_error_set(err, ez == Z_ERRNO ? errno : EIO,
                                         "failed to compress %s to %s: %s", name, tmp, m);
                        break;
                }
        }
        if (gzclose(z) != Z_OK && r == 0)
                r = cb_error_set(err, errno ? errno : EIO, "failed to compress %s to %s", name,
                                 tmp);
        if (r == 0 && fsync(out) < 0)
                r = cb_error_set(err, errno, "failed to write %s", tmp);
        if (r == 0 && renameat(dfd, tmp, dfd, gz) < 0)
                r = cb_error_set(err, errno, "failed to rename %s to %s", tmp, gz);
        if (r < 0) {
                unlinkat(dfd, tmp, 0);
                return -1;
        }
        return remove_at(dfd, name, "compressed", err);
}

int ag_logrotate_file(const char *log_path, const struct ag_logrotate_policy *p, int64_t now_s,
                      ag_log_reopen_fn reopen, void *ud, bool *ret_rotated, struct cb_error *err)
{
        *ret_rotated = false;
        const char *slash = strrchr(log_path, '/');
        if (slash == NULL || slash[1] == '\0')
                return cb_error_set(err, EINVAL, "log path \"%s\" is not absolute", log_path);
        _cleanup_free_ char *dir = strndup(log_path, (size_t)(slash - log_path) + 1);
        if (dir == NULL)
                return cb_error_set(err, ENOMEM, "out of memory");
        const char *name = slash + 1;
        _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (dfd < 0)
                return cb_error_set(err, errno, "cannot open the log directory %s", dir);
        struct stat st;
        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                if (errno != ENOENT)
                        return cb_error_set(err, errno, "failed to stat container log %s",
                                            log_path);
                /* the kubelet: a running container without its log file
                 * gets a new one */
                if (reopen(ud, err) < 0)
                        return cb_error_prefix(err,
                                               "container log %s doesn't exist, reopen container "
                                               "log failed",
                                               log_path);
                if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        return cb_error_set(
                            err, errno, "failed to stat container log %s after reopen", log_path);
        }
        if (!S_ISREG(st.st_mode))
                return cb_error_set(err, EINVAL, "container log %s is not a regular file",
                                    log_path);
        if (p->max_size < 0 || st.st_size < p->max_size)
                return 0;

        /* cleanupUnusedLogs: temporary files, and files already compressed */
        struct names ns;
        if (list_rotated(dfd, name, &ns, err) < 0)
                return -1;
        int r = 0;
        struct names keep = {.n = 0};
        for (size_t i = 0; i < ns.n && r == 0; i++) {
                char *l = ns.v[i];
                bool unused = has_suffix(l, TMP_SUFFIX) ||
                              (!has_suffix(l, GZ_SUFFIX) && names_has(&ns, l, GZ_SUFFIX));
                if (unused)
                        r = remove_at(dfd, l, "unused", err);
                else
                        keep.v[keep.n++] = l;
        }
        /* removeExcessLogs before the rotation, as the kubelet: MaxFiles - 2
         * rotated files stay, so with the one about to be rotated and the
         * new live file the directory never holds more than MaxFiles; the
         * oldest go first so an ongoing read of a newer one is not broken */
        size_t max_rotated = p->max_files > 2 ? (size_t)p->max_files - 2 : 0;
        size_t first = 0;
        for (; r == 0 && keep.n - first > max_rotated; first++)
                r = remove_at(dfd, keep.v[first], "old", err);
        if (r < 0) {
                names_clear(&ns);
                return -1;
        }

        /* rotateLatestLog before the compressions: the file is cut at once,
         * not after them (a container writing faster than gzip would
         * otherwise keep its file growing meanwhile); uncompressed, the
         * monitor may still write a last record into it until it reopened. */
        time_t t = (time_t)now_s;
        struct tm tm;
        localtime_r(&t, &tm);
        char rotated[NAME_MAX + 1];
        if ((size_t)snprintf(rotated, sizeof(rotated), "%s.%04d%02d%02d-%02d%02d%02d", name,
                             tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                             tm.tm_sec) >= sizeof(rotated)) {
                names_clear(&ns);
                return cb_error_set(err, ENAMETOOLONG, "log name %s is too long", name);
        }
        /* never over an earlier rotation of the same second */
        if (renameat2(dfd, name, dfd, rotated, RENAME_NOREPLACE) < 0) {
                names_clear(&ns);
                return cb_error_set(err, errno, "failed to rotate log %s to %s", log_path, rotated);
        }
        if (reopen(ud, err) < 0) {
                names_clear(&ns);
                /* back, so the next round tries again */
                if (renameat2(dfd, rotated, dfd, name, RENAME_NOREPLACE) < 0)
                        cb_error_prefix(err, "%s is lost as %s%s", log_path, dir, rotated);
                return cb_error_prefix(err, "failed to reopen container log %s", log_path);
        }
        *ret_rotated = true;

        /* compress what is not yet, but the one just rotated (the newest) */
        for (size_t i = first; r == 0 && i < keep.n; i++)
                if (!has_suffix(keep.v[i], GZ_SUFFIX) && strcmp(keep.v[i], rotated) != 0)
                        r = compress_log(dfd, keep.v[i], err);
        names_clear(&ns);
        if (r < 0)
                return -1;
        return 0;
}

/* "<K>.log" or "<K>.log.<anything>": K, else -1 */
static long instance_of(const char *name)
{
        char *end;
        if (name[0] < '0' || name[0] > '9')
                return -1;
        long k = strtol(name, &end, 10);
        if (strncmp(end, ".log", 4) != 0 || (end[4] != '\0' && end[4] != '.'))
                return -1;
        return k;
}

int ag_logrotate_prune_instances(const char *log_path, int *ret_removed, struct cb_error *err)
{
        *ret_removed = 0;
        const char *slash = strrchr(log_path, '/');
        if (slash == NULL)
                return cb_error_set(err, EINVAL, "log path \"%s\" is not absolute", log_path);
        long n = instance_of(slash + 1);
        if (n < 0 || strcmp(slash + 1 + strspn(slash + 1, "0123456789"), ".log") != 0)
                return 0; /* not <N>.log: not a kubelet-named log */
        _cleanup_free_ char *dir = strndup(log_path, (size_t)(slash - log_path) + 1);
        if (dir == NULL)
                return cb_error_set(err, ENOMEM, "out of memory");
        _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (dfd < 0)
                return cb_error_set(err, errno, "cannot open the log directory %s", dir);
        int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        if (d == NULL) {
                if (fd >= 0)
                        close(fd);
                return cb_error_set(err, errno, "cannot read the log directory %s", dir);
        }
        int r = 0;
        struct dirent *de;
        while ((de = readdir(d)) != NULL && r == 0) {
                long k = instance_of(de->d_name);
                if (k < 0 || k >= n - 1)
                        continue;
                if (unlinkat(dfd, de->d_name, 0) < 0 && errno != ENOENT)
                        r = cb_error_set(err, errno, "cannot remove %s%s", dir, de->d_name);
                else
                        (*ret_removed)++;
        }
        closedir(d);
        return r;
}

/* ---- the manager ---------------------------------------------------------------- */

struct ag_logrotate {
        struct ag_loop *loop;
        char *root_dir;
        struct ag_logrotate_policy policy;
        struct ag_offload *q;
        struct ag_timer *timer;
        size_t in_round; /* jobs of the current round not done */
        bool stopping;   /* being freed: no new jobs */
};

struct list_job {
        struct ag_logrotate *m;
        char **ids;
        char **paths;
        size_t n;
        struct cb_error err;
        int r;
};

struct ctr_job {
        struct ag_logrotate *m;
        char *root_dir;
        char id[RT_ID_MAX];
        char *path;
        struct ag_logrotate_policy policy;
        bool rotated;
        int pruned;
        struct cb_error err;
        int r;
};

static void list_job_free(struct list_job *j)
{
        for (size_t i = 0; i < j->n; i++) {
                free(j->ids[i]);
                free(j->paths[i]);
        }
        free(j->ids);
        free(j->paths);
        free(j);
}

/* rotateLogs: the running containers and their log files */
static void list_work(void *data)
{
        struct list_job *j = data;
        char **ids = NULL;
        size_t n = 0;
        j->r = rt_container_list(j->m->root_dir, &ids, &n, &j->err);
        if (j->r < 0)
                return;
        j->ids = calloc(n ? n : 1, sizeof(char *));
        j->paths = calloc(n ? n : 1, sizeof(char *));
        for (size_t i = 0; j->ids != NULL && j->paths != NULL && i < n; i++) {
                struct rt_container_state st;
                struct cb_error e;
                if (rt_container_state(j->m->root_dir, ids[i], &st, &e) < 0 ||
                    st.status != RT_CONTAINER_RUNNING || st.log_path[0] != '/')
                        continue;
                j->ids[j->n] = strdup(ids[i]);
                j->paths[j->n] = strdup(st.log_path);
                if (j->ids[j->n] == NULL || j->paths[j->n] == NULL) {
                        free(j->ids[j->n]);
                        free(j->paths[j->n]);
                        break;
                }
                j->n++;
        }
        rt_container_list_free(ids, n);
}

static int reopen_runtime(void *ud, struct cb_error *err)
{
        struct ctr_job *j = ud;
        return rt_container_reopen_log(j->root_dir, j->id, AG_LOGROTATE_REOPEN_TIMEOUT_MS, err);
}

static void ctr_work(void *data)
{
        struct ctr_job *j = data;
        if (ag_logrotate_prune_instances(j->path, &j->pruned, &j->err) < 0) {
                j->r = -1;
                return;
        }
        j->r = ag_logrotate_file(j->path, &j->policy, (int64_t)time(NULL), reopen_runtime, j,
                                 &j->rotated, &j->err);
}

static void round_step_done(struct ag_logrotate *m)
{
        if (m->in_round > 0)
                m->in_round--;
}

static void ctr_done(void *data, bool cancelled)
{
        struct ctr_job *j = data;
        if (!cancelled) {
                if (j->r < 0)
                        log_error("Failed to rotate log for container %s: %s", j->id, j->err.msg);
                else if (j->rotated)
                        log_v(2, "rotated the log of container %s (%s)", j->id, j->path);
                if (j->pruned > 0)
                        log_v(2, "removed %d log file(s) of earlier instances of container %s",
                              j->pruned, j->id);
                round_step_done(j->m);
        }
        free(j->path);
        free(j);
}

static void list_done(void *data, bool cancelled)
{
        struct list_job *j = data;
        struct ag_logrotate *m = j->m;
        if (cancelled) {
                list_job_free(j);
                return;
        }
        round_step_done(m);
        if (m->stopping) {
                list_job_free(j);
                return;
        }
        if (j->r < 0)
                log_error("Failed to rotate container logs: failed to list containers: %s",
                          j->err.msg);
        for (size_t i = 0; i < j->n; i++) {
                struct ctr_job *c = calloc(1, sizeof(*c));
                if (c == NULL)
                        break;
                c->m = m;
                c->root_dir = m->root_dir;
                c->policy = m->policy;
                snprintf(c->id, sizeof(c->id), "%s", j->ids[i]);
                c->path = j->paths[i];
                j->paths[i] = NULL;
                struct cb_error err;
                if (ag_offload_submit(m->q, ctr_work, ctr_done, c, &err) < 0) {
                        log_error("log rotation of container %s: %s", c->id, err.msg);
                        free(c->path);
                        free(c);
                        continue;
                }
                m->in_round++;
        }
        list_job_free(j);
}

static void on_tick(struct ag_timer *t, void *data)
{
        struct ag_logrotate *m = data;
        ag_timer_arm(t, m->policy.interval_ms);
        if (m->in_round > 0) /* the last round is still at work */
                return;
        struct list_job *j = calloc(1, sizeof(*j));
        struct cb_error err;
        if (j == NULL)
                return;
        j->m = m;
        if (ag_offload_submit(m->q, list_work, list_done, j, &err) < 0) {
                log_error("Failed to rotate container logs: %s", err.msg);
                free(j);
                return;
        }
        m->in_round = 1;
}

int ag_logrotate_new(struct ag_loop *loop, const char *root_dir,
                     const struct ag_logrotate_policy *p, struct ag_logrotate **ret,
                     struct cb_error *err)
{
        *ret = NULL;
        if (p->max_files < 2)
                return cb_error_set(err, 0, "invalid MaxFiles %d, must be > 1", p->max_files);
        if (p->max_size < 0)
                return 0; /* the kubelet's stub manager */
        struct ag_logrotate *m = calloc(1, sizeof(*m));
        if (m == NULL || (m->root_dir = strdup(root_dir)) == NULL) {
                free(m);
                return cb_error_set(err, ENOMEM, "out of memory");
        }
        m->loop = loop;
        m->policy = *p;
        if (m->policy.max_workers < 1)
                m->policy.max_workers = 1;
        if (ag_offload_new(loop, "log rotation", (unsigned)m->policy.max_workers, &m->q, err) < 0 ||
            (m->timer = ag_timer_new(loop, on_tick, m, err)) == NULL) {
                ag_logrotate_free(m);
                return -1;
        }
        ag_timer_arm(m->timer, m->policy.interval_ms);
        log_info("Initializing container log rotate workers (workers %d, monitor period %llu ms, "
                 "max size %lld, max files %d)",
                 m->policy.max_workers, (unsigned long long)m->policy.interval_ms,
                 (long long)m->policy.max_size, m->policy.max_files);
        *ret = m;
        return 0;
}

void ag_logrotate_free(struct ag_logrotate *m)
{
        if (m == NULL)
                return;
        m->stopping = true;
        ag_timer_free(m->timer);
        ag_offload_free(m->q); /* runs the done functions: m is still here */
        free(m->root_dir);
        free(m);
}
