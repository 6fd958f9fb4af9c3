/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rt_container_exec_* against the real kernel: a busybox-static rootfs in
 * a temp dir, the real cubelet binary (CUBELET_BINARY) as the monitor and
 * the __exec helper. Every property of the exec'd process is checked from
 * inside it and compared with the container's first process as the host
 * sees it. Needs root; exits 77 otherwise.
 *
 * Unique per run: /tmp/cubelet-ex-<pid> and the cgroup parent
 * cubelet-extest-<pid>; main() sweeps what a failed test left behind.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroups/cgroup.h"
#include "lib/cleanup.h"
#include "lib/file.h"
#include "runtime/container.h"
#include "runtime/image.h"

#include "helpers.h"

static char *const root = th_root, *const cgparent = th_cgparent;

static const char *const path_env[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root",
                                       "EXTEST=from-config", NULL};
static const char *const sleeper[] = {"sleep", "1000", NULL};

static void base(struct rt_container_config *c, const char *id)
{
        th_base_config(c, id, sleeper);
        c->hostname = "exhost";
        c->env = path_env;
        c->cwd = "/tmp";
}

static void start(struct rt_container_config *c, struct rt_container_state *st)
{
        struct cb_error err = {0};
        ck_assert_msg(rt_container_create_start(c, st, &err) == 0, "start %s: %s", c->id, err.msg);
        ck_assert_msg(rt_container_save_config(c, &err) == 0, "save config: %s", err.msg);
        ck_assert_int_eq(st->status, RT_CONTAINER_RUNNING);
}

static void stop_remove(const char *id, const char *cgroup)
{
        struct cb_error err = {0};
        ck_assert_msg(rt_container_stop(root, id, SIGKILL, 0, &err) == 0, "stop: %s", err.msg);
        ck_assert_msg(rt_container_remove(root, id, &err) == 0, "remove: %s", err.msg);
        bool exists = true;
        ck_assert(cg_exists(cgroup, &exists, &err) == 0);
        ck_assert_msg(!exists, "cgroup %s left behind", cgroup);
}

/* Runs argv in container id; returns the exit code, output in out. */
static int ex(const char *id, const char *const *argv, char *out, size_t size, int timeout_ms)
{
        struct cb_error err = {0};
        int pidfd = -1, outfd = -1, code = -1;
        ck_assert_msg(
            rt_container_exec_start(root, id, CUBELET_BINARY, argv, &pidfd, &outfd, &err) == 0,
            "exec: %s", err.msg);
        int r = rt_container_exec_wait(pidfd, outfd, timeout_ms, &code, out, size, &err);
        close(pidfd);
        close(outfd);
        if (r < 0)
                return -1000 - err.code;
        return code;
}

static int ex_sh(const char *id, const char *script, char *out, size_t size)
{
        const char *argv[] = {"sh", "-c", script, NULL};
        return ex(id, argv, out, size, 30000);
}

/* "Key:\tvalue" of /proc/<pid>/status (pid 0: from text). */
static void status_field(const char *text, const char *key, char *buf, size_t size)
{
        buf[0] = '\0';
        size_t n = strlen(key);
        for (const char *p = text; p != NULL && *p != '\0';) {
                if (strncmp(p, key, n) == 0 && p[n] == ':') {
                        const char *v = p + n + 1;
                        while (*v == ' ' || *v == '\t')
                                v++;
                        size_t len = strcspn(v, "\n");
                        snprintf(buf, size, "%.*s", (int)len, v);
                        return;
                }
                p = strchr(p, '\n');
                if (p != NULL)
                        p++;
        }
}

static void host_status(pid_t pid, const char *key, char *buf, size_t size)
{
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
        _cleanup_free_ char *text = NULL;
        struct cb_error err;
        ck_assert(cb_read_file(path, 1 << 20, &text, NULL, &err) == 0);
        status_field(text, key, buf, size);
}

static void host_ns(pid_t pid, const char *ns, char *buf, size_t size)
{
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int)pid, ns);
        ssize_t n = readlink(path, buf, size - 1);
        ck_assert(n > 0);
        buf[n] = '\0';
}

