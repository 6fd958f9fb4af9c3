/* SPDX-License-Identifier: Apache-2.0 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/k8s/eviction.h"
#include "agent/node/pressure.h"
#include "cgroups/cgroup.h"

#include "helpers.h"

#define MI (1024LL * 1024)

/* name, extra metadata, extra spec, the container's resources. */
static struct k8s_pod *mkpod(const char *name, const char *meta, const char *spec,
                             const char *resources)
{
        char buf[4096];
        snprintf(buf, sizeof(buf),
                 "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\",\"uid\":\"u-%s\"%s%s},"
                 "\"spec\":{%s%s\"containers\":[{\"name\":\"c\",\"image\":\"busybox\","
                 "\"resources\":%s}]}}",
                 name, name, meta[0] ? "," : "", meta, spec, spec[0] ? "," : "",
                 resources[0] ? resources : "{}");
        return th_pod_json(buf);
}

#define GUARANTEED(mem)                                                                            \
        "{\"requests\":{\"cpu\":\"100m\",\"memory\":\"" mem "\"},\"limits\":{\"cpu\":\"100m\","    \
        "\"memory\":\"" mem "\"}}"
#define REQ_MEM(mem) "{\"requests\":{\"memory\":\"" mem "\"}}"

/* ---- thresholds ---- */

START_TEST(test_defaults)
{
        struct k8s_eviction_thresholds t;
        k8s_eviction_defaults(&t);
        char buf[256];
        k8s_eviction_format(&t, buf, sizeof(buf));
        ck_assert_str_eq(buf, "memory.available<100Mi,nodefs.available<10%,nodefs.inodesFree<5%,"
                              "imagefs.available<15%");
        ck_assert(!t.t[K8S_SIGNAL_PID_AVAILABLE].set);
        ck_assert(!t.t[K8S_SIGNAL_IMAGEFS_INODES_FREE].set);
        ck_assert_int_eq(t.t[K8S_SIGNAL_MEMORY_AVAILABLE].quantity.value, 100 * MI);
}
END_TEST

START_TEST(test_parse_flag)
{
        struct k8s_eviction_thresholds t;
        struct cb_error err = {0};
        ck_assert_int_eq(k8s_eviction_parse_hard(" memory.available < 1Gi ,nodefs.inodesFree<99%,"
                                                 "pid.available<1000",
                                                 &t, &err),
                         0);
        /* Giving any threshold replaces every default. */
        ck_assert(!t.t[K8S_SIGNAL_NODEFS_AVAILABLE].set);
        ck_assert(!t.t[K8S_SIGNAL_IMAGEFS_AVAILABLE].set);
        ck_assert(t.t[K8S_SIGNAL_MEMORY_AVAILABLE].set);
        ck_assert_int_eq(t.t[K8S_SIGNAL_MEMORY_AVAILABLE].quantity.value, 1024 * MI);
        ck_assert(t.t[K8S_SIGNAL_NODEFS_INODES_FREE].is_percentage);
        ck_assert(t.t[K8S_SIGNAL_NODEFS_INODES_FREE].percentage > 0.9899f &&
                  t.t[K8S_SIGNAL_NODEFS_INODES_FREE].percentage < 0.9901f);
        ck_assert_int_eq(t.t[K8S_SIGNAL_PID_AVAILABLE].quantity.value, 1000);
        char buf[256];
        k8s_eviction_format(&t, buf, sizeof(buf));
        ck_assert_str_eq(buf, "memory.available<1Gi,nodefs.inodesFree<99%,pid.available<1k");

        /* 0% and 100% unset the signal; the empty flag leaves nothing. */
        ck_assert_int_eq(
            k8s_eviction_parse_hard("memory.available<0%,nodefs.available<100%", &t, &err), 0);
        for (int i = 0; i < K8S_SIGNAL_COUNT; i++)
                ck_assert(!t.t[i].set);
        ck_assert_int_eq(k8s_eviction_parse_hard("", &t, &err), 0);
        for (int i = 0; i < K8S_SIGNAL_COUNT; i++)
                ck_assert(!t.t[i].set);
}
END_TEST

