/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Graceful node shutdown, as the kubelet's node shutdown manager
 * (pkg/kubelet/nodeshutdown, systemd/inhibit_linux.go), on the agent's
 * loop through libsystemd's sd-bus (the bus socket in epoll, its timeout
 * a timer; every call asynchronous):
 *
 *  1. on the system bus (DBUS_SYSTEM_BUS_ADDRESS, else
 *     /run/dbus/system_bus_socket), logind's InhibitDelayMaxUSec is read;
 *     lower than shutdownGracePeriod, the drop-in
 *     <logind_conf_dir>/99-cubelet.conf sets InhibitDelayMaxSec, logind is
 *     told to reload it (systemd1 KillUnit systemd-logind.service SIGHUP)
 *     and the value is read again (still lower: the manager stays off);
 *  2. the PrepareForShutdown signal is watched and a "shutdown" "delay"
 *     inhibitor taken (org.freedesktop.login1.Manager.Inhibit: a fd);
 *  3. PrepareForShutdown(true): a NodeShutdown event on the Node, the
 *     node NotReady ("node is shutting down"), new pods rejected
 *     (NodeShutdown), the regular pods stopped, then the critical ones
 *     (agent/k8s/shutdown.h: the groups and grace periods), each Failed
 *     with reason Terminated and the DisruptionTarget condition; a group
 *     ends when its pods are down or its time is up. Then the inhibitor
 *     is released and logind goes on;
 *  4. PrepareForShutdown(false) (shutdown cancelled): the node Ready
 *     again, pods admitted again, the inhibitor taken again.
 *
 * Without a system bus or logind the manager logs why once and stays off
 * (the kubelet: "Failed to start node shutdown manager"); the agent runs
 * on and a shutdown stops the pods without their grace period. A bus
 * lost after a good start is reconnected every second.
 */

#include <stdbool.h>
#include <stdint.h>

#include "agent/client/events.h"
#include "agent/core/loop.h"
#include "agent/pods/pods.h"
#include "lib/error.h"

#define AG_LOGIND_CONF_DIR "/etc/systemd/logind.conf.d"

struct ag_shutdown_config {
        uint64_t grace_ms;    /* shutdownGracePeriod (> 0: the manager is on) */
        uint64_t critical_ms; /* shutdownGracePeriodCriticalPods */
        const char *node_name;
        const char *logind_conf_dir; /* AG_LOGIND_CONF_DIR */
        struct ag_pods *pods;
        struct ag_events *events; /* NULL standalone */
        /* The node's Ready condition follows (the agent folds it into its
         * own not-ready reasons). */
        void (*shutting_down)(bool on, void *data);
        void *data;
};

struct ag_shutdown;

/* Connects and starts the sequence above (it runs on the loop). A config
 * without a grace period returns *ret NULL: graceful shutdown is off. */
int ag_shutdown_new(struct ag_loop *loop, const struct ag_shutdown_config *cfg,
                    struct ag_shutdown **ret, struct cb_error *err);
/* The inhibitor (if held) is closed with the bus: logind no longer waits. */
void ag_shutdown_free(struct ag_shutdown *s);
/* A shutdown is being handled (for /healthz and the status line). */
bool ag_shutdown_in_progress(const struct ag_shutdown *s);
