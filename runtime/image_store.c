/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The image store (layout in runtime/image.h): locking and staging,
 * verified blob sinks, manifests, the reference index, lookup, listing,
 * removal and garbage collection.
 *
 * Every change happens under an flock() on images/lock, and everything a
 * pull or import writes goes to a private staging dir first; commit
 * renames verified blobs and unpacked layers into place and then rewrites
 * index.json atomically, so a crash leaves at worst unreferenced files,
 * which the next garbage collection removes.
 */
#include "runtime/image.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <openssl/evp.h>

#include "lib/arena.h"
#include "lib/cleanup.h"
#include "lib/file.h"
#include "lib/wallclock.h"
#include "runtime/image_internal.h"

#define INDEX_MAX  (64u << 20)
#define LAYERS_MAX 500

/* ---- paths and locking ------------------------------------------------- */

static const char *hex_of(const char *digest)
{
        return digest + strlen("sha256:");
}

/* <images>/blobs/sha256/<hex> of a verified digest. */
static void blob_path(const struct rt_store *s, const char *digest, char *buf, size_t size)
{
        snprintf(buf, size, "%s/blobs/sha256/%s", s->images, hex_of(digest));
}

int rt_store_find_blob(const struct rt_store *s, const char *digest, char *buf, size_t size)
{
        if (s->stage[0] != '\0') {
                snprintf(buf, size, "%s/blobs/%s", s->stage, hex_of(digest));
                if (access(buf, F_OK) == 0)
                        return 0;
        }
        blob_path(s, digest, buf, size);
        if (access(buf, F_OK) == 0)
                return 0;
        return -1;
}

static int images_dir(const char *root_dir, char *buf, size_t size, struct cb_error *err)
{
        if (root_dir == NULL || *root_dir == '\0')
                return cb_error_set(err, 0, "no root dir given; pass --root-dir DIR");
        if ((size_t)snprintf(buf, size, "%s/images", root_dir) >= size)
                return cb_error_set(err, ENAMETOOLONG, "root dir %s", root_dir);
        return 0;
}

/* Removes leftovers of interrupted operations; only called under the lock. */
static int clean_tmp(const struct rt_store *s, struct cb_error *err)
{
        char tmp[4200];
        snprintf(tmp, sizeof(tmp), "%s/tmp", s->images);
        DIR *d = opendir(tmp);
        if (d == NULL)
                return cb_error_set(err, errno, "cannot read %s", tmp);
        struct dirent *de;
        int ret = 0;
        while (ret == 0 && (de = readdir(d)) != NULL) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                char p[4500];
                snprintf(p, sizeof(p), "%s/%s", tmp, de->d_name);
                ret = rt_rm_rf(p, err);
        }
        closedir(d);
        return ret;
}

int rt_store_open(const char *root_dir, struct rt_store *s, struct cb_error *err)
{
        static const char *const sub[] = {"blobs/sha256", "layers/sha256", "tmp"};
        memset(s, 0, sizeof(*s));
        s->lockfd = -1;
        if (images_dir(root_dir, s->images, sizeof(s->images), err) < 0)
                return -1;
        for (size_t i = 0; i < CB_ARRAY_SIZE(sub); i++) {
                char p[4200];
                snprintf(p, sizeof(p), "%s/%s", s->images, sub[i]);
                if (cb_mkdir_p(p, 0700, 0700, err) < 0)
                        return -1;
        }
        char lock[4200];
        snprintf(lock, sizeof(lock), "%s/lock", s->images);
        s->lockfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (s->lockfd < 0)
                return cb_error_set(err, errno, "cannot open %s", lock);
        while (flock(s->lockfd, LOCK_EX) < 0) {
                if (errno != EINTR) {
                        int e = errno;
                        rt_store_close(s);
                        return cb_error_set(err, e, "cannot lock %s", lock);
                }
        }
        if (clean_tmp(s, err) < 0) {
                rt_store_close(s);
                return -1;
        }
        char stage[2304];
        snprintf(stage, sizeof(stage), "%s/tmp/op-XXXXXX", s->images);
        if (mkdtemp(stage) == NULL) {
                int e = errno;
                rt_store_close(s);
                return cb_error_set(err, e, "cannot create a staging dir in %s/tmp", s->images);
        }
        snprintf(s->stage, sizeof(s->stage), "%s", stage);
        char p[4200];
        snprintf(p, sizeof(p), "%s/blobs", stage);
        if (mkdir(p, 0700) < 0 ||
            (snprintf(p, sizeof(p), "%s/layers", stage), mkdir(p, 0700) < 0)) {
                int e = errno;
                rt_store_close(s);
                return cb_error_set(err, e, "cannot create %s", p);
        }
        return 0;
}