START_TEST(test_parse_errors)
{
        static const struct {
                const char *in, *want;
        } t[] = {
            {"memory.free<1Gi", "unsupported eviction signal \"memory.free\""},
            {"memory.available=1Gi", "malformed pair \"memory.available=1Gi\""},
            {"memory.available<0", "eviction threshold memory.available must be positive: 0"},
            {"memory.available<-1Mi", "must be positive: -1Mi"},
            {"memory.available<12XB", "memory.available: invalid quantity \"12XB\""},
            {"nodefs.available<-5%", "must be >= 0%: -5%"},
            {"nodefs.available<101%", "must be <= 100%: 101%"},
            {"nodefs.available<x%", "invalid percentage \"x%\""},
            {"nodefs.available<%", "invalid percentage \"%\""},
        };
        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
                struct k8s_eviction_thresholds th;
                k8s_eviction_defaults(&th);
                struct cb_error err = {0};
                ck_assert_msg(k8s_eviction_parse_hard(t[i].in, &th, &err) < 0, "%s accepted",
                              t[i].in);
                ck_assert_msg(strstr(err.msg, t[i].want) != NULL, "%s: got \"%s\", want \"%s\"",
                              t[i].in, err.msg, t[i].want);
                ck_assert_msg(strncmp(err.msg, "--eviction-hard", 15) == 0, "%s", err.msg);
                /* A failed parse leaves the thresholds alone. */
                ck_assert(th.t[K8S_SIGNAL_MEMORY_AVAILABLE].set);
        }
        /* The config loader's entry point. */
        struct k8s_eviction_thresholds th;
        k8s_eviction_clear(&th);
        struct cb_error err = {0};
        ck_assert_int_eq(k8s_eviction_threshold_set(&th, "imagefs.inodesFree", "7%", &err), 0);
        ck_assert(th.t[K8S_SIGNAL_IMAGEFS_INODES_FREE].set);
        ck_assert_int_eq(k8s_eviction_threshold_set(&th, "pid.avail", "1", &err), -1);
        ck_assert_str_eq(err.msg, "evictionHard: unsupported eviction signal \"pid.avail\" (want "
                                  "memory.available, nodefs.available, nodefs.inodesFree, "
                                  "imagefs.available, imagefs.inodesFree or pid.available)");
}
END_TEST

/* ---- signals ---- */

