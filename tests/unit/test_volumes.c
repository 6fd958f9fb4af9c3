/* SPDX-License-Identifier: Apache-2.0 */
/* The payloads of configMap, secret, downwardAPI and projected volumes
 * (agent/pods/volumes.c, pure): the kube-api-access volume of a real pod,
 * items and modes, optional objects, missing keys, the downward API's
 * formats, tokens pending and failed, refused projections; and the
 * objects a pod refers to. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "agent/pods/volumes.h"
#include "lib/cleanup.h"

#include "helpers.h"

#define FX(rel) CUBELET_FIXTURES "/" rel

struct fake {
        struct k8s_keyed_data *cm, *sec;
        int token_state; /* 1 ready, 0 pending, -1 failed */
        bool not_synced;
};

static int fake_get(void *ctx, enum ag_obj_kind kind, const char *name,
                    const struct k8s_keyed_data **ret, struct cb_error *err)
{
        struct fake *f = ctx;
        if (f->not_synced)
                return cb_error_set(err, EAGAIN, "not synced");
        struct k8s_keyed_data *kd = kind == AG_OBJ_SECRET ? f->sec : f->cm;
        if (kd == NULL || strcmp(kd->meta.name, name) != 0)
                return 0;
        *ret = kd;
        return 1;
}

static int fake_token(void *ctx, const struct k8s_projection *p, const char **ret,
                      struct cb_error *err)
{
        struct fake *f = ctx;
        (void)p;
        if (f->token_state < 0)
                return cb_error_set(err, 0, "serviceaccounts \"robot\" not found");
        if (f->token_state == 1)
                *ret = "eyJhbGciOiJSUzI1NiJ9.e30.sig";
        return f->token_state;
}

static struct k8s_keyed_data *keyed(const char *json, bool secret)
{
        _cleanup_cjson_ cJSON *j = cJSON_Parse(json);
        struct k8s_keyed_data *kd = NULL;
        struct cb_error err = {0};
        ck_assert_msg((secret ? k8s_secret_from_json(j, &kd, &err)
                              : k8s_configmap_from_json(j, &kd, &err)) == 0,
                      "%s", err.msg);
        return kd;
}

static struct k8s_pod *pod_text(const char *text)
{
        _cleanup_cjson_ cJSON *j = cJSON_Parse(text);
        ck_assert_ptr_nonnull(j);
        struct k8s_pod *p = NULL;
        struct cb_error err = {0};
        ck_assert_msg(k8s_pod_from_json(j, &p, &err) == 0, "%s", err.msg);
        return p;
}

static const struct ag_payload_file *file(const struct ag_payload_file *f, size_t n,
                                          const char *path)
{
        for (size_t i = 0; i < n; i++)
                if (strcmp(f[i].path, path) == 0)
                        return &f[i];
        return NULL;
}

