/* SPDX-License-Identifier: Apache-2.0 */
/* The watch stream parser, watch events, the reflector's store and backoff,
 * and the node status helpers: no network. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/k8s/duration.h"
#include "agent/node/nodeinfo.h"
#include "agent/node/nodestatus.h"
#include "agent/client/reflector.h"
#include "agent/k8s/validate.h"
#include "lib/cleanup.h"

#include "helpers.h"

/* ---- collecting objects from the parser ---- */

struct collected {
        char objs[16][512];
        size_t n;
        int fail_at; /* fn fails on this object (1-based); 0 never */
};

static int collect(const char *json, size_t len, void *data, struct cb_error *err)
{
        struct collected *c = data;
        ck_assert_uint_lt(c->n, 16);
        ck_assert_uint_lt(len, 512);
        memcpy(c->objs[c->n], json, len);
        c->objs[c->n][len] = '\0';
        c->n++;
        if (c->fail_at > 0 && (size_t)c->fail_at == c->n)
                return cb_error_set(err, 0, "stop here");
        return 0;
}

static const char *stream = "{\"type\":\"ADDED\",\"object\":{\"a\":\"}{\\\"\"}}\n"
                            "\r\n{\"type\":\"BOOKMARK\",\"object\":{\"b\":[1,{\"c\":2}]}}\n"
                            "{\"type\":\"DELETED\",\"object\":{}}";

/* Every way of cutting the stream in three chunks yields the same objects. */
START_TEST(test_split_chunks)
{
        size_t len = strlen(stream);
        for (size_t i = 0; i <= len; i++) {
                for (size_t j = i; j <= len; j += 7) {
                        struct ag_watch_parser p = {0};
                        struct collected c = {0};
                        struct cb_error err = {0};
                        ck_assert_int_eq(ag_watch_parser_feed(&p, stream, i, collect, &c, &err), 0);
                        ck_assert_int_eq(
                            ag_watch_parser_feed(&p, stream + i, j - i, collect, &c, &err), 0);
                        ck_assert_int_eq(
                            ag_watch_parser_feed(&p, stream + j, len - j, collect, &c, &err), 0);
                        ck_assert_int_eq(ag_watch_parser_finish(&p, &err), 0);
                        ck_assert_uint_eq(c.n, 3);
                        ck_assert_str_eq(c.objs[0],
                                         "{\"type\":\"ADDED\",\"object\":{\"a\":\"}{\\\"\"}}");
                        ck_assert_str_eq(c.objs[2], "{\"type\":\"DELETED\",\"object\":{}}");
                        ag_watch_parser_reset(&p);
                }
        }
}
END_TEST

START_TEST(test_parser_errors)
{
        static const struct {
                const char *name, *input;
                size_t max;
                size_t want_objects;
                int want_feed; /* 0 or -1 */
                int want_finish;
                const char *want_msg;
        } t[] = {
            {"garbage before", "xyz{}", 0, 0, -1, 0, "unexpected byte 0x78"},
            {"garbage between", "{}\n]{}", 0, 1, -1, 0, "unexpected byte 0x5d"},
            {"truncated", "{\"type\":\"ADDED\",\"obj", 0, 0, 0, -1, "ended inside an event"},
            {"truncated in string", "{}{\"a\":\"}", 0, 1, 0, -1, "ended inside an event"},
            /* an oversized event is handed on as its prefix (the next test) */
            {"oversize", "{\"a\":\"0123456789012345678901234567890\"}", 16, 1, 0, 0, NULL},
            {"at the limit", "{\"a\":\"0123456\"}", 15, 1, 0, 0, NULL},
            {"only whitespace", " \n\r\t ", 0, 0, 0, 0, NULL},
        };
        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
                struct ag_watch_parser p = {.max_object = t[i].max};
                struct collected c = {0};
                struct cb_error err = {0};
                int r = ag_watch_parser_feed(&p, t[i].input, strlen(t[i].input), collect, &c, &err);
                ck_assert_msg(r == t[i].want_feed, "%s: feed %d", t[i].name, r);
                ck_assert_msg(c.n == t[i].want_objects, "%s: %zu objects", t[i].name, c.n);
                if (r == 0) {
                        r = ag_watch_parser_finish(&p, &err);
                        ck_assert_msg(r == t[i].want_finish, "%s: finish %d", t[i].name, r);
                }
                if (t[i].want_msg != NULL)
                        ck_assert_msg(strstr(err.msg, t[i].want_msg) != NULL, "%s: %s", t[i].name,
                                      err.msg);
                ag_watch_parser_reset(&p);
        }
}
END_TEST

