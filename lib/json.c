/* SPDX-License-Identifier: Apache-2.0 */
#include "lib/json.h"

const char *cb_json_str(const cJSON *o, const char *key)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
        return cJSON_IsString(v) ? v->valuestring : "";
}

double cb_json_num(const cJSON *o, const char *key)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
        return cJSON_IsNumber(v) ? v->valuedouble : 0;
}
