/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/node/pressure.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include "agent/core/log.h"
#include "agent/node/containergc.h"
#include "agent/node/imagegc.h"
#include "agent/k8s/qos.h"
#include "agent/pods/containerspec.h"
#include "cgroups/cgroup.h"
#include "lib/cleanup.h"
#include "lib/file.h"

#define DU_MAX_DEPTH 64

struct ag_pressure {
        struct ag_loop *loop;
        struct ag_pressure_config cfg;
        struct ag_nodestatus *ns;
        struct ag_pods *pods;
        struct ag_events *events;
        struct ag_timer *timer;
        struct k8s_pressure_state state;
        unsigned reported; /* conditions reported now */
        bool first;
        /* the last eviction, whose cleanup the next one waits for */
        char evicted_uid[128];
        uint64_t evicted_at_ms;
        /* cgroup v1 memory threshold notification */
        int notify_fd;
        struct ag_io *notify_io;
        uint64_t notify_threshold;
        char last_warning[CB_ERROR_MSG_MAX];
        /* node-level reclaim before evicting pods (disk signals) */
        struct ag_imagegc *imagegc;
        struct ag_containergc *containergc;
        bool reclaiming;
        int reclaim_signal;
        int64_t reclaimed_containers; /* bytes, by the container collector */
        uint64_t reclaim_started_ms;
};

/* ---- measuring ---- */

static int read_u64_file(const char *path, uint64_t *ret)
{
        _cleanup_free_ char *buf = NULL;
        if (cb_read_file(path, 4096, &buf, NULL, NULL) < 0)
                return -1;
        char *end;
        errno = 0;
        unsigned long long v = strtoull(buf, &end, 10);
        if (end == buf || errno != 0)
                return -1;
        *ret = v;
        return 0;
}

static void fs_observe(const char *dir, struct k8s_observation *bytes,
                       struct k8s_observation *inodes)
{
        struct statvfs vfs;
        if (statvfs(dir, &vfs) < 0)
                return;
        *bytes =
            (struct k8s_observation){.present = true,
                                     .available = (int64_t)vfs.f_bavail * (int64_t)vfs.f_frsize,
                                     .capacity = (int64_t)vfs.f_blocks * (int64_t)vfs.f_frsize};
        /* Filesystems without inode accounting (btrfs) report 0 inodes. */
        if (vfs.f_files > 0)
                *inodes = (struct k8s_observation){.present = true,
                                                   .available = (int64_t)vfs.f_ffree,
                                                   .capacity = (int64_t)vfs.f_files};
}

