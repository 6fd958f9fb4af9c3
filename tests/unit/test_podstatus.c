/* SPDX-License-Identifier: Apache-2.0 */
/* status/podstatus: phase, conditions, containerStatuses JSON, backoff. */
#include <check.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/cleanup.h"
#include "status/podstatus.h"

#include "helpers.h"

#define NOW    1800000000 /* 2027-01-15T08:00:00Z */
#define NOW_S  "2027-01-15T08:00:00Z"
#define T0     1700000000 /* 2023-11-14T22:13:20Z */
#define T0_S   "2023-11-14T22:13:20Z"
#define PREV   1799999000 /* 2027-01-15T07:43:20Z */
#define PREV_S "2027-01-15T07:43:20Z"

/* ---- container builders ------------------------------------------------------------------ */

#define NOSTAT(n)                                                                                  \
        {                                                                                          \
                .name = n, .image = "img"                                                          \
        }
#define RUN(n)                                                                                     \
        {                                                                                          \
                .name = n, .image = "img", .has_status = true, .state = {                          \
                        .kind = ST_STATE_RUNNING,                                                  \
                        .started_at = T0                                                           \
                }                                                                                  \
        }
/* running, but its startup probe has not succeeded yet */
#define RUN_UNSTARTED(n)                                                                           \
        {                                                                                          \
                .name = n, .image = "img", .has_status = true, .has_startup_probe = true,          \
                .state = {                                                                         \
                        .kind = ST_STATE_RUNNING,                                                  \
                        .started_at = T0                                                           \
                }                                                                                  \
        }
#define WAIT(n)                                                                                    \
        {                                                                                          \
                .name = n, .image = "img", .has_status = true, .state = {                          \
                        .kind = ST_STATE_WAITING,                                                  \
                        .reason = "ErrImagePull"                                                   \
                }                                                                                  \
        }
#define TERM(n, code)                                                                              \
        {                                                                                          \
                .name = n, .image = "img", .has_status = true, .state = {                          \
                        .kind = ST_STATE_TERMINATED,                                               \
                        .exit_code = code                                                          \
                }                                                                                  \
        }
/* waiting to restart after a termination with `code` */
#define CRASH(n, code)                                                                             \
        {                                                                                          \
                .name = n, .image = "img", .has_status = true, .restart_count = 1,                 \
                .state = {.kind = ST_STATE_WAITING, .reason = "CrashLoopBackOff"}, .last_state = { \
                        .kind = ST_STATE_TERMINATED,                                               \
                        .exit_code = code                                                          \
                }                                                                                  \
        }
#define SIDE(...)                                                                                  \
        {                                                                                          \
                .is_sidecar = true, __VA_ARGS__                                                    \
        }
#define S_RUN(n)                                                                                   \
        SIDE(.name = n, .image = "img", .has_status = true,                                        \
             .state = {.kind = ST_STATE_RUNNING, .started_at = T0})
#define S_RUN_UNSTARTED(n)                                                                         \
        SIDE(.name = n, .image = "img", .has_status = true, .has_startup_probe = true,             \
             .state = {.kind = ST_STATE_RUNNING, .started_at = T0})
#define S_NOSTAT(n) SIDE(.name = n, .image = "img")
#define S_TERM(n, c)                                                                               \
        SIDE(.name = n, .image = "img", .has_status = true,                                        \
             .state = {.kind = ST_STATE_TERMINATED, .exit_code = c})
#define S_CRASH(n, c)                                                                              \
        SIDE(.name = n, .image = "img", .has_status = true, .restart_count = 2,                    \
             .state = {.kind = ST_STATE_WAITING, .reason = "CrashLoopBackOff"},                    \
             .last_state = {.kind = ST_STATE_TERMINATED, .exit_code = c})

#define MAXC 4

struct pod_case {
        const char *name;
        enum st_restart_policy policy;
        bool terminal, is_static;
        enum st_phase cached, api;
        size_t n_init;
        struct st_container init[MAXC];
        size_t n;
        struct st_container ctr[MAXC];
        enum st_phase want;
};

static struct st_pod_input input_of(const struct pod_case *c)
{
        return (struct st_pod_input){
            .restart_policy = c->policy,
            .is_static = c->is_static,
            .is_terminal = c->terminal,
            .cached_phase = c->cached,
            .api_phase = c->api,
            .sandbox_ready = true,
            .init_containers = c->init,
            .n_init_containers = c->n_init,
            .containers = c->ctr,
            .n_containers = c->n,
        };
}

/* ---- phase -------------------------------------------------------------------------------- */

#define P_PENDING   ST_PHASE_PENDING
#define P_RUNNING   ST_PHASE_RUNNING
#define P_SUCCEEDED ST_PHASE_SUCCEEDED
#define P_FAILED    ST_PHASE_FAILED
#define ALWAYS      ST_RESTART_ALWAYS
#define ONFAILURE   ST_RESTART_ON_FAILURE
#define NEVER       ST_RESTART_NEVER

