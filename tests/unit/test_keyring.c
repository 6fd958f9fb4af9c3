/* SPDX-License-Identifier: Apache-2.0 */
/* Registry credentials (agent/k8s/keyring.c) as the kubelet's
 * credentialprovider keyring reads and matches them. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/k8s/keyring.h"
#include "lib/cleanup.h"

#include "helpers.h"

/* "alice:s3cret" and "bob:hunter2" */
#define ALICE "YWxpY2U6czNjcmV0"
#define BOB   "Ym9iOmh1bnRlcjI="

START_TEST(test_formats)
{
        _cleanup_(cb_arena_freep) struct cb_arena *a = cb_arena_new(0);
        struct k8s_keyring k = {.a = a};
        struct cb_error err = {0};
        ck_assert(k8s_keyring_add_text(&k,
                                       "{\"auths\":{\"https://reg.example:5000/v2/\":{\"auth\":"
                                       "\"" ALICE "\"},\"other.example\":{\"username\":\"u\","
                                       "\"password\":\"p\"}}}",
                                       false, 0, "config.json", &err) == 0);
        ck_assert(k8s_keyring_add_text(&k, "{\"legacy.example\":{\"auth\":\"" BOB "\"}}", true, 1,
                                       ".dockercfg", &err) == 0);
        ck_assert_uint_eq(k.n, 3);
        const struct k8s_registry_cred *c[4];
        ck_assert_uint_eq(k8s_keyring_lookup(&k, "reg.example:5000/team/app:1.0", c, 4), 1);
        ck_assert_str_eq(c[0]->username, "alice");
        ck_assert_str_eq(c[0]->password, "s3cret");
        ck_assert_uint_eq(k8s_keyring_lookup(&k, "other.example/x", c, 4), 1);
        ck_assert_str_eq(c[0]->username, "u");
        ck_assert_uint_eq(k8s_keyring_lookup(&k, "legacy.example/y@sha256:00", c, 4), 1);
        ck_assert_str_eq(c[0]->password, "hunter2");
        /* the port must match */
        ck_assert_uint_eq(k8s_keyring_lookup(&k, "reg.example/team/app", c, 4), 0);
        /* errors name the source, never a secret value */
        ck_assert_int_eq(k8s_keyring_add_text(&k, "{\"auths\":{\"x\":{\"auth\":\"bm9jb2xvbg==\"}}}",
                                              false, 0, "config.json", &err),
                         -1);
        ck_assert_str_eq(err.msg, "config.json: entry x: auth is not base64 of user:password");
        ck_assert_int_eq(k8s_keyring_add_text(&k, "[", false, 0, "/root/.docker/config.json", &err),
                         -1);
        ck_assert_str_eq(err.msg, "/root/.docker/config.json: not a JSON object");
}
END_TEST

START_TEST(test_matching_order)
{
        _cleanup_(cb_arena_freep) struct cb_arena *a = cb_arena_new(0);
        struct k8s_keyring k = {.a = a};
        struct cb_error err = {0};
        /* the node's own (origin 1) and a pod's pull secret (origin 0) */
        ck_assert(k8s_keyring_add_text(&k,
                                       "{\"auths\":{\"reg.example\":{\"username\":\"node\"},"
                                       "\"reg.example/team\":{\"username\":\"node-team\"},"
                                       "\"*.corp.example\":{\"username\":\"glob\"},"
                                       "\"https://index.docker.io/v1/\":{\"username\":\"hub\"}}}",
                                       false, 1, "config.json", &err) == 0);
        ck_assert(k8s_keyring_add_text(&k, "{\"auths\":{\"reg.example\":{\"username\":\"pod\"}}}",
                                       false, 0, "secret default/pull", &err) == 0);
        const struct k8s_registry_cred *c[8];
        size_t n = k8s_keyring_lookup(&k, "reg.example/team/app:v1", c, 8);
        ck_assert_uint_eq(n, 3);
        ck_assert_str_eq(c[0]->username, "pod");       /* pull secrets first */
        ck_assert_str_eq(c[1]->username, "node-team"); /* then the most specific */
        ck_assert_str_eq(c[2]->username, "node");
        /* a plain prefix of the path, as the kubelet's URLsMatch */
        ck_assert_uint_eq(k8s_keyring_lookup(&k, "reg.example/teamx/app", c, 8), 3);
        ck_assert_uint_eq(k8s_keyring_lookup(&k, "reg.example/other/app", c, 8), 2);
        ck_assert_uint_eq(k8s_keyring_lookup(&k, "eu.corp.example/a/b", c, 8), 1);
        ck_assert_str_eq(c[0]->username, "glob");
        ck_assert_uint_eq(k8s_keyring_lookup(&k, "a.b.corp.example/a", c, 8), 0);
        /* Docker Hub: the legacy key matches images without a registry */
        ck_assert_uint_eq(k8s_keyring_lookup(&k, "nginx", c, 8), 1);
        ck_assert_str_eq(c[0]->username, "hub");
        ck_assert_uint_eq(k8s_keyring_lookup(&k, "docker.io/library/nginx:1.27", c, 8), 1);
        ck_assert_uint_eq(k8s_keyring_lookup(&k, "localhost:5000/nginx", c, 8), 0);
}
END_TEST

