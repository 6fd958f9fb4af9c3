/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/client/apiclient.h"
#include "agent/core/curl.h"
#include "agent/k8s/validate.h"

#include <errno.h>
#include <stdio.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <curl/curl.h>

#include "lib/http.h"
#include "lib/cleanup.h"

struct ag_request {
        struct ag_api *api;
        struct ag_request *prev, *next; /* active or queued */
        CURL *easy;
        struct curl_slist *headers;
        char *method, *url, *body;
        size_t body_len;
        /* for setup_easy, which runs when the request starts */
        char *content_type;
        long timeout_ms, low_speed_time_s;
        bool queued, cancelled, started;
        bool slot_waiting; /* in api->slots[cls]: passed its bucket, no slot free */
        enum ag_api_class cls;
        struct bucket *bucket; /* NULL: not limited */
        uint64_t queued_ms;
        enum ag_api_verb verb;
        ag_api_done_fn done;
        ag_api_stream_fn stream;
        void *data;
        char *resp;
        size_t resp_len, resp_cap;
        bool too_large, aborted;
        bool nul_per_object;
        const char *(*body_at_start)(void *data, size_t *len);
        char errbuf[CURL_ERROR_SIZE];
};

/* A token bucket and the requests waiting on it. */
struct bucket {
        struct ag_api *api;
        enum ag_api_class cls;
        struct ag_timer *rate_timer;
        struct ag_request *queue_head, *queue_tail;
        double qps, tokens;
        int burst;
        uint64_t last_refill_ms;
};

struct ag_api {
        struct ag_loop *loop;
        const struct ag_kubeconfig *kc;
        CURLM *multi;
        struct ag_curl *curl; /* libcurl on the loop; multi is its handle */
        struct ag_request *active;
        struct bucket buckets[AG_API_CLASS_N]; /* [AG_API_CLASS_LEASE] unused */
        /* Requests in libcurl that end (not streams) and the ones waiting
         * for one of the AG_API_INFLIGHT_MAX places, per class; started by
         * slot_timer in the order lease, status, default, events. */
        unsigned inflight;
        struct {
                struct ag_request *head, *tail;
        } slots[AG_API_CLASS_N];
        struct ag_timer *slot_timer;
        struct ag_api_stats stats;
        size_t max_response;
        uint64_t idle_closed_ms;   /* ag_api_close_idle; 0: never */
        uint64_t creds_changed_ms; /* ag_api_credentials_changed; 0: never */
        char user_agent[64];
        bool unreachable; /* the last finished request got no HTTP answer */
        struct {
                ag_api_reachable_fn fn;
                void *data;
        } reachable[AG_API_REACHABLE_MAX];
};

static CURLcode global_init_result = CURLE_FAILED_INIT;

/* ---- request lifetime ---- */

static void req_free(struct ag_request *r)
{
        bool large = r->resp_cap >= AG_API_TRIM_BYTES;
        if (r->easy != NULL)
                curl_easy_cleanup(r->easy);
        curl_slist_free_all(r->headers);
        free(r->content_type);
        free(r->method);
        free(r->url);
        free(r->body);
        free(r->resp);
        free(r);
        if (large)
                ag_api_release_memory();
}

/* A large answer (a big list, a hostile object) leaves its decoded tree's
 * many small blocks free in the middle of the heap, where glibc does not
 * give them back by itself: the node would keep tens of MiB it no longer
 * uses (escapes.sh: 21 MiB -> 65 MiB kept after the hostile sizes). */
void ag_api_release_memory(void)
{
        (void)malloc_trim(0);
}

static void list_unlink(struct ag_request **head, struct ag_request *r)
{
        if (r->prev != NULL)
                r->prev->next = r->next;
        else
                *head = r->next;
        if (r->next != NULL)
                r->next->prev = r->prev;
        r->prev = r->next = NULL;
}

static void queue_unlink(struct bucket *b, struct ag_request *r)
{
        if (b->queue_tail == r)
                b->queue_tail = r->prev;
        list_unlink(&b->queue_head, r);
        r->queued = false;
}

