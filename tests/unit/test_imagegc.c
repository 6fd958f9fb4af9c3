/* SPDX-License-Identifier: Apache-2.0 */
/* Image garbage collection decisions (agent/k8s/imagegc.h): the eviction
 * order, images in use and pinned, the minimum and maximum age, the
 * thresholds, as the kubelet's image_gc_manager. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/k8s/imagegc.h"

#include "helpers.h"

#define MIN 60000LL

static const struct k8s_imagegc_policy policy = {
    .high_threshold_percent = 85, .low_threshold_percent = 80, .min_age_ms = 2 * MIN};

/* Least recently used first; never used before every used one; ties by
 * first seen; in-use and pinned images are no candidates. */
START_TEST(test_lru_order)
{
        const struct k8s_image_record r[] = {
            {.id = "sha256:a", .first_detected_ms = 10, .last_used_ms = 500},
            {.id = "sha256:b", .first_detected_ms = 30, .last_used_ms = 0},
            {.id = "sha256:c", .first_detected_ms = 20, .last_used_ms = 0},
            {.id = "sha256:d", .first_detected_ms = 5, .last_used_ms = 900, .in_use = true},
            {.id = "sha256:e", .first_detected_ms = 1, .last_used_ms = 300},
            {.id = "sha256:f", .first_detected_ms = 1, .last_used_ms = 0, .pinned = true},
            {.id = "sha256:g", .first_detected_ms = 20, .last_used_ms = 0},
        };
        size_t order[7];
        size_t n = k8s_imagegc_order(r, 7, order);
        ck_assert_uint_eq(n, 5);
        const char *want[] = {"sha256:c", "sha256:g", "sha256:b", "sha256:e", "sha256:a"};
        for (size_t i = 0; i < n; i++)
                ck_assert_str_eq(r[order[i]].id, want[i]);
        ck_assert_uint_eq(k8s_imagegc_order(r, 0, order), 0);
}
END_TEST

START_TEST(test_min_age)
{
        int64_t now = 100 * MIN;
        struct k8s_image_record r = {.id = "x", .first_detected_ms = now - 2 * MIN};
        ck_assert(k8s_imagegc_old_enough(&policy, &r, now)); /* exactly the minimum age */
        r.first_detected_ms = now - 2 * MIN + 1;
        ck_assert(!k8s_imagegc_old_enough(&policy, &r, now));
        r.first_detected_ms = now - 10 * MIN;
        r.last_used_ms = now; /* used at the time of the collection */
        ck_assert(!k8s_imagegc_old_enough(&policy, &r, now));
        r.last_used_ms = now - 1;
        ck_assert(k8s_imagegc_old_enough(&policy, &r, now));
        struct k8s_imagegc_policy zero = policy;
        zero.min_age_ms = 0;
        r.first_detected_ms = now;
        r.last_used_ms = 0;
        ck_assert(k8s_imagegc_old_enough(&zero, &r, now));
}
END_TEST

START_TEST(test_max_age)
{
        struct k8s_imagegc_policy p = policy;
        int64_t began = 1000 * MIN, now = began + 61 * MIN;
        struct k8s_image_record r = {
            .id = "x", .first_detected_ms = 0, .last_used_ms = now - 61 * MIN};
        ck_assert(!k8s_imagegc_too_old(&p, &r, now, began)); /* off */
        p.max_age_ms = 60 * MIN;
        ck_assert(k8s_imagegc_too_old(&p, &r, now, began));
        r.last_used_ms = now - 60 * MIN; /* not more than the maximum */
        ck_assert(!k8s_imagegc_too_old(&p, &r, now, began));
        r.last_used_ms = 0; /* never used */
        ck_assert(k8s_imagegc_too_old(&p, &r, now, began));
        /* the collector must have run longer than the maximum age */
        ck_assert(!k8s_imagegc_too_old(&p, &r, began + 60 * MIN, began));
        ck_assert(k8s_imagegc_too_old(&p, &r, began + 60 * MIN + 1, began));
}
END_TEST

START_TEST(test_thresholds)
{
        int usage = -1;
        /* 100 GB, 20 GB available: 80% < 85% */
        ck_assert_int_eq(k8s_imagegc_bytes_to_free(&policy, 100000, 20000, &usage), 0);
        ck_assert_int_eq(usage, 80);
        /* 15% available: 85% is at the high threshold: free to 80% */
        ck_assert_int_eq(k8s_imagegc_bytes_to_free(&policy, 100000, 15000, &usage), 5000);
        ck_assert_int_eq(usage, 85);
        /* integer percentages as the kubelet: 15.5% available is 85% used */
        ck_assert_int_eq(k8s_imagegc_bytes_to_free(&policy, 100000, 15500, &usage), 4500);
        ck_assert_int_eq(usage, 85);
        ck_assert_int_eq(k8s_imagegc_bytes_to_free(&policy, 100000, 15999, &usage), 4001);
        ck_assert_int_eq(k8s_imagegc_bytes_to_free(&policy, 100000, 16001, &usage), 0);
        ck_assert_int_eq(usage, 84);
        /* available above capacity is clamped */
        ck_assert_int_eq(k8s_imagegc_bytes_to_free(&policy, 100000, 200000, &usage), 0);
        ck_assert_int_eq(usage, 0);
        ck_assert_int_eq(k8s_imagegc_bytes_to_free(&policy, 0, 0, &usage), 0);
}
END_TEST

START_TEST(test_enabled_and_validate)
{
        struct cb_error err = {0};
        struct k8s_imagegc_policy p = policy;
        ck_assert(k8s_imagegc_enabled(&p));
        ck_assert_int_eq(k8s_imagegc_validate(&p, &err), 0);
        p.high_threshold_percent = 100;
        ck_assert(!k8s_imagegc_enabled(&p));
        p.max_age_ms = 3 * MIN;
        ck_assert(k8s_imagegc_enabled(&p));
        p.max_age_ms = -1000;
        ck_assert_int_eq(k8s_imagegc_validate(&p, &err), -1);
        ck_assert_str_eq(err.msg,
                         "invalid configuration: imageMaximumGCAge -1s must not be negative");
        char buf[32];
        k8s_format_go_duration(3600000 + 90000, buf, sizeof(buf));
        ck_assert_str_eq(buf, "1h1m30s");
        k8s_format_go_duration(1500, buf, sizeof(buf));
        ck_assert_str_eq(buf, "1.5s");
        k8s_format_go_duration(250, buf, sizeof(buf));
        ck_assert_str_eq(buf, "250ms");
        k8s_format_go_duration(0, buf, sizeof(buf));
        ck_assert_str_eq(buf, "0s");
}
END_TEST

int main(void)
{
        Suite *s = suite_create("imagegc");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_lru_order);
        tcase_add_test(tc, test_min_age);
        tcase_add_test(tc, test_max_age);
        tcase_add_test(tc, test_thresholds);
        tcase_add_test(tc, test_enabled_and_validate);
        suite_add_tcase(s, tc);
        return th_run(s) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
