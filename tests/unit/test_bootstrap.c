/* SPDX-License-Identifier: Apache-2.0 */
/* The client certificate's pure parts (agent/client/bootstrap.h): the
 * rotation deadline, the CSR name, key and CSR generation, the file store,
 * the kubeconfig the bootstrap writes and the "still valid" check; the
 * serving certificate's template from the Node's addresses, its CSR with
 * SANs, certSatisfiesTemplate and the kubelet-server store. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "agent/client/bootstrap.h"
#include "lib/file.h"

#include "helpers.h"

START_TEST(test_deadline)
{
        /* 70 % at r = 0, 80 % at 0.5, just under 90 % as r approaches 1. */
        ck_assert_int_eq(ag_cert_rotation_deadline(1000, 2000, 0.0), 1700);
        ck_assert_int_eq(ag_cert_rotation_deadline(1000, 2000, 0.5), 1800);
        ck_assert_int_le(ag_cert_rotation_deadline(1000, 2000, 0.9999999), 1900);
        ck_assert_int_ge(ag_cert_rotation_deadline(1000, 2000, 0.9999999), 1899);
        /* out-of-range jitter is clamped */
        ck_assert_int_eq(ag_cert_rotation_deadline(1000, 2000, -3), 1700);
        ck_assert_int_le(ag_cert_rotation_deadline(1000, 2000, 7), 1900);
        /* The stand-in's 90 s certificate (csrsigning: notBefore = now - 5 min,
         * notAfter = now + 90 s for a short TTL): 390 s of life, so the
         * deadline is between 27 s before and 51 s after the issue. */
        time_t t = 1700000000;
        for (int i = 0; i <= 100; i++) {
                time_t d = ag_cert_rotation_deadline(t - 300, t + 90, i / 100.0);
                ck_assert_int_ge(d, t - 27);
                ck_assert_int_le(d, t + 51);
        }
        /* A one-year certificate (8760 h, less the 5 min backdate): renewed
         * between 255.5 and 328.5 days after its notBefore. */
        time_t y = 365 * 86400;
        ck_assert_int_ge(ag_cert_rotation_deadline(0, y, 0) / 86400, 255);
        ck_assert_int_le(ag_cert_rotation_deadline(0, y, 0.999) / 86400, 328);
}
END_TEST

START_TEST(test_digest_name)
{
        static const unsigned char pub[] = {1, 2, 3, 4, 5};
        static const char *const u[] = {"digital signature", "client auth"};
        static const char *const u3[] = {"digital signature", "key encipherment", "client auth"};
        char *a = ag_csr_digest_name(pub, sizeof(pub), "system:node:n1", "system:nodes", u, 2);
        char *b = ag_csr_digest_name(pub, sizeof(pub), "system:node:n1", "system:nodes", u, 2);
        char *c = ag_csr_digest_name(pub, sizeof(pub), "system:node:n1", "system:nodes", u3, 3);
        char *d = ag_csr_digest_name(pub, sizeof(pub), "system:node:n2", "system:nodes", u, 2);
        ck_assert_ptr_nonnull(a);
        ck_assert_str_eq(a, b); /* the same key asks with the same name */
        ck_assert_str_ne(a, c);
        ck_assert_str_ne(a, d);
        ck_assert(strncmp(a, "node-csr-", 9) == 0);
        /* SHA-512/256 (32 bytes) in unpadded base64url: 43 characters */
        ck_assert_uint_eq(strlen(a), 9 + 43);
        ck_assert(strspn(a + 9,
                         "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") == 43);
        free(a);
        free(b);
        free(c);
        free(d);
}
END_TEST

