/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Container log rotation (agent/pods/logrotate.c) as the kubelet's
 * container log manager does it, no root needed: nothing below the max
 * size; <n>.log.<YYYYMMDD-hhmmss> (local time); the older rotated files
 * gzip-compressed, the oldest removed so MaxFiles files are left; leftovers
 * of a failed round (.tmp, a file with its .gz) removed; a failed reopen
 * renames the file back; a missing log is reopened; a symlink is not
 * followed. The reopen is a fake standing in for the monitor (it makes the
 * new file, as the monitor's SIGHUP handler does).
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "agent/pods/logrotate.h"
#include "lib/cleanup.h"
#include "lib/file.h"
#include "runtime/container.h"

#include "helpers.h"

#define T0 1704164645 /* 2024-01-02T03:04:05Z */

static char dir[64], log_path[96];

struct fake {
        int calls;
        bool fail;
};

static int fake_reopen(void *ud, struct cb_error *err)
{
        struct fake *f = ud;
        f->calls++;
        if (f->fail)
                return cb_error_set(err, ETIMEDOUT, "the monitor did not reopen");
        int fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
        ck_assert_int_ge(fd, 0);
        close(fd);
        return 0;
}

static void setup(void)
{
        setenv("TZ", "UTC", 1);
        tzset();
        snprintf(dir, sizeof(dir), "/tmp/cubelet-logrotate-%d", (int)getpid());
        ck_assert_int_eq(th_sh("rm -rf %s && mkdir -p %s", dir, dir), 0);
        snprintf(log_path, sizeof(log_path), "%s/0.log", dir);
}

static void teardown(void)
{
        th_sh("rm -rf %s", dir);
}

static void put(const char *name, const char *text)
{
        char p[160];
        snprintf(p, sizeof(p), "%s/%s", dir, name);
        FILE *f = fopen(p, "we");
        ck_assert_ptr_nonnull(f);
        fputs(text, f);
        fclose(f);
}

static bool exists(const char *name)
{
        char p[160];
        struct stat st;
        snprintf(p, sizeof(p), "%s/%s", dir, name);
        return lstat(p, &st) == 0;
}

static int count_files(void)
{
        DIR *d = opendir(dir);
        ck_assert_ptr_nonnull(d);
        int n = 0;
        struct dirent *de;
        while ((de = readdir(d)) != NULL)
                n += de->d_name[0] != '.';
        closedir(d);
        return n;
}

static const struct ag_logrotate_policy policy = {
    .max_size = 16, .max_files = 3, .max_workers = 1, .interval_ms = 10000};

static void rotate(int64_t now, struct fake *f, bool want_rotated)
{
        bool rotated = !want_rotated;
        struct cb_error err = {0};
        int r = ag_logrotate_file(log_path, &policy, now, fake_reopen, f, &rotated, &err);
        ck_assert_msg(r == 0, "%s", err.msg);
        ck_assert(rotated == want_rotated);
}

START_TEST(test_below_max_size)
{
        struct fake f = {0};
        put("0.log", "short\n"); /* 6 < 16 bytes */
        rotate(T0, &f, false);
        ck_assert_int_eq(f.calls, 0);
        ck_assert_int_eq(count_files(), 1);
}
END_TEST

START_TEST(test_rotation_sequence)
{
        struct fake f = {0};
        put("0.log", "first file, 20 bytes\n");
        rotate(T0, &f, true);
        ck_assert_int_eq(f.calls, 1);
        ck_assert(exists("0.log.20240102-030405")); /* the kubelet's 20060102-150405 */
        ck_assert(exists("0.log"));
        /* the just-rotated file stays uncompressed: the writer may finish a
         * record there */
        _cleanup_free_ char *data = NULL;
        size_t len;
        char p[160];
        snprintf(p, sizeof(p), "%s/0.log.20240102-030405", dir);
        ck_assert_int_eq(cb_read_file(p, 1 << 20, &data, &len, NULL), 0);
        ck_assert_str_eq(data, "first file, 20 bytes\n");

        put("0.log", "second file 20 bytes\n");
        rotate(T0 + 10, &f, true);
        ck_assert(exists("0.log.20240102-030405.gz"));
        ck_assert(!exists("0.log.20240102-030405"));
        ck_assert(exists("0.log.20240102-030415"));
        ck_assert_int_eq(count_files(), 3);
        /* the .gz holds the first file */
        snprintf(p, sizeof(p), "%s/0.log.20240102-030405.gz", dir);
        gzFile z = gzopen(p, "rbe");
        ck_assert_ptr_nonnull(z);
        char buf[64] = {0};
        ck_assert_int_eq(gzread(z, buf, sizeof(buf) - 1), 21);
        gzclose(z);
        ck_assert_str_eq(buf, "first file, 20 bytes\n");

        /* MaxFiles 3: the oldest goes, the next is compressed */
        put("0.log", "third file, 20 bytes\n");
        rotate(T0 + 20, &f, true);
        ck_assert(!exists("0.log.20240102-030405.gz"));
        ck_assert(exists("0.log.20240102-030415.gz"));
        ck_assert(exists("0.log.20240102-030425"));
        ck_assert(exists("0.log"));
        ck_assert_int_eq(count_files(), 3);
        ck_assert_int_eq(f.calls, 3);
}
END_TEST

START_TEST(test_leftovers)
{
        struct fake f = {0};
        put("0.log", "a log of more than sixteen bytes\n");
        put("0.log.20240101-000000", "compressed already\n");
        put("0.log.20240101-000000.gz", "x");
        put("0.log.20240101-000001.tmp", "half-made");
        put("1.log.20240101-000000", "another instance's");
        rotate(T0, &f, true);
        ck_assert(!exists("0.log.20240101-000000"));
        ck_assert(!exists("0.log.20240101-000001.tmp"));
        ck_assert(exists("0.log.20240101-000000.gz"));
        ck_assert(exists("1.log.20240101-000000")); /* not this log's */
        ck_assert(exists("0.log.20240102-030405"));
}
END_TEST

START_TEST(test_reopen_fails)
{
        struct fake f = {.fail = true};
        put("0.log", "a log of more than sixteen bytes\n");
        bool rotated = true;
        struct cb_error err = {0};
        ck_assert_int_lt(ag_logrotate_file(log_path, &policy, T0, fake_reopen, &f, &rotated, &err),
                         0);
        ck_assert(!rotated);
        ck_assert_msg(strstr(err.msg, "failed to reopen container log") != NULL, "%s", err.msg);
        /* renamed back: the next round tries again */
        ck_assert(exists("0.log"));
        ck_assert(!exists("0.log.20240102-030405"));
}
END_TEST

START_TEST(test_missing_log_reopened)
{
        struct fake f = {0};
        rotate(T0, &f, false);
        ck_assert_int_eq(f.calls, 1);
        ck_assert(exists("0.log"));
}
END_TEST

START_TEST(test_symlink_refused)
{
        struct fake f = {0};
        char p[160];
        snprintf(p, sizeof(p), "%s/0.log", dir);
        ck_assert_int_eq(symlink("/etc/passwd", p), 0);
        bool rotated;
        struct cb_error err = {0};
        ck_assert_int_lt(ag_logrotate_file(log_path, &policy, T0, fake_reopen, &f, &rotated, &err),
                         0);
        ck_assert_msg(strstr(err.msg, "not a regular file") != NULL, "%s", err.msg);
        ck_assert_int_eq(f.calls, 0);
}
END_TEST

START_TEST(test_disabled)
{
        struct fake f = {0};
        struct ag_logrotate_policy off = policy;
        off.max_size = -1;
        put("0.log", "a log of more than sixteen bytes\n");
        bool rotated;
        struct cb_error err = {0};
        ck_assert_int_eq(ag_logrotate_file(log_path, &off, T0, fake_reopen, &f, &rotated, &err), 0);
        ck_assert(!rotated);
        ck_assert_int_eq(count_files(), 1);
        /* and the manager refuses MaxFiles 1, as the kubelet does */
        struct ag_logrotate *m = NULL;
        off.max_files = 1;
        ck_assert_int_lt(ag_logrotate_new(NULL, "/tmp", &off, &m, &err), 0);
        ck_assert_str_eq(err.msg, "invalid MaxFiles 1, must be > 1");
}
END_TEST

START_TEST(test_prune_instances)
{
        put("0.log", "x");
        put("0.log.20240101-000000.gz", "x");
        put("1.log", "x");
        put("1.log.20240101-000000", "x");
        put("2.log", "x"); /* the previous instance: kept for --previous */
        put("2.log.20240101-000000.gz", "x");
        put("3.log", "x"); /* running */
        put("notes.txt", "x");
        put("10x.log", "x");
        char p3[160];
        snprintf(p3, sizeof(p3), "%s/3.log", dir);
        int removed = -1;
        struct cb_error err = {0};
        ck_assert_msg(ag_logrotate_prune_instances(p3, &removed, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(removed, 4);
        ck_assert(!exists("0.log") && !exists("0.log.20240101-000000.gz") && !exists("1.log") &&
                  !exists("1.log.20240101-000000"));
        ck_assert(exists("2.log") && exists("2.log.20240101-000000.gz") && exists("3.log"));
        ck_assert(exists("notes.txt") && exists("10x.log"));
        /* the first instance: nothing older */
        char p0[160];
        snprintf(p0, sizeof(p0), "%s/2.log", dir);
        ck_assert_int_eq(ag_logrotate_prune_instances(p0, &removed, &err), 0);
        ck_assert_int_eq(removed, 0);
}
END_TEST

/* ---- live: the monitor's reopen (root with cgroups) ---- */

static int atoi_safe(const char *p, size_t n)
{
        int v = 0;
        for (size_t i = 0; i < n; i++) {
                if (p[i] < '0' || p[i] > '9')
                        return -1;
                v = v * 10 + (p[i] - '0');
        }
        return v;
}

struct lines {
        int n, bad;
        int next;
};

static int count_line(enum rt_stream st, int64_t ts, const char *line, size_t len, void *ud)
{
        struct lines *l = ud;
        (void)st;
        (void)ts;
        int v = -1;
        if (len > 5 && memcmp(line, "line-", 5) == 0)
                v = atoi_safe(line + 5, len - 5);
        if (v != l->next)
                l->bad++;
        l->next = v + 1;
        l->n++;
        return 0;
}

/* A container writes line-0..399 (10 ms apart); its log is renamed and the
 * monitor asked to reopen it twice while it writes: the three files hold
 * every line once, in order, each file whole records; a stopped container
 * is refused (ESRCH). */
START_TEST(test_monitor_reopen)
{
        static const char *const argv[] = {
            "sh", "-c",
            "i=0; while [ $i -lt 400 ]; do echo line-$i; i=$((i+1)); usleep 10000; done", NULL};
        struct rt_container_config c;
        th_base_config(&c, "reopen", argv);
        struct cb_error err = {0};
        struct rt_container_state s0;
        ck_assert_msg(rt_container_create_start(&c, &s0, &err) == 0, "start: %s", err.msg);
        char rot[2][512];
        for (int k = 0; k < 2; k++) {
                struct timespec ts = {1, 0};
                nanosleep(&ts, NULL); /* the test waits, the agent never does */
                snprintf(rot[k], sizeof(rot[k]), "%s.%d", c.log_path, k);
                ck_assert_int_eq(rename(c.log_path, rot[k]), 0);
                ck_assert_msg(rt_container_reopen_log(th_root, "reopen", 5000, &err) == 0,
                              "reopen %d: %s", k, err.msg);
                struct stat st;
                ck_assert_int_eq(stat(c.log_path, &st), 0);
        }
        struct rt_container_state st;
        th_wait_exit("reopen", &st, 60000);
        ck_assert_int_eq(st.exit_code, 0);
        struct lines l = {0};
        ck_assert_msg(rt_crilog_read(rot[0], count_line, &l, &err) == 0, "%s", err.msg);
        int first = l.n;
        ck_assert_msg(rt_crilog_read(rot[1], count_line, &l, &err) == 0, "%s", err.msg);
        int second = l.n - first;
        ck_assert_msg(rt_crilog_read(c.log_path, count_line, &l, &err) == 0, "%s", err.msg);
        ck_assert_msg(l.n == 400 && l.bad == 0, "%d lines, %d out of order (%d, %d, %d)", l.n,
                      l.bad, first, second, l.n - first - second);
        ck_assert_int_gt(first, 0);
        ck_assert_int_gt(second, 0);
        ck_assert_int_gt(l.n - first - second, 0);
        /* exited: nothing to reopen */
        ck_assert_int_lt(rt_container_reopen_log(th_root, "reopen", 1000, &err), 0);
        ck_assert_int_eq(err.code, ESRCH);
        ck_assert_msg(rt_container_remove(th_root, "reopen", &err) == 0, "%s", err.msg);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("logrotate");
        TCase *tc = tcase_create("logrotate");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, test_below_max_size);
        tcase_add_test(tc, test_rotation_sequence);
        tcase_add_test(tc, test_leftovers);
        tcase_add_test(tc, test_reopen_fails);
        tcase_add_test(tc, test_missing_log_reopened);
        tcase_add_test(tc, test_symlink_refused);
        tcase_add_test(tc, test_disabled);
        tcase_add_test(tc, test_prune_instances);
        suite_add_tcase(s, tc);
        bool live = th_need_root_cgroups("test_logrotate (live)") == 0 &&
                    th_live_setup("test_logrotate", "lr") == 0;
        if (live) {
                TCase *lc = tcase_create("live");
                tcase_set_timeout(lc, 120);
                tcase_add_test(lc, test_monitor_reopen);
                suite_add_tcase(s, lc);
        }
        int failed = th_run(s);
        if (live)
                th_sweep();
        return failed == 0 ? 0 : 1;
}
