/* SPDX-License-Identifier: Apache-2.0 */
/* The one builder from a Kubernetes container to the runtime's config
 * (agent/pods/containerspec.h ag_container_config_build): environment and
 * $(VAR) expansion, argv, mounts, users and groups from the image's passwd
 * and group files, the security context, resources and the log path. */
#include <check.h>
#include <signal.h>
#include <stdio.h>
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
        return th_pod_json(json);
}

static void pod_freep(struct k8s_pod **p)
{
        k8s_pod_free(*p);
}

#define POD(spec)                                                                                  \
        "{\"metadata\":{\"name\":\"web\",\"namespace\":\"ns1\",\"uid\":\"u-1\"},\"spec\":" spec "}"

static char *entry[] = {"/bin/server", NULL};
static char *cmd[] = {"--port=80", NULL};
static char *img_env[] = {"PATH=/usr/bin:/bin", "MODE=image", NULL};
static const char *layers[] = {"/layers/0", "/layers/1"};

static struct rt_image image(const char *user)
{
        return (struct rt_image){
            .ref = "registry.local:5000/team/web:1.2",
            .manifest_digest = "sha256:abc",
            .n_layers = 2,
            .layer_dirs = layers,
            .config = {.entrypoint = entry,
                       .cmd = cmd,
                       .env = img_env,
                       .working_dir = "/srv",
                       .user = (char *)user,
                       .stop_signal = "SIGQUIT"},
        };
}

static const char *const passwd = "root:x:0:0:root:/root:/bin/sh\n"
                                  "www:x:33:34:www:/var/www:/bin/false\n"
                                  "app:x:1000:1001::/home/app:/bin/sh";
static const char *const group = "root:x:0:\nstaff:x:50:\napp:x:1001:\n";

static bool build_seccomp_default;
/* rt_image_read_file's errors for the image's passwd and group (NULL: read) */
static const char *build_passwd_error, *build_group_error;

struct built {
        struct rt_container_config cfg;
        struct ag_container_spec spec;
        struct cb_error err;
        int rc;
};

static const char *term_log; /* the termination message file, for build() */
/* The ConfigMaps/Secrets the env sees (test_env_from_objects). */
static const struct ag_env_object *env_objects;
static size_t n_env_objects;
/* The Services' variables the env sees (test_service_env). */
static const char *const *service_env;
static size_t n_service_env;

static struct built build(const struct k8s_pod *pod, size_t container, const struct rt_image *img,
                          const struct ag_volume_source *vols, size_t n_vols,
                          const struct k8s_container_cgroup *plan)
{
        static struct rt_sandbox sb;
        memset(&sb, 0, sizeof(sb));
        snprintf(sb.hosts_path, sizeof(sb.hosts_path), "/sb/hosts");
        snprintf(sb.resolv_conf_path, sizeof(sb.resolv_conf_path), "/sb/resolv.conf");
        static const char *pod_ips[] = {"10.0.0.7"};
        struct ag_env_context ctx = {.node_name = "node-a",
                                     .pod_ip = "10.0.0.7",
                                     .pod_ips = pod_ips,
                                     .n_pod_ips = 1,
                                     .host_ip = "192.0.2.1",
                                     .seccomp_default = build_seccomp_default,
                                     .objects = env_objects,
                                     .n_objects = n_env_objects,
                                     .service_env = service_env,
                                     .n_service_env = n_service_env};
        struct ag_container_inputs in = {
            .pod = pod,
            .container = &pod->spec.containers[container],
            .image = img,
            .passwd = build_passwd_error ? NULL : passwd,
            .group = build_group_error ? NULL : group,
            .passwd_error = build_passwd_error,
            .group_error = build_group_error,
            .ctx = &ctx,
            .volumes = vols,
            .n_volumes = n_vols,
            .sandbox = &sb,
            .plan = plan,
            .id = "c0ffee",
            .pod_cgroup = "kubepods/besteffort/podu-1",
            .root_dir = "/var/lib/cubelet",
            .monitor_path = "/usr/bin/cubelet",
            .pod_logs_dir = "/var/log/pods",
            .restart_count = 3,
            .termination_log = term_log,
        };
        struct built b = {0};
        b.rc = ag_container_config_build(arena, &in, &b.cfg, &b.spec, &b.err);
        return b;
}

