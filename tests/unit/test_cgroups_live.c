/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cgroup manager against the real kernel: cgroup v1 (legacy or hybrid)
 * on the development machines, v2 inside the qemu VM of
 * tests/integration/cgroupv2_qemu.sh. Needs root; exits 77 when not root
 * or when cpu, memory or pids (and cpuacct on v1) are not mounted.
 *
 * Everything is created under a unique parent, cubelet-test-<pid>, in
 * every hierarchy. The unchecked fixture's teardown (run in the runner
 * process, so also after a failed or crashed test) and main() kill what
 * is left in it and remove it.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cgroups/cgroup.h"
#include "lib/file.h"

#include "helpers.h"

static char parent[64];

static const struct cg_limits burstable = {
    .cpu_shares = 512,
    .cpu_quota_us = 50000,
    .cpu_period_us = 100000,
    .memory_limit = 64 << 20,
    .pids_limit = 32,
};

static void ck_ok(int rc, const struct cb_error *err, const char *what)
{
        ck_assert_msg(rc >= 0, "%s failed: %s", what, err->msg);
}

/* "<parent>/<suffix>" */
static void sub(char *buf, size_t size, const char *suffix)
{
        ck_assert_int_lt(snprintf(buf, size, "%s/%s", parent, suffix), (int)size);
}

static size_t needed(const char *const **ret)
{
        static const char *const v1[] = {"cpu", "cpuacct", "memory", "pids"};
        static const char *const v2[] = {"cpu", "memory", "pids"};
        if (cg_current_mode() == CG_MODE_UNIFIED) {
                *ret = v2;
                return 3;
        }
        *ret = v1;
        return 4;
}

/* Reads a file and strips the final newline. */
static char *slurp(const char *file)
{
        struct cb_error err = {0};
        char *buf = NULL;
        size_t len;
        ck_ok(cb_read_file(file, 1 << 20, &buf, &len, &err), &err, file);
        while (len > 0 && buf[len - 1] == '\n')
                buf[--len] = '\0';
        return buf;
}

/* The files on disk hold exactly what cg_render_files says. */
static void verify_files(const char *path, const struct cg_limits *l)
{
        struct cg_file files[16];
        size_t n = cg_render_files(l, cg_mode_version(cg_current_mode()), files, 16);
        ck_assert_uint_ge(n, 4);
        for (size_t i = 0; i < n; i++) {
                char ctrl[16], dir[4096], file[6144];
                struct cb_error err = {0};
                snprintf(ctrl, sizeof(ctrl), "%.*s", (int)strcspn(files[i].name, "."),
                         files[i].name);
                ck_ok(cg_dir(path, ctrl, dir, sizeof(dir), &err), &err, "cg_dir");
                snprintf(file, sizeof(file), "%s/%s", dir, files[i].name);
                char *got = slurp(file);
                ck_assert_msg(strcmp(got, files[i].value) == 0, "%s holds \"%s\", want \"%s\"",
                              file, got, files[i].value);
                free(got);
        }
}

/* path exists (or not) in every hierarchy. */
static void assert_present(const char *path, bool want)
{
        const char *const *ctrl;
        size_t n = needed(&ctrl);
        for (size_t i = 0; i < n; i++) {
                char dir[4096];
                struct cb_error err = {0};
                ck_ok(cg_dir(path, ctrl[i], dir, sizeof(dir), &err), &err, "cg_dir");
                ck_assert_msg((access(dir, F_OK) == 0) == want, "%s %s", dir,
                              want ? "is missing" : "is still there");
        }
}

/* A child that waits for a byte on go[0] and then runs fn (never returns). */
static pid_t spawn(int go[2], void (*fn)(int out), int out)
{
        ck_assert_int_eq(pipe2(go, O_CLOEXEC), 0);
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                char c;
                close(go[1]);
                if (read(go[0], &c, 1) != 1)
                        _exit(3);
                fn(out);
                _exit(0);
        }
        close(go[0]);
        return pid;
}

static void release(int go[2])
{
        ck_assert_int_eq(write(go[1], "x", 1), 1);
        close(go[1]);
}

