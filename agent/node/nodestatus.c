/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/node/nodestatus.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/time.h>
#include <time.h>

#include "agent/k8s/eviction.h"
#include "agent/core/log.h"
#include "agent/client/reflector.h"
#include "lib/wallclock.h"
#include "lib/cleanup.h"

#define REGISTER_BACKOFF_INITIAL_MS 100
#define REGISTER_BACKOFF_CAP_MS     7000
#define LEASE_JITTER                0.04

/* The four conditions, in the kubelet's order: Ready last. */
struct condition {
        const char *type, *status, *reason, *message;
        char transition[40];
};

struct ag_nodestatus {
        struct ag_loop *loop;
        struct ag_api *api;
        struct ag_node_config cfg;
        char *name;
        char *uid;
        bool registered;
        struct condition cond[4];
        struct ag_backoff reg_backoff, lease_backoff;
        struct ag_timer *reg_timer, *status_timer, *lease_timer;
        struct ag_request *reg_req, *status_req, *lease_req;
        cJSON *observed;  /* last Node from the reflector */
        cJSON *last_sent; /* last status PATCHed successfully */
        uint64_t last_report_ms;
        cJSON *lease; /* last Lease the server returned */
        int lease_failures;
};

/* ---- time, labels, taints ---- */

void ag_format_time(char *buf, size_t size, bool micro)
{
        int64_t us = cb_wall_now_us(); /* the agent's wall clock (lib/wallclock.h) */
        struct timeval tv = {.tv_sec = (time_t)(us / 1000000),
                             .tv_usec = (suseconds_t)(us % 1000000)};
        struct tm tm;
        gmtime_r(&tv.tv_sec, &tm);
        if (micro) {
                /* a truncated time is no time: empty (checking the length also
                 * tells gcc -O3 the truncation is handled) */
                int n = snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ",
                                 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                                 tm.tm_min, tm.tm_sec, (long)tv.tv_usec);
                if ((n < 0 || (size_t)n >= size) && size > 0)
                        buf[0] = '\0';
        } else
                strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static bool alnum(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* A label name or value: at most 63 of [A-Za-z0-9_.-], alphanumeric at
 * both ends. */
static bool valid_label_part(const char *s, size_t n)
{
        if (n == 0 || n > 63 || !alnum(s[0]) || !alnum(s[n - 1]))
                return false;
        for (size_t i = 0; i < n; i++)
                if (!alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
                        return false;
        return true;
}

/* A DNS-1123 subdomain (the prefix of a qualified name). */
static bool valid_subdomain(const char *s, size_t n)
{
        if (n == 0 || n > 253)
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = s[i];
                bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
                if (!ok)
                        return false;
        }
        return alnum(s[0]) && alnum(s[n - 1]);
}

static bool valid_key(const char *k)
{
        const char *slash = strchr(k, '/');
        if (slash == NULL)
                return valid_label_part(k, strlen(k));
        return valid_subdomain(k, (size_t)(slash - k)) &&
               valid_label_part(slash + 1, strlen(slash + 1));
}

/* Splits s at commas into malloc'd items (empty items skipped). */
static char **split_commas(const char *s, size_t *ret_n)
{
        size_t cap = 1;
        for (const char *p = s; *p; p++)
                cap += *p == ',';
        char **v = calloc(cap + 1, sizeof(char *));
        if (v == NULL)
                return NULL;
        size_t n = 0;
        const char *p = s;
        while (*p) {
                size_t len = strcspn(p, ",");
                if (len > 0 && (v[n++] = strndup(p, len)) == NULL)
                        break;
                p += len;
                if (*p == ',')
                        p++;
        }
        *ret_n = n;
        return v;
}

static void free_strv(char **v, size_t n)
{
        for (size_t i = 0; v != NULL && i < n; i++)
                free(v[i]);
        free(v);
}

int ag_parse_node_labels(const char *s, cJSON **ret, struct cb_error *err)
{
        _cleanup_cjson_ cJSON *obj = cJSON_CreateObject();
        size_t n = 0;
        char **items = split_commas(s ? s : "", &n);
        if (obj == NULL || items == NULL) {
                free_strv(items, n);
                return cb_error_set(err, ENOMEM, "out of memory");
        }
        int r = 0;
        for (size_t i = 0; i < n && r == 0; i++) {
                char *eq = strchr(items[i], '=');
                if (eq == NULL) {
                        r = cb_error_set(err, 0, "--node-labels: \"%s\" is not key=value",
                                         items[i]);
                        break;
                }
                *eq = '\0';
                const char *v = eq + 1;
                if (!valid_key(items[i]))
                        r = cb_error_set(err, 0,
                                         "--node-labels: invalid label key \"%s\" (want "
                                         "[prefix/]name, name at most 63 of [A-Za-z0-9_.-] "
                                         "starting and ending alphanumeric)",
                                         items[i]);
                else if (v[0] != '\0' && !valid_label_part(v, strlen(v)))
                        r = cb_error_set(err, 0,
                                         "--node-labels: invalid value \"%s\" of label %s (at "
                                         "most 63 of [A-Za-z0-9_.-], alphanumeric at both ends)",
                                         v, items[i]);
                else {
                        cJSON_DeleteItemFromObjectCaseSensitive(obj, items[i]);
                        cJSON_AddStringToObject(obj, items[i], v);
                }
        }
        free_strv(items, n);
        if (r < 0)
                return -1;
        *ret = steal_pointer(&obj);
        return 0;
}

int ag_parse_taints(const char *s, cJSON **ret, struct cb_error *err)
{
        static const char *const effects[] = {"NoSchedule", "PreferNoSchedule", "NoExecute"};
        _cleanup_cjson_ cJSON *arr = cJSON_CreateArray();
        size_t n = 0;
        char **items = split_commas(s ? s : "", &n);
        if (arr == NULL || items == NULL) {
                free_strv(items, n);
                return cb_error_set(err, ENOMEM, "out of memory");
        }
        int r = 0;
        for (size_t i = 0; i < n && r == 0; i++) {
                char *colon = strrchr(items[i], ':');
                if (colon == NULL) {
                        r = cb_error_set(err, 0,
                                         "--register-with-taints: \"%s\" has no effect (want "
                                         "key=value:Effect or key:Effect)",
                                         items[i]);
                        break;
                }
                *colon = '\0';
                const char *effect = colon + 1;
                bool ok = false;
                for (size_t e = 0; e < CB_ARRAY_SIZE(effects); e++)
                        ok = ok || strcmp(effect, effects[e]) == 0;
                char *eq = strchr(items[i], '=');
                const char *value = "";
                if (eq != NULL) {
                        *eq = '\0';
                        value = eq + 1;
                }
                if (!ok)
                        r = cb_error_set(err, 0,
                                         "--register-with-taints: invalid effect \"%s\" of "
                                         "taint %s (want NoSchedule, PreferNoSchedule or "
                                         "NoExecute)",
                                         effect, items[i]);
                else if (!valid_key(items[i]))
                        r = cb_error_set(err, 0, "--register-with-taints: invalid key \"%s\"",
                                         items[i]);
                else if (value[0] != '\0' && !valid_label_part(value, strlen(value)))
                        r = cb_error_set(err, 0,
                                         "--register-with-taints: invalid value \"%s\" of "
                                         "taint %s",
                                         value, items[i]);
                else {
                        cJSON *t = cJSON_CreateObject();
                        cJSON_AddStringToObject(t, "key", items[i]);
                        if (value[0] != '\0')
                                cJSON_AddStringToObject(t, "value", value);
                        cJSON_AddStringToObject(t, "effect", effect);
                        cJSON_AddItemToArray(arr, t);
                }
        }
        free_strv(items, n);
        if (r < 0)
                return -1;
        *ret = steal_pointer(&arr);
        return 0;
}

/* ---- the status ---- */

static void init_conditions(struct ag_nodestatus *ns)
{
        static const struct condition init[4] = {
            {"MemoryPressure", "False", "KubeletHasSufficientMemory",
             "kubelet has sufficient memory available", ""},
            {"DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure",
             ""},
            {"PIDPressure", "False", "KubeletHasSufficientPID",
             "kubelet has sufficient PID available", ""},
            {"Ready", "True", "KubeletReady", "kubelet is posting ready status", ""},
        };
        char now[40];
        ag_format_time(now, sizeof(now), false);
        for (size_t i = 0; i < 4; i++) {
                ns->cond[i] = init[i];
                snprintf(ns->cond[i].transition, sizeof(ns->cond[i].transition), "%s", now);
        }
}

void ag_nodestatus_set_pressure(struct ag_nodestatus *ns, unsigned conditions)
{
        char now[40];
        ag_format_time(now, sizeof(now), false);
        for (unsigned i = 0; i < 3; i++) {
                struct k8s_node_condition_text t;
                k8s_pressure_condition(1u << i, (conditions & (1u << i)) != 0, &t);
                if (strcmp(ns->cond[i].status, t.status) != 0)
                        snprintf(ns->cond[i].transition, sizeof(ns->cond[i].transition), "%s", now);
                ns->cond[i].status = t.status;
                ns->cond[i].reason = t.reason;
                ns->cond[i].message = t.message;
        }
}

void ag_nodestatus_set_ready(struct ag_nodestatus *ns, const char *not_ready_message)
{
        const char *status = not_ready_message ? "False" : "True";
        struct condition *c = &ns->cond[3];
        if (strcmp(c->status, status) != 0) {
                ag_format_time(c->transition, sizeof(c->transition), false);
                /* the change goes out now, not at the next update */
                if (ns->registered)
                        ag_timer_arm(ns->status_timer, 0);
        }
        c->status = status;
        c->reason = not_ready_message ? "KubeletNotReady" : "KubeletReady";
        c->message = not_ready_message ? not_ready_message : "kubelet is posting ready status";
}

/* Keeps lastTransitionTime of a condition the node already shows with the
 * same status (an agent restart is not a transition). */
static void adopt_transitions(struct ag_nodestatus *ns, const cJSON *node)
{
        const cJSON *conds = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(node, "status"), "conditions");
        const cJSON *c;
        cJSON_ArrayForEach(c, conds)
        {
                const cJSON *type = cJSON_GetObjectItemCaseSensitive(c, "type");
                const cJSON *status = cJSON_GetObjectItemCaseSensitive(c, "status");
                const cJSON *ltt = cJSON_GetObjectItemCaseSensitive(c, "lastTransitionTime");
                if (!cJSON_IsString(type) || !cJSON_IsString(status) || !cJSON_IsString(ltt))
                        continue;
                for (size_t i = 0; i < 4; i++)
                        if (strcmp(ns->cond[i].type, type->valuestring) == 0 &&
                            strcmp(ns->cond[i].status, status->valuestring) == 0)
                                snprintf(ns->cond[i].transition, sizeof(ns->cond[i].transition),
                                         "%s", ltt->valuestring);
        }
}

