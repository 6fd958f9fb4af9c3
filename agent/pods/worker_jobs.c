/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/pods/worker_internal.h"

#include <limits.h>

#include "agent/core/crashpoint.h"
#include "agent/core/log.h"
#include "agent/k8s/sysctl.h"

static void start_done(void *data, bool cancelled);
static void pw_files_job_freep(struct files_job **j)
{
        pw_files_job_free(*j);
}
static void sandbox_done(void *data, bool cancelled);

/* ---- image pulls, off the loop --------------------------------------------------------
 *
 * Pulls run on the agent's pull queue (one at a time, as the kubelet's
 * default serializeImagePulls), never on the event loop. The job owns
 * copies of its inputs; c is cleared when the worker goes away first. */

uint64_t pw_mono_us(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void pull_job_free(struct pull_job *j)
{
        if (j == NULL)
                return;
        free(j->root_dir);
        free(j->unpack_helper);
        free(j->image);
        for (size_t i = 0; i < j->n_insecure; i++)
                free(j->insecure[i]);
        free(j->insecure);
        rt_image_free(j->img);
        cb_arena_free(j->arena);
        free(j);
}

#define PULL_CREDS_MAX 16

/* The node's own credentials, as the kubelet's default docker config
 * provider reads them: the first config.json of the search paths that
 * reads and parses, else the first .dockercfg. Files that are missing or
 * do not parse are passed over (the kubelet logs them at -v 4). Blocking
 * reads: on the pull queue, never on the loop. */
static void add_node_credentials(struct pull_job *j)
{
        const char *paths[8];
        bool dockercfg[8];
        char cwd[PATH_MAX];
        const char *home = getenv("HOME");
        size_t n = k8s_docker_config_paths(
            j->arena, j->root_dir, getcwd(cwd, sizeof(cwd)) ? cwd : NULL, home, paths, dockercfg);
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *text = NULL;
                struct cb_error err = {0};
                if (paths[i] == NULL || cb_read_file(paths[i], 1u << 20, &text, NULL, &err) < 0)
                        continue;
                if (k8s_keyring_add_text(&j->keyring, text, dockercfg[i], 1, paths[i], &err) == 0) {
                        j->node_config = paths[i];
                        return;
                }
        }
}

static void pull_work(void *data)
{
        struct pull_job *j = data;
        j->started_us = pw_mono_us();
        if (j->secrets_rc < 0) {
                /* kubelet: MakeDockerKeyring's error fails the pull */
                j->rc = -1;
                j->err = j->secrets_err;
                j->finished_us = pw_mono_us();
                return;
        }
        add_node_credentials(j);
        const struct k8s_registry_cred *creds[PULL_CREDS_MAX];
        struct rt_registry_auth auths[PULL_CREDS_MAX];
        size_t n = k8s_keyring_lookup(&j->keyring, j->image, creds, PULL_CREDS_MAX);
        for (size_t i = 0; i < n; i++)
                auths[i] = (struct rt_registry_auth){creds[i]->username, creds[i]->password};
        j->n_creds = n;
        struct rt_pull_opts opts = {
            .insecure_registries = (const char *const *)j->insecure,
            .n_insecure = j->n_insecure,
            .auths = auths,
            .n_auths = n,
            .unpack_helper = j->unpack_helper,
        };
        j->rc = rt_image_pull(j->root_dir, j->image, &opts, NULL, &j->err);
        if (j->rc == 0) {
                j->rc = rt_image_lookup(j->root_dir, j->image, &j->img, &j->err);
                if (j->rc == 0 && j->img == NULL)
                        j->rc = cb_error_set(&j->err, 0, "image not found after the pull");
        }
        j->finished_us = pw_mono_us();
}

static void pull_done(void *data, bool cancelled)
{
        struct pull_job *j = data;
        struct ctr *c = j->c;
        if (c == NULL) {
                pull_job_free(j);
                return;
        }
        struct ag_pod_worker *w = c->w;
        c->pull_job = NULL;
        if (cancelled || w->done || w->terminating) {
                pull_job_free(j);
                return;
        }
        /* Which sources, never what they hold. */
        log_v(2, "pod %s/%s: pull of \"%s\" with %zu credential(s)%s%s", pw_pod_ns(w->pod),
              w->pod->meta.name, j->image, j->n_creds, j->node_config ? "; the node's from " : "",
              j->node_config ? j->node_config : "");
        int64_t now = cb_boot_now();
        if (j->rc < 0) {
                st_backoff_next(&c->pull_backoff, now, now, w->env->pull_backoff_base,
                                w->env->pull_backoff_cap);
                c->pull_failed_at = now;
                pw_msg_set(&c->pull_error, j->err.msg); /* < CB_ERROR_MSG_MAX <= MESSAGE_MAX */
                pw_set_waiting(c, "ErrImagePull", "%s", j->err.msg);
                pw_emit_event(w, c, "Warning", "Failed", "Failed to pull image \"%s\": %s",
                              j->image, j->err.msg);
                pw_emit_event(w, c, "Warning", "Failed", "Error: ErrImagePull");
                /* The kubelet syncs the pod again soon after a failed sync;
                 * that sync finds the pull in back-off (ImagePullBackOff) and
                 * the next pull happens when the back-off has passed. */
                pw_arm_ctr_timer(c, 1);
        } else {
                double secs = (double)(j->finished_us - j->started_us) / 1e6;
                double total = (double)(j->finished_us - j->submitted_us) / 1e6;
                pw_emit_event(
                    w, c, "Normal", "Pulled",
                    "Successfully pulled image \"%s\" in %.3fs (%.3fs including waiting). "
                    "Image size: %" PRIu64 " bytes.",
                    j->image, secs, total, j->img->size);
                c->pull_failed_at = 0;
                pw_msg_set(&c->pull_error, NULL);
                rt_image_free(c->pulled);
                c->pulled = j->img;
                j->img = NULL;
        }
        pull_job_free(j);
        ag_timer_arm(w->kick, 0);
}

/* The pod's imagePullSecrets as the kubelet's getPullSecretsForPod reads
 * them: the ones it cannot get are named in a FailedToRetrieveImagePullSecret
 * warning and the pull goes on without them. With k (may be NULL), the
 * ones of a pull-secret type go into it (origin 0); a Secret of another
 * type, or without its key, is passed over (credentialprovider/secrets
 * MakeDockerKeyring); one that does not parse is an error for the pull. */
static int pull_secrets(struct ag_pod_worker *w, struct k8s_keyring *k, struct cb_error *err)
{
        const struct k8s_pod_spec *ps = &w->pod->spec;
        char missing[512] = "";
        int ret = 0;
        for (size_t i = 0; i < ps->n_image_pull_secrets; i++) {
                const char *name = ps->image_pull_secrets[i];
                if (name == NULL || name[0] == '\0')
                        continue;
                const struct k8s_keyed_data *kd = NULL;
                struct cb_error gerr = {0};
                int r = w->env->objects == NULL
                            ? -1
                            : ag_objmgr_get(w->env->objects, AG_OBJ_SECRET, pw_pod_ns(w->pod), name,
                                            &kd, &gerr);
                if (r <= 0) {
                        size_t len = strlen(missing);
                        snprintf(missing + len, sizeof(missing) - len, "%s%s", len ? ", " : "",
                                 name);
                        continue;
                }
                if (k == NULL || ret < 0)
                        continue;
                const char *type = kd->type ? kd->type : "";
                bool cfg = strcmp(type, "kubernetes.io/dockercfg") == 0;
                const struct k8s_data_item *it = NULL;
                if (cfg || strcmp(type, "kubernetes.io/dockerconfigjson") == 0)
                        it = k8s_keyed_data_get(kd, cfg ? ".dockercfg" : ".dockerconfigjson");
                if (it == NULL || it->value == NULL || it->value[0] == '\0')
                        continue;
                ret = k8s_keyring_add_secret(k, kd, 0, err);
        }
        if (missing[0] != '\0')
                pw_emit_event(w, NULL, "Warning", "FailedToRetrieveImagePullSecret",
                              "Unable to retrieve some image pull secrets (%s); attempting to "
                              "pull the image may not succeed.",
                              missing);
        return ret;
}