static void kill_and_reap(const char *path)
{
        struct cb_error err = {0};
        for (int i = 0; i < 500; i++) {
                pid_t *pids = NULL;
                size_t n;
                ck_ok(cg_list_pids(path, &pids, &n, &err), &err, "cg_list_pids");
                free(pids);
                if (n == 0)
                        return;
                ck_ok(cg_kill_all(path, SIGKILL, &err), &err, "cg_kill_all");
                while (waitpid(-1, NULL, WNOHANG) > 0)
                        ;
                usleep(10000);
        }
        ck_abort_msg("processes are left in %s", path);
}

START_TEST(test_create_files)
{
        struct cb_error err = {0};
        char pod[256], qos[256];
        sub(pod, sizeof(pod), "kubepods/burstable/pod-create");
        sub(qos, sizeof(qos), "kubepods/burstable");
        ck_ok(cg_create(pod, &burstable, &err), &err, "cg_create");
        verify_files(pod, &burstable);
        assert_present(parent, true);
        assert_present(qos, true);
        assert_present(pod, true);
        if (cg_current_mode() == CG_MODE_UNIFIED) {
                /* every ancestor hands cpu, memory and pids down */
                const char *levels[] = {"", parent, qos};
                for (size_t i = 0; i < 3; i++) {
                        char dir[4096], file[4200];
                        if (levels[i][0] == '\0')
                                ck_ok(cg_dir("x", "memory", dir, sizeof(dir), &err), &err, "");
                        else
                                ck_ok(cg_dir(levels[i], "memory", dir, sizeof(dir), &err), &err,
                                      "");
                        if (levels[i][0] == '\0')
                                *strrchr(dir, '/') = '\0';
                        snprintf(file, sizeof(file), "%s/cgroup.subtree_control", dir);
                        char *sc = slurp(file);
                        ck_assert_msg(strstr(sc, "cpu") && strstr(sc, "memory") &&
                                          strstr(sc, "pids"),
                                      "%s: \"%s\"", file, sc);
                        free(sc);
                }
        }
        /* idempotent */
        ck_ok(cg_create(pod, &burstable, &err), &err, "cg_create again");
        verify_files(pod, &burstable);
        /* crash cleanup finds it */
        char **names = NULL;
        size_t n = 0;
        ck_ok(cg_list_children(qos, &names, &n, &err), &err, "cg_list_children");
        ck_assert_uint_eq(n, 1);
        ck_assert_str_eq(names[0], "pod-create");
        cg_free_names(names, n);
        bool exists = false;
        ck_ok(cg_exists(pod, &exists, &err), &err, "cg_exists");
        ck_assert(exists);
        ck_ok(cg_destroy(pod, &err), &err, "cg_destroy");
        assert_present(pod, false);
        assert_present(qos, true);
        ck_ok(cg_exists(pod, &exists, &err), &err, "cg_exists");
        ck_assert(!exists);
}
END_TEST

/* A limit the kernel refuses (a CFS period over its 1 s maximum) fails the
 * create with an error that names the file, the value and the cgroup. */
START_TEST(test_create_refused)
{
        struct cb_error err = {0};
        char pod[256];
        sub(pod, sizeof(pod), "kubepods/burstable/pod-refused");
        struct cg_limits bad = burstable;
        bad.cpu_period_us = 2000000;
        ck_assert_int_eq(cg_create(pod, &bad, &err), -1);
        const char *file = cg_current_mode() == CG_MODE_UNIFIED ? "cpu.max" : "cpu.cfs_period_us";
        ck_assert_msg(strstr(err.msg, file) && strstr(err.msg, "2000000") &&
                          strstr(err.msg, "pod-refused"),
                      "%s", err.msg);
        ck_assert_int_eq(err.code, EINVAL);
        ck_ok(cg_destroy(pod, &err), &err, "cg_destroy");
        assert_present(pod, false);
}
END_TEST

static void spin_then_wait(int out)
{
        /* burn 30 ms of CPU, say so, then wait to be killed */
        struct timespec ts;
        do
                clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        while (ts.tv_sec == 0 && ts.tv_nsec < 30 * 1000000L);
        if (write(out, "r", 1) != 1)
                _exit(4);
        for (;;)
                pause();
}

