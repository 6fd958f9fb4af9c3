/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/pods/stats.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "cgroups/cgroup.h"
#include "lib/cleanup.h"
#include "lib/file.h"

#define SAMPLES 512

struct sample {
        char key[256];
        uint64_t usage_ns;
        int64_t at_ns; /* CLOCK_MONOTONIC */
};

struct ag_stats {
        struct sample v[SAMPLES];
        size_t n, next; /* a ring: the oldest sample is replaced */
};

struct ag_stats *ag_stats_new(void)
{
        return calloc(1, sizeof(struct ag_stats));
}

void ag_stats_free(struct ag_stats *s)
{
        free(s);
}

static int64_t mono_ns(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t wall_ns(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void add_time(cJSON *o, const char *key, int64_t ns)
{
        char buf[40];
        time_t sec = (time_t)(ns / 1000000000);
        struct tm tm;
        gmtime_r(&sec, &tm);
        strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
        cJSON_AddStringToObject(o, key, buf);
}

/* The rate since the previous sample of key; since_ns (wall) when there
 * is none. */
static uint64_t nano_cores(struct ag_stats *s, const char *key, uint64_t usage_ns, int64_t since_ns)
{
        int64_t now = mono_ns();
        struct sample *sm = NULL;
        for (size_t i = 0; i < s->n; i++)
                if (strcmp(s->v[i].key, key) == 0)
                        sm = &s->v[i];
        uint64_t rate = 0;
        if (sm != NULL && now > sm->at_ns && usage_ns >= sm->usage_ns) {
                rate =
                    (uint64_t)((double)(usage_ns - sm->usage_ns) * 1e9 / (double)(now - sm->at_ns));
        } else if (since_ns > 0 && wall_ns() > since_ns) {
                rate = (uint64_t)((double)usage_ns * 1e9 / (double)(wall_ns() - since_ns));
        }
        if (sm == NULL) {
                sm = &s->v[s->next];
                s->next = (s->next + 1) % SAMPLES;
                if (s->n < SAMPLES)
                        s->n++;
                snprintf(sm->key, sizeof(sm->key), "%s", key);
        }
        sm->usage_ns = usage_ns;
        sm->at_ns = now;
        return rate;
}

static void add_cpu_mem(struct ag_stats *s, cJSON *o, const char *key, const struct cg_stats *st,
                        int64_t since_ns, int64_t mem_capacity)
{
        int64_t now = wall_ns();
        cJSON *cpu = cJSON_AddObjectToObject(o, "cpu");
        add_time(cpu, "time", now);
        cJSON_AddNumberToObject(cpu, "usageNanoCores",
                                (double)nano_cores(s, key, st->cpu_usage_ns, since_ns));
        cJSON_AddNumberToObject(cpu, "usageCoreNanoSeconds", (double)st->cpu_usage_ns);
        cJSON *mem = cJSON_AddObjectToObject(o, "memory");
        add_time(mem, "time", now);
        if (mem_capacity > 0)
                cJSON_AddNumberToObject(
                    mem, "availableBytes",
                    (double)((uint64_t)mem_capacity > st->memory_working_set
                                 ? (uint64_t)mem_capacity - st->memory_working_set
                                 : 0));
        cJSON_AddNumberToObject(mem, "usageBytes", (double)st->memory_usage);
        cJSON_AddNumberToObject(mem, "workingSetBytes", (double)st->memory_working_set);
}

static void add_fs(cJSON *o, const char *key, const char *path)
{
        struct statvfs v;
        if (statvfs(path, &v) < 0)
                return;
        cJSON *fs = cJSON_AddObjectToObject(o, key);
        add_time(fs, "time", wall_ns());
        cJSON_AddNumberToObject(fs, "availableBytes", (double)v.f_bavail * (double)v.f_frsize);
        cJSON_AddNumberToObject(fs, "capacityBytes", (double)v.f_blocks * (double)v.f_frsize);
        cJSON_AddNumberToObject(fs, "usedBytes",
                                (double)(v.f_blocks - v.f_bfree) * (double)v.f_frsize);
        cJSON_AddNumberToObject(fs, "inodesFree", (double)v.f_ffree);
        cJSON_AddNumberToObject(fs, "inodes", (double)v.f_files);
        cJSON_AddNumberToObject(fs, "inodesUsed", (double)(v.f_files - v.f_ffree));
}

int ag_parse_net_dev(const char *buf, struct ag_net_iface *ret, size_t max, struct cb_error *err)
{
        /* two header lines, then "  name: rx_bytes packets errs drop fifo
         * frame compressed multicast tx_bytes packets errs ..." */
        const char *p = strchr(buf, '\n');
        if (p == NULL || strstr(buf, "Inter-") != buf)
                return cb_error_set(err, EINVAL, "not a /proc/net/dev table");
        p = strchr(p + 1, '\n');
        size_t n = 0;
        while (p != NULL && *++p != '\0' && n < max) {
                const char *eol = strchrnul(p, '\n');
                const char *colon = memchr(p, ':', (size_t)(eol - p));
                if (colon == NULL)
                        return cb_error_set(err, EINVAL, "/proc/net/dev: a line without ':'");
                while (*p == ' ')
                        p++;
                size_t nl = (size_t)(colon - p);
                unsigned long long f[16];
                char tail[512];
                size_t tl = (size_t)(eol - colon - 1);
                if (tl >= sizeof(tail))
                        tl = sizeof(tail) - 1;
                memcpy(tail, colon + 1, tl);
                tail[tl] = '\0';
                if (sscanf(tail, "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &f[0],
                           &f[1], &f[2], &f[3], &f[4], &f[5], &f[6], &f[7], &f[8], &f[9],
                           &f[10]) != 11)
                        return cb_error_set(err, EINVAL, "/proc/net/dev: malformed counters");
                if (nl > 0 && nl < sizeof(ret[n].name) && !(nl == 2 && memcmp(p, "lo", 2) == 0)) {
                        memcpy(ret[n].name, p, nl);
                        ret[n].name[nl] = '\0';
                        ret[n].rx_bytes = f[0];
                        ret[n].rx_errors = f[2];
                        ret[n].tx_bytes = f[8];
                        ret[n].tx_errors = f[10];
                        n++;
                }
                p = *eol ? eol : NULL;
        }
        return (int)n;
}

static void add_network(cJSON *o, const char *netdev_path, const char *prefer)
{
        _cleanup_free_ char *buf = NULL;
        if (cb_read_file(netdev_path, 1 << 20, &buf, NULL, NULL) < 0)
                return;
        struct ag_net_iface ifs[32];
        int n = ag_parse_net_dev(buf, ifs, 32, NULL);
        if (n <= 0)
                return;
        cJSON *net = cJSON_AddObjectToObject(o, "network");
        add_time(net, "time", wall_ns());
        cJSON *arr = cJSON_CreateArray();
        int first = -1;
        for (int i = 0; i < n; i++) {
                if (first < 0 || (prefer != NULL && strcmp(ifs[i].name, prefer) == 0))
                        first = i;
                cJSON *e = cJSON_CreateObject();
                cJSON_AddStringToObject(e, "name", ifs[i].name);
                cJSON_AddNumberToObject(e, "rxBytes", (double)ifs[i].rx_bytes);
                cJSON_AddNumberToObject(e, "rxErrors", (double)ifs[i].rx_errors);
                cJSON_AddNumberToObject(e, "txBytes", (double)ifs[i].tx_bytes);
                cJSON_AddNumberToObject(e, "txErrors", (double)ifs[i].tx_errors);
                cJSON_AddItemToArray(arr, e);
        }
        /* the default interface's counters also at the top, as the kubelet
         * does (eth0 in a pod; the default route's on the node) */
        if (first >= 0) {
                cJSON_AddStringToObject(net, "name", ifs[first].name);
                cJSON_AddNumberToObject(net, "rxBytes", (double)ifs[first].rx_bytes);
                cJSON_AddNumberToObject(net, "rxErrors", (double)ifs[first].rx_errors);
                cJSON_AddNumberToObject(net, "txBytes", (double)ifs[first].tx_bytes);
                cJSON_AddNumberToObject(net, "txErrors", (double)ifs[first].tx_errors);
        }
        cJSON_AddItemToObject(net, "interfaces", arr);
}

/* The node as a whole, from /proc (the root cgroup is not ours to read
 * through cgroups/): cpu time of every cpu but idle and iowait; memory in
 * use and the working set (what is not available). */
static int host_stats(struct cg_stats *ret)
{
        _cleanup_free_ char *stat = NULL, *mem = NULL;
        if (cb_read_file("/proc/stat", 1 << 20, &stat, NULL, NULL) < 0 ||
            cb_read_file("/proc/meminfo", 1 << 20, &mem, NULL, NULL) < 0)
                return -1;
        unsigned long long f[8] = {0};
        if (sscanf(stat, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &f[0], &f[1], &f[2], &f[3],
                   &f[4], &f[5], &f[6], &f[7]) < 7)
                return -1;
        long tck = sysconf(_SC_CLK_TCK);
        unsigned long long ticks = f[0] + f[1] + f[2] + f[5] + f[6] + f[7];
        unsigned long long total = 0, free_kb = 0, avail = 0;
        const char *p;
        if ((p = strstr(mem, "MemTotal:")) == NULL || sscanf(p, "MemTotal: %llu", &total) != 1 ||
            (p = strstr(mem, "MemFree:")) == NULL || sscanf(p, "MemFree: %llu", &free_kb) != 1 ||
            (p = strstr(mem, "MemAvailable:")) == NULL ||
            sscanf(p, "MemAvailable: %llu", &avail) != 1 || tck <= 0)
                return -1;
        *ret = (struct cg_stats){
            .cpu_usage_ns = ticks * (1000000000ULL / (unsigned long long)tck),
            .memory_usage = (total - free_kb) * 1024,
            .memory_working_set = (total - avail) * 1024,
        };
        return 0;
}

/* The interface of the default route, "" when none. */
static void default_iface(char *buf, size_t size)
{
        buf[0] = '\0';
        _cleanup_free_ char *rt = NULL;
        if (cb_read_file("/proc/self/net/route", 1 << 20, &rt, NULL, NULL) < 0)
                return;
        char *save = NULL;
        for (char *l = strtok_r(rt, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
                char name[32], dest[16];
                if (sscanf(l, "%31s %15s", name, dest) == 2 && strcmp(dest, "00000000") == 0) {
                        snprintf(buf, size, "%s", name);
                        return;
                }
        }
}

static int64_t boot_wall_ns(void)
{
        struct timespec b;
        clock_gettime(CLOCK_BOOTTIME, &b);
        return wall_ns() - ((int64_t)b.tv_sec * 1000000000 + b.tv_nsec);
}

cJSON *ag_stats_node_json(struct ag_stats *s, const char *node_name, const char *root_dir,
                          int64_t memory_capacity)
{
        cJSON *node = cJSON_CreateObject();
        cJSON_AddStringToObject(node, "nodeName", node_name);
        int64_t boot = boot_wall_ns();
        add_time(node, "startTime", boot);
        struct cg_stats st;
        if (host_stats(&st) == 0)
                add_cpu_mem(s, node, "/", &st, boot, memory_capacity);
        char dflt[32];
        default_iface(dflt, sizeof(dflt));
        add_network(node, "/proc/self/net/dev", dflt);
        add_fs(node, "fs", root_dir);
        cJSON *rt = cJSON_AddObjectToObject(node, "runtime");
        add_fs(rt, "imageFs", root_dir);
        return node;
}

static uint64_t dir_bytes(const char *dir)
{
        DIR *d = opendir(dir);
        if (d == NULL)
                return 0;
        uint64_t sum = 0;
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
                struct stat sb;
                if (de->d_name[0] != '.' && fstatat(dirfd(d), de->d_name, &sb, 0) == 0 &&
                    S_ISREG(sb.st_mode))
                        sum += (uint64_t)sb.st_blocks * 512;
        }
        closedir(d);
        return sum;
}

cJSON *ag_stats_pod_json(struct ag_stats *s, const struct ag_stats_pod *p)
{
        cJSON *pod = cJSON_CreateObject();
        cJSON *ref = cJSON_AddObjectToObject(pod, "podRef");
        cJSON_AddStringToObject(ref, "name", p->name);
        cJSON_AddStringToObject(ref, "namespace", p->ns);
        cJSON_AddStringToObject(ref, "uid", p->uid);
        if (p->started_ns > 0)
                add_time(pod, "startTime", p->started_ns);
        cJSON *ctrs = cJSON_AddArrayToObject(pod, "containers");
        uint64_t logs_total = 0;
        for (size_t i = 0; i < p->n_containers; i++) {
                const struct ag_stats_container *c = &p->containers[i];
                struct cg_stats st;
                if (c->cgroup == NULL || c->cgroup[0] == '\0' ||
                    cg_read_stats(c->cgroup, &st, NULL) < 0)
                        continue;
                cJSON *co = cJSON_CreateObject();
                cJSON_AddStringToObject(co, "name", c->name);
                if (c->started_ns > 0)
                        add_time(co, "startTime", c->started_ns);
                add_cpu_mem(s, co, c->cgroup, &st, c->started_ns, 0);
                if (c->log_dir != NULL) {
                        uint64_t used = dir_bytes(c->log_dir);
                        logs_total += used;
                        cJSON *lg = cJSON_AddObjectToObject(co, "logs");
                        add_time(lg, "time", wall_ns());
                        cJSON_AddNumberToObject(lg, "usedBytes", (double)used);
                }
                cJSON_AddItemToArray(ctrs, co);
        }
        struct cg_stats st;
        if (p->cgroup != NULL && p->cgroup[0] != '\0' && cg_read_stats(p->cgroup, &st, NULL) == 0) {
                add_cpu_mem(s, pod, p->cgroup, &st, p->started_ns, 0);
                cJSON *ps = cJSON_AddObjectToObject(pod, "process_stats");
                cJSON_AddNumberToObject(ps, "process_count", (double)st.pids_current);
        }
        if (p->net_pid > 0) {
                char path[64];
                snprintf(path, sizeof(path), "/proc/%d/net/dev", (int)p->net_pid);
                add_network(pod, path, "eth0");
        }
        cJSON *eph = cJSON_AddObjectToObject(pod, "ephemeral-storage");
        add_time(eph, "time", wall_ns());
        cJSON_AddNumberToObject(eph, "usedBytes", (double)logs_total);
        return pod;
}

/* ---- /metrics/resource -------------------------------------------------------------------- */

void ag_go_float(double v, char *buf, size_t size)
{
        if (v != v) {
                snprintf(buf, size, "NaN");
                return;
        }
        if (v == 1.0 / 0.0 || v == -1.0 / 0.0) {
                snprintf(buf, size, v > 0 ? "+Inf" : "-Inf");
                return;
        }
        if (v == 0) {
                snprintf(buf, size, "0");
                return;
        }
        /* the shortest digits that read back as v */
        char e[64];
        int prec = 1;
        for (; prec < 17; prec++) {
                snprintf(e, sizeof(e), "%.*e", prec - 1, v);
                if (strtod(e, NULL) == v)
                        break;
        }
        snprintf(e, sizeof(e), "%.*e", prec - 1, v);
        const char *x = strchr(e, 'e');
        int exp = x ? (int)strtol(x + 1, NULL, 10) : 0;
        /* Go's 'g' with the shortest digits: %e when the exponent is
         * below -4 or at least 6 (strconv/ftoa.go), else %f. */
        int eprec = 6;
        if (exp < -4 || exp >= eprec) {
                snprintf(buf, size, "%s", e);
                return;
        }
        int decimals = prec - 1 - exp;
        snprintf(buf, size, "%.*f", decimals > 0 ? decimals : 0, v);
}

struct rm_sample {
        const char *labels[3]; /* container, namespace, pod (NULL: absent) */
        double value;
        int64_t ts_ms; /* 0: none */
};

struct rm_family {
        const char *name, *help, *type;
        struct rm_sample *s;
        size_t n, cap;
};

static int64_t json_time_ms(const cJSON *o)
{
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "time");
        if (!cJSON_IsString(t))
                return 0;
        struct tm tm = {0};
        const char *end = strptime(t->valuestring, "%Y-%m-%dT%H:%M:%S", &tm);
        if (end == NULL)
                return 0;
        int64_t ms = (int64_t)timegm(&tm) * 1000;
        if (*end == '.') {
                int64_t frac = 0, scale = 100;
                for (end++; *end >= '0' && *end <= '9'; end++, scale /= 10)
                        frac += (*end - '0') * scale;
                ms += frac;
        }
        return ms;
}

static const cJSON *jnum(const cJSON *o, const char *k)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
        return cJSON_IsNumber(v) ? v : NULL;
}

