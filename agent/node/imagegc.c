/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/node/imagegc.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>

#include "agent/core/log.h"
#include "agent/node/periodic.h"
#include "lib/wallclock.h"
#include "lib/cleanup.h"
#include "runtime/image.h"

#define REMOVED_MAX 64
#define ERRORS_MAX  8

struct ag_imagegc {
        struct ag_loop *loop;
        struct ag_imagegc_config cfg;
        char *root_dir, *node_name;
        struct ag_pods *pods;
        struct ag_events *events;
        struct ag_metrics *metrics;
        struct ag_periodic *periodic;
        int64_t began_ms; /* wall clock: when the collector started (beganGC) */
        bool prev_failed;
};

enum job_kind { JOB_PERIODIC, JOB_RECLAIM };

struct removed {
        char id[RT_REF_DIGEST_MAX + 1];
        char ref[RT_REF_STR_MAX + 1];
        int64_t size;
        const char *reason;
};

struct job {
        enum job_kind kind;
        struct k8s_imagegc_policy policy;
        char *root_dir;
        int64_t began_ms;
        char **pod_images; /* canonical references the agent's pods name */
        size_t n_pod_images;
        /* results */
        int64_t now_ms, freed, to_free, capacity, available;
        int usage;
        size_t n_images, n_in_use;
        struct removed removed[REMOVED_MAX];
        size_t n_removed, n_removed_age, n_removed_space;
        size_t n_too_young;                 /* candidates younger than imageMinimumGCAge */
        char warning[CB_ERROR_MSG_MAX];     /* logged, not an error of the run */
        char error[2 * CB_ERROR_MSG_MAX];   /* the run's error, "" when none */
        char space_event[CB_ERROR_MSG_MAX]; /* FreeDiskSpaceFailed */
        char capacity_event[256];           /* InvalidDiskCapacity */
};

/* The agent's wall clock (lib/wallclock.h): image ages are wall-time
 * decisions, as every other one. */
static int64_t wall_ms(void)
{
        return cb_wall_now_us() / 1000;
}

/* ---- the job (a worker thread) ---- */

/* One image ID with every reference to it. */
struct entry {
        struct k8s_image_record rec;
        const struct rt_image *first; /* for the reference in logs */
};

static void join_errors(char *buf, size_t size, char errs[][CB_ERROR_MSG_MAX], size_t n)
{
        /* utilerrors.NewAggregate: one error as it is, several in brackets */
        size_t used = 0;
        buf[0] = '\0';
        if (n > 1)
                used += (size_t)snprintf(buf, size, "[");
        for (size_t i = 0; i < n && used < size; i++)
                used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? ", " : "", errs[i]);
        if (n > 1 && used < size)
                snprintf(buf + used, size - used, "]");
}

static int remove_one(struct job *j, struct entry *e, const char *reason, char *errbuf,
                      size_t errsize)
{
        struct cb_error err = {0};
        if (rt_image_remove_id(j->root_dir, e->rec.id, NULL, &err) < 0) {
                snprintf(errbuf, errsize, "%s", err.msg);
                return -1;
        }
        if (j->n_removed < REMOVED_MAX) {
                struct removed *r = &j->removed[j->n_removed];
                snprintf(r->id, sizeof(r->id), "%s", e->rec.id);
                snprintf(r->ref, sizeof(r->ref), "%s", e->first->ref);
                r->size = e->rec.size;
                r->reason = reason;
        }
        j->n_removed++;
        if (strcmp(reason, K8S_IMAGE_GC_REASON_AGE) == 0)
                j->n_removed_age++;
        else
                j->n_removed_space++;
        e->rec.in_use = true; /* gone: no longer a candidate */
        return 0;
}

