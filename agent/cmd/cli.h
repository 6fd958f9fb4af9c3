/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Global options every subcommand accepts where they apply. */
struct cb_global_opts {
        const char *root_dir;     /* --root-dir, default /var/lib/cubelet */
        const char *cni_conf_dir; /* --cni-conf-dir, default /etc/cni/net.d */
        const char *cni_bin_dir;  /* --cni-bin-dir, default /usr/lib/cni:/opt/cni/bin */
        int verbosity;            /* -v / --v */
};

int cubelet_main(int argc, char **argv);

/* Subcommands: argv[0] is the subcommand name; options already removed
 * from argv are in opts. Return the process exit status. */
int cmd_version(int argc, char **argv, const struct cb_global_opts *opts);
int cmd_inspect(int argc, char **argv, const struct cb_global_opts *opts);
int cmd_image(int argc, char **argv, const struct cb_global_opts *opts);
int cmd_run_pod(int argc, char **argv, const struct cb_global_opts *opts);
int cmd_logs(int argc, char **argv, const struct cb_global_opts *opts);
int cmd_attach(int argc, char **argv, const struct cb_global_opts *opts);
