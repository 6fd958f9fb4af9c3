/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/k8s/decode_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Pods and pod lists: cJSON tree -> struct k8s_pod (k8s.h), with the generic
 * accessors of decode.c. */

/* ---- node affinity, tolerations, taints ---- */

static const char *const op_names[] = {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"};
static const int op_values[] = {K8S_OP_IN, K8S_OP_NOT_IN, K8S_OP_EXISTS, K8S_OP_DOES_NOT_EXIST,
                                K8S_OP_GT, K8S_OP_LT};

static int requirement_item(struct dec *d, const cJSON *it, void *out)
{
        struct k8s_requirement *r = out;
        int op = -1;
        if (dec_string(d, it, "key", &r->key) < 0 ||
            dec_enum(d, it, "operator", op_names, op_values, 6,
                     "In, NotIn, Exists, DoesNotExist, Gt or Lt", &op) < 0 ||
            dec_strings(d, it, "values", &r->values, &r->n_values) < 0)
                return -1;
        if (op < 0) {
                size_t old = dec_path_field(d, "operator");
                dec_fail(d, "required field is missing (want In, NotIn, Exists, DoesNotExist, Gt "
                            "or Lt)");
                dec_path_pop(d, old);
                return -1;
        }
        r->op = (enum k8s_selector_op)op;
        return 0;
}

static int selector_term(struct dec *d, const cJSON *it, struct k8s_node_selector_term *t)
{
        return dec_items(d, it, "matchExpressions", K8S_MAX_ARRAY_ITEMS,
                         sizeof(*t->match_expressions), true, requirement_item,
                         (void **)&t->match_expressions, &t->n_match_expressions) < 0 ||
                       dec_items(d, it, "matchFields", K8S_MAX_ARRAY_ITEMS,
                                 sizeof(*t->match_fields), true, requirement_item,
                                 (void **)&t->match_fields, &t->n_match_fields) < 0
                   ? -1
                   : 0;
}

int dec_selector_term_item(struct dec *d, const cJSON *it, void *out)
{
        return selector_term(d, it, out);
}

static int preferred_item(struct dec *d, const cJSON *it, void *out)
{
        struct k8s_preferred_term *p = out;
        const cJSON *pref;
        if (dec_int32(d, it, "weight", NULL, &p->weight) < 0 ||
            dec_object(d, it, "preference", &pref) < 0)
                return -1;
        if (pref == NULL)
                return 0;
        size_t old = dec_path_field(d, "preference");
        if (selector_term(d, pref, &p->preference) < 0)
                return -1;
        dec_path_pop(d, old);
        return 0;
}

static int decode_affinity(struct dec *d, const cJSON *spec, struct k8s_node_affinity *na)
{
        const cJSON *aff, *node, *req;
        if (dec_object(d, spec, "affinity", &aff) < 0)
                return -1;
        if (aff == NULL)
                return 0;
        size_t o1 = dec_path_field(d, "affinity");
        if (dec_object(d, aff, "nodeAffinity", &node) < 0)
                return -1;
        if (node != NULL) {
                size_t o2 = dec_path_field(d, "nodeAffinity");
                if (dec_object(d, node, "requiredDuringSchedulingIgnoredDuringExecution", &req) < 0)
                        return -1;
                if (req != NULL) {
                        size_t o3 =
                            dec_path_field(d, "requiredDuringSchedulingIgnoredDuringExecution");
                        na->has_required = true;
                        if (dec_items(d, req, "nodeSelectorTerms", K8S_MAX_ARRAY_ITEMS,
                                      sizeof(*na->required_terms), true, dec_selector_term_item,
                                      (void **)&na->required_terms, &na->n_required_terms) < 0)
                                return -1;
                        dec_path_pop(d, o3);
                }
                if (dec_items(d, node, "preferredDuringSchedulingIgnoredDuringExecution",
                              K8S_MAX_ARRAY_ITEMS, sizeof(*na->preferred), true, preferred_item,
                              (void **)&na->preferred, &na->n_preferred) < 0)
                        return -1;
                dec_path_pop(d, o2);
        }
        dec_path_pop(d, o1);
        return 0;
}

static const char *const effect_names[] = {"", "NoSchedule", "PreferNoSchedule", "NoExecute"};
static const int effect_values[] = {K8S_EFFECT_ALL, K8S_EFFECT_NO_SCHEDULE,
                                    K8S_EFFECT_PREFER_NO_SCHEDULE, K8S_EFFECT_NO_EXECUTE};

static int toleration_item(struct dec *d, const cJSON *it, void *out)
{
        static const char *const names[] = {"", "Equal", "Exists", "Gt", "Lt"};
        static const int values[] = {K8S_TOL_EQUAL, K8S_TOL_EQUAL, K8S_TOL_EXISTS, K8S_TOL_GT,
                                     K8S_TOL_LT};
        struct k8s_toleration *t = out;
        int op = K8S_TOL_EQUAL, effect = K8S_EFFECT_ALL;
        if (dec_string(d, it, "key", &t->key) < 0 ||
            dec_enum(d, it, "operator", names, values, 5, "Equal, Exists, Gt or Lt", &op) < 0 ||
            dec_string(d, it, "value", &t->value) < 0 ||
            dec_enum(d, it, "effect", effect_names, effect_values, 4,
                     "NoSchedule, PreferNoSchedule, NoExecute or empty", &effect) < 0 ||
            dec_int64(d, it, "tolerationSeconds", &t->has_toleration_seconds,
                      &t->toleration_seconds) < 0)
                return -1;
        t->op = (enum k8s_toleration_op)op;
        t->effect = (enum k8s_taint_effect)effect;
        return 0;
}

int dec_taint_item(struct dec *d, const cJSON *it, void *out)
{
        struct k8s_taint *t = out;
        int effect = -1;
        if (dec_string(d, it, "key", &t->key) < 0 || dec_string(d, it, "value", &t->value) < 0 ||
            dec_enum(d, it, "effect", effect_names + 1, effect_values + 1, 3,
                     "NoSchedule, PreferNoSchedule or NoExecute", &effect) < 0 ||
            dec_string(d, it, "timeAdded", &t->time_added) < 0)
                return -1;
        if (effect < 0) {
                size_t old = dec_path_field(d, "effect");
                dec_fail(d, "required field is missing (want NoSchedule, PreferNoSchedule or "
                            "NoExecute)");
                dec_path_pop(d, old);
                return -1;
        }
        t->effect = (enum k8s_taint_effect)effect;
        return 0;
}

/* ---- containers ---- */

static int env_item(struct dec *d, const cJSON *it, void *out)
{
        struct k8s_env_var *e = out;
        const cJSON *vf, *ref;
        if (dec_string(d, it, "name", &e->name) < 0 || dec_string(d, it, "value", &e->value) < 0 ||
            dec_object(d, it, "valueFrom", &vf) < 0)
                return -1;
        if (vf == NULL)
                return 0;
        size_t old = dec_path_field(d, "valueFrom");
        if (dec_object(d, vf, "fieldRef", &ref) < 0)
                return -1;
        if (ref != NULL) {
                size_t o2 = dec_path_field(d, "fieldRef");
                if (dec_string(d, ref, "fieldPath", &e->field_ref_path) < 0 ||
                    dec_string(d, ref, "apiVersion", &e->field_ref_api_version) < 0)
                        return -1;
                dec_path_pop(d, o2);
        }
        if (dec_object(d, vf, "resourceFieldRef", &ref) < 0)
                return -1;
        if (ref != NULL) {
                size_t o2 = dec_path_field(d, "resourceFieldRef");
                const cJSON *dv = dec_field(ref, "divisor");
                if (dec_string(d, ref, "resource", &e->resource_field_ref) < 0 ||
                    dec_string(d, ref, "containerName", &e->resource_field_container) < 0)
                        return -1;
                if (dv != NULL) {
                        size_t o3 = dec_path_field(d, "divisor");
                        if (dec_quantity_value(d, dv, &e->resource_field_divisor) < 0)
                                return -1;
                        e->has_divisor = true;
                        dec_path_pop(d, o3);
                }
                dec_path_pop(d, o2);
        }
        static const char *const key_refs[] = {"configMapKeyRef", "secretKeyRef"};
        for (int k = 0; k < 2; k++) {
                if (dec_object(d, vf, key_refs[k], &ref) < 0)
                        return -1;
                if (ref == NULL)
                        continue;
                size_t o2 = dec_path_field(d, key_refs[k]);
                e->key_ref = k == 0 ? K8S_KEY_REF_CONFIG_MAP : K8S_KEY_REF_SECRET;
                if (dec_string(d, ref, "name", &e->key_ref_name) < 0 ||
                    dec_string(d, ref, "key", &e->key_ref_key) < 0 ||
                    dec_bool(d, ref, "optional", NULL, &e->key_ref_optional) < 0)
                        return -1;
                if (e->key_ref_key == NULL)
                        return dec_fail(d, "key: required field is missing");
                dec_path_pop(d, o2);
        }
        if (dec_field(vf, "fileKeyRef") != NULL)
                e->has_value_from_other = true;
        dec_path_pop(d, old);
        return 0;
}

static int env_from_item(struct dec *d, const cJSON *it, void *out)
{
        struct k8s_env_from *e = out;
        const cJSON *cm, *sec;
        if (dec_string(d, it, "prefix", &e->prefix) < 0 ||
            dec_object(d, it, "configMapRef", &cm) < 0 || dec_object(d, it, "secretRef", &sec) < 0)
                return -1;
        /* Both at once is refused by the apiserver's validation; the API's
         * round-trip fixtures carry both: configMapRef is taken then. */
        if (cm == NULL && sec == NULL)
                return dec_fail(d, "one of configMapRef and secretRef is required");
        e->secret = cm == NULL;
        size_t old = dec_path_field(d, e->secret ? "secretRef" : "configMapRef");
        const cJSON *ref = e->secret ? sec : cm;
        if (dec_string(d, ref, "name", &e->name) < 0 ||
            dec_bool(d, ref, "optional", NULL, &e->optional) < 0)
                return -1;
        dec_path_pop(d, old);
        return 0;
}

static const char *const proto_names[] = {"TCP", "UDP", "SCTP"};
static const int proto_values[] = {K8S_PROTO_TCP, K8S_PROTO_UDP, K8S_PROTO_SCTP};

static int port_item(struct dec *d, const cJSON *it, void *out)
{
        struct k8s_container_port *p = out;
        int proto = K8S_PROTO_TCP;
        if (dec_string(d, it, "name", &p->name) < 0 ||
            dec_int32(d, it, "containerPort", NULL, &p->container_port) < 0 ||
            dec_int32(d, it, "hostPort", NULL, &p->host_port) < 0 ||
            dec_enum(d, it, "protocol", proto_names, proto_values, 3, "TCP, UDP or SCTP", &proto) <
                0 ||
            dec_string(d, it, "hostIP", &p->host_ip) < 0)
                return -1;
        p->protocol = (enum k8s_protocol)proto;
        return 0;
}

static int header_item(struct dec *d, const cJSON *it, void *out)
{
        struct k8s_http_header *h = out;
        return dec_string(d, it, "name", &h->name) < 0 || dec_string(d, it, "value", &h->value) < 0
                   ? -1
                   : 0;
}

/* IntOrString port: a number is the port, a string a named port. */
static int d_port(struct dec *d, const cJSON *obj, struct k8s_handler *h)
{
        const cJSON *v = dec_field(obj, "port");
        if (v == NULL)
                return 0;
        size_t old = dec_path_field(d, "port");
        int r;
        if (cJSON_IsString(v)) {
                r = dec_str_value(d, v, &h->port_name);
        } else if (cJSON_IsNumber(v)) {
                int64_t x;
                r = dec_int_value(d, v, INT32_MIN, INT32_MAX, &x);
                h->port = (int32_t)x;
        } else {
                r = dec_wrong_type(d, v, "a port number or name");
        }
        if (r == 0)
                dec_path_pop(d, old);
        return r;
}

/* The API allows one handler; when several are given (the API server would
 * refuse the object) the first of exec, httpGet, tcpSocket, grpc, sleep is
 * taken and the others are ignored. */
static int decode_handler(struct dec *d, const cJSON *obj, struct k8s_handler *h)
{
        const cJSON *v;
        size_t old;
        if (dec_object(d, obj, "exec", &v) < 0)
                return -1;
        if (v != NULL) {
                h->kind = K8S_HANDLER_EXEC;
                old = dec_path_field(d, "exec");
                if (dec_strings(d, v, "command", &h->command, &h->n_command) < 0)
                        return -1;
                dec_path_pop(d, old);
        }
        if (h->kind != K8S_HANDLER_NONE)
                return 0;
        if (dec_object(d, obj, "httpGet", &v) < 0)
                return -1;
        if (v != NULL) {
                h->kind = K8S_HANDLER_HTTP_GET;
                old = dec_path_field(d, "httpGet");
                if (dec_string(d, v, "path", &h->path) < 0 || d_port(d, v, h) < 0 ||
                    dec_string(d, v, "host", &h->host) < 0 ||
                    dec_string(d, v, "scheme", &h->scheme) < 0 ||
                    dec_items(d, v, "httpHeaders", K8S_MAX_ARRAY_ITEMS, sizeof(*h->headers), true,
                              header_item, (void **)&h->headers, &h->n_headers) < 0)
                        return -1;
                if (h->scheme == NULL && (h->scheme = cb_arena_strdup(d->a, "HTTP")) == NULL)
                        return dec_oom(d);
                dec_path_pop(d, old);
        }
        if (h->kind != K8S_HANDLER_NONE)
                return 0;
        if (dec_object(d, obj, "tcpSocket", &v) < 0)
                return -1;
        if (v != NULL) {
                h->kind = K8S_HANDLER_TCP_SOCKET;
                old = dec_path_field(d, "tcpSocket");
                if (d_port(d, v, h) < 0 || dec_string(d, v, "host", &h->host) < 0)
                        return -1;
                dec_path_pop(d, old);
        }
        if (h->kind != K8S_HANDLER_NONE)
                return 0;
        if (dec_object(d, obj, "grpc", &v) < 0)
                return -1;
        if (v != NULL) {
                h->kind = K8S_HANDLER_GRPC;
                old = dec_path_field(d, "grpc");
                /* the gRPC service name goes to path */
                if (d_port(d, v, h) < 0 || dec_string(d, v, "service", &h->path) < 0)
                        return -1;
                dec_path_pop(d, old);
        }
        if (h->kind != K8S_HANDLER_NONE)
                return 0;
        if (dec_object(d, obj, "sleep", &v) < 0)
                return -1;
        if (v != NULL) {
                h->kind = K8S_HANDLER_SLEEP;
                old = dec_path_field(d, "sleep");
                if (dec_int64(d, v, "seconds", NULL, &h->sleep_seconds) < 0)
                        return -1;
                dec_path_pop(d, old);
        }
        return 0;
}

static int decode_probe(struct dec *d, const cJSON *obj, const char *key, struct k8s_probe *p)
{
        const cJSON *v;
        if (dec_object(d, obj, key, &v) < 0)
                return -1;
        if (v == NULL)
                return 0;
        size_t old = dec_path_field(d, key);
        p->present = true;
        p->timeout_seconds = 1;
        p->period_seconds = 10;
        p->success_threshold = 1;
        p->failure_threshold = 3;
        if (decode_handler(d, v, &p->handler) < 0 ||
            dec_int32(d, v, "initialDelaySeconds", NULL, &p->initial_delay_seconds) < 0 ||
            dec_int32(d, v, "timeoutSeconds", NULL, &p->timeout_seconds) < 0 ||
            dec_int32(d, v, "periodSeconds", NULL, &p->period_seconds) < 0 ||
            dec_int32(d, v, "successThreshold", NULL, &p->success_threshold) < 0 ||
            dec_int32(d, v, "failureThreshold", NULL, &p->failure_threshold) < 0 ||
            dec_int64(d, v, "terminationGracePeriodSeconds", &p->has_termination_grace_period,
                      &p->termination_grace_period_seconds) < 0)
                return -1;
        dec_path_pop(d, old);
        return 0;
}

static int decode_seccomp(struct dec *d, const cJSON *obj, struct k8s_seccomp_profile *s)
{
        static const char *const names[] = {"RuntimeDefault", "Unconfined", "Localhost"};
        static const int values[] = {K8S_SECCOMP_RUNTIME_DEFAULT, K8S_SECCOMP_UNCONFINED,
                                     K8S_SECCOMP_LOCALHOST};
        const cJSON *v;
        int type = K8S_SECCOMP_UNSET;
        if (dec_object(d, obj, "seccompProfile", &v) < 0)
                return -1;
        if (v == NULL)
                return 0;
        size_t old = dec_path_field(d, "seccompProfile");
        if (dec_enum(d, v, "type", names, values, 3, "RuntimeDefault, Unconfined or Localhost",
                     &type) < 0 ||
            dec_string(d, v, "localhostProfile", &s->localhost_profile) < 0)
                return -1;
        s->type = (enum k8s_seccomp_type)type;
        dec_path_pop(d, old);
        return 0;
}

/* ---- fields cubelet does not implement (docs/security.md) ---- */

#define R_UNSUPPORTED "UnsupportedPodSpec"

/* A field that must be absent, null, empty, false or the given default. */
static bool is_set(const cJSON *v, const char *dflt)
{
        if (v == NULL || cJSON_IsNull(v) || cJSON_IsFalse(v))
                return false;
        if ((cJSON_IsArray(v) || cJSON_IsObject(v)) && v->child == NULL)
                return false;
        if (cJSON_IsString(v) &&
            (v->valuestring[0] == '\0' || (dflt != NULL && strcmp(v->valuestring, dflt) == 0)))
                return false;
        return true;
}

static void refuse_if_set(struct dec *d, const cJSON *obj, const char *key, const char *dflt,
                          const char *why)
{
        const cJSON *v = dec_field(obj, key);
        if (!is_set(v, dflt))
                return;
        if (cJSON_IsString(v))
                dec_unsupported(d, R_UNSUPPORTED, key, "\"%.64s\": %s", v->valuestring, why);
        else
                dec_unsupported(d, R_UNSUPPORTED, key, "%s", why);
}

/* appArmorProfile: only Unconfined can be honoured (the kubelet's AppArmor
 * admission refuses other profiles where it cannot enforce them) */
static void refuse_apparmor(struct dec *d, const cJSON *sc)
{
        const cJSON *ap = dec_field(sc, "appArmorProfile");
        const cJSON *t = cJSON_IsObject(ap) ? dec_field(ap, "type") : NULL;
        if (ap == NULL || cJSON_IsNull(ap) ||
            (cJSON_IsString(t) && strcmp(t->valuestring, "Unconfined") == 0))
                return;
        dec_unsupported(d, "AppArmor", "appArmorProfile",
                        "Cannot enforce AppArmor: cubelet does not implement AppArmor profiles "
                        "(type %s)",
                        cJSON_IsString(t) ? t->valuestring : "unset");
}

static void refuse_container_sc(struct dec *d, const cJSON *sc)
{
        refuse_if_set(d, sc, "procMount", "Default",
                      "cubelet always masks /proc (an Unmasked /proc needs user namespaces)");
        refuse_apparmor(d, sc);
}

static void refuse_container(struct dec *d, const cJSON *it)
{
        refuse_if_set(d, it, "volumeDevices", NULL,
                      "raw block devices are not supported by cubelet");
        const cJSON *sc = dec_field(it, "securityContext");
        if (cJSON_IsObject(sc)) {
                size_t old = dec_path_field(d, "securityContext");
                refuse_container_sc(d, sc);
                dec_path_pop(d, old);
        }
}

static void refuse_pod_spec(struct dec *d, const cJSON *spec)
{
        const cJSON *hu = dec_field(spec, "hostUsers");
        if (cJSON_IsFalse(hu)) /* the kubelet's text, when the runtime has no userns */
                dec_unsupported(d, R_UNSUPPORTED, NULL,
                                "can't set `spec.hostUsers: false`, runtime does not support "
                                "user namespaces");
        refuse_if_set(d, spec, "runtimeClassName", NULL,
                      "cubelet has one runtime and no RuntimeClass handlers");
        refuse_if_set(d, spec, "resourceClaims", NULL,
                      "dynamic resource allocation is not supported by cubelet");
        const cJSON *sc = dec_field(spec, "securityContext");
        if (cJSON_IsObject(sc)) {
                size_t old = dec_path_field(d, "securityContext");
                const cJSON *sgp = dec_field(sc, "supplementalGroupsPolicy");
                if (cJSON_IsString(sgp) && strcmp(sgp->valuestring, "Merge") != 0 &&
                    strcmp(sgp->valuestring, "Strict") != 0)
                        dec_unsupported(d, R_UNSUPPORTED, "supplementalGroupsPolicy",
                                        "\"%.64s\": supported values: \"Merge\", \"Strict\"",
                                        sgp->valuestring);
                refuse_apparmor(d, sc);
                dec_path_pop(d, old);
        }
}

static int decode_container_sc(struct dec *d, const cJSON *obj, struct k8s_security_context *sc)
{
        const cJSON *v, *caps;
        if (dec_object(d, obj, "securityContext", &v) < 0)
                return -1;
        if (v == NULL)
                return 0;
        size_t old = dec_path_field(d, "securityContext");
        sc->present = true;
        if (dec_int64(d, v, "runAsUser", &sc->has_run_as_user, &sc->run_as_user) < 0 ||
            dec_int64(d, v, "runAsGroup", &sc->has_run_as_group, &sc->run_as_group) < 0 ||
            dec_bool(d, v, "runAsNonRoot", &sc->has_run_as_non_root, &sc->run_as_non_root) < 0 ||
            dec_bool(d, v, "privileged", &sc->has_privileged, &sc->privileged) < 0 ||
            dec_bool(d, v, "allowPrivilegeEscalation", &sc->has_allow_privilege_escalation,
                     &sc->allow_privilege_escalation) < 0 ||
            dec_bool(d, v, "readOnlyRootFilesystem", &sc->has_read_only_root_filesystem,
                     &sc->read_only_root_filesystem) < 0 ||
            dec_object(d, v, "capabilities", &caps) < 0 || decode_seccomp(d, v, &sc->seccomp) < 0)
                return -1;
        if (caps != NULL) {
                size_t o2 = dec_path_field(d, "capabilities");
                if (dec_strings(d, caps, "add", &sc->caps.add, &sc->caps.n_add) < 0 ||
                    dec_strings(d, caps, "drop", &sc->caps.drop, &sc->caps.n_drop) < 0)
                        return -1;
                dec_path_pop(d, o2);
        }
        dec_path_pop(d, old);
        return 0;
}

static int mount_item(struct dec *d, const cJSON *it, void *out)
{
        struct k8s_volume_mount *m = out;
        /* None is what every mount is: private, no propagation either way */
        refuse_if_set(d, it, "mountPropagation", "None",
                      "only None is implemented (HostToContainer and Bidirectional are not)");
        /* IfPossible falls back to a read-only top mount, as the kubelet does
         * with a runtime that cannot make it recursive; Enabled cannot */
        const cJSON *rro = dec_field(it, "recursiveReadOnly");
        if (cJSON_IsString(rro) && strcmp(rro->valuestring, "Enabled") == 0)
                dec_unsupported(d, R_UNSUPPORTED, "recursiveReadOnly",
                                "\"Enabled\": recursive read-only mounts are not supported by "
                                "cubelet");
        return dec_string(d, it, "name", &m->name) < 0 ||
                       dec_string(d, it, "mountPath", &m->mount_path) < 0 ||
                       dec_string(d, it, "subPath", &m->sub_path) < 0 ||
                       dec_string(d, it, "subPathExpr", &m->sub_path_expr) < 0 ||
                       dec_bool(d, it, "readOnly", NULL, &m->read_only) < 0
                   ? -1
                   : 0;
}

static const char *const restart_names[] = {"Always", "OnFailure", "Never"};
static const int restart_values[] = {K8S_RESTART_ALWAYS, K8S_RESTART_ON_FAILURE, K8S_RESTART_NEVER};
#define RESTART_WANT "Always, OnFailure or Never"

static int container_item(struct dec *d, const cJSON *it, void *out)
{
        static const char *const pull_names[] = {"Always", "IfNotPresent", "Never"};
        static const int pull_values[] = {K8S_PULL_ALWAYS, K8S_PULL_IF_NOT_PRESENT, K8S_PULL_NEVER};
        struct k8s_container *c = out;
        const cJSON *res, *lc, *h;
        int pull = K8S_PULL_DEFAULT, restart = -1;
        char *tmp = NULL;

        refuse_container(d, it);

        if (dec_string(d, it, "name", &c->name) < 0 || dec_string(d, it, "image", &c->image) < 0 ||
            dec_enum(d, it, "imagePullPolicy", pull_names, pull_values, 3,
                     "Always, IfNotPresent or Never", &pull) < 0 ||
            dec_strings(d, it, "command", &c->command, &c->n_command) < 0 ||
            dec_strings(d, it, "args", &c->args, &c->n_args) < 0 ||
            dec_string(d, it, "workingDir", &c->working_dir) < 0 ||
            dec_items(d, it, "env", K8S_MAX_ARRAY_ITEMS, sizeof(*c->env), true, env_item,
                      (void **)&c->env, &c->n_env) < 0 ||
            dec_items(d, it, "envFrom", K8S_MAX_ARRAY_ITEMS, sizeof(*c->env_from), true,
                      env_from_item, (void **)&c->env_from, &c->n_env_from) < 0 ||
            dec_items(d, it, "ports", K8S_MAX_ARRAY_ITEMS, sizeof(*c->ports), true, port_item,
                      (void **)&c->ports, &c->n_ports) < 0 ||
            dec_object(d, it, "resources", &res) < 0)
                return -1;
        {
                /* issue 15 item 11: no env kube-apiserver can store is this
                 * large (a body is at most 3 MiB, an object in etcd 1.5 MiB) */
                size_t env_bytes = 0;
                for (size_t i = 0; i < c->n_env; i++)
                        env_bytes += (c->env[i].name ? strlen(c->env[i].name) : 0) +
                                     (c->env[i].value ? strlen(c->env[i].value) : 0);
                if (env_bytes > K8S_MAX_ENV_BYTES) {
                        (void)dec_path_field(d, "env"); /* the error's path */
                        return dec_fail(d,
                                        "%zu bytes of names and values exceed the limit of %u "
                                        "bytes (no apiserver stores a pod that large: check "
                                        "what serves it)",
                                        env_bytes, K8S_MAX_ENV_BYTES);
                }
        }
        c->image_pull_policy = (enum k8s_pull_policy)pull;
        if (res != NULL) {
                size_t old = dec_path_field(d, "resources");
                if (dec_resource_list(d, res, "requests", &c->resources.requests) < 0 ||
                    dec_resource_list(d, res, "limits", &c->resources.limits) < 0)
                        return -1;
                dec_path_pop(d, old);
        }
        if (decode_container_sc(d, it, &c->security_context) < 0 ||
            decode_probe(d, it, "livenessProbe", &c->liveness_probe) < 0 ||
            decode_probe(d, it, "readinessProbe", &c->readiness_probe) < 0 ||
            decode_probe(d, it, "startupProbe", &c->startup_probe) < 0 ||
            dec_object(d, it, "lifecycle", &lc) < 0)
                return -1;
        if (lc != NULL) {
                size_t old = dec_path_field(d, "lifecycle");
                if (dec_object(d, lc, "preStop", &h) < 0)
                        return -1;
                if (h != NULL) {
                        size_t o2 = dec_path_field(d, "preStop");
                        if (decode_handler(d, h, &c->pre_stop) < 0)
                                return -1;
                        dec_path_pop(d, o2);
                }
                if (dec_object(d, lc, "postStart", &h) < 0)
                        return -1;
                if (h != NULL) {
                        size_t o2 = dec_path_field(d, "postStart");
                        if (decode_handler(d, h, &c->post_start) < 0)
                                return -1;
                        dec_path_pop(d, o2);
                }
                dec_path_pop(d, old);
        }
        if (dec_items(d, it, "volumeMounts", K8S_MAX_ARRAY_ITEMS, sizeof(*c->volume_mounts), true,
                      mount_item, (void **)&c->volume_mounts, &c->n_volume_mounts) < 0 ||
            dec_bool(d, it, "stdin", NULL, &c->stdin_) < 0 ||
            dec_bool(d, it, "stdinOnce", NULL, &c->stdin_once) < 0 ||
            dec_bool(d, it, "tty", NULL, &c->tty) < 0 ||
            dec_string(d, it, "terminationMessagePath", &c->termination_message_path) < 0 ||
            dec_string(d, it, "terminationMessagePolicy", &tmp) < 0 ||
            dec_enum(d, it, "restartPolicy", restart_names, restart_values, 3, RESTART_WANT,
                     &restart) < 0)
                return -1;
        /* The apiserver allows only File (its default) and FallbackToLogsOnError;
         * anything else reads as File. */
        c->termination_message_fallback = tmp != NULL && strcmp(tmp, "FallbackToLogsOnError") == 0;
        if (restart >= 0) {
                c->has_restart_policy = true;
                c->restart_policy = (enum k8s_restart_policy)restart;
        }
        return 0;
}

/* ---- volumes ---- */

/* A file mode: 0..0777 (the API's validation). */
static int d_mode(struct dec *d, const cJSON *obj, const char *key, bool *has, int32_t *out)
{
        int32_t m = *out;
        bool h = false;
        if (dec_int32(d, obj, key, &h, &m) < 0)
                return -1;
        if (!h)
                return 0;
        if (m < 0 || m > 0777) {
                size_t old = dec_path_field(d, key);
                dec_fail(d, "must be a number between 0 and 0777 (octal), both inclusive");
                dec_path_pop(d, old);
                return -1;
        }
        *out = m;
        if (has != NULL)
                *has = true;
        return 0;
}

/* A relative path inside a volume: not absolute, no ".." element, not
 * empty (the API's validateLocalDescendingPath). */
static int check_rel_path(struct dec *d, const char *key, const char *path)
{
        bool bad = path == NULL || path[0] == '\0' || path[0] == '/';
        for (const char *p = path; !bad && p && *p;) {
                const char *e = strchr(p, '/');
                size_t n = e ? (size_t)(e - p) : strlen(p);
                bad = n == 2 && p[0] == '.' && p[1] == '.';
                p = e ? e + 1 : p + n;
        }
        if (!bad)
                return 0;
        size_t old = dec_path_field(d, key);
        if (path == NULL || path[0] == '\0')
                dec_fail(d, "required field is missing");
        else
                dec_fail(d, "\"%s\": must be a relative path without '..'", path);
        dec_path_pop(d, old);
        return -1;
}

static int key_to_path_item(struct dec *d, const cJSON *it, void *out)
{
        struct k8s_key_to_path *k = out;
        if (dec_string(d, it, "key", &k->key) < 0 || dec_string(d, it, "path", &k->path) < 0 ||
            d_mode(d, it, "mode", &k->has_mode, &k->mode) < 0)
                return -1;
        if (k->key == NULL)
                return dec_fail(d, "key: required field is missing");
        return check_rel_path(d, "path", k->path);
}

static int keyed_source(struct dec *d, const cJSON *src, const char *name_key,
                        struct k8s_keyed_source *ks)
{
        return dec_string(d, src, name_key, &ks->name) < 0 ||
                       dec_bool(d, src, "optional", NULL, &ks->optional) < 0 ||
                       dec_items(d, src, "items", K8S_MAX_ARRAY_ITEMS, sizeof(*ks->items), true,
                                 key_to_path_item, (void **)&ks->items, &ks->n_items) < 0
                   ? -1
                   : 0;
}

static int downward_item(struct dec *d, const cJSON *it, void *out)
{
        struct k8s_downward_item *w = out;
        const cJSON *ref;
        if (dec_string(d, it, "path", &w->path) < 0 ||
            d_mode(d, it, "mode", &w->has_mode, &w->mode) < 0 ||
            check_rel_path(d, "path", w->path) < 0 || dec_object(d, it, "fieldRef", &ref) < 0)
                return -1;
        if (ref != NULL) {
                size_t old = dec_path_field(d, "fieldRef");
                if (dec_string(d, ref, "fieldPath", &w->field_path) < 0)
                        return -1;
                dec_path_pop(d, old);
        }
        if (dec_object(d, it, "resourceFieldRef", &ref) < 0)
                return -1;
        if (ref != NULL) {
                size_t old = dec_path_field(d, "resourceFieldRef");
                const cJSON *dv = dec_field(ref, "divisor");
                if (dec_string(d, ref, "resource", &w->resource) < 0 ||
                    dec_string(d, ref, "containerName", &w->container_name) < 0)
                        return -1;
                if (dv != NULL) {
                        size_t o2 = dec_path_field(d, "divisor");
                        if (dec_quantity_value(d, dv, &w->divisor) < 0)
                                return -1;
                        w->has_divisor = true;
                        dec_path_pop(d, o2);
                }
                dec_path_pop(d, old);
        }
        if ((w->field_path == NULL) == (w->resource == NULL))
                return dec_fail(d, "exactly one of fieldRef and resourceFieldRef is required");
        return 0;
}

static int projection_item(struct dec *d, const cJSON *it, void *out)
{
        struct k8s_projection *p = out;
        const cJSON *src;
        static const char *const kinds[] = {"serviceAccountToken", "configMap", "secret",
                                            "downwardAPI", "clusterTrustBundle"};
        static const enum k8s_projection_kind values[] = {
            K8S_PROJ_SERVICE_ACCOUNT_TOKEN, K8S_PROJ_CONFIG_MAP, K8S_PROJ_SECRET,
            K8S_PROJ_DOWNWARD_API, K8S_PROJ_CLUSTER_TRUST_BUNDLE};
        for (int k = 0; k < 5; k++) {
                if (dec_object(d, it, kinds[k], &src) < 0)
                        return -1;
                if (src == NULL)
                        continue;
                size_t old = dec_path_field(d, kinds[k]);
                p->kind = values[k];
                int r = 0;
                if (k == 0) {
                        p->expiration_seconds = 3600;
                        r = dec_string(d, src, "audience", &p->audience) < 0 ||
                                    dec_int64(d, src, "expirationSeconds", NULL,
                                              &p->expiration_seconds) < 0 ||
                                    dec_string(d, src, "path", &p->path) < 0 ||
                                    check_rel_path(d, "path", p->path) < 0
                                ? -1
                                : 0;
                        if (r == 0 && p->expiration_seconds < 600)
                                r = dec_fail(d,
                                             "expirationSeconds: may not specify a duration less "
                                             "than 10 minutes");
                        else if (r == 0 && p->expiration_seconds > (int64_t)1 << 32)
                                r = dec_fail(d, "expirationSeconds: may not specify a duration "
                                                "larger than 2^32 seconds");
                } else if (k == 1 || k == 2) {
                        r = keyed_source(d, src, "name", &p->keyed);
                } else if (k == 3) {
                        r = dec_items(d, src, "items", K8S_MAX_ARRAY_ITEMS, sizeof(*p->dw_items),
                                      true, downward_item, (void **)&p->dw_items, &p->n_dw_items);
                } else {
                        r = dec_string(d, src, "path", &p->path);
                }
                if (r < 0)
                        return -1;
                dec_path_pop(d, old);
                return 0;
        }
        for (const cJSON *m = it->child; m != NULL; m = m->next)
                if (m->string != NULL && !cJSON_IsNull(m)) {
                        if ((p->other_kind = cb_arena_strdup(d->a, m->string)) == NULL)
                                return dec_oom(d);
                        break;
                }
        return 0;
}

static int dns_option_item(struct dec *d, const cJSON *it, void *out)
{
        struct k8s_dns_option *o = out;
        return dec_string(d, it, "name", &o->name) < 0 || dec_string(d, it, "value", &o->value) < 0
                   ? -1
                   : 0;
}

static int pull_secret_item(struct dec *d, const cJSON *it, void *out)
{
        return dec_string(d, it, "name", (char **)out);
}

/* spec.resources (PodLevelResources). cpu and memory are applied (qos.h);
 * hugepages-* are supported at pod level by the kubelet since 1.34, but
 * cubelet has no hugetlb cgroup and advertises no hugepages, so a pod that
 * asks for them is refused rather than run without them. Other names are
 * refused by kube-apiserver's validation; the kubelet ignores them
 * (IsSupportedPodLevelResource), and so does qos.c. */
static void refuse_pod_hugepages(struct dec *d, const struct k8s_resource_list *l, const char *kind)
{
        for (size_t i = 0; i < l->n; i++)
                if (l->items[i].name != NULL && strncmp(l->items[i].name, "hugepages-", 10) == 0) {
                        char key[96];
                        snprintf(key, sizeof(key), "%s[%.64s]", kind, l->items[i].name);
                        dec_unsupported(d, R_UNSUPPORTED, key,
                                        "hugepages are not supported by cubelet (no hugetlb "
                                        "cgroup)");
                        return;
                }
}

static int decode_pod_resources(struct dec *d, const cJSON *spec, struct k8s_pod_spec *s)
{
        const cJSON *res;
        if (dec_object(d, spec, "resources", &res) < 0)
                return -1;
        if (res == NULL)
                return 0;
        size_t old = dec_path_field(d, "resources");
        s->has_resources = true;
        if (dec_resource_list(d, res, "requests", &s->resources.requests) < 0 ||
            dec_resource_list(d, res, "limits", &s->resources.limits) < 0)
                return -1;
        refuse_pod_hugepages(d, &s->resources.requests, "requests");
        refuse_pod_hugepages(d, &s->resources.limits, "limits");
        dec_path_pop(d, old);
        return 0;
}

static int decode_dns_config(struct dec *d, const cJSON *spec, struct k8s_pod_spec *s)
{
        const cJSON *dc;
        if (dec_object(d, spec, "dnsConfig", &dc) < 0)
                return -1;
        if (dc == NULL)
                return 0;
        s->has_dns_config = true;
        size_t old = dec_path_field(d, "dnsConfig");
        struct k8s_pod_dns_config *c = &s->dns_config;
        if (dec_strings(d, dc, "nameservers", &c->nameservers, &c->n_nameservers) < 0 ||
            dec_strings(d, dc, "searches", &c->searches, &c->n_searches) < 0 ||
            dec_items(d, dc, "options", K8S_MAX_ARRAY_ITEMS, sizeof(*c->options), true,
                      dns_option_item, (void **)&c->options, &c->n_options) < 0)
                return -1;
        dec_path_pop(d, old);
        return 0;
}

static int volume_item(struct dec *d, const cJSON *it, void *out)
{
        struct k8s_volume *v = out;
        const cJSON *src;
        if (dec_string(d, it, "name", &v->name) < 0 || dec_object(d, it, "emptyDir", &src) < 0)
                return -1;
        if (src != NULL) {
                size_t old = dec_path_field(d, "emptyDir");
                v->kind = K8S_VOLUME_EMPTY_DIR;
                const cJSON *sl = dec_field(src, "sizeLimit");
                if (dec_string(d, src, "medium", &v->empty_dir_medium) < 0)
                        return -1;
                if (sl != NULL) {
                        size_t o2 = dec_path_field(d, "sizeLimit");
                        if (dec_quantity_value(d, sl, &v->size_limit) < 0)
                                return -1;
                        v->has_size_limit = true;
                        dec_path_pop(d, o2);
                }
                dec_path_pop(d, old);
                return 0;
        }
        if (dec_object(d, it, "hostPath", &src) < 0)
                return -1;
        if (src != NULL) {
                size_t old = dec_path_field(d, "hostPath");
                v->kind = K8S_VOLUME_HOST_PATH;
                if (dec_string(d, src, "path", &v->host_path) < 0 ||
                    dec_string(d, src, "type", &v->host_path_type) < 0)
                        return -1;
                dec_path_pop(d, old);
                return 0;
        }
        if (dec_object(d, it, "persistentVolumeClaim", &src) < 0)
                return -1;
        if (src != NULL) {
                size_t old = dec_path_field(d, "persistentVolumeClaim");
                v->kind = K8S_VOLUME_PVC;
                if (dec_string(d, src, "claimName", &v->claim_name) < 0 ||
                    dec_bool(d, src, "readOnly", NULL, &v->claim_read_only) < 0)
                        return -1;
                dec_path_pop(d, old);
                return 0;
        }
        v->default_mode = 0644;
        static const char *const keyed[] = {"configMap", "secret", "downwardAPI", "projected"};
        static const enum k8s_volume_kind keyed_kinds[] = {K8S_VOLUME_CONFIG_MAP, K8S_VOLUME_SECRET,
                                                           K8S_VOLUME_DOWNWARD_API,
                                                           K8S_VOLUME_PROJECTED};
        for (int k = 0; k < 4; k++) {
                if (dec_object(d, it, keyed[k], &src) < 0)
                        return -1;
                if (src == NULL)
                        continue;
                size_t old = dec_path_field(d, keyed[k]);
                v->kind = keyed_kinds[k];
                if (d_mode(d, src, "defaultMode", NULL, &v->default_mode) < 0)
                        return -1;
                int r = 0;
                if (k == 0 || k == 1)
                        r = keyed_source(d, src, k == 1 ? "secretName" : "name", &v->keyed);
                else if (k == 2)
                        r = dec_items(d, src, "items", K8S_MAX_ARRAY_ITEMS, sizeof(*v->dw_items),
                                      true, downward_item, (void **)&v->dw_items, &v->n_dw_items);
                else
                        r = dec_items(d, src, "sources", K8S_MAX_ARRAY_ITEMS,
                                      sizeof(*v->projections), true, projection_item,
                                      (void **)&v->projections, &v->n_projections);
                if (r < 0)
                        return -1;
                dec_path_pop(d, old);
                return 0;
        }
        for (const cJSON *m = it->child; m != NULL; m = m->next) {
                if (m->string != NULL && strcmp(m->string, "name") != 0 && !cJSON_IsNull(m)) {
                        if ((v->other_kind = cb_arena_strdup(d->a, m->string)) == NULL)
                                return dec_oom(d);
                        break;
                }
        }
        return 0;
}

/* ---- pod ---- */

static int host_alias_item(struct dec *d, const cJSON *it, void *out)
{
        struct k8s_host_alias *h = out;
        return dec_string(d, it, "ip", &h->ip) < 0 ||
                       dec_strings(d, it, "hostnames", &h->hostnames, &h->n_hostnames) < 0
                   ? -1
                   : 0;
}

static int readiness_gate_item(struct dec *d, const cJSON *it, void *out)
{
        return dec_string(d, it, "conditionType", (char **)out);
}

static int sysctl_item(struct dec *d, const cJSON *it, void *out)
{
        struct k8s_sysctl *s = out;
        return dec_string(d, it, "name", &s->name) < 0 || dec_string(d, it, "value", &s->value) < 0
                   ? -1
                   : 0;
}

static int decode_pod_sc(struct dec *d, const cJSON *spec, struct k8s_pod_security_context *sc)
{
        const cJSON *v, *arr;
        char *sgp = NULL;
        size_t n;
        if (dec_object(d, spec, "securityContext", &v) < 0)
                return -1;
        if (v == NULL)
                return 0;
        size_t old = dec_path_field(d, "securityContext");
        if (dec_int64(d, v, "runAsUser", &sc->has_run_as_user, &sc->run_as_user) < 0 ||
            dec_int64(d, v, "runAsGroup", &sc->has_run_as_group, &sc->run_as_group) < 0 ||
            dec_bool(d, v, "runAsNonRoot", &sc->has_run_as_non_root, &sc->run_as_non_root) < 0 ||
            dec_int64(d, v, "fsGroup", &sc->has_fs_group, &sc->fs_group) < 0 ||
            dec_string(d, v, "supplementalGroupsPolicy", &sgp) < 0 ||
            decode_seccomp(d, v, &sc->seccomp) < 0 ||
            dec_items(d, v, "sysctls", K8S_MAX_ARRAY_ITEMS, sizeof(*sc->sysctls), true, sysctl_item,
                      (void **)&sc->sysctls, &sc->n_sysctls) < 0 ||
            dec_array(d, v, "supplementalGroups", K8S_MAX_ARRAY_ITEMS, &arr, &n) < 0)
                return -1;
        sc->strict_supplemental_groups = sgp != NULL && strcmp(sgp, "Strict") == 0;
        if (n > 0) {
                if ((sc->supplemental_groups = dec_alloc_array(d, n, sizeof(int64_t))) == NULL)
                        return -1;
                size_t o2 = dec_path_field(d, "supplementalGroups");
                for (const cJSON *it = arr->child; it != NULL; it = it->next) {
                        size_t o3 = dec_path_push(d, "[%zu]", sc->n_supplemental_groups);
                        if (dec_int_value(d, it, INT64_MIN, INT64_MAX,
                                          &sc->supplemental_groups[sc->n_supplemental_groups]) < 0)
                                return -1;
                        sc->n_supplemental_groups++;
                        dec_path_pop(d, o3);
                }
                dec_path_pop(d, o2);
        }
        dec_path_pop(d, old);
        return 0;
}

static int decode_pod_spec(struct dec *d, const cJSON *spec, struct k8s_pod_spec *s)
{
        const cJSON *os;
        int restart = K8S_RESTART_ALWAYS;
        s->termination_grace_period_seconds = 30;
        refuse_pod_spec(d, spec);
        if (dec_string(d, spec, "nodeName", &s->node_name) < 0 ||
            dec_map(d, spec, "nodeSelector", &s->node_selector) < 0 ||
            decode_affinity(d, spec, &s->node_affinity) < 0 ||
            dec_items(d, spec, "tolerations", K8S_MAX_ARRAY_ITEMS, sizeof(*s->tolerations), true,
                      toleration_item, (void **)&s->tolerations, &s->n_tolerations) < 0 ||
            dec_items(d, spec, "containers", K8S_MAX_CONTAINERS, sizeof(*s->containers), true,
                      container_item, (void **)&s->containers, &s->n_containers) < 0 ||
            dec_items(d, spec, "initContainers", K8S_MAX_CONTAINERS, sizeof(*s->init_containers),
                      true, container_item, (void **)&s->init_containers,
                      &s->n_init_containers) < 0 ||
            dec_enum(d, spec, "restartPolicy", restart_names, restart_values, 3, RESTART_WANT,
                     &restart) < 0 ||
            dec_int64(d, spec, "terminationGracePeriodSeconds", &s->has_termination_grace_period,
                      &s->termination_grace_period_seconds) < 0 ||
            dec_int64(d, spec, "activeDeadlineSeconds", &s->has_active_deadline,
                      &s->active_deadline_seconds) < 0 ||
            dec_string(d, spec, "hostname", &s->hostname) < 0 ||
            dec_string(d, spec, "subdomain", &s->subdomain) < 0 ||
            dec_bool(d, spec, "setHostnameAsFQDN", NULL, &s->set_hostname_as_fqdn) < 0 ||
            dec_items(d, spec, "hostAliases", K8S_MAX_ARRAY_ITEMS, sizeof(*s->host_aliases), true,
                      host_alias_item, (void **)&s->host_aliases, &s->n_host_aliases) < 0 ||
            dec_bool(d, spec, "hostNetwork", NULL, &s->host_network) < 0 ||
            dec_bool(d, spec, "hostPID", NULL, &s->host_pid) < 0 ||
            dec_bool(d, spec, "hostIPC", NULL, &s->host_ipc) < 0 ||
            dec_bool(d, spec, "shareProcessNamespace", NULL, &s->share_process_namespace) < 0 ||
            dec_string(d, spec, "dnsPolicy", &s->dns_policy) < 0 ||
            decode_dns_config(d, spec, s) < 0 ||
            dec_bool(d, spec, "enableServiceLinks", &s->has_enable_service_links,
                     &s->enable_service_links) < 0 ||
            dec_items(d, spec, "imagePullSecrets", K8S_MAX_ARRAY_ITEMS,
                      sizeof(*s->image_pull_secrets), true, pull_secret_item,
                      (void **)&s->image_pull_secrets, &s->n_image_pull_secrets) < 0 ||
            dec_string(d, spec, "serviceAccountName", &s->service_account_name) < 0 ||
            decode_pod_sc(d, spec, &s->security_context) < 0 ||
            dec_items(d, spec, "volumes", K8S_MAX_ARRAY_ITEMS, sizeof(*s->volumes), true,
                      volume_item, (void **)&s->volumes, &s->n_volumes) < 0 ||
            dec_items(d, spec, "readinessGates", K8S_MAX_ARRAY_ITEMS, sizeof(*s->readiness_gates),
                      true, readiness_gate_item, (void **)&s->readiness_gates,
                      &s->n_readiness_gates) < 0 ||
            dec_int32(d, spec, "priority", &s->has_priority, &s->priority) < 0 ||
            dec_string(d, spec, "priorityClassName", &s->priority_class_name) < 0 ||
            dec_object(d, spec, "os", &os) < 0 ||
            dec_resource_list(d, spec, "overhead", &s->overhead) < 0 ||
            decode_pod_resources(d, spec, s) < 0)
                return -1;
        s->restart_policy = (enum k8s_restart_policy)restart;
        if ((s->service_account_name == NULL || s->service_account_name[0] == '\0') &&
            dec_string(d, spec, "serviceAccount", &s->service_account_name) < 0)
                return -1;
        if (os != NULL) {
                size_t old = dec_path_field(d, "os");
                if (dec_string(d, os, "name", &s->os_name) < 0)
                        return -1;
                dec_path_pop(d, old);
        }
        return 0;
}

int dec_condition_item(struct dec *d, const cJSON *it, void *out)
{
        struct k8s_condition *c = out;
        return dec_string(d, it, "type", &c->type) < 0 ||
                       dec_string(d, it, "status", &c->status) < 0 ||
                       dec_string(d, it, "reason", &c->reason) < 0 ||
                       dec_string(d, it, "message", &c->message) < 0 ||
                       dec_string(d, it, "lastTransitionTime", &c->last_transition_time) < 0 ||
                       dec_string(d, it, "lastHeartbeatTime", &c->last_heartbeat_time) < 0 ||
                       dec_string(d, it, "lastProbeTime", &c->last_probe_time) < 0
                   ? -1
                   : 0;
}

static int decode_state(struct dec *d, const cJSON *obj, const char *key,
                        struct k8s_container_state *st)
{
        const cJSON *v, *s;
        if (dec_object(d, obj, key, &v) < 0)
                return -1;
        if (v == NULL)
                return 0;
        size_t old = dec_path_field(d, key);
        if (dec_object(d, v, "waiting", &s) < 0)
                return -1;
        if (s != NULL) {
                size_t o2 = dec_path_field(d, "waiting");
                st->waiting = true;
                if (dec_string(d, s, "reason", &st->reason) < 0 ||
                    dec_string(d, s, "message", &st->message) < 0)
                        return -1;
                dec_path_pop(d, o2);
        } else {
                if (dec_object(d, v, "running", &s) < 0)
                        return -1;
                if (s != NULL) {
                        size_t o2 = dec_path_field(d, "running");
                        st->running = true;
                        if (dec_string(d, s, "startedAt", &st->started_at) < 0)
                                return -1;
                        dec_path_pop(d, o2);
                } else {
                        if (dec_object(d, v, "terminated", &s) < 0)
                                return -1;
                        if (s != NULL) {
                                size_t o2 = dec_path_field(d, "terminated");
                                st->terminated = true;
                                if (dec_int32(d, s, "exitCode", NULL, &st->exit_code) < 0 ||
                                    dec_int32(d, s, "signal", NULL, &st->signal) < 0 ||
                                    dec_string(d, s, "reason", &st->reason) < 0 ||
                                    dec_string(d, s, "message", &st->message) < 0 ||
                                    dec_string(d, s, "startedAt", &st->started_at) < 0 ||
                                    dec_string(d, s, "finishedAt", &st->finished_at) < 0 ||
                                    dec_string(d, s, "containerID", &st->container_id) < 0)
                                        return -1;
                                dec_path_pop(d, o2);
                        }
                }
        }
        dec_path_pop(d, old);
        return 0;
}

static int container_status_item(struct dec *d, const cJSON *it, void *out)
{
        struct k8s_container_status *cs = out;
        return dec_string(d, it, "name", &cs->name) < 0 ||
                       dec_string(d, it, "image", &cs->image) < 0 ||
                       dec_string(d, it, "imageID", &cs->image_id) < 0 ||
                       dec_string(d, it, "containerID", &cs->container_id) < 0 ||
                       dec_int32(d, it, "restartCount", NULL, &cs->restart_count) < 0 ||
                       dec_bool(d, it, "ready", NULL, &cs->ready) < 0 ||
                       dec_bool(d, it, "started", &cs->has_started, &cs->started) < 0 ||
                       decode_state(d, it, "state", &cs->state) < 0 ||
                       decode_state(d, it, "lastState", &cs->last_state) < 0
                   ? -1
                   : 0;
}

static int pod_ip_item(struct dec *d, const cJSON *it, void *out)
{
        return dec_string(d, it, "ip", (char **)out);
}

static int decode_pod_status(struct dec *d, const cJSON *st, struct k8s_pod_status *s)
{
        return dec_string(d, st, "phase", &s->phase) < 0 ||
                       dec_string(d, st, "reason", &s->reason) < 0 ||
                       dec_string(d, st, "message", &s->message) < 0 ||
                       dec_string(d, st, "hostIP", &s->host_ip) < 0 ||
                       dec_string(d, st, "podIP", &s->pod_ip) < 0 ||
                       dec_items(d, st, "podIPs", K8S_MAX_ARRAY_ITEMS, sizeof(*s->pod_ips), true,
                                 pod_ip_item, (void **)&s->pod_ips, &s->n_pod_ips) < 0 ||
                       dec_string(d, st, "startTime", &s->start_time) < 0 ||
                       dec_string(d, st, "qosClass", &s->qos_class) < 0 ||
                       dec_items(d, st, "conditions", K8S_MAX_ARRAY_ITEMS, sizeof(*s->conditions),
                                 true, dec_condition_item, (void **)&s->conditions,
                                 &s->n_conditions) < 0 ||
                       dec_items(d, st, "initContainerStatuses", K8S_MAX_CONTAINERS,
                                 sizeof(*s->init_container_statuses), true, container_status_item,
                                 (void **)&s->init_container_statuses,
                                 &s->n_init_container_statuses) < 0 ||
                       dec_items(d, st, "containerStatuses", K8S_MAX_CONTAINERS,
                                 sizeof(*s->container_statuses), true, container_status_item,
                                 (void **)&s->container_statuses, &s->n_container_statuses) < 0
                   ? -1
                   : 0;
}

/* Decodes a pod; d->path holds the prefix ("" or "items[3]"). */
static int pod_decode(struct dec *d, const cJSON *json, struct k8s_pod *p)
{
        const cJSON *spec, *st;
        if (dec_not_object(d, json, "a Pod") < 0 ||
            dec_string(d, json, "apiVersion", &p->api_version) < 0 ||
            dec_string(d, json, "kind", &p->kind) < 0 || dec_meta(d, json, &p->meta) < 0 ||
            dec_object(d, json, "spec", &spec) < 0 || dec_object(d, json, "status", &st) < 0)
                return -1;
        p->spec.termination_grace_period_seconds = 30;
        d->unsupported[0] = '\0';
        d->unsupported_reason = NULL;
        d->pod_base = d->plen;
        if (spec != NULL) {
                size_t old = dec_path_field(d, "spec");
                if (decode_pod_spec(d, spec, &p->spec) < 0)
                        return -1;
                dec_path_pop(d, old);
        }
        if (d->unsupported[0] != '\0') {
                p->spec.unsupported_reason = d->unsupported_reason;
                if ((p->spec.unsupported = cb_arena_strdup(d->a, d->unsupported)) == NULL)
                        return dec_oom(d);
        }
        if (st != NULL) {
                size_t old = dec_path_field(d, "status");
                if (decode_pod_status(d, st, &p->status) < 0)
                        return -1;
                dec_path_pop(d, old);
        }
        return 0;
}

static uint64_t pod_decodes;

uint64_t k8s_pod_decodes(void)
{
        return __atomic_load_n(&pod_decodes, __ATOMIC_RELAXED);
}

static int pod_new(struct dec *d, const cJSON *json, struct k8s_pod **ret)
{
        struct cb_arena *a = cb_arena_new(DECODE_ARENA_LIMIT);
        struct k8s_pod *p;
        if (a == NULL)
                return dec_fail(d, "out of memory");
        p = cb_arena_alloc(a, sizeof(*p));
        if (p == NULL) {
                cb_arena_free(a);
                return dec_fail(d, "out of memory");
        }
        p->arena = a;
        p->refs_ = 1;
        struct cb_arena *saved = d->a;
        d->a = a;
        __atomic_add_fetch(&pod_decodes, 1, __ATOMIC_RELAXED);
        int r = pod_decode(d, json, p);
        d->a = saved;
        if (r < 0) {
                cb_arena_free(a);
                return -1;
        }
        *ret = p;
        return 0;
}

int k8s_pod_from_json(const cJSON *json, struct k8s_pod **ret, struct cb_error *err)
{
        struct dec d = {.err = err};
        *ret = NULL;
        return pod_new(&d, json, ret);
}

int k8s_pod_decode(const cJSON *json, struct k8s_pod **ret, struct cb_error *err)
{
        if (k8s_pod_from_json(json, ret, err) < 0)
                return -1;
        if (((*ret)->json_text_ = cJSON_PrintUnformatted(json)) == NULL) {
                k8s_pod_free(*ret);
                *ret = NULL;
                return cb_error_set(err, 0, "out of memory");
        }
        return 0;
}

cJSON *k8s_pod_json_parse(const struct k8s_pod *p)
{
        return p != NULL && p->json_text_ != NULL ? cJSON_Parse(p->json_text_) : NULL;
}

bool k8s_pod_has_json(const struct k8s_pod *p)
{
        return p != NULL && p->json_text_ != NULL;
}

const char *k8s_pod_json_text(const struct k8s_pod *p)
{
        return p != NULL ? p->json_text_ : NULL;
}

struct k8s_pod *k8s_pod_ref(const struct k8s_pod *p)
{
        struct k8s_pod *m = (struct k8s_pod *)p; /* only the count changes */
        if (m != NULL)
                __atomic_add_fetch(&m->refs_, 1, __ATOMIC_RELAXED);
        return m;
}

int k8s_pod_list_from_json(const cJSON *json, struct k8s_pod_list **ret, struct cb_error *err)
{
        struct dec d = {.err = err};
        const cJSON *items;
        size_t n;
        struct k8s_pod_list *l;
        *ret = NULL;
        if (dec_not_object(&d, json, "a PodList") < 0)
                return -1;
        if ((d.a = cb_arena_new(LIST_ARENA_LIMIT)) == NULL ||
            (l = cb_arena_alloc(d.a, sizeof(*l))) == NULL) {
                cb_arena_free(d.a);
                return cb_error_set(err, 0, "out of memory");
        }
        l->arena = d.a;
        if (dec_list_meta(&d, json, &l->resource_version, &l->continue_) < 0 ||
            dec_array(&d, json, "items", K8S_MAX_LIST_ITEMS, &items, &n) < 0)
                goto fail;
        if (n > 0 && (l->items = dec_alloc_array(&d, n, sizeof(*l->items))) == NULL)
                goto fail;
        for (const cJSON *it = items != NULL ? items->child : NULL; it != NULL; it = it->next) {
                size_t old = dec_path_push(&d, "items[%zu]", l->n);
                if (pod_new(&d, it, &l->items[l->n]) < 0)
                        goto fail;
                l->n++;
                dec_path_pop(&d, old);
        }
        *ret = l;
        return 0;
fail:
        k8s_pod_list_free(l);
        return -1;
}
