/* SPDX-License-Identifier: Apache-2.0 */
/* The configuration: defaults, the KubeletConfiguration file, flags over
 * the file, and every error path of the loader. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/cmd/config.h"

#include "helpers.h"

#define HEAD "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"

static int apply(struct ag_config *c, const char *text, struct cb_error *err)
{
        return ag_config_apply_text(c, text, strlen(text), err);
}

START_TEST(test_defaults)
{
        struct ag_config c;
        struct cb_error err = {0};
        ck_assert_int_eq(ag_config_init(&c, &err), 0);
        ck_assert_int_eq(ag_config_finish(&c, &err), 0);
        ck_assert_ptr_null(c.kubeconfig);
        ck_assert_ptr_null(c.static_pod_path);
        ck_assert_uint_eq(c.file_check_frequency_ms, 20000);
        ck_assert_int_eq(c.max_pods, 110);
        ck_assert_int_eq(c.pod_pids_limit, -1);
        ck_assert_uint_eq(c.node_status_update_ms, 10000);
        ck_assert_uint_eq(c.node_status_report_ms, 300000);
        ck_assert_int_eq(c.node_lease_duration_s, 40);
        ck_assert_str_eq(c.pod_logs_dir, "/var/log/pods");
        ck_assert_str_eq(c.cgroup_root, "");
        ck_assert(!c.cgroup_root_set);
        ck_assert_str_eq(c.healthz_bind_address, "127.0.0.1");
        ck_assert_int_eq(c.healthz_port, 10248);
        ck_assert_int_eq(c.crash_loop_backoff_initial_s, 10);
        ck_assert_int_eq(c.crash_loop_backoff_max_s, 300);
        const struct k8s_threshold *t = c.eviction_hard.t;
        ck_assert(t[K8S_SIGNAL_MEMORY_AVAILABLE].set);
        ck_assert(!t[K8S_SIGNAL_MEMORY_AVAILABLE].is_percentage);
        ck_assert_int_eq(t[K8S_SIGNAL_MEMORY_AVAILABLE].quantity.value, 100 << 20);
        ck_assert(t[K8S_SIGNAL_NODEFS_AVAILABLE].set);
        ck_assert(t[K8S_SIGNAL_NODEFS_AVAILABLE].is_percentage);
        ck_assert_double_eq_tol(t[K8S_SIGNAL_NODEFS_AVAILABLE].percentage, 0.10, 1e-6);
        ck_assert_double_eq_tol(t[K8S_SIGNAL_NODEFS_INODES_FREE].percentage, 0.05, 1e-6);
        ck_assert_double_eq_tol(t[K8S_SIGNAL_IMAGEFS_AVAILABLE].percentage, 0.15, 1e-6);
        ck_assert(!t[K8S_SIGNAL_PID_AVAILABLE].set);
        ck_assert(!t[K8S_SIGNAL_IMAGEFS_INODES_FREE].set);
        ck_assert_uint_eq(c.eviction_pressure_transition_ms, 300000);
        ag_config_clear(&c);
}
END_TEST

/* The node API's authorization defaults (issue 15): from flags only
 * AlwaysAllow and no webhook, as the kubelet's flags; from a config file
 * with a kubeconfig -- the systemd unit's own config.yaml -- Webhook
 * authentication and authorization, as the kubelet's file defaults. */