/* The node's full status as this agent computes it now. */
static cJSON *compute_node(struct ag_nodestatus *ns)
{
        cJSON *node = ag_node_json(&ns->cfg.facts, ns->name, ns->cfg.max_pods);
        if (node == NULL)
                return NULL;
        cJSON *status = cJSON_GetObjectItemCaseSensitive(node, "status");
        cJSON *conds = cJSON_AddArrayToObject(status, "conditions");
        char now[40];
        ag_format_time(now, sizeof(now), false);
        for (size_t i = 0; i < 4; i++) {
                cJSON *c = cJSON_CreateObject();
                cJSON_AddStringToObject(c, "type", ns->cond[i].type);
                cJSON_AddStringToObject(c, "status", ns->cond[i].status);
                cJSON_AddStringToObject(c, "lastHeartbeatTime", now);
                cJSON_AddStringToObject(c, "lastTransitionTime", ns->cond[i].transition);
                cJSON_AddStringToObject(c, "reason", ns->cond[i].reason);
                cJSON_AddStringToObject(c, "message", ns->cond[i].message);
                cJSON_AddItemToArray(conds, c);
        }
        return node;
}

static const char *const owned_status_keys[] = {"capacity",        "allocatable", "addresses",
                                                "daemonEndpoints", "nodeInfo",    "features"};