static bool has_env(const struct rt_container_config *c, const char *kv)
{
        for (size_t i = 0; c->env[i]; i++)
                if (strcmp(c->env[i], kv) == 0)
                        return true;
        return false;
}

START_TEST(test_env_argv_and_paths)
{
        _cleanup_(pod_freep) struct k8s_pod *p =
            pod_from(POD("{\"containers\":[{\"name\":\"app\",\"image\":\"web\",\"args\":"
                         "[\"--name=$(NAME)\",\"$$(NAME)\"],\"env\":[{\"name\":\"NAME\",\"value\":"
                         "\"x-$(MODE)\"},{\"name\":\"MODE\",\"value\":\"pod\"},{\"name\":\"IP\","
                         "\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"status.podIP\"}}}]}]}"));
        struct rt_image img = image("");
        struct built b = build(p, 0, &img, NULL, 0, NULL);
        ck_assert_msg(b.rc == 0, "%s", b.err.msg);
        /* $(MODE) is defined after NAME: it stays as written. */
        ck_assert(has_env(&b.cfg, "NAME=x-$(MODE)"));
        ck_assert(has_env(&b.cfg, "MODE=pod")); /* the container's value wins */
        ck_assert(has_env(&b.cfg, "IP=10.0.0.7"));
        ck_assert(has_env(&b.cfg, "PATH=/usr/bin:/bin"));
        /* args replace the image's Cmd, the Entrypoint stays. */
        ck_assert_str_eq(b.cfg.argv[0], "/bin/server");
        ck_assert_str_eq(b.cfg.argv[1], "--name=x-$(MODE)");
        ck_assert_str_eq(b.cfg.argv[2], "$(NAME)");
        ck_assert_ptr_null(b.cfg.argv[3]);
        ck_assert_str_eq(b.cfg.cwd, "/srv");
        ck_assert_str_eq(b.cfg.id, "c0ffee");
        ck_assert_str_eq(b.cfg.name, "app");
        ck_assert_str_eq(b.cfg.log_path, "/var/log/pods/ns1_web_u-1/app/3.log");
        ck_assert_str_eq(b.cfg.cgroup_path, "kubepods/besteffort/podu-1/c0ffee");
        ck_assert_uint_eq(b.cfg.n_lower, 2);
        ck_assert_str_eq(b.cfg.lower_dirs[1], "/layers/1");
        ck_assert_int_eq(b.cfg.stop_signal, SIGQUIT);
        ck_assert_int_eq(b.cfg.uid, 0);
        ck_assert_int_eq(b.cfg.gid, 0);
        ck_assert_int_eq(b.cfg.seccomp, RT_SECCOMP_UNCONFINED);
}
END_TEST

/* makeEnvironmentVariables with service variables: the container's env
 * first, in order; $(VAR) sees the service variables; a container variable
 * of the same name overrides one; the rest follow; args see them too. */
START_TEST(test_service_env)
{
        static const char *const senv[] = {"KUBERNETES_SERVICE_HOST=10.96.0.1",
                                           "KUBERNETES_SERVICE_PORT=443", "MODE=service",
                                           "WEB_SERVICE_HOST=10.96.0.20"};
        service_env = senv;
        n_service_env = 4;
        _cleanup_(pod_freep) struct k8s_pod *p =
            pod_from(POD("{\"containers\":[{\"name\":\"app\",\"image\":\"web\",\"args\":"
                         "[\"$(WEB_SERVICE_HOST)\"],\"env\":[{\"name\":\"API\",\"value\":"
                         "\"https://$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)\"},"
                         "{\"name\":\"WEB_SERVICE_HOST\",\"value\":\"mine\"}]}]}"));
        struct rt_image img = image("");
        struct built b = build(p, 0, &img, NULL, 0, NULL);
        service_env = NULL;
        n_service_env = 0;
        ck_assert_msg(b.rc == 0, "%s", b.err.msg);
        ck_assert(has_env(&b.cfg, "API=https://10.96.0.1:443"));
        ck_assert(has_env(&b.cfg, "WEB_SERVICE_HOST=mine"));
        ck_assert(!has_env(&b.cfg, "WEB_SERVICE_HOST=10.96.0.20"));
        ck_assert(has_env(&b.cfg, "KUBERNETES_SERVICE_PORT=443"));
        /* a service variable overrides the image's (MODE=image) */
        ck_assert(has_env(&b.cfg, "MODE=service"));
        ck_assert_str_eq(b.cfg.argv[1], "mine");
        /* order: image env, the container's (API, WEB_SERVICE_HOST), then the Services' */
        size_t api = 0, host = 0, kport = 0;
        for (size_t i = 0; b.cfg.env[i]; i++) {
                if (strncmp(b.cfg.env[i], "API=", 4) == 0)
                        api = i;
                if (strncmp(b.cfg.env[i], "WEB_SERVICE_HOST=", 17) == 0)
                        host = i;
                if (strncmp(b.cfg.env[i], "KUBERNETES_SERVICE_PORT=", 24) == 0)
                        kport = i;
        }
        ck_assert_uint_lt(api, host);
        ck_assert_uint_lt(host, kport);
}
END_TEST

