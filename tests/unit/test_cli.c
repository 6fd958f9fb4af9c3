/* SPDX-License-Identifier: Apache-2.0 */
/* The command line: the global flags (agent/cmd/cli.h), whose errors are
 * returned instead of exiting inside the parser, and the node API's flags,
 * which go through the one option table of agent/cmd/config.c (they had
 * a parser of their own in the node API that printed its errors). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/cmd/cli.h"
#include "agent/cmd/config.h"
#include "agent/nodeapi/server.h"

#define MAX_ARGS 6

static int parse_global(const char *const *args, struct cb_global_opts *o, char **rest, int *nrest,
                        bool *help, struct cb_error *err)
{
        char *argv[MAX_ARGS + 1] = {"cubelet"};
        int argc = 1;
        while (argc <= MAX_ARGS && args[argc - 1] != NULL) {
                argv[argc] = (char *)args[argc - 1];
                argc++;
        }
        *o = (struct cb_global_opts){.root_dir = "/var/lib/cubelet"};
        return ag_cli_parse_global(argc, argv, o, rest, nrest, help, err);
}

START_TEST(test_global_flags)
{
        static const char *const args[] = {"--root-dir",        "/r", "-v4", "image", "ls",
                                           "--cni-conf-dir=/c", NULL};
        struct cb_global_opts o;
        char *rest[MAX_ARGS + 1] = {0};
        int nrest = -1;
        bool help = true;
        struct cb_error err = {0};
        ck_assert_int_eq(parse_global(args, &o, rest, &nrest, &help, &err), 0);
        ck_assert(!help);
        ck_assert_str_eq(o.root_dir, "/r");
        ck_assert_str_eq(o.cni_conf_dir, "/c");
        ck_assert_int_eq(o.verbosity, 4);
        ck_assert_int_eq(nrest, 2);
        ck_assert_str_eq(rest[0], "image");
        ck_assert_str_eq(rest[1], "ls");

        static const char *const help_args[] = {"--v=2", "--help", "--root-dir", NULL};
        ck_assert_int_eq(parse_global(help_args, &o, rest, &nrest, &help, &err), 0);
        ck_assert(help);
        ck_assert_int_eq(o.verbosity, 2);
}
END_TEST

/* A relative --root-dir is made absolute against the working directory: the
 * runtime uses it from other mount namespaces and working directories (a
 * relative one was accepted, then broke every sandbox and teardown). */
START_TEST(test_relative_root_dir)
{
        char cwd[4096];
        ck_assert_ptr_nonnull(getcwd(cwd, sizeof(cwd)));
        static const struct {
                const char *arg, *suffix;
        } cases[] = {
            {"state", "/state"},
            {"./state/", "/state"},
            {".", ""},
            {"a/../b", "/a/../b"},
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                const char *args[] = {"--root-dir", cases[i].arg, "version", NULL};
                struct cb_global_opts o;
                char *rest[MAX_ARGS + 1] = {0};
                int nrest = 0;
                bool help = false;
                struct cb_error err = {0};
                ck_assert_int_eq(parse_global(args, &o, rest, &nrest, &help, &err), 0);
                char want[8192];
                snprintf(want, sizeof(want), "%s%s", strcmp(cwd, "/") == 0 ? "" : cwd,
                         cases[i].suffix);
                ck_assert_str_eq(o.root_dir, want[0] ? want : "/");
                ck_assert_ptr_eq(o.root_dir, o.root_dir_abs);
        }
        const char *abs_args[] = {"--root-dir", "/abs/x", NULL};
        struct cb_global_opts o;
        char *rest[MAX_ARGS + 1] = {0};
        int nrest = 0;
        bool help = false;
        struct cb_error err = {0};
        ck_assert_int_eq(parse_global(abs_args, &o, rest, &nrest, &help, &err), 0);
        ck_assert_str_eq(o.root_dir, "/abs/x");
}
END_TEST

/* 400 bytes after the "/": one more than --root-dir allows */
#define X10          "xxxxxxxxxx"
#define X50          X10 X10 X10 X10 X10
#define LONG_ROOT    X50 X50 X50 X50 X50 X50 X50 X50
#define LONG_ROOT_64 X50 X10 "xxx"

