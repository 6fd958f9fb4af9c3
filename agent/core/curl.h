/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * libcurl's multi socket interface on the agent's event loop: libcurl's
 * sockets are watched with the loop's epoll and its timer is a timerfd, so
 * transfers never block and never need polling. One adapter serves every
 * user (the API client, the HTTP probes): done is called, outside any
 * libcurl call, for each finished transfer (the easy handle has been
 * removed from the multi handle first; the caller frees it).
 */

#include <stdbool.h>

#include <curl/curl.h>

#include "agent/core/loop.h"
#include "lib/error.h"

struct ag_curl;

typedef void (*ag_curl_done_fn)(CURL *easy, CURLcode result, void *data);
/* After every libcurl action, outside libcurl (may be NULL): for work that
 * must not run from inside a libcurl callback. */
typedef void (*ag_curl_after_fn)(void *data);

int ag_curl_new(struct ag_loop *loop, ag_curl_done_fn done, ag_curl_after_fn after, void *data,
                struct ag_curl **ret, struct cb_error *err);
/* The multi handle, for curl_multi_setopt and curl_multi_add_handle. */
CURLM *ag_curl_multi(const struct ag_curl *c);
/* True inside a libcurl call that may call back (a write or header
 * callback): a transfer must not be removed from there. */
bool ag_curl_in_callback(const struct ag_curl *c);
/* Reports transfers that finished inside a call the caller made (e.g. an
 * add that failed at once); the loop does it after its own actions. */
void ag_curl_check(struct ag_curl *c);
/* curl_multi_cleanup: the cached connections close, their watchers go.
 * Transfers still added must have been removed by the caller. */
void ag_curl_free(struct ag_curl *c);
