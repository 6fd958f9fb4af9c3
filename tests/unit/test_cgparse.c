/* SPDX-License-Identifier: Apache-2.0 */
/* The pure cgroup parsers and mode detection; needs neither root nor a
 * cgroup of its own. */
#include <check.h>
#include <errno.h>
#include <linux/magic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>

#include "cgroups/cgroup.h"

#include "helpers.h"

static const struct {
        const char *buf, *key;
        int rc;
        uint64_t want;
} keyed_cases[] = {
    {"usage_usec 123\nuser_usec 100\nsystem_usec 23\n", "usage_usec", 1, 123},
    {"usage_usec 123\nuser_usec 100\nsystem_usec 23\n", "system_usec", 1, 23},
    /* "oom" must not match "oom_kill" or "oom_group_kill" */
    {"low 0\nhigh 0\nmax 7\noom_kill 3\noom_group_kill 0\n", "oom", 0, 0},
    {"low 0\nhigh 0\nmax 7\noom 2\noom_kill 3\noom_group_kill 0\n", "oom", 1, 2},
    {"low 0\nhigh 0\nmax 7\noom 2\noom_kill 3\noom_group_kill 0\n", "oom_kill", 1, 3},
    /* memory.stat: "inactive_file" must not match "total_inactive_file" */
    {"total_inactive_file 4096\ninactive_file 1024\n", "inactive_file", 1, 1024},
    {"total_inactive_file 4096\ninactive_file 1024\n", "total_inactive_file", 1, 4096},
    {"a 18446744073709551615", "a", 1, UINT64_MAX}, /* no final newline */
    {"a 18446744073709551616\n", "a", -1, 0},       /* overflow */
    {"a -1\n", "a", -1, 0},
    {"a \n", "a", -1, 0},
    {"a 1 2\n", "a", -1, 0},
    {"", "a", 0, 0},
    {"\n\n", "a", 0, 0},
    {"ab 1\n", "a", 0, 0},
};

START_TEST(test_keyed)
{
        struct cb_error err = {0};
        uint64_t v = 42;
        int rc = cg_parse_keyed(keyed_cases[_i].buf, keyed_cases[_i].key, &v, &err);
        ck_assert_int_eq(rc, keyed_cases[_i].rc);
        if (rc == 1)
                ck_assert_uint_eq(v, keyed_cases[_i].want);
        if (rc < 0)
                ck_assert_ptr_nonnull(strstr(err.msg, keyed_cases[_i].key));
}
END_TEST

static const struct {
        const char *buf;
        int rc;
        uint64_t want;
} u64_cases[] = {
    {"67108864\n", 0, 67108864},
    {"0\n", 0, 0},
    {"max\n", 0, UINT64_MAX},
    {"max", 0, UINT64_MAX},
    {"maxx\n", -1, 0},
    {"\n", -1, 0},
    {"", -1, 0},
    {"12a\n", -1, 0},
    {" 12\n", -1, 0},
};

START_TEST(test_u64)
{
        struct cb_error err = {0};
        uint64_t v = 42;
        int rc = cg_parse_u64(u64_cases[_i].buf, &v, &err);
        ck_assert_int_eq(rc, u64_cases[_i].rc);
        if (rc == 0)
                ck_assert_uint_eq(v, u64_cases[_i].want);
        else
                ck_assert_int_eq(err.code, EINVAL);
}
END_TEST

static const char proc_v1[] = "12:pids:/kubepods/pod1\n"
                              "11:cpu,cpuacct:/kubepods/pod1/c1\n"
                              "4:memory:/kubepods/pod1/c1\n"
                              "1:name=systemd:/system.slice/x.service\n"
                              "0::/system.slice/x.service\n";
/* conmon #650: the 0:: line is not always the first one */
static const char proc_hybrid_first[] = "0::/user.slice\n"
                                        "3:memory:/a\n";

static const struct {
        const char *buf, *controller;
        int rc;
        const char *want;
} proc_cases[] = {
    {"0::/kubepods/burstable/pod1/c1\n", NULL, 0, "/kubepods/burstable/pod1/c1"},
    {"0::/\n", NULL, 0, "/"},
    {proc_v1, NULL, 0, "/system.slice/x.service"},
    {proc_v1, "cpu", 0, "/kubepods/pod1/c1"},
    {proc_v1, "cpuacct", 0, "/kubepods/pod1/c1"},
    {proc_v1, "pids", 0, "/kubepods/pod1"},
    {proc_v1, "name=systemd", 0, "/system.slice/x.service"},
    {proc_v1, "cpuset", -1, NULL},
    {proc_v1, "cpu,cpuacct", -1, NULL}, /* a list is not a controller */
    {proc_hybrid_first, "memory", 0, "/a"},
    {"4:memory:/a:b\n", "memory", 0, "/a:b"}, /* ':' inside the path */
    {"10:cpu:/x\n", NULL, -1, NULL},
    {"", NULL, -1, NULL},
    {"garbage\n", "memory", -1, NULL},
};

