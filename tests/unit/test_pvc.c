/* SPDX-License-Identifier: Apache-2.0 */
/* persistentVolumeClaim volumes: the pod's volume (the real StatefulSet
 * pod of the minikube fixture), the PVC and PV decoders and the kubelet's
 * checks on them (agent/k8s/pv.h), with its error texts. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/k8s/k8s.h"
#include "agent/k8s/pv.h"
#include "agent/k8s/validate.h"

#include "helpers.h"

#define FX(rel) CUBELET_FIXTURES "/" rel

static struct k8s_pvc *pvc_of(const char *text)
{
        cJSON *j = cJSON_Parse(text);
        ck_assert_ptr_nonnull(j);
        struct k8s_pvc *c = NULL;
        struct cb_error err = {0};
        ck_assert_msg(k8s_pvc_from_json(j, &c, &err) == 0, "%s", err.msg);
        cJSON_Delete(j);
        return c;
}

static struct k8s_pv *pv_of(const char *text)
{
        cJSON *j = cJSON_Parse(text);
        ck_assert_ptr_nonnull(j);
        struct k8s_pv *v = NULL;
        struct cb_error err = {0};
        ck_assert_msg(k8s_pv_from_json(j, &v, &err) == 0, "%s", err.msg);
        cJSON_Delete(j);
        return v;
}

START_TEST(test_statefulset_pod)
{
        cJSON *list = NULL;
        struct cb_error err = {0};
        ck_assert_msg(k8s_parse_file(FX("real-cluster/podlist-v1.35-minikube-all-namespaces.yaml"),
                                     &list, &err) == 0,
                      "%s", err.msg);
        const cJSON *items = cJSON_GetObjectItem(list, "items");
        int found = 0;
        for (const cJSON *it = items ? items->child : NULL; it; it = it->next) {
                const cJSON *md = cJSON_GetObjectItem(it, "metadata");
                const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(md, "name"));
                if (name == NULL || strncmp(name, "e2e-statefulset-", 16) != 0)
                        continue;
                struct k8s_pod *p = NULL;
                ck_assert_msg(k8s_pod_from_json(it, &p, &err) == 0, "%s", err.msg);
                ck_assert_msg(k8s_pod_validate_paths(p, &err) == 0, "%s", err.msg);
                const struct k8s_volume *v = &p->spec.volumes[0];
                ck_assert_str_eq(v->name, "storage");
                ck_assert_int_eq(v->kind, K8S_VOLUME_PVC);
                ck_assert_str_eq(v->claim_name, "e2e-pv-claim");
                ck_assert(!v->claim_read_only);
                ck_assert_ptr_null(p->spec.unsupported);
                k8s_pod_free(p);
                found++;
        }
        ck_assert_int_eq(found, 2);
        cJSON_Delete(list);
}
END_TEST

START_TEST(test_claim_name_required)
{
        const char *text = "{\"metadata\":{\"name\":\"p\",\"namespace\":\"d\",\"uid\":\"u\"},"
                           "\"spec\":{\"containers\":[{\"name\":\"c\"}],\"volumes\":[{\"name\":"
                           "\"v\",\"persistentVolumeClaim\":{\"readOnly\":true}}]}}";
        cJSON *j = cJSON_Parse(text);
        struct k8s_pod *p = NULL;
        struct cb_error err = {0};
        ck_assert_msg(k8s_pod_from_json(j, &p, &err) == 0, "%s", err.msg);
        ck_assert(p->spec.volumes[0].claim_read_only);
        ck_assert_int_eq(k8s_pod_validate_paths(p, &err), -1);
        ck_assert_str_eq(err.msg,
                         "spec.volumes[0].persistentVolumeClaim.claimName: Required value");
        k8s_pod_free(p);
        cJSON_Delete(j);
        /* a wrong type names the field */
        j = cJSON_Parse("{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\"}"
                        "],\"volumes\":[{\"name\":\"v\",\"persistentVolumeClaim\":{\"claimName\":"
                        "3}}]}}");
        ck_assert_int_eq(k8s_pod_from_json(j, &p, &err), -1);
        ck_assert_msg(strstr(err.msg, "spec.volumes[0].persistentVolumeClaim.claimName") != NULL,
                      "%s", err.msg);
        cJSON_Delete(j);
}
END_TEST

#define PVC_BOUND                                                                                  \
        "{\"metadata\":{\"name\":\"e2e-pv-claim\",\"namespace\":\"scraper\",\"uid\":\"c-1\"},"     \
        "\"spec\":{\"accessModes\":[\"ReadWriteOnce\"],\"volumeName\":\"pv-1\",\"volumeMode\":"    \
        "\"Filesystem\"},\"status\":{\"phase\":\"Bound\"}}"

