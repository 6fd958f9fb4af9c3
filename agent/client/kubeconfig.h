/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A kubeconfig file (YAML or JSON, parsed with k8s_parse_text): the
 * current-context (or the one named), its cluster and user. Certificate
 * material given inline (*-data, base64) is decoded into memory and handed
 * to libcurl as blobs; files are kept as paths, resolved against the
 * kubeconfig's directory as client-go does. TLS verification stays on
 * unless insecure-skip-tls-verify is true.
 */

#include <stdbool.h>
#include <stddef.h>

#include "lib/error.h"

struct ag_blob {
        char *data; /* malloc'd, NUL-terminated for convenience */
        size_t len;
};

struct ag_kubeconfig {
        char *path; /* the file read, for messages */
        char *context, *cluster_name, *user_name;
        char *server; /* without a trailing slash */
        char *ca_file;
        struct ag_blob ca_data;
        char *cert_file, *key_file;
        struct ag_blob cert_data, key_data;
        char *token; /* token, or the content of tokenFile (trimmed) */
        char *token_file;
        bool insecure_skip_tls_verify;
};

/* Parses text; path names the file in messages and is the base for
 * relative paths (may be NULL: the current directory). context selects a
 * context other than current-context (NULL: current-context). */
int ag_kubeconfig_parse(const char *text, size_t len, const char *path, const char *context,
                        struct ag_kubeconfig *ret, struct cb_error *err);
int ag_kubeconfig_load(const char *path, const char *context, struct ag_kubeconfig *ret,
                       struct cb_error *err);
void ag_kubeconfig_clear(struct ag_kubeconfig *kc);

/* Strict base64 (RFC 4648, padding optional, whitespace skipped). */
int ag_base64_decode(const char *in, size_t len, struct ag_blob *ret, struct cb_error *err);