struct oversized_seen {
        struct ag_watch_parser *p;
        size_t n, len[4], oversized[4];
};

static int note_oversized(const char *json, size_t len, void *data, struct cb_error *err)
{
        (void)json;
        (void)err;
        struct oversized_seen *o = data;
        if (o->n < 4) {
                o->len[o->n] = len;
                o->oversized[o->n] = o->p->oversized;
        }
        o->n++;
        return 0;
}

/* An event past max_object is skipped to its end (its first max_object
 * bytes kept, the whole size in oversized), and the stream goes on. */
START_TEST(test_parser_oversized_skipped)
{
        struct ag_watch_parser p = {.max_object = 16};
        struct oversized_seen o = {.p = &p};
        struct cb_error err = {0};
        const char *in = "{\"a\":\"0123456789012345678}\\\"901234567890\"}\n{\"b\":1}\n";
        ck_assert_int_eq(ag_watch_parser_feed(&p, in, strlen(in), note_oversized, &o, &err), 0);
        ck_assert_int_eq(ag_watch_parser_finish(&p, &err), 0);
        ck_assert_uint_eq(o.n, 2);
        ck_assert_uint_eq(o.len[0], 16);
        ck_assert_uint_eq(o.oversized[0], strchr(in, '\n') - in);
        ck_assert_uint_eq(o.len[1], 7);
        ck_assert_uint_eq(o.oversized[1], 0);
        ag_watch_parser_reset(&p);
}
END_TEST

/* The type and metadata of an event from its first bytes. */
START_TEST(test_prefix_metadata)
{
        const char *ev =
            "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"Pod\",\"spec\":{\"metadata\":1},"
            "\"metadata\":{\"name\":\"big\",\"namespace\":\"ns\",\"uid\":\"u-1\","
            "\"labels\":{\"a\":\"}\"},\"resourceVersion\":\"42\"},\"spec\":{\"containers\":[";
        char type[16];
        cJSON *m = ag_watch_prefix_metadata(ev, strlen(ev), type, sizeof(type));
        ck_assert_ptr_nonnull(m);
        ck_assert_str_eq(type, "MODIFIED");
        ck_assert_str_eq(cJSON_GetObjectItem(m, "name")->valuestring, "big");
        ck_assert_str_eq(cJSON_GetObjectItem(m, "uid")->valuestring, "u-1");
        ck_assert_str_eq(cJSON_GetObjectItem(m, "resourceVersion")->valuestring, "42");
        cJSON_Delete(m);
        /* cut inside the metadata: nothing */
        ck_assert_ptr_null(
            ag_watch_prefix_metadata(ev, strstr(ev, "labels") - ev, type, sizeof(type)));
}
END_TEST

START_TEST(test_callback_failure_stops)
{
        struct ag_watch_parser p = {0};
        struct collected c = {.fail_at = 1};
        struct cb_error err = {0};
        ck_assert_int_eq(ag_watch_parser_feed(&p, "{}{}{}", 6, collect, &c, &err), -1);
        ck_assert_uint_eq(c.n, 1);
        ck_assert_str_eq(err.msg, "stop here");
        ag_watch_parser_reset(&p);
}
END_TEST

START_TEST(test_event_parse)
{
        static const struct {
                const char *json;
                int want;
                int type;
                const char *want_msg;
        } t[] = {
            {"{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\"}}", 0, K8S_WATCH_ADDED, NULL},
            {"{\"type\":\"BOOKMARK\",\"object\":{}}", 0, K8S_WATCH_BOOKMARK, NULL},
            {"{\"type\":\"ERROR\",\"object\":{\"code\":410}}", 0, K8S_WATCH_ERROR, NULL},
            {"{\"type\":\"RENAMED\",\"object\":{\"metadata\":{\"namespace\":\"ns\",\"name\":"
             "\"p\"}}}",
             -1, 0, "watch event for ns/p"},
            {"{\"type\":\"ADDED\"", -1, 0, "not valid JSON"},
            {"{\"type\":\"ADDED\",\"object\":[]}", -1, 0, "object"},
            {"{\"object\":{}}", -1, 0, "type"},
            /* a NUL is refused with its object by the store, not here */
            {"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"p\\u0000../x\"}}}", 0,
             K8S_WATCH_ADDED, NULL},
            {"{\"type\":\"ADD\\u0000ED\",\"object\":{}}", -1, 0, "type"},
        };
        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
                struct k8s_watch_event ev = {0};
                struct cb_error err = {0};
                int r = ag_watch_event_parse(t[i].json, strlen(t[i].json), &ev, &err);
                ck_assert_msg(r == t[i].want, "%s: %d %s", t[i].json, r, err.msg);
                if (r == 0)
                        ck_assert_int_eq(ev.type, t[i].type);
                else
                        ck_assert_msg(strstr(err.msg, t[i].want_msg) != NULL, "%s: %s", t[i].json,
                                      err.msg);
                k8s_watch_event_clear(&ev);
        }
}
END_TEST