void rt_store_close(struct rt_store *s)
{
        if (s->stage[0] != '\0') {
                struct cb_error ignored = {0};
                rt_rm_rf(s->stage, &ignored);
                s->stage[0] = '\0';
        }
        if (s->lockfd >= 0) {
                close(s->lockfd);
                s->lockfd = -1;
        }
}

/* ---- verified sinks ---------------------------------------------------- */

int rt_sink_open(struct rt_sink *k, const struct rt_store *s, uint64_t limit, struct cb_error *err)
{
        memset(k, 0, sizeof(*k));
        k->store = s;
        k->limit = limit;
        snprintf(k->tmp, sizeof(k->tmp), "%s/incoming-XXXXXX", s->stage);
        k->fd = mkostemp(k->tmp, O_CLOEXEC);
        if (k->fd < 0)
                return cb_error_set(err, errno, "cannot create a temp file in %s", s->stage);
        k->md = EVP_MD_CTX_new();
        if (k->md == NULL || EVP_DigestInit_ex(k->md, EVP_sha256(), NULL) != 1) {
                rt_sink_discard(k);
                return cb_error_set(err, ENOMEM, "cannot initialise sha256");
        }
        return 0;
}

int rt_sink_write(struct rt_sink *k, const void *data, size_t len, struct cb_error *err)
{
        if (k->limit > 0 && k->written + len > k->limit)
                return cb_error_set(err, EFBIG, "blob is larger than the limit of %llu bytes",
                                    (unsigned long long)k->limit);
        if (EVP_DigestUpdate(k->md, data, len) != 1)
                return cb_error_set(err, 0, "sha256 update failed");
        const char *p = data;
        size_t left = len;
        while (left > 0) {
                ssize_t n = write(k->fd, p, left);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return cb_error_set(err, errno, "cannot write %s", k->tmp);
                }
                p += n;
                left -= (size_t)n;
        }
        k->written += len;
        return 0;
}

void rt_sink_discard(struct rt_sink *k)
{
        if (k->fd >= 0) {
                close(k->fd);
                unlink(k->tmp);
                k->fd = -1;
        }
        if (k->md != NULL) {
                EVP_MD_CTX_free(k->md);
                k->md = NULL;
        }
}

int rt_sink_finish(struct rt_sink *k, const char *expected, int64_t expected_size,
                   char ret_digest[RT_DIGEST_LEN + 1], struct cb_error *err)
{
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned int mdlen = 0;
        char got[RT_DIGEST_LEN + 1] = "sha256:";
        if (EVP_DigestFinal_ex(k->md, md, &mdlen) != 1 || mdlen != 32) {
                rt_sink_discard(k);
                return cb_error_set(err, 0, "sha256 finalisation failed");
        }
        for (unsigned i = 0; i < mdlen; i++)
                snprintf(got + 7 + 2 * i, 3, "%02x", md[i]);
        const char *name = expected != NULL ? expected : got;
        if (expected != NULL && strcmp(expected, got) != 0) {
                rt_sink_discard(k);
                return cb_error_set(err, 0,
                                    "blob %s: digest mismatch: expected %s, got %s; the content "
                                    "was refused and nothing was stored",
                                    expected, expected, got);
        }
        if (expected_size >= 0 && k->written != (uint64_t)expected_size) {
                rt_sink_discard(k);
                return cb_error_set(err, 0,
                                    "blob %s: size mismatch: expected %lld bytes, got %llu; "
                                    "nothing was stored",
                                    name, (long long)expected_size, (unsigned long long)k->written);
        }
        if (fsync(k->fd) < 0) {
                int e = errno;
                rt_sink_discard(k);
                return cb_error_set(err, e, "cannot sync blob %s", name);
        }
        char dst[4200];
        snprintf(dst, sizeof(dst), "%s/blobs/%s", k->store->stage, hex_of(got));
        if (rename(k->tmp, dst) < 0) {
                int e = errno;
                rt_sink_discard(k);
                return cb_error_set(err, e, "cannot stage blob %s", name);
        }
        close(k->fd);
        k->fd = -1;
        rt_sink_discard(k);
        snprintf(ret_digest, RT_DIGEST_LEN + 1, "%s", got);
        return 0;
}

int rt_stage_fd(const struct rt_store *s, int fd, const char *expected, int64_t expected_size,
                uint64_t limit, char ret_digest[RT_DIGEST_LEN + 1], struct cb_error *err)
{
        struct rt_sink k;
        if (rt_sink_open(&k, s, limit, err) < 0)
                return -1;
        char buf[65536];
        for (;;) {
                ssize_t n = read(fd, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        int e = errno;
                        rt_sink_discard(&k);
                        return cb_error_set(err, e, "cannot read blob");
                }
                if (n == 0)
                        break;
                if (rt_sink_write(&k, buf, (size_t)n, err) < 0) {
                        rt_sink_discard(&k);
                        return -1;
                }
        }
        return rt_sink_finish(&k, expected, expected_size, ret_digest, err);
}

/* ---- manifests --------------------------------------------------------- */

