/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include "agent/cmd/cli.h"
#include "lib/error.h"

/* The node agent (cubelet run without a command). argv holds the agent's
 * own flags (no program name); the global ones are in opts. Runs until
 * SIGTERM/SIGINT and returns the exit status (0 on a clean stop). */
int ag_run_agent(int argc, char **argv, const struct cb_global_opts *opts);
