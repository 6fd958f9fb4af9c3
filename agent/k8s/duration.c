/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/k8s/duration.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/cleanup.h"

int k8s_parse_duration_ms(const char *s, uint64_t *ret, struct cb_error *err)
{
        static const struct {
                const char *unit;
                double ms;
        } units[] = {{"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}};
        const char *p = s;
        double total = 0;
        if (*p == '\0')
                return cb_error_set(err, 0, "empty duration (want e.g. 10s, 1m30s, 500ms)");
        if (strcmp(s, "0") == 0) {
                *ret = 0;
                return 0;
        }
        while (*p) {
                char *end;
                errno = 0;
                double v = strtod(p, &end);
                if (end == p || errno != 0 || v < 0)
                        return cb_error_set(err, 0,
                                            "invalid duration \"%s\" (want e.g. 10s, 1m30s, "
                                            "500ms)",
                                            s);
                p = end;
                size_t best = CB_ARRAY_SIZE(units);
                for (size_t i = 0; i < CB_ARRAY_SIZE(units); i++)
                        if (strncmp(p, units[i].unit, strlen(units[i].unit)) == 0 &&
                            (best == CB_ARRAY_SIZE(units) ||
                             strlen(units[i].unit) > strlen(units[best].unit)))
                                best = i;
                if (best == CB_ARRAY_SIZE(units))
                        return cb_error_set(err, 0,
                                            "invalid duration \"%s\": missing or unknown unit "
                                            "(ms, s, m or h)",
                                            s);
                total += v * units[best].ms;
                p += strlen(units[best].unit);
        }
        if (total > 1e12)
                return cb_error_set(err, 0, "duration \"%s\" is too long", s);
        *ret = (uint64_t)total;
        return 0;
}
