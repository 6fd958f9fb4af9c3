/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CNI plumbing without root (runtime/cni.c, the pure parts of
 * runtime/sandbox.c): conflist loading and wrapping, CNI_ARGS, plugin
 * stdin with runtimeConfig, result and error parsing, plugin execution
 * (fd and signal hygiene, timeout, SIGPIPE) and the ADD/CHECK/DEL
 * sequences against shell-script plugins that log what they receive.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "lib/cleanup.h"
#include "lib/file.h"
#include "runtime/cni.h"
#include "runtime/sandbox.h"

#include "helpers.h"

/* top: made by main() and removed there (a failing test skips its
 * teardown); base: one fresh dir per test under it. */
static char top[256], base[300];

static void setup(void)
{
        snprintf(base, sizeof(base), "%s/t-XXXXXX", top);
        ck_assert_ptr_nonnull(mkdtemp(base));
}

static void teardown(void)
{
        char cmd[400];
        snprintf(cmd, sizeof(cmd), "rm -rf %s", base);
        ck_assert_int_eq(system(cmd), 0);
}

static void write_file(const char *dir, const char *name, const char *text, int mode)
{
        char p[512];
        snprintf(p, sizeof(p), "%s/%s", dir, name);
        struct cb_error err;
        ck_assert_msg(cb_write_file_atomic(p, text, strlen(text), mode, &err) == 0, "%s", err.msg);
}

/* The buffer goes straight into the caller's variable: returned from a local
 * whose address cb_read_file had, gcc -O3 takes every pointer into it for a
 * dangling pointer to that local (-Wdangling-pointer). */
static void read_all(const char *path, char **ret)
{
        struct cb_error err;
        *ret = NULL;
        ck_assert_msg(cb_read_file(path, 1 << 20, ret, NULL, &err) == 0, "%s", err.msg);
}

/* ---- configuration ---- */

static const struct {
        const char *text;
        bool single;
        const char *err_part; /* NULL = valid */
        size_t n_plugins;
} conf_cases[] = {
    {"{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"plugins\":[{\"type\":\"bridge\"},"
     "{\"type\":\"portmap\"}]}",
     false, NULL, 2},
    {"{\"cniVersion\":\"0.4.0\",\"name\":\"n\",\"type\":\"bridge\"}", true, NULL, 1},
    /* a list in a .conf file is still a list */
    {"{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"plugins\":[{\"type\":\"x\"}]}", true, NULL, 1},
    {"{\"cniVersion\":\"1.0.0\",\"plugins\":[{\"type\":\"x\"}]}", false, "\"name\"", 0},
    {"{\"name\":\"n\",\"plugins\":[{\"type\":\"x\"}]}", false, "cniVersion", 0},
    {"{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"plugins\":[]}", false, "non-empty", 0},
    {"{\"cniVersion\":\"1.0.0\",\"name\":\"n\"}", false, "non-empty", 0},
    {"{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"plugins\":[{\"x\":1}]}", false, "plugins[0].type",
     0},
    {"{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"plugins\":[{\"type\":\"../sh\"}]}", false,
     "plain file name", 0},
    {"[1,2]", false, "JSON object", 0},
    {"{\"cniVersion\":", false, "JSON object", 0},
};

START_TEST(test_parse_netconf)
{
        struct rt_cni_netconf nc;
        struct cb_error err;
        cb_error_clear(&err);
        int r = rt_cni_parse_netconf(conf_cases[_i].text, conf_cases[_i].single, &nc, &err);
        if (conf_cases[_i].err_part == NULL) {
                ck_assert_msg(r == 0, "case %d: %s", _i, err.msg);
                ck_assert_str_eq(nc.name, "n");
                ck_assert_uint_eq(nc.n_plugins, conf_cases[_i].n_plugins);
                rt_cni_netconf_release(&nc);
        } else {
                ck_assert_int_eq(r, -1);
                ck_assert_msg(strstr(err.msg, conf_cases[_i].err_part) != NULL,
                              "case %d: \"%s\" lacks \"%s\"", _i, err.msg, conf_cases[_i].err_part);
        }
}
END_TEST