static bool conditions_differ(const cJSON *old, const cJSON *new)
{
        static const char *const fields[] = {"status", "reason", "message"};
        const cJSON *nc;
        cJSON_ArrayForEach(nc, new)
        {
                const cJSON *type = cJSON_GetObjectItemCaseSensitive(nc, "type");
                const cJSON *oc = NULL, *it;
                cJSON_ArrayForEach(it, old)
                {
                        const cJSON *t = cJSON_GetObjectItemCaseSensitive(it, "type");
                        if (cJSON_IsString(t) && cJSON_IsString(type) &&
                            strcmp(t->valuestring, type->valuestring) == 0)
                                oc = it;
                }
                if (oc == NULL)
                        return true;
                for (size_t i = 0; i < CB_ARRAY_SIZE(fields); i++)
                        if (!cJSON_Compare(cJSON_GetObjectItemCaseSensitive(oc, fields[i]),
                                           cJSON_GetObjectItemCaseSensitive(nc, fields[i]), true))
                                return true;
        }
        return false;
}

bool ag_node_status_differs(const cJSON *old_status, const cJSON *new_status)
{
        if (old_status == NULL)
                return true;
        for (size_t i = 0; i < CB_ARRAY_SIZE(owned_status_keys); i++) {
                const cJSON *a = cJSON_GetObjectItemCaseSensitive(old_status, owned_status_keys[i]);
                const cJSON *b = cJSON_GetObjectItemCaseSensitive(new_status, owned_status_keys[i]);
                if ((a == NULL) != (b == NULL) || (a != NULL && !cJSON_Compare(a, b, true)))
                        return true;
        }
        return conditions_differ(cJSON_GetObjectItemCaseSensitive(old_status, "conditions"),
                                 cJSON_GetObjectItemCaseSensitive(new_status, "conditions"));
}