START_TEST(test_attach_stats_kill_destroy)
{
        struct cb_error err = {0};
        char pod[256], ctr[256];
        sub(pod, sizeof(pod), "kubepods/burstable/pod-attach");
        sub(ctr, sizeof(ctr), "kubepods/burstable/pod-attach/ctr1");
        ck_ok(cg_create(pod, &burstable, &err), &err, "cg_create pod");
        ck_ok(cg_create(ctr, NULL, &err), &err, "cg_create container");

        ck_assert_int_eq(cg_attach(ctr, getpid(), &err), -1);
        ck_assert_int_eq(err.code, EPERM);

        int ready[2], go[2];
        ck_assert_int_eq(pipe2(ready, O_CLOEXEC), 0);
        pid_t child = spawn(go, spin_then_wait, ready[1]);
        close(ready[1]);
        ck_ok(cg_attach(ctr, child, &err), &err, "cg_attach");
        release(go);
        char c;
        ck_assert_int_eq(read(ready[0], &c, 1), 1);
        close(ready[0]);

        /* /proc/<child>/cgroup names the container cgroup */
        char file[64], want[300];
        snprintf(file, sizeof(file), "/proc/%d/cgroup", (int)child);
        snprintf(want, sizeof(want), "/%s", ctr);
        char *pc = slurp(file);
        const char *const *ctrl;
        size_t nc = needed(&ctrl);
        for (size_t i = 0; i < (cg_current_mode() == CG_MODE_UNIFIED ? 1 : nc); i++) {
                char got[512];
                const char *which = cg_current_mode() == CG_MODE_UNIFIED ? NULL : ctrl[i];
                ck_assert_int_ge(cg_parse_proc_cgroup(pc, which, got, sizeof(got), &err), 0);
                ck_assert_msg(strcmp(got, want) == 0, "%s: %s is %s, want %s", file,
                              which ? which : "0::", got, want);
        }
        free(pc);

        pid_t *pids = NULL;
        size_t n = 0;
        ck_ok(cg_list_pids(pod, &pids, &n, &err), &err, "cg_list_pids");
        ck_assert_uint_eq(n, 1);
        ck_assert_int_eq(pids[0], child);
        free(pids);

        struct cg_stats st;
        ck_ok(cg_read_stats(pod, &st, &err), &err, "cg_read_stats");
        ck_assert_uint_eq(st.pids_current, 1);
        ck_assert_uint_ge(st.cpu_usage_ns, 10 * 1000000ULL);
        ck_assert_uint_gt(st.memory_usage, 0);
        ck_assert_uint_le(st.memory_working_set, st.memory_usage);

        /* destroy refuses while a process is inside, naming it */
        ck_assert_int_eq(cg_destroy(pod, &err), -1);
        ck_assert_int_eq(err.code, EBUSY);
        char pidstr[16];
        snprintf(pidstr, sizeof(pidstr), "%d", (int)child);
        ck_assert_msg(strstr(err.msg, pidstr) && strstr(err.msg, "pod-attach"), "%s", err.msg);
        assert_present(ctr, true);

        int killed = cg_kill_all(pod, SIGKILL, &err);
        ck_ok(killed, &err, "cg_kill_all");
        ck_assert_int_eq(killed, 1);
        int status;
        ck_assert_int_eq(waitpid(child, &status, 0), child);
        ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
        kill_and_reap(pod);

        ck_ok(cg_destroy(pod, &err), &err, "cg_destroy");
        assert_present(ctr, false);
        assert_present(pod, false);
        /* destroying what is gone is success */
        ck_ok(cg_destroy(pod, &err), &err, "cg_destroy again");
}
END_TEST

/* cg_fork_into: on v2 the child is born in the cgroup (placed, no attach
 * needed: its first look at /proc/self/cgroup names it); on v1 and hybrid
 * it is not, and it moves itself with cg_join_self_at (each hierarchy's
 * tasks, as the container init and the exec helper do). Fails if the v2
 * path falls back to fork + attach (placed false), or the child is
 * anywhere else in any hierarchy. */
