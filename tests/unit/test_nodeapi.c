/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pure parts of the node API: request paths, PodLogOptions and exec
 * query parameters, the channel framing and resize message of the
 * *.channel.k8s.io subprotocols, the exit status on the error channel,
 * rendering CRI records for /containerLogs, the tail offset, the token
 * file and the generated serving certificate.
 */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "agent/nodeapi/server.h"
#include "agent/nodeapi/proto.h"
#include "agent/pods/podlogs.h"
#include "agent/pods/stats.h"
#include "lib/cleanup.h"
#include "lib/file.h"

#include "helpers.h"

static const struct {
        const char *path;
        enum ag_napi_route route;
        const char *ns, *pod, *uid, *container;
} routes[] = {
    {"/healthz", AG_NAPI_HEALTHZ, "", "", "", ""},
    {"/pods", AG_NAPI_PODS, "", "", "", ""},
    {"/stats/summary", AG_NAPI_STATS_SUMMARY, "", "", "", ""},
    {"/containerLogs/default/web/main", AG_NAPI_LOGS, "default", "web", "", "main"},
    {"/containerLogs/default/web", AG_NAPI_NONE, "", "", "", ""},
    {"/containerLogs/default/web/main/x", AG_NAPI_NONE, "", "", "", ""},
    {"/containerLogs//web/main", AG_NAPI_NONE, "", "", "", ""},
    {"/exec/ns1/p/c", AG_NAPI_EXEC, "ns1", "p", "", "c"},
    {"/exec/ns1/p/1234-uid/c", AG_NAPI_EXEC, "ns1", "p", "1234-uid", "c"},
    {"/exec/ns1/p", AG_NAPI_NONE, "", "", "", ""},
    {"/attach/ns1/p/c", AG_NAPI_ATTACH, "ns1", "p", "", "c"},
    {"/portForward/ns1/p", AG_NAPI_PORTFORWARD, "ns1", "p", "", ""},
    {"/portForward/ns1/p/uid", AG_NAPI_PORTFORWARD, "ns1", "p", "uid", ""},
    {"/execx/a/b/c", AG_NAPI_NONE, "", "", "", ""},
    {"/", AG_NAPI_NONE, "", "", "", ""},
    {"/metrics", AG_NAPI_NONE, "", "", "", ""},
};

START_TEST(test_routes)
{
        struct ag_napi_target t;
        enum ag_napi_route r = ag_napi_route_path(routes[_i].path, &t);
        ck_assert_msg(r == routes[_i].route, "%s: route %d, want %d", routes[_i].path, r,
                      routes[_i].route);
        if (r == AG_NAPI_NONE)
                return;
        ck_assert_str_eq(t.ns, routes[_i].ns);
        ck_assert_str_eq(t.pod, routes[_i].pod);
        ck_assert_str_eq(t.uid, routes[_i].uid);
        ck_assert_str_eq(t.container, routes[_i].container);
}
END_TEST

START_TEST(test_route_long_name)
{
        char path[1024];
        char name[400];
        memset(name, 'a', sizeof(name) - 1);
        name[sizeof(name) - 1] = '\0';
        snprintf(path, sizeof(path), "/containerLogs/ns/%s/c", name);
        struct ag_napi_target t;
        ck_assert_int_eq(ag_napi_route_path(path, &t), AG_NAPI_NONE);
}
END_TEST

START_TEST(test_log_options)
{
        const char *args[] = {"follow=true",   "tailLines=10",    "limitBytes=500",
                              "timestamps=1",  "sinceSeconds=60", "container=ignored",
                              "previous=false"};
        struct ag_log_options o;
        struct cb_error err = {0};
        int64_t now = 1700000000LL * 1000000000LL;
        ck_assert_int_eq(ag_log_options_parse(args, 7, now, &o, &err), 0);
        ck_assert(o.follow && o.timestamps && !o.previous);
        ck_assert(o.has_tail_lines && o.tail_lines == 10);
        ck_assert(o.has_limit_bytes && o.limit_bytes == 500);
        ck_assert(o.has_since && o.since_ns == now - 60LL * 1000000000LL);

        const char *t[] = {"sinceTime=2024-01-02T03:04:05Z"};
        ck_assert_int_eq(ag_log_options_parse(t, 1, now, &o, &err), 0);
        ck_assert(o.has_since && o.since_ns == 1704164645LL * 1000000000LL);
}
END_TEST