START_TEST(test_load_first_sorted)
{
        struct rt_cni_netconf nc;
        struct cb_error err;
        ck_assert_int_eq(rt_cni_load_netconf(base, &nc, &err), -1);
        ck_assert_ptr_nonnull(strstr(err.msg, "no CNI network config"));
        write_file(base, "README.txt", "not a config", 0644);
        write_file(base, "20-b.conflist",
                   "{\"cniVersion\":\"1.0.0\",\"name\":\"b\",\"plugins\":[{\"type\":\"x\"}]}",
                   0644);
        write_file(base, "10-a.conf", "{\"cniVersion\":\"0.4.0\",\"name\":\"a\",\"type\":\"y\"}",
                   0644);
        ck_assert_msg(rt_cni_load_netconf(base, &nc, &err) == 0, "%s", err.msg);
        ck_assert_str_eq(nc.name, "a");
        ck_assert_str_eq(nc.cni_version, "0.4.0");
        ck_assert_uint_eq(nc.n_plugins, 1);
        ck_assert_ptr_nonnull(strstr(nc.path, "10-a.conf"));
        rt_cni_netconf_release(&nc);
        /* A broken first file is an error naming it, not silently skipped. */
        write_file(base, "05-broken.json", "{", 0644);
        ck_assert_int_eq(rt_cni_load_netconf(base, &nc, &err), -1);
        ck_assert_ptr_nonnull(strstr(err.msg, "05-broken.json"));
}
END_TEST

/* ---- CNI_ARGS and stdin ---- */

START_TEST(test_build_args)
{
        struct rt_cni_pod pod = {"sb1", "/x", "web", "default", "u-1", NULL, 0};
        char buf[512];
        struct cb_error err;
        ck_assert_int_eq(rt_cni_build_args(&pod, buf, sizeof(buf), &err), 0);
        ck_assert_str_eq(buf, "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web;"
                              "K8S_POD_INFRA_CONTAINER_ID=sb1;K8S_POD_UID=u-1");
        pod.name = "a;b";
        ck_assert_int_eq(rt_cni_build_args(&pod, buf, sizeof(buf), &err), -1);
        ck_assert_ptr_nonnull(strstr(err.msg, "K8S_POD_NAME"));
        pod.name = "web";
        pod.uid = "";
        ck_assert_int_eq(rt_cni_build_args(&pod, buf, sizeof(buf), &err), -1);
        pod.uid = "u-1";
        ck_assert_int_eq(rt_cni_build_args(&pod, buf, 20, &err), -1);
}
END_TEST

