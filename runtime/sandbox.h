/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Pod sandboxes (CRI RunPodSandbox/StopPodSandbox/RemovePodSandbox in
 * spirit): the namespaces a pod's containers share (net, IPC, UTS), pinned
 * by bind-mounting /proc/<pid>/ns/<type> onto files under the sandbox's run
 * directory so no pause process is needed; the pod's network through CNI;
 * the per-pod /etc/hosts, /etc/hostname and /etc/resolv.conf. Knows nothing
 * of the Kubernetes API: the agent fills rt_sandbox_config from a pod.
 *
 * Layout: <root_dir>/sandboxes/<id>/
 *     config.json   the rt_sandbox_config as given (for teardown after a crash)
 *     state.json    what was set up so far (written atomically after each step)
 *     ns/net        the network namespace's pin (a bind mount in the host)
 *     ns/ipc ns/uts ns/pid   pins in the pin space (runtime/nsutil.h)
 *     hosts hostname resolv.conf
 * and <root_dir>/sandboxes/.pins-mntns, the pin of the pin space (one for
 * the node).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lib/error.h"
#include "runtime/sysctl.h"

#define RT_ID_MAX   80
#define RT_PATH_MAX 4096
/* A sandbox's own paths (<root_dir>/sandboxes/<id>/...) are kept in
 * buffers of RT_SANDBOX_PATH_MAX, not PATH_MAX: a pod worker holds its
 * sandbox for the pod's life, and ten PATH_MAX buffers were 40 KiB of
 * every pod. So the root dir is at most RT_ROOT_DIR_MAX bytes (the
 * longest path under it, "/sandboxes/<id>/resolv.conf", fits the rest). */
#define RT_SANDBOX_PATH_MAX 512
#define RT_ROOT_DIR_MAX     400

struct rt_port_mapping {
        int32_t host_port;
        int32_t container_port;
        char protocol[8]; /* "tcp", "udp", "sctp" (CNI portmap spelling) */
        char host_ip[64]; /* "" = all addresses */
};

struct rt_cni_config {
        const char *conf_dir;  /* first config file (sorted) is used */
        const char *bin_dirs;  /* colon-separated search path for plugins */
        const char *cache_dir; /* CNI result cache (under root_dir by default) */
};

struct rt_sandbox_config {
        char id[RT_ID_MAX];       /* unique, [a-z0-9-], e.g. the pod uid */
        const char *root_dir;     /* cubelet --root-dir */
        const char *name;         /* pod name (K8S_POD_NAME for CNI) */
        const char *namespace_;   /* pod namespace (K8S_POD_NAMESPACE) */
        const char *uid;          /* pod uid (K8S_POD_UID, K8S_POD_INFRA_CONTAINER_ID) */
        const char *hostname;     /* UTS hostname (spec.hostname or the pod name) */
        const char *dns_domain;   /* "" when none: hostname.subdomain.ns.svc.<domain> */
        const char *uts_hostname; /* the kernel's hostname; NULL: hostname */
        const char *extra_hosts;  /* appended to /etc/hosts as given; NULL: none */
        /* namespaced sysctls for the pod's network/IPC namespaces
         * (runtime/sysctl.h), written once they exist, before CNI ADD */
        const struct rt_sysctl *sysctls;
        size_t n_sysctls;
        bool host_network, host_ipc, host_pid;
        struct rt_port_mapping *ports; /* hostPorts, for the portmap plugin */
        size_t n_ports;
        struct rt_cni_config cni;
        /* Lines for /etc/resolv.conf (NULL = copy the host's, minus loopback
         * nameservers that would not be reachable from the pod). */
        const char *resolv_conf;
        const char *cgroup_parent; /* the pod cgroup path (cgroups/plan.h) */
        /* shareProcessNamespace: one PID namespace for the pod, its init a
         * `cubelet __pause` process (runtime/pause.c) started from
         * pause_path, the absolute path of the cubelet binary. */
        bool share_pid;
        const char *pause_path;
};

/* What a created sandbox offers its containers. */
struct rt_sandbox {
        char id[RT_ID_MAX];
        char dir[RT_SANDBOX_PATH_MAX];        /* <root_dir>/sandboxes/<id> */
        char netns_path[RT_SANDBOX_PATH_MAX]; /* "" with hostNetwork */
        char ipcns_path[RT_SANDBOX_PATH_MAX]; /* "" with hostIPC */
        char utsns_path[RT_SANDBOX_PATH_MAX]; /* "" with hostNetwork (the host's UTS) */
        /* The pin space that holds the IPC, UTS and PID pins (open them with
         * rt_ns_open_pins); "" when they are in the host's mount table (a
         * sandbox made by a cubelet before the pin space). */
        char pins_mntns[RT_SANDBOX_PATH_MAX];
        char hosts_path[RT_SANDBOX_PATH_MAX];
        char hostname_path[RT_SANDBOX_PATH_MAX];
        char resolv_conf_path[RT_SANDBOX_PATH_MAX];
        char pod_ips[2][64]; /* from the CNI result: first IPv4, then IPv6; "" if none */
        size_t n_pod_ips;
        bool host_pid;
        char pidns_path[RT_SANDBOX_PATH_MAX]; /* the pod's PID namespace pin; "" = one per container
                                               */
        /* the pod's procfs (<dir>/ns/proc), mounted by its PID namespace's
         * init before any container existed; "" without share_pid, and for
         * a sandbox made by a cubelet that did not keep one */
        char procfs_path[RT_SANDBOX_PATH_MAX];
        pid_t pause_pid; /* its init, with share_pid */
        uint64_t pause_start_time;
        /* rt_sandbox_create's own steps, CLOCK_MONOTONIC microseconds (0:
         * not taken, e.g. no network of its own): the namespaces pinned,
         * the CNI ADD answered. Not saved; rt_sandbox_load leaves them 0. */
        uint64_t namespaces_mono_us;
        uint64_t network_mono_us;
};

