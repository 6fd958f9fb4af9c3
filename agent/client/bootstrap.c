/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/client/bootstrap.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "agent/core/log.h"
#include "lib/wallclock.h"
#include "lib/cleanup.h"
#include "lib/file.h"

#define MAX_PEM_BYTES (1u << 20)

static const char *const client_usages[] = {"digital signature", "client auth"};
/* DefaultKubeletServingGetUsages for a non-RSA key: no key encipherment. */
static const char *const serving_usages[] = {"digital signature", "server auth"};

void ag_cert_paths(const char *cert_dir, struct ag_cert_paths *p)
{
        snprintf(p->current, sizeof(p->current), "%s/" AG_CERT_STORE_PREFIX "-current.pem",
                 cert_dir);
        snprintf(p->key_tmp, sizeof(p->key_tmp), "%s/" AG_CERT_STORE_PREFIX ".key.tmp", cert_dir);
}

/* ---- pure parts ---- */

time_t ag_cert_rotation_deadline(time_t not_before, time_t not_after, double r)
{
        if (r < 0)
                r = 0;
        if (r >= 1)
                r = 0.999999;
        double total = difftime(not_after, not_before);
        return not_before + (time_t)(total * (0.7 + 0.2 * r) + 0.5);
}

static const char *openssl_reason(void)
{
        unsigned long e = ERR_get_error();
        const char *r = e ? ERR_reason_error_string(e) : NULL;
        ERR_clear_error();
        return r ? r : "unknown OpenSSL error";
}

static time_t asn1_to_time(const ASN1_TIME *t)
{
        struct tm tm = {0};
        if (t == NULL || ASN1_TIME_to_tm(t, &tm) != 1)
                return (time_t)-1;
        return timegm(&tm);
}

int ag_cert_pem_validity(const char *pem, size_t len, time_t *not_before, time_t *not_after,
                         struct cb_error *err)
{
        BIO *b = BIO_new_mem_buf(pem, (int)len);
        if (b == NULL)
                return cb_error_set(err, ENOMEM, "out of memory");
        X509 *x = PEM_read_bio_X509(b, NULL, NULL, NULL);
        BIO_free(b);
        if (x == NULL)
                return cb_error_set(err, 0, "no PEM CERTIFICATE block that parses (%s)",
                                    openssl_reason());
        *not_before = asn1_to_time(X509_get0_notBefore(x));
        *not_after = asn1_to_time(X509_get0_notAfter(x));
        X509_free(x);
        if (*not_before == (time_t)-1 || *not_after == (time_t)-1)
                return cb_error_set(err, 0, "the certificate's validity does not parse");
        return 0;
}

static char *b64url(const unsigned char *in, size_t len)
{
        static const char tab[] =
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        char *out = malloc(len / 3 * 4 + 5);
        if (out == NULL)
                return NULL;
        size_t o = 0, i = 0;
        for (; i + 2 < len; i += 3) {
                uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
                out[o++] = tab[v >> 18 & 63];
                out[o++] = tab[v >> 12 & 63];
                out[o++] = tab[v >> 6 & 63];
                out[o++] = tab[v & 63];
        }
        if (len - i == 1) {
                uint32_t v = (uint32_t)in[i] << 16;
                out[o++] = tab[v >> 18 & 63];
                out[o++] = tab[v >> 12 & 63];
        } else if (len - i == 2) {
                uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8;
                out[o++] = tab[v >> 18 & 63];
                out[o++] = tab[v >> 12 & 63];
                out[o++] = tab[v >> 6 & 63];
        }
        out[o] = '\0';
        return out;
}

static int digest_part(EVP_MD_CTX *ctx, const void *data, size_t len)
{
        _cleanup_free_ char *e = b64url(data, len);
        return e != NULL && EVP_DigestUpdate(ctx, e, strlen(e)) == 1 &&
                       EVP_DigestUpdate(ctx, "|", 1) == 1
                   ? 0
                   : -1;
}

char *ag_csr_digest_name(const unsigned char *pub_der, size_t pub_len, const char *cn,
                         const char *org, const char *const *usages, size_t n_usages)
{
        EVP_MD_CTX *ctx = EVP_MD_CTX_new();
        const EVP_MD *md = EVP_get_digestbyname("SHA512-256");
        unsigned char sum[EVP_MAX_MD_SIZE];
        unsigned int n = 0;
        int ok = ctx != NULL && md != NULL && EVP_DigestInit_ex(ctx, md, NULL) == 1 &&
                 digest_part(ctx, pub_der, pub_len) == 0 && digest_part(ctx, cn, strlen(cn)) == 0 &&
                 digest_part(ctx, org, strlen(org)) == 0;
        for (size_t i = 0; ok && i < n_usages; i++)
                ok = digest_part(ctx, usages[i], strlen(usages[i])) == 0;
        ok = ok && EVP_DigestFinal_ex(ctx, sum, &n) == 1;
        EVP_MD_CTX_free(ctx);
        if (!ok)
                return NULL;
        _cleanup_free_ char *e = b64url(sum, n);
        char *name = NULL;
        if (e == NULL || asprintf(&name, "node-csr-%s", e) < 0)
                return NULL;
        return name;
}

static char *yaml_quote(const char *s)
{
        /* A double-quoted YAML scalar (paths and URLs need no more). */
        size_t n = strlen(s);
        char *out = malloc(2 * n + 3);
        if (out == NULL)
                return NULL;
        size_t o = 0;
        out[o++] = '"';
        for (size_t i = 0; i < n; i++) {
                if (s[i] == '"' || s[i] == '\\')
                        out[o++] = '\\';
                out[o++] = s[i];
        }
        out[o++] = '"';
        out[o] = '\0';
        return out;
}

static char *b64std(const char *in, size_t len)
{
        char *out = malloc(len / 3 * 4 + 8);
        if (out == NULL)
                return NULL;
        int n = EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)in, (int)len);
        out[n < 0 ? 0 : n] = '\0';
        return out;
}

char *ag_bootstrap_kubeconfig_text(const char *server, const char *ca_file,
                                   const struct ag_blob *ca_data, bool insecure,
                                   const char *pem_path)
{
        _cleanup_free_ char *srv = yaml_quote(server), *pem = yaml_quote(pem_path);
        _cleanup_free_ char *ca = NULL;
        if (ca_file != NULL) {
                _cleanup_free_ char *q = yaml_quote(ca_file);
                if (q == NULL || asprintf(&ca, "    certificate-authority: %s\n", q) < 0)
                        return NULL;
        } else if (ca_data != NULL && ca_data->data != NULL) {
                _cleanup_free_ char *d = b64std(ca_data->data, ca_data->len);
                if (d == NULL || asprintf(&ca, "    certificate-authority-data: %s\n", d) < 0)
                        return NULL;
        }
        if (srv == NULL || pem == NULL)
                return NULL;
        char *out = NULL;
        if (asprintf(&out,
                     "apiVersion: v1\n"
                     "clusters:\n"
                     "- cluster:\n"
                     "%s%s"
                     "    server: %s\n"
                     "  name: default-cluster\n"
                     "contexts:\n"
                     "- context:\n"
                     "    cluster: default-cluster\n"
                     "    namespace: default\n"
                     "    user: default-auth\n"
                     "  name: default-context\n"
                     "current-context: default-context\n"
                     "kind: Config\n"
                     "preferences: {}\n"
                     "users:\n"
                     "- name: default-auth\n"
                     "  user:\n"
                     "    client-certificate: %s\n"
                     "    client-key: %s\n",
                     ca ? ca : "", insecure ? "    insecure-skip-tls-verify: true\n" : "", srv, pem,
                     pem) < 0)
                return NULL;
        return out;
}

/* Every certificate of a PEM text valid at now (0), one expired (1), none
 * (-1). */
static int pem_certs_expired(const char *pem, size_t len, time_t now, char *why, size_t why_len)
{
        BIO *b = BIO_new_mem_buf(pem, (int)len);
        if (b == NULL)
                return -1;
        int n = 0, expired = 0;
        X509 *x;
        while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL) {
                n++;
                time_t naf = asn1_to_time(X509_get0_notAfter(x));
                if (naf == (time_t)-1 || now > naf) {
                        struct tm tm;
                        char ts[64] = "?";
                        if (naf != (time_t)-1 && gmtime_r(&naf, &tm) != NULL)
                                strftime(ts, sizeof(ts), "%Y-%m-%d %H:%M:%S UTC", &tm);
                        snprintf(why, why_len,
                                 "part of the existing client certificate is expired: %s", ts);
                        expired = 1;
                }
                X509_free(x);
                if (expired)
                        break;
        }
        ERR_clear_error();
        BIO_free(b);
        if (n == 0) {
                snprintf(why, why_len, "no client certificate in it");
                return -1;
        }
        return expired;
}

