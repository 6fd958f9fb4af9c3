/* SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>

#include "agent/cli.h"

int cmd_inspect(int argc, char **argv, const struct cb_global_opts *opts)
{
        (void)argc;
        (void)argv;
        (void)opts;
        fprintf(stderr, "cubelet inspect: not built yet\n");
        return 2;
}
