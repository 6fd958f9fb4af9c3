/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Static pods: the kubelet's file source (pkg/kubelet/config/file*.go,
 * common.go). Every regular file of the directory (staticPodPath /
 * --pod-manifest-path) not starting with "." holds one Pod in YAML or
 * JSON. The directory is watched with inotify (a change is read 100 ms
 * later, so an editor's several writes are one change) and rescanned every
 * fileCheckFrequency (20 s); a missing directory is looked for again at
 * every rescan.
 *
 * Each manifest is defaulted as the kubelet's applyDefaults does:
 *  - metadata.uid, when the manifest has none: the hex FNV-128a hash of the
 *    manifest, "host:<node>" and "file:<path>" (so an edit makes a new uid,
 *    and the same file gives the same uid after an agent restart);
 *  - metadata.name "<name>-<node>"; namespace "default" when unset;
 *    spec.nodeName <node>;
 *  - annotations kubernetes.io/config.hash = the uid,
 *    kubernetes.io/config.source = "file", kubernetes.io/config.seen = when
 *    this agent first read it (RFC 3339, nanoseconds);
 *  - the toleration {operator: Exists, effect: NoExecute};
 *  - status.phase Pending.
 *
 * A new file or a new uid (an edited file) is an add; the old uid of an
 * edited file and a removed file are a remove. A file that cannot be read
 * or decoded is logged (once per content) and leaves its previous pod as it
 * was, so a half-written file does not stop a running pod.
 */

#include <stdint.h>

#include <cjson/cJSON.h>

#include "agent/core/loop.h"
#include "lib/error.h"

#define AG_STATIC_POD_RESCAN_MS 20000
#define AG_STATIC_POD_SETTLE_MS 100

/* ---- pure (unit tested) ---- */

/* The hex FNV-128a of data (32 hex digits and a NUL in ret). */
void ag_fnv128a_hex(const void *data, size_t len, char ret[33]);

/* Decodes one manifest's text and applies the kubelet's defaults (above).
 * seen is the config.seen value. Errors name the field. */
int ag_static_pod_from_text(const char *text, size_t len, const char *path, const char *node_name,
                            const char *seen, cJSON **ret, struct cb_error *err);

/* ---- the watcher ---- */

struct ag_static_pods_ops {
        /* A pod to run: the defaulted pod (borrowed) and its file. */
        void (*add)(const cJSON *pod, const char *path, void *data);
        /* The same uid with different metadata (a manifest with a fixed uid
         * was edited): the newest object (borrowed). */
        void (*update)(const cJSON *pod, const char *path, void *data);
        /* The pod of uid is gone from the directory (file removed, or
         * edited into a new uid). */
        void (*remove)(const char *uid, void *data);
        /* After every scan of the directory (n pods). */
        void (*scanned)(size_t n, void *data);
};

struct ag_static_pods;

int ag_static_pods_new(struct ag_loop *loop, const char *dir, const char *node_name,
                       uint64_t rescan_ms, const struct ag_static_pods_ops *ops, void *data,
                       struct ag_static_pods **ret, struct cb_error *err);
/* The first scan, now (its adds are called before it returns), then the
 * watch and the periodic rescans. */
void ag_static_pods_start(struct ag_static_pods *s);
/* Stops watching; no callbacks (the pods keep running). */
void ag_static_pods_free(struct ag_static_pods *s);