static const struct pod_case phase_cases[] = {
    {"no statuses yet", ALWAYS, .n = 2, .ctr = {NOSTAT("a"), NOSTAT("b")}, .want = P_PENDING},
    {"no containers at all", NEVER, .want = P_PENDING},
    {"image pull waiting", ALWAYS, .n = 1, .ctr = {WAIT("a")}, .want = P_PENDING},
    {"one running one waiting", ALWAYS, .n = 2, .ctr = {RUN("a"), WAIT("b")}, .want = P_PENDING},
    /* getPhase's "unknown" case: a container the runtime never saw next
     * to a running one keeps the pod Pending */
    {"one running one without status", ALWAYS, .n = 2, .ctr = {RUN("a"), NOSTAT("b")},
     .want = P_PENDING},
    {"all running", NEVER, .n = 2, .ctr = {RUN("a"), RUN("b")}, .want = P_RUNNING},
    {"init not started", ALWAYS, .n_init = 1, .init = {NOSTAT("i")}, .n = 1, .ctr = {NOSTAT("a")},
     .want = P_PENDING},
    {"init running", ALWAYS, .n_init = 1, .init = {RUN("i")}, .n = 1, .ctr = {NOSTAT("a")},
     .want = P_PENDING},
    {"init failed, Never", NEVER, .n_init = 1, .init = {TERM("i", 1)}, .n = 1, .ctr = {NOSTAT("a")},
     .want = P_FAILED},
    {"init crashlooping, Never", NEVER, .n_init = 1, .init = {CRASH("i", 2)}, .n = 1,
     .ctr = {NOSTAT("a")}, .want = P_FAILED},
    {"init rerunning after exit 0, Never", NEVER, .n_init = 1, .init = {CRASH("i", 0)}, .n = 1,
     .ctr = {NOSTAT("a")}, .want = P_PENDING},
    {"init failed, OnFailure", ONFAILURE, .n_init = 1, .init = {TERM("i", 1)}, .n = 1,
     .ctr = {NOSTAT("a")}, .want = P_PENDING},
    {"init crashlooping, Always", ALWAYS, .n_init = 1, .init = {CRASH("i", 1)}, .n = 1,
     .ctr = {NOSTAT("a")}, .want = P_PENDING},
    {"init done, second init running", NEVER, .n_init = 2, .init = {TERM("i", 0), RUN("j")}, .n = 1,
     .ctr = {NOSTAT("a")}, .want = P_PENDING},
    {"init done, main running", NEVER, .n_init = 1, .init = {TERM("i", 0)}, .n = 1,
     .ctr = {RUN("a")}, .want = P_RUNNING},
    {"init status lost but main running", ALWAYS, .n_init = 1, .init = {NOSTAT("i")}, .n = 1,
     .ctr = {RUN("a")}, .want = P_RUNNING},
    {"all succeeded, Never", NEVER, .n = 2, .ctr = {TERM("a", 0), TERM("b", 0)},
     .want = P_SUCCEEDED},
    {"all succeeded, OnFailure", ONFAILURE, .n = 2, .ctr = {TERM("a", 0), TERM("b", 0)},
     .want = P_SUCCEEDED},
    {"all succeeded, Always restarts", ALWAYS, .n = 1, .ctr = {TERM("a", 0)}, .want = P_RUNNING},
    {"one failed, Never", NEVER, .n = 2, .ctr = {TERM("a", 0), TERM("b", 1)}, .want = P_FAILED},
    {"one failed, OnFailure restarting", ONFAILURE, .n = 2, .ctr = {TERM("a", 0), TERM("b", 1)},
     .want = P_RUNNING},
    {"OnFailure crashloop after success", ONFAILURE, .n = 2, .ctr = {TERM("a", 0), CRASH("b", 1)},
     .want = P_RUNNING},
    {"Always, all stopped", ALWAYS, .n = 2, .ctr = {TERM("a", 1), CRASH("b", 137)},
     .want = P_RUNNING},
    {"crashloop next to a running one", ALWAYS, .n = 2, .ctr = {RUN("a"), CRASH("b", 1)},
     .want = P_RUNNING},
    {"terminated next to a waiting one", NEVER, .n = 2, .ctr = {TERM("a", 0), WAIT("b")},
     .want = P_PENDING},
    {"deleted pod, all exit 0, Always", ALWAYS, true, .n = 2, .ctr = {TERM("a", 0), TERM("b", 0)},
     .want = P_SUCCEEDED},
    {"deleted pod, SIGTERM exit, Always", ALWAYS, true, .n = 2,
     .ctr = {TERM("a", 0), TERM("b", 143)}, .want = P_FAILED},
    {"deleted pod, crashlooping", ALWAYS, true, .n = 1, .ctr = {CRASH("a", 0)}, .want = P_FAILED},
    {"deleted pod still running", ALWAYS, true, .n = 1, .ctr = {RUN("a")}, .want = P_RUNNING},
    {"deleted static pod is exempt", ALWAYS, true, true, .n = 1, .ctr = {TERM("a", 0)},
     .want = P_RUNNING},
    {"deleted static pod, Never", NEVER, true, true, .n = 1, .ctr = {TERM("a", 1)},
     .want = P_FAILED},
    /* sidecars */
    {"sidecar started, main running", NEVER, .n_init = 1, .init = {S_RUN("s")}, .n = 1,
     .ctr = {RUN("a")}, .want = P_RUNNING},
    {"sidecar not started yet", NEVER, .n_init = 1, .init = {S_RUN_UNSTARTED("s")}, .n = 1,
     .ctr = {NOSTAT("a")}, .want = P_PENDING},
    {"sidecar without status", NEVER, .n_init = 1, .init = {S_NOSTAT("s")}, .n = 1,
     .ctr = {NOSTAT("a")}, .want = P_PENDING},
    {"sidecar started, regular init running", NEVER, .n_init = 2, .init = {S_RUN("s"), RUN("i")},
     .n = 1, .ctr = {NOSTAT("a")}, .want = P_PENDING},
    {"sidecar restarting after main started", ALWAYS, .n_init = 1, .init = {S_RUN_UNSTARTED("s")},
     .n = 1, .ctr = {RUN("a")}, .want = P_RUNNING},
    {"sidecar waiting again after main started", ALWAYS, .n_init = 1, .init = {S_NOSTAT("s")},
     .n = 1, .ctr = {RUN("a")}, .want = P_PENDING},
    {"sidecar crashlooping, main running", NEVER, .n_init = 1, .init = {S_CRASH("s", 1)}, .n = 1,
     .ctr = {RUN("a")}, .want = P_RUNNING},
    {"sidecar failed with Never is not an init failure", NEVER, .n_init = 1,
     .init = {S_TERM("s", 1)}, .n = 1, .ctr = {TERM("a", 0)}, .want = P_SUCCEEDED},
    {"sidecar still running after main exited 0", NEVER, .n_init = 1, .init = {S_RUN("s")}, .n = 1,
     .ctr = {TERM("a", 0)}, .want = P_RUNNING},
    {"deleted pod, sidecar SIGTERMed, main exit 0", NEVER, true, .n_init = 1,
     .init = {S_TERM("s", 143)}, .n = 1, .ctr = {TERM("a", 0)}, .want = P_SUCCEEDED},
    /* a terminal phase never changes */
    {"cached Succeeded kept", ALWAYS, .cached = P_SUCCEEDED, .n = 1, .ctr = {RUN("a")},
     .want = P_SUCCEEDED},
    {"API Failed kept", ALWAYS, .api = P_FAILED, .n = 1, .ctr = {NOSTAT("a")}, .want = P_FAILED},
    {"API Failed beats cached Succeeded", ALWAYS, .cached = P_SUCCEEDED, .api = P_FAILED, .n = 1,
     .ctr = {RUN("a")}, .want = P_FAILED},
    {"API Succeeded beats computed Failed", NEVER, .api = P_SUCCEEDED, .n = 1,
     .ctr = {TERM("a", 1)}, .want = P_SUCCEEDED},
    {"computed terminal beats cached terminal", NEVER, .cached = P_FAILED, .n = 1,
     .ctr = {TERM("a", 0)}, .want = P_SUCCEEDED},
    {"non-terminal previous phase ignored", NEVER, .cached = P_RUNNING, .api = P_RUNNING, .n = 1,
     .ctr = {WAIT("a")}, .want = P_PENDING},
};

START_TEST(test_phase)
{
        const struct pod_case *c = &phase_cases[_i];
        struct st_pod_input in = input_of(c);
        enum st_phase got = st_compute_phase(&in);

        ck_assert_msg(got == c->want, "%s: got %s, want %s", c->name, st_phase_name(got),
                      st_phase_name(c->want));
}
END_TEST