START_TEST(test_kube_api_access)
{
        cJSON *list = NULL;
        struct cb_error err = {0};
        ck_assert_int_eq(
            k8s_parse_file(FX("real-cluster/podlist-k3s-v1.31-kube-system.json"), &list, &err), 0);
        struct k8s_pod *p = NULL;
        ck_assert_int_eq(
            k8s_pod_from_json(cJSON_GetArrayItem(cJSON_GetObjectItem(list, "items"), 0), &p, &err),
            0);
        cJSON_Delete(list);
        const struct k8s_volume *v = NULL;
        for (size_t i = 0; i < p->spec.n_volumes; i++)
                if (p->spec.volumes[i].kind == K8S_VOLUME_PROJECTED)
                        v = &p->spec.volumes[i];
        ck_assert_ptr_nonnull(v);
        ck_assert(ag_volume_managed(v));
        struct fake f = {.cm = keyed("{\"metadata\":{\"name\":\"kube-root-ca.crt\"},\"data\":{"
                                     "\"ca.crt\":\"PEM\",\"other\":\"x\"}}",
                                     false),
                         .token_state = 1};
        struct ag_volume_lookup lk = {fake_get, fake_token, &f};
        struct ag_env_context ctx = {0};
        struct cb_arena *a = cb_arena_new(0);
        struct ag_payload_file *files;
        size_t n;
        ck_assert_int_eq(ag_volume_payload(a, p, v, &lk, &ctx, &files, &n, &err), 1);
        ck_assert_uint_eq(n, 3);
        ck_assert_str_eq(file(files, n, "token")->data, "eyJhbGciOiJSUzI1NiJ9.e30.sig");
        ck_assert_int_eq(file(files, n, "token")->mode, 0644);
        ck_assert_str_eq(file(files, n, "ca.crt")->data, "PEM");
        ck_assert_str_eq(file(files, n, "namespace")->data, "kube-system");
        ck_assert_ptr_null(file(files, n, "other"));
        /* the token requested: wait; failed: the kubelet's text */
        f.token_state = 0;
        ck_assert_int_eq(ag_volume_payload(a, p, v, &lk, &ctx, &files, &n, &err), 0);
        f.token_state = -1;
        ck_assert_int_eq(ag_volume_payload(a, p, v, &lk, &ctx, &files, &n, &err), -1);
        ck_assert_str_eq(err.msg, "failed to fetch token: serviceaccounts \"robot\" not found");
        /* not synced yet: wait */
        f.token_state = 1;
        f.not_synced = true;
        ck_assert_int_eq(ag_volume_payload(a, p, v, &lk, &ctx, &files, &n, &err), 0);
        f.not_synced = false;
        /* the root CA missing (not optional) */
        k8s_keyed_data_free(f.cm);
        f.cm = NULL;
        ck_assert_int_eq(ag_volume_payload(a, p, v, &lk, &ctx, &files, &n, &err), -1);
        ck_assert_str_eq(err.msg, "configmap \"kube-root-ca.crt\" not found");
        /* the objects it refers to: ConfigMaps of its volumes */
        struct ag_obj_ref *refs;
        size_t nr = ag_pod_object_refs(a, p, &refs);
        ck_assert_uint_eq(nr, 3); /* coredns, coredns-custom, kube-root-ca.crt */
        cb_arena_free(a);
        k8s_pod_free(p);
}
END_TEST

