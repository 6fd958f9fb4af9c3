/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * CNI (spec 1.0) as the kubelet's runtimes drive it: the first network
 * configuration in the conf dir (lexically sorted *.conf, *.conflist,
 * *.json; a .conf single plugin is wrapped into a list), plugins found
 * along the bin dirs and executed with CNI_* environment variables and
 * the per-plugin config on stdin. ADD runs the chain in order feeding each
 * plugin the previous result; CHECK and DEL use the cached ADD result and
 * DEL runs the chain in reverse. The cache (<cache_dir>/results/
 * <network>-<container id>-<ifname>, written atomically) also keeps the
 * network config, CNI_ARGS and runtimeConfig, so a DEL after a crash or a
 * config change tears down what was really set up.
 */

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "lib/error.h"
#include "runtime/sandbox.h"

#define RT_CNI_DEFAULT_BIN_DIRS "/usr/lib/cni:/opt/cni/bin"
#define RT_CNI_IFNAME           "eth0"
#define RT_CNI_TIMEOUT_MS       60000

/* A network configuration list (parsed; owns list). */
struct rt_cni_netconf {
        char path[RT_PATH_MAX]; /* the file it came from ("" when parsed from text) */
        cJSON *list;            /* {cniVersion, name, plugins: [...]} */
        const char *name;       /* inside list */
        const char *cni_version;
        size_t n_plugins;
};

/* The pod as CNI sees it. */
struct rt_cni_pod {
        const char *container_id; /* the sandbox id */
        const char *netns;        /* pinned netns path */
        const char *name, *namespace_, *uid;
        const struct rt_port_mapping *ports;
        size_t n_ports;
};

/* What matters of a result. */
struct rt_cni_result {
        char ips[8][64]; /* every ips[].address without the prefix length */
        size_t n_ips;
        char pod_ips[2][64]; /* first IPv4, then first IPv6 */
        size_t n_pod_ips;
        char interfaces[8][32];
        size_t n_interfaces;
        size_t n_routes;
};

/* Parses a .conflist (or a .conf, wrapped into a list) from text. */
int rt_cni_parse_netconf(const char *text, bool single_plugin, struct rt_cni_netconf *ret,
                         struct cb_error *err);
/* Loads the first configuration file of conf_dir (sorted by name). */
int rt_cni_load_netconf(const char *conf_dir, struct rt_cni_netconf *ret, struct cb_error *err);
void rt_cni_netconf_release(struct rt_cni_netconf *nc);

/* "IgnoreUnknown=1;K8S_POD_NAMESPACE=..;K8S_POD_NAME=..;
 * K8S_POD_INFRA_CONTAINER_ID=..;K8S_POD_UID=.."; values with ';' or '='
 * are refused. */
int rt_cni_build_args(const struct rt_cni_pod *pod, char *buf, size_t size, struct cb_error *err);

/* The runtimeConfig capability args for a pod ({"portMappings": [...]}). */
cJSON *rt_cni_capability_args(const struct rt_port_mapping *ports, size_t n_ports);

/* The stdin for plugin i of nc: its config plus name, cniVersion,
 * prevResult (when not NULL) and runtimeConfig with the capability args
 * the plugin declares in "capabilities" (portMappings). NULL on ENOMEM. */
cJSON *rt_cni_plugin_stdin(const struct rt_cni_netconf *nc, size_t i, const cJSON *prev_result,
                           const cJSON *capability_args, struct cb_error *err);

/* Parses a result (0.3.0 .. 1.0.0 layout). */
int rt_cni_parse_result(const cJSON *result, struct rt_cni_result *ret, struct cb_error *err);

/* Turns a plugin's failure into a message: the CNI error JSON {code, msg,
 * details} on stdout when there is one, else stderr, else the exit status. */
void rt_cni_describe_failure(const char *out, const char *errout, int status, char *buf,
                             size_t size, int *ret_code);

/* Runs a plugin: env is the complete environment (NULL-terminated), stdin
 * the input. Succeeds only on exit status 0; *ret_out (malloc'd) is its
 * stdout. On failure *ret_cni_code (may be NULL) is the code of the CNI
 * error JSON (0 without one). A plugin running longer than timeout_ms
 * (0 = RT_CNI_TIMEOUT_MS) is killed. */
int rt_cni_exec(const char *path, char *const env[], const char *stdin_data, int timeout_ms,
                char **ret_out, int *ret_cni_code, struct cb_error *err);

/* The network operations. cache_dir holds the cached results. */
struct rt_cni_ctx {
        const char *conf_dir;
        const char *bin_dirs; /* NULL = RT_CNI_DEFAULT_BIN_DIRS */
        const char *cache_dir;
        int timeout_ms; /* 0 = RT_CNI_TIMEOUT_MS */
};
int rt_cni_add(const struct rt_cni_ctx *ctx, const struct rt_cni_pod *pod,
               struct rt_cni_result *ret, struct cb_error *err);
int rt_cni_check(const struct rt_cni_ctx *ctx, const struct rt_cni_pod *pod, struct cb_error *err);
/* Idempotent: without a cache entry (and with no conf to fall back on) there
 * is nothing to delete. Runs every plugin even when one fails, ignoring
 * "not found" outcomes (CNI error code 3, a missing plugin binary, messages
 * saying the thing does not exist); the cache entry goes only on success. */
int rt_cni_del(const struct rt_cni_ctx *ctx, const struct rt_cni_pod *pod, struct cb_error *err);