/* ---- libcurl callbacks ---- */

static curl_socket_t open_socket(void *clientp, curlsocktype purpose, struct curl_sockaddr *a)
{
        /* Debian's libcurl 7.88 leaves sockets inheritable; anything the
         * agent forks must not get the apiserver connection. */
        return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

static size_t on_write(char *ptr, size_t size, size_t nmemb, void *userp)
{
        struct ag_request *r = userp;
        size_t n = size * nmemb;
        if (r->cancelled)
                return 0;
        long code = 0;
        curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &code);
        if (r->stream != NULL && code >= 200 && code < 300) {
                if (r->stream(ptr, n, r->data) < 0) {
                        r->aborted = true;
                        return 0;
                }
                return n;
        }
        if (r->resp_len + n > r->api->max_response) {
                r->too_large = true;
                return 0;
        }
        if (r->resp_len + n + 1 > r->resp_cap) {
                size_t cap = r->resp_cap ? r->resp_cap : 4096;
                while (cap < r->resp_len + n + 1)
                        cap *= 2;
                char *p = realloc(r->resp, cap);
                if (p == NULL)
                        return 0;
                r->resp = p;
                r->resp_cap = cap;
        }
        memcpy(r->resp + r->resp_len, ptr, n);
        r->resp_len += n;
        r->resp[r->resp_len] = '\0';
        return n;
}

/* ---- results ---- */

static const char *kubeconfig_name(const struct ag_api *api)
{
        return api->kc->path != NULL ? api->kc->path : "the kubeconfig";
}

static bool is_tls_verify_error(CURLcode c)
{
        return c == CURLE_PEER_FAILED_VERIFICATION || c == CURLE_SSL_CACERT_BADFILE ||
               c == CURLE_SSL_ISSUER_ERROR || c == CURLE_SSL_PINNEDPUBKEYNOTMATCH;
}

static void finish(struct ag_api *api, struct ag_request *r, CURLcode cc)
{
        char msg[1536];
        struct ag_api_result res = {0};
        curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &res.status);
        res.body = r->resp;
        res.len = r->resp_len;
        res.aborted = r->aborted;
        bool nul = r->resp != NULL && k8s_json_has_nul(r->resp, r->resp_len);
        if (nul && r->nul_per_object) {
                k8s_json_mark_nul(r->resp, r->resp_len);
                nul = false;
        }
        if (r->resp != NULL && r->resp_len > 0 && !nul)
                res.json = cJSON_ParseWithLength(r->resp, r->resp_len);
        const char *detail = r->errbuf[0] ? r->errbuf : curl_easy_strerror(cc);
        if (cc != CURLE_OK && !r->aborted) {
                res.status = cc == CURLE_WRITE_ERROR || cc == CURLE_OPERATION_TIMEDOUT ||
                                     cc == CURLE_PARTIAL_FILE || cc == CURLE_RECV_ERROR
                                 ? res.status
                                 : 0;
                if (r->too_large)
                        snprintf(msg, sizeof(msg),
                                 "%s %s: the response is larger than %zu bytes; refused", r->method,
                                 r->url, api->max_response);
                else if (is_tls_verify_error(cc)) {
                        res.tls_error = true;
                        snprintf(msg, sizeof(msg),
                                 "cannot verify the apiserver at %s: x509/certificate verify "
                                 "failed (%s): check certificate-authority in %s",
                                 api->kc->server, detail, kubeconfig_name(api));
                } else if (cc == CURLE_SSL_CERTPROBLEM) {
                        res.tls_error = true;
                        snprintf(msg, sizeof(msg),
                                 "cannot use the client certificate for %s (%s): check "
                                 "client-certificate and client-key in %s",
                                 api->kc->server, detail, kubeconfig_name(api));
                } else if (cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST) {
                        snprintf(msg, sizeof(msg),
                                 "cannot connect to the apiserver at %s (%s): is it running, "
                                 "and is server in %s right?",
                                 api->kc->server, detail, kubeconfig_name(api));
                } else {
                        snprintf(msg, sizeof(msg), "%s %s: %s", r->method, r->url, detail);
                }
                res.error = msg;
        } else if (r->aborted) {
                snprintf(msg, sizeof(msg), "%s %s: stopped by the agent", r->method, r->url);
                res.error = msg;
        } else if (nul) {
                snprintf(msg, sizeof(msg),
                         "%s %s: the response has a NUL character (\\u0000) in a string; refused",
                         r->method, r->url);
                res.error = msg;
        } else if (res.status == 401 || res.status == 403) {
                res.auth_error = true;
                snprintf(msg, sizeof(msg),
                         "the apiserver at %s refused the credentials (%ld %s): check the "
                         "token/client certificate in %s",
                         api->kc->server, res.status, cb_http_reason_phrase(res.status),
                         kubeconfig_name(api));
                res.error = msg;
        } else if (res.status < 200 || res.status >= 300) {
                const cJSON *m = cJSON_GetObjectItemCaseSensitive(res.json, "message");
                snprintf(msg, sizeof(msg), "%s %s: HTTP %ld %s%s%s", r->method, r->url, res.status,
                         cb_http_reason_phrase(res.status), cJSON_IsString(m) ? ": " : "",
                         cJSON_IsString(m) ? m->valuestring : "");
                res.error = msg;
        }
        bool answered = res.status > 0;
        bool back = answered && api->unreachable;
        if (!r->aborted)
                api->unreachable = !answered;
        r->done(&res, r->data);
        cJSON_Delete(res.json);
        for (int i = 0; back && i < AG_API_REACHABLE_MAX; i++)
                if (api->reachable[i].fn != NULL)
                        api->reachable[i].fn(api->reachable[i].data);
}