static struct k8s_keyed_data *keyed(const char *json, bool secret)
{
        cJSON *j = cJSON_Parse(json);
        struct k8s_keyed_data *kd = NULL;
        struct cb_error err = {0};
        int r = secret ? k8s_secret_from_json(j, &kd, &err) : k8s_configmap_from_json(j, &kd, &err);
        ck_assert_msg(r == 0, "%s", err.msg);
        cJSON_Delete(j);
        return kd;
}

/* makeEnvironmentVariables: envFrom first (prefix, invalid names skipped
 * with the kubelet's event text), env over it, $(VAR) sees envFrom,
 * optional absent refs skipped, the kubelet's errors otherwise. */
START_TEST(test_env_from_objects)
{
        struct k8s_keyed_data *cm =
            keyed("{\"metadata\":{\"name\":\"cfg\"},\"data\":{\"MODE\":\"cm\",\"1BAD\":\"x\",\"bad-"
                  "ok\":\"y\",\"URL\":\"http://h\"},\"binaryData\":{\"BIN\":\"AAE=\"}}",
                  false);
        struct k8s_keyed_data *sec =
            keyed("{\"metadata\":{\"name\":\"creds\"},\"data\":{\"pass\":\"czNjcmV0\"}}", true);
        struct ag_env_object objs[] = {{false, "cfg", cm}, {true, "creds", sec}};
        env_objects = objs;
        n_env_objects = 2;
        _cleanup_(pod_freep) struct k8s_pod *p = pod_from(POD(
            "{\"containers\":[{\"name\":\"app\",\"image\":\"web\",\"envFrom\":[{\"configMapRef\":"
            "{\"name\":\"cfg\"}},{\"prefix\":\"S_\",\"secretRef\":{\"name\":\"creds\"}},{"
            "\"configMapRef\":{\"name\":\"nope\",\"optional\":true}}],\"env\":[{\"name\":\"MODE\","
            "\"value\":\"env-$(URL)\"},{\"name\":\"PASS\",\"valueFrom\":{\"secretKeyRef\":{"
            "\"name\":\"creds\",\"key\":\"pass\"}}},{\"name\":\"OPT\",\"valueFrom\":{"
            "\"configMapKeyRef\":{\"name\":\"cfg\",\"key\":\"missing\",\"optional\":true}}},{"
            "\"name\":\"B\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"cfg\",\"key\":"
            "\"URL\"}}}]}]}"));
        struct rt_image img = image("");
        struct built b = build(p, 0, &img, NULL, 0, NULL);
        ck_assert_msg(b.rc == 0, "%s", b.err.msg);
        ck_assert(has_env(&b.cfg, "MODE=env-http://h"));
        ck_assert(has_env(&b.cfg, "URL=http://h"));
        ck_assert(has_env(&b.cfg, "bad-ok=y"));
        ck_assert(has_env(&b.cfg, "S_pass=s3cret"));
        ck_assert(has_env(&b.cfg, "PASS=s3cret"));
        ck_assert(has_env(&b.cfg, "B=http://h"));
        for (size_t i = 0; b.cfg.env[i]; i++) {
                ck_assert(strncmp(b.cfg.env[i], "OPT=", 4) != 0);
                ck_assert(strncmp(b.cfg.env[i], "BIN=", 4) != 0);
                ck_assert(strncmp(b.cfg.env[i], "1BAD=", 5) != 0);
        }
        ck_assert_uint_eq(b.spec.n_env_warnings, 1);
        ck_assert_str_eq(b.spec.env_warnings[0],
                         "Keys [1BAD] from the EnvFrom configMap ns1/cfg were skipped since they "
                         "are considered invalid environment variable names.");

        static const struct {
                const char *env, *want;
        } errs[] = {
            {"\"envFrom\":[{\"configMapRef\":{\"name\":\"nope\"}}]",
             "configmap \"nope\" not found"},
            {"\"envFrom\":[{\"secretRef\":{\"name\":\"nope\"}}]", "secret \"nope\" not found"},
            {"\"env\":[{\"name\":\"X\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"cfg\","
             "\"key\":\"k\"}}}]",
             "couldn't find key k in ConfigMap ns1/cfg"},
            {"\"env\":[{\"name\":\"X\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"cfg\","
             "\"key\":\"BIN\"}}}]",
             "couldn't find key BIN in ConfigMap ns1/cfg"},
            {"\"env\":[{\"name\":\"X\",\"valueFrom\":{\"secretKeyRef\":{\"name\":\"creds\","
             "\"key\":\"k\"}}}]",
             "couldn't find key k in Secret ns1/creds"},
            {"\"env\":[{\"name\":\"X\",\"valueFrom\":{\"secretKeyRef\":{\"name\":\"x\","
             "\"key\":\"k\"}}}]",
             "secret \"x\" not found"},
        };
        for (size_t i = 0; i < sizeof(errs) / sizeof(errs[0]); i++) {
                char buf[1024];
                snprintf(buf, sizeof(buf),
                         "{\"metadata\":{\"name\":\"web\",\"namespace\":\"ns1\",\"uid\":"
                         "\"u-1\"},\"spec\":{\"containers\":[{\"name\":\"app\",\"image\":"
                         "\"web\",%s}]}}",
                         errs[i].env);
                _cleanup_(pod_freep) struct k8s_pod *q = pod_from(buf);
                struct built e = build(q, 0, &img, NULL, 0, NULL);
                ck_assert_int_eq(e.rc, -1);
                ck_assert_msg(strstr(e.err.msg, errs[i].want), "%zu: %s", i, e.err.msg);
        }
        env_objects = NULL;
        n_env_objects = 0;
        k8s_keyed_data_free(cm);
        k8s_keyed_data_free(sec);
}
END_TEST