static const struct {
        const char *arg, *want;
} bad_log_options[] = {
    {"tailLines=-1", "tailLines"},
    {"tailLines=abc", "tailLines"},
    {"limitBytes=0", "limitBytes"},
    {"sinceSeconds=0", "sinceSeconds"},
    {"follow=maybe", "follow"},
    {"sinceTime=yesterday", "sinceTime"},
    {"tailLines=99999999999999999999", "tailLines"},
};

START_TEST(test_log_options_bad)
{
        const char *args[] = {bad_log_options[_i].arg};
        struct ag_log_options o;
        struct cb_error err = {0};
        ck_assert_int_eq(ag_log_options_parse(args, 1, 0, &o, &err), -1);
        ck_assert_msg(strstr(err.msg, bad_log_options[_i].want) != NULL, "%s", err.msg);
}
END_TEST

START_TEST(test_log_options_since_both)
{
        const char *args[] = {"sinceSeconds=5", "sinceTime=2024-01-02T03:04:05Z"};
        struct ag_log_options o;
        struct cb_error err = {0};
        ck_assert_int_eq(ag_log_options_parse(args, 2, 0, &o, &err), -1);
        ck_assert_ptr_nonnull(strstr(err.msg, "at most one"));
}
END_TEST

START_TEST(test_log_render)
{
        struct ag_log_options o = {0};
        char out[256];
        const char *rec = "2024-01-02T03:04:05.000000123Z stderr F hello world";
        size_t n = ag_log_render(rec, strlen(rec), &o, out, sizeof(out));
        ck_assert_int_eq(n, 12);
        ck_assert(memcmp(out, "hello world\n", 12) == 0);
        o.timestamps = true;
        n = ag_log_render(rec, strlen(rec), &o, out, sizeof(out));
        out[n] = '\0';
        ck_assert_str_eq(out, "2024-01-02T03:04:05.000000123Z hello world\n");
        /* a P record: no newline */
        o.timestamps = false;
        const char *p = "2024-01-02T03:04:05Z stdout P part";
        n = ag_log_render(p, strlen(p), &o, out, sizeof(out));
        ck_assert_int_eq(n, 4);
        ck_assert(memcmp(out, "part", 4) == 0);
        /* since: older records are skipped */
        o.has_since = true;
        o.since_ns = 1704164646LL * 1000000000LL;
        ck_assert_int_eq(ag_log_render(rec, strlen(rec), &o, out, sizeof(out)), 0);
        /* malformed and too small a buffer: skipped, nothing written past cap */
        o.has_since = false;
        ck_assert_int_eq(ag_log_render("garbage", 7, &o, out, sizeof(out)), 0);
        ck_assert_int_eq(ag_log_render(rec, strlen(rec), &o, out, 5), 0);
}
END_TEST

START_TEST(test_tail_offset)
{
        char path[64];
        snprintf(path, sizeof(path), "/tmp/cubelet-tail-%d.log", (int)getpid());
        int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        ck_assert_int_ge(fd, 0);
        unlink(path);
        struct cb_error err = {0};
        int64_t off = -1;
        ck_assert_int_eq(ag_log_tail_offset(fd, 3, &off, &err), 0);
        ck_assert_int_eq(off, 0); /* empty */
        ck_assert(write(fd, "a\nbb\nccc\n", 9) == 9);
        ck_assert_int_eq(ag_log_tail_offset(fd, 0, &off, &err), 0);
        ck_assert_int_eq(off, 9);
        ck_assert_int_eq(ag_log_tail_offset(fd, 1, &off, &err), 0);
        ck_assert_int_eq(off, 5);
        ck_assert_int_eq(ag_log_tail_offset(fd, 2, &off, &err), 0);
        ck_assert_int_eq(off, 2);
        ck_assert_int_eq(ag_log_tail_offset(fd, 3, &off, &err), 0);
        ck_assert_int_eq(off, 0);
        ck_assert_int_eq(ag_log_tail_offset(fd, 100, &off, &err), 0);
        ck_assert_int_eq(off, 0);
        /* across the 64 KiB read blocks */
        char big[70000];
        memset(big, 'x', sizeof(big));
        big[sizeof(big) - 1] = '\n';
        ck_assert(write(fd, big, sizeof(big)) == (ssize_t)sizeof(big));
        ck_assert(write(fd, "last\n", 5) == 5);
        ck_assert_int_eq(ag_log_tail_offset(fd, 2, &off, &err), 0);
        ck_assert_int_eq(off, 9);
        /* no final newline: the unterminated record counts */
        ck_assert(write(fd, "partial", 7) == 7);
        ck_assert_int_eq(ag_log_tail_offset(fd, 1, &off, &err), 0);
        ck_assert_int_eq(off, 9 + (int64_t)sizeof(big) + 5);
        close(fd);
}
END_TEST

