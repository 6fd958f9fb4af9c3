/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Node-pressure eviction decisions, as the kubelet's eviction manager makes
 * them (k/k pkg/kubelet/eviction/helpers.go, eviction_manager.go,
 * eviction/api/types.go). Pure functions over thresholds, measurements
 * and pods; the measuring and acting is agent/node/pressure.c.
 *
 *  - thresholds: evictionHard "<signal>: <quantity or percentage>";
 *    defaults memory.available<100Mi, nodefs.available<10%,
 *    nodefs.inodesFree<5%, imagefs.available<15%. Giving any threshold
 *    replaces all the defaults (none is inherited, as the kubelet);
 *    "0%" and "100%" unset a signal; a quantity must be positive;
 *  - a threshold is met when available < threshold, where a percentage
 *    is int64(capacity * float32(pct)/100) bytes/inodes/pids;
 *  - node conditions: MemoryPressure (memory.available), DiskPressure
 *    (nodefs.*, imagefs.*), PIDPressure (pid.available); reported while a
 *    threshold was met within the last evictionPressureTransitionPeriod;
 *  - pods are ranked per signal: memory — usage above requests first, then
 *    lower priority, then larger usage minus request; disk — the same with
 *    local disk usage and ephemeral-storage requests; pids — lower
 *    priority, then more processes. Pods without stats go first;
 *  - admission under pressure: critical pods always; with only
 *    MemoryPressure, pods that are not BestEffort, and BestEffort pods that
 *    tolerate node.kubernetes.io/memory-pressure:NoSchedule; otherwise
 *    reason "Evicted", "The node had condition: [MemoryPressure]. ".
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/k8s/admit.h"
#include "agent/k8s/k8s.h"
#include "agent/k8s/quantity.h"
#include "lib/error.h"

#define K8S_EVICTION_REASON "Evicted"
/* evictionMonitoringPeriod / housekeeping: how often the signals are measured. */
#define K8S_EVICTION_MONITORING_MS 10000
#define K8S_EVICTION_TRANSITION_MS 300000
/* The grace period a hard threshold eviction gets (immediateEvictionGracePeriodSeconds). */
#define K8S_EVICTION_HARD_GRACE_S 1
/* After an eviction, the next one waits for the pod's cleanup this long at most. */
#define K8S_EVICTION_CLEANUP_TIMEOUT_MS 30000

enum k8s_signal {
        K8S_SIGNAL_MEMORY_AVAILABLE, /* "memory.available" */
        K8S_SIGNAL_NODEFS_AVAILABLE,
        K8S_SIGNAL_NODEFS_INODES_FREE,
        K8S_SIGNAL_IMAGEFS_AVAILABLE,
        K8S_SIGNAL_IMAGEFS_INODES_FREE,
        K8S_SIGNAL_PID_AVAILABLE,
        K8S_SIGNAL_COUNT
};

/* Node conditions as a bit mask. */
enum k8s_pressure {
        K8S_PRESSURE_MEMORY = 1u << 0, /* MemoryPressure */
        K8S_PRESSURE_DISK = 1u << 1,   /* DiskPressure */
        K8S_PRESSURE_PID = 1u << 2,    /* PIDPressure */
};

const char *k8s_signal_name(enum k8s_signal s);
/* The resource a signal reclaims, as the kubelet names it in messages:
 * "memory", "ephemeral-storage", "inodes", "pids". */
const char *k8s_signal_resource(enum k8s_signal s);

struct k8s_threshold {
        bool set;
        bool is_percentage;
        float percentage;             /* 0 < p < 1, as the kubelet's float32 */
        struct k8s_quantity quantity; /* when !is_percentage: > 0 */
};

struct k8s_eviction_thresholds {
        struct k8s_threshold t[K8S_SIGNAL_COUNT];
};

/* The kubelet's default evictionHard. */
void k8s_eviction_defaults(struct k8s_eviction_thresholds *ret);
/* No threshold at all. */
void k8s_eviction_clear(struct k8s_eviction_thresholds *ret);

/*
 * One evictionHard entry, as a KubeletConfiguration map gives it
 * (signal "memory.available", value "100Mi" or "10%"); the config loader
 * calls it for each key after k8s_eviction_clear(). "0%" and "100%" unset
 * the signal. Errors name the signal and value:
 *   evictionHard: unsupported eviction signal "memory.free"
 *   evictionHard: memory.available: eviction threshold must be positive: "0"
 */
int k8s_eviction_threshold_set(struct k8s_eviction_thresholds *t, const char *signal,
                               const char *value, struct cb_error *err);

