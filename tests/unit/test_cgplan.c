/* SPDX-License-Identifier: Apache-2.0 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroups/plan.h"

#include "helpers.h"

START_TEST(test_shares_table)
{
        static const struct {
                int64_t milli;
                uint64_t shares;
        } t[] = {
            {0, 2},
            {-5, 2},
            {1, 2},
            {2, 2},
            {3, 3},
            {100, 102},
            {250, 256},
            {500, 512},
            {1000, 1024},
            {2000, 2048},
            {256000, 262144},
            {300000, 262144},
            {INT64_MAX, 262144},
        };
        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
                ck_assert_msg(cg_milli_cpu_to_shares(t[i].milli) == t[i].shares,
                              "shares(%lld) = %llu, want %llu", (long long)t[i].milli,
                              (unsigned long long)cg_milli_cpu_to_shares(t[i].milli),
                              (unsigned long long)t[i].shares);
}
END_TEST

START_TEST(test_quota_table)
{
        static const struct {
                int64_t milli;
                uint64_t period;
                int64_t quota;
        } t[] = {
            {0, 100000, 0},         {-1, 100000, 0},     {500, 100000, 50000},
            {2000, 100000, 200000}, {5, 100000, 1000},   {10, 100000, 1000},
            {11, 100000, 1100},     {250, 50000, 12500}, {INT64_MAX, 100000, INT64_MAX},
        };
        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
                ck_assert_msg(cg_milli_cpu_to_quota(t[i].milli, t[i].period) == t[i].quota,
                              "quota(%lld, %llu) = %lld, want %lld", (long long)t[i].milli,
                              (unsigned long long)t[i].period,
                              (long long)cg_milli_cpu_to_quota(t[i].milli, t[i].period),
                              (long long)t[i].quota);
}
END_TEST

START_TEST(test_weight_table)
{
        /* The reference's sample table (new formula), plus edges. */
        static const struct {
                uint64_t shares, weight;
        } t[] = {
            {0, 0},          {1, 1},           {2, 1},       {3, 2},         {10, 4},
            {102, 17},       {256, 35},        {512, 59},    {1000, 99},     {1024, 100},
            {2048, 174},     {4096, 303},      {16384, 942}, {200416, 7914}, {262143, 10000},
            {262144, 10000}, {1000000, 10000},
        };
        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
                ck_assert_msg(cg_shares_to_weight(t[i].shares) == t[i].weight,
                              "weight(%llu) = %llu, want %llu", (unsigned long long)t[i].shares,
                              (unsigned long long)cg_shares_to_weight(t[i].shares),
                              (unsigned long long)t[i].weight);
}
END_TEST

START_TEST(test_weight_all_inputs)
{
        /* Sum and FNV-1a over every input 0..262144, computed with the
         * runtimes' double-precision libm formula when the implementation was
         * written: pins the libm-free evaluation to it for all inputs. */
        uint64_t sum = 0, h = 1469598103934665603ULL, prev = 0;
        for (uint64_t s = 0; s <= 262144; s++) {
                uint64_t w = cg_shares_to_weight(s);
                ck_assert_msg(w >= prev, "weight not monotonic at %llu", (unsigned long long)s);
                prev = w;
                sum += w;
                h = (h ^ w) * 1099511628211ULL;
        }
        ck_assert_uint_eq(sum, 1405378461ULL);
        ck_assert_uint_eq(h, 8981113221625381768ULL);
}
END_TEST

