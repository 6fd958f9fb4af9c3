/* SPDX-License-Identifier: Apache-2.0 */
/*
 * agent/node/selfcgroup.c: the pure plan from /proc/self/cgroup text (always),
 * and, as root with a writable cgroup2 mount (/sys/fs/cgroup on a unified
 * host, /sys/fs/cgroup/unified on a hybrid one), the real move in forked
 * children: into <own>/supervisor with a straggler process, idempotence,
 * the cgroup-namespace root, and the v1 no-op on a tmpfs "hierarchy".
 * Each live case works in cubelet-selftest-<pid>-<n> below the mount root
 * and removes it afterwards.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sched.h>
#include <unistd.h>

#include "agent/node/selfcgroup.h"
#include "cgroups/cgroup.h"
#include "lib/file.h"

#include "helpers.h"

struct plan_case {
        const char *text;
        const char *leaf_name;
        int rc;
        enum ag_self_where where;
        const char *parent;
        const char *leaf;
        const char *msg; /* substring of the error */
};

static const struct plan_case plan_cases[] = {
    {"0::/system.slice/cubelet.service\n", "supervisor", 0, AG_SELF_MOVE,
     "system.slice/cubelet.service", "system.slice/cubelet.service/supervisor", NULL},
    /* v1 lines first (a hybrid host's file): the 0:: line, not the first */
    {"12:memory:/system.slice/x\n1:name=systemd:/y\n0::/system.slice/cubelet.service\n",
     "supervisor", 0, AG_SELF_MOVE, "system.slice/cubelet.service",
     "system.slice/cubelet.service/supervisor", NULL},
    /* no trailing newline */
    {"0::/a/b", "leaf_1", 0, AG_SELF_MOVE, "a/b", "a/b/leaf_1", NULL},
    {"0::/\n", "supervisor", 0, AG_SELF_AT_ROOT, "", "supervisor", NULL},
    {"0::/a/supervisor\n", "supervisor", 0, AG_SELF_IN_LEAF, "a", "a/supervisor", NULL},
    {"0::/supervisor\n", "supervisor", 0, AG_SELF_IN_LEAF, "", "supervisor", NULL},
    /* a suffix of the name is not the leaf; the leaf name higher up neither */
    {"0::/a/xsupervisor\n", "supervisor", 0, AG_SELF_MOVE, "a/xsupervisor",
     "a/xsupervisor/supervisor", NULL},
    {"0::/supervisor/a\n", "supervisor", 0, AG_SELF_MOVE, "supervisor/a", "supervisor/a/supervisor",
     NULL},
    /* ':' inside the path belongs to the path */
    {"0::/a:b/c\n", "s", 0, AG_SELF_MOVE, "a:b/c", "a:b/c/s", NULL},
    /* errors */
    {"1:cpu:/\n2:memory:/x\n", "supervisor", -1, 0, NULL, NULL, "no \"0::\""},
    {"", "supervisor", -1, 0, NULL, NULL, "no \"0::\""},
    {"0::system.slice\n", "supervisor", -1, 0, NULL, NULL, "not an absolute path"},
    {"0::/../../user.slice\n", "supervisor", -1, 0, NULL, NULL, "outside the agent's cgroup"},
    {"0::/a/./b\n", "supervisor", -1, 0, NULL, NULL, "\".\" or \"..\""},
    {"0::/a//b\n", "supervisor", -1, 0, NULL, NULL, "empty"},
    {"0::/a/b/\n", "supervisor", -1, 0, NULL, NULL, "ends in '/'"},
    {"0::/a\n", "", -1, 0, NULL, NULL, "name is empty"},
    {"0::/a\n", "x/y", -1, 0, NULL, NULL, "has '/' at offset 1"},
    {"0::/a\n", "cgroup.procs", -1, 0, NULL, NULL, "has '.' at offset 6"},
    {"0::/a\n", "..", -1, 0, NULL, NULL, "has '.' at offset 0"},
    {"0::/a\n", "a b", -1, 0, NULL, NULL, "has ' '"},
};

START_TEST(test_plan_table)
{
        const struct plan_case *c = &plan_cases[_i];
        struct ag_selfcgroup_plan plan;
        memset(&plan, 0x55, sizeof(plan));
        struct cb_error err = {0};
        int rc = ag_selfcgroup_plan(c->text, c->leaf_name, &plan, &err);
        ck_assert_msg(rc == c->rc, "case %d (%s): rc %d, want %d: %s", _i, c->text, rc, c->rc,
                      err.msg);
        if (rc < 0) {
                ck_assert_msg(strstr(err.msg, c->msg) != NULL, "case %d: \"%s\" lacks \"%s\"", _i,
                              err.msg, c->msg);
                return;
        }
        ck_assert_int_eq(plan.where, c->where);
        ck_assert_str_eq(plan.parent, c->parent);
        ck_assert_str_eq(plan.leaf, c->leaf);
}
END_TEST