START_TEST(test_exec_options)
{
        const char *args[] = {"command=sh", "command=-c",  "command=echo a&b", "stdin=true",
                              "stdout=1",   "stderr=true", "container=x"};
        struct ag_napi_exec_options o;
        struct cb_error err = {0};
        ck_assert_int_eq(ag_napi_exec_options_parse(args, 7, true, &o, &err), 0);
        ck_assert_int_eq(o.argc, 3);
        ck_assert_str_eq(o.argv[0], "sh");
        ck_assert_str_eq(o.argv[2], "echo a&b");
        ck_assert_ptr_null(o.argv[3]);
        ck_assert(o.in && o.out && o.err && !o.tty);
        free(o.argv);
        /* the legacy names, tty drops stderr */
        const char *legacy[] = {"command=ls", "input=1", "output=1", "error=1", "tty=1"};
        ck_assert_int_eq(ag_napi_exec_options_parse(legacy, 5, true, &o, &err), 0);
        ck_assert(o.in && o.out && !o.err && o.tty);
        free(o.argv);
        /* no stream */
        const char *none[] = {"command=ls"};
        ck_assert_int_eq(ag_napi_exec_options_parse(none, 1, true, &o, &err), -1);
        ck_assert_ptr_nonnull(strstr(err.msg, "at least 1 of stdin, stdout, stderr"));
        /* no command */
        const char *nocmd[] = {"stdout=1"};
        ck_assert_int_eq(ag_napi_exec_options_parse(nocmd, 1, true, &o, &err), -1);
        ck_assert_ptr_nonnull(strstr(err.msg, "command"));
        ck_assert_int_eq(ag_napi_exec_options_parse(nocmd, 1, false, &o, &err), 0);
        free(o.argv);
        const char *bad[] = {"command=ls", "stdout=yes"};
        ck_assert_int_eq(ag_napi_exec_options_parse(bad, 2, true, &o, &err), -1);
        ck_assert_ptr_nonnull(strstr(err.msg, "stdout"));
}
END_TEST

START_TEST(test_channels)
{
        ck_assert_int_eq(ag_napi_channel_proto_from_name("v5.channel.k8s.io"), AG_NAPI_CHANNEL_V5);
        ck_assert_int_eq(ag_napi_channel_proto_from_name("v4.channel.k8s.io"), AG_NAPI_CHANNEL_V4);
        ck_assert_int_eq(ag_napi_channel_proto_from_name("channel.k8s.io"), AG_NAPI_CHANNEL_V1);
        ck_assert_int_eq(ag_napi_channel_proto_from_name("base64.channel.k8s.io"), 0);
        ck_assert_int_eq(ag_napi_channel_proto_from_name(NULL), 0);
        uint8_t ch;
        const uint8_t *p;
        size_t n;
        const uint8_t msg[] = {0, 'h', 'i'};
        ck_assert_int_eq(ag_napi_channel_split(msg, 3, &ch, &p, &n), 0);
        ck_assert_int_eq(ch, 0);
        ck_assert_int_eq(n, 2);
        ck_assert(p[0] == 'h');
        const uint8_t closemsg[] = {255, 0};
        ck_assert_int_eq(ag_napi_channel_split(closemsg, 2, &ch, &p, &n), 0);
        ck_assert_int_eq(ch, AG_NAPI_CH_CLOSE);
        ck_assert_int_eq(n, 1);
        ck_assert_int_eq(p[0], AG_NAPI_CH_STDIN);
        ck_assert_int_eq(ag_napi_channel_split(msg, 0, &ch, &p, &n), -1);
}
END_TEST