START_TEST(test_key_and_csr)
{
        struct cb_error err = {0};
        char *key = NULL, *csr = NULL;
        unsigned char *pub = NULL;
        size_t pub_len = 0;
        ck_assert_int_eq(ag_make_ec_key(&key, &err), 0);
        ck_assert(strstr(key, "-----BEGIN EC PRIVATE KEY-----") != NULL);
        ck_assert(ag_key_pem_valid(key));
        ck_assert(!ag_key_pem_valid("-----BEGIN EC PRIVATE KEY-----\nAAAA\n"));
        ck_assert_int_eq(ag_make_node_csr(key, "worker-1", NULL, &csr, &pub, &pub_len, &err), 0);
        ck_assert(strstr(csr, "-----BEGIN CERTIFICATE REQUEST-----") != NULL);
        BIO *b = BIO_new_mem_buf(csr, -1);
        X509_REQ *req = PEM_read_bio_X509_REQ(b, NULL, NULL, NULL);
        ck_assert_ptr_nonnull(req);
        char subj[256];
        X509_NAME_oneline(X509_REQ_get_subject_name(req), subj, sizeof(subj));
        ck_assert_str_eq(subj, "/O=system:nodes/CN=system:node:worker-1");
        EVP_PKEY *pk = X509_REQ_get0_pubkey(req);
        ck_assert_int_eq(EVP_PKEY_get_base_id(pk), EVP_PKEY_EC);
        ck_assert_int_eq(X509_REQ_verify(req, pk), 1);
        unsigned char *der = NULL;
        int dl = i2d_PUBKEY(pk, &der);
        ck_assert_int_eq(dl, (int)pub_len);
        ck_assert_mem_eq(der, pub, pub_len);
        OPENSSL_free(der);
        X509_REQ_free(req);
        BIO_free(b);
        ck_assert_int_eq(ag_make_node_csr("not a key", "w", NULL, &csr, &pub, &pub_len, &err), -1);
        ck_assert_str_eq(err.msg, "invalid private key for certificate request");
        free(key);
        free(csr);
        free(pub);
}
END_TEST

static char dir[64];

static void mk_dir(void)
{
        snprintf(dir, sizeof(dir), "/tmp/cubelet-bootstrap-test-%d", (int)getpid());
        th_sh("rm -rf %s && mkdir -p %s", dir, dir);
}

START_TEST(test_store_and_validity)
{
        mk_dir();
        /* a self-signed certificate valid for 30 days, and its key */
        ck_assert_int_eq(th_sh("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 "
                               "-nodes -days 30 -subj /CN=system:node:x -keyout %s/k.pem "
                               "-out %s/c.pem 2>/dev/null",
                               dir, dir),
                         0);
        char p[512];
        char *key = NULL, *cert = NULL;
        size_t kl, cl;
        struct cb_error err = {0};
        snprintf(p, sizeof(p), "%s/k.pem", dir);
        ck_assert_int_eq(cb_read_file(p, 1 << 16, &key, &kl, &err), 0);
        snprintf(p, sizeof(p), "%s/c.pem", dir);
        ck_assert_int_eq(cb_read_file(p, 1 << 16, &cert, &cl, &err), 0);
        time_t nbf, naf;
        ck_assert_int_eq(ag_cert_pem_validity(cert, cl, &nbf, &naf, &err), 0);
        ck_assert_int_ge(naf - nbf, 30 * 86400 - 1);
        ck_assert_int_le(naf - nbf, 30 * 86400 + 1);
        ck_assert_int_eq(ag_cert_pem_validity(key, kl, &nbf, &naf, &err), -1);

        /* the store: <dir>/pki/kubelet-client-<ts>.pem and the link */
        char pki[128], file[4096];
        snprintf(pki, sizeof(pki), "%s/pki", dir);
        time_t t = 1764633600; /* 2025-12-02 00:00:00 UTC */
        ck_assert_int_eq(
            ag_cert_store_write(pki, AG_CERT_STORE_PREFIX, key, cert, t, file, sizeof(file), &err),
            0);
        char want[256];
        snprintf(want, sizeof(want), "%s/kubelet-client-2025-12-02-00-00-00.pem", pki);
        ck_assert_str_eq(file, want);
        struct stat st;
        ck_assert_int_eq(stat(file, &st), 0);
        ck_assert_int_eq(st.st_mode & 0777, 0600);
        ck_assert_int_eq(ag_cert_store_link(pki, AG_CERT_STORE_PREFIX, file, &err), 0);
        char link[256], target[256] = "";
        snprintf(link, sizeof(link), "%s/kubelet-client-current.pem", pki);
        ck_assert_int_gt(readlink(link, target, sizeof(target) - 1), 0);
        ck_assert_str_eq(target, "kubelet-client-2025-12-02-00-00-00.pem");
        /* a second one moves the link; the first file stays */
        ck_assert_int_eq(ag_cert_store_write(pki, AG_CERT_STORE_PREFIX, key, cert, t + 61, file,
                                             sizeof(file), &err),
                         0);
        ck_assert_int_eq(ag_cert_store_link(pki, AG_CERT_STORE_PREFIX, file, &err), 0);
        memset(target, 0, sizeof(target));
        ck_assert_int_gt(readlink(link, target, sizeof(target) - 1), 0);
        ck_assert_str_eq(target, "kubelet-client-2025-12-02-00-01-01.pem");
        ck_assert_int_eq(access(want, F_OK), 0);
        snprintf(p, sizeof(p), "%s/kubelet-client-updated.pem", pki);
        ck_assert_int_eq(access(p, F_OK), -1);

        /* the kubeconfig the bootstrap writes, naming the link */
        char *text = ag_bootstrap_kubeconfig_text("https://10.0.0.1:6443", "/etc/k/ca.crt", NULL,
                                                  false, link);
        ck_assert_ptr_nonnull(text);
        struct ag_kubeconfig kc = {0};
        char kpath[128];
        snprintf(kpath, sizeof(kpath), "%s/kubelet.kubeconfig", dir);
        ck_assert_int_eq(cb_write_file_atomic(kpath, text, strlen(text), 0600, &err), 0);
        ck_assert_int_eq(ag_kubeconfig_parse(text, strlen(text), kpath, NULL, &kc, &err), 0);
        ck_assert_str_eq(kc.server, "https://10.0.0.1:6443");
        ck_assert_str_eq(kc.ca_file, "/etc/k/ca.crt");
        ck_assert_str_eq(kc.cert_file, link);
        ck_assert_str_eq(kc.key_file, link);
        ck_assert_str_eq(kc.context, "default-context");
        ag_kubeconfig_clear(&kc);

        /* still valid now; expired a year on; missing: bootstrap */
        char why[512];
        ck_assert_int_eq(ag_client_config_valid(kpath, time(NULL), why, sizeof(why)), 1);
        ck_assert_int_eq(ag_client_config_valid(kpath, time(NULL) + 365 * 86400, why, sizeof(why)),
                         0);
        ck_assert_msg(strstr(why, "part of the existing client certificate is expired") != NULL,
                      "%s", why);
        snprintf(p, sizeof(p), "%s/none.kubeconfig", dir);
        ck_assert_int_eq(ag_client_config_valid(p, time(NULL), why, sizeof(why)), 0);
        ck_assert(strstr(why, "does not exist") != NULL);
        /* inline CA data is written as certificate-authority-data */
        struct ag_blob ca = {.data = "PEM", .len = 3};
        char *t2 = ag_bootstrap_kubeconfig_text("https://h", NULL, &ca, true, "/x.pem");
        ck_assert(strstr(t2, "certificate-authority-data: UEVN\n") != NULL);
        ck_assert(strstr(t2, "insecure-skip-tls-verify: true\n") != NULL);
        free(t2);
        free(text);
        free(key);
        free(cert);
        th_sh("rm -rf %s", dir);
}
END_TEST