START_TEST(test_authorization_defaults)
{
        struct ag_config c;
        struct cb_error err = {0};
        char *flags[] = {"--kubeconfig", "/etc/cubelet/kubeconfig", NULL};
        ck_assert_int_eq(ag_config_init(&c, &err), 0);
        ck_assert_msg(ag_config_parse_flags(&c, 2, flags, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(ag_config_finish(&c, &err), 0);
        ck_assert_str_eq(c.authz_mode, "AlwaysAllow");
        ck_assert(!c.authz_webhook && !c.authn_webhook);
        ag_config_clear(&c);

        ck_assert_int_eq(ag_config_init(&c, &err), 0);
        ck_assert_msg(
            ag_config_load_file(&c, CUBELET_FIXTURES "/../../systemd/config.yaml", &err) == 0, "%s",
            err.msg);
        ck_assert_msg(ag_config_parse_flags(&c, 2, flags, &err) == 0, "%s", err.msg);
        ck_assert_msg(ag_config_finish(&c, &err) == 0, "%s", err.msg);
        ck_assert_str_eq(c.authz_mode, "Webhook");
        ck_assert(c.authz_webhook && c.authn_webhook);
        ck_assert(!c.anonymous);
        ag_config_clear(&c);
}
END_TEST

START_TEST(test_full_file)
{
        static const char *text = HEAD "staticPodPath: /etc/kubernetes/manifests\n"
                                       "fileCheckFrequency: 1m\n"
                                       "maxPods: 20\n"
                                       "podPidsLimit: 1024\n"
                                       "evictionHard:\n"
                                       "  memory.available: \"1Gi\"\n"
                                       "  pid.available: \"5%\"\n"
                                       "  nodefs.inodesFree: \"0%\"\n"
                                       "nodeStatusUpdateFrequency: 4s\n"
                                       "nodeLeaseDurationSeconds: 12\n"
                                       "registerWithTaints:\n"
                                       "- {key: dedicated, value: infra, effect: NoSchedule}\n"
                                       "- key: example.com/gpu\n"
                                       "  effect: NoExecute\n"
                                       "  timeAdded: null\n"
                                       "cgroupRoot: /cubelet-test\n"
                                       "podLogsDir: /tmp/logs\n"
                                       "crashLoopBackOff:\n"
                                       "  maxContainerRestartPeriod: 1m30s\n"
                                       "  initialContainerRestartPeriod: 2s\n"
                                       "insecureRegistries: [\"127.0.0.1:5000\", registry.local]\n"
                                       "healthzBindAddress: 127.0.0.2\n"
                                       "healthzPort: 0\n"
                                       "evictionPressureTransitionPeriod: 30s\n";
        struct ag_config c;
        struct cb_error err = {0};
        ck_assert_int_eq(ag_config_init(&c, &err), 0);
        ck_assert_msg(apply(&c, text, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(ag_config_finish(&c, &err), 0);
        ck_assert_str_eq(c.static_pod_path, "/etc/kubernetes/manifests");
        ck_assert_uint_eq(c.file_check_frequency_ms, 60000);
        ck_assert_int_eq(c.max_pods, 20);
        ck_assert_int_eq(c.pod_pids_limit, 1024);
        /* evictionHard replaces the defaults; "0%" unsets a signal. */
        const struct k8s_threshold *t = c.eviction_hard.t;
        ck_assert_int_eq(t[K8S_SIGNAL_MEMORY_AVAILABLE].quantity.value, 1LL << 30);
        ck_assert(t[K8S_SIGNAL_PID_AVAILABLE].set);
        ck_assert_double_eq_tol(t[K8S_SIGNAL_PID_AVAILABLE].percentage, 0.05, 1e-6);
        ck_assert(!t[K8S_SIGNAL_NODEFS_AVAILABLE].set);
        ck_assert(!t[K8S_SIGNAL_NODEFS_INODES_FREE].set);
        ck_assert(!t[K8S_SIGNAL_IMAGEFS_AVAILABLE].set);
        ck_assert_uint_eq(c.eviction_pressure_transition_ms, 30000);
        /* Only the update frequency: the report frequency follows it. */
        ck_assert_uint_eq(c.node_status_update_ms, 4000);
        ck_assert_uint_eq(c.node_status_report_ms, 4000);
        ck_assert_int_eq(c.node_lease_duration_s, 12);
        ck_assert_int_eq(cJSON_GetArraySize(c.register_with_taints), 2);
        char *taints = cJSON_PrintUnformatted(c.register_with_taints);
        ck_assert_str_eq(taints,
                         "[{\"key\":\"dedicated\",\"value\":\"infra\",\"effect\":\"NoSchedule\"},"
                         "{\"key\":\"example.com/gpu\",\"effect\":\"NoExecute\"}]");
        free(taints);
        ck_assert_str_eq(c.cgroup_root, "/cubelet-test");
        ck_assert(c.cgroup_root_set);
        ck_assert_str_eq(c.pod_logs_dir, "/tmp/logs");
        ck_assert_int_eq(c.crash_loop_backoff_max_s, 90);
        ck_assert_int_eq(c.crash_loop_backoff_initial_s, 2);
        ck_assert_uint_eq(c.n_insecure_registries, 2);
        ck_assert_str_eq(c.insecure_registries[0], "127.0.0.1:5000");
        ck_assert_str_eq(c.insecure_registries[1], "registry.local");
        ck_assert_str_eq(c.healthz_bind_address, "127.0.0.2");
        ck_assert_int_eq(c.healthz_port, 0);
        ag_config_clear(&c);
}
END_TEST

START_TEST(test_json_and_nulls)
{
        /* JSON is YAML; a key without a value leaves the option alone. */
        static const char *text = "{\"apiVersion\": \"kubelet.config.k8s.io/v1beta1\", \"kind\": "
                                  "\"KubeletConfiguration\", \"maxPods\": 7, \"staticPodPath\": "
                                  "null, \"nodeStatusReportFrequency\": \"1m\"}";
        struct ag_config c;
        struct cb_error err = {0};
        ck_assert_int_eq(ag_config_init(&c, &err), 0);
        ck_assert_msg(apply(&c, text, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(ag_config_finish(&c, &err), 0);
        ck_assert_int_eq(c.max_pods, 7);
        ck_assert_ptr_null(c.static_pod_path);
        ck_assert_uint_eq(c.node_status_update_ms, 10000);
        ck_assert_uint_eq(c.node_status_report_ms, 60000);
        ag_config_clear(&c);
}
END_TEST

/* Every error path of the file: the message names the key and why. */
START_TEST(test_file_errors)
{
        static const struct {
                const char *text, *want;
        } cases[] = {
            {"maxPods: 1\n", "apiVersion: missing: want kubelet.config.k8s.io/v1beta1"},
            {"apiVersion: v1\nkind: KubeletConfiguration\n",
             "apiVersion: \"v1\": want kubelet.config.k8s.io/v1beta1"},
            {"apiVersion: kubelet.config.k8s.io/v1beta1\nkind: Pod\n",
             "kind: \"Pod\": want KubeletConfiguration"},
            {"apiVersion: kubelet.config.k8s.io/v1beta1\n", "kind: missing"},
            {"- a\n- b\n", "want a KubeletConfiguration mapping"},
            {HEAD "maxPods: [1\n", "line "},
            {HEAD "foo: 1\n", "foo: unknown field"},
            {HEAD "crashLoopBackOff:\n  maxContainerRestartPeriod: 1m\n  bogus: 1\n",
             "crashLoopBackOff.bogus: unknown field"},
            {HEAD "crashLoopBackOff: 5m\n", "crashLoopBackOff: want a mapping, got \"5m\""},
            {HEAD "maxPods: 1\nmaxPods: 2\n", "maxPods: duplicate key"},
            {HEAD "maxPods: many\n", "maxPods: want an integer, got \"many\""},
            {HEAD "maxPods: \"110\"\n", "maxPods: want an integer, got \"110\""},
            {HEAD "maxPods: 1.5\n", "maxPods: want an integer, got 1.5"},
            {HEAD "maxPods: 0\n", "maxPods: 0: want an integer between 1 and 10000"},
            {HEAD "maxPods: 99999999999999999999\n", "maxPods: 99999999999999999999: want an "
                                                     "integer between"},
            {HEAD "podPidsLimit: -2\n", "podPidsLimit: -2: want an integer between -1 and"},
            {HEAD "healthzPort: 65536\n", "healthzPort: 65536: want an integer between 0 and "
                                          "65535"},
            {HEAD "nodeLeaseDurationSeconds: true\n",
             "nodeLeaseDurationSeconds: want an integer, got true"},
            {HEAD "nodeStatusUpdateFrequency: 10\n",
             "nodeStatusUpdateFrequency: want a string, got 10"},
            {HEAD "nodeStatusUpdateFrequency: 10x\n",
             "nodeStatusUpdateFrequency: \"10x\": want a duration like 10s"},
            {HEAD "nodeStatusUpdateFrequency: 10ms\n",
             "nodeStatusUpdateFrequency: \"10ms\": want a duration between 1s and 1h"},
            {HEAD "nodeStatusReportFrequency: 2d\n", "nodeStatusReportFrequency: \"2d\": want a "
                                                     "duration"},
            {HEAD "fileCheckFrequency: 0s\n", "fileCheckFrequency: \"0s\": want a duration "
                                              "between 1s and 1h"},
            {HEAD "crashLoopBackOff:\n  maxContainerRestartPeriod: 10m\n",
             "crashLoopBackOff.maxContainerRestartPeriod: \"10m\": want a duration between 1s and "
             "5m"},
            {HEAD "crashLoopBackOff:\n  maxContainerRestartPeriod: 1500ms\n",
             "crashLoopBackOff.maxContainerRestartPeriod: \"1500ms\": want whole seconds"},
            {HEAD "staticPodPath: \"\"\n", "staticPodPath: \"\": must not be empty"},
            {HEAD "staticPodPath: [a]\n", "staticPodPath: want a string, got a list"},
            {HEAD "podLogsDir: {a: b}\n", "podLogsDir: want a string, got a mapping"},
            {HEAD "evictionHard: 10%\n",
             "evictionHard: want a mapping of signal to threshold, got \"10%\""},
            {HEAD "evictionHard:\n  memory.available: \"10x\"\n",
             "evictionHard.memory.available: \"10x\": memory.available: invalid quantity \"10x\""},
            {HEAD "evictionHard:\n  memory.available: 100\n",
             "evictionHard.memory.available: want a string like \"100Mi\" or \"10%\", got 100"},
            {HEAD "evictionHard:\n  memory.available: \"-1Mi\"\n",
             "evictionHard.memory.available: \"-1Mi\": eviction threshold memory.available must "
             "be positive"},
            {HEAD "evictionHard:\n  memory.available: \"0\"\n",
             "evictionHard.memory.available: \"0\": eviction threshold memory.available must be "
             "positive"},
            {HEAD "evictionHard:\n  nodefs.available: \"101%\"\n",
             "evictionHard.nodefs.available: \"101%\": eviction percentage threshold "
             "nodefs.available must be <= 100%"},
            {HEAD "evictionHard:\n  nodefs.available: \"-5%\"\n",
             "evictionHard.nodefs.available: \"-5%\": eviction percentage threshold "
             "nodefs.available must be >= 0%"},
            {HEAD "evictionHard:\n  nodefs.available: \"%\"\n",
             "evictionHard.nodefs.available: \"%\": nodefs.available: invalid percentage"},
            {HEAD "evictionHard:\n  nodefs.available: \"\"\n",
             "evictionHard.nodefs.available: \"\": nodefs.available: invalid quantity \"\""},
            {HEAD "evictionHard:\n  memory.free: \"1Mi\"\n",
             "evictionHard.memory.free: \"1Mi\": unsupported eviction signal \"memory.free\" "
             "(want memory.available"},
            {HEAD "evictionHard:\n  memory.available: 1Mi\n  memory.available: 2Mi\n",
             "evictionHard.memory.available: duplicate key"},
            {HEAD "registerWithTaints: a=b:NoSchedule\n",
             "registerWithTaints: want a list of taints, got \"a=b:NoSchedule\""},
            {HEAD "registerWithTaints: [x]\n", "registerWithTaints[0]: want a taint {key, value, "
                                               "effect}, got \"x\""},
            {HEAD "registerWithTaints:\n- {key: a, effect: NoSchedule}\n- {effect: NoSchedule}\n",
             "registerWithTaints[1].key: required"},
            {HEAD "registerWithTaints:\n- {key: a}\n", "registerWithTaints[0].effect: required"},
            {HEAD "registerWithTaints:\n- {key: a, effect: Sometimes}\n",
             "registerWithTaints[0]: invalid effect \"Sometimes\""},
            {HEAD "registerWithTaints:\n- {key: a, effect: NoSchedule, color: red}\n",
             "registerWithTaints[0].color: unknown field"},
            {HEAD "registerWithTaints:\n- {key: a, value: 1, effect: NoSchedule}\n",
             "registerWithTaints[0].value: want a string, got 1"},
            {HEAD "registerWithTaints:\n- {key: \"a b\", effect: NoSchedule}\n",
             "registerWithTaints[0]: invalid key \"a b\""},
            {HEAD "registerWithTaints:\n- {key: a:b, effect: NoSchedule}\n",
             "registerWithTaints[0]: invalid taint"},
            {HEAD "registerWithTaints:\n- {key: a, key: b, effect: NoSchedule}\n",
             "registerWithTaints[0].key: duplicate key"},
            {HEAD "insecureRegistries: reg:5000\n",
             "insecureRegistries: want a list of HOST:PORT strings, got \"reg:5000\""},
            {HEAD "insecureRegistries: [\"http://reg:5000\"]\n",
             "insecureRegistries[0]: want a registry HOST or HOST:PORT, got \"http://reg:5000\""},
            {HEAD "insecureRegistries: [5000]\n",
             "insecureRegistries[0]: want a registry HOST or HOST:PORT, got 5000"},
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct ag_config c;
                struct cb_error err = {0};
                ck_assert_int_eq(ag_config_init(&c, &err), 0);
                ck_assert_msg(apply(&c, cases[i].text, &err) == -1, "case %zu accepted: %s", i,
                              cases[i].text);
                ck_assert_msg(strstr(err.msg, cases[i].want) != NULL,
                              "case %zu: got \"%s\", want \"%s\"", i, err.msg, cases[i].want);
                ag_config_clear(&c);
        }
}
END_TEST

static char *write_tmp(const char *text)
{
        char *path = strdup("/tmp/cubelet-test-config-XXXXXX");
        int fd = mkstemp(path);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
        close(fd);
        return path;
}

START_TEST(test_flags_override_file)
{
        char *path = write_tmp(HEAD "maxPods: 20\nnodeStatusReportFrequency: 1m\n"
                                    "insecureRegistries: [a:1, b:2]\nstaticPodPath: /etc/m\n"
                                    "evictionHard: {memory.available: 1Gi}\n");
        char a_config[300];
        snprintf(a_config, sizeof(a_config), "--config=%s", path);
        /* --config last: the flags still win, wherever they stand. */
        char *argv[] = {"--max-pods",
                        "30",
                        "--insecure-registry",
                        "c:3",
                        "--node-status-update-frequency=5s",
                        "--eviction-hard",
                        "nodefs.available<20%,pid.available<1k",
                        "--kubeconfig",
                        "/k",
                        "--cgroup-root",
                        "",
                        a_config};
        struct ag_config c;
        struct cb_error err = {0};
        ck_assert_int_eq(ag_config_init(&c, &err), 0);
        ck_assert_msg(
            ag_config_parse_flags(&c, (int)(sizeof(argv) / sizeof(argv[0])), argv, &err) == 0, "%s",
            err.msg);
        ck_assert_int_eq(ag_config_finish(&c, &err), 0);
        ck_assert_str_eq(c.config_path, path);
        ck_assert_int_eq(c.max_pods, 30);
        ck_assert_str_eq(c.static_pod_path, "/etc/m");
        ck_assert_str_eq(c.kubeconfig, "/k");
        /* The file set the report frequency: the flag's update frequency
         * does not change it. */
        ck_assert_uint_eq(c.node_status_update_ms, 5000);
        ck_assert_uint_eq(c.node_status_report_ms, 60000);
        /* Flags replace the file's list. */
        ck_assert_uint_eq(c.n_insecure_registries, 1);
        ck_assert_str_eq(c.insecure_registries[0], "c:3");
        ck_assert(!c.eviction_hard.t[K8S_SIGNAL_MEMORY_AVAILABLE].set);
        ck_assert_double_eq_tol(c.eviction_hard.t[K8S_SIGNAL_NODEFS_AVAILABLE].percentage, 0.2,
                                1e-6);
        ck_assert_int_eq(c.eviction_hard.t[K8S_SIGNAL_PID_AVAILABLE].quantity.value, 1000);
        ck_assert(c.cgroup_root_set);
        ag_config_clear(&c);
        unlink(path);
        free(path);
}
END_TEST

/* --bootstrap-kubeconfig and rotateCertificates (issue 19). */
START_TEST(test_bootstrap_options)
{
        struct cb_error err = {0};
        struct ag_config c;
        /* without a bootstrap kubeconfig rotation is off, as in the kubelet */
        char *plain[] = {"--kubeconfig", "/k"};
        ck_assert_int_eq(ag_config_init(&c, &err), 0);
        ck_assert_int_eq(ag_config_parse_flags(&c, 2, plain, &err), 0);
        ck_assert_int_eq(ag_config_finish(&c, &err), 0);
        ck_assert(!c.rotate_certificates);
        ag_config_clear(&c);
        /* with one it is on unless set */
        char *boot[] = {"--bootstrap-kubeconfig", "/b", "--kubeconfig", "/k"};
        ck_assert_int_eq(ag_config_init(&c, &err), 0);
        ck_assert_int_eq(ag_config_parse_flags(&c, 4, boot, &err), 0);
        ck_assert_int_eq(ag_config_finish(&c, &err), 0);
        ck_assert_str_eq(c.bootstrap_kubeconfig, "/b");
        ck_assert(c.rotate_certificates);
        ag_config_clear(&c);
        char *path = write_tmp(HEAD "rotateCertificates: false\n");
        char a_config[300];
        snprintf(a_config, sizeof(a_config), "--config=%s", path);
        char *off[] = {"--bootstrap-kubeconfig", "/b", "--kubeconfig", "/k", a_config};
        ck_assert_int_eq(ag_config_init(&c, &err), 0);
        ck_assert_msg(ag_config_parse_flags(&c, 5, off, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(ag_config_finish(&c, &err), 0);
        ck_assert(!c.rotate_certificates);
        ag_config_clear(&c);
        unlink(path);
        free(path);
        /* a bootstrap needs the kubeconfig it writes */
        char *alone[] = {"--bootstrap-kubeconfig", "/b", "--rotate-certificates=false"};
        ck_assert_int_eq(ag_config_init(&c, &err), 0);
        ck_assert_int_eq(ag_config_parse_flags(&c, 3, alone, &err), 0);
        ck_assert_int_eq(ag_config_finish(&c, &err), -1);
        ck_assert_str_eq(err.msg, "--bootstrap-kubeconfig needs --kubeconfig: the file the "
                                  "bootstrap writes and the agent then uses");
        ag_config_clear(&c);
        /* serverTLSBootstrap: off by default, the file's key or the
         * kubelet's --rotate-server-certificates; it needs the apiserver */
        char *kc_only[] = {"--kubeconfig", "/k"};
        ck_assert_int_eq(ag_config_init(&c, &err), 0);
        ck_assert_int_eq(ag_config_parse_flags(&c, 2, kc_only, &err), 0);
        ck_assert_int_eq(ag_config_finish(&c, &err), 0);
        ck_assert(!c.napi.server_tls_bootstrap);
        ag_config_clear(&c);
        path = write_tmp(HEAD "serverTLSBootstrap: true\n");
        snprintf(a_config, sizeof(a_config), "--config=%s", path);
        char *stb[] = {"--kubeconfig", "/k", a_config};
        ck_assert_int_eq(ag_config_init(&c, &err), 0);
        ck_assert_msg(ag_config_parse_flags(&c, 3, stb, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(ag_config_finish(&c, &err), 0);
        ck_assert(c.napi.server_tls_bootstrap);
        ag_config_clear(&c);
        char *stb_off[] = {"--kubeconfig", "/k", a_config, "--rotate-server-certificates=false"};
        ck_assert_int_eq(ag_config_init(&c, &err), 0);
        ck_assert_msg(ag_config_parse_flags(&c, 4, stb_off, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(ag_config_finish(&c, &err), 0);
        ck_assert(!c.napi.server_tls_bootstrap); /* the flag wins over the file */
        ag_config_clear(&c);
        unlink(path);
        free(path);
        path = write_tmp(HEAD "serverTLSBootstrap: \"yes\"\n");
        snprintf(a_config, sizeof(a_config), "--config=%s", path);
        char *bad[] = {"--kubeconfig", "/k", a_config};
        ck_assert_int_eq(ag_config_init(&c, &err), 0);
        ck_assert_int_eq(ag_config_parse_flags(&c, 3, bad, &err), -1);
        ck_assert_msg(strstr(err.msg, "serverTLSBootstrap: want true or false") != NULL, "%s",
                      err.msg);
        ag_config_clear(&c);
        unlink(path);
        free(path);
        char *no_api[] = {"--rotate-server-certificates"};
        ck_assert_int_eq(ag_config_init(&c, &err), 0);
        ck_assert_int_eq(ag_config_parse_flags(&c, 1, no_api, &err), 0);
        ck_assert_int_eq(ag_config_finish(&c, &err), -1);
        ck_assert_str_eq(err.msg, "serverTLSBootstrap (--rotate-server-certificates) asks the "
                                  "apiserver for the serving certificate: it needs --kubeconfig");
        ag_config_clear(&c);
}
END_TEST

START_TEST(test_flag_errors)
{
        static const struct {
                const char *args[3];
                const char *want;
        } cases[] = {
            {{"--bogus"}, "unknown flag or command \"--bogus\""},
            {{"--max-pods"}, "--max-pods needs a value"},
            {{"--max-pods", "x"}, "--max-pods: \"x\": want an integer between 1 and 10000"},
            {{"--node-status-update-frequency", "10"},
             "--node-status-update-frequency: \"10\": want a duration"},
            {{"--crash-loop-backoff-max", "301"},
             "--crash-loop-backoff-max: \"301\": want an integer between 1 and 300"},
            {{"--crash-loop-backoff-base", "60", "--crash-loop-backoff-max=30"},
             "crashLoopBackOff.initialContainerRestartPeriod (60s, --crash-loop-backoff-base) "
             "must not exceed"},
            {{"--eviction-hard", "memory.available=1Gi"},
             "--eviction-hard: malformed pair \"memory.available=1Gi\""},
            {{"--eviction-hard", "memory.available<1Q"},
             "--eviction-hard: memory.available: invalid quantity \"1Q\""},
            {{"--eviction-pressure-transition-period", "0s"},
             "--eviction-pressure-transition-period: \"0s\": want a duration between 1s and 24h"},
            {{"--register-with-taints", "a=b:Never"}, "--register-with-taints: invalid effect"},
            {{"--insecure-registry", "http://x"}, "--insecure-registry: \"http://x\""},
            {{"--pod-manifest-path="}, "--pod-manifest-path: \"\": must not be empty"},
            {{"--config"}, "--config needs a value"},
            {{"--config", "/nonexistent/cubelet.yaml"}, "/nonexistent/cubelet.yaml"},
            {{"--config=/dev/null"}, "/dev/null: the text holds no document"},
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char *argv[3];
                int argc = 0;
                while (argc < 3 && cases[i].args[argc] != NULL) {
                        argv[argc] = (char *)cases[i].args[argc];
                        argc++;
                }
                struct ag_config c;
                struct cb_error err = {0};
                ck_assert_int_eq(ag_config_init(&c, &err), 0);
                int r = ag_config_parse_flags(&c, argc, argv, &err);
                if (r == 0)
                        r = ag_config_finish(&c, &err);
                ck_assert_msg(r == -1, "case %zu accepted", i);
                ck_assert_msg(strstr(err.msg, cases[i].want) != NULL,
                              "case %zu: got \"%s\", want \"%s\"", i, err.msg, cases[i].want);
                ag_config_clear(&c);
        }
}
END_TEST

START_TEST(test_help_and_twice)
{
        char *path = write_tmp(HEAD);
        char *help[] = {"--max-pods", "3", "-h"};
        struct ag_config c;
        struct cb_error err = {0};
        ck_assert_int_eq(ag_config_init(&c, &err), 0);
        ck_assert_int_eq(ag_config_parse_flags(&c, 3, help, &err), 1);
        ag_config_clear(&c);
        char *twice[] = {"--config", path, "--config", path};
        ck_assert_int_eq(ag_config_init(&c, &err), 0);
        ck_assert_int_eq(ag_config_parse_flags(&c, 4, twice, &err), -1);
        ck_assert_str_eq(err.msg, "--config given twice");
        ag_config_clear(&c);
        unlink(path);
        free(path);
}
END_TEST

START_TEST(test_dns_options)
{
        struct ag_config c;
        struct cb_error err = {0};
        ck_assert_int_eq(ag_config_init(&c, &err), 0);
        ck_assert_str_eq(c.resolv_conf, "/etc/resolv.conf");
        ck_assert_ptr_null(c.cluster_dns);
        ck_assert_msg(apply(&c,
                            HEAD "clusterDNS: [10.96.0.10, \"fd00::a\"]\nclusterDomain: "
                                 "cluster.local\nresolvConf: /run/systemd/resolve/resolv.conf\n",
                            &err) == 0,
                      "%s", err.msg);
        ck_assert_str_eq(c.cluster_dns, "10.96.0.10,fd00::a");
        ck_assert_str_eq(c.cluster_domain, "cluster.local");
        ck_assert_str_eq(c.resolv_conf, "/run/systemd/resolve/resolv.conf");
        char *argv[] = {"--cluster-dns", "10.0.0.10", "--resolv-conf", ""};
        ck_assert_msg(ag_config_parse_flags(&c, 4, argv, &err) == 0, "%s", err.msg);
        ck_assert_str_eq(c.cluster_dns, "10.0.0.10");
        ck_assert_str_eq(c.resolv_conf, "");
        ck_assert_int_eq(apply(&c, HEAD "clusterDNS: [10.96.0.300]\n", &err), -1);
        ck_assert_str_eq(err.msg, "clusterDNS: \"10.96.0.300\" is not an IP address");
        ck_assert_int_eq(apply(&c, HEAD "clusterDNS: 10.96.0.10\n", &err), -1);
        ck_assert_str_eq(err.msg, "clusterDNS: want a list of IP addresses, got \"10.96.0.10\"");
        char *bad[] = {"--cluster-dns=dns.local"};
        ck_assert_int_eq(ag_config_parse_flags(&c, 1, bad, &err), -1);
        ck_assert_ptr_nonnull(strstr(err.msg, "\"dns.local\" is not an IP address"));
        ag_config_clear(&c);
}
END_TEST

/* Container log rotation (issue 15 item 14): the kubelet's keys, defaults
 * and limits (containerLogMaxFiles > 1, containerLogMaxWorkers >= 1,
 * containerLogMonitorInterval >= 3s); the size is a quantity. */
START_TEST(test_container_log_options)
{
        struct ag_config c;
        struct cb_error err = {0};
        ck_assert_int_eq(ag_config_init(&c, &err), 0);
        ck_assert_int_eq(c.container_log_max_size, 10 << 20);
        ck_assert_int_eq(c.container_log_max_files, 5);
        ck_assert_int_eq(c.container_log_max_workers, 1);
        ck_assert_uint_eq(c.container_log_monitor_interval_ms, 10000);
        ck_assert_msg(apply(&c,
                            HEAD "containerLogMaxSize: 50Ki\ncontainerLogMaxFiles: 3\n"
                                 "containerLogMaxWorkers: 2\ncontainerLogMonitorInterval: 3s\n",
                            &err) == 0,
                      "%s", err.msg);
        ck_assert_int_eq(c.container_log_max_size, 50 << 10);
        ck_assert_int_eq(c.container_log_max_files, 3);
        ck_assert_int_eq(c.container_log_max_workers, 2);
        ck_assert_uint_eq(c.container_log_monitor_interval_ms, 3000);
        char *argv[] = {"--container-log-max-size", "1M", "--container-log-max-files=4"};
        ck_assert_msg(ag_config_parse_flags(&c, 3, argv, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(c.container_log_max_size, 1000000);
        ck_assert_int_eq(c.container_log_max_files, 4);
        char *off[] = {"--container-log-max-size=-1"};
        ck_assert_msg(ag_config_parse_flags(&c, 1, off, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(c.container_log_max_size, -1);
        static const struct {
                const char *text, *want;
        } bad[] = {
            {HEAD "containerLogMaxFiles: 1\n",
             "containerLogMaxFiles: 1: want an integer between 2 and 1000"},
            {HEAD "containerLogMaxWorkers: 0\n",
             "containerLogMaxWorkers: 0: want an integer between 1 and 16"},
            {HEAD "containerLogMonitorInterval: 2s\n",
             "containerLogMonitorInterval: \"2s\": want a duration between 3s and 24h"},
            {HEAD "containerLogMaxSize: 10XB\n", "containerLogMaxSize: \"10XB\": invalid quantity"},
            {HEAD "containerLogMaxSize: 10\n", "containerLogMaxSize: want a string, got 10"},
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                ck_assert_int_eq(apply(&c, bad[i].text, &err), -1);
                ck_assert_msg(strstr(err.msg, bad[i].want) != NULL, "%s: got %s", bad[i].want,
                              err.msg);
        }
        char *flag_bad[] = {"--container-log-max-files", "1"};
        ck_assert_int_eq(ag_config_parse_flags(&c, 2, flag_bad, &err), -1);
        ck_assert_msg(strstr(err.msg, "--container-log-max-files: \"1\": want an integer "
                                      "between 2 and 1000") != NULL,
                      "%s", err.msg);
        ag_config_clear(&c);
}
END_TEST

START_TEST(test_usage_lists_every_flag)
{
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        ag_config_usage(f);
        fclose(f);
        static const char *const flags[] = {
            "--config FILE",
            "--kubeconfig FILE",
            "--pod-manifest-path DIR  [staticPodPath]",
            "--max-pods N  [maxPods]",
            "[evictionHard]",
            "[nodeStatusUpdateFrequency]",
            "[nodeStatusReportFrequency]",
            "[nodeLeaseDurationSeconds]",
            "[registerWithTaints]",
            "[cgroupRoot]",
            "[crashLoopBackOff.maxContainerRestartPeriod]",
            "[insecureRegistries]",
            "--cluster-dns IP,...  [clusterDNS]",
            "--container-log-max-size QUANTITY  [containerLogMaxSize]",
            "--container-log-max-files N  [containerLogMaxFiles]",
            "[clusterDomain]",
            "[resolvConf]",
            "[healthzBindAddress]",
            "--healthz-port N  [healthzPort]",
            "[podLogsDir]",
            "default 10248",
            "default 110",
        };
        for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
                ck_assert_msg(strstr(buf, flags[i]) != NULL, "usage lacks %s", flags[i]);
        free(buf);
}
END_TEST

/* Image garbage collection: the kubelet's defaults, keys, flags and its
 * validation messages (pkg/kubelet/apis/config/validation). */
START_TEST(test_image_gc_options)
{
        struct ag_config c;
        struct cb_error err = {0};
        ck_assert_int_eq(ag_config_init(&c, &err), 0);
        ck_assert_int_eq(ag_config_finish(&c, &err), 0);
        ck_assert_int_eq(c.image_gc_high_threshold_percent, 85);
        ck_assert_int_eq(c.image_gc_low_threshold_percent, 80);
        ck_assert_uint_eq(c.image_minimum_gc_age_ms, 120000);
        ck_assert_uint_eq(c.image_maximum_gc_age_ms, 0);
        ck_assert_uint_eq(c.image_gc_period_ms, 300000);
        ck_assert_int_eq(apply(&c,
                               HEAD "imageGCHighThresholdPercent: 70\nimageGCLowThresholdPercent: "
                                    "50\nimageMinimumGCAge: 30s\nimageMaximumGCAge: 1h\n",
                               &err),
                         0);
        ck_assert_int_eq(ag_config_finish(&c, &err), 0);
        ck_assert_int_eq(c.image_gc_high_threshold_percent, 70);
        ck_assert_int_eq(c.image_gc_low_threshold_percent, 50);
        ck_assert_uint_eq(c.image_minimum_gc_age_ms, 30000);
        ck_assert_uint_eq(c.image_maximum_gc_age_ms, 3600000);
        char *argv[] = {"--image-gc-high-threshold=90", "--image-gc-low-threshold", "60",
                        "--minimum-image-ttl-duration=1m", "--image-gc-period=2s"};
        ck_assert_int_eq(ag_config_parse_flags(&c, 5, argv, &err), 0);
        ck_assert_int_eq(ag_config_finish(&c, &err), 0);
        ck_assert_int_eq(c.image_gc_high_threshold_percent, 90);
        ck_assert_int_eq(c.image_gc_low_threshold_percent, 60);
        ck_assert_uint_eq(c.image_minimum_gc_age_ms, 60000);
        ck_assert_uint_eq(c.image_gc_period_ms, 2000);
        ag_config_clear(&c);

        static const struct {
                const char *doc, *msg;
        } bad[] = {
            {"imageGCHighThresholdPercent: 101\n",
             "invalid configuration: imageGCHighThresholdPercent (--image-gc-high-threshold) 101 "
             "must be between 0 and 100, inclusive"},
            {"imageGCLowThresholdPercent: -1\n",
             "invalid configuration: imageGCLowThresholdPercent (--image-gc-low-threshold) -1 "
             "must be between 0 and 100, inclusive"},
            {"imageGCLowThresholdPercent: 85\n",
             "invalid configuration: imageGCLowThresholdPercent (--image-gc-low-threshold) 85 "
             "must be less than imageGCHighThresholdPercent (--image-gc-high-threshold) 85"},
            {"imageMaximumGCAge: 1m\n",
             "invalid configuration: imageMaximumGCAge 1m0s must be greater than "
             "imageMinimumGCAge 2m0s"},
            {"imageMaximumGCAge: 90s\nimageMinimumGCAge: 1m30s\n",
             "invalid configuration: imageMaximumGCAge 1m30s must be greater than "
             "imageMinimumGCAge 1m30s"},
            {"imageGCHighThresholdPercent: 101\nimageGCLowThresholdPercent: 200\n",
             "[invalid configuration: imageGCHighThresholdPercent (--image-gc-high-threshold) "
             "101 must be between 0 and 100, inclusive, invalid configuration: "
             "imageGCLowThresholdPercent (--image-gc-low-threshold) 200 must be between 0 and "
             "100, inclusive, invalid configuration: imageGCLowThresholdPercent "
             "(--image-gc-low-threshold) 200 must be less than imageGCHighThresholdPercent "
             "(--image-gc-high-threshold) 101]"},
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                char doc[512];
                snprintf(doc, sizeof(doc), HEAD "%s", bad[i].doc);
                ck_assert_int_eq(ag_config_init(&c, &err), 0);
                ck_assert_int_eq(apply(&c, doc, &err), 0);
                ck_assert_int_eq(ag_config_finish(&c, &err), -1);
                ck_assert_str_eq(err.msg, bad[i].msg);
                ag_config_clear(&c);
        }
        /* 100 with no maximum age is valid: the collector is off */
        ck_assert_int_eq(ag_config_init(&c, &err), 0);
        ck_assert_int_eq(apply(&c, HEAD "imageGCHighThresholdPercent: 100\n", &err), 0);
        ck_assert_int_eq(ag_config_finish(&c, &err), 0);
        ck_assert_int_eq(apply(&c, HEAD "imageMinimumGCAge: soon\n", &err), -1);
        ck_assert_ptr_nonnull(strstr(err.msg, "imageMinimumGCAge"));
        ag_config_clear(&c);
}
END_TEST

/* Graceful node shutdown (issue 19): file keys only, the kubelet's
 * validation of the two periods. */
START_TEST(test_shutdown_options)
{
        struct ag_config c;
        struct cb_error err = {0};
        ck_assert_int_eq(ag_config_init(&c, &err), 0);
        ck_assert_uint_eq(c.shutdown_grace_ms, 0);
        ck_assert_uint_eq(c.shutdown_grace_critical_ms, 0);
        ck_assert_msg(apply(&c,
                            HEAD "shutdownGracePeriod: 30s\nshutdownGracePeriodCriticalPods: 10s\n",
                            &err) == 0,
                      "%s", err.msg);
        ck_assert_int_eq(ag_config_finish(&c, &err), 0);
        ck_assert_uint_eq(c.shutdown_grace_ms, 30000);
        ck_assert_uint_eq(c.shutdown_grace_critical_ms, 10000);
        ag_config_clear(&c);
        static const struct {
                const char *doc, *msg;
        } bad[] = {
            {"shutdownGracePeriod: 10s\nshutdownGracePeriodCriticalPods: 20s\n",
             "invalid configuration: shutdownGracePeriodCriticalPods 20s must be <= "
             "shutdownGracePeriod 10s"},
            {"shutdownGracePeriodCriticalPods: 5s\n",
             "invalid configuration: shutdownGracePeriodCriticalPods 5s must be <= "
             "shutdownGracePeriod 0s"},
            {"shutdownGracePeriod: 500ms\n",
             "invalid configuration: shutdownGracePeriod 500ms must be either zero or otherwise "
             ">= 1 sec"},
            {"shutdownGracePeriod: 10s\nshutdownGracePeriodCriticalPods: 300ms\n",
             "invalid configuration: shutdownGracePeriodCriticalPods 300ms must be either zero "
             "or otherwise >= 1 sec"},
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                char doc[512];
                snprintf(doc, sizeof(doc), HEAD "%s", bad[i].doc);
                ck_assert_int_eq(ag_config_init(&c, &err), 0);
                ck_assert_msg(apply(&c, doc, &err) == 0, "%s", err.msg);
                ck_assert_int_eq(ag_config_finish(&c, &err), -1);
                ck_assert_str_eq(err.msg, bad[i].msg);
                ag_config_clear(&c);
        }
        /* a duration, not a number; and no flag, like the kubelet */
        ck_assert_int_eq(ag_config_init(&c, &err), 0);
        ck_assert_int_eq(apply(&c, HEAD "shutdownGracePeriod: -5s\n", &err), -1);
        ck_assert_ptr_nonnull(strstr(err.msg, "shutdownGracePeriod"));
        char *argv[] = {"--shutdown-grace-period", "10s"};
        ck_assert_int_eq(ag_config_parse_flags(&c, 2, argv, &err), -1);
        ag_config_clear(&c);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("config");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_defaults);
        tcase_add_test(tc, test_bootstrap_options);
        tcase_add_test(tc, test_authorization_defaults);
        tcase_add_test(tc, test_full_file);
        tcase_add_test(tc, test_json_and_nulls);
        tcase_add_test(tc, test_file_errors);
        tcase_add_test(tc, test_flags_override_file);
        tcase_add_test(tc, test_flag_errors);
        tcase_add_test(tc, test_help_and_twice);
        tcase_add_test(tc, test_usage_lists_every_flag);
        tcase_add_test(tc, test_dns_options);
        tcase_add_test(tc, test_container_log_options);
        tcase_add_test(tc, test_image_gc_options);
        tcase_add_test(tc, test_shutdown_options);
        suite_add_tcase(s, tc);
        return th_run(s) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
