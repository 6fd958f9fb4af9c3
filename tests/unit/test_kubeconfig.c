/* SPDX-License-Identifier: Apache-2.0 */
/* kubeconfig parsing: contexts, inline and file credentials, tokens. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/client/kubeconfig.h"

#include "helpers.h"

/* "hello" and "-----BEGIN" in base64. */
#define B64_HELLO "aGVsbG8="
#define B64_PEM   "LS0tLS1CRUdJTg=="

static const char *full = "apiVersion: v1\n"
                          "kind: Config\n"
                          "current-context: b\n"
                          "clusters:\n"
                          "- name: c1\n"
                          "  cluster:\n"
                          "    server: https://10.0.0.1:6443/\n"
                          "    certificate-authority: pki/ca.crt\n"
                          "- name: c2\n"
                          "  cluster:\n"
                          "    server: https://api.example:443\n"
                          "    certificate-authority-data: " B64_PEM "\n"
                          "users:\n"
                          "- name: u1\n"
                          "  user:\n"
                          "    client-certificate-data: " B64_HELLO "\n"
                          "    client-key-data: " B64_PEM "\n"
                          "- name: u2\n"
                          "  user:\n"
                          "    client-certificate: /abs/node.crt\n"
                          "    client-key: rel/node.key\n"
                          "    token: sekret\n"
                          "contexts:\n"
                          "- name: a\n"
                          "  context: {cluster: c1, user: u2}\n"
                          "- name: b\n"
                          "  context: {cluster: c2, user: u1}\n";

START_TEST(test_current_context_inline_data)
{
        struct ag_kubeconfig kc;
        struct cb_error err = {0};
        ck_assert_int_eq(ag_kubeconfig_parse(full, strlen(full), "/etc/k/kc.yaml", NULL, &kc, &err),
                         0);
        ck_assert_str_eq(kc.context, "b");
        ck_assert_str_eq(kc.server, "https://api.example:443");
        ck_assert_ptr_null(kc.ca_file);
        ck_assert_uint_eq(kc.ca_data.len, 10);
        ck_assert_str_eq(kc.ca_data.data, "-----BEGIN");
        ck_assert_str_eq(kc.cert_data.data, "hello");
        ck_assert_uint_eq(kc.key_data.len, 10);
        ck_assert_ptr_null(kc.token);
        ck_assert(!kc.insecure_skip_tls_verify);
        ag_kubeconfig_clear(&kc);
}
END_TEST

START_TEST(test_named_context_relative_paths)
{
        struct ag_kubeconfig kc;
        struct cb_error err = {0};
        ck_assert_int_eq(ag_kubeconfig_parse(full, strlen(full), "/etc/k/kc.yaml", "a", &kc, &err),
                         0);
        /* Trailing slash dropped; relative paths resolved against the file. */
        ck_assert_str_eq(kc.server, "https://10.0.0.1:6443");
        ck_assert_str_eq(kc.ca_file, "/etc/k/pki/ca.crt");
        ck_assert_str_eq(kc.cert_file, "/abs/node.crt");
        ck_assert_str_eq(kc.key_file, "/etc/k/rel/node.key");
        ck_assert_str_eq(kc.token, "sekret");
        ag_kubeconfig_clear(&kc);
}
END_TEST

START_TEST(test_json_and_insecure)
{
        const char *json = "{\"current-context\":\"x\",\"clusters\":[{\"name\":\"c\",\"cluster\":"
                           "{\"server\":\"https://h\",\"insecure-skip-tls-verify\":true}}],"
                           "\"contexts\":[{\"name\":\"x\",\"context\":{\"cluster\":\"c\"}}]}";
        struct ag_kubeconfig kc;
        struct cb_error err = {0};
        ck_assert_int_eq(ag_kubeconfig_parse(json, strlen(json), NULL, NULL, &kc, &err), 0);
        ck_assert(kc.insecure_skip_tls_verify);
        ck_assert_ptr_null(kc.user_name);
        ck_assert_ptr_null(kc.token);
        ag_kubeconfig_clear(&kc);
}
END_TEST

START_TEST(test_token_file)
{
        char dir[] = "/tmp/test_kubeconfig.XXXXXX";
        ck_assert_ptr_nonnull(mkdtemp(dir));
        char tok[300], kcpath[300];
        snprintf(tok, sizeof(tok), "%s/token", dir);
        snprintf(kcpath, sizeof(kcpath), "%s/kc", dir);
        FILE *f = fopen(tok, "w");
        fputs("abc.def\n", f);
        fclose(f);
        f = fopen(kcpath, "w");
        fputs("current-context: x\n"
              "clusters: [{name: c, cluster: {server: 'https://h:1'}}]\n"
              "users: [{name: u, user: {tokenFile: token}}]\n"
              "contexts: [{name: x, context: {cluster: c, user: u}}]\n",
              f);
        fclose(f);
        struct ag_kubeconfig kc;
        struct cb_error err = {0};
        ck_assert_msg(ag_kubeconfig_load(kcpath, NULL, &kc, &err) == 0, "%s", err.msg);
        ck_assert_str_eq(kc.token, "abc.def");
        ck_assert_str_eq(kc.path, kcpath);
        ag_kubeconfig_clear(&kc);
        /* An empty token file is refused. */
        f = fopen(tok, "w");
        fclose(f);
        ck_assert_int_eq(ag_kubeconfig_load(kcpath, NULL, &kc, &err), -1);
        ck_assert_msg(strstr(err.msg, "tokenFile") != NULL, "%s", err.msg);
        unlink(tok);
        ck_assert_int_eq(ag_kubeconfig_load(kcpath, NULL, &kc, &err), -1);
        ck_assert_msg(strstr(err.msg, "tokenFile") != NULL, "%s", err.msg);
        unlink(kcpath);
        rmdir(dir);
        ck_assert_int_eq(ag_kubeconfig_load(kcpath, NULL, &kc, &err), -1);
        ck_assert_msg(strstr(err.msg, "kubeconfig") != NULL, "%s", err.msg);
}
END_TEST

