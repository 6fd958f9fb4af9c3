/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness for the watch stream: bytes from the apiserver ->
 * ag_watch_parser_feed (split at a position taken from the input, so the
 * chunking is fuzzed too) -> ag_watch_event_parse -> the pod and node
 * stores (ag_store_apply), as the reflector drives them. Decode errors are
 * expected; crashes, leaks and undefined behaviour are findings.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/client/reflector.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct ctx {
        struct ag_store pods, nodes;
};

static void on_change(enum ag_change change, const struct ag_object *obj, void *data)
{
        (void)change;
        (void)data;
        /* touch what a consumer reads */
        if (obj->uid == NULL || obj->json == NULL)
                abort();
}

static int on_object(const char *json, size_t len, void *data, struct cb_error *err)
{
        struct ctx *c = data;
        struct k8s_watch_event ev = {0};
        struct cb_error e = {0};

        (void)err;
        if (ag_watch_event_parse(json, len, &ev, &e) != 0)
                return 0; /* the reflector logs and relists; not a finding */
        if (ev.object != NULL && ev.type != K8S_WATCH_BOOKMARK && ev.type != K8S_WATCH_ERROR) {
                cJSON *a = cJSON_Duplicate(ev.object, 1);
                cJSON *b = cJSON_Duplicate(ev.object, 1);
                (void)ag_store_apply(&c->pods, ev.type, a, &e);
                (void)ag_store_apply(&c->nodes, ev.type, b, &e);
        }
        k8s_watch_event_clear(&ev);
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct ag_watch_parser p = {.max_object = 1 << 16};
        struct cb_error err = {0};
        struct ctx c;
        size_t cut = size > 0 ? data[0] % (size + 1) : 0;

        ag_store_init(&c.pods, AG_KIND_POD, on_change, NULL);
        ag_store_init(&c.nodes, AG_KIND_NODE, on_change, NULL);
        if (ag_watch_parser_feed(&p, (const char *)data, cut, on_object, &c, &err) == 0 &&
            ag_watch_parser_feed(&p, (const char *)data + cut, size - cut, on_object, &c, &err) ==
                0)
                (void)ag_watch_parser_finish(&p, &err);
        ag_watch_parser_reset(&p);
        /* a relist of everything the stream left in the store */
        cJSON *items = cJSON_CreateArray();
        for (size_t i = 0; i < c.pods.n; i++)
                cJSON_AddItemToArray(items, k8s_pod_json_parse(c.pods.items[i]->pod));
        (void)ag_store_replace(&c.pods, items, &err);
        ag_store_clear(&c.pods);
        ag_store_clear(&c.nodes);
        return 0;
}