START_TEST(test_resize)
{
        uint16_t w, h;
        struct cb_error err = {0};
        const char *ok = "{\"Width\":120,\"Height\":40}";
        ck_assert_int_eq(ag_napi_parse_resize((const uint8_t *)ok, strlen(ok), &w, &h, &err), 0);
        ck_assert_int_eq(w, 120);
        ck_assert_int_eq(h, 40);
        const char *bad[] = {"{\"Width\":-1,\"Height\":2}", "{\"Width\":1}", "[1,2]",
                             "{\"Width\":70000,\"Height\":1}", "{"};
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                ck_assert_int_eq(
                    ag_napi_parse_resize((const uint8_t *)bad[i], strlen(bad[i]), &w, &h, &err),
                    -1);
}
END_TEST

START_TEST(test_exec_status)
{
        _cleanup_free_ char *ok = ag_napi_exec_status_json(0, NULL);
        _cleanup_cjson_ cJSON *o = cJSON_Parse(ok);
        ck_assert_str_eq(cJSON_GetObjectItem(o, "status")->valuestring, "Success");
        _cleanup_free_ char *f = ag_napi_exec_status_json(3, NULL);
        _cleanup_cjson_ cJSON *s = cJSON_Parse(f);
        ck_assert_str_eq(cJSON_GetObjectItem(s, "status")->valuestring, "Failure");
        ck_assert_str_eq(cJSON_GetObjectItem(s, "reason")->valuestring, "NonZeroExitCode");
        cJSON *cause =
            cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(s, "details"), "causes"), 0);
        ck_assert_str_eq(cJSON_GetObjectItem(cause, "reason")->valuestring, "ExitCode");
        ck_assert_str_eq(cJSON_GetObjectItem(cause, "message")->valuestring, "3");
        _cleanup_free_ char *e = ag_napi_exec_status_json(0, "cannot allocate a terminal");
        _cleanup_cjson_ cJSON *es = cJSON_Parse(e);
        ck_assert_str_eq(cJSON_GetObjectItem(es, "message")->valuestring,
                         "cannot allocate a terminal");
        ck_assert_ptr_null(cJSON_GetObjectItem(es, "details"));
}
END_TEST

START_TEST(test_tokens)
{
        char path[64];
        snprintf(path, sizeof(path), "/tmp/cubelet-tokens-%d.csv", (int)getpid());
        FILE *f = fopen(path, "we");
        ck_assert_ptr_nonnull(f);
        fputs("# comment\n\nabc123,alice,1\n  def456,bob,2,\"g1,g2\"\r\n", f);
        fclose(f);
        struct ag_napi_tokens *t = NULL;
        struct cb_error err = {0};
        ck_assert_int_eq(ag_napi_tokens_load(path, &t, &err), 0);
        ck_assert_str_eq(ag_napi_tokens_user(t, "abc123"), "alice");
        ck_assert_str_eq(ag_napi_tokens_user(t, "def456"), "bob");
        ck_assert_ptr_null(ag_napi_tokens_user(t, "abc12"));
        ck_assert_ptr_null(ag_napi_tokens_user(t, "abc1234"));
        ck_assert_ptr_null(ag_napi_tokens_user(t, ""));
        ag_napi_tokens_free(t);
        f = fopen(path, "we");
        fputs("onlytoken\n", f);
        fclose(f);
        ck_assert_int_eq(ag_napi_tokens_load(path, &t, &err), -1);
        ck_assert_ptr_nonnull(strstr(err.msg, "line 1"));
        unlink(path);
}
END_TEST

START_TEST(test_serving_cert)
{
        char dir[64], crt[128], key[128];
        snprintf(dir, sizeof(dir), "/tmp/cubelet-cert-%d", (int)getpid());
        ck_assert_int_eq(mkdir(dir, 0700), 0);
        snprintf(crt, sizeof(crt), "%s/kubelet.crt", dir);
        snprintf(key, sizeof(key), "%s/kubelet.key", dir);
        struct cb_error err = {0};
        ck_assert_int_eq(ag_napi_ensure_cert(crt, key, "10.1.2.3", "node-a", &err), 0);
        struct stat st;
        ck_assert_int_eq(stat(key, &st), 0);
        ck_assert_int_eq(st.st_mode & 0777, 0600);
        FILE *f = fopen(crt, "re");
        X509 *x = PEM_read_X509(f, NULL, NULL, NULL);
        fclose(f);
        ck_assert_ptr_nonnull(x);
        ck_assert_int_eq(X509_check_ip_asc(x, "10.1.2.3", 0), 1);
        ck_assert_int_eq(X509_check_host(x, "node-a", 0, 0, NULL), 1);
        ck_assert_int_eq(X509_check_ip_asc(x, "10.1.2.4", 0), 0);
        X509_free(x);
        /* a valid one is kept */
        struct stat before;
        ck_assert_int_eq(stat(crt, &before), 0);
        ck_assert_int_eq(ag_napi_ensure_cert(crt, key, "10.1.2.3", "node-a", &err), 0);
        ck_assert_int_eq(stat(crt, &st), 0);
        ck_assert_int_eq(st.st_ino, before.st_ino);
        unlink(crt);
        unlink(key);
        rmdir(dir);
}
END_TEST

