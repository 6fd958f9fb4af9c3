/* SPDX-License-Identifier: Apache-2.0 */
/* The timeline's pure parts: the status/spec diff (agent/k8s/jsondiff.h),
 * the Trace Event Format export (agent/core/trace.h) and the per-pod
 * history's bounds (agent/pods/podhistory.h). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/core/trace.h"
#include "agent/k8s/jsondiff.h"
#include "agent/pods/podhistory.h"

#include "helpers.h"

static cJSON *parse(const char *s)
{
        cJSON *j = cJSON_Parse(s);
        ck_assert_msg(j != NULL, "bad JSON in the test: %s", s);
        return j;
}

/* The diff as "op path old new" lines, for exact comparisons. */
static char *lines(const cJSON *diff)
{
        size_t cap = 8192, len = 0;
        char *out = calloc(1, cap);
        const cJSON *op;
        cJSON_ArrayForEach(op, diff)
        {
                const cJSON *o = cJSON_GetObjectItem(op, "old"),
                            *n = cJSON_GetObjectItem(op, "new");
                char *os = o ? cJSON_PrintUnformatted(o) : NULL;
                char *ns = n ? cJSON_PrintUnformatted(n) : NULL;
                const cJSON *path = cJSON_GetObjectItem(op, "path");
                len += (size_t)snprintf(out + len, cap - len, "%s %s%s%s%s%s\n",
                                        cJSON_GetObjectItem(op, "op")->valuestring,
                                        path ? path->valuestring : "", os ? " " : "", os ? os : "",
                                        ns ? " " : "", ns ? ns : "");
                free(os);
                free(ns);
        }
        return out;
}

static void check_diff(const char *a, const char *b, const char *prefix, const char *want)
{
        cJSON *x = a ? parse(a) : NULL, *y = b ? parse(b) : NULL;
        cJSON *d = k8s_json_diff(x, y, prefix);
        ck_assert_ptr_nonnull(d);
        char *got = lines(d);
        ck_assert_msg(strcmp(got, want) == 0, "diff of\n  %s\n  %s\ngot:\n%swant:\n%s", a, b, got,
                      want);
        free(got);
        cJSON_Delete(d);
        cJSON_Delete(x);
        cJSON_Delete(y);
}

START_TEST(test_diff_fields)
{
        /* added, changed, removed; nested objects by key; equal -> nothing */
        check_diff("{\"phase\":\"Pending\",\"hostIP\":\"10.0.0.5\",\"qosClass\":\"BestEffort\"}",
                   "{\"phase\":\"Running\",\"podIP\":\"10.1.0.7\",\"qosClass\":\"BestEffort\"}",
                   "status",
                   "change status.phase \"Pending\" \"Running\"\n"
                   "remove status.hostIP \"10.0.0.5\"\n"
                   "add status.podIP \"10.1.0.7\"\n");
        check_diff("{\"a\":{\"b\":1,\"c\":[1,2]}}", "{\"a\":{\"b\":1,\"c\":[1,2]}}", NULL, "");
        /* an unkeyed array is one value */
        check_diff("{\"a\":{\"c\":[1,2]}}", "{\"a\":{\"c\":[2,1]}}", NULL,
                   "change a.c [1,2] [2,1]\n");
        /* a type change is a change */
        check_diff("{\"a\":1}", "{\"a\":\"1\"}", NULL, "change a 1 \"1\"\n");
        check_diff("{\"a\":null}", "{\"a\":false}", NULL, "change a null false\n");
        /* the first status: every field added */
        check_diff(NULL, "{\"phase\":\"Pending\",\"conditions\":[]}", "status",
                   "add status.phase \"Pending\"\nadd status.conditions []\n");
        check_diff("{\"x\":1}", NULL, "", "remove x 1\n");
}
END_TEST

START_TEST(test_diff_conditions_by_type)
{
        /* Reordered conditions are not a change; Ready flipping is one
         * change at [type=Ready], whatever its index. */
        check_diff("{\"conditions\":[{\"type\":\"Initialized\",\"status\":\"True\"},"
                   "{\"type\":\"Ready\",\"status\":\"False\",\"reason\":\"ContainersNotReady\"}]}",
                   "{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"},"
                   "{\"type\":\"PodScheduled\",\"status\":\"True\"},"
                   "{\"type\":\"Initialized\",\"status\":\"True\"}]}",
                   "status",
                   "change status.conditions[type=Ready].status \"False\" \"True\"\n"
                   "remove status.conditions[type=Ready].reason \"ContainersNotReady\"\n"
                   "add status.conditions[type=PodScheduled] "
                   "{\"type\":\"PodScheduled\",\"status\":\"True\"}\n");
        /* A condition gone is a remove of the element. */
        check_diff("{\"conditions\":[{\"type\":\"DisruptionTarget\",\"status\":\"True\"}]}",
                   "{\"conditions\":[]}", NULL,
                   "remove conditions[type=DisruptionTarget] "
                   "{\"type\":\"DisruptionTarget\",\"status\":\"True\"}\n");
        /* Elements without the key, or repeating it: the array is one value. */
        check_diff("{\"conditions\":[{\"status\":\"True\"}]}",
                   "{\"conditions\":[{\"status\":\"False\"}]}", NULL,
                   "change conditions [{\"status\":\"True\"}] [{\"status\":\"False\"}]\n");
        check_diff("{\"conditions\":[{\"type\":\"A\"},{\"type\":\"A\"}]}",
                   "{\"conditions\":[{\"type\":\"A\"}]}", NULL,
                   "change conditions [{\"type\":\"A\"},{\"type\":\"A\"}] [{\"type\":\"A\"}]\n");
}
END_TEST