static double rand01(void)
{
        uint32_t v = 0;
        if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v))
                v = (uint32_t)ag_now_ms() * 2654435761u;
        return (double)v / 4294967296.0;
}

/* ---- registration ---- */

static void do_register(struct ag_nodestatus *ns);
static void update_status(struct ag_nodestatus *ns, bool force);

static void registered(struct ag_nodestatus *ns, const cJSON *node, const char *how)
{
        const cJSON *meta = cJSON_GetObjectItemCaseSensitive(node, "metadata");
        const cJSON *uid = cJSON_GetObjectItemCaseSensitive(meta, "uid");
        free(ns->uid);
        ns->uid = cJSON_IsString(uid) ? strdup(uid->valuestring) : NULL;
        ns->registered = true;
        ns->reg_backoff.current_ms = 0;
        log_info("node %s registered with the apiserver at %s (%s, uid=%s)", ns->name,
                 ag_api_server(ns->api), how, ns->uid ? ns->uid : "?");
        if (ns->cfg.on_registered != NULL)
                ns->cfg.on_registered(ns->uid, ns->cfg.data);
        update_status(ns, true);
}

static void retry_register(struct ag_nodestatus *ns, const char *why)
{
        uint64_t ms = ag_backoff_next(&ns->reg_backoff, ag_now_ms(), 0);
        log_error("unable to register node %s with the apiserver: %s (retrying in %llu ms)",
                  ns->name, why, (unsigned long long)ms);
        ag_timer_arm(ns->reg_timer, ms);
}

static void on_label_patch_done(struct ag_api_result *res, void *data)
{
        struct ag_nodestatus *ns = data;
        ns->reg_req = NULL;
        if (res->error != NULL) {
                retry_register(ns, res->error);
                return;
        }
        registered(ns, res->json, "existing node, labels reconciled");
}

/* Adds --node-labels to the default labels of node. */
static void add_extra_labels(struct ag_nodestatus *ns, cJSON *node)
{
        cJSON *labels = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(node, "metadata"), "labels");
        const cJSON *l;
        cJSON_ArrayForEach(l, ns->cfg.extra_labels)
        {
                cJSON_DeleteItemFromObjectCaseSensitive(labels, l->string);
                cJSON_AddItemToObject(labels, l->string, cJSON_Duplicate(l, true));
        }
}

/* The labels the agent sets (defaults and --node-labels) that the existing
 * node lacks or has otherwise. */
static cJSON *label_changes(struct ag_nodestatus *ns, const cJSON *existing)
{
        _cleanup_cjson_ cJSON *want = compute_node(ns);
        if (want == NULL)
                return NULL;
        add_extra_labels(ns, want);
        const cJSON *want_labels = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(want, "metadata"), "labels");
        const cJSON *have = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(existing, "metadata"), "labels");
        cJSON *changes = cJSON_CreateObject();
        const cJSON *l;
        cJSON_ArrayForEach(l, want_labels)
        {
                const cJSON *h = cJSON_GetObjectItemCaseSensitive(have, l->string);
                if (!cJSON_Compare(h, l, true))
                        cJSON_AddItemToObject(changes, l->string, cJSON_Duplicate(l, true));
        }
        return changes;
}