START_TEST(test_mounts)
{
        _cleanup_(pod_freep) struct k8s_pod *p = pod_from(
            POD("{\"volumes\":[{\"name\":\"data\",\"emptyDir\":{}},{\"name\":\"mem\",\"emptyDir\":"
                "{\"medium\":\"Memory\"}}],\"containers\":[{\"name\":\"app\",\"image\":\"web\","
                "\"volumeMounts\":[{\"name\":\"data\",\"mountPath\":\"/data\",\"readOnly\":true},"
                "{\"name\":\"mem\",\"mountPath\":\"/cache\"}]},{\"name\":\"bad\",\"image\":\"web\","
                "\"volumeMounts\":[{\"name\":\"nope\",\"mountPath\":\"/x\"}]}]}"));
        struct rt_image img = image("");
        struct ag_volume_source vols[] = {
            {.name = "data", .type = RT_MOUNT_BIND, .source = "/var/lib/cubelet/pods/u-1/data"},
            {.name = "mem", .type = RT_MOUNT_TMPFS, .options = "size=1048576,mode=1777"},
        };
        struct built b = build(p, 0, &img, vols, 2, NULL);
        ck_assert_msg(b.rc == 0, "%s", b.err.msg);
        /* the sandbox's /etc files first (no hostname file here), then the volumes */
        ck_assert_uint_eq(b.cfg.n_mounts, 4);
        ck_assert_str_eq(b.cfg.mounts[0].destination, "/etc/hosts");
        ck_assert_str_eq(b.cfg.mounts[0].source, "/sb/hosts");
        ck_assert_str_eq(b.cfg.mounts[1].destination, "/etc/resolv.conf");
        ck_assert_str_eq(b.cfg.mounts[2].destination, "/data");
        ck_assert_str_eq(b.cfg.mounts[2].source, "/var/lib/cubelet/pods/u-1/data");
        ck_assert(b.cfg.mounts[2].read_only);
        ck_assert_int_eq(b.cfg.mounts[3].type, RT_MOUNT_TMPFS);
        ck_assert_str_eq(b.cfg.mounts[3].options, "size=1048576,mode=1777");
        ck_assert(!b.cfg.mounts[3].read_only);
        b = build(p, 1, &img, vols, 2, NULL);
        ck_assert_int_eq(b.rc, -1);
        ck_assert_str_eq(b.err.msg, "volumeMounts[0]: volume \"nope\" not found");
}
END_TEST