int ag_api_on_reachable(struct ag_api *api, ag_api_reachable_fn fn, void *data)
{
        if (api == NULL) /* a standalone node: no apiserver */
                return 0;
        for (int i = 0; i < AG_API_REACHABLE_MAX; i++)
                if (api->reachable[i].data == data ||
                    (fn != NULL && api->reachable[i].fn == NULL)) {
                        api->reachable[i].fn = fn;
                        api->reachable[i].data = fn != NULL ? data : NULL;
                        return 0;
                }
        return fn != NULL ? -1 : 0;
}

static void ended(struct ag_api *api, struct ag_request *r);

/* A transfer finished (agent/core/curl.h: outside libcurl, removed from
 * the multi handle). */
static void on_done(CURL *easy, CURLcode cc, void *data)
{
        struct ag_api *api = data;
        struct ag_request *r = NULL;
        curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&r);
        list_unlink(&api->active, r);
        ended(api, r);
        if (!r->cancelled)
                finish(api, r, cc);
        req_free(r);
}

/* Requests cancelled from inside a libcurl callback, removed now. */
static void after_curl(void *data)
{
        struct ag_api *api = data;
        struct ag_request *r = api->active;
        while (r != NULL) {
                struct ag_request *next = r->next;
                if (r->cancelled) {
                        curl_multi_remove_handle(api->multi, r->easy);
                        list_unlink(&api->active, r);
                        ended(api, r);
                        req_free(r);
                }
                r = next;
        }
}

/* ---- starting requests ---- */

