/* SPDX-License-Identifier: Apache-2.0 */
/* The crash-point test hook (agent/core/crashpoint.h): a process whose
 * CUBELET_TEST_CRASH_AT names a point dies by SIGKILL at that point and
 * only there; without the variable (or with an empty one) no point kills. */
#include <check.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/core/crashpoint.h"

#include "helpers.h"

/* How a child that sets the variable to env (NULL: unset), initialises
 * the hook and passes the points a, then b, ends: 0 when it ran through,
 * else the signal that ended it. */
static int run_child(const char *env, const char *a, const char *b)
{
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                if (env != NULL)
                        setenv(AG_CRASHPOINT_ENV, env, 1);
                else
                        unsetenv(AG_CRASHPOINT_ENV);
                ag_crashpoint_init();
                ag_crash_point(a);
                ag_crash_point(b);
                _exit(0);
        }
        int st = 0;
        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        if (WIFSIGNALED(st))
                return WTERMSIG(st);
        ck_assert(WIFEXITED(st));
        ck_assert_int_eq(WEXITSTATUS(st), 0);
        return 0;
}

START_TEST(test_crash_points)
{
        ck_assert_int_eq(run_child(NULL, "restart-old-removed", "other"), 0);
        ck_assert_int_eq(run_child("", "restart-old-removed", "other"), 0);
        ck_assert_int_eq(run_child("restart-old-removed", "other", "restart-old"), 0);
        ck_assert_int_eq(run_child("restart-old-removed", "other", "restart-old-removed"), SIGKILL);
        ck_assert_int_eq(run_child("restart-old-removed", "restart-old-removed", "other"), SIGKILL);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("crashpoint");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_crash_points);
        suite_add_tcase(s, tc);
        return th_run(s) ? 1 : 0;
}
