/* SPDX-License-Identifier: Apache-2.0 */
/* Decoded pod + observations -> the v1.PodStatus JSON. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "agent/pods/statusgen.h"
#include "lib/cleanup.h"

#include "helpers.h"

static struct k8s_pod *pod_from(const char *json)
{
        _cleanup_cjson_ cJSON *j = cJSON_Parse(json);
        ck_assert_msg(j != NULL, "bad test JSON");
        struct k8s_pod *p = NULL;
        struct cb_error err = {0};
        ck_assert_msg(k8s_pod_from_json(j, &p, &err) == 0, "decode: %s", err.msg);
        return p;
}

static const char *str_at(const cJSON *o, const char *path)
{
        /* "a.b.0.c" */
        char buf[256];
        snprintf(buf, sizeof(buf), "%s", path);
        const cJSON *cur = o;
        for (char *tok = strtok(buf, "."); tok && cur; tok = strtok(NULL, ".")) {
                if (cJSON_IsArray(cur))
                        cur = cJSON_GetArrayItem(cur, atoi(tok));
                else
                        cur = cJSON_GetObjectItemCaseSensitive(cur, tok);
        }
        if (cJSON_IsString(cur))
                return cur->valuestring;
        if (cJSON_IsBool(cur))
                return cJSON_IsTrue(cur) ? "true" : "false";
        if (cJSON_IsNumber(cur)) {
                static char num[32];
                snprintf(num, sizeof(num), "%g", cur->valuedouble);
                return num;
        }
        return cur ? "<non-scalar>" : "<missing>";
}

#define expect(o, path, want)                                                                      \
        do {                                                                                       \
                const char *got_ = str_at((o), (path));                                            \
                ck_assert_msg(strcmp(got_, (want)) == 0, "%s = %s, want %s", (path), got_,         \
                              (want));                                                             \
        } while (0)

static const char *POD =
    "{\"metadata\":{\"name\":\"web\",\"namespace\":\"shop\",\"uid\":\"u-1\"},"
    "\"spec\":{\"initContainers\":[{\"name\":\"init\",\"image\":\"busybox:1\"}],"
    "\"containers\":[{\"name\":\"zeta\",\"image\":\"busybox:1\",\"readinessProbe\":"
    "{\"exec\":{\"command\":[\"true\"]}},\"resources\":{\"limits\":{\"cpu\":\"1\",\"memory\":"
    "\"64Mi\"}}},{\"name\":\"alpha\",\"image\":\"busybox:1\",\"resources\":{\"limits\":"
    "{\"cpu\":\"1\",\"memory\":\"64Mi\"}}}]},"
    "\"status\":{\"phase\":\"Pending\",\"conditions\":[{\"type\":\"example.com/gate\","
    "\"status\":\"True\",\"lastTransitionTime\":\"2026-11-29T10:00:00Z\"}]}}";

static const char *HOST_IPS[] = {"192.168.1.20"};
static const char *POD_IPS[] = {"10.88.0.7"};