/* Queues the pull; 1 (in progress) or -1. */
static int submit_pull(struct ag_pod_worker *w, struct ctr *c, const char *image)
{
        struct pull_job *j = calloc(1, sizeof(*j));
        if (j == NULL)
                return -1;
        j->c = c;
        j->root_dir = strdup(w->env->root_dir);
        j->unpack_helper = strdup(w->env->unpack_helper ? w->env->unpack_helper : "");
        j->image = strdup(image);
        j->insecure = calloc(w->env->n_insecure_registries + 1, sizeof(char *));
        j->arena = cb_arena_new(0);
        j->keyring.a = j->arena;
        bool ok = j->root_dir && j->unpack_helper && j->image && j->insecure && j->arena;
        for (size_t i = 0; ok && i < w->env->n_insecure_registries; i++) {
                j->insecure[i] = strdup(w->env->insecure_registries[i]);
                ok = j->insecure[i] != NULL;
                j->n_insecure += ok;
        }
        struct cb_error err = {0};
        if (!ok) {
                cb_error_set(&err, ENOMEM, "queueing the pull");
        } else {
                j->secrets_rc = pull_secrets(w, &j->keyring, &j->secrets_err);
                j->submitted_us = pw_mono_us();
                if (ag_offload_submit(w->env->pulls, pull_work, pull_done, j, &err) == 0) {
                        c->pull_job = j;
                        pw_emit_event(w, c, "Normal", "Pulling", "Pulling image \"%s\"", image);
                        return 1;
                }
        }
        pull_job_free(j);
        pw_set_waiting(c, "ErrImagePull", "%s", err.msg);
        pw_arm_ctr_timer(c, 1);
        return -1;
}

static int submit_lookup(struct ag_pod_worker *w, struct ctr *c, const char *image, bool prefetch,
                         struct cb_error *err);

/* Makes sure the image is present under the pull policy. 0: present, 1: a
 * lookup or a pull is in progress (the worker is kicked when it ends), -1:
 * not available. */
static int ensure_image(struct ag_pod_worker *w, struct ctr *c, struct rt_image **ret)
{
        const char *image = c->spec->image ? c->spec->image : "";
        if (c->pull_job != NULL || c->files_job != NULL)
                return 1;
        if (c->pulled != NULL) {
                if (c->prefetched) {
                        /* found in the store by a lookup (off the loop) */
                        c->prefetched = false;
                        /* the kubelet reads the pull secrets at every sync, pulling or not */
                        pull_secrets(w, NULL, NULL);
                        pw_emit_event(w, c, "Normal", "Pulled",
                                      "Container image \"%s\" already present on machine", image);
                }
                *ret = c->pulled;
                c->pulled = NULL;
                return 0;
        }
        struct cb_error err = {0};
        struct rt_image_ref ref;
        if (rt_image_ref_parse(image, &ref, &err) < 0) {
                pw_set_waiting(c, "InvalidImageName",
                               "Failed to apply default image tag \"%s\": %s", image, err.msg);
                pw_emit_event(w, c, "Warning", "InspectFailed", "%s",
                              c->wait_message ? c->wait_message : "");
                return -1;
        }
        enum k8s_pull_policy policy = ag_pull_policy(c->spec);
        if (policy != K8S_PULL_ALWAYS) {
                /* The store is read off the loop (files_work): a lookup that
                 * found the image left it in c->pulled (above); one that did
                 * not, or failed, left its result in c->files. */
                _cleanup_(pw_files_job_freep) struct files_job *looked =
                    c->files != NULL && c->files->lookup && !c->files->found
                        ? steal_pointer(&c->files)
                        : NULL;
                if (looked == NULL) {
                        if (submit_lookup(w, c, image, false, &err) > 0)
                                return 1;
                        pw_set_waiting(c, "ImageInspectError", "Failed to inspect image \"%s\": %s",
                                       image, err.msg);
                        pw_arm_ctr_timer(c, 1);
                        return -1;
                }
                if (looked->lookup_rc < 0) {
                        pw_set_waiting(c, "ImageInspectError", "Failed to inspect image \"%s\": %s",
                                       image, looked->lookup_err.msg);
                        return -1;
                }
                if (policy == K8S_PULL_NEVER) {
                        pw_set_waiting(
                            c, "ErrImageNeverPull",
                            "Container image \"%s\" is not present with pull policy of Never",
                            image);
                        pw_emit_event(w, c, "Warning", "ErrImageNeverPull", "%s",
                                      c->wait_message ? c->wait_message : "");
                        return -1;
                }
        }
        int64_t now = cb_boot_now();
        if (c->pull_failed_at && st_backoff_active(&c->pull_backoff, c->pull_failed_at, now)) {
                /* The kubelet wraps the last pull's error (image_manager.go
                 * prevPullErrMsg: "<reason>: <message>"). */
                if (c->pull_error != NULL)
                        pw_set_waiting(c, "ImagePullBackOff",
                                       "Back-off pulling image \"%s\": ErrImagePull: %s", image,
                                       c->pull_error);
                else
                        pw_set_waiting(c, "ImagePullBackOff", "Back-off pulling image \"%s\"",
                                       image);
                pw_emit_event(w, c, "Normal", "BackOff", "Back-off pulling image \"%s\"", image);
                pw_arm_ctr_timer(c, c->pull_failed_at + c->pull_backoff.backoff - now);
                return -1;
        }
        return submit_pull(w, c, image);
}

/* A hostPath's bind source: its SetUp (the type check, DirectoryOrCreate
 * and FileOrCreate) was done by the volumes (volumes.c: a FailedMount
 * until it passes). A source that does not exist (type unset, which the
 * kubelet never checks, or removed since) is made a directory, 0755, as
 * containerd's CRI does for a missing host path when it builds the
 * container's mounts; that failing is the container's config error. */
static int host_path_source(const char *name, const char *path, struct ag_volume_source *src,
                            struct cb_error *err)
{
        struct stat sb;
        if (stat(path, &sb) < 0) {
                if (errno != ENOENT)
                        return cb_error_set(err, errno, "volume %s: hostPath %s", name, path);
                struct cb_error e = {0};
                if (cb_mkdir_p(path, 0755, 0755, &e) < 0)
                        return cb_error_set(err, e.code, "volume %s: failed to mkdir %s: %s", name,
                                            path, e.msg);
        }
        src->type = RT_MOUNT_BIND;
        src->source = path;
        return 0;
}

/* Makes the pod's volumes ready on the node (the emptyDir directories,
 * hostPath checks and creation) for ag_container_config_build. Only the
 * volumes this container mounts. */
