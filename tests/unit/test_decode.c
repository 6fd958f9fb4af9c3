/* SPDX-License-Identifier: Apache-2.0 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "agent/k8s/k8s.h"
#include "lib/cleanup.h"

#include "helpers.h"

#define FX(rel) CUBELET_FIXTURES "/" rel

static cJSON *load(const char *path)
{
        struct cb_error err = {0};
        cJSON *j = NULL;
        ck_assert_msg(k8s_parse_file(path, &j, &err) == 0, "%s: %s", path, err.msg);
        return j;
}

static struct k8s_pod *pod_from(const cJSON *j)
{
        struct cb_error err = {0};
        struct k8s_pod *p = NULL;
        ck_assert_msg(k8s_pod_from_json(j, &p, &err) == 0, "%s", err.msg);
        return p;
}

static struct k8s_pod *pod(const char *path)
{
        _cleanup_cjson_ cJSON *j = load(path);
        return pod_from(j);
}

static struct k8s_node *node(const char *path)
{
        _cleanup_cjson_ cJSON *j = load(path);
        struct cb_error err = {0};
        struct k8s_node *n = NULL;
        ck_assert_msg(k8s_node_from_json(j, &n, &err) == 0, "%s: %s", path, err.msg);
        return n;
}

static const struct k8s_quantity *res(const struct k8s_resource_list *l, const char *name)
{
        const struct k8s_quantity *q = k8s_resource_get(l, name);
        ck_assert_msg(q != NULL, "resource %s missing", name);
        return q;
}

/* Decodes text and expects failure with a message containing want. */
static void expect_pod_error(const char *text, const char *want)
{
        struct cb_error err = {0};
        cJSON *j = NULL;
        struct k8s_pod *p = NULL;
        int r = k8s_parse_text(text, strlen(text), &j, &err);
        if (r == 0) {
                r = k8s_pod_from_json(j, &p, &err);
                cJSON_Delete(j);
        }
        ck_assert_msg(r < 0, "accepted: %s", text);
        ck_assert(p == NULL);
        ck_assert_msg(strstr(err.msg, want) != NULL, "got \"%s\", want \"%s\"", err.msg, want);
}

/* ---- pods ---- */

START_TEST(test_pod_guaranteed_integer_cpu)
{
        struct k8s_pod *p = pod(FX("pods/pod-guaranteed-cpu-integer-quantity.yaml"));
        ck_assert_str_eq(p->meta.name, "exclusive-1");
        ck_assert_int_eq(p->spec.n_containers, 1);
        const struct k8s_container *c = &p->spec.containers[0];
        ck_assert_str_eq(c->image, "quay.io/connordoyle/cpuset-visualizer");
        /* cpu: 1 is an unquoted YAML number, kept as the text "1" */
        ck_assert_int_eq(res(&c->resources.requests, "cpu")->milli, 1000);
        ck_assert_str_eq(res(&c->resources.requests, "cpu")->text, "1");
        ck_assert_int_eq(res(&c->resources.limits, "memory")->value, 256000000);
        ck_assert_int_eq(p->spec.restart_policy, K8S_RESTART_ALWAYS);
        ck_assert(!p->spec.has_termination_grace_period);
        ck_assert_int_eq(p->spec.termination_grace_period_seconds, 30);
        k8s_pod_free(p);
}
END_TEST

START_TEST(test_pod_hostport)
{
        struct k8s_pod *p = pod(FX("pods/pod-hostport-80-requests.yaml"));
        ck_assert(p->meta.name == NULL);
        ck_assert_str_eq(p->meta.generate_name, "pod-hostport-80-");
        const struct k8s_container *c = &p->spec.containers[0];
        ck_assert_str_eq(c->name, "pause");
        ck_assert_int_eq(c->n_ports, 1);
        ck_assert_int_eq(c->ports[0].container_port, 80);
        ck_assert_int_eq(c->ports[0].host_port, 80);
        ck_assert_int_eq(c->ports[0].protocol, K8S_PROTO_TCP);
        ck_assert_int_eq(res(&c->resources.requests, "cpu")->milli, 100);
        ck_assert_int_eq(res(&c->resources.requests, "memory")->value, 100 << 20);
        ck_assert_int_eq(c->resources.limits.n, 0);
        k8s_pod_free(p);
}
END_TEST

START_TEST(test_pod_liveness_httpget)
{
        struct k8s_pod *p = pod(FX("pods/pod-liveness-httpget-headers.yaml"));
        const struct k8s_probe *pr = &p->spec.containers[0].liveness_probe;
        ck_assert(pr->present);
        ck_assert_int_eq(pr->handler.kind, K8S_HANDLER_HTTP_GET);
        ck_assert_str_eq(pr->handler.path, "/healthz");
        ck_assert_int_eq(pr->handler.port, 8080);
        ck_assert(pr->handler.port_name == NULL);
        ck_assert_str_eq(pr->handler.scheme, "HTTP");
        ck_assert_int_eq(pr->handler.n_headers, 1);
        ck_assert_str_eq(pr->handler.headers[0].name, "X-Custom-Header");
        ck_assert_str_eq(pr->handler.headers[0].value, "Awesome");
        ck_assert_int_eq(pr->initial_delay_seconds, 15);
        ck_assert_int_eq(pr->timeout_seconds, 1);
        ck_assert_int_eq(pr->period_seconds, 10);
        ck_assert_int_eq(pr->success_threshold, 1);
        ck_assert_int_eq(pr->failure_threshold, 3);
        ck_assert(!p->spec.containers[0].readiness_probe.present);
        ck_assert_str_eq(p->spec.containers[0].args[0], "/server");
        k8s_pod_free(p);
}
END_TEST

START_TEST(test_pod_affinity_required)
{
        struct k8s_pod *p = pod(FX("pods/pod-nodeaffinity-required-in-requests-limits.yaml"));
        const struct k8s_node_affinity *na = &p->spec.node_affinity;
        ck_assert(na->has_required);
        ck_assert_int_eq(na->n_required_terms, 1);
        const struct k8s_requirement *r = &na->required_terms[0].match_expressions[0];
        ck_assert_str_eq(r->key, "topology.kubernetes.io/zone");
        ck_assert_int_eq(r->op, K8S_OP_IN);
        ck_assert_int_eq(r->n_values, 2);
        ck_assert_str_eq(r->values[0], "zone1");
        ck_assert_str_eq(r->values[1], "zone2");
        const struct k8s_container *c = &p->spec.containers[0];
        ck_assert_int_eq(res(&c->resources.limits, "memory")->value, 500 << 20);
        ck_assert_int_eq(res(&c->resources.limits, "cpu")->milli, 100);
        k8s_pod_free(p);
}
END_TEST

START_TEST(test_pod_int_precision_json)
{
        struct k8s_pod *p = pod(FX("pods/pod-restartpolicy-never-int-precision.json"));
        ck_assert_str_eq(p->meta.name, "pod-with-precision");
        ck_assert_int_eq(p->spec.restart_policy, K8S_RESTART_NEVER);
        ck_assert(p->spec.has_active_deadline);
        ck_assert_int_eq(p->spec.active_deadline_seconds, 2147483647);
        ck_assert_int_eq(p->spec.security_context.n_supplemental_groups, 3);
        ck_assert_int_eq(p->spec.security_context.supplemental_groups[0], 0);
        ck_assert_int_eq(p->spec.security_context.supplemental_groups[1], 1000030003);
        ck_assert_int_eq(p->spec.security_context.supplemental_groups[2], 2147483647);
        ck_assert_str_eq(p->spec.containers[0].image, "registry.k8s.io/pause:3.5");
        k8s_pod_free(p);
}
END_TEST

