/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/k8s/pv.h"

#include <string.h>

#include "agent/k8s/decode_internal.h"
#include "agent/k8s/selector.h"

static int new_arena(struct dec *d, const cJSON *json, const char *what, size_t size, void **obj)
{
        if (dec_not_object(d, json, what) < 0)
                return -1;
        if ((d->a = cb_arena_new(DECODE_ARENA_LIMIT)) == NULL ||
            (*obj = cb_arena_calloc(d->a, 1, size)) == NULL) {
                cb_arena_free(d->a);
                d->a = NULL;
                return cb_error_set(d->err, 0, "out of memory");
        }
        return 0;
}

int k8s_pvc_from_json(const cJSON *json, struct k8s_pvc **ret, struct cb_error *err)
{
        struct dec d = {.err = err};
        struct k8s_pvc *c = NULL;
        const cJSON *spec, *status;
        *ret = NULL;
        if (new_arena(&d, json, "a PersistentVolumeClaim", sizeof(*c), (void **)&c) < 0)
                return -1;
        c->arena = d.a;
        if (dec_meta(&d, json, &c->meta) < 0 || dec_object(&d, json, "spec", &spec) < 0 ||
            dec_object(&d, json, "status", &status) < 0)
                goto fail;
        if (spec != NULL) {
                size_t old = dec_path_field(&d, "spec");
                if (dec_string(&d, spec, "volumeName", &c->volume_name) < 0 ||
                    dec_string(&d, spec, "volumeMode", &c->volume_mode) < 0 ||
                    dec_strings(&d, spec, "accessModes", &c->access_modes, &c->n_access_modes) < 0)
                        goto fail;
                dec_path_pop(&d, old);
        }
        if (status != NULL) {
                size_t old = dec_path_field(&d, "status");
                if (dec_string(&d, status, "phase", &c->phase) < 0)
                        goto fail;
                dec_path_pop(&d, old);
        }
        *ret = c;
        return 0;
fail:
        cb_arena_free(d.a);
        return -1;
}

void k8s_pvc_free(struct k8s_pvc *c)
{
        if (c != NULL)
                cb_arena_free(c->arena);
}

/* The PersistentVolumeSpec fields that are not a volume source. */
static bool is_source_key(const char *k)
{
        static const char *const not_sources[] = {
            "capacity",
            "accessModes",
            "claimRef",
            "mountOptions",
            "volumeMode",
            "nodeAffinity",
            "storageClassName",
            "persistentVolumeReclaimPolicy",
            "volumeAttributesClassName",
        };
        for (size_t i = 0; i < sizeof(not_sources) / sizeof(not_sources[0]); i++)
                if (strcmp(k, not_sources[i]) == 0)
                        return false;
        return true;
}

static int pv_spec(struct dec *d, const cJSON *spec, struct k8s_pv *v)
{
        const cJSON *src, *ref, *na;
        if (dec_string(d, spec, "volumeMode", &v->volume_mode) < 0 ||
            dec_strings(d, spec, "mountOptions", &v->mount_options, &v->n_mount_options) < 0 ||
            dec_strings(d, spec, "accessModes", &v->access_modes, &v->n_access_modes) < 0 ||
            dec_object(d, spec, "claimRef", &ref) < 0 ||
            dec_object(d, spec, "nodeAffinity", &na) < 0)
                return -1;
        if (ref != NULL) {
                size_t old = dec_path_field(d, "claimRef");
                v->has_claim_ref = true;
                if (dec_string(d, ref, "namespace", &v->claim_namespace) < 0 ||
                    dec_string(d, ref, "name", &v->claim_name) < 0 ||
                    dec_string(d, ref, "uid", &v->claim_uid) < 0)
                        return -1;
                dec_path_pop(d, old);
        }
        if (na != NULL) {
                size_t old = dec_path_field(d, "nodeAffinity");
                const cJSON *req;
                if (dec_object(d, na, "required", &req) < 0)
                        return -1;
                if (req != NULL) {
                        size_t o2 = dec_path_field(d, "required");
                        v->has_node_affinity = true;
                        if (dec_items(d, req, "nodeSelectorTerms", K8S_MAX_ARRAY_ITEMS,
                                      sizeof(*v->node_terms), true, dec_selector_term_item,
                                      (void **)&v->node_terms, &v->n_node_terms) < 0)
                                return -1;
                        dec_path_pop(d, o2);
                }
                dec_path_pop(d, old);
        }
        if (dec_object(d, spec, "hostPath", &src) < 0)
                return -1;
        if (src != NULL) {
                size_t old = dec_path_field(d, "hostPath");
                v->source = K8S_PV_HOST_PATH;
                if (dec_string(d, src, "path", &v->path) < 0 ||
                    dec_string(d, src, "type", &v->host_path_type) < 0)
                        return -1;
                dec_path_pop(d, old);
                return 0;
        }
        if (dec_object(d, spec, "local", &src) < 0)
                return -1;
        if (src != NULL) {
                size_t old = dec_path_field(d, "local");
                v->source = K8S_PV_LOCAL;
                if (dec_string(d, src, "path", &v->path) < 0 ||
                    dec_string(d, src, "fsType", &v->fs_type) < 0)
                        return -1;
                dec_path_pop(d, old);
                return 0;
        }
        for (const cJSON *m = spec->child; m != NULL; m = m->next)
                if (m->string != NULL && cJSON_IsObject(m) && is_source_key(m->string)) {
                        if ((v->other_source = cb_arena_strdup(d->a, m->string)) == NULL)
                                return dec_oom(d);
                        break;
                }
        return 0;
}