START_TEST(test_diff_container_statuses_by_name)
{
        /* web's state goes waiting -> running and its restartCount moves;
         * side's order changed: untouched. initContainerStatuses too. */
        check_diff(
            "{\"containerStatuses\":[{\"name\":\"side\",\"ready\":true},"
            "{\"name\":\"web\",\"restartCount\":0,\"state\":{\"waiting\":{\"reason\":"
            "\"ContainerCreating\"}}}],"
            "\"initContainerStatuses\":[{\"name\":\"init\",\"state\":{\"running\":{}}}]}",
            "{\"containerStatuses\":[{\"name\":\"web\",\"restartCount\":1,\"state\":{\"running\":"
            "{\"startedAt\":\"2026-12-01T23:00:00Z\"}}},{\"name\":\"side\",\"ready\":true}],"
            "\"initContainerStatuses\":[{\"name\":\"init\",\"state\":{\"terminated\":{\"exitCode\":"
            "0}}}]}",
            "status",
            "change status.containerStatuses[name=web].restartCount 0 1\n"
            "remove status.containerStatuses[name=web].state.waiting "
            "{\"reason\":\"ContainerCreating\"}\n"
            "add status.containerStatuses[name=web].state.running "
            "{\"startedAt\":\"2026-12-01T23:00:00Z\"}\n"
            "remove status.initContainerStatuses[name=init].state.running {}\n"
            "add status.initContainerStatuses[name=init].state.terminated {\"exitCode\":0}\n");
}
END_TEST

START_TEST(test_pod_and_node_spec_diff)
{
        cJSON *a = parse("{\"metadata\":{\"name\":\"p\",\"resourceVersion\":\"5\","
                         "\"managedFields\":[{}]},\"spec\":{\"activeDeadlineSeconds\":30},"
                         "\"status\":{\"phase\":\"Running\"}}");
        cJSON *b = parse("{\"metadata\":{\"name\":\"p\",\"resourceVersion\":\"9\","
                         "\"deletionTimestamp\":\"2026-12-01T23:00:00Z\","
                         "\"deletionGracePeriodSeconds\":5},\"spec\":{\"activeDeadlineSeconds\":"
                         "10},\"status\":{\"phase\":\"Failed\"}}");
        cJSON *d = k8s_pod_spec_diff(a, b);
        char *got = lines(d);
        ck_assert_str_eq(got, "add metadata.deletionTimestamp \"2026-12-01T23:00:00Z\"\n"
                              "add metadata.deletionGracePeriodSeconds 5\n"
                              "change spec.activeDeadlineSeconds 30 10\n");
        free(got);
        cJSON_Delete(d);
        cJSON_Delete(a);
        cJSON_Delete(b);
        /* A NoExecute taint added beside a NoSchedule one of the same key:
         * taints are keyed by key and effect. */
        a = parse("{\"metadata\":{\"labels\":{\"a\":\"1\"}},\"spec\":{\"taints\":[{\"key\":\"k\","
                  "\"effect\":\"NoSchedule\"}]},\"status\":{\"images\":[1]}}");
        b = parse("{\"metadata\":{\"labels\":{\"a\":\"1\"}},\"spec\":{\"taints\":[{\"key\":\"k\","
                  "\"effect\":\"NoSchedule\"},{\"key\":\"k\",\"value\":\"v\",\"effect\":"
                  "\"NoExecute\"}]},\"status\":{\"images\":[2]}}");
        d = k8s_node_spec_diff(a, b);
        got = lines(d);
        ck_assert_str_eq(got, "add spec.taints[key=k,effect=NoExecute] "
                              "{\"key\":\"k\",\"value\":\"v\",\"effect\":\"NoExecute\"}\n");
        free(got);
        cJSON_Delete(d);
        cJSON_Delete(a);
        cJSON_Delete(b);
}
END_TEST

/* The digest two encodings of one status share (k8s_json_digest): keys
 * in any order, null as absent, keyed lists in any order; and no more. */
