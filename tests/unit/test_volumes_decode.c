/* SPDX-License-Identifier: Apache-2.0 */
/* The decoders of configMap/secret/downwardAPI/projected volumes, env
 * key references, envFrom, subPathExpr, ConfigMap and Secret objects (real
 * pods from real clusters), and the watch-based object manager with fake
 * watches. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/client/objmanager.h"
#include "agent/k8s/k8s.h"
#include "lib/cleanup.h"

#include "helpers.h"

#define FX(rel) CUBELET_FIXTURES "/" rel

static cJSON *load(const char *path)
{
        cJSON *j = NULL;
        struct cb_error err = {0};
        ck_assert_msg(k8s_parse_file(path, &j, &err) == 0, "%s: %s", path, err.msg);
        return j;
}

static struct k8s_pod *pod_of(const cJSON *j)
{
        struct k8s_pod *p = NULL;
        struct cb_error err = {0};
        ck_assert_msg(k8s_pod_from_json(j, &p, &err) == 0, "%s", err.msg);
        return p;
}

static const struct k8s_volume *vol(const struct k8s_pod *p, const char *name)
{
        for (size_t i = 0; i < p->spec.n_volumes; i++)
                if (strcmp(p->spec.volumes[i].name, name) == 0)
                        return &p->spec.volumes[i];
        ck_abort_msg("no volume %s", name);
        return NULL;
}

/* The kube-api-access volume exactly as ServiceAccount admission makes it. */
static void check_kube_api_access(const struct k8s_volume *v)
{
        ck_assert_int_eq(v->kind, K8S_VOLUME_PROJECTED);
        ck_assert_int_eq(v->default_mode, 0644);
        ck_assert_uint_ge(v->n_projections, 3);
        const struct k8s_projection *t = &v->projections[0], *c = &v->projections[1],
                                    *d = &v->projections[2];
        ck_assert_int_eq(t->kind, K8S_PROJ_SERVICE_ACCOUNT_TOKEN);
        ck_assert_int_eq(t->expiration_seconds, 3607);
        ck_assert_str_eq(t->path, "token");
        ck_assert_ptr_null(t->audience);
        ck_assert_int_eq(c->kind, K8S_PROJ_CONFIG_MAP);
        ck_assert_str_eq(c->keyed.name, "kube-root-ca.crt");
        ck_assert_uint_eq(c->keyed.n_items, 1);
        ck_assert_str_eq(c->keyed.items[0].key, "ca.crt");
        ck_assert_str_eq(c->keyed.items[0].path, "ca.crt");
        ck_assert_int_eq(d->kind, K8S_PROJ_DOWNWARD_API);
        ck_assert_uint_eq(d->n_dw_items, 1);
        ck_assert_str_eq(d->dw_items[0].path, "namespace");
        ck_assert_str_eq(d->dw_items[0].field_path, "metadata.namespace");
}

START_TEST(test_k3s_pods)
{
        _cleanup_cjson_ cJSON *list = load(FX("real-cluster/podlist-k3s-v1.31-kube-system.json"));
        const cJSON *items = cJSON_GetObjectItem(list, "items");
        struct k8s_pod *coredns = pod_of(cJSON_GetArrayItem(items, 0));
        const struct k8s_volume *cfg = vol(coredns, "config-volume");
        ck_assert_int_eq(cfg->kind, K8S_VOLUME_CONFIG_MAP);
        ck_assert_str_eq(cfg->keyed.name, "coredns");
        ck_assert_int_eq(cfg->default_mode, 420);
        ck_assert_uint_eq(cfg->keyed.n_items, 2);
        ck_assert_str_eq(cfg->keyed.items[0].key, "Corefile");
        ck_assert_str_eq(cfg->keyed.items[0].path, "Corefile");
        ck_assert(!cfg->keyed.optional);
        const struct k8s_volume *custom = vol(coredns, "custom-config-volume");
        ck_assert_int_eq(custom->kind, K8S_VOLUME_CONFIG_MAP);
        ck_assert(custom->keyed.optional);
        ck_assert_str_eq(coredns->spec.service_account_name, "coredns");
        for (size_t i = 0; i < coredns->spec.n_volumes; i++)
                if (strncmp(coredns->spec.volumes[i].name, "kube-api-access-", 16) == 0)
                        check_kube_api_access(&coredns->spec.volumes[i]);
        k8s_pod_free(coredns);

        struct k8s_pod *helm = pod_of(cJSON_GetArrayItem(items, 1));
        const struct k8s_volume *values = vol(helm, "values");
        ck_assert_int_eq(values->kind, K8S_VOLUME_SECRET);
        ck_assert_str_eq(values->keyed.name, "chart-values-traefik");
        const struct k8s_volume *content = vol(helm, "content");
        ck_assert_int_eq(content->kind, K8S_VOLUME_CONFIG_MAP);
        k8s_pod_free(helm);
}
END_TEST

