/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pod sandboxes against the real thing (runtime/sandbox.c): Debian's CNI
 * plugins (/usr/lib/cni: bridge, host-local, portmap, loopback) on a
 * bridge cbt<pid> with a private /24, namespace pins, ping between host
 * and pods, the UTS hostname, the hosts file, a hostPort through portmap,
 * CNI CHECK, a partial ADD, teardown after a crash, hostNetwork.
 *
 * Needs root (namespaces, mounts, iptables): exits 77 otherwise. main()
 * cleans up in the parent whatever the tests did (sandboxes, the bridge,
 * the portmap chains this run created, IPAM files, ip_forward, the
 * private mount, the dirs) and then verifies nothing is left, failing
 * the run otherwise.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/cleanup.h"
#include "lib/file.h"
#include "runtime/nsutil.h"
#include "runtime/sandbox.h"

#include "helpers.h"

static char base[256], root[300], conf[300], conf_noport[300], conf_bad[300], conf_fake[300],
    ipam[300];
static char bridge[16], subnet_prefix[32]; /* "10.x.y." */
static char gateway[48];
static int host_port;

/* ---- helpers ---- */

static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...)
{
        char cmd[2048];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(cmd, sizeof(cmd), fmt, ap);
        va_end(ap);
        int st = system(cmd);
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* stdout of a shell command (malloc'd, never NULL). */
static char *capture(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *capture(const char *fmt, ...)
{
        char cmd[2048];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(cmd, sizeof(cmd), fmt, ap);
        va_end(ap);
        FILE *f = popen(cmd, "r");
        char *buf = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&buf, &len);
        if (f != NULL) {
                char tmp[4096];
                size_t n;
                while ((n = fread(tmp, 1, sizeof(tmp), f)) > 0)
                        fwrite(tmp, 1, n, m);
                pclose(f);
        }
        fclose(m);
        return buf;
}

static char *read_text(const char *path)
{
        char *buf = NULL;
        struct cb_error err;
        ck_assert_msg(cb_read_file(path, 1 << 20, &buf, NULL, &err) == 0, "%s", err.msg);
        return buf;
}

static void write_text(const char *path, const char *text)
{
        struct cb_error err;
        ck_assert_msg(cb_write_file_atomic(path, text, strlen(text), 0644, &err) == 0, "%s",
                      err.msg);
}

static void config_for(struct rt_sandbox_config *cfg, const char *id, const char *hostname,
                       const char *conf_dir)
{
        memset(cfg, 0, sizeof(*cfg));
        snprintf(cfg->id, sizeof(cfg->id), "%s", id);
        cfg->root_dir = root;
        cfg->name = hostname;
        cfg->namespace_ = "cbtest";
        cfg->uid = id;
        cfg->hostname = hostname;
        cfg->dns_domain = "";
        cfg->cni.conf_dir = conf_dir;
        cfg->cni.bin_dirs = "/usr/lib/cni:/opt/cni/bin";
}

/* Files of host-local named after an address of the test subnet. */
static int ipam_leases(void)
{
        _cleanup_free_ char *out =
            capture("ls -1 %s/cbtnet 2>/dev/null | grep -c '^%s' || true", ipam, subnet_prefix);
        return atoi(out);
}

static int bridge_ports(void)
{
        _cleanup_free_ char *out = capture("ip -o link show master %s 2>/dev/null | wc -l", bridge);
        return atoi(out);
}

static bool pinned_in(const char *pinspace, const char *path)
{
        const char *paths[] = {path};
        return rt_ns_all_pinned_in(pinspace, paths, 1);
}

/* ---- tests ---- */

static void wait_listening(const char *netns, int port)
{
        for (int i = 0; i < 50; i++) {
                if (run("nsenter --net=%s ss -ltnH 'sport = :%d' | grep -q LISTEN", netns, port) ==
                    0)
                        return;
                usleep(100 * 1000);
        }
        ck_abort_msg("nothing listens on port %d in %s", port, netns);
}

START_TEST(test_pod_network)
{
        struct rt_sandbox_config cfg;
        struct rt_sandbox a, b;
        struct cb_error err;
        struct rt_port_mapping pm = {host_port, 8080, "tcp", ""};
        int ports0 = bridge_ports(), leases0 = ipam_leases();
        config_for(&cfg, "pod-a", "web-a", conf);
        cfg.ports = &pm;
        cfg.n_ports = 1;
        struct timespec t0, t1;
        struct stat ns0[3], ns1[3];
        static const char *const own[] = {"/proc/thread-self/ns/net", "/proc/thread-self/ns/ipc",
                                          "/proc/thread-self/ns/uts"};
        for (int i = 0; i < 3; i++)
                ck_assert_int_eq(stat(own[i], &ns0[i]), 0);
        char host0[65] = "", host1[65] = "";
        gethostname(host0, sizeof(host0) - 1);
        clock_gettime(CLOCK_MONOTONIC, &t0);
        a.namespaces_mono_us = a.network_mono_us = 1; /* set by the create, not left */
        ck_assert_msg(rt_sandbox_create(&cfg, &a, &err) == 0, "%s", err.msg);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        ck_assert_uint_eq(a.n_pod_ips, 1);
        /* its own steps, in order, inside the call: namespaces, then the ADD */
        uint64_t us0 = (uint64_t)t0.tv_sec * 1000000u + (uint64_t)t0.tv_nsec / 1000u;
        uint64_t us1 = (uint64_t)t1.tv_sec * 1000000u + (uint64_t)t1.tv_nsec / 1000u;
        ck_assert_uint_ge(a.namespaces_mono_us, us0);
        ck_assert_uint_gt(a.network_mono_us, a.namespaces_mono_us);
        ck_assert_uint_le(a.network_mono_us, us1);
        /* the caller's namespaces and hostname are its own still: the pod's
         * were made by a thread of their own */
        for (int i = 0; i < 3; i++) {
                ck_assert_int_eq(stat(own[i], &ns1[i]), 0);
                ck_assert_msg(ns0[i].st_ino == ns1[i].st_ino, "%s changed", own[i]);
        }
        gethostname(host1, sizeof(host1) - 1);
        ck_assert_str_eq(host0, host1);
        struct stat pinned;
        ck_assert_int_eq(stat(a.netns_path, &pinned), 0);
        ck_assert(pinned.st_ino != ns0[0].st_ino);
        ck_assert_msg(strncmp(a.pod_ips[0], subnet_prefix, strlen(subnet_prefix)) == 0, "%s",
                      a.pod_ips[0]);
        /* net in the host's mount table (CNI plugins open it by path); IPC
         * and UTS only in the pin space, kept by one pin in the host */
        ck_assert(rt_ns_is_pinned(a.netns_path));
        ck_assert_str_ne(a.pins_mntns, "");
        ck_assert(rt_ns_is_pinned(a.pins_mntns));
        ck_assert(!rt_ns_is_pinned(a.ipcns_path));
        ck_assert(!rt_ns_is_pinned(a.utsns_path));
        ck_assert(pinned_in(a.pins_mntns, a.ipcns_path));
        ck_assert(pinned_in(a.pins_mntns, a.utsns_path));
        /* eth0 has the IP of the result; lo is up */
        ck_assert_int_eq(run("nsenter --net=%s ip -o -4 addr show dev eth0 | grep -q ' %s/24 '",
                             a.netns_path, a.pod_ips[0]),
                         0);
        ck_assert_int_eq(
            run("nsenter --net=%s ip -o link show lo | grep -q '[<,]UP[,>]'", a.netns_path), 0);
        ck_assert_int_eq(run("nsenter --net=%s ping -c1 -W2 127.0.0.1 >/dev/null 2>&1 || "
                             "nsenter --net=%s busybox ping -c1 -W2 127.0.0.1 >/dev/null",
                             a.netns_path, a.netns_path),
                         0);
        /* the host reaches the pod */
        ck_assert_int_eq(run("busybox ping -c1 -W2 %s >/dev/null", a.pod_ips[0]), 0);
        /* hostname in the UTS namespace, and the files */
        const char *uts_path[] = {a.utsns_path};
        int uts_fd;
        ck_assert_msg(rt_ns_open_pins(a.pins_mntns, uts_path, &uts_fd, 1, &err) == 0, "%s",
                      err.msg);
        _cleanup_free_ char *hn =
            capture("nsenter --uts=/proc/%d/fd/%d hostname", (int)getpid(), uts_fd);
        close(uts_fd);
        ck_assert_str_eq(hn, "web-a\n");
        _cleanup_free_ char *hosts = read_text(a.hosts_path);
        char line[128];
        snprintf(line, sizeof(line), "\n%s\tweb-a\n", a.pod_ips[0]);
        ck_assert_msg(strstr(hosts, line) != NULL, "%s", hosts);
        ck_assert_ptr_nonnull(strstr(hosts, "# Kubernetes-managed hosts file.\n127.0.0.1\t"));
        _cleanup_free_ char *hostname = read_text(a.hostname_path);
        ck_assert_str_eq(hostname, "web-a\n");
        _cleanup_free_ char *resolv = read_text(a.resolv_conf_path);
        ck_assert_ptr_null(strstr(resolv, "nameserver 127."));

        /* a second pod reaches the first */
        config_for(&cfg, "pod-b", "web-b", conf_noport);
        ck_assert_msg(rt_sandbox_create(&cfg, &b, &err) == 0, "%s", err.msg);
        ck_assert_str_ne(a.pod_ips[0], b.pod_ips[0]);
        ck_assert_int_eq(
            run("nsenter --net=%s busybox ping -c1 -W2 %s >/dev/null", b.netns_path, a.pod_ips[0]),
            0);
        ck_assert_int_eq(bridge_ports(), ports0 + 2);
        ck_assert_int_eq(ipam_leases(), leases0 + 2);
        /* the host's mount table has, under the root dir, the sandboxes
         * dir's bind, the pin space's pin and one net pin per pod (it had
         * 3 pins per pod before the pin space) */
        _cleanup_free_ char *mounts =
            capture("awk -v r='%s/' 'index($5, r) == 1' /proc/self/mountinfo | wc -l", root);
        ck_assert_int_eq(atoi(mounts), 4);

        /* hostPort -> containerPort 8080 through portmap's DNAT, reached on
         * the bridge's gateway address (a local address of the host). */
        ck_assert_int_eq(run("nsenter --net=%s timeout 10 busybox nc -l -p 8080 -e echo "
                             "hello-from-pod >/dev/null 2>&1 &",
                             a.netns_path),
                         0);
        wait_listening(a.netns_path, 8080);
        _cleanup_free_ char *got =
            capture("busybox nc -w 3 %s %d </dev/null 2>&1", gateway, host_port);
        ck_assert_msg(strstr(got, "hello-from-pod") != NULL, "via %s:%d got \"%s\"", gateway,
                      host_port, got);
        /* and on 127.0.0.1: portmap sets route_localnet on the bridge and
         * masquerades the 127.0.0.1 source (its "snat", on by default) */
        ck_assert_int_eq(run("nsenter --net=%s timeout 10 busybox nc -l -p 8080 -e echo "
                             "hello-again >/dev/null 2>&1 &",
                             a.netns_path),
                         0);
        wait_listening(a.netns_path, 8080);
        _cleanup_free_ char *got2 =
            capture("busybox nc -w 3 127.0.0.1 %d </dev/null 2>&1", host_port);
        ck_assert_msg(strstr(got2, "hello-again") != NULL, "via 127.0.0.1:%d got \"%s\"", host_port,
                      got2);

        /* load after a restart gives the same */
        struct rt_sandbox l;
        ck_assert_msg(rt_sandbox_load(root, "pod-a", &l, &err) == 0, "%s", err.msg);
        ck_assert_str_eq(l.pod_ips[0], a.pod_ips[0]);
        ck_assert_str_eq(l.netns_path, a.netns_path);
        ck_assert_str_eq(l.pins_mntns, a.pins_mntns);

        /* CHECK: healthy, then broken by hand. On pod-b, whose network has
         * no portmap: Debian 12's portmap (plugins 1.1.1) fails CHECK on
         * IPv4-only pods looking for ip6tables rules
         * (containernetworking/plugins#819). */
        ck_assert_msg(rt_sandbox_check(root, "pod-b", &err) == 0, "%s", err.msg);
        ck_assert_int_eq(run("nsenter --net=%s ip link del eth0", b.netns_path), 0);
        ck_assert_int_eq(rt_sandbox_check(root, "pod-b", &err), -1);
        ck_assert_msg(strstr(err.msg, "CHECK") != NULL && strstr(err.msg, "cbtest/web-b"), "%s",
                      err.msg);

        /* teardown */
        ck_assert_msg(rt_sandbox_remove(root, "pod-a", &err) == 0, "%s", err.msg);
        ck_assert_msg(rt_sandbox_remove(root, "pod-b", &err) == 0, "%s", err.msg);
        ck_assert_msg(rt_sandbox_remove(root, "pod-b", &err) == 0, "idempotent: %s", err.msg);
        ck_assert_int_eq(access(a.dir, F_OK), -1);
        ck_assert(!pinned_in(a.pins_mntns, a.ipcns_path));
        ck_assert_int_eq(bridge_ports(), ports0);
        ck_assert_int_eq(ipam_leases(), leases0);
        ck_assert_int_eq(run("iptables-save -t nat | grep -q '%s'", a.pod_ips[0]), 1);
        ck_assert_int_eq(run("iptables-save -t nat | grep -q 'dport %d'", host_port), 1);
}
END_TEST

START_TEST(test_partial_add)
{
        struct rt_sandbox_config cfg;
        struct rt_sandbox sb;
        struct cb_error err;
        int ports0 = bridge_ports(), leases0 = ipam_leases();
        config_for(&cfg, "pod-partial", "partial", conf_bad);
        ck_assert_int_eq(rt_sandbox_create(&cfg, &sb, &err), -1);
        ck_assert_msg(strstr(err.msg, "cbt-no-such-plugin") != NULL &&
                          strstr(err.msg, "cbtest/partial") != NULL,
                      "%s", err.msg);
        /* everything the bridge plugin made is gone */
        char dir[400];
        snprintf(dir, sizeof(dir), "%s/sandboxes/pod-partial", root);
        ck_assert_int_eq(access(dir, F_OK), -1);
        ck_assert_int_eq(bridge_ports(), ports0);
        ck_assert_int_eq(ipam_leases(), leases0);
        _cleanup_free_ char *cache =
            capture("ls %s/cni-cache/results 2>/dev/null | grep pod-partial", root);
        ck_assert_str_eq(cache, "");
}
END_TEST

START_TEST(test_remove_after_crash)
{
        /* The "agent" creates a sandbox and dies; a new one finds it on disk. */
        int ports0 = bridge_ports(), leases0 = ipam_leases();
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                struct rt_sandbox_config cfg;
                struct rt_sandbox sb;
                struct cb_error err;
                config_for(&cfg, "pod-crash", "crash", conf);
                _exit(rt_sandbox_create(&cfg, &sb, &err) == 0 ? 0 : 1);
        }
        int st;
        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        ck_assert_int_eq(bridge_ports(), ports0 + 1);
        ck_assert_int_eq(ipam_leases(), leases0 + 1);
        /* and it died in the middle: after the ADD, before the files */
        char p[400];
        snprintf(p, sizeof(p), "%s/sandboxes/pod-crash/state.json", root);
        write_text(p, "{\"version\":1,\"namespaces\":true,\"cniAdd\":\"started\","
                      "\"podIPs\":[],\"complete\":false}");
        snprintf(p, sizeof(p), "%s/sandboxes/pod-crash/hosts", root);
        unlink(p);
        struct cb_error err;
        struct rt_sandbox sb;
        ck_assert_int_eq(rt_sandbox_load(root, "pod-crash", &sb, &err), -1);
        ck_assert_ptr_nonnull(strstr(err.msg, "not completely created"));
        char **ids;
        size_t n;
        ck_assert_int_eq(rt_sandbox_list(root, &ids, &n, &err), 0);
        bool listed = false;
        for (size_t i = 0; i < n; i++)
                listed = listed || strcmp(ids[i], "pod-crash") == 0;
        ck_assert(listed);
        rt_sandbox_ids_free(ids, n);
        ck_assert_msg(rt_sandbox_remove(root, "pod-crash", &err) == 0, "%s", err.msg);
        ck_assert_int_eq(bridge_ports(), ports0);
        ck_assert_int_eq(ipam_leases(), leases0);
        ck_assert_int_eq(rt_sandbox_list(root, &ids, &n, &err), 0);
        for (size_t i = 0; i < n; i++)
                ck_assert_str_ne(ids[i], "pod-crash");
        rt_sandbox_ids_free(ids, n);
}
END_TEST

static volatile sig_atomic_t n_sigchld;

static void count_sigchld(int sig)
{
        (void)sig;
        n_sigchld++;
}

START_TEST(test_host_network)
{
        struct rt_sandbox_config cfg;
        struct rt_sandbox sb;
        struct cb_error err;
        config_for(&cfg, "pod-host", "hostpod", conf_fake);
        cfg.host_network = true;
        cfg.cni.bin_dirs = conf_fake;
        cfg.resolv_conf = "nameserver 10.96.0.10\nsearch cbtest.svc.cluster.local\noptions "
                          "ndots:5";
        sb.network_mono_us = 1;
        /* no process is forked to pin the namespaces (no CNI plugin runs
         * here either): no SIGCHLD comes */
        struct sigaction chld = {.sa_handler = count_sigchld}, old_chld;
        sigemptyset(&chld.sa_mask);
        sigaction(SIGCHLD, &chld, &old_chld);
        n_sigchld = 0;
        ck_assert_msg(rt_sandbox_create(&cfg, &sb, &err) == 0, "%s", err.msg);
        sigaction(SIGCHLD, &old_chld, NULL);
        ck_assert_int_eq(n_sigchld, 0);
        ck_assert_uint_eq(sb.network_mono_us, 0);    /* no CNI ADD */
        ck_assert_uint_gt(sb.namespaces_mono_us, 0); /* the IPC namespace */
        ck_assert_str_eq(sb.netns_path, "");
        ck_assert_str_eq(sb.utsns_path, "");
        ck_assert(pinned_in(sb.pins_mntns, sb.ipcns_path)); /* hostIPC is false */
        ck_assert_uint_eq(sb.n_pod_ips, 0);
        char marker[400];
        snprintf(marker, sizeof(marker), "%s/fake-called", base);
        ck_assert_msg(access(marker, F_OK) < 0, "a CNI plugin ran for a hostNetwork pod");
        _cleanup_free_ char *hosts = read_text(sb.hosts_path);
        ck_assert_ptr_nonnull(strstr(hosts, "# Kubernetes-managed hosts file (host network).\n"));
        char h[256] = "", expect[300];
        gethostname(h, sizeof(h) - 1);
        snprintf(expect, sizeof(expect), "%s\n", h);
        _cleanup_free_ char *hn = read_text(sb.hostname_path);
        ck_assert_str_eq(hn, expect);
        _cleanup_free_ char *resolv = read_text(sb.resolv_conf_path);
        ck_assert_str_eq(resolv, "nameserver 10.96.0.10\nsearch cbtest.svc.cluster.local\n"
                                 "options ndots:5\n");
        ck_assert_msg(rt_sandbox_check(root, "pod-host", &err) == 0, "%s", err.msg);
        /* a pin gone from the pin space is named */
        const char *ipc[] = {sb.ipcns_path};
        ck_assert_msg(rt_ns_unpin_in(sb.pins_mntns, ipc, 1, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(rt_sandbox_check(root, "pod-host", &err), -1);
        ck_assert_msg(strstr(err.msg, "the ipc namespace pin") != NULL, "%s", err.msg);
        ck_assert_msg(rt_sandbox_remove(root, "pod-host", &err) == 0, "%s", err.msg);
        ck_assert_int_eq(access(marker, F_OK), -1);
        ck_assert_int_eq(access(sb.dir, F_OK), -1);
}
END_TEST

/* A sandbox made by a cubelet before the pin space (its IPC pin in the
 * host's mount table, no "pinSpace" in its state) is still found, checked
 * and removed. */
START_TEST(test_pins_in_host)
{
        struct rt_sandbox_config cfg;
        struct rt_sandbox sb, l;
        struct cb_error err;
        config_for(&cfg, "pod-old", "oldpod", conf_fake);
        cfg.host_network = true;
        ck_assert_msg(rt_sandbox_create(&cfg, &sb, &err) == 0, "%s", err.msg);
        const char *ipc[] = {sb.ipcns_path};
        char ns_dir[600];
        snprintf(ns_dir, sizeof(ns_dir), "%s/ns", sb.dir);
        ck_assert_msg(rt_ns_unpin_in(sb.pins_mntns, ipc, 1, &err) == 0, "%s", err.msg);
        ck_assert_msg(rt_ns_pin_process(getpid(), ns_dir, "ipc", NULL, &err) == 0, "%s", err.msg);
        /* state.json is cJSON_Print'ed: one member per line */
        ck_assert_int_eq(run("sed -i '/\"pinSpace\"/d' %s/state.json && ! grep -q pinSpace "
                             "%s/state.json",
                             sb.dir, sb.dir),
                         0);
        ck_assert_msg(rt_sandbox_load(root, "pod-old", &l, &err) == 0, "%s", err.msg);
        ck_assert_str_eq(l.pins_mntns, "");
        ck_assert(rt_ns_is_pinned(l.ipcns_path));
        ck_assert_msg(rt_sandbox_check(root, "pod-old", &err) == 0, "%s", err.msg);
        ck_assert_msg(rt_sandbox_remove(root, "pod-old", &err) == 0, "%s", err.msg);
        ck_assert_int_eq(access(sb.dir, F_OK), -1);
        ck_assert_int_eq(run("grep -q ' %s' /proc/self/mountinfo", sb.dir), 1);
}
END_TEST

/* A root dir with ".." in it (the CLI makes a relative --root-dir such as
 * "../state" absolute by prefixing the working directory): the pin space
 * mirrors the path as it resolves it, so the pins are found by the same
 * strings as in the host. */
START_TEST(test_root_dotdot)
{
        struct rt_sandbox_config cfg;
        struct rt_sandbox sb;
        struct cb_error err;
        char r2[400];
        snprintf(r2, sizeof(r2), "%s/sub/../root2", base);
        ck_assert_int_eq(run("mkdir -p %s/sub %s/root2", base, base), 0);
        config_for(&cfg, "pod-dotdot", "dotdot", conf_fake);
        cfg.root_dir = r2;
        cfg.host_network = true;
        ck_assert_msg(rt_sandbox_create(&cfg, &sb, &err) == 0, "%s", err.msg);
        ck_assert(!rt_ns_is_pinned(sb.ipcns_path));
        ck_assert(pinned_in(sb.pins_mntns, sb.ipcns_path));
        ck_assert_msg(rt_sandbox_check(r2, "pod-dotdot", &err) == 0, "%s", err.msg);
        ck_assert_msg(rt_sandbox_remove(r2, "pod-dotdot", &err) == 0, "%s", err.msg);
        ck_assert_msg(rt_sandbox_release_root(r2, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(run("grep -q ' %s/root2' /proc/self/mountinfo", base), 1);
}
END_TEST

START_TEST(test_refusals)
{
        struct rt_sandbox_config cfg;
        struct rt_sandbox sb;
        struct cb_error err;
        config_for(&cfg, "Bad_Id", "x", conf);
        ck_assert_int_eq(rt_sandbox_create(&cfg, &sb, &err), -1);
        ck_assert_ptr_nonnull(strstr(err.msg, "[a-z0-9-]"));
        config_for(&cfg, "../etc", "x", conf);
        ck_assert_int_eq(rt_sandbox_create(&cfg, &sb, &err), -1);
        config_for(&cfg, "pod-nohost", "", conf);
        cfg.name = "nohost";
        ck_assert_int_eq(rt_sandbox_create(&cfg, &sb, &err), -1);
        ck_assert_ptr_nonnull(strstr(err.msg, "hostname"));
        ck_assert_int_eq(rt_sandbox_remove(root, "never-existed", &err), 0);
        ck_assert_int_eq(rt_sandbox_load(root, "never-existed", &sb, &err), -1);
        /* a root dir past RT_ROOT_DIR_MAX is refused before anything is
         * made (the sandbox's paths would not fit their buffers); at the
         * limit the longest path still fits */
        char long_root[RT_ROOT_DIR_MAX + 2];
        memset(long_root, 'r', sizeof(long_root) - 1);
        long_root[0] = '/';
        long_root[sizeof(long_root) - 1] = '\0';
        config_for(&cfg, "pod-long", "long", conf_fake);
        cfg.root_dir = long_root;
        ck_assert_int_eq(rt_sandbox_create(&cfg, &sb, &err), -1);
        ck_assert_int_eq(err.code, ENAMETOOLONG);
        ck_assert_msg(strstr(err.msg, "401 bytes long; at most 400") != NULL, "%s", err.msg);
        ck_assert_int_eq(access(long_root, F_OK), -1);
        _Static_assert(RT_ROOT_DIR_MAX + sizeof("/sandboxes/") - 1 + RT_ID_MAX - 1 +
                               sizeof("/resolv.conf") <=
                           RT_SANDBOX_PATH_MAX,
                       "the longest sandbox path fits");
        /* an existing id is refused and the existing sandbox kept */
        config_for(&cfg, "pod-dup", "dup", conf_fake);
        cfg.host_network = true;
        cfg.cni.bin_dirs = conf_fake;
        ck_assert_msg(rt_sandbox_create(&cfg, &sb, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(rt_sandbox_create(&cfg, &sb, &err), -1);
        ck_assert_ptr_nonnull(strstr(err.msg, "already exists"));
        ck_assert_int_eq(access(sb.dir, F_OK), 0);
        ck_assert_msg(rt_sandbox_remove(root, "pod-dup", &err) == 0, "%s", err.msg);
}
END_TEST

/* ---- setup and the final sweep ---- */

static int pick_subnet(void)
{
        _cleanup_free_ char *routes = capture("ip -4 route show table all; ip -4 addr");
        for (int k = 0; k < 200; k++) {
                int x = 200 + (int)((getpid() + k) % 50), y = (int)((getpid() / 50 + k) % 250);
                snprintf(subnet_prefix, sizeof(subnet_prefix), "10.%d.%d.", x, y);
                char net[40];
                snprintf(net, sizeof(net), "10.%d.", x);
                if (strstr(routes, net) == NULL) {
                        snprintf(gateway, sizeof(gateway), "%s1", subnet_prefix);
                        return 0;
                }
        }
        return -1;
}

static int write_configs(void)
{
        char text[2048], p[400];
        snprintf(text, sizeof(text),
                 "{\"cniVersion\":\"1.0.0\",\"name\":\"cbtnet\",\"plugins\":["
                 "{\"type\":\"bridge\",\"bridge\":\"%s\",\"isGateway\":true,\"ipMasq\":false,"
                 "\"hairpinMode\":true,\"ipam\":{\"type\":\"host-local\",\"dataDir\":\"%s\","
                 "\"ranges\":[[{\"subnet\":\"%s0/24\"}]],\"routes\":[{\"dst\":\"0.0.0.0/0\"}]}},"
                 "{\"type\":\"portmap\",\"capabilities\":{\"portMappings\":true}},"
                 "{\"type\":\"loopback\"}]}",
                 bridge, ipam, subnet_prefix);
        snprintf(p, sizeof(p), "%s/10-cbt.conflist", conf);
        struct cb_error err;
        if (cb_write_file_atomic(p, text, strlen(text), 0644, &err) < 0)
                return -1;
        /* the same network without portmap */
        snprintf(text, sizeof(text),
                 "{\"cniVersion\":\"1.0.0\",\"name\":\"cbtnet\",\"plugins\":["
                 "{\"type\":\"bridge\",\"bridge\":\"%s\",\"isGateway\":true,\"ipMasq\":false,"
                 "\"ipam\":{\"type\":\"host-local\",\"dataDir\":\"%s\","
                 "\"ranges\":[[{\"subnet\":\"%s0/24\"}]]}},{\"type\":\"loopback\"}]}",
                 bridge, ipam, subnet_prefix);
        snprintf(p, sizeof(p), "%s/10-noport.conflist", conf_noport);
        if (cb_write_file_atomic(p, text, strlen(text), 0644, &err) < 0)
                return -1;
        /* the same network, then a plugin that does not exist */
        snprintf(text, sizeof(text),
                 "{\"cniVersion\":\"1.0.0\",\"name\":\"cbtnet\",\"plugins\":["
                 "{\"type\":\"bridge\",\"bridge\":\"%s\",\"isGateway\":true,\"ipMasq\":false,"
                 "\"ipam\":{\"type\":\"host-local\",\"dataDir\":\"%s\","
                 "\"ranges\":[[{\"subnet\":\"%s0/24\"}]]}},"
                 "{\"type\":\"cbt-no-such-plugin\"}]}",
                 bridge, ipam, subnet_prefix);
        snprintf(p, sizeof(p), "%s/10-bad.conflist", conf_bad);
        if (cb_write_file_atomic(p, text, strlen(text), 0644, &err) < 0)
                return -1;
        /* a network whose plugin only leaves a marker (must never run) */
        snprintf(text, sizeof(text), "#!/bin/sh\ntouch %s/fake-called\nexit 1\n", base);
        snprintf(p, sizeof(p), "%s/cbt-fake", conf_fake);
        if (cb_write_file_atomic(p, text, strlen(text), 0755, &err) < 0)
                return -1;
        snprintf(text, sizeof(text),
                 "{\"cniVersion\":\"1.0.0\",\"name\":\"fake\",\"type\":"
                 "\"cbt-fake\"}");
        snprintf(p, sizeof(p), "%s/10-fake.conf", conf_fake);
        return cb_write_file_atomic(p, text, strlen(text), 0644, &err);
}

/* Removes what a failed test may have left and reports what stayed. */
static int sweep(const char *chains_before, const char *ip_forward_before)
{
        int leftovers = 0;
        struct cb_error err;
        char **ids;
        size_t n;
        if (rt_sandbox_list(root, &ids, &n, &err) == 0) {
                for (size_t i = 0; i < n; i++) {
                        fprintf(stderr, "test_sandbox: sandbox %s was left; removing\n", ids[i]);
                        leftovers++;
                        if (rt_sandbox_remove(root, ids[i], &err) < 0)
                                fprintf(stderr, "test_sandbox: %s\n", err.msg);
                }
                rt_sandbox_ids_free(ids, n);
        }
        if (bridge_ports() != 0) {
                fprintf(stderr, "test_sandbox: veths left on %s\n", bridge);
                leftovers++;
        }
        if (ipam_leases() != 0) {
                fprintf(stderr, "test_sandbox: IPAM leases left in %s\n", ipam);
                leftovers++;
        }
        if (run("iptables-save -t nat | grep -q '%s'", subnet_prefix) == 0) {
                fprintf(stderr, "test_sandbox: iptables rules for %s0/24 left\n", subnet_prefix);
                leftovers++;
        }
        if (rt_sandbox_release_root(root, &err) < 0) {
                fprintf(stderr, "test_sandbox: %s\n", err.msg);
                leftovers++;
        }
        run("ip link del %s 2>/dev/null", bridge);
        /* portmap keeps its top-level chains (CNI-HOSTPORT-*) after the last
         * DEL by design; remove those this run created. */
        _cleanup_free_ char *chains = capture("iptables-save -t nat | sed -n 's/^:\\(CNI-[^ ]*\\) "
                                              ".*/\\1/p'");
        char *save = NULL;
        for (char *c = strtok_r(chains, "\n", &save); c != NULL; c = strtok_r(NULL, "\n", &save)) {
                char needle[128];
                snprintf(needle, sizeof(needle), "\n%s\n", c);
                if (strstr(chains_before, needle) != NULL)
                        continue;
                if (strncmp(c, "CNI-HOSTPORT-", 13) != 0) {
                        fprintf(stderr, "test_sandbox: chain %s left\n", c);
                        leftovers++;
                }
                run("for t in PREROUTING OUTPUT POSTROUTING; do iptables-save -t nat | "
                    "sed -n \"s/^-A $t \\(.* -j %s\\)$/\\1/p\" | while read -r r; do "
                    "eval iptables -t nat -D $t $r; done; done",
                    c);
                run("iptables -t nat -F %s; iptables -t nat -X %s", c, c);
        }
        if (cb_write_file_atomic("/proc/sys/net/ipv4/ip_forward", ip_forward_before,
                                 strlen(ip_forward_before), 0644, &err) < 0) {
                /* procfs has no rename: write in place */
                FILE *f = fopen("/proc/sys/net/ipv4/ip_forward", "we");
                if (f != NULL) {
                        fputs(ip_forward_before, f);
                        fclose(f);
                }
        }
        run("rm -rf %s", base);
        if (access(base, F_OK) == 0) {
                fprintf(stderr, "test_sandbox: %s could not be removed\n", base);
                leftovers++;
        }
        if (run("grep -q ' %s' /proc/self/mountinfo", base) == 0) {
                fprintf(stderr, "test_sandbox: mounts under %s left\n", base);
                leftovers++;
        }
        return leftovers;
}

int main(void)
{
        if (geteuid() != 0) {
                fprintf(stderr, "test_sandbox: needs root (namespaces, mounts, iptables)\n");
                return 77;
        }
        if (access("/usr/lib/cni/bridge", X_OK) < 0 || run("command -v iptables nsenter busybox "
                                                           ">/dev/null") != 0) {
                fprintf(stderr, "test_sandbox: needs containernetworking-plugins, iptables, "
                                "util-linux and busybox-static (scripts/deps.sh)\n");
                return 77;
        }
        snprintf(base, sizeof(base), "/tmp/cubelet-sbx-XXXXXX");
        if (mkdtemp(base) == NULL || pick_subnet() < 0)
                return EXIT_FAILURE;
        snprintf(root, sizeof(root), "%s/root", base);
        snprintf(conf, sizeof(conf), "%s/net.d", base);
        snprintf(conf_bad, sizeof(conf_bad), "%s/net.d-bad", base);
        snprintf(conf_noport, sizeof(conf_noport), "%s/net.d-noport", base);
        snprintf(conf_fake, sizeof(conf_fake), "%s/net.d-fake", base);
        snprintf(ipam, sizeof(ipam), "%s/ipam", base);
        snprintf(bridge, sizeof(bridge), "cbt%d", (int)(getpid() % 1000000));
        host_port = 20000 + (int)(getpid() % 20000);
        mkdir(root, 0700);
        mkdir(conf, 0700);
        mkdir(conf_bad, 0700);
        mkdir(conf_noport, 0700);
        mkdir(conf_fake, 0700);
        mkdir(ipam, 0700);
        /* the fake plugin dir doubles as its bin dir */
        _cleanup_free_ char *chains_before =
            capture("echo; iptables-save -t nat | sed -n 's/^:\\(CNI-[^ ]*\\) .*/\\1/p'");
        _cleanup_free_ char *fwd = capture("cat /proc/sys/net/ipv4/ip_forward");
        if (write_configs() < 0)
                return EXIT_FAILURE;

        Suite *s = suite_create("sandbox");
        TCase *tc = tcase_create("cni");
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, test_pod_network);
        tcase_add_test(tc, test_partial_add);
        tcase_add_test(tc, test_remove_after_crash);
        tcase_add_test(tc, test_host_network);
        tcase_add_test(tc, test_pins_in_host);
        tcase_add_test(tc, test_root_dotdot);
        tcase_add_test(tc, test_refusals);
        suite_add_tcase(s, tc);
        int failed = th_run(s);
        int left = sweep(chains_before, fwd);
        if (left > 0)
                fprintf(stderr, "test_sandbox: %d kinds of leftovers (see above)\n", left);
        return failed == 0 && left == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
