/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/k8s/eviction.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/k8s/qos.h"
#include "agent/k8s/taint.h"
#include "lib/cleanup.h"

#define SYSTEM_CRITICAL_PRIORITY 2000000000LL

static const char *const signal_names[K8S_SIGNAL_COUNT] = {
    [K8S_SIGNAL_MEMORY_AVAILABLE] = "memory.available",
    [K8S_SIGNAL_NODEFS_AVAILABLE] = "nodefs.available",
    [K8S_SIGNAL_NODEFS_INODES_FREE] = "nodefs.inodesFree",
    [K8S_SIGNAL_IMAGEFS_AVAILABLE] = "imagefs.available",
    [K8S_SIGNAL_IMAGEFS_INODES_FREE] = "imagefs.inodesFree",
    [K8S_SIGNAL_PID_AVAILABLE] = "pid.available",
};

const char *k8s_signal_name(enum k8s_signal s)
{
        return s < K8S_SIGNAL_COUNT ? signal_names[s] : "?";
}

/* -1 for an unknown name. */
static int signal_from_name(const char *name, enum k8s_signal *ret)
{
        for (int i = 0; i < K8S_SIGNAL_COUNT; i++)
                if (name != NULL && strcmp(name, signal_names[i]) == 0) {
                        *ret = (enum k8s_signal)i;
                        return 0;
                }
        return -1;
}

const char *k8s_signal_resource(enum k8s_signal s)
{
        switch (s) {
        case K8S_SIGNAL_MEMORY_AVAILABLE:
                return "memory";
        case K8S_SIGNAL_NODEFS_AVAILABLE:
        case K8S_SIGNAL_IMAGEFS_AVAILABLE:
                return "ephemeral-storage";
        case K8S_SIGNAL_NODEFS_INODES_FREE:
        case K8S_SIGNAL_IMAGEFS_INODES_FREE:
                return "inodes";
        case K8S_SIGNAL_PID_AVAILABLE:
                return "pids";
        default:
                return "?";
        }
}

/* The condition (K8S_PRESSURE_*) a signal drives. */
static unsigned signal_condition(enum k8s_signal s)
{
        switch (s) {
        case K8S_SIGNAL_MEMORY_AVAILABLE:
                return K8S_PRESSURE_MEMORY;
        case K8S_SIGNAL_PID_AVAILABLE:
                return K8S_PRESSURE_PID;
        case K8S_SIGNAL_COUNT:
                return 0;
        default:
                return K8S_PRESSURE_DISK;
        }
}

/* ---- thresholds ---- */

void k8s_eviction_clear(struct k8s_eviction_thresholds *ret)
{
        memset(ret, 0, sizeof(*ret));
}

void k8s_eviction_defaults(struct k8s_eviction_thresholds *ret)
{
        static const char *const defaults[][2] = {{"memory.available", "100Mi"},
                                                  {"nodefs.available", "10%"},
                                                  {"nodefs.inodesFree", "5%"},
                                                  {"imagefs.available", "15%"}};
        k8s_eviction_clear(ret);
        for (size_t i = 0; i < CB_ARRAY_SIZE(defaults); i++) {
                struct cb_error err = {0};
                (void)k8s_eviction_threshold_set(ret, defaults[i][0], defaults[i][1], &err);
        }
}

