/* SPDX-License-Identifier: Apache-2.0 */
/* Kubernetes container -> runtime spec: expansion, env, argv, users,
 * runAsNonRoot, capabilities, seccomp, pull policy. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "agent/pods/containerspec.h"
#include "lib/cleanup.h"

#include "helpers.h"

static struct cb_arena *arena;

static void setup(void)
{
        arena = cb_arena_new(0);
}

static void teardown(void)
{
        cb_arena_free(arena);
}

static struct k8s_pod *pod_from(const char *json)
{
        _cleanup_cjson_ cJSON *j = cJSON_Parse(json);
        ck_assert_msg(j != NULL, "bad test JSON: %s", json);
        struct k8s_pod *p = NULL;
        struct cb_error err = {0};
        ck_assert_msg(k8s_pod_from_json(j, &p, &err) == 0, "decode: %s", err.msg);
        return p;
}

static const char *map_lookup(void *ctx, const char *name, size_t len)
{
        const char *const *kv = ctx;
        for (size_t i = 0; kv[i]; i += 2)
                if (strlen(kv[i]) == len && memcmp(kv[i], name, len) == 0)
                        return kv[i + 1];
        return NULL;
}

START_TEST(test_expand_table)
{
        static const char *vars[] = {"A", "alpha", "B", "$(A)", "EMPTY", "", NULL};
        static const struct {
                const char *in, *want;
        } t[] = {
            {"plain", "plain"},
            {"$(A)", "alpha"},
            {"x$(A)y", "xalphay"},
            {"$(A)$(A)", "alphaalpha"},
            {"$$(A)", "$(A)"},    /* escaped */
            {"$$$(A)", "$alpha"}, /* escape then a reference */
            {"$(UNDEFINED)", "$(UNDEFINED)"},
            {"$(B)", "$(A)"}, /* values are not expanded again */
            {"$(EMPTY)x", "x"},
            {"$(A", "$(A"}, /* unclosed */
            {"$A", "$A"},
            {"100$", "100$"},
            {"$", "$"},
            {"$()", "$()"},
            {"", ""},
        };
        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
                char *got = ag_expand(arena, t[i].in, map_lookup, vars);
                ck_assert_msg(got && strcmp(got, t[i].want) == 0,
                              "expand(\"%s\") = \"%s\", want \"%s\"", t[i].in, got ? got : "(null)",
                              t[i].want);
        }
}
END_TEST

START_TEST(test_pull_policy_default)
{
        static const struct {
                const char *image, *policy;
                enum k8s_pull_policy want;
        } t[] = {
            {"busybox", NULL, K8S_PULL_ALWAYS},
            {"busybox:latest", NULL, K8S_PULL_ALWAYS},
            {"busybox:1.36", NULL, K8S_PULL_IF_NOT_PRESENT},
            {"localhost:5000/busybox", NULL, K8S_PULL_ALWAYS}, /* the port is not a tag */
            {"localhost:5000/busybox:1.36", NULL, K8S_PULL_IF_NOT_PRESENT},
            {"busybox@sha256:4be429a5fbb2e71ae7958bfa558bc637cf3a61baf40a708cb8fff532b39e52d0",
             NULL, K8S_PULL_IF_NOT_PRESENT},
            {"busybox:1.36", "Always", K8S_PULL_ALWAYS},
            {"busybox", "Never", K8S_PULL_NEVER},
            {"busybox:latest", "IfNotPresent", K8S_PULL_IF_NOT_PRESENT},
        };
        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
                char json[512];
                snprintf(json, sizeof(json),
                         "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\","
                         "\"image\":\"%s\"%s%s%s}]}}",
                         t[i].image, t[i].policy ? ",\"imagePullPolicy\":\"" : "",
                         t[i].policy ? t[i].policy : "", t[i].policy ? "\"" : "");
                struct k8s_pod *p = pod_from(json);
                ck_assert_msg(ag_pull_policy(&p->spec.containers[0]) == t[i].want, "%s %s -> %s",
                              t[i].image, t[i].policy ? t[i].policy : "(default)",
                              ag_pull_policy_name(ag_pull_policy(&p->spec.containers[0])));
                k8s_pod_free(p);
        }
}
END_TEST