static cJSON *addrs(const char *json)
{
        cJSON *a = cJSON_Parse(json);
        ck_assert_ptr_nonnull(a);
        return a;
}

START_TEST(test_serving_template)
{
        struct ag_cert_sans t;
        /* addressesToHostnamesAndIPs: Hostname (a name, or an IP),
         * Internal/ExternalIP, Internal/ExternalDNS; empty ones skipped,
         * duplicates once, each list sorted */
        cJSON *a = addrs("[{\"type\":\"InternalIP\",\"address\":\"10.0.0.9\"},"
                         "{\"type\":\"Hostname\",\"address\":\"node-b\"},"
                         "{\"type\":\"ExternalIP\",\"address\":\"192.0.2.1\"},"
                         "{\"type\":\"InternalDNS\",\"address\":\"a.internal\"},"
                         "{\"type\":\"ExternalDNS\",\"address\":\"node-b\"},"
                         "{\"type\":\"InternalIP\",\"address\":\"10.0.0.9\"},"
                         "{\"type\":\"InternalIP\",\"address\":\"\"},"
                         "{\"type\":\"InternalIP\",\"address\":\"not-an-ip\"},"
                         "{\"type\":\"Hostname\",\"address\":\"2001:DB8::0:1\"},"
                         "{\"type\":\"Other\",\"address\":\"x\"}]");
        ck_assert_int_eq(ag_serving_sans_from_addresses(a, &t), 1);
        ck_assert_uint_eq(t.n_dns, 2);
        ck_assert_str_eq(t.dns[0], "a.internal");
        ck_assert_str_eq(t.dns[1], "node-b");
        ck_assert_uint_eq(t.n_ips, 3);
        ck_assert_str_eq(t.ips[0], "10.0.0.9");
        ck_assert_str_eq(t.ips[1], "192.0.2.1");
        ck_assert_str_eq(t.ips[2], "2001:db8::1"); /* canonical text, as Go's String */
        /* the same addresses in another order: the same template */
        struct ag_cert_sans u;
        cJSON *b = addrs("[{\"type\":\"Hostname\",\"address\":\"2001:db8::1\"},"
                         "{\"type\":\"InternalDNS\",\"address\":\"a.internal\"},"
                         "{\"type\":\"ExternalIP\",\"address\":\"192.0.2.1\"},"
                         "{\"type\":\"Hostname\",\"address\":\"node-b\"},"
                         "{\"type\":\"InternalIP\",\"address\":\"10.0.0.9\"}]");
        ck_assert_int_eq(ag_serving_sans_from_addresses(b, &u), 1);
        ck_assert(ag_cert_sans_equal(&t, &u));
        struct ag_cert_sans c;
        ck_assert_int_eq(ag_cert_sans_copy(&t, &c), 0);
        ck_assert(ag_cert_sans_equal(&t, &c));
        ag_cert_sans_clear(&c);
        ck_assert(!ag_cert_sans_equal(&t, &c));
        ag_cert_sans_clear(&u);
        /* a new IP: another template */
        cJSON *d = addrs("[{\"type\":\"InternalIP\",\"address\":\"10.0.0.10\"},"
                         "{\"type\":\"Hostname\",\"address\":\"node-b\"}]");
        ck_assert_int_eq(ag_serving_sans_from_addresses(d, &u), 1);
        ck_assert(!ag_cert_sans_equal(&t, &u));
        ag_cert_sans_clear(&u);
        /* no IP: no template (AllowDNSOnlyNodeCSR is off), nothing requested */
        cJSON *e = addrs("[{\"type\":\"Hostname\",\"address\":\"node-b\"},"
                         "{\"type\":\"InternalDNS\",\"address\":\"a.internal\"}]");
        ck_assert_int_eq(ag_serving_sans_from_addresses(e, &u), 0);
        ck_assert_uint_eq(u.n_dns + u.n_ips, 0);
        ck_assert_int_eq(ag_serving_sans_from_addresses(NULL, &u), 0);
        ag_cert_sans_clear(&t);
        cJSON_Delete(a);
        cJSON_Delete(b);
        cJSON_Delete(d);
        cJSON_Delete(e);
}
END_TEST