START_TEST(test_plugin_stdin)
{
        struct rt_cni_netconf nc;
        struct cb_error err;
        const char *text =
            "{\"cniVersion\":\"1.0.0\",\"name\":\"net1\",\"plugins\":["
            "{\"type\":\"bridge\",\"name\":\"wrong\",\"bridge\":\"br0\"},"
            "{\"type\":\"portmap\",\"capabilities\":{\"portMappings\":true,\"bandwidth\":true}},"
            "{\"type\":\"other\",\"capabilities\":{\"portMappings\":false}}]}";
        ck_assert_int_eq(rt_cni_parse_netconf(text, false, &nc, &err), 0);
        struct rt_port_mapping pm[2] = {{8080, 80, "tcp", ""}, {5353, 53, "udp", "10.0.0.1"}};
        _cleanup_cjson_ cJSON *caps = rt_cni_capability_args(pm, 2);
        _cleanup_cjson_ cJSON *prev = cJSON_Parse("{\"cniVersion\":\"1.0.0\",\"ips\":[]}");

        _cleanup_cjson_ cJSON *s0 = rt_cni_plugin_stdin(&nc, 0, NULL, caps, &err);
        ck_assert_str_eq(cJSON_GetObjectItem(s0, "name")->valuestring, "net1");
        ck_assert_str_eq(cJSON_GetObjectItem(s0, "cniVersion")->valuestring, "1.0.0");
        ck_assert_str_eq(cJSON_GetObjectItem(s0, "bridge")->valuestring, "br0");
        ck_assert_ptr_null(cJSON_GetObjectItem(s0, "prevResult"));
        ck_assert_ptr_null(cJSON_GetObjectItem(s0, "runtimeConfig"));

        _cleanup_cjson_ cJSON *s1 = rt_cni_plugin_stdin(&nc, 1, prev, caps, &err);
        ck_assert_ptr_nonnull(cJSON_GetObjectItem(s1, "prevResult"));
        cJSON *rc = cJSON_GetObjectItem(s1, "runtimeConfig");
        ck_assert_ptr_nonnull(rc);
        ck_assert_ptr_null(cJSON_GetObjectItem(rc, "bandwidth")); /* not given */
        cJSON *maps = cJSON_GetObjectItem(rc, "portMappings");
        ck_assert_int_eq(cJSON_GetArraySize(maps), 2);
        cJSON *m0 = cJSON_GetArrayItem(maps, 0), *m1 = cJSON_GetArrayItem(maps, 1);
        ck_assert_int_eq(cJSON_GetObjectItem(m0, "hostPort")->valueint, 8080);
        ck_assert_int_eq(cJSON_GetObjectItem(m0, "containerPort")->valueint, 80);
        ck_assert_str_eq(cJSON_GetObjectItem(m0, "protocol")->valuestring, "tcp");
        ck_assert_ptr_null(cJSON_GetObjectItem(m0, "hostIP"));
        ck_assert_str_eq(cJSON_GetObjectItem(m1, "hostIP")->valuestring, "10.0.0.1");
        ck_assert_str_eq(cJSON_GetObjectItem(m1, "protocol")->valuestring, "udp");

        _cleanup_cjson_ cJSON *s2 = rt_cni_plugin_stdin(&nc, 2, prev, caps, &err);
        ck_assert_ptr_null(cJSON_GetObjectItem(s2, "runtimeConfig"));
        rt_cni_netconf_release(&nc);
}
END_TEST

/* ---- results and errors ---- */

static const struct {
        const char *json;
        int ok;
        size_t n_pod_ips;
        const char *ip0, *ip1;
} result_cases[] = {
    {"{\"cniVersion\":\"1.0.0\",\"interfaces\":[{\"name\":\"cni0\"},{\"name\":\"eth0\","
     "\"sandbox\":\"/x\"}],\"ips\":[{\"address\":\"10.1.2.3/24\",\"interface\":1}],"
     "\"routes\":[{\"dst\":\"0.0.0.0/0\"}]}",
     1, 1, "10.1.2.3", NULL},
    /* IPv6 listed first: the pod IPs still start with IPv4 */
    {"{\"ips\":[{\"address\":\"fd00::5/64\"},{\"address\":\"10.0.0.9/16\"},"
     "{\"address\":\"10.0.0.10/16\"}]}",
     1, 2, "10.0.0.9", "fd00::5"},
    {"{\"ips\":[{\"address\":\"fd00::7/64\"}]}", 1, 1, "fd00::7", NULL},
    {"{\"cniVersion\":\"0.2.0\",\"ip4\":{\"ip\":\"192.168.3.4/24\"}}", 1, 1, "192.168.3.4", NULL},
    {"{\"ips\":[]}", 1, 0, NULL, NULL},
    {"{\"ips\":[{\"gateway\":\"10.0.0.1\"}]}", 0, 0, NULL, NULL},
    {"[]", 0, 0, NULL, NULL},
};