START_TEST(test_phase_names)
{
        static const struct {
                enum st_phase p;
                const char *s;
        } t[] = {{ST_PHASE_PENDING, "Pending"},
                 {ST_PHASE_RUNNING, "Running"},
                 {ST_PHASE_SUCCEEDED, "Succeeded"},
                 {ST_PHASE_FAILED, "Failed"},
                 {ST_PHASE_UNKNOWN, "Unknown"}};
        for (size_t i = 0; i < CB_ARRAY_SIZE(t); i++) {
                ck_assert_str_eq(st_phase_name(t[i].p), t[i].s);
                ck_assert_int_eq(st_phase_from_name(t[i].s), t[i].p);
        }
        ck_assert_str_eq(st_phase_name(ST_PHASE_NONE), "");
        ck_assert_int_eq(st_phase_from_name(NULL), ST_PHASE_NONE);
        ck_assert_int_eq(st_phase_from_name("running"), ST_PHASE_NONE);
}
END_TEST

/* ---- JSON comparison ------------------------------------------------------------------- */

static void assert_json(cJSON *got, const char *want_text, const char *what)
{
        _cleanup_cjson_ cJSON *want = cJSON_Parse(want_text);
        _cleanup_free_ char *got_text = NULL;

        ck_assert_msg(want != NULL, "%s: bad expected JSON %s", what, want_text);
        ck_assert_msg(got != NULL, "%s: got NULL", what);
        got_text = cJSON_PrintUnformatted(got);
        ck_assert_msg(cJSON_Compare(got, want, true), "%s:\n got  %s\n want %s", what, got_text,
                      want_text);
}

/* ---- conditions ------------------------------------------------------------------------ */

#define COND(type, status, extra)                                                                  \
        "{\"type\":\"" type "\",\"status\":\"" status                                              \
        "\",\"lastProbeTime\":null,\"lastTransitionTime\":\"" NOW_S "\"" extra "}"

START_TEST(test_conditions_all_ready)
{
        struct pod_case pc = {.n = 2, .ctr = {RUN("web"), RUN("log")}};
        struct st_pod_input in = input_of(&pc);
        _cleanup_cjson_ cJSON *got = st_conditions_json(&in, st_compute_phase(&in), NOW);

        assert_json(got,
                    "[" COND("PodReadyToStartContainers", "True", "") "," COND(
                        "Initialized", "True",
                        "") "," COND("Ready", "True", "") "," COND("ContainersReady", "True",
                                                                   "") "," COND("PodSch"
                                                                                "eduled",
                                                                                "True", "") "]",
                    "all ready");
}
END_TEST

START_TEST(test_conditions_unready_and_sandbox)
{
        /* a sidecar counts in ContainersReady, after the init containers'
         * order and before the regular containers */
        struct pod_case pc = {
            .n_init = 1,
            .init = {SIDE(.name = "proxy", .image = "img", .has_status = true,
                          .has_readiness_probe = true,
                          .state = {.kind = ST_STATE_RUNNING, .started_at = T0})},
            .n = 3,
            .ctr = {RUN("web"), CRASH("db", 1), NOSTAT("cache")},
        };
        struct st_pod_input in = input_of(&pc);
        in.sandbox_ready = false;
        _cleanup_cjson_ cJSON *got = st_conditions_json(&in, ST_PHASE_RUNNING, NOW);

        assert_json(got,
                    "[" COND("PodReadyToStartContainers", "False", "") "," COND(
                        "Initialized", "True",
                        "") "," COND("Ready", "False",
                                     ",\"reason\":\"ContainersNotReady\",\"message\":"
                                     "\"containers with unready status: [proxy db "
                                     "cache]\"") "," COND("ContainersReady", "False",
                                                          ",\"reason\":\"ContainersNotReady\","
                                                          "\"message\":\"containers with "
                                                          "unready status: [proxy db "
                                                          "cache]\"") "," COND("PodScheduled",
                                                                               "True", "") "]",
                    "unready");
}
END_TEST

START_TEST(test_conditions_init_incomplete)
{
        struct pod_case pc = {
            .n_init = 3,
            .init = {TERM("setup", 0), S_RUN_UNSTARTED("mesh"), NOSTAT("migrate")},
            .n = 1,
            .ctr = {NOSTAT("web")},
        };
        struct st_pod_input in = input_of(&pc);
        _cleanup_cjson_ cJSON *got = st_conditions_json(&in, st_compute_phase(&in), NOW);

        assert_json(
            got,
            "[" COND("PodReadyToStartContainers", "True", "") "," COND(
                "Initialized", "False",
                ",\"reason\":\"ContainersNotInitialized\",\"message\":\"containers "
                "with incomplete status: [mesh migrate]\"") "," COND("Ready", "False",
                                                                     ",\"reason\":"
                                                                     "\"ContainersNotR"
                                                                     "eady\","
                                                                     "\"message\":"
                                                                     "\"containers "
                                                                     "with unready "
                                                                     "status: [mesh "
                                                                     "web]\"") "," COND("Containers"
                                                                                        "Ready",
                                                                                        "False",
                                                                                        ",\"reason"
                                                                                        "\":"
                                                                                        "\"Containe"
                                                                                        "rsNotReady"
                                                                                        "\","
                                                                                        "\"message"
                                                                                        "\":"
                                                                                        "\"containe"
                                                                                        "rs with "
                                                                                        "unready "
                                                                                        "status: "
                                                                                        "[mesh "
                                                                                        "web]\"") "," COND("PodScheduled",
                                                                                                           "True",
                                                                                                           "") "]",
            "init incomplete");

        /* once a regular container ran, Initialized stays True even while a
         * sidecar restarts */
        pc.ctr[0] = (struct st_container)RUN("web");
        in = input_of(&pc);
        _cleanup_cjson_ cJSON *again = st_conditions_json(&in, ST_PHASE_RUNNING, NOW);
        cJSON *init = cJSON_GetArrayItem(again, 1);
        ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(init, "type")), "Initialized");
        ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(init, "status")), "True");
        ck_assert_ptr_null(cJSON_GetObjectItem(init, "reason"));
}
END_TEST