int ag_pressure_measure(const char *root_dir, int64_t memory_capacity, struct k8s_observations *ret,
                        struct cb_error *warn, struct cb_error *err)
{
        struct k8s_observations o = {0};
        struct cg_node_memory mem;
        struct cb_error merr = {0};
        if (memory_capacity <= 0)
                cb_error_set(&merr, 0, "memory.available: the node's memory capacity is unknown");
        else if (cg_read_node_memory(&mem, &merr) < 0)
                cb_error_prefix(&merr, "memory.available cannot be measured");
        else {
                int64_t ws =
                    mem.working_set > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)mem.working_set;
                o.o[K8S_SIGNAL_MEMORY_AVAILABLE] = (struct k8s_observation){
                    .present = true,
                    .available = memory_capacity > ws ? memory_capacity - ws : 0,
                    .capacity = memory_capacity};
        }
        fs_observe(root_dir, &o.o[K8S_SIGNAL_NODEFS_AVAILABLE],
                   &o.o[K8S_SIGNAL_NODEFS_INODES_FREE]);
        char images[4200];
        snprintf(images, sizeof(images), "%s/images", root_dir);
        struct stat st;
        fs_observe(stat(images, &st) == 0 ? images : root_dir, &o.o[K8S_SIGNAL_IMAGEFS_AVAILABLE],
                   &o.o[K8S_SIGNAL_IMAGEFS_INODES_FREE]);
        /* The kubelet's rlimit stats: the lower of pid_max and threads-max,
         * and the kernel's count of tasks (sysinfo procs). */
        uint64_t pid_max = 0, threads_max = 0;
        struct sysinfo si;
        if (read_u64_file("/proc/sys/kernel/pid_max", &pid_max) == 0 && sysinfo(&si) == 0) {
                if (read_u64_file("/proc/sys/kernel/threads-max", &threads_max) == 0 &&
                    threads_max < pid_max)
                        pid_max = threads_max;
                o.o[K8S_SIGNAL_PID_AVAILABLE] =
                    (struct k8s_observation){.present = true,
                                             .available = (int64_t)pid_max - (int64_t)si.procs,
                                             .capacity = (int64_t)pid_max};
        } else if (merr.msg[0] == '\0')
                cb_error_set(&merr, errno, "pid.available cannot be measured");
        if (!o.o[K8S_SIGNAL_NODEFS_AVAILABLE].present && merr.msg[0] == '\0')
                cb_error_set(&merr, errno, "nodefs.available: cannot statvfs %s", root_dir);
        if (warn != NULL)
                *warn = merr;
        bool any = false;
        for (int i = 0; i < K8S_SIGNAL_COUNT; i++)
                any |= o.o[i].present;
        if (!any)
                return cb_error_set(err, 0, "no eviction signal could be measured: %s",
                                    merr.msg[0] ? merr.msg : "statvfs and /proc failed");
        *ret = o;
        return 0;
}

static void du_fd(int dirfd, dev_t dev, int depth, int64_t *bytes, int64_t *inodes)
{
        DIR *d = fdopendir(dirfd);
        if (d == NULL) {
                close(dirfd);
                return;
        }
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                struct stat st;
                if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                *bytes += (int64_t)st.st_blocks * 512;
                *inodes += 1;
                if (S_ISDIR(st.st_mode) && st.st_dev == dev && depth < DU_MAX_DEPTH) {
                        const char *n = de->d_name;
                        int fd = openat(dirfd, n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (fd >= 0)
                                du_fd(fd, dev, depth + 1, bytes, inodes);
                }
        }
        closedir(d);
}

void ag_disk_usage(const char *dir, int64_t *bytes, int64_t *inodes)
{
        int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return;
        struct stat st;
        if (fstat(fd, &st) < 0) {
                close(fd);
                return;
        }
        *bytes += (int64_t)st.st_blocks * 512;
        *inodes += 1;
        du_fd(fd, st.st_dev, 0, bytes, inodes);
}

/* ---- per-pod usage ---- */

struct pod_usage {
        struct k8s_container_usage *containers;
        size_t n;
};