START_TEST(test_fork_into)
{
        struct cb_error err = {0};
        char pod[256], ctr[256], want[300];
        sub(pod, sizeof(pod), "kubepods/besteffort/pod-forkinto");
        sub(ctr, sizeof(ctr), "kubepods/besteffort/pod-forkinto/ctr1");
        ck_ok(cg_create(pod, NULL, &err), &err, "cg_create pod");
        ck_ok(cg_create(ctr, NULL, &err), &err, "cg_create container");
        snprintf(want, sizeof(want), "/%s", ctr);
        struct cg_location loc;
        ck_ok(cg_locate(ctr, &loc, &err), &err, "cg_locate");
        bool unified = cg_current_mode() == CG_MODE_UNIFIED;
        const char *const *ctrl;
        size_t nc = needed(&ctrl);

        int go[2];
        ck_assert_int_eq(pipe2(go, O_CLOEXEC), 0);
        bool placed = true;
        pid_t child = cg_fork_into(&loc, &placed, &err);
        ck_ok(child, &err, "cg_fork_into");
        if (child == 0) {
                close(go[1]);
                char c;
                if (read(go[0], &c, 1) != 1)
                        _exit(2);
                char *pc = NULL;
                size_t len;
                struct cb_error e = {0};
                if (!unified && cg_join_self_at(&loc, &e) < 0)
                        _exit(4);
                if (cb_read_file("/proc/self/cgroup", 1 << 20, &pc, &len, &e) < 0)
                        _exit(3);
                for (size_t i = 0; i < (unified ? 1 : nc); i++) {
                        char got[512];
                        if (cg_parse_proc_cgroup(pc, unified ? NULL : ctrl[i], got, sizeof(got),
                                                 &e) < 0 ||
                            strcmp(got, want) != 0)
                                _exit(10 + (int)i);
                }
                _exit(0);
        }
        close(go[0]);
        ck_assert_msg(placed == unified, "placed %d in mode %s", placed,
                      cg_mode_name(cg_current_mode()));
        ck_assert_int_eq(write(go[1], "x", 1), 1);
        close(go[1]);
        int status;
        ck_assert_int_eq(waitpid(child, &status, 0), child);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                      "the child was not in %s (status 0x%x)", want, status);

        /* a cgroup that is gone: the fork still happens, not placed, and
         * the attach then names the missing directory */
        ck_ok(cg_destroy(pod, &err), &err, "cg_destroy");
        child = cg_fork_into(&loc, &placed, &err);
        ck_ok(child, &err, "cg_fork_into (gone)");
        if (child == 0)
                _exit(0);
        ck_assert(!placed);
        ck_assert_int_eq(waitpid(child, &status, 0), child);
        ck_assert_int_eq(cg_attach_at(&loc, getpid(), &err), -1);
        ck_assert_int_eq(err.code, ENOENT);
        ck_assert_int_eq(cg_join_self_at(&loc, &err), -1);
        ck_assert_int_eq(err.code, ENOENT);
}
END_TEST

static void eat_memory(int out)
{
        const size_t size = 256UL << 20;
        volatile char *p =
            mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
                _exit(5);
        for (size_t off = 0; off < size; off += 4096)
                p[off] = 1;
        _exit(0); /* survived: the limit did not hold */
}

START_TEST(test_oom_kill)
{
        struct cb_error err = {0};
        char pod[256];
        sub(pod, sizeof(pod), "kubepods/burstable/pod-oom");
        struct cg_limits l = burstable;
        l.memory_limit = 32 << 20;
        ck_ok(cg_create(pod, &l, &err), &err, "cg_create");
        struct cg_oom before;
        ck_ok(cg_read_oom(pod, &before, &err), &err, "cg_read_oom");
        ck_assert_uint_eq(before.oom_kill, 0);

        int go[2];
        pid_t child = spawn(go, eat_memory, -1);
        ck_ok(cg_attach(pod, child, &err), &err, "cg_attach");
        release(go);
        int status;
        ck_assert_int_eq(waitpid(child, &status, 0), child);
        ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
                      "child touching 256 MiB under a 32 MiB limit was not OOM-killed "
                      "(status 0x%x)",
                      status);

        struct cg_oom o;
        ck_ok(cg_read_oom(pod, &o, &err), &err, "cg_read_oom");
        ck_assert_uint_ge(o.oom_kill, 1);
        ck_assert_uint_ge(o.limit_hits, 1);
        kill_and_reap(pod);
        ck_ok(cg_destroy(pod, &err), &err, "cg_destroy");
        assert_present(pod, false);
}
END_TEST

