/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The Kubernetes object model: typed C structs decoded from JSON (cJSON) or
 * YAML (libyaml, through the same tree). Each decoded top-level object owns
 * an arena (lib/arena.h) holding all of its strings and arrays; free it with
 * the matching k8s_*_free().
 *
 * Conventions:
 *  - strings are NULL when the field is absent;
 *  - optional integers carry a has_ flag;
 *  - arrays are (pointer, count) pairs;
 *  - quantities are parsed (agent/k8s/quantity.h) and keep their text.
 * Unknown fields are ignored. A wrong type or an invalid value is an error
 * naming the JSON path and the value, e.g.
 *   spec.containers[1].resources.limits.memory: invalid quantity "12XB"
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "agent/k8s/quantity.h"
#include "lib/arena.h"
#include "lib/error.h"

/* Limits that protect the agent from hostile or broken input. */
#define K8S_MAX_DOC_BYTES    (8u << 20)  /* one object, JSON or YAML */
#define K8S_MAX_LIST_BYTES   (64u << 20) /* a PodList / NodeList */
#define K8S_MAX_STRING_BYTES (1u << 20)  /* any one string value */
#define K8S_MAX_CONTAINERS   256         /* containers + initContainers each */
#define K8S_MAX_ARRAY_ITEMS  4096        /* env, ports, labels, tolerations ... */
#define K8S_MAX_ENV_BYTES    (3u << 20)  /* a container's env names + values */
#define K8S_MAX_LIST_ITEMS   100000      /* items of a list */
#define K8S_MAX_DEPTH        64          /* nesting of any document */

struct k8s_kv {
        char *key;
        char *value;
};

struct k8s_map {
        struct k8s_kv *items;
        size_t n;
};

struct k8s_owner_ref {
        char *api_version, *kind, *name, *uid;
        bool controller;
};

struct k8s_object_meta {
        char *name, *generate_name, *namespace_, *uid, *resource_version;
        int64_t generation;
        char *creation_timestamp;
        char *deletion_timestamp;
        bool has_deletion_grace_period;
        int64_t deletion_grace_period_seconds;
        struct k8s_map labels;
        struct k8s_map annotations;
        struct k8s_owner_ref *owner_refs;
        size_t n_owner_refs;
};

/* A label selector requirement (node affinity matchExpressions/matchFields). */
enum k8s_selector_op {
        K8S_OP_IN,
        K8S_OP_NOT_IN,
        K8S_OP_EXISTS,
        K8S_OP_DOES_NOT_EXIST,
        K8S_OP_GT,
        K8S_OP_LT,
};

struct k8s_requirement {
        char *key;
        enum k8s_selector_op op;
        char **values;
        size_t n_values;
};

struct k8s_node_selector_term {
        struct k8s_requirement *match_expressions;
        size_t n_match_expressions;
        struct k8s_requirement *match_fields;
        size_t n_match_fields;
};

struct k8s_preferred_term {
        int32_t weight;
        struct k8s_node_selector_term preference;
};

struct k8s_node_affinity {
        bool has_required; /* requiredDuringSchedulingIgnoredDuringExecution present */
        struct k8s_node_selector_term *required_terms;
        size_t n_required_terms;
        struct k8s_preferred_term *preferred;
        size_t n_preferred;
};

enum k8s_toleration_op {
        K8S_TOL_EQUAL, /* "" or "Equal" */
        K8S_TOL_EXISTS,
        K8S_TOL_GT, /* "Gt" (alpha TaintTolerationComparisonOperators): value is an integer */
        K8S_TOL_LT, /* "Lt" */
};

enum k8s_taint_effect {
        K8S_EFFECT_ALL = 0, /* toleration only: empty effect matches every effect */
        K8S_EFFECT_NO_SCHEDULE,
        K8S_EFFECT_PREFER_NO_SCHEDULE,
        K8S_EFFECT_NO_EXECUTE,
};

struct k8s_toleration {
        char *key;
        enum k8s_toleration_op op;
        char *value;
        enum k8s_taint_effect effect;
        bool has_toleration_seconds;
        int64_t toleration_seconds;
};

struct k8s_taint {
        char *key;
        char *value;
        enum k8s_taint_effect effect; /* never K8S_EFFECT_ALL once decoded */
        char *time_added;
};