/* ---- the store ---- */

struct changes {
        char log[32][64];
        size_t n;
};

static void record(enum ag_change change, const struct ag_object *o, void *data)
{
        static const char *const names[] = {"ADDED", "UPDATED", "DELETED"};
        struct changes *c = data;
        ck_assert_uint_lt(c->n, 32);
        ck_assert_ptr_nonnull(o->pod);
        snprintf(c->log[c->n++], 64, "%s %s %s", names[change], o->name, o->resource_version);
}

static cJSON *pod(const char *name, const char *uid, const char *rv)
{
        char buf[512];
        snprintf(buf, sizeof(buf),
                 "{\"metadata\":{\"namespace\":\"default\",\"name\":\"%s\",\"uid\":\"%s\","
                 "\"resourceVersion\":\"%s\"},\"spec\":{\"nodeName\":\"n\",\"containers\":[{"
                 "\"name\":\"c\",\"image\":\"busybox\"}]},\"status\":{\"phase\":\"Pending\"}}",
                 name, uid, rv);
        cJSON *j = cJSON_Parse(buf);
        ck_assert_ptr_nonnull(j);
        return j;
}

START_TEST(test_store_events)
{
        struct changes c = {0};
        struct ag_store s;
        struct cb_error err = {0};
        ag_store_init(&s, AG_KIND_POD, record, &c);
        ck_assert_int_eq(ag_store_apply(&s, K8S_WATCH_ADDED, pod("a", "u1", "1"), &err), 0);
        /* The same object again (same resourceVersion): not reported twice. */
        ck_assert_int_eq(ag_store_apply(&s, K8S_WATCH_ADDED, pod("a", "u1", "1"), &err), 0);
        ck_assert_int_eq(ag_store_apply(&s, K8S_WATCH_MODIFIED, pod("a", "u1", "2"), &err), 0);
        /* MODIFIED of an unknown object is an add; ADDED of a known one an update. */
        ck_assert_int_eq(ag_store_apply(&s, K8S_WATCH_MODIFIED, pod("b", "u2", "3"), &err), 0);
        ck_assert_int_eq(ag_store_apply(&s, K8S_WATCH_ADDED, pod("b", "u2", "4"), &err), 0);
        ck_assert_int_eq(ag_store_apply(&s, K8S_WATCH_DELETED, pod("a", "u1", "5"), &err), 0);
        /* A DELETED of an object never seen is not reported. */
        ck_assert_int_eq(ag_store_apply(&s, K8S_WATCH_DELETED, pod("z", "u9", "6"), &err), 0);
        /* An undecodable object is refused and the store kept. */
        cJSON *bad = pod("x", "u3", "7");
        cJSON_ReplaceItemInObject(cJSON_GetObjectItem(bad, "spec"), "containers",
                                  cJSON_CreateString("nope"));
        ck_assert_int_eq(ag_store_apply(&s, K8S_WATCH_ADDED, bad, &err), -1);
        ck_assert_msg(strstr(err.msg, "default/x") != NULL, "%s", err.msg);
        ck_assert_int_eq(ag_store_apply(&s, K8S_WATCH_ADDED, pod("y", "", "8"), &err), -1);
        ck_assert_msg(strstr(err.msg, "metadata.uid") != NULL, "%s", err.msg);
        ck_assert_int_eq(ag_store_apply(&s, K8S_WATCH_BOOKMARK, pod("y", "u5", "8"), &err), -1);
        static const char *const want[] = {"ADDED a 1", "UPDATED a 2", "ADDED b 3", "UPDATED b 4",
                                           "DELETED a 5"};
        ck_assert_uint_eq(c.n, 5);
        for (size_t i = 0; i < 5; i++)
                ck_assert_str_eq(c.log[i], want[i]);
        ck_assert_uint_eq(s.n, 1);
        ck_assert_ptr_nonnull(ag_store_get(&s, "u2"));
        ck_assert_ptr_null(ag_store_get(&s, "u1"));
        ag_store_clear(&s);
}
END_TEST

