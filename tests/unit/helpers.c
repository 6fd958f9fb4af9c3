/* SPDX-License-Identifier: Apache-2.0 */
/* The unit suites' shared helpers: see helpers.h. */
#include "helpers.h"

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
#include "runtime/image.h"

char th_root[256];
char th_rootfs[300];
char th_cgparent[64];

int th_run(Suite *suite)
{
        SRunner *sr = srunner_create(suite);
        /* forked unless CK_FORK=no asks for one process (e.g. under gdb) */
        srunner_set_fork_status(sr, getenv("CK_FORK") != NULL ? CK_FORK_GETENV : CK_FORK);
        srunner_run_all(sr, CK_NORMAL);
        int failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed;
}

struct k8s_pod *th_pod_json(const char *text)
{
        cJSON *j = cJSON_Parse(text);
        ck_assert_msg(j != NULL, "bad JSON in test: %s", text);
        struct k8s_pod *p = NULL;
        struct cb_error err = {0};
        int rc = k8s_pod_from_json(j, &p, &err);
        cJSON_Delete(j);
        ck_assert_msg(rc == 0, "decode: %s", err.msg);
        return p;
}

struct k8s_node *th_node_json(const char *text)
{
        cJSON *j = cJSON_Parse(text);
        ck_assert_msg(j != NULL, "bad JSON in test: %s", text);
        struct k8s_node *n = NULL;
        struct cb_error err = {0};
        int rc = k8s_node_from_json(j, &n, &err);
        cJSON_Delete(j);
        ck_assert_msg(rc == 0, "decode: %s", err.msg);
        return n;
}

int th_sh(const char *fmt, ...)
{
        char cmd[4096];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(cmd, sizeof(cmd), fmt, ap);
        va_end(ap);
        int r = system(cmd);
        return WIFEXITED(r) ? WEXITSTATUS(r) : -1;
}

int th_need_root_cgroups(const char *name)
{
        if (geteuid() != 0) {
                fprintf(stderr, "%s: needs root, skipping\n", name);
                return 77;
        }
        struct cb_error err;
        if (cg_init(&err) < 0) {
                fprintf(stderr, "%s: no cgroups (%s), skipping\n", name, err.msg);
                return 77;
        }
        return 0;
}

int th_live_setup(const char *name, const char *tag)
{
        struct cb_error err;
        snprintf(th_root, sizeof(th_root), "/tmp/cubelet-%s-%d", tag, (int)getpid());
        snprintf(th_rootfs, sizeof(th_rootfs), "%s/rootfs", th_root);
        snprintf(th_cgparent, sizeof(th_cgparent), "cubelet-%stest-%d", tag, (int)getpid());
        if (mkdir(th_root, 0755) < 0 ||
            th_sh("set -e; R=%s; mkdir -p $R/bin $R/proc $R/sys $R/dev $R/tmp $R/etc $R/root "
                  "%s/logs; cp /bin/busybox $R/bin/busybox; "
                  "for a in $(/bin/busybox --list-full); do [ -e $R/$a ] || "
                  "{ mkdir -p $R/$(dirname $a); ln -s /bin/busybox $R/$a; }; done; "
                  "chmod 1777 $R/tmp; echo 'root:x:0:0:root:/root:/bin/sh' > $R/etc/passwd; "
                  "echo 'root:x:0:' > $R/etc/group",
                  th_rootfs, th_root) != 0 ||
            cg_create(th_cgparent, NULL, &err) < 0) {
                fprintf(stderr, "%s: cannot set up %s / %s\n", name, th_root, th_cgparent);
                th_sweep();
                return -1;
        }
        return 0;
}

static const char *const th_path_env[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", NULL};

void th_base_config(struct rt_container_config *c, const char *id, const char *const *argv)
{
        static char cg[128], log[400];
        memset(c, 0, sizeof(*c));
        snprintf(cg, sizeof(cg), "%s/%s", th_cgparent, id);
        snprintf(log, sizeof(log), "%s/logs/%s.log", th_root, id);
        size_t ncaps;
        c->id = id;
        c->name = id;
        c->root_dir = th_root;
        c->monitor_path = CUBELET_BINARY;
        c->hostname = "ctest";
        c->rootfs_dir = th_rootfs;
        c->argv = argv;
        c->env = th_path_env;
        c->cwd = "/";
        c->caps = rt_caps_default(&ncaps);
        c->n_caps = ncaps;
        c->no_new_privs = true;
        c->seccomp = RT_SECCOMP_RUNTIME_DEFAULT;
        c->cgroup_path = cg;
        c->log_path = log;
}

void th_wait_exit(const char *id, struct rt_container_state *st, int timeout_ms)
{
        struct cb_error err = {0};
        int fd;
        ck_assert_msg(rt_container_exit_fd(th_root, id, &fd, &err) == 0, "exit fd: %s", err.msg);
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int n = poll(&p, 1, timeout_ms);
        close(fd);
        ck_assert_msg(n == 1, "container %s did not exit in %d ms", id, timeout_ms);
        ck_assert_msg(rt_container_state(th_root, id, st, &err) == 0, "state: %s", err.msg);
        ck_assert_int_eq(st->status, RT_CONTAINER_EXITED);
}

void th_sweep(void)
{
        struct cb_error err;
        char **ids;
        size_t n;
        if (th_root[0] == '\0')
                return;
        if (rt_container_list(th_root, &ids, &n, &err) == 0) {
                for (size_t i = 0; i < n; i++) {
                        (void)rt_container_kill_all(th_root, ids[i], &err);
                        (void)rt_container_stop(th_root, ids[i], SIGKILL, 0, &err);
                        (void)rt_container_remove(th_root, ids[i], &err);
                }
                rt_container_list_free(ids, n);
        }
        (void)cg_kill_all(th_cgparent, SIGKILL, &err);
        (void)cg_destroy(th_cgparent, &err);
        (void)rt_rm_rf(th_root, &err);
}