int k8s_eviction_threshold_set(struct k8s_eviction_thresholds *t, const char *signal,
                               const char *value, struct cb_error *err)
{
        enum k8s_signal s;
        if (signal_from_name(signal, &s) < 0)
                return cb_error_set(err, 0,
                                    "evictionHard: unsupported eviction signal \"%s\" (want "
                                    "memory.available, nodefs.available, nodefs.inodesFree, "
                                    "imagefs.available, imagefs.inodesFree or pid.available)",
                                    signal ? signal : "");
        size_t len = value ? strlen(value) : 0;
        struct k8s_threshold th = {.set = true};
        if (len > 0 && value[len - 1] == '%') {
                /* The kubelet ignores 0% and 100% (the signal is unset). */
                if (strcmp(value, "0%") == 0 || strcmp(value, "100%") == 0) {
                        t->t[s] = (struct k8s_threshold){0};
                        return 0;
                }
                char num[64];
                if (len - 1 == 0 || len - 1 >= sizeof(num))
                        return cb_error_set(err, 0, "evictionHard: %s: invalid percentage \"%s\"",
                                            signal, value);
                memcpy(num, value, len - 1);
                num[len - 1] = '\0';
                char *end;
                errno = 0;
                double d = strtod(num, &end);
                if (*end != '\0' || errno != 0 || isnan(d))
                        return cb_error_set(err, 0, "evictionHard: %s: invalid percentage \"%s\"",
                                            signal, value);
                /* float32 as the kubelet's ThresholdValue.Percentage. */
                float pct = (float)d / 100;
                if (pct < 0)
                        return cb_error_set(err, 0,
                                            "evictionHard: eviction percentage threshold %s must "
                                            "be >= 0%%: %s",
                                            signal, value);
                if (pct > 1)
                        return cb_error_set(err, 0,
                                            "evictionHard: eviction percentage threshold %s must "
                                            "be <= 100%%: %s",
                                            signal, value);
                th.is_percentage = true;
                th.percentage = pct;
        } else {
                struct cb_error qerr = {0};
                if (k8s_quantity_parse(value ? value : "", &th.quantity, &qerr) < 0)
                        return cb_error_set(err, 0,
                                            "evictionHard: %s: %s (want e.g. 100Mi or 10%%)",
                                            signal, qerr.msg);
                th.quantity.text = NULL;
                if (th.quantity.value <= 0 && th.quantity.milli <= 0)
                        return cb_error_set(err, 0,
                                            "evictionHard: eviction threshold %s must be "
                                            "positive: %s",
                                            signal, value);
        }
        t->t[s] = th;
        return 0;
}

static char *trim(char *s)
{
        while (*s == ' ' || *s == '\t')
                s++;
        size_t n = strlen(s);
        while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
                s[--n] = '\0';
        return s;
}

int k8s_eviction_parse_hard(const char *s, struct k8s_eviction_thresholds *ret,
                            struct cb_error *err)
{
        struct k8s_eviction_thresholds t;
        k8s_eviction_clear(&t);
        _cleanup_free_ char *copy = strdup(s ? s : "");
        if (copy == NULL)
                return cb_error_set(err, ENOMEM, "--eviction-hard");
        char *save = NULL;
        for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
                char *lt = strchr(item, '<');
                if (lt == NULL)
                        return cb_error_set(err, 0,
                                            "--eviction-hard: malformed pair \"%s\", expect "
                                            "signal<quantity (e.g. memory.available<100Mi)",
                                            trim(item));
                *lt = '\0';
                if (k8s_eviction_threshold_set(&t, trim(item), trim(lt + 1), err) < 0)
                        return cb_error_prefix(err, "--eviction-hard");
        }
        *ret = t;
        return 0;
}

void k8s_eviction_format(const struct k8s_eviction_thresholds *t, char *buf, size_t size)
{
        size_t off = 0;
        if (size > 0)
                buf[0] = '\0';
        for (int i = 0; i < K8S_SIGNAL_COUNT && off < size; i++) {
                const struct k8s_threshold *th = &t->t[i];
                if (!th->set)
                        continue;
                char v[64];
                if (th->is_percentage)
                        snprintf(v, sizeof(v), "%g%%", (double)th->percentage * 100);
                else
                        k8s_quantity_format(&th->quantity, v, sizeof(v));
                int n =
                    snprintf(buf + off, size - off, "%s%s<%s", off ? "," : "", signal_names[i], v);
                if (n < 0)
                        break;
                off += (size_t)n;
        }
}

int64_t k8s_threshold_value(const struct k8s_threshold *t, int64_t capacity)
{
        if (!t->is_percentage)
                return t->quantity.value;
        return (int64_t)((double)capacity * (double)t->percentage);
}

void k8s_eviction_reservation(const struct k8s_eviction_thresholds *t, int64_t memory_capacity,
                              int64_t ephemeral_capacity, int64_t *ret_memory,
                              int64_t *ret_ephemeral)
{
        const struct k8s_threshold *m = &t->t[K8S_SIGNAL_MEMORY_AVAILABLE];
        const struct k8s_threshold *n = &t->t[K8S_SIGNAL_NODEFS_AVAILABLE];
        *ret_memory = m->set ? k8s_threshold_value(m, memory_capacity) : 0;
        *ret_ephemeral = n->set ? k8s_threshold_value(n, ephemeral_capacity) : 0;
}

