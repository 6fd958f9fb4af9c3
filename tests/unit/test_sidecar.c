/* SPDX-License-Identifier: Apache-2.0 */
/* Sidecar decisions: when the next init container may start, when the
 * sidecars are stopped so that the pod completes, and the termination
 * order (computePodActions, kuberuntime_termination_order.go). */
#include <check.h>
#include <stdlib.h>

#include "status/podstatus.h"

#include "helpers.h"

static const struct st_run_view RUNNING = {.running = true, .started = true};
static const struct st_run_view SC_RUNNING = {.sidecar = true, .running = true, .started = true};
static const struct st_run_view SC_STARTING = {.sidecar = true, .running = true};
static const struct st_run_view SC_STOPPED = {.sidecar = true, .exited = true, .exit_code = 143};
static const struct st_run_view DONE_OK = {.exited = true};
static const struct st_run_view DONE_FAIL = {.exited = true, .exit_code = 1};
static const struct st_run_view RESTARTING = {.exited = true, .exit_code = 1, .will_restart = true};
static const struct st_run_view NEVER_RAN = {0};

START_TEST(test_init_order)
{
        /* a sidecar lets the next init container go once started (its
         * startup probe passed), not merely running */
        ck_assert(st_init_done(&SC_RUNNING));
        ck_assert(!st_init_done(&SC_STARTING));
        ck_assert(!st_init_done(&SC_STOPPED));
        /* a regular init container once it exited 0 */
        ck_assert(st_init_done(&DONE_OK));
        ck_assert(!st_init_done(&DONE_FAIL));
        ck_assert(!st_init_done(&RUNNING));
        ck_assert(!st_init_done(&NEVER_RAN));
}
END_TEST

START_TEST(test_completion)
{
        /* Job-like: every regular container done and none restarts */
        struct st_run_view r1[] = {DONE_OK, DONE_FAIL};
        ck_assert(st_regular_done(r1, 2));
        struct st_run_view r2[] = {DONE_OK, RUNNING};
        ck_assert(!st_regular_done(r2, 2));
        /* OnFailure/Always bring a container back: not done */
        struct st_run_view r3[] = {DONE_OK, RESTARTING};
        ck_assert(!st_regular_done(r3, 2));
        struct st_run_view r4[] = {DONE_OK, NEVER_RAN};
        ck_assert(!st_regular_done(r4, 2));
        ck_assert(!st_regular_done(NULL, 0));
}
END_TEST

START_TEST(test_termination_order)
{
        /* init: regular init (done), sidecar a, sidecar b; two regular containers */
        struct st_run_view init[] = {DONE_OK, SC_RUNNING, SC_RUNNING};
        struct st_run_view reg[] = {RUNNING, DONE_OK};
        /* while a main container runs, no sidecar stops */
        ck_assert(!st_sidecar_may_stop(init, 3, reg, 2, 2));
        ck_assert(!st_sidecar_may_stop(init, 3, reg, 2, 1));
        /* main containers gone: the last sidecar first ... */
        reg[0] = DONE_OK;
        ck_assert(st_sidecar_may_stop(init, 3, reg, 2, 2));
        ck_assert(!st_sidecar_may_stop(init, 3, reg, 2, 1));
        /* ... then the one before it */
        init[2] = SC_STOPPED;
        ck_assert(st_sidecar_may_stop(init, 3, reg, 2, 1));
        /* a running regular init container does not hold sidecars back
         * (only main containers and later sidecars are waited for) */
        struct st_run_view init2[] = {SC_RUNNING, RUNNING};
        ck_assert(st_sidecar_may_stop(init2, 2, NULL, 0, 0));
}
END_TEST

int main(void)
{
        Suite *s = suite_create("sidecar");
        TCase *tc = tcase_create("decisions");
        tcase_add_test(tc, test_init_order);
        tcase_add_test(tc, test_completion);
        tcase_add_test(tc, test_termination_order);
        suite_add_tcase(s, tc);
        return th_run(s) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