int ag_client_config_valid(const char *path, time_t now, char *why, size_t why_len)
{
        struct stat st;
        if (stat(path, &st) < 0) {
                if (errno == ENOENT) {
                        snprintf(why, why_len, "%s does not exist", path);
                        return 0;
                }
                snprintf(why, why_len, "error reading existing kubeconfig %s: %s", path,
                         strerror(errno));
                return -1;
        }
        struct ag_kubeconfig kc = {0};
        struct cb_error e = {0};
        if (ag_kubeconfig_load(path, NULL, &kc, &e) < 0) {
                snprintf(why, why_len, "unable to read the existing kubeconfig: %s", e.msg);
                return 0;
        }
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        int r = 0;
        if (kc.cert_data.data != NULL) {
                r = pem_certs_expired(kc.cert_data.data, kc.cert_data.len, now, why, why_len);
        } else if (kc.cert_file != NULL) {
                if (cb_read_file(kc.cert_file, MAX_PEM_BYTES, &text, &len, &e) < 0) {
                        snprintf(why, why_len, "unable to load the client certificate: %s", e.msg);
                        r = -1;
                } else {
                        r = pem_certs_expired(text, len, now, why, why_len);
                }
        } else {
                snprintf(why, why_len, "%s has no client certificate", path);
                r = -1;
        }
        ag_kubeconfig_clear(&kc);
        return r == 0 ? 1 : 0;
}

static char *bio_text(BIO *b)
{
        char *p = NULL;
        long n = BIO_get_mem_data(b, &p);
        if (n <= 0)
                return NULL;
        char *out = malloc((size_t)n + 1);
        if (out == NULL)
                return NULL;
        memcpy(out, p, (size_t)n);
        out[n] = '\0';
        return out;
}

int ag_make_ec_key(char **key_pem, struct cb_error *err)
{
        EVP_PKEY *k = EVP_EC_gen("P-256");
        if (k == NULL)
                return cb_error_set(err, 0, "cannot generate an EC P-256 key: %s",
                                    openssl_reason());
        BIO *b = BIO_new(BIO_s_mem());
        int ok =
            b != NULL && PEM_write_bio_PrivateKey_traditional(b, k, NULL, NULL, 0, NULL, NULL) == 1;
        char *t = ok ? bio_text(b) : NULL;
        BIO_free(b);
        EVP_PKEY_free(k);
        if (t == NULL)
                return cb_error_set(err, 0, "cannot encode the key: %s", openssl_reason());
        *key_pem = t;
        return 0;
}

static EVP_PKEY *load_key(const char *key_pem)
{
        BIO *b = BIO_new_mem_buf(key_pem, -1);
        if (b == NULL)
                return NULL;
        EVP_PKEY *k = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);
        BIO_free(b);
        ERR_clear_error();
        return k;
}

bool ag_key_pem_valid(const char *key_pem)
{
        EVP_PKEY *k = key_pem ? load_key(key_pem) : NULL;
        EVP_PKEY_free(k);
        return k != NULL;
}

/* The subjectAltName extension of sans into the request. */
static bool add_sans(X509_REQ *req, const struct ag_cert_sans *sans)
{
        if (sans == NULL || sans->n_dns + sans->n_ips == 0)
                return true;
        GENERAL_NAMES *names = sk_GENERAL_NAME_new_null();
        bool ok = names != NULL;
        for (size_t i = 0; ok && i < sans->n_dns; i++) {
                GENERAL_NAME *g = GENERAL_NAME_new();
                ASN1_IA5STRING *v = ASN1_IA5STRING_new();
                ok = g != NULL && v != NULL && ASN1_STRING_set(v, sans->dns[i], -1) == 1;
                if (ok) {
                        GENERAL_NAME_set0_value(g, GEN_DNS, v);
                        v = NULL;
                        ok = sk_GENERAL_NAME_push(names, g) > 0;
                        if (ok)
                                g = NULL;
                }
                ASN1_IA5STRING_free(v);
                GENERAL_NAME_free(g);
        }
        for (size_t i = 0; ok && i < sans->n_ips; i++) {
                ASN1_OCTET_STRING *ip = a2i_IPADDRESS(sans->ips[i]);
                GENERAL_NAME *g = ip != NULL ? GENERAL_NAME_new() : NULL;
                ok = g != NULL;
                if (ok) {
                        GENERAL_NAME_set0_value(g, GEN_IPADD, ip);
                        ip = NULL;
                        ok = sk_GENERAL_NAME_push(names, g) > 0;
                        if (ok)
                                g = NULL;
                }
                ASN1_OCTET_STRING_free(ip);
                GENERAL_NAME_free(g);
        }
        STACK_OF(X509_EXTENSION) *exts = ok ? sk_X509_EXTENSION_new_null() : NULL;
        ok = exts != NULL && X509V3_add1_i2d(&exts, NID_subject_alt_name, names, 0, 0) == 1 &&
             X509_REQ_add_extensions(req, exts) == 1;
        sk_X509_EXTENSION_pop_free(exts, X509_EXTENSION_free);
        GENERAL_NAMES_free(names);
        return ok;
}

int ag_make_node_csr(const char *key_pem, const char *node, const struct ag_cert_sans *sans,
                     char **csr_pem, unsigned char **pub_der, size_t *pub_len, struct cb_error *err)
{
        EVP_PKEY *k = load_key(key_pem);
        if (k == NULL)
                return cb_error_set(err, 0, "invalid private key for certificate request");
        char cn[512];
        snprintf(cn, sizeof(cn), "system:node:%s", node);
        X509_REQ *req = X509_REQ_new();
        X509_NAME *name = X509_NAME_new();
        int ok =
            req != NULL && name != NULL && X509_REQ_set_version(req, 0) == 1 &&
            X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8,
                                       (const unsigned char *)"system:nodes", -1, -1, 0) == 1 &&
            X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1,
                                       0) == 1 &&
            X509_REQ_set_subject_name(req, name) == 1 && X509_REQ_set_pubkey(req, k) == 1 &&
            add_sans(req, sans) && X509_REQ_sign(req, k, EVP_sha256()) > 0;
        BIO *b = ok ? BIO_new(BIO_s_mem()) : NULL;
        ok = ok && b != NULL && PEM_write_bio_X509_REQ(b, req) == 1;
        char *t = ok ? bio_text(b) : NULL;
        unsigned char *der = NULL;
        int dl = t != NULL ? i2d_PUBKEY(k, &der) : -1;
        BIO_free(b);
        X509_NAME_free(name);
        X509_REQ_free(req);
        EVP_PKEY_free(k);
        if (t == NULL || dl <= 0) {
                free(t);
                OPENSSL_free(der);
                return cb_error_set(err, 0, "unable to generate certificate request: %s",
                                    openssl_reason());
        }
        *csr_pem = t;
        *pub_der = malloc((size_t)dl);
        if (*pub_der == NULL) {
                OPENSSL_free(der);
                free(t);
                return cb_error_set(err, ENOMEM, "out of memory");
        }
        memcpy(*pub_der, der, (size_t)dl);
        *pub_len = (size_t)dl;
        OPENSSL_free(der);
        return 0;
}

int ag_cert_store_link(const char *dir, const char *prefix, const char *file, struct cb_error *err)
{
        char upd[4096], cur[4096];
        snprintf(upd, sizeof(upd), "%s/%s-updated.pem", dir, prefix);
        snprintf(cur, sizeof(cur), "%s/%s-current.pem", dir, prefix);
        const char *base = strrchr(file, '/');
        base = base ? base + 1 : file;
        if (unlink(upd) < 0 && errno != ENOENT)
                return cb_error_set(err, errno, "cannot remove %s", upd);
        if (symlink(base, upd) < 0)
                return cb_error_set(err, errno, "cannot create the symlink %s -> %s", upd, base);
        if (rename(upd, cur) < 0)
                return cb_error_set(err, errno, "cannot rename %s to %s", upd, cur);
        return 0;
}

int ag_cert_store_write(const char *dir, const char *prefix, const char *key_pem,
                        const char *cert_pem, time_t now, char *ret_path, size_t ret_len,
                        struct cb_error *err)
{
        if (cb_mkdir_p(dir, 0755, 0700, err) < 0)
                return -1;
        struct tm tm;
        char ts[32];
        gmtime_r(&now, &tm);
        strftime(ts, sizeof(ts), "%Y-%m-%d-%H-%M-%S", &tm);
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s-%s.pem", dir, prefix, ts);
        _cleanup_free_ char *data = NULL;
        size_t kl = strlen(key_pem);
        if (asprintf(&data, "%s%s%s", key_pem, kl && key_pem[kl - 1] != '\n' ? "\n" : "",
                     cert_pem) < 0)
                return cb_error_set(err, ENOMEM, "out of memory");
        if (cb_write_file_atomic(path, data, strlen(data), 0600, err) < 0)
                return -1;
        explicit_bzero(data, strlen(data));
        if (ret_path != NULL)
                snprintf(ret_path, ret_len, "%s", path);
        return 0;
}

/* ---- the serving certificate's template ---- */

static void strv_free(char **v, size_t n)
{
        for (size_t i = 0; i < n; i++)
                free(v[i]);
        free(v);
}

void ag_cert_sans_clear(struct ag_cert_sans *s)
{
        strv_free(s->dns, s->n_dns);
        strv_free(s->ips, s->n_ips);
        *s = (struct ag_cert_sans){0};
}

static bool strv_equal(char *const *a, size_t na, char *const *b, size_t nb)
{
        if (na != nb)
                return false;
        for (size_t i = 0; i < na; i++)
                if (strcmp(a[i], b[i]) != 0)
                        return false;
        return true;
}

bool ag_cert_sans_equal(const struct ag_cert_sans *a, const struct ag_cert_sans *b)
{
        return strv_equal(a->dns, a->n_dns, b->dns, b->n_dns) &&
               strv_equal(a->ips, a->n_ips, b->ips, b->n_ips);
}