/* Removes candidates in order until bytes are freed (freeSpace). */
static int free_space(struct job *j, struct entry *es, const size_t *order, size_t n_order,
                      int64_t bytes)
{
        char errs[ERRORS_MAX][CB_ERROR_MSG_MAX];
        size_t n_errs = 0, n_failed = 0;
        for (size_t k = 0; k < n_order && j->freed < bytes; k++) {
                struct entry *e = &es[order[k]];
                if (e->rec.in_use)
                        continue;
                if (!k8s_imagegc_old_enough(&j->policy, &e->rec, j->now_ms)) {
                        j->n_too_young++;
                        continue;
                }
                char msg[CB_ERROR_MSG_MAX];
                if (remove_one(j, e, K8S_IMAGE_GC_REASON_SPACE, msg, sizeof(msg)) < 0) {
                        if (n_errs < ERRORS_MAX)
                                snprintf(errs[n_errs++], sizeof(errs[0]), "%s", msg);
                        n_failed++;
                        continue;
                }
                j->freed += e->rec.size;
        }
        if (n_failed == 0)
                return 0;
        char all[CB_ERROR_MSG_MAX];
        join_errors(all, sizeof(all), errs, n_errs);
        snprintf(j->error, sizeof(j->error),
                 "wanted to free %" PRId64 " bytes, but freed %" PRId64
                 " bytes space with errors in image deletion: %.1500s",
                 bytes, j->freed, all);
        return -1;
}

/* freeOldImages */
static int free_old(struct job *j, struct entry *es, const size_t *order, size_t n_order)
{
        char errs[ERRORS_MAX][CB_ERROR_MSG_MAX];
        size_t n_errs = 0, n_failed = 0;
        for (size_t k = 0; k < n_order; k++) {
                struct entry *e = &es[order[k]];
                if (!k8s_imagegc_too_old(&j->policy, &e->rec, j->now_ms, j->began_ms))
                        continue;
                char msg[CB_ERROR_MSG_MAX];
                if (remove_one(j, e, K8S_IMAGE_GC_REASON_AGE, msg, sizeof(msg)) < 0) {
                        if (n_errs < ERRORS_MAX)
                                snprintf(errs[n_errs++], sizeof(errs[0]), "%s", msg);
                        n_failed++;
                }
        }
        if (n_failed == 0)
                return 0;
        char all[CB_ERROR_MSG_MAX], age[32];
        join_errors(all, sizeof(all), errs, n_errs);
        k8s_format_go_duration(j->policy.max_age_ms, age, sizeof(age));
        snprintf(j->error, sizeof(j->error),
                 "wanted to free images older than %s, encountered errors in image deletion: "
                 "%.1500s",
                 age, all);
        return -1;
}

static bool names_pod_image(const struct job *j, const struct rt_image *img)
{
        for (size_t i = 0; i < j->n_pod_images; i++)
                if (strcmp(j->pod_images[i], img->ref) == 0)
                        return true;
        return false;
}