START_TEST(test_openshift_env)
{
        _cleanup_cjson_ cJSON *j =
            load(FX("real-cluster/"
                    "pod-openshift-vsystem-init-crashloop-imagepullsecrets-secretkeyref.json"));
        struct k8s_pod *p = pod_of(j);
        const struct k8s_container *c = &p->spec.containers[0];
        ck_assert_uint_eq(c->n_env_from, 1);
        ck_assert(!c->env_from[0].secret);
        ck_assert_str_eq(c->env_from[0].name, "vsystem-configmap");
        ck_assert_ptr_null(c->env_from[0].prefix);
        bool seen = false;
        for (size_t i = 0; i < c->n_env; i++)
                if (strcmp(c->env[i].name, "UAA_TOKEN_INTROSPECTION_CLIENT_SECRET") == 0) {
                        ck_assert_int_eq(c->env[i].key_ref, K8S_KEY_REF_SECRET);
                        ck_assert_str_eq(c->env[i].key_ref_name, "clientid-token-introspection");
                        ck_assert_str_eq(c->env[i].key_ref_key, "secret");
                        ck_assert(!c->env[i].key_ref_optional);
                        seen = true;
                }
        ck_assert(seen);
        const struct k8s_volume *ca = vol(p, "user-root-ca-dir");
        ck_assert_int_eq(ca->kind, K8S_VOLUME_PROJECTED);
        ck_assert_uint_eq(ca->n_projections, 2);
        ck_assert_int_eq(ca->projections[0].kind, K8S_PROJ_SECRET);
        ck_assert_str_eq(ca->projections[0].keyed.name, "vora.conf.secop.client.ca.truststore");
        for (size_t i = 0; i < p->spec.n_volumes; i++)
                if (strncmp(p->spec.volumes[i].name, "kube-api-access-", 16) == 0) {
                        check_kube_api_access(&p->spec.volumes[i]);
                        ck_assert_uint_eq(p->spec.volumes[i].n_projections, 4);
                }
        k8s_pod_free(p);
}
END_TEST

static int decode_text(const char *text, struct k8s_pod **p, struct cb_error *err)
{
        cJSON *j = cJSON_Parse(text);
        ck_assert_ptr_nonnull(j);
        int r = k8s_pod_from_json(j, p, err);
        cJSON_Delete(j);
        return r;
}

START_TEST(test_bad_volumes)
{
        static const struct {
                const char *volumes, *want;
        } cases[] = {
            {"[{\"name\":\"a\",\"configMap\":{\"name\":\"x\",\"items\":[{\"key\":\"k\",\"path\":"
             "\"../etc\"}]}}]",
             "spec.volumes[0].configMap.items[0].path: \"../etc\": must be a relative path "
             "without '..'"},
            {"[{\"name\":\"a\",\"secret\":{\"secretName\":\"x\",\"items\":[{\"key\":\"k\",\"path\":"
             "\"/abs\"}]}}]",
             "spec.volumes[0].secret.items[0].path: \"/abs\""},
            {"[{\"name\":\"a\",\"configMap\":{\"name\":\"x\",\"defaultMode\":4096}}]",
             "spec.volumes[0].configMap.defaultMode: must be a number between 0 and 0777"},
            {"[{\"name\":\"a\",\"projected\":{\"sources\":[{\"serviceAccountToken\":{\"path\":"
             "\"t\",\"expirationSeconds\":60}}]}}]",
             "expirationSeconds: may not specify a duration less than 10 minutes"},
            {"[{\"name\":\"a\",\"downwardAPI\":{\"items\":[{\"path\":\"x\"}]}}]",
             "spec.volumes[0].downwardAPI.items[0]: exactly one of fieldRef and resourceFieldRef"},
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char text[1024];
                snprintf(text, sizeof(text),
                         "{\"metadata\":{\"name\":\"p\",\"uid\":\"u\"},\"spec\":{\"containers\":[{"
                         "\"name\":\"c\"}],\"volumes\":%s}}",
                         cases[i].volumes);
                struct k8s_pod *p = NULL;
                struct cb_error err = {0};
                ck_assert_int_eq(decode_text(text, &p, &err), -1);
                ck_assert_msg(strstr(err.msg, cases[i].want) != NULL, "%zu: %s", i, err.msg);
        }
}
END_TEST