START_TEST(test_parse_result)
{
        _cleanup_cjson_ cJSON *j = cJSON_Parse(result_cases[_i].json);
        struct rt_cni_result r;
        struct cb_error err;
        int rc = rt_cni_parse_result(j, &r, &err);
        ck_assert_int_eq(rc, result_cases[_i].ok ? 0 : -1);
        if (!result_cases[_i].ok)
                return;
        ck_assert_uint_eq(r.n_pod_ips, result_cases[_i].n_pod_ips);
        if (result_cases[_i].ip0)
                ck_assert_str_eq(r.pod_ips[0], result_cases[_i].ip0);
        if (result_cases[_i].ip1)
                ck_assert_str_eq(r.pod_ips[1], result_cases[_i].ip1);
        if (_i == 0) {
                ck_assert_uint_eq(r.n_interfaces, 2);
                ck_assert_str_eq(r.interfaces[1], "eth0");
                ck_assert_uint_eq(r.n_routes, 1);
        }
}
END_TEST

START_TEST(test_describe_failure)
{
        char buf[256];
        int code;
        rt_cni_describe_failure("{\"cniVersion\":\"1.0.0\",\"code\":7,\"msg\":\"bad config\","
                                "\"details\":\"no bridge\"}",
                                "ignored", 1 << 8, buf, sizeof(buf), &code);
        ck_assert_int_eq(code, 7);
        ck_assert_str_eq(buf, "bad config (code 7): no bridge");
        rt_cni_describe_failure("", "  boom\n", 2 << 8, buf, sizeof(buf), &code);
        ck_assert_int_eq(code, 0);
        ck_assert_str_eq(buf, "boom");
        rt_cni_describe_failure(NULL, NULL, 9, buf, sizeof(buf), &code);
        ck_assert_str_eq(buf, "killed by signal 9");
        rt_cni_describe_failure("junk", "", 3 << 8, buf, sizeof(buf), &code);
        ck_assert_ptr_nonnull(strstr(buf, "exit status 3"));
}
END_TEST

/* ---- execution ---- */

/* Runs body as a plugin; its output goes into *ret_out (see read_all). */
static int run_script(const char *body, const char *input, int timeout_ms, char **ret_out,
                      struct cb_error *err)
{
        char script[4096];
        snprintf(script, sizeof(script), "#!/bin/sh\n%s\n", body);
        write_file(base, "plugin", script, 0755);
        char path[400];
        snprintf(path, sizeof(path), "%s/plugin", base);
        char *env[] = {"CNI_COMMAND=ADD", "PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};
        *ret_out = NULL;
        return rt_cni_exec(path, env, input, timeout_ms, ret_out, NULL, err);
}

START_TEST(test_exec_roundtrip)
{
        struct cb_error err;
        int rc;
        _cleanup_free_ char *out = NULL;
        rc = run_script("cat; echo \" $CNI_COMMAND\"", "{\"a\":1}", 5000, &out, &err);
        ck_assert_msg(rc == 0, "%s", err.msg);
        ck_assert_str_eq(out, "{\"a\":1} ADD\n");
        /* failure with the CNI error JSON */
        int code = 0;
        char path[400];
        snprintf(path, sizeof(path), "%s/plugin", base);
        write_file(base, "plugin",
                   "#!/bin/sh\necho '{\"code\":11,\"msg\":\"try later\"}'\nexit 1\n", 0755);
        char *env[] = {NULL};
        char *o2 = NULL;
        ck_assert_int_eq(rt_cni_exec(path, env, "", 5000, &o2, &code, &err), -1);
        ck_assert_int_eq(code, 11);
        ck_assert_ptr_nonnull(strstr(err.msg, "try later (code 11)"));
        ck_assert_ptr_null(o2);
}
END_TEST

START_TEST(test_exec_hygiene)
{
        /* A leaked fd (no O_CLOEXEC, as old libcurl leaves its sockets), a
         * blocked and an ignored signal: the plugin must see none of them. */
        int leak = open("/dev/null", O_RDONLY);
        ck_assert_int_ge(leak, 3);
        int leak2 = dup2(leak, 77);
        ck_assert_int_eq(leak2, 77);
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGUSR1);
        sigprocmask(SIG_BLOCK, &set, NULL);
        signal(SIGUSR2, SIG_IGN);
        signal(SIGPIPE, SIG_IGN);
        struct cb_error err;
        int rc;
        _cleanup_free_ char *out = NULL;
        /* no fork in the script: dash blocks every signal around a
         * fork, and a child reading /proc/$$/status could see that */
        rc = run_script("for f in /proc/$$/fd/*; do echo \"fd ${f##*/}\"; done; "
                        "while read -r k v; do case $k in SigBlk:|SigIgn:) "
                        "printf '%s\\t%s\\n' \"$k\" \"$v\";; esac; done </proc/$$/status",
                        "", 5000, &out, &err);
        ck_assert_msg(rc == 0, "%s", err.msg);
        char needle[32];
        snprintf(needle, sizeof(needle), "fd %d\n", leak);
        /* (dash keeps the script itself open on fd 10) */
        ck_assert_msg(leak == 10 || strstr(out, needle) == NULL, "leaked fd %d: %s", leak, out);
        ck_assert_msg(strstr(out, "fd 77\n") == NULL, "leaked fd 77: %s", out);
        ck_assert_msg(strstr(out, "SigBlk:\t0000000000000000") != NULL, "mask kept: %s", out);
        /* (glibc's internal real-time signals 32 and 33 are not ours) */
        const char *ign = strstr(out, "SigIgn:\t");
        ck_assert_ptr_nonnull(ign);
        unsigned long long mask = strtoull(ign + 8, NULL, 16);
        ck_assert_msg((mask & ((1ull << (SIGUSR2 - 1)) | (1ull << (SIGPIPE - 1)))) == 0,
                      "SIG_IGN kept: %s", out);
}
END_TEST