static void on_get_existing_done(struct ag_api_result *res, void *data)
{
        struct ag_nodestatus *ns = data;
        ns->reg_req = NULL;
        if (res->error != NULL) {
                retry_register(ns, res->error);
                return;
        }
        adopt_transitions(ns, res->json);
        _cleanup_cjson_ cJSON *changes = label_changes(ns, res->json);
        if (changes == NULL || cJSON_GetArraySize(changes) == 0) {
                registered(ns, res->json, "existing node");
                return;
        }
        _cleanup_cjson_ cJSON *patch = cJSON_CreateObject();
        cJSON_AddItemToObject(cJSON_AddObjectToObject(patch, "metadata"), "labels",
                              steal_pointer(&changes));
        _cleanup_free_ char *body = cJSON_PrintUnformatted(patch);
        _cleanup_free_ char *path = NULL;
        struct cb_error err = {0};
        if (body == NULL || asprintf(&path, "/api/v1/nodes/%s", ns->name) < 0) {
                retry_register(ns, "out of memory");
                return;
        }
        struct ag_api_req_opts o = {
            .content_type = "application/merge-patch+json", .body = body, .body_len = strlen(body)};
        ns->reg_req = ag_api_request(ns->api, "PATCH", path, &o, on_label_patch_done, ns, &err);
        if (ns->reg_req == NULL)
                retry_register(ns, err.msg);
}

static void on_register_done(struct ag_api_result *res, void *data)
{
        struct ag_nodestatus *ns = data;
        ns->reg_req = NULL;
        if (res->status == 409) {
                _cleanup_free_ char *path = NULL;
                struct cb_error err = {0};
                log_v(1, "node %s already exists: reconciling it", ns->name);
                if (asprintf(&path, "/api/v1/nodes/%s", ns->name) < 0) {
                        retry_register(ns, "out of memory");
                        return;
                }
                ns->reg_req =
                    ag_api_request(ns->api, "GET", path, NULL, on_get_existing_done, ns, &err);
                if (ns->reg_req == NULL)
                        retry_register(ns, err.msg);
                return;
        }
        if (res->error != NULL) {
                retry_register(ns, res->error);
                return;
        }
        registered(ns, res->json, "created");
}

static void do_register(struct ag_nodestatus *ns)
{
        _cleanup_cjson_ cJSON *node = compute_node(ns);
        if (node == NULL) {
                retry_register(ns, "out of memory");
                return;
        }
        cJSON *meta = cJSON_GetObjectItemCaseSensitive(node, "metadata");
        add_extra_labels(ns, node);
        cJSON_AddStringToObject(cJSON_AddObjectToObject(meta, "annotations"),
                                "volumes.kubernetes.io/controller-managed-attach-detach", "true");
        cJSON *spec = cJSON_CreateObject();
        if (ns->cfg.taints != NULL && cJSON_GetArraySize(ns->cfg.taints) > 0)
                cJSON_AddItemToObject(spec, "taints", cJSON_Duplicate(ns->cfg.taints, true));
        cJSON_AddItemToObject(node, "spec", spec);
        _cleanup_free_ char *body = cJSON_PrintUnformatted(node);
        struct cb_error err = {0};
        if (body == NULL) {
                retry_register(ns, "out of memory");
                return;
        }
        log_v(1, "registering node %s with the apiserver at %s", ns->name, ag_api_server(ns->api));
        struct ag_api_req_opts o = {.body = body, .body_len = strlen(body)};
        ns->reg_req =
            ag_api_request(ns->api, "POST", "/api/v1/nodes", &o, on_register_done, ns, &err);
        if (ns->reg_req == NULL)
                retry_register(ns, err.msg);
}

static void on_reg_timer(struct ag_timer *t, void *data)
{
        do_register(data);
}

/* ---- status updates ---- */

static void schedule_status(struct ag_nodestatus *ns)
{
        ag_timer_arm(ns->status_timer, ns->cfg.update_ms);
}

