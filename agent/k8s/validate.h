/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The names of a pod that become path components on the node (its uid,
 * namespace and name in <root>/pods/<uid>, /var/log/pods/<ns>_<name>_<uid>,
 * cgroup paths; container and volume names below them), checked against
 * the shapes kube-apiserver's validation enforces, so an apiserver that
 * sends something else (a uid of "../../x", a name with a NUL or a '/')
 * cannot make the agent write, mount or delete outside its directories.
 * The messages are kube-apiserver's: `metadata.uid: Invalid value: "..":
 * ...`. Pure.
 */

#include <stdbool.h>
#include <stddef.h>

#include "agent/k8s/k8s.h"
#include "lib/error.h"

/* A DNS-1123 label: [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most 63. */
bool k8s_is_dns1123_label(const char *s);
/* A DNS-1123 subdomain: labels joined by '.', at most 253. */
bool k8s_is_dns1123_subdomain(const char *s);

/* metadata.uid (1..128 of [A-Za-z0-9._-], not "." or ".."), namespace
 * (label), name (subdomain), every container's name (label, unique across
 * init and regular containers), every volume's name (label, unique), every
 * volumeMount's name (label) and mountPath (absolute), hostPath paths
 * (absolute). -1 with the first violation. */
int k8s_pod_validate_paths(const struct k8s_pod *p, struct cb_error *err);

/* Fields cubelet does not implement set to something that needs them
 * (hostUsers: false, mountPropagation other than None, sysctls, ...; the
 * decoder records the first, docs/security.md lists them): -1 with the
 * rejection reason in *ret_reason (UnsupportedPodSpec, or the kubelet's
 * own where it has one: AppArmor, SysctlForbidden) and the message naming
 * the field and value. Admission refuses such a pod rather than run it
 * without what the field asks for. */
int k8s_pod_validate_supported(const struct k8s_pod *p, const char **ret_reason,
                               struct cb_error *err);

/* True when JSON text holds a \u0000 escape inside a string: cJSON would
 * cut the string there, so "web\u0000../x" would read as "web". Such a
 * response (one object: a ConfigMap, a Secret, a Node) is refused whole. */
bool k8s_json_has_nul(const char *text, size_t len);

/* Lists and watch events are refused per object instead (issue 15 item
 * 11: one hostile pod must not leave the node blind to all its pods):
 * k8s_json_mark_nul overwrites each \u0000 escape of the text in place with
 * six K8S_NUL_MARK bytes (0xff never occurs in UTF-8, and the text stays
 * valid JSON for cJSON, which keeps such bytes as they are), and returns
 * how many it marked. k8s_json_find_nul then finds the first key or string
 * of a parsed object that held one: true with its path
 * ("metadata.name", "spec.containers[0].env[1].value") in path. */
#define K8S_NUL_MARK '\xff'
size_t k8s_json_mark_nul(char *text, size_t len);
bool k8s_json_find_nul(const cJSON *obj, char *path, size_t size);
/* s for a message: each run of marks shown as the \u0000 it was. */
void k8s_nul_display(const char *s, char *buf, size_t size);