static int strv_copy(char *const *from, size_t n, char ***to)
{
        *to = n ? calloc(n, sizeof(char *)) : NULL;
        if (n && *to == NULL)
                return -1;
        for (size_t i = 0; i < n; i++)
                if (((*to)[i] = strdup(from[i])) == NULL)
                        return -1;
        return 0;
}

int ag_cert_sans_copy(const struct ag_cert_sans *from, struct ag_cert_sans *to)
{
        *to = (struct ag_cert_sans){0};
        if (strv_copy(from->dns, from->n_dns, &to->dns) < 0)
                goto fail;
        to->n_dns = from->n_dns;
        if (strv_copy(from->ips, from->n_ips, &to->ips) < 0)
                goto fail;
        to->n_ips = from->n_ips;
        return 0;
fail:
        /* a partial copy: the counts cover what was allocated (calloc'd) */
        to->n_dns = to->dns ? from->n_dns : 0;
        to->n_ips = to->ips ? from->n_ips : 0;
        ag_cert_sans_clear(to);
        return -1;
}

/* An IP in canonical text (what Go's net.IP.String gives for the usual
 * forms), or false. */
static bool canonical_ip(const char *s, char *out, size_t len)
{
        unsigned char b[16];
        if (inet_pton(AF_INET, s, b) == 1)
                return inet_ntop(AF_INET, b, out, (socklen_t)len) != NULL;
        if (inet_pton(AF_INET6, s, b) == 1) {
                /* an IPv4-mapped address prints as IPv4, as Go does */
                static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
                if (memcmp(b, mapped, 12) == 0)
                        return inet_ntop(AF_INET, b + 12, out, (socklen_t)len) != NULL;
                return inet_ntop(AF_INET6, b, out, (socklen_t)len) != NULL;
        }
        return false;
}

static int strv_add_unique(char ***v, size_t *n, const char *s)
{
        for (size_t i = 0; i < *n; i++)
                if (strcmp((*v)[i], s) == 0)
                        return 0;
        char **p = realloc(*v, (*n + 1) * sizeof(char *));
        if (p == NULL)
                return -1;
        *v = p;
        if ((p[*n] = strdup(s)) == NULL)
                return -1;
        (*n)++;
        return 0;
}

static int cmp_str(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

int ag_serving_sans_from_addresses(const cJSON *addresses, struct ag_cert_sans *out)
{
        *out = (struct ag_cert_sans){0};
        const cJSON *a;
        cJSON_ArrayForEach(a, addresses)
        {
                const cJSON *t = cJSON_GetObjectItemCaseSensitive(a, "type");
                const cJSON *v = cJSON_GetObjectItemCaseSensitive(a, "address");
                if (!cJSON_IsString(t) || !cJSON_IsString(v) || v->valuestring[0] == '\0')
                        continue;
                char ip[INET6_ADDRSTRLEN];
                bool is_ip = canonical_ip(v->valuestring, ip, sizeof(ip));
                int r = 0;
                if (strcmp(t->valuestring, "Hostname") == 0)
                        r = is_ip ? strv_add_unique(&out->ips, &out->n_ips, ip)
                                  : strv_add_unique(&out->dns, &out->n_dns, v->valuestring);
                else if (strcmp(t->valuestring, "InternalIP") == 0 ||
                         strcmp(t->valuestring, "ExternalIP") == 0)
                        r = is_ip ? strv_add_unique(&out->ips, &out->n_ips, ip) : 0;
                else if (strcmp(t->valuestring, "InternalDNS") == 0 ||
                         strcmp(t->valuestring, "ExternalDNS") == 0)
                        r = strv_add_unique(&out->dns, &out->n_dns, v->valuestring);
                if (r < 0) {
                        ag_cert_sans_clear(out);
                        return -1;
                }
        }
        /* no template without an IP (AllowDNSOnlyNodeCSR off) */
        if (out->n_ips == 0) {
                ag_cert_sans_clear(out);
                return 0;
        }
        if (out->n_dns > 1)
                qsort(out->dns, out->n_dns, sizeof(char *), cmp_str);
        if (out->n_ips > 1)
                qsort(out->ips, out->n_ips, sizeof(char *), cmp_str);
        return 1;
}

static bool names_has(const GENERAL_NAMES *names, int type, const char *want)
{
        for (int i = 0; i < sk_GENERAL_NAME_num(names); i++) {
                const GENERAL_NAME *g = sk_GENERAL_NAME_value(names, i);
                int t = 0;
                const ASN1_STRING *v = GENERAL_NAME_get0_value(g, &t);
                if (t != type || v == NULL)
                        continue;
                const unsigned char *d = ASN1_STRING_get0_data(v);
                int len = ASN1_STRING_length(v);
                if (type == GEN_DNS) {
                        if ((size_t)len == strlen(want) && memcmp(d, want, (size_t)len) == 0)
                                return true;
                } else {
                        char got[INET6_ADDRSTRLEN];
                        int af = len == 4 ? AF_INET : len == 16 ? AF_INET6 : -1;
                        char raw[INET6_ADDRSTRLEN];
                        if (af < 0 || inet_ntop(af, d, raw, sizeof(raw)) == NULL ||
                            !canonical_ip(raw, got, sizeof(got)))
                                continue;
                        if (strcmp(got, want) == 0)
                                return true;
                }
        }
        return false;
}

static bool subject_has(const X509_NAME *n, int nid, const char *want, bool *first_matches)
{
        bool found = false;
        int first = -1;
        for (int i = X509_NAME_get_index_by_NID(n, nid, -1); i >= 0;
             i = X509_NAME_get_index_by_NID(n, nid, i)) {
                const ASN1_STRING *v = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(n, i));
                bool eq = v != NULL && (size_t)ASN1_STRING_length(v) == strlen(want) &&
                          memcmp(ASN1_STRING_get0_data(v), want, strlen(want)) == 0;
                if (first < 0)
                        first = eq;
                found = found || eq;
        }
        if (first_matches != NULL)
                *first_matches = first == 1;
        return found;
}

bool ag_cert_satisfies(const char *cert_pem, const char *node, const struct ag_cert_sans *sans,
                       char *why, size_t why_len)
{
        BIO *b = BIO_new_mem_buf(cert_pem, -1);
        X509 *x = b != NULL ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
        BIO_free(b);
        ERR_clear_error();
        if (x == NULL) {
                snprintf(why, why_len, "no certificate");
                return false;
        }
        char cn[512];
        snprintf(cn, sizeof(cn), "system:node:%s", node);
        bool ok = true, cn_ok = false;
        const X509_NAME *subj = X509_get_subject_name(x);
        subject_has(subj, NID_commonName, cn, &cn_ok);
        GENERAL_NAMES *names = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
        if (!cn_ok) {
                snprintf(why, why_len, "the certificate's CN does not match the requested CN (%s)",
                         cn);
                ok = false;
        }
        for (size_t i = 0; ok && i < sans->n_dns; i++)
                if (!names_has(names, GEN_DNS, sans->dns[i])) {
                        snprintf(why, why_len,
                                 "the certificate is missing the requested DNS name %s",
                                 sans->dns[i]);
                        ok = false;
                }
        for (size_t i = 0; ok && i < sans->n_ips; i++)
                if (!names_has(names, GEN_IPADD, sans->ips[i])) {
                        snprintf(why, why_len,
                                 "the certificate is missing the requested IP address %s",
                                 sans->ips[i]);
                        ok = false;
                }
        if (ok && !subject_has(subj, NID_organizationName, "system:nodes", NULL)) {
                snprintf(why, why_len, "the certificate is missing the requested org system:nodes");
                ok = false;
        }
        GENERAL_NAMES_free(names);
        X509_free(x);
        return ok;
}

/* ---- the CSR round trip ---- */

struct ag_csr_req {
        struct ag_loop *loop;
        struct ag_api *api;
        struct ag_request *http;
        struct ag_timer *timeout, *retry;
        char *name, *uid, *body, *csr_pem, *signer;
        char rv[64];
        char *line;
        size_t line_len, line_cap;
        ag_csr_done_fn done;
        void *data;
        bool finished;
};

static void csr_free(struct ag_csr_req *r)
{
        if (r == NULL)
                return;
        ag_api_cancel(r->http);
        ag_timer_free(r->timeout);
        ag_timer_free(r->retry);
        free(r->name);
        free(r->uid);
        free(r->body);
        free(r->csr_pem);
        free(r->signer);
        free(r->line);
        free(r);
}

void ag_csr_request_cancel(struct ag_csr_req *r)
{
        csr_free(r);
}

/* Ends the request: done is called once; r is freed afterwards. */
static void csr_finish(struct ag_csr_req *r, char *cert, const char *error)
{
        if (r->finished) {
                free(cert);
                return;
        }
        r->finished = true;
        ag_api_cancel(r->http);
        r->http = NULL;
        ag_csr_done_fn done = r->done;
        void *data = r->data;
        csr_free(r);
        done(cert, error, data);
}