/* These used to print and exit(2) inside the parser. */
START_TEST(test_global_flag_errors)
{
        static const struct {
                const char *args[3];
                const char *want;
        } cases[] = {
            {{"--root-dir"}, "--root-dir needs a value"},
            {{"version", "--cni-bin-dir"}, "--cni-bin-dir needs a value"},
            {{"-v"}, "-v needs a value"},
            {{"--v", "x"}, "-v: invalid verbosity \"x\" (want 0..10)"},
            {{"-v11"}, "-v: invalid verbosity \"11\" (want 0..10)"},
            {{"--v="}, "-v: invalid verbosity \"\" (want 0..10)"},
            {{"--root-dir="},
             "--root-dir: an empty path; give the node's state directory "
             "(default /var/lib/cubelet)"},
            {{"--root-dir", "/" LONG_ROOT},
             "--root-dir \"/" LONG_ROOT_64 "...\": 401 bytes long; at most 400 are supported (the "
             "sandboxes' paths under it are bounded); choose a shorter path"},
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct cb_global_opts o;
                char *rest[MAX_ARGS + 1] = {0};
                int nrest = 0;
                bool help = false;
                struct cb_error err = {0};
                ck_assert_msg(parse_global(cases[i].args, &o, rest, &nrest, &help, &err) == -1,
                              "case %zu accepted", i);
                ck_assert_msg(strcmp(err.msg, cases[i].want) == 0, "case %zu: got \"%s\"", i,
                              err.msg);
        }
}
END_TEST

/* main decides: the status is 2, as when the parser exited. */
START_TEST(test_main_returns_on_bad_global_flag)
{
        char *argv[] = {"cubelet", "version", "--root-dir", NULL};
        ck_assert_int_eq(cubelet_main(3, argv), 2);
        char *argv2[] = {"cubelet", "-v", "99", "version", NULL};
        ck_assert_int_eq(cubelet_main(4, argv2), 2);
}
END_TEST

static int parse_agent(const char *const *args, struct ag_config *c, struct cb_error *err)
{
        char *argv[MAX_ARGS];
        int argc = 0;
        while (argc < MAX_ARGS && args[argc] != NULL) {
                argv[argc] = (char *)args[argc];
                argc++;
        }
        ck_assert_int_eq(ag_config_init(c, err), 0);
        int r = ag_config_parse_flags(c, argc, argv, err);
        if (r == 0)
                r = ag_config_finish(c, err);
        return r;
}

START_TEST(test_node_api_flags)
{
        struct ag_config c;
        struct cb_error err = {0};
        static const char *const none[] = {NULL};
        ck_assert_int_eq(parse_agent(none, &c, &err), 0);
        ck_assert_str_eq(c.napi.address, "0.0.0.0");
        ck_assert_int_eq(c.napi.port, AG_NAPI_DEFAULT_PORT);
        ck_assert_ptr_null(c.napi.tls_cert_file);
        ck_assert_ptr_null(c.napi.cert_dir);
        ck_assert_ptr_null(c.napi.token_file);
        ag_config_clear(&c);

        static const char *const args[] = {"--port=10260",  "--address",
                                           "127.0.0.1",     "--authentication-token-file=/t",
                                           "--cert-dir=/p", NULL};
        ck_assert_int_eq(parse_agent(args, &c, &err), 0);
        ck_assert_int_eq(c.napi.port, 10260);
        ck_assert_str_eq(c.napi.address, "127.0.0.1");
        ck_assert_str_eq(c.napi.token_file, "/t");
        ck_assert_str_eq(c.napi.cert_dir, "/p");
        ag_config_clear(&c);
}
END_TEST

START_TEST(test_node_api_flag_errors)
{
        static const struct {
                const char *args[3];
                const char *want;
        } cases[] = {
            {{"--port", "0"}, "--port: \"0\": want an integer between 1 and 65535"},
            {{"--port=65536"}, "--port: \"65536\": want an integer between 1 and 65535"},
            {{"--port", "x"}, "--port: \"x\": want an integer between 1 and 65535"},
            {{"--port"}, "--port needs a value"},
            {{"--address"}, "--address needs a value"},
            {{"--tls-cert-file"}, "--tls-cert-file needs a value"},
            {{"--client-ca-file="}, "--client-ca-file: \"\": must not be empty"},
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct ag_config c;
                struct cb_error err = {0};
                ck_assert_msg(parse_agent(cases[i].args, &c, &err) == -1, "case %zu accepted", i);
                ck_assert_msg(strstr(err.msg, cases[i].want) != NULL,
                              "case %zu: got \"%s\", want \"%s\"", i, err.msg, cases[i].want);
                ag_config_clear(&c);
        }
}
END_TEST

int main(void)
{
        Suite *s = suite_create("cli");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_global_flags);
        tcase_add_test(tc, test_global_flag_errors);
        tcase_add_test(tc, test_relative_root_dir);
        tcase_add_test(tc, test_main_returns_on_bad_global_flag);
        tcase_add_test(tc, test_node_api_flags);
        tcase_add_test(tc, test_node_api_flag_errors);
        suite_add_tcase(s, tc);
        SRunner *sr = srunner_create(s);
        srunner_set_fork_status(sr, CK_FORK);
        srunner_run_all(sr, CK_NORMAL);
        int failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