static int resolve_volumes(struct ag_pod_worker *w, struct ctr *c, struct cb_arena *a,
                           struct ag_volume_source **ret, size_t *ret_n, struct cb_error *err)
{
        const struct k8s_container *s = c->spec;
        struct ag_volume_source *out = cb_arena_calloc(a, s->n_volume_mounts + 1, sizeof(*out));
        if (out == NULL)
                return cb_error_set(err, ENOMEM, "volumes");
        size_t n = 0;
        for (size_t i = 0; i < s->n_volume_mounts; i++) {
                const struct k8s_volume *v = NULL;
                for (size_t k = 0; k < w->pod->spec.n_volumes && v == NULL; k++)
                        if (w->pod->spec.volumes[k].name &&
                            strcmp(w->pod->spec.volumes[k].name, s->volume_mounts[i].name) == 0)
                                v = &w->pod->spec.volumes[k];
                bool seen = false;
                for (size_t k = 0; k < n && !seen; k++)
                        seen = v != NULL && strcmp(out[k].name, v->name) == 0;
                if (v == NULL || seen)
                        continue; /* the builder names a missing one */
                struct ag_volume_source src = {.name = v->name};
                if (v->kind == K8S_VOLUME_PVC) {
                        /* the claim's PV: hostPath as an inline one, local
                         * through the pod's bind of its directory */
                        struct ag_pvc_source ps;
                        if (ag_pod_volumes_pvc_source(w->volumes, v, a, &ps, err) < 0)
                                return -1;
                        if (ps.local) {
                                src.type = RT_MOUNT_BIND;
                                src.source = ps.path;
                        } else if (host_path_source(v->name, ps.path, &src, err) < 0) {
                                return -1;
                        }
                        src.read_only = ps.read_only;
                } else if (v->kind == K8S_VOLUME_HOST_PATH) {
                        if (host_path_source(v->name, v->host_path, &src, err) < 0)
                                return -1;
                } else if (ag_volume_managed(v)) {
                        if (pw_volume_source(w, v, a, &src, err) < 0)
                                return -1;
                } else if (v->kind == K8S_VOLUME_EMPTY_DIR) {
                        char *dir =
                            cb_arena_printf(a, "%s/pods/%s/volumes/kubernetes.io~empty-dir/%s",
                                            w->env->root_dir, w->pod->meta.uid, v->name);
                        if (dir == NULL || cb_mkdir_p(dir, 0755, 0777, NULL) < 0 ||
                            chmod(dir, 0777) < 0)
                                return cb_error_set(err, errno, "volume %s: cannot create %s",
                                                    v->name, dir ? dir : "");
                        src.type = RT_MOUNT_BIND;
                        src.source = dir;
                } else {
                        return cb_error_set(err, 0,
                                            "volume \"%s\": %s volumes are not supported by "
                                            "cubelet yet",
                                            v->name,
                                            v->other_kind ? v->other_kind : "this kind of");
                }
                out[n++] = src;
        }
        *ret = out;
        *ret_n = n;
        return 0;
}

static const struct k8s_container_cgroup *plan_for(const struct ag_pod_worker *w,
                                                   const struct ctr *c)
{
        for (size_t i = 0; i < w->plan.n_containers; i++)
                if (w->plan.containers[i].container == c->spec)
                        return &w->plan.containers[i];
        return NULL;
}

static void new_id(char *buf, size_t size)
{
        unsigned char r[16];
        if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                memcpy(r, &ts, sizeof(r) < sizeof(ts) ? sizeof(r) : sizeof(ts));
        }
        size_t o = 0;
        for (size_t i = 0; i < sizeof(r) && o + 2 < size; i++)
                o += (size_t)snprintf(buf + o, size - o, "%02x", r[i]);
}

/* ---- creating and starting a container, off the loop ---------------------------------- */

static void start_job_free(struct start_job *j)
{
        cb_arena_free(j->arena);
        rt_image_free(j->img);
        free(j);
}

static void start_work(void *data)
{
        struct start_job *j = data;
        for (size_t i = 0; i < j->n_subpaths; i++) {
                const struct ag_subpath *sp = &j->subpaths[i];
                struct cb_error detail = {0};
                if (ag_subpath_prepare(sp->volume_dir, sp->path, j->subpath_targets[i], &detail) <
                    0) {
                        /* The kubelet keeps the detail (host paths) out of
                         * the status; it is in the Failed event's text. */
                        j->rc = cb_error_set(&j->err, 0,
                                             "failed to prepare subPath for volumeMount \"%s\" of "
                                             "container \"%s\"",
                                             sp->volume_name, j->container_name);
                        snprintf(j->err_detail, sizeof(j->err_detail), "%s", detail.msg);
                        j->config_error = true;
                        return;
                }
                /* the job's own arena holds the mounts it built */
                ((struct rt_mount *)j->cfg.mounts)[sp->mount].source = j->subpath_targets[i];
        }
        /* A shared PID namespace whose init (the pause) died takes no new
         * process: the fork fails with ENOMEM. That is the sandbox lost
         * (the worker makes it again), not the container's StartError. */
        const struct rt_sandbox *sb = &j->sandbox;
        if (sb->pidns_path[0] != '\0' && !rt_pause_alive(sb->pause_pid, sb->pause_start_time)) {
                j->rc = cb_error_set(&j->err, ESRCH, "the pause process %d is gone",
                                     (int)sb->pause_pid);
                j->sandbox_lost = true;
                return;
        }
        j->rc = rt_container_create_start(&j->cfg, &j->state, &j->err);
        if (j->rc < 0 && sb->pidns_path[0] != '\0' &&
            !rt_pause_alive(sb->pause_pid, sb->pause_start_time))
                j->sandbox_lost = true;
}

/* The start an earlier agent left in flight (worker.json pendingId): its
 * monitor survived the agent and goes on. Wait until it runs or ended; one
 * that never ran is killed and removed, so the worker starts it afresh. */
#define ADOPT_WAIT_MS 10000
static void adopt_work(void *data)
{
        struct start_job *j = data;
        const char *root = j->cfg.root_dir;
        struct rt_container_state st;
        for (int waited = 0;; waited += 50) {
                struct cb_error e = {0};
                if (rt_container_state(root, j->id, &st, &e) < 0) {
                        if (e.code == ENOENT || waited >= 1000) {
                                /* never made (or no state): nothing runs */
                                pw_container_remove(root, j->id, NULL);
                                j->vanished = true;
                                return;
                        }
                } else if (st.status == RT_CONTAINER_RUNNING ||
                           (st.status == RT_CONTAINER_EXITED && st.pid > 0)) {
                        j->state = st;
                        j->rc = 0;
                        return;
                } else if (st.status == RT_CONTAINER_EXITED) {
                        /* a StartError: reported as the start's failure */
                        j->rc = cb_error_set(&j->err, 0, "%s", st.message);
                        return;
                } else if (waited >= ADOPT_WAIT_MS) {
                        rt_container_abort(root, j->id, NULL);
                        pw_container_remove(root, j->id, NULL);
                        j->vanished = true;
                        return;
                }
                struct timespec ts = {0, 50 * 1000000L};
                nanosleep(&ts, NULL);
        }
}

void pw_adopt_pending(struct ag_pod_worker *w, struct ctr *c, const char *id)
{
        struct start_job *j = calloc(1, sizeof(*j));
        struct cb_error err = {0};
        if (j == NULL)
                return;
        j->c = c;
        j->adopt = true;
        snprintf(j->id, sizeof(j->id), "%s", id);
        snprintf(c->pending_id, sizeof(c->pending_id), "%s", id);
        j->cfg.root_dir = w->env->root_dir;
        if (ag_offload_submit(w->env->sandboxes, adopt_work, start_done, j, &err) < 0) {
                log_warning("pod %s/%s: container %s: %s", pw_pod_ns(w->pod), w->pod->meta.name,
                            c->spec->name, err.msg);
                c->pending_id[0] = '\0';
                free(j);
                return;
        }
        c->start_job = j;
}

/* ---- removing earlier instances, off the loop -------------------------------------------
 *
 * A restart's exited instance (and a start undone because its sandbox
 * died) is removed on the sandbox queue, beside the next start: its
 * runtime directory holds the overlay's upper dir, whatever the container
 * wrote. Until the job's end confirms the removal on the loop, its id stays
 * in c->retired: saved in worker.json, claimed against the orphan
 * collection, taken by the teardown (pw_finish waits for the job). */

int pw_container_remove(const char *root_dir, const char *id, struct cb_error *err)
{
        if (ag_loop_in_callback())
                log_error("container %s removed on the event loop (a bug: blocking work belongs on "
                          "an offload queue)",
                          id);
        return rt_container_remove(root_dir, id, err);
}

