/* SPDX-License-Identifier: Apache-2.0 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/k8s/quantity.h"

#include "helpers.h"

struct qcase {
        const char *in;
        int64_t value;
        int64_t milli;
        bool saturated;
        const char *canonical;
};

/* Values from apimachinery's definitions: Value() = ceil(|x|), MilliValue()
 * = ceil(|x|*1000), both away from zero. */
static const struct qcase good[] = {
    {"128m", 1, 128, false, "128m"},
    {"0.1m", 1, 1, false, "1m"},
    {"1e3", 1000, 1000000, false, "1e3"},
    {"1E3", 1000, 1000000, false, "1e3"},
    {"1.5Gi", 1610612736, 1610612736000, false, "1536Mi"},
    {"100m", 1, 100, false, "100m"},
    {"1", 1, 1000, false, "1"},
    {"0.5", 1, 500, false, "500m"},
    {"1.5", 2, 1500, false, "1500m"},
    {"128Mi", 134217728, 134217728000, false, "128Mi"},
    {"1G", 1000000000, 1000000000000, false, "1G"},
    {"1k", 1000, 1000000, false, "1k"},
    {"1Ki", 1024, 1024000, false, "1Ki"},
    {"1M", 1000000, 1000000000, false, "1M"},
    {"1Mi", 1048576, 1048576000, false, "1Mi"},
    {"-1", -1, -1000, false, "-1"},
    {"-0.1m", -1, -1, false, "-1m"},
    {"-1.5", -2, -1500, false, "-1500m"},
    {"-128Mi", -134217728, -134217728000, false, "-128Mi"},
    {"+2", 2, 2000, false, "2"},
    {"0", 0, 0, false, "0"},
    {"-0", 0, 0, false, "0"},
    {"000", 0, 0, false, "0"},
    {"0Gi", 0, 0, false, "0"},
    {"1.", 1, 1000, false, "1"},
    {".5", 1, 500, false, "500m"},
    {"1.G", 1000000000, 1000000000000, false, "1G"},
    {"128974848", 128974848, 128974848000, false, "128974848"},
    {"129e6", 129000000, 129000000000, false, "129e6"},
    {"129M", 129000000, 129000000000, false, "129M"},
    {"1000Mi", 1048576000, 1048576000000, false, "1000Mi"},
    {"1024Mi", 1073741824, 1073741824000, false, "1Gi"},
    {"1024", 1024, 1024000, false, "1024"},
    {"0.5Ki", 512, 512000, false, "512"},
    {"1e-2", 1, 10, false, "10e-3"},
    {"1E-2", 1, 10, false, "10e-3"},
    {"1e+3", 1000, 1000000, false, "1e3"},
    {"5n", 1, 1, false, "1m"},
    {"1u", 1, 1, false, "1m"},
    {"2500u", 1, 3, false, "3m"},
    {"0.000000001", 1, 1, false, "1m"},
    {"9223372036854775807", INT64_MAX, INT64_MAX, true, "9223372036854775807"},
    {"-9223372036854775807", -INT64_MAX, -INT64_MAX, true, "-9223372036854775807"},
    {"7Ei", 8070450532247928832, INT64_MAX, true, "7Ei"},
    {"9223372036854775", 9223372036854775, 9223372036854775000, false, "9223372036854775"},
    {"8E", 8000000000000000000, INT64_MAX, true, "8E"},
    /* far more digits than any integer type: exact, no rounding error */
    {"1.000000000000000000000000000000000000000000000000000000000000000000000000000000"
     "000000000000000000000000000000000001",
     2, 1001, false, "1001m"},
    {"0.0000000000000000000000000000000000000000000000000000000000000000000001Ki", 1, 1, false,
     "1m"},
    {"1.0009765625Ki", 1025, 1025000, false, "1025"},
};

START_TEST(test_parse_table)
{
        const struct qcase *c = &good[_i];
        struct k8s_quantity q;
        struct cb_error err = {0};
        char buf[64];
        ck_assert_msg(k8s_quantity_parse(c->in, &q, &err) == 0, "%s: %s", c->in, err.msg);
        ck_assert(q.set);
        ck_assert_msg(q.value == c->value, "%s: value %lld want %lld", c->in, (long long)q.value,
                      (long long)c->value);
        ck_assert_msg(q.milli == c->milli, "%s: milli %lld want %lld", c->in, (long long)q.milli,
                      (long long)c->milli);
        ck_assert_msg(q.milli_saturated == c->saturated, "%s: saturated", c->in);
        int n = k8s_quantity_format(&q, buf, sizeof(buf));
        ck_assert_int_eq(n, (int)strlen(buf));
        ck_assert_msg(strcmp(buf, c->canonical) == 0, "%s: canonical %s want %s", c->in, buf,
                      c->canonical);
        ck_assert_str_eq(q.text, c->in);
}
END_TEST