static void on_status_done(struct ag_api_result *res, void *data)
{
        struct ag_nodestatus *ns = data;
        ns->status_req = NULL;
        if (res->status == 404) {
                /* Someone deleted the Node: register it again. */
                log_error("node %s no longer exists on the apiserver: registering it again",
                          ns->name);
                ns->registered = false;
                cJSON_Delete(ns->last_sent);
                ns->last_sent = NULL;
                do_register(ns);
                return;
        }
        if (res->error != NULL) {
                log_error("error updating the status of node %s (will retry): %s", ns->name,
                          res->error);
        } else {
                cJSON_Delete(ns->last_sent);
                ns->last_sent = cJSON_DetachItemFromObjectCaseSensitive(res->json, "status");
                ns->last_report_ms = ag_now_ms();
                log_v(2, "node %s: status updated", ns->name);
                if (ns->cfg.on_addresses != NULL)
                        ns->cfg.on_addresses(
                            cJSON_GetObjectItemCaseSensitive(ns->last_sent, "addresses"),
                            ns->cfg.data);
        }
        schedule_status(ns);
}

static void update_status(struct ag_nodestatus *ns, bool force)
{
        if (!ns->registered || ns->status_req != NULL) {
                schedule_status(ns);
                return;
        }
        _cleanup_cjson_ cJSON *node = compute_node(ns);
        cJSON *status = cJSON_GetObjectItemCaseSensitive(node, "status");
        if (status == NULL) {
                schedule_status(ns);
                return;
        }
        /* The node as the apiserver shows it (the reflector's copy) wins
         * over what we last sent: a status someone else changed (the node
         * controller's Unknown) is put right at once. */
        const cJSON *seen = ns->observed != NULL
                                ? cJSON_GetObjectItemCaseSensitive(ns->observed, "status")
                                : ns->last_sent;
        bool changed =
            ag_node_status_differs(seen, status) || ag_node_status_differs(ns->last_sent, status);
        bool due = ag_now_ms() - ns->last_report_ms >= ns->cfg.report_ms;
        if (!force && !changed && !due) {
                schedule_status(ns);
                return;
        }
        /* status.addresses is (wrongly) a merge list keyed by type; when it
         * changes, the kubelet replaces it whole. */
        if (!cJSON_Compare(cJSON_GetObjectItemCaseSensitive(seen, "addresses"),
                           cJSON_GetObjectItemCaseSensitive(status, "addresses"), true)) {
                cJSON *r = cJSON_CreateObject();
                cJSON_AddStringToObject(r, "$patch", "replace");
                cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(status, "addresses"), r);
        }
        _cleanup_cjson_ cJSON *patch = cJSON_CreateObject();
        cJSON_AddItemToObject(patch, "status",
                              cJSON_DetachItemFromObjectCaseSensitive(node, "status"));
        _cleanup_free_ char *body = cJSON_PrintUnformatted(patch);
        _cleanup_free_ char *path = NULL;
        struct cb_error err = {0};
        if (body == NULL || asprintf(&path, "/api/v1/nodes/%s/status", ns->name) < 0) {
                schedule_status(ns);
                return;
        }
        struct ag_api_req_opts o = {.content_type = "application/strategic-merge-patch+json",
                                    .body = body,
                                    .body_len = strlen(body)};
        ns->status_req = ag_api_request(ns->api, "PATCH", path, &o, on_status_done, ns, &err);
        if (ns->status_req == NULL) {
                log_error("error updating the status of node %s: %s", ns->name, err.msg);
                schedule_status(ns);
        }
}

static void on_status_timer(struct ag_timer *t, void *data)
{
        update_status(data, false);
}

void ag_nodestatus_observe(struct ag_nodestatus *ns, const cJSON *node)
{
        cJSON_Delete(ns->observed);
        ns->observed = node != NULL ? cJSON_Duplicate(node, true) : NULL;
}

/* ---- the Lease ---- */

static void lease_sync(struct ag_nodestatus *ns);

static void lease_schedule(struct ag_nodestatus *ns)
{
        uint64_t renew = (uint64_t)ns->cfg.lease_duration_s * 1000 / 4;
        ag_timer_arm(ns->lease_timer, renew + (uint64_t)((double)renew * LEASE_JITTER * rand01()));
}

static void lease_failed(struct ag_nodestatus *ns, const char *what, const char *error)
{
        uint64_t ms = ag_backoff_next(&ns->lease_backoff, ag_now_ms(), 0);
        log_error("failed to %s the node lease %s/%s (retrying in %llu ms): %s", what,
                  AG_NODE_LEASE_NAMESPACE, ns->name, (unsigned long long)ms, error);
        /* Repeated failures: do not reuse a connection that may be dead. */
        if (++ns->lease_failures >= 2)
                ag_api_close_idle(ns->api);
        ag_timer_arm(ns->lease_timer, ms);
}