/* A watched pod is decoded once per event: the store's decode is the one
 * the consumers keep (a reference, with the JSON it came from as text),
 * even after the store has moved on to a newer version. While the change
 * is reported the consumer also has the tree; after it, the store keeps
 * only the pod (the tree, six times the text's size, is gone). */
struct kept {
        struct k8s_pod *pods[8];
        size_t n;
};

static void keep(enum ag_change change, const struct ag_object *o, void *data)
{
        struct kept *k = data;
        (void)change;
        ck_assert_ptr_nonnull(o->json);
        _cleanup_free_ char *text = cJSON_PrintUnformatted(o->json);
        ck_assert_str_eq(k8s_pod_json_text(o->pod), text);
        ck_assert_uint_lt(k->n, 8);
        k->pods[k->n++] = k8s_pod_ref(o->pod);
}

START_TEST(test_store_decodes_once)
{
        struct kept k = {0};
        struct ag_store s;
        struct cb_error err = {0};
        ag_store_init(&s, AG_KIND_POD, keep, &k);
        uint64_t before = k8s_pod_decodes();
        for (int rv = 1; rv <= 3; rv++) {
                char text[600];
                snprintf(text, sizeof(text),
                         "{\"type\":\"%s\",\"object\":{\"metadata\":{\"namespace\":\"ns\","
                         "\"name\":\"p\",\"uid\":\"u1\",\"resourceVersion\":\"%d\"},\"spec\":{"
                         "\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]}}}",
                         rv == 1 ? "ADDED" : "MODIFIED", rv);
                struct k8s_watch_event ev = {0};
                ck_assert_msg(ag_watch_event_parse(text, strlen(text), &ev, &err) == 0, "%s",
                              err.msg);
                ck_assert_int_eq(ag_store_apply(&s, ev.type, steal_pointer(&ev.object), &err), 0);
                ck_assert_uint_eq(k8s_pod_decodes() - before, (uint64_t)rv);
                ck_assert_ptr_null(ag_store_get(&s, "u1")->json);
        }
        ck_assert_uint_eq(k.n, 3);
        /* gone while not watched: the relist's DELETED has the JSON too */
        ck_assert_int_eq(ag_store_replace(&s, cJSON_CreateArray(), &err), 0);
        ck_assert_uint_eq(k.n, 4);
        ck_assert_uint_eq(s.n, 0);
        k8s_pod_free(k.pods[--k.n]);
        ag_store_clear(&s);
        /* Each kept version outlives the store's copy, JSON included. */
        static const char *const want_rv[] = {"1", "2", "3"};
        for (size_t i = 0; i < k.n; i++) {
                _cleanup_cjson_ cJSON *json = k8s_pod_json_parse(k.pods[i]);
                const cJSON *rv =
                    cJSON_GetObjectItem(cJSON_GetObjectItem(json, "metadata"), "resourceVersion");
                ck_assert_str_eq(rv->valuestring, want_rv[i]);
                ck_assert_str_eq(k.pods[i]->meta.resource_version, rv->valuestring);
                k8s_pod_free(k.pods[i]);
        }
        ck_assert_uint_eq(k8s_pod_decodes() - before, 3);
}
END_TEST

/* Every object carries the arrival stamp the store had when it was built
 * (the timeline's `watched` step); 0 without one. */
static void stamps(enum ag_change change, const struct ag_object *o, void *data)
{
        (void)change;
        uint64_t *seen = data;
        *seen = o->received_mono_us;
        ck_assert_int_eq(o->received_wall_us, (int64_t)o->received_mono_us * 10);
}