unsigned k8s_thresholds_met(const struct k8s_eviction_thresholds *t,
                            const struct k8s_observations *obs)
{
        unsigned met = 0;
        for (int i = 0; i < K8S_SIGNAL_COUNT; i++) {
                const struct k8s_observation *o = &obs->o[i];
                if (!t->t[i].set || !o->present)
                        continue;
                if (k8s_threshold_value(&t->t[i], o->capacity) > o->available)
                        met |= 1u << i;
        }
        return met;
}

unsigned k8s_pressure_of_signals(unsigned met)
{
        unsigned c = 0;
        for (int i = 0; i < K8S_SIGNAL_COUNT; i++)
                if (met & (1u << i))
                        c |= signal_condition((enum k8s_signal)i);
        return c;
}

int k8s_signal_to_reclaim(unsigned met)
{
        for (int i = 0; i < K8S_SIGNAL_COUNT; i++)
                if (met & (1u << i))
                        return i;
        return -1;
}

unsigned k8s_pressure_update(struct k8s_pressure_state *st, unsigned observed, uint64_t now_ms,
                             uint64_t period_ms)
{
        unsigned report = 0;
        for (int i = 0; i < 3; i++) {
                if (observed & (1u << i)) {
                        st->seen[i] = true;
                        st->last_observed_ms[i] = now_ms;
                }
                /* Reported while observed less than the period ago. */
                if (st->seen[i] && now_ms - st->last_observed_ms[i] < period_ms)
                        report |= 1u << i;
        }
        return report;
}

void k8s_pressure_condition(unsigned bit, bool under, struct k8s_node_condition_text *ret)
{
        static const struct k8s_node_condition_text table[3][2] = {
            {{"MemoryPressure", "False", "KubeletHasSufficientMemory",
              "kubelet has sufficient memory available", "NodeHasSufficientMemory"},
             {"MemoryPressure", "True", "KubeletHasInsufficientMemory",
              "kubelet has insufficient memory available", "NodeHasInsufficientMemory"}},
            {{"DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure",
              "NodeHasNoDiskPressure"},
             {"DiskPressure", "True", "KubeletHasDiskPressure", "kubelet has disk pressure",
              "NodeHasDiskPressure"}},
            {{"PIDPressure", "False", "KubeletHasSufficientPID",
              "kubelet has sufficient PID available", "NodeHasSufficientPID"},
             {"PIDPressure", "True", "KubeletHasInsufficientPID",
              "kubelet has insufficient PID available", "NodeHasInsufficientPID"}},
        };
        int i = bit == K8S_PRESSURE_DISK ? 1 : bit == K8S_PRESSURE_PID ? 2 : 0;
        *ret = table[i][under ? 1 : 0];
}

/* ---- admission ---- */

bool k8s_pod_is_critical(const struct k8s_pod *pod)
{
        if (k8s_pod_is_static(pod) ||
            k8s_map_get(&pod->meta.annotations, "kubernetes.io/config.mirror") != NULL)
                return true;
        return pod->spec.has_priority && pod->spec.priority >= SYSTEM_CRITICAL_PRIORITY;
}

void k8s_eviction_admit(const struct k8s_pod *pod, unsigned conditions,
                        struct k8s_admit_result *res)
{
        memset(res, 0, sizeof(*res));
        res->admitted = true;
        if (conditions == 0 || k8s_pod_is_critical(pod))
                return;
        if (conditions == K8S_PRESSURE_MEMORY) {
                if (k8s_pod_qos(pod) != K8S_QOS_BEST_EFFORT)
                        return;
                struct k8s_taint taint = {.key = "node.kubernetes.io/memory-pressure",
                                          .effect = K8S_EFFECT_NO_SCHEDULE};
                if (k8s_find_toleration(pod->spec.tolerations, pod->spec.n_tolerations, &taint))
                        return;
        }
        /* fmt's %v of the condition list: "[MemoryPressure DiskPressure]". */
        static const char *const names[] = {"MemoryPressure", "DiskPressure", "PIDPressure"};
        char list[96] = "";
        size_t off = 0;
        for (int i = 0; i < 3; i++)
                if (conditions & (1u << i))
                        off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%s",
                                                off ? " " : "", names[i]);
        res->admitted = false;
        snprintf(res->reason, sizeof(res->reason), "%s", K8S_EVICTION_REASON);
        snprintf(res->message, sizeof(res->message), "The node had condition: [%s]. ", list);
}

