/* SPDX-License-Identifier: Apache-2.0 */
/* The docker-link variables of Services (agent/k8s/service.c, against
 * the kubelet's envvars.FromServices and getServiceEnvVarMap) with the
 * real Services of tests/fixtures/real-cluster/servicelist-v1.35-*.yaml,
 * and the Services table the agent keeps (agent/pods/services.c). */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "agent/k8s/k8s.h"
#include "agent/k8s/service.h"
#include "agent/pods/services.h"
#include "lib/cleanup.h"

#include "helpers.h"

#define FX(rel) CUBELET_FIXTURES "/" rel

static struct ag_services *fixture_services(void)
{
        cJSON *list = NULL;
        struct cb_error err = {0};
        ck_assert_msg(
            k8s_parse_file(FX("real-cluster/servicelist-v1.35-minikube-all-namespaces.yaml"), &list,
                           &err) == 0,
            "%s", err.msg);
        struct ag_services *s = ag_services_new();
        const cJSON *it;
        cJSON_ArrayForEach(it, cJSON_GetObjectItem(list, "items"))
        {
                const char *uid =
                    cJSON_GetObjectItem(cJSON_GetObjectItem(it, "metadata"), "uid")->valuestring;
                ck_assert_msg(ag_services_set(s, uid, it, &err) == 0, "%s", err.msg);
        }
        cJSON_Delete(list);
        return s;
}

static char *joined(char **env, size_t n)
{
        size_t len = 1;
        for (size_t i = 0; i < n; i++)
                len += strlen(env[i]) + 1;
        char *s = calloc(1, len);
        for (size_t i = 0; i < n; i++) {
                strncat(s, env[i], len - strlen(s) - 1);
                strncat(s, "\n", len - strlen(s) - 1);
        }
        return s;
}

START_TEST(test_kubernetes_everywhere)
{
        struct ag_services *s = fixture_services();
        _cleanup_(cb_arena_freep) struct cb_arena *a = cb_arena_new(0);
        char **env;
        size_t n;
        struct cb_error err = {0};
        /* before the first list: the kubelet's error */
        ck_assert_int_eq(ag_services_env(s, a, "default", true, &env, &n, &err), -1);
        ck_assert_str_eq(err.msg,
                         "services have not yet been read at least once, cannot construct envvars");
        ag_services_mark_synced(s);
        /* links off: only the kubernetes Service, in any namespace */
        ck_assert(ag_services_env(s, a, "kube-system", false, &env, &n, &err) == 0);
        _cleanup_free_ char *got = joined(env, n);
        ck_assert_str_eq(got, "KUBERNETES_SERVICE_HOST=10.96.0.1\n"
                              "KUBERNETES_SERVICE_PORT=443\n"
                              "KUBERNETES_SERVICE_PORT_HTTPS=443\n"
                              "KUBERNETES_PORT=tcp://10.96.0.1:443\n"
                              "KUBERNETES_PORT_443_TCP=tcp://10.96.0.1:443\n"
                              "KUBERNETES_PORT_443_TCP_PROTO=tcp\n"
                              "KUBERNETES_PORT_443_TCP_PORT=443\n"
                              "KUBERNETES_PORT_443_TCP_ADDR=10.96.0.1\n");
        ag_services_free(s);
}
END_TEST

START_TEST(test_namespace_links)
{
        struct ag_services *s = fixture_services();
        ag_services_mark_synced(s);
        _cleanup_(cb_arena_freep) struct cb_arena *a = cb_arena_new(0);
        char **env;
        size_t n;
        struct cb_error err = {0};
        ck_assert(ag_services_env(s, a, "kube-system", true, &env, &n, &err) == 0);
        _cleanup_free_ char *got = joined(env, n);
        /* kube-dns: UDP first port, named ports, '-' made '_' */
        ck_assert_ptr_nonnull(strstr(got, "KUBE_DNS_SERVICE_HOST=10.96.0.10\n"
                                          "KUBE_DNS_SERVICE_PORT=53\n"
                                          "KUBE_DNS_SERVICE_PORT_DNS=53\n"
                                          "KUBE_DNS_SERVICE_PORT_DNS_TCP=53\n"
                                          "KUBE_DNS_SERVICE_PORT_METRICS=9153\n"
                                          "KUBE_DNS_PORT=udp://10.96.0.10:53\n"
                                          "KUBE_DNS_PORT_53_UDP=udp://10.96.0.10:53\n"
                                          "KUBE_DNS_PORT_53_UDP_PROTO=udp\n"
                                          "KUBE_DNS_PORT_53_UDP_PORT=53\n"
                                          "KUBE_DNS_PORT_53_UDP_ADDR=10.96.0.10\n"
                                          "KUBE_DNS_PORT_53_TCP=tcp://10.96.0.10:53\n"));
        ck_assert_ptr_nonnull(strstr(got, "KUBE_DNS_PORT_9153_TCP_ADDR=10.96.0.10\n"));
        ck_assert_ptr_nonnull(strstr(got, "METRICS_SERVER_SERVICE_PORT_HTTPS=443\n"));
        ck_assert_ptr_nonnull(strstr(got, "KUBERNETES_SERVICE_HOST=10.96.0.1\n"));
        /* ordered by Service name; other namespaces' Services absent */
        ck_assert(strstr(got, "KUBE_DNS_SERVICE_HOST") < strstr(got, "KUBERNETES_SERVICE"));
        ck_assert_ptr_null(strstr(got, "E2E_"));
        /* an unnamed port: no _SERVICE_PORT_<NAME> */
        ck_assert(ag_services_env(s, a, "scraper", true, &env, &n, &err) == 0);
        _cleanup_free_ char *sc = joined(env, n);
        ck_assert_ptr_nonnull(strstr(sc, "E2E_HPA_SERVICE_HOST=10.107.23.113\n"
                                         "E2E_HPA_SERVICE_PORT=80\n"
                                         "E2E_HPA_PORT=tcp://10.107.23.113:80\n"));
        ck_assert_ptr_nonnull(strstr(sc, "E2E_KUBE_STATE_METRICS_SERVICE_PORT_HTTP=8080\n"));
        ag_services_free(s);
}
END_TEST