static int setup_easy(struct ag_api *api, struct ag_request *r, struct cb_error *err)
{
        const struct ag_kubeconfig *kc = api->kc;
        CURL *e = r->easy = curl_easy_init();
        if (e == NULL)
                return cb_error_set(err, ENOMEM, "curl_easy_init failed");
        curl_easy_setopt(e, CURLOPT_URL, r->url);
        curl_easy_setopt(e, CURLOPT_PRIVATE, r);
        curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(e, CURLOPT_ERRORBUFFER, r->errbuf);
        /* libcurl's receive buffer, allocated when the transfer starts and
         * kept until the handle is freed: 16 KiB by default, held by every
         * request in flight. The answers other than watches are small
         * (statuses, events, a Lease) or read whole into r->resp anyway. */
        if (r->stream == NULL)
                curl_easy_setopt(e, CURLOPT_BUFFERSIZE, AG_API_RECV_BUFFER);
        /* and its send buffer, which a request with a body fills from it:
         * 64 KiB by default, allocated when the body is first sent and kept
         * until the handle is freed. With AG_API_INFLIGHT_MAX requests in
         * flight that was 4.2 of a 110-pod burst's 16.3 MiB heap peak
         * (heaptrack: Curl_get_upload_buffer). The bodies are statuses,
         * events and Leases of a few KiB; 16 KiB is libcurl's least. */
        curl_easy_setopt(e, CURLOPT_UPLOAD_BUFFERSIZE, AG_API_SEND_BUFFER);
        curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, open_socket);
        curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
        curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
        curl_easy_setopt(e, CURLOPT_USERAGENT, api->user_agent);
        curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
        /* Wait for a connection being set up to tell whether it multiplexes
         * (ALPN h2) instead of opening one per request: without it the
         * requests of the start (node, lease, watches) made 5 connections
         * to an HTTP/2 apiserver, where one carries them all as streams
         * (docs/apiserver-http2.md). */
        curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);
        curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
        curl_easy_setopt(e, CURLOPT_TCP_KEEPIDLE, 30L);
        curl_easy_setopt(e, CURLOPT_TCP_KEEPINTVL, 10L);
        curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
        curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
        /* After ag_api_close_idle or new credentials no connection made
         * before is reused (open ones, such as watches, go on), while the
         * requests from then on share the new ones (HTTP/2: one). Not
         * CURLOPT_FRESH_CONNECT, which gave every request its own
         * connection until one worked: after a restart of the apiserver 3
         * connections instead of 1 (tests/integration/api_http2.sh, under
         * ASan), and before, idle ones piling up in libcurl's cache
         * (tests/faults: +29 sockets after the 500/429/stall windows). */
        uint64_t since = api->creds_changed_ms > api->idle_closed_ms ? api->creds_changed_ms
                                                                     : api->idle_closed_ms;
        if (since != 0) {
                uint64_t age_s = (ag_now_ms() - since) / 1000;
                curl_easy_setopt(e, CURLOPT_MAXLIFETIME_CONN, (long)(age_s > 0 ? age_s : 1));
        }
        /* no TLS session resumed with the old certificate's identity */
        if (api->creds_changed_ms != 0)
                curl_easy_setopt(e, CURLOPT_SSL_SESSIONID_CACHE, 0L);
        long timeout = r->timeout_ms == 0 ? AG_API_TIMEOUT_MS : r->timeout_ms;
        if (timeout > 0)
                curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout);
        if (r->low_speed_time_s > 0) {
                curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
                curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, r->low_speed_time_s);
        }
        /* TLS: verification stays on unless the kubeconfig asks otherwise. */
        if (kc->insecure_skip_tls_verify) {
                curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
                curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
        }
        if (kc->ca_data.data != NULL) {
                struct curl_blob b = {kc->ca_data.data, kc->ca_data.len, CURL_BLOB_COPY};
                curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &b);
        } else if (kc->ca_file != NULL) {
                curl_easy_setopt(e, CURLOPT_CAINFO, kc->ca_file);
        }
        if (kc->cert_data.data != NULL) {
                struct curl_blob b = {kc->cert_data.data, kc->cert_data.len, CURL_BLOB_COPY};
                curl_easy_setopt(e, CURLOPT_SSLCERT_BLOB, &b);
                curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
        } else if (kc->cert_file != NULL) {
                curl_easy_setopt(e, CURLOPT_SSLCERT, kc->cert_file);
        }
        if (kc->key_data.data != NULL) {
                struct curl_blob b = {kc->key_data.data, kc->key_data.len, CURL_BLOB_COPY};
                curl_easy_setopt(e, CURLOPT_SSLKEY_BLOB, &b);
                curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
        } else if (kc->key_file != NULL) {
                curl_easy_setopt(e, CURLOPT_SSLKEY, kc->key_file);
        }
        struct curl_slist *h = NULL;
        h = curl_slist_append(h, "Accept: application/json");
        h = curl_slist_append(h, "Expect:"); /* no 100-continue round trip */
        if (kc->token != NULL) {
                _cleanup_free_ char *auth = NULL;
                if (asprintf(&auth, "Authorization: Bearer %s", kc->token) < 0)
                        return cb_error_set(err, ENOMEM, "out of memory");
                h = curl_slist_append(h, auth);
                explicit_bzero(auth, strlen(auth));
        }
        if (r->body != NULL) {
                _cleanup_free_ char *ct = NULL;
                if (asprintf(&ct, "Content-Type: %s",
                             r->content_type ? r->content_type : "application/json") < 0)
                        return cb_error_set(err, ENOMEM, "out of memory");
                h = curl_slist_append(h, ct);
                curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body);
                curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
        }
        if (h == NULL)
                return cb_error_set(err, ENOMEM, "out of memory");
        r->headers = h;
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
        if (strcmp(r->method, "GET") == 0)
                curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
        else if (strcmp(r->method, "POST") != 0 || r->body == NULL)
                curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r->method);
        return 0;
}