START_TEST(test_tier_dir_and_pod_path)
{
        char buf[256];
        ck_assert_str_eq(cg_tier_dir(CG_TIER_GUARANTEED), "");
        ck_assert_str_eq(cg_tier_dir(CG_TIER_BURSTABLE), "burstable");
        ck_assert_str_eq(cg_tier_dir(CG_TIER_BESTEFFORT), "besteffort");

        static const struct {
                const char *root;
                enum cg_tier tier;
                const char *want;
        } t[] = {
            {"", CG_TIER_GUARANTEED, "kubepods/podabc-1"},
            {"", CG_TIER_BURSTABLE, "kubepods/burstable/podabc-1"},
            {"", CG_TIER_BESTEFFORT, "kubepods/besteffort/podabc-1"},
            {NULL, CG_TIER_BURSTABLE, "kubepods/burstable/podabc-1"},
            {"/", CG_TIER_BURSTABLE, "/kubepods/burstable/podabc-1"},
            {"/custom", CG_TIER_GUARANTEED, "/custom/kubepods/podabc-1"},
            {"/custom//", CG_TIER_BESTEFFORT, "/custom/kubepods/besteffort/podabc-1"},
        };
        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
                int n = cg_pod_path(t[i].root, t[i].tier, "abc-1", buf, sizeof(buf));
                ck_assert_int_eq(n, (int)strlen(t[i].want));
                ck_assert_str_eq(buf, t[i].want);
        }
        /* Truncation reports the needed length. */
        char small[8];
        int n = cg_pod_path("", CG_TIER_BURSTABLE, "abc-1", small, sizeof(small));
        ck_assert_int_eq(n, (int)strlen("kubepods/burstable/podabc-1"));
        ck_assert_str_eq(small, "kubepod");
        /* A uid that is not a single path component is refused. */
        ck_assert_int_eq(cg_pod_path("", CG_TIER_BURSTABLE, "../x", buf, sizeof(buf)), -1);
        ck_assert_int_eq(cg_pod_path("", CG_TIER_BURSTABLE, "", buf, sizeof(buf)), -1);
        ck_assert_int_eq(cg_pod_path("", CG_TIER_BURSTABLE, NULL, buf, sizeof(buf)), -1);
}
END_TEST

static void expect_files(const struct cg_limits *l, enum cg_version v, const char *want)
{
        struct cg_file f[8];
        size_t n = cg_render_files(l, v, f, 8);
        char got[1024] = "";
        for (size_t i = 0; i < n; i++) {
                size_t len = strlen(got);
                snprintf(got + len, sizeof(got) - len, "%s%s=%s", i ? ";" : "", f[i].name,
                         f[i].value);
        }
        ck_assert_str_eq(got, want);
}

START_TEST(test_render_files)
{
        struct cg_limits full = {.cpu_shares = 512,
                                 .cpu_quota_us = 50000,
                                 .cpu_period_us = 100000,
                                 .memory_limit = 134217728,
                                 .pids_limit = 1024};
        expect_files(&full, CG_V1,
                     "cpu.shares=512;cpu.cfs_period_us=100000;cpu.cfs_quota_us=50000;"
                     "memory.limit_in_bytes=134217728;pids.max=1024");
        expect_files(&full, CG_V2,
                     "cpu.weight=59;cpu.max=50000 100000;memory.max=134217728;"
                     "pids.max=1024");

        struct cg_limits unlimited = {
            .cpu_shares = 1024, .cpu_quota_us = -1, .cpu_period_us = 100000, .pids_limit = -1};
        expect_files(&unlimited, CG_V1,
                     "cpu.shares=1024;cpu.cfs_period_us=100000;cpu.cfs_quota_us=-1;pids.max=max");
        expect_files(&unlimited, CG_V2, "cpu.weight=100;cpu.max=max 100000;pids.max=max");

        struct cg_limits besteffort = {.cpu_shares = 2};
        expect_files(&besteffort, CG_V1, "cpu.shares=2");
        expect_files(&besteffort, CG_V2, "cpu.weight=1");

        struct cg_limits none = {0};
        expect_files(&none, CG_V1, "");
        expect_files(&none, CG_V2, "");

        /* A quota without a period renders the default period on v2. */
        struct cg_limits noperiod = {.cpu_quota_us = 20000};
        expect_files(&noperiod, CG_V2, "cpu.max=20000 100000");

        /* max bounds the output. */
        struct cg_file f[2];
        ck_assert_uint_eq(cg_render_files(&full, CG_V2, f, 2), 2);
        ck_assert_str_eq(f[1].name, "cpu.max");
        ck_assert_uint_eq(cg_render_files(&full, CG_V2, f, 0), 0);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("cgplan");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_shares_table);
        tcase_add_test(tc, test_quota_table);
        tcase_add_test(tc, test_weight_table);
        tcase_add_test(tc, test_weight_all_inputs);
        tcase_add_test(tc, test_tier_dir_and_pod_path);
        tcase_add_test(tc, test_render_files);
        suite_add_tcase(s, tc);
        return th_run(s) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