START_TEST(test_pod_security_context)
{
        struct k8s_pod *p =
            pod(FX("pods/pod-securitycontext-runasuser-caps-drop-add-seccomp-runtimedefault.yaml"));
        ck_assert_int_eq(p->spec.security_context.seccomp.type, K8S_SECCOMP_RUNTIME_DEFAULT);
        const struct k8s_security_context *sc = &p->spec.containers[0].security_context;
        ck_assert(sc->present);
        ck_assert(sc->has_run_as_user && sc->run_as_user == 1000);
        ck_assert(sc->has_run_as_group && sc->run_as_group == 1000);
        ck_assert(sc->has_run_as_non_root && sc->run_as_non_root);
        ck_assert(sc->has_allow_privilege_escalation && !sc->allow_privilege_escalation);
        ck_assert(!sc->has_privileged);
        ck_assert_int_eq(sc->caps.n_drop, 1);
        ck_assert_str_eq(sc->caps.drop[0], "ALL");
        ck_assert_int_ge(sc->caps.n_add, 1);
        ck_assert_str_eq(sc->caps.add[0], "NET_BIND_SERVICE");
        ck_assert_str_eq(p->spec.containers[0].command[0], "/bin/sh");
        k8s_pod_free(p);
}
END_TEST

START_TEST(test_pod_static_etcd)
{
        struct k8s_pod *p = pod(FX("pods/pod-static-etcd-hostnetwork-hostport-hostpath.yaml"));
        ck_assert_str_eq(p->meta.name, "etcd-server");
        ck_assert(p->spec.host_network);
        const struct k8s_container *c = &p->spec.containers[0];
        ck_assert_str_eq(c->image, "k8s.gcr.io/etcd:2.0.9");
        ck_assert_int_eq(c->n_ports, 2);
        ck_assert_str_eq(c->ports[0].name, "serverport");
        ck_assert_int_eq(c->ports[0].container_port, 2380);
        ck_assert_int_eq(c->ports[0].host_port, 2380);
        ck_assert_str_eq(c->ports[1].name, "clientport");
        ck_assert_int_eq(c->ports[1].host_port, 2379);
        ck_assert_str_eq(c->command[0], "/usr/local/bin/etcd");
        ck_assert_int_ge(p->spec.n_volumes, 2);
        ck_assert_str_eq(p->spec.volumes[0].name, "varetcd");
        ck_assert_int_eq(p->spec.volumes[0].kind, K8S_VOLUME_HOST_PATH);
        ck_assert_str_eq(p->spec.volumes[0].host_path, "/var/etcd/data");
        ck_assert_str_eq(p->spec.volumes[1].host_path, "/etc/ssl");
        ck_assert_int_ge(c->n_volume_mounts, 1);
        k8s_pod_free(p);
}
END_TEST

START_TEST(test_kyaml_command_args)
{
        struct k8s_pod *p =
            pod(FX("pods/website-pod-command-args-restartpolicy-onfailure.kyaml.yaml"));
        ck_assert_str_eq(p->meta.name, "command-demo");
        ck_assert_int_eq(p->spec.restart_policy, K8S_RESTART_ON_FAILURE);
        const struct k8s_container *c = &p->spec.containers[0];
        ck_assert_str_eq(c->name, "command-demo-container");
        ck_assert_str_eq(c->image, "debian");
        ck_assert_int_eq(c->n_command, 1);
        ck_assert_str_eq(c->command[0], "printenv");
        ck_assert_int_eq(c->n_args, 2);
        ck_assert_str_eq(c->args[0], "HOSTNAME");
        ck_assert_str_eq(c->args[1], "KUBERNETES_PORT");
        k8s_pod_free(p);
}
END_TEST

START_TEST(test_pod_cpu_decimal)
{
        struct k8s_pod *p = pod(FX("pods/website-pod-cpu-request-limit-decimal.yaml"));
        ck_assert_str_eq(p->meta.namespace_, "cpu-example");
        const struct k8s_container *c = &p->spec.containers[0];
        ck_assert_str_eq(c->name, "cpu-demo-ctr");
        ck_assert_int_eq(res(&c->resources.limits, "cpu")->milli, 1000);
        ck_assert_int_eq(res(&c->resources.requests, "cpu")->milli, 500);
        ck_assert_str_eq(res(&c->resources.requests, "cpu")->text, "0.5");
        ck_assert_str_eq(c->args[0], "-cpus");
        ck_assert_str_eq(c->args[1], "2");
        k8s_pod_free(p);
}
END_TEST

START_TEST(test_kyaml_env_fieldref)
{
        struct k8s_pod *p = pod(FX("pods/website-pod-env-fieldref-restartpolicy-never.kyaml.yaml"));
        ck_assert_int_eq(p->spec.restart_policy, K8S_RESTART_NEVER);
        const struct k8s_container *c = &p->spec.containers[0];
        ck_assert_int_eq(c->n_env, 5);
        ck_assert_str_eq(c->env[0].name, "MY_NODE_NAME");
        ck_assert_str_eq(c->env[0].field_ref_path, "spec.nodeName");
        ck_assert(c->env[0].value == NULL);
        ck_assert_str_eq(c->env[4].name, "MY_POD_SERVICE_ACCOUNT");
        ck_assert_str_eq(c->env[4].field_ref_path, "spec.serviceAccountName");
        ck_assert_str_eq(c->command[1], "-c");
        k8s_pod_free(p);
}
END_TEST

START_TEST(test_kyaml_env_values)
{
        struct k8s_pod *p = pod(FX("pods/website-pod-env-values.kyaml.yaml"));
        ck_assert_str_eq(k8s_map_get(&p->meta.labels, "purpose"), "demonstrate-envars");
        const struct k8s_container *c = &p->spec.containers[0];
        ck_assert_str_eq(c->image, "gcr.io/google-samples/hello-app:2.0");
        ck_assert_int_eq(c->n_env, 2);
        ck_assert_str_eq(c->env[0].value, "Hello from the environment");
        ck_assert_str_eq(c->env[1].name, "DEMO_FAREWELL");
        ck_assert_str_eq(c->env[1].value, "Such a sweet sorrow");
        k8s_pod_free(p);
}
END_TEST

START_TEST(test_kyaml_liveness_exec)
{
        struct k8s_pod *p = pod(FX("pods/website-pod-liveness-exec.kyaml.yaml"));
        const struct k8s_probe *pr = &p->spec.containers[0].liveness_probe;
        ck_assert_int_eq(pr->handler.kind, K8S_HANDLER_EXEC);
        ck_assert_int_eq(pr->handler.n_command, 2);
        ck_assert_str_eq(pr->handler.command[0], "cat");
        ck_assert_str_eq(pr->handler.command[1], "/tmp/healthy");
        ck_assert_int_eq(pr->initial_delay_seconds, 5);
        ck_assert_int_eq(pr->period_seconds, 5);
        ck_assert_int_eq(pr->failure_threshold, 3);
        k8s_pod_free(p);
}
END_TEST

START_TEST(test_pod_tcpsocket)
{
        struct k8s_pod *p = pod(FX("pods/website-pod-liveness-readiness-tcpsocket.yaml"));
        const struct k8s_container *c = &p->spec.containers[0];
        ck_assert_str_eq(c->image, "registry.k8s.io/goproxy:0.1");
        ck_assert_int_eq(c->readiness_probe.handler.kind, K8S_HANDLER_TCP_SOCKET);
        ck_assert_int_eq(c->readiness_probe.handler.port, 8080);
        ck_assert_int_eq(c->readiness_probe.initial_delay_seconds, 15);
        ck_assert_int_eq(c->liveness_probe.handler.kind, K8S_HANDLER_TCP_SOCKET);
        ck_assert_int_eq(c->liveness_probe.period_seconds, 10);
        ck_assert_str_eq(k8s_map_get(&p->meta.labels, "app.kubernetes.io/name"), "goproxy");
        k8s_pod_free(p);
}
END_TEST

START_TEST(test_kyaml_memory)
{
        struct k8s_pod *p =
            pod(FX("pods/website-pod-memory-request-limit-command-args.kyaml.yaml"));
        ck_assert_str_eq(p->meta.namespace_, "mem-example");
        const struct k8s_container *c = &p->spec.containers[0];
        ck_assert_int_eq(res(&c->resources.requests, "memory")->value, 100 << 20);
        ck_assert_int_eq(res(&c->resources.limits, "memory")->value, 200 << 20);
        ck_assert_int_eq(c->n_args, 6);
        ck_assert_str_eq(c->args[3], "150M");
        k8s_pod_free(p);
}
END_TEST