static const char *const bad[] = {
    "12XB", "",    "1.2.3", "Mi",   "1 Gi", " 1",    "1 ",  "1Gi ", "abc", ".",
    "-",    "+",   "e3",    "1e",   "1e+",  "1Ki5",  "1ki", "1KI",  "1MB", "1b",
    "1i",   "--1", "1..",   "0x10", "1,5",  "1e3e3", "1m1", "Gi",
};

START_TEST(test_parse_garbage)
{
        struct k8s_quantity q;
        struct cb_error err = {0};
        char want[128];
        ck_assert_msg(k8s_quantity_parse(bad[_i], &q, &err) < 0, "%s accepted", bad[_i]);
        snprintf(want, sizeof(want), "invalid quantity \"%s\"", bad[_i]);
        ck_assert_msg(strncmp(err.msg, want, strlen(want)) == 0, "%s: %s", bad[_i], err.msg);
        ck_assert(!q.set);
}
END_TEST

static const char *const too_large[] = {
    "9223372036854775808",
    "-9223372036854775808",
    "8Ei",
    "9223372036854775807.5",
    "10E",
    "1e19",
    "100000000000000000000000000000000000000000",
    "9223372036854775808000m",
    "8192Pi",
};

START_TEST(test_parse_too_large)
{
        struct k8s_quantity q;
        struct cb_error err = {0};
        ck_assert_msg(k8s_quantity_parse(too_large[_i], &q, &err) < 0, "%s accepted",
                      too_large[_i]);
        ck_assert_msg(strstr(err.msg, "exceeds 2^63-1") != NULL, "%s: %s", too_large[_i], err.msg);
        ck_assert(strstr(err.msg, too_large[_i]) != NULL);
}
END_TEST

START_TEST(test_huge_exponents)
{
        struct k8s_quantity q;
        struct cb_error err = {0};
        ck_assert_int_lt(k8s_quantity_parse("1e999999999999999999", &q, &err), 0);
        ck_assert_int_eq(k8s_quantity_parse("0e999999999999999999", &q, &err), 0);
        ck_assert_int_eq(q.value, 0);
        ck_assert_int_eq(k8s_quantity_parse("1e-999999999999999999", &q, &err), 0);
        ck_assert_int_eq(q.value, 1);
        ck_assert_int_eq(q.milli, 1);
}
END_TEST

START_TEST(test_format_buffer)
{
        struct k8s_quantity q;
        struct cb_error err = {0};
        char small[4];
        ck_assert_int_eq(k8s_quantity_parse("1536Mi", &q, &err), 0);
        ck_assert_int_eq(k8s_quantity_format(&q, small, sizeof(small)), 6);
        ck_assert_str_eq(small, "153");
        struct k8s_quantity zero = {0};
        char buf[8];
        ck_assert_int_eq(k8s_quantity_format(&zero, buf, sizeof(buf)), 1);
        ck_assert_str_eq(buf, "0");
}
END_TEST

/* memory "128m" is 0.128 bytes, not 128 MB: the classic m/M mistake */
START_TEST(test_milli_vs_mega)
{
        struct k8s_quantity lo, hi;
        struct cb_error err = {0};
        ck_assert_int_eq(k8s_quantity_parse("128m", &lo, &err), 0);
        ck_assert_int_eq(k8s_quantity_parse("128M", &hi, &err), 0);
        ck_assert_int_eq(lo.value, 1);
        ck_assert_int_eq(hi.value, 128000000);
        ck_assert_int_eq(lo.format, K8S_QF_DECIMAL_SI);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("quantity");
        TCase *tc = tcase_create("parse");
        tcase_add_loop_test(tc, test_parse_table, 0, (int)(sizeof(good) / sizeof(good[0])));
        tcase_add_loop_test(tc, test_parse_garbage, 0, (int)(sizeof(bad) / sizeof(bad[0])));
        tcase_add_loop_test(tc, test_parse_too_large, 0,
                            (int)(sizeof(too_large) / sizeof(too_large[0])));
        tcase_add_test(tc, test_huge_exponents);
        tcase_add_test(tc, test_format_buffer);
        tcase_add_test(tc, test_milli_vs_mega);
        suite_add_tcase(s, tc);
        return th_run(s) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
