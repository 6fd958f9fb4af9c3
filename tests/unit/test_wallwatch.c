/* SPDX-License-Identifier: Apache-2.0 */
/* The test hook on the agent's wall clock (agent/core/wallwatch.h): the
 * offset file read at startup, re-read on a rename over it (the watch's
 * callback fires, cb_wall_now moves), a bad rewrite keeping the old offset,
 * and a relative path refused. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/core/loop.h"
#include "agent/core/wallwatch.h"
#include "lib/wallclock.h"

#include "helpers.h"

static int calls;

static void on_change(void *data)
{
        calls++;
        ag_loop_quit(data);
}

static void on_timeout(struct ag_timer *t, void *data)
{
        (void)t;
        ag_loop_quit(data);
}

static void put(const char *dir, const char *text)
{
        char tmp[512], path[512];
        snprintf(tmp, sizeof(tmp), "%s/offset.tmp", dir);
        snprintf(path, sizeof(path), "%s/offset", dir);
        FILE *f = fopen(tmp, "w");
        ck_assert_ptr_nonnull(f);
        fputs(text, f);
        fclose(f);
        ck_assert_int_eq(rename(tmp, path), 0);
}

/* Runs the loop until the callback or 2 s. */
static void run(struct ag_loop *loop, struct ag_timer *t)
{
        struct cb_error err = {0};
        ag_timer_arm(t, 2000);
        ck_assert_int_eq(ag_loop_run(loop, &err), 0);
}

START_TEST(test_offset_file)
{
        char dir[] = "/tmp/test-wallwatch.XXXXXX", path[512];
        ck_assert_ptr_nonnull(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/offset", dir);
        put(dir, "-7200\n");
        struct cb_error err = {0};
        unsetenv(AG_TESTCLOCK_ENV);
        ck_assert_int_eq(ag_testclock_init(&err), 0); /* unset: off */
        ck_assert_int_eq(cb_wall_offset(), 0);
        setenv(AG_TESTCLOCK_ENV, "offset", 1);
        ck_assert_int_eq(ag_testclock_init(&err), -1);
        ck_assert_ptr_nonnull(strstr(err.msg, "absolute path"));
        setenv(AG_TESTCLOCK_ENV, path, 1);
        ck_assert_msg(ag_testclock_init(&err) == 1, "%s", err.msg);
        ck_assert_int_eq(cb_wall_offset(), -7200);

        struct ag_loop *loop = NULL;
        struct ag_wallwatch *w = NULL;
        ck_assert_int_eq(ag_loop_new(&loop, &err), 0);
        struct ag_timer *t = ag_timer_new(loop, on_timeout, loop, &err);
        ck_assert_ptr_nonnull(t);
        ck_assert_msg(ag_wallwatch_new(loop, on_change, loop, &w, &err) == 0, "%s", err.msg);
        int64_t before = cb_wall_now();
        put(dir, "90000\n");
        run(loop, t);
        ck_assert_int_eq(calls, 1);
        ck_assert_int_eq(cb_wall_offset(), 90000);
        ck_assert(cb_wall_now() - before >= 97200 - 1);
        /* not a number: the offset stays, no callback */
        put(dir, "soon\n");
        run(loop, t);
        ck_assert_int_eq(calls, 1);
        ck_assert_int_eq(cb_wall_offset(), 90000);
        /* another file of the directory is no change */
        char other[600];
        snprintf(other, sizeof(other), "%s/other", dir);
        FILE *f = fopen(other, "w");
        fputs("5\n", f);
        fclose(f);
        run(loop, t);
        ck_assert_int_eq(calls, 1);
        put(dir, "0");
        run(loop, t);
        ck_assert_int_eq(calls, 2);
        ck_assert_int_eq(cb_wall_offset(), 0);
        ag_wallwatch_free(w);
        ag_timer_free(t);
        ag_loop_free(loop);
        unlink(other);
        unlink(path);
        rmdir(dir);
        unsetenv(AG_TESTCLOCK_ENV);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("wallwatch");
        TCase *tc = tcase_create("core");
        tcase_set_timeout(tc, 20);
        tcase_add_test(tc, test_offset_file);
        suite_add_tcase(s, tc);
        return th_run(s) ? 1 : 0;
}
