/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `cubelet __exec`: the hidden mode in which the runtime re-executes the
 * cubelet binary to run a command inside a running container in a fresh,
 * single-threaded process (runtime/exec.c). Not meant to be run by hand.
 */
#include "agent/cmd/cli.h"
#include "runtime/container.h"

int cmd_exec_helper(int argc, char **argv, const struct cb_global_opts *opts)
{
        (void)opts;
        return rt_exec_main(argc, argv);
}