static const char *svc_json(const char *ns, const char *name, const char *uid, const char *ip,
                            const char *ports)
{
        static char buf[2048];
        snprintf(buf, sizeof(buf),
                 "{\"metadata\":{\"namespace\":\"%s\",\"name\":\"%s\",\"uid\":\"%s\"},"
                 "\"spec\":{\"clusterIP\":\"%s\",\"ports\":%s}}",
                 ns, name, uid, ip, ports);
        return buf;
}

START_TEST(test_rules)
{
        struct ag_services *s = ag_services_new();
        struct cb_error err = {0};
        static const struct {
                const char *ns, *name, *uid, *ip, *ports;
        } svcs[] = {
            {"default", "kubernetes", "u1", "10.96.0.1", "[{\"name\":\"https\",\"port\":443}]"},
            {"app", "headless", "u2", "None", "[{\"port\":80}]"},
            {"app", "external", "u3", "", "[]"},
            {"app", "sctp-svc", "u4", "fd00::20",
             "[{\"port\":9999,\"protocol\":\"SCTP\"},{\"name\":\"q\",\"port\":53,"
             "\"protocol\":\"UDP\"}]"},
            {"app", "kubernetes", "u5", "10.96.9.9", "[{\"port\":1}]"},
        };
        for (size_t i = 0; i < sizeof(svcs) / sizeof(svcs[0]); i++) {
                cJSON *j = cJSON_Parse(
                    svc_json(svcs[i].ns, svcs[i].name, svcs[i].uid, svcs[i].ip, svcs[i].ports));
                ck_assert_msg(ag_services_set(s, svcs[i].uid, j, &err) == 0, "%s", err.msg);
                cJSON_Delete(j);
        }
        ag_services_mark_synced(s);
        _cleanup_(cb_arena_freep) struct cb_arena *a = cb_arena_new(0);
        char **env;
        size_t n;
        ck_assert(ag_services_env(s, a, "app", true, &env, &n, &err) == 0);
        _cleanup_free_ char *got = joined(env, n);
        ck_assert_ptr_null(strstr(got, "HEADLESS"));
        ck_assert_ptr_null(strstr(got, "EXTERNAL"));
        /* the pod's namespace's kubernetes replaces default's */
        ck_assert_ptr_nonnull(strstr(got, "KUBERNETES_SERVICE_HOST=10.96.9.9\n"));
        ck_assert_ptr_null(strstr(got, "10.96.0.1"));
        /* IPv6 in brackets in the URLs, not in _ADDR; SCTP and UDP */
        ck_assert_ptr_nonnull(strstr(got, "SCTP_SVC_PORT=sctp://[fd00::20]:9999\n"
                                          "SCTP_SVC_PORT_9999_SCTP=sctp://[fd00::20]:9999\n"
                                          "SCTP_SVC_PORT_9999_SCTP_PROTO=sctp\n"
                                          "SCTP_SVC_PORT_9999_SCTP_PORT=9999\n"
                                          "SCTP_SVC_PORT_9999_SCTP_ADDR=fd00::20\n"
                                          "SCTP_SVC_PORT_53_UDP=udp://[fd00::20]:53\n"));
        ck_assert_ptr_nonnull(strstr(got, "SCTP_SVC_SERVICE_PORT_Q=53\n"));
        /* deleted: gone */
        ck_assert(ag_services_set(s, "u4", NULL, &err) == 0);
        ck_assert(ag_services_env(s, a, "app", true, &env, &n, &err) == 0);
        _cleanup_free_ char *after = joined(env, n);
        ck_assert_ptr_null(strstr(after, "SCTP_SVC"));
        ag_services_free(s);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("service_env");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_kubernetes_everywhere);
        tcase_add_test(tc, test_namespace_links);
        tcase_add_test(tc, test_rules);
        suite_add_tcase(s, tc);
        return th_run(s) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