/* Forks children that wait until fork fails; reports {count, errno}. */
static void fork_bomb(int out)
{
        int result[2] = {0, 0};
        for (int i = 0; i < 1000; i++) {
                pid_t p = fork();
                if (p < 0) {
                        result[1] = errno;
                        break;
                }
                if (p == 0) {
                        for (;;)
                                pause();
                }
                result[0]++;
        }
        if (write(out, result, sizeof(result)) != (ssize_t)sizeof(result))
                _exit(4);
        for (;;)
                pause();
}

START_TEST(test_pids_limit)
{
        struct cb_error err = {0};
        char pod[256];
        sub(pod, sizeof(pod), "kubepods/burstable/pod-pids");
        struct cg_limits l = burstable;
        l.pids_limit = 8;
        ck_ok(cg_create(pod, &l, &err), &err, "cg_create");
        /* orphaned grandchildren come back to this process to be reaped */
        ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);

        int res[2], go[2];
        ck_assert_int_eq(pipe2(res, O_CLOEXEC), 0);
        pid_t child = spawn(go, fork_bomb, res[1]);
        close(res[1]);
        ck_ok(cg_attach(pod, child, &err), &err, "cg_attach");
        release(go);
        int result[2];
        ck_assert_int_eq(read(res[0], result, sizeof(result)), (ssize_t)sizeof(result));
        close(res[0]);
        ck_assert_msg(result[1] == EAGAIN, "fork failed with %s, want EAGAIN", strerror(result[1]));
        ck_assert_int_eq(result[0], 7); /* 8 with the forking child itself */

        struct cg_stats st;
        ck_ok(cg_read_stats(pod, &st, &err), &err, "cg_read_stats");
        ck_assert_uint_eq(st.pids_current, 8);
        pid_t *pids = NULL;
        size_t n = 0;
        ck_ok(cg_list_pids(pod, &pids, &n, &err), &err, "cg_list_pids");
        free(pids);
        ck_assert_uint_eq(n, 8);

        kill_and_reap(pod);
        ck_ok(cg_destroy(pod, &err), &err, "cg_destroy");
        assert_present(pod, false);
}
END_TEST

START_TEST(test_update)
{
        struct cb_error err = {0};
        char pod[256], missing[256];
        sub(pod, sizeof(pod), "kubepods/pod-update");
        sub(missing, sizeof(missing), "kubepods/pod-missing");
        ck_ok(cg_create(pod, &burstable, &err), &err, "cg_create");
        const struct cg_limits bigger = {
            .cpu_shares = 1024,
            .cpu_quota_us = 200000,
            .cpu_period_us = 100000,
            .memory_limit = 128 << 20,
            .pids_limit = 64,
        };
        ck_ok(cg_update(pod, &bigger, &err), &err, "cg_update");
        verify_files(pod, &bigger);
        const struct cg_limits unlimited_cpu = {
            .cpu_shares = 2,
            .cpu_quota_us = -1,
            .cpu_period_us = 100000,
            .memory_limit = 96 << 20,
            .pids_limit = -1,
        };
        ck_ok(cg_update(pod, &unlimited_cpu, &err), &err, "cg_update");
        verify_files(pod, &unlimited_cpu);

        ck_assert_int_eq(cg_update(missing, &bigger, &err), -1);
        ck_assert_int_eq(err.code, ENOENT);
        ck_assert_ptr_nonnull(strstr(err.msg, "pod-missing"));
        assert_present(missing, false);
        ck_ok(cg_destroy(pod, &err), &err, "cg_destroy");
        assert_present(pod, false);
}
END_TEST