static const char *json_str(const cJSON *o, const char *key)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
        return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void collect(struct ag_pressure *pm, const struct ag_pod_ref *ref, bool disk,
                    struct k8s_eviction_candidate *c, struct pod_usage *u)
{
        *c = (struct k8s_eviction_candidate){.pod = ref->pod};
        char pod_cg[K8S_CGROUP_PATH_MAX];
        enum k8s_qos_class qos = k8s_pod_qos(ref->pod);
        if (cg_pod_path(pm->cfg.cgroup_root, k8s_qos_tier(qos), ref->uid, pod_cg, sizeof(pod_cg)) <
            0)
                return;
        struct cg_stats st;
        struct cb_error err = {0};
        if (cg_read_stats(pod_cg, &st, &err) < 0) {
                log_v(3, "eviction: no stats for pod uid %s: %s", ref->uid, err.msg);
                return;
        }
        c->has_stats = true;
        c->memory_working_set = (int64_t)st.memory_working_set;
        c->processes = (int64_t)st.pids_current;
        static const char *const lists[] = {"initContainerStatuses", "containerStatuses"};
        size_t cap = 0;
        for (size_t l = 0; l < 2; l++)
                cap += (size_t)cJSON_GetArraySize(
                    cJSON_GetObjectItemCaseSensitive(ref->status, lists[l]));
        u->containers = calloc(cap + 1, sizeof(*u->containers));
        if (u->containers == NULL)
                return;
        int64_t dbytes = 0, dinodes = 0;
        for (size_t l = 0; l < 2; l++) {
                const cJSON *cs;
                cJSON_ArrayForEach(cs, cJSON_GetObjectItemCaseSensitive(ref->status, lists[l]))
                {
                        const char *name = json_str(cs, "name");
                        const char *cid = json_str(cs, "containerID");
                        const char *id =
                            cid && strncmp(cid, "cubelet://", 10) == 0 ? cid + 10 : NULL;
                        if (name == NULL || id == NULL || strchr(id, '/') != NULL)
                                continue;
                        struct k8s_container_usage *cu = &u->containers[u->n++];
                        cu->name = name;
                        char path[K8S_CGROUP_PATH_MAX + 160];
                        snprintf(path, sizeof(path), "%s/%s", pod_cg, id);
                        struct cg_stats cst;
                        if (cg_read_stats(path, &cst, &err) == 0) {
                                cu->has_memory = true;
                                cu->memory_working_set = (int64_t)cst.memory_working_set;
                        }
                        if (!disk)
                                continue;
                        int64_t b = 0, in = 0;
                        char dir[4600];
                        snprintf(dir, sizeof(dir), "%s/containers/%s", pm->cfg.root_dir, id);
                        ag_disk_usage(dir, &b, &in);
                        if (ag_cri_log_dir(dir, sizeof(dir), pm->cfg.pod_logs_dir,
                                           ref->pod->meta.namespace_ ? ref->pod->meta.namespace_
                                                                     : "default",
                                           ref->pod->meta.name ? ref->pod->meta.name : "", ref->uid,
                                           name) == 0)
                                ag_disk_usage(dir, &b, &in);
                        cu->has_disk = true;
                        cu->disk_bytes = b;
                        dbytes += b;
                        dinodes += in;
                }
        }
        if (disk) {
                /* emptyDir volumes and the pod's own state. */
                char dir[4600];
                snprintf(dir, sizeof(dir), "%s/pods/%s", pm->cfg.root_dir, ref->uid);
                ag_disk_usage(dir, &dbytes, &dinodes);
        }
        c->disk_bytes = dbytes;
        c->inodes = dinodes;
        c->containers = u->containers;
        c->n_containers = u->n;
}

/* ---- the cycle ---- */

static void arm_memory_notifier(struct ag_pressure *pm, const struct k8s_observations *obs);

static void report_conditions(struct ag_pressure *pm, unsigned report)
{
        if (report == pm->reported && !pm->first)
                return;
        for (unsigned i = 0; i < 3; i++) {
                unsigned bit = 1u << i;
                if ((report & bit) == (pm->reported & bit) && !pm->first)
                        continue;
                struct k8s_node_condition_text t;
                k8s_pressure_condition(bit, (report & bit) != 0, &t);
                if (pm->first && !(report & bit))
                        continue; /* the initial False needs no event */
                log_info("node condition %s is now %s (%s)", t.type, t.status, t.reason);
                char msg[512];
                snprintf(msg, sizeof(msg), "Node %s status is now: %s", pm->cfg.node_name, t.event);
                struct ag_event_object node = {
                    .kind = "Node", .name = pm->cfg.node_name, .uid = pm->cfg.node_name};
                if (pm->events != NULL) /* standalone: no apiserver */
                        ag_events_record(pm->events, &node, "Normal", t.event, msg);
        }
        pm->reported = report;
        pm->first = false;
        if (pm->ns != NULL)
                ag_nodestatus_set_pressure(pm->ns, report);
        ag_pods_set_pressure(pm->pods, report);
}

static void evict_pods(struct ag_pressure *pm, int sig, const struct k8s_observations *obs);

/* reclaimNodeLevelResources: the node-level reclaim functions of the
 * signal ran (the container collector's DeleteAllUnusedContainers, then
 * the image collector's DeleteUnusedImages, each off the loop); measure
 * again: pods are evicted only when a threshold is still met. */