START_TEST(test_running_pod)
{
        struct k8s_pod *p = pod_from(POD);
        struct ag_container_obs init[1] = {{
            .known = true,
            .container_id = "cubelet://aaa",
            .image_id = "docker.io/library/busybox@sha256:1111",
            .state = {.kind = ST_STATE_TERMINATED,
                      .exit_code = 0,
                      .reason = "Completed",
                      .started_at = 1000,
                      .finished_at = 1001,
                      .container_id = "cubelet://aaa"},
        }};
        struct ag_container_obs regular[2] = {
            {.known = true,
             .container_id = "cubelet://zzz",
             .state = {.kind = ST_STATE_RUNNING, .started_at = 1002},
             .readiness_succeeded = false},
            {.known = true,
             .container_id = "cubelet://bbb",
             .state = {.kind = ST_STATE_RUNNING, .started_at = 1002},
             .restart_count = 2,
             .last_state = {.kind = ST_STATE_TERMINATED,
                            .exit_code = 137,
                            .reason = "OOMKilled",
                            .finished_at = 900}},
        };
        struct ag_pod_obs obs = {
            .init_containers = init,
            .containers = regular,
            .sandbox_ready = true,
            .pod_ips = POD_IPS,
            .n_pod_ips = 1,
            .host_ips = HOST_IPS,
            .n_host_ips = 1,
            .start_time = 999,
        };
        _cleanup_cjson_ cJSON *st = ag_pod_status_json(p, &obs, 2000);
        ck_assert_ptr_nonnull(st);
        expect(st, "phase", "Running");
        expect(st, "podIP", "10.88.0.7");
        expect(st, "podIPs.0.ip", "10.88.0.7");
        expect(st, "hostIP", "192.168.1.20");
        expect(st, "startTime", "1970-01-01T00:16:39Z");
        /* The init container has no resources: BestEffort + Guaranteed = Burstable. */
        expect(st, "qosClass", "Burstable");
        /* The foreign condition first, kept as it was. */
        expect(st, "conditions.0.type", "example.com/gate");
        expect(st, "conditions.0.lastTransitionTime", "2026-11-29T10:00:00Z");
        expect(st, "conditions.1.type", "PodReadyToStartContainers");
        expect(st, "conditions.2.type", "Initialized");
        expect(st, "conditions.2.status", "True");
        expect(st, "conditions.3.type", "Ready");
        expect(st, "conditions.3.status", "False");
        expect(st, "conditions.3.reason", "ContainersNotReady");
        expect(st, "conditions.3.message", "containers with unready status: [zeta]");
        /* Regular statuses sorted by name. */
        expect(st, "containerStatuses.0.name", "alpha");
        expect(st, "containerStatuses.0.restartCount", "2");
        expect(st, "containerStatuses.0.lastState.terminated.reason", "OOMKilled");
        expect(st, "containerStatuses.0.ready", "true");
        expect(st, "containerStatuses.1.name", "zeta");
        expect(st, "containerStatuses.1.ready", "false");
        expect(st, "initContainerStatuses.0.state.terminated.reason", "Completed");
        expect(st, "initContainerStatuses.0.imageID", "docker.io/library/busybox@sha256:1111");

        /* The readiness probe passes: Ready. */
        regular[0].readiness_succeeded = true;
        cJSON_Delete(st);
        st = ag_pod_status_json(p, &obs, 2000);
        expect(st, "conditions.3.status", "True");

        /* Wrapped as a status patch with the uid precondition. */
        cJSON *body = ag_status_patch_body(p, cJSON_Duplicate(st, true));
        expect(body, "metadata.uid", "u-1");
        expect(body, "status.phase", "Running");
        cJSON_Delete(body);
        k8s_pod_free(p);
}
END_TEST

START_TEST(test_pending_defaults_and_waiting_reasons)
{
        struct k8s_pod *p = pod_from(POD);
        struct ag_container_obs init[1] = {{
            .state = {.kind = ST_STATE_WAITING, .reason = "ErrImagePull", .message = "pull failed"},
        }};
        struct ag_pod_obs obs = {.init_containers = init, .host_ips = HOST_IPS, .n_host_ips = 1};
        _cleanup_cjson_ cJSON *st = ag_pod_status_json(p, &obs, 2000);
        expect(st, "phase", "Pending");
        expect(st, "initContainerStatuses.0.state.waiting.reason", "ErrImagePull");
        expect(st, "containerStatuses.0.state.waiting.reason", "PodInitializing");
        expect(st, "podIP", "<missing>");
        k8s_pod_free(p);
}
END_TEST

START_TEST(test_rejected_and_forced)
{
        struct k8s_pod *p = pod_from(POD);
        struct ag_pod_obs obs = {
            .rejected = true,
            .reason = "OutOfcpu",
            .message = "Pod was rejected: Node didn't have enough resource: cpu, requested: "
                       "1000, used: 1500, capacity: 2000",
            .start_time = 1500,
        };
        _cleanup_cjson_ cJSON *st = ag_pod_status_json(p, &obs, 2000);
        expect(st, "phase", "Failed");
        expect(st, "reason", "OutOfcpu");
        expect(st, "message",
               "Pod was rejected: Node didn't have enough resource: cpu, "
               "requested: 1000, used: 1500, capacity: 2000");
        expect(st, "qosClass", "Burstable");
        expect(st, "startTime", "1970-01-01T00:25:00Z");
        expect(st, "containerStatuses", "<missing>");
        expect(st, "conditions", "<missing>");
        ck_assert_int_eq(ag_pod_phase(p, &obs), ST_PHASE_FAILED);

        /* activeDeadlineSeconds: forced Failed with the kubelet's reason. */
        struct ag_container_obs regular[2] = {
            {.known = true, .state = {.kind = ST_STATE_RUNNING, .started_at = 5}},
            {.known = true, .state = {.kind = ST_STATE_RUNNING, .started_at = 5}},
        };
        struct ag_pod_obs dl = {
            .containers = regular,
            .forced_phase = ST_PHASE_FAILED,
            .reason = "DeadlineExceeded",
            .message = "Pod was active on the node longer than the specified deadline",
        };
        cJSON_Delete(st);
        st = ag_pod_status_json(p, &dl, 2000);
        expect(st, "phase", "Failed");
        expect(st, "reason", "DeadlineExceeded");
        k8s_pod_free(p);
}
END_TEST