/* Hands r to libcurl: its easy handle is made now, not while it waits on
 * a bucket or for a place (a queued request holds no libcurl memory). */
static int start(struct ag_api *api, struct ag_request *r, struct cb_error *err)
{
        if (r->easy == NULL && r->body_at_start != NULL) {
                size_t len = 0;
                const char *b = r->body_at_start(r->data, &len);
                /* unchanged (it started at once): the copy made stays */
                if (b != NULL &&
                    !(r->body != NULL && len == r->body_len && memcmp(b, r->body, len) == 0)) {
                        char *copy = malloc(len + 1);
                        if (copy == NULL)
                                return cb_error_set(err, ENOMEM, "out of memory");
                        memcpy(copy, b, len);
                        copy[len] = '\0';
                        free(r->body);
                        r->body = copy;
                        r->body_len = len;
                }
        }
        if (r->easy == NULL && setup_easy(api, r, err) < 0)
                return -1;
        if (curl_multi_add_handle(api->multi, r->easy) != CURLM_OK)
                return cb_error_set(err, 0, "%s %s: libcurl refused the request", r->method,
                                    r->url);
        r->started = true;
        if (r->stream == NULL)
                api->inflight++;
        api->stats.requests[r->verb]++;
        r->next = api->active;
        if (api->active != NULL)
                api->active->prev = r;
        api->active = r;
        return 0;
}

static void refill(struct bucket *b)
{
        uint64_t now = ag_now_ms();
        b->tokens += (double)(now - b->last_refill_ms) * b->qps / 1000.0;
        if (b->tokens > b->burst)
                b->tokens = b->burst;
        b->last_refill_ms = now;
}

static void arm_rate_timer(struct bucket *b)
{
        double wait_ms = (1.0 - b->tokens) * 1000.0 / b->qps;
        ag_timer_arm(b->rate_timer, wait_ms < 1 ? 1 : (uint64_t)wait_ms + 1);
}

static void fail_unstarted(struct ag_request *r, const struct cb_error *e)
{
        _cleanup_free_ char *msg = NULL;
        if (asprintf(&msg, "%s %s: cannot start the request: %s", r->method, r->url,
                     e->msg[0] ? e->msg : "libcurl refused it") < 0)
                msg = NULL;
        struct ag_api_result res = {.error = msg != NULL ? msg : "cannot start the request"};
        r->done(&res, r->data);
        req_free(r);
}

static bool slot_free(const struct ag_api *api, const struct ag_request *r)
{
        return r->stream != NULL || api->inflight < AG_API_INFLIGHT_MAX;
}

/* A stream (a watch) never waits for a place; the others keep their
 * class's order. */
static bool may_start_now(const struct ag_api *api, const struct ag_request *r)
{
        return r->stream != NULL ||
               (api->inflight < AG_API_INFLIGHT_MAX && api->slots[r->cls].head == NULL);
}