START_TEST(test_conditions_terminal)
{
        struct pod_case pc = {.policy = NEVER, .n = 2, .ctr = {TERM("a", 0), TERM("b", 0)}};
        struct st_pod_input in = input_of(&pc);
        enum st_phase phase = st_compute_phase(&in);
        ck_assert_int_eq(phase, ST_PHASE_SUCCEEDED);
        _cleanup_cjson_ cJSON *ok = st_conditions_json(&in, phase, NOW);

        assert_json(
            ok,
            "[" COND("PodReadyToStartContainers", "True", "") "," COND(
                "Initialized", "True",
                ",\"reason\":\"PodCompleted\"") "," COND("Ready", "False",
                                                         ",\"reason\":"
                                                         "\"PodCompleted\"") "," COND("ContainersRe"
                                                                                      "ady",
                                                                                      "False",
                                                                                      ",\"reason\":"
                                                                                      "\"PodComplet"
                                                                                      "ed\"") "," COND("PodScheduled",
                                                                                                       "True",
                                                                                                       "") "]",
            "succeeded");

        /* Failed forces both readiness conditions False even with a
         * container still running and ready */
        struct pod_case fc = {.policy = NEVER, .n = 2, .ctr = {RUN("a"), TERM("b", 1)}};
        in = input_of(&fc);
        _cleanup_cjson_ cJSON *failed = st_conditions_json(&in, ST_PHASE_FAILED, NOW);
        assert_json(
            failed,
            "[" COND("PodReadyToStartContainers", "True", "") "," COND(
                "Initialized", "True",
                "") "," COND("Ready", "False",
                             ",\"reason\":\"PodFailed\"") "," COND("ContainersReady", "False",
                                                                   ",\"reason\":"
                                                                   "\"PodFailed\"") "," COND("PodSc"
                                                                                             "hedul"
                                                                                             "ed",
                                                                                             "True",
                                                                                             "") "]",
            "failed");
}
END_TEST

START_TEST(test_conditions_preserve_and_transition)
{
        static const struct st_condition prev[] = {
            {.type = "example.com/lb-ready",
             .status = "True",
             .reason = "Registered",
             .message = "in pool",
             .last_transition_time = T0,
             .last_probe_time = T0},
            {.type = "Ready",
             .status = "False",
             .reason = "ContainersNotReady",
             .last_transition_time = PREV},
            {.type = "PodScheduled", .status = "True", .last_transition_time = T0},
            {.type = "Initialized", .status = "True", .last_transition_time = PREV},
            {.type = "PodResizePending", .status = "True", .last_transition_time = T0},
            {.type = "DisruptionTarget",
             .status = "True",
             .reason = "TerminationByKubelet",
             .message = "Pod was terminated in response to imminent node shutdown.",
             .last_transition_time = PREV},
            {.type = "ContainersReady", .status = "True", .last_transition_time = PREV},
        };
        struct pod_case pc = {.n = 1, .ctr = {RUN("web")}};
        struct st_pod_input in = input_of(&pc);
        in.conditions = prev;
        in.n_conditions = CB_ARRAY_SIZE(prev);
        _cleanup_cjson_ cJSON *got = st_conditions_json(&in, ST_PHASE_RUNNING, NOW);

        /* foreign and DisruptionTarget first, in their order and untouched;
         * PodResizePending is the kubelet's and dropped; unchanged statuses
         * keep their time, Ready flipped to True and takes `now`;
         * PodReadyToStartContainers had no previous condition */
        assert_json(got,
                    "[{\"type\":\"example.com/lb-ready\",\"status\":\"True\",\"lastProbeTime\":"
                    "\"" T0_S "\",\"lastTransitionTime\":\"" T0_S "\",\"reason\":\"Registered\","
                    "\"message\":\"in pool\"},"
                    "{\"type\":\"DisruptionTarget\",\"status\":\"True\",\"lastProbeTime\":null,"
                    "\"lastTransitionTime\":\"" PREV_S "\",\"reason\":\"TerminationByKubelet\","
                    "\"message\":\"Pod was terminated in response to imminent node shutdown.\"},"
                    "{\"type\":\"PodReadyToStartContainers\",\"status\":\"True\","
                    "\"lastProbeTime\":null,\"lastTransitionTime\":\"" NOW_S "\"},"
                    "{\"type\":\"Initialized\",\"status\":\"True\",\"lastProbeTime\":null,"
                    "\"lastTransitionTime\":\"" PREV_S "\"},"
                    "{\"type\":\"Ready\",\"status\":\"True\",\"lastProbeTime\":null,"
                    "\"lastTransitionTime\":\"" NOW_S "\"},"
                    "{\"type\":\"ContainersReady\",\"status\":\"True\",\"lastProbeTime\":null,"
                    "\"lastTransitionTime\":\"" PREV_S "\"},"
                    "{\"type\":\"PodScheduled\",\"status\":\"True\",\"lastProbeTime\":null,"
                    "\"lastTransitionTime\":\"" T0_S "\"}]",
                    "preserve");
}
END_TEST

struct gate_case {
        const char *name;
        const char *gates[2];
        size_t n_gates;
        struct st_condition conds[2];
        size_t n_conds;
        bool containers_ready;
        const char *want_status, *want_reason, *want_message;
};

static const struct gate_case gate_cases[] = {
    {"gate missing",
     {"example.com/lb"},
     1,
     {{0}},
     0,
     true,
     "False",
     "ReadinessGatesNotReady",
     "corresponding condition of pod readiness gate \"example.com/lb\" does not exist."},
    {"gate False",
     {"example.com/lb"},
     1,
     {{.type = "example.com/lb", .status = "False"}},
     1,
     true,
     "False",
     "ReadinessGatesNotReady",
     "the status of pod readiness gate \"example.com/lb\" is not \"True\", but False"},
    {"two gates, both bad",
     {"a.io/x", "b.io/y"},
     2,
     {{.type = "b.io/y", .status = "Unknown"}},
     1,
     true,
     "False",
     "ReadinessGatesNotReady",
     "corresponding condition of pod readiness gate \"a.io/x\" does not exist., the status "
     "of pod readiness gate \"b.io/y\" is not \"True\", but Unknown"},
    {"gate True",
     {"example.com/lb"},
     1,
     {{.type = "example.com/lb", .status = "True"}},
     1,
     true,
     "True",
     NULL,
     NULL},
    {"gate on a generated condition",
     {"PodReadyToStartContainers"},
     1,
     {{0}},
     0,
     true,
     "True",
     NULL,
     NULL},
    /* gates are only consulted when the containers are ready */
    {"containers not ready hides gates",
     {"example.com/lb"},
     1,
     {{0}},
     0,
     false,
     "False",
     "ContainersNotReady",
     "containers with unready status: [web]"},
};