static const char *json_str(const cJSON *o, const char *key)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
        return cJSON_IsString(v) ? v->valuestring : NULL;
}

const char *rt_host_arch(void)
{
#if defined(__x86_64__)
        return "amd64";
#elif defined(__aarch64__)
        return "arm64";
#elif defined(__arm__)
        return "arm";
#elif defined(__s390x__)
        return "s390x";
#elif defined(__powerpc64__)
        return "ppc64le";
#elif defined(__riscv)
        return "riscv64";
#else
        return "unknown";
#endif
}

int rt_manifest_is_index(const char *json, size_t len, const char *content_type, int *ret,
                         struct cb_error *err)
{
        _cleanup_cjson_ cJSON *root = cJSON_ParseWithLength(json, len);
        if (!cJSON_IsObject(root))
                return cb_error_set(err, 0, "the manifest is not a JSON object");
        const char *mt = json_str(root, "mediaType");
        if (mt == NULL)
                mt = content_type;
        if (mt != NULL && (strcmp(mt, RT_MT_OCI_INDEX) == 0 || strcmp(mt, RT_MT_DOCKER_LIST) == 0))
                *ret = 1;
        else if (mt != NULL &&
                 (strcmp(mt, RT_MT_OCI_MANIFEST) == 0 || strcmp(mt, RT_MT_DOCKER_MANIFEST) == 0))
                *ret = 0;
        else if (cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(root, "manifests")))
                *ret = 1;
        else if (cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(root, "layers")))
                *ret = 0;
        else
                return cb_error_set(err, 0, "unsupported manifest media type \"%s\"",
                                    mt != NULL ? mt : "");
        return 0;
}

static int parse_descriptor(const cJSON *o, struct rt_descriptor *d, const char *what,
                            struct cb_error *err)
{
        const char *dg = json_str(o, "digest");
        const cJSON *size = cJSON_GetObjectItemCaseSensitive(o, "size");
        const char *mt = json_str(o, "mediaType");
        if (dg == NULL || !rt_digest_valid(dg))
                return cb_error_set(err, 0, "%s: digest \"%s\" is not a sha256 digest", what,
                                    dg != NULL ? dg : "");
        if (!cJSON_IsNumber(size) || size->valuedouble < 0 || size->valuedouble > 1e15)
                return cb_error_set(err, 0, "%s: missing or invalid size", what);
        snprintf(d->digest, sizeof(d->digest), "%s", dg);
        snprintf(d->media_type, sizeof(d->media_type), "%s", mt != NULL ? mt : "");
        d->size = (int64_t)size->valuedouble;
        return 0;
}

static int layer_type_ok(const char *mt)
{
        static const char *const ok[] = {
            "application/vnd.oci.image.layer.v1.tar",
            "application/vnd.oci.image.layer.v1.tar+gzip",
            "application/vnd.oci.image.layer.v1.tar+zstd",
            "application/vnd.docker.image.rootfs.diff.tar",
            "application/vnd.docker.image.rootfs.diff.tar.gzip",
            "application/vnd.docker.image.rootfs.diff.tar.zstd",
        };
        for (size_t i = 0; i < CB_ARRAY_SIZE(ok); i++)
                if (strcmp(mt, ok[i]) == 0)
                        return 1;
        return 0;
}

int rt_manifest_parse(const char *json, size_t len, struct rt_manifest *ret, struct cb_error *err)
{
        _cleanup_cjson_ cJSON *root = cJSON_ParseWithLength(json, len);
        if (!cJSON_IsObject(root))
                return cb_error_set(err, 0, "the manifest is not a JSON object");
        const cJSON *sv = cJSON_GetObjectItemCaseSensitive(root, "schemaVersion");
        if (!cJSON_IsNumber(sv) || sv->valueint != 2)
                return cb_error_set(err, 0, "unsupported manifest schemaVersion (want 2)");
        struct rt_manifest m = {0};
        if (parse_descriptor(cJSON_GetObjectItemCaseSensitive(root, "config"), &m.config,
                             "manifest config", err) < 0)
                return -1;
        const cJSON *layers = cJSON_GetObjectItemCaseSensitive(root, "layers");
        int n = cJSON_GetArraySize(layers);
        if (!cJSON_IsArray(layers) || n > LAYERS_MAX)
                return cb_error_set(err, 0, "manifest layers: missing, or more than %d",
                                    LAYERS_MAX);
        m.layers = calloc((size_t)n + 1, sizeof(*m.layers));
        if (m.layers == NULL)
                return cb_error_set(err, ENOMEM, "manifest layers");
        const cJSON *l;
        cJSON_ArrayForEach(l, layers)
        {
                char what[64];
                snprintf(what, sizeof(what), "manifest layers[%zu]", m.n_layers);
                struct rt_descriptor *d = &m.layers[m.n_layers];
                if (parse_descriptor(l, d, what, err) < 0) {
                        rt_manifest_free(&m);
                        return -1;
                }
                if (!layer_type_ok(d->media_type)) {
                        /* the message names d's media type: set it before d is freed */
                        cb_error_set(err, 0,
                                     "%s: unsupported layer media type \"%s\" (foreign and "
                                     "non-distributable layers are not fetched)",
                                     what, d->media_type);
                        rt_manifest_free(&m);
                        return -1;
                }
                m.n_layers++;
        }
        *ret = m;
        return 0;
}

