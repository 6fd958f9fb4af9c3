/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/k8s/taint.h"

#include <string.h>

#include "agent/k8s/selector.h"

static const char *str_or_empty(const char *s)
{
        return s != NULL ? s : "";
}

/* apimachinery content.IsDecimalInteger: "0" or -?[1-9][0-9]* (no '+', no
 * leading zeros), then strconv.ParseInt range. */
static bool parse_canonical_int64(const char *s, int64_t *ret)
{
        const char *p = s;
        if (*p == '-')
                p++;
        if (*p == '0')
                return p == s && p[1] == '\0' && k8s_parse_int64(s, ret);
        if (*p < '1' || *p > '9')
                return false;
        return k8s_parse_int64(s, ret);
}

bool k8s_toleration_tolerates(const struct k8s_toleration *tol, const struct k8s_taint *taint)
{
        if (tol == NULL || taint == NULL)
                return false;
        if (tol->effect != K8S_EFFECT_ALL && tol->effect != taint->effect)
                return false;
        const char *key = str_or_empty(tol->key);
        if (key[0] != '\0' && strcmp(key, str_or_empty(taint->key)) != 0)
                return false;
        switch (tol->op) {
        case K8S_TOL_EQUAL:
                return strcmp(str_or_empty(tol->value), str_or_empty(taint->value)) == 0;
        case K8S_TOL_EXISTS:
                return true;
        case K8S_TOL_GT:
        case K8S_TOL_LT: {
                int64_t tv, nv;
                if (!parse_canonical_int64(str_or_empty(tol->value), &tv) ||
                    !parse_canonical_int64(str_or_empty(taint->value), &nv))
                        return false;
                return tol->op == K8S_TOL_GT ? nv > tv : nv < tv;
        }
        }
        return false;
}

const struct k8s_toleration *k8s_find_toleration(const struct k8s_toleration *tols, size_t n_tols,
                                                 const struct k8s_taint *taint)
{
        for (size_t i = 0; i < n_tols; i++)
                if (k8s_toleration_tolerates(&tols[i], taint))
                        return &tols[i];
        return NULL;
}

const struct k8s_taint *k8s_find_untolerated_taint(const struct k8s_toleration *tols, size_t n_tols,
                                                   const struct k8s_taint *taints, size_t n_taints,
                                                   enum k8s_taint_effect effect)
{
        for (size_t i = 0; i < n_taints; i++) {
                if (effect != K8S_EFFECT_ALL && taints[i].effect != effect)
                        continue;
                if (k8s_find_toleration(tols, n_tols, &taints[i]) == NULL)
                        return &taints[i];
        }
        return NULL;
}

void k8s_noexecute_verdict(const struct k8s_toleration *tols, size_t n_tols,
                           const struct k8s_taint *taints, size_t n_taints,
                           struct k8s_noexecute_verdict *ret)
{
        memset(ret, 0, sizeof(*ret));
        bool any = false, any_seconds = false;
        int64_t min = INT64_MAX;
        for (size_t i = 0; i < n_taints; i++) {
                if (taints[i].effect != K8S_EFFECT_NO_EXECUTE)
                        continue;
                any = true;
                const struct k8s_toleration *t = k8s_find_toleration(tols, n_tols, &taints[i]);
                if (t == NULL) {
                        ret->action = K8S_NOEXEC_EVICT_NOW;
                        ret->untolerated = &taints[i];
                        return;
                }
                if (t->has_toleration_seconds) {
                        any_seconds = true;
                        if (t->toleration_seconds < min)
                                min = t->toleration_seconds;
                }
        }
        if (!any) {
                ret->action = K8S_NOEXEC_NO_TAINTS;
        } else if (!any_seconds) {
                ret->action = K8S_NOEXEC_TOLERATE_FOREVER;
        } else if (min <= 0) {
                ret->action = K8S_NOEXEC_EVICT_NOW;
        } else {
                ret->action = K8S_NOEXEC_EVICT_AFTER;
                ret->seconds = min;
        }
}

void k8s_taint_verdict(const struct k8s_toleration *tols, size_t n_tols,
                       const struct k8s_taint *taint, struct k8s_taint_verdict *ret)
{
        memset(ret, 0, sizeof(*ret));
        const struct k8s_toleration *t = k8s_find_toleration(tols, n_tols, taint);
        if (t == NULL)
                return;
        ret->tolerated = true;
        ret->toleration = t;
        ret->has_seconds = t->has_toleration_seconds;
        ret->seconds = t->toleration_seconds;
}