START_TEST(test_json_digest)
{
        static const char *const same[][2] = {
            {"{\"a\":1,\"b\":\"x\"}", "{\"b\":\"x\",\"a\":1.0}"},
            {"{\"a\":1,\"t\":null}", "{\"a\":1}"},
            {"{\"conditions\":[{\"type\":\"A\",\"status\":\"True\",\"lastProbeTime\":null},"
             "{\"type\":\"B\"}]}",
             "{\"conditions\":[{\"type\":\"B\"},{\"status\":\"True\",\"type\":\"A\"}]}"},
            {"{\"containerStatuses\":[{\"name\":\"a\",\"restartCount\":0},{\"name\":\"b\"}]}",
             "{\"containerStatuses\":[{\"name\":\"b\"},{\"restartCount\":0,\"name\":\"a\"}]}"},
            {"{\"n\":-0}", "{\"n\":0}"},
        };
        static const char *const differ[][2] = {
            {"{\"a\":1}", "{\"a\":2}"},
            {"{\"a\":\"1\"}", "{\"a\":1}"},
            {"{\"a\":true}", "{\"a\":false}"},
            {"{\"a\":\"x\"}", "{\"a\":null}"},
            {"{\"a\":{}}", "{}"},
            {"{\"a\":1}", "{\"b\":1}"},
            {"{\"ab\":\"c\"}", "{\"a\":\"bc\"}"},
            {"{\"list\":[1,2]}", "{\"list\":[2,1]}"},
            {"{\"conditions\":[{\"type\":\"A\"}]}",
             "{\"conditions\":[{\"type\":\"A\"},{\"type\":\"A\"}]}"},
            {"{\"conditions\":[{\"type\":\"A\",\"status\":\"True\"}]}",
             "{\"conditions\":[{\"type\":\"A\",\"status\":\"False\"}]}"},
            {"{\"x\":{\"a\":1,\"b\":2}}", "{\"x\":{\"a\":2,\"b\":1}}"},
        };
        for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
                cJSON *x = parse(same[i][0]), *y = parse(same[i][1]);
                ck_assert_msg(k8s_json_digest(x) == k8s_json_digest(y), "%s vs %s", same[i][0],
                              same[i][1]);
                cJSON_Delete(x);
                cJSON_Delete(y);
        }
        for (size_t i = 0; i < sizeof(differ) / sizeof(differ[0]); i++) {
                cJSON *x = parse(differ[i][0]), *y = parse(differ[i][1]);
                ck_assert_msg(k8s_json_digest(x) != k8s_json_digest(y), "%s vs %s", differ[i][0],
                              differ[i][1]);
                cJSON_Delete(x);
                cJSON_Delete(y);
        }
}
END_TEST

/* The watch echo of our own status PATCH (k8s_pod_is_status_echo): only
 * resourceVersion, managedFields and the status moved, and the status is
 * one we sent (its keyed lists in the apiserver's order, the nulls we sent
 * dropped); anything else is an update. */
START_TEST(test_pod_status_echo)
{
        cJSON *older = parse("{\"phase\":\"Pending\",\"containerStatuses\":[{\"name\":\"a\","
                             "\"state\":{\"waiting\":{\"reason\":\"ContainerCreating\"}}}]}");
        cJSON *own = parse(
            "{\"phase\":\"Pending\",\"conditions\":[{\"type\":\"Initialized\",\"status\":"
            "\"True\",\"lastProbeTime\":null},{\"type\":\"PodScheduled\",\"status\":\"True\"}],"
            "\"containerStatuses\":[{\"name\":\"a\",\"state\":{\"waiting\":{\"reason\":"
            "\"CreateContainerConfigError\",\"message\":\"m\"}}},{\"name\":\"b\",\"state\":"
            "{\"waiting\":{\"reason\":\"ContainerCreating\"}}}]}");
        uint64_t sent[2] = {k8s_json_digest(older), k8s_json_digest(own)};
        cJSON *old = parse("{\"metadata\":{\"name\":\"p\",\"resourceVersion\":\"5\",\"labels\":"
                           "{\"app\":\"x\"}},\"spec\":{\"containers\":[{\"name\":\"a\"},{\"name\":"
                           "\"b\"}]},\"status\":{\"phase\":\"Pending\",\"conditions\":[{\"type\":"
                           "\"PodScheduled\",\"status\":\"True\"}]}}");
        const char *echo_s =
            "{\"metadata\":{\"name\":\"p\",\"resourceVersion\":\"6\",\"labels\":{\"app\":\"x\"},"
            "\"managedFields\":[{\"manager\":\"cubelet\"}]},\"spec\":{\"containers\":[{\"name\":"
            "\"a\"},{\"name\":\"b\"}]},\"status\":{\"conditions\":[{\"type\":\"PodScheduled\","
            "\"status\":\"True\"},{\"type\":\"Initialized\",\"status\":\"True\"}],\"phase\":"
            "\"Pending\",\"containerStatuses\":[{\"name\":\"b\",\"state\":{\"waiting\":{\"reason\":"
            "\"ContainerCreating\"}}},{\"name\":\"a\",\"state\":{\"waiting\":{\"reason\":"
            "\"CreateContainerConfigError\",\"message\":\"m\"}}}]}}";
        cJSON *echo = parse(echo_s);
        ck_assert(k8s_pod_is_status_echo(old, echo, sent, 2));
        ck_assert(!k8s_pod_is_status_echo(old, echo, sent, 1)); /* not one we sent */
        /* the echo of the status before, coming after ours */
        cJSON *prev_echo = parse(echo_s);
        cJSON_ReplaceItemInObject(prev_echo, "status", cJSON_Duplicate(older, true));
        ck_assert(k8s_pod_is_status_echo(old, prev_echo, sent, 2));
        cJSON_Delete(prev_echo);
        /* the status written by someone else: a field, a readiness gate's condition */
        cJSON *other = parse(echo_s);
        cJSON *st = cJSON_GetObjectItem(other, "status");
        cJSON_ReplaceItemInObject(st, "phase", cJSON_CreateString("Running"));
        ck_assert(!k8s_pod_is_status_echo(old, other, sent, 2));
        cJSON_Delete(other);
        other = parse(echo_s);
        st = cJSON_GetObjectItem(other, "status");
        cJSON_AddItemToArray(cJSON_GetObjectItem(st, "conditions"),
                             parse("{\"type\":\"example.com/gate\",\"status\":\"True\"}"));
        ck_assert(!k8s_pod_is_status_echo(old, other, sent, 2));
        cJSON_Delete(other);
        /* our status, and a label, an annotation, the deletion, the spec changed */
        static const char *const edits[][3] = {
            {"metadata", "labels", "{\"app\":\"y\"}"},
            {"metadata", "annotations", "{\"poke\":\"1\"}"},
            {"metadata", "deletionTimestamp", "\"2026-12-03T08:00:00Z\""},
            {"metadata", "deletionGracePeriodSeconds", "1"},
            {"spec", "activeDeadlineSeconds", "5"},
        };
        for (size_t i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
                other = parse(echo_s);
                cJSON *into = cJSON_GetObjectItem(other, edits[i][0]);
                if (cJSON_HasObjectItem(into, edits[i][1]))
                        cJSON_ReplaceItemInObject(into, edits[i][1], parse(edits[i][2]));
                else
                        cJSON_AddItemToObject(into, edits[i][1], parse(edits[i][2]));
                ck_assert_msg(!k8s_pod_is_status_echo(old, other, sent, 2), "%s.%s", edits[i][0],
                              edits[i][1]);
                cJSON_Delete(other);
        }
        /* nothing sent yet, no object, no status in the event */
        ck_assert(!k8s_pod_is_status_echo(old, echo, sent, 0));
        ck_assert(!k8s_pod_is_status_echo(NULL, echo, sent, 2));
        ck_assert(!k8s_pod_is_status_echo(old, NULL, sent, 2));
        cJSON_DeleteItemFromObject(echo, "status");
        ck_assert(!k8s_pod_is_status_echo(old, echo, sent, 2));
        cJSON_Delete(echo);
        cJSON_Delete(old);
        cJSON_Delete(own);
        cJSON_Delete(older);
}
END_TEST