START_TEST(test_plan_too_long)
{
        /* A path that fits the parse buffer but not with "/<leaf>" added. */
        char text[AG_SELFCGROUP_PATH_MAX + 16];
        size_t n = (size_t)snprintf(text, sizeof(text), "0::/");
        while (n < 4 + AG_SELFCGROUP_PATH_MAX - 4)
                text[n++] = 'a';
        text[n] = '\0';
        struct ag_selfcgroup_plan plan;
        struct cb_error err = {0};
        ck_assert_int_eq(ag_selfcgroup_plan(text, "supervisor", &plan, &err), -1);
        ck_assert_msg(strstr(err.msg, "longer than") != NULL, "%s", err.msg);
        /* One byte too many for the parser itself. */
        while (n < sizeof(text) - 1)
                text[n++] = 'a';
        text[n] = '\0';
        ck_assert_int_eq(ag_selfcgroup_plan(text, "supervisor", &plan, &err), -1);
        ck_assert_msg(strstr(err.msg, "does not fit") != NULL, "%s", err.msg);
}
END_TEST

/*
 * Live cases.
 */

static char mount2[64]; /* a writable cgroup2 mount, "" when none */

static int write_file(const char *path, const char *value)
{
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -1;
        ssize_t w = write(fd, value, strlen(value));
        int saved = errno;
        close(fd);
        errno = saved;
        return w == (ssize_t)strlen(value) ? 0 : -1;
}

static int own_cgroup(char *buf, size_t size)
{
        char *text = NULL;
        struct cb_error err = {0};
        if (cb_read_file("/proc/self/cgroup", 65536, &text, NULL, &err) < 0)
                return -1;
        int rc = cg_parse_proc_cgroup(text, NULL, buf, size, &err);
        free(text);
        return rc < 0 ? -1 : 0;
}

static int pid_cgroup(pid_t pid, char *buf, size_t size)
{
        char file[64], *text = NULL;
        struct cb_error err = {0};
        snprintf(file, sizeof(file), "/proc/%d/cgroup", (int)pid);
        if (cb_read_file(file, 65536, &text, NULL, &err) < 0)
                return -1;
        int rc = cg_parse_proc_cgroup(text, NULL, buf, size, &err);
        free(text);
        return rc < 0 ? -1 : 0;
}

static int procs_empty(const char *dir)
{
        char file[512], *text = NULL;
        struct cb_error err = {0};
        snprintf(file, sizeof(file), "%s/cgroup.procs", dir);
        if (cb_read_file(file, 65536, &text, NULL, &err) < 0)
                return -1;
        int empty = text[0] == '\0';
        free(text);
        return empty;
}

/* In the forked children: no ck_assert (it reports through the test
 * process); a message on stderr and a non-zero exit instead. */
#define CHILD_CHECK(cond, ...)                                                                     \
        do {                                                                                       \
                if (!(cond)) {                                                                     \
                        fprintf(stderr, "line %d: ", __LINE__);                                    \
                        fprintf(stderr, __VA_ARGS__);                                              \
                        fprintf(stderr, "\n");                                                     \
                        _exit(1);                                                                  \
                }                                                                                  \
        } while (0)

static char testcg[64];
static char testdir[128];

static void live_setup(void)
{
        static int seq;
        snprintf(testcg, sizeof(testcg), "cubelet-selftest-%d-%d", (int)getpid(), seq++);
        snprintf(testdir, sizeof(testdir), "%s/%s", mount2, testcg);
        ck_assert_msg(mkdir(testdir, 0755) == 0, "mkdir %s: %s", testdir, strerror(errno));
}

/* Waits for the child, then removes the test cgroups (killing leftovers
 * through cgroup.kill when a failed child left some). */
static void live_finish(pid_t child)
{
        int status;
        ck_assert_int_eq(waitpid(child, &status, 0), child);
        char path[256];
        snprintf(path, sizeof(path), "%s/cgroup.kill", testdir);
        write_file(path, "1");
        snprintf(path, sizeof(path), "%s/supervisor", testdir);
        for (int i = 0; i < 100 && rmdir(path) < 0 && errno == EBUSY; i++)
                usleep(10000);
        for (int i = 0; i < 100 && rmdir(testdir) < 0 && errno == EBUSY; i++)
                usleep(10000);
        struct stat st;
        ck_assert_msg(stat(testdir, &st) < 0, "%s left behind", testdir);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child failed (status %#x)",
                      status);
}

