/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Taints and tolerations (api core/v1 toleration.go ToleratesTaint,
 * component-helpers FindMatchingUntoleratedTaint, the taint eviction
 * controller's GetMatchingTolerations/getMinTolerationTime). Pure functions.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/k8s/k8s.h"

/*
 * A toleration tolerates a taint when:
 *  - its effect is empty (K8S_EFFECT_ALL) or equals the taint's effect;
 *  - its key is empty (matches every key) or equals the taint's key;
 *  - Equal: values are equal (NULL counts as ""); Exists: always;
 *    Gt / Lt (alpha TaintTolerationComparisonOperators): both values are
 *    canonical decimal int64 ("0" or -?[1-9][0-9]*) and taint > toleration
 *    (Gt) or taint < toleration (Lt).
 * Gt/Lt are evaluated as if the feature gate were on: the apiserver only
 * accepts such tolerations when the gate is enabled there.
 */
bool k8s_toleration_tolerates(const struct k8s_toleration *tol, const struct k8s_taint *taint);

/* The first toleration (in pod order) that tolerates the taint, or NULL. */
const struct k8s_toleration *k8s_find_toleration(const struct k8s_toleration *tols, size_t n_tols,
                                                 const struct k8s_taint *taint);

/* The first taint (in node order) with the given effect that no toleration
 * tolerates, or NULL. K8S_EFFECT_ALL considers every taint. */
const struct k8s_taint *k8s_find_untolerated_taint(const struct k8s_toleration *tols, size_t n_tols,
                                                   const struct k8s_taint *taints, size_t n_taints,
                                                   enum k8s_taint_effect effect);

enum k8s_noexecute_action {
        K8S_NOEXEC_NO_TAINTS,        /* no NoExecute taint: nothing to do */
        K8S_NOEXEC_TOLERATE_FOREVER, /* all tolerated, no tolerationSeconds set */
        K8S_NOEXEC_EVICT_AFTER,      /* all tolerated; evict `seconds` after first seen */
        K8S_NOEXEC_EVICT_NOW,        /* untolerated taint, or tolerationSeconds <= 0 */
};

struct k8s_noexecute_verdict {
        enum k8s_noexecute_action action;
        int64_t seconds; /* EVICT_AFTER: the minimum tolerationSeconds (> 0); else 0 */
        /* EVICT_NOW because of an untolerated taint: the first such taint.
         * NULL when EVICT_NOW comes from a tolerationSeconds <= 0. */
        const struct k8s_taint *untolerated;
};

/*
 * What the taint eviction controller decides for a pod on a node, looking
 * at NoExecute taints only:
 *  - any NoExecute taint not tolerated -> EVICT_NOW (which taint);
 *  - else, for each NoExecute taint the FIRST toleration that tolerates it
 *    (as GetMatchingTolerations does) is "used"; the minimum
 *    tolerationSeconds among the used tolerations decides: none set ->
 *    TOLERATE_FOREVER, any <= 0 -> EVICT_NOW, else EVICT_AFTER min seconds.
 * The clock starts when the eviction is first scheduled, not at timeAdded.
 */
void k8s_noexecute_verdict(const struct k8s_toleration *tols, size_t n_tols,
                           const struct k8s_taint *taints, size_t n_taints,
                           struct k8s_noexecute_verdict *ret);

/* Per-taint view for inspect output. */
struct k8s_taint_verdict {
        bool tolerated;
        const struct k8s_toleration *toleration; /* the first that tolerates, or NULL */
        bool has_seconds;                        /* that toleration sets tolerationSeconds */
        int64_t seconds;
};

void k8s_taint_verdict(const struct k8s_toleration *tols, size_t n_tols,
                       const struct k8s_taint *taint, struct k8s_taint_verdict *ret);