START_TEST(test_terminal_phase_kept)
{
        /* The API already says Succeeded: a later observation cannot revive it. */
        struct k8s_pod *p =
            pod_from("{\"metadata\":{\"name\":\"job\",\"uid\":\"u-2\"},\"spec\":{\"restartPolicy\":"
                     "\"Never\",\"containers\":[{\"name\":\"c\",\"image\":\"busybox:1\"}]},"
                     "\"status\":{\"phase\":\"Succeeded\"}}");
        struct ag_container_obs c[1] = {
            {.known = true, .state = {.kind = ST_STATE_RUNNING, .started_at = 5}}};
        struct ag_pod_obs obs = {.containers = c};
        ck_assert_int_eq(ag_pod_phase(p, &obs), ST_PHASE_SUCCEEDED);
        _cleanup_cjson_ cJSON *st = ag_pod_status_json(p, &obs, 10);
        expect(st, "phase", "Succeeded");
        k8s_pod_free(p);
}
END_TEST

START_TEST(test_extra_condition_replaces)
{
        struct k8s_pod *p =
            pod_from("{\"metadata\":{\"name\":\"job\",\"uid\":\"u-3\"},\"spec\":{\"containers\":"
                     "[{\"name\":\"c\",\"image\":\"busybox:1\"}]},\"status\":{\"conditions\":"
                     "[{\"type\":\"DisruptionTarget\",\"status\":\"False\"}]}}");
        struct st_condition dt = {.type = "DisruptionTarget",
                                  .status = "True",
                                  .reason = "DeletionByTaintManager",
                                  .message = "Taint manager: deleting due to NoExecute taint"};
        struct ag_pod_obs obs = {.extra_conditions = &dt, .n_extra_conditions = 1};
        _cleanup_cjson_ cJSON *st = ag_pod_status_json(p, &obs, 100);
        expect(st, "conditions.0.type", "DisruptionTarget");
        expect(st, "conditions.0.status", "True");
        expect(st, "conditions.0.reason", "DeletionByTaintManager");
        expect(st, "conditions.0.lastTransitionTime", "1970-01-01T00:01:40Z");
        k8s_pod_free(p);
}
END_TEST

