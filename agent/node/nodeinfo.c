/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/node/nodeinfo.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <inttypes.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "lib/cleanup.h"

#define EVICTION_MEMORY_AVAILABLE (100LL << 20) /* evictionHard memory.available 100Mi */
#define EVICTION_NODEFS_PERCENT   10            /* evictionHard nodefs.available 10% */

static int read_memtotal(long long *ret, struct cb_error *err)
{
        _cleanup_fclose_ FILE *f = fopen("/proc/meminfo", "re");
        if (f == NULL)
                return cb_error_set(err, errno, "cannot open /proc/meminfo");
        char line[256];
        while (fgets(line, sizeof(line), f) != NULL) {
                long long kib;
                if (sscanf(line, "MemTotal: %lld kB", &kib) == 1) {
                        *ret = kib * 1024;
                        return 0;
                }
        }
        return cb_error_set(err, 0, "/proc/meminfo has no MemTotal line");
}

static const char *goarch(const char *machine)
{
        if (strcmp(machine, "x86_64") == 0)
                return "amd64";
        if (strcmp(machine, "aarch64") == 0)
                return "arm64";
        if (strncmp(machine, "armv7", 5) == 0)
                return "arm";
        if (strcmp(machine, "i686") == 0 || strcmp(machine, "i386") == 0)
                return "386";
        return machine;
}

/* First line of a small file, trimmed; "" when it cannot be read. */
static void read_line(const char *path, char *buf, size_t size)
{
        buf[0] = '\0';
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        if (f == NULL || fgets(buf, (int)size, f) == NULL) {
                buf[0] = '\0';
                return;
        }
        buf[strcspn(buf, "\r\n")] = '\0';
}

static void read_os_image(char *buf, size_t size)
{
        snprintf(buf, size, "Linux");
        _cleanup_fclose_ FILE *f = fopen("/etc/os-release", "re");
        if (f == NULL)
                f = fopen("/usr/lib/os-release", "re");
        if (f == NULL)
                return;
        char line[512];
        while (fgets(line, sizeof(line), f) != NULL) {
                if (strncmp(line, "PRETTY_NAME=", 12) != 0)
                        continue;
                char *v = line + 12;
                v[strcspn(v, "\r\n")] = '\0';
                size_t n = strlen(v);
                if (n >= 2 && (v[0] == '"' || v[0] == '\'') && v[n - 1] == v[0]) {
                        v[n - 1] = '\0';
                        v++;
                }
                /* Longer names are cut: truncation is fine for a display string. */
                if (snprintf(buf, size, "%s", v) < 0)
                        buf[0] = '\0';
                return;
        }
}

static int ipv4_usable(const struct in_addr *a)
{
        uint32_t h = ntohl(a->s_addr);
        return h != 0 && (h >> 24) != 127 && (h >> 16) != 0xa9fe /* 169.254/16 */ &&
               (h >> 28) != 0xe /* multicast */ && h != 0xffffffffu;
}

int ag_node_ip_valid(const char *s)
{
        struct in_addr a4;
        struct in6_addr a6;
        if (inet_pton(AF_INET, s, &a4) == 1)
                return ipv4_usable(&a4);
        if (inet_pton(AF_INET6, s, &a6) == 1)
                return !IN6_IS_ADDR_UNSPECIFIED(&a6) && !IN6_IS_ADDR_LOOPBACK(&a6) &&
                       !IN6_IS_ADDR_LINKLOCAL(&a6) && !IN6_IS_ADDR_MULTICAST(&a6);
        return 0;
}

/* The interface of the IPv4 default route (/proc/net/route). */
static void default_route_iface(char *buf, size_t size)
{
        buf[0] = '\0';
        _cleanup_fclose_ FILE *f = fopen("/proc/net/route", "re");
        if (f == NULL)
                return;
        char line[256], iface[IF_NAMESIZE + 1];
        unsigned long dest, mask;
        unsigned flags;
        while (fgets(line, sizeof(line), f) != NULL) {
                if (sscanf(line, "%16s %lx %*x %x %*d %*d %*d %lx", iface, &dest, &flags, &mask) ==
                        4 &&
                    dest == 0 && mask == 0 && (flags & 0x1 /* RTF_UP */)) {
                        snprintf(buf, size, "%s", iface);
                        return;
                }
        }
}

/* The IPv4 address of the interface holding the default route (not
 * loopback, link-local or unspecified), else of the first interface that
 * has such an address. */
