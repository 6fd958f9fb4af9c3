/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * PersistentVolumeClaims and PersistentVolumes as the kubelet reads them
 * for a pod's persistentVolumeClaim volume (pkg/kubelet/volumemanager/
 * populator: getPVCExtractPV, getPVSpec, createVolumeSpec), and the checks
 * it makes on them, pure. The agent GETs both (agent/pods/volumes.c); the
 * PV's source is then mounted: hostPath (the inline hostPath rules) and
 * local (a bind of its directory); any other source is refused by name.
 */

#include <stdbool.h>
#include <stddef.h>

#include "agent/k8s/k8s.h"
#include "lib/arena.h"
#include "lib/error.h"

struct k8s_pvc {
        struct cb_arena *arena;
        struct k8s_object_meta meta;
        char *volume_name; /* spec.volumeName */
        char *volume_mode; /* spec.volumeMode (NULL: Filesystem) */
        char **access_modes;
        size_t n_access_modes;
        char *phase; /* status.phase */
};

enum k8s_pv_source {
        K8S_PV_OTHER = 0, /* other_source names it ("csi", "nfs", ...), or none */
        K8S_PV_HOST_PATH,
        K8S_PV_LOCAL,
};

struct k8s_pv {
        struct cb_arena *arena;
        struct k8s_object_meta meta;
        enum k8s_pv_source source;
        char *other_source;
        char *path;           /* hostPath.path, local.path */
        char *host_path_type; /* hostPath.type */
        char *fs_type;        /* local.fsType */
        bool has_claim_ref;
        char *claim_namespace, *claim_name, *claim_uid;
        char *volume_mode; /* NULL: Filesystem */
        char **mount_options;
        size_t n_mount_options;
        char **access_modes;
        size_t n_access_modes;
        bool has_node_affinity; /* nodeAffinity.required given */
        struct k8s_node_selector_term *node_terms;
        size_t n_node_terms;
        char *phase;
};

int k8s_pvc_from_json(const cJSON *json, struct k8s_pvc **ret, struct cb_error *err);
void k8s_pvc_free(struct k8s_pvc *c);
int k8s_pv_from_json(const cJSON *json, struct k8s_pv **ret, struct cb_error *err);
void k8s_pv_free(struct k8s_pv *v);

/* getPVCExtractPV: "PVC is being deleted", "PVC is not bound", "PVC has
 * empty pvc.Spec.VolumeName" (the caller prefixes "error processing PVC
 * ns/name: "). 0 when the claim can be used. */
int k8s_pvc_check(const struct k8s_pvc *c, struct cb_error *err);

/* getPVSpec and createVolumeSpec on the PV the claim names: its claimRef
 * is this claim (by uid), and a volume in volumeMounts (mounted) has
 * volumeMode Filesystem (the kubelet's texts). A Block PV no container
 * mounts would be a raw device (volumeDevices): refused, cubelet has none.
 * volume: the pod's volume name. */
int k8s_pv_check(const struct k8s_pv *pv, const struct k8s_pvc *c, const char *volume, bool mounted,
                 struct cb_error *err);

/* storagehelpers.CheckNodeAffinity: a PV with nodeAffinity.required must
 * match the node ("no matching NodeSelectorTerms"); none: any node. */
int k8s_pv_node_affinity_check(const struct k8s_pv *pv, const struct k8s_node *node,
                               struct cb_error *err);

/* The name of the PV's source ("hostPath", "local", "csi", ...). */
const char *k8s_pv_source_name(const struct k8s_pv *pv);