START_TEST(test_diff_bounded)
{
        /* 1000 fields changed: K8S_DIFF_MAX_OPS ops and a truncation mark. */
        cJSON *a = cJSON_CreateObject(), *b = cJSON_CreateObject();
        for (int i = 0; i < 1000; i++) {
                char k[16];
                snprintf(k, sizeof(k), "f%d", i);
                cJSON_AddNumberToObject(a, k, i);
                cJSON_AddNumberToObject(b, k, i + 1);
        }
        cJSON *d = k8s_json_diff(a, b, NULL);
        ck_assert_int_eq(cJSON_GetArraySize(d), K8S_DIFF_MAX_OPS + 1);
        cJSON *last = cJSON_GetArrayItem(d, K8S_DIFF_MAX_OPS);
        ck_assert_str_eq(cJSON_GetObjectItem(last, "op")->valuestring, "truncated");
        ck_assert_int_eq(cJSON_GetObjectItem(last, "omitted")->valueint, 1000 - K8S_DIFF_MAX_OPS);
        cJSON_Delete(d);
        cJSON_Delete(a);
        cJSON_Delete(b);
        /* Very deep documents are compared as whole values below the limit. */
        cJSON *x = cJSON_CreateNumber(1), *y = cJSON_CreateNumber(2);
        for (int i = 0; i < 100; i++) {
                cJSON *ox = cJSON_CreateObject(), *oy = cJSON_CreateObject();
                cJSON_AddItemToObject(ox, "k", x);
                cJSON_AddItemToObject(oy, "k", y);
                x = ox;
                y = oy;
        }
        d = k8s_json_diff(x, y, NULL);
        ck_assert_int_eq(cJSON_GetArraySize(d), 1);
        cJSON_Delete(d);
        cJSON_Delete(x);
        cJSON_Delete(y);
}
END_TEST

/* ---- trace ---- */