START_TEST(test_exec_timeout_and_sigpipe)
{
        struct cb_error err;
        int rc;
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        _cleanup_free_ char *out = NULL;
        rc = run_script("exec sleep 30", "", 300, &out, &err);
        clock_gettime(CLOCK_MONOTONIC, &b);
        ck_assert_int_eq(rc, -1);
        ck_assert_ptr_null(out);
        ck_assert_int_eq(err.code, ETIMEDOUT);
        ck_assert_int_lt(b.tv_sec - a.tv_sec, 5);
        /* A plugin exiting without reading 4 MiB of input: no SIGPIPE. */
        size_t n = 4u << 20;
        _cleanup_free_ char *big = malloc(n + 1);
        memset(big, 'x', n);
        big[n] = '\0';
        _cleanup_free_ char *o2 = NULL;
        rc = run_script("echo done", big, 5000, &o2, &err);
        ck_assert_msg(rc == 0, "%s", err.msg);
        ck_assert_str_eq(o2, "done\n");
        /* Output over the limit is refused. */
        _cleanup_free_ char *o3 = NULL;
        rc = run_script("head -c 3000000 /dev/zero", "", 5000, &o3, &err);
        ck_assert_int_eq(rc, -1);
        ck_assert_ptr_null(o3);
        ck_assert_ptr_nonnull(strstr(err.msg, "more than"));
}
END_TEST

/* ---- ADD / CHECK / DEL against logging script plugins ---- */

/* Each fake plugin appends "<name> <command> <CNI_ARGS> <CNI_NETNS>" to
 * log and stores its stdin as <name>.<command>.json; "ok" plugins print
 * a result (its prevResult when given). */
static void make_fake_plugins(const char *bin)
{
        char script[2048];
        const char *names[] = {"fa", "fb"};
        for (size_t i = 0; i < 2; i++) {
                snprintf(script, sizeof(script),
                         "#!/bin/sh\n"
                         "cat > %s/%s.$CNI_COMMAND.json\n"
                         "echo \"%s $CNI_COMMAND $CNI_CONTAINERID $CNI_IFNAME $CNI_NETNS "
                         "$CNI_ARGS $CNI_PATH\" >> %s/log\n"
                         "if [ -e %s/fail-%s-$CNI_COMMAND ]; then\n"
                         "  echo '{\"code\":7,\"msg\":\"%s broke\",\"details\":\"on purpose\"}'\n"
                         "  exit 1\n"
                         "fi\n"
                         "[ $CNI_COMMAND = ADD ] && echo '{\"cniVersion\":\"1.0.0\","
                         "\"ips\":[{\"address\":\"10.9.%zu.2/24\"}]}'\n"
                         "exit 0\n",
                         base, names[i], names[i], base, base, names[i], names[i], i);
                write_file(bin, names[i], script, 0755);
        }
}

