/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/nodeinfo.h"

#include <errno.h>
#include <inttypes.h>
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
        add_resources(cJSON_AddObjectToObject(status, "allocatable"), f->cpus, mem < 0 ? 0 : mem,
                      eph < 0 ? 0 : eph, max_pods);
        if (cJSON_GetObjectItem(status, "allocatable") == NULL)
                return NULL;
        return steal_pointer(&node);
}