static const char *timelines_doc =
    "{\"pods\":[{\"namespace\":\"default\",\"name\":\"web\",\"uid\":\"u1\",\"gone\":true,"
    "\"timeline\":["
    "{\"step\":\"workerStarted\",\"offsetUs\":0,\"time\":\"2026-12-01T23:00:00.000100Z\"},"
    "{\"step\":\"phase:Pending\",\"offsetUs\":50,\"time\":\"2026-12-01T23:00:00.000150Z\"},"
    "{\"step\":\"sandboxReady\",\"offsetUs\":20000,\"time\":\"2026-12-01T23:00:00.020100Z\"},"
    "{\"step\":\"imageReady:main\",\"offsetUs\":21000,\"time\":\"2026-12-01T23:00:00.021100Z\"},"
    "{\"step\":\"containerStarted:main\",\"offsetUs\":40000,\"time\":\"2026-12-01T23:00:00."
    "040100Z\"},"
    "{\"step\":\"phase:Running\",\"offsetUs\":41000,\"time\":\"2026-12-01T23:00:00.041100Z\"},"
    "{\"step\":\"statusDelivered:Running\",\"offsetUs\":45000,\"time\":\"2026-12-01T23:00:00."
    "045100Z\"},"
    "{\"step\":\"containerExited:main\",\"offsetUs\":140000,\"time\":\"2026-12-01T23:00:00."
    "140100Z\"},"
    "{\"step\":\"containerStarted:main\",\"offsetUs\":150000,\"time\":\"2026-12-01T23:00:00."
    "150100Z\"},"
    "{\"step\":\"deleted\",\"offsetUs\":300000,\"time\":\"2026-12-01T23:00:00.300100Z\"}],"
    "\"history\":[{\"kind\":\"status\",\"offsetUs\":42000,\"diff\":[]},"
    "{\"kind\":\"event\",\"reason\":\"Started\",\"offsetUs\":40500}]},"
    /* a second pod starting 1 s later, still running, with a wall-clock
     * step backwards (its offsets are monotonic: they count) */
    "{\"namespace\":\"default\",\"name\":\"db\",\"uid\":\"u2\",\"timeline\":["
    "{\"step\":\"workerStarted\",\"offsetUs\":0,\"time\":\"2026-12-01T23:00:01.000100Z\"},"
    "{\"step\":\"phase:Pending\",\"offsetUs\":10,\"time\":\"2026-12-01T22:59:00.000000Z\"},"
    "{\"step\":\"containerStarted:db\",\"offsetUs\":5000,\"time\":\"2026-12-01T23:00:01.005100Z\"}]"
    "},"
    /* a rejected pod: no steps, no track */
    "{\"namespace\":\"default\",\"name\":\"rejected\",\"uid\":\"u3\",\"timeline\":[],"
    "\"history\":[]}]}";

static const cJSON *find_ev(const cJSON *evs, int pid, int tid, const char *ph, const char *name,
                            int nth)
{
        const cJSON *e;
        cJSON_ArrayForEach(e, evs)
        {
                if (cJSON_GetObjectItem(e, "pid")->valueint == pid &&
                    cJSON_GetObjectItem(e, "tid")->valueint == tid &&
                    strcmp(cJSON_GetObjectItem(e, "ph")->valuestring, ph) == 0 &&
                    strcmp(cJSON_GetObjectItem(e, "name")->valuestring, name) == 0 && nth-- == 0)
                        return e;
        }
        return NULL;
}

static double evnum(const cJSON *e, const char *k)
{
        ck_assert_ptr_nonnull(e);
        const cJSON *v = cJSON_GetObjectItem(e, k);
        ck_assert_msg(cJSON_IsNumber(v), "event has no %s", k);
        return v->valuedouble;
}