START_TEST(test_live_move)
{
        if (mount2[0] == '\0')
                return;
        live_setup();
        pid_t child = fork();
        ck_assert_int_ge(child, 0);
        if (child == 0) {
                char file[256], cg[512], parent[512];
                struct cb_error err = {0};
                snprintf(file, sizeof(file), "%s/cgroup.procs", testdir);
                CHILD_CHECK(write_file(file, "0") == 0, "join %s: %s", testdir, strerror(errno));
                /* A straggler in the service cgroup: it has to move too. */
                pid_t straggler = fork();
                CHILD_CHECK(straggler >= 0, "fork");
                if (straggler == 0) {
                        prctl(PR_SET_PDEATHSIG, SIGKILL);
                        pause();
                        _exit(0);
                }
                /* A controller the test cgroup could hand down, if any:
                 * enabling it fails while processes live there. */
                char ctrl[32] = "", value[40], *avail = NULL;
                snprintf(file, sizeof(file), "%s/cgroup.controllers", testdir);
                CHILD_CHECK(cb_read_file(file, 4096, &avail, NULL, &err) == 0, "%s", err.msg);
                if (sscanf(avail, "%31s", ctrl) != 1)
                        ctrl[0] = '\0';
                free(avail);
                if (ctrl[0] != '\0') {
                        snprintf(file, sizeof(file), "%s/cgroup.subtree_control", testdir);
                        snprintf(value, sizeof(value), "+%s", ctrl);
                        CHILD_CHECK(write_file(file, value) < 0 && errno == EBUSY,
                                    "enabling %s in %s with processes in it: %s", ctrl, testdir,
                                    strerror(errno));
                }
                int rc =
                    ag_move_self_to_leaf_at(mount2, "supervisor", parent, sizeof(parent), &err);
                CHILD_CHECK(rc == 0, "move: %s", err.msg);
                CHILD_CHECK(strcmp(parent, testcg) == 0, "parent \"%s\", want \"%s\"", parent,
                            testcg);
                char want[512];
                snprintf(want, sizeof(want), "/%s/supervisor", testcg);
                CHILD_CHECK(own_cgroup(cg, sizeof(cg)) == 0 && strcmp(cg, want) == 0,
                            "agent in \"%s\", want \"%s\"", cg, want);
                CHILD_CHECK(pid_cgroup(straggler, cg, sizeof(cg)) == 0 && strcmp(cg, want) == 0,
                            "straggler in \"%s\", want \"%s\"", cg, want);
                CHILD_CHECK(procs_empty(testdir) == 1, "%s still holds processes", testdir);
                /* The delegated cgroup is an inner node now: the kernel
                 * lets it hand a controller down (EBUSY before the move,
                 * checked above). None on a hybrid host's empty cgroup2. */
                if (ctrl[0] != '\0') {
                        snprintf(file, sizeof(file), "%s/cgroup.subtree_control", testdir);
                        snprintf(value, sizeof(value), "+%s", ctrl);
                        CHILD_CHECK(write_file(file, value) == 0, "enable %s in %s: %s", ctrl,
                                    testdir, strerror(errno));
                        value[0] = '-';
                        CHILD_CHECK(write_file(file, value) == 0, "disable %s: %s", ctrl,
                                    strerror(errno));
                }
                /* Idempotent. */
                parent[0] = '\0';
                rc = ag_move_self_to_leaf_at(mount2, "supervisor", parent, sizeof(parent), &err);
                CHILD_CHECK(rc == 0 && strcmp(parent, testcg) == 0, "second call: %d \"%s\" %s", rc,
                            parent, err.msg);
                /* A buffer too small for the parent is an error, not a cut. */
                char tiny[4];
                rc = ag_move_self_to_leaf_at(mount2, "supervisor", tiny, sizeof(tiny), &err);
                CHILD_CHECK(rc == -1 && strstr(err.msg, "does not fit") != NULL, "tiny: %d %s", rc,
                            err.msg);
                kill(straggler, SIGKILL);
                waitpid(straggler, NULL, 0);
                _exit(0);
        }
        live_finish(child);
}
END_TEST

/* The agent at the root of its own cgroup namespace (a container): "/" is
 * not the real root, so the processes move into /supervisor and the parent
 * is "". */