START_TEST(test_items_modes_optional)
{
        struct k8s_pod *p = pod_text(
            "{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\",\"uid\":\"u\",\"labels\":{\"b\":"
            "\"2\",\"a\":\"x\\\"y\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{"
            "\"limits\":{\"memory\":\"64Mi\",\"cpu\":\"1500m\"}}}],\"volumes\":["
            "{\"name\":\"all\",\"configMap\":{\"name\":\"cm\",\"defaultMode\":256}},"
            "{\"name\":\"some\",\"secret\":{\"secretName\":\"s\",\"items\":[{\"key\":\"k\","
            "\"path\":"
            "\"d/k\",\"mode\":384}]}},"
            "{\"name\":\"miss\",\"secret\":{\"secretName\":\"s\",\"items\":[{\"key\":\"nokey\","
            "\"path\":\"x\"}]}},"
            "{\"name\":\"opt\",\"configMap\":{\"name\":\"gone\",\"optional\":true}},"
            "{\"name\":\"dw\",\"downwardAPI\":{\"items\":[{\"path\":\"labels\",\"fieldRef\":{"
            "\"fieldPath\":\"metadata.labels\"}},{\"path\":\"one\",\"fieldRef\":{\"fieldPath\":"
            "\"metadata.labels['b']\"}},{\"path\":\"mem\",\"resourceFieldRef\":{\"containerName\":"
            "\"c\",\"resource\":\"limits.memory\",\"divisor\":\"1Mi\"}},{\"path\":\"cpu\","
            "\"resourceFieldRef\":{\"containerName\":\"c\",\"resource\":\"limits.cpu\"}}]}},"
            "{\"name\":\"ctb\",\"projected\":{\"sources\":[{\"clusterTrustBundle\":{\"path\":\"b\","
            "\"name\":\"n\"}}]}}]}}");
        struct fake f = {
            .cm = keyed("{\"metadata\":{\"name\":\"cm\"},\"data\":{\"a\":\"1\"},\"binaryData\":{"
                        "\"b\":\"AAE=\"}}",
                        false),
            .sec = keyed("{\"metadata\":{\"name\":\"s\"},\"data\":{\"k\":\"djE=\"}}", true),
        };
        struct ag_volume_lookup lk = {fake_get, fake_token, &f};
        struct ag_env_context ctx = {.node_allocatable_memory = 1 << 30};
        struct cb_arena *a = cb_arena_new(0);
        struct ag_payload_file *files;
        size_t n;
        struct cb_error err = {0};
        const struct k8s_volume *v = p->spec.volumes;
        ck_assert_int_eq(ag_volume_payload(a, p, &v[0], &lk, &ctx, &files, &n, &err), 1);
        ck_assert_uint_eq(n, 2); /* data and binaryData */
        ck_assert_int_eq(file(files, n, "a")->mode, 0400);
        ck_assert_uint_eq(file(files, n, "b")->len, 2);
        ck_assert_int_eq(ag_volume_payload(a, p, &v[1], &lk, &ctx, &files, &n, &err), 1);
        ck_assert_uint_eq(n, 1);
        ck_assert_str_eq(files[0].path, "d/k");
        ck_assert_str_eq(files[0].data, "v1");
        ck_assert_int_eq(files[0].mode, 0600);
        ck_assert_int_eq(ag_volume_payload(a, p, &v[2], &lk, &ctx, &files, &n, &err), -1);
        ck_assert_str_eq(err.msg, "references non-existent secret key: nokey");
        ck_assert_int_eq(ag_volume_payload(a, p, &v[3], &lk, &ctx, &files, &n, &err), 1);
        ck_assert_uint_eq(n, 0); /* optional and absent: empty */
        ck_assert_int_eq(ag_volume_payload(a, p, &v[4], &lk, &ctx, &files, &n, &err), 1);
        ck_assert_str_eq(file(files, n, "labels")->data, "a=\"x\\\"y\"\nb=\"2\"");
        ck_assert_str_eq(file(files, n, "one")->data, "2");
        ck_assert_str_eq(file(files, n, "mem")->data, "64");
        ck_assert_str_eq(file(files, n, "cpu")->data, "2");
        ck_assert_int_eq(ag_volume_payload(a, p, &v[5], &lk, &ctx, &files, &n, &err), -1);
        ck_assert_ptr_nonnull(strstr(err.msg, "clusterTrustBundle projections are not supported"));
        cb_arena_free(a);
        k8s_keyed_data_free(f.cm);
        k8s_keyed_data_free(f.sec);
        k8s_pod_free(p);
}
END_TEST

/* The token file's mode and owner (projected.go: 0600 with an fsUser or an
 * fsGroup, else defaultMode; FsUserFrom: the one runAsUser of every init
 * and regular container), and the pull secrets among the refs. */
