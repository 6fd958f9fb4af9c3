/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cubelet-monitor: the runtime's hidden modes (__monitor, __exec, __pause)
 * in a binary of their own, linked with only what they use (libc,
 * libseccomp, libcap, cJSON: no libcurl, OpenSSL, libmicrohttpd, libyaml,
 * libarchive, libsystemd). Every container's monitor, every exec helper and
 * every pod's pause process is an exec of it, so each of them no longer
 * pays the dynamic loader's pass over the ~55 libraries the cubelet binary
 * pulls in, nor keeps their relocated pages (issue 17). The agent uses it
 * when it lies next to the cubelet binary (agent/cmd/agent.c:ag_monitor_path),
 * else cubelet itself, which has the same modes.
 */
#include <stdio.h>
#include <string.h>

#include "runtime/container.h"
#include "runtime/sandbox.h"

int main(int argc, char **argv)
{
        if (argc >= 2 && strcmp(argv[1], "__monitor") == 0)
                return rt_monitor_main(argc - 1, argv + 1);
        if (argc >= 2 && strcmp(argv[1], "__exec") == 0)
                return rt_exec_main(argc - 1, argv + 1);
        if (argc >= 2 && strcmp(argv[1], "__pause") == 0)
                return rt_pause_main(argc - 1, argv + 1);
        fprintf(stderr, "cubelet-monitor: internal modes of cubelet's runtime "
                        "(__monitor, __exec, __pause); not meant to be run by hand\n");
        return 2;
}