START_TEST(test_errors)
{
        static const struct {
                const char *name, *text, *want;
        } t[] = {
            {"no current-context", "clusters: []\ncontexts: []\n", "current-context: not set"},
            {"unknown context", "current-context: z\ncontexts: [{name: a, context: {}}]\n",
             "contexts: no entry named \"z\""},
            {"unknown cluster",
             "current-context: a\ncontexts: [{name: a, context: {cluster: q}}]\n",
             "clusters: no entry named \"q\""},
            {"no server",
             "current-context: a\ncontexts: [{name: a, context: {cluster: c}}]\n"
             "clusters: [{name: c, cluster: {}}]\n",
             "cluster.server: required"},
            {"not a URL",
             "current-context: a\ncontexts: [{name: a, context: {cluster: c}}]\n"
             "clusters: [{name: c, cluster: {server: 'ftp://x'}}]\n",
             "is not an http(s) URL"},
            {"bad base64",
             "current-context: a\ncontexts: [{name: a, context: {cluster: c}}]\n"
             "clusters: [{name: c, cluster: {server: 'https://x', "
             "certificate-authority-data: 'a$b'}}]\n",
             "certificate-authority-data: invalid base64"},
            {"cert without key",
             "current-context: a\ncontexts: [{name: a, context: {cluster: c, user: u}}]\n"
             "clusters: [{name: c, cluster: {server: 'https://x'}}]\n"
             "users: [{name: u, user: {client-certificate: /c}}]\n",
             "needs client-key"},
            {"exec plugin",
             "current-context: a\ncontexts: [{name: a, context: {cluster: c, user: u}}]\n"
             "clusters: [{name: c, cluster: {server: 'https://x'}}]\n"
             "users: [{name: u, user: {exec: {command: x}}}]\n",
             "not supported"},
            {"insecure not bool",
             "current-context: a\ncontexts: [{name: a, context: {cluster: c}}]\n"
             "clusters: [{name: c, cluster: {server: 'https://x', insecure-skip-tls-verify: "
             "'yes'}}]\n",
             "must be true or false"},
            {"not a map", "- a\n- b\n", "not a map"},
            {"bad yaml", "a: [\n", "line"},
        };
        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
                struct ag_kubeconfig kc;
                struct cb_error err = {0};
                int r = ag_kubeconfig_parse(t[i].text, strlen(t[i].text), "/k", NULL, &kc, &err);
                ck_assert_msg(r == -1, "%s: accepted", t[i].name);
                ck_assert_msg(strstr(err.msg, t[i].want) != NULL, "%s: %s", t[i].name, err.msg);
                ck_assert_msg(strstr(err.msg, "kubeconfig /k") == err.msg, "%s: %s", t[i].name,
                              err.msg);
                ck_assert_ptr_null(kc.server);
        }
}
END_TEST

START_TEST(test_base64)
{
        static const struct {
                const char *in, *out;
        } ok[] = {
            {"", ""},    {"YQ==", "a"},     {"YWI=", "ab"},       {"YWJj", "abc"},
            {"YQ", "a"}, {"YW\nJj", "abc"}, {"+/8=", "\xfb\xff"},
        };
        for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
                struct ag_blob b = {0};
                struct cb_error err = {0};
                ck_assert_msg(ag_base64_decode(ok[i].in, strlen(ok[i].in), &b, &err) == 0, "%s: %s",
                              ok[i].in, err.msg);
                ck_assert_uint_eq(b.len, strlen(ok[i].out));
                ck_assert_mem_eq(b.data, ok[i].out, b.len);
                free(b.data);
        }
        static const char *const bad[] = {"Y", "YQ=a", "Y$==", "YR==", "YQ==="};
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                struct ag_blob b = {0};
                struct cb_error err = {0};
                ck_assert_msg(ag_base64_decode(bad[i], strlen(bad[i]), &b, &err) == -1, "%s",
                              bad[i]);
                ck_assert_ptr_null(b.data);
        }
}
END_TEST

int main(void)
{
        Suite *s = suite_create("kubeconfig");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_current_context_inline_data);
        tcase_add_test(tc, test_named_context_relative_paths);
        tcase_add_test(tc, test_json_and_insecure);
        tcase_add_test(tc, test_token_file);
        tcase_add_test(tc, test_errors);
        tcase_add_test(tc, test_base64);
        suite_add_tcase(s, tc);
        return th_run(s) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
