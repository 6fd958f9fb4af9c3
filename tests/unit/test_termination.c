/* SPDX-License-Identifier: Apache-2.0 */
/* Termination messages: which source, the limits per container and per
 * pod (kuberuntime_container.go, status_manager.go normalizeStatus), and
 * the log tail of FallbackToLogsOnError. */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/k8s/k8s.h"
#include "agent/pods/podlogs.h"
#include "lib/file.h"
#include "lib/cleanup.h"
#include "status/podstatus.h"

#include "helpers.h"

START_TEST(test_which_source)
{
        /* File policy: never the logs. */
        ck_assert(!st_termination_use_logs(false, 1, "Error", 0));
        /* Fallback: only on failure and with an empty or missing file. */
        ck_assert(st_termination_use_logs(true, 1, "Error", 0));
        ck_assert(st_termination_use_logs(true, 137, "OOMKilled", 0));
        ck_assert(!st_termination_use_logs(true, 1, "Error", 5));
        ck_assert(!st_termination_use_logs(true, 0, "Completed", 0));
        /* a container that never ran has no logs */
        ck_assert(!st_termination_use_logs(true, 128, "ContainerCannotRun", 0));
}
END_TEST

START_TEST(test_join)
{
        char buf[64];
        ck_assert_uint_eq(st_termination_message(buf, sizeof(buf), "", "done\n"), 5);
        ck_assert_str_eq(buf, "done\n");
        st_termination_message(buf, sizeof(buf), "oom", "bye");
        ck_assert_str_eq(buf, "oom: bye");
        st_termination_message(buf, sizeof(buf), "oom", NULL);
        ck_assert_str_eq(buf, "oom");
        st_termination_message(buf, sizeof(buf), NULL, NULL);
        ck_assert_str_eq(buf, "");
        ck_assert_uint_eq(st_termination_message(buf, 4, "abc", "def"), 3);
}
END_TEST

static cJSON *status_with(const char *msg, size_t n)
{
        cJSON *st = cJSON_CreateObject();
        cJSON *arr = cJSON_AddArrayToObject(st, "containerStatuses");
        for (size_t i = 0; i < n; i++) {
                cJSON *c = cJSON_CreateObject();
                cJSON *t =
                    cJSON_AddObjectToObject(cJSON_AddObjectToObject(c, "state"), "terminated");
                cJSON_AddStringToObject(t, "message", msg);
                cJSON *l =
                    cJSON_AddObjectToObject(cJSON_AddObjectToObject(c, "lastState"), "terminated");
                cJSON_AddStringToObject(l, "message", msg);
                cJSON_AddItemToArray(arr, c);
        }
        return st;
}

static const char *msg_at(const cJSON *st, int i, const char *which)
{
        return cJSON_GetObjectItem(
                   cJSON_GetObjectItem(
                       cJSON_GetObjectItem(
                           cJSON_GetArrayItem(cJSON_GetObjectItem(st, "containerStatuses"), i),
                           which),
                       "terminated"),
                   "message")
            ->valuestring;
}

START_TEST(test_pod_limit)
{
        ck_assert_uint_eq(st_termination_message_budget(1), 12288);
        ck_assert_uint_eq(st_termination_message_budget(3), 4096);
        ck_assert_uint_eq(st_termination_message_budget(5), 2457);
        ck_assert_uint_eq(st_termination_message_budget(0), 12288);
        char big[4097];
        memset(big, 'x', 4096);
        big[4096] = '\0';
        /* one container: 4096 bytes stay */
        _cleanup_cjson_ cJSON *one = status_with(big, 1);
        st_normalize_termination_messages(one, st_termination_message_budget(1));
        ck_assert_uint_eq(strlen(msg_at(one, 0, "state")), 4096);
        /* five containers: 2457 bytes each, state and lastState, the head kept */
        _cleanup_cjson_ cJSON *five = status_with(big, 5);
        st_normalize_termination_messages(five, st_termination_message_budget(5));
        for (int i = 0; i < 5; i++) {
                ck_assert_uint_eq(strlen(msg_at(five, i, "state")), 2457);
                ck_assert_uint_eq(strlen(msg_at(five, i, "lastState")), 2457);
        }
        /* a cut in the middle of a character and bytes that are not UTF-8
         * become U+FFFD, as Go's JSON encoder writes them */
        _cleanup_cjson_ cJSON *u = status_with("ab\xc3\xa9\xff", 1);
        st_normalize_termination_messages(u, 3);
        ck_assert_str_eq(msg_at(u, 0, "state"), "ab\xef\xbf\xbd");
        _cleanup_cjson_ cJSON *v = status_with("ok\xff!", 1);
        st_normalize_termination_messages(v, 100);
        ck_assert_str_eq(msg_at(v, 0, "state"), "ok\xef\xbf\xbd!");
        _cleanup_cjson_ cJSON *w = status_with("h\xc3\xa9llo \xe2\x82\xac", 1);
        st_normalize_termination_messages(w, 100);
        ck_assert_str_eq(msg_at(w, 0, "state"), "h\xc3\xa9llo \xe2\x82\xac");
}
END_TEST

