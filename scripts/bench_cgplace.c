/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scripts/bench.sh figure 8: what placing a new process in a cgroup costs.
 *
 *   bench_cgplace write DIR GAP_MS N   fork, then the pid to DIR/cgroup.procs
 *   bench_cgplace clone DIR GAP_MS N   clone3(CLONE_INTO_CGROUP) into DIR (cgroup2)
 *   bench_cgplace self DIR GAP_MS N    fork, then the child writes "0" (itself,
 *                                      one thread) to DIR/tasks (v1), as the
 *                                      container init and the exec helper do
 *
 * N times, GAP_MS after the previous one (a lone pod start after a quiet
 * spell, or 0: a burst); prints the milliseconds of each placement, from
 * before the fork to the child being in DIR (self: to the child's word
 * that its write returned). The children wait in pause()
 * and are killed and reaped by pid at once. Only the cgroup given is
 * touched; the caller makes it (under its own parent) and removes it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct clone_args_v2 {
        uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid,
            set_tid_size, cgroup;
};

static double now_ms(void)
{
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
        if (argc != 5 || (strcmp(argv[1], "write") != 0 && strcmp(argv[1], "clone") != 0 &&
                          strcmp(argv[1], "self") != 0)) {
                fprintf(stderr, "usage: %s write|clone|self DIR GAP_MS N\n", argv[0]);
                return 2;
        }
        bool into = strcmp(argv[1], "clone") == 0, self = strcmp(argv[1], "self") == 0;
        const char *dir = argv[2];
        int gap = atoi(argv[3]), n = atoi(argv[4]);
        char procs[4096], tasks[4096];
        snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
        snprintf(tasks, sizeof(tasks), "%s/tasks", dir);
        for (int i = 0; i < n; i++) {
                if (gap > 0)
                        usleep((useconds_t)gap * 1000);
                double t0 = now_ms();
                pid_t pid;
                if (into) {
                        int cfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                        if (cfd < 0) {
                                perror(dir);
                                return 1;
                        }
                        struct clone_args_v2 a = {.flags = 0x200000000ULL /* CLONE_INTO_CGROUP */,
                                                  .exit_signal = SIGCHLD,
                                                  .cgroup = (uint64_t)cfd};
                        pid = (pid_t)syscall(SYS_clone3, &a, sizeof(a));
                        if (pid == 0) {
                                pause();
                                _exit(0);
                        }
                        close(cfd);
                        if (pid < 0) {
                                fprintf(stderr, "clone3 into %s: %s\n", dir, strerror(errno));
                                return 1;
                        }
                } else if (self) {
                        int p[2];
                        if (pipe2(p, O_CLOEXEC) < 0) {
                                perror("pipe2");
                                return 1;
                        }
                        pid = fork();
                        if (pid == 0) {
                                int fd = open(tasks, O_WRONLY | O_CLOEXEC);
                                char ok = fd >= 0 && write(fd, "0", 1) == 1 ? 'y' : 'n';
                                if (write(p[1], &ok, 1) != 1)
                                        _exit(1);
                                pause();
                                _exit(0);
                        }
                        close(p[1]);
                        char ok = 'n';
                        if (pid < 0 || read(p[0], &ok, 1) != 1 || ok != 'y') {
                                fprintf(stderr, "%s: the child could not move itself\n", tasks);
                                if (pid > 0) {
                                        kill(pid, SIGKILL);
                                        waitpid(pid, NULL, 0);
                                }
                                return 1;
                        }
                        close(p[0]);
                } else {
                        pid = fork();
                        if (pid == 0) {
                                pause();
                                _exit(0);
                        }
                        if (pid < 0) {
                                perror("fork");
                                return 1;
                        }
                        char b[16];
                        int l = snprintf(b, sizeof(b), "%d", (int)pid);
                        int fd = open(procs, O_WRONLY | O_CLOEXEC);
                        if (fd < 0 || write(fd, b, (size_t)l) != l) {
                                fprintf(stderr, "%s: %s\n", procs, strerror(errno));
                                kill(pid, SIGKILL);
                                waitpid(pid, NULL, 0);
                                return 1;
                        }
                        close(fd);
                }
                double t1 = now_ms();
                printf("%.3f\n", t1 - t0);
                kill(pid, SIGKILL);
                waitpid(pid, NULL, 0);
        }
        return 0;
}
