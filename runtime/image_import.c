/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Importing image archives: an OCI image layout in a tar (oci-archive, as
 * skopeo and umoci write it) or `docker save` output (manifest.json, config
 * JSON and layer tars; newer Docker also writes an OCI layout, which is
 * preferred then).
 *
 * The archive is first unpacked into the staging dir by the same safe
 * extractor as layers (without whiteout conversion), then every file the
 * manifests name is opened beneath that dir without following symlinks
 * and copied through the verifying sink, so a blob whose content does not
 * match its digest is refused like a pulled one. A docker archive has no
 * manifest; one is synthesised (Docker v2 schema 2) from the digests of
 * its files, and stored as the image's manifest blob.
 */
#include "runtime/image.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "lib/cleanup.h"
#include "lib/file.h"
#include "runtime/image_internal.h"

#define ANN_CONTAINERD_NAME "io.containerd.image.name"
#define ANN_OCI_REF_NAME    "org.opencontainers.image.ref.name"
#define REFS_MAX            256

struct import_ctx {
        struct rt_store *store;
        int archfd; /* the unpacked archive */
        const char *name;
        char **refs;
        size_t nrefs;
};

/*
 * The archive file rel, opened for reading only if it is a regular file of
 * at most max bytes (0: no cap here; the sink has its own) (issue 15 item 5): a manifest.json or
 * layer that is a FIFO would block the import forever, a device node would be read from the host, a
 * symlink could lead anywhere. Looked at through an O_PATH fd first (opening a FIFO or device has
 * effects), no symlink followed on the way (rt_open_beneath), then reopened through that fd.
 */
static int open_regular(int dirfd, const char *rel, uint64_t max, struct cb_error *err)
{
        _cleanup_close_ int p = rt_open_beneath(dirfd, rel, O_PATH, err);
        if (p < 0)
                return -1;
        struct stat st;
        if (fstat(p, &st) < 0)
                return cb_error_set(err, errno, "cannot stat \"%s\"", rel);
        if (!S_ISREG(st.st_mode))
                return cb_error_set(err, EINVAL, "\"%s\" is not a regular file", rel);
        if (max > 0 && (uint64_t)st.st_size > max)
                return cb_error_set(err, EFBIG, "\"%s\" is larger than %llu bytes", rel,
                                    (unsigned long long)max);
        char path[64];
        snprintf(path, sizeof(path), "/proc/self/fd/%d", p);
        int fd = open(path, O_RDONLY | O_NOCTTY | O_CLOEXEC);
        if (fd < 0)
                return cb_error_set(err, errno, "cannot open \"%s\"", rel);
        return fd;
}

static int read_beneath(int dirfd, const char *rel, size_t max, char **ret, size_t *ret_len,
                        struct cb_error *err)
{
        _cleanup_close_ int fd = open_regular(dirfd, rel, max, err);
        if (fd < 0)
                return -1;
        char path[64];
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        if (cb_read_file(path, max, ret, ret_len, err) < 0)
                return cb_error_prefix(err, "%s", rel);
        return 0;
}

/* Copies the archive file rel through the verifying sink. */
static int stage_file(struct import_ctx *c, const char *rel, const char *expected, int64_t size,
                      uint64_t limit, char ret_digest[RT_DIGEST_LEN + 1], struct cb_error *err)
{
        _cleanup_close_ int fd = open_regular(c->archfd, rel, limit, err);
        if (fd < 0)
                return cb_error_prefix(err, "archive file %s", rel);
        if (rt_stage_fd(c->store, fd, expected, size, limit, ret_digest, err) < 0)
                return cb_error_prefix(err, "archive file %s", rel);
        return 0;
}

static int stage_blob(struct import_ctx *c, const struct rt_descriptor *d, uint64_t limit,
                      struct cb_error *err)
{
        char p[4200], rel[128], got[RT_DIGEST_LEN + 1];
        if (rt_store_find_blob(c->store, d->digest, p, sizeof(p)) == 0)
                return 0;
        snprintf(rel, sizeof(rel), "blobs/sha256/%s", d->digest + 7);
        return stage_file(c, rel, d->digest, d->size, limit, got, err);
}

static int add_ref(struct import_ctx *c, const char *canon, struct cb_error *err)
{
        if (c->nrefs >= REFS_MAX)
                return cb_error_set(err, 0, "the archive names more than %d images", REFS_MAX);
        if ((c->refs[c->nrefs] = strdup(canon)) == NULL)
                return cb_error_set(err, ENOMEM, "import");
        c->nrefs++;
        return 0;
}