static void write_log(const char *path, int lines, int width)
{
        FILE *f = fopen(path, "we");
        ck_assert(f != NULL);
        for (int i = 0; i < lines; i++)
                fprintf(f, "2026-12-01T10:00:00.%09dZ %s F %0*d\n", i, i % 2 ? "stderr" : "stdout",
                        width, i);
        /* a partial record is joined with the next */
        fclose(f);
}

START_TEST(test_log_tail)
{
        char dir[] = "/tmp/cubelet-term-XXXXXX";
        ck_assert(mkdtemp(dir) != NULL);
        char path[256], out[ST_TERMINATION_LOG_BYTES + 1];
        size_t len = 99;
        struct cb_error err = {0};
        snprintf(path, sizeof(path), "%s/0.log", dir);
        /* missing: empty */
        ck_assert_int_eq(ag_podlogs_tail_text(path, 80, 2048, out, &len, &err), 0);
        ck_assert_uint_eq(len, 0);
        /* 100 short lines: the last 80, both streams */
        write_log(path, 100, 3);
        ck_assert_int_eq(ag_podlogs_tail_text(path, 80, 2048, out, &len, &err), 0);
        ck_assert_uint_eq(len, 80 * 4);
        ck_assert(strncmp(out, "020\n021\n", 8) == 0);
        ck_assert(strcmp(out + len - 4, "099\n") == 0);
        /* 80 long lines: only the last 2048 bytes */
        write_log(path, 100, 99);
        ck_assert_int_eq(ag_podlogs_tail_text(path, 80, 2048, out, &len, &err), 0);
        ck_assert_uint_eq(len, 2048);
        ck_assert_uint_eq(strlen(out), 2048);
        ck_assert(out[len - 1] == '\n');
        ck_assert(strstr(out, "00000099\n") != NULL);
        /* partial records (P) carry no newline */
        FILE *f = fopen(path, "we");
        fputs("2026-12-01T10:00:00.1Z stdout P par\n2026-12-01T10:00:00.2Z stdout F tial\n"
              "2026-12-01T10:00:00.3Z stderr F fatal: no config\n",
              f);
        fclose(f);
        ck_assert_int_eq(ag_podlogs_tail_text(path, 80, 2048, out, &len, &err), 0);
        ck_assert_str_eq(out, "partial\nfatal: no config\n");
        unlink(path);
        rmdir(dir);
}
END_TEST

START_TEST(test_real_pod_policy)
{
        /* An OpenShift prometheus pod: all 7 containers FallbackToLogsOnError. */
        char *text = NULL;
        size_t len = 0;
        struct cb_error err = {0};
        ck_assert_int_eq(
            cb_read_file(CUBELET_FIXTURES
                         "/real-cluster/"
                         "pod-openshift-4.8-prometheus-k8s-0-fallbacktologsonerror.json",
                         1 << 22, &text, &len, &err),
            0);
        _cleanup_cjson_ cJSON *j = cJSON_Parse(text);
        free(text);
        struct k8s_pod *p = NULL;
        ck_assert_msg(k8s_pod_from_json(j, &p, &err) == 0, "%s", err.msg);
        ck_assert_uint_eq(p->spec.n_containers, 7);
        for (size_t i = 0; i < p->spec.n_containers; i++) {
                ck_assert(p->spec.containers[i].termination_message_fallback);
                ck_assert_str_eq(p->spec.containers[i].termination_message_path,
                                 ST_DEFAULT_TERMINATION_PATH);
        }
        k8s_pod_free(p);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("termination");
        TCase *tc = tcase_create("messages");
        tcase_add_test(tc, test_which_source);
        tcase_add_test(tc, test_join);
        tcase_add_test(tc, test_pod_limit);
        tcase_add_test(tc, test_log_tail);
        tcase_add_test(tc, test_real_pod_policy);
        suite_add_tcase(s, tc);
        return th_run(s) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
