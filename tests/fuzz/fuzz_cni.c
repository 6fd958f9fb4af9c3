/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness for what CNI hands the runtime: the bytes as a plugin's
 * result (rt_cni_parse_result, after cJSON as rt_cni_add parses stdout), as
 * a plugin's failure output (rt_cni_describe_failure) and as a network
 * configuration file (.conflist and single-plugin .conf).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cni.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct cb_error err = {0};
        struct rt_cni_result res;
        char *text = malloc(size + 1);
        char msg[256];
        int code = 0;

        if (text == NULL)
                abort();
        memcpy(text, data, size);
        text[size] = '\0';

        cJSON *j = cJSON_ParseWithLength((const char *)data, size);
        if (j != NULL) {
                memset(&res, 0, sizeof(res));
                (void)rt_cni_parse_result(j, &res, &err);
                cJSON_Delete(j);
        }
        rt_cni_describe_failure(text, text, 1, msg, sizeof(msg), &code);
        for (int single = 0; single < 2; single++) {
                struct rt_cni_netconf nc;
                memset(&nc, 0, sizeof(nc));
                if (rt_cni_parse_netconf(text, single, &nc, &err) == 0)
                        rt_cni_netconf_release(&nc);
        }
        free(text);
        return 0;
}