/* ---- ranking ---- */

struct ranked {
        struct k8s_eviction_candidate c;
        int64_t mem_request, disk_request;
        int32_t priority;
};

/* true first */
static int cmp_bool(bool a, bool b)
{
        if (a == b)
                return 0;
        return a ? -1 : 1;
}

static int cmp_i64_desc(int64_t a, int64_t b)
{
        return a > b ? -1 : a < b ? 1 : 0;
}

static int64_t sub_sat(int64_t a, int64_t b)
{
        int64_t r;
        if (__builtin_sub_overflow(a, b, &r))
                return b > 0 ? INT64_MIN : INT64_MAX;
        return r;
}

static int cmp_rank(const struct ranked *a, const struct ranked *b, enum k8s_signal s)
{
        int r;
        /* Pods without stats are evicted first, by every comparison. */
        if (!a->c.has_stats || !b->c.has_stats) {
                r = cmp_bool(!a->c.has_stats, !b->c.has_stats);
                if (r != 0)
                        return r;
                /* Both without stats: only priority can tell them apart. */
                return a->priority < b->priority ? -1 : a->priority > b->priority ? 1 : 0;
        }
        int32_t pa = a->priority, pb = b->priority;
        int prio = pa < pb ? -1 : pa > pb ? 1 : 0;
        switch (s) {
        case K8S_SIGNAL_MEMORY_AVAILABLE:
                r = cmp_bool(a->c.memory_working_set > a->mem_request,
                             b->c.memory_working_set > b->mem_request);
                if (r != 0)
                        return r;
                if (prio != 0)
                        return prio;
                return cmp_i64_desc(sub_sat(a->c.memory_working_set, a->mem_request),
                                    sub_sat(b->c.memory_working_set, b->mem_request));
        case K8S_SIGNAL_PID_AVAILABLE:
                if (prio != 0)
                        return prio;
                return cmp_i64_desc(a->c.processes, b->c.processes);
        case K8S_SIGNAL_NODEFS_INODES_FREE:
        case K8S_SIGNAL_IMAGEFS_INODES_FREE:
                /* There is no inodes request (0); the kubelet subtracts the
                 * ephemeral-storage request from the inode usage all the same. */
                r = cmp_bool(a->c.inodes > 0, b->c.inodes > 0);
                if (r != 0)
                        return r;
                if (prio != 0)
                        return prio;
                return cmp_i64_desc(sub_sat(a->c.inodes, a->disk_request),
                                    sub_sat(b->c.inodes, b->disk_request));
        default:
                r = cmp_bool(a->c.disk_bytes > a->disk_request, b->c.disk_bytes > b->disk_request);
                if (r != 0)
                        return r;
                if (prio != 0)
                        return prio;
                return cmp_i64_desc(sub_sat(a->c.disk_bytes, a->disk_request),
                                    sub_sat(b->c.disk_bytes, b->disk_request));
        }
}

void k8s_eviction_rank(struct k8s_eviction_candidate *c, size_t n, enum k8s_signal signal)
{
        if (n < 2)
                return;
        struct ranked *r = calloc(n, sizeof(*r));
        if (r == NULL)
                return; /* left in the given order */
        for (size_t i = 0; i < n; i++) {
                struct k8s_resource_totals req;
                k8s_pod_requests(c[i].pod, &req);
                r[i] = (struct ranked){
                    .c = c[i],
                    .mem_request = req.memory,
                    .disk_request = req.ephemeral_storage,
                    .priority = c[i].pod->spec.has_priority ? c[i].pod->spec.priority : 0};
        }
        /* Insertion sort: stable, and n is the pods of one node. */
        for (size_t i = 1; i < n; i++) {
                struct ranked x = r[i];
                size_t j = i;
                while (j > 0 && cmp_rank(&x, &r[j - 1], signal) < 0) {
                        r[j] = r[j - 1];
                        j--;
                }
                r[j] = x;
        }
        for (size_t i = 0; i < n; i++)
                c[i] = r[i].c;
        free(r);
}

/* ---- messages ---- */

static void format_quantity(int64_t v, enum k8s_quantity_format f, char *buf, size_t size)
{
        struct k8s_quantity q = {.set = true, .value = v, .format = f};
        if (__builtin_mul_overflow(v, (int64_t)1000, &q.milli)) {
                q.milli = v < 0 ? INT64_MIN : INT64_MAX;
                q.milli_saturated = true;
        }
        k8s_quantity_format(&q, buf, (int)size);
}