START_TEST(test_terminal_held_while_running)
{
        /* Evicted (forced Failed) while its container still runs: reported
         * Running with the container running; Failed once it terminated. */
        struct k8s_pod *p =
            pod_from("{\"metadata\":{\"name\":\"hog\",\"uid\":\"u-4\"},\"spec\":{\"restartPolicy\":"
                     "\"Never\",\"containers\":[{\"name\":\"c\",\"image\":\"busybox:1\"}]},"
                     "\"status\":{\"phase\":\"Running\"}}");
        struct ag_container_obs c[1] = {
            {.known = true, .state = {.kind = ST_STATE_RUNNING, .started_at = 5}}};
        struct ag_pod_obs obs = {.containers = c,
                                 .is_terminal = true,
                                 .forced_phase = ST_PHASE_FAILED,
                                 .reason = "Evicted",
                                 .message = "The node was low on resource: memory. "};
        _cleanup_cjson_ cJSON *st = ag_pod_status_json(p, &obs, 10);
        expect(st, "phase", "Failed");
        ck_assert(ag_pod_status_hold_terminal(st, "Running", NULL, NULL, true));
        expect(st, "phase", "Running");
        expect(st, "reason", "<missing>");
        expect(st, "message", "<missing>");
        ck_assert(
            cJSON_GetObjectItem(
                cJSON_GetObjectItem(
                    cJSON_GetArrayItem(cJSON_GetObjectItem(st, "containerStatuses"), 0), "state"),
                "running") != NULL);
        /* The old reason and message go with the old phase. */
        cJSON_Delete(st);
        st = ag_pod_status_json(p, &obs, 10);
        ck_assert(ag_pod_status_hold_terminal(st, "Pending", "R", "M", true));
        expect(st, "phase", "Pending");
        expect(st, "reason", "R");
        expect(st, "message", "M");
        /* No old phase at all: Pending. */
        cJSON_Delete(st);
        st = ag_pod_status_json(p, &obs, 10);
        ck_assert(ag_pod_status_hold_terminal(st, NULL, NULL, NULL, true));
        expect(st, "phase", "Pending");
        /* Stopped: terminal with the verdict. */
        c[0].state = (struct st_container_state){
            .kind = ST_STATE_TERMINATED, .exit_code = 137, .started_at = 5, .finished_at = 9};
        cJSON_Delete(st);
        st = ag_pod_status_json(p, &obs, 10);
        ck_assert(!ag_pod_status_hold_terminal(st, "Running", NULL, NULL, false));
        expect(st, "phase", "Failed");
        expect(st, "reason", "Evicted");
        expect(st, "containerStatuses.0.state.terminated.exitCode", "137");
        /* Already terminal before: nothing to hold (a terminal phase never moves). */
        ck_assert(!ag_pod_status_hold_terminal(st, "Failed", NULL, NULL, true));
        ck_assert(!ag_pod_status_hold_terminal(st, "Succeeded", NULL, NULL, true));
        expect(st, "phase", "Failed");
        /* A non-terminal status is never touched. */
        cJSON *run = cJSON_Parse("{\"phase\":\"Running\",\"reason\":\"x\"}");
        ck_assert(!ag_pod_status_hold_terminal(run, "Pending", NULL, NULL, true));
        expect(run, "reason", "x");
        cJSON_Delete(run);
        k8s_pod_free(p);
}
END_TEST

static const char *cond_time(const cJSON *st, const char *type)
{
        const cJSON *c;
        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(st, "conditions"))
        {
                if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "type")),
                           type) == 0)
                        return cJSON_GetStringValue(
                            cJSON_GetObjectItemCaseSensitive(c, "lastTransitionTime"));
        }
        return "<missing>";
}

/* The kubelet's status manager keeps a condition's lastTransitionTime from
 * its own last status, not from the API's copy (one update behind): with
 * the API's, every echo of an older status flipped the times back. */
START_TEST(test_transition_times_from_own_status)
{
        struct k8s_pod *p = pod_from(POD); /* the API status has no kubelet condition yet */
        struct ag_pod_obs obs = {.host_ips = HOST_IPS, .n_host_ips = 1};
        _cleanup_cjson_ cJSON *first = ag_pod_status_json(p, &obs, 1000);
        ck_assert_str_eq(cond_time(first, "Ready"), "1970-01-01T00:16:40Z");
        /* the same observations a second later, the API still lagging */
        obs.own_status = first;
        _cleanup_cjson_ cJSON *second = ag_pod_status_json(p, &obs, 2000);
        static const char *const types[] = {"PodReadyToStartContainers", "Initialized", "Ready",
                                            "ContainersReady", "PodScheduled"};
        for (size_t i = 0; i < 5; i++)
                ck_assert_msg(strcmp(cond_time(second, types[i]), "1970-01-01T00:16:40Z") == 0,
                              "%s: %s", types[i], cond_time(second, types[i]));
        /* a condition that flips moves; the others keep their time */
        obs.own_status = second;
        obs.sandbox_ready = true;
        _cleanup_cjson_ cJSON *third = ag_pod_status_json(p, &obs, 3000);
        ck_assert_str_eq(cond_time(third, "PodReadyToStartContainers"), "1970-01-01T00:50:00Z");
        ck_assert_str_eq(cond_time(third, "Ready"), "1970-01-01T00:16:40Z");
        /* without our own status the API's copy is all there is: now */
        obs.own_status = NULL;
        obs.sandbox_ready = false;
        _cleanup_cjson_ cJSON *fresh = ag_pod_status_json(p, &obs, 3000);
        ck_assert_str_eq(cond_time(fresh, "Ready"), "1970-01-01T00:50:00Z");
        k8s_pod_free(p);
}
END_TEST

#define FX(rel) CUBELET_FIXTURES "/" rel

/* The observation of a fixture container status: known to the runtime,
 * in its state. */
