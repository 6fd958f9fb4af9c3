/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cubelet logs [-p|--previous] [--tail N] [--timestamps] [--pod-logs-dir DIR]
 *              NAMESPACE/POD [CONTAINER]
 *
 * Prints a container's log from the CRI log files under the pod logs dir
 * (<dir>/<ns>_<pod>_<uid>/<container>/<restart>.log), the way `kubectl
 * logs` shows them through a kubelet: partial (P) records joined, stdout
 * and stderr interleaved in order. --previous shows the instance before the
 * newest one. When the pod ran several times (several uids), the newest
 * run is shown. Without CONTAINER the pod must have exactly one container
 * directory.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/cmd/cli.h"
#include "agent/pods/podlogs.h"
#include "lib/cleanup.h"
#include "runtime/container.h"

struct line {
        char *text;
        size_t len;
        int64_t ts;
};

struct collected {
        struct line *lines;
        size_t n, cap;
        long tail; /* <0: all */
};

static int collect(enum rt_stream s, int64_t ts_ns, const char *line, size_t len, void *ud)
{
        struct collected *c = ud;
        (void)s;
        if (c->n == c->cap) {
                size_t ncap = c->cap ? c->cap * 2 : 256;
                struct line *nl = realloc(c->lines, ncap * sizeof(*nl));
                if (nl == NULL)
                        return -1;
                c->lines = nl;
                c->cap = ncap;
        }
        char *t = malloc(len + 1);
        if (t == NULL)
                return -1;
        memcpy(t, line, len);
        t[len] = '\0';
        c->lines[c->n++] = (struct line){t, len, ts_ns};
        /* Keep memory bounded with --tail: drop what cannot be shown. */
        if (c->tail >= 0 && c->n > (size_t)c->tail * 2 + 1024) {
                size_t drop = c->n - (size_t)c->tail;
                for (size_t i = 0; i < drop; i++)
                        free(c->lines[i].text);
                memmove(c->lines, c->lines + drop, (c->n - drop) * sizeof(*c->lines));
                c->n -= drop;
        }
        return 0;
}

int cmd_logs(int argc, char **argv, const struct cb_global_opts *opts)
{
        (void)opts;
        const char *dir = "/var/log/pods", *target = NULL, *container = NULL;
        bool previous = false, timestamps = false;
        long tail = -1;
        for (int i = 1; i < argc; i++) {
                const char *a = argv[i];
                if (strcmp(a, "-p") == 0 || strcmp(a, "--previous") == 0) {
                        previous = true;
                } else if (strcmp(a, "--timestamps") == 0) {
                        timestamps = true;
                } else if (strcmp(a, "--tail") == 0 && i + 1 < argc) {
                        char *end;
                        tail = strtol(argv[++i], &end, 10);
                        if (*end != '\0' || tail < -1) {
                                fprintf(stderr, "cubelet logs: --tail: invalid value \"%s\"\n",
                                        argv[i]);
                                return 2;
                        }
                } else if (strcmp(a, "--pod-logs-dir") == 0 && i + 1 < argc) {
                        dir = argv[++i];
                } else if (a[0] != '-' && target == NULL) {
                        target = a;
                } else if (a[0] != '-' && container == NULL) {
                        container = a;
                } else {
                        target = NULL;
                        break;
                }
        }
        const char *slash = target ? strchr(target, '/') : NULL;
        if (target == NULL || slash == NULL || slash == target || slash[1] == '\0') {
                fprintf(stderr, "usage: cubelet logs [-p|--previous] [--tail N] [--timestamps] "
                                "[--pod-logs-dir DIR] NAMESPACE/POD [CONTAINER]\n");
                return 2;
        }
        char ns[256], pod_dir[4096], cname[256], cdir[4400], path[4500];
        snprintf(ns, sizeof(ns), "%.*s", (int)(slash - target), target);
        int r = ag_podlogs_pod_dir(dir, ns, slash + 1, NULL, pod_dir, sizeof(pod_dir));
        if (r < 0) {
                fprintf(stderr, "cubelet logs: %s: no logs for this pod under %s\n", target, dir);
                return 1;
        }
        if (container == NULL) {
                if (ag_podlogs_only_container(pod_dir, cname, sizeof(cname)) < 0) {
                        fprintf(stderr, "cubelet logs: %s has several containers: name one\n",
                                target);
                        return 2;
                }
                container = cname;
        }
        snprintf(cdir, sizeof(cdir), "%s/%s", pod_dir, container);
        long newest, prev;
        if (ag_podlogs_restarts(cdir, &newest, &prev) < 0) {
                fprintf(stderr, "cubelet logs: %s: no logs for container %s\n", target, container);
                return 1;
        }
        if (previous && prev < 0) {
                fprintf(stderr, "cubelet logs: %s: container %s has no previous instance\n", target,
                        container);
                return 1;
        }
        snprintf(path, sizeof(path), "%s/%ld.log", cdir, previous ? prev : newest);
        struct collected c = {.tail = tail};
        struct cb_error err = {0};
        int ret = 0;
        if (rt_crilog_read(path, collect, &c, &err) < 0) {
                fprintf(stderr, "cubelet logs: %s\n", err.msg);
                ret = 1;
        }
        size_t start = tail >= 0 && c.n > (size_t)tail ? c.n - (size_t)tail : 0;
        for (size_t i = 0; i < c.n; i++) {
                if (i >= start) {
                        if (timestamps) {
                                time_t sec = (time_t)(c.lines[i].ts / 1000000000);
                                struct tm tm;
                                gmtime_r(&sec, &tm);
                                printf("%04d-%02d-%02dT%02d:%02d:%02d.%09lldZ ", tm.tm_year + 1900,
                                       tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                                       (long long)(c.lines[i].ts % 1000000000));
                        }
                        fwrite(c.lines[i].text, 1, c.lines[i].len, stdout);
                        putchar('\n');
                }
                free(c.lines[i].text);
        }
        free(c.lines);
        return ret;
}
