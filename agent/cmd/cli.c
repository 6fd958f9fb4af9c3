/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/cmd/cli.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/cmd/agent.h"
#include "agent/cmd/config.h"
#include "agent/core/log.h"
#include "runtime/sandbox.h"

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
int cmd_timeline(int argc, char **argv, const struct cb_global_opts *opts);
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
    {"timeline", cmd_timeline,
     "timeline [POD...] [-n NS] [-w] [-o text|json|trace]: each pod's steps, phases and status "
     "changes, from the running agent or the state dir"},
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

/* Parses "--flag value" and "--flag=value": 1 with *ret the value, 0 when
 * argv[*i] is not flag, -1 when its value is missing. */
static int flag_value(int argc, char **argv, int *i, const char *flag, const char **ret,
                      struct cb_error *err)
{
        size_t len = strlen(flag);
        const char *a = argv[*i];
        if (strncmp(a, flag, len) != 0 || (a[len] != '=' && a[len] != '\0'))
                return 0;
        if (a[len] == '=') {
                *ret = a + len + 1;
                return 1;
        }
        if (*i + 1 >= argc)
                return cb_error_set(err, 0, "%s needs a value", flag);
        (*i)++;
        *ret = argv[*i];
        return 1;
}

static int parse_verbosity(const char *s, int *ret, struct cb_error *err)
{
        char *end;
        long v = strtol(s, &end, 10);
        if (*s == '\0' || *end != '\0' || v < 0 || v > 10)
                return cb_error_set(err, 0, "-v: invalid verbosity \"%s\" (want 0..10)", s);
        *ret = (int)v;
        return 0;
}

static int root_dir_length(const struct cb_global_opts *opts, struct cb_error *err)
{
        size_t len = opts->root_dir != NULL ? strlen(opts->root_dir) : 0;
        if (len <= RT_ROOT_DIR_MAX)
                return 0;
        return cb_error_set(err, 0,
                            "--root-dir \"%.64s...\": %zu bytes long; at most %d are supported "
                            "(the sandboxes' paths under it are bounded); choose a shorter path",
                            opts->root_dir, len, RT_ROOT_DIR_MAX);
}

static int absolute_root_dir(struct cb_global_opts *opts, struct cb_error *err)
{
        const char *d = opts->root_dir;
        if (d == NULL || d[0] == '/')
                return root_dir_length(opts, err);
        if (d[0] == '\0')
                return cb_error_set(err, 0,
                                    "--root-dir: an empty path; give the node's state "
                                    "directory (default " DEFAULT_ROOT_DIR ")");
        char cwd[sizeof(opts->root_dir_abs)];
        if (getcwd(cwd, sizeof(cwd)) == NULL)
                return cb_error_set(err, errno,
                                    "--root-dir \"%s\" is relative and the working directory "
                                    "cannot be read; give an absolute path",
                                    d);
        while (d[0] == '.' && d[1] == '/')
                d += 2;
        int n = snprintf(opts->root_dir_abs, sizeof(opts->root_dir_abs), "%s%s%s", cwd,
                         strcmp(cwd, "/") == 0 ? "" : "/", strcmp(d, ".") == 0 ? "" : d);
        if (n < 0 || (size_t)n >= sizeof(opts->root_dir_abs))
                return cb_error_set(err, ENAMETOOLONG,
                                    "--root-dir \"%s\": too long once made "
                                    "absolute against %s",
                                    opts->root_dir, cwd);
        size_t len = strlen(opts->root_dir_abs);
        if (len > 1 && opts->root_dir_abs[len - 1] == '/')
                opts->root_dir_abs[len - 1] = '\0';
        opts->root_dir = opts->root_dir_abs;
        return root_dir_length(opts, err);
}