START_TEST(test_store_arrival_stamp)
{
        uint64_t seen = 1;
        struct ag_store s;
        struct cb_error err = {0};
        ag_store_init(&s, AG_KIND_POD, stamps, &seen);
        ck_assert_int_eq(ag_store_apply(&s, K8S_WATCH_ADDED, pod("a", "u1", "1"), &err), 0);
        ck_assert_uint_eq(seen, 0);
        s.arrival_mono_us = 1234;
        s.arrival_wall_us = 12340;
        ck_assert_int_eq(ag_store_apply(&s, K8S_WATCH_MODIFIED, pod("a", "u1", "2"), &err), 0);
        ck_assert_uint_eq(seen, 1234);
        s.arrival_mono_us = 77;
        s.arrival_wall_us = 770;
        cJSON *items = cJSON_CreateArray();
        cJSON_AddItemToArray(items, pod("b", "u2", "3"));
        ck_assert_int_eq(ag_store_replace(&s, items, &err), 0);
        ck_assert_uint_eq(seen, 77);
        ag_store_clear(&s);
}
END_TEST

START_TEST(test_store_relist_diff)
{
        struct changes c = {0};
        struct ag_store s;
        struct cb_error err = {0};
        ag_store_init(&s, AG_KIND_POD, record, &c);
        cJSON *first = cJSON_CreateArray();
        cJSON_AddItemToArray(first, pod("keep", "u1", "1"));
        cJSON_AddItemToArray(first, pod("change", "u2", "2"));
        cJSON_AddItemToArray(first, pod("gone", "u3", "3"));
        ck_assert_int_eq(ag_store_replace(&s, first, &err), 0);
        ck_assert_uint_eq(c.n, 3);
        c.n = 0;
        /* Relist after being disconnected: one unchanged, one changed, one
         * deleted, one new, one undecodable (skipped and counted). */
        cJSON *second = cJSON_CreateArray();
        cJSON_AddItemToArray(second, pod("keep", "u1", "1"));
        cJSON_AddItemToArray(second, pod("change", "u2", "9"));
        cJSON_AddItemToArray(second, pod("new", "u4", "10"));
        cJSON *bad = pod("bad", "u5", "11");
        cJSON_DeleteItemFromObject(cJSON_GetObjectItem(bad, "metadata"), "uid");
        cJSON_AddItemToArray(second, bad);
        ck_assert_int_eq(ag_store_replace(&s, second, &err), 1);
        ck_assert_msg(strstr(err.msg, "items[3]") != NULL, "%s", err.msg);
        ck_assert_uint_eq(c.n, 3);
        ck_assert_str_eq(c.log[0], "DELETED gone 3");
        ck_assert_str_eq(c.log[1], "UPDATED change 9");
        ck_assert_str_eq(c.log[2], "ADDED new 10");
        ck_assert_uint_eq(s.n, 3);
        c.n = 0;
        /* The same list again reports nothing. */
        cJSON *third = cJSON_CreateArray();
        cJSON_AddItemToArray(third, pod("keep", "u1", "1"));
        cJSON_AddItemToArray(third, pod("change", "u2", "9"));
        cJSON_AddItemToArray(third, pod("new", "u4", "10"));
        ck_assert_int_eq(ag_store_replace(&s, third, &err), 0);
        ck_assert_uint_eq(c.n, 0);
        /* Not a list. */
        ck_assert_int_eq(ag_store_replace(&s, cJSON_CreateObject(), &err), -1);
        ck_assert_uint_eq(s.n, 3);
        ag_store_clear(&s);
}
END_TEST

/* Issue 15 item 11: a list with one pod whose name holds a \u0000 (cJSON
 * would read "web\u0000../x" as "web") refuses that pod alone, with its
 * field named; the other pods of the list are applied, and so are later
 * watch events, while a watch event carrying such a pod is refused alone
 * too. The list path marks the response text (ag_api_req_opts
 * nul_per_object: k8s_json_mark_nul) before cJSON parses it, as here. */