/* 1: finished (issued, denied, failed), 0: wait on. */
static int csr_check(struct ag_csr_req *r, const cJSON *obj)
{
        char msg[1536];
        const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
        const cJSON *uid = cJSON_GetObjectItemCaseSensitive(meta, "uid");
        if (r->uid != NULL && cJSON_IsString(uid) && strcmp(uid->valuestring, r->uid) != 0) {
                snprintf(msg, sizeof(msg), "csr \"%s\" changed UIDs", r->name);
                csr_finish(r, NULL, msg);
                return 1;
        }
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(obj, "status");
        const cJSON *c;
        bool approved = false;
        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(st, "conditions"))
        {
                const cJSON *t = cJSON_GetObjectItemCaseSensitive(c, "type");
                const cJSON *re = cJSON_GetObjectItemCaseSensitive(c, "reason");
                const cJSON *m = cJSON_GetObjectItemCaseSensitive(c, "message");
                const char *reason = cJSON_IsString(re) ? re->valuestring : "";
                const char *message = cJSON_IsString(m) ? m->valuestring : "";
                if (!cJSON_IsString(t))
                        continue;
                if (strcmp(t->valuestring, "Denied") == 0 ||
                    strcmp(t->valuestring, "Failed") == 0) {
                        bool denied = t->valuestring[0] == 'D';
                        snprintf(msg, sizeof(msg),
                                 "certificate signing request %s %s, reason: %s, message: %s%s",
                                 r->name, denied ? "is denied" : "failed", reason, message,
                                 denied ? " (an administrator denied it: see kubectl describe "
                                          "csr; delete the CSR to ask again)"
                                        : " (the signer refused it)");
                        csr_finish(r, NULL, msg);
                        return 1;
                }
                if (strcmp(t->valuestring, "Approved") == 0)
                        approved = true;
        }
        const cJSON *cert = cJSON_GetObjectItemCaseSensitive(st, "certificate");
        if (approved && cJSON_IsString(cert) && cert->valuestring[0] != '\0') {
                struct ag_blob b = {0};
                struct cb_error e = {0};
                if (ag_base64_decode(cert->valuestring, strlen(cert->valuestring), &b, &e) < 0) {
                        snprintf(msg, sizeof(msg), "csr %s: status.certificate: %s", r->name,
                                 e.msg);
                        csr_finish(r, NULL, msg);
                        return 1;
                }
                log_v(2, "certificate signing request %s is issued", r->name);
                csr_finish(r, b.data, NULL);
                return 1;
        }
        if (approved)
                log_v(2, "certificate signing request %s is approved, waiting to be issued",
                      r->name);
        return 0;
}

static void csr_list(struct ag_csr_req *r);

static void csr_retry_later(struct ag_csr_req *r, const char *why)
{
        log_warning("certificate signing request %s: %s; retrying in 2s", r->name, why);
        ag_timer_arm(r->retry, 2000);
}

static int csr_stream(const char *buf, size_t len, void *data)
{
        struct ag_csr_req *r = data;
        for (size_t i = 0; i < len; i++) {
                if (buf[i] != '\n') {
                        if (r->line_len + 2 > r->line_cap) {
                                size_t cap = r->line_cap ? r->line_cap * 2 : 4096;
                                if (cap > (8u << 20))
                                        return -1;
                                char *p = realloc(r->line, cap);
                                if (p == NULL)
                                        return -1;
                                r->line = p;
                                r->line_cap = cap;
                        }
                        r->line[r->line_len++] = buf[i];
                        continue;
                }
                _cleanup_cjson_ cJSON *ev = cJSON_ParseWithLength(r->line, r->line_len);
                r->line_len = 0;
                const cJSON *t = cJSON_GetObjectItemCaseSensitive(ev, "type");
                const cJSON *obj = cJSON_GetObjectItemCaseSensitive(ev, "object");
                if (!cJSON_IsString(t))
                        continue;
                const cJSON *rv = cJSON_GetObjectItemCaseSensitive(
                    cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "resourceVersion");
                if (cJSON_IsString(rv))
                        snprintf(r->rv, sizeof(r->rv), "%s", rv->valuestring);
                if (strcmp(t->valuestring, "ERROR") == 0) {
                        r->rv[0] = '\0'; /* expired: list again */
                        return -1;
                }
                /* Finishing frees r and cancels this request (safe from its
                 * own stream callback): return at once. */
                if (strcmp(t->valuestring, "DELETED") == 0) {
                        char msg[600];
                        snprintf(msg, sizeof(msg), "csr \"%s\" was deleted", r->name);
                        csr_finish(r, NULL, msg);
                        return -1;
                }
                if ((strcmp(t->valuestring, "ADDED") == 0 ||
                     strcmp(t->valuestring, "MODIFIED") == 0) &&
                    csr_check(r, obj))
                        return -1;
        }
        return 0;
}

static void on_watch_done(struct ag_api_result *res, void *data)
{
        struct ag_csr_req *r = data;
        r->http = NULL;
        if (res->error != NULL && !res->aborted)
                log_v(2, "watch of certificate signing request %s ended: %s", r->name, res->error);
        r->line_len = 0;
        if (r->rv[0] == '\0')
                csr_list(r);
        else
                ag_timer_arm(r->retry, res->error != NULL && !res->aborted ? 1000 : 0);
}

static void csr_watch(struct ag_csr_req *r)
{
        _cleanup_free_ char *n = ag_api_escape(r->name);
        char path[1024];
        snprintf(path, sizeof(path),
                 "/apis/certificates.k8s.io/v1/certificatesigningrequests?fieldSelector=metadata."
                 "name%%3D%s&resourceVersion=%s&allowWatchBookmarks=true&timeoutSeconds=300&"
                 "watch=true",
                 n ? n : r->name, r->rv);
        struct ag_api_req_opts o = {.stream = csr_stream, .timeout_ms = -1, .low_speed_time_s = 0};
        struct cb_error e = {0};
        r->http = ag_api_request(r->api, "GET", path, &o, on_watch_done, r, &e);
        if (r->http == NULL)
                csr_retry_later(r, e.msg);
}

static void on_list_done(struct ag_api_result *res, void *data)
{
        struct ag_csr_req *r = data;
        r->http = NULL;
        if (res->error != NULL)
                return csr_retry_later(r, res->error);
        const cJSON *items = cJSON_GetObjectItemCaseSensitive(res->json, "items");
        const cJSON *rv = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(res->json, "metadata"), "resourceVersion");
        snprintf(r->rv, sizeof(r->rv), "%s", cJSON_IsString(rv) ? rv->valuestring : "");
        const cJSON *it = cJSON_GetArrayItem(items, 0);
        if (it == NULL) {
                char msg[600];
                snprintf(msg, sizeof(msg), "csr \"%s\" was deleted", r->name);
                return csr_finish(r, NULL, msg);
        }
        if (csr_check(r, it))
                return;
        csr_watch(r);
}

static void csr_list(struct ag_csr_req *r)
{
        _cleanup_free_ char *n = ag_api_escape(r->name);
        char path[1024];
        snprintf(path, sizeof(path),
                 "/apis/certificates.k8s.io/v1/certificatesigningrequests?fieldSelector=metadata."
                 "name%%3D%s",
                 n ? n : r->name);
        struct cb_error e = {0};
        r->http = ag_api_request(r->api, "GET", path, NULL, on_list_done, r, &e);
        if (r->http == NULL)
                csr_retry_later(r, e.msg);
}

static void csr_create(struct ag_csr_req *r);

static void on_retry(struct ag_timer *t, void *data)
{
        struct ag_csr_req *r = data;
        (void)t;
        if (r->uid == NULL)
                return csr_create(r);
        if (r->rv[0] == '\0')
                csr_list(r);
        else
                csr_watch(r);
}

static void on_timeout(struct ag_timer *t, void *data)
{
        struct ag_csr_req *r = data;
        (void)t;
        char msg[700];
        snprintf(msg, sizeof(msg),
                 "timed out waiting for certificate signing request %s to be approved and "
                 "issued: approve it (kubectl certificate approve %s) or check the "
                 "csrapproving/csrsigning controllers",
                 r->name ? r->name : "(not created)", r->name ? r->name : "NAME");
        csr_finish(r, NULL, msg);
}

static bool same_request(const cJSON *obj, const char *csr_pem)
{
        /* client-go's ensureCompatible, approximated: the stored request is
         * ours (same PEM, hence same key and subject). */
        const cJSON *req = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(obj, "spec"), "request");
        if (!cJSON_IsString(req))
                return false;
        struct ag_blob b = {0};
        struct cb_error e = {0};
        if (ag_base64_decode(req->valuestring, strlen(req->valuestring), &b, &e) < 0)
                return false;
        bool same = b.len == strlen(csr_pem) && memcmp(b.data, csr_pem, b.len) == 0;
        free(b.data);
        return same;
}

static void on_existing(struct ag_api_result *res, void *data)
{
        struct ag_csr_req *r = data;
        r->http = NULL;
        char msg[1536];
        if (res->error != NULL) {
                snprintf(msg, sizeof(msg), "cannot read the existing csr %s: %s", r->name,
                         res->error);
                return csr_finish(r, NULL, msg);
        }
        if (!same_request(res->json, r->csr_pem)) {
                snprintf(msg, sizeof(msg),
                         "csr \"%s\" already exists with another request: delete it "
                         "(kubectl delete csr %s) to ask again",
                         r->name, r->name);
                return csr_finish(r, NULL, msg);
        }
        const cJSON *uid = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(res->json, "metadata"), "uid");
        r->uid = strdup(cJSON_IsString(uid) ? uid->valuestring : "");
        if (r->uid == NULL || csr_check(r, res->json))
                return;
        csr_list(r);
}