START_TEST(test_confinement)
{
        struct rt_container_config c;
        struct rt_container_state st;
        base(&c, "conf");
        start(&c, &st);
        char out[16384];
        /* the agent's ignored signals must not reach the command */
        signal(SIGUSR1, SIG_IGN);
        int code =
            ex_sh("conf",
                  "echo host=$(hostname); echo cwd=$(pwd); echo env=$EXTEST; "
                  "echo nprocs=$(ls /proc | grep -c '^[0-9]'); "
                  "echo pid1=$(cat /proc/1/comm); "
                  "for n in pid mnt net ipc uts; do echo ns_$n=$(readlink /proc/self/ns/$n); "
                  "done; grep -E '^(CapEff|CapBnd|Seccomp|Seccomp_filters|NoNewPrivs|"
                  "SigIgn|Uid|Gid):' /proc/self/status; "
                  "echo fds=$(ls /proc/self/fd | tr '\\n' ' '); "
                  "echo cg=$(grep -E 'memory' /proc/self/cgroup | head -1)",
                  out, sizeof(out));
        ck_assert_msg(code == 0, "exit %d: %s", code, out);
        ck_assert_msg(strstr(out, "host=exhost\n") != NULL, "hostname: %s", out);
        ck_assert_msg(strstr(out, "cwd=/tmp\n") != NULL, "cwd: %s", out);
        ck_assert_msg(strstr(out, "env=from-config\n") != NULL, "env: %s", out);
        ck_assert_msg(strstr(out, "pid1=sleep\n") != NULL, "pid 1: %s", out);
        /* sleep, sh, ls, grep and the subshell: no host process is visible */
        char v[256], w[256];
        const char *np = strstr(out, "nprocs=");
        ck_assert_msg(np != NULL && atoi(np + 7) > 0 && atoi(np + 7) < 8, "nprocs: %s", out);
        static const char *const ns[] = {"pid", "mnt", "net", "ipc", "uts"};
        for (size_t i = 0; i < CB_ARRAY_SIZE(ns); i++) {
                char key[16], want[128];
                snprintf(key, sizeof(key), "ns_%s=", ns[i]);
                host_ns(st.pid, ns[i], want, sizeof(want));
                const char *p = strstr(out, key);
                ck_assert_msg(p != NULL && strncmp(p + strlen(key), want, strlen(want)) == 0,
                              "%s: want %s in %s", ns[i], want, out);
                host_ns(getpid(), ns[i], want, sizeof(want));
                ck_assert_msg(strncmp(p + strlen(key), want, strlen(want)) != 0, "%s is the host's",
                              ns[i]);
        }
        static const char *const same[] = {"CapEff",     "CapBnd", "Seccomp", "Seccomp_filters",
                                           "NoNewPrivs", "Uid",    "Gid"};
        for (size_t i = 0; i < CB_ARRAY_SIZE(same); i++) {
                status_field(out, same[i], v, sizeof(v));
                host_status(st.pid, same[i], w, sizeof(w));
                ck_assert_msg(strcmp(v, w) == 0, "%s: exec %s, container %s", same[i], v, w);
        }
        status_field(out, "Seccomp", v, sizeof(v));
        ck_assert_str_eq(v, "2");
        status_field(out, "NoNewPrivs", v, sizeof(v));
        ck_assert_str_eq(v, "1");
        /* SIGUSR1, ignored by the test process, is not ignored in the
         * command: the same dispositions as the container's own process */
        status_field(out, "SigIgn", v, sizeof(v));
        host_status(st.pid, "SigIgn", w, sizeof(w));
        ck_assert_str_eq(v, w);
        ck_assert_msg((strtoull(v, NULL, 16) & (1ULL << (SIGUSR1 - 1))) == 0, "SigIgn %s", v);
        /* ls's own directory fd is 3: nothing else leaked */
        ck_assert_msg(strstr(out, "fds=0 1 2 3\n") != NULL, "fds: %s", out);
        char cgline[256];
        snprintf(cgline, sizeof(cgline), "/%s/conf", cgparent);
        ck_assert_msg(strstr(out, cgline) != NULL, "cgroup: %s", out);
        signal(SIGUSR1, SIG_DFL);
        stop_remove("conf", c.cgroup_path);
}
END_TEST

START_TEST(test_user_and_caps)
{
        struct rt_container_config c;
        struct rt_container_state st;
        static const uint32_t groups[] = {2000, 2001};
        static const char *const caps[] = {"CAP_NET_BIND_SERVICE", "CAP_CHOWN"};
        base(&c, "user");
        c.uid = 1000;
        c.gid = 1000;
        c.groups = groups;
        c.n_groups = 2;
        start(&c, &st);
        char out[4096];
        int code =
            ex_sh("user", "id -u; id -g; id -G; grep CapEff /proc/self/status", out, sizeof(out));
        ck_assert_msg(code == 0, "exit %d: %s", code, out);
        ck_assert_msg(strstr(out, "1000\n1000\n") == out, "ids: %s", out);
        ck_assert_msg(strstr(out, "2000 2001") != NULL, "groups: %s", out);
        ck_assert_msg(strstr(out, "CapEff:\t0000000000000000") != NULL, "caps: %s", out);
        stop_remove("user", c.cgroup_path);

        /* root with a reduced set: exactly that set, not the agent's */
        base(&c, "rcaps");
        c.caps = caps;
        c.n_caps = 2;
        start(&c, &st);
        code = ex_sh("rcaps", "grep -E '^Cap(Eff|Prm|Bnd)' /proc/self/status", out, sizeof(out));
        ck_assert_msg(code == 0, "exit %d: %s", code, out);
        /* CAP_CHOWN = 0, CAP_NET_BIND_SERVICE = 10 */
        ck_assert_msg(strstr(out, "CapEff:\t0000000000000401") != NULL, "caps: %s", out);
        ck_assert_msg(strstr(out, "CapBnd:\t0000000000000401") != NULL, "bounding: %s", out);
        stop_remove("rcaps", c.cgroup_path);
}
END_TEST