void k8s_format_bytes(int64_t v, char *buf, size_t size)
{
        format_quantity(v, K8S_QF_BINARY_SI, buf, size);
}

void k8s_format_count(int64_t v, char *buf, size_t size)
{
        format_quantity(v, K8S_QF_DECIMAL_SI, buf, size);
}

static const struct k8s_container *find_container(const struct k8s_pod *pod, const char *name)
{
        for (size_t i = 0; i < pod->spec.n_containers; i++)
                if (pod->spec.containers[i].name && strcmp(pod->spec.containers[i].name, name) == 0)
                        return &pod->spec.containers[i];
        for (size_t i = 0; i < pod->spec.n_init_containers; i++)
                if (pod->spec.init_containers[i].name &&
                    strcmp(pod->spec.init_containers[i].name, name) == 0)
                        return &pod->spec.init_containers[i];
        return NULL;
}

int k8s_eviction_message(enum k8s_signal signal, const struct k8s_threshold *t,
                         const struct k8s_observation *obs, const struct k8s_eviction_candidate *c,
                         char *buf, size_t size)
{
        const char *res = k8s_signal_resource(signal);
        bool bytes = signal != K8S_SIGNAL_NODEFS_INODES_FREE &&
                     signal != K8S_SIGNAL_IMAGEFS_INODES_FREE && signal != K8S_SIGNAL_PID_AVAILABLE;
        size_t off = 0;
        int n = snprintf(buf, size, "The node was low on resource: %s. ", res);
        off += n > 0 ? (size_t)n : 0;
#define APPEND(...)                                                                                \
        do {                                                                                       \
                int m_ = snprintf(buf + (off < size ? off : size), off < size ? size - off : 0,    \
                                  __VA_ARGS__);                                                    \
                off += m_ > 0 ? (size_t)m_ : 0;                                                    \
        } while (0)
        if (t != NULL && t->set && obs != NULL && obs->present) {
                char th[64], av[64];
                /* A quantity prints as given (canonical); a percentage as the
                 * BinarySI quantity it stands for. */
                if (t->is_percentage)
                        format_quantity(k8s_threshold_value(t, obs->capacity), K8S_QF_BINARY_SI, th,
                                        sizeof(th));
                else
                        k8s_quantity_format(&t->quantity, th, sizeof(th));
                format_quantity(obs->available, bytes ? K8S_QF_BINARY_SI : K8S_QF_DECIMAL_SI, av,
                                sizeof(av));
                APPEND("Threshold quantity: %s, available: %s. ", th, av);
        }
        bool memory = signal == K8S_SIGNAL_MEMORY_AVAILABLE;
        bool disk = signal == K8S_SIGNAL_NODEFS_AVAILABLE || signal == K8S_SIGNAL_IMAGEFS_AVAILABLE;
        if (c != NULL && c->has_stats && (memory || disk)) {
                for (size_t i = 0; i < c->n_containers; i++) {
                        const struct k8s_container_usage *u = &c->containers[i];
                        const struct k8s_container *spec =
                            u->name ? find_container(c->pod, u->name) : NULL;
                        if (spec == NULL)
                                continue;
                        bool has = memory ? u->has_memory : u->has_disk;
                        int64_t usage = memory ? u->memory_working_set : u->disk_bytes;
                        if (!has)
                                continue;
                        /* The request as written (no defaulting from the limit). */
                        const struct k8s_quantity *rq = NULL;
                        for (size_t k = 0; k < spec->resources.requests.n; k++)
                                if (spec->resources.requests.items[k].name &&
                                    strcmp(spec->resources.requests.items[k].name, res) == 0)
                                        rq = &spec->resources.requests.items[k].q;
                        int64_t req = rq ? rq->value : 0;
                        if (usage <= req)
                                continue;
                        char us[64], rs[64] = "0";
                        k8s_format_bytes(usage, us, sizeof(us));
                        if (rq != NULL)
                                k8s_quantity_format(rq, rs, sizeof(rs));
                        APPEND("Container %s was using %s, request is %s, has larger consumption "
                               "of %s. ",
                               u->name, us, rs, res);
                }
        }
#undef APPEND
        return (int)off;
}
