/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "lib/error.h"

/* Global options every subcommand accepts where they apply. */
struct cb_global_opts {
        const char *root_dir;     /* --root-dir, default /var/lib/cubelet */
        const char *cni_conf_dir; /* --cni-conf-dir, default /etc/cni/net.d */
        const char *cni_bin_dir;  /* --cni-bin-dir, default /usr/lib/cni:/opt/cni/bin */
        int verbosity;            /* -v / --v */
        char root_dir_abs[4096];  /* a relative --root-dir made absolute */
};

int cubelet_main(int argc, char **argv);

/* exe (the resolved cubelet binary, a buffer of size bytes) becomes the
 * cubelet-monitor binary next to it when there is one (a regular,
 * executable file of the same owner, writable by nobody else): the
 * runtime's monitor, exec helper and pause processes are execs of it
 * (agent/cmd/monitor_main.c). Else exe is left as it is. */
void ag_monitor_path(char *exe, size_t size);

/* The binary name beside exe (the resolved cubelet binary) into buf, and 0
 * when it is usable: a regular, executable file of exe's owner, writable
 * by nobody else. Else -1 with why (buf still names the candidate). */
int ag_sibling_binary(const char *exe, const char *name, char *buf, size_t size,
                      struct cb_error *err);
/* cubelet-unpack beside this process's binary (ag_sibling_binary), the
 * layer unpacker image pulls and imports run. */
int ag_unpack_helper(char *buf, size_t size, struct cb_error *err);

/* The global flags of argv (argv[0] the program) into opts, anywhere on the
 * line; the other arguments, in order, into rest (room for argc) and their
 * number into *ret_nrest. -h/--help before any other argument sets
 * *ret_help (and stops). A relative --root-dir is taken against the working
 * directory (as Go's os calls take the kubelet's) and made absolute in
 * opts->root_dir_abs, since the runtime uses it from other mount namespaces
 * and working directories. -1 on a missing value, an empty or too long
 * --root-dir or a bad verbosity: err names the flag; nothing is printed and
 * nothing exits. */
int ag_cli_parse_global(int argc, char **argv, struct cb_global_opts *opts, char **rest,
                        int *ret_nrest, bool *ret_help, struct cb_error *err);

/* Subcommands: argv[0] is the subcommand name; options already removed
 * from argv are in opts. Return the process exit status. */
int cmd_version(int argc, char **argv, const struct cb_global_opts *opts);
int cmd_inspect(int argc, char **argv, const struct cb_global_opts *opts);
int cmd_image(int argc, char **argv, const struct cb_global_opts *opts);
int cmd_run_pod(int argc, char **argv, const struct cb_global_opts *opts);
int cmd_logs(int argc, char **argv, const struct cb_global_opts *opts);
int cmd_attach(int argc, char **argv, const struct cb_global_opts *opts);
