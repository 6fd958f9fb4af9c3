/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Cgroup plans: the limits of a pod or container cgroup and how they are
 * written on cgroup v1 and v2. Pure functions; no I/O. The Kubernetes side
 * (which requests and limits feed which cgroup) lives in agent/; this
 * module only knows cpu/memory/pids numbers and QoS tiers.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CG_MIN_SHARES      2
#define CG_MAX_SHARES      262144
#define CG_SHARES_PER_CPU  1024
#define CG_QUOTA_PERIOD_US 100000
#define CG_MIN_QUOTA_US    1000

enum cg_tier {
        CG_TIER_GUARANTEED, /* kubepods/pod<uid> */
        CG_TIER_BURSTABLE,  /* kubepods/burstable/pod<uid> */
        CG_TIER_BESTEFFORT, /* kubepods/besteffort/pod<uid> */
};

enum cg_version {
        CG_V1,
        CG_V2,
};

/* Limits of one cgroup. Zero means "not set" for every field. */
struct cg_limits {
        uint64_t cpu_shares;  /* v1 cpu.shares; v2 cpu.weight via cg_shares_to_weight */
        int64_t cpu_quota_us; /* -1: unlimited ("max"), 0: not set */
        uint64_t cpu_period_us;
        int64_t memory_limit; /* bytes; 0: unlimited */
        int64_t pids_limit;   /* 0: not set (unlimited), < 0: written as "max" */
};

struct cg_file {
        char name[40];  /* e.g. "cpu.shares", "memory.max" */
        char value[48]; /* e.g. "1024", "max 100000" */
};

/* The kubelet's MilliCPUToShares: 2 for 0, else clamp(m*1024/1000, 2, 262144). */
uint64_t cg_milli_cpu_to_shares(int64_t milli_cpu);
/* The kubelet's MilliCPUToQuota: 0 for 0, else max(m*period/1000, 1000). */
int64_t cg_milli_cpu_to_quota(int64_t milli_cpu, uint64_t period_us);
/* cgroup v2 cpu.weight from shares (the formula is documented in the .c). */
uint64_t cg_shares_to_weight(uint64_t shares);

/* The QoS directory under kubepods: "" (guaranteed), "burstable", "besteffort". */
const char *cg_tier_dir(enum cg_tier tier);
/* "kubepods/burstable/pod<uid>" (cgroupfs driver), under root (e.g. "" or
 * "/custom"): returns the length needed, writes at most size bytes.
 * Returns -1 (nothing written) when pod_uid is empty or contains '/'. */
int cg_pod_path(const char *root, enum cg_tier tier, const char *pod_uid, char *buf, size_t size);

/* The interface files and values a cgroup with these limits gets, in a
 * stable order (cpu, memory, pids). Unset limits produce no file, except
 * that an unlimited quota is written explicitly (v1 -1, v2 "max <period>").
 * Returns the number of entries (at most max). */
size_t cg_render_files(const struct cg_limits *l, enum cg_version v, struct cg_file *out,
                       size_t max);
