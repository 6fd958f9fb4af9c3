/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/k8s/imagegc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A duration as Go's time.Duration String() prints it ("2m0s", "1h0m0s",
 * "500ms", "0s"), for the kubelet's messages. */
void k8s_format_go_duration(int64_t ms, char *buf, size_t size)
{
        if (ms == 0) {
                snprintf(buf, size, "0s");
                return;
        }
        const char *sign = ms < 0 ? "-" : "";
        uint64_t v = ms < 0 ? (uint64_t)(-ms) : (uint64_t)ms;
        if (v < 1000) {
                snprintf(buf, size, "%s%llums", sign, (unsigned long long)v);
                return;
        }
        uint64_t h = v / 3600000, m = v / 60000 % 60, s = v / 1000 % 60, frac = v % 1000;
        char sec[32];
        if (frac == 0)
                snprintf(sec, sizeof(sec), "%llus", (unsigned long long)s);
        else {
                snprintf(sec, sizeof(sec), "%llu.%03llu", (unsigned long long)s,
                         (unsigned long long)frac);
                size_t l = strlen(sec);
                while (sec[l - 1] == '0')
                        sec[--l] = '\0';
                snprintf(sec + l, sizeof(sec) - l, "s");
        }
        if (h > 0)
                snprintf(buf, size, "%s%lluh%llum%s", sign, (unsigned long long)h,
                         (unsigned long long)m, sec);
        else if (m > 0)
                snprintf(buf, size, "%s%llum%s", sign, (unsigned long long)m, sec);
        else
                snprintf(buf, size, "%s%s", sign, sec);
}

static void add(char *buf, size_t size, size_t *used, int *count, const char *msg)
{
        if (*used < size)
                *used +=
                    (size_t)snprintf(buf + *used, size - *used, "%s%s", *count ? ", " : "", msg);
        (*count)++;
}

int k8s_imagegc_validate(const struct k8s_imagegc_policy *p, struct cb_error *err)
{
        char all[CB_ERROR_MSG_MAX], one[512], a[64], b[64];
        size_t used = 0;
        int count = 0;
        all[0] = '\0';
        if (p->high_threshold_percent < 0 || p->high_threshold_percent > 100) {
                snprintf(one, sizeof(one),
                         "invalid configuration: imageGCHighThresholdPercent "
                         "(--image-gc-high-threshold) %d must be between 0 and 100, inclusive",
                         p->high_threshold_percent);
                add(all, sizeof(all), &used, &count, one);
        }
        if (p->low_threshold_percent < 0 || p->low_threshold_percent > 100) {
                snprintf(one, sizeof(one),
                         "invalid configuration: imageGCLowThresholdPercent "
                         "(--image-gc-low-threshold) %d must be between 0 and 100, inclusive",
                         p->low_threshold_percent);
                add(all, sizeof(all), &used, &count, one);
        }
        if (p->low_threshold_percent >= p->high_threshold_percent) {
                snprintf(one, sizeof(one),
                         "invalid configuration: imageGCLowThresholdPercent "
                         "(--image-gc-low-threshold) %d must be less than "
                         "imageGCHighThresholdPercent (--image-gc-high-threshold) %d",
                         p->low_threshold_percent, p->high_threshold_percent);
                add(all, sizeof(all), &used, &count, one);
        }
        if (p->max_age_ms < 0) {
                k8s_format_go_duration(p->max_age_ms, a, sizeof(a));
                snprintf(one, sizeof(one),
                         "invalid configuration: imageMaximumGCAge %s must not be negative", a);
                add(all, sizeof(all), &used, &count, one);
        }
        if (p->max_age_ms > 0 && p->max_age_ms <= p->min_age_ms) {
                k8s_format_go_duration(p->max_age_ms, a, sizeof(a));
                k8s_format_go_duration(p->min_age_ms, b, sizeof(b));
                snprintf(one, sizeof(one),
                         "invalid configuration: imageMaximumGCAge %s must be greater than "
                         "imageMinimumGCAge %s",
                         a, b);
                add(all, sizeof(all), &used, &count, one);
        }
        if (count == 0)
                return 0;
        /* utilerrors.NewAggregate: one error alone, several in brackets. */
        return count == 1 ? cb_error_set(err, 0, "%s", all) : cb_error_set(err, 0, "[%s]", all);
}

bool k8s_imagegc_enabled(const struct k8s_imagegc_policy *p)
{
        return !(p->high_threshold_percent == 100 && p->max_age_ms == 0);
}

/* byLastUsedAndDetected, then the id so that the order is total. */
static int cmp(const struct k8s_image_record *x, const struct k8s_image_record *y)
{
        if (x->last_used_ms != y->last_used_ms)
                return x->last_used_ms < y->last_used_ms ? -1 : 1;
        if (x->first_detected_ms != y->first_detected_ms)
                return x->first_detected_ms < y->first_detected_ms ? -1 : 1;
        return strcmp(x->id ? x->id : "", y->id ? y->id : "");
}

size_t k8s_imagegc_order(const struct k8s_image_record *recs, size_t n, size_t *ret)
{
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
                if (!recs[i].in_use && !recs[i].pinned)
                        ret[k++] = i;
        /* insertion sort: a node holds tens of images, and it needs no
         * global state (qsort has no context argument) */
        for (size_t i = 1; i < k; i++) {
                size_t v = ret[i], j = i;
                for (; j > 0 && cmp(&recs[ret[j - 1]], &recs[v]) > 0; j--)
                        ret[j] = ret[j - 1];
                ret[j] = v;
        }
        return k;
}

bool k8s_imagegc_too_old(const struct k8s_imagegc_policy *p, const struct k8s_image_record *r,
                         int64_t now_ms, int64_t began_ms)
{
        if (p->max_age_ms <= 0 || now_ms - began_ms <= p->max_age_ms)
                return false;
        return now_ms - r->last_used_ms > p->max_age_ms;
}

bool k8s_imagegc_old_enough(const struct k8s_imagegc_policy *p, const struct k8s_image_record *r,
                            int64_t now_ms)
{
        if (r->last_used_ms >= now_ms)
                return false;
        return now_ms - r->first_detected_ms >= p->min_age_ms;
}

int64_t k8s_imagegc_bytes_to_free(const struct k8s_imagegc_policy *p, int64_t capacity,
                                  int64_t available, int *ret_usage_percent)
{
        if (capacity <= 0) {
                *ret_usage_percent = 0;
                return 0;
        }
        if (available > capacity)
                available = capacity;
        if (available < 0)
                available = 0;
        /* 100 - int(available*100/capacity), in int64 as the kubelet */
        int usage = 100 - (int)(available * 100 / capacity);
        *ret_usage_percent = usage;
        if (usage < p->high_threshold_percent)
                return 0;
        return capacity * (int64_t)(100 - p->low_threshold_percent) / 100 - available;
}