START_TEST(test_token_mode)
{
        static const struct {
                const char *pod_sc, *init_sc, *c1_sc, *c2_sc;
                int mode;
                bool has_user;
                int64_t user;
        } cases[] = {
            {"", "", "", "", 0644, false, 0},                               /* image users */
            {"\"runAsUser\":1000", "", "", "", 0600, true, 1000},           /* the pod's */
            {"", "", "\"runAsUser\":7", "\"runAsUser\":7", 0644, false, 0}, /* init has none */
            {"", "\"runAsUser\":7", "\"runAsUser\":7", "\"runAsUser\":7", 0600, true, 7},
            {"\"runAsUser\":1000", "", "\"runAsUser\":0", "", 0644, false, 0}, /* 0 and 1000 */
            {"\"runAsUser\":1000", "\"runAsUser\":0", "\"runAsUser\":0", "\"runAsUser\":0", 0600,
             true, 0},                                        /* root is a user too */
            {"\"fsGroup\":2000", "", "", "", 0600, false, 0}, /* the writer adds g+r */
            {"\"runAsUser\":5,\"fsGroup\":2000", "", "", "", 0600, true, 5},
        };
        for (size_t i = 0; i < CB_ARRAY_SIZE(cases); i++) {
                char text[2048];
                snprintf(text, sizeof(text),
                         "{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\",\"uid\":\"u\"},"
                         "\"spec\":{\"securityContext\":{%s},"
                         "\"imagePullSecrets\":[{\"name\":\"reg\"},{\"name\":\"\"}],"
                         "\"initContainers\":[{\"name\":\"i\",\"securityContext\":{%s}}],"
                         "\"containers\":[{\"name\":\"a\",\"securityContext\":{%s}},"
                         "{\"name\":\"b\",\"securityContext\":{%s}}],"
                         "\"volumes\":[{\"name\":\"t\",\"projected\":{\"defaultMode\":420,"
                         "\"sources\":[{\"serviceAccountToken\":{\"path\":\"token\"}}]}}]}}",
                         cases[i].pod_sc, cases[i].init_sc, cases[i].c1_sc, cases[i].c2_sc);
                struct k8s_pod *p = pod_text(text);
                struct fake f = {.token_state = 1};
                struct ag_volume_lookup lk = {fake_get, fake_token, &f};
                struct ag_env_context ctx = {0};
                struct cb_arena *a = cb_arena_new(0);
                struct ag_payload_file *files;
                size_t n;
                struct cb_error err = {0};
                ck_assert_int_eq(
                    ag_volume_payload(a, p, &p->spec.volumes[0], &lk, &ctx, &files, &n, &err), 1);
                const struct ag_payload_file *t = file(files, n, "token");
                ck_assert_ptr_nonnull(t);
                ck_assert_msg(t->mode == cases[i].mode, "case %zu: mode %o", i, (unsigned)t->mode);
                ck_assert_msg(t->has_fs_user == cases[i].has_user, "case %zu", i);
                if (cases[i].has_user)
                        ck_assert_int_eq(t->fs_user, cases[i].user);
                struct ag_obj_ref *refs;
                ck_assert_uint_eq(ag_pod_object_refs(a, p, &refs), 1);
                ck_assert_int_eq(refs[0].kind, AG_OBJ_SECRET);
                ck_assert_str_eq(refs[0].name, "reg");
                cb_arena_free(a);
                k8s_pod_free(p);
        }
}
END_TEST

/* The hostPath plugin's SetUp: each type, the creating ones, the texts. */
static void host_path_fails(const char *path, const char *type, const char *want)
{
        struct cb_error err = {0};
        ck_assert_int_eq(ag_host_path_setup(path, type, &err), -1);
        ck_assert_str_eq(err.msg, want);
}