struct k8s_env_var {
        char *name;
        char *value;                 /* value, or NULL */
        char *field_ref_path;        /* valueFrom.fieldRef.fieldPath, or NULL */
        char *field_ref_api_version; /* valueFrom.fieldRef.apiVersion */
        char *resource_field_ref;    /* valueFrom.resourceFieldRef.resource */
        char *resource_field_container;
        struct k8s_quantity resource_field_divisor; /* has_divisor: given */
        bool has_divisor;
        /* valueFrom.configMapKeyRef / secretKeyRef */
        enum k8s_key_ref_kind {
                K8S_KEY_REF_NONE = 0,
                K8S_KEY_REF_CONFIG_MAP,
                K8S_KEY_REF_SECRET
        } key_ref;
        char *key_ref_name, *key_ref_key;
        bool key_ref_optional;
        bool has_value_from_other; /* fileKeyRef (not supported) */
};

/* envFrom[]: every key of a ConfigMap or Secret, with a prefix. */
struct k8s_env_from {
        char *prefix;
        bool secret; /* secretRef, else configMapRef */
        char *name;
        bool optional;
};

enum k8s_protocol { K8S_PROTO_TCP, K8S_PROTO_UDP, K8S_PROTO_SCTP };

struct k8s_container_port {
        char *name;
        int32_t container_port;
        int32_t host_port; /* 0 = none */
        enum k8s_protocol protocol;
        char *host_ip;
};

/* One named resource quantity: "cpu", "memory", "ephemeral-storage", ... */
struct k8s_resource {
        char *name;
        struct k8s_quantity q;
};

struct k8s_resource_list {
        struct k8s_resource *items;
        size_t n;
};

struct k8s_resources {
        struct k8s_resource_list requests;
        struct k8s_resource_list limits;
};

struct k8s_capabilities {
        char **add;
        size_t n_add;
        char **drop;
        size_t n_drop;
};

enum k8s_seccomp_type {
        K8S_SECCOMP_UNSET = 0,
        K8S_SECCOMP_RUNTIME_DEFAULT,
        K8S_SECCOMP_UNCONFINED,
        K8S_SECCOMP_LOCALHOST,
};

struct k8s_seccomp_profile {
        enum k8s_seccomp_type type;
        char *localhost_profile;
};

struct k8s_security_context {
        bool present;
        bool has_run_as_user;
        int64_t run_as_user;
        bool has_run_as_group;
        int64_t run_as_group;
        bool has_run_as_non_root;
        bool run_as_non_root;
        bool has_privileged;
        bool privileged;
        bool has_allow_privilege_escalation;
        bool allow_privilege_escalation;
        bool has_read_only_root_filesystem;
        bool read_only_root_filesystem;
        struct k8s_capabilities caps;
        struct k8s_seccomp_profile seccomp;
};

struct k8s_pod_security_context {
        bool has_run_as_user;
        int64_t run_as_user;
        bool has_run_as_group;
        int64_t run_as_group;
        bool has_run_as_non_root;
        bool run_as_non_root;
        int64_t *supplemental_groups;
        size_t n_supplemental_groups;
        bool has_fs_group;
        int64_t fs_group;
        /* supplementalGroupsPolicy: false = Merge (the default: the
         * image's /etc/group memberships of the user added), true = Strict */
        bool strict_supplemental_groups;
        struct k8s_seccomp_profile seccomp;
        /* securityContext.sysctls, as given (names may use '/') */
        struct k8s_sysctl {
                char *name, *value;
        } * sysctls;
        size_t n_sysctls;
};

enum k8s_handler_kind {
        K8S_HANDLER_NONE = 0,
        K8S_HANDLER_EXEC,
        K8S_HANDLER_HTTP_GET,
        K8S_HANDLER_TCP_SOCKET,
        K8S_HANDLER_GRPC,
        K8S_HANDLER_SLEEP,
};

struct k8s_http_header {
        char *name;
        char *value;
};

/* A probe or lifecycle handler. A named port ("http") is kept in port_name
 * and resolved against the container's ports by the caller. */
struct k8s_handler {
        enum k8s_handler_kind kind;
        char **command; /* exec */
        size_t n_command;
        char *path; /* httpGet */
        char *host;
        char *scheme; /* "HTTP" (default) or "HTTPS" */
        int32_t port; /* 0 when port_name is used */
        char *port_name;
        struct k8s_http_header *headers;
        size_t n_headers;
        int64_t sleep_seconds;
};