START_TEST(test_termination_log_mount)
{
        _cleanup_(pod_freep) struct k8s_pod *p =
            pod_from(POD("{\"containers\":[{\"name\":\"app\",\"image\":\"web\"},{\"name\":"
                         "\"own\",\"image\":\"web\",\"terminationMessagePath\":\"/tmp/msg\","
                         "\"terminationMessagePolicy\":\"FallbackToLogsOnError\"}]}"));
        struct rt_image img = image("");
        term_log = "/var/lib/cubelet/pods/u-1/containers/app/c0ffee";
        struct built b = build(p, 0, &img, NULL, 0, NULL);
        ck_assert_msg(b.rc == 0, "%s", b.err.msg);
        /* the default path, last, writable, a plain file bind */
        ck_assert_uint_eq(b.cfg.n_mounts, 3);
        ck_assert_int_eq(b.cfg.mounts[2].type, RT_MOUNT_BIND);
        ck_assert_str_eq(b.cfg.mounts[2].destination, "/dev/termination-log");
        ck_assert_str_eq(b.cfg.mounts[2].source, term_log);
        ck_assert_ptr_ne(b.cfg.mounts[2].source, term_log); /* a copy in the arena */
        ck_assert(!b.cfg.mounts[2].read_only);
        ck_assert(!p->spec.containers[0].termination_message_fallback);
        b = build(p, 1, &img, NULL, 0, NULL);
        ck_assert_str_eq(b.cfg.mounts[2].destination, "/tmp/msg");
        ck_assert(p->spec.containers[1].termination_message_fallback);
        /* none when the file could not be made */
        term_log = NULL;
        b = build(p, 0, &img, NULL, 0, NULL);
        ck_assert_uint_eq(b.cfg.n_mounts, 2);
}
END_TEST