static void on_created(struct ag_api_result *res, void *data)
{
        struct ag_csr_req *r = data;
        r->http = NULL;
        char msg[1536];
        if (res->status == 409 && r->name != NULL) {
                char path[1024];
                snprintf(path, sizeof(path),
                         "/apis/certificates.k8s.io/v1/certificatesigningrequests/%s", r->name);
                struct cb_error e = {0};
                r->http = ag_api_request(r->api, "GET", path, NULL, on_existing, r, &e);
                if (r->http == NULL)
                        csr_finish(r, NULL, e.msg);
                return;
        }
        if (res->error != NULL) {
                if (res->status == 0 || res->status >= 500 || res->status == 429) {
                        log_warning("cannot create the certificate signing request: %s; "
                                    "retrying in 5s",
                                    res->error);
                        ag_timer_arm(r->retry, 5000); /* on_retry creates again */
                        return;
                }
                snprintf(msg, sizeof(msg), "cannot create certificate signing request: %s",
                         res->error);
                return csr_finish(r, NULL, msg);
        }
        const cJSON *meta = cJSON_GetObjectItemCaseSensitive(res->json, "metadata");
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(meta, "name");
        const cJSON *uid = cJSON_GetObjectItemCaseSensitive(meta, "uid");
        if (!cJSON_IsString(n) || !cJSON_IsString(uid))
                return csr_finish(r, NULL, "the created CSR has no name or uid");
        free(r->name);
        r->name = strdup(n->valuestring);
        r->uid = strdup(uid->valuestring);
        if (r->name == NULL || r->uid == NULL)
                return csr_finish(r, NULL, "out of memory");
        log_info("certificate signing request %s created (signer %s), waiting for it to be "
                 "approved and issued",
                 r->name, r->signer);
        if (csr_check(r, res->json))
                return;
        csr_list(r);
}

static void csr_create(struct ag_csr_req *r)
{
        struct ag_api_req_opts o = {.body = r->body, .body_len = strlen(r->body)};
        struct cb_error e = {0};
        r->http = ag_api_request(r->api, "POST",
                                 "/apis/certificates.k8s.io/v1/certificatesigningrequests", &o,
                                 on_created, r, &e);
        if (r->http == NULL)
                csr_finish(r, NULL, e.msg);
}

int ag_csr_request_start(struct ag_loop *loop, struct ag_api *api, const char *name,
                         const char *signer, const char *csr_pem, const char *const *usages,
                         size_t n_usages, uint64_t timeout_ms, ag_csr_done_fn done, void *data,
                         struct ag_csr_req **ret, struct cb_error *err)
{
        struct ag_csr_req *r = calloc(1, sizeof(*r));
        if (r == NULL)
                return cb_error_set(err, ENOMEM, "out of memory");
        r->loop = loop;
        r->api = api;
        r->done = done;
        r->data = data;
        r->csr_pem = strdup(csr_pem);
        r->signer = strdup(signer);
        r->name = name ? strdup(name) : NULL;
        _cleanup_cjson_ cJSON *o = cJSON_CreateObject();
        cJSON *meta = cJSON_AddObjectToObject(o, "metadata");
        cJSON *spec = cJSON_AddObjectToObject(o, "spec");
        cJSON_AddStringToObject(o, "apiVersion", "certificates.k8s.io/v1");
        cJSON_AddStringToObject(o, "kind", "CertificateSigningRequest");
        if (name)
                cJSON_AddStringToObject(meta, "name", name);
        else
                cJSON_AddStringToObject(meta, "generateName", "csr-");
        _cleanup_free_ char *b64 = b64std(csr_pem, strlen(csr_pem));
        cJSON_AddStringToObject(spec, "request", b64 ? b64 : "");
        cJSON_AddStringToObject(spec, "signerName", signer);
        cJSON *u = cJSON_AddArrayToObject(spec, "usages");
        for (size_t i = 0; i < n_usages; i++)
                cJSON_AddItemToArray(u, cJSON_CreateString(usages[i]));
        r->body = cJSON_PrintUnformatted(o);
        r->timeout = ag_timer_new(loop, on_timeout, r, err);
        r->retry = r->timeout ? ag_timer_new(loop, on_retry, r, err) : NULL;
        if (r->csr_pem == NULL || r->signer == NULL || (name && r->name == NULL) || b64 == NULL ||
            r->body == NULL || r->retry == NULL) {
                csr_free(r);
                return cb_error_set(err, ENOMEM, "cannot set up the certificate signing request");
        }
        ag_timer_arm(r->timeout, timeout_ms);
        csr_create(r);
        if (ret != NULL)
                *ret = r;
        return 0;
}

/* ---- bootstrap ---- */

struct bootstrap {
        struct ag_loop *loop;
        struct ag_api *api;
        struct ag_timer *timer;
        const struct ag_bootstrap_config *cfg;
        char *key_pem, *csr_pem, *name;
        char *cert; /* result */
        char error[1536];
        uint64_t server_deadline;
        struct ag_csr_req *csr;
};

static void bootstrap_csr_done(char *cert_pem, const char *error, void *data)
{
        struct bootstrap *b = data;
        b->csr = NULL;
        if (error != NULL)
                snprintf(b->error, sizeof(b->error), "%s", error);
        b->cert = cert_pem;
        ag_loop_quit(b->loop);
}

static void bootstrap_send(struct bootstrap *b)
{
        struct cb_error e = {0};
        if (ag_csr_request_start(b->loop, b->api, b->name, AG_CSR_CLIENT_SIGNER, b->csr_pem,
                                 client_usages, CB_ARRAY_SIZE(client_usages),
                                 b->cfg->wait_ms ? b->cfg->wait_ms : AG_BOOTSTRAP_WAIT_MS,
                                 bootstrap_csr_done, b, &b->csr, &e) < 0) {
                snprintf(b->error, sizeof(b->error), "%s", e.msg);
                ag_loop_quit(b->loop);
        }
}

static void on_healthz(struct ag_api_result *res, void *data)
{
        struct bootstrap *b = data;
        /* An answer, even a refusal of the bootstrap credentials, means the
         * apiserver is up: the CSR's own answer then says what is wrong. */
        if (res->error == NULL || res->status != 0)
                return bootstrap_send(b);
        log_info("failed to connect to apiserver: %s", res->error);
        if (ag_now_ms() >= b->server_deadline) {
                log_warning("error waiting for apiserver to come up: timed out waiting to "
                            "connect to apiserver");
                return bootstrap_send(b);
        }
        ag_timer_arm(b->timer, 2000 + (uint64_t)(rand() % 400));
}

static void on_server_timer(struct ag_timer *t, void *data)
{
        struct bootstrap *b = data;
        (void)t;
        struct cb_error e = {0};
        struct ag_api_req_opts o = {.timeout_ms = 1000};
        if (ag_api_request(b->api, "GET", "/healthz", &o, on_healthz, b, &e) == NULL) {
                snprintf(b->error, sizeof(b->error), "%s", e.msg);
                ag_loop_quit(b->loop);
        }
}

static int write_kubeconfig(const struct ag_bootstrap_config *cfg, const struct ag_kubeconfig *bk,
                            const char *pem_path, struct cb_error *err)
{
        /* The CA as the bootstrap kubeconfig gives it: a file path made
         * absolute by the loader, or the data. */
        _cleanup_free_ char *text = ag_bootstrap_kubeconfig_text(
            bk->server, bk->ca_file, &bk->ca_data, bk->insecure_skip_tls_verify, pem_path);
        if (text == NULL)
                return cb_error_set(err, ENOMEM, "out of memory");
        _cleanup_free_ char *dir = strdup(cfg->kubeconfig);
        char *slash = dir ? strrchr(dir, '/') : NULL;
        if (slash != NULL && slash != dir) {
                *slash = '\0';
                if (cb_mkdir_p(dir, 0755, 0755, err) < 0)
                        return -1;
        }
        if (cb_write_file_atomic(cfg->kubeconfig, text, strlen(text), 0600, err) < 0)
                return cb_error_prefix(err, "cannot write --kubeconfig");
        return 0;
}