static const struct ag_env_context ctx = {
    .node_name = "node-1",
    .pod_ip = "10.88.0.7",
    .host_ip = "192.168.1.20",
    .node_allocatable_milli_cpu = 1900,
    .node_allocatable_memory = 4000000000,
};

static int build(struct k8s_pod *p, size_t ci, const struct ag_image_defaults *img,
                 struct ag_container_spec *s, struct cb_error *err)
{
        return ag_container_spec_build(arena, p, &p->spec.containers[ci], img, &ctx, s, err);
}

static const char *env_of(const struct ag_container_spec *s, const char *name)
{
        size_t n = strlen(name);
        for (size_t i = 0; i < s->n_env; i++)
                if (strncmp(s->env[i], name, n) == 0 && s->env[i][n] == '=')
                        return s->env[i] + n + 1;
        return NULL;
}

START_TEST(test_env_and_downward_api)
{
        struct k8s_pod *p = pod_from(
            "{\"metadata\":{\"name\":\"web\",\"namespace\":\"shop\",\"uid\":\"u-1\","
            "\"labels\":{\"app\":\"web\"}},"
            "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"busybox:1\","
            "\"env\":["
            "{\"name\":\"GREETING\",\"value\":\"hello\"},"
            "{\"name\":\"MSG\",\"value\":\"$(GREETING) from $(POD_NAME)\"},"
            "{\"name\":\"POD_NAME\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"metadata.name\"}}}"
            ","
            "{\"name\":\"MSG2\",\"value\":\"$(GREETING) from $(POD_NAME)\"},"
            "{\"name\":\"NS\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"metadata.namespace\"}}},"
            "{\"name\":\"IP\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"status.podIP\"}}},"
            "{\"name\":\"HOST\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"status.hostIP\"}}},"
            "{\"name\":\"NODE\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"spec.nodeName\"}}},"
            "{\"name\":\"APP\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"metadata.labels['app']"
            "\"}}},"
            "{\"name\":\"CPU_LIMIT\",\"valueFrom\":{\"resourceFieldRef\":{\"resource\":\"limits."
            "cpu\"}}},"
            "{\"name\":\"MEM_REQ\",\"valueFrom\":{\"resourceFieldRef\":{\"resource\":\"requests."
            "memory\"}}},"
            "{\"name\":\"PATH\",\"value\":\"/custom/bin\"}"
            "],\"resources\":{\"requests\":{\"memory\":\"64Mi\"}}}]}}");
        static char *const image_env[] = {"PATH=/usr/bin:/bin", "IMAGE_ONLY=yes", NULL};
        struct ag_image_defaults img = {.env = image_env, .cmd = (char *const[]){"sh", NULL}};
        struct ag_container_spec s;
        struct cb_error err = {0};
        ck_assert_msg(build(p, 0, &img, &s, &err) == 0, "%s", err.msg);
        /* Only variables defined earlier expand. */
        ck_assert_str_eq(env_of(&s, "MSG"), "hello from $(POD_NAME)");
        ck_assert_str_eq(env_of(&s, "MSG2"), "hello from web");
        ck_assert_str_eq(env_of(&s, "NS"), "shop");
        ck_assert_str_eq(env_of(&s, "IP"), "10.88.0.7");
        ck_assert_str_eq(env_of(&s, "HOST"), "192.168.1.20");
        ck_assert_str_eq(env_of(&s, "NODE"), "node-1");
        ck_assert_str_eq(env_of(&s, "APP"), "web");
        /* No cpu limit: the node's allocatable, rounded up to whole cores. */
        ck_assert_str_eq(env_of(&s, "CPU_LIMIT"), "2");
        ck_assert_str_eq(env_of(&s, "MEM_REQ"), "67108864");
        /* The container's PATH overrides the image's; image-only vars stay. */
        ck_assert_str_eq(env_of(&s, "PATH"), "/custom/bin");
        ck_assert_str_eq(env_of(&s, "IMAGE_ONLY"), "yes");
        k8s_pod_free(p);
}
END_TEST