/* Two pull secrets for the same registry: both are tried, in the order of
 * imagePullSecrets (the kubelet appends each one's entry to the key's
 * list); a source that does not parse adds nothing. */
START_TEST(test_same_key_order)
{
        _cleanup_(cb_arena_freep) struct cb_arena *a = cb_arena_new(0);
        struct k8s_keyring k = {.a = a};
        struct cb_error err = {0};
        const char *names[] = {"first", "second", "third", "fourth", "fifth", "sixth"};
        for (size_t i = 0; i < CB_ARRAY_SIZE(names); i++) {
                char text[128];
                snprintf(text, sizeof(text), "{\"auths\":{\"reg.example\":{\"username\":\"%s\"}}}",
                         names[i]);
                ck_assert(k8s_keyring_add_text(&k, text, false, 0, "secret", &err) == 0);
        }
        ck_assert_int_eq(k8s_keyring_add_text(&k,
                                              "{\"auths\":{\"reg.example\":{\"username\":\"x\"},"
                                              "\"bad\":{\"auth\":\"!!\"}}}",
                                              false, 0, "secret ns/bad", &err),
                         -1);
        ck_assert_str_eq(err.msg, "secret ns/bad: entry bad: auth is not base64 of user:password");
        ck_assert_uint_eq(k.n, CB_ARRAY_SIZE(names));
        const struct k8s_registry_cred *c[8];
        ck_assert_uint_eq(k8s_keyring_lookup(&k, "reg.example/app", c, 8), CB_ARRAY_SIZE(names));
        for (size_t i = 0; i < CB_ARRAY_SIZE(names); i++)
                ck_assert_str_eq(c[i]->username, names[i]);
}
END_TEST

START_TEST(test_secrets)
{
        _cleanup_(cb_arena_freep) struct cb_arena *a = cb_arena_new(0);
        struct k8s_keyring k = {.a = a};
        struct cb_error err = {0};
        cJSON *j = cJSON_Parse(
            "{\"metadata\":{\"name\":\"pull\",\"namespace\":\"app\"},\"type\":"
            "\"kubernetes.io/dockerconfigjson\",\"data\":{\".dockerconfigjson\":"
            "\"eyJhdXRocyI6eyJyZWcuZXhhbXBsZSI6eyJhdXRoIjoiWVd4cFkyVTZjek5qY21WMCJ9fX0=\"}}");
        struct k8s_keyed_data *s = NULL;
        ck_assert(k8s_secret_from_json(j, &s, &err) == 0);
        cJSON_Delete(j);
        ck_assert_msg(k8s_keyring_add_secret(&k, s, 0, &err) == 0, "%s", err.msg);
        k8s_keyed_data_free(s);
        const struct k8s_registry_cred *c[2];
        ck_assert_uint_eq(k8s_keyring_lookup(&k, "reg.example/app", c, 2), 1);
        ck_assert_str_eq(c[0]->username, "alice");
        j = cJSON_Parse("{\"metadata\":{\"name\":\"opaque\",\"namespace\":\"app\"},\"type\":"
                        "\"Opaque\",\"data\":{}}");
        ck_assert(k8s_secret_from_json(j, &s, &err) == 0);
        cJSON_Delete(j);
        ck_assert_int_eq(k8s_keyring_add_secret(&k, s, 0, &err), -1);
        ck_assert_str_eq(err.msg, "secret app/opaque: type Opaque: an imagePullSecret must be "
                                  "kubernetes.io/dockerconfigjson or kubernetes.io/dockercfg");
        k8s_keyed_data_free(s);
}
END_TEST

START_TEST(test_search_paths)
{
        _cleanup_(cb_arena_freep) struct cb_arena *a = cb_arena_new(0);
        const char *p[8];
        bool cfg[8];
        size_t n = k8s_docker_config_paths(a, "/var/lib/cubelet", "/srv", "/root", p, cfg);
        ck_assert_uint_eq(n, 8);
        static const char *const want[] = {"/var/lib/cubelet/config.json",
                                           "/srv/config.json",
                                           "/root/.docker/config.json",
                                           "/.docker/config.json",
                                           "/var/lib/cubelet/.dockercfg",
                                           "/srv/.dockercfg",
                                           "/root/.dockercfg",
                                           "/.dockercfg"};
        for (size_t i = 0; i < n; i++) {
                ck_assert_str_eq(p[i], want[i]);
                ck_assert(cfg[i] == (i >= 4));
        }
}
END_TEST

int main(void)
{
        Suite *s = suite_create("keyring");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_formats);
        tcase_add_test(tc, test_matching_order);
        tcase_add_test(tc, test_same_key_order);
        tcase_add_test(tc, test_secrets);
        tcase_add_test(tc, test_search_paths);
        suite_add_tcase(s, tc);
        return th_run(s) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
