/* SPDX-License-Identifier: Apache-2.0 */
#include <string.h>

#include "helpers.h"
#include "lib/base64.h"

static ssize_t dec(const char *in, unsigned flags, char *out, size_t *bad)
{
        return cb_base64_decode(in, strlen(in), flags, (unsigned char *)out, bad);
}

START_TEST(test_decodes)
{
        static const struct {
                const char *in, *out;
                unsigned flags;
        } ok[] = {
            {"", "", 0},
            {"YQ==", "a", 0},
            {"YWI=", "ab", 0},
            {"YWJj", "abc", 0},
            {"+/8=", "\xfb\xff", 0},
            {"aGVs\nbG8=\r\n", "hello", CB_B64_SKIP_NEWLINES},
            {"aGVs bG8=", "hello", CB_B64_SKIP_SPACE},
            {"YQ", "a", CB_B64_PAD_OPTIONAL},
            {"YWI", "ab", CB_B64_PAD_OPTIONAL},
            {"YR==", "a", 0}, /* Go's StdEncoding is not strict about the spare bits */
        };
        for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
                char out[64];
                size_t bad = 99;
                ssize_t n = dec(ok[i].in, ok[i].flags, out, &bad);
                ck_assert_msg(n == (ssize_t)strlen(ok[i].out), "%s: %zd", ok[i].in, n);
                ck_assert_mem_eq(out, ok[i].out, (size_t)n);
                ck_assert_int_eq(out[n], '\0');
        }
}
END_TEST

/* The offsets are what Go's CorruptInputError reports for the same input. */
START_TEST(test_refuses_with_offset)
{
        static const struct {
                const char *in;
                unsigned flags;
                size_t bad;
        } refused[] = {
            {"!!!!", 0, 0},
            {"YQ", 0, 0}, /* padding required */
            {"YWJjYQ", 0, 4},
            {"Y", CB_B64_PAD_OPTIONAL, 0},
            {"YQ=a", 0, 2},
            {"YQ=", 0, 3},
            {"YWI=a", 0, 4},
            {"Y$==", 0, 1},
            {"Y===", 0, 1},
            {"YQ===", 0, 4},
            {"aGVs\nbG8=", 0, 4}, /* a newline without CB_B64_SKIP_NEWLINES */
            {"YR==", CB_B64_STRICT_BITS, 1},
        };
        for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
                char out[64];
                size_t bad = 99;
                ck_assert_msg(dec(refused[i].in, refused[i].flags, out, &bad) == -1, "%s",
                              refused[i].in);
                ck_assert_msg(bad == refused[i].bad, "%s: offset %zu, want %zu", refused[i].in, bad,
                              refused[i].bad);
        }
}
END_TEST

int main(void)
{
        Suite *s = suite_create("base64");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_decodes);
        tcase_add_test(tc, test_refuses_with_offset);
        suite_add_tcase(s, tc);
        return th_run(s);
}