static void fake_env(char *conf, char *bin, char *cache, const char *plugins)
{
        snprintf(conf, 400, "%s/conf", base);
        snprintf(bin, 400, "%s/bin", base);
        snprintf(cache, 400, "%s/cache", base);
        mkdir(conf, 0700);
        mkdir(bin, 0700);
        make_fake_plugins(bin);
        char list[512];
        snprintf(list, sizeof(list),
                 "{\"cniVersion\":\"1.0.0\",\"name\":\"fake\",\"plugins\":[%s]}", plugins);
        write_file(conf, "10-fake.conflist", list, 0644);
}

START_TEST(test_add_check_del_sequence)
{
        char conf[400], bin[400], cache[400], p[500];
        fake_env(conf, bin, cache,
                 "{\"type\":\"fa\"},{\"type\":\"fb\",\"capabilities\":{\"portMappings\":true}}");
        char bins[900];
        snprintf(bins, sizeof(bins), "/nonexistent:%s", bin);
        struct rt_cni_ctx ctx = {conf, bins, cache, 5000};
        struct rt_port_mapping pm = {8080, 80, "tcp", ""};
        struct rt_cni_pod pod = {"sb-1", "/run/netns/x", "web", "prod", "uid-1", &pm, 1};
        struct rt_cni_result res;
        struct cb_error err;
        ck_assert_msg(rt_cni_add(&ctx, &pod, &res, &err) == 0, "%s", err.msg);
        /* the last plugin's result decides the pod IP */
        ck_assert_uint_eq(res.n_pod_ips, 1);
        ck_assert_str_eq(res.pod_ips[0], "10.9.1.2");
        snprintf(p, sizeof(p), "%s/results/fake-sb-1-eth0", cache);
        ck_assert_int_eq(access(p, F_OK), 0);
        /* fb got fa's result as prevResult and the port mappings */
        snprintf(p, sizeof(p), "%s/fb.ADD.json", base);
        _cleanup_free_ char *fb_in = NULL;
        read_all(p, &fb_in);
        _cleanup_cjson_ cJSON *j = cJSON_Parse(fb_in);
        cJSON *prev = cJSON_GetObjectItem(j, "prevResult");
        ck_assert_str_eq(
            cJSON_GetArrayItem(cJSON_GetObjectItem(prev, "ips"), 0)->child->valuestring,
            "10.9.0.2/24");
        ck_assert_ptr_nonnull(
            cJSON_GetObjectItem(cJSON_GetObjectItem(j, "runtimeConfig"), "portMappings"));
        ck_assert_msg(rt_cni_check(&ctx, &pod, &err) == 0, "%s", err.msg);
        /* DEL survives a config change: the cached config is used */
        snprintf(p, sizeof(p), "%s/10-fake.conflist", conf);
        unlink(p);
        ck_assert_msg(rt_cni_del(&ctx, &pod, &err) == 0, "%s", err.msg);
        snprintf(p, sizeof(p), "%s/results/fake-sb-1-eth0", cache);
        ck_assert_int_eq(access(p, F_OK), -1);
        snprintf(p, sizeof(p), "%s/log", base);
        _cleanup_free_ char *log = NULL;
        read_all(p, &log);
        char expect[8192];
        const char *args = "IgnoreUnknown=1;K8S_POD_NAMESPACE=prod;K8S_POD_NAME=web;"
                           "K8S_POD_INFRA_CONTAINER_ID=sb-1;K8S_POD_UID=uid-1";
        snprintf(expect, sizeof(expect),
                 "fa ADD sb-1 eth0 /run/netns/x %s %s\nfb ADD sb-1 eth0 /run/netns/x %s %s\n"
                 "fa CHECK sb-1 eth0 /run/netns/x %s %s\nfb CHECK sb-1 eth0 /run/netns/x %s %s\n"
                 "fb DEL sb-1 eth0 /run/netns/x %s %s\nfa DEL sb-1 eth0 /run/netns/x %s %s\n",
                 args, bins, args, bins, args, bins, args, bins, args, bins, args, bins);
        ck_assert_str_eq(log, expect);
        /* DEL got the cached result as prevResult */
        snprintf(p, sizeof(p), "%s/fa.DEL.json", base);
        _cleanup_free_ char *fa_del = NULL;
        read_all(p, &fa_del);
        ck_assert_ptr_nonnull(strstr(fa_del, "10.9.1.2/24"));
        /* a second DEL without cache nor config: nothing to do */
        ck_assert_msg(rt_cni_del(&ctx, &pod, &err) == 0, "%s", err.msg);
}
END_TEST