START_TEST(test_projection_kinds)
{
        const char *text =
            "{\"metadata\":{\"name\":\"p\",\"uid\":\"u\"},\"spec\":{\"containers\":[{\"name\":"
            "\"c\",\"volumeMounts\":[{\"name\":\"a\",\"mountPath\":\"/a\",\"subPathExpr\":\"$(POD)"
            "\"}],\"env\":[{\"name\":\"X\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"cm\","
            "\"key\":\"k\",\"optional\":true}}}],\"envFrom\":[{\"prefix\":\"P_\",\"secretRef\":{"
            "\"name\":\"s\",\"optional\":true}}]}],\"volumes\":[{\"name\":\"a\",\"projected\":{"
            "\"sources\":[{\"clusterTrustBundle\":{\"path\":\"b\",\"name\":\"n\"}},{"
            "\"podCertificate\":{}},{\"serviceAccountToken\":{\"path\":\"t\",\"audience\":"
            "\"vault\"}"
            "}]}}]}}";
        struct k8s_pod *p = NULL;
        struct cb_error err = {0};
        ck_assert_msg(decode_text(text, &p, &err) == 0, "%s", err.msg);
        const struct k8s_volume *v = &p->spec.volumes[0];
        ck_assert_int_eq(v->projections[0].kind, K8S_PROJ_CLUSTER_TRUST_BUNDLE);
        ck_assert_int_eq(v->projections[1].kind, K8S_PROJ_OTHER);
        ck_assert_str_eq(v->projections[1].other_kind, "podCertificate");
        ck_assert_int_eq(v->projections[2].expiration_seconds, 3600);
        ck_assert_str_eq(v->projections[2].audience, "vault");
        const struct k8s_container *c = &p->spec.containers[0];
        ck_assert_str_eq(c->volume_mounts[0].sub_path_expr, "$(POD)");
        ck_assert_int_eq(c->env[0].key_ref, K8S_KEY_REF_CONFIG_MAP);
        ck_assert(c->env[0].key_ref_optional);
        ck_assert(c->env_from[0].secret);
        ck_assert_str_eq(c->env_from[0].prefix, "P_");
        ck_assert(c->env_from[0].optional);
        k8s_pod_free(p);
}
END_TEST

