/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/node/containergc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/core/log.h"
#include "agent/node/periodic.h"
#include "lib/cleanup.h"
#include "runtime/container.h"

#define REMOVED_LOG_MAX 64
#define TREE_MAX_DEPTH  16

struct ag_containergc {
        struct ag_loop *loop;
        struct ag_containergc_config cfg;
        char *logs_dir, *node_name, *root_dir;
        struct ag_pods *pods;
        struct ag_events *events;
        struct ag_periodic *periodic;
        bool prev_failed;
};

/* one instance found in a container's log directory */
struct inst {
        struct k8s_gc_instance gc;
        size_t cdir;
        int64_t bytes;
};

struct cdir {
        size_t pdir;
        char *name;
};

struct pdir {
        char *name; /* <ns>_<pod>_<uid> */
        const char *uid;
        bool deleted; /* no pod of the snapshot: the whole directory goes */
        int64_t bytes;
};

struct job {
        bool all_unused;
        struct k8s_container_gc_policy policy;
        char *logs_dir;
        struct ag_pods_gc_pod *pods;
        size_t n_pods;
        char *root_dir; /* the runtime's ("": no runtime containers here) */
        char **claimed; /* the runtime container ids the pod workers claim */
        size_t n_claimed;
        bool ready;
        int64_t snapshot_ms;
        /* the scan */
        struct pdir *p;
        size_t np, cap_p;
        struct cdir *c;
        size_t nc, cap_c;
        struct inst *v;
        size_t nv, cap_v;
        /* results */
        int64_t freed;
        size_t n_instances, n_removed, n_dirs_removed, n_unclaimed;
        char removed[REMOVED_LOG_MAX][512];
        size_t n_logged;
        char error[2 * CB_ERROR_MSG_MAX];
};

static int64_t realtime_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t mtime_ms(const struct stat *st)
{
        return (int64_t)st->st_mtim.tv_sec * 1000 + st->st_mtim.tv_nsec / 1000000;
}

/* ---- the job (a worker thread) ---- */

static void job_logs(struct job *j);