/* r passed its bucket: started, or queued for a place. */
static void admit(struct ag_api *api, struct ag_request *r)
{
        if (may_start_now(api, r)) {
                struct cb_error e = {0};
                if (start(api, r, &e) < 0)
                        fail_unstarted(r, &e);
                return;
        }
        r->slot_waiting = true;
        r->queued_ms = ag_now_ms();
        r->prev = api->slots[r->cls].tail;
        r->next = NULL;
        if (r->prev != NULL)
                r->prev->next = r;
        else
                api->slots[r->cls].head = r;
        api->slots[r->cls].tail = r;
}

static void slot_unlink(struct ag_api *api, struct ag_request *r)
{
        if (api->slots[r->cls].tail == r)
                api->slots[r->cls].tail = r->prev;
        list_unlink(&api->slots[r->cls].head, r);
        r->slot_waiting = false;
}

/* A place came free (a request ended): the waiting ones start, the
 * node's Lease first, then pod statuses, then the rest, events last. */
static void on_slot_timer(struct ag_timer *t, void *data)
{
        static const enum ag_api_class order[] = {AG_API_CLASS_LEASE, AG_API_CLASS_STATUS,
                                                  AG_API_CLASS_DEFAULT, AG_API_CLASS_EVENTS};
        struct ag_api *api = data;
        (void)t;
        uint64_t now = ag_now_ms();
        for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
                enum ag_api_class c = order[i];
                while (api->slots[c].head != NULL && slot_free(api, api->slots[c].head)) {
                        struct ag_request *r = api->slots[c].head;
                        slot_unlink(api, r);
                        api->stats.inflight_waited++;
                        api->stats.inflight_wait_seconds += (double)(now - r->queued_ms) / 1000.0;
                        struct cb_error e = {0};
                        if (start(api, r, &e) < 0)
                                fail_unstarted(r, &e);
                }
        }
}

/* r left libcurl. */
static void ended(struct ag_api *api, struct ag_request *r)
{
        if (!r->started || r->stream != NULL)
                return;
        r->started = false;
        api->inflight--;
        for (int c = 0; c < AG_API_CLASS_N; c++)
                if (api->slots[c].head != NULL) {
                        /* not from here: this may run inside a libcurl callback */
                        ag_timer_arm(api->slot_timer, 0);
                        break;
                }
}

static void on_rate_timer(struct ag_timer *t, void *data)
{
        struct bucket *b = data;
        struct ag_api *api = b->api;
        (void)t;
        refill(b);
        uint64_t now = ag_now_ms();
        while (b->queue_head != NULL && (b->tokens >= 1.0 || b->qps <= 0)) {
                struct ag_request *r = b->queue_head;
                queue_unlink(b, r);
                if (b->qps > 0)
                        b->tokens -= 1.0;
                /* Only the time over the rate counts as waiting (not a
                 * request queued from a libcurl callback). */
                if (now > r->queued_ms + 1) {
                        api->stats.waited[b->cls]++;
                        api->stats.wait_seconds[b->cls] += (double)(now - r->queued_ms) / 1000.0;
                }
                admit(api, r);
        }
        if (b->queue_head != NULL)
                arm_rate_timer(b);
}

static enum ag_api_verb verb_of(const char *method, bool stream)
{
        static const char *const names[] = {"GET", "", "POST", "PUT", "PATCH", "DELETE"};
        if (strcmp(method, "GET") == 0)
                return stream ? AG_VERB_WATCH : AG_VERB_GET;
        for (size_t i = 2; i < sizeof(names) / sizeof(names[0]); i++)
                if (strcmp(method, names[i]) == 0)
                        return (enum ag_api_verb)i;
        return AG_VERB_OTHER;
}

const char *ag_api_verb_name(enum ag_api_verb v)
{
        static const char *const names[] = {"GET",   "WATCH",  "POST", "PUT",
                                            "PATCH", "DELETE", "other"};
        return v < AG_VERB_N ? names[v] : "other";
}

const char *ag_api_class_name(enum ag_api_class c)
{
        static const char *const names[] = {"default", "status", "events", "lease"};
        return c < AG_API_CLASS_N ? names[c] : "default";
}