START_TEST(test_configmap_secret_objects)
{
        _cleanup_cjson_ cJSON *list =
            load(FX("real-cluster/configmaplist-k3s-v1.31-default-kube-root-ca.json"));
        const cJSON *cmj = NULL;
        const cJSON *it;
        cJSON_ArrayForEach(it, cJSON_GetObjectItem(list, "items"))
        {
                const cJSON *md = cJSON_GetObjectItem(it, "metadata");
                if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(md, "name")),
                           "kube-root-ca.crt") == 0)
                        cmj = it;
        }
        ck_assert_ptr_nonnull(cmj);
        struct k8s_keyed_data *cm = NULL;
        struct cb_error err = {0};
        ck_assert_msg(k8s_configmap_from_json(cmj, &cm, &err) == 0, "%s", err.msg);
        const struct k8s_data_item *ca = k8s_keyed_data_get(cm, "ca.crt");
        ck_assert_ptr_nonnull(ca);
        ck_assert(strncmp(ca->value, "-----BEGIN CERTIFICATE-----", 27) == 0);
        ck_assert_str_eq(cm->meta.name, "kube-root-ca.crt");
        k8s_keyed_data_free(cm);

        /* data is base64 ("aGVsbG8=" = "hello"), binary bytes kept */
        _cleanup_cjson_ cJSON *sj =
            cJSON_Parse("{\"metadata\":{\"name\":\"s\",\"namespace\":\"d\",\"uid\":\"u\"},\"type\":"
                        "\"Opaque\",\"data\":{\"b\":\"AAEC\",\"a\":\"aGVsbG8=\",\"e\":\"\"}}");
        struct k8s_keyed_data *s = NULL;
        ck_assert_msg(k8s_secret_from_json(sj, &s, &err) == 0, "%s", err.msg);
        ck_assert_uint_eq(s->n, 3);
        ck_assert_str_eq(s->items[0].key, "a"); /* sorted */
        ck_assert_str_eq(k8s_keyed_data_get(s, "a")->value, "hello");
        ck_assert_uint_eq(k8s_keyed_data_get(s, "b")->len, 3);
        ck_assert_int_eq(k8s_keyed_data_get(s, "b")->value[2], 2);
        ck_assert_uint_eq(k8s_keyed_data_get(s, "e")->len, 0);
        ck_assert_ptr_null(k8s_keyed_data_get(s, "zz"));
        k8s_keyed_data_free(s);

        _cleanup_cjson_ cJSON *bad = cJSON_Parse("{\"data\":{\"a\":\"!!!!\"}}");
        ck_assert_int_eq(k8s_secret_from_json(bad, &s, &err), -1);
        ck_assert_msg(strstr(err.msg, "data[a]: illegal base64 data at input byte 0"), "%s",
                      err.msg);
        _cleanup_cjson_ cJSON *badkey = cJSON_Parse("{\"data\":{\"../x\":\"a\"}}");
        ck_assert_int_eq(k8s_configmap_from_json(badkey, &cm, &err), -1);
        ck_assert_msg(strstr(err.msg, "data[../x]: a valid config key"), "%s", err.msg);
        ck_assert(k8s_valid_data_key("ca.crt"));
        ck_assert(!k8s_valid_data_key(".."));
        ck_assert(!k8s_valid_data_key("..data"));
        ck_assert(!k8s_valid_data_key("a/b"));
        ck_assert(!k8s_valid_data_key(""));
}
END_TEST

/* ---- the manager, with fake watches ---- */

struct fake {
        int started, stopped;
        struct ag_objmgr_entry *last;
};

static void *fake_start(struct ag_objmgr *m, struct ag_objmgr_entry *e, enum ag_obj_kind kind,
                        const char *ns, const char *name, void *data)
{
        (void)m, (void)kind, (void)ns, (void)name;
        struct fake *f = data;
        f->started++;
        f->last = e;
        return f;
}

static void fake_stop(void *w, void *data)
{
        (void)w;
        ((struct fake *)data)->stopped++;
}

static int calls;
static void on_change(enum ag_obj_kind kind, const char *ns, const char *name, void *data)
{
        (void)kind, (void)ns, (void)name, (void)data;
        calls++;
}