static void job_error(struct job *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void job_error(struct job *j, const char *fmt, ...)
{
        size_t len = strlen(j->error);
        if (len + 4 >= sizeof(j->error))
                return;
        if (len > 0) {
                memcpy(j->error + len, "; ", 3);
                len += 2;
        }
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(j->error + len, sizeof(j->error) - len, fmt, ap);
        va_end(ap);
}

static void job_removed(struct job *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void job_removed(struct job *j, const char *fmt, ...)
{
        if (j->n_logged >= REMOVED_LOG_MAX)
                return;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(j->removed[j->n_logged++], sizeof(j->removed[0]), fmt, ap);
        va_end(ap);
}

static void *grow(void *v, size_t *cap, size_t n, size_t size)
{
        if (n < *cap)
                return v;
        size_t c = *cap ? *cap * 2 : 16;
        void *nv = realloc(v, c * size);
        if (nv != NULL)
                *cap = c;
        return nv;
}

/* "<K>.log" or "<K>.log.<anything>" (rotated, compressed, a rotation's
 * leftover): K, else -1 */
static long instance_of(const char *name)
{
        if (name[0] < '0' || name[0] > '9')
                return -1;
        char *end;
        errno = 0;
        long k = strtol(name, &end, 10);
        if (errno != 0 || strncmp(end, ".log", 4) != 0 || (end[4] != '\0' && end[4] != '.'))
                return -1;
        return k;
}

static const struct ag_pods_gc_pod *find_pod(const struct job *j, const char *uid)
{
        for (size_t i = 0; i < j->n_pods; i++)
                if (strcmp(j->pods[i].uid, uid) == 0)
                        return &j->pods[i];
        return NULL;
}

static int open_dir_at(int dfd, const char *name)
{
        return openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

static DIR *fd_dir(int fd)
{
        int d = dup(fd);
        if (d < 0)
                return NULL;
        DIR *dir = fdopendir(d);
        if (dir == NULL)
                close(d);
        return dir;
}

static struct inst *find_inst(struct job *j, size_t cdir, long k)
{
        for (size_t i = j->nv; i-- > 0;) {
                if (j->v[i].cdir != cdir)
                        break; /* the instances of one directory are together */
                if (j->v[i].gc.attempt == k)
                        return &j->v[i];
        }
        return NULL;
}

static int scan_container(struct job *j, int cfd, size_t cdir, const struct ag_pods_gc_pod *pod,
                          enum k8s_gc_pod_state state)
{
        long current = -1;
        bool known = false;
        for (size_t i = 0; pod != NULL && i < pod->n; i++)
                if (strcmp(pod->c[i].name, j->c[cdir].name) == 0) {
                        current = pod->c[i].current;
                        known = true;
                }
        DIR *d = fd_dir(cfd);
        if (d == NULL)
                return -1;
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
                long k = instance_of(de->d_name);
                struct stat st;
                if (k < 0 || fstatat(cfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
                    !S_ISREG(st.st_mode))
                        continue;
                struct inst *in = find_inst(j, cdir, k);
                if (in == NULL) {
                        struct inst *nv = grow(j->v, &j->cap_v, j->nv, sizeof(*j->v));
                        if (nv == NULL) {
                                closedir(d);
                                errno = ENOMEM;
                                return -1;
                        }
                        j->v = nv;
                        in = &j->v[j->nv++];
                        /* An active pod's container this worker does not
                         * have (it cannot be told apart): kept. The current
                         * instance, and any newer than the snapshot: kept. */
                        bool running = state == K8S_GC_POD_ACTIVE && (!known || k >= current);
                        *in = (struct inst){.gc = {.attempt = k,
                                                   .created_ms = mtime_ms(&st),
                                                   .running = running,
                                                   .pod = state},
                                            .cdir = cdir};
                }
                if (mtime_ms(&st) < in->gc.created_ms)
                        in->gc.created_ms = mtime_ms(&st);
                in->bytes += (int64_t)st.st_blocks * 512;
        }
        closedir(d);
        return 0;
}

static void scan_pod(struct job *j, int lfd, size_t pdir)
{
        const char *pname = j->p[pdir].name;
        _cleanup_close_ int pfd = open_dir_at(lfd, pname);
        struct stat st;
        if (pfd < 0 || fstat(pfd, &st) < 0) {
                if (errno != ENOENT)
                        job_error(j, "cannot open the pod log directory %s: %s", pname,
                                  strerror(errno));
                return;
        }
        const struct ag_pods_gc_pod *pod = find_pod(j, j->p[pdir].uid);
        enum k8s_gc_pod_state state;
        if (pod != NULL)
                state = pod->terminated ? K8S_GC_POD_TERMINATED : K8S_GC_POD_ACTIVE;
        else if (j->ready && mtime_ms(&st) < j->snapshot_ms)
                state = K8S_GC_POD_DELETED;
        else
                return; /* a pod made after the snapshot, or sources not ready */
        j->p[pdir].deleted = state == K8S_GC_POD_DELETED;
        DIR *d = fd_dir(pfd);
        if (d == NULL) {
                job_error(j, "cannot read the pod log directory %s: %s", pname, strerror(errno));
                return;
        }
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
                if (de->d_name[0] == '.')
                        continue;
                _cleanup_close_ int cfd = open_dir_at(pfd, de->d_name);
                if (cfd < 0)
                        continue; /* not a directory: no container's */
                struct cdir *nc = grow(j->c, &j->cap_c, j->nc, sizeof(*j->c));
                if (nc == NULL)
                        break;
                j->c = nc;
                j->c[j->nc] = (struct cdir){.pdir = pdir, .name = strdup(de->d_name)};
                if (j->c[j->nc].name == NULL)
                        break;
                size_t ci = j->nc++;
                if (scan_container(j, cfd, ci, pod, state) < 0)
                        job_error(j, "cannot read the log directory %s/%s: %s", pname, de->d_name,
                                  strerror(errno));
        }
        closedir(d);
}

/* Removes name below dfd, depth first, without following symlinks or
 * crossing into another filesystem; adds the bytes freed. */
static int rm_tree_at(int dfd, const char *name, dev_t dev, int depth, int64_t *bytes)
{
        struct stat st;
        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : -1;
        if (!S_ISDIR(st.st_mode)) {
                if (unlinkat(dfd, name, 0) < 0)
                        return errno == ENOENT ? 0 : -1;
                *bytes += (int64_t)st.st_blocks * 512;
                return 0;
        }
        if (st.st_dev != dev || depth > TREE_MAX_DEPTH) {
                errno = st.st_dev != dev ? EXDEV : ELOOP;
                return -1;
        }
        _cleanup_close_ int fd = open_dir_at(dfd, name);
        if (fd < 0)
                return errno == ENOENT ? 0 : -1;
        DIR *d = fd_dir(fd);
        if (d == NULL)
                return -1;
        int r = 0;
        struct dirent *de;
        while ((de = readdir(d)) != NULL && r == 0)
                if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
                        r = rm_tree_at(fd, de->d_name, dev, depth + 1, bytes);
        closedir(d);
        if (r < 0)
                return -1;
        if (unlinkat(dfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
                return -1;
        *bytes += (int64_t)st.st_blocks * 512;
        return 0;
}

static void remove_instance(struct job *j, int lfd, struct inst *in)
{
        const struct cdir *c = &j->c[in->cdir];
        const struct pdir *p = &j->p[c->pdir];
        _cleanup_close_ int pfd = open_dir_at(lfd, p->name);
        _cleanup_close_ int cfd = pfd >= 0 ? open_dir_at(pfd, c->name) : -1;
        if (cfd < 0) {
                if (errno != ENOENT)
                        job_error(j, "cannot open the log directory %s/%s: %s", p->name, c->name,
                                  strerror(errno));
                return;
        }
        DIR *d = fd_dir(cfd);
        if (d == NULL) {
                job_error(j, "cannot read the log directory %s/%s: %s", p->name, c->name,
                          strerror(errno));
                return;
        }
        int64_t freed = 0;
        bool failed = false;
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
                struct stat st;
                if (instance_of(de->d_name) != in->gc.attempt ||
                    fstatat(cfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
                        continue;
                if (unlinkat(cfd, de->d_name, 0) < 0) {
                        if (errno == ENOENT)
                                continue;
                        job_error(j, "failed to remove container log %s/%s/%s: %s", p->name,
                                  c->name, de->d_name, strerror(errno));
                        failed = true;
                        continue;
                }
                freed += (int64_t)st.st_blocks * 512;
        }
        closedir(d);
        j->freed += freed;
        if (!failed) {
                j->n_removed++;
                job_removed(
                    j, "removed dead instance %ld of container %s of pod %s (%" PRId64 " bytes)",
                    in->gc.attempt, c->name, p->uid, freed);
        }
}

/* Runtime containers no pod worker claims (<root>/containers/<id>: a pod
 * deleted while its instance was left, a worker that lost an id): the
 * kubelet's evictContainers removes every evictable container of a pod
 * that no longer exists, once all sources are ready, at each collection
 * (kuberuntime_gc.go). Evictable: not running (the startup collection,
 * agent/pods/pods.c collect_orphans, stops running ones) and made before
 * the snapshot (its directory unchanged since: one being made now, not
 * claimed yet, is left alone). */
static void collect_unclaimed(struct job *j)
{
        if (!j->ready || j->root_dir[0] == '\0')
                return;
        char **ids = NULL;
        size_t n = 0;
        struct cb_error err = {0};
        if (rt_container_list_unclaimed(j->root_dir, j->claimed, j->n_claimed, j->snapshot_ms, &ids,
                                        &n, &err) < 0) {
                job_error(j, "cannot list the runtime's containers: %s", err.msg);
                return;
        }
        for (size_t i = 0; i < n; i++) {
                struct rt_container_state cs;
                if (rt_container_state(j->root_dir, ids[i], &cs, NULL) == 0 &&
                    (cs.status == RT_CONTAINER_RUNNING || cs.status == RT_CONTAINER_CREATED))
                        continue;
                if (rt_container_remove(j->root_dir, ids[i], &err) < 0) {
                        job_error(j, "failed to remove container %s: %s", ids[i], err.msg);
                        continue;
                }
                j->n_unclaimed++;
                job_removed(j, "removed container %s, which belonged to no pod", ids[i]);
        }
        rt_container_list_free(ids, n);
}

static void job_work(void *data)
{
        struct job *j = data;
        collect_unclaimed(j);
        job_logs(j);
}

static void job_logs(struct job *j)
{
        _cleanup_close_ int lfd =
            open(j->logs_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat lst;
        if (lfd < 0 || fstat(lfd, &lst) < 0) {
                if (errno != ENOENT) /* no pod ever logged */
                        job_error(j, "failed to read podLogsRootDirectory %s: %s", j->logs_dir,
                                  strerror(errno));
                return;
        }
        DIR *d = fd_dir(lfd);
        if (d == NULL) {
                job_error(j, "failed to read podLogsRootDirectory %s: %s", j->logs_dir,
                          strerror(errno));
                return;
        }
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
                const char *us = strrchr(de->d_name, '_');
                if (de->d_name[0] == '.' || us == NULL || us[1] == '\0')
                        continue; /* not <ns>_<pod>_<uid> */
                struct pdir *np = grow(j->p, &j->cap_p, j->np, sizeof(*j->p));
                if (np == NULL)
                        break;
                j->p = np;
                char *name = strdup(de->d_name);
                if (name == NULL)
                        break;
                j->p[j->np++] = (struct pdir){.name = name, .uid = strrchr(name, '_') + 1};
        }
        closedir(d);
        for (size_t i = 0; i < j->np; i++)
                scan_pod(j, lfd, i);
        /* the policy sees the unit through the names */
        for (size_t i = 0; i < j->nv; i++) {
                j->v[i].gc.pod_uid = j->p[j->c[j->v[i].cdir].pdir].uid;
                j->v[i].gc.name = j->c[j->v[i].cdir].name;
        }
        struct k8s_gc_instance *sel = calloc(j->nv + 1, sizeof(*sel));
        if (sel == NULL) {
                job_error(j, "out of memory");
                return;
        }
        for (size_t i = 0; i < j->nv; i++)
                sel[i] = j->v[i].gc;
        j->n_instances = j->nv;
        k8s_container_gc_select(sel, j->nv, &j->policy, j->ready, j->all_unused, realtime_ms());
        for (size_t i = 0; i < j->nv; i++)
                if (sel[i].remove)
                        remove_instance(j, lfd, &j->v[i]);
        free(sel);
        /* evictPodLogsDirectories: what is left of the deleted pods */
        for (size_t i = 0; i < j->np; i++) {
                if (!j->p[i].deleted)
                        continue;
                int64_t freed = 0;
                if (rm_tree_at(lfd, j->p[i].name, lst.st_dev, 0, &freed) < 0)
                        job_error(j, "failed to remove pod logs directory %s: %s", j->p[i].name,
                                  strerror(errno));
                else {
                        j->n_dirs_removed++;
                        job_removed(j, "removed the log directory %s of deleted pod %s",
                                    j->p[i].name, j->p[i].uid);
                }
                j->freed += freed;
        }
}

/* ---- on the loop ---- */

static void free_job(void *data)
{
        struct job *j = data;
        ag_pods_gc_snapshot_free(j->pods, j->n_pods);
        ag_pods_claimed_free(j->claimed, j->n_claimed);
        free(j->root_dir);
        for (size_t i = 0; i < j->np; i++)
                free(j->p[i].name);
        for (size_t i = 0; i < j->nc; i++)
                free(j->c[i].name);
        free(j->p);
        free(j->c);
        free(j->v);
        free(j->logs_dir);
        free(j);
}

static void node_event(struct ag_containergc *gc, const char *reason, const char *msg)
{
        struct ag_event_object node = {.kind = "Node", .name = gc->node_name, .uid = gc->node_name};
        if (gc->events != NULL)
                ag_events_record(gc->events, &node, "Warning", reason, msg);
}

static const char *job_finish(void *owner, void *data, bool reclaim, int64_t *freed)
{
        struct ag_containergc *gc = owner;
        struct job *j = data;
        for (size_t i = 0; i < j->n_logged; i++) {
                if (reclaim)
                        log_info("container garbage collection: %s", j->removed[i]);
                else
                        log_v(2, "container garbage collection: %s", j->removed[i]);
        }
        *freed = j->freed;
        if (reclaim) {
                log_info("container garbage collection: deleted all unused containers: %zu "
                         "dead instance(s), %zu deleted pods' log directories and %zu unclaimed "
                         "container(s) removed, %" PRId64 " bytes freed%s%s",
                         j->n_removed, j->n_dirs_removed, j->n_unclaimed, j->freed,
                         j->error[0] ? ": " : "", j->error);
                return j->error[0] ? j->error : NULL;
        }
        if (j->error[0] != '\0') {
                log_error("Container garbage collection failed: %s", j->error);
                node_event(gc, "ContainerGCFailed", j->error);
                gc->prev_failed = true;
        } else {
                log_v(gc->prev_failed ? 1 : 4,
                      "Container garbage collection succeeded (%zu instances, %zu removed, %zu "
                      "pod log directories removed, %zu unclaimed containers removed, %" PRId64
                      " bytes freed)",
                      j->n_instances, j->n_removed, j->n_dirs_removed, j->n_unclaimed, j->freed);
                gc->prev_failed = false;
        }
        return j->error[0] ? j->error : NULL;
}

/* all_unused: DeleteAllUnusedContainers, the eviction manager's reclaim */
static void *job_make(void *owner, bool all_unused, struct cb_error *err)
{
        struct ag_containergc *gc = owner;
        struct job *j = calloc(1, sizeof(*j));
        if (j == NULL) {
                cb_error_set(err, ENOMEM, "container garbage collection");
                return NULL;
        }
        *j = (struct job){.all_unused = all_unused,
                          .policy = gc->cfg.policy,
                          .logs_dir = strdup(gc->logs_dir),
                          .root_dir = strdup(gc->root_dir),
                          .snapshot_ms = realtime_ms()};
        if (j->logs_dir == NULL || j->root_dir == NULL ||
            ag_pods_gc_snapshot(gc->pods, &j->pods, &j->n_pods, &j->ready) < 0 ||
            ag_pods_claimed(gc->pods, &j->claimed, &j->n_claimed) < 0) {
                free_job(j);
                cb_error_set(err, ENOMEM, "container garbage collection");
                return NULL;
        }
        return j;
}

static const struct ag_periodic_ops ops = {
    .name = "container garbage collection",
    .queue = "container gc",
    .stopped = "the container garbage collector stopped",
    .not_queued = "Container garbage collection failed: ",
    .make = job_make,
    .work = job_work,
    .finish = job_finish,
    .free_job = free_job,
};

int ag_containergc_new(struct ag_loop *loop, const struct ag_containergc_config *cfg,
                       struct ag_pods *pods, struct ag_events *events, struct ag_containergc **ret,
                       struct cb_error *err)
{
        struct ag_containergc *gc = calloc(1, sizeof(*gc));
        if (gc == NULL)
                return cb_error_set(err, ENOMEM, "container garbage collection");
        gc->loop = loop;
        gc->cfg = *cfg;
        if (gc->cfg.period_ms == 0)
                gc->cfg.period_ms = K8S_CONTAINER_GC_PERIOD_MS;
        gc->logs_dir = strdup(cfg->pod_logs_dir != NULL ? cfg->pod_logs_dir : "");
        gc->node_name = strdup(cfg->node_name != NULL ? cfg->node_name : "");
        gc->root_dir = strdup(cfg->root_dir != NULL ? cfg->root_dir : "");
        gc->pods = pods;
        gc->events = events;
        if (gc->logs_dir == NULL || gc->node_name == NULL || gc->root_dir == NULL) {
                ag_containergc_free(gc);
                return cb_error_set(err, ENOMEM, "container garbage collection");
        }
        if (ag_periodic_new(loop, &ops, gc, gc->cfg.period_ms, &gc->periodic, err) < 0) {
                ag_containergc_free(gc);
                return -1;
        }
        *ret = gc;
        return 0;
}

void ag_containergc_start(struct ag_containergc *gc)
{
        const struct k8s_container_gc_policy *p = &gc->cfg.policy;
        log_info("container garbage collection: minimum age %llds, at most %d dead instance(s) "
                 "per container, at most %d in all, every %llus",
                 (long long)(p->min_age_ms / 1000), p->max_per_pod_container, p->max_containers,
                 (unsigned long long)(gc->cfg.period_ms / 1000));
        ag_periodic_start(gc->periodic); /* wait.Until: the first run at once */
}

int ag_containergc_reclaim(struct ag_containergc *gc, ag_containergc_done_fn done, void *data,
                           struct cb_error *err)
{
        return ag_periodic_reclaim(gc->periodic, done, data, err);
}

void ag_containergc_free(struct ag_containergc *gc)
{
        if (gc == NULL)
                return;
        ag_periodic_free(gc->periodic); /* cancelled reclaims call their done */
        free(gc->logs_dir);
        free(gc->node_name);
        free(gc->root_dir);
        free(gc);
}
