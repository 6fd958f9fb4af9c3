/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CRI log writer and reader (runtime/crilog.c), no root needed: the
 * record format kubectl logs reads, 16 KiB P chunks, partial lines across
 * writes, the last unterminated line, and malformed records.
 */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/cleanup.h"
#include "lib/file.h"
#include "runtime/container.h"

#include "helpers.h"

static char path[64];

static int open_log(void)
{
        snprintf(path, sizeof(path), "/tmp/cubelet-crilog-%d.log", (int)getpid());
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        ck_assert_int_ge(fd, 0);
        return fd;
}

struct got {
        int n;
        enum rt_stream s[16];
        char *line[16];
        size_t len[16];
};

static int collect(enum rt_stream s, int64_t ts, const char *line, size_t len, void *ud)
{
        struct got *g = ud;
        ck_assert_int_gt(ts, 1600000000LL * 1000000000LL);
        ck_assert_int_lt(g->n, 16);
        g->s[g->n] = s;
        g->line[g->n] = strndup(line, len);
        g->len[g->n] = len;
        g->n++;
        return 0;
}

static void got_free(struct got *g)
{
        for (int i = 0; i < g->n; i++)
                free(g->line[i]);
}

START_TEST(test_format)
{
        char buf[128];
        /* 2021-01-02T03:04:05.000000006Z */
        int64_t ts = 1609556645LL * 1000000000LL + 6;
        size_t n = rt_crilog_format(buf, sizeof(buf), ts, RT_STREAM_STDERR, true, "ab", 2);
        ck_assert_str_eq(buf, "2021-01-02T03:04:05.000000006Z stderr P ab\n");
        ck_assert_uint_eq(n, strlen(buf));
        n = rt_crilog_format(buf, sizeof(buf), ts, RT_STREAM_STDOUT, false, "", 0);
        ck_assert_str_eq(buf, "2021-01-02T03:04:05.000000006Z stdout F \n");
        /* too small: the length needed, nothing overrun */
        ck_assert_uint_eq(rt_crilog_format(buf, 10, ts, RT_STREAM_STDOUT, false, "xyz", 3), 44);
}
END_TEST

static const struct {
        const char *rec;
        int ok;
        int64_t ts;
        enum rt_stream s;
        bool partial;
        const char *content;
} parse_cases[] = {
    {"2021-01-02T03:04:05.000000006Z stdout F hello world", 1, 1609556645000000006LL,
     RT_STREAM_STDOUT, false, "hello world"},
    {"2021-01-02T03:04:05.5Z stderr P x", 1, 1609556645500000000LL, RT_STREAM_STDERR, true, "x"},
    /* containerd writes local time with an offset */
    {"2021-01-02T04:04:05.1+01:00 stdout F y", 1, 1609556645100000000LL, RT_STREAM_STDOUT, false,
     "y"},
    {"2021-01-02T03:04:05Z stdout F ", 1, 1609556645000000000LL, RT_STREAM_STDOUT, false, ""},
    {"2021-01-02T03:04:05Z stdout F:x tagged", 1, 1609556645000000000LL, RT_STREAM_STDOUT, false,
     "tagged"},
    {"2021-01-02 03:04:05Z stdout F x", 0, 0, 0, false, NULL},
    {"2021-01-02T03:04:05Z stdin F x", 0, 0, 0, false, NULL},
    {"2021-01-02T03:04:05Z stdout X x", 0, 0, 0, false, NULL},
    {"2021-01-02T03:04:05Z stdout F", 0, 0, 0, false, NULL},
    {"", 0, 0, 0, false, NULL},
};

START_TEST(test_parse)
{
        struct rt_crilog_entry e;
        struct cb_error err;
        const char *rec = parse_cases[_i].rec;
        int r = rt_crilog_parse(rec, strlen(rec), &e, &err);
        if (!parse_cases[_i].ok) {
                ck_assert_msg(r < 0, "accepted \"%s\"", rec);
                return;
        }
        ck_assert_msg(r == 0, "\"%s\": %s", rec, err.msg);
        ck_assert_int_eq(e.ts_ns, parse_cases[_i].ts);
        ck_assert_int_eq(e.stream, parse_cases[_i].s);
        ck_assert_int_eq(e.partial, parse_cases[_i].partial);
        ck_assert_uint_eq(e.len, strlen(parse_cases[_i].content));
        ck_assert(memcmp(e.content, parse_cases[_i].content, e.len) == 0);
}
END_TEST

