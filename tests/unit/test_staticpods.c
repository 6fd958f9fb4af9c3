/* SPDX-License-Identifier: Apache-2.0 */
/* Static pod manifests: the kubelet's applyDefaults (name, namespace, uid
 * hash, annotations, the NoExecute toleration, phase) and the errors. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/pods/mirror.h"
#include "agent/pods/staticpods.h"

#include "helpers.h"

static const char *web = "apiVersion: v1\n"
                         "kind: Pod\n"
                         "metadata:\n"
                         "  name: web\n"
                         "  labels: {app: web}\n"
                         "spec:\n"
                         "  containers:\n"
                         "  - name: c\n"
                         "    image: busybox\n";

static cJSON *load(const char *text, const char *path, const char *node, struct cb_error *err)
{
        cJSON *pod = NULL;
        if (ag_static_pod_from_text(text, strlen(text), path, node,
                                    "2026-01-02T03:04:05.000000006Z", &pod, err) < 0)
                return NULL;
        return pod;
}

static const char *str(const cJSON *o, const char *a, const char *b)
{
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, a);
        if (b != NULL)
                x = cJSON_GetObjectItemCaseSensitive(x, b);
        return cJSON_IsString(x) ? x->valuestring : NULL;
}

static const char *ann(const cJSON *pod, const char *key)
{
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(pod, "metadata"), "annotations");
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(a, key);
        return cJSON_IsString(v) ? v->valuestring : NULL;
}

START_TEST(test_fnv128a)
{
        /* Reference values of 128-bit FNV-1a. */
        char h[33];
        ag_fnv128a_hex("", 0, h);
        ck_assert_str_eq(h, "6c62272e07bb014262b821756295c58d");
        ag_fnv128a_hex("a", 1, h);
        ck_assert_str_eq(h, "d228cb696f1a8caf78912b704e4a8964");
}
END_TEST

START_TEST(test_defaults)
{
        struct cb_error err = {0};
        cJSON *pod = load(web, "/etc/m/web.yaml", "Node-1", &err);
        ck_assert_msg(pod != NULL, "%s", err.msg);
        ck_assert_str_eq(str(pod, "metadata", "name"), "web-node-1");
        ck_assert_str_eq(str(pod, "metadata", "namespace"), "default");
        ck_assert_str_eq(str(pod, "spec", "nodeName"), "Node-1");
        const char *uid = str(pod, "metadata", "uid");
        ck_assert_ptr_nonnull(uid);
        ck_assert_uint_eq(strlen(uid), 32);
        ck_assert_str_eq(ann(pod, "kubernetes.io/config.hash"), uid);
        ck_assert_str_eq(ann(pod, "kubernetes.io/config.source"), "file");
        ck_assert_str_eq(ann(pod, "kubernetes.io/config.seen"), "2026-01-02T03:04:05.000000006Z");
        ck_assert_str_eq(str(pod, "status", "phase"), "Pending");
        const cJSON *tols = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(pod, "spec"), "tolerations");
        ck_assert_int_eq(cJSON_GetArraySize(tols), 1);
        char *t = cJSON_PrintUnformatted(tols);
        ck_assert_str_eq(t, "[{\"operator\":\"Exists\",\"effect\":\"NoExecute\"}]");
        free(t);

        /* The same file, node and content: the same uid (agent restarts). */
        cJSON *again = load(web, "/etc/m/web.yaml", "Node-1", &err);
        ck_assert_str_eq(str(again, "metadata", "uid"), uid);
        /* Another path, another node, other content: another uid. */
        cJSON *other_path = load(web, "/etc/m/web2.yaml", "Node-1", &err);
        cJSON *other_node = load(web, "/etc/m/web.yaml", "node-2", &err);
        char edited[512];
        snprintf(edited, sizeof(edited), "%s    command: [sleep, \"1\"]\n", web);
        cJSON *other_text = load(edited, "/etc/m/web.yaml", "Node-1", &err);
        ck_assert_str_ne(str(other_path, "metadata", "uid"), uid);
        ck_assert_str_ne(str(other_node, "metadata", "uid"), uid);
        ck_assert_str_ne(str(other_text, "metadata", "uid"), uid);
        /* Formatting alone (YAML vs JSON of the same object) does not matter. */
        const char *json = "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"web\","
                           "\"labels\":{\"app\":\"web\"}},\"spec\":{\"containers\":[{\"name\":"
                           "\"c\",\"image\":\"busybox\"}]}}";
        cJSON *as_json = load(json, "/etc/m/web.yaml", "Node-1", &err);
        ck_assert_msg(as_json != NULL, "%s", err.msg);
        ck_assert_str_eq(str(as_json, "metadata", "uid"), uid);
        cJSON_Delete(pod);
        cJSON_Delete(again);
        cJSON_Delete(other_path);
        cJSON_Delete(other_node);
        cJSON_Delete(other_text);
        cJSON_Delete(as_json);
}
END_TEST