static void lease_ok(struct ag_nodestatus *ns, struct ag_api_result *res)
{
        cJSON_Delete(ns->lease);
        ns->lease = steal_pointer(&res->json);
        ns->lease_failures = 0;
        ns->lease_backoff.current_ms = 0;
        log_v(3, "node lease %s/%s renewed", AG_NODE_LEASE_NAMESPACE, ns->name);
        lease_schedule(ns);
}

/* Sets renewTime, holder, duration and the owner reference on lease. */
static void lease_fill(struct ag_nodestatus *ns, cJSON *lease)
{
        char now[40];
        ag_format_time(now, sizeof(now), true);
        cJSON *meta = cJSON_GetObjectItemCaseSensitive(lease, "metadata");
        if (meta == NULL)
                meta = cJSON_AddObjectToObject(lease, "metadata");
        if (ns->uid != NULL) {
                cJSON_DeleteItemFromObjectCaseSensitive(meta, "ownerReferences");
                cJSON *refs = cJSON_AddArrayToObject(meta, "ownerReferences");
                cJSON *ref = cJSON_CreateObject();
                cJSON_AddStringToObject(ref, "apiVersion", "v1");
                cJSON_AddStringToObject(ref, "kind", "Node");
                cJSON_AddStringToObject(ref, "name", ns->name);
                cJSON_AddStringToObject(ref, "uid", ns->uid);
                cJSON_AddItemToArray(refs, ref);
        }
        cJSON *spec = cJSON_GetObjectItemCaseSensitive(lease, "spec");
        if (spec == NULL)
                spec = cJSON_AddObjectToObject(lease, "spec");
        cJSON_DeleteItemFromObjectCaseSensitive(spec, "holderIdentity");
        cJSON_DeleteItemFromObjectCaseSensitive(spec, "leaseDurationSeconds");
        cJSON_DeleteItemFromObjectCaseSensitive(spec, "renewTime");
        cJSON_AddStringToObject(spec, "holderIdentity", ns->name);
        cJSON_AddNumberToObject(spec, "leaseDurationSeconds", ns->cfg.lease_duration_s);
        cJSON_AddStringToObject(spec, "renewTime", now);
}

static void lease_get(struct ag_nodestatus *ns);
static void lease_create(struct ag_nodestatus *ns);

static void lease_send(struct ag_nodestatus *ns, const char *method, const char *path,
                       cJSON *body_json, ag_api_done_fn done)
{
        _cleanup_free_ char *body = body_json ? cJSON_PrintUnformatted(body_json) : NULL;
        struct cb_error err = {0};
        struct ag_api_req_opts o = {
            .cls = AG_API_CLASS_LEASE, .body = body, .body_len = body ? strlen(body) : 0};
        ns->lease_req = ag_api_request(ns->api, method, path, &o, done, ns, &err);
        if (ns->lease_req == NULL)
                lease_failed(ns, "renew", err.msg);
}

static void on_lease_put(struct ag_api_result *res, void *data)
{
        struct ag_nodestatus *ns = data;
        ns->lease_req = NULL;
        if (res->error == NULL) {
                lease_ok(ns, res);
                return;
        }
        cJSON_Delete(ns->lease);
        ns->lease = NULL;
        if (res->status == 409) { /* someone else wrote it: read it again */
                log_v(1, "node lease %s/%s changed on the server: reading it again",
                      AG_NODE_LEASE_NAMESPACE, ns->name);
                lease_get(ns);
        } else if (res->status == 404) {
                lease_create(ns);
        } else {
                lease_failed(ns, "update", res->error);
        }
}

static void lease_put(struct ag_nodestatus *ns)
{
        char path[512];
        snprintf(path, sizeof(path), "/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s",
                 AG_NODE_LEASE_NAMESPACE, ns->name);
        lease_fill(ns, ns->lease);
        lease_send(ns, "PUT", path, ns->lease, on_lease_put);
}

static void on_lease_post(struct ag_api_result *res, void *data)
{
        struct ag_nodestatus *ns = data;
        ns->lease_req = NULL;
        if (res->error == NULL)
                lease_ok(ns, res);
        else if (res->status == 409)
                lease_get(ns);
        else
                lease_failed(ns, "create", res->error);
}

