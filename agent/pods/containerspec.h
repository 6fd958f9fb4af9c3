/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * From a Kubernetes container (and its pod and image config) to what the
 * runtime runs, with the kubelet's and containerd's rules:
 *  - environment: spec.env in order, `$(VAR)` expanded against the variables
 *    defined before it; valueFrom.fieldRef / resourceFieldRef resolved
 *    (the downward API); the image's Env first, overridden by the
 *    container's (k/k kubelet_pods.go makeEnvironmentVariables);
 *  - argv: command replaces the image Entrypoint, args replace its Cmd, and
 *    both are `$(VAR)`-expanded with the container's environment;
 *  - user: runAsUser/runAsGroup (container over pod) over the image's
 *    User; runAsNonRoot verified (CreateContainerConfigError otherwise);
 *    supplementalGroups plus fsGroup;
 *  - capabilities: containerd's default set, add/drop with "ALL" applied
 *    first, privileged = every capability;
 *  - seccomp (container over pod; unset = Unconfined, the kubelet default,
 *    or RuntimeDefault with --seccomp-default),
 *    no_new_privs (allowPrivilegeEscalation: false), readOnlyRootFilesystem;
 *  - stdin, stdinOnce, tty as they are (stdinOnce only with stdin); with
 *    tty, TERM=xterm unless the environment sets TERM (containerd's
 *    oci.WithTTY).
 * Pure functions, no I/O.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/k8s/k8s.h"
#include "agent/k8s/qos.h"
#include "lib/arena.h"
#include "lib/error.h"
#include "runtime/container.h"
#include "runtime/image.h"

/* A ConfigMap or Secret the container's env refers to, as the caller
 * read it (agent/client/objmanager.h): data NULL when it does not exist. */
struct ag_env_object {
        bool secret;
        const char *name;
        const struct k8s_keyed_data *data;
};

/* Values the downward API needs that are not in the pod spec. */
struct ag_env_context {
        const char *node_name;
        const char *service_account; /* spec.serviceAccountName; NULL = "default" */
        const char *pod_ip;          /* "" until the sandbox has an IP */
        const char *const *pod_ips;
        size_t n_pod_ips;
        const char *host_ip;
        const char *const *host_ips;
        size_t n_host_ips;
        int64_t node_allocatable_milli_cpu; /* resourceFieldRef default for limits */
        int64_t node_allocatable_memory;
        int64_t node_allocatable_ephemeral;
        bool seccomp_default; /* the kubelet's --seccomp-default: Unset is RuntimeDefault */
        /* configMapKeyRef, secretKeyRef, envFrom: the objects, resolved;
         * one missing from the list counts as not found. */
        const struct ag_env_object *objects;
        size_t n_objects;
        /* The Services' docker-link variables ("KEY=value", agent/k8s/service.h,
         * k8s_service_env): `$(VAR)` sees them; the container's env overrides them. */
        const char *const *service_env;
        size_t n_service_env;
};

/* The image's config, as far as it matters here (runtime/image.h fills it). */
struct ag_image_defaults {
        char *const *entrypoint; /* NULL-terminated, or NULL */
        char *const *cmd;
        char *const *env; /* "KEY=value" */
        const char *working_dir;
        const char *user; /* "", "uid", "uid:gid", "name", "name:group" */
};

enum ag_seccomp {
        AG_SECCOMP_UNCONFINED,
        AG_SECCOMP_RUNTIME_DEFAULT,
        AG_SECCOMP_LOCALHOST,
};