static int default_ipv4(char *buf, size_t size, struct cb_error *err)
{
        char iface[IF_NAMESIZE + 1];
        default_route_iface(iface, sizeof(iface));
        struct ifaddrs *ifa = NULL;
        if (getifaddrs(&ifa) < 0)
                return cb_error_set(err, errno, "getifaddrs failed");
        const struct in_addr *pick = NULL;
        /* Pass 0: the default-route interface; pass 1: any interface. */
        for (int pass = 0; pass < 2 && pick == NULL; pass++) {
                for (struct ifaddrs *i = ifa; i != NULL && pick == NULL; i = i->ifa_next) {
                        if (i->ifa_addr == NULL || i->ifa_addr->sa_family != AF_INET ||
                            !(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK))
                                continue;
                        if (pass == 0 && strcmp(i->ifa_name, iface) != 0)
                                continue;
                        const struct in_addr *a = &((struct sockaddr_in *)i->ifa_addr)->sin_addr;
                        if (ipv4_usable(a))
                                pick = a;
                }
        }
        int r = 0;
        if (pick == NULL)
                r = cb_error_set(err, 0,
                                 "no usable IPv4 address on this host (not loopback or "
                                 "link-local): pass --node-ip");
        else
                inet_ntop(AF_INET, pick, buf, (socklen_t)size);
        freeifaddrs(ifa);
        return r;
}

int ag_node_facts_read(const char *root_dir, struct ag_node_facts *f, struct cb_error *err)
{
        memset(f, 0, sizeof(*f));
        if (gethostname(f->hostname, sizeof(f->hostname) - 1) < 0)
                return cb_error_set(err, errno, "cannot read the hostname");
        /* Node names are lower case (the kubelet lowercases the hostname). */
        for (char *p = f->hostname; *p; p++)
                if (*p >= 'A' && *p <= 'Z')
                        *p = (char)(*p - 'A' + 'a');
        f->cpus = sysconf(_SC_NPROCESSORS_ONLN);
        if (f->cpus < 1)
                return cb_error_set(err, errno, "cannot count the online CPUs");
        if (read_memtotal(&f->memory_bytes, err) < 0)
                return -1;
        struct statvfs vfs;
        const char *fs = root_dir;
        if (statvfs(fs, &vfs) < 0) {
                /* The root dir may not exist yet (inspect on a fresh machine). */
                fs = "/";
                if (statvfs(fs, &vfs) < 0)
                        return cb_error_set(err, errno, "cannot statvfs %s", fs);
        }
        f->ephemeral_bytes = (long long)vfs.f_blocks * (long long)vfs.f_frsize;
        struct utsname u;
        if (uname(&u) < 0)
                return cb_error_set(err, errno, "uname failed");
        snprintf(f->kernel_version, sizeof(f->kernel_version), "%s", u.release);
        snprintf(f->architecture, sizeof(f->architecture), "%s", goarch(u.machine));
        read_line("/etc/machine-id", f->machine_id, sizeof(f->machine_id));
        read_line("/sys/class/dmi/id/product_uuid", f->system_uuid, sizeof(f->system_uuid));
        read_line("/proc/sys/kernel/random/boot_id", f->boot_id, sizeof(f->boot_id));
        read_os_image(f->os_image, sizeof(f->os_image));
        /* No usable address is not an error here: the agent asks for
         * --node-ip then, inspect just shows no InternalIP. */
        if (default_ipv4(f->node_ip, sizeof(f->node_ip), NULL) < 0)
                f->node_ip[0] = '\0';
        return 0;
}

static void add_resources(cJSON *obj, long cpus, long long mem, long long eph, int pods)
{
        char buf[64];
        snprintf(buf, sizeof(buf), "%ld", cpus);
        cJSON_AddStringToObject(obj, "cpu", buf);
        /* The kubelet reports memory in Ki when it is a whole number of KiB. */
        if (mem % 1024 == 0)
                snprintf(buf, sizeof(buf), "%lldKi", mem / 1024);
        else
                snprintf(buf, sizeof(buf), "%lld", mem);
        cJSON_AddStringToObject(obj, "memory", buf);
        if (eph % 1024 == 0)
                snprintf(buf, sizeof(buf), "%lldKi", eph / 1024);
        else
                snprintf(buf, sizeof(buf), "%lld", eph);
        cJSON_AddStringToObject(obj, "ephemeral-storage", buf);
        snprintf(buf, sizeof(buf), "%d", pods);
        cJSON_AddStringToObject(obj, "pods", buf);
}