START_TEST(test_conditions_readiness_gates)
{
        const struct gate_case *g = &gate_cases[_i];
        struct pod_case pc = {.n = 1, .ctr = {RUN("web")}};
        if (!g->containers_ready)
                pc.ctr[0] = (struct st_container)WAIT("web");
        struct st_pod_input in = input_of(&pc);
        in.readiness_gates = g->gates;
        in.n_readiness_gates = g->n_gates;
        in.conditions = g->conds;
        in.n_conditions = g->n_conds;
        _cleanup_cjson_ cJSON *got = st_conditions_json(&in, st_compute_phase(&in), NOW);
        cJSON *ready = NULL, *item;

        ck_assert_ptr_nonnull(got);
        cJSON_ArrayForEach(item, got)
        {
                if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(item, "type")), "Ready") == 0)
                        ready = item;
        }
        ck_assert_msg(ready != NULL, "%s: no Ready condition", g->name);
        ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(ready, "status")),
                         g->want_status);
        const char *reason = cJSON_GetStringValue(cJSON_GetObjectItem(ready, "reason"));
        const char *message = cJSON_GetStringValue(cJSON_GetObjectItem(ready, "message"));
        if (g->want_reason == NULL) {
                ck_assert_msg(reason == NULL && message == NULL, "%s: unexpected reason", g->name);
        } else {
                ck_assert_str_eq(reason, g->want_reason);
                ck_assert_str_eq(message, g->want_message);
        }
        /* the gate's own condition is preserved ahead of the kubelet's */
        if (g->n_conds > 0)
                ck_assert_str_eq(
                    cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(got, 0), "type")),
                    g->conds[0].type);
}
END_TEST

/* ---- container statuses ---------------------------------------------------------------- */

struct cs_case {
        const char *name;
        bool init, has_init;
        size_t n;
        struct st_container c[3];
        const char *want;
};

static const struct cs_case cs_cases[] = {
    {"never seen, no init containers",
     false,
     false,
     1,
     {NOSTAT("web")},
     "[{\"name\":\"web\",\"state\":{\"waiting\":{\"reason\":\"ContainerCreating\"}},"
     "\"lastState\":{},\"ready\":false,\"restartCount\":0,\"image\":\"img\","
     "\"imageID\":\"\",\"started\":false}]"},
    {"never seen, pod with init containers",
     false,
     true,
     1,
     {NOSTAT("web")},
     "[{\"name\":\"web\",\"state\":{\"waiting\":{\"reason\":\"PodInitializing\"}},"
     "\"lastState\":{},\"ready\":false,\"restartCount\":0,\"image\":\"img\","
     "\"imageID\":\"\",\"started\":false}]"},
    {"init container never seen",
     true,
     true,
     1,
     {NOSTAT("setup")},
     "[{\"name\":\"setup\",\"state\":{\"waiting\":{\"reason\":\"PodInitializing\"}},"
     "\"lastState\":{},\"ready\":false,\"restartCount\":0,\"image\":\"img\","
     "\"imageID\":\"\",\"started\":false}]"},
    {"created, not running",
     false,
     false,
     1,
     {{.name = "web",
       .image = "img",
       .image_id = "docker.io/library/nginx@sha256:abc",
       .container_id = "cubelet://0123",
       .has_status = true}},
     "[{\"name\":\"web\",\"state\":{\"waiting\":{}},\"lastState\":{},\"ready\":false,"
     "\"restartCount\":0,\"image\":\"img\",\"imageID\":"
     "\"docker.io/library/nginx@sha256:abc\",\"containerID\":\"cubelet://0123\","
     "\"started\":false}]"},
    {"running without probes",
     false,
     false,
     1,
     {{.name = "web",
       .image = "nginx:1.27",
       .image_id = "docker.io/library/nginx@sha256:abc",
       .container_id = "cubelet://0123",
       .has_status = true,
       .state = {.kind = ST_STATE_RUNNING, .started_at = T0}}},
     "[{\"name\":\"web\",\"state\":{\"running\":{\"startedAt\":\"" T0_S "\"}},"
     "\"lastState\":{},\"ready\":true,\"restartCount\":0,\"image\":\"nginx:1.27\","
     "\"imageID\":\"docker.io/library/nginx@sha256:abc\",\"containerID\":"
     "\"cubelet://0123\",\"started\":true}]"},
    {"readiness probe pending",
     false,
     false,
     1,
     {{.name = "web",
       .image = "img",
       .has_status = true,
       .has_readiness_probe = true,
       .state = {.kind = ST_STATE_RUNNING, .started_at = T0}}},
     "[{\"name\":\"web\",\"state\":{\"running\":{\"startedAt\":\"" T0_S "\"}},"
     "\"lastState\":{},\"ready\":false,\"restartCount\":0,\"image\":\"img\","
     "\"imageID\":\"\",\"started\":true}]"},
    {"startup probe pending hides readiness",
     false,
     false,
     1,
     {{.name = "web",
       .image = "img",
       .has_status = true,
       .has_startup_probe = true,
       .has_readiness_probe = true,
       .readiness_succeeded = true,
       .state = {.kind = ST_STATE_RUNNING, .started_at = T0}}},
     "[{\"name\":\"web\",\"state\":{\"running\":{\"startedAt\":\"" T0_S "\"}},"
     "\"lastState\":{},\"ready\":false,\"restartCount\":0,\"image\":\"img\","
     "\"imageID\":\"\",\"started\":false}]"},
    {"both probes succeeded",
     false,
     false,
     1,
     {{.name = "web",
       .image = "img",
       .has_status = true,
       .has_startup_probe = true,
       .startup_succeeded = true,
       .has_readiness_probe = true,
       .readiness_succeeded = true,
       .state = {.kind = ST_STATE_RUNNING, .started_at = T0}}},
     "[{\"name\":\"web\",\"state\":{\"running\":{\"startedAt\":\"" T0_S "\"}},"
     "\"lastState\":{},\"ready\":true,\"restartCount\":0,\"image\":\"img\","
     "\"imageID\":\"\",\"started\":true}]"},
    {"init container completed",
     true,
     true,
     1,
     {{.name = "setup",
       .image = "busybox",
       .image_id = "docker.io/library/busybox@sha256:1",
       .container_id = "cubelet://aa",
       .has_status = true,
       .state = {.kind = ST_STATE_TERMINATED,
                 .exit_code = 0,
                 .reason = "Completed",
                 .started_at = T0,
                 .finished_at = T0 + 5,
                 .container_id = "cubelet://aa"}}},
     "[{\"name\":\"setup\",\"state\":{\"terminated\":{\"exitCode\":0,\"reason\":"
     "\"Completed\",\"startedAt\":\"" T0_S "\",\"finishedAt\":\"2023-11-14T22:13:25Z\","
     "\"containerID\":\"cubelet://aa\"}},\"lastState\":{},\"ready\":true,"
     "\"restartCount\":0,\"image\":\"busybox\",\"imageID\":"
     "\"docker.io/library/busybox@sha256:1\",\"containerID\":\"cubelet://aa\","
     "\"started\":false}]"},
    {"init container failed is not ready",
     true,
     true,
     1,
     {{.name = "setup",
       .image = "img",
       .has_status = true,
       .state = {.kind = ST_STATE_TERMINATED, .exit_code = 1, .reason = "Error"}}},
     "[{\"name\":\"setup\",\"state\":{\"terminated\":{\"exitCode\":1,\"reason\":\"Error\","
     "\"startedAt\":null,\"finishedAt\":null}},\"lastState\":{},\"ready\":false,"
     "\"restartCount\":0,\"image\":\"img\",\"imageID\":\"\",\"started\":false}]"},
    {"running sidecar is ready like a regular container",
     true,
     true,
     1,
     {S_RUN("mesh")},
     "[{\"name\":\"mesh\",\"state\":{\"running\":{\"startedAt\":\"" T0_S "\"}},"
     "\"lastState\":{},\"ready\":true,\"restartCount\":0,\"image\":\"img\","
     "\"imageID\":\"\",\"started\":true}]"},
    {"crashloop with last termination",
     false,
     false,
     1,
     {{.name = "web",
       .image = "img",
       .has_status = true,
       .restart_count = 3,
       .state = {.kind = ST_STATE_WAITING,
                 .reason = "CrashLoopBackOff",
                 .message = "back-off 40s restarting failed container=web "
                            "pod=p_ns(u)"},
       .last_state = {.kind = ST_STATE_TERMINATED,
                      .exit_code = 137,
                      .reason = "Error",
                      .started_at = T0,
                      .finished_at = T0 + 60,
                      .container_id = "cubelet://bb"}}},
     "[{\"name\":\"web\",\"state\":{\"waiting\":{\"reason\":\"CrashLoopBackOff\","
     "\"message\":\"back-off 40s restarting failed container=web pod=p_ns(u)\"}},"
     "\"lastState\":{\"terminated\":{\"exitCode\":137,\"reason\":\"Error\",\"startedAt\":"
     "\"" T0_S "\",\"finishedAt\":\"2023-11-14T22:14:20Z\",\"containerID\":"
     "\"cubelet://bb\"}},\"ready\":false,\"restartCount\":3,\"image\":\"img\","
     "\"imageID\":\"\",\"started\":false}]"},
    {"vanished container keeps its last state",
     false,
     false,
     1,
     {{.name = "web",
       .image = "img",
       .restart_count = 1,
       .last_state = {.kind = ST_STATE_TERMINATED,
                      .exit_code = 137,
                      .reason = "ContainerStatusUnknown",
                      .message = "The container could not be located when the pod was "
                                 "deleted.  The container used to be Running"}}},
     "[{\"name\":\"web\",\"state\":{\"waiting\":{\"reason\":\"ContainerCreating\"}},"
     "\"lastState\":{\"terminated\":{\"exitCode\":137,\"reason\":"
     "\"ContainerStatusUnknown\",\"message\":\"The container could not be located when "
     "the pod was deleted.  The container used to be Running\",\"startedAt\":null,"
     "\"finishedAt\":null}},\"ready\":false,\"restartCount\":1,\"image\":\"img\","
     "\"imageID\":\"\",\"started\":false}]"},
    {"signal shown only when set",
     false,
     false,
     1,
     {{.name = "web",
       .image = "img",
       .has_status = true,
       .state = {.kind = ST_STATE_TERMINATED, .exit_code = 143, .signal = 15, .reason = "Error"}}},
     "[{\"name\":\"web\",\"state\":{\"terminated\":{\"exitCode\":143,\"signal\":15,"
     "\"reason\":\"Error\",\"startedAt\":null,\"finishedAt\":null}},\"lastState\":{},"
     "\"ready\":false,\"restartCount\":0,\"image\":\"img\",\"imageID\":\"\","
     "\"started\":false}]"},
    {"regular statuses sorted by name",
     false,
     false,
     3,
     {NOSTAT("web"), NOSTAT("api"), NOSTAT("db")},
     "[{\"name\":\"api\",\"state\":{\"waiting\":{\"reason\":\"ContainerCreating\"}},"
     "\"lastState\":{},\"ready\":false,\"restartCount\":0,\"image\":\"img\","
     "\"imageID\":\"\",\"started\":false},"
     "{\"name\":\"db\",\"state\":{\"waiting\":{\"reason\":\"ContainerCreating\"}},"
     "\"lastState\":{},\"ready\":false,\"restartCount\":0,\"image\":\"img\","
     "\"imageID\":\"\",\"started\":false},"
     "{\"name\":\"web\",\"state\":{\"waiting\":{\"reason\":\"ContainerCreating\"}},"
     "\"lastState\":{},\"ready\":false,\"restartCount\":0,\"image\":\"img\","
     "\"imageID\":\"\",\"started\":false}]"},
    {"init statuses keep spec order",
     true,
     true,
     2,
     {NOSTAT("zz"), NOSTAT("aa")},
     "[{\"name\":\"zz\",\"state\":{\"waiting\":{\"reason\":\"PodInitializing\"}},"
     "\"lastState\":{},\"ready\":false,\"restartCount\":0,\"image\":\"img\","
     "\"imageID\":\"\",\"started\":false},"
     "{\"name\":\"aa\",\"state\":{\"waiting\":{\"reason\":\"PodInitializing\"}},"
     "\"lastState\":{},\"ready\":false,\"restartCount\":0,\"image\":\"img\","
     "\"imageID\":\"\",\"started\":false}]"},
    {"empty list", false, false, 0, {{0}}, "[]"},
};