START_TEST(test_trace_format)
{
        cJSON *doc = parse(timelines_doc);
        int64_t now = ag_trace_parse_time("2026-12-01T23:00:02.000100Z");
        ck_assert_int_eq(now, 1796166002000100LL);
        cJSON *tr = ag_trace_from_timelines(doc, now);
        ck_assert_ptr_nonnull(tr);
        /* Valid JSON, as a file: printed and parsed back. */
        char *text = cJSON_PrintUnformatted(tr);
        cJSON *back = cJSON_Parse(text);
        ck_assert_msg(back != NULL, "the trace does not parse: %.200s", text);
        const cJSON *evs = cJSON_GetObjectItem(back, "traceEvents");
        ck_assert(cJSON_IsArray(evs));
        ck_assert_str_eq(cJSON_GetObjectItem(back, "displayTimeUnit")->valuestring, "ms");
        ck_assert_str_eq(
            cJSON_GetObjectItem(cJSON_GetObjectItem(back, "otherData"), "baseTime")->valuestring,
            "2026-12-01T23:00:00.000100Z");

        /* Every event has the fields its phase needs; per track (pid, tid)
         * the timestamps never go backwards. */
        double last[8][8];
        for (int i = 0; i < 8; i++)
                for (int j = 0; j < 8; j++)
                        last[i][j] = -1;
        const cJSON *e;
        cJSON_ArrayForEach(e, evs)
        {
                const char *ph = cJSON_GetObjectItem(e, "ph")->valuestring;
                int pid = (int)evnum(e, "pid"), tid = (int)evnum(e, "tid");
                ck_assert(pid >= 1 && pid <= 2 && tid >= 1 && tid < 8);
                ck_assert(cJSON_IsString(cJSON_GetObjectItem(e, "name")));
                if (strcmp(ph, "M") == 0)
                        continue;
                ck_assert_msg(strcmp(ph, "X") == 0 || strcmp(ph, "i") == 0, "phase %s", ph);
                double ts = evnum(e, "ts");
                ck_assert_msg(ts >= last[pid][tid], "pid %d tid %d: ts %f after %f", pid, tid, ts,
                              last[pid][tid]);
                last[pid][tid] = ts;
                if (strcmp(ph, "X") == 0)
                        ck_assert(evnum(e, "dur") >= 0);
                else
                        ck_assert_str_eq(cJSON_GetObjectItem(e, "s")->valuestring, "t");
        }
        /* Every step is an instant on its track: pod steps on tid 1,
         * container steps on the container's. */
        const cJSON *tl = cJSON_GetObjectItem(
            cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "pods"), 0), "timeline");
        const cJSON *s;
        int counts[64] = {0}, k = 0;
        cJSON_ArrayForEach(s, tl)
        {
                const char *step = cJSON_GetObjectItem(s, "step")->valuestring;
                int tid = ag_trace_step_container(step, NULL, 0) ? 2 : 1;
                int nth = 0;
                for (int j = 0; j < k; j++)
                        if (strcmp(
                                cJSON_GetObjectItem(cJSON_GetArrayItem(tl, j), "step")->valuestring,
                                step) == 0)
                                nth++;
                const cJSON *ev = find_ev(evs, 1, tid, "i", step, nth);
                ck_assert_msg(ev != NULL, "step %s (#%d) missing on tid %d", step, nth, tid);
                ck_assert_int_eq((int64_t)evnum(ev, "ts"),
                                 (int64_t)cJSON_GetObjectItem(s, "offsetUs")->valuedouble);
                counts[k++]++;
        }
        ck_assert_int_eq(k, 10);
        /* Names: the pod's process, its container's thread. */
        const cJSON *m = find_ev(evs, 1, 1, "M", "process_name", 0);
        ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(m, "args"), "name")->valuestring,
                         "default/web");
        m = find_ev(evs, 1, 2, "M", "thread_name", 0);
        ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(m, "args"), "name")->valuestring,
                         "container main");
        /* Phases are spans: Pending from 50 to 41000, Running to the last
         * step (the pod is gone). */
        const cJSON *x = find_ev(evs, 1, 1, "X", "Pending", 0);
        ck_assert_int_eq((int)evnum(x, "ts"), 50);
        ck_assert_int_eq((int)evnum(x, "dur"), 41000 - 50);
        x = find_ev(evs, 1, 1, "X", "Running", 0);
        ck_assert_int_eq((int)evnum(x, "ts"), 41000);
        ck_assert_int_eq((int)evnum(x, "dur"), 300000 - 41000);
        /* The container ran twice (a restart): two spans, restart 0 and 1. */
        x = find_ev(evs, 1, 2, "X", "running", 0);
        ck_assert_int_eq((int)evnum(x, "ts"), 40000);
        ck_assert_int_eq((int)evnum(x, "dur"), 100000);
        x = find_ev(evs, 1, 2, "X", "running", 1);
        ck_assert_int_eq((int)evnum(x, "ts"), 150000);
        ck_assert_int_eq((int)evnum(x, "dur"), 150000);
        ck_assert_int_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(x, "args"), "restart")->valueint,
                         1);
        /* History entries are instants with the entry as args. */
        x = find_ev(evs, 1, 1, "i", "event Started", 0);
        ck_assert_int_eq((int)evnum(x, "ts"), 40500);
        ck_assert_ptr_nonnull(find_ev(evs, 1, 1, "i", "status", 0));
        /* The second pod: placed 1 s later by its first step's wall time,
         * its steps by offset despite the wall clock going back; still
         * running: its spans end at now. */
        x = find_ev(evs, 2, 1, "i", "phase:Pending", 0);
        ck_assert_int_eq((int)evnum(x, "ts"), 1000000 + 10);
        x = find_ev(evs, 2, 2, "X", "running", 0);
        ck_assert_int_eq((int)evnum(x, "ts"), 1005000);
        ck_assert_int_eq((int)evnum(x, "dur"), 2000000 - 1005000);
        /* The rejected pod (no steps) has no track. */
        ck_assert_ptr_null(find_ev(evs, 3, 1, "M", "process_name", 0));
        free(text);
        cJSON_Delete(back);
        cJSON_Delete(tr);
        cJSON_Delete(doc);
}
END_TEST

START_TEST(test_trace_parse_time)
{
        ck_assert_int_eq(ag_trace_parse_time("1970-01-01T00:00:01Z"), 1000000);
        ck_assert_int_eq(ag_trace_parse_time("1970-01-01T00:00:01.5Z"), 1500000);
        ck_assert_int_eq(ag_trace_parse_time("1970-01-01T00:00:01.1234567Z"), 1123456);
        ck_assert_int_eq(ag_trace_parse_time("1970-01-01T00:00:01"), -1);
        ck_assert_int_eq(ag_trace_parse_time("1970-01-01T00:00:01.Z"), -1);
        ck_assert_int_eq(ag_trace_parse_time("yesterday"), -1);
        ck_assert_int_eq(ag_trace_parse_time(NULL), -1);
        char name[32];
        ck_assert(ag_trace_step_container("imageReady:web", name, sizeof(name)));
        ck_assert_str_eq(name, "web");
        ck_assert(!ag_trace_step_container("phase:Running", name, sizeof(name)));
        ck_assert(!ag_trace_step_container("statusDelivered:Failed", name, sizeof(name)));
        ck_assert(!ag_trace_step_container("sandboxReady", name, sizeof(name)));
}
END_TEST

/* ---- the per-pod history ---- */

struct sunk {
        int pods, steps, entries;
        char last[4096];
};

