/* SPDX-License-Identifier: Apache-2.0 */
/* Pod sysctls: the kubelet's allowlist (agent/k8s/sysctl.c, texts of
 * pkg/kubelet/sysctl) and the runtime's write into a pod's namespaces
 * (runtime/sysctl.c, as root: a network namespace of its own, nothing of
 * the host's changes). */
#include <check.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/k8s/sysctl.h"
#include "lib/cleanup.h"
#include "runtime/sysctl.h"

#include "helpers.h"

static struct k8s_pod *pod(const char *extra, const char *sysctls)
{
        char buf[4096];
        snprintf(buf, sizeof(buf),
                 "{\"metadata\":{\"name\":\"p\",\"namespace\":\"default\",\"uid\":\"u-1\"},"
                 "\"spec\":{%s\"securityContext\":{\"sysctls\":%s},"
                 "\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]}}",
                 extra, sysctls);
        return th_pod_json(buf);
}

static void admit(const struct k8s_sysctl_allowlist *w, const char *extra, const char *sysctls,
                  const char *want_msg)
{
        struct k8s_pod *p = pod(extra, sysctls);
        struct k8s_admit_result res;
        k8s_sysctl_admit(w, p, &res);
        if (want_msg == NULL) {
                ck_assert_msg(res.admitted, "%s: %s", sysctls, res.message);
        } else {
                ck_assert_msg(!res.admitted, "%s admitted", sysctls);
                ck_assert_str_eq(res.reason, "SysctlForbidden");
                ck_assert_str_eq(res.message, want_msg);
        }
        k8s_pod_free(p);
}

START_TEST(test_names)
{
        char out[64];
        k8s_sysctl_to_dots("net/ipv4/conf/eth0.100/rp_filter", out, sizeof(out));
        ck_assert_str_eq(out, "net.ipv4.conf.eth0/100.rp_filter");
        k8s_sysctl_to_dots("net.ipv4.tcp_syncookies", out, sizeof(out));
        ck_assert_str_eq(out, "net.ipv4.tcp_syncookies");
        ck_assert_int_eq(k8s_sysctl_namespaced_by("kernel.sem"), K8S_SYSCTL_NS_IPC);
        ck_assert_int_eq(k8s_sysctl_namespaced_by("kernel.shmmax"), K8S_SYSCTL_NS_IPC);
        ck_assert_int_eq(k8s_sysctl_namespaced_by("fs.mqueue.msg_max"), K8S_SYSCTL_NS_IPC);
        ck_assert_int_eq(k8s_sysctl_namespaced_by("net.core.somaxconn"), K8S_SYSCTL_NS_NET);
        ck_assert_int_eq(k8s_sysctl_namespaced_by("kernel.semaphore"), K8S_SYSCTL_NS_UNKNOWN);
        ck_assert_int_eq(k8s_sysctl_namespaced_by("vm.swappiness"), K8S_SYSCTL_NS_UNKNOWN);
}
END_TEST

START_TEST(test_admission)
{
        /* the safe list alone */
        admit(NULL, "",
              "[{\"name\":\"kernel.shm_rmid_forced\",\"value\":\"1\"},"
              "{\"name\":\"net/ipv4/ip_unprivileged_port_start\",\"value\":\"0\"}]",
              NULL);
        admit(NULL, "", "[{\"name\":\"net.ipv4.ip_forward\",\"value\":\"1\"}]",
              "forbidden sysctl: \"net.ipv4.ip_forward\" not allowlisted");
        admit(NULL, "\"hostNetwork\":true,",
              "[{\"name\":\"net.ipv4.tcp_syncookies\",\"value\":\"1\"}]",
              "forbidden sysctl: \"net.ipv4.tcp_syncookies\" not allowed with host net enabled");
        admit(NULL, "\"hostIPC\":true,", "[{\"name\":\"kernel.shm_rmid_forced\",\"value\":\"1\"}]",
              "forbidden sysctl: \"kernel.shm_rmid_forced\" not allowed with host ipc enabled");
        /* with --allowed-unsafe-sysctls */
        struct k8s_sysctl_allowlist w;
        struct cb_error err = {0};
        const char *const unsafe[] = {"net.core.somaxconn", "kernel.msg*"};
        ck_assert_int_eq(k8s_sysctl_allowlist_init(&w, unsafe, 2, &err), 0);
        admit(&w, "",
              "[{\"name\":\"net.core.somaxconn\",\"value\":\"1024\"},"
              "{\"name\":\"kernel.msgmax\",\"value\":\"8192\"}]",
              NULL);
        admit(&w, "", "[{\"name\":\"net.core.rmem_max\",\"value\":\"1\"}]",
              "forbidden sysctl: \"net.core.rmem_max\" not allowlisted");
        /* the flag's form gives the same list */
        ck_assert_int_eq(k8s_sysctl_allowlist_parse(&w, "net.core.somaxconn,kernel.msg*", &err), 0);
        admit(&w, "", "[{\"name\":\"kernel.msgmnb\",\"value\":\"1\"}]", NULL);
        ck_assert_int_eq(k8s_sysctl_allowlist_parse(&w, "net.core.x,vm.swappiness", &err), -1);
        /* the kubelet refuses to start with a pattern it cannot place */
        const char *const host[] = {"vm.swappiness"};
        ck_assert_int_eq(k8s_sysctl_allowlist_init(&w, host, 1, &err), -1);
        ck_assert_str_eq(err.msg, "the sysctl \"vm.swappiness\" are not known to be namespaced");
        const char *const hostp[] = {"kernel.*"};
        ck_assert_int_eq(k8s_sysctl_allowlist_init(&w, hostp, 1, &err), -1);
        ck_assert_str_eq(err.msg, "the sysctls \"kernel.*\" are not known to be namespaced");
        const char *const bad[] = {"net..x"};
        ck_assert_int_eq(k8s_sysctl_allowlist_init(&w, bad, 1, &err), -1);
        ck_assert_ptr_nonnull(strstr(err.msg, "must have at most 253 characters and match regex"));
}
END_TEST