static void job_work(void *data)
{
        struct job *j = data;
        struct cb_error err = {0};
        struct rt_image **imgs = NULL;
        size_t n = 0;
        bool *used = NULL;
        struct entry *es = NULL;
        size_t *order = NULL;
        const char **used_ids = NULL;
        j->now_ms = wall_ms();
        /* detectImages: the store's images and which ones containers use */
        if (rt_image_list(j->root_dir, &imgs, &n, &err) < 0 ||
            (used = calloc(n + 1, sizeof(*used))) == NULL ||
            (es = calloc(n + 1, sizeof(*es))) == NULL ||
            (order = calloc(n + 1, sizeof(*order))) == NULL ||
            (used_ids = calloc(n + 1, sizeof(*used_ids))) == NULL) {
                snprintf(j->error, sizeof(j->error), "%s", err.msg[0] ? err.msg : "out of memory");
                goto out;
        }
        if (rt_images_in_use(j->root_dir, imgs, n, used, &err) < 0) {
                snprintf(j->error, sizeof(j->error), "%s", err.msg);
                goto out;
        }
        size_t n_es = 0, n_used = 0;
        for (size_t i = 0; i < n; i++) {
                bool in_use = used[i] || names_pod_image(j, imgs[i]);
                struct entry *e = NULL;
                for (size_t k = 0; k < n_es && e == NULL; k++)
                        if (strcmp(es[k].rec.id, imgs[i]->id) == 0)
                                e = &es[k];
                /* an image the store has no arrival time for (stored by an
                 * older cubelet) is first seen when the collector starts */
                int64_t first = imgs[i]->created_ms > 0 ? imgs[i]->created_ms : j->began_ms;
                if (e == NULL) {
                        e = &es[n_es++];
                        e->first = imgs[i];
                        e->rec = (struct k8s_image_record){.id = imgs[i]->id,
                                                           .size = (int64_t)imgs[i]->size,
                                                           .first_detected_ms = first,
                                                           .last_used_ms = imgs[i]->last_used_ms};
                }
                if (first < e->rec.first_detected_ms)
                        e->rec.first_detected_ms = first;
                if (imgs[i]->last_used_ms > e->rec.last_used_ms)
                        e->rec.last_used_ms = imgs[i]->last_used_ms;
                if (in_use && !e->rec.in_use) {
                        e->rec.in_use = true;
                        e->rec.last_used_ms = j->now_ms;
                        used_ids[n_used++] = e->rec.id;
                }
        }
        j->n_images = n_es;
        j->n_in_use = n_used;
        if (rt_image_set_last_used(j->root_dir, used_ids, n_used, j->now_ms, &err) < 0)
                snprintf(j->warning, sizeof(j->warning), "cannot record the images in use: %.900s",
                         err.msg);
        /* the order over a packed copy of the records */
        struct k8s_image_record *recs = calloc(n_es + 1, sizeof(*recs));
        if (recs == NULL) {
                snprintf(j->error, sizeof(j->error), "out of memory");
                goto out;
        }
        for (size_t k = 0; k < n_es; k++)
                recs[k] = es[k].rec;
        size_t n_order = k8s_imagegc_order(recs, n_es, order);
        free(recs);
        if (j->kind == JOB_RECLAIM) {
                free_space(j, es, order, n_order, INT64_MAX);
                goto out;
        }
        if (free_old(j, es, order, n_order) < 0)
                goto out;
        /* the image filesystem */
        char dir[4200];
        snprintf(dir, sizeof(dir), "%s/images", j->root_dir);
        struct statvfs vfs;
        if (statvfs(dir, &vfs) < 0 && statvfs(j->root_dir, &vfs) < 0) {
                snprintf(j->error, sizeof(j->error),
                         "cannot statvfs the image filesystem %.1500s: %s", dir, strerror(errno));
                goto out;
        }
        j->capacity = (int64_t)vfs.f_blocks * (int64_t)vfs.f_frsize;
        j->available = (int64_t)vfs.f_bavail * (int64_t)vfs.f_frsize;
        if (j->capacity == 0) {
                snprintf(j->error, sizeof(j->error), "invalid capacity 0 on image filesystem");
                snprintf(j->capacity_event, sizeof(j->capacity_event), "%.200s", j->error);
                goto out;
        }
        j->to_free = k8s_imagegc_bytes_to_free(&j->policy, j->capacity, j->available, &j->usage);
        if (j->to_free <= 0)
                goto out;
        if (free_space(j, es, order, n_order, j->to_free) < 0)
                goto out;
        if (j->freed < j->to_free) {
                snprintf(j->space_event, sizeof(j->space_event),
                         "Failed to garbage collect required amount of images. Attempted to free "
                         "%" PRId64 " bytes, but only found %" PRId64 " bytes eligible to free.",
                         j->to_free, j->freed);
                snprintf(j->error, sizeof(j->error), "%s", j->space_event);
        }
out:
        free(used_ids);
        free(order);
        free(es);
        free(used);
        rt_image_list_free(imgs, n);
}

/* ---- on the loop ---- */

static void node_event(struct ag_imagegc *gc, const char *reason, const char *msg)
{
        struct ag_event_object node = {.kind = "Node", .name = gc->node_name, .uid = gc->node_name};
        if (gc->events != NULL) /* standalone: no apiserver */
                ag_events_record(gc->events, &node, "Warning", reason, msg);
}

static void count_removed(struct ag_imagegc *gc, const char *reason, size_t n)
{
        if (gc->metrics == NULL || n == 0)
                return;
        const char *labels[] = {"reason", reason, NULL};
        struct cb_error err = {0};
        if (ag_metrics_counter_add(gc->metrics, "cubelet_image_garbage_collected_total",
                                   "Images garbage collected, by reason (age or space), as the "
                                   "kubelet's image_garbage_collected_total",
                                   labels, (double)n, &err) < 0)
                log_v(2, "metrics: %s", err.msg);
}

