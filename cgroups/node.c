/* SPDX-License-Identifier: Apache-2.0 */
#include "cgroups/cgroup.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/cleanup.h"
#include "lib/file.h"

#define SMALL_FILE_MAX (1 << 20)

int cg_parse_meminfo(const char *buf, const char *key, uint64_t *ret, struct cb_error *err)
{
        size_t klen = strlen(key);
        for (const char *line = buf; line != NULL && *line; line = strchr(line, '\n')) {
                if (*line == '\n')
                        line++;
                if (strncmp(line, key, klen) != 0 || line[klen] != ':')
                        continue;
                const char *p = line + klen + 1;
                while (*p == ' ' || *p == '\t')
                        p++;
                char *end;
                errno = 0;
                unsigned long long v = strtoull(p, &end, 10);
                if (end == p || errno != 0)
                        return cb_error_set(err, 0, "/proc/meminfo: %s: malformed value", key);
                while (*end == ' ')
                        end++;
                if (strncmp(end, "kB", 2) == 0) {
                        if (v > UINT64_MAX / 1024)
                                return cb_error_set(err, 0, "/proc/meminfo: %s: value too large",
                                                    key);
                        v *= 1024;
                }
                *ret = v;
                return 1;
        }
        return 0;
}

static int read_small(const char *path, char **buf, struct cb_error *err)
{
        return cb_read_file(path, SMALL_FILE_MAX, buf, NULL, err);
}

/*
 * The root cgroup's memory as cAdvisor reports it for the node (the
 * kubelet's memory.available = capacity - workingSet):
 *  - v1: memory.usage_in_bytes of the root memory cgroup, minus
 *    total_inactive_file of its memory.stat;
 *  - v2 has no memory.current at the root: usage is MemTotal - MemFree of
 *    /proc/meminfo (runc's rootStatsFromMeminfo), minus inactive_file of the
 *    root memory.stat (Inactive(file) of /proc/meminfo when it is missing).
 */
int cg_read_node_memory(struct cg_node_memory *ret, struct cb_error *err)
{
        char dir[4096], path[4200];
        if (cg_init(err) < 0 || cg_root_dir("memory", dir, sizeof(dir), err) < 0)
                return -1;
        struct cg_node_memory m = {0};
        uint64_t inactive = 0;
        _cleanup_free_ char *stat = NULL;
        snprintf(path, sizeof(path), "%s/memory.stat", dir);
        bool have_stat = read_small(path, &stat, NULL) == 0;
        if (cg_current_mode() != CG_MODE_UNIFIED) {
                _cleanup_free_ char *usage = NULL;
                snprintf(path, sizeof(path), "%s/memory.usage_in_bytes", dir);
                if (read_small(path, &usage, err) < 0 || cg_parse_u64(usage, &m.usage, err) < 0)
                        return cb_error_prefix(err, "node memory");
                if (!have_stat)
                        return cb_error_set(err, ENOENT, "node memory: %s/memory.stat missing",
                                            dir);
                int r = cg_parse_keyed(stat, "total_inactive_file", &inactive, err);
                if (r <= 0)
                        return r < 0
                                   ? cb_error_prefix(err, "%s/memory.stat", dir)
                                   : cb_error_set(err, ENOENT,
                                                  "%s/memory.stat has no total_inactive_file", dir);
        } else {
                _cleanup_free_ char *mi = NULL;
                uint64_t total = 0, free_ = 0;
                if (read_small("/proc/meminfo", &mi, err) < 0)
                        return cb_error_prefix(err, "node memory");
                if (cg_parse_meminfo(mi, "MemTotal", &total, err) <= 0 ||
                    cg_parse_meminfo(mi, "MemFree", &free_, err) <= 0)
                        return err->msg[0] ? -1
                                           : cb_error_set(err, ENOENT,
                                                          "/proc/meminfo has no MemTotal/MemFree");
                m.usage = total > free_ ? total - free_ : 0;
                int r = have_stat ? cg_parse_keyed(stat, "inactive_file", &inactive, err) : 0;
                if (r < 0)
                        return -1;
                if (r == 0 && cg_parse_meminfo(mi, "Inactive(file)", &inactive, err) < 0)
                        return -1;
        }
        m.working_set = m.usage > inactive ? m.usage - inactive : 0;
        *ret = m;
        return 0;
}