struct retire_item {
        char id[RT_ID_MAX];
        char term_path[RT_PATH_MAX]; /* "" when none */
        int rc;
        char err[CB_ERROR_MSG_MAX];
};

struct retire_job {
        struct ctr *c; /* NULL once the worker is gone */
        char *root_dir;
        size_t n;
        struct retire_item items[];
};

static void retire_job_free(struct retire_job *j)
{
        if (j == NULL)
                return;
        free(j->root_dir);
        free(j);
}

static void retire_work(void *data)
{
        struct retire_job *j = data;
        for (size_t i = 0; i < j->n; i++) {
                struct retire_item *it = &j->items[i];
                struct cb_error err = {0};
                it->rc = pw_container_remove(j->root_dir, it->id, &err);
                if (it->rc < 0) {
                        snprintf(it->err, sizeof(it->err), "%s", err.msg);
                        continue; /* stays retired: the next job or the teardown */
                }
                if (it->term_path[0] != '\0')
                        unlink(it->term_path);
                ag_crash_point("restart-old-removed");
        }
}

static void retired_drop(struct ctr *c, const char *id)
{
        for (size_t k = 0; k < c->n_retired; k++)
                if (strcmp(c->retired[k], id) == 0) {
                        memmove(c->retired[k], c->retired[k + 1],
                                (c->n_retired - k - 1) * sizeof(c->retired[0]));
                        c->n_retired--;
                        return;
                }
}

static void retire_done(void *data, bool cancelled)
{
        struct retire_job *j = data;
        struct ctr *c = j->c;
        if (c == NULL || cancelled) {
                /* agent shutdown: worker.json keeps the ids, the next agent
                 * queues them again */
                if (c != NULL)
                        c->retire_job = NULL;
                retire_job_free(j);
                return;
        }
        struct ag_pod_worker *w = c->w;
        c->retire_job = NULL;
        for (size_t i = 0; i < j->n; i++) {
                const struct retire_item *it = &j->items[i];
                if (it->rc == 0)
                        retired_drop(c, it->id);
                else
                        pw_emit_event(w, c, "Warning", "FailedKillPod",
                                      "error removing container %s: %s", c->spec->name, it->err);
        }
        /* the ids retired while it ran */
        bool more = false;
        for (size_t k = 0; k < c->n_retired && !more; k++) {
                bool in_job = false;
                for (size_t i = 0; i < j->n && !in_job; i++)
                        in_job = strcmp(j->items[i].id, c->retired[k]) == 0;
                more = !in_job;
        }
        retire_job_free(j);
        pw_save_state(w);
        if (more)
                pw_retire_submit(w, c);
        ag_timer_arm(w->kick, 0); /* a pw_finish waits for the job */
}

void pw_retire_detach(struct retire_job *j)
{
        j->c = NULL;
}

bool pw_retired_add(struct ctr *c, const char *id)
{
        for (size_t k = 0; k < c->n_retired; k++)
                if (strcmp(c->retired[k], id) == 0)
                        return true;
        char(*v)[RT_ID_MAX] = realloc(c->retired, (c->n_retired + 1) * sizeof(*v));
        if (v == NULL)
                return false;
        c->retired = v;
        snprintf(c->retired[c->n_retired++], RT_ID_MAX, "%s", id);
        return true;
}

void pw_retire_submit(struct ag_pod_worker *w, struct ctr *c)
{
        if (c->retire_job != NULL || c->n_retired == 0 || w->torn_down || w->teardown_job != NULL)
                return;
        struct retire_job *j = calloc(1, sizeof(*j) + c->n_retired * sizeof(j->items[0]));
        struct cb_error err = {0};
        if (j == NULL || (j->root_dir = strdup(w->env->root_dir)) == NULL) {
                cb_error_set(&err, ENOMEM, "out of memory");
        } else {
                j->c = c;
                j->n = c->n_retired;
                for (size_t i = 0; i < j->n; i++) {
                        struct retire_item *it = &j->items[i];
                        snprintf(it->id, sizeof(it->id), "%s", c->retired[i]);
                        if (pw_termination_log_path(w, c, it->id, it->term_path,
                                                    sizeof(it->term_path)) < 0)
                                it->term_path[0] = '\0';
                }
                if (w->env->sandboxes == NULL)
                        cb_error_set(&err, 0, "no sandbox queue");
                else if (ag_offload_submit(w->env->sandboxes, retire_work, retire_done, j, &err) ==
                         0) {
                        c->retire_job = j;
                        return;
                }
        }
        /* kept: the next retire or the teardown removes them */
        log_warning(
            "pod %s/%s: container %s: the removal of its earlier instance is not queued: %s",
            pw_pod_ns(w->pod), w->pod->meta.name, c->spec->name, err.msg);
        retire_job_free(j);
}

void pw_retire(struct ag_pod_worker *w, struct ctr *c)
{
        if (c->id[0] == '\0')
                return;
        if (!pw_retired_add(c, c->id))
                /* unclaimed from now: the next agent's orphan collection */
                log_error("pod %s/%s: container %s: out of memory, instance %s left to the "
                          "orphan collection",
                          pw_pod_ns(w->pod), w->pod->meta.name, c->spec->name, c->id);
        c->id[0] = '\0';
        pw_retire_submit(w, c);
}

int pw_termination_log_path(const struct ag_pod_worker *w, const struct ctr *c, const char *id,
                            char *buf, size_t size)
{
        int n = snprintf(buf, size, "%s/pods/%s/containers/%s/%s", w->env->root_dir,
                         w->pod->meta.uid, c->spec->name, id);
        return n < 0 || (size_t)n >= size ? -1 : 0;
}

/* The per-instance termination message file (<root>/pods/<uid>/containers/
 * <name>/<id>), mode 0666 whatever the umask so any user in the container
 * can write it. As in the kubelet, a failure only costs the message: the
 * container starts without the file. */
static bool create_termination_log(struct ag_pod_worker *w, struct ctr *c, const char *id,
                                   char *buf, size_t size)
{
        char dir[RT_PATH_MAX];
        if (pw_termination_log_path(w, c, id, buf, size) < 0 ||
            snprintf(dir, sizeof(dir), "%s/pods/%s/containers/%s", w->env->root_dir,
                     w->pod->meta.uid, c->spec->name) >= (int)sizeof(dir) ||
            cb_mkdir_p(dir, 0755, 0755, NULL) < 0)
                return false;
        _cleanup_close_ int fd =
            open(buf, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0666);
        if (fd < 0 || fchmod(fd, 0666) < 0) {
                pw_emit_event(w, c, "Warning", "Failed",
                              "error on creating termination-log file %s: %s", buf,
                              strerror(errno));
                return false;
        }
        return true;
}

/* A name that becomes one path component. */
static bool path_component_ok(const char *s)
{
        return s && s[0] && strchr(s, '/') == NULL && strcmp(s, ".") != 0 && strcmp(s, "..") != 0 &&
               strlen(s) <= 253;
}