void rt_manifest_free(struct rt_manifest *m)
{
        free(m->layers);
        m->layers = NULL;
        m->n_layers = 0;
}

int rt_index_select(const char *json, size_t len, const char *arch, struct rt_descriptor *ret,
                    struct cb_error *err)
{
        _cleanup_cjson_ cJSON *root = cJSON_ParseWithLength(json, len);
        const cJSON *ms = cJSON_GetObjectItemCaseSensitive(root, "manifests");
        if (!cJSON_IsArray(ms))
                return cb_error_set(err, 0, "the image index has no manifests list");
        char seen[512] = "";
        size_t used = 0;
        const cJSON *m;
        cJSON_ArrayForEach(m, ms)
        {
                const cJSON *p = cJSON_GetObjectItemCaseSensitive(m, "platform");
                const char *os = json_str(p, "os"), *a = json_str(p, "architecture");
                if (os == NULL || a == NULL)
                        continue;
                if (strcmp(os, "linux") == 0 && strcmp(a, arch) == 0)
                        return parse_descriptor(m, ret, "image index entry", err);
                if (used < sizeof(seen))
                        used += (size_t)snprintf(seen + used, sizeof(seen) - used, "%s%s/%s",
                                                 used ? ", " : "", os, a);
        }
        return cb_error_set(err, 0, "the image index has no linux/%s image (it has: %s)", arch,
                            seen[0] ? seen : "none with a platform");
}

/* ---- the index --------------------------------------------------------- */

static int index_read(const char *images, cJSON **ret, struct cb_error *err)
{
        char p[4200];
        snprintf(p, sizeof(p), "%s/index.json", images);
        _cleanup_free_ char *buf = NULL;
        size_t len;
        if (cb_read_file(p, INDEX_MAX, &buf, &len, err) < 0) {
                if (err != NULL && err->code == ENOENT) {
                        cJSON *root = cJSON_CreateObject();
                        if (root == NULL || cJSON_AddArrayToObject(root, "images") == NULL) {
                                cJSON_Delete(root);
                                return cb_error_set(err, ENOMEM, "cannot create the index");
                        }
                        cb_error_clear(err);
                        *ret = root;
                        return 0;
                }
                return -1;
        }
        cJSON *root = cJSON_ParseWithLength(buf, len);
        if (!cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(root, "images"))) {
                cJSON_Delete(root);
                return cb_error_set(err, 0,
                                    "%s is corrupt (no \"images\" list); remove it and pull "
                                    "the images again",
                                    p);
        }
        *ret = root;
        return 0;
}

static int index_write(const char *images, const cJSON *root, struct cb_error *err)
{
        char p[4200];
        snprintf(p, sizeof(p), "%s/index.json", images);
        _cleanup_free_ char *s = cJSON_Print(root);
        if (s == NULL)
                return cb_error_set(err, ENOMEM, "cannot serialise the image index");
        return cb_write_file_atomic(p, s, strlen(s), 0600, err);
}

static cJSON *index_find(const cJSON *root, const char *ref, int *ret_pos)
{
        const cJSON *imgs = cJSON_GetObjectItemCaseSensitive(root, "images");
        int i = 0;
        cJSON *it;
        cJSON_ArrayForEach(it, imgs)
        {
                const char *r = json_str(it, "ref");
                if (r != NULL && strcmp(r, ref) == 0) {
                        if (ret_pos != NULL)
                                *ret_pos = i;
                        return it;
                }
                i++;
        }
        return NULL;
}

static uint64_t blob_size(const struct rt_store *s, const char *digest)
{
        char p[4200];
        struct stat st;
        blob_path(s, digest, p, sizeof(p));
        return stat(p, &st) == 0 ? (uint64_t)st.st_size : 0;
}

static int move_blob(const struct rt_store *s, const char *digest, struct cb_error *err)
{
        char src[4200], dst[4200];
        snprintf(src, sizeof(src), "%s/blobs/%s", s->stage, hex_of(digest));
        blob_path(s, digest, dst, sizeof(dst));
        if (access(dst, F_OK) == 0)
                return 0;
        if (rename(src, dst) < 0)
                return cb_error_set(err, errno, "cannot store blob %s", digest);
        return 0;
}

