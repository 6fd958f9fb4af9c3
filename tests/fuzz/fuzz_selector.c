/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness for quantities and node selection: the first line is
 * fed to k8s_quantity_parse (and formatted back) and to k8s_parse_int64;
 * the rest is read as YAML/JSON documents, a pod then a node, and run
 * through the selector code the admission uses (nodeSelector, required and
 * preferred node affinity with In/NotIn/Exists/Gt/Lt and field selectors).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/k8s/k8s.h"
#include "agent/k8s/quantity.h"
#include "agent/k8s/selector.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct cb_error err = {0};
        const uint8_t *nl = memchr(data, '\n', size);
        size_t first = nl ? (size_t)(nl - data) : size;

        if (first < 256) {
                char line[256];
                struct k8s_quantity q;
                int64_t v;
                char buf[64];
                memcpy(line, data, first);
                line[first] = '\0';
                if (k8s_quantity_parse(line, &q, &err) == 0) {
                        struct k8s_quantity q2;
                        if (k8s_quantity_format(&q, buf, sizeof(buf)) < 0)
                                abort();
                        /* the canonical form parses back to the same value */
                        if (k8s_quantity_parse(buf, &q2, &err) != 0 || q2.value != q.value ||
                            q2.milli != q.milli)
                                abort();
                }
                (void)k8s_parse_int64(line, &v);
        }
        if (nl == NULL)
                return 0;

        cJSON **docs = NULL;
        size_t n = 0;
        const char *rest = (const char *)nl + 1;
        size_t rest_len = size - first - 1;
        if (k8s_parse_documents(rest, rest_len, &docs, &n, &err) != 0)
                return 0;
        struct k8s_pod *pod = NULL;
        struct k8s_node *node = NULL;
        if (n >= 2 && k8s_pod_from_json(docs[0], &pod, &err) == 0 &&
            k8s_node_from_json(docs[1], &node, &err) == 0) {
                (void)k8s_pod_matches_node_selector(pod, node);
                (void)k8s_preferred_affinity_score(pod, node);
        }
        if (pod != NULL)
                k8s_pod_free(pod);
        if (node != NULL)
                k8s_node_free(node);
        k8s_free_documents(docs, n);
        return 0;
}
