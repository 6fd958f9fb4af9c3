/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * This machine as a Kubernetes Node: capacity read from the host (cpu count,
 * MemTotal, the root dir's filesystem size, maxPods) and allocatable as the
 * kubelet computes it (capacity minus the memory.available hard-eviction
 * threshold; ephemeral-storage minus the nodefs.available threshold; by
 * default 100Mi and 10%).
 */

#include <stdbool.h>

#include <cjson/cJSON.h>

#include "agent/core/version.h"
#include "lib/error.h"

struct ag_node_facts {
        char hostname[256];
        long cpus;
        long long memory_bytes;
        long long ephemeral_bytes; /* size of the filesystem holding root_dir */
        char kernel_version[128];
        char architecture[72]; /* GOARCH spelling: amd64, arm64, ... */
        char machine_id[64];   /* /etc/machine-id, "" when absent */
        char system_uuid[64];  /* /sys/class/dmi/id/product_uuid, "" when unreadable */
        char boot_id[64];      /* /proc/sys/kernel/random/boot_id */
        char os_image[256];    /* PRETTY_NAME of /etc/os-release */
        char node_ip[64];      /* IPv4 of the default-route interface, "" when none */
        /* The hard eviction thresholds subtracted for allocatable
         * (HardEvictionReservation: memory.available, nodefs.available);
         * without them the kubelet's defaults, 100Mi and 10%. */
        bool has_eviction_reservation;
        long long eviction_memory, eviction_ephemeral;
};

int ag_node_facts_read(const char *root_dir, struct ag_node_facts *f, struct cb_error *err);

/* The Node object (JSON) for these facts: name, the kubelet's default
 * labels, capacity and allocatable, addresses (InternalIP when node_ip is
 * set, Hostname), nodeInfo, daemonEndpoints and features
 * (supplementalGroupsPolicy: true). Conditions are the node
 * status loop's (agent/node/nodestatus.h). The caller owns the result. */
cJSON *ag_node_json(const struct ag_node_facts *f, const char *node_name, int max_pods);

/* True when s is an IPv4 or IPv6 address usable as a node IP (not
 * loopback, multicast, link-local or unspecified). */
int ag_node_ip_valid(const char *s);