START_TEST(test_affinity_preferred)
{
        struct k8s_pod *p = pod(FX("pods/website-pod-nodeaffinity-preferred-only.kyaml.yaml"));
        const struct k8s_node_affinity *na = &p->spec.node_affinity;
        ck_assert(!na->has_required);
        ck_assert_int_eq(na->n_preferred, 1);
        ck_assert_int_eq(na->preferred[0].weight, 1);
        ck_assert_str_eq(na->preferred[0].preference.match_expressions[0].key, "disktype");
        ck_assert_str_eq(na->preferred[0].preference.match_expressions[0].values[0], "ssd");
        ck_assert_int_eq(p->spec.containers[0].image_pull_policy, K8S_PULL_IF_NOT_PRESENT);
        k8s_pod_free(p);

        p = pod(FX("pods/website-pod-nodeaffinity-required-in-preferred-weight.yaml"));
        na = &p->spec.node_affinity;
        ck_assert(na->has_required);
        ck_assert_str_eq(na->required_terms[0].match_expressions[0].values[1], "antarctica-west1");
        ck_assert_int_eq(na->n_preferred, 1);
        ck_assert_str_eq(na->preferred[0].preference.match_expressions[0].key,
                         "another-node-label-key");
        k8s_pod_free(p);

        p = pod(FX("pods/website-pod-nodeaffinity-required-in-two-preferred-weights.yaml"));
        na = &p->spec.node_affinity;
        ck_assert_str_eq(na->required_terms[0].match_expressions[0].values[0], "linux");
        ck_assert_int_eq(na->n_preferred, 2);
        ck_assert_int_eq(na->preferred[0].weight, 1);
        ck_assert_int_eq(na->preferred[1].weight, 50);
        ck_assert_str_eq(na->preferred[1].preference.match_expressions[0].values[0], "key-2");
        ck_assert_int_eq(p->spec.containers[0].image_pull_policy, K8S_PULL_DEFAULT);
        k8s_pod_free(p);
}
END_TEST

START_TEST(test_kyaml_nodename_selector)
{
        struct k8s_pod *p = pod(FX("pods/website-pod-nodename.kyaml.yaml"));
        ck_assert_str_eq(p->spec.node_name, "foo-node");
        k8s_pod_free(p);
        p = pod(FX("pods/website-pod-nodeselector.kyaml.yaml"));
        ck_assert(p->spec.node_name == NULL);
        ck_assert_int_eq(p->spec.node_selector.n, 1);
        ck_assert_str_eq(k8s_map_get(&p->spec.node_selector, "disktype"), "ssd");
        ck_assert(k8s_map_get(&p->spec.node_selector, "other") == NULL);
        k8s_pod_free(p);
}
END_TEST

START_TEST(test_seccomp_and_caps)
{
        struct k8s_pod *p = pod(FX("pods/website-pod-seccomp-runtimedefault.yaml"));
        ck_assert_int_eq(p->spec.security_context.seccomp.type, K8S_SECCOMP_RUNTIME_DEFAULT);
        ck_assert_str_eq(p->spec.containers[0].image, "hashicorp/http-echo:1.0");
        ck_assert_str_eq(p->spec.containers[0].args[0], "-text=just made some more syscalls!");
        k8s_pod_free(p);

        p = pod(FX("pods/website-pod-securitycontext-capabilities-add.kyaml.yaml"));
        const struct k8s_capabilities *caps = &p->spec.containers[0].security_context.caps;
        ck_assert_int_eq(caps->n_add, 2);
        ck_assert_str_eq(caps->add[0], "NET_ADMIN");
        ck_assert_str_eq(caps->add[1], "SYS_TIME");
        ck_assert_int_eq(caps->n_drop, 0);
        k8s_pod_free(p);

        p = pod(FX("pods/website-pod-securitycontext-runasuser-fsgroup.yaml"));
        ck_assert(p->spec.security_context.has_run_as_user);
        ck_assert_int_eq(p->spec.security_context.run_as_user, 1000);
        ck_assert(p->spec.security_context.has_fs_group);
        ck_assert_int_eq(p->spec.security_context.fs_group, 2000);
        ck_assert(!p->spec.security_context.has_run_as_group);
        ck_assert_int_eq(p->spec.volumes[0].kind, K8S_VOLUME_EMPTY_DIR);
        ck_assert_str_eq(p->spec.volumes[0].name, "sec-ctx-vol");
        k8s_pod_free(p);
}
END_TEST

START_TEST(test_tolerations)
{
        struct k8s_pod *p = pod(FX("pods/website-pod-toleration-exists-noschedule.kyaml.yaml"));
        ck_assert_int_eq(p->spec.n_tolerations, 1);
        ck_assert_str_eq(p->spec.tolerations[0].key, "example-key");
        ck_assert_int_eq(p->spec.tolerations[0].op, K8S_TOL_EXISTS);
        ck_assert_int_eq(p->spec.tolerations[0].effect, K8S_EFFECT_NO_SCHEDULE);
        ck_assert(!p->spec.tolerations[0].has_toleration_seconds);
        k8s_pod_free(p);

        p = pod(FX("pods/website-pod-toleration-numeric-gt-alpha.kyaml.yaml"));
        ck_assert_str_eq(p->spec.tolerations[0].key,
                         "servicelevel.organization.example/agreed-service-level");
        ck_assert_int_eq(p->spec.tolerations[0].op, K8S_TOL_GT);
        ck_assert_str_eq(p->spec.tolerations[0].value, "900");
        k8s_pod_free(p);
}
END_TEST

START_TEST(test_daemonset_template)
{
        _cleanup_cjson_ cJSON *ds =
            load(FX("pods/daemonset-nodeaffinity-exists-tolerations-exists-privileged.yaml"));
        const cJSON *tmpl = cJSON_GetObjectItem(cJSON_GetObjectItem(ds, "spec"), "template");
        ck_assert(tmpl != NULL);
        struct k8s_pod *p = pod_from(tmpl);
        ck_assert_str_eq(k8s_map_get(&p->meta.labels, "k8s-app"), "nvidia-gpu-device-plugin");
        ck_assert_str_eq(p->spec.priority_class_name, "system-node-critical");
        const struct k8s_requirement *r =
            &p->spec.node_affinity.required_terms[0].match_expressions[0];
        ck_assert_str_eq(r->key, "cloud.google.com/gke-accelerator");
        ck_assert_int_eq(r->op, K8S_OP_EXISTS);
        ck_assert_int_eq(p->spec.n_tolerations, 2);
        ck_assert_int_eq(p->spec.tolerations[0].op, K8S_TOL_EXISTS);
        ck_assert_int_eq(p->spec.tolerations[0].effect, K8S_EFFECT_NO_EXECUTE);
        ck_assert(p->spec.tolerations[0].key == NULL);
        ck_assert_int_eq(p->spec.tolerations[1].effect, K8S_EFFECT_NO_SCHEDULE);
        const struct k8s_container *c = &p->spec.containers[0];
        ck_assert_str_eq(c->name, "nvidia-gpu-device-plugin");
        ck_assert(c->security_context.has_privileged && c->security_context.privileged);
        ck_assert_int_eq(res(&c->resources.requests, "cpu")->milli, 50);
        ck_assert_int_eq(res(&c->resources.limits, "memory")->value, 10 << 20);
        ck_assert_str_eq(p->spec.volumes[1].host_path, "/dev");
        k8s_pod_free(p);
}
END_TEST

/* ---- pod status ---- */