int ag_bootstrap_client_cert(const struct ag_bootstrap_config *cfg, struct cb_error *err)
{
        char why[1024] = "";
        int v = ag_client_config_valid(cfg->kubeconfig, (time_t)cb_wall_now(), why, sizeof(why));
        if (v < 0)
                return cb_error_set(err, 0, "%s", why);
        if (v == 1) {
                log_v(2, "kubeconfig %s exists and is valid, skipping bootstrap", cfg->kubeconfig);
                return 0;
        }
        log_info("%s; using bootstrap kubeconfig %s to request a client certificate as "
                 "system:node:%s",
                 why, cfg->bootstrap_kubeconfig, cfg->node_name);
        struct ag_kubeconfig bk = {0};
        if (ag_kubeconfig_load(cfg->bootstrap_kubeconfig, NULL, &bk, err) < 0)
                return cb_error_prefix(err, "unable to load bootstrap kubeconfig");
        struct ag_cert_paths paths;
        ag_cert_paths(cfg->cert_dir, &paths);
        struct bootstrap b = {.cfg = cfg};
        _cleanup_free_ char *kept = NULL;
        int ret = -1;
        if (cb_mkdir_p(cfg->cert_dir, 0755, 0700, err) < 0)
                goto out;
        /* The key survives a failed attempt in kubelet-client.key.tmp, so
         * the next start asks with the same key (and so the same CSR name). */
        struct cb_error e = {0};
        if (cb_read_file(paths.key_tmp, 64u << 10, &kept, NULL, &e) == 0 &&
            ag_key_pem_valid(kept)) {
                b.key_pem = steal_pointer(&kept);
                log_v(2, "reusing the private key in %s", paths.key_tmp);
        } else {
                if (ag_make_ec_key(&b.key_pem, err) < 0)
                        goto out;
                if (cb_write_file_atomic(paths.key_tmp, b.key_pem, strlen(b.key_pem), 0600, err) <
                    0)
                        goto out;
        }
        unsigned char *pub = NULL;
        size_t pub_len = 0;
        if (ag_make_node_csr(b.key_pem, cfg->node_name, NULL, &b.csr_pem, &pub, &pub_len, err) < 0)
                goto out;
        char cn[512];
        snprintf(cn, sizeof(cn), "system:node:%s", cfg->node_name);
        b.name = ag_csr_digest_name(pub, pub_len, cn, "system:nodes", client_usages,
                                    CB_ARRAY_SIZE(client_usages));
        free(pub);
        if (b.name == NULL) {
                cb_error_set(err, 0, "cannot compute the CSR name (SHA-512/256 unavailable)");
                goto out;
        }
        if (ag_loop_new(&b.loop, err) < 0 || ag_api_new(b.loop, &bk, NULL, &b.api, err) < 0)
                goto out;
        b.timer = ag_timer_new(b.loop, on_server_timer, &b, err);
        if (b.timer == NULL)
                goto out;
        b.server_deadline = ag_now_ms() + AG_BOOTSTRAP_SERVER_MS;
        ag_timer_arm(b.timer, 0);
        if (ag_loop_run(b.loop, err) < 0)
                goto out;
        if (b.cert == NULL) {
                cb_error_set(err, 0, "%s", b.error[0] ? b.error : "the bootstrap stopped");
                goto out;
        }
        char file[4096];
        if (ag_cert_store_write(cfg->cert_dir, AG_CERT_STORE_PREFIX, b.key_pem, b.cert,
                                (time_t)cb_wall_now(), file, sizeof(file), err) < 0 ||
            ag_cert_store_link(cfg->cert_dir, AG_CERT_STORE_PREFIX, file, err) < 0)
                goto out;
        if (unlink(paths.key_tmp) < 0 && errno != ENOENT)
                log_v(2, "failed cleaning up private key file %s: %s", paths.key_tmp,
                      strerror(errno));
        if (write_kubeconfig(cfg, &bk, paths.current, err) < 0)
                goto out;
        log_info("client certificate issued (%s), kubeconfig %s written", file, cfg->kubeconfig);
        ret = 0;
out:
        ag_csr_request_cancel(b.csr);
        ag_timer_free(b.timer);
        ag_api_free(b.api);
        ag_loop_free(b.loop);
        if (b.key_pem != NULL)
                explicit_bzero(b.key_pem, strlen(b.key_pem));
        free(b.key_pem);
        free(b.csr_pem);
        free(b.name);
        free(b.cert);
        ag_kubeconfig_clear(&bk);
        return ret;
}

/* ---- rotation ---- */

/* RFC 3339 UTC, for logs. */
static const char *iso(time_t t, char *buf, size_t len)
{
        struct tm tm;
        if (gmtime_r(&t, &tm) == NULL || strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
                snprintf(buf, len, "%lld", (long long)t);
        return buf;
}

struct ag_certmgr {
        struct ag_loop *loop;
        struct ag_api *api; /* the agent's: the CSR goes with the current certificate */
        struct ag_offload *work;
        struct ag_timer *timer, *reap;
        enum ag_cert_kind kind;
        const char *what, *prefix, *signer; /* "client certificate", store prefix, signer */
        const char *const *usages;
        size_t n_usages;
        char *cert_dir, *node_name;
        struct ag_kubeconfig base; /* client: server and CA of the agent's kubeconfig */
        bool have_cert;            /* serving: the store had one, or one was issued */
        char *cur_pem;             /* serving: the current certificate (template checks) */
        struct ag_cert_sans sans;  /* serving: the template, from the Node's addresses */
        bool have_template;
        struct ag_cert_sans last_req; /* serving: the template of the last CSR */
        bool have_last_req;
        bool template_wait; /* serving: the deadline came before any template */
        ag_serving_fn on_serving;
        void *data;
        time_t not_before, not_after, deadline;
        struct ag_csr_req *csr;
        struct ag_api *verify;
        struct ag_kubeconfig verify_kc;
        struct ag_api *reap_api;
        char *key_pem, *csr_pem, *cert_pem;
        char new_file[4096];
        unsigned failures;
        bool busy;
};

/* The job of one offload step: inputs and outputs copied in. */
struct rot_job {
        struct ag_certmgr *m;
        int step;  /* 0 key+CSR, 1 write the file (serving: and move the link), 2 move the link */
        bool link; /* step 1 moves the link too */
        const char *prefix;
        char *node_name, *cert_dir, *key_pem, *csr_pem, *cert_pem;
        struct ag_cert_sans sans; /* step 0 of a serving certificate */
        bool with_sans;
        char file[4096];
        unsigned char *pub;
        size_t pub_len;
        struct cb_error err;
        int rc;
};

static void rot_schedule(struct ag_certmgr *m);

static void rot_fail(struct ag_certmgr *m, const char *what, const char *why)
{
        m->busy = false;
        m->failures++;
        /* client-go's backoff: 2 s doubling per failure, at most about 5 min. */
        uint64_t ms = 2000;
        for (unsigned i = 1; i < m->failures && ms < 300000; i++)
                ms *= 2;
        if (ms > 300000)
                ms = 300000;
        char until[32];
        if (m->have_cert || m->kind == AG_CERT_CLIENT)
                log_warning("%s rotation: %s: %s; the current certificate (valid until "
                            "%s) stays in use; next attempt in %llus",
                            m->what, what, why, iso(m->not_after, until, sizeof(until)),
                            (unsigned long long)(ms / 1000));
        else
                log_warning("%s rotation: %s: %s; no serving certificate yet (TLS handshakes "
                            "fail); next attempt in %llus",
                            m->what, what, why, (unsigned long long)(ms / 1000));
        ag_timer_arm(m->timer, ms);
}

static void rot_job_free(struct rot_job *j)
{
        if (j->key_pem != NULL)
                explicit_bzero(j->key_pem, strlen(j->key_pem));
        free(j->key_pem);
        free(j->csr_pem);
        free(j->cert_pem);
        free(j->node_name);
        free(j->cert_dir);
        free(j->pub);
        ag_cert_sans_clear(&j->sans);
        free(j);
}

static void rot_work(void *data)
{
        struct rot_job *j = data;
        switch (j->step) {
        case 0:
                j->rc = ag_make_ec_key(&j->key_pem, &j->err);
                if (j->rc == 0)
                        j->rc = ag_make_node_csr(j->key_pem, j->node_name,
                                                 j->with_sans ? &j->sans : NULL, &j->csr_pem,
                                                 &j->pub, &j->pub_len, &j->err);
                break;
        case 1:
                j->rc =
                    ag_cert_store_write(j->cert_dir, j->prefix, j->key_pem, j->cert_pem,
                                        (time_t)cb_wall_now(), j->file, sizeof(j->file), &j->err);
                if (j->rc == 0 && j->link)
                        j->rc = ag_cert_store_link(j->cert_dir, j->prefix, j->file, &j->err);
                break;
        default:
                j->rc = ag_cert_store_link(j->cert_dir, j->prefix, j->file, &j->err);
                break;
        }
}

static void rot_done(void *data, bool cancelled);

static int rot_submit(struct ag_certmgr *m, int step)
{
        struct rot_job *j = calloc(1, sizeof(*j));
        if (j == NULL)
                return -1;
        j->m = m;
        j->step = step;
        j->prefix = m->prefix;
        j->link = m->kind == AG_CERT_SERVING; /* the file store's Update: file, then link */
        j->node_name = strdup(m->node_name);
        j->cert_dir = strdup(m->cert_dir);
        if (step == 0 && m->kind == AG_CERT_SERVING) {
                j->with_sans = true;
                if (ag_cert_sans_copy(&m->sans, &j->sans) < 0) {
                        rot_job_free(j);
                        return -1;
                }
        }
        if (step >= 1) {
                j->key_pem = m->key_pem ? strdup(m->key_pem) : NULL;
                j->cert_pem = m->cert_pem ? strdup(m->cert_pem) : NULL;
                snprintf(j->file, sizeof(j->file), "%s", m->new_file);
        }
        struct cb_error e = {0};
        if (j->node_name == NULL || j->cert_dir == NULL ||
            (step >= 1 && (j->key_pem == NULL || j->cert_pem == NULL)) ||
            ag_offload_submit(m->work, rot_work, rot_done, j, &e) < 0) {
                rot_job_free(j);
                return -1;
        }
        return 0;
}

static void on_reap(struct ag_timer *t, void *data)
{
        struct ag_certmgr *m = data;
        (void)t;
        ag_api_free(m->reap_api);
        m->reap_api = NULL;
}

static void verify_done(struct ag_api_result *res, void *data)
{
        struct ag_certmgr *m = data;
        /* The verifying client cannot be freed from its own callback. */
        m->reap_api = m->verify;
        m->verify = NULL;
        ag_timer_arm(m->reap, 0);
        char want[512];
        snprintf(want, sizeof(want), "system:node:%s", m->node_name);
        const cJSON *u = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(res->json, "status"),
                                             "userInfo"),
            "username");
        if (res->error != NULL)
                return rot_fail(m, "the new certificate does not work", res->error);
        if (!cJSON_IsString(u) || strcmp(u->valuestring, want) != 0) {
                char why[600];
                snprintf(why, sizeof(why), "the apiserver sees it as \"%s\", not \"%s\"",
                         cJSON_IsString(u) ? u->valuestring : "", want);
                return rot_fail(m, "the new certificate does not work", why);
        }
        if (rot_submit(m, 2) < 0)
                rot_fail(m, "cannot switch to the new certificate", "out of memory");
}