START_TEST(test_threshold_values_and_met)
{
        struct k8s_eviction_thresholds t;
        struct cb_error err = {0};
        ck_assert_int_eq(k8s_eviction_parse_hard("memory.available<100Mi,nodefs.available<10%,"
                                                 "nodefs.inodesFree<5%,pid.available<50%",
                                                 &t, &err),
                         0);
        /* int64(capacity * float32(pct)), as the kubelet computes it. */
        ck_assert_int_eq(k8s_threshold_value(&t.t[K8S_SIGNAL_NODEFS_INODES_FREE], 16777216),
                         838860);
        /* float32(10)/100 is a little more than 0.1: not exactly 1Gi. */
        ck_assert_int_eq(k8s_threshold_value(&t.t[K8S_SIGNAL_NODEFS_AVAILABLE], 10240 * MI),
                         1073741840);
        ck_assert_int_eq(k8s_threshold_value(&t.t[K8S_SIGNAL_MEMORY_AVAILABLE], 1), 100 * MI);

        /* Allocatable leaves out memory.available and nodefs.available. */
        int64_t rm, re;
        k8s_eviction_reservation(&t, 8192 * MI, 10240 * MI, &rm, &re);
        ck_assert_int_eq(rm, 100 * MI);
        ck_assert_int_eq(re, 1073741840);
        struct k8s_eviction_thresholds d;
        ck_assert_int_eq(
            k8s_eviction_parse_hard("memory.available<25%,imagefs.available<50%", &d, &err), 0);
        k8s_eviction_reservation(&d, 8192 * MI, 10240 * MI, &rm, &re);
        ck_assert_int_eq(rm, 2048 * MI);
        ck_assert_int_eq(re, 0);

        struct k8s_observations o = {0};
        o.o[K8S_SIGNAL_MEMORY_AVAILABLE] =
            (struct k8s_observation){true, 100 * MI, 8192 * MI}; /* equal: not met */
        o.o[K8S_SIGNAL_NODEFS_AVAILABLE] =
            (struct k8s_observation){true, 1024 * MI - 1, 10240 * MI};
        o.o[K8S_SIGNAL_NODEFS_INODES_FREE] = (struct k8s_observation){true, 900000, 16777216};
        /* imagefs is unset: its observation does not count. */
        o.o[K8S_SIGNAL_IMAGEFS_AVAILABLE] = (struct k8s_observation){true, 0, 10};
        unsigned met = k8s_thresholds_met(&t, &o);
        ck_assert_uint_eq(met, 1u << K8S_SIGNAL_NODEFS_AVAILABLE);
        ck_assert_uint_eq(k8s_pressure_of_signals(met), K8S_PRESSURE_DISK);

        o.o[K8S_SIGNAL_MEMORY_AVAILABLE].available = 100 * MI - 1;
        o.o[K8S_SIGNAL_PID_AVAILABLE] = (struct k8s_observation){true, 100, 32768};
        met = k8s_thresholds_met(&t, &o);
        ck_assert_uint_eq(met, (1u << K8S_SIGNAL_MEMORY_AVAILABLE) |
                                   (1u << K8S_SIGNAL_NODEFS_AVAILABLE) |
                                   (1u << K8S_SIGNAL_PID_AVAILABLE));
        ck_assert_uint_eq(k8s_pressure_of_signals(met),
                          K8S_PRESSURE_MEMORY | K8S_PRESSURE_DISK | K8S_PRESSURE_PID);
        /* Memory is reclaimed first, then in signal order. */
        ck_assert_int_eq(k8s_signal_to_reclaim(met), K8S_SIGNAL_MEMORY_AVAILABLE);
        ck_assert_int_eq(k8s_signal_to_reclaim(met & ~1u), K8S_SIGNAL_NODEFS_AVAILABLE);
        ck_assert_int_eq(k8s_signal_to_reclaim(0), -1);

        /* An absent observation never meets a threshold. */
        o.o[K8S_SIGNAL_MEMORY_AVAILABLE].present = false;
        ck_assert(!(k8s_thresholds_met(&t, &o) & 1u));
        ck_assert_str_eq(k8s_signal_resource(K8S_SIGNAL_IMAGEFS_AVAILABLE), "ephemeral-storage");
        ck_assert_str_eq(k8s_signal_resource(K8S_SIGNAL_IMAGEFS_INODES_FREE), "inodes");
        ck_assert_str_eq(k8s_signal_resource(K8S_SIGNAL_PID_AVAILABLE), "pids");
}
END_TEST

START_TEST(test_transition_period)
{
        struct k8s_pressure_state st = {0};
        const uint64_t period = 300000;
        ck_assert_uint_eq(k8s_pressure_update(&st, 0, 1000, period), 0);
        ck_assert_uint_eq(k8s_pressure_update(&st, K8S_PRESSURE_MEMORY, 2000, period),
                          K8S_PRESSURE_MEMORY);
        /* No longer observed, but within the period: still reported. */
        ck_assert_uint_eq(k8s_pressure_update(&st, K8S_PRESSURE_DISK, 12000, period),
                          K8S_PRESSURE_MEMORY | K8S_PRESSURE_DISK);
        ck_assert_uint_eq(k8s_pressure_update(&st, 0, 2000 + period - 1, period),
                          K8S_PRESSURE_MEMORY | K8S_PRESSURE_DISK);
        ck_assert_uint_eq(k8s_pressure_update(&st, 0, 2000 + period, period), K8S_PRESSURE_DISK);
        ck_assert_uint_eq(k8s_pressure_update(&st, 0, 12000 + period, period), 0);
        /* Seen again: the clock restarts. */
        ck_assert_uint_eq(k8s_pressure_update(&st, K8S_PRESSURE_PID, 900000, period),
                          K8S_PRESSURE_PID);
        ck_assert_uint_eq(k8s_pressure_update(&st, 0, 900000 + period - 1, period),
                          K8S_PRESSURE_PID);
}
END_TEST

