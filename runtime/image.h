/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Images: references, the on-disk store, import, pull and layer unpacking.
 *
 * Store layout under <root-dir>/images/:
 *
 *   blobs/sha256/<hex>     content-addressed blobs: manifests, configs and
 *                          layers exactly as the registry or archive served
 *                          them (compressed layers stay compressed). A blob
 *                          is only ever renamed into place after its sha256
 *                          was verified, so a present blob is trusted.
 *   layers/sha256/<hex>/   one unpacked directory per layer, named by the
 *                          digest of the layer blob. Whiteouts are stored in
 *                          overlayfs form (a .wh.<name> entry becomes a char
 *                          device 0/0 <name>; .wh..wh..opq sets the xattr
 *                          trusted.overlay.opaque=y on its directory), so
 *                          the directories are used unchanged, read-only,
 *                          as the lower dirs of one overlay per container.
 *   index.json             references -> manifest, config (the image ID)
 *                          and layer digests, size, created (when the
 *                          store first had it under the reference) and
 *                          lastUsed (rt_image_set_last_used), ms since the
 *                          epoch (written with cb_write_file_atomic).
 *   tmp/                   staging for pulls and imports; renamed into place
 *                          only when everything was verified.
 *   lock                   flock()ed for the duration of a store change.
 *
 * Library code: never prints, fills struct cb_error.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"

struct cb_arena;

/* ---- references -------------------------------------------------------- */

#define RT_REF_DOMAIN_MAX 255
#define RT_REF_PATH_MAX   255
#define RT_REF_TAG_MAX    128
#define RT_REF_DIGEST_MAX 71 /* "sha256:" + 64 hex */
#define RT_REF_STR_MAX                                                                             \
        (RT_REF_DOMAIN_MAX + RT_REF_PATH_MAX + RT_REF_TAG_MAX + RT_REF_DIGEST_MAX + 4)

/* A normalised image reference: "busybox" is docker.io/library/busybox:latest.
 * tag is "" when only a digest was given; digest is "" unless one was given. */
struct rt_image_ref {
        char domain[RT_REF_DOMAIN_MAX + 1]; /* "docker.io", "localhost:5000" */
        char path[RT_REF_PATH_MAX + 1];     /* "library/busybox" */
        char tag[RT_REF_TAG_MAX + 1];       /* "latest", or "" */
        char digest[RT_REF_DIGEST_MAX + 1]; /* "sha256:<64 hex>", or "" */
};

/* Parses and normalises s (Docker reference grammar, Docker Hub short names).
 * An invalid reference fails with a message naming the reference and why
 * (the agent reports it as InvalidImageName). Only sha256 digests are
 * accepted. */
int rt_image_ref_parse(const char *s, struct rt_image_ref *ret, struct cb_error *err);

/* Writes the canonical form "domain/path[:tag][@digest]" into buf (size
 * RT_REF_STR_MAX + 1 is always enough). Returns buf. */
char *rt_image_ref_format(const struct rt_image_ref *r, char *buf, size_t size);

/* 1 when s is "sha256:" followed by exactly 64 lowercase hex digits. */
int rt_digest_valid(const char *s);

/* ---- image config ------------------------------------------------------ */

/* The parts of the OCI/Docker image config the agent applies under the
 * Kubernetes rules. String vectors are NULL-terminated; a field absent from
 * the config is NULL (or an empty vector for env). */
struct rt_image_config {
        char **entrypoint;
        char **cmd;
        char **env; /* "KEY=value" */
        char *working_dir;
        char *user;
        char *stop_signal;
        char *os;
        char *architecture;
};

/* Parses an image config JSON; strings live in arena (exposed for the
 * fuzz harness, tests/fuzz/fuzz_image.c). */
int rt_image_config_parse(struct cb_arena *arena, const char *json, size_t len,
                          struct rt_image_config *ret, struct cb_error *err);