static void rot_verify(struct ag_certmgr *m)
{
        ag_kubeconfig_clear(&m->verify_kc);
        struct ag_kubeconfig *v = &m->verify_kc;
        struct cb_error e = {0};
        v->server = strdup(m->base.server);
        v->path = strdup(m->new_file);
        v->cert_file = strdup(m->new_file);
        v->key_file = strdup(m->new_file);
        v->insecure_skip_tls_verify = m->base.insecure_skip_tls_verify;
        if (m->base.ca_file != NULL)
                v->ca_file = strdup(m->base.ca_file);
        if (m->base.ca_data.data != NULL) {
                v->ca_data.data = malloc(m->base.ca_data.len + 1);
                if (v->ca_data.data != NULL) {
                        memcpy(v->ca_data.data, m->base.ca_data.data, m->base.ca_data.len);
                        v->ca_data.data[m->base.ca_data.len] = '\0';
                        v->ca_data.len = m->base.ca_data.len;
                }
        }
        static const char body[] =
            "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"SelfSubjectReview\"}";
        struct ag_api_req_opts o = {.body = body, .body_len = sizeof(body) - 1};
        if (v->server == NULL || v->cert_file == NULL || v->key_file == NULL ||
            ag_api_new(m->loop, v, NULL, &m->verify, &e) < 0 ||
            ag_api_request(m->verify, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                           &o, verify_done, m, &e) == NULL) {
                ag_api_free(m->verify);
                m->verify = NULL;
                rot_fail(m, "cannot try the new certificate", e.msg[0] ? e.msg : "out of memory");
        }
}

static void rot_issued(char *cert_pem, const char *error, void *data)
{
        struct ag_certmgr *m = data;
        m->csr = NULL;
        if (error != NULL)
                return rot_fail(m, "certificate request was not signed", error);
        free(m->cert_pem);
        m->cert_pem = cert_pem;
        if (rot_submit(m, 1) < 0)
                rot_fail(m, "cannot store the new certificate", "out of memory");
}

/* The new pair is stored and linked: use it. */
static void rot_finish(struct ag_certmgr *m)
{
        struct cb_error e = {0};
        time_t nbf = 0, naf = 0;
        if (ag_cert_pem_validity(m->cert_pem, strlen(m->cert_pem), &nbf, &naf, &e) < 0)
                return rot_fail(m, "the issued certificate", e.msg);
        char until[32];
        if (m->kind == AG_CERT_SERVING) {
                if (m->on_serving(m->cert_pem, m->key_pem, m->data, &e) < 0)
                        return rot_fail(m, "cannot serve with the new certificate", e.msg);
                free(m->cur_pem);
                m->cur_pem = strdup(m->cert_pem);
                m->have_cert = m->cur_pem != NULL;
                log_info("serving certificate %s: %s (valid until %s); new TLS handshakes of "
                         "the node API use it",
                         m->not_after ? "rotated" : "issued", m->new_file,
                         iso(naf, until, sizeof(until)));
        } else {
                ag_api_credentials_changed(m->api);
                log_info("client certificate rotated: %s (valid until %s); new connections use "
                         "it, open watches go on",
                         m->new_file, iso(naf, until, sizeof(until)));
        }
        m->not_before = nbf;
        m->not_after = naf;
        m->failures = 0;
        m->busy = false;
        explicit_bzero(m->key_pem, strlen(m->key_pem));
        free(m->key_pem);
        m->key_pem = NULL;
        rot_schedule(m);
}

static void rot_done(void *data, bool cancelled)
{
        struct rot_job *j = data;
        struct ag_certmgr *m = j->m;
        if (cancelled) {
                rot_job_free(j);
                return;
        }
        if (j->rc < 0) {
                static const char *const what[] = {"cannot make a key and CSR",
                                                   "cannot store the new certificate",
                                                   "cannot switch to the new certificate"};
                rot_fail(m, what[j->step], j->err.msg);
                rot_job_free(j);
                return;
        }
        struct cb_error e = {0};
        if (j->step == 0) {
                if (m->kind == AG_CERT_SERVING) {
                        /* The addresses changed while the key was made: a
                         * request for the new template instead. */
                        if (!m->have_template || !ag_cert_sans_equal(&j->sans, &m->sans)) {
                                rot_job_free(j);
                                m->busy = false;
                                rot_schedule(m);
                                return;
                        }
                        ag_cert_sans_clear(&m->last_req);
                        m->have_last_req = ag_cert_sans_copy(&j->sans, &m->last_req) == 0;
                }
                free(m->key_pem);
                free(m->csr_pem);
                m->key_pem = steal_pointer(&j->key_pem);
                m->csr_pem = steal_pointer(&j->csr_pem);
                rot_job_free(j);
                if (ag_csr_request_start(m->loop, m->api, NULL, m->signer, m->csr_pem, m->usages,
                                         m->n_usages, AG_ROTATION_WAIT_MS, rot_issued, m, &m->csr,
                                         &e) < 0)
                        rot_fail(m, "failed while requesting a signed certificate", e.msg);
                return;
        }
        if (j->step == 1) {
                snprintf(m->new_file, sizeof(m->new_file), "%s", j->file);
                rot_job_free(j);
                if (m->kind == AG_CERT_SERVING)
                        rot_finish(m);
                else
                        rot_verify(m);
                return;
        }
        rot_job_free(j);
        rot_finish(m);
}

static void on_rotate(struct ag_timer *t, void *data)
{
        struct ag_certmgr *m = data;
        (void)t;
        if (m->busy)
                return;
        if (m->kind == AG_CERT_SERVING && !m->have_template) {
                /* no addresses to ask for yet: ag_certmgr_set_addresses starts it */
                log_v(2, "serving certificate: no template yet (the node has no IP address in its "
                         "status), not requesting one");
                m->template_wait = true;
                return;
        }
        m->busy = true;
        m->template_wait = false;
        char a[32], b[32];
        if (m->kind == AG_CERT_CLIENT || m->have_cert)
                log_info("%s rotation: the certificate (valid %s..%s) reached its renewal "
                         "deadline or no longer fits; requesting a new one",
                         m->what, iso(m->not_before, a, sizeof(a)),
                         iso(m->not_after, b, sizeof(b)));
        else
                log_info("serving certificate: none yet; requesting one (signer %s)", m->signer);
        if (rot_submit(m, 0) < 0)
                rot_fail(m, "cannot make a key and CSR", "out of memory");
}

static void rot_arm(struct ag_certmgr *m)
{
        time_t now = (time_t)cb_wall_now();
        uint64_t ms = m->deadline > now ? (uint64_t)(m->deadline - now) * 1000 : 0;
        char d[32];
        log_info("%s rotation deadline is %s (in %llus)", m->what, iso(m->deadline, d, sizeof(d)),
                 (unsigned long long)(ms / 1000));
        ag_timer_arm(m->timer, ms);
}

/* The serving certificate must be requested now: none, or it misses part
 * of the template (nextRotationDeadline's certSatisfiesTemplate). */
static bool serving_needs_new(struct ag_certmgr *m, char *why, size_t len)
{
        if (!m->have_cert) {
                snprintf(why, len, "no serving certificate yet");
                return true;
        }
        return m->have_template && !ag_cert_satisfies(m->cur_pem, m->node_name, &m->sans, why, len);
}

static void rot_schedule(struct ag_certmgr *m)
{
        char why[600];
        if (m->kind == AG_CERT_SERVING && serving_needs_new(m, why, sizeof(why))) {
                if (!m->have_template) {
                        log_info("serving certificate: %s; waiting for the node's addresses (an "
                                 "IP in its status) to request one",
                                 why);
                        ag_timer_disarm(m->timer);
                        return;
                }
                log_info("serving certificate: %s; requesting a new one now", why);
                m->deadline = (time_t)cb_wall_now();
                ag_timer_arm(m->timer, 0);
                return;
        }
        m->deadline = ag_cert_rotation_deadline(m->not_before, m->not_after,
                                                (double)rand() / ((double)RAND_MAX + 1.0));
        rot_arm(m);
}

void ag_certmgr_wall_changed(struct ag_certmgr *m)
{
        /* the same deadline, from the new now (none while a request runs
         * or a failure's back-off waits) */
        if (!m->busy && m->failures == 0 && ag_timer_armed(m->timer))
                rot_arm(m);
}