static void free_job(void *data)
{
        struct job *j = data;
        for (size_t i = 0; i < j->n_pod_images; i++)
                free(j->pod_images[i]);
        free(j->pod_images);
        free(j->root_dir);
        free(j);
}

static const char *job_finish(void *owner, void *data, bool reclaim, int64_t *freed)
{
        struct ag_imagegc *gc = owner;
        struct job *j = data;
        /* the worker thread never logs: everything is said here */
        if (j->warning[0] != '\0')
                log_warning("image garbage collection: %s", j->warning);
        if (j->to_free > 0)
                log_info("image garbage collection: disk usage on the image filesystem is %d%%, "
                         "over the high threshold (%d%%): trying to free %" PRId64
                         " bytes down to the low threshold (%d%%)",
                         j->usage, j->policy.high_threshold_percent, j->to_free,
                         j->policy.low_threshold_percent);
        if (j->n_too_young > 0)
                log_v(2,
                      "image garbage collection: %zu unused image(s) younger than "
                      "imageMinimumGCAge kept",
                      j->n_too_young);
        for (size_t i = 0; i < j->n_removed && i < REMOVED_MAX; i++)
                log_info(
                    "image garbage collection: removed image %s (%s, %" PRId64 " bytes, reason %s)",
                    j->removed[i].id, j->removed[i].ref, j->removed[i].size, j->removed[i].reason);
        count_removed(gc, K8S_IMAGE_GC_REASON_AGE, j->n_removed_age);
        count_removed(gc, K8S_IMAGE_GC_REASON_SPACE, j->n_removed_space);
        if (j->capacity_event[0] != '\0')
                node_event(gc, "InvalidDiskCapacity", j->capacity_event);
        if (j->space_event[0] != '\0')
                node_event(gc, "FreeDiskSpaceFailed", j->space_event);
        *freed = j->freed;
        if (reclaim) {
                log_info("image garbage collection: deleted unused images, %" PRId64
                         " bytes freed%s%s",
                         j->freed, j->error[0] ? ": " : "", j->error);
                return j->error[0] ? j->error : NULL;
        }
        if (j->error[0] != '\0') {
                if (gc->prev_failed) {
                        log_error("image garbage collection failed multiple times in a row: %s",
                                  j->error);
                        /* only repeated failures make an event */
                        node_event(gc, "ImageGCFailed", j->error);
                } else
                        log_error("image garbage collection failed once (stats initialization "
                                  "may not have completed yet): %s",
                                  j->error);
                gc->prev_failed = true;
        } else {
                log_v(gc->prev_failed ? 1 : 4,
                      "image garbage collection succeeded (%zu images, %zu in use, usage %d%%, "
                      "%zu removed)",
                      j->n_images, j->n_in_use, j->usage, j->n_removed);
                gc->prev_failed = false;
        }
        return j->error[0] ? j->error : NULL;
}

/* The canonical references of the images the agent's pods name. */
static int pod_images(struct ag_imagegc *gc, struct job *j)
{
        struct ag_pod_ref *refs = NULL;
        size_t n = 0;
        if (gc->pods == NULL || ag_pods_active(gc->pods, &refs, &n) < 0)
                return 0;
        size_t cap = 0;
        for (size_t i = 0; i < n; i++)
                cap += refs[i].pod->spec.n_containers + refs[i].pod->spec.n_init_containers;
        j->pod_images = calloc(cap + 1, sizeof(char *));
        if (j->pod_images == NULL) {
                free(refs);
                return -1;
        }
        for (size_t i = 0; i < n; i++) {
                const struct k8s_pod_spec *s = &refs[i].pod->spec;
                for (size_t k = 0; k < s->n_containers + s->n_init_containers; k++) {
                        const struct k8s_container *c =
                            k < s->n_containers ? &s->containers[k]
                                                : &s->init_containers[k - s->n_containers];
                        struct rt_image_ref r;
                        char canon[RT_REF_STR_MAX + 1];
                        if (c->image == NULL || rt_image_ref_parse(c->image, &r, NULL) < 0)
                                continue;
                        rt_image_ref_format(&r, canon, sizeof(canon));
                        if ((j->pod_images[j->n_pod_images] = strdup(canon)) != NULL)
                                j->n_pod_images++;
                }
        }
        free(refs);
        return 0;
}