START_TEST(test_users_and_groups)
{
        _cleanup_(pod_freep) struct k8s_pod *p = pod_from(
            POD("{\"securityContext\":{\"supplementalGroups\":[5],\"fsGroup\":2000},"
                "\"containers\":[{\"name\":\"app\",\"image\":\"web\"},{\"name\":\"pinned\","
                "\"image\":\"web\",\"securityContext\":{\"runAsUser\":42,\"runAsGroup\":"
                "43}}]}"));
        static const struct {
                const char *user;
                int rc;
                uint32_t uid, gid;
                const char *msg;
        } t[] = {
            {"", 0, 0, 0, NULL},
            {"www", 0, 33, 34, NULL},         /* the primary group from passwd */
            {"33", 0, 33, 34, NULL},          /* a numeric uid's primary group too */
            {"app:staff", 0, 1000, 50, NULL}, /* a group by name from group */
            {"1000:7", 0, 1000, 7, NULL},
            {"nobody", -1, 0, 0, "unable to find user nobody: no matching entries in passwd file"},
            {"app:wheel", -1, 0, 0,
             "unable to find group wheel: no matching entries in group file"},
        };
        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
                struct rt_image img = image(t[i].user);
                struct built b = build(p, 0, &img, NULL, 0, NULL);
                ck_assert_msg(b.rc == t[i].rc, "%s: %d %s", t[i].user, b.rc, b.err.msg);
                if (b.rc < 0) {
                        ck_assert_str_eq(b.err.msg, t[i].msg);
                        continue;
                }
                ck_assert_msg(b.cfg.uid == t[i].uid && b.cfg.gid == t[i].gid, "%s: %u:%u",
                              t[i].user, b.cfg.uid, b.cfg.gid);
                /* the primary gid first, the pod's last (containerd's) */
                ck_assert_uint_ge(b.cfg.n_groups, 3);
                ck_assert_uint_eq(b.cfg.groups[0], b.cfg.gid);
                ck_assert_uint_eq(b.cfg.groups[b.cfg.n_groups - 2], 5);
                ck_assert_uint_eq(b.cfg.groups[b.cfg.n_groups - 1], 2000);
        }
        /* runAsUser/runAsGroup win over the image's user */
        struct rt_image img = image("www");
        struct built b = build(p, 1, &img, NULL, 0, NULL);
        ck_assert_msg(b.rc == 0, "%s", b.err.msg);
        ck_assert_uint_eq(b.cfg.uid, 42);
        ck_assert_uint_eq(b.cfg.gid, 43);

        /* An image whose /etc/passwd or /etc/group is not a regular file
         * (rt_image_read_file refused it): an error only for a start that
         * needs the file, naming it and what to change. */
        static const struct {
                const char *user, *perr, *gerr;
                int container, rc;
                const char *msg;
        } f[] = {
            {"evil:evil", "/etc/passwd in image web is a FIFO, not a regular file", NULL, 0, -1,
             "unable to find user evil: /etc/passwd in image web is a FIFO, not a regular file; "
             "make /etc/passwd a regular file in the image, or set a numeric runAsUser and "
             "runAsGroup"},
            {"0:evil", NULL, "/etc/group in image web is a FIFO, not a regular file", 0, -1,
             "unable to find group evil: /etc/group in image web is a FIFO, not a regular file; "
             "make /etc/group a regular file in the image, or set a numeric runAsGroup"},
            {"33", "/etc/passwd in image web is a character device, not a regular file", NULL, 0,
             -1,
             "unable to find the primary group of uid 33: /etc/passwd in image web is a "
             "character device, not a regular file; make /etc/passwd a regular file in the "
             "image, or set runAsGroup"},
            /* under Merge (the default) the user's name and its groups are
             * needed too, as containerd reads them for the image's groups */
            {"1000:7", "x", "y", 0, -1,
             "unable to find the user of uid 1000: x; make /etc/passwd a regular file in the "
             "image, or set supplementalGroupsPolicy: Strict"},
            {"app", NULL, "/etc/group in image web is a FIFO, not a regular file", 0, -1,
             "unable to find the groups of user app: /etc/group in image web is a FIFO, not a "
             "regular file; make /etc/group a regular file in the image, or set "
             "supplementalGroupsPolicy: Strict"},
            {"evil:evil", "x", "y", 1, -1, /* runAsUser and runAsGroup */
             "unable to find the user of uid 42: x; make /etc/passwd a regular file in the "
             "image, or set supplementalGroupsPolicy: Strict"},
        };
        for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
                build_passwd_error = f[i].perr;
                build_group_error = f[i].gerr;
                img = image(f[i].user);
                b = build(p, f[i].container, &img, NULL, 0, NULL);
                build_passwd_error = build_group_error = NULL;
                ck_assert_msg(b.rc == f[i].rc, "%s: %d %s", f[i].user, b.rc, b.err.msg);
                if (f[i].rc < 0)
                        ck_assert_str_eq(b.err.msg, f[i].msg);
        }
}
END_TEST

START_TEST(test_security_and_resources)
{
        _cleanup_(pod_freep) struct k8s_pod *p = pod_from(POD(
            "{\"securityContext\":{\"seccompProfile\":{\"type\":\"RuntimeDefault\"}},"
            "\"containers\":"
            "[{\"name\":\"app\",\"image\":\"web\",\"stdin\":true,\"tty\":true,\"securityContext\":{"
            "\"readOnlyRootFilesystem\":true,\"allowPrivilegeEscalation\":false,\"capabilities\":{"
            "\"drop\":[\"ALL\"],\"add\":[\"NET_BIND_SERVICE\"]}}}]}"));
        struct rt_image img = image("");
        struct k8s_container_cgroup plan = {
            .container = &p->spec.containers[0],
            .limits = {.cpu_shares = 512, .cpu_quota_us = 50000, .memory_limit = 1 << 26},
            .oom_score_adj = 999};
        struct built b = build(p, 0, &img, NULL, 0, &plan);
        ck_assert_msg(b.rc == 0, "%s", b.err.msg);
        ck_assert_int_eq(b.cfg.seccomp, RT_SECCOMP_RUNTIME_DEFAULT);
        ck_assert(b.cfg.read_only_rootfs);
        ck_assert(b.cfg.no_new_privs);
        ck_assert(!b.cfg.privileged);
        ck_assert_uint_eq(b.cfg.n_caps, 1);
        ck_assert_str_eq(b.cfg.caps[0], "CAP_NET_BIND_SERVICE");
        ck_assert(b.cfg.stdin_open && b.cfg.tty && !b.cfg.stdin_once);
        ck_assert(has_env(&b.cfg, "TERM=xterm"));
        ck_assert_uint_eq(b.cfg.limits.cpu_shares, 512);
        ck_assert_int_eq(b.cfg.limits.cpu_quota_us, 50000);
        ck_assert_int_eq(b.cfg.limits.memory_limit, 1 << 26);
        ck_assert_int_eq(b.cfg.oom_score_adj, 999);
        /* the tag-less image "web" means :latest: Always */
        ck_assert_int_eq(b.spec.pull_policy, K8S_PULL_ALWAYS);
}
END_TEST

