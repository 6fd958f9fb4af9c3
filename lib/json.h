/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Fields of decoded JSON (cJSON) read without a check at every use, for
 * documents whose shape cubelet made itself (the pod timelines of
 * agent/pods/podhistory.h, the /timelines answer): a missing or mistyped
 * field reads as empty, which the views show as such.
 */

#include <cjson/cJSON.h>

/* The string at key, or "" (o NULL, no such key, not a string). */
const char *cb_json_str(const cJSON *o, const char *key);
/* The number at key, or 0. */
double cb_json_num(const cJSON *o, const char *key);