START_TEST(test_write_read)
{
        int fd = open_log();
        static struct rt_crilog_writer w;
        rt_crilog_init(&w, fd);
        struct cb_error err;
        /* a line split over writes, interleaved streams, an empty line */
        ck_assert(rt_crilog_write(&w, RT_STREAM_STDOUT, "hel", 3, &err) == 0);
        ck_assert(rt_crilog_write(&w, RT_STREAM_STDERR, "oops\n", 5, &err) == 0);
        ck_assert(rt_crilog_write(&w, RT_STREAM_STDOUT, "lo\n\nlast", 8, &err) == 0);
        ck_assert(rt_crilog_flush(&w, RT_STREAM_STDOUT, &err) == 0);
        ck_assert(rt_crilog_flush(&w, RT_STREAM_STDERR, &err) == 0); /* nothing pending */
        close(fd);

        _cleanup_free_ char *raw = NULL;
        ck_assert(cb_read_file(path, 1 << 20, &raw, NULL, &err) == 0);
        ck_assert_msg(strstr(raw, " stderr F oops\n") && strstr(raw, " stdout F hello\n") &&
                          strstr(raw, " stdout F \n") && strstr(raw, " stdout F last\n"),
                      "%s", raw);

        struct got g = {0};
        ck_assert(rt_crilog_read(path, collect, &g, &err) == 0);
        ck_assert_int_eq(g.n, 4);
        ck_assert_str_eq(g.line[0], "oops");
        ck_assert_int_eq(g.s[0], RT_STREAM_STDERR);
        ck_assert_str_eq(g.line[1], "hello");
        ck_assert_str_eq(g.line[2], "");
        ck_assert_str_eq(g.line[3], "last");
        got_free(&g);
        unlink(path);
}
END_TEST

START_TEST(test_long_lines)
{
        int fd = open_log();
        static struct rt_crilog_writer w;
        rt_crilog_init(&w, fd);
        struct cb_error err;
        size_t n = 2 * RT_CRILOG_MAX_LINE + 100;
        char *big = malloc(n + 1);
        for (size_t i = 0; i < n; i++)
                big[i] = (char)('a' + i % 26);
        big[n] = '\n';
        /* in odd-sized pieces, as pipe reads deliver it */
        for (size_t off = 0; off <= n;) {
                size_t k = n + 1 - off < 7001 ? n + 1 - off : 7001;
                ck_assert(rt_crilog_write(&w, RT_STREAM_STDOUT, big + off, k, &err) == 0);
                off += k;
        }
        /* a line of exactly the limit: one P chunk and an empty F */
        char *exact = malloc(RT_CRILOG_MAX_LINE + 1);
        memset(exact, 'z', RT_CRILOG_MAX_LINE);
        exact[RT_CRILOG_MAX_LINE] = '\n';
        ck_assert(rt_crilog_write(&w, RT_STREAM_STDERR, exact, RT_CRILOG_MAX_LINE + 1, &err) == 0);
        close(fd);

        _cleanup_free_ char *raw = NULL;
        ck_assert(cb_read_file(path, 1 << 20, &raw, NULL, &err) == 0);
        int p = 0, f = 0;
        for (char *line = raw; *line != '\0';) {
                char *nl = strchr(line, '\n');
                ck_assert(nl != NULL);
                ck_assert_msg(nl - line <= RT_CRILOG_MAX_LINE + 40, "record too long");
                if (strstr(line, " P ") != NULL && strstr(line, " P ") < nl)
                        p++;
                else
                        f++;
                line = nl + 1;
        }
        ck_assert_int_eq(p, 3); /* 2 for the big line, 1 for the exact one */
        ck_assert_int_eq(f, 2);

        struct got g = {0};
        ck_assert(rt_crilog_read(path, collect, &g, &err) == 0);
        ck_assert_int_eq(g.n, 2);
        ck_assert_uint_eq(g.len[0], n);
        ck_assert(memcmp(g.line[0], big, n) == 0);
        ck_assert_uint_eq(g.len[1], RT_CRILOG_MAX_LINE);
        ck_assert_int_eq(g.s[1], RT_STREAM_STDERR);
        got_free(&g);
        free(big);
        free(exact);
        unlink(path);
}
END_TEST

START_TEST(test_read_bad_file)
{
        int fd = open_log();
        const char *data = "2021-01-02T03:04:05Z stdout F ok\ngarbage\n";
        ck_assert(write(fd, data, strlen(data)) == (ssize_t)strlen(data));
        close(fd);
        struct got g = {0};
        struct cb_error err;
        ck_assert(rt_crilog_read(path, collect, &g, &err) < 0);
        ck_assert_msg(strstr(err.msg, "line 2") != NULL, "%s", err.msg);
        got_free(&g);
        unlink(path);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("crilog");
        TCase *tc = tcase_create("crilog");
        tcase_add_test(tc, test_format);
        tcase_add_loop_test(tc, test_parse, 0, (int)(sizeof(parse_cases) / sizeof(parse_cases[0])));
        tcase_add_test(tc, test_write_read);
        tcase_add_test(tc, test_long_lines);
        tcase_add_test(tc, test_read_bad_file);
        suite_add_tcase(s, tc);
        return th_run(s) == 0 ? 0 : 1;
}