static void add_sample(struct rm_family *f, const char *c, const char *ns, const char *pod,
                       double v, int64_t ts)
{
        if (f->n == f->cap) {
                size_t cap = f->cap ? f->cap * 2 : 16;
                struct rm_sample *n = realloc(f->s, cap * sizeof(*n));
                if (n == NULL)
                        return;
                f->s = n;
                f->cap = cap;
        }
        f->s[f->n++] = (struct rm_sample){{c, ns, pod}, v, ts};
}

/* usage from a {"time","usageCoreNanoSeconds"} / {"time","workingSetBytes"} object */
static void add_usage(struct rm_family *cpu, struct rm_family *mem, const cJSON *o, const char *c,
                      const char *ns, const char *pod)
{
        const cJSON *co = cJSON_GetObjectItemCaseSensitive(o, "cpu");
        const cJSON *mo = cJSON_GetObjectItemCaseSensitive(o, "memory");
        const cJSON *u = jnum(co, "usageCoreNanoSeconds");
        const cJSON *ws = jnum(mo, "workingSetBytes");
        if (u != NULL)
                add_sample(cpu, c, ns, pod, u->valuedouble / 1e9, json_time_ms(co));
        if (ws != NULL)
                add_sample(mem, c, ns, pod, ws->valuedouble, json_time_ms(mo));
}

