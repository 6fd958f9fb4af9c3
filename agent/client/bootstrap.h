/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The node's client certificate, as the kubelet gets and keeps it
 * (pkg/kubelet/certificate/bootstrap, k8s.io/client-go/util/certificate):
 *
 * TLS bootstrap (ag_bootstrap_client_cert, a bounded step before the
 * agent's loop starts): when --kubeconfig is missing or its client
 * certificate has expired, a new EC P-256 key (kept in
 * <cert-dir>/kubelet-client.key.tmp until a certificate arrives, so a
 * restart reuses it) and a certificates.k8s.io/v1 CSR named
 * node-csr-<digest> (signer kubernetes.io/kube-apiserver-client-kubelet,
 * CN system:node:<name>, O system:nodes, usages digital signature and client
 * auth, as the kubelet sends them for a non-RSA key) are sent with the
 * bootstrap kubeconfig's credentials; the agent waits (list, then watch
 * metadata.name=<csr>; at most an hour, the kubelet's timeout) for the
 * certificate, stores key and certificate in
 * <cert-dir>/kubelet-client-<YYYY-MM-DD-HH-MM-SS>.pem, points
 * kubelet-client-current.pem at it (a symlink replaced by rename) and
 * writes --kubeconfig naming that file. A Denied or Failed CSR is an error
 * that names the CSR and its condition's reason and message.
 *
 * Rotation (ag_certmgr, on the agent's loop): at a jittered 70-90 % of the
 * certificate's lifetime a new key and CSR (generateName csr-, sent with the
 * current certificate, so the csrapproving controller's selfnodeclient check
 * applies); key generation and file writes run on an offload queue. The new
 * file is tried on a fresh connection (a SelfSubjectReview must answer
 * system:node:<name>) before kubelet-client-current.pem moves to it, so the
 * old certificate stays in use until the new one works; then the API
 * client's idle connections are closed so new requests handshake with the
 * new certificate, while open watches go on.
 *
 * The serving certificate (serverTLSBootstrap, the kubelet's
 * NewKubeletServerCertificateManager; the same manager, AG_CERT_SERVING):
 * the store is <cert-dir>/kubelet-server-current.pem, else
 * tlsCertFile/tlsPrivateKeyFile, else <cert-dir>/kubelet-server.crt/.key
 * (client-go's file store); an expired one counts as none. The template
 * comes from the Node's status.addresses as the last status update
 * returned them (ag_certmgr_set_addresses): CN system:node:<name>, O
 * system:nodes, the Hostname/InternalDNS/ExternalDNS names and the
 * InternalIP/ExternalIP (and IP Hostname) addresses as SANs, sorted; no
 * template, so no request, until there is at least one IP (the kubelet
 * without AllowDNSOnlyNodeCSR). A certificate missing a name or IP of the
 * template is renewed at once; a template that changes while a CSR waits
 * cancels that wait and asks again. CSRs go with the agent's own client
 * (generateName csr-, signer kubernetes.io/kubelet-serving, usages digital
 * signature and server auth for the EC key), nothing approves them
 * automatically; the issued pair goes to kubelet-server-<ts>.pem and the
 * kubelet-server-current.pem link, then on_serving hands it to the node API.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "agent/client/apiclient.h"
#include "agent/client/kubeconfig.h"
#include "agent/core/loop.h"
#include "agent/core/offload.h"
#include "lib/error.h"

#define AG_CSR_CLIENT_SIGNER   "kubernetes.io/kube-apiserver-client-kubelet"
#define AG_BOOTSTRAP_WAIT_MS   (3600ull * 1000)    /* requestNodeCertificate */
#define AG_ROTATION_WAIT_MS    (15ull * 60 * 1000) /* certificateWaitTimeout */
#define AG_BOOTSTRAP_SERVER_MS (60ull * 1000)      /* waitForServer */
#define AG_CERT_STORE_PREFIX   "kubelet-client"
#define AG_CSR_SERVING_SIGNER  "kubernetes.io/kubelet-serving"
#define AG_SERVER_STORE_PREFIX "kubelet-server"

struct ag_cert_paths {
        char current[4096]; /* <cert-dir>/kubelet-client-current.pem */
        char key_tmp[4096]; /* <cert-dir>/kubelet-client.key.tmp */
};
void ag_cert_paths(const char *cert_dir, struct ag_cert_paths *p);

/* ---- pure parts (unit tested) ---- */

/* notBefore + (0.7 + 0.2 * r) * (notAfter - notBefore), r in [0, 1): the
 * client-go certificate manager's jittered deadline. */
time_t ag_cert_rotation_deadline(time_t not_before, time_t not_after, double r);

/* The validity of the first certificate of a PEM text; -1 when there is
 * none or it does not parse. */
int ag_cert_pem_validity(const char *pem, size_t len, time_t *not_before, time_t *not_after,
                         struct cb_error *err);

/* bootstrap's digestedName: "node-csr-" + base64url(SHA-512/256 of the
 * public key DER, the CN, the organizations and the usages, each
 * base64url'd and ended by '|'). Caller frees. */
char *ag_csr_digest_name(const unsigned char *pub_der, size_t pub_len, const char *cn,
                         const char *org, const char *const *usages, size_t n_usages);

/* The kubeconfig the kubelet writes after bootstrapping (clientcmd's
 * layout: default-cluster, default-auth, default-context, namespace
 * default). ca_file or ca_data (PEM) names the CA. Caller frees. */
char *ag_bootstrap_kubeconfig_text(const char *server, const char *ca_file,
                                   const struct ag_blob *ca_data, bool insecure,
                                   const char *pem_path);

/* isClientConfigStillValid: 1 when path exists and every certificate of
 * its client certificate is not expired at now, 0 when it must be
 * bootstrapped (missing, unreadable, no certificate, expired: why says
 * which), -1 on an error that must stop the start (why set). */
int ag_client_config_valid(const char *path, time_t now, char *why, size_t why_len);

/* A new EC P-256 key (SEC1 "EC PRIVATE KEY" PEM, as keyutil writes it). */
int ag_make_ec_key(char **key_pem, struct cb_error *err);
/* The subject alternative names of a serving certificate: DNS names and
 * IPs (canonical text), each sorted, without duplicates. */
struct ag_cert_sans {
        char **dns;
        size_t n_dns;
        char **ips;
        size_t n_ips;
};
void ag_cert_sans_clear(struct ag_cert_sans *s);
bool ag_cert_sans_equal(const struct ag_cert_sans *a, const struct ag_cert_sans *b);
int ag_cert_sans_copy(const struct ag_cert_sans *from, struct ag_cert_sans *to);
/* addressesToHostnamesAndIPs and the template rule over a Node's
 * status.addresses: 1 with SANs (at least one IP), 0 when there is no
 * template (out cleared), -1 out of memory. */
int ag_serving_sans_from_addresses(const cJSON *addresses, struct ag_cert_sans *out);
/* certSatisfiesTemplate: the first certificate of cert_pem has CN
 * system:node:<node>, the organization system:nodes and every DNS name and
 * IP of sans (extra ones do not matter); else false, why says what is
 * missing. */
bool ag_cert_satisfies(const char *cert_pem, const char *node, const struct ag_cert_sans *sans,
                       char *why, size_t why_len);

/* A PKCS#10 request for CN system:node:<node>, O system:nodes, with sans
 * (NULL: none) as a subjectAltName extension, signed by key_pem; pub_der
 * gets the public key (SubjectPublicKeyInfo DER). */
int ag_make_node_csr(const char *key_pem, const char *node, const struct ag_cert_sans *sans,
                     char **csr_pem, unsigned char **pub_der, size_t *pub_len,
                     struct cb_error *err);
/* True when key_pem parses as a private key. */
bool ag_key_pem_valid(const char *key_pem);

/* The file store's update: <dir>/<prefix>-<ts>.pem (key, then
 * certificate; 0600, atomic) and the <prefix>-current.pem symlink (a
 * <prefix>-updated.pem symlink renamed over it); prefix is
 * AG_CERT_STORE_PREFIX or AG_SERVER_STORE_PREFIX. ret_path (optional) gets
 * the new file's path. */
int ag_cert_store_write(const char *dir, const char *prefix, const char *key_pem,
                        const char *cert_pem, time_t now, char *ret_path, size_t ret_len,
                        struct cb_error *err);
int ag_cert_store_link(const char *dir, const char *prefix, const char *file, struct cb_error *err);

/* ---- the CSR round trip on a loop ---- */

struct ag_csr_req;
/* cert_pem (malloc'd, the callee owns it) on success; else error names the
 * CSR and why (denied, failed, deleted, timed out). */
typedef void (*ag_csr_done_fn)(char *cert_pem, const char *error, void *data);

/* Creates the CSR (name, or generateName "csr-" when name is NULL) for
 * signer and waits for it with a list and watch. */
int ag_csr_request_start(struct ag_loop *loop, struct ag_api *api, const char *name,
                         const char *signer, const char *csr_pem, const char *const *usages,
                         size_t n_usages, uint64_t timeout_ms, ag_csr_done_fn done, void *data,
                         struct ag_csr_req **ret, struct cb_error *err);
void ag_csr_request_cancel(struct ag_csr_req *r);

/* ---- bootstrap ---- */

struct ag_bootstrap_config {
        const char *kubeconfig;           /* --kubeconfig */
        const char *bootstrap_kubeconfig; /* --bootstrap-kubeconfig */
        const char *cert_dir;             /* --cert-dir */
        const char *node_name;
        uint64_t wait_ms; /* 0: AG_BOOTSTRAP_WAIT_MS */
};

/* Returns 0 when --kubeconfig is usable (already, or after the bootstrap),
 * -1 with err naming what failed. Runs its own loop; call it before the
 * agent's loop exists. */
int ag_bootstrap_client_cert(const struct ag_bootstrap_config *cfg, struct cb_error *err);

/* ---- rotation ---- */

struct ag_certmgr;
enum ag_cert_kind { AG_CERT_CLIENT, AG_CERT_SERVING };
/* The serving certificate to use (a PEM text with the certificate chain
 * and one with the key, possibly the same text); on the loop. */
typedef int (*ag_serving_fn)(const char *cert_pem, const char *key_pem, void *data,
                             struct cb_error *err);
struct ag_certmgr_config {
        enum ag_cert_kind kind;
        const char *cert_dir;
        const char *node_name;
        const struct ag_kubeconfig *kc; /* client: the agent's (its cert file is the link) */
        /* serving: tlsCertFile/tlsPrivateKeyFile (NULL: none), the store's
         * fallback; on_serving gets the store's pair at creation and each
         * issued one after */
        const char *tls_cert_file, *tls_key_file;
        ag_serving_fn on_serving;
        void *data;
};
int ag_certmgr_new(struct ag_loop *loop, struct ag_api *api, const struct ag_certmgr_config *cfg,
                   struct ag_certmgr **ret, struct cb_error *err);
void ag_certmgr_free(struct ag_certmgr *m);
/* serving: the Node's status.addresses as the apiserver returned them
 * after a status update (the kubelet's lastObservedNodeAddresses). */
void ag_certmgr_set_addresses(struct ag_certmgr *m, const cJSON *addresses);
/* When the next rotation starts (unix seconds), for logs and tests. */
time_t ag_certmgr_deadline(const struct ag_certmgr *m);
/* The wall clock was set: the rotation timer is armed again for the same
 * deadline. */
void ag_certmgr_wall_changed(struct ag_certmgr *m);
