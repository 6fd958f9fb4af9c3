/* SPDX-License-Identifier: Apache-2.0 */
/* Image reference parsing and normalisation (runtime/image_ref.c): no I/O. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/image.h"

#include "helpers.h"

#define D64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static const struct {
        const char *in;
        const char *canon; /* NULL: must be refused */
        const char *domain, *path, *tag, *digest;
        const char *why; /* substring of the error when refused */
} cases[] = {
    {"busybox", "docker.io/library/busybox:latest", "docker.io", "library/busybox", "latest", "",
     NULL},
    {"busybox:1.36", "docker.io/library/busybox:1.36", "docker.io", "library/busybox", "1.36", "",
     NULL},
    {"user/app:1", "docker.io/user/app:1", "docker.io", "user/app", "1", "", NULL},
    {"docker.io/busybox", "docker.io/library/busybox:latest", "docker.io", "library/busybox",
     "latest", "", NULL},
    {"index.docker.io/library/busybox:1", "docker.io/library/busybox:1", "docker.io",
     "library/busybox", "1", "", NULL},
    {"localhost:5000/x", "localhost:5000/x:latest", "localhost:5000", "x", "latest", "", NULL},
    {"localhost/x:y", "localhost/x:y", "localhost", "x", "y", "", NULL},
    {"127.0.0.1:5000/busybox:1.36", "127.0.0.1:5000/busybox:1.36", "127.0.0.1:5000", "busybox",
     "1.36", "", NULL},
    {"registry.k8s.io/pause:3.9", "registry.k8s.io/pause:3.9", "registry.k8s.io", "pause", "3.9",
     "", NULL},
    {"quay.io/a/b/c:v1.2-rc_3", "quay.io/a/b/c:v1.2-rc_3", "quay.io", "a/b/c", "v1.2-rc_3", "",
     NULL},
    {"Registry.Example/x", "Registry.Example/x:latest", "Registry.Example", "x", "latest", "",
     NULL},
    {"busybox@sha256:" D64, "docker.io/library/busybox@sha256:" D64, "docker.io", "library/busybox",
     "", "sha256:" D64, NULL},
    {"busybox:1.36@sha256:" D64, "docker.io/library/busybox:1.36@sha256:" D64, "docker.io",
     "library/busybox", "1.36", "sha256:" D64, NULL},
    {"a__b/c-d/e..f", NULL, NULL, NULL, NULL, NULL, "path component"},
    {"a__b/c--d/e.f_g", "docker.io/a__b/c--d/e.f_g:latest", "docker.io", "a__b/c--d/e.f_g",
     "latest", "", NULL},
    {"localhost:5000", "docker.io/library/localhost:5000", "docker.io", "library/localhost", "5000",
     "", NULL},
    /* refused */
    {"", NULL, NULL, NULL, NULL, NULL, "empty"},
    {"BusyBox", NULL, NULL, NULL, NULL, NULL, "lowercase"},
    {"user/App", NULL, NULL, NULL, NULL, NULL, "lowercase"},
    {"busybox:", NULL, NULL, NULL, NULL, NULL, "tag"},
    {"busybox:-x", NULL, NULL, NULL, NULL, NULL, "tag"},
    {"busybox:a/b", NULL, NULL, NULL, NULL, NULL, "registry host"},
    {"busybox@sha256:abc", NULL, NULL, NULL, NULL, NULL, "digest"},
    {"busybox@sha256:" D64 "00", NULL, NULL, NULL, NULL, NULL, "digest"},
    {"busybox@sha512:" D64 D64, NULL, NULL, NULL, NULL, NULL, "sha256"},
    {"busybox@sha256:0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef", NULL, NULL,
     NULL, NULL, NULL, "digest"},
    {"-busybox", NULL, NULL, NULL, NULL, NULL, "path component"},
    {"busy box", NULL, NULL, NULL, NULL, NULL, "path component"},
    {"a//b", NULL, NULL, NULL, NULL, NULL, "path component"},
    {"busybox/", NULL, NULL, NULL, NULL, NULL, "path component"},
    {"/busybox", NULL, NULL, NULL, NULL, NULL, "path component"},
    {"exa_mple.com/x", NULL, NULL, NULL, NULL, NULL, "registry host"},
    {"example.com:/x", NULL, NULL, NULL, NULL, NULL, "registry host"},
    {"example.com:12a/x", NULL, NULL, NULL, NULL, NULL, "registry host"},
    {"-example.com/x", NULL, NULL, NULL, NULL, NULL, "registry host"},
    {":tag", NULL, NULL, NULL, NULL, NULL, "empty"},
};

