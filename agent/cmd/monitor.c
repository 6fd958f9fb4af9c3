/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `cubelet __monitor`: the hidden mode in which the runtime re-executes the
 * cubelet binary to run a container's monitor in a fresh, single-threaded
 * process (runtime/monitor.c). Not meant to be run by hand.
 */
#include "agent/cmd/cli.h"
#include "runtime/container.h"
#include "runtime/sandbox.h"

int cmd_monitor(int argc, char **argv, const struct cb_global_opts *opts)
{
        (void)opts;
        return rt_monitor_main(argc, argv);
}

/* `cubelet __pause 3`: the pod PID namespace init (runtime/pause.c). */
int cmd_pause(int argc, char **argv, const struct cb_global_opts *opts)
{
        (void)opts;
        return rt_pause_main(argc, argv);
}