START_TEST(test_status_pending_init)
{
        struct k8s_pod *p = pod(FX("pod-status/pod-pending-initcontainers-full-status-kind.yaml"));
        ck_assert_str_eq(p->meta.namespace_, "test-gpqsgu-1");
        ck_assert_int_eq(p->spec.n_init_containers, 2);
        ck_assert_str_eq(p->spec.init_containers[0].name, "init-0");
        ck_assert_int_eq(p->spec.init_containers[0].image_pull_policy, K8S_PULL_IF_NOT_PRESENT);
        ck_assert_int_eq(p->spec.n_containers, 2);
        ck_assert_str_eq(p->spec.containers[0].name, "main");
        ck_assert_str_eq(p->spec.containers[0].env[0].field_ref_path, "metadata.name");
        ck_assert_str_eq(p->spec.node_name, "kind-worker6");
        ck_assert_str_eq(p->spec.dns_policy, "ClusterFirst");
        ck_assert(p->spec.has_priority && p->spec.priority == 0);
        ck_assert_int_eq(p->spec.volumes[0].kind, K8S_VOLUME_CONFIG_MAP);
        ck_assert_str_eq(p->status.phase, "Pending");
        ck_assert_str_eq(p->status.qos_class, "Burstable");
        ck_assert_int_eq(p->status.n_container_statuses, 2);
        ck_assert(p->status.container_statuses[0].state.waiting);
        ck_assert_int_eq(p->status.n_init_container_statuses, 2);
        ck_assert(p->status.init_container_statuses[0].state.terminated);
        ck_assert(p->status.init_container_statuses[1].state.running);
        ck_assert_str_eq(p->status.conditions[0].type, "PodReadyToStartContainers");
        ck_assert_str_eq(p->status.conditions[0].status, "True");
        ck_assert_str_eq(p->status.conditions[1].type, "Initialized");
        ck_assert_str_eq(p->status.conditions[1].status, "False");
        k8s_pod_free(p);
}
END_TEST

START_TEST(test_status_running_restarted)
{
        struct k8s_pod *p = pod(FX("pod-status/pod-running-restarted-besteffort.yaml"));
        ck_assert_str_eq(p->meta.name, "some-name");
        ck_assert_str_eq(p->meta.namespace_, "default");
        ck_assert_int_eq(p->spec.n_containers, 1);
        const struct k8s_container *c = &p->spec.containers[0];
        ck_assert_str_eq(c->image, "some-image-name");
        ck_assert_int_eq(c->n_args, 9);
        ck_assert_str_eq(c->args[8], "nine");
        ck_assert_int_eq(c->env[0].key_ref, K8S_KEY_REF_SECRET);
        ck_assert_int_eq(res(&c->resources.requests, "cpu")->milli, 0);
        ck_assert(p->spec.has_termination_grace_period);
        ck_assert_int_eq(p->spec.termination_grace_period_seconds, 30);
        ck_assert_str_eq(p->spec.node_name, "node-name");
        ck_assert_str_eq(p->status.phase, "Running");
        ck_assert_str_eq(p->status.qos_class, "BestEffort");
        const struct k8s_container_status *cs = &p->status.container_statuses[0];
        ck_assert_int_eq(cs->restart_count, 6);
        ck_assert(cs->state.running);
        ck_assert(cs->last_state.terminated);
        ck_assert_int_eq(p->status.n_conditions, 4);
        ck_assert_str_eq(p->status.conditions[3].type, "PodScheduled");
        k8s_pod_free(p);
}
END_TEST