START_TEST(test_pvc_checks)
{
        static const struct {
                const char *text, *want; /* NULL: usable */
        } cases[] = {
            {PVC_BOUND, NULL},
            {"{\"metadata\":{\"name\":\"c\",\"uid\":\"c-1\"},\"spec\":{},\"status\":{\"phase\":"
             "\"Pending\"}}",
             "PVC is not bound"},
            {"{\"metadata\":{\"name\":\"c\",\"uid\":\"c-1\"},\"spec\":{\"volumeName\":\"pv\"}}",
             "PVC is not bound"},
            {"{\"metadata\":{\"name\":\"c\",\"uid\":\"c-1\"},\"spec\":{},\"status\":{\"phase\":"
             "\"Bound\"}}",
             "PVC has empty pvc.Spec.VolumeName"},
            {"{\"metadata\":{\"name\":\"c\",\"uid\":\"c-1\",\"deletionTimestamp\":\"2026-01-01T00:"
             "00:00Z\",\"finalizers\":[\"kubernetes.io/pvc-protection\"]},\"spec\":{\"volumeName\":"
             "\"pv\"},\"status\":{\"phase\":\"Bound\"}}",
             "PVC is being deleted"},
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct k8s_pvc *c = pvc_of(cases[i].text);
                struct cb_error err = {0};
                int r = k8s_pvc_check(c, &err);
                if (cases[i].want == NULL)
                        ck_assert_msg(r == 0, "%zu: %s", i, err.msg);
                else
                        ck_assert_msg(r == -1 && strcmp(err.msg, cases[i].want) == 0, "%zu: %s", i,
                                      err.msg);
                k8s_pvc_free(c);
        }
        struct k8s_pvc *c = pvc_of(PVC_BOUND);
        ck_assert_str_eq(c->volume_name, "pv-1");
        ck_assert_uint_eq(c->n_access_modes, 1);
        ck_assert_str_eq(c->access_modes[0], "ReadWriteOnce");
        k8s_pvc_free(c);
        /* not an object, a wrong type: errors naming the field */
        cJSON *j = cJSON_Parse("[1]");
        struct k8s_pvc *bad = NULL;
        struct cb_error err = {0};
        ck_assert_int_eq(k8s_pvc_from_json(j, &bad, &err), -1);
        cJSON_Delete(j);
        j = cJSON_Parse("{\"spec\":{\"volumeName\":[]}}");
        ck_assert_int_eq(k8s_pvc_from_json(j, &bad, &err), -1);
        ck_assert_msg(strstr(err.msg, "spec.volumeName") != NULL, "%s", err.msg);
        cJSON_Delete(j);
}
END_TEST