void ag_api_get_stats(const struct ag_api *api, struct ag_api_stats *ret)
{
        *ret = api->stats;
}

struct ag_request *ag_api_request(struct ag_api *api, const char *method, const char *path,
                                  const struct ag_api_req_opts *opts, ag_api_done_fn done,
                                  void *data, struct cb_error *err)
{
        static const struct ag_api_req_opts none = {0};
        const struct ag_api_req_opts *o = opts ? opts : &none;
        struct ag_request *r = calloc(1, sizeof(*r));
        if (r == NULL) {
                cb_error_set(err, ENOMEM, "out of memory");
                return NULL;
        }
        r->api = api;
        r->done = done;
        r->data = data;
        r->stream = o->stream;
        r->nul_per_object = o->nul_per_object;
        r->body_at_start = o->body_at_start;
        r->verb = verb_of(method, o->stream != NULL);
        r->method = strdup(method);
        r->timeout_ms = o->timeout_ms;
        r->low_speed_time_s = o->low_speed_time_s;
        if (o->content_type != NULL && (r->content_type = strdup(o->content_type)) == NULL) {
                req_free(r);
                cb_error_set(err, ENOMEM, "out of memory");
                return NULL;
        }
        if (asprintf(&r->url, "%s%s", api->kc->server, path) < 0)
                r->url = NULL;
        if (o->body != NULL) {
                r->body = malloc(o->body_len + 1);
                if (r->body != NULL) {
                        memcpy(r->body, o->body, o->body_len);
                        r->body[o->body_len] = '\0';
                        r->body_len = o->body_len;
                }
        }
        if (r->method == NULL || r->url == NULL || (o->body != NULL && r->body == NULL)) {
                req_free(r);
                cb_error_set(err, ENOMEM, "out of memory");
                return NULL;
        }
        enum ag_api_class cls = o->cls < AG_API_CLASS_N ? o->cls : AG_API_CLASS_DEFAULT;
        r->cls = cls;
        struct bucket *b = &api->buckets[cls];
        refill(b);
        bool unlimited = b->qps <= 0;
        /* Inside a libcurl callback (a watch event handled on the spot)
         * libcurl refuses new handles (CURLM_RECURSIVE_API_CALL): queue the
         * request and start it from the loop's next iteration. */
        if (!ag_curl_in_callback(api->curl) && b->queue_head == NULL &&
            (unlimited || b->tokens >= 1.0) && may_start_now(api, r)) {
                if (!unlimited)
                        b->tokens -= 1.0;
                if (start(api, r, err) < 0) {
                        req_free(r);
                        return NULL;
                }
                return r;
        }
        r->queued = true;
        r->bucket = b;
        r->queued_ms = ag_now_ms();
        r->prev = b->queue_tail;
        if (b->queue_tail != NULL)
                b->queue_tail->next = r;
        else
                b->queue_head = r;
        b->queue_tail = r;
        if (unlimited || b->tokens >= 1.0)
                ag_timer_arm(b->rate_timer, 0);
        else if (!ag_timer_armed(b->rate_timer))
                arm_rate_timer(b);
        return r;
}

void ag_api_cancel(struct ag_request *r)
{
        if (r == NULL)
                return;
        struct ag_api *api = r->api;
        if (r->queued) {
                queue_unlink(r->bucket, r);
                req_free(r);
                return;
        }
        if (r->slot_waiting) {
                slot_unlink(api, r);
                req_free(r);
                return;
        }
        if (ag_curl_in_callback(api->curl)) {
                /* libcurl forbids removing a handle from its own callback:
                 * on_write refuses further bytes and after_curl frees it. */
                r->cancelled = true;
                return;
        }
        curl_multi_remove_handle(api->multi, r->easy);
        list_unlink(&api->active, r);
        ended(api, r);
        req_free(r);
}

void ag_api_close_idle(struct ag_api *api)
{
        /* libcurl 7.88 has no call to drop idle connections of a multi
         * handle; the next requests do not reuse them (setup_easy). */
        api->idle_closed_ms = ag_now_ms();
}

