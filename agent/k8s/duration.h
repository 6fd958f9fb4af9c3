/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stdint.h>

#include "lib/error.h"

/* A Go-style duration as metav1.Duration spells it in a KubeletConfiguration
 * and the kubelet's flags ("10s", "1m30s", "500ms", "2h", "0") in
 * milliseconds. The error names the text and the accepted units. */
int k8s_parse_duration_ms(const char *s, uint64_t *ret, struct cb_error *err);
