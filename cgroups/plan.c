/* SPDX-License-Identifier: Apache-2.0 */
#include "cgroups/plan.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/*
 * Pure cgroup formulas (k/k pkg/kubelet/cm/helpers_linux.go) and the file
 * rendering for cgroup v1 and v2. No I/O.
 */

uint64_t cg_milli_cpu_to_shares(int64_t milli_cpu)
{
        if (milli_cpu <= 0)
                return CG_MIN_SHARES; /* the kubelet returns MinShares for 0 */
        /* m*1024 overflows int64 above ~9e15 millicores; the result is
         * clamped to MaxShares long before that, so clamp the input first. */
        if (milli_cpu > (int64_t)CG_MAX_SHARES * 1000)
                return CG_MAX_SHARES;
        uint64_t shares = (uint64_t)milli_cpu * CG_SHARES_PER_CPU / 1000;
        if (shares < CG_MIN_SHARES)
                return CG_MIN_SHARES;
        if (shares > CG_MAX_SHARES)
                return CG_MAX_SHARES;
        return shares;
}

int64_t cg_milli_cpu_to_quota(int64_t milli_cpu, uint64_t period_us)
{
        if (milli_cpu <= 0)
                return 0;
        /* Exact in 128 bits, saturated to INT64_MAX (the kernel refuses such
         * a quota anyway; the caller sees an absurd number, not a wrapped one). */
        unsigned __int128 q = (unsigned __int128)milli_cpu * period_us / 1000;
        if (q > INT64_MAX)
                return INT64_MAX;
        if (q < CG_MIN_QUOTA_US)
                return CG_MIN_QUOTA_US;
        return (int64_t)q;
}

/*
 * cgroup v2 cpu.weight from cpu.shares.
 *
 * Formula choice: the NEW quadratic-in-log mapping adopted by runc >= 1.3.2
 * (opencontainers/cgroups ConvertCPUSharesToCgroupV2Value) and crun, after
 * kubernetes/kubernetes#131216, because that is what the runtimes write for
 * every container today and it maps 1 CPU (1024 shares) to the v2 default
 * weight 100 (the old linear formula gave 39):
 *
 *     0 -> 0 (unset), <= 2 -> 1, >= 262144 -> 10000, otherwise
 *     l = log2(shares); exponent = (l*l + 125*l)/612 - 7/34
 *     weight = ceil(10^exponent)
 *
 * Computed in double precision with libm, the same operations in the same
 * order as the runtimes (IEEE 754 makes the results identical); the unit
 * test pins the sample table and a checksum over every input 0..262144.
 */
uint64_t cg_shares_to_weight(uint64_t shares)
{
        if (shares == 0)
                return 0;
        if (shares <= CG_MIN_SHARES)
                return 1;
        if (shares >= CG_MAX_SHARES)
                return 10000;
        double l = log2((double)shares);
        double exponent = (l * l + 125 * l) / 612.0 - 7.0 / 34.0;
        return (uint64_t)ceil(pow(10, exponent));
}

const char *cg_tier_dir(enum cg_tier tier)
{
        switch (tier) {
        case CG_TIER_GUARANTEED:
                return "";
        case CG_TIER_BURSTABLE:
                return "burstable";
        case CG_TIER_BESTEFFORT:
                return "besteffort";
        }
        return "";
}

int cg_pod_path(const char *root, enum cg_tier tier, const char *pod_uid, char *buf, size_t size)
{
        /* The uid becomes a path component: refuse anything that could
         * leave the kubepods tree or is not a single component. */
        if (pod_uid == NULL || pod_uid[0] == '\0' || strchr(pod_uid, '/') != NULL)
                return -1;
        if (root == NULL)
                root = "";
        size_t rlen = strlen(root);
        while (rlen > 0 && root[rlen - 1] == '/')
                rlen--;
        const char *tdir = cg_tier_dir(tier);
        int n = snprintf(buf, size, "%.*s%s%s%s%s/pod%s", (int)rlen, root,
                         (rlen > 0 || root[0] == '/') ? "/" : "", "kubepods",
                         tdir[0] != '\0' ? "/" : "", tdir, pod_uid);
        return n;
}

static size_t add_file(struct cg_file *out, size_t max, size_t n, const char *name, const char *fmt,
                       ...) __attribute__((format(printf, 5, 6)));

static size_t add_file(struct cg_file *out, size_t max, size_t n, const char *name, const char *fmt,
                       ...)
{
        if (n >= max)
                return n;
        snprintf(out[n].name, sizeof(out[n].name), "%s", name);
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(out[n].value, sizeof(out[n].value), fmt, ap);
        va_end(ap);
        return n + 1;
}

/*
 * Order: cpu, memory, pids. Within cpu on v1 the period is written before
 * the quota, as runc does: a new quota is validated against the current
 * period (and the parent's bandwidth), so setting the period first avoids a
 * spurious EINVAL when both change.
 */
size_t cg_render_files(const struct cg_limits *l, enum cg_version v, struct cg_file *out,
                       size_t max)
{
        size_t n = 0;
        uint64_t period = l->cpu_period_us != 0 ? l->cpu_period_us : CG_QUOTA_PERIOD_US;

        if (v == CG_V1) {
                if (l->cpu_shares != 0)
                        n = add_file(out, max, n, "cpu.shares", "%" PRIu64, l->cpu_shares);
                if (l->cpu_period_us != 0)
                        n = add_file(out, max, n, "cpu.cfs_period_us", "%" PRIu64,
                                     l->cpu_period_us);
                if (l->cpu_quota_us > 0)
                        n = add_file(out, max, n, "cpu.cfs_quota_us", "%" PRId64, l->cpu_quota_us);
                else if (l->cpu_quota_us < 0)
                        n = add_file(out, max, n, "cpu.cfs_quota_us", "-1");
                if (l->memory_limit > 0)
                        n = add_file(out, max, n, "memory.limit_in_bytes", "%" PRId64,
                                     l->memory_limit);
        } else {
                if (l->cpu_shares != 0)
                        n = add_file(out, max, n, "cpu.weight", "%" PRIu64,
                                     cg_shares_to_weight(l->cpu_shares));
                if (l->cpu_quota_us > 0)
                        n = add_file(out, max, n, "cpu.max", "%" PRId64 " %" PRIu64,
                                     l->cpu_quota_us, period);
                else if (l->cpu_quota_us < 0)
                        n = add_file(out, max, n, "cpu.max", "max %" PRIu64, period);
                if (l->memory_limit > 0)
                        n = add_file(out, max, n, "memory.max", "%" PRId64, l->memory_limit);
        }
        /* pids.max has the same name and syntax on both versions. */
        if (l->pids_limit > 0)
                n = add_file(out, max, n, "pids.max", "%" PRId64, l->pids_limit);
        else if (l->pids_limit < 0)
                n = add_file(out, max, n, "pids.max", "max");
        return n;
}