static void sink(const char *event, const cJSON *data, void *ctx)
{
        struct sunk *s = ctx;
        if (strcmp(event, "pod") == 0)
                s->pods++;
        else if (strcmp(event, "step") == 0)
                s->steps++;
        else if (strcmp(event, "entry") == 0)
                s->entries++;
        char *t = cJSON_PrintUnformatted(data);
        snprintf(s->last, sizeof(s->last), "%s %s", event, t);
        free(t);
}

static const cJSON *pod_of(const cJSON *doc, const char *uid)
{
        const cJSON *p;
        cJSON_ArrayForEach(
            p,
            cJSON_GetObjectItem(doc, "pods")) if (strcmp(cJSON_GetObjectItem(p, "uid")->valuestring,
                                                         uid) == 0) return p;
        return NULL;
}

START_TEST(test_history)
{
        struct ag_podhist *h = ag_podhist_new();
        struct sunk s = {0};
        ag_podhist_set_sink(h, sink, &s);
        ag_podhist_pod(h, "u1", "default", "web");
        ag_podhist_step(h, "u1", "workerStarted", 0);
        ag_podhist_step(h, "u1", "phase:Pending", 30);
        ck_assert_int_eq(s.pods, 1);
        ck_assert_int_eq(s.steps, 2);
        ck_assert_ptr_nonnull(strstr(s.last, "\"step\":\"phase:Pending\",\"offsetUs\":30"));
        /* recorded late with an earlier stamp (the sandbox's steps): in
         * time order all the same */
        ag_podhist_step(h, "u1", "statusDelivered:Pending", 50);
        ag_podhist_step(h, "u1", "sandboxNamespaces", 40);
        ck_assert_int_eq(s.steps, 4);
        /* Statuses: the first a diff against nothing, then only what changed,
         * a resend said so; the answer recorded. */
        ag_podhist_status_sent(h, "u1",
                               "{\"metadata\":{\"uid\":\"u1\"},\"status\":{\"phase\":\"Pending\","
                               "\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}]}}");
        ag_podhist_status_answer(h, "u1", true, 200);
        ag_podhist_status_sent(h, "u1",
                               "{\"metadata\":{\"uid\":\"u1\"},\"status\":{\"phase\":\"Running\","
                               "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}");
        ag_podhist_status_sent(h, "u1",
                               "{\"metadata\":{\"uid\":\"u1\"},\"status\":{\"phase\":\"Running\","
                               "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}");
        ag_podhist_spec(h, "u1", "Pod", cJSON_Parse("[]")); /* empty: dropped */
        ag_podhist_event(h, "u1", "Normal", "Started", "Started container main",
                         "spec.containers{main}");
        cJSON *node0 = parse("{\"spec\":{}}");
        ag_podhist_node(h, "node-a", node0);
        cJSON_Delete(node0);
        cJSON *node = parse("{\"spec\":{\"taints\":[{\"key\":\"k\",\"effect\":\"NoExecute\"}]}}");
        ag_podhist_node(h, "node-a", node);
        cJSON_Delete(node);
        ck_assert_int_eq(s.entries, 6);
        cJSON *doc = ag_podhist_json(h);
        const cJSON *p = pod_of(doc, "u1");
        ck_assert_ptr_nonnull(p);
        const cJSON *steps = cJSON_GetObjectItem(p, "timeline");
        ck_assert_int_eq(cJSON_GetArraySize(steps), 4);
        static const char *const order[] = {"workerStarted", "phase:Pending", "sandboxNamespaces",
                                            "statusDelivered:Pending"};
        static const double offs[] = {0, 30, 40, 50};
        for (int i = 0; i < 4; i++) {
                const cJSON *st = cJSON_GetArrayItem(steps, i);
                ck_assert_str_eq(cJSON_GetObjectItem(st, "step")->valuestring, order[i]);
                ck_assert_double_eq(cJSON_GetObjectItem(st, "offsetUs")->valuedouble, offs[i]);
        }
        const cJSON *hist = cJSON_GetObjectItem(p, "history");
        ck_assert_int_eq(cJSON_GetArraySize(hist), 6);
        char *d0 = lines(cJSON_GetObjectItem(cJSON_GetArrayItem(hist, 0), "diff"));
        ck_assert_str_eq(d0, "add status.phase \"Pending\"\nadd status.conditions "
                             "[{\"type\":\"Ready\",\"status\":\"False\"}]\n");
        free(d0);
        ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(hist, 1), "kind")->valuestring,
                         "statusAck");
        char *d2 = lines(cJSON_GetObjectItem(cJSON_GetArrayItem(hist, 2), "diff"));
        ck_assert_str_eq(d2, "change status.phase \"Pending\" \"Running\"\n"
                             "change status.conditions[type=Ready].status \"False\" \"True\"\n");
        free(d2);
        ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(hist, 3), "resent")));
        ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(hist, 4), "reason")->valuestring,
                         "Started");
        const cJSON *spec = cJSON_GetArrayItem(hist, 5);
        ck_assert_str_eq(cJSON_GetObjectItem(spec, "object")->valuestring, "Node/node-a");
        char *d5 = lines(cJSON_GetObjectItem(spec, "diff"));
        ck_assert_str_eq(d5, "add spec.taints [{\"key\":\"k\",\"effect\":\"NoExecute\"}]\n");
        free(d5);
        /* Entries carry time, timeUs and offsetUs after the first step. */
        ck_assert(cJSON_IsString(cJSON_GetObjectItem(spec, "time")));
        ck_assert(cJSON_GetObjectItem(spec, "offsetUs")->valuedouble >= 30);
        ck_assert(cJSON_GetObjectItem(spec, "timeUs")->valuedouble > 1.7e15);
        cJSON_Delete(doc);

        /* Bounded: the last AG_PODHIST_ENTRIES entries, the rest counted. */
        for (int i = 0; i < AG_PODHIST_ENTRIES + 10; i++)
                ag_podhist_event(h, "u1", "Normal", "Pulled", "again", NULL);
        doc = ag_podhist_json(h);
        p = pod_of(doc, "u1");
        ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(p, "history")), AG_PODHIST_ENTRIES);
        ck_assert_int_eq(cJSON_GetObjectItem(p, "dropped")->valueint, 6 + 10);
        cJSON_Delete(doc);

        /* Gone pods are kept, marked, listed after live ones, up to
         * AG_PODHIST_GONE; the oldest gone ones go first. */
        ag_podhist_gone(h, "u1");
        for (int i = 0; i < AG_PODHIST_GONE + 3; i++) {
                char uid[16];
                snprintf(uid, sizeof(uid), "g%d", i);
                ag_podhist_pod(h, uid, "default", uid);
                ag_podhist_gone(h, uid);
        }
        ag_podhist_pod(h, "live", "default", "live");
        doc = ag_podhist_json(h);
        ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(doc, "pods")), AG_PODHIST_GONE + 1);
        ck_assert_ptr_null(pod_of(doc, "u1"));
        ck_assert_ptr_null(pod_of(doc, "g2"));
        ck_assert_ptr_nonnull(pod_of(doc, "g3"));
        const cJSON *first = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "pods"), 0);
        ck_assert_str_eq(cJSON_GetObjectItem(first, "uid")->valuestring, "live");
        ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(pod_of(doc, "g3"), "gone")));
        cJSON_Delete(doc);
        /* Unknown uids are ignored. */
        ag_podhist_step(h, "nope", "x", 1);
        ag_podhist_status_sent(h, "nope", "{}");
        ag_podhist_free(h);
}
END_TEST