START_TEST(test_exit_codes)
{
        struct rt_container_config c;
        struct rt_container_state st;
        base(&c, "codes");
        start(&c, &st);
        static const struct {
                const char *argv[4];
                int code;
                const char *out;
        } cases[] = {
            {{"true", NULL}, 0, ""},
            {{"sh", "-c", "echo out; echo err >&2; exit 3", NULL}, 3, "out\nerr\n"},
            {{"nosuchcmd", NULL}, 127, "exec \"nosuchcmd\": No such file or directory\n"},
            {{"/no/such/path", NULL}, 127, "exec \"/no/such/path\": No such file or directory\n"},
            {{"/etc/passwd", NULL}, 126, "exec \"/etc/passwd\": Permission denied\n"},
            {{"sh", "-c", "kill -9 $$", NULL}, 137, ""},
        };
        for (size_t i = 0; i < CB_ARRAY_SIZE(cases); i++) {
                char out[1024];
                int code = ex("codes", cases[i].argv, out, sizeof(out), 30000);
                ck_assert_msg(code == cases[i].code, "case %zu (%s): exit %d, want %d: %s", i,
                              cases[i].argv[0], code, cases[i].code, out);
                ck_assert_msg(strcmp(out, cases[i].out) == 0, "case %zu: output \"%s\"", i, out);
        }
        /* the output is capped by the reader */
        char big[1025];
        const char *yes[] = {"sh", "-c", "yes | head -c 100000", NULL};
        ck_assert_int_eq(ex("codes", yes, big, sizeof(big), 30000), 0);
        ck_assert_uint_eq(strlen(big), 1024);
        stop_remove("codes", c.cgroup_path);
}
END_TEST

START_TEST(test_timeout_kills)
{
        struct rt_container_config c;
        struct rt_container_state st;
        base(&c, "tmo");
        start(&c, &st);
        char out[256];
        const char *argv[] = {"sh", "-c", "sleep 60 & sleep 61", NULL};
        int code = ex("tmo", argv, out, sizeof(out), 300);
        ck_assert_int_eq(code, -1000 - ETIMEDOUT);
        /* the command and its children are gone (SIGKILLed: each leaves the
         * cgroup when the kernel has finished its exit, which under load
         * can come a little after the exec returned); the container still
         * runs */
        struct cb_error err = {0};
        size_t n = 0;
        for (int i = 0; i < 100; i++) {
                pid_t *pids = NULL;
                ck_assert(cg_list_pids(c.cgroup_path, &pids, &n, &err) == 0);
                free(pids);
                if (n == 1)
                        break;
                usleep(50 * 1000);
        }
        ck_assert_msg(n == 1, "%zu processes in the container's cgroup 5 s after the timeout", n);
        ck_assert(rt_container_state(root, "tmo", &st, &err) == 0);
        ck_assert_int_eq(st.status, RT_CONTAINER_RUNNING);
        stop_remove("tmo", c.cgroup_path);
}
END_TEST

START_TEST(test_errors)
{
        struct rt_container_config c;
        struct rt_container_state st;
        struct cb_error err = {0};
        int pidfd, outfd;
        const char *argv[] = {"true", NULL};
        ck_assert(rt_container_exec_start(root, "missing", CUBELET_BINARY, argv, &pidfd, &outfd,
                                          &err) < 0);
        ck_assert_int_eq(err.code, ENOENT);
        base(&c, "gone");
        const char *const quick[] = {"true", NULL};
        c.argv = quick;
        ck_assert_msg(rt_container_create_start(&c, &st, &err) == 0, "%s", err.msg);
        ck_assert(rt_container_save_config(&c, &err) == 0);
        ck_assert(rt_container_stop(root, "gone", SIGKILL, 5, &err) == 0);
        ck_assert(
            rt_container_exec_start(root, "gone", CUBELET_BINARY, argv, &pidfd, &outfd, &err) < 0);
        ck_assert_int_eq(err.code, ESRCH);
        ck_assert_msg(strstr(err.msg, "not running") != NULL, "%s", err.msg);
        ck_assert(rt_container_remove(root, "gone", &err) == 0);
        const char *empty[] = {NULL};
        ck_assert(rt_container_exec_start(root, "x", CUBELET_BINARY, empty, &pidfd, &outfd, &err) <
                  0);
        ck_assert_int_eq(err.code, EINVAL);
}
END_TEST

int main(void)
{
        if (th_need_root_cgroups("test_exec") != 0)
                return 77;
        if (th_live_setup("test_exec", "ex") < 0)
                return 1;
        Suite *s = suite_create("exec");
        TCase *tc = tcase_create("live");
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, test_confinement);
        tcase_add_test(tc, test_user_and_caps);
        tcase_add_test(tc, test_exit_codes);
        tcase_add_test(tc, test_timeout_kills);
        tcase_add_test(tc, test_errors);
        suite_add_tcase(s, tc);
        int failed = th_run(s);
        th_sweep();
        return failed == 0 ? 0 : 1;
}