/* serverTLSBootstrap: no file is made, the pair is handed over and checked. */
START_TEST(test_managed_serving_cert)
{
        char dir[64], tokens[128];
        snprintf(dir, sizeof(dir), "/tmp/cubelet-mcert-%d", (int)getpid());
        ck_assert_int_eq(th_sh("rm -rf %s && mkdir -p %s && cd %s && "
                               "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 "
                               "-nodes -days 1 -subj /CN=a -keyout a.key -out a.crt 2>/dev/null && "
                               "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 "
                               "-nodes -days 1 -subj /CN=b -keyout b.key -out b.crt 2>/dev/null && "
                               "cat a.key a.crt b.crt > pair.pem && echo t,u,1 > tokens",
                               dir, dir, dir),
                         0);
        snprintf(tokens, sizeof(tokens), "%s/tokens", dir);
        struct ag_loop *loop = NULL;
        struct cb_error err = {0};
        ck_assert_int_eq(ag_loop_new(&loop, &err), 0);
        struct ag_napi_config cfg = {.address = "127.0.0.1",
                                     .cert_dir = dir,
                                     .token_file = tokens,
                                     .serving_cert_managed = true};
        struct ag_napi *s = NULL;
        ck_assert_msg(ag_napi_start(loop, &cfg, &s, &err) == 0, "%s", err.msg);
        char p[256];
        snprintf(p, sizeof(p), "%s/kubelet.crt", dir);
        ck_assert_int_eq(access(p, F_OK), -1); /* nothing self-signed */
        char *a_key = NULL, *a_crt = NULL, *b_key = NULL, *pair = NULL;
        snprintf(p, sizeof(p), "%s/a.key", dir);
        ck_assert_int_eq(cb_read_file(p, 1 << 16, &a_key, NULL, &err), 0);
        snprintf(p, sizeof(p), "%s/a.crt", dir);
        ck_assert_int_eq(cb_read_file(p, 1 << 16, &a_crt, NULL, &err), 0);
        snprintf(p, sizeof(p), "%s/b.key", dir);
        ck_assert_int_eq(cb_read_file(p, 1 << 16, &b_key, NULL, &err), 0);
        snprintf(p, sizeof(p), "%s/pair.pem", dir);
        ck_assert_int_eq(cb_read_file(p, 1 << 16, &pair, NULL, &err), 0);
        ck_assert_int_eq(ag_napi_set_serving_cert(s, a_crt, b_key, &err), -1);
        ck_assert_str_eq(err.msg,
                         "node API: serving certificate: the private key does not match the "
                         "certificate");
        ck_assert_int_eq(ag_napi_set_serving_cert(s, a_key, a_key, &err), -1);
        ck_assert_str_eq(err.msg, "node API: serving certificate: no certificate");
        ck_assert_int_eq(ag_napi_set_serving_cert(s, a_crt, a_crt, &err), -1);
        ck_assert_str_eq(err.msg, "node API: serving certificate: no private key");
        /* key, certificate and a chain in one text, as kubelet-server-*.pem */
        ck_assert_msg(ag_napi_set_serving_cert(s, pair, pair, &err) == 0, "%s", err.msg);
        ck_assert_msg(ag_napi_set_serving_cert(s, a_crt, a_key, &err) == 0, "%s", err.msg);
        ag_napi_free(s);
        ag_loop_free(loop);
        free(a_key);
        free(a_crt);
        free(b_key);
        free(pair);
        th_sh("rm -rf %s", dir);
}
END_TEST

