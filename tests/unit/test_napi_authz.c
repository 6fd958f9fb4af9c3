/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The node API's webhook authentication and authorization, the pure parts
 * (agent/nodeapi/authz.h): the kubelet's request attributes per method and
 * path, the 403/500 texts, the token hash, the answer cache with injected
 * time; the reviewer without webhooks; the configuration keys and flags.
 */
#include <check.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "agent/cmd/config.h"
#include "agent/nodeapi/authz.h"
#include "lib/cleanup.h"

#include "helpers.h"

static const struct {
        const char *method, *path, *verb, *sub;
} attrs[] = {
    {"GET", "/pods", "get", "proxy"},
    {"GET", "/healthz", "get", "proxy"},
    {"GET", "/containerLogs/ns/p/c", "get", "proxy"},
    {"POST", "/exec/ns/p/c", "create", "proxy"},
    {"GET", "/exec/ns/p/c", "get", "proxy"},
    {"POST", "/attach/ns/p/c", "create", "proxy"},
    {"POST", "/portForward/ns/p", "create", "proxy"},
    {"GET", "/stats/summary", "get", "stats"},
    {"GET", "/stats", "get", "stats"},
    {"GET", "/stats/", "get", "stats"},
    {"GET", "/statsX", "get", "proxy"},
    {"GET", "/metrics", "get", "metrics"},
    {"GET", "/metrics/cadvisor", "get", "metrics"},
    {"GET", "/metricsfoo", "get", "proxy"},
    {"GET", "/logs/", "get", "log"},
    {"GET", "/logs/syslog", "get", "log"},
    {"GET", "/logsx", "get", "proxy"},
    {"GET", "/spec/", "get", "spec"},
    {"POST", "/checkpoint/ns/p/c", "create", "checkpoint"},
    {"PUT", "/pods", "update", "proxy"},
    {"PATCH", "/pods", "patch", "proxy"},
    {"DELETE", "/pods", "delete", "proxy"},
    {"HEAD", "/pods", "", "proxy"},
    {"OPTIONS", "/stats/summary", "", "stats"},
};

START_TEST(test_attrs)
{
        struct ag_napi_attrs a;
        ag_napi_attrs_of(attrs[_i].method, attrs[_i].path, &a);
        ck_assert_msg(strcmp(a.verb, attrs[_i].verb) == 0, "%s %s: verb %s", attrs[_i].method,
                      attrs[_i].path, a.verb);
        ck_assert_msg(strcmp(a.subresource, attrs[_i].sub) == 0, "%s %s: subresource %s",
                      attrs[_i].method, attrs[_i].path, a.subresource);
        ck_assert_str_eq(a.resource, "nodes");
        ck_assert_str_eq(a.version, "v1");
}
END_TEST

START_TEST(test_texts)
{
        struct ag_napi_attrs a;
        char buf[300];
        ag_napi_attrs_of("GET", "/pods", &a);
        ag_napi_authz_text(buf, sizeof(buf), "Forbidden", "stats-reader", &a);
        ck_assert_str_eq(buf, "Forbidden (user=stats-reader, verb=get, resource=nodes, "
                              "subresource=proxy)");
        ag_napi_attrs_of("POST", "/stats/summary", &a);
        ag_napi_authz_text(buf, sizeof(buf), "Authorization error", "u", &a);
        ck_assert_str_eq(buf, "Authorization error (user=u, verb=create, resource=nodes, "
                              "subresource=stats)");
        /* truncated, never overflowing */
        char small[10];
        ag_napi_authz_text(small, sizeof(small), "Forbidden", "u", &a);
        ck_assert_str_eq(small, "Forbidden");
}
END_TEST