static int plan_subpaths(struct ag_pod_worker *w, struct ctr *c, struct cb_arena *a,
                         struct start_job *j, const struct ag_container_spec *spec,
                         struct cb_error *err)
{
        j->subpaths = spec->subpaths;
        j->n_subpaths = spec->n_subpaths;
        j->container_name = cb_arena_strdup(a, c->spec->name);
        if (spec->n_subpaths == 0)
                return 0;
        j->subpath_targets = cb_arena_calloc(a, spec->n_subpaths, sizeof(char *));
        if (j->subpath_targets == NULL || j->container_name == NULL)
                return cb_error_set(err, ENOMEM, "subPath");
        for (size_t i = 0; i < spec->n_subpaths; i++) {
                const struct ag_subpath *sp = &spec->subpaths[i];
                if (!path_component_ok(sp->volume_name) || !path_component_ok(c->spec->name))
                        return cb_error_set(err, 0, "volumeMounts[%zu]: invalid name \"%s\"",
                                            sp->volume_mount, sp->volume_name);
                j->subpath_targets[i] = cb_arena_printf(
                    a, "%s/pods/%s/volume-subpaths/%s/%s/%zu", w->env->root_dir, w->pod->meta.uid,
                    sp->volume_name, c->spec->name, sp->volume_mount);
                if (j->subpath_targets[i] == NULL)
                        return cb_error_set(err, ENOMEM, "subPath");
        }
        return 0;
}

/* ---- the image's /etc/passwd and /etc/group, off the loop ----------------------------
 *
 * They are image content: read by rt_image_read_file (resolved inside the
 * image's layers, regular files only, size-capped) on the start queue, never
 * on the event loop; the start goes on when they are read. */

void pw_files_job_free(struct files_job *j)
{
        if (j == NULL)
                return;
        rt_image_free(j->img);
        free(j->ref);
        free(j->root_dir);
        free(j->passwd);
        free(j->group);
        free(j);
}

static void files_work(void *data)
{
        struct files_job *j = data;
        if (j->lookup) {
                j->lookup_rc = rt_image_lookup(j->root_dir, j->ref, &j->img, &j->lookup_err);
                j->found = j->lookup_rc == 0 && j->img != NULL;
                if (!j->found)
                        return;
        }
        j->passwd_rc =
            rt_image_read_file(j->img, "etc/passwd", 1 << 20, &j->passwd, &j->passwd_err);
        j->group_rc = rt_image_read_file(j->img, "etc/group", 1 << 20, &j->group, &j->group_err);
}

static void files_done(void *data, bool cancelled)
{
        struct files_job *j = data;
        struct ctr *c = j->c;
        if (c == NULL) {
                pw_files_job_free(j);
                return;
        }
        struct ag_pod_worker *w = c->w;
        c->files_job = NULL;
        if (cancelled || w->done || w->terminating || (j->prefetch && !j->found)) {
                /* a prefetch that found nothing: the start looks again (a
                 * pull by another pod may have brought the image since) */
                pw_files_job_free(j);
                return;
        }
        /* the image goes back to the start, which runs again; a lookup's
         * image owes the start its Pulled event, a lookup that found none
         * (or failed) is the start's to act on */
        if (j->img != NULL) {
                rt_image_free(c->pulled);
                c->pulled = steal_pointer(&j->img);
                c->prefetched = j->lookup;
        }
        pw_files_job_free(c->files);
        c->files = j;
        ag_timer_arm(w->kick, 0);
}

/* Queues j (its c and img set) on the starts queue as c's files job. */
static int submit_files(struct ag_pod_worker *w, struct ctr *c, struct files_job *j,
                        struct cb_error *err)
{
        if (c->files_job != NULL)
                return cb_error_set(err, EBUSY, "container %s: its image files are being read",
                                    c->spec->name);
        struct ag_offload *q = w->env->starts ? w->env->starts : w->env->sandboxes;
        if (ag_offload_submit(q, files_work, files_done, j, err) < 0)
                return -1;
        c->files_job = j;
        return 0;
}

/* Queues c's image lookup in the store, with its files read when it is
 * there. 1: queued (the worker is kicked when it is done), -1: err set. */
static int submit_lookup(struct ag_pod_worker *w, struct ctr *c, const char *image, bool prefetch,
                         struct cb_error *err)
{
        struct files_job *j = calloc(1, sizeof(*j));
        if (j == NULL || (j->ref = strdup(image)) == NULL ||
            (j->root_dir = strdup(w->env->root_dir)) == NULL) {
                pw_files_job_free(j);
                return cb_error_set(err, ENOMEM, "image lookup");
        }
        j->c = c;
        j->lookup = true;
        j->prefetch = prefetch;
        if (submit_files(w, c, j, err) < 0) {
                pw_files_job_free(j);
                return -1;
        }
        return 1;
}

/* 1: the files are being read (the worker is kicked when they are), 0:
 * c->files holds them for img, -1: the job could not be queued (c is
 * waiting). img is the job's (or handed back) when 1. */
static int ensure_files(struct ag_pod_worker *w, struct ctr *c, struct rt_image **img)
{
        if (c->files != NULL)
                return 0;
        struct files_job *j = calloc(1, sizeof(*j));
        struct cb_error err = {0};
        if (j == NULL) {
                pw_set_waiting(c, "CreateContainerError", "out of memory");
                return -1;
        }
        j->c = c;
        j->img = *img;
        if (submit_files(w, c, j, &err) < 0) {
                j->img = NULL;
                free(j);
                pw_set_waiting(c, "CreateContainerError", "%s", err.msg);
                pw_arm_ctr_timer(c, 1);
                return -1;
        }
        *img = NULL;
        return 1;
}

void pw_msg_set(char **dst, const char *s)
{
        char *m = NULL;
        /* s is always NUL-terminated (an error message, a decoded string);
         * strlen then a clamp, since gcc -O3 flags a strnlen bound larger
         * than a caller's buffer (-Wstringop-overread). */
        size_t n = s != NULL ? strlen(s) : 0;
        if (n > TERM_MESSAGE_MAX - 1)
                n = TERM_MESSAGE_MAX - 1;
        if (n > 0 && (m = malloc(n + 1)) != NULL) {
                memcpy(m, s, n);
                m[n] = '\0';
        }
        free(*dst);
        *dst = m;
}

void pw_set_user(struct ctr *c, uint32_t uid, uint32_t gid, const uint32_t *groups, size_t n)
{
        uint32_t *g = malloc((n + 1) * sizeof(*g));
        if (g == NULL) {
                c->has_user = false; /* not reported rather than wrong */
                return;
        }
        if (n)
                memcpy(g, groups, n * sizeof(*g));
        free(c->groups);
        c->groups = g;
        c->n_groups = n;
        c->uid = uid;
        c->gid = gid;
        c->has_user = true;
}