cJSON *ag_node_json(const struct ag_node_facts *f, const char *node_name, int max_pods)
{
        _cleanup_cjson_ cJSON *node = cJSON_CreateObject();
        if (node == NULL)
                return NULL;
        cJSON_AddStringToObject(node, "apiVersion", "v1");
        cJSON_AddStringToObject(node, "kind", "Node");
        cJSON *meta = cJSON_AddObjectToObject(node, "metadata");
        cJSON_AddStringToObject(meta, "name", node_name);
        cJSON *labels = cJSON_AddObjectToObject(meta, "labels");
        cJSON_AddStringToObject(labels, "kubernetes.io/arch", f->architecture);
        cJSON_AddStringToObject(labels, "kubernetes.io/hostname", f->hostname);
        cJSON_AddStringToObject(labels, "kubernetes.io/os", "linux");
        cJSON *status = cJSON_AddObjectToObject(node, "status");
        add_resources(cJSON_AddObjectToObject(status, "capacity"), f->cpus, f->memory_bytes,
                      f->ephemeral_bytes, max_pods);
        long long mem = f->memory_bytes - EVICTION_MEMORY_AVAILABLE;
        long long eph = f->ephemeral_bytes - f->ephemeral_bytes * EVICTION_NODEFS_PERCENT / 100;
        if (f->has_eviction_reservation) {
                mem = f->memory_bytes - f->eviction_memory;
                eph = f->ephemeral_bytes - f->eviction_ephemeral;
        }
        add_resources(cJSON_AddObjectToObject(status, "allocatable"), f->cpus, mem < 0 ? 0 : mem,
                      eph < 0 ? 0 : eph, max_pods);
        if (cJSON_GetObjectItem(status, "allocatable") == NULL)
                return NULL;
        cJSON *addrs = cJSON_AddArrayToObject(status, "addresses");
        if (f->node_ip[0] != '\0') {
                cJSON *a = cJSON_CreateObject();
                cJSON_AddStringToObject(a, "type", "InternalIP");
                cJSON_AddStringToObject(a, "address", f->node_ip);
                cJSON_AddItemToArray(addrs, a);
        }
        cJSON *h = cJSON_CreateObject();
        cJSON_AddStringToObject(h, "type", "Hostname");
        cJSON_AddStringToObject(h, "address", f->hostname);
        cJSON_AddItemToArray(addrs, h);
        cJSON *de = cJSON_AddObjectToObject(status, "daemonEndpoints");
        cJSON_AddNumberToObject(cJSON_AddObjectToObject(de, "kubeletEndpoint"), "Port",
                                AG_KUBELET_PORT);
        cJSON *ni = cJSON_AddObjectToObject(status, "nodeInfo");
        char rt[64];
        snprintf(rt, sizeof(rt), "cubelet://%s", CUBELET_VERSION);
        cJSON_AddStringToObject(ni, "machineID", f->machine_id);
        cJSON_AddStringToObject(ni, "systemUUID", f->system_uuid);
        cJSON_AddStringToObject(ni, "bootID", f->boot_id);
        cJSON_AddStringToObject(ni, "kernelVersion", f->kernel_version);
        cJSON_AddStringToObject(ni, "osImage", f->os_image);
        cJSON_AddStringToObject(ni, "containerRuntimeVersion", rt);
        cJSON_AddStringToObject(ni, "kubeletVersion", AG_KUBELET_VERSION);
        cJSON_AddStringToObject(ni, "kubeProxyVersion", "");
        cJSON_AddStringToObject(ni, "operatingSystem", "linux");
        cJSON_AddStringToObject(ni, "architecture", f->architecture);
        if (cJSON_GetObjectItem(ni, "architecture") == NULL)
                return NULL;
        /* status.features as the kubelet sets it (kubernetes
         * pkg/kubelet/kubelet_node_status.go: the NodeFeatures setter, fed
         * by the CRI runtime's status features; SupplementalGroupsPolicy
         * beta and on since 1.33, GA in 1.35). The API (core/v1 types.go
         * NodeFeatures): "set to true if the runtime supports
         * SupplementalGroupsPolicy and ContainerUser", as containerd >= 2.0
         * and CRI-O >= 1.31 report. cubelet's runtime does both: Merge and
         * Strict (agent/pods/containerspec.c), containerStatuses[].user. */
        cJSON *feat = cJSON_AddObjectToObject(status, "features");
        if (cJSON_AddBoolToObject(feat, "supplementalGroupsPolicy", true) == NULL)
                return NULL;
        return steal_pointer(&node);
}