/* defaultPodLimitsForDownwardAPI (1.34+): a container without a limit
 * sees the pod-level limit, and the allocatable only without one. */
START_TEST(test_downward_api_pod_level_limits)
{
        struct k8s_pod *p = pod_from(
            "{\"metadata\":{\"name\":\"web\",\"namespace\":\"shop\",\"uid\":\"u-1\"},"
            "\"spec\":{\"resources\":{\"limits\":{\"memory\":\"256Mi\",\"cpu\":\"2500m\"}},"
            "\"containers\":[{\"name\":\"c\",\"image\":\"busybox:1\",\"command\":[\"sh\"],"
            "\"env\":["
            "{\"name\":\"CPU_LIMIT\",\"valueFrom\":{\"resourceFieldRef\":{\"resource\":\"limits."
            "cpu\"}}},"
            "{\"name\":\"MEM_LIMIT\",\"valueFrom\":{\"resourceFieldRef\":{\"resource\":\"limits."
            "memory\"}}},"
            "{\"name\":\"D_MEM_LIMIT\",\"valueFrom\":{\"resourceFieldRef\":{\"containerName\":"
            "\"d\","
            "\"resource\":\"limits.memory\"}}}"
            "]},{\"name\":\"d\",\"image\":\"busybox:1\",\"command\":[\"sh\"],"
            "\"resources\":{\"limits\":{\"memory\":\"64Mi\"}}}]}}");
        struct ag_container_spec s;
        struct cb_error err = {0};
        ck_assert_msg(build(p, 0, NULL, &s, &err) == 0, "%s", err.msg);
        ck_assert_str_eq(env_of(&s, "CPU_LIMIT"), "3"); /* 2500m rounded up, not the node's 2 */
        ck_assert_str_eq(env_of(&s, "MEM_LIMIT"), "268435456");
        ck_assert_str_eq(env_of(&s, "D_MEM_LIMIT"), "67108864");
        k8s_pod_free(p);
}
END_TEST

START_TEST(test_env_errors)
{
        struct k8s_pod *p = pod_from(
            "{\"metadata\":{\"name\":\"web\"},\"spec\":{\"containers\":[{\"name\":\"c\","
            "\"image\":\"busybox:1\",\"command\":[\"sh\"],\"env\":[{\"name\":\"X\",\"valueFrom\":"
            "{\"fieldRef\":{\"fieldPath\":\"spec.nosuch\"}}}]},"
            "{\"name\":\"d\",\"image\":\"busybox:1\",\"command\":[\"sh\"],\"env\":[{\"name\":\"S\","
            "\"valueFrom\":{\"secretKeyRef\":{\"name\":\"s\",\"key\":\"k\"}}}]}]}}");
        struct ag_container_spec s;
        struct cb_error err = {0};
        ck_assert_int_eq(build(p, 0, NULL, &s, &err), -1);
        ck_assert_msg(strstr(err.msg, "env X: unsupported fieldRef fieldPath \"spec.nosuch\""),
                      "%s", err.msg);
        ck_assert_int_eq(build(p, 1, NULL, &s, &err), -1);
        ck_assert_msg(strstr(err.msg, "secret \"s\" not found"), "%s", err.msg);
        k8s_pod_free(p);
}
END_TEST