static void after_reclaim(struct ag_pressure *pm, int64_t images_freed)
{
        pm->reclaiming = false;
        const char *res = k8s_signal_resource((enum k8s_signal)pm->reclaim_signal);
        struct k8s_observations obs;
        struct cb_error err = {0};
        if (ag_pressure_measure(pm->cfg.root_dir, pm->cfg.memory_capacity, &obs, NULL, &err) < 0) {
                log_warning("eviction manager: failed to measure after resource reclaim: %s",
                            err.msg);
                return;
        }
        unsigned long long took = (unsigned long long)(ag_now_ms() - pm->reclaim_started_ms);
        if (k8s_thresholds_met(&pm->cfg.thresholds, &obs) == 0) {
                log_info("eviction manager: able to reduce %s pressure without evicting pods "
                         "(%lld bytes of dead containers and %lld bytes of images freed in %llu "
                         "ms)",
                         res, (long long)pm->reclaimed_containers, (long long)images_freed, took);
                return;
        }
        log_info("eviction manager: must evict pod(s) to reclaim %s (%lld bytes of dead "
                 "containers and %lld bytes of images freed in %llu ms were not enough)",
                 res, (long long)pm->reclaimed_containers, (long long)images_freed, took);
        evict_pods(pm, pm->reclaim_signal, &obs);
}

static void reclaim_error(struct ag_pressure *pm, const char *error)
{
        if (error != NULL)
                log_info("eviction manager: unexpected error when attempting to reduce %s "
                         "pressure: %s",
                         k8s_signal_resource((enum k8s_signal)pm->reclaim_signal), error);
}

static void on_images_reclaimed(void *data, int64_t freed, const char *error)
{
        struct ag_pressure *pm = data;
        if (freed < 0) {
                pm->reclaiming = false;
                return; /* the collector was stopped: the agent is going away */
        }
        reclaim_error(pm, error);
        after_reclaim(pm, freed);
}

/* The images are reclaimed for the imagefs signals, and for the nodefs
 * ones when the images are on the node filesystem (the kubelet's reclaim
 * functions without a dedicated imagefs). */
static bool images_help(struct ag_pressure *pm, int sig)
{
        if (sig == K8S_SIGNAL_IMAGEFS_AVAILABLE || sig == K8S_SIGNAL_IMAGEFS_INODES_FREE)
                return true;
        char images[4200];
        snprintf(images, sizeof(images), "%s/images", pm->cfg.root_dir);
        struct stat a, b;
        return stat(images, &a) < 0 || stat(pm->cfg.root_dir, &b) < 0 || a.st_dev == b.st_dev;
}

static void reclaim_images(struct ag_pressure *pm)
{
        struct cb_error err = {0};
        if (pm->imagegc != NULL && images_help(pm, pm->reclaim_signal)) {
                if (ag_imagegc_reclaim(pm->imagegc, on_images_reclaimed, pm, &err) == 0)
                        return;
                reclaim_error(pm, err.msg);
        }
        after_reclaim(pm, 0);
}

static void on_containers_reclaimed(void *data, int64_t freed, const char *error)
{
        struct ag_pressure *pm = data;
        if (freed < 0) {
                pm->reclaiming = false;
                return;
        }
        reclaim_error(pm, error);
        pm->reclaimed_containers = freed;
        reclaim_images(pm);
}

static bool disk_signal(int sig)
{
        return sig == K8S_SIGNAL_NODEFS_AVAILABLE || sig == K8S_SIGNAL_NODEFS_INODES_FREE ||
               sig == K8S_SIGNAL_IMAGEFS_AVAILABLE || sig == K8S_SIGNAL_IMAGEFS_INODES_FREE;
}

