/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The reason phrase Go's net/http puts after a status code ("401
 * Unauthorized"): what kube-apiserver, containerd and the registries'
 * clients print, so cubelet's messages match theirs. "" for a code it does
 * not know. */
const char *cb_http_reason_phrase(long code);