START_TEST(test_proc_cgroup)
{
        struct cb_error err = {0};
        char path[256];
        int rc = cg_parse_proc_cgroup(proc_cases[_i].buf, proc_cases[_i].controller, path,
                                      sizeof(path), &err);
        if (proc_cases[_i].rc < 0) {
                ck_assert_int_eq(rc, -1);
                ck_assert_int_eq(err.code, ENOENT);
                return;
        }
        ck_assert_int_eq(rc, (int)strlen(proc_cases[_i].want));
        ck_assert_str_eq(path, proc_cases[_i].want);
}
END_TEST

START_TEST(test_proc_cgroup_too_small)
{
        struct cb_error err = {0};
        char path[4];
        ck_assert_int_eq(cg_parse_proc_cgroup("0::/abcd\n", NULL, path, sizeof(path), &err), -1);
        ck_assert_int_eq(err.code, ENAMETOOLONG);
        /* exactly fitting ("/abc" + NUL) */
        char fit[5];
        ck_assert_int_eq(cg_parse_proc_cgroup("0::/abc\n", NULL, fit, sizeof(fit), &err), 4);
        ck_assert_str_eq(fit, "/abc");
}
END_TEST

START_TEST(test_pids)
{
        struct cb_error err = {0};
        pid_t *pids = NULL;
        size_t n = 0;
        ck_assert_int_eq(cg_parse_pids("", &pids, &n, &err), 0);
        ck_assert_uint_eq(n, 0);
        ck_assert_int_eq(cg_parse_pids("12\n34\n", &pids, &n, &err), 0);
        /* appends, and grows past the first capacity */
        char many[512] = "";
        for (int i = 100; i < 140; i++)
                snprintf(many + strlen(many), sizeof(many) - strlen(many), "%d\n", i);
        ck_assert_int_eq(cg_parse_pids(many, &pids, &n, &err), 0);
        ck_assert_uint_eq(n, 42);
        ck_assert_int_eq(pids[0], 12);
        ck_assert_int_eq(pids[1], 34);
        for (int i = 0; i < 40; i++)
                ck_assert_int_eq(pids[2 + i], 100 + i);
        ck_assert_int_eq(cg_parse_pids("5\nx\n", &pids, &n, &err), -1);
        ck_assert_int_eq(err.code, EINVAL);
        ck_assert_int_eq(cg_parse_pids("0\n", &pids, &n, &err), -1);
        ck_assert_int_eq(cg_parse_pids("99999999999\n", &pids, &n, &err), -1);
        free(pids);
}
END_TEST

START_TEST(test_oom_v1)
{
        struct cb_error err = {0};
        struct cg_oom o = {.limit_hits = 9};
        ck_assert_int_eq(
            cg_parse_oom("oom_kill_disable 0\nunder_oom 1\noom_kill 4\n", CG_V1, &o, &err), 0);
        ck_assert_uint_eq(o.oom_kill, 4);
        ck_assert(o.under_oom);
        ck_assert_uint_eq(o.oom, 0);
        ck_assert_uint_eq(o.limit_hits, 9); /* from memory.failcnt, left alone */
        /* before Linux 4.13 there is no oom_kill line */
        ck_assert_int_eq(cg_parse_oom("oom_kill_disable 0\nunder_oom 0\n", CG_V1, &o, &err), 0);
        ck_assert_uint_eq(o.oom_kill, 0);
        ck_assert(!o.under_oom);
        ck_assert_int_eq(cg_parse_oom("oom_kill_disable 0\n", CG_V1, &o, &err), -1);
        ck_assert_ptr_nonnull(strstr(err.msg, "under_oom"));
}
END_TEST