START_TEST(test_condition_texts)
{
        struct k8s_node_condition_text t;
        k8s_pressure_condition(K8S_PRESSURE_MEMORY, true, &t);
        ck_assert_str_eq(t.type, "MemoryPressure");
        ck_assert_str_eq(t.status, "True");
        ck_assert_str_eq(t.reason, "KubeletHasInsufficientMemory");
        ck_assert_str_eq(t.message, "kubelet has insufficient memory available");
        ck_assert_str_eq(t.event, "NodeHasInsufficientMemory");
        k8s_pressure_condition(K8S_PRESSURE_MEMORY, false, &t);
        ck_assert_str_eq(t.reason, "KubeletHasSufficientMemory");
        ck_assert_str_eq(t.message, "kubelet has sufficient memory available");
        k8s_pressure_condition(K8S_PRESSURE_DISK, true, &t);
        ck_assert_str_eq(t.type, "DiskPressure");
        ck_assert_str_eq(t.reason, "KubeletHasDiskPressure");
        ck_assert_str_eq(t.message, "kubelet has disk pressure");
        k8s_pressure_condition(K8S_PRESSURE_DISK, false, &t);
        ck_assert_str_eq(t.reason, "KubeletHasNoDiskPressure");
        ck_assert_str_eq(t.event, "NodeHasNoDiskPressure");
        k8s_pressure_condition(K8S_PRESSURE_PID, true, &t);
        ck_assert_str_eq(t.type, "PIDPressure");
        ck_assert_str_eq(t.reason, "KubeletHasInsufficientPID");
        ck_assert_str_eq(t.message, "kubelet has insufficient PID available");
        k8s_pressure_condition(K8S_PRESSURE_PID, false, &t);
        ck_assert_str_eq(t.status, "False");
        ck_assert_str_eq(t.reason, "KubeletHasSufficientPID");
        ck_assert_str_eq(t.message, "kubelet has sufficient PID available");
}
END_TEST

/* ---- admission ---- */

static void expect_admit(const struct k8s_pod *p, unsigned conds, const char *msg)
{
        struct k8s_admit_result r;
        k8s_eviction_admit(p, conds, &r);
        if (msg == NULL) {
                ck_assert_msg(r.admitted, "%s rejected: %s", p->meta.name, r.message);
                return;
        }
        ck_assert_msg(!r.admitted, "%s admitted", p->meta.name);
        ck_assert_str_eq(r.reason, "Evicted");
        ck_assert_str_eq(r.message, msg);
}

START_TEST(test_admission)
{
        struct k8s_pod *be = mkpod("be", "", "", "");
        struct k8s_pod *bu = mkpod("bu", "", "", REQ_MEM("10Mi"));
        struct k8s_pod *gu = mkpod("gu", "", "", GUARANTEED("10Mi"));
        struct k8s_pod *tol = mkpod("tol", "",
                                    "\"tolerations\":[{\"key\":\"node.kubernetes.io/"
                                    "memory-pressure\",\"operator\":\"Exists\",\"effect\":"
                                    "\"NoSchedule\"}]",
                                    "");
        struct k8s_pod *tol_disk = mkpod("tol-disk", "",
                                         "\"tolerations\":[{\"key\":\"node.kubernetes.io/"
                                         "disk-pressure\",\"operator\":\"Exists\"}]",
                                         "");
        struct k8s_pod *stat =
            mkpod("static", "\"annotations\":{\"kubernetes.io/config.source\":\"file\"}", "", "");
        struct k8s_pod *crit = mkpod("crit", "", "\"priority\":2000000000", "");
        struct k8s_pod *high = mkpod("high", "", "\"priority\":1999999999", "");

        expect_admit(be, 0, NULL);
        expect_admit(be, K8S_PRESSURE_MEMORY, "The node had condition: [MemoryPressure]. ");
        expect_admit(bu, K8S_PRESSURE_MEMORY, NULL);
        expect_admit(gu, K8S_PRESSURE_MEMORY, NULL);
        expect_admit(tol, K8S_PRESSURE_MEMORY, NULL);
        expect_admit(tol_disk, K8S_PRESSURE_MEMORY, "The node had condition: [MemoryPressure]. ");
        expect_admit(high, K8S_PRESSURE_MEMORY, "The node had condition: [MemoryPressure]. ");
        /* Any other condition rejects every pod but critical ones. */
        expect_admit(gu, K8S_PRESSURE_DISK, "The node had condition: [DiskPressure]. ");
        expect_admit(tol_disk, K8S_PRESSURE_DISK, "The node had condition: [DiskPressure]. ");
        expect_admit(bu, K8S_PRESSURE_PID, "The node had condition: [PIDPressure]. ");
        expect_admit(tol, K8S_PRESSURE_MEMORY | K8S_PRESSURE_DISK,
                     "The node had condition: [MemoryPressure DiskPressure]. ");
        expect_admit(gu, K8S_PRESSURE_MEMORY | K8S_PRESSURE_DISK | K8S_PRESSURE_PID,
                     "The node had condition: [MemoryPressure DiskPressure PIDPressure]. ");
        expect_admit(stat, K8S_PRESSURE_MEMORY | K8S_PRESSURE_DISK, NULL);
        expect_admit(crit, K8S_PRESSURE_DISK, NULL);
        ck_assert(k8s_pod_is_critical(stat));
        ck_assert(k8s_pod_is_critical(crit));
        ck_assert(!k8s_pod_is_critical(high));

        k8s_pod_free(be);
        k8s_pod_free(bu);
        k8s_pod_free(gu);
        k8s_pod_free(tol);
        k8s_pod_free(tol_disk);
        k8s_pod_free(stat);
        k8s_pod_free(crit);
        k8s_pod_free(high);
}
END_TEST