int k8s_pv_from_json(const cJSON *json, struct k8s_pv **ret, struct cb_error *err)
{
        struct dec d = {.err = err};
        struct k8s_pv *v = NULL;
        const cJSON *spec, *status;
        *ret = NULL;
        if (new_arena(&d, json, "a PersistentVolume", sizeof(*v), (void **)&v) < 0)
                return -1;
        v->arena = d.a;
        if (dec_meta(&d, json, &v->meta) < 0 || dec_object(&d, json, "spec", &spec) < 0 ||
            dec_object(&d, json, "status", &status) < 0)
                goto fail;
        if (spec != NULL) {
                size_t old = dec_path_field(&d, "spec");
                if (pv_spec(&d, spec, v) < 0)
                        goto fail;
                dec_path_pop(&d, old);
        }
        if (status != NULL) {
                size_t old = dec_path_field(&d, "status");
                if (dec_string(&d, status, "phase", &v->phase) < 0)
                        goto fail;
                dec_path_pop(&d, old);
        }
        *ret = v;
        return 0;
fail:
        cb_arena_free(d.a);
        return -1;
}

void k8s_pv_free(struct k8s_pv *v)
{
        if (v != NULL)
                cb_arena_free(v->arena);
}

int k8s_pvc_check(const struct k8s_pvc *c, struct cb_error *err)
{
        if (c->meta.deletion_timestamp != NULL && c->meta.deletion_timestamp[0])
                return cb_error_set(err, 0, "PVC is being deleted");
        if (c->phase == NULL || strcmp(c->phase, "Bound") != 0)
                return cb_error_set(err, 0, "PVC is not bound");
        if (c->volume_name == NULL || !c->volume_name[0])
                return cb_error_set(err, 0, "PVC has empty pvc.Spec.VolumeName");
        return 0;
}

int k8s_pv_check(const struct k8s_pv *pv, const struct k8s_pvc *c, const char *volume, bool mounted,
                 struct cb_error *err)
{
        const char *name = pv->meta.name ? pv->meta.name : "";
        if (!pv->has_claim_ref)
                return cb_error_set(err, 0,
                                    "found PV object %s but it has a nil pv.Spec.ClaimRef "
                                    "indicating it is not yet bound to the claim",
                                    name);
        const char *want = c->meta.uid ? c->meta.uid : "";
        const char *got = pv->claim_uid ? pv->claim_uid : "";
        if (strcmp(want, got) != 0)
                return cb_error_set(err, 0,
                                    "found PV object %s but its pv.Spec.ClaimRef.UID %s does not "
                                    "point to claim.UID %s",
                                    name, got, want);
        const char *mode = pv->volume_mode && pv->volume_mode[0] ? pv->volume_mode : "Filesystem";
        if (strcmp(mode, "Filesystem") != 0 && !mounted)
                return cb_error_set(err, 0,
                                    "volume %s: PV %s has volumeMode %s: raw block volumes are "
                                    "not supported by cubelet",
                                    volume, name, mode);
        if (strcmp(mode, "Filesystem") != 0)
                return cb_error_set(err, 0,
                                    "volume %s has volumeMode %s, but is specified in "
                                    "volumeMounts",
                                    volume, mode);
        return 0;
}

int k8s_pv_node_affinity_check(const struct k8s_pv *pv, const struct k8s_node *node,
                               struct cb_error *err)
{
        if (!pv->has_node_affinity)
                return 0;
        if (node == NULL || !k8s_node_selector_terms_match(pv->node_terms, pv->n_node_terms, node))
                return cb_error_set(err, 0, "no matching NodeSelectorTerms");
        return 0;
}

const char *k8s_pv_source_name(const struct k8s_pv *pv)
{
        switch (pv->source) {
        case K8S_PV_HOST_PATH:
                return "hostPath";
        case K8S_PV_LOCAL:
                return "local";
        default:
                return pv->other_source ? pv->other_source : "(no source)";
        }
}
