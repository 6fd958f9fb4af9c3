/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * resource.Quantity as Kubernetes parses it (apimachinery quantity.go):
 *   <signedNumber><suffix>, number = digits | digits.digits | digits. | .digits
 *   suffix = Ki Mi Gi Ti Pi Ei | n u m "" k M G T P E | e<int> / E<int>
 * The value is kept exactly; value and milli are rounded up (away from zero)
 * like Value() and MilliValue(). Magnitudes above 2^63-1 are refused.
 */

#include <stdbool.h>
#include <stdint.h>

#include "lib/error.h"

enum k8s_quantity_format {
        K8S_QF_DECIMAL_SI,  /* "", k, M, ... and m, u, n */
        K8S_QF_BINARY_SI,   /* Ki, Mi, ... */
        K8S_QF_DECIMAL_EXP, /* e3, E-2 */
};

struct k8s_quantity {
        bool set;      /* false: the zero quantity / absent */
        int64_t value; /* ceil(|x|) with sign: Value() */
        int64_t milli; /* ceil(|x|*1000) with sign: MilliValue(); saturates at
                          INT64_MAX/MIN when x*1000 does not fit */
        bool milli_saturated;
        enum k8s_quantity_format format;
        const char *text; /* the text as given, when decoded from an object */
};

/* Parses s. On error: -1 with a message like `invalid quantity "12XB"`
 * (no path: the caller prefixes it). */
int k8s_quantity_parse(const char *s, struct k8s_quantity *q, struct cb_error *err);

/* Canonical serialization as Kubernetes prints it (1.5 -> "1500m",
 * 1.5Gi -> "1536Mi", 0.1m -> "1m"). Writes at most size bytes; returns
 * the length it needed. */
int k8s_quantity_format(const struct k8s_quantity *q, char *buf, int size);