START_TEST(test_net_dev)
{
        const char *buf =
            "Inter-|   Receive                                                |  Transmit\n"
            " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets "
            "errs drop fifo colls carrier compressed\n"
            "    lo:  123456     100    0    0    0     0          0         0   123456     100  "
            "  0    0    0     0       0          0\n"
            "  eth0: 987654321  5000    3    0    0     0          0         0 12345678    4000  "
            "  7    0    0     0       0          0\n";
        struct ag_net_iface ifs[4];
        struct cb_error err = {0};
        ck_assert_int_eq(ag_parse_net_dev(buf, ifs, 4, &err), 1);
        ck_assert_str_eq(ifs[0].name, "eth0");
        ck_assert_uint_eq(ifs[0].rx_bytes, 987654321ULL);
        ck_assert_uint_eq(ifs[0].rx_errors, 3);
        ck_assert_uint_eq(ifs[0].tx_bytes, 12345678ULL);
        ck_assert_uint_eq(ifs[0].tx_errors, 7);
        ck_assert_int_eq(ag_parse_net_dev("garbage\n", ifs, 4, &err), -1);
        const char *bad = "Inter-|\n face |\n  eth0 1 2 3\n";
        ck_assert_int_eq(ag_parse_net_dev(bad, ifs, 4, &err), -1);
        const char *short_counters = "Inter-|\n face |\n  eth0: 1 2 3\n";
        ck_assert_int_eq(ag_parse_net_dev(short_counters, ifs, 4, &err), -1);
}
END_TEST

/* The summary's pod entry: the shape metrics-server reads; a container
 * without a running instance is left out; the network of a process's
 * namespace (this test's own). */
START_TEST(test_summary_pod)
{
        struct ag_stats *st = ag_stats_new();
        ck_assert_ptr_nonnull(st);
        struct ag_stats_container cs[] = {{.name = "gone", .cgroup = ""}};
        struct ag_stats_pod p = {.ns = "default",
                                 .name = "web",
                                 .uid = "u-1",
                                 .started_ns = 1700000000LL * 1000000000LL,
                                 .cgroup = "",
                                 .net_pid = getpid(),
                                 .containers = cs,
                                 .n_containers = 1};
        _cleanup_cjson_ cJSON *o = ag_stats_pod_json(st, &p);
        cJSON *ref = cJSON_GetObjectItem(o, "podRef");
        ck_assert_str_eq(cJSON_GetObjectItem(ref, "name")->valuestring, "web");
        ck_assert_str_eq(cJSON_GetObjectItem(ref, "namespace")->valuestring, "default");
        ck_assert_str_eq(cJSON_GetObjectItem(ref, "uid")->valuestring, "u-1");
        ck_assert_str_eq(cJSON_GetObjectItem(o, "startTime")->valuestring, "2023-11-14T22:13:20Z");
        ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(o, "containers")), 0);
        ck_assert_ptr_null(cJSON_GetObjectItem(o, "memory")); /* no cgroup yet */
        cJSON *net = cJSON_GetObjectItem(o, "network");
        ck_assert_ptr_nonnull(net);
        ck_assert(cJSON_IsArray(cJSON_GetObjectItem(net, "interfaces")));
        ck_assert_ptr_nonnull(cJSON_GetObjectItem(o, "ephemeral-storage"));
        _cleanup_cjson_ cJSON *node = ag_stats_node_json(st, "n1", "/", 1LL << 30);
        ck_assert_str_eq(cJSON_GetObjectItem(node, "nodeName")->valuestring, "n1");
        cJSON *cpu = cJSON_GetObjectItem(node, "cpu");
        ck_assert(cJSON_GetObjectItem(cpu, "usageCoreNanoSeconds")->valuedouble > 0);
        ck_assert(cJSON_GetObjectItem(cJSON_GetObjectItem(node, "memory"), "workingSetBytes")
                      ->valuedouble > 0);
        ck_assert(
            cJSON_GetObjectItem(cJSON_GetObjectItem(node, "fs"), "capacityBytes")->valuedouble > 0);
        ag_stats_free(st);
}
END_TEST