int rt_store_commit(struct rt_store *s, const char *ref, const char *manifest_digest,
                    const struct rt_manifest *m, struct cb_error *err)
{
        char p[4200], dst[4200];
        /* 1. Unpack the layers the store does not have yet. */
        for (size_t i = 0; i < m->n_layers; i++) {
                const char *hex = hex_of(m->layers[i].digest);
                snprintf(dst, sizeof(dst), "%s/layers/sha256/%s", s->images, hex);
                if (access(dst, F_OK) == 0)
                        continue;
                char dir[4200];
                snprintf(dir, sizeof(dir), "%s/layers/%s", s->stage, hex);
                if (access(dir, F_OK) == 0)
                        continue; /* the same layer twice in one image */
                if (rt_store_find_blob(s, m->layers[i].digest, p, sizeof(p)) < 0)
                        return cb_error_set(err, ENOENT, "layer %s: blob missing",
                                            m->layers[i].digest);
                if (mkdir(dir, 0755) < 0)
                        return cb_error_set(err, errno, "cannot create %s", dir);
                if (rt_layer_unpack_helper(s->unpack_helper, p, dir, RT_UNPACK_OVERLAY_WHITEOUTS,
                                           err) < 0)
                        return cb_error_prefix(err, "layer %s", m->layers[i].digest);
        }
        /* 2. Move blobs, then layer dirs, into the store. */
        if (move_blob(s, manifest_digest, err) < 0 || move_blob(s, m->config.digest, err) < 0)
                return -1;
        for (size_t i = 0; i < m->n_layers; i++)
                if (move_blob(s, m->layers[i].digest, err) < 0)
                        return -1;
        for (size_t i = 0; i < m->n_layers; i++) {
                const char *hex = hex_of(m->layers[i].digest);
                snprintf(p, sizeof(p), "%s/layers/%s", s->stage, hex);
                snprintf(dst, sizeof(dst), "%s/layers/sha256/%s", s->images, hex);
                if (access(p, F_OK) == 0 && access(dst, F_OK) != 0 && rename(p, dst) < 0)
                        return cb_error_set(err, errno, "cannot store layer %s",
                                            m->layers[i].digest);
        }
        /* 3. Point the reference at the image. */
        _cleanup_cjson_ cJSON *root = NULL;
        if (index_read(s->images, &root, err) < 0)
                return -1;
        cJSON *imgs = cJSON_GetObjectItemCaseSensitive(root, "images");
        int pos;
        /* The time the store first had this image under this reference
         * (the garbage collector's "first seen"); a pull of an unchanged
         * image keeps it, and the time it was last used. */
        double created = (double)(cb_wall_now_ns() / 1000000), last_used = 0;
        cJSON *old = index_find(root, ref, &pos);
        if (old != NULL) {
                const char *om = json_str(old, "manifest");
                const cJSON *oc = cJSON_GetObjectItemCaseSensitive(old, "created");
                const cJSON *ol = cJSON_GetObjectItemCaseSensitive(old, "lastUsed");
                if (om != NULL && strcmp(om, manifest_digest) == 0 && cJSON_IsNumber(oc)) {
                        created = oc->valuedouble;
                        last_used = cJSON_IsNumber(ol) ? ol->valuedouble : 0;
                }
                cJSON_DeleteItemFromArray(imgs, pos);
        }
        cJSON *it = cJSON_CreateObject();
        if (it == NULL)
                return cb_error_set(err, ENOMEM, "index");
        cJSON_AddItemToArray(imgs, it);
        uint64_t size = blob_size(s, manifest_digest) + blob_size(s, m->config.digest);
        cJSON *layers = cJSON_AddArrayToObject(it, "layers");
        for (size_t i = 0; i < m->n_layers; i++) {
                cJSON_AddItemToArray(layers, cJSON_CreateString(m->layers[i].digest));
                size += blob_size(s, m->layers[i].digest);
        }
        if (cJSON_AddStringToObject(it, "ref", ref) == NULL ||
            cJSON_AddStringToObject(it, "manifest", manifest_digest) == NULL ||
            cJSON_AddStringToObject(it, "config", m->config.digest) == NULL ||
            cJSON_AddNumberToObject(it, "size", (double)size) == NULL ||
            cJSON_AddNumberToObject(it, "created", created) == NULL ||
            (last_used > 0 && cJSON_AddNumberToObject(it, "lastUsed", last_used) == NULL) ||
            cJSON_GetArraySize(layers) != (int)m->n_layers)
                return cb_error_set(err, ENOMEM, "index");
        return index_write(s->images, root, err);
}

/* ---- garbage collection ------------------------------------------------ */

static int referenced(const cJSON *root, const char *hex)
{
        const cJSON *it;
        cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(root, "images"))
        {
                const char *m = json_str(it, "manifest"), *c = json_str(it, "config");
                if ((m != NULL && strlen(m) > 7 && strcmp(m + 7, hex) == 0) ||
                    (c != NULL && strlen(c) > 7 && strcmp(c + 7, hex) == 0))
                        return 1;
                const cJSON *l;
                cJSON_ArrayForEach(l, cJSON_GetObjectItemCaseSensitive(it, "layers"))
                {
                        if (cJSON_IsString(l) && strlen(l->valuestring) > 7 &&
                            strcmp(l->valuestring + 7, hex) == 0)
                                return 1;
                }
        }
        return 0;
}