/* ---- ranking ---- */

static struct k8s_eviction_candidate cand(const struct k8s_pod *p, bool stats, int64_t mem,
                                          int64_t disk, int64_t procs)
{
        return (struct k8s_eviction_candidate){.pod = p,
                                               .has_stats = stats,
                                               .memory_working_set = mem,
                                               .disk_bytes = disk,
                                               .inodes = disk / 4096,
                                               .processes = procs};
}

static void expect_order(const struct k8s_eviction_candidate *c, size_t n, const char *want)
{
        char got[256] = "";
        size_t off = 0;
        for (size_t i = 0; i < n; i++)
                off += (size_t)snprintf(got + off, sizeof(got) - off, "%s%s", i ? " " : "",
                                        c[i].pod->meta.name);
        ck_assert_str_eq(got, want);
}

START_TEST(test_rank_memory)
{
        /* BestEffort using 50Mi (over its 0 request), a Burstable pod below
         * its 100Mi request, a Guaranteed pod exactly at 200Mi, a Burstable
         * pod 30Mi over its request, a low-priority Guaranteed pod below its
         * request, a pod without stats. */
        struct k8s_pod *be = mkpod("be", "", "", "");
        struct k8s_pod *under = mkpod("under", "", "", REQ_MEM("100Mi"));
        struct k8s_pod *gu = mkpod("gu", "", "", GUARANTEED("200Mi"));
        struct k8s_pod *over = mkpod("over", "", "", REQ_MEM("10Mi"));
        struct k8s_pod *low = mkpod("low", "", "\"priority\":-10", GUARANTEED("500Mi"));
        struct k8s_pod *nostats = mkpod("nostats", "", "\"priority\":1000", GUARANTEED("1Gi"));
        struct k8s_pod *bigbe = mkpod("bigbe", "", "\"priority\":100", "");
        struct k8s_eviction_candidate c[] = {
            cand(gu, true, 200 * MI, 0, 1),    cand(under, true, 20 * MI, 0, 1),
            cand(be, true, 20 * MI, 0, 1),     cand(over, true, 40 * MI, 0, 1),
            cand(low, true, 100 * MI, 0, 1),   cand(nostats, false, 0, 0, 0),
            cand(bigbe, true, 900 * MI, 0, 1),
        };
        k8s_eviction_rank(c, 7, K8S_SIGNAL_MEMORY_AVAILABLE);
        /* nostats first; then pods over their requests: priority 0 ones by
         * usage above request (over: 30Mi, be: 20Mi), then bigbe (priority
         * 100); then the rest by priority (low -10), then by usage above
         * request (gu 0 > under -80Mi). */
        expect_order(c, 7, "nostats over be bigbe low gu under");

        k8s_pod_free(be);
        k8s_pod_free(under);
        k8s_pod_free(gu);
        k8s_pod_free(over);
        k8s_pod_free(low);
        k8s_pod_free(nostats);
        k8s_pod_free(bigbe);
}
END_TEST