START_TEST(test_host_path_setup)
{
        char dir[] = "/tmp/test-hostpath-XXXXXX";
        ck_assert_ptr_nonnull(mkdtemp(dir));
        char p[256], want[512], sock[256];
        struct cb_error err = {0};
        struct stat sb;

        /* unset: nothing checked, even a missing path */
        snprintf(p, sizeof(p), "%s/missing", dir);
        ck_assert_int_eq(ag_host_path_setup(p, NULL, &err), 0);
        ck_assert_int_eq(ag_host_path_setup(p, "", &err), 0);
        ck_assert_int_ne(stat(p, &sb), 0);
        /* a missing Directory, File, Socket, device */
        snprintf(want, sizeof(want), "hostPath type check failed: %s is not a directory", p);
        host_path_fails(p, "Directory", want);
        snprintf(want, sizeof(want), "hostPath type check failed: %s is not a file", p);
        host_path_fails(p, "File", want);
        snprintf(want, sizeof(want), "hostPath type check failed: %s is not a socket file", p);
        host_path_fails(p, "Socket", want);
        snprintf(want, sizeof(want), "hostPath type check failed: %s is not a character device", p);
        host_path_fails(p, "CharDevice", want);
        snprintf(want, sizeof(want), "hostPath type check failed: %s is not a block device", p);
        host_path_fails(p, "BlockDevice", want);
        /* DirectoryOrCreate makes every missing component, 0755 */
        snprintf(p, sizeof(p), "%s/a/b/c", dir);
        ck_assert_int_eq(ag_host_path_setup(p, "DirectoryOrCreate", &err), 0);
        ck_assert_int_eq(stat(p, &sb), 0);
        ck_assert(S_ISDIR(sb.st_mode));
        ck_assert_int_eq(ag_host_path_setup(p, "Directory", &err), 0);
        ck_assert_int_eq(ag_host_path_setup(p, "DirectoryOrCreate", &err), 0);
        /* a directory is no File */
        snprintf(want, sizeof(want), "hostPath type check failed: %s is not a file", p);
        host_path_fails(p, "File", want);
        host_path_fails(p, "FileOrCreate", want);
        /* FileOrCreate makes an empty file (its directory must exist) */
        snprintf(p, sizeof(p), "%s/a/f", dir);
        ck_assert_int_eq(ag_host_path_setup(p, "FileOrCreate", &err), 0);
        ck_assert_int_eq(stat(p, &sb), 0);
        ck_assert(S_ISREG(sb.st_mode));
        ck_assert_int_eq(sb.st_size, 0);
        ck_assert_int_eq(ag_host_path_setup(p, "File", &err), 0);
        snprintf(want, sizeof(want), "hostPath type check failed: %s is not a directory", p);
        host_path_fails(p, "Directory", want);
        host_path_fails(p, "DirectoryOrCreate", want); /* exists: checked, not made */
        char q[300];
        snprintf(q, sizeof(q), "%s/nodir/f", dir);
        snprintf(want, sizeof(want), "open %s: no such file or directory", q);
        host_path_fails(q, "FileOrCreate", want);
        snprintf(q, sizeof(q), "%s/a/f/sub", dir);
        snprintf(want, sizeof(want), "mkdir %s/a/f: not a directory", dir);
        host_path_fails(q, "DirectoryOrCreate", want);
        /* a character device is a "file" too (anything but a directory) */
        ck_assert_int_eq(ag_host_path_setup("/dev/null", "CharDevice", &err), 0);
        ck_assert_int_eq(ag_host_path_setup("/dev/null", "File", &err), 0);
        host_path_fails("/dev/null", "BlockDevice",
                        "hostPath type check failed: /dev/null is not a block device");
        /* a socket */
        snprintf(sock, sizeof(sock), "%s/s", dir);
        int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        ck_assert_uint_lt(strlen(sock), sizeof(sa.sun_path));
        memcpy(sa.sun_path, sock, strlen(sock) + 1);
        ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        ck_assert_int_eq(ag_host_path_setup(sock, "Socket", &err), 0);
        snprintf(want, sizeof(want), "hostPath type check failed: %s is not a directory", sock);
        host_path_fails(sock, "Directory", want);
        close(fd);
        /* a symlink is followed */
        snprintf(q, sizeof(q), "%s/link", dir);
        snprintf(p, sizeof(p), "%s/a", dir);
        ck_assert_int_eq(symlink(p, q), 0);
        ck_assert_int_eq(ag_host_path_setup(q, "Directory", &err), 0);
        /* `..` elements, and a type the API does not know */
        host_path_fails("/a/../b", "", "invalid HostPath `/a/../b`: must not contain '..'");
        host_path_fails("/a/..", "Directory", "invalid HostPath `/a/..`: must not contain '..'");
        ck_assert_int_eq(ag_host_path_setup("/tmp/..x", NULL, &err), 0);
        host_path_fails(dir, "Folder", "Folder is an invalid volume type");

        unlink(q);
        unlink(sock);
        snprintf(p, sizeof(p), "%s/a/f", dir);
        unlink(p);
        snprintf(p, sizeof(p), "%s/a/b/c", dir);
        rmdir(p);
        snprintf(p, sizeof(p), "%s/a/b", dir);
        rmdir(p);
        snprintf(p, sizeof(p), "%s/a", dir);
        rmdir(p);
        rmdir(dir);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("volumes");
        TCase *tc = tcase_create("payload");
        tcase_add_test(tc, test_kube_api_access);
        tcase_add_test(tc, test_items_modes_optional);
        tcase_add_test(tc, test_token_mode);
        tcase_add_test(tc, test_host_path_setup);
        suite_add_tcase(s, tc);
        return th_run(s) ? 1 : 0;
}
