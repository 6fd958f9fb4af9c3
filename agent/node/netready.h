/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The runtime's network readiness as the kubelet sees it through the CRI
 * (containerd's CNI plugin): ready once --cni-conf-dir holds a network
 * configuration (a *.conf, *.conflist or *.json file whose JSON has a
 * "type" or a "plugins" list). The directory is watched with inotify
 * (agent/core/inotify.h), never polled; on_change runs on the loop after
 * each change of readiness.
 */

#include <stdbool.h>

#include "agent/core/loop.h"
#include "lib/error.h"

#include "agent/pods/podworker.h" /* AG_NETWORK_NOT_READY_MESSAGE */

struct ag_netready;

/* Creates dir when missing (as containerd does) and watches it. */
int ag_netready_new(struct ag_loop *loop, const char *dir,
                    void (*on_change)(bool ready, void *data), void *data, struct ag_netready **ret,
                    struct cb_error *err);
bool ag_netready_ready(const struct ag_netready *nr);
/* The readiness flag itself, for struct ag_node_env (read on the loop). */
const bool *ag_netready_flag(const struct ag_netready *nr);
void ag_netready_free(struct ag_netready *nr);

/* Whether a directory holds a CNI network config now (pure but for reading it). */
bool ag_cni_dir_has_config(const char *dir);
