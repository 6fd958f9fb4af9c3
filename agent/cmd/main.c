/* SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>
#include <string.h>

#include "agent/cmd/cli.h"

int main(int argc, char **argv)
{
        return cubelet_main(argc, argv);
}