START_TEST(test_rank_pids_and_disk)
{
        struct k8s_pod *a = mkpod("a", "", "", "");
        struct k8s_pod *b = mkpod("b", "", "", "{\"requests\":{\"ephemeral-storage\":\"1Gi\"}}");
        struct k8s_pod *hi = mkpod("hi", "", "\"priority\":5", "");
        struct k8s_pod *lo = mkpod("lo", "", "\"priority\":-5", "");
        struct k8s_eviction_candidate c[] = {
            cand(hi, true, 0, 8192, 50),
            cand(a, true, 0, 4096, 3),
            cand(b, true, 0, 512 * MI, 7),
            cand(lo, true, 0, 40960, 1),
        };
        /* pids: lower priority first, then more processes. */
        k8s_eviction_rank(c, 4, K8S_SIGNAL_PID_AVAILABLE);
        expect_order(c, 4, "lo b a hi");
        /* nodefs.available: over the ephemeral-storage request first (b is
         * under its 1Gi), then priority, then usage above request. */
        k8s_eviction_rank(c, 4, K8S_SIGNAL_NODEFS_AVAILABLE);
        expect_order(c, 4, "lo a hi b");
        /* inodes have no request: every pod with inodes "exceeds" it, then
         * priority, then inodes minus the ephemeral-storage request. */
        k8s_eviction_rank(c, 4, K8S_SIGNAL_NODEFS_INODES_FREE);
        expect_order(c, 4, "lo a b hi");
        k8s_pod_free(a);
        k8s_pod_free(b);
        k8s_pod_free(hi);
        k8s_pod_free(lo);
}
END_TEST

/* ---- messages ---- */

START_TEST(test_messages)
{
        struct k8s_pod *p = th_pod_json(
            "{\"metadata\":{\"name\":\"m\",\"uid\":\"u\"},\"spec\":{\"initContainers\":[{"
            "\"name\":\"init\",\"image\":\"x\"}],\"containers\":[{\"name\":\"web\",\"image\":\"x\","
            "\"resources\":{\"requests\":{\"memory\":\"5Mi\"}}},{\"name\":\"side\",\"image\":\"x\"}"
            ","
            "{\"name\":\"small\",\"image\":\"x\",\"resources\":{\"requests\":{\"memory\":\"1Gi\"}}}"
            "]}}");
        struct k8s_container_usage u[] = {
            {"web", true, 10 * MI, true, 3 * MI},
            {"side", true, 1500000, true, 0},
            {"small", true, 100 * MI, true, 5 * MI},
            {"gone", true, 100 * MI, true, 0}, /* not in the spec */
            {"init", false, 0, true, 1 * MI},
        };
        struct k8s_eviction_candidate c = cand(p, true, 200 * MI, 9 * MI, 4);
        c.containers = u;
        c.n_containers = 5;
        struct k8s_eviction_thresholds t;
        struct cb_error err = {0};
        ck_assert_int_eq(k8s_eviction_parse_hard("memory.available<100Mi,nodefs.available<10%,"
                                                 "nodefs.inodesFree<5%,pid.available<2k",
                                                 &t, &err),
                         0);
        struct k8s_observation mem = {true, 50 * MI, 8192 * MI};
        char buf[1024];
        k8s_eviction_message(K8S_SIGNAL_MEMORY_AVAILABLE, &t.t[K8S_SIGNAL_MEMORY_AVAILABLE], &mem,
                             &c, buf, sizeof(buf));
        ck_assert_str_eq(buf, "The node was low on resource: memory. Threshold quantity: 100Mi, "
                              "available: 50Mi. Container web was using 10Mi, request is 5Mi, "
                              "has larger consumption of memory. Container side was using "
                              "1500000, request is 0, has larger consumption of memory. ");
        /* A percentage threshold prints as the BinarySI quantity it means
         * (float32 10% of 10Gi is 1073741840 bytes, not 1Gi). */
        struct k8s_observation fs = {true, 1000 * MI, 10240 * MI};
        k8s_eviction_message(K8S_SIGNAL_NODEFS_AVAILABLE, &t.t[K8S_SIGNAL_NODEFS_AVAILABLE], &fs,
                             &c, buf, sizeof(buf));
        ck_assert_str_eq(buf,
                         "The node was low on resource: ephemeral-storage. Threshold "
                         "quantity: 1073741840, available: 1000Mi. Container web was using 3Mi, "
                         "request is 0, has larger consumption of ephemeral-storage. "
                         "Container small was using 5Mi, request is 0, has larger "
                         "consumption of ephemeral-storage. Container init was using 1Mi, "
                         "request is 0, has larger consumption of ephemeral-storage. ");
        /* Counts: the threshold is still BinarySI (a plain number here),
         * the available is DecimalSI; no container part. */
        struct k8s_observation ino = {true, 1000, 16777216};
        k8s_eviction_message(K8S_SIGNAL_NODEFS_INODES_FREE, &t.t[K8S_SIGNAL_NODEFS_INODES_FREE],
                             &ino, &c, buf, sizeof(buf));
        ck_assert_str_eq(buf, "The node was low on resource: inodes. Threshold quantity: 838860, "
                              "available: 1k. ");
        struct k8s_observation pid = {true, 1500, 32768};
        k8s_eviction_message(K8S_SIGNAL_PID_AVAILABLE, &t.t[K8S_SIGNAL_PID_AVAILABLE], &pid, &c,
                             buf, sizeof(buf));
        ck_assert_str_eq(buf, "The node was low on resource: pids. Threshold quantity: 2k, "
                              "available: 1500. ");
        /* Without an observation or stats: just the resource. */
        struct k8s_eviction_candidate none = cand(p, false, 0, 0, 0);
        k8s_eviction_message(K8S_SIGNAL_MEMORY_AVAILABLE, &t.t[K8S_SIGNAL_MEMORY_AVAILABLE], NULL,
                             &none, buf, sizeof(buf));
        ck_assert_str_eq(buf, "The node was low on resource: memory. ");
        /* Truncation is safe and reports the length needed. */
        char small[16];
        int need =
            k8s_eviction_message(K8S_SIGNAL_MEMORY_AVAILABLE, &t.t[K8S_SIGNAL_MEMORY_AVAILABLE],
                                 &mem, &c, small, sizeof(small));
        ck_assert_int_gt(need, 100);
        ck_assert_str_eq(small, "The node was lo");
        k8s_pod_free(p);
}
END_TEST

