/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * This machine as a Kubernetes Node: capacity read from the host (cpu count,
 * MemTotal, the root dir's filesystem size, maxPods) and allocatable as the
 * kubelet computes it on a default node (capacity minus the 100Mi
 * memory.available hard-eviction threshold; ephemeral-storage minus the 10%
 * nodefs.available threshold).
 */

#include <cjson/cJSON.h>

#include "lib/error.h"

struct ag_node_facts {
        char hostname[256];
        long cpus;
        long long memory_bytes;
        long long ephemeral_bytes; /* size of the filesystem holding root_dir */
        char kernel_version[128];
        char architecture[72]; /* GOARCH spelling: amd64, arm64, ... */
};

int ag_node_facts_read(const char *root_dir, struct ag_node_facts *f, struct cb_error *err);

/* The Node object (JSON) for these facts: name, the kubelet's default
 * labels, capacity and allocatable. The caller owns the result. */
cJSON *ag_node_json(const struct ag_node_facts *f, const char *node_name, int max_pods);