START_TEST(test_manager_refcount)
{
        struct fake f = {0};
        struct ag_objmgr_watch_ops ops = {.start = fake_start, .stop = fake_stop, .data = &f};
        struct ag_objmgr *m = NULL;
        struct cb_error err = {0};
        ck_assert_int_eq(ag_objmgr_new(NULL, NULL, &ops, &m, &err), 0);
        struct ag_obj_ref a[] = {{AG_OBJ_CONFIG_MAP, "kube-root-ca.crt"},
                                 {AG_OBJ_SECRET, "s"},
                                 {AG_OBJ_CONFIG_MAP, "kube-root-ca.crt"}};
        ck_assert_int_eq(ag_objmgr_register(m, "pod1", "ns", a, 3, on_change, NULL, &err), 0);
        ck_assert_int_eq(f.started, 2);
        ck_assert_uint_eq(ag_objmgr_watches(m), 2);
        /* a second pod shares the ConfigMap's watch */
        ck_assert_int_eq(ag_objmgr_register(m, "pod2", "ns", a, 1, on_change, NULL, &err), 0);
        ck_assert_int_eq(f.started, 2);
        /* another namespace is another object */
        ck_assert_int_eq(ag_objmgr_register(m, "pod3", "other", a, 1, NULL, NULL, &err), 0);
        ck_assert_int_eq(f.started, 3);

        const struct k8s_keyed_data *kd;
        ck_assert_int_eq(ag_objmgr_get(m, AG_OBJ_SECRET, "ns", "s", &kd, &err), -1);
        ck_assert_msg(strstr(err.msg, "failed to sync secret cache"), "%s", err.msg);
        ck_assert_int_eq(ag_objmgr_get(m, AG_OBJ_SECRET, "ns", "nope", &kd, &err), -1);

        /* the secret's entry: sync empty (not found), then added, deleted */
        struct ag_objmgr_entry *se = NULL;
        /* find it through a fresh registration of a new object */
        struct ag_obj_ref b[] = {{AG_OBJ_SECRET, "t"}};
        ck_assert_int_eq(ag_objmgr_register(m, "pod4", "ns", b, 1, on_change, NULL, &err), 0);
        se = f.last;
        calls = 0;
        ag_objmgr_synced(m, se);
        ck_assert_int_eq(calls, 1);
        ck_assert_int_eq(ag_objmgr_get(m, AG_OBJ_SECRET, "ns", "t", &kd, &err), 0);
        _cleanup_cjson_ cJSON *obj =
            cJSON_Parse("{\"metadata\":{\"name\":\"t\",\"uid\":\"1\"},\"data\":{\"k\":\"dg==\"}}");
        ag_objmgr_deliver(m, se, obj);
        ck_assert_int_eq(calls, 2);
        ck_assert_int_eq(ag_objmgr_get(m, AG_OBJ_SECRET, "ns", "t", &kd, &err), 1);
        ck_assert_str_eq(k8s_keyed_data_get(kd, "k")->value, "v");
        ag_objmgr_deliver(m, se, NULL);
        ck_assert_int_eq(ag_objmgr_get(m, AG_OBJ_SECRET, "ns", "t", &kd, &err), 0);

        /* immutable: the first read stops the watch, the cached object stays */
        size_t watches = ag_objmgr_watches(m);
        int stopped = f.stopped;
        _cleanup_cjson_ cJSON *imm = cJSON_Parse("{\"metadata\":{\"name\":\"t\",\"uid\":\"2\"},"
                                                 "\"immutable\":true,\"data\":{\"k\":\"dw==\"}}");
        ag_objmgr_deliver(m, se, imm);
        ck_assert_int_eq(f.stopped, stopped); /* not before it is read */
        ck_assert_int_eq(ag_objmgr_get(m, AG_OBJ_SECRET, "ns", "t", &kd, &err), 1);
        ck_assert(kd->immutable);
        ck_assert_int_eq(f.stopped, stopped + 1);
        ck_assert_uint_eq(ag_objmgr_watches(m), watches - 1);
        ck_assert_int_eq(ag_objmgr_get(m, AG_OBJ_SECRET, "ns", "t", &kd, &err), 1);
        ck_assert_str_eq(k8s_keyed_data_get(kd, "k")->value, "w");
        ck_assert_int_eq(f.stopped, stopped + 1); /* once */
        ag_objmgr_unregister(m, "pod4");
        ck_assert_int_eq(f.stopped, stopped + 1); /* no second stop when it goes */

        /* re-registering pod1 with only the ConfigMap drops the Secret "s" */
        ck_assert_int_eq(ag_objmgr_register(m, "pod1", "ns", a, 1, on_change, NULL, &err), 0);
        ck_assert_int_eq(f.stopped, 2);
        ag_objmgr_unregister(m, "pod1");
        ck_assert_int_eq(f.stopped, 2); /* pod2 still refers to it */
        ag_objmgr_unregister(m, "pod2");
        ck_assert_int_eq(f.stopped, 3);
        ag_objmgr_unregister(m, "pod2"); /* twice: nothing */
        ck_assert_uint_eq(ag_objmgr_watches(m), 1);
        ag_objmgr_free(m);
        ck_assert_int_eq(f.stopped, 4);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("volumes_decode");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_k3s_pods);
        tcase_add_test(tc, test_openshift_env);
        tcase_add_test(tc, test_bad_volumes);
        tcase_add_test(tc, test_projection_kinds);
        tcase_add_test(tc, test_configmap_secret_objects);
        tcase_add_test(tc, test_manager_refcount);
        suite_add_tcase(s, tc);
        return th_run(s) ? 1 : 0;
}