START_TEST(test_podlist)
{
        _cleanup_cjson_ cJSON *j = load(FX("pod-status/podlist-running-burstable-podips.json"));
        struct cb_error err = {0};
        struct k8s_pod_list *l = NULL;
        ck_assert_msg(k8s_pod_list_from_json(j, &l, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(l->n, 1);
        ck_assert_str_eq(l->resource_version, "");
        const struct k8s_pod *p = l->items[0];
        ck_assert_str_eq(p->meta.name, "mssql-75b8b44f6b-znftp");
        ck_assert_str_eq(p->status.qos_class, "Burstable");
        ck_assert_int_eq(p->status.n_pod_ips, 1);
        ck_assert_str_eq(p->status.pod_ips[0], "10.244.1.65");
        ck_assert_str_eq(p->spec.containers[0].image,
                         "mcr.microsoft.com/mssql/server:2019-CU5-ubuntu-18.04");
        k8s_pod_list_free(l);
}
END_TEST

START_TEST(test_podlist_item_error_path)
{
        const char *text = "{\"items\":[{},{},{},{\"spec\":{\"restartPolicy\":\"Sometimes\"}}]}";
        struct cb_error err = {0};
        cJSON *j = NULL;
        struct k8s_pod_list *l = NULL;
        ck_assert_int_eq(k8s_parse_text(text, strlen(text), &j, &err), 0);
        ck_assert_int_lt(k8s_pod_list_from_json(j, &l, &err), 0);
        ck_assert_str_eq(err.msg, "items[3].spec.restartPolicy: unsupported value \"Sometimes\" "
                                  "(want Always, OnFailure or Never)");
        cJSON_Delete(j);
}
END_TEST

/* ---- nodes ---- */

START_TEST(test_node_gke)
{
        struct k8s_node *n = node(FX("node/node-gke-full-status-addresses-conditions.yaml"));
        ck_assert_str_eq(n->meta.name, "node-default-pool-something");
        ck_assert_str_eq(n->pod_cidr, "10.0.0.1/24");
        ck_assert_str_eq(k8s_map_get(&n->meta.labels, "cloud.google.com/gke-nodepool"),
                         "default-pool");
        ck_assert_int_eq(res(&n->capacity, "cpu")->milli, 4000);
        ck_assert_int_eq(res(&n->capacity, "memory")->value, 15399364LL * 1024);
        ck_assert_int_eq(res(&n->capacity, "pods")->value, 110);
        ck_assert_int_eq(res(&n->allocatable, "cpu")->milli, 3920);
        ck_assert_int_eq(res(&n->allocatable, "ephemeral-storage")->value, 104638878617LL);
        ck_assert_int_eq(res(&n->allocatable, "hugepages-2Mi")->value, 0);
        ck_assert_int_eq(n->n_addresses, 3);
        ck_assert_str_eq(n->addresses[0].type, "InternalIP");
        ck_assert_str_eq(n->addresses[0].address, "10.0.0.1");
        ck_assert_str_eq(n->addresses[2].type, "Hostname");
        ck_assert_str_eq(n->conditions[0].type, "FrequentContainerdRestart");
        ck_assert_str_eq(n->conditions[0].status, "False");
        ck_assert_str_eq(n->conditions[2].reason, "UnregisterNetDevice");
        ck_assert_int_eq(n->n_taints, 0);
        k8s_node_free(n);
}
END_TEST

START_TEST(test_node_gpu)
{
        struct k8s_node *n = node(FX("node/node-gpu-taint-noschedule-capacity-conditions.yaml"));
        ck_assert_str_eq(n->meta.name, "virtual-gpu-node");
        ck_assert_int_eq(n->n_taints, 1);
        ck_assert_str_eq(n->taints[0].key, "kwok.x-k8s.io/node");
        ck_assert_str_eq(n->taints[0].value, "fake");
        ck_assert_int_eq(n->taints[0].effect, K8S_EFFECT_NO_SCHEDULE);
        ck_assert_int_eq(res(&n->capacity, "cpu")->milli, 256000);
        ck_assert_int_eq(res(&n->capacity, "nvidia.com/gpu")->value, 8);
        ck_assert_int_eq(res(&n->capacity, "memory")->value, 1LL << 40);
        ck_assert_int_eq(res(&n->capacity, "ephemeral-storage")->value, 15LL << 40);
        ck_assert_int_eq(res(&n->allocatable, "intel.com/mlnx_sriov_rdma3")->value, 1);
        ck_assert_str_eq(n->conditions[0].type, "AggregatedNodeHealth");
        ck_assert_str_eq(n->conditions[0].reason, "NodeReady");
        k8s_node_free(n);

        n = node(FX("node/node-taint-labels-no-status.yaml"));
        ck_assert_str_eq(n->meta.name, "fake-node");
        ck_assert_str_eq(n->taints[0].key, "kwok-controller/provider");
        ck_assert_int_eq(n->capacity.n, 0);
        ck_assert_int_eq(n->n_conditions, 0);
        k8s_node_free(n);

        n = node(FX("node/node-taint-noschedule-minimal-status.yaml"));
        ck_assert(n->meta.name == NULL);
        ck_assert_str_eq(n->taints[0].key, "foo");
        ck_assert(n->taints[0].value == NULL);
        ck_assert_int_eq(res(&n->capacity, "memory")->value, 32LL << 30);
        ck_assert_int_eq(res(&n->capacity, "cpu")->value, 4);
        ck_assert_str_eq(n->conditions[0].type, "Ready");
        ck_assert_str_eq(n->conditions[0].status, "True");
        k8s_node_free(n);
}
END_TEST

/* ---- allfields: every field set to a placeholder ("nameValue", 1, 2, ...) ---- */

/* The placeholders of enum fields are not valid values: the decoder must
 * refuse them. Replace them with valid ones to check every other field. */
static int fix_enums(cJSON *n, const char *key, const cJSON *parent)
{
        int fixed = 0;
        if (cJSON_IsString(n) && key != NULL && strstr(n->valuestring, "Value") != NULL) {
                const char *repl = NULL;
                if (strcmp(key, "operator") == 0)
                        repl = cJSON_HasObjectItem(parent, "tolerationSeconds") ? "Exists" : "In";
                else if (strcmp(key, "effect") == 0)
                        repl = "NoSchedule";
                else if (strcmp(key, "restartPolicy") == 0)
                        repl = "OnFailure";
                else if (strcmp(key, "imagePullPolicy") == 0)
                        repl = "IfNotPresent";
                else if (strcmp(key, "protocol") == 0)
                        repl = "UDP";
                else if (strcmp(key, "type") == 0 &&
                         cJSON_HasObjectItem(parent, "localhostProfile"))
                        repl = "Localhost";
                if (repl != NULL) {
                        cJSON_SetValuestring(n, repl);
                        fixed++;
                }
        }
        for (cJSON *c = n->child; c != NULL; c = c->next)
                fixed += fix_enums(c, c->string, n);
        return fixed;
}

static void check_allfields_pod(const char *path)
{
        _cleanup_cjson_ cJSON *j = load(path);
        struct cb_error err = {0};
        struct k8s_pod *p = NULL;
        ck_assert_int_lt(k8s_pod_from_json(j, &p, &err), 0);
        ck_assert_msg(strstr(err.msg, "unsupported value") != NULL, "%s", err.msg);
        ck_assert_int_gt(fix_enums(j, NULL, NULL), 5);
        p = pod_from(j);
        ck_assert_str_eq(p->api_version, "v1");
        ck_assert_str_eq(p->kind, "Pod");
        ck_assert_str_eq(p->meta.name, "nameValue");
        ck_assert_str_eq(p->meta.generate_name, "generateNameValue");
        ck_assert_str_eq(p->meta.namespace_, "namespaceValue");
        ck_assert_str_eq(p->meta.uid, "uidValue");
        ck_assert_str_eq(p->meta.resource_version, "resourceVersionValue");
        ck_assert_int_eq(p->meta.generation, 7);
        ck_assert_str_eq(p->meta.creation_timestamp, "2008-01-01T01:01:01Z");
        ck_assert_str_eq(p->meta.deletion_timestamp, "2009-01-01T01:01:01Z");
        ck_assert(p->meta.has_deletion_grace_period);
        ck_assert_int_eq(p->meta.deletion_grace_period_seconds, 10);
        ck_assert_str_eq(k8s_map_get(&p->meta.labels, "labelsKey"), "labelsValue");
        ck_assert_str_eq(k8s_map_get(&p->meta.annotations, "annotationsKey"), "annotationsValue");
        ck_assert_int_eq(p->meta.n_owner_refs, 1);
        ck_assert_str_eq(p->meta.owner_refs[0].kind, "kindValue");
        ck_assert(p->meta.owner_refs[0].controller);
        ck_assert(!k8s_pod_is_static(p));

        const struct k8s_pod_spec *s = &p->spec;
        ck_assert_int_eq(s->restart_policy, K8S_RESTART_ON_FAILURE);
        ck_assert(s->has_termination_grace_period);
        ck_assert_int_eq(s->termination_grace_period_seconds, 4);
        ck_assert(s->has_priority);
        ck_assert_int_eq(s->priority, 25);
        ck_assert_int_eq(s->n_tolerations, 1);
        ck_assert_int_eq(s->tolerations[0].op, K8S_TOL_EXISTS);
        ck_assert(s->tolerations[0].has_toleration_seconds);
        ck_assert_int_eq(s->tolerations[0].toleration_seconds, 5);
        ck_assert_int_eq(s->security_context.run_as_user, 2);
        ck_assert_int_eq(s->security_context.run_as_group, 6);
        ck_assert_int_eq(s->security_context.fs_group, 5);
        ck_assert_int_eq(s->security_context.supplemental_groups[0], 4);
        ck_assert_int_eq(s->security_context.seccomp.type, K8S_SECCOMP_LOCALHOST);
        ck_assert_str_eq(s->security_context.seccomp.localhost_profile, "localhostProfileValue");
        ck_assert_int_eq(s->node_affinity.required_terms[0].match_expressions[0].op, K8S_OP_IN);
        ck_assert_str_eq(s->node_affinity.required_terms[0].match_fields[0].key, "keyValue");
        ck_assert_str_eq(s->node_selector.items[0].key, "nodeSelectorKey");
        ck_assert_str_eq(s->node_name, "nodeNameValue");
        ck_assert_str_eq(s->hostname, "hostnameValue");
        ck_assert_str_eq(s->os_name, "nameValue");
        ck_assert_str_eq(s->readiness_gates[0], "conditionTypeValue");
        ck_assert_int_eq(res(&s->overhead, "overheadKey")->value, 0);

        const struct k8s_container *c = &s->containers[0];
        ck_assert_str_eq(c->name, "nameValue");
        ck_assert_str_eq(c->image, "imageValue");
        ck_assert_int_eq(c->image_pull_policy, K8S_PULL_IF_NOT_PRESENT);
        ck_assert_int_eq(c->ports[0].host_port, 2);
        ck_assert_int_eq(c->ports[0].container_port, 3);
        ck_assert_int_eq(c->ports[0].protocol, K8S_PROTO_UDP);
        ck_assert_str_eq(c->ports[0].host_ip, "hostIPValue");
        ck_assert_str_eq(c->env[0].field_ref_api_version, "apiVersionValue");
        ck_assert_str_eq(c->env[0].resource_field_container, "containerNameValue");
        ck_assert(c->env[0].has_value_from_other);
        ck_assert_str_eq(res(&c->resources.limits, "limitsKey")->text, "0");
        /* several handlers given: the first (exec) is kept */
        ck_assert_int_eq(c->liveness_probe.handler.kind, K8S_HANDLER_EXEC);
        ck_assert_str_eq(c->liveness_probe.handler.command[0], "commandValue");
        ck_assert_int_eq(c->liveness_probe.initial_delay_seconds, 2);
        ck_assert_int_eq(c->liveness_probe.timeout_seconds, 3);
        ck_assert_int_eq(c->liveness_probe.period_seconds, 4);
        ck_assert_int_eq(c->liveness_probe.success_threshold, 5);
        ck_assert_int_eq(c->liveness_probe.failure_threshold, 6);
        ck_assert(c->liveness_probe.has_termination_grace_period);
        ck_assert_int_eq(c->liveness_probe.termination_grace_period_seconds, 7);
        ck_assert(c->security_context.privileged);
        ck_assert_int_eq(c->security_context.run_as_user, 4);
        ck_assert_str_eq(c->security_context.caps.drop[0], "dropValue");
        ck_assert(c->stdin_ && c->stdin_once && c->tty);
        ck_assert_str_eq(c->volume_mounts[0].mount_path, "mountPathValue");
        ck_assert_str_eq(c->termination_message_path, "terminationMessagePathValue");
        ck_assert(c->has_restart_policy);
        ck_assert_int_eq(s->init_containers[0].n_env, 1);

        const struct k8s_pod_status *st = &p->status;
        ck_assert_str_eq(st->phase, "phaseValue");
        ck_assert_str_eq(st->pod_ips[0], "ipValue");
        ck_assert_str_eq(st->start_time, "2007-01-01T01:01:01Z");
        ck_assert_str_eq(st->conditions[0].last_probe_time, "2003-01-01T01:01:01Z");
        ck_assert_int_eq(st->init_container_statuses[0].restart_count, 5);
        ck_assert(st->init_container_statuses[0].has_started);
        ck_assert_str_eq(st->container_statuses[0].image_id, "imageIDValue");
        k8s_pod_free(p);
}

START_TEST(test_allfields_pod)
{
        check_allfields_pod(FX("allfields/allfields_v1.35.0_core.v1.Pod.json"));
        check_allfields_pod(FX("allfields/allfields-master-unreleased-fields_core.v1.Pod.json"));
}
END_TEST

static void check_allfields_node(const char *path)
{
        _cleanup_cjson_ cJSON *j = load(path);
        struct cb_error err = {0};
        struct k8s_node *n = NULL;
        ck_assert_int_lt(k8s_node_from_json(j, &n, &err), 0);
        ck_assert_str_eq(err.msg, "spec.taints[0].effect: unsupported value \"effectValue\" (want "
                                  "NoSchedule, PreferNoSchedule or NoExecute)");
        fix_enums(j, NULL, NULL);
        ck_assert_msg(k8s_node_from_json(j, &n, &err) == 0, "%s", err.msg);
        ck_assert_str_eq(n->meta.name, "nameValue");
        ck_assert(n->unschedulable);
        ck_assert_str_eq(n->pod_cidr, "podCIDRValue");
        ck_assert_str_eq(n->taints[0].key, "keyValue");
        ck_assert_str_eq(n->taints[0].value, "valueValue");
        ck_assert_str_eq(n->taints[0].time_added, "2004-01-01T01:01:01Z");
        ck_assert_int_eq(res(&n->capacity, "capacityKey")->value, 0);
        ck_assert_int_eq(res(&n->allocatable, "allocatableKey")->value, 0);
        ck_assert_str_eq(n->conditions[0].last_heartbeat_time, "2003-01-01T01:01:01Z");
        ck_assert_str_eq(n->addresses[0].address, "addressValue");
        k8s_node_free(n);
}

START_TEST(test_allfields_node)
{
        check_allfields_node(FX("allfields/allfields_v1.35.0_core.v1.Node.json"));
        check_allfields_node(FX("allfields/allfields-master-unreleased-fields_core.v1.Node.json"));
}
END_TEST

START_TEST(test_allfields_status_and_watch)
{
        _cleanup_cjson_ cJSON *j = load(FX("allfields/allfields_v1.35.0_core.v1.Status.json"));
        struct cb_error err = {0};
        struct k8s_status *s = NULL;
        ck_assert_msg(k8s_status_from_json(j, &s, &err) == 0, "%s", err.msg);
        ck_assert_str_eq(s->status, "statusValue");
        ck_assert_str_eq(s->message, "messageValue");
        ck_assert_str_eq(s->reason, "reasonValue");
        ck_assert_int_eq(s->code, 6);
        ck_assert_str_eq(s->details_name, "nameValue");
        ck_assert_str_eq(s->details_kind, "kindValue");
        ck_assert_int_eq(s->n_causes, 1);
        ck_assert_str_eq(s->causes[0].type, "reasonValue");
        ck_assert_str_eq(s->causes[0].field, "fieldValue");
        k8s_status_free(s);

        _cleanup_cjson_ cJSON *w = load(FX("allfields/allfields_v1.35.0_core.v1.WatchEvent.json"));
        struct k8s_watch_event ev;
        ck_assert_int_lt(k8s_watch_event_from_json(w, &ev, &err), 0);
        ck_assert_str_eq(err.msg, "type: unsupported value \"typeValue\" (want ADDED, MODIFIED, "
                                  "DELETED, BOOKMARK or ERROR)");
        ck_assert(ev.object == NULL);
        cJSON_SetValuestring(cJSON_GetObjectItem(w, "type"), "MODIFIED");
        _cleanup_cjson_ cJSON *want = cJSON_Duplicate(cJSON_GetObjectItem(w, "object"), true);
        const cJSON *orig = cJSON_GetObjectItem(w, "object");
        ck_assert_msg(k8s_watch_event_from_json(w, &ev, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(ev.type, K8S_WATCH_MODIFIED);
        /* Moved out of the event, not copied: a watched object is parsed once. */
        ck_assert(ev.object == orig);
        ck_assert(cJSON_GetObjectItem(w, "object") == NULL);
        ck_assert(cJSON_Compare(ev.object, want, true));
        k8s_watch_event_clear(&ev);
        ck_assert(ev.object == NULL);
}
END_TEST

START_TEST(test_status_fixtures)
{
        struct cb_error err = {0};
        struct k8s_status *s = NULL;
        _cleanup_cjson_ cJSON *a = load(FX("status/status-404-notfound-with-details.json"));
        ck_assert_msg(k8s_status_from_json(a, &s, &err) == 0, "%s", err.msg);
        ck_assert_str_eq(s->status, "Failure");
        ck_assert_str_eq(s->reason, "NotFound");
        ck_assert_int_eq(s->code, 404);
        ck_assert_str_eq(s->details_kind, "jobs");
        ck_assert_str_eq(s->details_name, "bar");
        ck_assert_str_eq(s->message, "jobs.batch \"bar\" not found");
        ck_assert_int_eq(s->n_causes, 0);
        k8s_status_free(s);

        _cleanup_cjson_ cJSON *b = load(FX("status/status-400-badrequest-field-label.json"));
        ck_assert_msg(k8s_status_from_json(b, &s, &err) == 0, "%s", err.msg);
        ck_assert_str_eq(s->reason, "BadRequest");
        ck_assert_int_eq(s->code, 400);
        ck_assert(strstr(s->message, "field label not supported") != NULL);
        k8s_status_free(s);

        _cleanup_cjson_ cJSON *c = load(FX("status/status-400-badrequest-invalid-continue.json"));
        ck_assert_msg(k8s_status_from_json(c, &s, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(s->code, 400);
        ck_assert(strstr(s->message, "continue") != NULL);
        k8s_status_free(s);
}
END_TEST

/* ---- errors ---- */

START_TEST(test_error_messages)
{
        expect_pod_error(
            "{\"spec\":{\"containers\":[{\"name\":\"a\"},{\"name\":\"b\",\"resources\":"
            "{\"limits\":{\"memory\":\"12XB\"}}}]}}",
            "spec.containers[1].resources.limits.memory: invalid quantity \"12XB\"");
        expect_pod_error("{\"spec\":{\"containers\":[{\"ports\":[{\"containerPort\":\"abc\"}]}]}}",
                         "spec.containers[0].ports[0].containerPort: expected an integer, got "
                         "\"abc\"");
        expect_pod_error("spec:\n  restartPolicy: Sometimes\n",
                         "spec.restartPolicy: unsupported value \"Sometimes\" (want Always, "
                         "OnFailure or Never)");
        expect_pod_error(
            "{\"spec\":{\"containers\":[{\"ports\":[{\"containerPort\":2147483648}]}]}}",
            "spec.containers[0].ports[0].containerPort: 2147483648 is out of range");
        expect_pod_error("{\"spec\":{\"containers\":[{\"ports\":[{\"containerPort\":1.5}]}]}}",
                         "containerPort: expected an integer, got 1.5");
        expect_pod_error("{\"spec\":{\"hostNetwork\":\"yes\"}}",
                         "spec.hostNetwork: expected a boolean, got \"yes\"");
        expect_pod_error("{\"metadata\":{\"labels\":{\"a\":1}}}",
                         "metadata.labels[a]: expected a string, got 1");
        expect_pod_error("{\"spec\":{\"containers\":{}}}",
                         "spec.containers: expected an array, got an object");
        expect_pod_error("[1,2]", "expected a Pod object, got an array");
        expect_pod_error(
            "spec:\n  containers:\n  - resources:\n      requests:\n        cpu: 8Ei\n",
            "spec.containers[0].resources.requests.cpu: invalid quantity \"8Ei\": "
            "the magnitude exceeds 2^63-1");
        expect_pod_error("spec:\n  tolerations:\n  - effect: Sometimes\n",
                         "spec.tolerations[0].effect: unsupported value \"Sometimes\"");
        expect_pod_error("{\"spec\":{\"containers\":[{\"livenessProbe\":{\"httpGet\":{\"port\":"
                         "true}}}]}}",
                         "spec.containers[0].livenessProbe.httpGet.port: expected a port number "
                         "or name, got true");
}
END_TEST

START_TEST(test_int_limits)
{
        struct k8s_pod *p;
        struct cb_error err = {0};
        _cleanup_cjson_ cJSON *j = NULL;
        const char *t = "{\"spec\":{\"priority\":2147483647,\"containers\":[{\"ports\":"
                        "[{\"containerPort\":-2147483648}],\"readinessProbe\":{\"httpGet\":"
                        "{\"port\":\"http\",\"scheme\":\"HTTPS\"}}}]}}";
        ck_assert_int_eq(k8s_parse_text(t, strlen(t), &j, &err), 0);
        p = pod_from(j);
        ck_assert_int_eq(p->spec.priority, 2147483647);
        ck_assert_int_eq(p->spec.containers[0].ports[0].container_port, INT32_MIN);
        ck_assert_str_eq(p->spec.containers[0].readiness_probe.handler.port_name, "http");
        ck_assert_int_eq(p->spec.containers[0].readiness_probe.handler.port, 0);
        ck_assert_str_eq(p->spec.containers[0].readiness_probe.handler.scheme, "HTTPS");
        k8s_pod_free(p);

        /* YAML integers keep every digit beyond 2^53; 0x/0o forms are integers */
        cJSON_Delete(j);
        t = "spec:\n  activeDeadlineSeconds: 9007199254740993\n  priority: 0x10\n"
            "  terminationGracePeriodSeconds: 0o17\n";
        ck_assert_int_eq(k8s_parse_text(t, strlen(t), &j, &err), 0);
        p = pod_from(j);
        ck_assert_int_eq(p->spec.active_deadline_seconds, 9007199254740993LL);
        ck_assert_int_eq(p->spec.priority, 16);
        ck_assert_int_eq(p->spec.termination_grace_period_seconds, 15);
        k8s_pod_free(p);
}
END_TEST

START_TEST(test_too_many_containers)
{
        /* 100,000 containers: refused from the count, before any allocation */
        size_t n = 100000;
        char *text = malloc(n * 3 + 64);
        ck_assert(text != NULL);
        size_t o = (size_t)sprintf(text, "{\"spec\":{\"containers\":[");
        for (size_t i = 0; i < n; i++)
                o += (size_t)sprintf(text + o, "%s{}", i ? "," : "");
        sprintf(text + o, "]}}");
        expect_pod_error(text, "spec.containers: 100000 items exceed the limit of 256");
        free(text);
}
END_TEST

START_TEST(test_big_string)
{
        size_t n = 2u << 20;
        char *text = malloc(n + 64);
        ck_assert(text != NULL);
        int o = sprintf(text, "{\"metadata\":{\"name\":\"");
        memset(text + o, 'a', n);
        sprintf(text + o + n, "\"}}");
        expect_pod_error(text, "exceeds the limit of 1048576 bytes");
        /* the same in YAML */
        o = sprintf(text, "metadata:\n  name: ");
        memset(text + o, 'a', n);
        text[o + n] = '\0';
        expect_pod_error(text, "exceeds the limit of 1048576 bytes");
        free(text);
}
END_TEST

START_TEST(test_big_env)
{
        /* 40 values of 256 KiB (10 MiB): each string within its limit, the
         * container's env past K8S_MAX_ENV_BYTES (what a list may still
         * carry; a watch event that large is refused before decoding) */
        size_t each = 256u << 10, n = 40;
        char *text = malloc(n * (each + 32) + 128);
        ck_assert(text != NULL);
        size_t o = (size_t)sprintf(text, "{\"spec\":{\"containers\":[{\"name\":\"c\",\"env\":[");
        for (size_t i = 0; i < n; i++) {
                o +=
                    (size_t)sprintf(text + o, "%s{\"name\":\"E%zu\",\"value\":\"", i ? "," : "", i);
                memset(text + o, 'x', each);
                o += each;
                o += (size_t)sprintf(text + o, "\"}");
        }
        sprintf(text + o, "]}]}}");
        expect_pod_error(text, "spec.containers[0].env: 10485870 bytes of names and values exceed "
                               "the limit of 3145728 bytes");
        free(text);
}
END_TEST

START_TEST(test_deep_nesting)
{
        char text[4096];
        size_t o = 0;
        for (int i = 0; i < 1000; i++)
                text[o++] = '[';
        for (int i = 0; i < 1000; i++)
                text[o++] = ']';
        text[o] = '\0';
        expect_pod_error(text, "nesting deeper than the limit of 64 levels");
        /* YAML flow style starting with a key */
        o = (size_t)sprintf(text, "a: ");
        for (int i = 0; i < 1000; i++)
                text[o++] = '[';
        for (int i = 0; i < 1000; i++)
                text[o++] = ']';
        text[o] = '\0';
        expect_pod_error(text, "nesting deeper than the limit of 64 levels");
}
END_TEST

START_TEST(test_yaml_errors)
{
        expect_pod_error("metadata:\n  name: a\n  labels: b: c\n",
                         "line 3, column 12: mapping values are not allowed in this context");
        expect_pod_error("{\"metadata\": {\"name\": }", "line 1, column 23: invalid JSON");
        expect_pod_error("{\"a\":1} x", "line 1, column 9: unexpected text after the JSON value");
        expect_pod_error("", "no document");
        expect_pod_error("a: *nope\n", "line 1, column 4: unknown alias *nope");
        expect_pod_error("a: &x [1, *x]\n", "alias *x refers to a node that contains it");
        expect_pod_error("? [a]\n: b\n", "a mapping key must be a scalar");
}
END_TEST

START_TEST(test_billion_laughs)
{
        const char *text = "a: &a [x,x,x,x,x,x,x,x,x,x]\n"
                           "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
                           "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
                           "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
                           "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
                           "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
                           "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f,*f]\n"
                           "h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g,*g]\n"
                           "i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h,*h]\n";
        expect_pod_error(text, "aliases expand to more than 100000 nodes");
}
END_TEST

START_TEST(test_yaml_typing)
{
        const char *text = "---\n# comment\n---\n"
                           "a: &anc {x: 1}\nb: *anc\nq: '1'\nd: \"true\"\nt: true\nn: ~\ne:\n"
                           "f: 0.5\ng: 1e3\nh: 1.\ni: .5\ns: 1.2.3\nk: 012\nyes: no\n"
                           "inf: -.inf\nm: !!str 12\n---\nsecond: 2\n";
        struct cb_error err = {0};
        cJSON **docs = NULL;
        size_t n = 0;
        ck_assert_msg(k8s_parse_documents(text, strlen(text), &docs, &n, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(n, 2);
        const cJSON *d = docs[0];
        ck_assert(cJSON_IsObject(cJSON_GetObjectItem(d, "b")));
        ck_assert_int_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(d, "b"), "x")->valueint, 1);
        ck_assert(cJSON_IsString(cJSON_GetObjectItem(d, "q")));
        ck_assert(cJSON_IsString(cJSON_GetObjectItem(d, "d")));
        ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(d, "t")));
        ck_assert(cJSON_IsNull(cJSON_GetObjectItem(d, "n")));
        ck_assert(cJSON_IsNull(cJSON_GetObjectItem(d, "e")));
        ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(d, "f")));
        ck_assert_str_eq(cJSON_GetObjectItem(d, "f")->valuestring, "0.5");
        ck_assert_str_eq(cJSON_GetObjectItem(d, "g")->valuestring, "1e3");
        ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(d, "h")));
        ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(d, "i")));
        ck_assert(cJSON_IsString(cJSON_GetObjectItem(d, "s")));
        ck_assert_str_eq(cJSON_GetObjectItem(d, "k")->valuestring, "12");
        /* YAML 1.2: yes/no are strings */
        ck_assert_str_eq(cJSON_GetObjectItem(d, "yes")->valuestring, "no");
        ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(d, "inf")));
        ck_assert(cJSON_IsString(cJSON_GetObjectItem(d, "m")));
        ck_assert_int_eq(cJSON_GetObjectItem(docs[1], "second")->valueint, 2);
        k8s_free_documents(docs, n);

        /* k8s_parse_text takes the first non-empty document */
        cJSON *j = NULL;
        ck_assert_int_eq(k8s_parse_text(text, strlen(text), &j, &err), 0);
        ck_assert(cJSON_GetObjectItem(j, "a") != NULL);
        cJSON_Delete(j);
}
END_TEST