START_TEST(test_store_nul_per_object)
{
        char list[] =
            "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"9\"},\"items\":["
            "{\"metadata\":{\"namespace\":\"default\",\"name\":\"good\",\"uid\":\"u1\","
            "\"resourceVersion\":\"1\",\"annotations\":{\"lit\":\"a\\\\u0000b\"}},"
            "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]}},"
            "{\"metadata\":{\"namespace\":\"default\",\"name\":\"web\\u0000../x\",\"uid\":\"u2\","
            "\"resourceVersion\":\"2\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":"
            "\"busybox\"}]}},"
            "{\"metadata\":{\"namespace\":\"default\",\"name\":\"envnul\",\"uid\":\"u3\","
            "\"resourceVersion\":\"3\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":"
            "\"busybox\",\"env\":[{\"name\":\"A\",\"value\":\"1\"},{\"name\":\"B\",\"value\":"
            "\"x\\u0000y\"}]}]}},"
            "{\"metadata\":{\"namespace\":\"default\",\"name\":\"keynul\",\"uid\":\"u4\","
            "\"resourceVersion\":\"4\",\"labels\":{\"k\\u0000\":\"v\"}},\"spec\":{\"containers\":"
            "[{\"name\":\"c\",\"image\":\"busybox\"}]}},"
            "{\"metadata\":{\"namespace\":\"default\",\"name\":\"other\",\"uid\":\"u5\","
            "\"resourceVersion\":\"5\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":"
            "\"busybox\"}]}}]}";
        /* three escapes; the escaped backslash before "u0000" is no NUL */
        ck_assert_uint_eq(k8s_json_mark_nul(list, strlen(list)), 3);
        _cleanup_cjson_ cJSON *root = cJSON_Parse(list);
        ck_assert_ptr_nonnull(root);
        cJSON *items = cJSON_DetachItemFromObject(root, "items");
        char at[256];
        ck_assert(!k8s_json_find_nul(root, at, sizeof(at))); /* the list itself is clean */
        const cJSON *second = cJSON_GetArrayItem(items, 1);
        ck_assert(k8s_json_find_nul(second, at, sizeof(at)));
        ck_assert_str_eq(at, "metadata.name");
        ck_assert(k8s_json_find_nul(cJSON_GetArrayItem(items, 2), at, sizeof(at)));
        ck_assert_str_eq(at, "spec.containers[0].env[1].value");
        ck_assert(k8s_json_find_nul(cJSON_GetArrayItem(items, 3), at, sizeof(at)));
        ck_assert_str_eq(at, "metadata.labels.k\\u0000");
        char shown[64];
        k8s_nul_display(
            cJSON_GetObjectItem(cJSON_GetObjectItem(second, "metadata"), "name")->valuestring,
            shown, sizeof(shown));
        ck_assert_str_eq(shown, "web\\u0000../x");

        struct changes c = {0};
        struct ag_store s;
        struct cb_error err = {0};
        ag_store_init(&s, AG_KIND_POD, record, &c);
        ck_assert_int_eq(ag_store_replace(&s, items, &err), 3);
        ck_assert_msg(strstr(err.msg, "items[1]: default/web\\u0000../x (uid u2): metadata.name: "
                                      "a NUL character (\\u0000) in a string; the object is "
                                      "refused") != NULL,
                      "%s", err.msg);
        ck_assert_uint_eq(s.n, 2);
        ck_assert_ptr_nonnull(ag_store_get(&s, "u1"));
        ck_assert_ptr_nonnull(ag_store_get(&s, "u5"));
        ck_assert_ptr_null(ag_store_get(&s, "u2"));
        ck_assert_str_eq(ag_store_get(&s, "u1")->pod->meta.name, "good");

        /* Later watch events: one with the NUL pod is refused alone, the
         * deletion of a good pod after it is applied. */
        const char *ev_nul = "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"namespace\":"
                             "\"default\",\"name\":\"web\\u0000../x\",\"uid\":\"u2\","
                             "\"resourceVersion\":\"6\"},\"spec\":{\"containers\":[{\"name\":"
                             "\"c\",\"image\":\"busybox\"}]}}}";
        struct k8s_watch_event ev = {0};
        ck_assert_int_eq(ag_watch_event_parse(ev_nul, strlen(ev_nul), &ev, &err), 0);
        ck_assert_int_eq(ag_store_apply(&s, ev.type, steal_pointer(&ev.object), &err), -1);
        ck_assert_msg(strstr(err.msg, "default/web\\u0000../x (uid u2): metadata.name: a NUL") !=
                          NULL,
                      "%s", err.msg);
        ck_assert_int_eq(ag_store_apply(&s, K8S_WATCH_DELETED, pod("good", "u1", "7"), &err), 0);
        ck_assert_int_eq(ag_store_apply(&s, K8S_WATCH_ADDED, pod("late", "u6", "8"), &err), 0);
        static const char *const want[] = {"ADDED good 1", "ADDED other 5", "DELETED good 7",
                                           "ADDED late 8"};
        ck_assert_uint_eq(c.n, 4);
        for (size_t i = 0; i < 4; i++)
                ck_assert_str_eq(c.log[i], want[i]);
        ck_assert_uint_eq(s.n, 2);
        ag_store_clear(&s);
}
END_TEST

