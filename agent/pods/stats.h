/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * /stats/summary (the kubelet's stats/v1alpha1 Summary, what metrics-server
 * reads): node and per-pod/per-container cpu and memory from the cgroups,
 * pod network from /proc/<pid>/net/dev of a process in the pod's network
 * namespace, node filesystem from statvfs(root dir), container log usage.
 *
 * usageNanoCores is a rate: the difference to the previous request's
 * sample of the same cgroup (kept in struct ag_stats); on the first sample
 * of a cgroup it is the average since the container (or node) started.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "lib/error.h"

struct ag_stats;

struct ag_stats *ag_stats_new(void);
void ag_stats_free(struct ag_stats *s);

struct ag_stats_container {
        const char *name;
        const char *cgroup;  /* "" when the container has no running instance */
        int64_t started_ns;  /* wall clock, 0: unknown */
        const char *log_dir; /* <pod logs dir>/<ns>_<pod>_<uid>/<name>, NULL: none */
};

struct ag_stats_pod {
        const char *ns, *name, *uid;
        int64_t started_ns;
        const char *cgroup; /* the pod cgroup, "" before it exists */
        pid_t net_pid;      /* a process in the pod's network namespace, 0: none */
        const struct ag_stats_container *containers;
        size_t n_containers;
};

/* The "node" object. */
cJSON *ag_stats_node_json(struct ag_stats *s, const char *node_name, const char *root_dir,
                          int64_t memory_capacity);
/* One entry of "pods". */
cJSON *ag_stats_pod_json(struct ag_stats *s, const struct ag_stats_pod *p);

/* /proc/net/dev: every interface but lo. Returns how many were filled in
 * (at most max), -1 when buf is not that format. */
/* /metrics/resource (pkg/kubelet/metrics/collectors/resource_metrics.go)
 * from a /stats/summary object, in the Prometheus text format (0.0.4) the
 * kubelet serves: node_, pod_ and container_ cpu/memory families, with
 * their timestamps in ms, container_start_time_seconds and
 * resource_scrape_error (1 when summary is NULL). Families sorted by name,
 * samples by label values, as the Prometheus registry writes them.
 * malloc'd; NULL when out of memory. */
char *ag_resource_metrics_text(const cJSON *summary);

/* A float as Go's strconv.FormatFloat(v, 'g', -1, 64) writes it (the
 * Prometheus text format's numbers): "0", "12.5", "1.2345678e+07". */
void ag_go_float(double v, char *buf, size_t size);

struct ag_net_iface {
        char name[32];
        uint64_t rx_bytes, rx_errors, tx_bytes, tx_errors;
};
int ag_parse_net_dev(const char *buf, struct ag_net_iface *ret, size_t max, struct cb_error *err);
