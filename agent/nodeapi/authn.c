/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Credentials of the node API: the static bearer-token file and the
 * self-signed serving certificate made when none is configured (what the
 * kubelet does without --tls-cert-file: a certificate for its own names).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "agent/nodeapi/server.h"
#include "lib/cleanup.h"
#include "lib/file.h"

struct token {
        char *token, *user;
};

struct ag_napi_tokens {
        struct token *v;
        size_t n;
};

void ag_napi_tokens_free(struct ag_napi_tokens *t)
{
        if (t == NULL)
                return;
        for (size_t i = 0; i < t->n; i++) {
                OPENSSL_cleanse(t->v[i].token, strlen(t->v[i].token));
                free(t->v[i].token);
                free(t->v[i].user);
        }
        free(t->v);
        free(t);
}

int ag_napi_tokens_load(const char *path, struct ag_napi_tokens **ret, struct cb_error *err)
{
        _cleanup_free_ char *data = NULL;
        if (cb_read_file(path, 1 << 20, &data, NULL, err) < 0)
                return -1;
        struct ag_napi_tokens *t = calloc(1, sizeof(*t));
        if (t == NULL)
                return cb_error_set(err, ENOMEM, "%s", path);
        size_t lineno = 0;
        char *save = NULL;
        for (char *line = strtok_r(data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                lineno++;
                while (*line == ' ' || *line == '\t')
                        line++;
                size_t l = strlen(line);
                while (l > 0 && (line[l - 1] == '\r' || line[l - 1] == ' '))
                        line[--l] = '\0';
                if (l == 0 || line[0] == '#')
                        continue;
                char *c1 = strchr(line, ',');
                char *c2 = c1 ? strchr(c1 + 1, ',') : NULL;
                if (c1 == NULL || c2 == NULL || c1 == line || c2 == c1 + 1) {
                        ag_napi_tokens_free(t);
                        return cb_error_set(err, EINVAL,
                                            "%s: line %zu: want token,user,uid[,\"groups\"]", path,
                                            lineno);
                }
                struct token *nv = realloc(t->v, (t->n + 1) * sizeof(*nv));
                if (nv == NULL) {
                        ag_napi_tokens_free(t);
                        return cb_error_set(err, ENOMEM, "%s", path);
                }
                t->v = nv;
                t->v[t->n].token = strndup(line, (size_t)(c1 - line));
                t->v[t->n].user = strndup(c1 + 1, (size_t)(c2 - c1 - 1));
                t->n++;
                if (t->v[t->n - 1].token == NULL || t->v[t->n - 1].user == NULL) {
                        ag_napi_tokens_free(t);
                        return cb_error_set(err, ENOMEM, "%s", path);
                }
        }
        OPENSSL_cleanse(data, strlen(data));
        *ret = t;
        return 0;
}

const char *ag_napi_tokens_user(const struct ag_napi_tokens *t, const char *token)
{
        if (t == NULL || token == NULL || token[0] == '\0')
                return NULL;
        size_t n = strlen(token);
        const char *found = NULL;
        /* every entry is compared, in constant time per entry */
        for (size_t i = 0; i < t->n; i++)
                if (strlen(t->v[i].token) == n && CRYPTO_memcmp(t->v[i].token, token, n) == 0)
                        found = t->v[i].user;
        return found;
}

/* ---- the generated serving certificate ---- */

static bool cert_usable(const char *cert_path, const char *key_path)
{
        struct stat st;
        if (stat(key_path, &st) < 0)
                return false;
        FILE *f = fopen(cert_path, "re");
        if (f == NULL)
                return false;
        X509 *x = PEM_read_X509(f, NULL, NULL, NULL);
        fclose(f);
        if (x == NULL)
                return false;
        time_t t = time(NULL) + 86400;
        bool ok = X509_cmp_time(X509_get0_notAfter(x), &t) > 0;
        X509_free(x);
        return ok;
}

static int pem_to_string(int (*wr)(BIO *, void *), void *obj, char **ret)
{
        BIO *b = BIO_new(BIO_s_mem());
        if (b == NULL || !wr(b, obj)) {
                BIO_free(b);
                return -1;
        }
        char *p;
        long n = BIO_get_mem_data(b, &p);
        *ret = strndup(p, (size_t)n);
        BIO_free(b);
        return *ret != NULL ? 0 : -1;
}

static int wr_cert(BIO *b, void *x)
{
        return PEM_write_bio_X509(b, x);
}

static int wr_key(BIO *b, void *k)
{
        return PEM_write_bio_PrivateKey(b, k, NULL, NULL, 0, NULL, NULL);
}

int ag_napi_ensure_cert(const char *cert_path, const char *key_path, const char *ip,
                        const char *host, struct cb_error *err)
{
        if (cert_usable(cert_path, key_path))
                return 0;
        int ret = -1;
        EVP_PKEY *key = EVP_EC_gen("P-256");
        X509 *x = X509_new();
        _cleanup_free_ char *cert_pem = NULL, *key_pem = NULL;
        if (key == NULL || x == NULL) {
                cb_error_set(err, ENOMEM, "cannot make a serving key");
                goto out;
        }
        unsigned char serial[16];
        if (RAND_bytes(serial, sizeof(serial)) != 1) {
                cb_error_set(err, EIO, "no randomness for the certificate serial");
                goto out;
        }
        serial[0] &= 0x7f;
        BIGNUM *bn = BN_bin2bn(serial, sizeof(serial), NULL);
        if (bn == NULL || BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) == NULL) {
                BN_free(bn);
                cb_error_set(err, ENOMEM, "certificate serial");
                goto out;
        }
        BN_free(bn);
        char cn[320], san[400];
        snprintf(cn, sizeof(cn), "%s@%lld", host, (long long)time(NULL));
        if (ip != NULL && ip[0] != '\0')
                snprintf(san, sizeof(san), "DNS:%s,IP:%s", host, ip);
        else
                snprintf(san, sizeof(san), "DNS:%s", host);
        X509_NAME *name = X509_get_subject_name(x);
        X509V3_CTX ctx;
        X509_EXTENSION *ext[3] = {NULL, NULL, NULL};
        if (!X509_set_version(x, 2) ||
            !X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (unsigned char *)cn, -1, -1,
                                        0) ||
            !X509_set_issuer_name(x, name) || !X509_gmtime_adj(X509_getm_notBefore(x), -3600) ||
            !X509_gmtime_adj(X509_getm_notAfter(x), 365L * 86400) || !X509_set_pubkey(x, key)) {
                cb_error_set(err, EINVAL, "cannot fill in the serving certificate");
                goto out;
        }
        X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
        ext[0] = X509V3_EXT_conf_nid(NULL, &ctx, NID_subject_alt_name, san);
        ext[1] = X509V3_EXT_conf_nid(NULL, &ctx, NID_ext_key_usage, "serverAuth");
        ext[2] = X509V3_EXT_conf_nid(NULL, &ctx, NID_key_usage, "critical,digitalSignature");
        for (int i = 0; i < 3; i++)
                if (ext[i] == NULL || !X509_add_ext(x, ext[i], -1)) {
                        cb_error_set(err, EINVAL, "serving certificate for %s: bad extension", san);
                        for (int j = 0; j < 3; j++)
                                X509_EXTENSION_free(ext[j]);
                        goto out;
                }
        for (int j = 0; j < 3; j++)
                X509_EXTENSION_free(ext[j]);
        if (!X509_sign(x, key, EVP_sha256()) || pem_to_string(wr_cert, x, &cert_pem) < 0 ||
            pem_to_string(wr_key, key, &key_pem) < 0) {
                cb_error_set(err, EINVAL, "cannot sign the serving certificate");
                goto out;
        }
        if (cb_write_file_atomic(key_path, key_pem, strlen(key_pem), 0600, err) < 0 ||
            cb_write_file_atomic(cert_path, cert_pem, strlen(cert_pem), 0644, err) < 0)
                goto out;
        ret = 0;
out:
        if (key_pem != NULL)
                OPENSSL_cleanse(key_pem, strlen(key_pem));
        X509_free(x);
        EVP_PKEY_free(key);
        return ret;
}