void pw_start_container(struct ag_pod_worker *w, struct ctr *c)
{
        if (c->start_job != NULL || c->files_job != NULL)
                return;
        /* A worker that re-adopted its sandbox after an agent restart has
         * its volumes set up again first (the volumes kick it). */
        if (!pw_volumes_ready(w))
                return;
        struct rt_image *img = NULL;
        /* kept while the image's files are read off the loop: the status
         * sent meanwhile shows the last attempt's reason (a retried
         * CreateContainerConfigError), not a waiting state without one */
        _cleanup_free_ char *prev = strdup(c->wait_reason);
        _cleanup_free_ char *prev_msg = steal_pointer(&c->wait_message); /* NULL: none */
        c->wait_reason[0] = '\0';
        int ir = ensure_image(w, c, &img);
        int fr = ir == 0 ? ensure_files(w, c, &img) : ir;
        if (fr != 0) {
                if (fr > 0 && c->files_job != NULL && c->wait_reason[0] == '\0' && prev != NULL) {
                        snprintf(c->wait_reason, sizeof(c->wait_reason), "%s", prev);
                        pw_msg_set(&c->wait_message, prev_msg);
                }
                rt_image_free(img);
                return;
        }
        /* used by this start only: the next one reads them again */
        _cleanup_(pw_files_job_freep) struct files_job *files = steal_pointer(&c->files);
        ag_pod_worker_mark(w, "imageReady", c->spec->name);
        pw_msg_set(&c->image, img->ref);
        char image_id[RT_PATH_MAX];
        ag_image_id(image_id, sizeof(image_id), img->ref, img->manifest_digest);
        pw_msg_set(&c->image_id, image_id);

        struct cb_arena *a = cb_arena_new(0);
        struct cb_error err = {0};
        struct ag_env_context ctx = {
            .node_name = w->env->node_name,
            .pod_ip = w->n_pod_ips ? w->pod_ips[0] : "",
            .pod_ips = w->pod_ips,
            .n_pod_ips = w->n_pod_ips,
            .host_ip = w->env->n_host_ips ? w->env->host_ips[0] : "",
            .host_ips = w->env->host_ips,
            .n_host_ips = w->env->n_host_ips,
            .node_allocatable_milli_cpu = w->env->alloc_milli_cpu,
            .node_allocatable_memory = w->env->alloc_memory,
            .node_allocatable_ephemeral = w->env->alloc_ephemeral,
            .seccomp_default = w->env->seccomp_default,
        };
        struct start_job *j = calloc(1, sizeof(*j));
        if (j == NULL || a == NULL) {
                pw_set_waiting(c, "CreateContainerError", "out of memory");
                free(j);
                goto out;
        }
        new_id(j->id, sizeof(j->id));
        char term_log[RT_PATH_MAX];
        bool have_term_log = create_termination_log(w, c, j->id, term_log, sizeof(term_log));
        /* The job owns everything the config points at: the arena, the
         * image (its layer dirs) and a copy of the sandbox. */
        j->c = c;
        j->sandbox = w->sandbox;
        struct ag_volume_source *vols = NULL;
        size_t n_vols = 0;
        char log_dir[4096];
        struct ag_container_inputs in = {
            .pod = w->pod,
            .container = c->spec,
            .image = img,
            .ctx = &ctx,
            .sandbox = &j->sandbox,
            .plan = plan_for(w, c),
            .id = j->id,
            .pod_cgroup = w->pod_cgroup,
            .root_dir = w->env->root_dir,
            .monitor_path = w->env->monitor_path,
            .pod_logs_dir = w->env->pod_logs_dir,
            .restart_count = c->obs.restart_count,
            .termination_log = have_term_log ? term_log : NULL,
        };
        int r = resolve_volumes(w, c, a, &vols, &n_vols, &err);
        in.passwd = files->passwd;
        in.group = files->group;
        in.passwd_error = files->passwd_rc < 0 ? files->passwd_err.msg : NULL;
        in.group_error = files->group_rc < 0 ? files->group_err.msg : NULL;
        in.volumes = vols;
        in.n_volumes = n_vols;
        if (r == 0)
                r = pw_env_objects(w, c, a, &ctx, &err);
        if (r == 0 && w->env->services != NULL) {
                /* the kubelet's getServiceEnvVarMap; enableServiceLinks defaults to true */
                const struct k8s_pod_spec *ps = &w->pod->spec;
                char **senv = NULL;
                size_t n_senv = 0;
                r = ag_services_env(w->env->services, a, pw_pod_ns(w->pod),
                                    !ps->has_enable_service_links || ps->enable_service_links,
                                    &senv, &n_senv, &err);
                ctx.service_env = (const char *const *)senv;
                ctx.n_service_env = n_senv;
                if (r < 0 && err.code == EAGAIN)
                        pw_arm_ctr_timer(c, 1); /* retried once the Services are listed */
        }
        struct ag_container_spec spec = {0};
        if (r < 0 || ag_container_config_build(a, &in, &j->cfg, &spec, &err) < 0 ||
            plan_subpaths(w, c, a, j, &spec, &err) < 0) {
                pw_set_waiting(c, "CreateContainerConfigError", "%s", err.msg);
                pw_emit_event(w, c, "Warning", "Failed", "Error: %s", err.msg);
                free(j);
                pw_sync_failed(w); /* the pod worker's backoff; a kick retries sooner */
                goto out;
        }
        if (ag_cri_log_dir(log_dir, sizeof(log_dir), w->env->pod_logs_dir, pw_pod_ns(w->pod),
                           w->pod->meta.name, w->pod->meta.uid, c->spec->name) < 0 ||
            cb_mkdir_p(log_dir, 0755, 0755, NULL) < 0) {
                pw_set_waiting(c, "CreateContainerError", "cannot create the log directory %s",
                               log_dir);
                free(j);
                pw_sync_failed(w);
                goto out;
        }
        /* the identity this instance runs as (the CRI status's user) */
        pw_set_user(c, j->cfg.uid, j->cfg.gid, j->cfg.groups, j->cfg.n_groups);
        for (size_t i = 0; i < spec.n_env_warnings; i++)
                pw_emit_event(w, NULL, "Warning", "InvalidEnvironmentVariableNames", "%s",
                              spec.env_warnings[i]);
        c->stop_signal = j->cfg.stop_signal;
        pw_emit_event(w, c, "Normal", "Created", "Created container: %s", c->spec->name);
        j->arena = a;
        j->img = img;
        a = NULL;
        img = NULL;
        /* The start's id is on disk before its monitor exists. */
        snprintf(c->pending_id, sizeof(c->pending_id), "%s", j->id);
        pw_save_state(w);
        struct ag_offload *q = w->env->starts ? w->env->starts : w->env->sandboxes;
        if (ag_offload_submit(q, start_work, start_done, j, &err) < 0) {
                j->rc = -1;
                j->err = err;
                start_done(j, false); /* reported as a failed start */
                goto out;
        }
        c->start_job = j;
        /* A retried start after a failed sync keeps that reason while it
         * runs off the loop (the kubelet's reasonCache, until the start
         * succeeds): a status without it would be sent, its watch event
         * kick a retry, and so on. */
        if (prev != NULL && (strcmp(prev, "CreateContainerConfigError") == 0 ||
                             strcmp(prev, "CreateContainerError") == 0)) {
                snprintf(c->wait_reason, sizeof(c->wait_reason), "%s", prev);
                pw_msg_set(&c->wait_message, prev_msg);
        }
out:
        cb_arena_free(a);
        rt_image_free(img);
}