static bool req_has(GENERAL_NAMES *names, int type, const char *text)
{
        for (int i = 0; i < sk_GENERAL_NAME_num(names); i++) {
                GENERAL_NAME *g = sk_GENERAL_NAME_value(names, i);
                int t;
                ASN1_STRING *v = GENERAL_NAME_get0_value(g, &t);
                if (t != type)
                        continue;
                if (type == GEN_DNS && strcmp((const char *)ASN1_STRING_get0_data(v), text) == 0)
                        return true;
                if (type == GEN_IPADD) {
                        ASN1_OCTET_STRING *want = a2i_IPADDRESS(text);
                        bool eq = ASN1_STRING_cmp(want, v) == 0;
                        ASN1_OCTET_STRING_free(want);
                        if (eq)
                                return true;
                }
        }
        return false;
}

START_TEST(test_serving_csr_and_satisfies)
{
        mk_dir();
        struct cb_error err = {0};
        char *key = NULL, *csr = NULL;
        unsigned char *pub = NULL;
        size_t pub_len = 0;
        char *dns[] = {"node-a", "node-a.example"};
        char *ips[] = {"10.0.0.5", "fd00::5"};
        struct ag_cert_sans sans = {.dns = dns, .n_dns = 2, .ips = ips, .n_ips = 2};
        ck_assert_int_eq(ag_make_ec_key(&key, &err), 0);
        ck_assert_int_eq(ag_make_node_csr(key, "node-a", &sans, &csr, &pub, &pub_len, &err), 0);
        /* the request carries the SANs in its extension request */
        BIO *b = BIO_new_mem_buf(csr, -1);
        X509_REQ *req = PEM_read_bio_X509_REQ(b, NULL, NULL, NULL);
        BIO_free(b);
        ck_assert_ptr_nonnull(req);
        char subj[256];
        X509_NAME_oneline(X509_REQ_get_subject_name(req), subj, sizeof(subj));
        ck_assert_str_eq(subj, "/O=system:nodes/CN=system:node:node-a");
        STACK_OF(X509_EXTENSION) *exts = X509_REQ_get_extensions(req);
        ck_assert_ptr_nonnull(exts);
        GENERAL_NAMES *names = X509V3_get_d2i(exts, NID_subject_alt_name, NULL, NULL);
        ck_assert_ptr_nonnull(names);
        ck_assert_int_eq(sk_GENERAL_NAME_num(names), 4);
        ck_assert(req_has(names, GEN_DNS, "node-a"));
        ck_assert(req_has(names, GEN_DNS, "node-a.example"));
        ck_assert(req_has(names, GEN_IPADD, "10.0.0.5"));
        ck_assert(req_has(names, GEN_IPADD, "fd00::5"));
        ck_assert_int_eq(X509_REQ_verify(req, X509_REQ_get0_pubkey(req)), 1);
        GENERAL_NAMES_free(names);
        sk_X509_EXTENSION_pop_free(exts, X509_EXTENSION_free);
        X509_REQ_free(req);

        /* certSatisfiesTemplate against certificates made by openssl */
        ck_assert_int_eq(th_sh("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 "
                               "-nodes -days 1 -subj /O=system:nodes/CN=system:node:node-a "
                               "-addext subjectAltName=DNS:node-a,DNS:node-a.example,DNS:extra,"
                               "IP:10.0.0.5,IP:fd00:0::5 -keyout %s/sk.pem -out %s/sc.pem "
                               "2>/dev/null && openssl req -x509 -newkey ec -pkeyopt "
                               "ec_paramgen_curve:P-256 -nodes -days 1 -subj "
                               "/CN=system:node:node-a -addext subjectAltName=DNS:node-a,"
                               "DNS:node-a.example,IP:10.0.0.5,IP:fd00::5 -keyout %s/nk.pem "
                               "-out %s/no-org.pem 2>/dev/null",
                               dir, dir, dir, dir),
                         0);
        char p[512], why[600];
        char *cert = NULL, *no_org = NULL;
        snprintf(p, sizeof(p), "%s/sc.pem", dir);
        ck_assert_int_eq(cb_read_file(p, 1 << 16, &cert, NULL, &err), 0);
        snprintf(p, sizeof(p), "%s/no-org.pem", dir);
        ck_assert_int_eq(cb_read_file(p, 1 << 16, &no_org, NULL, &err), 0);
        /* extra names in the certificate do not matter */
        ck_assert_msg(ag_cert_satisfies(cert, "node-a", &sans, why, sizeof(why)), "%s", why);
        char *ips3[] = {"10.0.0.5", "10.0.0.6", "fd00::5"};
        struct ag_cert_sans more = {.dns = dns, .n_dns = 2, .ips = ips3, .n_ips = 3};
        ck_assert(!ag_cert_satisfies(cert, "node-a", &more, why, sizeof(why)));
        ck_assert_str_eq(why, "the certificate is missing the requested IP address 10.0.0.6");
        char *dns3[] = {"node-a", "node-a.example", "node-a.new"};
        struct ag_cert_sans more_dns = {.dns = dns3, .n_dns = 3, .ips = ips, .n_ips = 2};
        ck_assert(!ag_cert_satisfies(cert, "node-a", &more_dns, why, sizeof(why)));
        ck_assert_str_eq(why, "the certificate is missing the requested DNS name node-a.new");
        ck_assert(!ag_cert_satisfies(cert, "node-b", &sans, why, sizeof(why)));
        ck_assert(strstr(why, "CN (system:node:node-b)") != NULL);
        ck_assert(!ag_cert_satisfies(no_org, "node-a", &sans, why, sizeof(why)));
        ck_assert_str_eq(why, "the certificate is missing the requested org system:nodes");
        ck_assert(!ag_cert_satisfies("junk", "node-a", &sans, why, sizeof(why)));

        /* the serving store: kubelet-server-<ts>.pem and kubelet-server-current.pem */
        char pki[128], file[4096], link[256], target[256] = "";
        snprintf(pki, sizeof(pki), "%s/pki", dir);
        ck_assert_int_eq(ag_cert_store_write(pki, AG_SERVER_STORE_PREFIX, key, cert, 1764633600,
                                             file, sizeof(file), &err),
                         0);
        ck_assert_int_eq(ag_cert_store_link(pki, AG_SERVER_STORE_PREFIX, file, &err), 0);
        snprintf(link, sizeof(link), "%s/kubelet-server-current.pem", pki);
        ck_assert_int_gt(readlink(link, target, sizeof(target) - 1), 0);
        ck_assert_str_eq(target, "kubelet-server-2025-12-02-00-00-00.pem");
        snprintf(p, sizeof(p), "%s/kubelet-client-current.pem", pki);
        ck_assert_int_eq(access(p, F_OK), -1);
        free(key);
        free(csr);
        free(pub);
        free(cert);
        free(no_org);
        th_sh("rm -rf %s", dir);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("bootstrap");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_deadline);
        tcase_add_test(tc, test_digest_name);
        tcase_add_test(tc, test_key_and_csr);
        tcase_add_test(tc, test_store_and_validity);
        tcase_add_test(tc, test_serving_template);
        tcase_add_test(tc, test_serving_csr_and_satisfies);
        suite_add_tcase(s, tc);
        return th_run(s) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