static void *job_make(void *owner, bool reclaim, struct cb_error *err)
{
        struct ag_imagegc *gc = owner;
        struct job *j = calloc(1, sizeof(*j));
        if (j == NULL) {
                cb_error_set(err, ENOMEM, "image garbage collection");
                return NULL;
        }
        *j = (struct job){.kind = reclaim ? JOB_RECLAIM : JOB_PERIODIC,
                          .policy = gc->cfg.policy,
                          .root_dir = strdup(gc->root_dir),
                          .began_ms = gc->began_ms};
        if (j->root_dir == NULL || pod_images(gc, j) < 0) {
                free_job(j);
                cb_error_set(err, ENOMEM, "image garbage collection");
                return NULL;
        }
        return j;
}

static const struct ag_periodic_ops ops = {
    .name = "image garbage collection",
    .queue = "image gc",
    .stopped = "the image garbage collector stopped",
    .not_queued = "image garbage collection: ",
    .make = job_make,
    .work = job_work,
    .finish = job_finish,
    .free_job = free_job,
};

int ag_imagegc_new(struct ag_loop *loop, const struct ag_imagegc_config *cfg, struct ag_pods *pods,
                   struct ag_events *events, struct ag_metrics *metrics, struct ag_imagegc **ret,
                   struct cb_error *err)
{
        if (k8s_imagegc_validate(&cfg->policy, err) < 0)
                return -1;
        struct ag_imagegc *gc = calloc(1, sizeof(*gc));
        if (gc == NULL)
                return cb_error_set(err, ENOMEM, "image garbage collection");
        gc->loop = loop;
        gc->cfg = *cfg;
        if (gc->cfg.period_ms == 0)
                gc->cfg.period_ms = K8S_IMAGE_GC_PERIOD_MS;
        gc->root_dir = strdup(cfg->root_dir);
        gc->node_name = strdup(cfg->node_name != NULL ? cfg->node_name : "");
        gc->pods = pods;
        gc->events = events;
        gc->metrics = metrics;
        if (gc->root_dir == NULL || gc->node_name == NULL) {
                ag_imagegc_free(gc);
                return cb_error_set(err, ENOMEM, "image garbage collection");
        }
        if (ag_periodic_new(loop, &ops, gc, gc->cfg.period_ms, &gc->periodic, err) < 0) {
                ag_imagegc_free(gc);
                return -1;
        }
        *ret = gc;
        return 0;
}

void ag_imagegc_start(struct ag_imagegc *gc)
{
        const struct k8s_imagegc_policy *p = &gc->cfg.policy;
        char min[32], max[32];
        k8s_format_go_duration(p->min_age_ms, min, sizeof(min));
        k8s_format_go_duration(p->max_age_ms, max, sizeof(max));
        gc->began_ms = wall_ms();
        if (!k8s_imagegc_enabled(p)) {
                log_v(2, "image garbage collection: imageGCHighThresholdPercent is 100 and "
                         "imageMaximumGCAge is 0: disabled");
                return;
        }
        log_info("image garbage collection: high threshold %d%%, low threshold %d%%, minimum age "
                 "%s, maximum age %s, every %llus",
                 p->high_threshold_percent, p->low_threshold_percent, min, max,
                 (unsigned long long)(gc->cfg.period_ms / 1000));
        ag_periodic_start(gc->periodic); /* wait.Until: the first run at once */
}

int ag_imagegc_reclaim(struct ag_imagegc *gc, ag_imagegc_done_fn done, void *data,
                       struct cb_error *err)
{
        return ag_periodic_reclaim(gc->periodic, done, data, err);
}

void ag_imagegc_free(struct ag_imagegc *gc)
{
        if (gc == NULL)
                return;
        ag_periodic_free(gc->periodic); /* cancelled reclaims call their done */
        free(gc->root_dir);
        free(gc->node_name);
        free(gc);
}
