/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness for the KubeletConfiguration file (--config): the
 * defaults, then ag_config_apply_text on the bytes (YAML or JSON), then the
 * final validation ag_config_finish does.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/cmd/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct cb_error err = {0};
        struct ag_config c;

        if (ag_config_init(&c, &err) != 0)
                abort();
        if (ag_config_apply_text(&c, (const char *)data, size, &err) == 0)
                (void)ag_config_finish(&c, &err);
        ag_config_clear(&c);
        return 0;
}