/* --seccomp-default: a container without a profile gets RuntimeDefault;
 * an explicit Unconfined stays Unconfined. */
START_TEST(test_seccomp_default)
{
        _cleanup_(pod_freep) struct k8s_pod *p =
            pod_from(POD("{\"containers\":[{\"name\":\"app\",\"image\":\"web\"},{\"name\":"
                         "\"loose\",\"image\":\"web\",\"securityContext\":{\"seccompProfile\":{"
                         "\"type\":\"Unconfined\"}}}]}"));
        struct rt_image img = image("");
        struct built b = build(p, 0, &img, NULL, 0, NULL);
        ck_assert_int_eq(b.cfg.seccomp, RT_SECCOMP_UNCONFINED);
        build_seccomp_default = true;
        b = build(p, 0, &img, NULL, 0, NULL);
        ck_assert_int_eq(b.cfg.seccomp, RT_SECCOMP_RUNTIME_DEFAULT);
        b = build(p, 1, &img, NULL, 0, NULL);
        ck_assert_int_eq(b.cfg.seccomp, RT_SECCOMP_UNCONFINED);
        build_seccomp_default = false;
}
END_TEST

START_TEST(test_helpers)
{
        char buf[128];
        ag_image_id(buf, sizeof(buf), "registry.local:5000/team/web:1.2", "sha256:abc");
        ck_assert_str_eq(buf, "registry.local:5000/team/web@sha256:abc");
        ag_image_id(buf, sizeof(buf), "registry.local:5000/web@sha256:def", "sha256:def");
        ck_assert_str_eq(buf, "registry.local:5000/web@sha256:def");
        ck_assert_int_eq(ag_signal_number("SIGKILL"), SIGKILL);
        ck_assert_int_eq(ag_signal_number("USR1"), SIGUSR1);
        ck_assert_int_eq(ag_signal_number("9"), 9);
        ck_assert_int_eq(ag_signal_number("SIGBOGUS"), SIGTERM);
        ck_assert_int_eq(ag_signal_number(NULL), SIGTERM);
        ck_assert_int_eq(ag_cri_log_dir(buf, sizeof(buf), "/l", "ns", "p", "u", NULL), 0);
        ck_assert_str_eq(buf, "/l/ns_p_u");
        ck_assert_int_eq(ag_cri_log_dir(buf, 8, "/l", "ns", "p", "u", "c"), -1);
        int64_t id = -1, gid = -1;
        ck_assert_int_eq(ag_lookup_id("a:x:1:2\nb:x:3", "b", 0, &id, &gid), 0);
        ck_assert_int_eq(id, 3);
        ck_assert_int_eq(gid, 0);
        ck_assert_int_eq(ag_lookup_id("ab:x:1:2", "a", 0, &id, NULL), -1); /* no prefix match */
        ck_assert_int_eq(ag_lookup_id(NULL, "a", 0, &id, NULL), -1);
        ck_assert_int_eq(ag_lookup_id("garbage\n\n", NULL, 0, &id, NULL), -1);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("containerconfig");
        TCase *tc = tcase_create("build");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, test_env_argv_and_paths);
        tcase_add_test(tc, test_mounts);
        tcase_add_test(tc, test_termination_log_mount);
        tcase_add_test(tc, test_env_from_objects);
        tcase_add_test(tc, test_service_env);
        tcase_add_test(tc, test_users_and_groups);
        tcase_add_test(tc, test_security_and_resources);
        tcase_add_test(tc, test_seccomp_default);
        tcase_add_test(tc, test_helpers);
        suite_add_tcase(s, tc);
        return th_run(s) ? EXIT_FAILURE : EXIT_SUCCESS;
}