static int cmp_str(const char *a, const char *b)
{
        return strcmp(a ? a : "", b ? b : "");
}

static int cmp_sample(const void *pa, const void *pb)
{
        const struct rm_sample *a = pa, *b = pb;
        for (int i = 0; i < 3; i++) {
                int r = cmp_str(a->labels[i], b->labels[i]);
                if (r != 0)
                        return r;
        }
        return 0;
}

static void put_escaped(FILE *f, const char *s)
{
        for (; *s; s++) {
                if (*s == '\\' || *s == '"')
                        fputc('\\', f), fputc(*s, f);
                else if (*s == '\n')
                        fputs("\\n", f);
                else
                        fputc(*s, f);
        }
}

static void write_family(FILE *out, struct rm_family *f)
{
        static const char *const names[3] = {"container", "namespace", "pod"};
        fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", f->name, f->help, f->name, f->type);
        qsort(f->s, f->n, sizeof(*f->s), cmp_sample);
        for (size_t i = 0; i < f->n; i++) {
                const struct rm_sample *s = &f->s[i];
                fputs(f->name, out);
                bool any = false;
                for (int l = 0; l < 3; l++) {
                        if (s->labels[l] == NULL)
                                continue;
                        fprintf(out, "%s%s=\"", any ? "," : "{", names[l]);
                        put_escaped(out, s->labels[l]);
                        fputc('"', out);
                        any = true;
                }
                if (any)
                        fputc('}', out);
                char num[64];
                ag_go_float(s->value, num, sizeof(num));
                fprintf(out, " %s", num);
                if (s->ts_ms != 0)
                        fprintf(out, " %lld", (long long)s->ts_ms);
                fputc('\n', out);
        }
}