/* The --eviction-hard flag: "memory.available<100Mi,nodefs.available<10%"
 * (the kubelet's '<'-separated map). Replaces every threshold in *ret; an
 * empty string leaves none. */
int k8s_eviction_parse_hard(const char *s, struct k8s_eviction_thresholds *ret,
                            struct cb_error *err);

/* "memory.available<100Mi,nodefs.available<10%" back, for logs. */
void k8s_eviction_format(const struct k8s_eviction_thresholds *t, char *buf, size_t size);

/* HardEvictionReservation: what allocatable leaves out for the
 * memory.available and nodefs.available thresholds (a percentage of the
 * memory / root filesystem capacity); 0 for an unset signal. */
void k8s_eviction_reservation(const struct k8s_eviction_thresholds *t, int64_t memory_capacity,
                              int64_t ephemeral_capacity, int64_t *ret_memory,
                              int64_t *ret_ephemeral);

/* What the node measured for a signal. */
struct k8s_observation {
        bool present;
        int64_t available;
        int64_t capacity;
};

struct k8s_observations {
        struct k8s_observation o[K8S_SIGNAL_COUNT];
};

/* The threshold's value against a capacity (GetThresholdQuantity). */
int64_t k8s_threshold_value(const struct k8s_threshold *t, int64_t capacity);

/* Bit (1u << signal) for every set threshold whose signal was observed
 * with available < threshold value. */
unsigned k8s_thresholds_met(const struct k8s_eviction_thresholds *t,
                            const struct k8s_observations *obs);

/* The node conditions the met signals drive. */
unsigned k8s_pressure_of_signals(unsigned met);

/* The signal to reclaim first: memory.available, then the others in enum
 * order; -1 when none is met. */
int k8s_signal_to_reclaim(unsigned met);

/*
 * The transition period: a condition is reported while it was observed
 * less than period_ms ago (nodeConditionsObservedSince). Feed every
 * measurement; returns the conditions to report now.
 */
struct k8s_pressure_state {
        bool seen[3];
        uint64_t last_observed_ms[3];
};

unsigned k8s_pressure_update(struct k8s_pressure_state *st, unsigned observed, uint64_t now_ms,
                             uint64_t period_ms);

/* The node condition (type, status, reason, message) for one pressure
 * bit, as the kubelet's status setters write it. */
struct k8s_node_condition_text {
        const char *type, *status, *reason, *message;
        const char *event; /* the node event on a flip: NodeHasInsufficientMemory ... */
};

void k8s_pressure_condition(unsigned pressure_bit, bool under_pressure,
                            struct k8s_node_condition_text *ret);

/* The eviction manager's admit handler; res as k8s_admit fills it. */
void k8s_eviction_admit(const struct k8s_pod *pod, unsigned conditions,
                        struct k8s_admit_result *res);

/* IsCriticalPod: static, mirror, or priority >= 2000000000. Never evicted. */
bool k8s_pod_is_critical(const struct k8s_pod *pod);

/* A pod's usage, for ranking and for the message. */
struct k8s_container_usage {
        const char *name;
        bool has_memory;
        int64_t memory_working_set;
        bool has_disk;
        int64_t disk_bytes; /* writable layer + logs */
};

struct k8s_eviction_candidate {
        const struct k8s_pod *pod;
        bool has_stats;
        int64_t memory_working_set;
        int64_t disk_bytes; /* writable layers, logs, emptyDir volumes */
        int64_t inodes;
        int64_t processes;
        const struct k8s_container_usage *containers;
        size_t n_containers;
};

/* Sorts c (in place, stable) into eviction order for the signal. */
void k8s_eviction_rank(struct k8s_eviction_candidate *c, size_t n, enum k8s_signal signal);

/*
 * The eviction message (evictionMessage):
 *   "The node was low on resource: memory. Threshold quantity: 100Mi,
 *    available: 51200Ki. Container x was using 10Mi, request is 0, has
 *    larger consumption of memory. "
 * the threshold part when the signal was observed; a container part for
 * each container whose memory (or ephemeral-storage) usage exceeds its
 * request. Returns the length it needed.
 */
int k8s_eviction_message(enum k8s_signal signal, const struct k8s_threshold *t,
                         const struct k8s_observation *obs, const struct k8s_eviction_candidate *c,
                         char *buf, size_t size);

/* Canonical quantity strings as the kubelet prints them: bytes as
 * resource.NewQuantity(v, BinarySI), counts as DecimalSI. */
void k8s_format_bytes(int64_t v, char *buf, size_t size);
void k8s_format_count(int64_t v, char *buf, size_t size);