static int gc_dir(const cJSON *root, const char *dir, struct cb_error *err)
{
        DIR *d = opendir(dir);
        if (d == NULL)
                return errno == ENOENT ? 0 : cb_error_set(err, errno, "cannot read %s", dir);
        struct dirent *de;
        int ret = 0;
        while (ret == 0 && (de = readdir(d)) != NULL) {
                if (de->d_name[0] == '.' || referenced(root, de->d_name))
                        continue;
                char p[4500];
                snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
                ret = rt_rm_rf(p, err);
        }
        closedir(d);
        return ret;
}

static int gc(const struct rt_store *s, const cJSON *root, struct cb_error *err)
{
        char p[4200];
        /* Layer dirs first: a layer dir without its blob would be orphaned. */
        snprintf(p, sizeof(p), "%s/layers/sha256", s->images);
        if (gc_dir(root, p, err) < 0)
                return -1;
        snprintf(p, sizeof(p), "%s/blobs/sha256", s->images);
        return gc_dir(root, p, err);
}

/* Drops ref from the index of an open store and collects what it alone used. */
static int remove_from_store(const struct rt_store *s, const char *canon, struct cb_error *err)
{
        _cleanup_cjson_ cJSON *root = NULL;
        if (index_read(s->images, &root, err) < 0)
                return -1;
        int pos;
        if (index_find(root, canon, &pos) == NULL)
                return cb_error_set(err, ENOENT, "image %s is not in the store", canon);
        cJSON_DeleteItemFromArray(cJSON_GetObjectItemCaseSensitive(root, "images"), pos);
        if (index_write(s->images, root, err) < 0)
                return -1;
        return gc(s, root, err);
}

int rt_image_remove(const char *root_dir, const char *ref, struct cb_error *err)
{
        struct rt_image_ref r;
        char canon[RT_REF_STR_MAX + 1];
        if (rt_image_ref_parse(ref, &r, err) < 0)
                return -1;
        rt_image_ref_format(&r, canon, sizeof(canon));
        struct rt_store s;
        if (rt_store_open(root_dir, &s, err) < 0)
                return -1;
        int ret = remove_from_store(&s, canon, err);
        rt_store_close(&s);
        return ret;
}

int rt_image_remove_id(const char *root_dir, const char *id, size_t *ret_refs, struct cb_error *err)
{
        if (ret_refs != NULL)
                *ret_refs = 0;
        if (id == NULL || !rt_digest_valid(id))
                return cb_error_set(err, EINVAL, "image id \"%s\" is not a sha256 digest",
                                    id != NULL ? id : "");
        struct rt_store s;
        if (rt_store_open(root_dir, &s, err) < 0)
                return -1;
        _cleanup_cjson_ cJSON *root = NULL;
        int ret = index_read(s.images, &root, err);
        size_t n = 0;
        if (ret == 0) {
                cJSON *imgs = cJSON_GetObjectItemCaseSensitive(root, "images");
                for (cJSON *it = imgs->child, *next; it != NULL; it = next) {
                        next = it->next;
                        const char *c = json_str(it, "config");
                        if (c != NULL && strcmp(c, id) == 0) {
                                cJSON_Delete(cJSON_DetachItemViaPointer(imgs, it));
                                n++;
                        }
                }
                if (n == 0)
                        ret = cb_error_set(err, ENOENT, "image %s is not in the store", id);
        }
        if (ret == 0)
                ret = index_write(s.images, root, err);
        if (ret == 0)
                ret = gc(&s, root, err);
        rt_store_close(&s);
        if (ret == 0 && ret_refs != NULL)
                *ret_refs = n;
        return ret;
}

int rt_image_set_last_used(const char *root_dir, const char *const *ids, size_t n, int64_t when_ms,
                           struct cb_error *err)
{
        if (n == 0)
                return 0;
        struct rt_store s;
        if (rt_store_open(root_dir, &s, err) < 0)
                return -1;
        _cleanup_cjson_ cJSON *root = NULL;
        int ret = index_read(s.images, &root, err);
        bool changed = false;
        const cJSON *it;
        const cJSON *imgs = ret == 0 ? cJSON_GetObjectItemCaseSensitive(root, "images") : NULL;
        cJSON_ArrayForEach(it, imgs)
        {
                const char *c = json_str(it, "config");
                for (size_t i = 0; c != NULL && i < n; i++) {
                        if (strcmp(c, ids[i]) != 0)
                                continue;
                        cJSON_DeleteItemFromObjectCaseSensitive((cJSON *)it, "lastUsed");
                        if (cJSON_AddNumberToObject((cJSON *)it, "lastUsed", (double)when_ms) ==
                            NULL)
                                ret = cb_error_set(err, ENOMEM, "image index");
                        changed = true;
                        break;
                }
        }
        if (ret == 0 && changed)
                ret = index_write(s.images, root, err);
        rt_store_close(&s);
        return ret;
}