START_TEST(test_partial_add_then_del)
{
        char conf[400], bin[400], cache[400], p[500];
        fake_env(conf, bin, cache, "{\"type\":\"fa\"},{\"type\":\"fb\"},{\"type\":\"gone\"}");
        write_file(base, "fail-fb-ADD", "", 0644);
        struct rt_cni_ctx ctx = {conf, bin, cache, 5000};
        struct rt_cni_pod pod = {"sb-2", "/ns", "api", "team", "uid-2", NULL, 0};
        struct rt_cni_result res;
        struct cb_error err;
        ck_assert_int_eq(rt_cni_add(&ctx, &pod, &res, &err), -1);
        ck_assert_msg(strstr(err.msg, "CNI plugin fb") != NULL && strstr(err.msg, "team/api") &&
                          strstr(err.msg, "fb broke (code 7): on purpose"),
                      "%s", err.msg);
        ck_assert_msg(rt_cni_check(&ctx, &pod, &err) == -1, "CHECK after a failed ADD");
        /* DEL: "gone" has no binary (skipped), fb and fa run in reverse with
         * fa's partial result. */
        ck_assert_msg(rt_cni_del(&ctx, &pod, &err) == 0, "%s", err.msg);
        snprintf(p, sizeof(p), "%s/log", base);
        _cleanup_free_ char *log = NULL;
        read_all(p, &log);
        const char *fb_del = strstr(log, "fb DEL"), *fa_del = strstr(log, "fa DEL");
        ck_assert_ptr_nonnull(fb_del);
        ck_assert_ptr_nonnull(fa_del);
        ck_assert((uintptr_t)fb_del < (uintptr_t)fa_del);
        snprintf(p, sizeof(p), "%s/fa.DEL.json", base);
        _cleanup_free_ char *fa_in = NULL;
        read_all(p, &fa_in);
        ck_assert_ptr_nonnull(strstr(fa_in, "10.9.0.2/24"));
        /* A DEL failure that is not "not found" is reported and keeps the
         * cache for a retry; the other plugins still run. */
        write_file(base, "fail-fb-DEL", "", 0644);
        ck_assert_int_eq(rt_cni_add(&ctx, &pod, &res, &err), -1);
        snprintf(p, sizeof(p), "%s/log", base);
        unlink(p);
        ck_assert_int_eq(rt_cni_del(&ctx, &pod, &err), -1);
        ck_assert_ptr_nonnull(strstr(err.msg, "CNI plugin fb failed to delete pod team/api"));
        _cleanup_free_ char *log2 = NULL;
        read_all(p, &log2);
        ck_assert_ptr_nonnull(strstr(log2, "fa DEL"));
        snprintf(p, sizeof(p), "%s/results/fake-sb-2-eth0", cache);
        ck_assert_int_eq(access(p, F_OK), 0);
        /* ... also without an error to fill (the sandbox job's teardown of
         * an earlier attempt passes none): it crashed the agent on a plugin
         * that failed its DEL (tests/faults/cni_faults) */
        ck_assert_int_eq(rt_cni_del(&ctx, &pod, NULL), -1);
}
END_TEST