void ag_certmgr_set_addresses(struct ag_certmgr *m, const cJSON *addresses)
{
        if (m == NULL || m->kind != AG_CERT_SERVING)
                return;
        struct ag_cert_sans t;
        int r = ag_serving_sans_from_addresses(addresses, &t);
        if (r < 0)
                return;
        if ((r == 1) == m->have_template && (r == 0 || ag_cert_sans_equal(&t, &m->sans))) {
                ag_cert_sans_clear(&t);
                return;
        }
        ag_cert_sans_clear(&m->sans);
        m->sans = t;
        m->have_template = r == 1;
        if (!m->have_template)
                return; /* nothing to ask for: the current certificate stays */
        if (m->template_wait && !m->busy) {
                /* the renewal deadline passed while there was no template */
                m->template_wait = false;
                ag_timer_arm(m->timer, 0);
                return;
        }
        char why[600] = "";
        if (!serving_needs_new(m, why, sizeof(why)))
                return;
        /* a CSR for this very template is already out */
        if (m->have_last_req && ag_cert_sans_equal(&m->last_req, &m->sans))
                return;
        if (m->busy) {
                if (m->csr == NULL)
                        return; /* an offload step runs; its end looks at the template */
                log_info("serving certificate: the node's addresses changed while CSR waited; "
                         "asking again");
                ag_csr_request_cancel(m->csr);
                m->csr = NULL;
                m->busy = false;
        }
        if (m->have_cert)
                log_info("serving certificate: certificate template changed (%s), rotating", why);
        m->failures = 0;
        ag_timer_arm(m->timer, 0);
}

time_t ag_certmgr_deadline(const struct ag_certmgr *m)
{
        return m->deadline;
}

/* client-go's file store Current: the current link, else the configured
 * pair, else <dir>/<prefix>.crt/.key; 0 and *text NULL when there is none. */
static int serving_store_load(const struct ag_certmgr_config *cfg, char **cert, char **key,
                              char *src, size_t src_len, struct cb_error *err)
{
        *cert = *key = NULL;
        char pair[4096], c[4096], k[4096];
        snprintf(pair, sizeof(pair), "%s/" AG_SERVER_STORE_PREFIX "-current.pem", cfg->cert_dir);
        snprintf(c, sizeof(c), "%s/" AG_SERVER_STORE_PREFIX ".crt", cfg->cert_dir);
        snprintf(k, sizeof(k), "%s/" AG_SERVER_STORE_PREFIX ".key", cfg->cert_dir);
        const char *cands[3][2] = {{pair, pair}, {cfg->tls_cert_file, cfg->tls_key_file}, {c, k}};
        for (size_t i = 0; i < 3; i++) {
                const char *cf = cands[i][0], *kf = cands[i][1];
                if (cf == NULL || kf == NULL || access(cf, F_OK) < 0 || access(kf, F_OK) < 0)
                        continue;
                if (cb_read_file(cf, MAX_PEM_BYTES, cert, NULL, err) < 0 ||
                    cb_read_file(kf, MAX_PEM_BYTES, key, NULL, err) < 0) {
                        free(*cert);
                        *cert = NULL;
                        return -1;
                }
                if (i == 0)
                        snprintf(src, src_len, "%s", pair);
                else
                        snprintf(src, src_len, "%s, %s", cf, kf);
                return 0;
        }
        return 0;
}

static int serving_init(struct ag_certmgr *m, const struct ag_certmgr_config *cfg,
                        struct cb_error *err)
{
        _cleanup_free_ char *cert = NULL, *key = NULL;
        char src[8300] = "";
        if (serving_store_load(cfg, &cert, &key, src, sizeof(src), err) < 0)
                return cb_error_prefix(err, "failed to initialize server certificate store");
        if (cert == NULL) {
                log_info("serving certificate: none in %s yet; the node API fails TLS handshakes "
                         "until one is issued",
                         cfg->cert_dir);
                return 0;
        }
        time_t nbf, naf;
        if (ag_cert_pem_validity(cert, strlen(cert), &nbf, &naf, err) < 0)
                return cb_error_prefix(err, "serving certificate %s", src);
        char until[32];
        if ((time_t)cb_wall_now() > naf) {
                log_info("serving certificate %s expired at %s: requesting a new one", src,
                         iso(naf, until, sizeof(until)));
        } else {
                if (m->on_serving(cert, key, m->data, err) < 0) {
                        explicit_bzero(key, strlen(key));
                        return cb_error_prefix(err, "serving certificate %s", src);
                }
                m->have_cert = true;
                m->cur_pem = steal_pointer(&cert);
                m->not_before = nbf;
                m->not_after = naf;
                log_info("serving certificate: loaded %s (valid until %s)", src,
                         iso(naf, until, sizeof(until)));
        }
        explicit_bzero(key, strlen(key));
        return 0;
}

int ag_certmgr_new(struct ag_loop *loop, struct ag_api *api, const struct ag_certmgr_config *cfg,
                   struct ag_certmgr **ret, struct cb_error *err)
{
        const struct ag_kubeconfig *kc = cfg->kc;
        time_t nbf = 0, naf = 0;
        if (cfg->kind == AG_CERT_CLIENT) {
                if (kc->cert_file == NULL)
                        return cb_error_set(err, 0,
                                            "%s: certificate rotation needs client-certificate (a "
                                            "file); set rotateCertificates: false to use this "
                                            "kubeconfig",
                                            kc->path ? kc->path : "the kubeconfig");
                _cleanup_free_ char *text = NULL;
                size_t len = 0;
                if (cb_read_file(kc->cert_file, MAX_PEM_BYTES, &text, &len, err) < 0)
                        return cb_error_prefix(err, "certificate rotation");
                if (ag_cert_pem_validity(text, len, &nbf, &naf, err) < 0)
                        return cb_error_prefix(err, "certificate rotation: %s", kc->cert_file);
        } else if (cfg->on_serving == NULL) {
                return cb_error_set(err, EINVAL, "serving certificate: nothing to serve it");
        }
        struct ag_certmgr *m = calloc(1, sizeof(*m));
        if (m == NULL)
                return cb_error_set(err, ENOMEM, "out of memory");
        m->loop = loop;
        m->api = api;
        m->kind = cfg->kind;
        m->on_serving = cfg->on_serving;
        m->data = cfg->data;
        if (cfg->kind == AG_CERT_CLIENT) {
                m->what = "client certificate";
                m->prefix = AG_CERT_STORE_PREFIX;
                m->signer = AG_CSR_CLIENT_SIGNER;
                m->usages = client_usages;
                m->n_usages = CB_ARRAY_SIZE(client_usages);
        } else {
                m->what = "serving certificate";
                m->prefix = AG_SERVER_STORE_PREFIX;
                m->signer = AG_CSR_SERVING_SIGNER;
                m->usages = serving_usages;
                m->n_usages = CB_ARRAY_SIZE(serving_usages);
        }
        m->not_before = nbf;
        m->not_after = naf;
        m->cert_dir = strdup(cfg->cert_dir);
        m->node_name = strdup(cfg->node_name);
        bool ok = m->cert_dir != NULL && m->node_name != NULL;
        if (ok && cfg->kind == AG_CERT_CLIENT) {
                m->base.server = strdup(kc->server);
                if (kc->ca_file != NULL)
                        m->base.ca_file = strdup(kc->ca_file);
                if (kc->ca_data.data != NULL) {
                        m->base.ca_data.data = malloc(kc->ca_data.len + 1);
                        if (m->base.ca_data.data != NULL) {
                                memcpy(m->base.ca_data.data, kc->ca_data.data, kc->ca_data.len);
                                m->base.ca_data.data[kc->ca_data.len] = '\0';
                                m->base.ca_data.len = kc->ca_data.len;
                        }
                }
                m->base.insecure_skip_tls_verify = kc->insecure_skip_tls_verify;
                ok = m->base.server != NULL;
        }
        if (!ok || (m->timer = ag_timer_new(loop, on_rotate, m, err)) == NULL ||
            (m->reap = ag_timer_new(loop, on_reap, m, err)) == NULL ||
            ag_offload_new(
                loop, cfg->kind == AG_CERT_CLIENT ? "certificate rotation" : "serving certificate",
                1, &m->work, err) < 0) {
                ag_certmgr_free(m);
                return cb_error_set(err, 0, "cannot set up certificate rotation");
        }
        if (cfg->kind == AG_CERT_SERVING && serving_init(m, cfg, err) < 0) {
                ag_certmgr_free(m);
                return -1;
        }
        rot_schedule(m);
        *ret = m;
        return 0;
}

void ag_certmgr_free(struct ag_certmgr *m)
{
        if (m == NULL)
                return;
        ag_offload_free(m->work);
        ag_csr_request_cancel(m->csr);
        ag_api_free(m->verify);
        ag_api_free(m->reap_api);
        ag_timer_free(m->timer);
        ag_timer_free(m->reap);
        ag_kubeconfig_clear(&m->verify_kc);
        ag_kubeconfig_clear(&m->base);
        ag_cert_sans_clear(&m->sans);
        ag_cert_sans_clear(&m->last_req);
        if (m->key_pem != NULL)
                explicit_bzero(m->key_pem, strlen(m->key_pem));
        free(m->key_pem);
        free(m->csr_pem);
        free(m->cert_pem);
        free(m->cur_pem);
        free(m->cert_dir);
        free(m->node_name);
        free(m);
}