START_TEST(test_backoff)
{
        struct ag_backoff b;
        ag_backoff_init(&b, 800, 30000, 120000);
        static const uint64_t want[] = {800, 1600, 3200, 6400, 12800, 25600, 30000, 30000};
        uint64_t now = 1000000;
        for (size_t i = 0; i < 8; i++, now += 1000)
                ck_assert_uint_eq(ag_backoff_next(&b, now, 0), want[i]);
        /* Jitter adds up to 100%. */
        ck_assert_uint_eq(ag_backoff_next(&b, now, 0.5), 45000);
        /* Healthy for more than 2 min: back to the start. */
        ck_assert_uint_eq(ag_backoff_next(&b, now + 120001, 0), 800);
        ck_assert_uint_eq(ag_backoff_next(&b, now + 120002, 0), 1600);
}
END_TEST

START_TEST(test_duration)
{
        static const struct {
                const char *s;
                int ok;
                uint64_t ms;
        } t[] = {
            {"10s", 1, 10000}, {"1m30s", 1, 90000}, {"500ms", 1, 500}, {"2h", 1, 7200000},
            {"1.5s", 1, 1500}, {"0", 1, 0},         {"10", 0, 0},      {"", 0, 0},
            {"s", 0, 0},       {"5x", 0, 0},        {"-1s", 0, 0},     {"1m5", 0, 0},
        };
        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
                uint64_t ms = 12345;
                struct cb_error err = {0};
                int r = k8s_parse_duration_ms(t[i].s, &ms, &err);
                ck_assert_msg((r == 0) == t[i].ok, "\"%s\": %d %s", t[i].s, r, err.msg);
                if (t[i].ok)
                        ck_assert_uint_eq(ms, t[i].ms);
        }
}
END_TEST

START_TEST(test_labels_taints)
{
        cJSON *o = NULL;
        struct cb_error err = {0};
        ck_assert_int_eq(ag_parse_node_labels("a=b,example.com/role=edge,empty=", &o, &err), 0);
        char *s = cJSON_PrintUnformatted(o);
        ck_assert_str_eq(s, "{\"a\":\"b\",\"example.com/role\":\"edge\",\"empty\":\"\"}");
        free(s);
        cJSON_Delete(o);
        ck_assert_int_eq(ag_parse_node_labels("", &o, &err), 0);
        ck_assert_int_eq(cJSON_GetArraySize(o), 0);
        cJSON_Delete(o);
        static const char *const bad_labels[] = {"novalue", "-a=b", "a=b c", "Ex_ample/x=y",
                                                 "a=-b"};
        for (size_t i = 0; i < sizeof(bad_labels) / sizeof(bad_labels[0]); i++) {
                o = NULL;
                ck_assert_msg(ag_parse_node_labels(bad_labels[i], &o, &err) == -1, "%s",
                              bad_labels[i]);
                ck_assert_ptr_null(o);
        }
        ck_assert_int_eq(ag_parse_taints("dedicated=gpu:NoSchedule,maint:NoExecute", &o, &err), 0);
        s = cJSON_PrintUnformatted(o);
        ck_assert_str_eq(s, "[{\"key\":\"dedicated\",\"value\":\"gpu\",\"effect\":\"NoSchedule\"},"
                            "{\"key\":\"maint\",\"effect\":\"NoExecute\"}]");
        free(s);
        cJSON_Delete(o);
        static const char *const bad_taints[] = {"k=v", "k=v:Never", "=v:NoSchedule",
                                                 "k=bad value:NoExecute"};
        for (size_t i = 0; i < sizeof(bad_taints) / sizeof(bad_taints[0]); i++) {
                o = NULL;
                ck_assert_msg(ag_parse_taints(bad_taints[i], &o, &err) == -1, "%s", bad_taints[i]);
                ck_assert_ptr_null(o);
        }
        ck_assert_msg(strstr(err.msg, "bad value") != NULL, "%s", err.msg);
}
END_TEST

