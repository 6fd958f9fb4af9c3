/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Layers are unpacked in a process of their own: the cubelet-unpack helper
 * (agent/cmd/unpack_main.c, running rt_unpack_main and so rt_layer_unpack).
 * libarchive's decoders read bytes cubelet does not control; a crash or a
 * leak there ends the helper, and the pull fails with an error, instead of
 * taking the agent and every pod's status down with it. The agent also no
 * longer maps libarchive and what it pulls in (libxml2, ICU, libstdc++:
 * about 2 MB of its resident memory, issue 17).
 *
 * posix_spawn (a CLONE_VFORK child, safe in the multi-threaded agent), as
 * the CNI plugins are started: stdin/stdout/stderr on /dev/null, the
 * report pipe as fd 3, every other fd closed, signals default and
 * unblocked, PATH only. The caller is a worker thread (image pulls) or a
 * command: it blocks until the helper ends.
 */
#include "runtime/image_internal.h"
#include "runtime/container_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/cleanup.h"

/* What the helper wrote to the report pipe: "<errno> <message>". */
static void read_report(int fd, char *buf, size_t size)
{
        size_t len = 0;
        while (len + 1 < size) {
                ssize_t n = read(fd, buf + len, size - 1 - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                len += (size_t)n;
        }
        buf[len] = '\0';
}

int rt_layer_unpack_helper(const char *helper, const char *archive_path, const char *target_dir,
                           int flags, struct cb_error *err)
{
        if (helper == NULL || helper[0] != '/')
                return cb_error_set(err, EINVAL,
                                    "cannot unpack %s: no layer unpacker (cubelet-unpack, "
                                    "installed beside cubelet) is known",
                                    archive_path);
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0)
                return cb_error_set(err, errno, "cannot unpack %s: pipe", archive_path);
        _cleanup_close_ int rd = p[0];
        /* above the child's fd 3, so the dup2 below always clears CLOEXEC */
        _cleanup_close_ int wr = fcntl(p[1], F_DUPFD_CLOEXEC, 10);
        close(p[1]);
        if (wr < 0)
                return cb_error_set(err, errno, "cannot unpack %s: pipe", archive_path);

        char flags_s[16], ppid_s[16];
        snprintf(flags_s, sizeof(flags_s), "%d", flags);
        snprintf(ppid_s, sizeof(ppid_s), "%d", (int)getpid());
        char *argv[] = {(char *)helper,     "__unpack", "3",    (char *)archive_path,
                        (char *)target_dir, flags_s,    ppid_s, NULL};
        char *envp[] = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", NULL};
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t attr;
        rt_spawn_init(&fa, &attr, 0);
        posix_spawn_file_actions_adddup2(&fa, wr, 3);
        posix_spawn_file_actions_addclosefrom_np(&fa, 4);
        pid_t pid;
        int rc = posix_spawn(&pid, helper, &fa, &attr, argv, envp);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&attr);
        if (rc != 0)
                return cb_error_set(err, rc,
                                    "cannot unpack %s: cannot start the layer unpacker %s "
                                    "(cubelet-unpack, installed beside cubelet)",
                                    archive_path, helper);
        close(wr);
        wr = -1;

        char report[CB_ERROR_MSG_MAX + 16];
        read_report(rd, report, sizeof(report));
        int status = 0;
        pid_t w;
        do
                w = waitpid(pid, &status, 0);
        while (w < 0 && errno == EINTR);
        if (w < 0)
                return cb_error_set(err, errno, "cannot unpack %s: waiting for %s", archive_path,
                                    helper);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
                return 0;
        char *msg = NULL;
        long code = strtol(report, &msg, 10);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 1 && msg != report && *msg == ' ') {
                cb_error_set(err, 0, "%s", msg + 1);
                err->code = code > 0 && code < 4096 ? (int)code : 0;
                return -1;
        }
        if (WIFSIGNALED(status))
                return cb_error_set(err, 0,
                                    "cannot unpack %s: the layer unpacker %s was killed by "
                                    "signal %d (%s)",
                                    archive_path, helper, WTERMSIG(status),
                                    strsignal(WTERMSIG(status)));
        return cb_error_set(err, 0, "cannot unpack %s: the layer unpacker %s exited with status %d",
                            archive_path, helper, WEXITSTATUS(status));
}