START_TEST(test_container_statuses)
{
        const struct cs_case *c = &cs_cases[_i];
        _cleanup_cjson_ cJSON *got = st_container_statuses_json(c->c, c->n, c->init, c->has_init);

        assert_json(got, c->want, c->name);
}
END_TEST

START_TEST(test_container_status_field_order)
{
        /* the Go field order, so a diff against a real kubelet's output
         * lines up */
        struct st_container c = RUN("web");
        c.container_id = "cubelet://1";
        _cleanup_cjson_ cJSON *got = st_container_statuses_json(&c, 1, false, false);
        _cleanup_free_ char *text = cJSON_PrintUnformatted(got);

        ck_assert_str_eq(text, "[{\"name\":\"web\",\"state\":{\"running\":{\"startedAt\":\"" T0_S
                               "\"}},\"lastState\":{},\"ready\":true,\"restartCount\":0,"
                               "\"image\":\"img\",\"imageID\":\"\",\"containerID\":"
                               "\"cubelet://1\",\"started\":true}]");
}
END_TEST

/* ---- reasons, exit codes ----------------------------------------------------------------- */

START_TEST(test_terminated_reasons)
{
        static const struct {
                int32_t status, sig;
                bool oom;
                int32_t want_code;
                const char *want_reason;
        } t[] = {
            {0, 0, false, 0, "Completed"},        {1, 0, false, 1, "Error"},
            {0, SIGKILL, false, 137, "Error"},    {0, SIGTERM, false, 143, "Error"},
            {0, SIGKILL, true, 137, "OOMKilled"}, {2, 0, true, 2, "OOMKilled"},
            {0, 0, true, 0, "OOMKilled"},         {255, 0, false, 255, "Error"},
        };
        for (size_t i = 0; i < CB_ARRAY_SIZE(t); i++) {
                int32_t code = st_exit_code(t[i].status, t[i].sig);
                ck_assert_int_eq(code, t[i].want_code);
                ck_assert_str_eq(st_terminated_reason(code, t[i].oom), t[i].want_reason);
        }
}
END_TEST