void ag_api_credentials_changed(struct ag_api *api)
{
        api->creds_changed_ms = ag_now_ms();
}

char *ag_api_escape(const char *s)
{
        char *e = curl_easy_escape(NULL, s, 0);
        if (e == NULL)
                return NULL;
        char *copy = strdup(e);
        curl_free(e);
        return copy;
}

const char *ag_api_server(const struct ag_api *api)
{
        return api->kc->server;
}

int ag_api_new(struct ag_loop *loop, const struct ag_kubeconfig *kc,
               const struct ag_api_config *cfg, struct ag_api **ret, struct cb_error *err)
{
        if (global_init_result != CURLE_OK)
                global_init_result = curl_global_init(CURL_GLOBAL_DEFAULT);
        if (global_init_result != CURLE_OK)
                return cb_error_set(err, 0, "curl_global_init failed: %s",
                                    curl_easy_strerror(global_init_result));
        struct ag_api *api = calloc(1, sizeof(*api));
        if (api == NULL)
                return cb_error_set(err, ENOMEM, "out of memory");
        api->loop = loop;
        api->kc = kc;
        double qps = cfg && cfg->qps > 0 ? cfg->qps : AG_API_QPS;
        int burst = cfg && cfg->burst > 0 ? cfg->burst : AG_API_BURST;
        double eqps = cfg && cfg->event_qps > 0 ? cfg->event_qps : AG_API_EVENT_QPS;
        int eburst = cfg && cfg->event_burst > 0 ? cfg->event_burst : AG_API_EVENT_BURST;
        api->max_response =
            cfg && cfg->max_response_bytes ? cfg->max_response_bytes : AG_API_MAX_RESPONSE;
        snprintf(api->user_agent, sizeof(api->user_agent), "cubelet/%s", CUBELET_VERSION);
        bool timers = true;
        for (int c = 0; c < AG_API_CLASS_N; c++) {
                struct bucket *b = &api->buckets[c];
                b->api = api;
                b->cls = (enum ag_api_class)c;
                b->qps = c == AG_API_CLASS_EVENTS ? eqps : c == AG_API_CLASS_LEASE ? 0 : qps;
                b->burst = c == AG_API_CLASS_EVENTS ? eburst : c == AG_API_CLASS_LEASE ? 0 : burst;
                b->tokens = b->burst;
                b->last_refill_ms = ag_now_ms();
                b->rate_timer = ag_timer_new(loop, on_rate_timer, b, err);
                timers = timers && b->rate_timer != NULL;
        }
        api->slot_timer = ag_timer_new(loop, on_slot_timer, api, err);
        timers = timers && api->slot_timer != NULL;
        if (!timers || ag_curl_new(loop, on_done, after_curl, api, &api->curl, err) < 0) {
                ag_api_free(api);
                return cb_error_set(err, 0, "cannot set up the API client");
        }
        api->multi = ag_curl_multi(api->curl);
        curl_multi_setopt(api->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
        *ret = api;
        return 0;
}

void ag_api_free(struct ag_api *api)
{
        if (api == NULL)
                return;
        for (int c = 0; c < AG_API_CLASS_N; c++) {
                struct bucket *b = &api->buckets[c];
                while (b->queue_head != NULL) {
                        struct ag_request *r = b->queue_head;
                        queue_unlink(b, r);
                        req_free(r);
                }
                while (api->slots[c].head != NULL) {
                        struct ag_request *r = api->slots[c].head;
                        slot_unlink(api, r);
                        req_free(r);
                }
        }
        while (api->active != NULL) {
                struct ag_request *r = api->active;
                curl_multi_remove_handle(api->multi, r->easy);
                list_unlink(&api->active, r);
                req_free(r);
        }
        /* Closes the cached connections and frees their watchers. */
        ag_curl_free(api->curl);
        for (int c = 0; c < AG_API_CLASS_N; c++)
                ag_timer_free(api->buckets[c].rate_timer);
        ag_timer_free(api->slot_timer);
        free(api);
}