static void start_done(void *data, bool cancelled)
{
        struct start_job *j = data;
        struct ctr *c = j->c;
        if (c == NULL || cancelled) {
                /* The worker is gone (agent shutdown): the next agent finds
                 * the container unowned and removes it, or it never ran. */
                if (c != NULL)
                        c->start_job = NULL;
                start_job_free(j);
                return;
        }
        struct ag_pod_worker *w = c->w;
        c->start_job = NULL;
        c->pending_id[0] = '\0';
        c->wait_reason[0] = '\0'; /* the last failure's, kept meanwhile */
        pw_msg_set(&c->wait_message, NULL);
        if (j->vanished) {
                /* adopt: the earlier agent's start never ran */
                start_job_free(j);
                ag_timer_arm(w->kick, 0);
                return;
        }
        if (j->rc < 0 && j->sandbox_lost) {
                pw_start_undo(w, c, j->id, j->err.msg);
                start_job_free(j);
                ag_timer_arm(w->kick, 0); /* advance() sees the lost sandbox */
                return;
        }
        c->undo.valid = false;
        snprintf(c->id, sizeof(c->id), "%s", j->id);
        snprintf(c->cid, sizeof(c->cid), "cubelet://%s", c->id);
        struct rt_container_state st = j->state;
        if (j->adopt)
                c->stop_signal = st.stop_signal; /* set by pw_start_container otherwise */
        struct cb_error err = j->err;
        if (j->rc < 0 && j->config_error) {
                c->id[0] = c->cid[0] = '\0';
                pw_set_waiting(c, "CreateContainerConfigError", "%s", err.msg);
                /* The detail names host paths: the log has it, the pod not. */
                log_warning("pod %s/%s: %s: %s", pw_pod_ns(w->pod), w->pod->meta.name, err.msg,
                            j->err_detail);
                pw_emit_event(w, c, "Warning", "Failed", "Error: %s", err.msg);
                start_job_free(j);
                /* the pod's next sync: the worker's backoff, or a kick sooner */
                pw_sync_failed(w);
                pw_compute_status(w); /* the refusal shows now, no retry before the backoff */
                return;
        }
        if (j->rc < 0) {
                /* containerd reports a failed start as terminated StartError / 128. */
                c->running = false;
                c->exited = true;
                c->obs.known = true;
                c->term = (struct st_container_state){
                    .kind = ST_STATE_TERMINATED, .exit_code = 128, .finished_at = pw_now_s()};
                c->exited_boot = cb_boot_now();
                snprintf(c->term_reason, sizeof(c->term_reason), "%s", ST_REASON_START_ERROR);
                pw_msg_set(&c->term_message, err.msg);
                snprintf(c->term_cid, sizeof(c->term_cid), "%s", c->cid);
                pw_emit_event(w, c, "Warning", "Failed", "Error: %s", err.msg);
                start_job_free(j);
                ag_timer_arm(w->kick, 0);
                return;
        }
        start_job_free(j);
        c->running = true;
        c->exited = false;
        c->obs.known = true;
        c->obs.state = (struct st_container_state){.kind = ST_STATE_RUNNING,
                                                   .started_at = st.started_at / 1000000000LL};
        pw_emit_event(w, c, "Normal", "Started", "Started container %s", c->spec->name);
        ag_pod_worker_mark(w, "containerStarted", c->spec->name);
        pw_watch_exit(w, c);
        if (w->terminating) {
                /* Deleted while it started: stop it as the others were. */
                pw_emit_event(w, c, "Normal", "Killing", "Stopping container %s", c->spec->name);
                pw_send_stop_signal(w, c);
        } else if (c->spec->post_start.kind != K8S_HANDLER_NONE) {
                /* Probes start once the postStart hook has succeeded. */
                c->in_poststart = true;
                pw_start_hook(w, c, &c->spec->post_start, HOOK_POSTSTART,
                              POSTSTART_HTTP_TIMEOUT_MS);
        } else {
                pw_start_probers(w, c);
        }
        ag_timer_arm(w->kick, 0);
}

/* ---- the sandbox, off the loop ----------------------------------------------------------
 *
 * Namespaces and the CNI ADD run on the agent's sandbox queue. The job owns
 * copies of everything it reads (an arena); w is cleared when the worker is
 * freed first (agent shutdown: the half-made sandbox is found, removed and
 * made again by the next agent). A terminating worker waits for the job
 * before it tears down, so pw_teardown never races a CNI ADD. */

static void sandbox_job_free(struct sandbox_job *j)
{
        if (j == NULL)
                return;
        k8s_pod_free(j->pod);
        cb_arena_free(j->arena);
        free(j);
}

/* The pod's resolv.conf (agent/k8s/dns.h) from the node's file, read here,
 * off the loop. */
static int pod_resolv_conf(struct sandbox_job *j)
{
        if (j->resolv_path == NULL)
                return 0; /* run-pod: the sandbox copies the node's file */
        _cleanup_free_ char *text = NULL;
        if (j->resolv_path[0] != '\0') {
                if (cb_read_file(j->resolv_path, 10u << 20, &text, NULL, &j->err) < 0)
                        return -1;
                j->dns.host_resolv = text;
        }
        if (k8s_pod_dns(j->arena, j->pod, &j->dns, &j->dns_out, &j->err) < 0)
                return -1;
        /* "": nothing to write; the sandbox copies the node's file (containerd) */
        j->cfg.resolv_conf = j->dns_out.resolv_conf[0] ? j->dns_out.resolv_conf : NULL;
        j->dns.host_resolv = NULL;
        return 0;
}

static void sandbox_work(void *data)
{
        struct sandbox_job *j = data;
        /* The pod cgroup before the namespaces: a shareProcessNamespace
         * pod's pause process goes into it. Made here, off the loop: its
         * mkdirs and limit writes are a dozen syscalls per hierarchy. */
        if (j->make_cgroup) {
                if (cg_create(j->cfg.cgroup_parent, &j->limits, &j->err) < 0) {
                        cb_error_prefix(&j->err, "cgroup %s", j->cfg.cgroup_parent);
                        j->rc = -1;
                        return;
                }
                j->cgroup_made = true;
                ag_crash_point("pod-cgroup-made");
        }
        if (pod_resolv_conf(j) < 0) {
                j->rc = -1;
                return;
        }
        /* A sandbox left by an earlier attempt is torn down first; when
         * that fails (its CNI DEL), the error says so, not only that the
         * sandbox exists. */
        if (rt_sandbox_remove(j->cfg.root_dir, j->cfg.id, &j->err) < 0) {
                cb_error_prefix(&j->err, "the earlier attempt's sandbox could not be removed "
                                         "(retried)");
                j->rc = -1;
                return;
        }
        j->rc = rt_sandbox_create(&j->cfg, &j->sandbox, &j->err);
}

static void sandbox_done(void *data, bool cancelled)
{
        struct sandbox_job *j = data;
        struct ag_pod_worker *w = j->w;
        if (w == NULL) {
                sandbox_job_free(j);
                return;
        }
        w->sandbox_job = NULL;
        if (j->cgroup_made)
                w->cgroup_created = true; /* also when the rest failed: the teardown removes it */
        if (cancelled) {
                sandbox_job_free(j);
                return;
        }
        for (size_t i = 0; i < j->dns_out.n_warnings && !w->terminating; i++)
                pw_emit_event(w, NULL, "Warning", j->dns_out.warnings[i].reason, "%s",
                              j->dns_out.warnings[i].message);
        if (j->rc < 0) {
                if (!w->terminating)
                        pw_emit_event(w, NULL, "Warning", "FailedCreatePodSandBox",
                                      "Failed to create pod sandbox: %s", j->err.msg);
                ag_timer_arm(w->sandbox_timer, SANDBOX_RETRY_MS);
        } else {
                /* Also when terminating: pw_teardown removes it. */
                w->sandbox = j->sandbox;
                w->sandbox_ready = true;
                /* the sandbox's own steps, stamped on the queue's thread:
                 * what of volumesReady -> sandboxReady is the namespaces and
                 * what the CNI ADD */
                ag_pod_worker_mark_at(w, "sandboxNamespaces", j->sandbox.namespaces_mono_us, 0);
                ag_pod_worker_mark_at(w, "sandboxNetwork", j->sandbox.network_mono_us, 0);
                ag_pod_worker_mark(w, "sandboxReady", NULL);
                w->n_pod_ips = 0;
                for (size_t i = 0; i < w->sandbox.n_pod_ips && i < 2; i++) {
                        snprintf(w->pod_ip_buf[i], sizeof(w->pod_ip_buf[i]), "%s",
                                 w->sandbox.pod_ips[i]);
                        w->pod_ips[w->n_pod_ips++] = w->pod_ip_buf[i];
                }
        }
        sandbox_job_free(j);
        ag_timer_arm(w->kick, 0);
}

/* While the sandbox is made (namespaces, CNI ADD), the image of the
 * containers that start first (the first init container, else the regular
 * ones) is looked up in the store and its /etc/passwd and /etc/group read,
 * on the starts queue, so the start after sandboxReady does not wait for
 * them (issue 17: prepare the container while CNI ADD runs). Only under a
 * pull policy that uses what the node has; a lookup that finds nothing is
 * dropped, and the pull keeps its place after the sandbox, as in the
 * kubelet. ensure_image still reads the pull secrets and emits the Pulled
 * event when the container starts. */