START_TEST(test_given_fields_kept)
{
        const char *text = "apiVersion: v1\n"
                           "kind: Pod\n"
                           "metadata:\n"
                           "  name: etcd\n"
                           "  namespace: kube-system\n"
                           "  uid: fixed-uid\n"
                           "  annotations: {a: b, kubernetes.io/config.source: api}\n"
                           "spec:\n"
                           "  nodeName: elsewhere\n"
                           "  tolerations:\n"
                           "  - {key: k, operator: Exists, effect: NoSchedule}\n"
                           "  - {operator: Exists, effect: NoExecute}\n"
                           "  containers: [{name: c, image: busybox}]\n"
                           "status: {phase: Running}\n";
        struct cb_error err = {0};
        cJSON *pod = load(text, "/m/etcd.json", "n1", &err);
        ck_assert_msg(pod != NULL, "%s", err.msg);
        ck_assert_str_eq(str(pod, "metadata", "uid"), "fixed-uid");
        ck_assert_str_eq(ann(pod, "kubernetes.io/config.hash"), "fixed-uid");
        ck_assert_str_eq(ann(pod, "kubernetes.io/config.source"), "file");
        ck_assert_str_eq(ann(pod, "a"), "b");
        ck_assert_str_eq(str(pod, "metadata", "namespace"), "kube-system");
        ck_assert_str_eq(str(pod, "metadata", "name"), "etcd-n1");
        ck_assert_str_eq(str(pod, "spec", "nodeName"), "n1");
        ck_assert_str_eq(str(pod, "status", "phase"), "Pending");
        /* The blanket toleration is there already: not added twice. */
        ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(
                             cJSON_GetObjectItemCaseSensitive(pod, "spec"), "tolerations")),
                         2);
        cJSON_Delete(pod);
}
END_TEST

START_TEST(test_errors)
{
        static const struct {
                const char *text, *want;
        } cases[] = {
            {"", "no document"},
            {"[1, 2]", "want one Pod object"},
            {"apiVersion: v1\nkind: PodList\nitems: []\n", "kind: want Pod"},
            {"kind: Pod\nmetadata: {name: a}\n", "apiVersion: want v1"},
            {"apiVersion: v1\nkind: Pod\nspec: {containers: [{name: c, image: i}]}\n",
             "metadata.name: Required value"},
            {"apiVersion: v1\nkind: Pod\nmetadata: {name: \"\"}\n", "metadata.name: Required"},
            {"apiVersion: v1\nkind: Pod\nmetadata: {name: Web_1}\n"
             "spec: {containers: [{name: c, image: i}]}\n",
             "metadata.name: Invalid value: \"Web_1-n1\""},
            {"apiVersion: v1\nkind: Pod\nmetadata: {name: web}\n"
             "spec: {containers: [{name: c, image: i, resources: {limits: {memory: 12XB}}}]}\n",
             "spec.containers[0].resources.limits.memory"},
            {"apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {containers: [\n", "line "},
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct cb_error err = {0};
                cJSON *pod = load(cases[i].text, "/m/x.yaml", "n1", &err);
                ck_assert_msg(pod == NULL, "case %zu accepted", i);
                ck_assert_msg(strstr(err.msg, cases[i].want) != NULL,
                              "case %zu: got \"%s\", want \"%s\"", i, err.msg, cases[i].want);
        }
}
END_TEST

START_TEST(test_mirror_object)
{
        struct cb_error err = {0};
        cJSON *pod = load(web, "/etc/m/web.yaml", "n1", &err);
        ck_assert_ptr_nonnull(pod);
        const char *uid = str(pod, "metadata", "uid");
        cJSON *m = ag_mirror_pod_json(pod, "n1", "node-uid-1");
        ck_assert_ptr_nonnull(m);
        /* The apiserver gives it its own uid and status. */
        ck_assert_ptr_null(str(m, "metadata", "uid"));
        ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(m, "status"));
        ck_assert_str_eq(str(m, "metadata", "name"), "web-n1");
        ck_assert_str_eq(ann(m, "kubernetes.io/config.mirror"), uid);
        ck_assert_str_eq(ann(m, "kubernetes.io/config.hash"), uid);
        ck_assert_str_eq(ann(m, "kubernetes.io/config.source"), "file");
        char *refs = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(m, "metadata"), "ownerReferences"));
        ck_assert_str_eq(refs, "[{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"name\":\"n1\","
                               "\"uid\":\"node-uid-1\",\"controller\":true}]");
        free(refs);
        /* The static pod itself is not changed. */
        ck_assert_ptr_null(ann(pod, "kubernetes.io/config.mirror"));
        ck_assert_str_eq(str(pod, "metadata", "uid"), uid);
        cJSON_Delete(m);
        /* Without the hash annotation it is not a static pod: no mirror. */
        cJSON_DeleteItemFromObjectCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(pod, "metadata"),
                                             "annotations"),
            "kubernetes.io/config.hash");
        ck_assert_ptr_null(ag_mirror_pod_json(pod, "n1", "u"));
        cJSON_Delete(pod);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("staticpods");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_fnv128a);
        tcase_add_test(tc, test_defaults);
        tcase_add_test(tc, test_given_fields_kept);
        tcase_add_test(tc, test_errors);
        tcase_add_test(tc, test_mirror_object);
        suite_add_tcase(s, tc);
        return th_run(s) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
