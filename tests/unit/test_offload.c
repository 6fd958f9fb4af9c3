/* SPDX-License-Identifier: Apache-2.0 */
#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/core/loop.h"
#include "agent/core/offload.h"

/* A job records which thread ran its work, in which order done came, and
 * whether it was cancelled. */
struct rec {
        int id;
        pthread_t work_thread;
        bool worked;
        int done_order;
        bool cancelled;
        bool work_in_callback, done_in_callback; /* ag_loop_in_callback() there */
        int delay_ms;
        sigset_t mask; /* the worker thread's signal mask */
};

struct run {
        struct ag_loop *loop;
        int n_done, n_expected;
        pthread_t loop_thread;
        bool done_off_loop;
        atomic_int concurrent, max_concurrent;
};

static struct run R;

static void work(void *data)
{
        struct rec *r = data;
        int now = atomic_fetch_add(&R.concurrent, 1) + 1;
        int max = atomic_load(&R.max_concurrent);
        while (now > max && !atomic_compare_exchange_weak(&R.max_concurrent, &max, now))
                ;
        r->work_thread = pthread_self();
        r->work_in_callback = ag_loop_in_callback();
        pthread_sigmask(SIG_SETMASK, NULL, &r->mask);
        if (r->delay_ms)
                usleep((useconds_t)r->delay_ms * 1000);
        r->worked = true;
        atomic_fetch_sub(&R.concurrent, 1);
}

static void done(void *data, bool cancelled)
{
        struct rec *r = data;
        if (!pthread_equal(pthread_self(), R.loop_thread))
                R.done_off_loop = true;
        r->cancelled = cancelled;
        r->done_in_callback = ag_loop_in_callback();
        r->done_order = ++R.n_done;
        if (R.n_done == R.n_expected)
                ag_loop_quit(R.loop);
}

static void setup_run(int expected)
{
        R = (struct run){0};
        struct cb_error err = {0};
        ck_assert_int_eq(ag_loop_new(&R.loop, &err), 0);
        R.loop_thread = pthread_self();
        R.n_expected = expected;
}

START_TEST(one_thread_runs_in_order_and_done_on_loop)
{
        setup_run(8);
        struct cb_error err = {0};
        struct ag_offload *o = NULL;
        ck_assert_int_eq(ag_offload_new(R.loop, "t", 1, &o, &err), 0);
        struct rec recs[8] = {0};
        for (int i = 0; i < 8; i++) {
                recs[i].id = i;
                recs[i].delay_ms = (8 - i) * 2; /* later jobs are quicker */
                ck_assert_int_eq(ag_offload_submit(o, work, done, &recs[i], &err), 0);
        }
        ck_assert_uint_ge(ag_offload_pending(o), 1);
        ck_assert(!ag_loop_in_callback()); /* not inside ag_loop_run */
        ck_assert_int_eq(ag_loop_run(R.loop, &err), 0);
        ck_assert(!ag_loop_in_callback());
        ck_assert(!R.done_off_loop);
        ck_assert_int_eq(R.max_concurrent, 1);
        for (int i = 0; i < 8; i++) {
                ck_assert(recs[i].worked);
                ck_assert(!recs[i].cancelled);
                ck_assert_int_eq(recs[i].done_order, i + 1); /* FIFO */
                /* what blocking code checks (agent/pods: container removal) */
                ck_assert(!recs[i].work_in_callback);
                ck_assert(recs[i].done_in_callback);
                ck_assert(!pthread_equal(recs[i].work_thread, R.loop_thread));
                ck_assert(sigismember(&recs[i].mask, SIGTERM));
                ck_assert(sigismember(&recs[i].mask, SIGCHLD));
        }
        ck_assert_uint_eq(ag_offload_pending(o), 0);
        ag_offload_free(o);
        ag_loop_free(R.loop);
}
END_TEST

START_TEST(several_threads_overlap)
{
        setup_run(6);
        struct cb_error err = {0};
        struct ag_offload *o = NULL;
        ck_assert_int_eq(ag_offload_new(R.loop, "t", 3, &o, &err), 0);
        struct rec recs[6] = {0};
        for (int i = 0; i < 6; i++) {
                recs[i].delay_ms = 50;
                ck_assert_int_eq(ag_offload_submit(o, work, done, &recs[i], &err), 0);
        }
        ck_assert_int_eq(ag_loop_run(R.loop, &err), 0);
        ck_assert_int_ge(R.max_concurrent, 2);
        ck_assert_int_le(R.max_concurrent, 3);
        ag_offload_free(o);
        ag_loop_free(R.loop);
}
END_TEST

START_TEST(free_cancels_what_never_ran)
{
        setup_run(0);
        struct cb_error err = {0};
        struct ag_offload *o = NULL;
        ck_assert_int_eq(ag_offload_new(R.loop, "t", 1, &o, &err), 0);
        struct rec recs[4] = {0};
        recs[0].delay_ms = 100;
        for (int i = 0; i < 4; i++)
                ck_assert_int_eq(ag_offload_submit(o, work, done, &recs[i], &err), 0);
        while (atomic_load(&R.concurrent) == 0) /* until the first job runs */
                usleep(1000);
        ag_offload_free(o);
        /* Every done was called exactly once, on this thread. */
        ck_assert_int_eq(R.n_done, 4);
        ck_assert(!R.done_off_loop);
        ck_assert(recs[0].worked);
        ck_assert(!recs[0].cancelled);
        for (int i = 1; i < 4; i++) {
                ck_assert(!recs[i].worked);
                ck_assert(recs[i].cancelled);
        }
        ag_loop_free(R.loop);
}
END_TEST

START_TEST(bad_thread_count)
{
        setup_run(0);
        struct cb_error err = {0};
        struct ag_offload *o = NULL;
        ck_assert_int_eq(ag_offload_new(R.loop, "pulls", 0, &o, &err), -1);
        ck_assert_ptr_null(o);
        ck_assert_ptr_nonnull(strstr(err.msg, "pulls"));
        ag_loop_free(R.loop);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("offload");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, one_thread_runs_in_order_and_done_on_loop);
        tcase_add_test(tc, several_threads_overlap);
        tcase_add_test(tc, free_cancels_what_never_ran);
        tcase_add_test(tc, bad_thread_count);
        suite_add_tcase(s, tc);
        SRunner *sr = srunner_create(s);
        srunner_set_fork_status(sr, CK_NOFORK);
        srunner_run_all(sr, CK_NORMAL);
        int failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? 1 : 0;
}
