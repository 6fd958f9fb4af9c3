/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The local endpoint's live timeline page (GET /ui): HTML, CSS and JS built
 * into the binary (agent/core/page/, embedded by embed.cmake). The HTML is
 * rendered with the timelines at the time of the request as a plain table
 * (readable without JavaScript); the script (GET /ui/timeline.js) replaces
 * it with the live view fed by /timelines?watch=true. No external
 * resource: nodes have no internet.
 */

#include <stddef.h>

#include <cjson/cJSON.h>

/* The page for the /timelines document (NULL: no pods yet); malloc'd, NULL
 * when out of memory. */
char *ag_page_render(const cJSON *timelines);

/* A static file of the page ("timeline.js", "timeline.css"): its bytes and
 * content type, or NULL when there is none of that name. */
const char *ag_page_asset(const char *name, const char **ret_type, size_t *ret_len);
