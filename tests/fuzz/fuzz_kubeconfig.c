/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness for kubeconfig files (YAML or JSON): ag_kubeconfig_parse
 * with the current context and with a named one, and the base64 decoder
 * for the inline certificate material on the raw bytes. Relative file
 * references resolve under a directory that does not exist.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/client/kubeconfig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct cb_error err = {0};
        struct ag_kubeconfig kc;
        struct ag_blob b;

        memset(&kc, 0, sizeof(kc));
        if (ag_kubeconfig_parse((const char *)data, size, "/nonexistent-fuzz/kubeconfig", NULL, &kc,
                                &err) == 0)
                ag_kubeconfig_clear(&kc);
        memset(&kc, 0, sizeof(kc));
        if (ag_kubeconfig_parse((const char *)data, size, NULL, "fuzz", &kc, &err) == 0)
                ag_kubeconfig_clear(&kc);
        memset(&b, 0, sizeof(b));
        if (ag_base64_decode((const char *)data, size, &b, &err) == 0)
                free(b.data);
        return 0;
}