static struct ag_container_obs obs_of(const cJSON *cs)
{
        const cJSON *state = cJSON_GetObjectItemCaseSensitive(cs, "state");
        struct ag_container_obs o = {.known = true};
        if (cJSON_GetObjectItemCaseSensitive(state, "running") != NULL)
                o.state.kind = ST_STATE_RUNNING;
        else if (cJSON_GetObjectItemCaseSensitive(state, "terminated") != NULL)
                o.state.kind = ST_STATE_TERMINATED;
        else
                o.state.kind = ST_STATE_WAITING;
        o.state.started_at = 1000;
        o.state.finished_at = 1001;
        /* the identity the runtime reports (CRI ContainerStatus.User) */
        const cJSON *l =
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(cs, "user"), "linux");
        if (l != NULL) {
                static uint32_t pool[1024];
                static size_t used;
                const cJSON *g = cJSON_GetObjectItemCaseSensitive(l, "supplementalGroups"), *it;
                o.has_user = true;
                o.uid = (uint32_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(l, "uid"));
                o.gid = (uint32_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(l, "gid"));
                o.groups = &pool[used];
                cJSON_ArrayForEach(it, g)
                {
                        ck_assert_uint_lt(used, 1024);
                        pool[used++] = (uint32_t)cJSON_GetNumberValue(it);
                        o.n_groups++;
                }
        }
        return o;
}

static const cJSON *status_named(const cJSON *status, const char *key, const char *name)
{
        const cJSON *it;
        cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(status, key))
        {
                const char *n = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "name"));
                if (n != NULL && strcmp(n, name) == 0)
                        return it;
        }
        return NULL;
}

/* One field of a computed container status against the fixture's: both
 * absent, or equal. */
static void expect_same_field(const cJSON *got, const cJSON *want, const char *field,
                              const char *who)
{
        const cJSON *g = cJSON_GetObjectItemCaseSensitive(got, field);
        const cJSON *w = cJSON_GetObjectItemCaseSensitive(want, field);
        _cleanup_free_ char *gs = g ? cJSON_PrintUnformatted(g) : NULL;
        _cleanup_free_ char *ws = w ? cJSON_PrintUnformatted(w) : NULL;
        ck_assert_msg((g == NULL) == (w == NULL) && (g == NULL || cJSON_Compare(g, w, true)),
                      "%s %s: got %s, want %s", who, field, gs ? gs : "<absent>",
                      ws ? ws : "<absent>");
}

/* Every pod of the real v1.35 cluster whose containers the runtime has:
 * resources, allocatedResources and volumeMounts as its kubelet reported
 * them (the fixture's own status as the previous one). */
START_TEST(test_real_v135_resources)
{
        cJSON *list = NULL;
        struct cb_error err = {0};
        ck_assert_msg(k8s_parse_file(FX("real-cluster/podlist-v1.35-minikube-all-namespaces.yaml"),
                                     &list, &err) == 0,
                      "%s", err.msg);
        int checked = 0, running = 0, terminated = 0, with_limits = 0;
        const cJSON *it;
        cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(list, "items"))
        {
                const cJSON *status = cJSON_GetObjectItemCaseSensitive(it, "status");
                if (cJSON_GetArraySize(
                        cJSON_GetObjectItemCaseSensitive(status, "containerStatuses")) == 0)
                        continue;
                struct k8s_pod *p = NULL;
                ck_assert_msg(k8s_pod_from_json(it, &p, &err) == 0, "%s", err.msg);
                struct ag_container_obs *cs = calloc(p->spec.n_containers + 1, sizeof(*cs));
                ck_assert_ptr_nonnull(cs);
                for (size_t i = 0; i < p->spec.n_containers; i++) {
                        const cJSON *want =
                            status_named(status, "containerStatuses", p->spec.containers[i].name);
                        ck_assert_ptr_nonnull(want);
                        cs[i] = obs_of(want);
                }
                struct ag_pod_obs obs = {.containers = cs, .own_status = status};
                _cleanup_cjson_ cJSON *got = ag_pod_status_json(p, &obs, 2000);
                ck_assert_ptr_nonnull(got);
                for (size_t i = 0; i < p->spec.n_containers; i++) {
                        const char *name = p->spec.containers[i].name;
                        const cJSON *w = status_named(status, "containerStatuses", name);
                        const cJSON *g = status_named(got, "containerStatuses", name);
                        ck_assert_ptr_nonnull(g);
                        expect_same_field(g, w, "resources", p->meta.name);
                        expect_same_field(g, w, "allocatedResources", p->meta.name);
                        expect_same_field(g, w, "volumeMounts", p->meta.name);
                        expect_same_field(g, w, "user", p->meta.name);
                        ck_assert_ptr_nonnull(cJSON_GetObjectItemCaseSensitive(g, "user"));
                        checked++;
                        running += cs[i].state.kind == ST_STATE_RUNNING;
                        terminated += cs[i].state.kind == ST_STATE_TERMINATED;
                        with_limits += p->spec.containers[i].resources.limits.n > 0;
                }
                /* pod-level status.resources/allocatedResources need
                 * InPlacePodLevelResourcesVerticalScaling (alpha, off): the
                 * Deployment with spec.resources has none */
                ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(got, "resources"));
                ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(got, "allocatedResources"));
                free(cs);
                k8s_pod_free(p);
        }
        ck_assert_int_eq(checked, 24);
        ck_assert_int_ge(running, 15);
        ck_assert_int_ge(terminated, 6);
        ck_assert_int_ge(with_limits, 8);
        cJSON_Delete(list);
}
END_TEST

