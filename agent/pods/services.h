/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The cluster's Services as the agent's Services reflector last listed
 * them (the kubelet's service informer, spec.clusterIP!=None), decoded
 * once per version (agent/k8s/service.h), for the pods' docker-link
 * variables. Loop only.
 */

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "agent/k8s/service.h"
#include "lib/arena.h"
#include "lib/error.h"

struct ag_services;

struct ag_services *ag_services_new(void);
void ag_services_free(struct ag_services *s);

/* An object of the reflector: added or updated (json), or deleted (json NULL). */
int ag_services_set(struct ag_services *s, const char *uid, const cJSON *json,
                    struct cb_error *err);
/* The first list arrived (the kubelet's serviceHasSynced). */
void ag_services_mark_synced(struct ag_services *s);
bool ag_services_synced(const struct ag_services *s);

/* The pod's variables (k8s_service_env) in arena. -1 before the first
 * list, with the kubelet's message (the container waits,
 * CreateContainerConfigError, and is retried). */
int ag_services_env(const struct ag_services *s, struct cb_arena *a, const char *ns,
                    bool enable_service_links, char ***ret_env, size_t *ret_n,
                    struct cb_error *err);
