/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness for the object decoders: text -> k8s_parse_text (JSON
 * or YAML) -> every decoder, and the multi-document reader. Crashes, leaks
 * (ASan) and undefined behaviour (UBSan) are findings; decode errors are
 * expected and fine.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/k8s/k8s.h"
#include "agent/k8s/pv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct cb_error err = {0};
        cJSON *json = NULL;
        cJSON **docs = NULL;
        size_t n = 0;

        /* the parsers take a length, the text need not be NUL-terminated */
        if (k8s_parse_text((const char *)data, size, &json, &err) == 0) {
                struct k8s_pod *pod = NULL;
                struct k8s_node *node = NULL;
                struct k8s_status *status = NULL;
                struct k8s_pod_list *plist = NULL;
                struct k8s_watch_event ev = {0};
                char buf[64];

                if (k8s_pod_from_json(json, &pod, &err) == 0) {
                        for (size_t i = 0; i < pod->spec.n_containers; i++) {
                                const struct k8s_resource_list *l =
                                    &pod->spec.containers[i].resources.limits;
                                for (size_t r = 0; r < l->n; r++)
                                        k8s_quantity_format(&l->items[r].q, buf, sizeof(buf));
                        }
                        (void)k8s_pod_is_static(pod);
                        k8s_pod_free(pod);
                }
                struct k8s_pvc *pvc = NULL;
                struct k8s_pv *pv = NULL;
                if (k8s_pvc_from_json(json, &pvc, &err) == 0)
                        (void)k8s_pvc_check(pvc, &err);
                if (k8s_pv_from_json(json, &pv, &err) == 0) {
                        (void)k8s_pv_source_name(pv);
                        if (pvc != NULL)
                                (void)k8s_pv_check(pv, pvc, "v", true, &err);
                }
                if (k8s_node_from_json(json, &node, &err) == 0) {
                        if (pv != NULL)
                                (void)k8s_pv_node_affinity_check(pv, node, &err);
                        k8s_node_free(node);
                }
                k8s_pv_free(pv);
                k8s_pvc_free(pvc);
                if (k8s_status_from_json(json, &status, &err) == 0)
                        k8s_status_free(status);
                if (k8s_pod_list_from_json(json, &plist, &err) == 0)
                        k8s_pod_list_free(plist);
                if (k8s_watch_event_from_json(json, &ev, &err) == 0) {
                        if (k8s_pod_from_json(ev.object, &pod, &err) == 0)
                                k8s_pod_free(pod);
                        k8s_watch_event_clear(&ev);
                }
                cJSON_Delete(json);
        }
        if (k8s_parse_documents((const char *)data, size, &docs, &n, &err) == 0)
                k8s_free_documents(docs, n);

        /* the quantity parser on the raw bytes, when they form a C string */
        if (size < 256 && memchr(data, '\0', size) == NULL) {
                char q[256];
                struct k8s_quantity qty;
                memcpy(q, data, size);
                q[size] = '\0';
                if (k8s_quantity_parse(q, &qty, &err) == 0) {
                        char buf[64];
                        k8s_quantity_format(&qty, buf, sizeof(buf));
                }
        }
        return 0;
}