static const char *RES_POD =
    "{\"metadata\":{\"name\":\"r\",\"namespace\":\"d\",\"uid\":\"u-r\"},"
    "\"spec\":{\"initContainers\":[{\"name\":\"setup\",\"image\":\"busybox:1\","
    "\"resources\":{\"requests\":{\"cpu\":\"0.1\",\"memory\":\"2048k\"}}}],"
    "\"containers\":[{\"name\":\"a\",\"image\":\"busybox:1\",\"volumeMounts\":[{\"name\":"
    "\"data\",\"mountPath\":\"/data\"},{\"name\":\"cfg\",\"mountPath\":\"/cfg\",\"readOnly\":"
    "true}],\"resources\":{\"requests\":{\"cpu\":\"5m\",\"memory\":\"2048k\","
    "\"ephemeral-storage\":\"1Gi\"},\"limits\":{\"cpu\":\"1500m\",\"memory\":\"1e9\","
    "\"ephemeral-storage\":\"2Gi\"}}},"
    "{\"name\":\"b\",\"image\":\"busybox:1\",\"resources\":{\"requests\":{\"memory\":\"64Mi\"},"
    "\"limits\":{\"cpu\":\"5m\"}}},{\"name\":\"c\",\"image\":\"busybox:1\"}],"
    "\"volumes\":[{\"name\":\"data\",\"emptyDir\":{}},{\"name\":\"cfg\",\"emptyDir\":{}}]}}";

/* The runtime's values for running containers, the allocation for the
 * others, canonical texts as the apiserver keeps them. */