char *ag_resource_metrics_text(const cJSON *summary)
{
        enum { C_CPU, C_MEM, C_START, N_CPU, N_MEM, P_CPU, P_MEM, ERR, NF };
        struct rm_family f[NF] = {
            {.name = "container_cpu_usage_seconds_total",
             .help = "[STABLE] Cumulative cpu time consumed by the container in core-seconds",
             .type = "counter"},
            {.name = "container_memory_working_set_bytes",
             .help = "[STABLE] Current working set of the container in bytes",
             .type = "gauge"},
            {.name = "container_start_time_seconds",
             .help = "[STABLE] Start time of the container since unix epoch in seconds",
             .type = "gauge"},
            {.name = "node_cpu_usage_seconds_total",
             .help = "[STABLE] Cumulative cpu time consumed by the node in core-seconds",
             .type = "counter"},
            {.name = "node_memory_working_set_bytes",
             .help = "[STABLE] Current working set of the node in bytes",
             .type = "gauge"},
            {.name = "pod_cpu_usage_seconds_total",
             .help = "[STABLE] Cumulative cpu time consumed by the pod in core-seconds",
             .type = "counter"},
            {.name = "pod_memory_working_set_bytes",
             .help = "[STABLE] Current working set of the pod in bytes",
             .type = "gauge"},
            {.name = "resource_scrape_error",
             .help =
                 "[STABLE] 1 if there was an error while getting container metrics, 0 otherwise",
             .type = "gauge"},
        };
        if (summary != NULL) {
                add_usage(&f[N_CPU], &f[N_MEM], cJSON_GetObjectItemCaseSensitive(summary, "node"),
                          NULL, NULL, NULL);
                const cJSON *pod;
                cJSON_ArrayForEach(pod, cJSON_GetObjectItemCaseSensitive(summary, "pods"))
                {
                        const cJSON *ref = cJSON_GetObjectItemCaseSensitive(pod, "podRef");
                        const char *ns = cJSON_GetStringValue(
                            cJSON_GetObjectItemCaseSensitive(ref, "namespace"));
                        const char *name =
                            cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ref, "name"));
                        if (ns == NULL || name == NULL)
                                continue;
                        const cJSON *c;
                        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(pod, "containers"))
                        {
                                const char *cn = cJSON_GetStringValue(
                                    cJSON_GetObjectItemCaseSensitive(c, "name"));
                                if (cn == NULL)
                                        continue;
                                struct tm tm = {0};
                                const char *st = cJSON_GetStringValue(
                                    cJSON_GetObjectItemCaseSensitive(c, "startTime"));
                                if (st != NULL && strptime(st, "%Y-%m-%dT%H:%M:%S", &tm) != NULL &&
                                    timegm(&tm) > 0)
                                        add_sample(&f[C_START], cn, ns, name, (double)timegm(&tm),
                                                   0);
                                add_usage(&f[C_CPU], &f[C_MEM], c, cn, ns, name);
                        }
                        add_usage(&f[P_CPU], &f[P_MEM], pod, NULL, ns, name);
                }
        }
        add_sample(&f[ERR], NULL, NULL, NULL, summary == NULL ? 1 : 0, 0);
        char *buf = NULL;
        size_t len = 0;
        FILE *out = open_memstream(&buf, &len);
        if (out != NULL) {
                for (int i = 0; i < NF; i++)
                        if (f[i].n > 0)
                                write_family(out, &f[i]);
                if (fclose(out) != 0) {
                        free(buf);
                        buf = NULL;
                }
        }
        for (int i = 0; i < NF; i++)
                free(f[i].s);
        return buf;
}