START_TEST(test_argv_rules)
{
        static char *const ep[] = {"/entry", "--flag", NULL};
        static char *const cmd[] = {"default-arg", NULL};
        struct ag_image_defaults img = {.entrypoint = ep, .cmd = cmd, .working_dir = "/work"};
        struct k8s_pod *p = pod_from(
            "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":["
            "{\"name\":\"image-only\",\"image\":\"i:1\"},"
            "{\"name\":\"args-only\",\"image\":\"i:1\",\"args\":[\"$(V)\",\"b\"],"
            "\"env\":[{\"name\":\"V\",\"value\":\"v1\"}]},"
            "{\"name\":\"command-only\",\"image\":\"i:1\",\"command\":[\"/bin/sh\",\"-c\"],"
            "\"workingDir\":\"/tmp\"},"
            "{\"name\":\"both\",\"image\":\"i:1\",\"command\":[\"echo\"],\"args\":[\"$$(V)\"]}]}}");
        struct ag_container_spec s;
        struct cb_error err = {0};
        ck_assert(build(p, 0, &img, &s, &err) == 0);
        ck_assert_uint_eq(s.argc, 3);
        ck_assert_str_eq(s.argv[0], "/entry");
        ck_assert_str_eq(s.argv[2], "default-arg");
        ck_assert_str_eq(s.cwd, "/work");
        ck_assert(build(p, 1, &img, &s, &err) == 0); /* args replace Cmd, keep Entrypoint */
        ck_assert_uint_eq(s.argc, 4);
        ck_assert_str_eq(s.argv[0], "/entry");
        ck_assert_str_eq(s.argv[2], "v1");
        ck_assert_str_eq(s.argv[3], "b");
        ck_assert(build(p, 2, &img, &s, &err) == 0); /* command drops Entrypoint AND Cmd */
        ck_assert_uint_eq(s.argc, 2);
        ck_assert_str_eq(s.argv[1], "-c");
        ck_assert_ptr_null(s.argv[2]);
        ck_assert_str_eq(s.cwd, "/tmp");
        ck_assert(build(p, 3, &img, &s, &err) == 0);
        ck_assert_str_eq(s.argv[1], "$(V)");
        /* No command anywhere. */
        ck_assert_int_eq(build(p, 0, NULL, &s, &err), -1);
        ck_assert_msg(strstr(err.msg, "no command specified"), "%s", err.msg);
        k8s_pod_free(p);
}
END_TEST

START_TEST(test_users_and_non_root)
{
        struct k8s_pod *p =
            pod_from("{\"metadata\":{\"name\":\"web\",\"namespace\":\"shop\",\"uid\":\"u-9\"},"
                     "\"spec\":{\"securityContext\":{\"runAsUser\":1000,\"runAsGroup\":3000,"
                     "\"supplementalGroups\":[4000,4001],\"fsGroup\":2000},"
                     "\"containers\":["
                     "{\"name\":\"pod-level\",\"image\":\"i:1\",\"command\":[\"x\"]},"
                     "{\"name\":\"override\",\"image\":\"i:1\",\"command\":[\"x\"],"
                     "\"securityContext\":{\"runAsUser\":0,\"runAsNonRoot\":true}}]}}");
        struct ag_container_spec s;
        struct cb_error err = {0};
        ck_assert(build(p, 0, NULL, &s, &err) == 0);
        ck_assert(s.has_uid && s.uid == 1000 && s.has_gid && s.gid == 3000);
        ck_assert_uint_eq(s.n_groups, 3);
        ck_assert_int_eq(s.groups[2], 2000);
        ck_assert_int_eq(build(p, 1, NULL, &s, &err), -1);
        ck_assert_str_eq(err.msg, "container's runAsUser breaks non-root policy (pod: "
                                  "\"web_shop(u-9)\", container: override)");
        k8s_pod_free(p);

        p = pod_from("{\"metadata\":{\"name\":\"web\",\"namespace\":\"shop\",\"uid\":\"u-9\"},"
                     "\"spec\":{\"securityContext\":{\"runAsNonRoot\":true},\"containers\":["
                     "{\"name\":\"c\",\"image\":\"i:1\",\"command\":[\"x\"]}]}}");
        struct ag_image_defaults img = {.user = ""};
        ck_assert_int_eq(build(p, 0, &img, &s, &err), -1);
        ck_assert_str_eq(err.msg, "container has runAsNonRoot and image will run as root (pod: "
                                  "\"web_shop(u-9)\", container: c)");
        img.user = "0:0";
        ck_assert_int_eq(build(p, 0, &img, &s, &err), -1);
        img.user = "nobody";
        ck_assert_int_eq(build(p, 0, &img, &s, &err), -1);
        ck_assert_msg(strstr(err.msg, "image has non-numeric user (nobody), cannot verify user is "
                                      "non-root"),
                      "%s", err.msg);
        img.user = "65534:65534";
        ck_assert_msg(build(p, 0, &img, &s, &err) == 0, "%s", err.msg);
        ck_assert(s.uid == 65534 && s.gid == 65534);
        k8s_pod_free(p);

        /* Without runAsNonRoot a named user is left to the runtime. */
        p = pod_from("{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\","
                     "\"image\":\"i:1\",\"command\":[\"x\"]}]}}");
        img.user = "www:staff";
        ck_assert(build(p, 0, &img, &s, &err) == 0);
        ck_assert(!s.has_uid && !s.has_gid);
        ck_assert_str_eq(s.user_name, "www");
        ck_assert_str_eq(s.group_name, "staff");
        k8s_pod_free(p);
}
END_TEST

static bool has_cap(const struct ag_container_spec *s, const char *name)
{
        for (size_t i = 0; i < s->n_caps; i++)
                if (strcmp(s->caps[i], name) == 0)
                        return true;
        return false;
}

START_TEST(test_capabilities)
{
        struct k8s_pod *p = pod_from(
            "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":["
            "{\"name\":\"default\",\"image\":\"i:1\",\"command\":[\"x\"]},"
            "{\"name\":\"dropall-add\",\"image\":\"i:1\",\"command\":[\"x\"],\"securityContext\":"
            "{\"capabilities\":{\"drop\":[\"ALL\"],\"add\":[\"NET_BIND_SERVICE\"]}}},"
            "{\"name\":\"addall-drop\",\"image\":\"i:1\",\"command\":[\"x\"],\"securityContext\":"
            "{\"capabilities\":{\"add\":[\"ALL\"],\"drop\":[\"CHOWN\",\"cap_kill\"]}}},"
            "{\"name\":\"add-drop\",\"image\":\"i:1\",\"command\":[\"x\"],\"securityContext\":"
            "{\"capabilities\":{\"add\":[\"NET_ADMIN\",\"SYS_TIME\"],\"drop\":[\"NET_RAW\"]}}},"
            "{\"name\":\"privileged\",\"image\":\"i:1\",\"command\":[\"x\"],\"securityContext\":"
            "{\"privileged\":true,\"capabilities\":{\"drop\":[\"ALL\"]}}},"
            "{\"name\":\"bogus\",\"image\":\"i:1\",\"command\":[\"x\"],\"securityContext\":"
            "{\"capabilities\":{\"add\":[\"NET_ADMIM\"]}}}]}}");
        struct ag_container_spec s;
        struct cb_error err = {0};
        ck_assert(build(p, 0, NULL, &s, &err) == 0);
        ck_assert_uint_eq(s.n_caps, 14);
        ck_assert(has_cap(&s, "CAP_NET_RAW") && !has_cap(&s, "CAP_SYS_ADMIN"));
        ck_assert(build(p, 1, NULL, &s, &err) == 0);
        ck_assert_uint_eq(s.n_caps, 1);
        ck_assert_str_eq(s.caps[0], "CAP_NET_BIND_SERVICE");
        ck_assert(build(p, 2, NULL, &s, &err) == 0);
        ck_assert(has_cap(&s, "CAP_SYS_ADMIN") && !has_cap(&s, "CAP_CHOWN") &&
                  !has_cap(&s, "CAP_KILL"));
        ck_assert(build(p, 3, NULL, &s, &err) == 0);
        ck_assert_uint_eq(s.n_caps, 15);
        ck_assert(has_cap(&s, "CAP_NET_ADMIN") && has_cap(&s, "CAP_SYS_TIME") &&
                  !has_cap(&s, "CAP_NET_RAW"));
        ck_assert(build(p, 4, NULL, &s, &err) == 0);
        ck_assert(s.privileged && has_cap(&s, "CAP_SYS_ADMIN") && s.n_caps >= 38);
        ck_assert_int_eq(build(p, 5, NULL, &s, &err), -1);
        ck_assert_str_eq(err.msg,
                         "securityContext.capabilities.add[0]: unknown capability \"NET_ADMIM\"");
        k8s_pod_free(p);
}
END_TEST

START_TEST(test_seccomp_and_flags)
{
        struct k8s_pod *p = pod_from(
            "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"securityContext\":{\"seccompProfile\":"
            "{\"type\":\"RuntimeDefault\"}},\"containers\":["
            "{\"name\":\"inherit\",\"image\":\"i:1\",\"command\":[\"x\"],\"securityContext\":"
            "{\"allowPrivilegeEscalation\":false,\"readOnlyRootFilesystem\":true}},"
            "{\"name\":\"unconfined\",\"image\":\"i:1\",\"command\":[\"x\"],\"securityContext\":"
            "{\"seccompProfile\":{\"type\":\"Unconfined\"}}},"
            "{\"name\":\"local\",\"image\":\"i:1\",\"command\":[\"x\"],\"securityContext\":"
            "{\"seccompProfile\":{\"type\":\"Localhost\",\"localhostProfile\":\"profiles/"
            "a.json\"}}},"
            "{\"name\":\"escape\",\"image\":\"i:1\",\"command\":[\"x\"],\"securityContext\":"
            "{\"seccompProfile\":{\"type\":\"Localhost\",\"localhostProfile\":\"../../etc/x\"}}},"
            "{\"name\":\"priv\",\"image\":\"i:1\",\"command\":[\"x\"],\"securityContext\":"
            "{\"privileged\":true}}]}}");
        struct ag_container_spec s;
        struct cb_error err = {0};
        ck_assert(build(p, 0, NULL, &s, &err) == 0);
        ck_assert_int_eq(s.seccomp, AG_SECCOMP_RUNTIME_DEFAULT);
        ck_assert(s.no_new_privs && s.read_only_rootfs);
        ck_assert(build(p, 1, NULL, &s, &err) == 0);
        ck_assert_int_eq(s.seccomp, AG_SECCOMP_UNCONFINED);
        ck_assert(!s.no_new_privs && !s.read_only_rootfs);
        ck_assert(build(p, 2, NULL, &s, &err) == 0);
        ck_assert_int_eq(s.seccomp, AG_SECCOMP_LOCALHOST);
        ck_assert_str_eq(s.seccomp_localhost, "profiles/a.json");
        ck_assert_int_eq(build(p, 3, NULL, &s, &err), -1);
        ck_assert_msg(strstr(err.msg, "must be a relative path without \"..\""), "%s", err.msg);
        ck_assert(build(p, 4, NULL, &s, &err) == 0);
        ck_assert_int_eq(s.seccomp, AG_SECCOMP_UNCONFINED);
        k8s_pod_free(p);

        /* Nothing set anywhere: Unconfined (the kubelet's seccompDefault=false). */
        p = pod_from("{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\","
                     "\"image\":\"i:1\",\"command\":[\"x\"]}]}}");
        ck_assert(build(p, 0, NULL, &s, &err) == 0);
        ck_assert_int_eq(s.seccomp, AG_SECCOMP_UNCONFINED);
        k8s_pod_free(p);
}
END_TEST

/* stdin, stdinOnce and tty reach the runtime as they are (stdinOnce only
 * with stdin); a terminal gets TERM=xterm unless the env or the image set
 * TERM (containerd's oci.WithTTY). */
START_TEST(test_stdin_tty)
{
        struct k8s_pod *p =
            pod_from("{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":["
                     "{\"name\":\"plain\",\"image\":\"i:1\",\"command\":[\"x\"]},"
                     "{\"name\":\"in\",\"image\":\"i:1\",\"command\":[\"x\"],\"stdin\":true,"
                     "\"stdinOnce\":true},"
                     "{\"name\":\"once-alone\",\"image\":\"i:1\",\"command\":[\"x\"],"
                     "\"stdinOnce\":true},"
                     "{\"name\":\"term\",\"image\":\"i:1\",\"command\":[\"x\"],\"stdin\":true,"
                     "\"tty\":true},"
                     "{\"name\":\"own-term\",\"image\":\"i:1\",\"command\":[\"x\"],\"tty\":true,"
                     "\"env\":[{\"name\":\"TERM\",\"value\":\"vt100\"}]}]}}");
        struct ag_container_spec s;
        struct cb_error err = {0};
        ck_assert(build(p, 0, NULL, &s, &err) == 0);
        ck_assert(!s.stdin_open && !s.stdin_once && !s.tty);
        ck_assert_ptr_null(env_of(&s, "TERM"));
        ck_assert(build(p, 1, NULL, &s, &err) == 0);
        ck_assert(s.stdin_open && s.stdin_once && !s.tty);
        ck_assert_ptr_null(env_of(&s, "TERM"));
        ck_assert(build(p, 2, NULL, &s, &err) == 0);
        ck_assert(!s.stdin_open && !s.stdin_once);
        ck_assert(build(p, 3, NULL, &s, &err) == 0);
        ck_assert(s.stdin_open && !s.stdin_once && s.tty);
        ck_assert_str_eq(env_of(&s, "TERM"), "xterm");
        ck_assert(build(p, 4, NULL, &s, &err) == 0);
        ck_assert(s.tty);
        ck_assert_str_eq(env_of(&s, "TERM"), "vt100");
        char *const img_env[] = {"TERM=linux", NULL};
        struct ag_image_defaults img = {.env = img_env};
        ck_assert(build(p, 3, &img, &s, &err) == 0);
        ck_assert_str_eq(env_of(&s, "TERM"), "linux");
        k8s_pod_free(p);
}
END_TEST

/* The groups as a comma list, to compare. */
static const char *groups_text(const uint32_t *g, size_t n)
{
        static char buf[512];
        size_t o = 0;
        buf[0] = '\0';
        for (size_t i = 0; i < n; i++)
                o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s%u", i ? "," : "", g[i]);
        return buf;
}

static const char *groups_of(struct ag_groups_input in)
{
        uint32_t *g = NULL;
        size_t n = 0;
        struct cb_error err = {0};
        ck_assert_msg(ag_supplementary_groups(arena, &in, &g, &n, &err) == 0, "%s", err.msg);
        return groups_text(g, n);
}

/* alpine 3.22's /etc/passwd and /etc/group (head) */
static const char alpine_passwd[] = "root:x:0:0:root:/root:/bin/sh\n"
                                    "bin:x:1:1:bin:/bin:/sbin/nologin\n"
                                    "daemon:x:2:2:daemon:/sbin:/sbin/nologin\n"
                                    "app:x:1000:1000::/home/app:/bin/sh\n";
static const char alpine_group[] = "root:x:0:root\n"
                                   "bin:x:1:root,bin,daemon\n"
                                   "daemon:x:2:root,bin,daemon\n"
                                   "sys:x:3:root,bin\n"
                                   "adm:x:4:root,daemon\n"
                                   "tty:x:5:\n"
                                   "disk:x:6:root\n"
                                   "lp:x:7:lp\n"
                                   "kmem:x:9:\n"
                                   "wheel:x:10:root\n"
                                   "floppy:x:11:root\n"
                                   "mail:x:12:mail\n"
                                   "dialout:x:20:root\n"
                                   "tape:x:26:root\n"
                                   "video:x:27:root\n"
                                   "app:x:1000:app\n"
                                   "users:x:100:games,app\n"
                                   "nobody:x:65534:";

/* containerd's supplementary groups (SupplementalGroupsPolicy Merge and
 * Strict): the primary gid first, the image's memberships of the user by
 * name in file order (not the group named as the user), then the pod's;
 * each group once. */
START_TEST(test_supplementary_groups)
{
        struct ag_groups_input root = {
            .passwd = alpine_passwd, .group = alpine_group, .merge = true};
        /* root in an alpine image: what the v1.35 cluster reports */
        ck_assert_str_eq(groups_of(root), "0,1,2,3,4,6,10,11,20,26,27");
        /* the same by name (USER root) */
        root.user_name = "root";
        ck_assert_str_eq(groups_of(root), "0,1,2,3,4,6,10,11,20,26,27");
        /* Strict: only the primary gid and the pod's */
        int64_t pod[] = {4000, 27, 5000, 4000};
        root.merge = false;
        root.pod_groups = pod;
        root.n_pod_groups = 4;
        ck_assert_str_eq(groups_of(root), "0,4000,27,5000");
        /* Merge with the pod's: de-duplicated, the first kept */
        root.merge = true;
        ck_assert_str_eq(groups_of(root), "0,1,2,3,4,6,10,11,20,26,27,4000,5000");
        /* a numeric uid named in passwd, another primary gid (runAsGroup):
         * the group "app" is the one named as the user, left out; the last
         * line without a newline is read too */
        struct ag_groups_input app = {.passwd = alpine_passwd,
                                      .group = alpine_group,
                                      .uid = 1000,
                                      .gid = 3000,
                                      .merge = true,
                                      .pod_groups = pod,
                                      .n_pod_groups = 1};
        ck_assert_str_eq(groups_of(app), "3000,100,4000");
        /* a numeric uid without a passwd entry: no image groups */
        app.uid = 1234;
        ck_assert_str_eq(groups_of(app), "3000,4000");
        /* no passwd file at all: the same */
        app.passwd = NULL;
        app.uid = 1000;
        ck_assert_str_eq(groups_of(app), "3000,4000");
        /* a member name only matches whole ("ap" is not "app") */
        struct ag_groups_input ap = {
            .group = "g:x:7:app,apps\nh:x:8:ap\n", .user_name = "app", .gid = 1, .merge = true};
        ck_assert_str_eq(groups_of(ap), "1,7");
        ap.user_name = "ap";
        ck_assert_str_eq(groups_of(ap), "1,8");
        /* unreadable files: an error under Merge when needed, none under Strict */
        struct cb_error err = {0};
        uint32_t *g = NULL;
        size_t n = 0;
        struct ag_groups_input bad = {
            .group_error = "/etc/group in image x is a FIFO", .user_name = "app", .merge = true};
        ck_assert_int_eq(ag_supplementary_groups(arena, &bad, &g, &n, &err), -1);
        ck_assert_str_eq(err.msg, "unable to find the groups of user app: /etc/group in image x is "
                                  "a FIFO; make /etc/group a regular file in the image, or set "
                                  "supplementalGroupsPolicy: Strict");
        bad.merge = false;
        ck_assert_str_eq(groups_of(bad), "0");
        struct ag_groups_input badpw = {.passwd_error = "too large", .uid = 5, .merge = true};
        ck_assert_int_eq(ag_supplementary_groups(arena, &badpw, &g, &n, &err), -1);
        ck_assert_ptr_nonnull(strstr(err.msg, "unable to find the user of uid 5: too large"));
}
END_TEST

int main(void)
{
        Suite *s = suite_create("containerspec");
        TCase *tc = tcase_create("core");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, test_expand_table);
        tcase_add_test(tc, test_pull_policy_default);
        tcase_add_test(tc, test_env_and_downward_api);
        tcase_add_test(tc, test_downward_api_pod_level_limits);
        tcase_add_test(tc, test_env_errors);
        tcase_add_test(tc, test_argv_rules);
        tcase_add_test(tc, test_users_and_non_root);
        tcase_add_test(tc, test_capabilities);
        tcase_add_test(tc, test_seccomp_and_flags);
        tcase_add_test(tc, test_stdin_tty);
        tcase_add_test(tc, test_supplementary_groups);
        suite_add_tcase(s, tc);
        return th_run(s) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