struct ag_container_spec {
        char **argv; /* NULL-terminated */
        size_t argc;
        char **env; /* "KEY=value", NULL-terminated; image env overridden */
        size_t n_env;
        const char *cwd;
        /* uid: from the pod or a numeric image user; when !has_uid the
         * runtime resolves user_name in the image's /etc/passwd. */
        bool has_uid;
        int64_t uid;
        bool has_gid;
        int64_t gid;
        const char *user_name;  /* non-numeric image user, else NULL */
        const char *group_name; /* non-numeric image group, else NULL */
        int64_t *groups;        /* supplementalGroups, then fsGroup */
        size_t n_groups;
        const char **caps; /* "CAP_CHOWN", ...; NULL-terminated */
        size_t n_caps;
        bool privileged;
        bool no_new_privs;
        bool read_only_rootfs;
        enum ag_seccomp seccomp;
        const char *seccomp_localhost;    /* relative to <root-dir>/seccomp/ */
        enum k8s_pull_policy pull_policy; /* never K8S_PULL_DEFAULT */
        bool stdin_open, stdin_once, tty; /* spec.containers[].stdin, stdinOnce, tty */
        /* InvalidEnvironmentVariableNames events (Warning) to record:
         * envFrom keys skipped, in the kubelet's words. */
        char **env_warnings;
        size_t n_env_warnings;
        /* volumeMounts with subPath/subPathExpr (ag_container_config_build):
         * the caller resolves each inside its volume (agent/pods/subpath.h)
         * and replaces the mount's source before the start. */
        struct ag_subpath {
                size_t mount;            /* index in rt_container_config.mounts */
                size_t volume_mount;     /* index in the container's volumeMounts */
                const char *volume_name; /* spec.volumes[].name */
                const char *volume_dir;  /* the volume on the node */
                const char *path;        /* relative, checked: no "..", not absolute */
        } * subpaths;
        size_t n_subpaths;
};

/* `$(VAR)` expansion as Kubernetes does it: `$$` is a literal `$`, an
 * undefined `$(VAR)` stays as written, `$` before anything else stays.
 * lookup returns NULL for undefined names. The result is in arena. */
char *ag_expand(struct cb_arena *a, const char *in,
                const char *(*lookup)(void *ctx, const char *name, size_t len), void *ctx);

/* imagePullPolicy with the API default: Always for ":latest" or no tag,
 * IfNotPresent for any other tag or a digest. */
enum k8s_pull_policy ag_pull_policy(const struct k8s_container *c);
const char *ag_pull_policy_name(enum k8s_pull_policy p);

/*
 * Builds the spec. init tells whether c is an init container (used in
 * error messages). Errors (-1) are the kubelet's CreateContainerConfigError
 * cases, with its messages: an unresolvable fieldRef/resourceFieldRef, a
 * ConfigMap/Secret or key that does not exist (`configmap "x" not found`,
 * `couldn't find key k in ConfigMap ns/x`; optional ones are skipped; envFrom
 * first, env over it, keys that are no valid names skipped with a warning
 * in env_warnings; values are the objects' at this start), runAsNonRoot
 * violated ("container has runAsNonRoot and image will run as root (pod:
 * "web_default(uid)", container: app)"), an unknown capability name, a
 * Localhost seccomp profile that escapes its directory.
 */
int ag_container_spec_build(struct cb_arena *a, const struct k8s_pod *pod,
                            const struct k8s_container *c, const struct ag_image_defaults *img,
                            const struct ag_env_context *ctx, struct ag_container_spec *ret,
                            struct cb_error *err);

/* ---- the whole runtime config of one container start ---- */

/* A pod volume made ready on the node (the worker does that I/O: creates
 * the emptyDir directory, checks the hostPath). */
struct ag_volume_source {
        const char *name;        /* spec.volumes[].name */
        enum rt_mount_type type; /* RT_MOUNT_BIND or RT_MOUNT_TMPFS */
        const char *source;      /* the host path of a bind */
        const char *options;     /* tmpfs options (NULL: the runtime's default) */
        bool read_only;          /* always read-only (configMap, secret, projected, ...) */
};

