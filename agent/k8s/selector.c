/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/k8s/selector.h"

#include <string.h>

bool k8s_parse_int64(const char *s, int64_t *ret)
{
        if (s == NULL || *s == '\0')
                return false;
        bool neg = false;
        if (*s == '+' || *s == '-') {
                neg = *s == '-';
                s++;
        }
        if (*s == '\0')
                return false;
        /* Accumulate as a negative number so INT64_MIN is representable. */
        int64_t v = 0;
        for (; *s != '\0'; s++) {
                if (*s < '0' || *s > '9')
                        return false;
                int d = *s - '0';
                if (v < (INT64_MIN + d) / 10)
                        return false;
                v = v * 10 - d;
        }
        if (!neg) {
                if (v == INT64_MIN)
                        return false;
                v = -v;
        }
        *ret = v;
        return true;
}

/* Local lookup: this module must not depend on the decoder's object file. */
static const char *label_get(const struct k8s_map *m, const char *key)
{
        if (m == NULL || key == NULL)
                return NULL;
        for (size_t i = 0; i < m->n; i++)
                if (m->items[i].key != NULL && strcmp(m->items[i].key, key) == 0)
                        return m->items[i].value != NULL ? m->items[i].value : "";
        return NULL;
}

static bool value_in(const struct k8s_requirement *r, const char *v)
{
        for (size_t i = 0; i < r->n_values; i++)
                if (r->values[i] != NULL && strcmp(r->values[i], v) == 0)
                        return true;
        return false;
}

bool k8s_requirement_matches(const struct k8s_requirement *r, const struct k8s_map *labels)
{
        if (r == NULL || r->key == NULL)
                return false;
        const char *v = label_get(labels, r->key);
        switch (r->op) {
        case K8S_OP_IN:
                if (r->n_values == 0)
                        return false; /* invalid: In needs values */
                return v != NULL && value_in(r, v);
        case K8S_OP_NOT_IN:
                if (r->n_values == 0)
                        return false;
                return v == NULL || !value_in(r, v);
        case K8S_OP_EXISTS:
                if (r->n_values != 0)
                        return false; /* invalid: Exists takes no values */
                return v != NULL;
        case K8S_OP_DOES_NOT_EXIST:
                if (r->n_values != 0)
                        return false;
                return v == NULL;
        case K8S_OP_GT:
        case K8S_OP_LT: {
                int64_t want, have;
                if (r->n_values != 1 || !k8s_parse_int64(r->values[0], &want))
                        return false;
                if (v == NULL || !k8s_parse_int64(v, &have))
                        return false;
                return r->op == K8S_OP_GT ? have > want : have < want;
        }
        }
        return false;
}

bool k8s_field_requirement_matches(const struct k8s_requirement *r, const char *node_name)
{
        if (r == NULL || r->key == NULL || strcmp(r->key, "metadata.name") != 0)
                return false;
        if (r->n_values != 1 || r->values[0] == NULL)
                return false;
        const char *name = node_name != NULL ? node_name : "";
        switch (r->op) {
        case K8S_OP_IN:
                return strcmp(name, r->values[0]) == 0;
        case K8S_OP_NOT_IN:
                return strcmp(name, r->values[0]) != 0;
        default:
                return false; /* field selectors support only = and != */
        }
}

bool k8s_node_selector_term_matches(const struct k8s_node_selector_term *t,
                                    const struct k8s_node *node)
{
        if (t == NULL || node == NULL)
                return false;
        if (t->n_match_expressions == 0 && t->n_match_fields == 0)
                return false;
        for (size_t i = 0; i < t->n_match_expressions; i++)
                if (!k8s_requirement_matches(&t->match_expressions[i], &node->meta.labels))
                        return false;
        for (size_t i = 0; i < t->n_match_fields; i++)
                if (!k8s_field_requirement_matches(&t->match_fields[i], node->meta.name))
                        return false;
        return true;
}

bool k8s_node_selector_terms_match(const struct k8s_node_selector_term *terms, size_t n,
                                   const struct k8s_node *node)
{
        for (size_t i = 0; i < n; i++)
                if (k8s_node_selector_term_matches(&terms[i], node))
                        return true;
        return false;
}

bool k8s_pod_matches_node_selector(const struct k8s_pod *pod, const struct k8s_node *node)
{
        if (pod == NULL || node == NULL)
                return false;
        const struct k8s_map *sel = &pod->spec.node_selector;
        for (size_t i = 0; i < sel->n; i++) {
                const char *have = label_get(&node->meta.labels, sel->items[i].key);
                const char *want = sel->items[i].value != NULL ? sel->items[i].value : "";
                if (have == NULL || strcmp(have, want) != 0)
                        return false;
        }
        const struct k8s_node_affinity *na = &pod->spec.node_affinity;
        if (na->has_required)
                return k8s_node_selector_terms_match(na->required_terms, na->n_required_terms,
                                                     node);
        return true;
}

int64_t k8s_preferred_affinity_score(const struct k8s_pod *pod, const struct k8s_node *node)
{
        if (pod == NULL || node == NULL)
                return 0;
        int64_t score = 0;
        const struct k8s_node_affinity *na = &pod->spec.node_affinity;
        for (size_t i = 0; i < na->n_preferred; i++) {
                if (na->preferred[i].weight == 0)
                        continue;
                if (k8s_node_selector_term_matches(&na->preferred[i].preference, node))
                        score += na->preferred[i].weight;
        }
        return score;
}

const char *k8s_selector_op_name(enum k8s_selector_op op)
{
        switch (op) {
        case K8S_OP_IN:
                return "In";
        case K8S_OP_NOT_IN:
                return "NotIn";
        case K8S_OP_EXISTS:
                return "Exists";
        case K8S_OP_DOES_NOT_EXIST:
                return "DoesNotExist";
        case K8S_OP_GT:
                return "Gt";
        case K8S_OP_LT:
                return "Lt";
        }
        return "";
}