START_TEST(test_status_differs)
{
        const char *base =
            "{\"capacity\":{\"cpu\":\"2\"},\"conditions\":[{\"type\":\"Ready\",\"status\":"
            "\"True\",\"reason\":\"KubeletReady\",\"message\":\"m\",\"lastHeartbeatTime\":"
            "\"T1\",\"lastTransitionTime\":\"T0\"}]}";
        cJSON *a = cJSON_Parse(base);
        cJSON *b = cJSON_Parse(base);
        ck_assert(!ag_node_status_differs(a, b));
        /* Heartbeat times alone are no change. */
        cJSON *cb = cJSON_GetArrayItem(cJSON_GetObjectItem(b, "conditions"), 0);
        cJSON_ReplaceItemInObject(cb, "lastHeartbeatTime", cJSON_CreateString("T2"));
        ck_assert(!ag_node_status_differs(a, b));
        cJSON_ReplaceItemInObject(cb, "status", cJSON_CreateString("Unknown"));
        ck_assert(ag_node_status_differs(a, b));
        cJSON_ReplaceItemInObject(cb, "status", cJSON_CreateString("True"));
        cJSON_ReplaceItemInObject(cJSON_GetObjectItem(b, "capacity"), "cpu",
                                  cJSON_CreateString("4"));
        ck_assert(ag_node_status_differs(a, b));
        ck_assert(ag_node_status_differs(NULL, b));
        /* status.features is the node's own too: someone else's change
         * (or its loss) is put right. */
        cJSON_ReplaceItemInObject(cJSON_GetObjectItem(b, "capacity"), "cpu",
                                  cJSON_CreateString("2"));
        cJSON *fa = cJSON_AddObjectToObject(a, "features");
        cJSON_AddBoolToObject(fa, "supplementalGroupsPolicy", true);
        ck_assert(ag_node_status_differs(a, b));
        cJSON *fb = cJSON_AddObjectToObject(b, "features");
        cJSON_AddBoolToObject(fb, "supplementalGroupsPolicy", false);
        ck_assert(ag_node_status_differs(a, b));
        cJSON_ReplaceItemInObject(fb, "supplementalGroupsPolicy", cJSON_CreateTrue());
        ck_assert(!ag_node_status_differs(a, b));
        cJSON_Delete(a);
        cJSON_Delete(b);
        char t[40];
        ag_format_time(t, sizeof(t), true);
        ck_assert_uint_eq(strlen(t), 27); /* 2024-01-02T03:04:05.123456Z */
        ck_assert_int_eq(t[19], '.');
        ck_assert_int_eq(t[26], 'Z');
        ag_format_time(t, sizeof(t), false);
        ck_assert_uint_eq(strlen(t), 20);
}
END_TEST

/* The registered Node's status: status.features.supplementalGroupsPolicy
 * true, as a v1.35 kubelet on a runtime with supplementalGroupsPolicy and
 * ContainerUser (containerd >= 2.0) sets it, next to what it always had. */
START_TEST(test_node_json_features)
{
        struct ag_node_facts f = {
            .cpus = 2, .memory_bytes = 4LL << 30, .ephemeral_bytes = 20LL << 30};
        strcpy(f.hostname, "n1");
        strcpy(f.architecture, "amd64");
        strcpy(f.node_ip, "10.0.0.6");
        _cleanup_cjson_ cJSON *node = ag_node_json(&f, "n1", 110);
        ck_assert_ptr_nonnull(node);
        const cJSON *status = cJSON_GetObjectItemCaseSensitive(node, "status");
        _cleanup_free_ char *feat =
            cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(status, "features"));
        ck_assert_str_eq(feat, "{\"supplementalGroupsPolicy\":true}");
        static const char *const keys[] = {"capacity", "allocatable", "addresses",
                                           "daemonEndpoints", "nodeInfo"};
        for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
                ck_assert_msg(cJSON_GetObjectItemCaseSensitive(status, keys[i]) != NULL, "%s",
                              keys[i]);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("watchparse");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_split_chunks);
        tcase_add_test(tc, test_parser_errors);
        tcase_add_test(tc, test_parser_oversized_skipped);
        tcase_add_test(tc, test_prefix_metadata);
        tcase_add_test(tc, test_callback_failure_stops);
        tcase_add_test(tc, test_event_parse);
        tcase_add_test(tc, test_store_events);
        tcase_add_test(tc, test_store_decodes_once);
        tcase_add_test(tc, test_store_relist_diff);
        tcase_add_test(tc, test_store_nul_per_object);
        tcase_add_test(tc, test_store_arrival_stamp);
        tcase_add_test(tc, test_backoff);
        tcase_add_test(tc, test_duration);
        tcase_add_test(tc, test_labels_taints);
        tcase_add_test(tc, test_status_differs);
        tcase_add_test(tc, test_node_json_features);
        suite_add_tcase(s, tc);
        return th_run(s) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