START_TEST(test_json_number_quantity)
{
        const char *t = "{\"spec\":{\"containers\":[{\"resources\":{\"requests\":{\"cpu\":0.1,"
                        "\"memory\":134217728}}}]}}";
        struct cb_error err = {0};
        _cleanup_cjson_ cJSON *j = NULL;
        ck_assert_int_eq(k8s_parse_text(t, strlen(t), &j, &err), 0);
        struct k8s_pod *p = pod_from(j);
        const struct k8s_resource_list *r = &p->spec.containers[0].resources.requests;
        ck_assert_str_eq(res(r, "cpu")->text, "0.1");
        ck_assert_int_eq(res(r, "cpu")->milli, 100);
        ck_assert_int_eq(res(r, "memory")->value, 134217728);
        k8s_pod_free(p);
}
END_TEST

START_TEST(test_watch_unknown_type)
{
        const char *t = "{\"type\":\"RENAMED\",\"object\":{\"kind\":\"Pod\"}}";
        struct cb_error err = {0};
        _cleanup_cjson_ cJSON *j = NULL;
        struct k8s_watch_event ev;
        ck_assert_int_eq(k8s_parse_text(t, strlen(t), &j, &err), 0);
        ck_assert_int_lt(k8s_watch_event_from_json(j, &ev, &err), 0);
        ck_assert(strstr(err.msg, "type: unsupported value \"RENAMED\"") != NULL);
        ck_assert(ev.object == NULL);

        cJSON_Delete(j);
        t = "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,\"reason\":"
            "\"Expired\"}}";
        ck_assert_int_eq(k8s_parse_text(t, strlen(t), &j, &err), 0);
        ck_assert_int_eq(k8s_watch_event_from_json(j, &ev, &err), 0);
        ck_assert_int_eq(ev.type, K8S_WATCH_ERROR);
        struct k8s_status *s = NULL;
        ck_assert_int_eq(k8s_status_from_json(ev.object, &s, &err), 0);
        ck_assert_int_eq(s->code, 410);
        ck_assert_str_eq(s->reason, "Expired");
        k8s_status_free(s);
        k8s_watch_event_clear(&ev);

        cJSON_Delete(j);
        t = "{\"type\":\"ADDED\"}";
        ck_assert_int_eq(k8s_parse_text(t, strlen(t), &j, &err), 0);
        ck_assert_int_lt(k8s_watch_event_from_json(j, &ev, &err), 0);
        ck_assert_str_eq(err.msg, "object: required field is missing");
}
END_TEST