struct k8s_probe {
        bool present;
        struct k8s_handler handler;
        int32_t initial_delay_seconds; /* defaults below applied by the decoder */
        int32_t timeout_seconds;       /* default 1 */
        int32_t period_seconds;        /* default 10 */
        int32_t success_threshold;     /* default 1 */
        int32_t failure_threshold;     /* default 3 */
        bool has_termination_grace_period;
        int64_t termination_grace_period_seconds;
};

struct k8s_volume_mount {
        char *name;
        char *mount_path;
        char *sub_path;
        char *sub_path_expr; /* subPathExpr: $(VAR) expanded with the container's env */
        bool read_only;
};

enum k8s_pull_policy {
        K8S_PULL_DEFAULT = 0, /* not given: Always for :latest or no tag, else IfNotPresent */
        K8S_PULL_ALWAYS,
        K8S_PULL_IF_NOT_PRESENT,
        K8S_PULL_NEVER,
};

enum k8s_restart_policy {
        K8S_RESTART_ALWAYS = 0, /* the API default */
        K8S_RESTART_ON_FAILURE,
        K8S_RESTART_NEVER,
};

struct k8s_container {
        char *name;
        char *image;
        enum k8s_pull_policy image_pull_policy;
        char **command;
        size_t n_command;
        char **args;
        size_t n_args;
        char *working_dir;
        struct k8s_env_var *env;
        size_t n_env;
        struct k8s_env_from *env_from;
        size_t n_env_from;
        struct k8s_container_port *ports;
        size_t n_ports;
        struct k8s_resources resources;
        struct k8s_security_context security_context;
        struct k8s_probe liveness_probe, readiness_probe, startup_probe;
        struct k8s_handler pre_stop;   /* lifecycle.preStop */
        struct k8s_handler post_start; /* lifecycle.postStart */
        struct k8s_volume_mount *volume_mounts;
        size_t n_volume_mounts;
        bool stdin_, stdin_once, tty;
        char *termination_message_path; /* NULL or "": the API default /dev/termination-log */
        /* terminationMessagePolicy FallbackToLogsOnError (else File) */
        bool termination_message_fallback;
        bool has_restart_policy; /* init containers: "Always" makes a sidecar */
        enum k8s_restart_policy restart_policy;
};

enum k8s_volume_kind {
        K8S_VOLUME_OTHER = 0, /* a source cubelet does not support (kept by name) */
        K8S_VOLUME_EMPTY_DIR,
        K8S_VOLUME_HOST_PATH,
        K8S_VOLUME_CONFIG_MAP,
        K8S_VOLUME_SECRET,
        K8S_VOLUME_DOWNWARD_API,
        K8S_VOLUME_PROJECTED,
        K8S_VOLUME_PVC, /* persistentVolumeClaim: the claim's PV (agent/k8s/pv.h) */
};

/* items[] of a configMap/secret source: a key to a relative path. */
struct k8s_key_to_path {
        char *key;
        char *path;
        bool has_mode;
        int32_t mode;
};

/* A configMap or secret volume source or projection. */
struct k8s_keyed_source {
        char *name; /* configMap.name / secret.secretName (projection: secret.name) */
        struct k8s_key_to_path *items;
        size_t n_items;
        bool optional;
};

/* items[] of a downwardAPI source. */
struct k8s_downward_item {
        char *path;
        char *field_path; /* fieldRef.fieldPath, or NULL */
        char *resource;   /* resourceFieldRef.resource, or NULL */
        char *container_name;
        bool has_divisor;
        struct k8s_quantity divisor;
        bool has_mode;
        int32_t mode;
};

enum k8s_projection_kind {
        K8S_PROJ_OTHER = 0, /* unknown: other_kind names it */
        K8S_PROJ_SERVICE_ACCOUNT_TOKEN,
        K8S_PROJ_CONFIG_MAP,
        K8S_PROJ_SECRET,
        K8S_PROJ_DOWNWARD_API,
        K8S_PROJ_CLUSTER_TRUST_BUNDLE, /* decoded by name only: cubelet refuses it */
};

struct k8s_projection {
        enum k8s_projection_kind kind;
        struct k8s_keyed_source keyed; /* configMap, secret */
        struct k8s_downward_item *dw_items;
        size_t n_dw_items;
        char *audience;             /* serviceAccountToken */
        int64_t expiration_seconds; /* default 3600 */
        char *path;
        char *other_kind;
};