START_TEST(test_quantity_strings)
{
        static const struct {
                int64_t v;
                const char *bytes, *count;
        } t[] = {
            {0, "0", "0"},
            {1023, "1023", "1023"},
            {1024, "1Ki", "1024"},
            {52428800, "50Mi", "52428800"},
            {1500000, "1500000", "1500k"},
            {3 * 1024 * MI, "3Gi", "3221225472"},
            {838860, "838860", "838860"},
        };
        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
                char b[64], c[64];
                k8s_format_bytes(t[i].v, b, sizeof(b));
                k8s_format_count(t[i].v, c, sizeof(c));
                ck_assert_str_eq(b, t[i].bytes);
                ck_assert_str_eq(c, t[i].count);
        }
}
END_TEST

START_TEST(test_meminfo)
{
        const char *mi = "MemTotal:       24683620 kB\nMemFree:        23997784 kB\n"
                         "Inactive(file):   179666 kB\nHugePages_Total:       0\n";
        uint64_t v = 0;
        struct cb_error err = {0};
        ck_assert_int_eq(cg_parse_meminfo(mi, "MemTotal", &v, &err), 1);
        ck_assert_uint_eq(v, 24683620ULL * 1024);
        ck_assert_int_eq(cg_parse_meminfo(mi, "Inactive(file)", &v, &err), 1);
        ck_assert_uint_eq(v, 179666ULL * 1024);
        ck_assert_int_eq(cg_parse_meminfo(mi, "HugePages_Total", &v, &err), 1);
        ck_assert_uint_eq(v, 0);
        ck_assert_int_eq(cg_parse_meminfo(mi, "Mem", &v, &err), 0);
        ck_assert_int_eq(cg_parse_meminfo(mi, "Cached", &v, &err), 0);
        ck_assert_int_eq(cg_parse_meminfo("MemFree: lots\n", "MemFree", &v, &err), -1);
}
END_TEST

/* ---- live measurements on this machine ---- */