/* ---- the store --------------------------------------------------------- */

struct rt_image {
        struct cb_arena *arena; /* owns everything below */
        const char *ref;        /* canonical reference */
        const char *manifest_digest;
        const char *config_digest;
        const char *id; /* the image ID: its config digest (several refs may share it) */
        uint64_t size;  /* bytes of manifest, config and layer blobs as stored */
        /* ms since the epoch: when the store first had the image under
         * this reference, and the last time the garbage collector saw a
         * container use it (rt_image_set_last_used); 0 when unknown/never. */
        int64_t created_ms, last_used_ms;
        size_t n_layers;
        const char **layer_digests; /* bottom layer first */
        const char **layer_dirs;    /* absolute unpacked layer dirs, bottom first */
        struct rt_image_config config;
};

void rt_image_free(struct rt_image *img);

/* A file of the image as a container would see it (topmost layer first, a
 * whiteout hides it), e.g. "etc/passwd": resolved inside each layer's root
 * (openat2 RESOLVE_IN_ROOT), a regular file of at most max bytes, never
 * blocking. *ret is malloc'd and NUL-terminated, or NULL when the image
 * has no such file (0 either way); -1 for a non-regular or oversized file. */
int rt_image_read_file(const struct rt_image *img, const char *rel, size_t max, char **ret,
                       struct cb_error *err);

/* Looks ref up (any form rt_image_ref_parse accepts). Sets *ret to NULL and
 * returns 0 when the image is not in the store. */
int rt_image_lookup(const char *root_dir, const char *ref, struct rt_image **ret,
                    struct cb_error *err);

/* Every image, sorted by reference; *ret is a malloc'd array of *ret_n
 * images, freed with rt_image_list_free. The config is not loaded. */
int rt_image_list(const char *root_dir, struct rt_image ***ret, size_t *ret_n,
                  struct cb_error *err);
void rt_image_list_free(struct rt_image **imgs, size_t n);

/* Removes the reference, then garbage-collects blobs and layer dirs no
 * reference uses. Fails when ref is not in the store. */
int rt_image_remove(const char *root_dir, const char *ref, struct cb_error *err);

/* Removes every reference to the image whose ID (config digest) is id, then
 * collects the blobs and layer dirs no other image uses (layers are
 * content-addressed and shared between images). *ret_refs (may be NULL)
 * gets the number of references removed. Fails with ENOENT when no
 * reference has that ID. */
int rt_image_remove_id(const char *root_dir, const char *id, size_t *ret_refs,
                       struct cb_error *err);

/* Records when_ms as the last-used time of every image whose ID is in ids
 * (one index write; nothing when none matches). */
int rt_image_set_last_used(const char *root_dir, const char *const *ids, size_t n, int64_t when_ms,
                           struct cb_error *err);

/* Which images a container of root_dir was made from: ret_in_use[i] is set
 * when a container (running or exited, not yet removed) has exactly
 * imgs[i]'s layer dirs as its lower dirs (runtime/container.c). A container
 * whose config cannot be read is skipped (it is being created or removed). */
int rt_images_in_use(const char *root_dir, struct rt_image *const *imgs, size_t n, bool *ret_in_use,
                     struct cb_error *err);

/* Imports an OCI image layout archive (oci-archive, tar of an oci-layout
 * dir) or `docker save` output. name (may be NULL) names the image when the
 * archive holds exactly one; otherwise the archive's own names are used
 * (docker RepoTags, OCI io.containerd.image.name or a full reference in
 * org.opencontainers.image.ref.name). On success *ret_refs is a
 * NULL-terminated malloc'd vector of the references stored (rt_strv_free). */
/* unpack_helper: the layer unpacker (rt_layer_unpack_helper), required. */
int rt_image_import(const char *root_dir, const char *archive, const char *name,
                    const char *unpack_helper, char ***ret_refs, struct cb_error *err);