START_TEST(test_pv_sources)
{
        struct k8s_pv *v = pv_of(
            "{\"metadata\":{\"name\":\"pv-1\"},\"spec\":{\"capacity\":{\"storage\":\"5M\"},"
            "\"accessModes\":[\"ReadWriteOnce\"],\"hostPath\":{\"path\":\"/data/pv0001/\",\"type\":"
            "\"DirectoryOrCreate\"},\"claimRef\":{\"kind\":\"PersistentVolumeClaim\",\"namespace\":"
            "\"scraper\",\"name\":\"e2e-pv-claim\",\"uid\":\"c-1\"},"
            "\"persistentVolumeReclaimPolicy\":"
            "\"Retain\",\"volumeMode\":\"Filesystem\"},\"status\":{\"phase\":\"Bound\"}}");
        ck_assert_int_eq(v->source, K8S_PV_HOST_PATH);
        ck_assert_str_eq(k8s_pv_source_name(v), "hostPath");
        ck_assert_str_eq(v->path, "/data/pv0001/");
        ck_assert_str_eq(v->host_path_type, "DirectoryOrCreate");
        ck_assert(v->has_claim_ref);
        ck_assert_str_eq(v->claim_namespace, "scraper");
        ck_assert_str_eq(v->claim_name, "e2e-pv-claim");
        ck_assert_str_eq(v->claim_uid, "c-1");
        ck_assert(!v->has_node_affinity);
        struct k8s_pvc *c = pvc_of(PVC_BOUND);
        struct cb_error err = {0};
        ck_assert_msg(k8s_pv_check(v, c, "storage", true, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(k8s_pv_node_affinity_check(v, NULL, &err), 0);
        k8s_pv_free(v);

        static const struct {
                const char *source, *name;
        } others[] = {
            {"\"nfs\":{\"server\":\"192.0.2.1\",\"path\":\"/x\"}", "nfs"},
            {"\"csi\":{\"driver\":\"ebs.csi.aws.com\",\"volumeHandle\":\"vol-1\"}", "csi"},
            {"\"iscsi\":{\"targetPortal\":\"192.0.2.1\",\"iqn\":\"i\",\"lun\":0}", "iscsi"},
        };
        for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
                char text[512];
                snprintf(text, sizeof(text),
                         "{\"metadata\":{\"name\":\"o\"},\"spec\":{\"capacity\":{\"storage\":"
                         "\"1Gi\"},\"accessModes\":[\"ReadWriteMany\"],\"mountOptions\":[\"hard\"],"
                         "%s}}",
                         others[i].source);
                v = pv_of(text);
                ck_assert_int_eq(v->source, K8S_PV_OTHER);
                ck_assert_str_eq(k8s_pv_source_name(v), others[i].name);
                ck_assert_uint_eq(v->n_mount_options, 1);
                k8s_pv_free(v);
        }
        k8s_pvc_free(c);
}
END_TEST

START_TEST(test_pv_checks)
{
        struct k8s_pvc *c = pvc_of(PVC_BOUND);
        struct cb_error err = {0};
        struct k8s_pv *v = pv_of("{\"metadata\":{\"name\":\"pv-1\"},\"spec\":{\"hostPath\":{"
                                 "\"path\":\"/x\"}}}");
        ck_assert_int_eq(k8s_pv_check(v, c, "storage", true, &err), -1);
        ck_assert_str_eq(err.msg, "found PV object pv-1 but it has a nil pv.Spec.ClaimRef "
                                  "indicating it is not yet bound to the claim");
        k8s_pv_free(v);
        v = pv_of("{\"metadata\":{\"name\":\"pv-1\"},\"spec\":{\"hostPath\":{\"path\":\"/x\"},"
                  "\"claimRef\":{\"namespace\":\"scraper\",\"name\":\"e2e-pv-claim\",\"uid\":"
                  "\"other\"}}}");
        ck_assert_int_eq(k8s_pv_check(v, c, "storage", true, &err), -1);
        ck_assert_str_eq(err.msg, "found PV object pv-1 but its pv.Spec.ClaimRef.UID other does "
                                  "not point to claim.UID c-1");
        k8s_pv_free(v);
        v = pv_of("{\"metadata\":{\"name\":\"pv-1\"},\"spec\":{\"hostPath\":{\"path\":\"/x\"},"
                  "\"volumeMode\":\"Block\",\"claimRef\":{\"uid\":\"c-1\"}}}");
        ck_assert_int_eq(k8s_pv_check(v, c, "storage", true, &err), -1);
        ck_assert_str_eq(err.msg, "volume storage has volumeMode Block, but is specified in "
                                  "volumeMounts");
        ck_assert_int_eq(k8s_pv_check(v, c, "storage", false, &err), -1);
        ck_assert_str_eq(err.msg, "volume storage: PV pv-1 has volumeMode Block: raw block "
                                  "volumes are not supported by cubelet");
        k8s_pv_free(v);
        k8s_pvc_free(c);
}
END_TEST

START_TEST(test_local_node_affinity)
{
        struct k8s_pv *v = pv_of(
            "{\"metadata\":{\"name\":\"local-pv\"},\"spec\":{\"capacity\":{\"storage\":\"1Gi\"},"
            "\"accessModes\":[\"ReadWriteOnce\"],\"local\":{\"path\":\"/mnt/disks/ssd1\"},"
            "\"nodeAffinity\":{\"required\":{\"nodeSelectorTerms\":[{\"matchExpressions\":[{"
            "\"key\":\"kubernetes.io/hostname\",\"operator\":\"In\",\"values\":[\"n1\"]}]},{"
            "\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"n3\"]}]}"
            "]}}}}");
        ck_assert_int_eq(v->source, K8S_PV_LOCAL);
        ck_assert_str_eq(v->path, "/mnt/disks/ssd1");
        ck_assert(v->has_node_affinity);
        ck_assert_uint_eq(v->n_node_terms, 2);
        static const struct {
                const char *node;
                int want;
        } nodes[] = {
            {"{\"metadata\":{\"name\":\"n1\",\"labels\":{\"kubernetes.io/hostname\":\"n1\"}}}", 0},
            {"{\"metadata\":{\"name\":\"n2\",\"labels\":{\"kubernetes.io/hostname\":\"n2\"}}}", -1},
            {"{\"metadata\":{\"name\":\"n3\"}}", 0}, /* matchFields metadata.name */
        };
        for (size_t i = 0; i < sizeof(nodes) / sizeof(nodes[0]); i++) {
                cJSON *j = cJSON_Parse(nodes[i].node);
                struct k8s_node *n = NULL;
                struct cb_error err = {0};
                ck_assert_msg(k8s_node_from_json(j, &n, &err) == 0, "%s", err.msg);
                ck_assert_int_eq(k8s_pv_node_affinity_check(v, n, &err), nodes[i].want);
                if (nodes[i].want < 0)
                        ck_assert_str_eq(err.msg, "no matching NodeSelectorTerms");
                k8s_node_free(n);
                cJSON_Delete(j);
        }
        struct cb_error err = {0};
        ck_assert_int_eq(k8s_pv_node_affinity_check(v, NULL, &err), -1); /* node not known */
        k8s_pv_free(v);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("pvc");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_statefulset_pod);
        tcase_add_test(tc, test_claim_name_required);
        tcase_add_test(tc, test_pvc_checks);
        tcase_add_test(tc, test_pv_sources);
        tcase_add_test(tc, test_pv_checks);
        tcase_add_test(tc, test_local_node_affinity);
        suite_add_tcase(s, tc);
        return th_run(s) ? 1 : 0;
}