START_TEST(test_measure_live)
{
        FILE *f = fopen("/proc/meminfo", "re");
        ck_assert(f != NULL);
        char buf[4096];
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = '\0';
        uint64_t total = 0;
        struct cb_error err = {0}, warn = {0};
        ck_assert_int_eq(cg_parse_meminfo(buf, "MemTotal", &total, &err), 1);
        struct k8s_observations o;
        ck_assert_msg(ag_pressure_measure("/", (int64_t)total, &o, &warn, &err) == 0, "%s",
                      err.msg);
        ck_assert_msg(warn.msg[0] == '\0', "a signal was not measured: %s", warn.msg);
        const struct k8s_observation *m = &o.o[K8S_SIGNAL_MEMORY_AVAILABLE];
        ck_assert(m->present);
        ck_assert_int_eq(m->capacity, (int64_t)total);
        ck_assert(m->available > 0 && m->available < m->capacity);
        const struct k8s_observation *fs = &o.o[K8S_SIGNAL_NODEFS_AVAILABLE];
        ck_assert(fs->present && fs->available > 0 && fs->available <= fs->capacity);
        ck_assert(o.o[K8S_SIGNAL_IMAGEFS_AVAILABLE].present);
        const struct k8s_observation *pid = &o.o[K8S_SIGNAL_PID_AVAILABLE];
        ck_assert(pid->present && pid->available > 0 && pid->available < pid->capacity);
        /* A root dir that does not exist: memory and pids still measured. */
        ck_assert_int_eq(ag_pressure_measure("/nonexistent/x", (int64_t)total, &o, &warn, &err), 0);
        ck_assert(!o.o[K8S_SIGNAL_NODEFS_AVAILABLE].present);
        ck_assert(strstr(warn.msg, "nodefs.available") != NULL);
        ck_assert(o.o[K8S_SIGNAL_MEMORY_AVAILABLE].present);
}
END_TEST

START_TEST(test_disk_usage)
{
        char dir[] = "/tmp/cubelet-du.XXXXXX";
        ck_assert(mkdtemp(dir) != NULL);
        char path[256];
        snprintf(path, sizeof(path), "%s/sub", dir);
        ck_assert_int_eq(mkdir(path, 0700), 0);
        snprintf(path, sizeof(path), "%s/sub/f", dir);
        FILE *f = fopen(path, "we");
        ck_assert(f != NULL);
        static char block[65536];
        memset(block, 'x', sizeof(block));
        for (int i = 0; i < 16; i++)
                ck_assert_int_eq(fwrite(block, 1, sizeof(block), f), sizeof(block));
        ck_assert_int_eq(fclose(f), 0);
        snprintf(path, sizeof(path), "%s/link", dir);
        ck_assert_int_eq(symlink("/usr", path), 0);
        int64_t bytes = 0, inodes = 0;
        ag_disk_usage(dir, &bytes, &inodes);
        /* dir, sub, f, link; 1 MiB of data (not following the link). */
        ck_assert_int_eq(inodes, 4);
        ck_assert_msg(bytes >= 1048576 && bytes < 1048576 + 65536, "%lld", (long long)bytes);
        int64_t b2 = 0, i2 = 0;
        ag_disk_usage("/nonexistent/x", &b2, &i2);
        ck_assert_int_eq(b2 + i2, 0);
        static const char *const rm[] = {"link", "sub/f"};
        for (size_t i = 0; i < 2; i++) {
                snprintf(path, sizeof(path), "%s/%s", dir, rm[i]);
                ck_assert_int_eq(unlink(path), 0);
        }
        snprintf(path, sizeof(path), "%s/sub", dir);
        ck_assert_int_eq(rmdir(path), 0);
        ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("eviction");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_defaults);
        tcase_add_test(tc, test_parse_flag);
        tcase_add_test(tc, test_parse_errors);
        tcase_add_test(tc, test_threshold_values_and_met);
        tcase_add_test(tc, test_transition_period);
        tcase_add_test(tc, test_condition_texts);
        tcase_add_test(tc, test_admission);
        tcase_add_test(tc, test_rank_memory);
        tcase_add_test(tc, test_rank_pids_and_disk);
        tcase_add_test(tc, test_messages);
        tcase_add_test(tc, test_quantity_strings);
        tcase_add_test(tc, test_meminfo);
        tcase_add_test(tc, test_measure_live);
        tcase_add_test(tc, test_disk_usage);
        suite_add_tcase(s, tc);
        return th_run(s) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