START_TEST(test_container_resources_rules)
{
        struct k8s_pod *p = pod_from(RES_POD);
        struct ag_container_obs init[1] = {
            {.known = true, .state = {.kind = ST_STATE_TERMINATED, .reason = "Completed"}}};
        struct ag_container_obs regular[3] = {
            {.known = true, .state = {.kind = ST_STATE_RUNNING, .started_at = 1000}},
            {.known = true, .state = {.kind = ST_STATE_RUNNING, .started_at = 1000}},
            {.known = true, .state = {.kind = ST_STATE_RUNNING, .started_at = 1000}},
        };
        struct ag_pod_obs obs = {.init_containers = init, .containers = regular};
        _cleanup_cjson_ cJSON *st = ag_pod_status_json(p, &obs, 2000);
        ck_assert_ptr_nonnull(st);
        /* a completed init container: the allocation, canonical */
        expect(st, "initContainerStatuses.0.resources.requests.cpu", "100m");
        expect(st, "initContainerStatuses.0.resources.requests.memory", "2048k");
        expect(st, "initContainerStatuses.0.allocatedResources.cpu", "100m");
        /* a: cpu request 5m is 5 shares, back to 5m; the 1500m limit from
         * quota/period; memory limit 1e9 bytes (not a multiple of 1024)
         * as the apiserver keeps the kubelet's "1000000000": 1G; the memory
         * request and ephemeral-storage are the allocation */
        expect(st, "containerStatuses.0.name", "a");
        expect(st, "containerStatuses.0.resources.requests.cpu", "5m");
        expect(st, "containerStatuses.0.resources.requests.memory", "2048k");
        expect(st, "containerStatuses.0.resources.requests.ephemeral-storage", "1Gi");
        expect(st, "containerStatuses.0.resources.limits.cpu", "1500m");
        expect(st, "containerStatuses.0.resources.limits.memory", "1G");
        expect(st, "containerStatuses.0.resources.limits.ephemeral-storage", "2Gi");
        expect(st, "containerStatuses.0.allocatedResources.cpu", "5m");
        expect(st, "containerStatuses.0.allocatedResources.memory", "2048k");
        expect(st, "containerStatuses.0.allocatedResources.ephemeral-storage", "1Gi");
        /* a running container never reported before keeps no volumeMounts
         * (they come from the previous status) */
        expect(st, "containerStatuses.0.volumeMounts", "<missing>");
        /* b: a 5m cpu limit is a 10m quota, at the minimum: the 5m stays;
         * its shares come from the limit (5), back to 5m: a cpu request the
         * spec does not have */
        expect(st, "containerStatuses.1.resources.limits.cpu", "5m");
        expect(st, "containerStatuses.1.resources.requests.cpu", "5m");
        expect(st, "containerStatuses.1.resources.requests.memory", "64Mi");
        expect(st, "containerStatuses.1.allocatedResources.memory", "64Mi");
        expect(st, "containerStatuses.1.allocatedResources.cpu", "<missing>");
        /* c: BestEffort: resources {} and no allocatedResources */
        expect(st, "containerStatuses.2.resources", "<non-scalar>");
        ck_assert_int_eq(
            cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(
                cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(st, "containerStatuses"), 2),
                "resources")),
            0);
        expect(st, "containerStatuses.2.allocatedResources", "<missing>");

        /* a exited: the allocation as it is ("1e9" stays) */
        regular[0].state = (struct st_container_state){.kind = ST_STATE_TERMINATED, .exit_code = 1};
        _cleanup_cjson_ cJSON *ex = ag_pod_status_json(p, &obs, 3000);
        expect(ex, "containerStatuses.0.resources.limits.memory", "1e9");
        expect(ex, "containerStatuses.0.resources.limits.cpu", "1500m");

        /* never created: neither field; the spec's volumeMounts */
        struct ag_pod_obs none = {0};
        _cleanup_cjson_ cJSON *pend = ag_pod_status_json(p, &none, 1000);
        expect(pend, "containerStatuses.0.resources", "<missing>");
        expect(pend, "containerStatuses.0.allocatedResources", "<missing>");
        expect(pend, "containerStatuses.0.user", "<missing>");
        expect(pend, "initContainerStatuses.0.resources", "<missing>");
        expect(pend, "containerStatuses.0.volumeMounts.0.name", "data");
        expect(pend, "containerStatuses.0.volumeMounts.0.mountPath", "/data");
        expect(pend, "containerStatuses.0.volumeMounts.0.readOnly", "<missing>");
        expect(pend, "containerStatuses.0.volumeMounts.0.recursiveReadOnly", "<missing>");
        expect(pend, "containerStatuses.0.volumeMounts.1.readOnly", "true");
        expect(pend, "containerStatuses.0.volumeMounts.1.recursiveReadOnly", "Disabled");
        expect(pend, "containerStatuses.1.volumeMounts", "<missing>");
        /* then created: carried over from that previous status */
        regular[0].state = (struct st_container_state){.kind = ST_STATE_RUNNING, .started_at = 1};
        obs.own_status = pend;
        _cleanup_cjson_ cJSON *next = ag_pod_status_json(p, &obs, 4000);
        expect(next, "containerStatuses.0.volumeMounts.1.mountPath", "/cfg");
        expect(next, "containerStatuses.0.volumeMounts.1.recursiveReadOnly", "Disabled");
        k8s_pod_free(p);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("statusgen");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_running_pod);
        tcase_add_test(tc, test_pending_defaults_and_waiting_reasons);
        tcase_add_test(tc, test_rejected_and_forced);
        tcase_add_test(tc, test_terminal_phase_kept);
        tcase_add_test(tc, test_extra_condition_replaces);
        tcase_add_test(tc, test_terminal_held_while_running);
        tcase_add_test(tc, test_transition_times_from_own_status);
        tcase_add_test(tc, test_real_v135_resources);
        tcase_add_test(tc, test_container_resources_rules);
        suite_add_tcase(s, tc);
        return th_run(s) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