struct k8s_volume {
        char *name;
        enum k8s_volume_kind kind;
        struct k8s_keyed_source keyed;      /* configMap, secret */
        struct k8s_downward_item *dw_items; /* downwardAPI */
        size_t n_dw_items;
        struct k8s_projection *projections; /* projected.sources */
        size_t n_projections;
        int32_t default_mode;   /* defaultMode, 0644 when not given */
        char *empty_dir_medium; /* "" or "Memory" */
        bool has_size_limit;
        struct k8s_quantity size_limit;
        char *host_path;
        char *host_path_type;
        char *other_kind;     /* e.g. "configMap" when kind == K8S_VOLUME_OTHER */
        char *claim_name;     /* persistentVolumeClaim.claimName */
        bool claim_read_only; /* persistentVolumeClaim.readOnly */
};

/* status.conditions[] of a pod or node. */
struct k8s_condition {
        char *type, *status, *reason, *message;
        char *last_transition_time, *last_heartbeat_time, *last_probe_time;
};

struct k8s_container_state {
        /* exactly one of waiting/running/terminated is set, or none */
        bool waiting, running, terminated;
        char *reason, *message; /* waiting or terminated */
        char *started_at;       /* running or terminated */
        char *finished_at;      /* terminated */
        int32_t exit_code;      /* terminated */
        int32_t signal;         /* terminated */
        char *container_id;     /* terminated */
};

struct k8s_container_status {
        char *name, *image, *image_id, *container_id;
        int32_t restart_count;
        bool ready;
        bool has_started;
        bool started;
        struct k8s_container_state state, last_state;
};

struct k8s_pod_status {
        char *phase; /* "Pending", "Running", "Succeeded", "Failed", "Unknown" or NULL */
        char *reason, *message;
        char *host_ip, *pod_ip;
        char **pod_ips;
        size_t n_pod_ips;
        char *start_time;
        char *qos_class;
        struct k8s_condition *conditions;
        size_t n_conditions;
        struct k8s_container_status *init_container_statuses;
        size_t n_init_container_statuses;
        struct k8s_container_status *container_statuses;
        size_t n_container_statuses;
};

struct k8s_pod_spec {
        char *node_name;
        struct k8s_map node_selector;
        struct k8s_node_affinity node_affinity; /* affinity.nodeAffinity */
        struct k8s_toleration *tolerations;
        size_t n_tolerations;
        struct k8s_container *containers;
        size_t n_containers;
        struct k8s_container *init_containers;
        size_t n_init_containers;
        enum k8s_restart_policy restart_policy;
        bool has_termination_grace_period;
        int64_t termination_grace_period_seconds; /* default 30 */
        bool has_active_deadline;
        int64_t active_deadline_seconds;
        char *hostname, *subdomain;
        bool set_hostname_as_fqdn; /* spec.setHostnameAsFQDN */
        /* spec.hostAliases: extra /etc/hosts lines, in order */
        struct k8s_host_alias {
                char *ip;
                char **hostnames;
                size_t n_hostnames;
        } * host_aliases;
        size_t n_host_aliases;
        bool host_network, host_pid, host_ipc, share_process_namespace;
        char *dns_policy;
        /* spec.dnsConfig (has_dns_config: the field is there) */
        bool has_dns_config;
        struct k8s_pod_dns_config {
                char **nameservers;
                size_t n_nameservers;
                char **searches;
                size_t n_searches;
                struct k8s_dns_option {
                        char *name;
                        char *value; /* NULL: no value */
                } * options;
                size_t n_options;
        } dns_config;
        bool has_enable_service_links, enable_service_links; /* default true */
        char **image_pull_secrets;                           /* spec.imagePullSecrets[].name */
        size_t n_image_pull_secrets;
        char *service_account_name; /* "" or NULL: "default" */
        struct k8s_pod_security_context security_context;
        struct k8s_volume *volumes;
        size_t n_volumes;
        char **readiness_gates; /* conditionType of each gate */
        size_t n_readiness_gates;
        bool has_priority;
        int32_t priority;
        char *priority_class_name;
        char *os_name; /* spec.os.name */
        struct k8s_resource_list overhead;
        /* spec.resources (PodLevelResources, beta and on in 1.34+): the pod's
         * own requests and limits, as written (qos.h applies the apiserver's
         * defaulting). has_resources: the field is an object (even {}),
         * which alone makes the QoS class come from it. */
        bool has_resources;
        struct k8s_resources resources;
        /* The first field set to something cubelet does not implement
         * (docs/security.md, "Fields cubelet does not implement"): admission
         * refuses the pod with this reason and message rather than run it
         * without what the field asks for. NULL: none. */
        const char *unsupported_reason;
        char *unsupported;
};