/* Stages config and layers of a manifest, then commits it under name. */
static int commit_manifest(struct import_ctx *c, const char *name, const char *manifest_digest,
                           const char *json, size_t len, struct cb_error *err)
{
        struct rt_image_ref r;
        char canon[RT_REF_STR_MAX + 1];
        if (rt_image_ref_parse(name, &r, err) < 0)
                return -1;
        rt_image_ref_format(&r, canon, sizeof(canon));
        struct rt_manifest m;
        if (rt_manifest_parse(json, len, &m, err) < 0)
                return cb_error_prefix(err, "manifest %s", manifest_digest);
        int ret = stage_blob(c, &m.config, RT_CONFIG_MAX, err);
        for (size_t i = 0; ret == 0 && i < m.n_layers; i++)
                ret = stage_blob(c, &m.layers[i], 0, err);
        if (ret == 0)
                ret = rt_store_commit(c->store, canon, manifest_digest, &m, err);
        if (ret == 0)
                ret = add_ref(c, canon, err);
        rt_manifest_free(&m);
        return ret;
}

static const char *annotation(const cJSON *desc, const char *key)
{
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(desc, "annotations");
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(a, key);
        return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The name of an OCI index entry: --name, the containerd annotation, or a
 * ref.name annotation that is a whole reference (not only a tag). */
static int oci_name(const struct import_ctx *c, const cJSON *desc, int n, const char **ret,
                    struct cb_error *err)
{
        if (c->name != NULL) {
                if (n != 1)
                        return cb_error_set(err, 0,
                                            "the archive holds %d images; a single name cannot "
                                            "name them all",
                                            n);
                *ret = c->name;
                return 0;
        }
        const char *v = annotation(desc, ANN_CONTAINERD_NAME);
        if (v == NULL) {
                v = annotation(desc, ANN_OCI_REF_NAME);
                if (v != NULL && strpbrk(v, "/:@") == NULL)
                        return cb_error_set(err, 0,
                                            "the archive names its image only by the tag \"%s\"; "
                                            "give the full name with --name (e.g. "
                                            "--name busybox:%s)",
                                            v, v);
        }
        if (v == NULL)
                return cb_error_set(err, 0,
                                    "the archive does not name its image; give one with --name");
        *ret = v;
        return 0;
}

static int import_oci(struct import_ctx *c, struct cb_error *err)
{
        _cleanup_free_ char *buf = NULL;
        size_t len;
        if (read_beneath(c->archfd, "index.json", RT_MANIFEST_MAX, &buf, &len, err) < 0)
                return -1;
        _cleanup_cjson_ cJSON *idx = cJSON_ParseWithLength(buf, len);
        const cJSON *ms = cJSON_GetObjectItemCaseSensitive(idx, "manifests");
        int n = cJSON_GetArraySize(ms);
        if (!cJSON_IsArray(ms) || n == 0)
                return cb_error_set(err, 0, "index.json lists no manifests");
        const cJSON *desc;
        cJSON_ArrayForEach(desc, ms)
        {
                struct rt_descriptor d;
                const char *name = NULL;
                if (cJSON_IsObject(desc) == 0 || oci_name(c, desc, n, &name, err) < 0)
                        return -1;
                /* Resolve nested indexes down to the host's image manifest. */
                const cJSON *cur = desc;
                _cleanup_free_ char *json = NULL;
                for (int depth = 0;; depth++) {
                        char rel[128], got[RT_DIGEST_LEN + 1];
                        int is_index;
                        const cJSON *dg = cJSON_GetObjectItemCaseSensitive(cur, "digest");
                        if (cur != NULL) {
                                const cJSON *sz = cJSON_GetObjectItemCaseSensitive(cur, "size");
                                if (!cJSON_IsString(dg) || !rt_digest_valid(dg->valuestring) ||
                                    !cJSON_IsNumber(sz))
                                        return cb_error_set(err, 0,
                                                            "index.json: a manifest descriptor "
                                                            "lacks a sha256 digest or a size");
                                snprintf(d.digest, sizeof(d.digest), "%s", dg->valuestring);
                                d.size = (int64_t)sz->valuedouble;
                        }
                        snprintf(rel, sizeof(rel), "blobs/sha256/%s", d.digest + 7);
                        free(json);
                        json = NULL;
                        if (stage_file(c, rel, d.digest, d.size, RT_MANIFEST_MAX, got, err) < 0 ||
                            read_beneath(c->archfd, rel, RT_MANIFEST_MAX, &json, &len, err) < 0 ||
                            rt_manifest_is_index(json, len, NULL, &is_index, err) < 0)
                                return cb_error_prefix(err, "manifest %s", d.digest);
                        if (!is_index)
                                break;
                        if (depth >= RT_INDEX_DEPTH_MAX ||
                            rt_index_select(json, len, rt_host_arch(), &d, err) < 0)
                                return cb_error_prefix(err, "image %s", name);
                        cur = NULL; /* d now holds the selected descriptor */
                }
                if (commit_manifest(c, name, d.digest, json, len, err) < 0)
                        return cb_error_prefix(err, "image %s", name);
        }
        return 0;
}

/* Builds a Docker v2 schema 2 manifest for a docker-save image. */
static char *docker_manifest(const char *config, int64_t config_size,
                             const struct rt_descriptor *layers, size_t n)
{
        _cleanup_cjson_ cJSON *m = cJSON_CreateObject();
        cJSON *cfg = cJSON_CreateObject();
        cJSON *ls = cJSON_CreateArray();
        cJSON_AddNumberToObject(m, "schemaVersion", 2);
        cJSON_AddStringToObject(m, "mediaType", RT_MT_DOCKER_MANIFEST);
        cJSON_AddItemToObject(m, "config", cfg);
        cJSON_AddStringToObject(cfg, "mediaType", "application/vnd.docker.container.image.v1+json");
        cJSON_AddNumberToObject(cfg, "size", (double)config_size);
        cJSON_AddStringToObject(cfg, "digest", config);
        cJSON_AddItemToObject(m, "layers", ls);
        for (size_t i = 0; i < n; i++) {
                cJSON *l = cJSON_CreateObject();
                cJSON_AddItemToArray(ls, l);
                cJSON_AddStringToObject(l, "mediaType", layers[i].media_type);
                cJSON_AddNumberToObject(l, "size", (double)layers[i].size);
                cJSON_AddStringToObject(l, "digest", layers[i].digest);
        }
        return cJSON_PrintUnformatted(m);
}

static int blob_size(struct import_ctx *c, const char *digest, int64_t *ret)
{
        char p[4200];
        struct stat st;
        if (rt_store_find_blob(c->store, digest, p, sizeof(p)) < 0 || stat(p, &st) < 0)
                return -1;
        *ret = st.st_size;
        return 0;
}

static int import_docker_one(struct import_ctx *c, const cJSON *item, int n, struct cb_error *err)
{
        const cJSON *cfg = cJSON_GetObjectItemCaseSensitive(item, "Config");
        const cJSON *layers = cJSON_GetObjectItemCaseSensitive(item, "Layers");
        const cJSON *tags = cJSON_GetObjectItemCaseSensitive(item, "RepoTags");
        int nl = cJSON_GetArraySize(layers);
        if (!cJSON_IsString(cfg) || !cJSON_IsArray(layers) || nl > 500)
                return cb_error_set(err, 0, "manifest.json: an entry lacks Config or Layers");
        char cdigest[RT_DIGEST_LEN + 1];
        int64_t csize;
        if (stage_file(c, cfg->valuestring, NULL, -1, RT_CONFIG_MAX, cdigest, err) < 0 ||
            blob_size(c, cdigest, &csize) < 0)
                return -1;
        _cleanup_free_ struct rt_descriptor *ld = calloc((size_t)nl + 1, sizeof(*ld));
        if (ld == NULL)
                return cb_error_set(err, ENOMEM, "import");
        int i = 0;
        const cJSON *l;
        cJSON_ArrayForEach(l, layers)
        {
                if (!cJSON_IsString(l))
                        return cb_error_set(err, 0, "manifest.json: Layers[%d] is not a path", i);
                if (stage_file(c, l->valuestring, NULL, -1, 0, ld[i].digest, err) < 0 ||
                    blob_size(c, ld[i].digest, &ld[i].size) < 0)
                        return -1;
                snprintf(ld[i].media_type, sizeof(ld[i].media_type),
                         "application/vnd.docker.image.rootfs.diff.tar");
                i++;
        }
        _cleanup_free_ char *mjson = docker_manifest(cdigest, csize, ld, (size_t)nl);
        if (mjson == NULL)
                return cb_error_set(err, ENOMEM, "import");
        /* Stage the synthesised manifest through the sink as well. */
        struct rt_sink k;
        char mdigest[RT_DIGEST_LEN + 1];
        if (rt_sink_open(&k, c->store, RT_MANIFEST_MAX, err) < 0)
                return -1;
        if (rt_sink_write(&k, mjson, strlen(mjson), err) < 0) {
                rt_sink_discard(&k);
                return -1;
        }
        if (rt_sink_finish(&k, NULL, -1, mdigest, err) < 0)
                return -1;
        int ntags = cJSON_GetArraySize(tags);
        if (c->name != NULL) {
                if (n != 1)
                        return cb_error_set(err, 0,
                                            "the archive holds %d images; a single name cannot "
                                            "name them all",
                                            n);
                return commit_manifest(c, c->name, mdigest, mjson, strlen(mjson), err);
        }
        if (!cJSON_IsArray(tags) || ntags == 0)
                return cb_error_set(err, 0,
                                    "the archive does not name its image (no RepoTags); give "
                                    "one with --name");
        const cJSON *t;
        cJSON_ArrayForEach(t, tags)
        {
                if (!cJSON_IsString(t))
                        return cb_error_set(err, 0, "manifest.json: RepoTags holds a non-string");
                if (commit_manifest(c, t->valuestring, mdigest, mjson, strlen(mjson), err) < 0)
                        return cb_error_prefix(err, "image %s", t->valuestring);
        }
        return 0;
}

static int import_docker(struct import_ctx *c, struct cb_error *err)
{
        _cleanup_free_ char *buf = NULL;
        size_t len;
        if (read_beneath(c->archfd, "manifest.json", RT_MANIFEST_MAX, &buf, &len, err) < 0)
                return -1;
        _cleanup_cjson_ cJSON *m = cJSON_ParseWithLength(buf, len);
        int n = cJSON_GetArraySize(m);
        if (!cJSON_IsArray(m) || n == 0)
                return cb_error_set(err, 0, "manifest.json is not a non-empty list");
        const cJSON *item;
        cJSON_ArrayForEach(item, m)
        {
                if (import_docker_one(c, item, n, err) < 0)
                        return -1;
        }
        return 0;
}

static int exists_beneath(int dirfd, const char *rel)
{
        struct cb_error ignored = {0};
        /* O_PATH: a FIFO by that name must not block the import */
        int fd = rt_open_beneath(dirfd, rel, O_PATH, &ignored);
        if (fd < 0)
                return 0;
        close(fd);
        return 1;
}

int rt_image_import(const char *root_dir, const char *archive, const char *name,
                    const char *unpack_helper, char ***ret_refs, struct cb_error *err)
{
        struct rt_store store;
        struct import_ctx c = {.store = &store, .archfd = -1, .name = name};
        if (name != NULL) {
                struct rt_image_ref r;
                if (rt_image_ref_parse(name, &r, err) < 0)
                        return -1;
        }
        if (rt_store_open(root_dir, &store, err) < 0)
                return -1;
        store.unpack_helper = unpack_helper;
        char dir[4200];
        snprintf(dir, sizeof(dir), "%s/archive", store.stage);
        int ret = 0;
        c.refs = calloc(REFS_MAX + 1, sizeof(char *));
        if (c.refs == NULL)
                ret = cb_error_set(err, ENOMEM, "import");
        if (ret == 0 && mkdir(dir, 0700) < 0)
                ret = cb_error_set(err, errno, "cannot create %s", dir);
        if (ret == 0 && rt_layer_unpack_helper(unpack_helper, archive, dir, 0, err) < 0)
                ret = cb_error_prefix(err, "cannot unpack archive %s", archive);
        if (ret == 0 && (c.archfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
                ret = cb_error_set(err, errno, "cannot open %s", dir);
        if (ret == 0) {
                if (exists_beneath(c.archfd, "oci-layout") &&
                    exists_beneath(c.archfd, "index.json"))
                        ret = import_oci(&c, err);
                else if (exists_beneath(c.archfd, "manifest.json"))
                        ret = import_docker(&c, err);
                else
                        ret = cb_error_set(err, 0,
                                           "%s is neither an OCI image layout archive "
                                           "(oci-layout, index.json) nor docker save output "
                                           "(manifest.json)",
                                           archive);
                if (ret < 0)
                        cb_error_prefix(err, "import %s", archive);
        }
        if (c.archfd >= 0)
                close(c.archfd);
        rt_store_close(&store);
        if (ret < 0) {
                rt_strv_free(c.refs);
                return -1;
        }
        *ret_refs = c.refs;
        return 0;
}