/* ---- time and durations -------------------------------------------------------------------- */

START_TEST(test_time_format_parse)
{
        char buf[ST_TIME_MAX];
        int64_t t = 0;
        struct cb_error err = {0};

        ck_assert_int_eq(st_time_format(1795974459, buf, sizeof(buf), &err), 0);
        ck_assert_str_eq(buf, "2026-11-29T17:47:39Z");
        ck_assert_int_eq(st_time_format(INT64_MAX, buf, sizeof(buf), &err), -1);
        ck_assert_ptr_nonnull(strstr(err.msg, "RFC 3339"));

        static const struct {
                const char *s;
                int64_t want;
        } ok[] = {
            {"2026-11-29T17:47:39Z", 1795974459},
            {"2026-11-29T17:47:39.123456789Z", 1795974459},
            {"2026-11-29T19:47:39+02:00", 1795974459},
            {"2026-11-29T12:17:39-05:30", 1795974459},
            {"1970-01-01T00:00:00Z", 0},
            {"2024-02-29T00:00:00Z", 1709164800},
        };
        for (size_t i = 0; i < CB_ARRAY_SIZE(ok); i++) {
                ck_assert_msg(st_time_parse(ok[i].s, &t, &err) == 0, "%s: %s", ok[i].s, err.msg);
                ck_assert_msg(t == ok[i].want, "%s: got %lld", ok[i].s, (long long)t);
        }
        static const char *const bad[] = {
            "",
            "2026-11-29",
            "2026-11-29 17:47:39Z",
            "2026-11-29T17:47:39",
            "2026-02-30T00:00:00Z",
            "2026-13-01T00:00:00Z",
            "2026-11-29T24:00:00Z",
            "2026-11-29T17:47:60Z",
            "2026-11-29T17:47:39.Z",
            "2026-11-29T17:47:39Zjunk",
            "2026-11-29T17:47:39+0200",
        };
        for (size_t i = 0; i < CB_ARRAY_SIZE(bad); i++) {
                t = 42;
                ck_assert_msg(st_time_parse(bad[i], &t, &err) == -1, "accepted \"%s\"", bad[i]);
                ck_assert_int_eq(t, 42);
                ck_assert_ptr_nonnull(strstr(err.msg, "not RFC 3339"));
        }
        ck_assert_int_eq(st_time_parse(NULL, &t, &err), -1);
}
END_TEST

START_TEST(test_duration_format)
{
        static const struct {
                int64_t s;
                const char *want;
        } t[] = {
            {0, "0s"},        {1, "1s"},        {10, "10s"},   {59, "59s"},
            {60, "1m0s"},     {80, "1m20s"},    {300, "5m0s"}, {3599, "59m59s"},
            {3600, "1h0m0s"}, {3661, "1h1m1s"}, {-5, "-5s"},   {90061, "25h1m1s"},
        };
        char buf[ST_DURATION_MAX];
        for (size_t i = 0; i < CB_ARRAY_SIZE(t); i++) {
                st_duration_format(t[i].s, buf, sizeof(buf));
                ck_assert_str_eq(buf, t[i].want);
        }
}
END_TEST

/* ---- backoff ------------------------------------------------------------------------------- */

START_TEST(test_backoff_schedule)
{
        static const int64_t want_default[] = {0, 10, 20, 40, 80, 160, 300, 300, 300};
        for (size_t i = 0; i < CB_ARRAY_SIZE(want_default); i++)
                ck_assert_int_eq(
                    st_backoff_delay((int32_t)i, ST_BACKOFF_BASE_DEFAULT, ST_BACKOFF_CAP_DEFAULT),
                    want_default[i]);
        ck_assert_int_eq(st_backoff_delay(INT32_MAX, 10, 300), 300);
        ck_assert_int_eq(st_backoff_delay(-1, 10, 300), 0);

        /* ReduceDefaultCrashLoopBackOffDecay: 1 s doubling to 60 s */
        static const int64_t want_fast[] = {0, 1, 2, 4, 8, 16, 32, 60, 60};
        for (size_t i = 0; i < CB_ARRAY_SIZE(want_fast); i++)
                ck_assert_int_eq(st_backoff_delay((int32_t)i, 1, 60), want_fast[i]);

        /* a max below the initial delay makes the initial delay the max */
        ck_assert_int_eq(st_backoff_delay(1, 10, 5), 5);
        ck_assert_int_eq(st_backoff_delay(4, 10, 5), 5);
        /* not a power-of-two multiple */
        ck_assert_int_eq(st_backoff_delay(6, 10, 250), 250);
        ck_assert_int_eq(st_backoff_delay(5, 10, 250), 160);
}
END_TEST

static double fixed_random(void *ctx)
{
        return *(const double *)ctx;
}

/* A small LCG: the same sequence on every run. */
static double lcg_random(void *ctx)
{
        uint64_t *x = ctx;
        *x = *x * 6364136223846793005ULL + 1442695040888963407ULL;
        return (double)(*x >> 11) / 9007199254740992.0; /* [0, 1) */
}