int ag_cli_parse_global(int argc, char **argv, struct cb_global_opts *opts, char **rest,
                        int *ret_nrest, bool *ret_help, struct cb_error *err)
{
        static const struct {
                const char *flag;
                size_t off;
        } paths[] = {
            {"--root-dir", offsetof(struct cb_global_opts, root_dir)},
            {"--cni-conf-dir", offsetof(struct cb_global_opts, cni_conf_dir)},
            {"--cni-bin-dir", offsetof(struct cb_global_opts, cni_bin_dir)},
        };
        int nrest = 0;
        *ret_help = false;
        for (int i = 1; i < argc; i++) {
                const char *v = NULL;
                int r = 0;
                for (size_t k = 0; k < sizeof(paths) / sizeof(paths[0]) && r == 0; k++)
                        if ((r = flag_value(argc, argv, &i, paths[k].flag, &v, err)) > 0)
                                *(const char **)((char *)opts + paths[k].off) = v;
                if (r < 0)
                        return -1;
                if (r > 0)
                        continue;
                if ((r = flag_value(argc, argv, &i, "--v", &v, err)) == 0)
                        r = flag_value(argc, argv, &i, "-v", &v, err);
                if (r == 0 && strncmp(argv[i], "-v", 2) == 0 && argv[i][2] >= '0' &&
                    argv[i][2] <= '9') {
                        v = argv[i] + 2;
                        r = 1;
                }
                if (r < 0 || (r > 0 && parse_verbosity(v, &opts->verbosity, err) < 0))
                        return -1;
                if (r > 0)
                        continue;
                if (nrest == 0 && (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)) {
                        *ret_help = true;
                        break;
                }
                rest[nrest++] = argv[i];
        }
        *ret_nrest = nrest;
        return absolute_root_dir(opts, err);
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
        bool help;
        struct cb_error err = {0};
        if (ag_cli_parse_global(argc, argv, &opts, rest, &nrest, &help, &err) < 0) {
                fprintf(stderr, "cubelet: %s\n", err.msg);
                free(rest);
                return 2;
        }
        if (help) {
                usage(stdout);
                free(rest);
                return 0;
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

int ag_sibling_binary(const char *exe, const char *name, char *buf, size_t size,
                      struct cb_error *err)
{
        const char *slash = strrchr(exe, '/');
        if (slash == NULL)
                return cb_error_set(err, EINVAL, "%s is not an absolute path", exe);
        if ((size_t)snprintf(buf, size, "%.*s/%s", (int)(slash - exe), exe, name) >= size)
                return cb_error_set(err, ENAMETOOLONG, "%.*s/%s: path too long", (int)(slash - exe),
                                    exe, name);
        struct stat me, st;
        if (stat(exe, &me) < 0)
                return cb_error_set(err, errno, "cannot stat %s", exe);
        if (stat(buf, &st) < 0)
                return cb_error_set(err, errno, "cannot stat %s", buf);
        if (!S_ISREG(st.st_mode) || (st.st_mode & 0111) == 0)
                return cb_error_set(err, 0, "%s is not an executable file", buf);
        if ((st.st_mode & 0022) != 0 || st.st_uid != me.st_uid)
                return cb_error_set(err, 0,
                                    "%s is writable by others or not owned by the owner of %s "
                                    "(uid %u); refusing to run it",
                                    buf, exe, (unsigned)me.st_uid);
        return 0;
}

int ag_unpack_helper(char *buf, size_t size, struct cb_error *err)
{
        char exe[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        if (n <= 0) {
                buf[0] = '\0';
                return cb_error_set(err, errno, "cannot resolve /proc/self/exe");
        }
        exe[n] = '\0';
        if (ag_sibling_binary(exe, "cubelet-unpack", buf, size, err) < 0)
                return cb_error_prefix(err, "the layer unpacker (install cubelet-unpack beside "
                                            "cubelet)");
        return 0;
}

void ag_monitor_path(char *exe, size_t size)
{
        char cand[PATH_MAX];
        struct cb_error err;
        if (ag_sibling_binary(exe, "cubelet-monitor", cand, sizeof(cand), &err) < 0 ||
            strlen(cand) >= size)
                return;
        memcpy(exe, cand, strlen(cand) + 1);
}