/* A pod without a worker (rejected at admission): its steps at absolute
 * monotonic times, the first one offset 0; 0 is now. */
START_TEST(test_history_steps_at)
{
        struct ag_podhist *h = ag_podhist_new();
        struct sunk s = {0};
        ag_podhist_set_sink(h, sink, &s);
        ag_podhist_pod(h, "r1", "default", "rejected");
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t now = (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
        ag_podhist_step_at(h, "r1", "watched", now - 2500);
        ag_podhist_step_at(h, "r1", "rejected", now - 500);
        ag_podhist_step_at(h, "r1", "phase:Failed", 0);
        ck_assert_int_eq(s.steps, 3);
        cJSON *doc = ag_podhist_json(h);
        const cJSON *tl = cJSON_GetObjectItem(pod_of(doc, "r1"), "timeline");
        ck_assert_int_eq(cJSON_GetArraySize(tl), 3);
        ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(tl, 0), "step")->valuestring,
                         "watched");
        ck_assert_double_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(tl, 0), "offsetUs")->valuedouble,
                            0);
        ck_assert_double_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(tl, 1), "offsetUs")->valuedouble,
                            2000);
        double failed = cJSON_GetObjectItem(cJSON_GetArrayItem(tl, 2), "offsetUs")->valuedouble;
        ck_assert(failed >= 2500 && failed < 2500 + 1e6);
        /* wall times follow the monotonic ones; each step reads both clocks
         * once, so a preemption between the reads moves it (the CI run of
         * session 7 saw more than 1 µs under load): 2000 ± 500 µs */
        double w0 = cJSON_GetObjectItem(cJSON_GetArrayItem(tl, 0), "timeUs")->valuedouble;
        double w1 = cJSON_GetObjectItem(cJSON_GetArrayItem(tl, 1), "timeUs")->valuedouble;
        ck_assert_msg(w1 - w0 > 1500 && w1 - w0 < 2500, "wall %.0f µs apart, want ~2000", w1 - w0);
        cJSON_Delete(doc);
        ag_podhist_step_at(h, "nope", "x", 0);
        ag_podhist_free(h);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("timeline");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_diff_fields);
        tcase_add_test(tc, test_diff_conditions_by_type);
        tcase_add_test(tc, test_diff_container_statuses_by_name);
        tcase_add_test(tc, test_pod_and_node_spec_diff);
        tcase_add_test(tc, test_json_digest);
        tcase_add_test(tc, test_pod_status_echo);
        tcase_add_test(tc, test_diff_bounded);
        tcase_add_test(tc, test_trace_format);
        tcase_add_test(tc, test_trace_parse_time);
        tcase_add_test(tc, test_history);
        tcase_add_test(tc, test_history_steps_at);
        suite_add_tcase(s, tc);
        return th_run(s) == 0 ? 0 : 1;
}
