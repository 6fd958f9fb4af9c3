/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cubelet-unpack: unpacks one image layer (or an image archive) for the
 * runtime, in a process of its own (runtime/unpack_helper.c): libarchive
 * and what it loads (libxml2, ICU, libstdc++) are mapped here, not in the
 * agent, and a crash on a hostile layer ends this process only. The agent,
 * `cubelet run-pod` and `cubelet image` run it from beside the cubelet
 * binary (agent/cmd/cli.c:ag_sibling_binary).
 */
#include <stdio.h>
#include <string.h>

#include "runtime/image.h"

int main(int argc, char **argv)
{
        if (argc >= 2 && strcmp(argv[1], "__unpack") == 0) {
                int rc = rt_unpack_main(argc - 1, argv + 1);
                if (rc != 2)
                        return rc;
        }
        fprintf(stderr, "cubelet-unpack: the layer unpacker of cubelet's runtime (__unpack "
                        "REPORT_FD ARCHIVE DIR FLAGS PARENT_PID); not meant to be run by hand\n");
        return 2;
}
