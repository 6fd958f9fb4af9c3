/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/cmd/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/cmd/agent.h"
#include "agent/cmd/config.h"
#include "agent/core/log.h"

#define DEFAULT_ROOT_DIR     "/var/lib/cubelet"
#define DEFAULT_CNI_CONF_DIR "/etc/cni/net.d"
#define DEFAULT_CNI_BIN_DIR  "/usr/lib/cni:/opt/cni/bin"

struct subcommand {
        const char *name;
        int (*fn)(int argc, char **argv, const struct cb_global_opts *opts);
        const char *help;
};

int cmd_monitor(int argc, char **argv, const struct cb_global_opts *opts);
int cmd_exec_helper(int argc, char **argv, const struct cb_global_opts *opts);
int cmd_pause(int argc, char **argv, const struct cb_global_opts *opts);
static const struct subcommand subcommands[] = {
    {"__monitor", cmd_monitor, NULL},  /* hidden: runtime/monitor.c */
    {"__exec", cmd_exec_helper, NULL}, /* hidden: runtime/exec.c */
    {"__pause", cmd_pause, NULL},      /* hidden: runtime/pause.c */
    {"version", cmd_version, "print the version"},
    {"inspect", cmd_inspect,
     "inspect POD_FILE [--node NODE_FILE] [--running PODLIST_FILE]: admission, QoS, "
     "tolerations and cgroup plan of a pod, without a cluster"},
    {"run-pod", cmd_run_pod,
     "run-pod FILE: run one pod on this machine without an apiserver; one JSON status line per "
     "change"},
    {"logs", cmd_logs,
     "logs [-p] [--tail N] [--timestamps] [--pod-logs-dir DIR] NS/POD [CONTAINER]: a "
     "container's log"},
    {"attach", cmd_attach,
     "attach [-i] [-t] CONTAINER_ID: follow a running container's output; -i sends stdin, -t "
     "a terminal (the container needs stdin/tty)"},
    {"image", cmd_image,
     "image import FILE | pull REF | ls | rm REF: the node's image store under --root-dir"},
};

static void usage(FILE *f)
{
        fprintf(f,
                "Usage: cubelet [GLOBAL FLAGS] COMMAND [ARGS]\n"
                "       cubelet [GLOBAL FLAGS] [--config FILE] [--kubeconfig FILE] [AGENT FLAGS]  "
                "(the node agent)\n\nCommands:\n");
        for (size_t i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); i++)
                if (subcommands[i].help != NULL)
                        fprintf(f, "  %-10s %s\n", subcommands[i].name, subcommands[i].help);
        fprintf(f,
                "\nGlobal flags (accepted before or after the command):\n"
                "  --root-dir DIR       state directory (default " DEFAULT_ROOT_DIR ")\n"
                "  --cni-conf-dir DIR   CNI configuration directory (default " DEFAULT_CNI_CONF_DIR
                ")\n"
                "  --cni-bin-dir DIRS   CNI plugin directories, colon-separated "
                "(default " DEFAULT_CNI_BIN_DIR ")\n"
                "  -v, --v N            log verbosity (default 0)\n"
                "  -h, --help           this help\n\n");
        ag_config_usage(f);
}

/* Parses "--flag value" and "--flag=value". Returns the value or NULL. */
static const char *flag_value(int argc, char **argv, int *i, const char *flag)
{
        size_t len = strlen(flag);
        const char *a = argv[*i];
        if (strncmp(a, flag, len) != 0)
                return NULL;
        if (a[len] == '=')
                return a + len + 1;
        if (a[len] != '\0')
                return NULL;
        if (*i + 1 >= argc) {
                fprintf(stderr, "cubelet: %s needs a value\n", flag);
                exit(2);
        }
        (*i)++;
        return argv[*i];
}

static int parse_verbosity(const char *s)
{
        char *end;
        long v = strtol(s, &end, 10);
        if (*s == '\0' || *end != '\0' || v < 0 || v > 10) {
                fprintf(stderr, "cubelet: -v: invalid verbosity \"%s\" (want 0..10)\n", s);
                exit(2);
        }
        return (int)v;
}

int cubelet_main(int argc, char **argv)
{
        struct cb_global_opts opts = {
            .root_dir = DEFAULT_ROOT_DIR,
            .cni_conf_dir = DEFAULT_CNI_CONF_DIR,
            .cni_bin_dir = DEFAULT_CNI_BIN_DIR,
        };
        /* Global flags may appear anywhere; the rest is kept in order. */
        char **rest = calloc((size_t)argc + 1, sizeof(char *));
        if (rest == NULL)
                return 1;
        int nrest = 0;
        for (int i = 1; i < argc; i++) {
                const char *v;
                if ((v = flag_value(argc, argv, &i, "--root-dir")) != NULL)
                        opts.root_dir = v;
                else if ((v = flag_value(argc, argv, &i, "--cni-conf-dir")) != NULL)
                        opts.cni_conf_dir = v;
                else if ((v = flag_value(argc, argv, &i, "--cni-bin-dir")) != NULL)
                        opts.cni_bin_dir = v;
                else if ((v = flag_value(argc, argv, &i, "--v")) != NULL ||
                         (v = flag_value(argc, argv, &i, "-v")) != NULL)
                        opts.verbosity = parse_verbosity(v);
                else if (strncmp(argv[i], "-v", 2) == 0 && argv[i][2] >= '0' && argv[i][2] <= '9')
                        opts.verbosity = parse_verbosity(argv[i] + 2);
                else if (nrest == 0 &&
                         (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)) {
                        usage(stdout);
                        free(rest);
                        return 0;
                } else
                        rest[nrest++] = argv[i];
        }
        ag_log_verbosity = opts.verbosity;
        int ret = 2;
        if (nrest == 0 || rest[0][0] == '-') {
                /* No command: the node agent, with its own flags. */
                ret = ag_run_agent(nrest, rest, &opts);
        } else {
                const struct subcommand *sc = NULL;
                for (size_t i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); i++)
                        if (strcmp(rest[0], subcommands[i].name) == 0)
                                sc = &subcommands[i];
                if (sc == NULL) {
                        fprintf(stderr, "cubelet: unknown command \"%s\"; see cubelet --help\n",
                                rest[0]);
                } else {
                        ret = sc->fn(nrest, rest, &opts);
                }
        }
        free(rest);
        return ret;
}

int cmd_version(int argc, char **argv, const struct cb_global_opts *opts)
{
        (void)argc;
        (void)argv;
        (void)opts;
        printf("cubelet v%s\n", CUBELET_VERSION);
        return 0;
}
