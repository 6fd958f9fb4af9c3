/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Registry credentials as the kubelet's keyring holds them (k/k
 * pkg/credentialprovider: config.go, keyring.go):
 *  - formats: a config.json / kubernetes.io/dockerconfigjson
 *    ({"auths": {KEY: {...}}}) and a .dockercfg / kubernetes.io/dockercfg
 *    ({KEY: {...}}); an entry's "auth" (base64 "user:password") wins over
 *    its "username"/"password";
 *  - a KEY is "[scheme://]host[:port][/path]"; an image matches when the
 *    host's dot-separated parts match (each may be a glob, "*.example.com"),
 *    the ports are equal and the key's path is a prefix of the image's;
 *    Docker Hub keys ("https://index.docker.io/v1/", "docker.io") match
 *    images without a registry;
 *  - lookup returns every match, the most specific first (keys in reverse
 *    lexicographic order), a pod's pull secrets before the node's own.
 * Pure: the caller reads the files (k8s_docker_config_paths) and Secrets.
 * Credentials are never put into error messages.
 */

#include <stdbool.h>
#include <stddef.h>

#include "agent/k8s/k8s.h"
#include "lib/arena.h"
#include "lib/error.h"

struct k8s_registry_cred {
        const char *key; /* as written in the file/Secret, normalized: "host[:port][/path]" */
        const char *username, *password;
        int origin; /* the order of the source it came from (pull secrets first) */
};

struct k8s_keyring {
        struct cb_arena *a;
        struct k8s_registry_cred *v;
        size_t n, cap;
};

/* Adds the entries of a config.json (dockercfg false) or a .dockercfg
 * (true) text; origin orders sources (lower first). -1 when it does not
 * parse; err names what (source), never a value. */
int k8s_keyring_add_text(struct k8s_keyring *k, const char *text, bool dockercfg, int origin,
                         const char *source, struct cb_error *err);
/* A kubernetes.io/dockerconfigjson (.dockerconfigjson) or
 * kubernetes.io/dockercfg (.dockercfg) Secret; other types are an error
 * naming the Secret and its type. */
int k8s_keyring_add_secret(struct k8s_keyring *k, const struct k8s_keyed_data *secret, int origin,
                           struct cb_error *err);

/* The credentials for image ("registry:5000/ns/app:tag", "nginx"), the
 * most specific first; at most max into ret. Returns how many. */
size_t k8s_keyring_lookup(const struct k8s_keyring *k, const char *image,
                          const struct k8s_registry_cred **ret, size_t max);

/* The kubelet's search paths for the node's own credentials, in order:
 * config.json in root_dir, cwd, $HOME/.docker, /.docker, then .dockercfg in
 * root_dir, cwd, $HOME, /. ret[i] in arena; returns how many (at most 8). */
size_t k8s_docker_config_paths(struct cb_arena *a, const char *root_dir, const char *cwd,
                               const char *home, const char *ret[8], bool ret_dockercfg[8]);