START_TEST(test_oom_v2)
{
        struct cb_error err = {0};
        struct cg_oom o = {.under_oom = true};
        /* oom_kill without oom: a kill can be counted with no "oom" event */
        ck_assert_int_eq(cg_parse_oom("low 0\nhigh 0\nmax 12\noom 0\noom_kill 1\n"
                                      "oom_group_kill 0\n",
                                      CG_V2, &o, &err),
                         0);
        ck_assert_uint_eq(o.oom_kill, 1);
        ck_assert_uint_eq(o.oom, 0);
        ck_assert_uint_eq(o.limit_hits, 12);
        ck_assert(!o.under_oom);
        ck_assert_int_eq(cg_parse_oom("low 0\nhigh 0\nmax 1\noom 1\n", CG_V2, &o, &err), -1);
        ck_assert_ptr_nonnull(strstr(err.msg, "oom_kill"));
        ck_assert_int_eq(cg_parse_oom("max 1\noom x\noom_kill 1\n", CG_V2, &o, &err), -1);
        ck_assert_ptr_nonnull(strstr(err.msg, "memory.events"));
}
END_TEST

static int fs_type(const char *path, long *type)
{
        struct statfs st;
        if (statfs(path, &st) < 0)
                return -1;
        *type = (long)st.f_type;
        return 0;
}

START_TEST(test_mode_names)
{
        ck_assert_str_eq(cg_mode_name(CG_MODE_LEGACY), "legacy");
        ck_assert_str_eq(cg_mode_name(CG_MODE_HYBRID), "hybrid");
        ck_assert_str_eq(cg_mode_name(CG_MODE_UNIFIED), "unified");
        ck_assert_int_eq(cg_mode_version(CG_MODE_LEGACY), CG_V1);
        ck_assert_int_eq(cg_mode_version(CG_MODE_HYBRID), CG_V1);
        ck_assert_int_eq(cg_mode_version(CG_MODE_UNIFIED), CG_V2);
}
END_TEST

/* Detection against what statfs says about the mounts this machine has:
 * every branch whose premise holds here is checked. */
START_TEST(test_detect_mode)
{
        struct cb_error err = {0};
        enum cg_mode m;
        long t, tu;
        int checked = 0;
        if (fs_type("/sys/fs/cgroup", &t) == 0) {
                ck_assert_int_eq(cg_detect_mode(&m, &err), 0);
                if (t == CGROUP2_SUPER_MAGIC)
                        ck_assert_int_eq(m, CG_MODE_UNIFIED);
                else if (fs_type("/sys/fs/cgroup/unified", &tu) == 0 && tu == CGROUP2_SUPER_MAGIC)
                        ck_assert_int_eq(m, CG_MODE_HYBRID);
                else
                        ck_assert_int_eq(m, CG_MODE_LEGACY);
                checked++;
        }
        if (fs_type("/sys/fs/cgroup/unified", &tu) == 0 && tu == CGROUP2_SUPER_MAGIC) {
                ck_assert_int_eq(cg_detect_mode_at("/sys/fs/cgroup/unified", &m, &err), 0);
                ck_assert_int_eq(m, CG_MODE_UNIFIED);
                checked++;
        }
        /* a tmpfs without a unified mount: legacy */
        if (fs_type("/dev/shm", &t) == 0 && t == TMPFS_MAGIC) {
                ck_assert_int_eq(cg_detect_mode_at("/dev/shm", &m, &err), 0);
                ck_assert_int_eq(m, CG_MODE_LEGACY);
                checked++;
        }
        /* procfs is no cgroup mount */
        ck_assert_int_eq(cg_detect_mode_at("/proc", &m, &err), -1);
        ck_assert_ptr_nonnull(strstr(err.msg, "/proc"));
        ck_assert_int_eq(cg_detect_mode_at("/nonexistent-cubelet", &m, &err), -1);
        ck_assert_int_eq(err.code, ENOENT);
        ck_assert_int_ge(checked, 1);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("cgparse");
        TCase *tc = tcase_create("parse");
        tcase_add_loop_test(tc, test_keyed, 0, (int)(sizeof(keyed_cases) / sizeof(keyed_cases[0])));
        tcase_add_loop_test(tc, test_u64, 0, (int)(sizeof(u64_cases) / sizeof(u64_cases[0])));
        tcase_add_loop_test(tc, test_proc_cgroup, 0,
                            (int)(sizeof(proc_cases) / sizeof(proc_cases[0])));
        tcase_add_test(tc, test_proc_cgroup_too_small);
        tcase_add_test(tc, test_pids);
        tcase_add_test(tc, test_oom_v1);
        tcase_add_test(tc, test_oom_v2);
        suite_add_tcase(s, tc);
        TCase *tm = tcase_create("mode");
        tcase_add_test(tm, test_mode_names);
        tcase_add_test(tm, test_detect_mode);
        suite_add_tcase(s, tm);
        return th_run(s) == 0 ? 0 : 1;
}