static void prefetch_files(struct ag_pod_worker *w)
{
        bool have_init = false;
        for (size_t i = 0; i < w->n && !have_init; i++)
                have_init = w->ctrs[i].init;
        for (size_t i = 0; i < w->n; i++) {
                struct ctr *c = &w->ctrs[i];
                if (c->init != have_init || c->id[0] != '\0' || c->pending_id[0] != '\0' ||
                    c->files != NULL || c->files_job != NULL || c->pulled != NULL ||
                    c->pull_job != NULL || c->start_job != NULL ||
                    ag_pull_policy(c->spec) == K8S_PULL_ALWAYS)
                        continue;
                struct cb_error err = {0};
                if (submit_lookup(w, c, c->spec->image ? c->spec->image : "", true, &err) < 0)
                        return; /* the start looks itself, and says why it cannot */
                if (have_init)
                        break; /* init containers run one at a time */
        }
}

/* 0: ready; 1: being made (the worker is kicked when it is); -1: failed
 * (retried by the sandbox timer). */
int pw_ensure_sandbox(struct ag_pod_worker *w)
{
        if (w->sandbox_ready)
                return 0;
        if (w->sandbox_job != NULL)
                return 1;
        /* The kubelet mounts the pod's volumes before it makes the sandbox;
         * the volumes kick the worker when they are set up. */
        if (!pw_volumes_ready(w))
                return 1;
        if (!w->volumes_marked) {
                /* how much of admitted -> sandboxReady is the volume sources
                 * (a projected token's TokenRequest, ConfigMaps, Secrets:
                 * round trips to the apiserver) */
                w->volumes_marked = true;
                ag_pod_worker_mark(w, "volumesReady", NULL);
        }
        if (ag_timer_armed(w->sandbox_timer))
                return -1;
        struct cb_error err = {0};
        const struct k8s_pod *p = w->pod;
        /* No sandbox for a pod on the pod network until the runtime's
         * network is ready; hostNetwork pods go on (ag_pods_kick wakes the
         * waiting ones). */
        if (!p->spec.host_network && w->env->network_ready != NULL && !*w->env->network_ready) {
                if (!w->net_waiting)
                        pw_emit_event(w, NULL, "Warning", "NetworkNotReady", "%s",
                                      AG_NETWORK_NOT_READY_EVENT);
                w->net_waiting = true;
                return -1;
        }
        w->net_waiting = false;
        struct sandbox_job *j = calloc(1, sizeof(*j));
        if (j == NULL)
                return -1;
        j->w = w;
        j->arena = cb_arena_new(0);
        if (j->arena == NULL) {
                free(j);
                return -1;
        }
        struct cb_arena *a = j->arena;
        size_t n_ports = 0;
        for (size_t i = 0; i < p->spec.n_containers; i++)
                for (size_t jj = 0; jj < p->spec.containers[i].n_ports; jj++)
                        n_ports += p->spec.containers[i].ports[jj].host_port > 0;
        struct rt_port_mapping *ports = cb_arena_calloc(a, n_ports + 1, sizeof(*ports));
        size_t k = 0;
        for (size_t i = 0; ports && i < p->spec.n_containers; i++)
                for (size_t jj = 0; jj < p->spec.containers[i].n_ports; jj++) {
                        const struct k8s_container_port *cp = &p->spec.containers[i].ports[jj];
                        if (cp->host_port <= 0)
                                continue;
                        ports[k].host_port = cp->host_port;
                        ports[k].container_port = cp->container_port;
                        snprintf(ports[k].protocol, sizeof(ports[k].protocol), "%s",
                                 cp->protocol == K8S_PROTO_UDP    ? "udp"
                                 : cp->protocol == K8S_PROTO_SCTP ? "sctp"
                                                                  : "tcp");
                        snprintf(ports[k].host_ip, sizeof(ports[k].host_ip), "%s",
                                 cp->host_ip ? cp->host_ip : "");
                        k++;
                }
        struct k8s_pod_names names;
        if (k8s_pod_names(a, p, w->env->cluster_domain, &names, &err) < 0) {
                sandbox_job_free(j);
                pw_emit_event(w, NULL, "Warning", "FailedCreatePodSandBox",
                              "Failed to create pod sandbox: %s", err.msg);
                ag_timer_arm(w->sandbox_timer, SANDBOX_RETRY_MS);
                return -1;
        }
        const struct k8s_pod_security_context *psc = &p->spec.security_context;
        struct rt_sysctl *sysctls = cb_arena_calloc(a, psc->n_sysctls + 1, sizeof(*sysctls));
        for (size_t i = 0; sysctls && i < psc->n_sysctls; i++) {
                const char *nm = psc->sysctls[i].name ? psc->sysctls[i].name : "";
                char *dots = cb_arena_strdup(a, nm);
                if (dots != NULL)
                        k8s_sysctl_to_dots(nm, dots, strlen(nm) + 1);
                sysctls[i] = (struct rt_sysctl){
                    .name = dots, .value = psc->sysctls[i].value ? psc->sysctls[i].value : ""};
        }
        j->cfg = (struct rt_sandbox_config){
            .root_dir = cb_arena_strdup(a, w->env->root_dir),
            .name = cb_arena_strdup(a, p->meta.name),
            .namespace_ = cb_arena_strdup(a, pw_pod_ns(p)),
            .uid = cb_arena_strdup(a, p->meta.uid),
            .hostname = names.hostname,
            .dns_domain = names.domain,
            .uts_hostname = names.uts,
            .extra_hosts = names.alias_lines,
            .sysctls = sysctls,
            .n_sysctls = psc->n_sysctls,
            .host_network = p->spec.host_network,
            .host_ipc = p->spec.host_ipc,
            .host_pid = p->spec.host_pid,
            .ports = ports,
            .n_ports = k,
            .cni = {.conf_dir = cb_arena_strdup(a, w->env->cni_conf_dir),
                    .bin_dirs = cb_arena_strdup(a, w->env->cni_bin_dir),
                    .cache_dir = cb_arena_printf(a, "%s/cni-cache", w->env->root_dir)},
            .cgroup_parent = cb_arena_strdup(a, w->pod_cgroup),
            .share_pid = p->spec.share_process_namespace,
            .pause_path = cb_arena_strdup(a, w->env->monitor_path),
        };
        snprintf(j->cfg.id, sizeof(j->cfg.id), "%s", p->meta.uid);
        /* the pod cgroup is made by the job, first, when no attempt made it */
        j->make_cgroup = !w->cgroup_created;
        j->limits = w->plan.limits;
        j->pod = k8s_pod_ref(p);
        j->resolv_path = w->env->resolv_conf ? cb_arena_strdup(a, w->env->resolv_conf) : NULL;
        /* The env outlives every job (jobs finish before the agent's env goes). */
        j->dns = (struct k8s_dns_node){
            .cluster_dns = w->env->cluster_dns,
            .n_cluster_dns = w->env->n_cluster_dns,
            .cluster_domain = w->env->cluster_domain,
            .node_ips = w->env->host_ips,
            .n_node_ips = w->env->n_host_ips,
        };
        if ((w->env->resolv_conf && !j->resolv_path) || ports == NULL || sysctls == NULL ||
            cb_arena_over_limit(a) || !j->cfg.root_dir || !j->cfg.name || !j->cfg.namespace_ ||
            !j->cfg.uid || !j->cfg.hostname || !j->cfg.cni.conf_dir || !j->cfg.cni.bin_dirs ||
            !j->cfg.cni.cache_dir || !j->cfg.cgroup_parent || !j->cfg.pause_path) {
                sandbox_job_free(j);
                return -1;
        }
        if (ag_offload_submit(w->env->sandboxes, sandbox_work, sandbox_done, j, &err) < 0) {
                sandbox_job_free(j);
                pw_emit_event(w, NULL, "Warning", "FailedCreatePodSandBox",
                              "Failed to create pod sandbox: %s", err.msg);
                ag_timer_arm(w->sandbox_timer, SANDBOX_RETRY_MS);
                return -1;
        }
        w->sandbox_job = j;
        prefetch_files(w);
        return 1;
}
