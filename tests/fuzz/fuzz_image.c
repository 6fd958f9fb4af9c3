/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness for what a registry (or an image archive) hands the
 * puller: the bytes as an image manifest or index (rt_manifest_is_index
 * with and without a Content-Type, rt_manifest_parse, rt_index_select for
 * the host and another architecture) and as an image config
 * (rt_image_config_parse into an arena).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/arena.h"
#include "runtime/image.h"
#include "runtime/image_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct cb_error err = {0};
        const char *json = (const char *)data;
        int is_index = 0;
        struct rt_manifest m;
        struct rt_descriptor d;

        (void)rt_manifest_is_index(json, size, NULL, &is_index, &err);
        (void)rt_manifest_is_index(json, size, "application/vnd.oci.image.index.v1+json", &is_index,
                                   &err);
        memset(&m, 0, sizeof(m));
        if (rt_manifest_parse(json, size, &m, &err) == 0)
                rt_manifest_free(&m);
        (void)rt_index_select(json, size, rt_host_arch(), &d, &err);
        (void)rt_index_select(json, size, "arm64", &d, &err);

        struct cb_arena *a = cb_arena_new(0);
        if (a == NULL)
                abort();
        struct rt_image_config cfg;
        memset(&cfg, 0, sizeof(cfg));
        (void)rt_image_config_parse(a, json, size, &cfg, &err);
        cb_arena_free(a);
        return 0;
}