START_TEST(test_hash)
{
        char h[65];
        ag_napi_sha256_hex("", 0, h);
        ck_assert_str_eq(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        ag_napi_sha256_hex("abc", 3, h);
        ck_assert_str_eq(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        ck_assert_uint_eq(strlen(h), 64);
}
END_TEST

START_TEST(test_cache_expiry)
{
        struct ag_napi_cache *c = ag_napi_cache_new(8);
        ck_assert_ptr_nonnull(c);
        _cleanup_cjson_ cJSON *g = cJSON_CreateStringArray((const char *[]){"a", "b"}, 2);
        ck_assert_int_eq(ag_napi_cache_put(c, "t:1", true, "alice", g, 1000 + 120000, 1000), 0);
        ck_assert_int_eq(ag_napi_cache_put(c, "a:2", false, NULL, NULL, 1000 + 30000, 1000), 0);
        const struct ag_napi_answer *a = ag_napi_cache_get(c, "t:1", 1000);
        ck_assert_ptr_nonnull(a);
        ck_assert(a->yes);
        ck_assert_str_eq(a->user, "alice");
        ck_assert_int_eq(cJSON_GetArraySize(a->groups), 2);
        /* a copy: the caller's groups may go */
        ck_assert_ptr_ne(a->groups, g);
        /* the last millisecond before expiry, then gone */
        ck_assert_ptr_nonnull(ag_napi_cache_get(c, "t:1", 1000 + 120000 - 1));
        ck_assert_ptr_null(ag_napi_cache_get(c, "t:1", 1000 + 120000));
        ck_assert_uint_eq(ag_napi_cache_size(c), 1);
        a = ag_napi_cache_get(c, "a:2", 30999);
        ck_assert_ptr_nonnull(a);
        ck_assert(!a->yes);
        ck_assert_ptr_null(ag_napi_cache_get(c, "a:2", 31000));
        ck_assert_ptr_null(ag_napi_cache_get(c, "missing", 0));
        /* a put replaces */
        ck_assert_int_eq(ag_napi_cache_put(c, "k", false, NULL, NULL, 50, 0), 0);
        ck_assert_int_eq(ag_napi_cache_put(c, "k", true, NULL, NULL, 60, 0), 0);
        ck_assert_uint_eq(ag_napi_cache_size(c), 1);
        ck_assert(ag_napi_cache_get(c, "k", 0)->yes);
        ag_napi_cache_free(c);
}
END_TEST

START_TEST(test_cache_bound)
{
        struct ag_napi_cache *c = ag_napi_cache_new(3);
        ck_assert_int_eq(ag_napi_cache_put(c, "a", true, NULL, NULL, 100, 0), 0);
        ck_assert_int_eq(ag_napi_cache_put(c, "b", true, NULL, NULL, 50, 0), 0);
        ck_assert_int_eq(ag_napi_cache_put(c, "c", true, NULL, NULL, 200, 0), 0);
        /* full, nothing expired: the one expiring soonest (b) goes */
        ck_assert_int_eq(ag_napi_cache_put(c, "d", true, NULL, NULL, 300, 10), 0);
        ck_assert_uint_eq(ag_napi_cache_size(c), 3);
        ck_assert_ptr_null(ag_napi_cache_get(c, "b", 10));
        ck_assert_ptr_nonnull(ag_napi_cache_get(c, "a", 10));
        /* full with expired ones: they all go first */
        ck_assert_int_eq(ag_napi_cache_put(c, "e", true, NULL, NULL, 1000, 150), 0);
        ck_assert_ptr_null(ag_napi_cache_get(c, "a", 150));
        ck_assert_ptr_nonnull(ag_napi_cache_get(c, "c", 150));
        ck_assert_ptr_nonnull(ag_napi_cache_get(c, "d", 150));
        ck_assert_ptr_nonnull(ag_napi_cache_get(c, "e", 150));
        ck_assert_uint_eq(ag_napi_cache_size(c), 3);
        ag_napi_cache_free(c);
}
END_TEST

static void never(void *data, enum ag_napi_verdict v)
{
        (void)data;
        (void)v;
        ck_abort_msg("no callback without a review");
}

START_TEST(test_reviewer_without_webhooks)
{
        struct ag_napi_authz *z = NULL;
        struct cb_error err = {0};
        struct ag_napi_authz_config cfg = {.node_name = "n"};
        ck_assert_int_eq(ag_napi_authz_new(NULL, &cfg, &z, &err), 0);
        struct ag_napi_who who = {.user = "x"};
        struct ag_napi_review *r = (void *)1;
        ck_assert_int_eq(ag_napi_review_token(z, "tok", &who, never, NULL, &r), AG_NAPI_NO);
        ck_assert_ptr_null(r);
        struct ag_napi_attrs a;
        ag_napi_attrs_of("POST", "/exec/a/b/c", &a);
        ck_assert_int_eq(ag_napi_review_access(z, &who, &a, never, NULL, &r), AG_NAPI_YES);
        ck_assert_ptr_null(r);
        ag_napi_authz_free(z);
        /* a webhook without an apiserver client is refused */
        cfg.authz_webhook = true;
        ck_assert_int_eq(ag_napi_authz_new(NULL, &cfg, &z, &err), -1);
        ck_assert_ptr_nonnull(strstr(err.msg, "--kubeconfig"));
}
END_TEST

static int load(struct ag_config *c, const char *yaml, int argc, char **argv, struct cb_error *err)
{
        ck_assert_int_eq(ag_config_init(c, err), 0);
        if (yaml != NULL && ag_config_apply_text(c, yaml, strlen(yaml), err) < 0)
                return -1;
        if (yaml != NULL)
                c->config_path = "test.yaml";
        if (argc > 0 && ag_config_parse_flags(c, argc, argv, err) < 0)
                return -1;
        return ag_config_finish(c, err);
}

START_TEST(test_config_defaults)
{
        struct ag_config c;
        struct cb_error err = {0};
        /* flags only: the kubelet's flag defaults */
        ck_assert_int_eq(load(&c, NULL, 0, NULL, &err), 0);
        ck_assert(!c.authn_webhook);
        ck_assert(!c.authz_webhook);
        ck_assert(!c.anonymous);
        ck_assert_str_eq(c.authz_mode, "AlwaysAllow");
        ck_assert_uint_eq(c.authn_webhook_ttl_ms, 120000);
        ck_assert_uint_eq(c.authz_allowed_ttl_ms, 300000);
        ck_assert_uint_eq(c.authz_denied_ttl_ms, 30000);
        ck_assert_int_eq(c.napi.port, 10250);
        ck_assert_str_eq(c.napi.address, "0.0.0.0");
        ag_config_clear(&c);
        /* a config file with an apiserver: the file's defaults */
        char *argv[] = {"--kubeconfig", "/k"};
        const char *doc = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n";
        ck_assert_int_eq(load(&c, doc, 2, argv, &err), 0);
        ck_assert(c.authn_webhook);
        ck_assert(c.authz_webhook);
        ck_assert(!c.anonymous);
        ag_config_clear(&c);
        /* a config file, standalone: nothing to ask, so off */
        ck_assert_int_eq(load(&c, doc, 0, NULL, &err), 0);
        ck_assert(!c.authn_webhook);
        ck_assert(!c.authz_webhook);
        ag_config_clear(&c);
}
END_TEST

START_TEST(test_config_keys)
{
        struct ag_config c;
        struct cb_error err = {0};
        const char *doc = "apiVersion: kubelet.config.k8s.io/v1beta1\n"
                          "kind: KubeletConfiguration\n"
                          "address: 10.1.2.3\n"
                          "port: 10251\n"
                          "tlsCertFile: /c.crt\n"
                          "tlsPrivateKeyFile: /c.key\n"
                          "authentication:\n"
                          "  anonymous: {enabled: true}\n"
                          "  webhook: {enabled: false, cacheTTL: 10s}\n"
                          "  x509: {clientCAFile: /ca.crt}\n"
                          "authorization:\n"
                          "  mode: Webhook\n"
                          "  webhook: {cacheAuthorizedTTL: 1m, cacheUnauthorizedTTL: 5s}\n";
        char *argv[] = {"--kubeconfig",
                        "/k",
                        "--port",
                        "10252",
                        "--authentication-token-webhook",
                        "--authorization-webhook-cache-unauthorized-ttl",
                        "7s"};
        ck_assert_msg(load(&c, doc, 7, argv, &err) == 0, "%s", err.msg);
        ck_assert_str_eq(c.napi.address, "10.1.2.3");
        ck_assert_int_eq(c.napi.port, 10252); /* the flag over the file */
        ck_assert_str_eq(c.napi.tls_cert_file, "/c.crt");
        ck_assert_str_eq(c.napi.tls_key_file, "/c.key");
        ck_assert_str_eq(c.napi.client_ca_file, "/ca.crt");
        ck_assert(c.anonymous);
        ck_assert(c.authn_webhook); /* the bare flag: true */
        ck_assert_uint_eq(c.authn_webhook_ttl_ms, 10000);
        ck_assert(c.authz_webhook);
        ck_assert_uint_eq(c.authz_allowed_ttl_ms, 60000);
        ck_assert_uint_eq(c.authz_denied_ttl_ms, 7000);
        ag_config_clear(&c);

        char *argv2[] = {"--kubeconfig",         "/k",      "--authentication-token-webhook=false",
                         "--authorization-mode", "Webhook", "--anonymous-auth=true"};
        ck_assert_int_eq(load(&c, NULL, 6, argv2, &err), 0);
        ck_assert(!c.authn_webhook);
        ck_assert(c.authz_webhook);
        ck_assert(c.anonymous);
        ag_config_clear(&c);
}
END_TEST

START_TEST(test_config_bad)
{
        struct ag_config c;
        struct cb_error err = {0};
        char *a1[] = {"--kubeconfig", "/k", "--authorization-mode", "RBAC"};
        ck_assert_int_eq(load(&c, NULL, 4, a1, &err), -1);
        ck_assert_ptr_nonnull(strstr(err.msg, "want AlwaysAllow or Webhook"));
        ag_config_clear(&c);
        char *a2[] = {"--authorization-mode", "Webhook"};
        ck_assert_int_eq(load(&c, NULL, 2, a2, &err), -1);
        ck_assert_ptr_nonnull(strstr(err.msg, "need --kubeconfig"));
        ag_config_clear(&c);
        char *a3[] = {"--anonymous-auth=yes"};
        ck_assert_int_eq(load(&c, NULL, 1, a3, &err), -1);
        ck_assert_ptr_nonnull(strstr(err.msg, "want true or false"));
        ag_config_clear(&c);
        const char *doc = "apiVersion: kubelet.config.k8s.io/v1beta1\n"
                          "kind: KubeletConfiguration\n"
                          "authentication: {webhook: {enabled: \"yes\"}}\n";
        ck_assert_int_eq(load(&c, doc, 0, NULL, &err), -1);
        ck_assert_ptr_nonnull(
            strstr(err.msg, "authentication.webhook.enabled: want true or false"));
        ag_config_clear(&c);
        const char *doc2 = "apiVersion: kubelet.config.k8s.io/v1beta1\n"
                           "kind: KubeletConfiguration\n"
                           "authorization: {webhok: {}}\n";
        ck_assert_int_eq(load(&c, doc2, 0, NULL, &err), -1);
        ag_config_clear(&c);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("napi_authz");
        TCase *tc = tcase_create("napi_authz");
        tcase_add_loop_test(tc, test_attrs, 0, (int)(sizeof(attrs) / sizeof(attrs[0])));
        tcase_add_test(tc, test_texts);
        tcase_add_test(tc, test_hash);
        tcase_add_test(tc, test_cache_expiry);
        tcase_add_test(tc, test_cache_bound);
        tcase_add_test(tc, test_reviewer_without_webhooks);
        tcase_add_test(tc, test_config_defaults);
        tcase_add_test(tc, test_config_keys);
        tcase_add_test(tc, test_config_bad);
        suite_add_tcase(s, tc);
        return th_run(s) == 0 ? 0 : 1;
}