static void evict_one(struct ag_pressure *pm, unsigned met, const struct k8s_observations *obs)
{
        int sig = k8s_signal_to_reclaim(met);
        if (sig < 0)
                return;
        const char *res = k8s_signal_resource((enum k8s_signal)sig);
        log_info("eviction manager: attempting to reclaim %s (%s)", res,
                 k8s_signal_name((enum k8s_signal)sig));
        char msg[256];
        snprintf(msg, sizeof(msg), "Attempting to reclaim %s", res);
        struct ag_event_object node = {
            .kind = "Node", .name = pm->cfg.node_name, .uid = pm->cfg.node_name};
        if (pm->events != NULL)
                ag_events_record(pm->events, &node, "Warning", "EvictionThresholdMet", msg);
        /* Disk signals: node-level reclaim first (the dead containers,
         * then the unused images, off the loop), pods only if that was not
         * enough. */
        if (disk_signal(sig) && (pm->containergc != NULL || pm->imagegc != NULL)) {
                pm->reclaiming = true;
                pm->reclaim_signal = sig;
                pm->reclaimed_containers = 0;
                pm->reclaim_started_ms = ag_now_ms();
                struct cb_error err = {0};
                if (pm->containergc != NULL) {
                        if (ag_containergc_reclaim(pm->containergc, on_containers_reclaimed, pm,
                                                   &err) == 0)
                                return;
                        reclaim_error(pm, err.msg);
                }
                reclaim_images(pm);
                return;
        }
        evict_pods(pm, sig, obs);
}

static void evict_pods(struct ag_pressure *pm, int sig, const struct k8s_observations *obs)
{
        struct ag_pod_ref *refs = NULL;
        size_t n = 0;
        if (ag_pods_active(pm->pods, &refs, &n) < 0)
                return;
        if (n == 0) {
                log_warning("eviction manager: eviction thresholds have been met, but no pods are "
                            "active to evict");
                free(refs);
                return;
        }
        bool disk = sig != K8S_SIGNAL_MEMORY_AVAILABLE && sig != K8S_SIGNAL_PID_AVAILABLE;
        struct k8s_eviction_candidate *c = calloc(n, sizeof(*c));
        struct pod_usage *u = calloc(n, sizeof(*u));
        if (c == NULL || u == NULL)
                goto out;
        for (size_t i = 0; i < n; i++)
                collect(pm, &refs[i], disk, &c[i], &u[i]);
        k8s_eviction_rank(c, n, (enum k8s_signal)sig);
        for (size_t i = 0; i < n; i++) {
                const struct k8s_pod *pod = c[i].pod;
                const char *uid = NULL;
                for (size_t k = 0; k < n; k++)
                        if (refs[k].pod == pod)
                                uid = refs[k].uid;
                log_v(1,
                      "eviction manager: rank %zu: pod %s/%s (memory %lld, disk %lld, pids %lld)",
                      i, pod->meta.namespace_ ? pod->meta.namespace_ : "",
                      pod->meta.name ? pod->meta.name : "", (long long)c[i].memory_working_set,
                      (long long)c[i].disk_bytes, (long long)c[i].processes);
                if (uid == NULL)
                        continue;
                if (k8s_pod_is_critical(pod)) {
                        log_warning("eviction manager: cannot evict a critical pod %s/%s",
                                    pod->meta.namespace_ ? pod->meta.namespace_ : "",
                                    pod->meta.name ? pod->meta.name : "");
                        continue;
                }
                char message[2048];
                k8s_eviction_message((enum k8s_signal)sig, &pm->cfg.thresholds.t[sig], &obs->o[sig],
                                     &c[i], message, sizeof(message));
                if (ag_pods_evict_pressure(pm->pods, uid, K8S_EVICTION_HARD_GRACE_S, message) ==
                    0) {
                        snprintf(pm->evicted_uid, sizeof(pm->evicted_uid), "%s", uid);
                        pm->evicted_at_ms = ag_now_ms();
                        goto out; /* at most one pod per cycle */
                }
        }
        log_warning("eviction manager: unable to evict any pods from the node");
out:
        for (size_t i = 0; u && i < n; i++)
                free(u[i].containers);
        free(u);
        free(c);
        free(refs);
}

