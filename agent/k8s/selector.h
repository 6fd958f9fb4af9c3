/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Node selection as the kubelet's admission sees it (k8s.io/component-helpers
 * scheduling/corev1/nodeaffinity, apimachinery labels.Requirement.Matches):
 * label requirements, node selector terms, spec.nodeSelector plus required
 * node affinity, and the preferred-terms score. Pure functions, no I/O.
 *
 * A requirement that the API would reject (In/NotIn without values,
 * Exists/DoesNotExist with values, Gt/Lt without exactly one integer value,
 * a matchFields key other than metadata.name) never matches; like the
 * lazy-error selector of the kubelet, it makes its whole term not match
 * while the other terms are still evaluated.
 */

#include <stdbool.h>
#include <stdint.h>

#include "agent/k8s/k8s.h"

/* strconv.ParseInt(s, 10, 64): optional sign, decimal digits (leading zeros
 * allowed), within int64. Returns false for anything else. */
bool k8s_parse_int64(const char *s, int64_t *ret);

/* One matchExpressions requirement against a label map:
 *   In: key present and value in values; NotIn: key absent or value not in
 *   values; Exists / DoesNotExist; Gt / Lt: label and the single value both
 *   parse as int64 and label > value (< for Lt). */
bool k8s_requirement_matches(const struct k8s_requirement *r, const struct k8s_map *labels);

/* One matchFields requirement: only key "metadata.name" with In / NotIn and
 * exactly one value is supported (as in the kubelet); anything else is false. */
bool k8s_field_requirement_matches(const struct k8s_requirement *r, const char *node_name);

/* A term: all expressions AND all fields. A term with neither matches nothing. */
bool k8s_node_selector_term_matches(const struct k8s_node_selector_term *t,
                                    const struct k8s_node *node);

/* Terms are ORed; zero terms match nothing. */
bool k8s_node_selector_terms_match(const struct k8s_node_selector_term *terms, size_t n,
                                   const struct k8s_node *node);

/* spec.nodeSelector (every key=value present among the node labels) AND,
 * when requiredDuringSchedulingIgnoredDuringExecution is present, its terms. */
bool k8s_pod_matches_node_selector(const struct k8s_pod *pod, const struct k8s_node *node);

/* Sum of the weights of the preferred terms that match the node (terms with
 * weight 0 are skipped, as the scheduler does). For inspect output. */
int64_t k8s_preferred_affinity_score(const struct k8s_pod *pod, const struct k8s_node *node);

/* "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt". */
const char *k8s_selector_op_name(enum k8s_selector_op op);