/* ---- config, lookup and listing --------------------------------------- */

static int strv_from_json(struct cb_arena *a, const cJSON *v, const char *field, int empty_if_null,
                          char ***ret, struct cb_error *err)
{
        *ret = NULL;
        if (v == NULL || cJSON_IsNull(v)) {
                if (!empty_if_null)
                        return 0;
        } else if (!cJSON_IsArray(v)) {
                return cb_error_set(err, 0, "image config %s: not a list of strings", field);
        }
        int n = v != NULL && cJSON_IsArray(v) ? cJSON_GetArraySize(v) : 0;
        char **out = cb_arena_calloc(a, (size_t)n + 1, sizeof(char *));
        if (out == NULL)
                return cb_error_set(err, ENOMEM, "image config %s", field);
        int i = 0;
        const cJSON *s;
        cJSON_ArrayForEach(s, v)
        {
                if (!cJSON_IsString(s))
                        return cb_error_set(err, 0, "image config %s[%d]: not a string", field, i);
                if ((out[i++] = cb_arena_strdup(a, s->valuestring)) == NULL)
                        return cb_error_set(err, ENOMEM, "image config %s", field);
        }
        *ret = out;
        return 0;
}

static int str_from_json(struct cb_arena *a, const cJSON *o, const char *key, char **ret,
                         struct cb_error *err)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
        *ret = NULL;
        if (v == NULL || cJSON_IsNull(v))
                return 0;
        if (!cJSON_IsString(v))
                return cb_error_set(err, 0, "image config %s: not a string", key);
        if ((*ret = cb_arena_strdup(a, v->valuestring)) == NULL)
                return cb_error_set(err, ENOMEM, "image config %s", key);
        return 0;
}

/* Parses a config JSON; strings live in arena. */
int rt_image_config_parse(struct cb_arena *arena, const char *json, size_t len,
                          struct rt_image_config *ret, struct cb_error *err)
{
        _cleanup_cjson_ cJSON *root = cJSON_ParseWithLength(json, len);
        if (!cJSON_IsObject(root))
                return cb_error_set(err, 0, "the image config is not a JSON object");
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(root, "config");
        if (c != NULL && !cJSON_IsNull(c) && !cJSON_IsObject(c))
                return cb_error_set(err, 0, "image config: \"config\" is not an object");
        struct rt_image_config cfg = {0};
        if (strv_from_json(arena, cJSON_GetObjectItemCaseSensitive(c, "Entrypoint"), "Entrypoint",
                           0, &cfg.entrypoint, err) < 0 ||
            strv_from_json(arena, cJSON_GetObjectItemCaseSensitive(c, "Cmd"), "Cmd", 0, &cfg.cmd,
                           err) < 0 ||
            strv_from_json(arena, cJSON_GetObjectItemCaseSensitive(c, "Env"), "Env", 1, &cfg.env,
                           err) < 0 ||
            str_from_json(arena, c, "WorkingDir", &cfg.working_dir, err) < 0 ||
            str_from_json(arena, c, "User", &cfg.user, err) < 0 ||
            str_from_json(arena, c, "StopSignal", &cfg.stop_signal, err) < 0 ||
            str_from_json(arena, root, "os", &cfg.os, err) < 0 ||
            str_from_json(arena, root, "architecture", &cfg.architecture, err) < 0)
                return -1;
        *ret = cfg;
        return 0;
}

void rt_image_free(struct rt_image *img)
{
        if (img != NULL) {
                struct cb_arena *a = img->arena;
                cb_arena_free(a);
        }
}