/* A decoded pod is immutable and shared: whoever keeps it holds a
 * reference (k8s_pod_ref) and drops it with k8s_pod_free. It may keep the
 * JSON it was decoded from (k8s_pod_decode), as compact text, for the
 * callers that send or store the object as the apiserver gave it
 * (k8s_pod_json_parse): a cJSON tree takes about six times the memory of
 * its text, and a node keeps one pod per pod it runs. */
struct k8s_pod {
        struct cb_arena *arena;
        unsigned refs_;   /* k8s_pod_ref / k8s_pod_free */
        char *json_text_; /* k8s_pod_json_parse; owned, may be NULL */
        char *api_version, *kind;
        struct k8s_object_meta meta;
        struct k8s_pod_spec spec;
        struct k8s_pod_status status;
};

struct k8s_node_address {
        char *type;
        char *address;
};

/* Shared like a pod: k8s_node_ref, k8s_node_free drops a reference. */
struct k8s_node {
        struct cb_arena *arena;
        unsigned refs_;
        struct k8s_object_meta meta;
        bool unschedulable;
        struct k8s_taint *taints;
        size_t n_taints;
        char *pod_cidr;
        struct k8s_resource_list capacity;
        struct k8s_resource_list allocatable;
        struct k8s_condition *conditions;
        size_t n_conditions;
        struct k8s_node_address *addresses;
        size_t n_addresses;
};

/* metav1.Status */
struct k8s_status {
        struct cb_arena *arena;
        char *status; /* "Success" / "Failure" */
        char *message, *reason;
        int32_t code;
        char *details_name, *details_kind;
        struct k8s_status_cause {
                char *type, *message, *field;
        } * causes;
        size_t n_causes;
};

struct k8s_pod_list {
        struct cb_arena *arena;
        char *resource_version, *continue_;
        struct k8s_pod **items;
        size_t n;
};

enum k8s_watch_type {
        K8S_WATCH_ADDED,
        K8S_WATCH_MODIFIED,
        K8S_WATCH_DELETED,
        K8S_WATCH_BOOKMARK,
        K8S_WATCH_ERROR,
};

/* A watch event; object is kept as JSON (the caller knows the kind and
 * decodes it with k8s_pod_decode/k8s_node_from_json, or
 * k8s_status_from_json for ERROR). */
struct k8s_watch_event {
        enum k8s_watch_type type;
        cJSON *object; /* owned */
};

/* ---- Decoding. All return 0 or -1 with err naming the path. ---- */

/* Parses JSON or YAML text (detected: JSON starts with '{' or '[' after
 * whitespace). A YAML stream with several documents yields the first
 * non-empty one; k8s_parse_documents returns all. The result is a cJSON
 * tree; YAML scalars are typed as YAML 1.2 core schema does (quoted ->
 * string; true/false, null/~, integers, floats -> typed). */
/*
 * Number nodes built from YAML keep the plain scalar's text in valuestring
 * (cJSON frees and copies it with the node), so `cpu: 0.5` stays "0.5" and
 * a 64-bit integer keeps every digit; integers written 0x1f / 0o17 are
 * stored as decimal text. Numbers parsed from JSON have no text: decoders
 * print their double (%.15g, or %.17g when that does not read back equal).
 * Aliases (*a) are expanded as copies, at most 100000 copied nodes per
 * stream; a stream has at most 4M nodes. Limits: text K8S_MAX_LIST_BYTES
 * (files: K8S_MAX_DOC_BYTES), nesting K8S_MAX_DEPTH, any string
 * K8S_MAX_STRING_BYTES. Duplicate mapping keys are kept; lookups see the
 * first. Errors carry the position and libyaml's text, e.g.
 * "line 12, column 5: mapping values are not allowed in this context".
 */
int k8s_parse_text(const char *text, size_t len, cJSON **ret, struct cb_error *err);
int k8s_parse_documents(const char *text, size_t len, cJSON ***ret_docs, size_t *ret_n,
                        struct cb_error *err);