START_TEST(test_parse_file_errors)
{
        struct cb_error err = {0};
        cJSON *j = NULL;
        ck_assert_int_lt(k8s_parse_file("/nonexistent/pod.yaml", &j, &err), 0);
        ck_assert(strstr(err.msg, "/nonexistent/pod.yaml") != NULL);

        char path[] = "/tmp/test_decode_XXXXXX";
        int fd = mkstemp(path);
        ck_assert_int_ge(fd, 0);
        const char *bad = "a: b\nc: [\n";
        ck_assert_int_eq(write(fd, bad, strlen(bad)), (ssize_t)strlen(bad));
        close(fd);
        ck_assert_int_lt(k8s_parse_file(path, &j, &err), 0);
        ck_assert_msg(strncmp(err.msg, path, strlen(path)) == 0, "%s", err.msg);
        ck_assert_msg(strstr(err.msg, "line 3, column 1") != NULL, "%s", err.msg);

        /* over K8S_MAX_DOC_BYTES */
        fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(ftruncate(fd, K8S_MAX_DOC_BYTES + 1), 0);
        close(fd);
        ck_assert_int_lt(k8s_parse_file(path, &j, &err), 0);
        ck_assert(strstr(err.msg, path) != NULL);
        unlink(path);
}
END_TEST