/* Creates the sandbox: its dir, config.json and state.json (rewritten
 * atomically after each step, so a crash half-way can be torn down by
 * rt_sandbox_remove), the namespace pins, the CNI network (ADD; not with
 * hostNetwork) and the hosts/hostname/resolv.conf files. On failure
 * everything made so far is torn down and err names the failing step (a
 * CNI failure names the plugin and the pod). An existing sandbox with the
 * same id is an error. */
int rt_sandbox_create(const struct rt_sandbox_config *cfg, struct rt_sandbox *ret,
                      struct cb_error *err);

/* Reads a sandbox back from <root_dir>/sandboxes/<id> (after an agent
 * restart). Fails when it does not exist or its creation never finished. */
int rt_sandbox_load(const char *root_dir, const char *id, struct rt_sandbox *ret,
                    struct cb_error *err);

/* Verifies the sandbox: the namespace pins are mounted and the CNI CHECK
 * of the network (spec >= 0.4.0) passes. */
int rt_sandbox_check(const char *root_dir, const char *id, struct cb_error *err);

/* Tears a sandbox down from what is on disk only: CNI DEL with the cached
 * result (also after a partial ADD or a crash), unmounts and removes the
 * namespace pins and removes the dir. Idempotent; 0 when nothing is left
 * (also when the sandbox never existed). On a failure the dir stays so a
 * later call can retry. */
int rt_sandbox_remove(const char *root_dir, const char *id, struct cb_error *err);

/* The ids of the sandboxes under root_dir (sorted; a malloc'd array of
 * malloc'd strings, freed with rt_sandbox_ids_free), for the cleanup after
 * a crash. */
int rt_sandbox_list(const char *root_dir, char ***ret_ids, size_t *ret_n, struct cb_error *err);
void rt_sandbox_ids_free(char **ids, size_t n);

/* Unpins the pin space and unmounts the private bind mount of
 * <root_dir>/sandboxes (both made by the first rt_sandbox_create) when no
 * sandbox is left; 0 when none remains or
 * sandboxes still exist (then it keeps the mount). For tests and shutdown. */
int rt_sandbox_release_root(const char *root_dir, struct cb_error *err);

/* The pod's /etc/hosts (the kubelet's format, managedHostsHeader): with
 * host_hosts != NULL (hostNetwork) the node's file under the host-network
 * header, else localhost and ip6 entries then "<ip>\t<hostname>" (or
 * "<ip>\t<hostname>.<dns_domain>\t<hostname>") per pod IP; then extra
 * (NULL: nothing) as given. *ret is
 * malloc'd; -1 only on ENOMEM. */
int rt_sandbox_hosts_content(const char *hostname, const char *dns_domain,
                             const char *const *pod_ips, size_t n_ips, const char *host_hosts,
                             const char *extra, char **ret);

/* resolv.conf text without loopback nameservers (127.0.0.0/8, ::1), which
 * a pod cannot reach; every other line is kept. *ret is malloc'd;
 * *ret_n_servers (may be NULL) counts the nameservers kept. */
int rt_sandbox_resolv_without_loopback(const char *text, char **ret, size_t *ret_n_servers);

/* ---- the pod PID namespace init (runtime/pause.c) ------------------------------ */

/* Starts `exe __pause` as pid 1 of a new PID namespace, in cgroup (may be
 * NULL); with procfs_dir (an existing directory, absolute), that process
 * first mounts the namespace's procfs there, in the caller's mount
 * namespace. Returns its pid and start time. */
int rt_pause_start(const char *exe, const char *cgroup, const char *procfs_dir, pid_t *ret_pid,
                   uint64_t *ret_start, struct cb_error *err);
/* SIGKILLs it (through a pidfd, only if it still has start_time) and waits
 * until it has exited; its PID namespace goes with it. */
int rt_pause_stop(pid_t pid, uint64_t start_time, struct cb_error *err);
/* The pause process runs and its PID namespace takes new processes: false
 * once it is gone, a zombie, or exiting (killing its namespace). */
bool rt_pause_alive(pid_t pid, uint64_t start_time);
/* The `cubelet __pause 3` mode (fd 3 the report pipe, fd 4 the procfs
 * directory when there is one). */
int rt_pause_main(int argc, char **argv);

/* A TCP connection to localhost:port inside the network namespace pinned
 * at netns_path ("" or NULL: this process's own, for hostNetwork pods), as
 * CRI runtimes serve PortForward: 127.0.0.1 first, then ::1. A short-lived
 * thread enters the namespace, so the caller's threads never change
 * namespace; the socket stays in the pod's namespace. *ret_fd is
 * O_CLOEXEC|O_NONBLOCK and connected. Fails with the connect error
 * (ECONNREFUSED: nothing listens on the port). */
int rt_sandbox_dial(const char *netns_path, uint16_t port, int *ret_fd, struct cb_error *err);