void k8s_free_documents(cJSON **docs, size_t n);
/* Reads a file (at most K8S_MAX_DOC_BYTES) and parses it; errors name the file. */
int k8s_parse_file(const char *path, cJSON **ret, struct cb_error *err);

int k8s_pod_from_json(const cJSON *json, struct k8s_pod **ret, struct cb_error *err);
/* Decodes a pod that keeps json's text (json stays the caller's): the one
 * decode of a watched pod, whose JSON and decoded form are then handed on
 * together by reference. */
int k8s_pod_decode(const cJSON *json, struct k8s_pod **ret, struct cb_error *err);
/* The JSON the pod was decoded from by k8s_pod_decode, parsed anew (the
 * caller's to free); NULL when it kept none, or out of memory. */
cJSON *k8s_pod_json_parse(const struct k8s_pod *p);
/* Whether the pod keeps the JSON it was decoded from. */
bool k8s_pod_has_json(const struct k8s_pod *p);
/* That JSON as compact text (NULL: none kept). */
const char *k8s_pod_json_text(const struct k8s_pod *p);
/* Another reference to the same immutable pod (NULL stays NULL). */
struct k8s_pod *k8s_pod_ref(const struct k8s_pod *p);
/* Pods decoded by this process so far (every k8s_pod_from_json and
 * k8s_pod_decode), for the check that a watch event is decoded once. */
uint64_t k8s_pod_decodes(void);
int k8s_node_from_json(const cJSON *json, struct k8s_node **ret, struct cb_error *err);
struct k8s_node *k8s_node_ref(const struct k8s_node *n);
int k8s_status_from_json(const cJSON *json, struct k8s_status **ret, struct cb_error *err);
int k8s_pod_list_from_json(const cJSON *json, struct k8s_pod_list **ret, struct cb_error *err);
/* On success event->object is detached from json (moved, not copied: a
 * watch event's object is parsed once); json keeps the rest. */
int k8s_watch_event_from_json(cJSON *json, struct k8s_watch_event *ret, struct cb_error *err);
void k8s_watch_event_clear(struct k8s_watch_event *ev);

/* Drops one reference; the last frees the pod and its JSON. */
void k8s_pod_free(struct k8s_pod *p);
void k8s_node_free(struct k8s_node *n);
void k8s_status_free(struct k8s_status *s);
void k8s_pod_list_free(struct k8s_pod_list *l);

/* A ConfigMap (data, binaryData) or a Secret (data, base64-decoded; type),
 * decoded from its JSON. Values are bytes with their length (NUL-terminated
 * too). Keys are checked as the apiserver validates them (a key that is
 * not a valid file name is an error naming it), so they can become file
 * names. Immutable once decoded; free with k8s_keyed_data_free. */
struct k8s_data_item {
        char *key;
        char *value;
        size_t len;
        bool binary; /* a ConfigMap's binaryData (env ignores it) */
};

struct k8s_keyed_data {
        struct cb_arena *arena;
        struct k8s_object_meta meta;
        bool secret;
        bool immutable;              /* immutable: true (the kubelet stops watching it) */
        char *type;                  /* Secret type */
        struct k8s_data_item *items; /* sorted by key */
        size_t n;
};

int k8s_configmap_from_json(const cJSON *json, struct k8s_keyed_data **ret, struct cb_error *err);
int k8s_secret_from_json(const cJSON *json, struct k8s_keyed_data **ret, struct cb_error *err);
void k8s_keyed_data_free(struct k8s_keyed_data *d);
const struct k8s_data_item *k8s_keyed_data_get(const struct k8s_keyed_data *d, const char *key);
/* A ConfigMap/Secret key as the apiserver allows it: [-._a-zA-Z0-9]+, at
 * most 253 bytes, not "." or "..", not starting with "..". */
bool k8s_valid_data_key(const char *key);

/* ---- Small lookups used across the agent. ---- */
const char *k8s_map_get(const struct k8s_map *m, const char *key);
const struct k8s_quantity *k8s_resource_get(const struct k8s_resource_list *l, const char *name);
const char *k8s_restart_policy_name(enum k8s_restart_policy p);
const char *k8s_effect_name(enum k8s_taint_effect e);
const char *k8s_protocol_name(enum k8s_protocol p);
/* True when the pod is a static pod (annotation kubernetes.io/config.source
 * is "file" or "http"). */
bool k8s_pod_is_static(const struct k8s_pod *p);