/* Reads /proc/sys/<path> in the network namespace pinned at ns (or the
 * caller's with ns NULL). */
static int read_in(const char *ns, const char *path, char *buf, size_t size)
{
        int p[2];
        ck_assert_int_eq(pipe(p), 0);
        pid_t pid = fork();
        if (pid == 0) {
                close(p[0]);
                if (ns != NULL) {
                        int fd = open(ns, O_RDONLY);
                        if (fd < 0 || setns(fd, CLONE_NEWNET) < 0)
                                _exit(1);
                }
                char full[256];
                snprintf(full, sizeof(full), "/proc/sys/%s", path);
                int fd = open(full, O_RDONLY);
                char b[64];
                ssize_t n = fd < 0 ? -1 : read(fd, b, sizeof(b));
                if (n > 0 && write(p[1], b, (size_t)n) < 0)
                        _exit(1);
                _exit(n > 0 ? 0 : 1);
        }
        close(p[1]);
        ssize_t n = read(p[0], buf, size - 1);
        close(p[0]);
        int st;
        waitpid(pid, &st, 0);
        buf[n > 0 ? n : 0] = '\0';
        return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

START_TEST(test_runtime_write)
{
        if (geteuid() != 0)
                return; /* needs CAP_SYS_ADMIN for the namespace */
        char dir[] = "/tmp/cubelet-sysctl-XXXXXX";
        ck_assert_ptr_nonnull(mkdtemp(dir));
        char ns[300];
        snprintf(ns, sizeof(ns), "%s/net", dir);
        int fd = open(ns, O_RDONLY | O_CREAT, 0444);
        ck_assert_int_ge(fd, 0);
        close(fd);
        /* a network namespace pinned by a bind mount, as the sandbox's */
        pid_t pid = fork();
        if (pid == 0) {
                char src[64];
                if (unshare(CLONE_NEWNET) < 0)
                        _exit(1);
                snprintf(src, sizeof(src), "/proc/%d/ns/net", (int)getpid());
                _exit(mount(src, ns, NULL, MS_BIND, NULL) < 0 ? 1 : 0);
        }
        int st;
        waitpid(pid, &st, 0);
        ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        char host_before[64], got[64];
        ck_assert_int_eq(
            read_in(NULL, "net/ipv4/ip_unprivileged_port_start", host_before, sizeof(host_before)),
            0);
        const char *want = strcmp(host_before, "1000\n") == 0 ? "1001" : "1000";
        struct rt_sysctl s[] = {{"net.ipv4.ip_unprivileged_port_start", want}};
        struct cb_error err = {0};
        ck_assert_msg(rt_sysctls_apply(ns, NULL, NULL, s, 1, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(read_in(ns, "net/ipv4/ip_unprivileged_port_start", got, sizeof(got)), 0);
        char want_nl[16];
        snprintf(want_nl, sizeof(want_nl), "%s\n", want);
        ck_assert_str_eq(got, want_nl);
        ck_assert_int_eq(read_in(NULL, "net/ipv4/ip_unprivileged_port_start", got, sizeof(got)), 0);
        ck_assert_str_eq(got, host_before); /* the host's is untouched */
        /* refused: a host-wide one, an IPC one without an IPC namespace,
         * a name that walks out of /proc/sys, one that does not exist */
        struct rt_sysctl vm[] = {{"vm.swappiness", "1"}};
        ck_assert_int_eq(rt_sysctls_apply(ns, NULL, NULL, vm, 1, &err), -1);
        ck_assert_str_eq(err.msg,
                         "sysctl vm.swappiness is not namespaced: it would change the host");
        struct rt_sysctl ipc[] = {{"kernel.shm_rmid_forced", "1"}};
        ck_assert_int_eq(rt_sysctls_apply(ns, NULL, NULL, ipc, 1, &err), -1);
        ck_assert_str_eq(err.msg, "sysctl kernel.shm_rmid_forced: the pod shares the host's IPC "
                                  "namespace");
        struct rt_sysctl out[] = {{"net/../../../etc/passwd", "x"}};
        ck_assert_int_eq(rt_sysctls_apply(ns, NULL, NULL, out, 1, &err), -1);
        ck_assert_ptr_nonnull(strstr(err.msg, "is not a sysctl name"));
        struct rt_sysctl missing[] = {{"net.ipv4.no_such_sysctl", "1"}};
        ck_assert_int_eq(rt_sysctls_apply(ns, NULL, NULL, missing, 1, &err), -1);
        ck_assert_str_eq(err.msg, "sysctl net.ipv4.no_such_sysctl: cannot open "
                                  "/proc/sys/net/ipv4/no_such_sysctl: No such file or directory");
        ck_assert_int_eq(umount2(ns, MNT_DETACH), 0);
        unlink(ns);
        rmdir(dir);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("sysctl");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_names);
        tcase_add_test(tc, test_admission);
        tcase_add_test(tc, test_runtime_write);
        suite_add_tcase(s, tc);
        return th_run(s) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
