/* SPDX-License-Identifier: Apache-2.0 */
/* Image manifest parsing (runtime/image_store.c): no I/O. Cases found by
 * tests/fuzz/fuzz_image. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/image_internal.h"

#include "helpers.h"

#define D64      "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define DESC(mt) "{\"mediaType\":\"" mt "\",\"digest\":\"sha256:" D64 "\",\"size\":1}"

START_TEST(test_manifest_ok)
{
        const char *j = "{\"schemaVersion\":2,\"config\":" DESC(
            "application/vnd.oci.image.config.v1+json") ",\"layers\":[" DESC("application/"
                                                                             "vnd.oci.image.layer."
                                                                             "v1.tar+gzip") "]}";
        struct rt_manifest m = {0};
        struct cb_error err = {0};
        ck_assert_int_eq(rt_manifest_parse(j, strlen(j), &m, &err), 0);
        ck_assert_uint_eq(m.n_layers, 1);
        ck_assert_str_eq(m.layers[0].digest, "sha256:" D64);
        rt_manifest_free(&m);
}
END_TEST

/* A foreign layer type: the error names the type. The
 * message used to be formatted from the layer array after it was freed (a
 * use-after-free a registry could trigger). */
START_TEST(test_manifest_foreign_layer)
{
        const char *j = "{\"schemaVersion\":2,\"config\":" DESC(
            "application/vnd.oci.image.config.v1+json") ",\"layers\":[" DESC("application/"
                                                                             "vnd.docker.image."
                                                                             "rootfs.foreign.diff."
                                                                             "tar.gzip") "]}";
        struct rt_manifest m = {0};
        struct cb_error err = {0};
        ck_assert_int_eq(rt_manifest_parse(j, strlen(j), &m, &err), -1);
        ck_assert_ptr_null(m.layers);
        ck_assert_ptr_nonnull(
            strstr(err.msg, "manifest layers[0]: unsupported layer media type "
                            "\"application/vnd.docker.image.rootfs.foreign.diff.tar.gzip\""));
}
END_TEST

int main(void)
{
        Suite *s = suite_create("manifest");
        TCase *tc = tcase_create("parse");
        tcase_add_test(tc, test_manifest_ok);
        tcase_add_test(tc, test_manifest_foreign_layer);
        suite_add_tcase(s, tc);
        return th_run(s) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