START_TEST(test_lookups)
{
        ck_assert_str_eq(k8s_restart_policy_name(K8S_RESTART_ON_FAILURE), "OnFailure");
        ck_assert_str_eq(k8s_effect_name(K8S_EFFECT_PREFER_NO_SCHEDULE), "PreferNoSchedule");
        ck_assert_str_eq(k8s_effect_name(K8S_EFFECT_ALL), "");
        ck_assert_str_eq(k8s_protocol_name(K8S_PROTO_SCTP), "SCTP");
        const char *t = "metadata:\n  annotations:\n    kubernetes.io/config.source: file\n";
        struct cb_error err = {0};
        _cleanup_cjson_ cJSON *j = NULL;
        ck_assert_int_eq(k8s_parse_text(t, strlen(t), &j, &err), 0);
        struct k8s_pod *p = pod_from(j);
        ck_assert(k8s_pod_is_static(p));
        ck_assert(k8s_resource_get(&p->spec.overhead, "cpu") == NULL);
        k8s_pod_free(p);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("decode");
        TCase *tc = tcase_create("fixtures");
        tcase_add_test(tc, test_pod_guaranteed_integer_cpu);
        tcase_add_test(tc, test_pod_hostport);
        tcase_add_test(tc, test_pod_liveness_httpget);
        tcase_add_test(tc, test_pod_affinity_required);
        tcase_add_test(tc, test_pod_int_precision_json);
        tcase_add_test(tc, test_pod_security_context);
        tcase_add_test(tc, test_pod_static_etcd);
        tcase_add_test(tc, test_kyaml_command_args);
        tcase_add_test(tc, test_pod_cpu_decimal);
        tcase_add_test(tc, test_kyaml_env_fieldref);
        tcase_add_test(tc, test_kyaml_env_values);
        tcase_add_test(tc, test_kyaml_liveness_exec);
        tcase_add_test(tc, test_pod_tcpsocket);
        tcase_add_test(tc, test_kyaml_memory);
        tcase_add_test(tc, test_affinity_preferred);
        tcase_add_test(tc, test_kyaml_nodename_selector);
        tcase_add_test(tc, test_seccomp_and_caps);
        tcase_add_test(tc, test_tolerations);
        tcase_add_test(tc, test_daemonset_template);
        tcase_add_test(tc, test_status_pending_init);
        tcase_add_test(tc, test_status_running_restarted);
        tcase_add_test(tc, test_podlist);
        tcase_add_test(tc, test_podlist_item_error_path);
        tcase_add_test(tc, test_node_gke);
        tcase_add_test(tc, test_node_gpu);
        tcase_add_test(tc, test_allfields_pod);
        tcase_add_test(tc, test_allfields_node);
        tcase_add_test(tc, test_allfields_status_and_watch);
        tcase_add_test(tc, test_status_fixtures);
        suite_add_tcase(s, tc);
        TCase *te = tcase_create("errors");
        tcase_add_test(te, test_error_messages);
        tcase_add_test(te, test_int_limits);
        tcase_add_test(te, test_too_many_containers);
        tcase_add_test(te, test_big_string);
        tcase_add_test(te, test_big_env);
        tcase_add_test(te, test_deep_nesting);
        tcase_add_test(te, test_yaml_errors);
        tcase_add_test(te, test_billion_laughs);
        tcase_add_test(te, test_yaml_typing);
        tcase_add_test(te, test_json_number_quantity);
        tcase_add_test(te, test_watch_unknown_type);
        tcase_add_test(te, test_parse_file_errors);
        tcase_add_test(te, test_lookups);
        suite_add_tcase(s, te);
        return th_run(s) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