/* ---- hosts and resolv.conf ---- */

START_TEST(test_hosts_content)
{
        char *out = NULL;
        const char *ips[] = {"10.1.0.5", "fd00::5"};
        ck_assert_int_eq(rt_sandbox_hosts_content("web-0", "", ips, 2, NULL, NULL, &out), 0);
        ck_assert_str_eq(out, "# Kubernetes-managed hosts file.\n"
                              "127.0.0.1\tlocalhost\n"
                              "::1\tlocalhost ip6-localhost ip6-loopback\n"
                              "fe00::0\tip6-localnet\n"
                              "fe00::0\tip6-mcastprefix\n"
                              "fe00::1\tip6-allnodes\n"
                              "fe00::2\tip6-allrouters\n"
                              "10.1.0.5\tweb-0\n"
                              "fd00::5\tweb-0\n");
        free(out);
        ck_assert_int_eq(rt_sandbox_hosts_content("web-0", "web.prod.svc.cluster.local", ips, 1,
                                                  NULL, NULL, &out),
                         0);
        ck_assert_ptr_nonnull(strstr(out, "\n10.1.0.5\tweb-0.web.prod.svc.cluster.local\tweb-0\n"));
        free(out);
        ck_assert_int_eq(
            rt_sandbox_hosts_content("h", NULL, NULL, 0, "1.2.3.4 node\n", "\n# x\n", &out), 0);
        ck_assert_str_eq(out,
                         "# Kubernetes-managed hosts file (host network).\n1.2.3.4 node\n\n# x\n");
        free(out);
}
END_TEST

START_TEST(test_resolv_filter)
{
        char *out = NULL;
        size_t n;
        ck_assert_int_eq(rt_sandbox_resolv_without_loopback(
                             "# generated\nnameserver 127.0.0.53\nnameserver 10.0.0.2\n"
                             "nameserver ::1\n  nameserver 127.1.2.3\nsearch a.b c\n"
                             "options ndots:5 edns0",
                             &out, &n),
                         0);
        ck_assert_str_eq(out, "# generated\nnameserver 10.0.0.2\nsearch a.b c\n"
                              "options ndots:5 edns0\n");
        ck_assert_uint_eq(n, 1);
        free(out);
        ck_assert_int_eq(rt_sandbox_resolv_without_loopback("nameserver 127.0.0.53\n", &out, &n),
                         0);
        ck_assert_str_eq(out, "");
        ck_assert_uint_eq(n, 0);
        free(out);
}
END_TEST

int main(void)
{
        snprintf(top, sizeof(top), "/tmp/cubelet-cni-XXXXXX");
        if (mkdtemp(top) == NULL)
                return EXIT_FAILURE;
        Suite *s = suite_create("cni_parse");
        TCase *tc = tcase_create("cni");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_loop_test(tc, test_parse_netconf, 0, (int)CB_ARRAY_SIZE(conf_cases));
        tcase_add_test(tc, test_load_first_sorted);
        tcase_add_test(tc, test_build_args);
        tcase_add_test(tc, test_plugin_stdin);
        tcase_add_loop_test(tc, test_parse_result, 0, (int)CB_ARRAY_SIZE(result_cases));
        tcase_add_test(tc, test_describe_failure);
        tcase_add_test(tc, test_exec_roundtrip);
        tcase_add_test(tc, test_exec_hygiene);
        tcase_add_test(tc, test_exec_timeout_and_sigpipe);
        tcase_add_test(tc, test_add_check_del_sequence);
        tcase_add_test(tc, test_partial_add_then_del);
        tcase_add_test(tc, test_hosts_content);
        tcase_add_test(tc, test_resolv_filter);
        suite_add_tcase(s, tc);
        int failed = th_run(s);
        char cmd[300];
        snprintf(cmd, sizeof(cmd), "rm -rf %s", top);
        if (system(cmd) != 0)
                failed++;
        return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