/* Everything a container start depends on, already read from disk. */
struct ag_container_inputs {
        const struct k8s_pod *pod;
        const struct k8s_container *container;
        const struct rt_image *image; /* config, layer dirs, reference and digest */
        /* The image's /etc/passwd and /etc/group as the container would see
         * them (NULL: none), for a user or group given by name and the
         * primary group of a numeric user. *_error: the file could not be
         * read (not a regular file, too large: rt_image_read_file's
         * message), an error for the start only if it needs that file. */
        const char *passwd, *group;
        const char *passwd_error, *group_error;
        const struct ag_env_context *ctx;
        const struct ag_volume_source *volumes;
        size_t n_volumes;
        const struct rt_sandbox *sandbox;        /* its /etc files; the config points at it */
        const struct k8s_container_cgroup *plan; /* NULL: no limits */
        const char *id;                          /* the runtime container id */
        const char *pod_cgroup;                  /* the container cgroup is <pod_cgroup>/<id> */
        const char *root_dir, *monitor_path;     /* --root-dir, the cubelet binary */
        const char *pod_logs_dir;                /* CRI logs (ag_cri_log_dir) */
        int restart_count;                       /* the log file is <restart_count>.log */
        /* The host file bound at terminationMessagePath (the API default
         * /dev/termination-log when unset); NULL: none. */
        const char *termination_log;
};

/*
 * The one conversion from a Kubernetes container to the runtime's config:
 * ag_container_spec_build, the image's user and group looked up by name,
 * the sandbox's /etc/hosts, /etc/hostname and /etc/resolv.conf then the
 * volume mounts, the cgroup plan, the CRI log path and the image's stop
 * signal. Pure: everything lives in arena. Errors are the kubelet's
 * CreateContainerConfigError cases (a volume that does not exist, a user
 * not in the image's passwd file, ...). ret_spec (may be NULL) gets the
 * Kubernetes-side spec it was built from.
 */
int ag_container_config_build(struct cb_arena *a, const struct ag_container_inputs *in,
                              struct rt_container_config *ret, struct ag_container_spec *ret_spec,
                              struct cb_error *err);

/* The CRI log directory of a pod (<dir>/<ns>_<name>_<uid>, container
 * NULL) or of one of its containers (.../<container>). -1 when it does not
 * fit in size. */
int ag_cri_log_dir(char *buf, size_t size, const char *logs_dir, const char *ns, const char *name,
                   const char *uid, const char *container);

/* "name@sha256:..." of an image reference (tag dropped) and its manifest
 * digest: the imageID the kubelet reports. */
void ag_image_id(char *buf, size_t size, const char *ref, const char *manifest_digest);

/* A stop signal's number from its name ("SIGTERM", "TERM", "15"); SIGTERM
 * for NULL or an unknown name. */
int ag_signal_number(const char *name);

/* What the process's supplementary groups are made of. */
struct ag_groups_input {
        const char *passwd, *group;             /* the image's files (NULL: none) */
        const char *passwd_error, *group_error; /* could not be read (NULL: read) */
        const char *user_name;                  /* the image's user by name, else NULL */
        int64_t uid;                            /* the final uid */
        uint32_t gid;                           /* the final primary gid */
        bool merge;                             /* supplementalGroupsPolicy Merge */
        const int64_t *pod_groups;              /* supplementalGroups, then fsGroup */
        size_t n_pod_groups;
};

/*
 * The container process's supplementary groups as containerd gives them
 * (and reports them in the CRI status's user.linux): the primary gid first;
 * under Merge then the groups of the image's /etc/group that list the user
 * by name (a numeric uid: the name of its /etc/passwd entry; none without
 * one), in file order, the group named as the user left out; then the pod's
 * supplementalGroups and fsGroup. Duplicates are dropped, the first kept.
 * Errors: under Merge, a passwd (numeric uid) or group file that could not
 * be read.
 */
int ag_supplementary_groups(struct cb_arena *a, const struct ag_groups_input *in, uint32_t **ret,
                            size_t *ret_n, struct cb_error *err);

/* A user or group in passwd/group text (name, or the numeric uid when name
 * is NULL): its id and, for passwd, its primary group. -1 when absent. */
int ag_lookup_id(const char *text, const char *name, int64_t numeric, int64_t *ret_id,
                 int64_t *ret_gid);