START_TEST(test_recursive_destroy_and_paths)
{
        struct cb_error err = {0};
        char pod[256], c1[256], c2[256], qos[256];
        sub(qos, sizeof(qos), "kubepods/besteffort");
        sub(pod, sizeof(pod), "kubepods/besteffort/pod-tree");
        sub(c1, sizeof(c1), "kubepods/besteffort/pod-tree/c1");
        sub(c2, sizeof(c2), "kubepods/besteffort/pod-tree/c2/deeper");
        const struct cg_limits be = {.cpu_shares = 2};
        ck_ok(cg_create(pod, &be, &err), &err, "cg_create pod");
        ck_ok(cg_create(c1, &burstable, &err), &err, "cg_create c1");
        ck_ok(cg_create(c2, NULL, &err), &err, "cg_create c2/deeper");
        verify_files(c1, &burstable);
        char **names = NULL;
        size_t n = 0;
        ck_ok(cg_list_children(pod, &names, &n, &err), &err, "cg_list_children");
        ck_assert_uint_eq(n, 2);
        ck_assert_str_eq(names[0], "c1");
        ck_assert_str_eq(names[1], "c2");
        cg_free_names(names, n);

        ck_ok(cg_destroy(pod, &err), &err, "cg_destroy");
        assert_present(c1, false);
        assert_present(c2, false);
        assert_present(pod, false);
        assert_present(qos, true);

        /* paths that must never reach the file system */
        const char *bad[] = {"", "/", "//", "../etc", "kubepods/../..", "a//b", "a/./b"};
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                ck_assert_int_eq(cg_destroy(bad[i], &err), -1);
                ck_assert_int_eq(err.code, EINVAL);
                ck_assert_int_eq(cg_create(bad[i], NULL, &err), -1);
        }
        char leading[300];
        snprintf(leading, sizeof(leading), "/%s/", pod);
        ck_ok(cg_create(leading, NULL, &err), &err, "cg_create with slashes");
        assert_present(pod, true);
        ck_ok(cg_destroy(pod, &err), &err, "cg_destroy");
        assert_present(pod, false);
}
END_TEST

/* Kills what is left under the test parent and removes it. */
static int cleanup_parent(void)
{
        struct cb_error err = {0};
        bool exists = false;
        if (cg_exists(parent, &exists, &err) < 0 || !exists)
                return 0;
        for (int i = 0; i < 200; i++) {
                pid_t *pids = NULL;
                size_t n = 0;
                if (cg_list_pids(parent, &pids, &n, &err) < 0)
                        break;
                free(pids);
                if (n == 0)
                        break;
                cg_kill_all(parent, SIGKILL, &err);
                while (waitpid(-1, NULL, WNOHANG) > 0)
                        ;
                usleep(25000);
        }
        if (cg_destroy(parent, &err) < 0) {
                fprintf(stderr, "test_cgroups_live: cleanup of %s failed: %s\n", parent, err.msg);
                return -1;
        }
        return 0;
}

static void setup(void)
{
}

static void teardown(void)
{
        cleanup_parent();
}

int main(void)
{
        if (th_need_root_cgroups("test_cgroups_live") != 0)
                return 77;
        struct cb_error err = {0};
        snprintf(parent, sizeof(parent), "cubelet-test-%d", (int)getpid());
        const char *const *ctrl;
        size_t nc = needed(&ctrl);
        for (size_t i = 0; i < nc; i++) {
                char dir[4096];
                if (cg_dir(parent, ctrl[i], dir, sizeof(dir), &err) < 0) {
                        fprintf(stderr, "test_cgroups_live: %s; skipped\n", err.msg);
                        return 77;
                }
        }
        printf("test_cgroups_live: cgroup mode %s, test parent %s\n",
               cg_mode_name(cg_current_mode()), parent);
        fflush(stdout);

        Suite *s = suite_create("cgroups_live");
        TCase *tc = tcase_create("live");
        tcase_add_unchecked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, test_create_files);
        tcase_add_test(tc, test_create_refused);
        tcase_add_test(tc, test_attach_stats_kill_destroy);
        tcase_add_test(tc, test_fork_into);
        tcase_add_test(tc, test_oom_kill);
        tcase_add_test(tc, test_pids_limit);
        tcase_add_test(tc, test_update);
        tcase_add_test(tc, test_recursive_destroy_and_paths);
        suite_add_tcase(s, tc);
        int failed = th_run(s);
        /* the fixture removed the parent; a leftover is a failure */
        int left = cleanup_parent();
        bool exists = true;
        if (cg_exists(parent, &exists, &err) < 0 || exists) {
                fprintf(stderr, "test_cgroups_live: %s is left behind\n", parent);
                left = -1;
        }
        return failed == 0 && left == 0 ? 0 : 1;
}