static void synchronize(struct ag_pressure *pm)
{
        struct k8s_observations obs;
        struct cb_error err = {0}, warn = {0};
        int r = ag_pressure_measure(pm->cfg.root_dir, pm->cfg.memory_capacity, &obs, &warn, &err);
        /* A signal that cannot be measured never meets its threshold: say
         * so once (again when the reason changes). */
        if (warn.msg[0] != '\0' && strcmp(warn.msg, pm->last_warning) != 0)
                log_warning("eviction manager: %s", warn.msg);
        snprintf(pm->last_warning, sizeof(pm->last_warning), "%s", warn.msg);
        if (r < 0) {
                log_warning("eviction manager: %s", err.msg);
                return;
        }
        for (int i = 0; i < K8S_SIGNAL_COUNT; i++)
                if (obs.o[i].present && pm->cfg.thresholds.t[i].set)
                        log_v(3, "eviction manager: %s available %lld of %lld, threshold %lld",
                              k8s_signal_name((enum k8s_signal)i), (long long)obs.o[i].available,
                              (long long)obs.o[i].capacity,
                              (long long)k8s_threshold_value(&pm->cfg.thresholds.t[i],
                                                             obs.o[i].capacity));
        unsigned met = k8s_thresholds_met(&pm->cfg.thresholds, &obs);
        uint64_t now = ag_now_ms();
        unsigned report = k8s_pressure_update(&pm->state, k8s_pressure_of_signals(met), now,
                                              pm->cfg.transition_ms);
        report_conditions(pm, report);
        arm_memory_notifier(pm, &obs);
        if (met == 0 || pm->reclaiming)
                return;
        /* The kubelet waits (up to 30 s) for the last evicted pod's cleanup
         * before it evicts another. */
        if (pm->evicted_uid[0] != '\0') {
                if (!ag_pods_cleaned_up(pm->pods, pm->evicted_uid) &&
                    now - pm->evicted_at_ms < K8S_EVICTION_CLEANUP_TIMEOUT_MS) {
                        log_v(1, "eviction manager: waiting for pod uid %s to be cleaned up",
                              pm->evicted_uid);
                        return;
                }
                pm->evicted_uid[0] = '\0';
        }
        evict_one(pm, met, &obs);
}

static void on_timer(struct ag_timer *t, void *data)
{
        struct ag_pressure *pm = data;
        synchronize(pm);
        ag_timer_arm(t, pm->cfg.interval_ms);
}

/* ---- cgroup v1 memory threshold notification ---- */

static void close_notifier(struct ag_pressure *pm)
{
        if (pm->notify_io != NULL)
                ag_io_free(pm->notify_io);
        pm->notify_io = NULL;
        /* Closing the eventfd unregisters the threshold. */
        if (pm->notify_fd >= 0)
                close(pm->notify_fd);
        pm->notify_fd = -1;
}

static void on_notify(struct ag_io *io, int fd, uint32_t events, void *data)
{
        struct ag_pressure *pm = data;
        (void)io;
        (void)events;
        uint64_t v;
        if (read(fd, &v, sizeof(v)) != (ssize_t)sizeof(v))
                return;
        log_info("eviction manager: memory usage crossed the memory.available threshold: "
                 "synchronizing now");
        synchronize(pm);
}

/* The kubelet's memcg notifier: a threshold on the root cgroup's
 * memory.usage_in_bytes at capacity - threshold + inactive_file, re-armed
 * every cycle (inactive_file moves). v1 only. */