START_TEST(test_sync_backoff_jitter)
{
        /* the edges of rand.Float64()'s [0, 1) */
        double r = 0.0;
        ck_assert_uint_eq(
            st_jitter_ms(ST_SYNC_BACKOFF_MS, ST_SYNC_BACKOFF_JITTER, fixed_random, &r), 10000);
        r = 0.5;
        ck_assert_uint_eq(
            st_jitter_ms(ST_SYNC_BACKOFF_MS, ST_SYNC_BACKOFF_JITTER, fixed_random, &r), 12500);
        r = 0.9999999999;
        ck_assert_uint_eq(
            st_jitter_ms(ST_SYNC_BACKOFF_MS, ST_SYNC_BACKOFF_JITTER, fixed_random, &r), 14999);
        /* a source out of its range is clamped: never 15 s, never below 10 s */
        r = 1.0;
        ck_assert_uint_eq(st_jitter_ms(10000, 0.5, fixed_random, &r), 14999);
        r = 7.0;
        ck_assert_uint_eq(st_jitter_ms(10000, 0.5, fixed_random, &r), 14999);
        r = -3.0;
        ck_assert_uint_eq(st_jitter_ms(10000, 0.5, fixed_random, &r), 10000);
        r = NAN;
        ck_assert_uint_eq(st_jitter_ms(10000, 0.5, fixed_random, &r), 10000);
        /* no source: the base; a factor <= 0 is 1.0 (wait.Jitter) */
        ck_assert_uint_eq(st_jitter_ms(10000, 0.5, NULL, NULL), 10000);
        r = 0.5;
        ck_assert_uint_eq(st_jitter_ms(10000, 0.0, fixed_random, &r), 15000);
        ck_assert_uint_eq(st_jitter_ms(10000, -2.0, fixed_random, &r), 15000);
        ck_assert_uint_eq(st_jitter_ms(0, 0.5, fixed_random, &r), 0);
        /* the transient-error period: 1 s to 1.5 s */
        ck_assert_uint_eq(st_jitter_ms(1000, 0.5, fixed_random, &r), 1250);
        r = 0.99;
        ck_assert_uint_eq(st_jitter_ms(UINT64_MAX - 1, 0.5, fixed_random, &r), UINT64_MAX);

        /* a spread of draws: all in [10 s, 15 s), both ends reached,
         * the mean in the middle */
        uint64_t x = 42, lo = UINT64_MAX, hi = 0, sum = 0;
        const int n = 20000;
        for (int i = 0; i < n; i++) {
                uint64_t d =
                    st_jitter_ms(ST_SYNC_BACKOFF_MS, ST_SYNC_BACKOFF_JITTER, lcg_random, &x);
                ck_assert_uint_ge(d, 10000);
                ck_assert_uint_lt(d, 15000);
                lo = d < lo ? d : lo;
                hi = d > hi ? d : hi;
                sum += d;
        }
        ck_assert_uint_lt(lo, 10010);
        ck_assert_uint_gt(hi, 14990);
        ck_assert_uint_gt(sum / (uint64_t)n, 12400);
        ck_assert_uint_lt(sum / (uint64_t)n, 12600);
}
END_TEST

/* Drives the flowcontrol model like the kubelet's sync loop: a container
 * that runs `run` seconds and exits, checked every second. Returns the
 * delay between each exit and the following restart. */
static void simulate(struct st_backoff *b, int64_t *t, int64_t run, int64_t *ret_delay)
{
        int64_t finished = *t + run;
        int64_t now = finished;

        while (st_backoff_active(b, finished, now))
                now++;
        st_backoff_next(b, finished, now, ST_BACKOFF_BASE_DEFAULT, ST_BACKOFF_CAP_DEFAULT);
        *ret_delay = now - finished;
        *t = now;
}

START_TEST(test_backoff_entry)
{
        struct st_backoff b = {0};
        int64_t t = T0, delay;
        static const int64_t want[] = {0, 10, 20, 40, 80, 160, 300, 300};

        for (size_t i = 0; i < CB_ARRAY_SIZE(want); i++) {
                simulate(&b, &t, 1, &delay);
                ck_assert_msg(delay == want[i], "restart %zu: delay %lld, want %lld", i + 1,
                              (long long)delay, (long long)want[i]);
        }
        ck_assert_int_eq(b.backoff, 300);

        /* exited exactly 600 s after the last update: not expired, so the
         * window still counts from the exit */
        simulate(&b, &t, 600, &delay);
        ck_assert_int_eq(delay, 300);
        ck_assert_int_eq(b.backoff, 300);

        /* ran 601 s: the entry expired, the next window starts over */
        simulate(&b, &t, 601, &delay);
        ck_assert_int_eq(delay, 0);
        ck_assert_int_eq(b.backoff, 10);
        simulate(&b, &t, 1, &delay);
        ck_assert_int_eq(delay, 10);
        ck_assert_int_eq(b.backoff, 20);

        /* an exit long after a restart is checked against the expiry too */
        struct st_backoff c = {.backoff = 160, .last_update = T0};
        ck_assert(st_backoff_active(&c, T0 + 600, T0 + 600));
        ck_assert(!st_backoff_active(&c, T0 + 601, T0 + 601));
        ck_assert(!st_backoff_active(&(struct st_backoff){0}, T0, T0));

        /* a configured max below the initial delay caps the first window */
        struct st_backoff d = {0};
        st_backoff_next(&d, T0, T0, 10, 5);
        ck_assert_int_eq(d.backoff, 5);
        ck_assert_int_eq(d.last_update, T0);
        st_backoff_next(&d, T0 + 6, T0 + 6, 10, 5);
        ck_assert_int_eq(d.backoff, 5);
}
END_TEST

START_TEST(test_backoff_messages)
{
        static const struct {
                int64_t d;
                const char *want;
        } t[] = {
            {10, "back-off 10s restarting failed container=web pod=nginx_default(0d1c)"},
            {40, "back-off 40s restarting failed container=web pod=nginx_default(0d1c)"},
            {80, "back-off 1m20s restarting failed container=web pod=nginx_default(0d1c)"},
            {300, "back-off 5m0s restarting failed container=web pod=nginx_default(0d1c)"},
        };
        for (size_t i = 0; i < CB_ARRAY_SIZE(t); i++) {
                _cleanup_free_ char *m =
                    st_crashloop_message(t[i].d, "web", "nginx", "default", "0d1c");
                ck_assert_str_eq(m, t[i].want);
        }
        _cleanup_free_ char *ev = st_backoff_event_message("web", "nginx", "default", "0d1c");
        ck_assert_str_eq(ev, "Back-off restarting failed container web in pod nginx_default(0d1c)");
}
END_TEST

static Suite *podstatus_suite(void)
{
        Suite *s = suite_create("podstatus");
        TCase *tc = tcase_create("phase");
        tcase_add_loop_test(tc, test_phase, 0, (int)CB_ARRAY_SIZE(phase_cases));
        tcase_add_test(tc, test_phase_names);
        suite_add_tcase(s, tc);

        tc = tcase_create("conditions");
        tcase_add_test(tc, test_conditions_all_ready);
        tcase_add_test(tc, test_conditions_unready_and_sandbox);
        tcase_add_test(tc, test_conditions_init_incomplete);
        tcase_add_test(tc, test_conditions_terminal);
        tcase_add_test(tc, test_conditions_preserve_and_transition);
        tcase_add_loop_test(tc, test_conditions_readiness_gates, 0, (int)CB_ARRAY_SIZE(gate_cases));
        suite_add_tcase(s, tc);

        tc = tcase_create("container_statuses");
        tcase_add_loop_test(tc, test_container_statuses, 0, (int)CB_ARRAY_SIZE(cs_cases));
        tcase_add_test(tc, test_container_status_field_order);
        tcase_add_test(tc, test_terminated_reasons);
        suite_add_tcase(s, tc);

        tc = tcase_create("time_backoff");
        tcase_add_test(tc, test_time_format_parse);
        tcase_add_test(tc, test_duration_format);
        tcase_add_test(tc, test_backoff_schedule);
        tcase_add_test(tc, test_backoff_entry);
        tcase_add_test(tc, test_sync_backoff_jitter);
        tcase_add_test(tc, test_backoff_messages);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        int failed = th_run(podstatus_suite());
        return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
