/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The ConfigMaps and Secrets the node's pods refer to, kept current as the
 * kubelet's watch-based managers do (pkg/kubelet/util/manager/
 * watch_based_manager.go, the Watch change-detection strategy): each pod
 * registers the objects it references (volumes, env, envFrom); each
 * referenced object gets one reflector (LIST+WATCH of
 * /api/v1/namespaces/<ns>/{configmaps,secrets} with the field selector
 * metadata.name=<name>, which the Node authorizer allows for an object a
 * pod bound to the node refers to), shared by every pod that refers to it
 * and stopped when the last one lets go, or once the object read is
 * immutable (objectCache.Get). A change of a watched object
 * calls the callbacks of the pods that refer to it, on the loop.
 */

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "agent/client/apiclient.h"
#include "agent/core/loop.h"
#include "agent/k8s/k8s.h"
#include "lib/error.h"

enum ag_obj_kind { AG_OBJ_CONFIG_MAP, AG_OBJ_SECRET };

struct ag_obj_ref {
        enum ag_obj_kind kind;
        const char *name;
};

struct ag_objmgr;
struct ag_objmgr_entry;

/* A referenced object changed (added, updated, deleted) or its first list
 * arrived. */
typedef void (*ag_objmgr_fn)(enum ag_obj_kind kind, const char *ns, const char *name, void *data);

/* How an entry's object is watched; NULL in ag_objmgr_new: a reflector
 * through api. Tests give fakes and feed ag_objmgr_deliver. */
struct ag_objmgr_watch_ops {
        void *(*start)(struct ag_objmgr *m, struct ag_objmgr_entry *e, enum ag_obj_kind kind,
                       const char *ns, const char *name, void *data);
        void (*stop)(void *watch, void *data);
        void *data;
};

int ag_objmgr_new(struct ag_loop *loop, struct ag_api *api, const struct ag_objmgr_watch_ops *ops,
                  struct ag_objmgr **ret, struct cb_error *err);
void ag_objmgr_free(struct ag_objmgr *m);

/* Sets the objects the pod (uid) refers to, replacing what it registered
 * before (duplicates are fine); watches start for new objects, stop for
 * objects nobody refers to any more. fn (may be NULL) is called when one
 * of them changes. */
int ag_objmgr_register(struct ag_objmgr *m, const char *pod_uid, const char *ns,
                       const struct ag_obj_ref *refs, size_t n, ag_objmgr_fn fn, void *data,
                       struct cb_error *err);
void ag_objmgr_unregister(struct ag_objmgr *m, const char *pod_uid);

/* The object as last seen: 1 and *ret (valid until the loop returns to its
 * callbacks) when it exists; 0 when the watch has synced and it does not
 * exist; -1 when the object is not registered or not synced yet (err says
 * so: the caller retries). */
int ag_objmgr_get(struct ag_objmgr *m, enum ag_obj_kind kind, const char *ns, const char *name,
                  const struct k8s_keyed_data **ret, struct cb_error *err);

/* Objects watched now (one per referenced object that is not immutable). */
size_t ag_objmgr_watches(const struct ag_objmgr *m);

/* For watch implementations: the object's JSON after a change (NULL:
 * deleted), or the first list done (synced). */
void ag_objmgr_deliver(struct ag_objmgr *m, struct ag_objmgr_entry *e, const cJSON *obj);
void ag_objmgr_synced(struct ag_objmgr *m, struct ag_objmgr_entry *e);

/* "configmap" / "secret" (the kubelet's messages: configmap "x" not found). */
const char *ag_obj_kind_name(enum ag_obj_kind kind);
