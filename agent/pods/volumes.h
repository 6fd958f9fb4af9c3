/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The pod's API-data volumes, as the kubelet's volume plugins make them
 * (pkg/volume/{configmap,secret,downwardapi,projected}): configMap,
 * secret, downwardAPI and projected volumes are written with the atomic
 * writer (agent/pods/atomic_writer.h) into
 * <root>/pods/<uid>/volumes/kubernetes.io~<plugin>/<name>; secret and
 * projected volumes live on their own tmpfs (their bytes never touch the
 * disk), as do emptyDir volumes with medium Memory (sizeLimit is the tmpfs
 * size; kept across container restarts). Containers bind them read-only.
 *
 * The pod waits (ContainerCreating) until every volume is set up; a
 * failure is the kubelet's FailedMount event
 * `MountVolume.SetUp failed for volume "v" : configmap "x" not found`
 * and a retry with backoff. Referenced ConfigMaps and Secrets come from
 * the watch-based manager (agent/client/objmanager.h): a change rewrites
 * the files at once; every AG_VOLUME_RESYNC_S (the kubelet's sync period)
 * and when a token is due, the volumes are made again (unchanged payloads
 * write nothing). All file system work runs off the loop.
 *
 * hostPath volumes get the hostPath plugin's SetUp here (its type check,
 * DirectoryOrCreate/FileOrCreate), off the loop: a mismatch is
 * `MountVolume.SetUp failed for volume "v" : hostPath type check failed:
 * /p is not a directory`, retried with the same backoff.
 *
 * persistentVolumeClaim volumes are set up here too: the claim, then its
 * PV, are read with a GET each (agent/k8s/pv.h has the kubelet's checks),
 * once per pod; a failure is syncPod's "Unable to attach or mount volumes:
 * ... failed to process volumes=[v]: error processing PVC ns/c: ..." event
 * and a retry. A hostPath PV gets the hostPath SetUp (below; each container
 * binds its path); a local PV's directory is bound at
 * <root>/pods/<uid>/volumes/kubernetes.io~local-volume/<pv>; other PV
 * sources are refused naming the pod, volume, PV and source.
 */

#include <stdbool.h>
#include <stddef.h>

#include "agent/client/objmanager.h"
#include "agent/k8s/k8s.h"
#include "agent/pods/atomic_writer.h"
#include "agent/pods/containerspec.h"
#include "agent/pods/podworker.h"
#include "lib/arena.h"
#include "lib/error.h"

#define AG_VOLUME_RESYNC_S 60

/* ---- the payload of one volume (pure) ---- */

/* Where a payload's API data comes from. get: 1 found, 0 absent, -1 not
 * known yet or an error (as ag_objmgr_get). token: 1 *ret set, 0
 * requested (not there yet), -1 failed (err: the apiserver's answer). */
struct ag_volume_lookup {
        int (*get)(void *ctx, enum ag_obj_kind kind, const char *name,
                   const struct k8s_keyed_data **ret, struct cb_error *err);
        int (*token)(void *ctx, const struct k8s_projection *p, const char **ret,
                     struct cb_error *err);
        void *ctx;
};

/* The files of a configMap, secret, downwardAPI or projected volume with
 * the kubelet's rules: all keys or the items (a missing key is an error
 * unless optional), item mode over defaultMode, an optional object that
 * does not exist gives no files, labels/annotations as `k="v"` lines.
 * 1: *ret ready; 0: waiting for data (not synced, a token requested);
 * -1: the kubelet's SetUp error (configmap "x" not found, configmap
 * references non-existent config key: k, failed to fetch token: ...). */
int ag_volume_payload(struct cb_arena *a, const struct k8s_pod *pod, const struct k8s_volume *v,
                      const struct ag_volume_lookup *lk, const struct ag_env_context *ctx,
                      struct ag_payload_file **ret, size_t *ret_n, struct cb_error *err);

/* The hostPath plugin's SetUp (v1.32 checkType) of path with its `type`
 * ("" or NULL: unset, no check): DirectoryOrCreate/FileOrCreate make a
 * missing path, every type must match. -1 with the plugin's text
 * ("hostPath type check failed: /p is not a directory", ...). Blocking:
 * call it off the loop. */
int ag_host_path_setup(const char *path, const char *type, struct cb_error *err);

/* Whether the volume is one this module sets up (API data, emptyDir
 * Memory, persistentVolumeClaim, hostPath). */
bool ag_volume_managed(const struct k8s_volume *v);
/* Its directory on the node (in arena). */
char *ag_volume_dir(struct cb_arena *a, const char *root_dir, const char *uid,
                    const struct k8s_volume *v);

/* The kubelet's FsUserFrom (pkg/volume/util): the runAsUser every init and
 * regular container runs as (its own, else the pod's), when they all
 * have one and it is the same; false otherwise. */
bool ag_pod_fs_user(const struct k8s_pod *pod, int64_t *ret);

/* The ConfigMaps and Secrets a pod refers to (volumes, env, envFrom of
 * every container, imagePullSecrets), in arena. */
size_t ag_pod_object_refs(struct cb_arena *a, const struct k8s_pod *pod, struct ag_obj_ref **ret);

/* ---- one pod's volumes, on the loop ---- */

struct ag_pod_volumes;

struct ag_pod_volumes_ops {
        void (*changed)(void *data); /* set up, failed or retried: the worker re-checks */
        void (*event)(void *data, const char *type, const char *reason, const char *message);
};

int ag_pod_volumes_new(const struct ag_node_env *env, const struct k8s_pod *pod,
                       const struct ag_env_context *ctx, const struct ag_pod_volumes_ops *ops,
                       void *data, struct ag_pod_volumes **ret, struct cb_error *err);
/* Every managed volume set up and every referenced object synced. */
bool ag_pod_volumes_ready(const struct ag_pod_volumes *pv);
/* A job is writing (teardown waits; changed() is called when it ends). */
bool ag_pod_volumes_busy(const struct ag_pod_volumes *pv);
/* Stops the watches' registrations, the token requests and the timers; a
 * running job finishes detached. */
void ag_pod_volumes_free(struct ag_pod_volumes *pv);
/* Syncs now (the wall clock was set: token refreshes are due from a new now). */
void ag_pod_volumes_resync(struct ag_pod_volumes *pv);

/* A persistentVolumeClaim volume once ready: its PV's source. local:
 * path is the pod's bind of the PV's directory; else a hostPath PV's
 * path and type, checked as an inline hostPath's. read_only: the claim
 * source's readOnly (the mounter's attribute: every mount read-only). */
struct ag_pvc_source {
        const char *pv_name;
        bool local;
        const char *path;
        const char *host_path_type;
        bool read_only;
};
int ag_pod_volumes_pvc_source(const struct ag_pod_volumes *pv, const struct k8s_volume *v,
                              struct cb_arena *a, struct ag_pvc_source *ret, struct cb_error *err);

/* Unmounts every mount under <root>/pods/<uid> (tmpfs volumes, subPath
 * binds), deepest first; before the directory is removed. */
int ag_pod_volumes_unmount_all(const char *root_dir, const char *uid, struct cb_error *err);
