/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Shared between the image store, import and pull; not a public API. */

#include <stdint.h>
#include <sys/types.h>

#include "lib/error.h"
#include "runtime/image.h"

#define RT_DIGEST_LEN      71 /* "sha256:" + 64 hex */
#define RT_MANIFEST_MAX    (4u << 20)
#define RT_CONFIG_MAX      (16u << 20)
#define RT_INDEX_DEPTH_MAX 4

#define RT_MT_OCI_INDEX       "application/vnd.oci.image.index.v1+json"
#define RT_MT_OCI_MANIFEST    "application/vnd.oci.image.manifest.v1+json"
#define RT_MT_DOCKER_LIST     "application/vnd.docker.distribution.manifest.list.v2+json"
#define RT_MT_DOCKER_MANIFEST "application/vnd.docker.distribution.manifest.v2+json"

/* An open, locked store. */
struct rt_store {
        char images[2048]; /* <root>/images */
        char stage[2304];  /* this operation's staging dir, or "" */
        int lockfd;
        /* the cubelet-unpack binary that unpacks layers (absolute; set by
         * the caller after rt_store_open): rt_layer_unpack_helper */
        const char *unpack_helper;
};

/* runtime/beneath.c: the components of a relative archive path. */
struct rt_components {
        char *buf;
        char **v;
        size_t n;
};
void rt_components_free(struct rt_components *c);
/* Splits p on '/', dropping leading "./", empty and "." components.
 * Refuses absolute paths and "..". Returns 0 or -1 with *why set. */
int rt_split_path(const char *p, struct rt_components *ret, const char **why);
/* Opens the directory named by comps[0..n) below rootfd, one component at
 * a time, never following a symlink. Missing components are created (0755)
 * when create is set. entry names the path in errors. */
int rt_open_dirs_beneath(int rootfd, char **comps, size_t n, int create, const char *entry,
                         struct cb_error *err);

/* Creates the layout if needed, takes the store lock and a staging dir. */
int rt_store_open(const char *root_dir, struct rt_store *s, struct cb_error *err);
/* Removes the staging dir and releases the lock. */
void rt_store_close(struct rt_store *s);

/* The staged copy <stage>/blobs/<hex>, or the stored one if present. */
int rt_store_find_blob(const struct rt_store *s, const char *digest, char *buf, size_t size);

/* A hashing sink: bytes go to a temp file in the staging dir and through
 * sha256; finish() compares the digest and size, and on success moves the
 * file to <stage>/blobs/<hex>. Nothing is kept on a mismatch. */
struct rt_sink {
        void *md; /* EVP_MD_CTX */
        int fd;
        uint64_t written;
        uint64_t limit; /* 0: none */
        char tmp[4200];
        const struct rt_store *store;
};
int rt_sink_open(struct rt_sink *k, const struct rt_store *s, uint64_t limit, struct cb_error *err);
int rt_sink_write(struct rt_sink *k, const void *data, size_t len, struct cb_error *err);
/* expected may be NULL (the digest is computed, for docker archives);
 * expected_size < 0 when unknown. ret_digest gets the computed digest. */
int rt_sink_finish(struct rt_sink *k, const char *expected, int64_t expected_size,
                   char ret_digest[RT_DIGEST_LEN + 1], struct cb_error *err);
void rt_sink_discard(struct rt_sink *k);

/* Stages a verified copy of fd's content. */
int rt_stage_fd(const struct rt_store *s, int fd, const char *expected, int64_t expected_size,
                uint64_t limit, char ret_digest[RT_DIGEST_LEN + 1], struct cb_error *err);

struct rt_descriptor {
        char media_type[256];
        char digest[RT_DIGEST_LEN + 1];
        int64_t size;
};

struct rt_manifest {
        struct rt_descriptor config;
        size_t n_layers;
        struct rt_descriptor *layers;
};

/* 1 for an OCI index or Docker manifest list, 0 for an image manifest.
 * content_type (may be NULL) is the HTTP Content-Type, used when the
 * document has no mediaType. */
int rt_manifest_is_index(const char *json, size_t len, const char *content_type, int *ret,
                         struct cb_error *err);
int rt_manifest_parse(const char *json, size_t len, struct rt_manifest *ret, struct cb_error *err);
void rt_manifest_free(struct rt_manifest *m);
/* Picks the linux/<arch> manifest of an index. */
int rt_index_select(const char *json, size_t len, const char *arch, struct rt_descriptor *ret,
                    struct cb_error *err);
const char *rt_host_arch(void);

/* Given a staged manifest and its config and layers (staged or stored),
 * unpacks the layers not yet in the store into the staging dir, moves
 * everything into the store and points ref at it. */
int rt_store_commit(struct rt_store *s, const char *ref, const char *manifest_digest,
                    const struct rt_manifest *m, struct cb_error *err);

/* Opens relpath below dirfd without following any symlink. */
int rt_open_beneath(int dirfd, const char *relpath, int flags, struct cb_error *err);