START_TEST(test_live_namespace_root)
{
        if (mount2[0] == '\0')
                return;
        live_setup();
        char mnt[] = "/tmp/cubelet-selftest-XXXXXX";
        ck_assert_ptr_nonnull(mkdtemp(mnt));
        pid_t child = fork();
        ck_assert_int_ge(child, 0);
        if (child == 0) {
                char file[256], cg[512], parent[512];
                struct cb_error err = {0};
                snprintf(file, sizeof(file), "%s/cgroup.procs", testdir);
                CHILD_CHECK(write_file(file, "0") == 0, "join %s: %s", testdir, strerror(errno));
                CHILD_CHECK(unshare(CLONE_NEWCGROUP | CLONE_NEWNS) == 0, "unshare: %s",
                            strerror(errno));
                CHILD_CHECK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0, "private: %s",
                            strerror(errno));
                CHILD_CHECK(mount("cgroup2", mnt, "cgroup2", 0, NULL) == 0, "mount cgroup2: %s",
                            strerror(errno));
                CHILD_CHECK(own_cgroup(cg, sizeof(cg)) == 0 && strcmp(cg, "/") == 0,
                            "in \"%s\" after unshare", cg);
                strcpy(parent, "junk");
                int rc = ag_move_self_to_leaf_at(mnt, "supervisor", parent, sizeof(parent), &err);
                CHILD_CHECK(rc == 0, "move: %s", err.msg);
                CHILD_CHECK(parent[0] == '\0', "parent \"%s\", want \"\"", parent);
                CHILD_CHECK(own_cgroup(cg, sizeof(cg)) == 0 && strcmp(cg, "/supervisor") == 0,
                            "agent in \"%s\", want \"/supervisor\"", cg);
                CHILD_CHECK(procs_empty(mnt) == 1, "the namespace root still holds processes");
                /* A tmpfs at the mount point is a v1 layout: a no-op. */
                CHILD_CHECK(mount("tmpfs", mnt, "tmpfs", 0, NULL) == 0, "mount tmpfs: %s",
                            strerror(errno));
                strcpy(parent, "junk");
                rc = ag_move_self_to_leaf_at(mnt, "other", parent, sizeof(parent), &err);
                CHILD_CHECK(rc == 0 && parent[0] == '\0', "v1: %d \"%s\" %s", rc, parent, err.msg);
                CHILD_CHECK(own_cgroup(cg, sizeof(cg)) == 0 && strcmp(cg, "/supervisor") == 0,
                            "v1 no-op moved the agent to \"%s\"", cg);
                _exit(0);
        }
        live_finish(child);
        ck_assert_int_eq(rmdir(mnt), 0);
}
END_TEST

/* At the real root cgroup nothing moves (checked only when the test runs
 * there, e.g. in a container without a cgroup namespace). */
START_TEST(test_live_real_root)
{
        char cg[512], type[128];
        if (mount2[0] == '\0' || own_cgroup(cg, sizeof(cg)) < 0 || strcmp(cg, "/") != 0)
                return;
        snprintf(type, sizeof(type), "%s/cgroup.type", mount2);
        if (access(type, F_OK) == 0)
                return; /* a namespace root: the case above */
        char parent[64] = "junk";
        struct cb_error err = {0};
        ck_assert_msg(ag_move_self_to_leaf_at(mount2, "supervisor", parent, sizeof(parent), &err) ==
                          0,
                      "%s", err.msg);
        ck_assert_str_eq(parent, "");
        ck_assert_int_eq(own_cgroup(cg, sizeof(cg)), 0);
        ck_assert_str_eq(cg, "/");
        char leaf[128];
        snprintf(leaf, sizeof(leaf), "%s/supervisor", mount2);
        struct stat st;
        ck_assert_msg(stat(leaf, &st) < 0, "%s was created at the real root", leaf);
}
END_TEST

static void find_cgroup2(void)
{
        static const char *const candidates[] = {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"};
        if (geteuid() != 0) {
                fprintf(stderr, "test_selfcgroup: not root; live cases skipped\n");
                return;
        }
        for (size_t i = 0; i < 2; i++) {
                enum cg_mode mode;
                struct cb_error err = {0};
                char probe[128];
                if (cg_detect_mode_at(candidates[i], &mode, &err) < 0 || mode != CG_MODE_UNIFIED)
                        continue;
                snprintf(probe, sizeof(probe), "%s/cubelet-selftest-probe-%d", candidates[i],
                         (int)getpid());
                if (mkdir(probe, 0755) < 0)
                        continue;
                rmdir(probe);
                snprintf(mount2, sizeof(mount2), "%s", candidates[i]);
                return;
        }
        fprintf(stderr, "test_selfcgroup: no writable cgroup2 mount; live cases skipped\n");
}

int main(void)
{
        find_cgroup2();
        Suite *s = suite_create("selfcgroup");
        TCase *tc = tcase_create("plan");
        tcase_add_loop_test(tc, test_plan_table, 0,
                            (int)(sizeof(plan_cases) / sizeof(plan_cases[0])));
        tcase_add_test(tc, test_plan_too_long);
        suite_add_tcase(s, tc);
        TCase *live = tcase_create("live");
        tcase_add_test(live, test_live_move);
        tcase_add_test(live, test_live_namespace_root);
        tcase_add_test(live, test_live_real_root);
        suite_add_tcase(s, live);
        return th_run(s) == 0 ? 0 : 1;
}