START_TEST(test_query_split)
{
        char **v;
        size_t n;
        struct cb_error err = {0};
        ck_assert_int_eq(
            ag_napi_query_split("command=sh&command=-c&command=echo+a%0Ab%26c&stdout=1&&x", 16, &v,
                                &n, &err),
            0);
        ck_assert_uint_eq(n, 5);
        ck_assert_str_eq(v[0], "command=sh");
        ck_assert_str_eq(v[1], "command=-c");
        ck_assert_str_eq(v[2], "command=echo a\nb&c"); /* '+' is a space, %0A a newline */
        ck_assert_str_eq(v[3], "stdout=1");
        ck_assert_str_eq(v[4], "x");
        for (size_t i = 0; i < n; i++)
                free(v[i]);
        free(v);
        ck_assert_int_eq(ag_napi_query_split("", 4, &v, &n, &err), 0);
        ck_assert_uint_eq(n, 0);
        free(v);
        /* a bad escape, a NUL byte, too many parameters */
        ck_assert_int_eq(ag_napi_query_split("a=%zz", 4, &v, &n, &err), -1);
        ck_assert_ptr_nonnull(strstr(err.msg, "invalid escape"));
        ck_assert_int_eq(ag_napi_query_split("a=%00", 4, &v, &n, &err), -1);
        ck_assert_int_eq(ag_napi_query_split("a=%4", 4, &v, &n, &err), -1);
        ck_assert_int_eq(ag_napi_query_split("a&b&c", 2, &v, &n, &err), -1);
        ck_assert_ptr_nonnull(strstr(err.msg, "at most 2"));
}
END_TEST

START_TEST(test_ws_accept_negotiate)
{
        char acc[32];
        /* RFC 6455 section 1.3's example */
        ck_assert_int_eq(ag_napi_ws_accept("dGhlIHNhbXBsZSBub25jZQ==", acc), 0);
        ck_assert_str_eq(acc, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
        static const char *const sup[] = {"v5.channel.k8s.io", "v4.channel.k8s.io", NULL};
        /* the client's order wins; repeated headers arrive joined by ',' */
        ck_assert_str_eq(ag_napi_negotiate("v4.channel.k8s.io, v5.channel.k8s.io", sup),
                         "v4.channel.k8s.io");
        ck_assert_str_eq(ag_napi_negotiate("base64.channel.k8s.io,v5.channel.k8s.io", sup),
                         "v5.channel.k8s.io");
        ck_assert_ptr_null(ag_napi_negotiate("v4.channel.k8s.io.x", sup));
        ck_assert_ptr_null(ag_napi_negotiate("", sup));
        ck_assert_ptr_null(ag_napi_negotiate(NULL, sup));
}
END_TEST

START_TEST(test_json_object_len)
{
        const char *s = "{\"Width\":80,\"Height\":24}{\"Width\":1";
        ck_assert_uint_eq(ag_napi_json_object_len((const uint8_t *)s, strlen(s)), 24);
        ck_assert_uint_eq(ag_napi_json_object_len((const uint8_t *)s + 24, strlen(s) - 24), 0);
        const char *q = "{\"a\":\"}{\\\"\"}";
        ck_assert_uint_eq(ag_napi_json_object_len((const uint8_t *)q, strlen(q)), strlen(q));
}
END_TEST

int main(void)
{
        Suite *s = suite_create("nodeapi");
        TCase *tc = tcase_create("nodeapi");
        tcase_add_loop_test(tc, test_routes, 0, (int)(sizeof(routes) / sizeof(routes[0])));
        tcase_add_test(tc, test_route_long_name);
        tcase_add_test(tc, test_log_options);
        tcase_add_loop_test(tc, test_log_options_bad, 0,
                            (int)(sizeof(bad_log_options) / sizeof(bad_log_options[0])));
        tcase_add_test(tc, test_log_options_since_both);
        tcase_add_test(tc, test_log_render);
        tcase_add_test(tc, test_tail_offset);
        tcase_add_test(tc, test_exec_options);
        tcase_add_test(tc, test_channels);
        tcase_add_test(tc, test_resize);
        tcase_add_test(tc, test_exec_status);
        tcase_add_test(tc, test_tokens);
        tcase_add_test(tc, test_serving_cert);
        tcase_add_test(tc, test_managed_serving_cert);
        tcase_add_test(tc, test_net_dev);
        tcase_add_test(tc, test_summary_pod);
        tcase_add_test(tc, test_query_split);
        tcase_add_test(tc, test_ws_accept_negotiate);
        tcase_add_test(tc, test_json_object_len);
        suite_add_tcase(s, tc);
        return th_run(s) == 0 ? 0 : 1;
}