/* One registry credential (the CRI's AuthConfig username and password). */
struct rt_registry_auth {
        const char *username, *password;
};

struct rt_pull_opts {
        const char *const *insecure_registries; /* "host:port", plain HTTP allowed */
        size_t n_insecure;
        const char *arch; /* NULL: the host's ("amd64" on x86_64) */
        /* Credentials for the image's registry, tried one after the other
         * until one pulls (the kubelet's order: kuberuntime PullImage);
         * none: an anonymous pull. Used for a Basic challenge (sent again
         * with every later request to that host, never to a redirected-to
         * host) and for a Bearer challenge (GET realm?service=&scope= with
         * Basic auth, the token then sent as Bearer). Never put in an error
         * message. */
        const struct rt_registry_auth *auths;
        size_t n_auths;
        /* the layer unpacker (rt_layer_unpack_helper): required */
        const char *unpack_helper;
};

/* Pulls ref over the OCI distribution API into the store. Every blob is
 * verified against its sha256 while streaming; nothing is stored unless
 * the whole image verified and unpacked. *ret_ref (may be NULL) gets the
 * canonical reference stored (malloc'd).
 *
 * Errors are worded as containerd's (what the kubelet shows in
 * state.waiting.message): 'failed to pull and unpack image "<ref>":
 * failed to resolve reference "<ref>": pull access denied, repository does
 * not exist or may require authorization: authorization failed: no basic
 * auth credentials', '... unexpected status from GET request to <url>: 401
 * Unauthorized', '... failed to authorize: failed to fetch oauth token:
 * ...'. With several credentials, the distinct errors of every attempt are
 * joined as the kubelet's aggregate error: "[e1, e2]". */
int rt_image_pull(const char *root_dir, const char *ref, const struct rt_pull_opts *opts,
                  char **ret_ref, struct cb_error *err);

void rt_strv_free(char **v);

/* ---- layers ------------------------------------------------------------ */

enum {
        /* Convert .wh.<name> and .wh..wh..opq into overlayfs whiteouts. */
        RT_UNPACK_OVERLAY_WHITEOUTS = 1 << 0,
};

/* Unpacks a layer archive (tar; gzip, zstd, xz, bzip2 detected) into
 * target_dir, which must exist. Safe against hostile archives: every entry
 * is created with openat() relative to the target dir fd, parent
 * components are opened one at a time with O_NOFOLLOW|O_DIRECTORY (a
 * symlink in a parent path is refused, so nothing is written through one),
 * absolute paths and ".." components are refused, and hardlink targets go
 * through the same checks. Ownership, modes, mtimes, xattrs, symlinks,
 * hardlinks and device nodes are kept (run as root). The error names the
 * offending entry; the caller removes the half-written dir. */
int rt_layer_unpack(const char *archive_path, const char *target_dir, int flags,
                    struct cb_error *err);

/* rt_layer_unpack in a process of its own: the helper binary (absolute;
 * cubelet-unpack, agent/cmd/unpack_main.c) runs rt_unpack_main. The same
 * result and error message; a helper killed by a signal is an error. Blocks
 * until the helper ends (runtime/unpack_helper.c). */
int rt_layer_unpack_helper(const char *helper, const char *archive_path, const char *target_dir,
                           int flags, struct cb_error *err);
/* The helper's entry point (argv[0] "__unpack", then REPORT_FD ARCHIVE DIR
 * FLAGS PARENT_PID): rt_layer_unpack, and on failure "<errno> <message>"
 * written to REPORT_FD. Exits 0, 1 (failed, reported) or 2 (misused). */
int rt_unpack_main(int argc, char **argv);

/* Removes path and everything below it without following symlinks.
 * A missing path is not an error. */
int rt_rm_rf(const char *path, struct cb_error *err);
/* The same for dirfd/name (name a single component). */
int rt_rm_rf_at(int dirfd, const char *name, struct cb_error *err);