START_TEST(test_ref_table)
{
        struct rt_image_ref r;
        struct cb_error err = {0};
        char buf[RT_REF_STR_MAX + 1];
        int rc = rt_image_ref_parse(cases[_i].in, &r, &err);
        if (cases[_i].canon == NULL) {
                ck_assert_msg(rc < 0, "\"%s\" was accepted as %s", cases[_i].in,
                              rc == 0 ? rt_image_ref_format(&r, buf, sizeof(buf)) : "");
                ck_assert_msg(strstr(err.msg, cases[_i].why) != NULL,
                              "\"%s\": error \"%s\" lacks \"%s\"", cases[_i].in, err.msg,
                              cases[_i].why);
                ck_assert_msg(strstr(err.msg, "invalid image reference") != NULL, "%s", err.msg);
                return;
        }
        ck_assert_msg(rc == 0, "\"%s\" refused: %s", cases[_i].in, err.msg);
        ck_assert_str_eq(rt_image_ref_format(&r, buf, sizeof(buf)), cases[_i].canon);
        ck_assert_str_eq(r.domain, cases[_i].domain);
        ck_assert_str_eq(r.path, cases[_i].path);
        ck_assert_str_eq(r.tag, cases[_i].tag);
        ck_assert_str_eq(r.digest, cases[_i].digest);
        /* The canonical form is a fixed point. */
        struct rt_image_ref again;
        char buf2[RT_REF_STR_MAX + 1];
        ck_assert_int_eq(rt_image_ref_parse(buf, &again, &err), 0);
        ck_assert_str_eq(rt_image_ref_format(&again, buf2, sizeof(buf2)), buf);
}
END_TEST

START_TEST(test_ref_lengths)
{
        struct rt_image_ref r;
        struct cb_error err = {0};
        char tag[200], name[300];
        /* A 128-character tag is the maximum. */
        memset(tag, 'a', 128);
        tag[128] = '\0';
        snprintf(name, sizeof(name), "busybox:%s", tag);
        ck_assert_int_eq(rt_image_ref_parse(name, &r, &err), 0);
        snprintf(name, sizeof(name), "busybox:%sa", tag);
        ck_assert_int_lt(rt_image_ref_parse(name, &r, &err), 0);
        ck_assert_ptr_nonnull(strstr(err.msg, "tag"));
        /* A name over 255 characters is refused. */
        memset(name, 'a', 260);
        name[260] = '\0';
        ck_assert_int_lt(rt_image_ref_parse(name, &r, &err), 0);
        ck_assert_ptr_nonnull(strstr(err.msg, "255"));
}
END_TEST

START_TEST(test_digest_valid)
{
        ck_assert(rt_digest_valid("sha256:" D64));
        ck_assert(!rt_digest_valid("sha256:" D64 "0"));
        ck_assert(!rt_digest_valid("sha256:"));
        ck_assert(!rt_digest_valid("sha512:" D64));
        ck_assert(!rt_digest_valid("sha256:../../../../etc/passwd"));
}
END_TEST

int main(void)
{
        Suite *s = suite_create("imageref");
        TCase *tc = tcase_create("parse");
        tcase_add_loop_test(tc, test_ref_table, 0, (int)(sizeof(cases) / sizeof(cases[0])));
        tcase_add_test(tc, test_ref_lengths);
        tcase_add_test(tc, test_digest_valid);
        suite_add_tcase(s, tc);
        return th_run(s) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