static void arm_memory_notifier(struct ag_pressure *pm, const struct k8s_observations *obs)
{
        const struct k8s_threshold *t = &pm->cfg.thresholds.t[K8S_SIGNAL_MEMORY_AVAILABLE];
        const struct k8s_observation *o = &obs->o[K8S_SIGNAL_MEMORY_AVAILABLE];
        if (!t->set || !o->present || cg_current_mode() == CG_MODE_UNIFIED)
                return;
        struct cg_node_memory mem;
        struct cb_error err = {0};
        char dir[4096], path[4200];
        if (cg_read_node_memory(&mem, &err) < 0 ||
            cg_root_dir("memory", dir, sizeof(dir), &err) < 0)
                return;
        int64_t th = k8s_threshold_value(t, o->capacity);
        int64_t inactive = (int64_t)(mem.usage - mem.working_set);
        int64_t at = o->capacity - th + inactive;
        if (at <= 0)
                return;
        if (pm->notify_fd >= 0 && (uint64_t)at == pm->notify_threshold)
                return;
        close_notifier(pm);
        _cleanup_close_ int usage_fd = -1, ctl_fd = -1;
        snprintf(path, sizeof(path), "%s/memory.usage_in_bytes", dir);
        usage_fd = open(path, O_RDONLY | O_CLOEXEC);
        snprintf(path, sizeof(path), "%s/cgroup.event_control", dir);
        ctl_fd = open(path, O_WRONLY | O_CLOEXEC);
        int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        char line[128];
        int n = snprintf(line, sizeof(line), "%d %d %lld", efd, usage_fd, (long long)at);
        if (usage_fd < 0 || ctl_fd < 0 || efd < 0 || write(ctl_fd, line, (size_t)n) != n) {
                log_v(2, "eviction manager: no memory threshold notification: %s", strerror(errno));
                if (efd >= 0)
                        close(efd);
                return;
        }
        pm->notify_fd = efd;
        pm->notify_threshold = (uint64_t)at;
        pm->notify_io = ag_io_new(pm->loop, efd, EPOLLIN, on_notify, pm, &err);
        if (pm->notify_io == NULL)
                close_notifier(pm);
        else
                log_v(3, "eviction manager: memory threshold notification at usage %lld",
                      (long long)at);
}

/* ---- lifecycle ---- */

int ag_pressure_new(struct ag_loop *loop, const struct ag_pressure_config *cfg,
                    struct ag_nodestatus *ns, struct ag_pods *pods, struct ag_events *events,
                    struct ag_pressure **ret, struct cb_error *err)
{
        struct ag_pressure *pm = calloc(1, sizeof(*pm));
        if (pm == NULL)
                return cb_error_set(err, ENOMEM, "eviction manager");
        pm->loop = loop;
        pm->cfg = *cfg;
        if (pm->cfg.interval_ms == 0)
                pm->cfg.interval_ms = K8S_EVICTION_MONITORING_MS;
        if (pm->cfg.transition_ms == 0)
                pm->cfg.transition_ms = K8S_EVICTION_TRANSITION_MS;
        pm->ns = ns;
        pm->pods = pods;
        pm->events = events;
        pm->first = true;
        pm->notify_fd = -1;
        pm->timer = ag_timer_new(loop, on_timer, pm, err);
        if (pm->timer == NULL) {
                free(pm);
                return -1;
        }
        *ret = pm;
        return 0;
}

void ag_pressure_set_imagegc(struct ag_pressure *pm, struct ag_imagegc *gc)
{
        pm->imagegc = gc;
}

void ag_pressure_set_containergc(struct ag_pressure *pm, struct ag_containergc *gc)
{
        pm->containergc = gc;
}

void ag_pressure_start(struct ag_pressure *pm)
{
        char th[512];
        k8s_eviction_format(&pm->cfg.thresholds, th, sizeof(th));
        log_info("eviction manager: evictionHard %s, pressure transition period %llus, every %llus",
                 th[0] ? th : "(none)", (unsigned long long)(pm->cfg.transition_ms / 1000),
                 (unsigned long long)(pm->cfg.interval_ms / 1000));
        ag_timer_arm(pm->timer, 0);
}

void ag_pressure_free(struct ag_pressure *pm)
{
        if (pm == NULL)
                return;
        close_notifier(pm);
        ag_timer_free(pm->timer);
        free(pm);
}