static void lease_create(struct ag_nodestatus *ns)
{
        char path[512];
        snprintf(path, sizeof(path), "/apis/coordination.k8s.io/v1/namespaces/%s/leases",
                 AG_NODE_LEASE_NAMESPACE);
        _cleanup_cjson_ cJSON *lease = cJSON_CreateObject();
        cJSON_AddStringToObject(lease, "apiVersion", "coordination.k8s.io/v1");
        cJSON_AddStringToObject(lease, "kind", "Lease");
        cJSON *meta = cJSON_AddObjectToObject(lease, "metadata");
        cJSON_AddStringToObject(meta, "name", ns->name);
        cJSON_AddStringToObject(meta, "namespace", AG_NODE_LEASE_NAMESPACE);
        lease_fill(ns, lease);
        lease_send(ns, "POST", path, lease, on_lease_post);
}

static void on_lease_get(struct ag_api_result *res, void *data)
{
        struct ag_nodestatus *ns = data;
        ns->lease_req = NULL;
        if (res->status == 404) {
                lease_create(ns);
        } else if (res->error != NULL) {
                lease_failed(ns, "read", res->error);
        } else {
                cJSON_Delete(ns->lease);
                ns->lease = steal_pointer(&res->json);
                lease_put(ns);
        }
}

static void lease_get(struct ag_nodestatus *ns)
{
        char path[512];
        snprintf(path, sizeof(path), "/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s",
                 AG_NODE_LEASE_NAMESPACE, ns->name);
        lease_send(ns, "GET", path, NULL, on_lease_get);
}

/* Renews with the last lease the server returned (no GET); without one,
 * reads it first. */
static void lease_sync(struct ag_nodestatus *ns)
{
        if (ns->lease_req != NULL)
                return;
        if (ns->lease != NULL)
                lease_put(ns);
        else
                lease_get(ns);
}

static void on_lease_timer(struct ag_timer *t, void *data)
{
        lease_sync(data);
}

/* ---- lifetime ---- */

int ag_nodestatus_new(struct ag_loop *loop, struct ag_api *api, const struct ag_node_config *cfg,
                      struct ag_nodestatus **ret, struct cb_error *err)
{
        struct ag_nodestatus *ns = calloc(1, sizeof(*ns));
        if (ns == NULL)
                return cb_error_set(err, ENOMEM, "out of memory");
        ns->loop = loop;
        ns->api = api;
        ns->cfg = *cfg;
        if (ns->cfg.update_ms == 0)
                ns->cfg.update_ms = AG_NODE_STATUS_UPDATE_MS;
        if (ns->cfg.report_ms == 0)
                ns->cfg.report_ms = AG_NODE_STATUS_REPORT_MS;
        if (ns->cfg.lease_duration_s <= 0)
                ns->cfg.lease_duration_s = AG_NODE_LEASE_DURATION_S;
        ns->name = strdup(cfg->node_name);
        init_conditions(ns);
        ag_backoff_init(&ns->reg_backoff, REGISTER_BACKOFF_INITIAL_MS, REGISTER_BACKOFF_CAP_MS, 0);
        ag_backoff_init(&ns->lease_backoff, REGISTER_BACKOFF_INITIAL_MS, REGISTER_BACKOFF_CAP_MS,
                        0);
        ns->reg_timer = ag_timer_new(loop, on_reg_timer, ns, err);
        ns->status_timer = ag_timer_new(loop, on_status_timer, ns, err);
        ns->lease_timer = ag_timer_new(loop, on_lease_timer, ns, err);
        if (ns->name == NULL || ns->reg_timer == NULL || ns->status_timer == NULL ||
            ns->lease_timer == NULL) {
                ag_nodestatus_free(ns);
                return cb_error_set(err, ENOMEM, "cannot set up the node status loop");
        }
        *ret = ns;
        return 0;
}

void ag_nodestatus_start(struct ag_nodestatus *ns)
{
        do_register(ns);
        lease_sync(ns);
}

void ag_nodestatus_free(struct ag_nodestatus *ns)
{
        if (ns == NULL)
                return;
        ag_api_cancel(ns->reg_req);
        ag_api_cancel(ns->status_req);
        ag_api_cancel(ns->lease_req);
        ag_timer_free(ns->reg_timer);
        ag_timer_free(ns->status_timer);
        ag_timer_free(ns->lease_timer);
        cJSON_Delete(ns->observed);
        cJSON_Delete(ns->last_sent);
        cJSON_Delete(ns->lease);
        free(ns->name);
        free(ns->uid);
        free(ns);
}