static struct rt_image *image_from_json(const char *images, const cJSON *it, int with_config,
                                        struct cb_error *err)
{
        struct cb_arena *a = cb_arena_new(0);
        struct rt_image *img = a != NULL ? cb_arena_calloc(a, 1, sizeof(*img)) : NULL;
        if (img == NULL) {
                cb_arena_free(a);
                cb_error_set(err, ENOMEM, "image");
                return NULL;
        }
        img->arena = a;
        const char *ref = json_str(it, "ref"), *m = json_str(it, "manifest"),
                   *c = json_str(it, "config");
        const cJSON *layers = cJSON_GetObjectItemCaseSensitive(it, "layers");
        const cJSON *size = cJSON_GetObjectItemCaseSensitive(it, "size");
        if (ref == NULL || m == NULL || c == NULL || !rt_digest_valid(m) || !rt_digest_valid(c) ||
            !cJSON_IsArray(layers)) {
                cb_error_set(err, 0, "%s/index.json: corrupt entry \"%s\"", images,
                             ref != NULL ? ref : "");
                goto fail;
        }
        img->ref = cb_arena_strdup(a, ref);
        img->manifest_digest = cb_arena_strdup(a, m);
        img->config_digest = cb_arena_strdup(a, c);
        img->size = cJSON_IsNumber(size) ? (uint64_t)size->valuedouble : 0;
        img->id = img->config_digest;
        const cJSON *created = cJSON_GetObjectItemCaseSensitive(it, "created");
        const cJSON *used = cJSON_GetObjectItemCaseSensitive(it, "lastUsed");
        img->created_ms = cJSON_IsNumber(created) ? (int64_t)created->valuedouble : 0;
        img->last_used_ms = cJSON_IsNumber(used) ? (int64_t)used->valuedouble : 0;
        int n = cJSON_GetArraySize(layers);
        img->layer_digests = cb_arena_calloc(a, (size_t)n + 1, sizeof(char *));
        img->layer_dirs = cb_arena_calloc(a, (size_t)n + 1, sizeof(char *));
        if (img->layer_digests == NULL || img->layer_dirs == NULL)
                goto nomem;
        const cJSON *l;
        cJSON_ArrayForEach(l, layers)
        {
                if (!cJSON_IsString(l) || !rt_digest_valid(l->valuestring)) {
                        cb_error_set(err, 0, "%s/index.json: corrupt layer list of %s", images,
                                     ref);
                        goto fail;
                }
                img->layer_digests[img->n_layers] = cb_arena_strdup(a, l->valuestring);
                img->layer_dirs[img->n_layers] =
                    cb_arena_printf(a, "%s/layers/sha256/%s", images, l->valuestring + 7);
                if (img->layer_dirs[img->n_layers++] == NULL)
                        goto nomem;
        }
        if (with_config) {
                char p[4200];
                _cleanup_free_ char *buf = NULL;
                size_t len;
                snprintf(p, sizeof(p), "%s/blobs/sha256/%s", images, c + 7);
                if (cb_read_file(p, RT_CONFIG_MAX, &buf, &len, err) < 0 ||
                    rt_image_config_parse(a, buf, len, &img->config, err) < 0) {
                        cb_error_prefix(err, "image %s", ref);
                        goto fail;
                }
        }
        return img;
nomem:
        cb_error_set(err, ENOMEM, "image");
fail:
        cb_arena_free(a);
        return NULL;
}

int rt_image_lookup(const char *root_dir, const char *ref, struct rt_image **ret,
                    struct cb_error *err)
{
        struct rt_image_ref r;
        char canon[RT_REF_STR_MAX + 1], images[2048];
        if (rt_image_ref_parse(ref, &r, err) < 0 ||
            images_dir(root_dir, images, sizeof(images), err) < 0)
                return -1;
        rt_image_ref_format(&r, canon, sizeof(canon));
        _cleanup_cjson_ cJSON *root = NULL;
        if (index_read(images, &root, err) < 0)
                return -1;
        const cJSON *it = index_find(root, canon, NULL);
        *ret = NULL;
        if (it == NULL)
                return 0;
        *ret = image_from_json(images, it, 1, err);
        return *ret != NULL ? 0 : -1;
}

static int cmp_image(const void *a, const void *b)
{
        const struct rt_image *x = *(struct rt_image *const *)a, *y = *(struct rt_image *const *)b;
        return strcmp(x->ref, y->ref);
}

int rt_image_list(const char *root_dir, struct rt_image ***ret, size_t *ret_n, struct cb_error *err)
{
        char images[2048];
        if (images_dir(root_dir, images, sizeof(images), err) < 0)
                return -1;
        _cleanup_cjson_ cJSON *root = NULL;
        if (index_read(images, &root, err) < 0)
                return -1;
        const cJSON *imgs = cJSON_GetObjectItemCaseSensitive(root, "images");
        size_t n = 0, cap = (size_t)cJSON_GetArraySize(imgs);
        struct rt_image **v = calloc(cap + 1, sizeof(*v));
        if (v == NULL)
                return cb_error_set(err, ENOMEM, "image list");
        const cJSON *it;
        cJSON_ArrayForEach(it, imgs)
        {
                if ((v[n] = image_from_json(images, it, 0, err)) == NULL) {
                        rt_image_list_free(v, n);
                        return -1;
                }
                n++;
        }
        qsort(v, n, sizeof(*v), cmp_image);
        *ret = v;
        *ret_n = n;
        return 0;
}

void rt_image_list_free(struct rt_image **imgs, size_t n)
{
        for (size_t i = 0; i < n; i++)
                rt_image_free(imgs[i]);
        free(imgs);
}

void rt_strv_free(char **v)
{
        if (v == NULL)
                return;
        for (char **p = v; *p != NULL; p++)
                free(*p);
        free(v);
}
