/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/pods/hook.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define HOOK_USER_AGENT "kube-lifecycle/1.32"

struct ag_http_hook {
        ag_http_hook_fn fn; /* NULL once cancelled */
        void *data;
        char url[2048];
        struct curl_slist *headers;
        int64_t timeout_ms;
        bool ok;
        char error[2048 + CURL_ERROR_SIZE + 16];
};

/* Builds "http://10.0.0.5:8080/path" (RFC 3986 brackets for IPv6). Fails
 * for an unknown named port with the kubelet's "couldn't find port". */
static int http_hook_url(const struct k8s_handler *h, const char *pod_ip,
                         const struct k8s_container_port *ports, size_t n_ports, char *buf,
                         size_t size, struct cb_error *err)
{
        int32_t port = h->port;
        if (h->port_name != NULL && h->port_name[0] != '\0') {
                port = -1;
                for (size_t i = 0; i < n_ports; i++)
                        if (ports[i].name != NULL && strcmp(ports[i].name, h->port_name) == 0)
                                port = ports[i].container_port;
                if (port < 0)
                        return cb_error_set(err, ENOENT, "couldn't find port: %s", h->port_name);
        }
        if (port <= 0 || port > 65535)
                return cb_error_set(err, EINVAL, "invalid port %d", port);
        const char *host = h->host != NULL && h->host[0] != '\0' ? h->host : pod_ip;
        if (host == NULL || host[0] == '\0')
                return cb_error_set(err, EINVAL, "the pod has no IP yet");
        bool v6 = strchr(host, ':') != NULL;
        const char *scheme =
            h->scheme != NULL && strcasecmp(h->scheme, "HTTPS") == 0 ? "https" : "http";
        const char *path = h->path != NULL ? h->path : "";
        int n = snprintf(buf, size, "%s://%s%s%s:%d%s%s", scheme, v6 ? "[" : "", host,
                         v6 ? "]" : "", port, path[0] == '/' ? "" : "/", path);
        if (n < 0 || (size_t)n >= size)
                return cb_error_set(err, ENAMETOOLONG, "the hook URL is too long");
        return 0;
}

void ag_pod_http_setopts(void *easy, const char *url, const void *headers, long timeout_ms,
                         size_t (*write_fn)(char *, size_t, size_t, void *), void *write_data,
                         char *errbuf)
{
        CURL *e = easy;
        curl_easy_setopt(e, CURLOPT_URL, url);
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, (const struct curl_slist *)headers);
        curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
        curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms);
        curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(e, CURLOPT_PROXY, "");
        curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
        curl_easy_setopt(e, CURLOPT_FORBID_REUSE, 1L);
        curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, write_fn);
        curl_easy_setopt(e, CURLOPT_WRITEDATA, write_data);
        curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
}

static size_t discard(char *ptr, size_t size, size_t nmemb, void *ud)
{
        (void)ptr;
        (void)ud;
        return size * nmemb;
}

static void hook_work(void *data)
{
        struct ag_http_hook *hk = data;
        CURL *e = curl_easy_init();
        if (e == NULL) {
                snprintf(hk->error, sizeof(hk->error), "cannot create an HTTP request");
                return;
        }
        char curl_err[CURL_ERROR_SIZE] = "";
        ag_pod_http_setopts(e, hk->url, hk->headers, (long)hk->timeout_ms, discard, NULL, curl_err);
        CURLcode rc = curl_easy_perform(e);
        if (rc == CURLE_OK) {
                hk->ok = true;
        } else {
                snprintf(hk->error, sizeof(hk->error), "Get \"%s\": %s", hk->url,
                         curl_err[0] ? curl_err : curl_easy_strerror(rc));
        }
        curl_easy_cleanup(e);
}

static void hook_done(void *data, bool cancelled)
{
        struct ag_http_hook *hk = data;
        if (hk->fn != NULL)
                hk->fn(!cancelled && hk->ok,
                       cancelled ? "the agent is stopping" : (hk->error[0] ? hk->error : "failed"),
                       hk->data);
        curl_slist_free_all(hk->headers);
        free(hk);
}

struct ag_http_hook *ag_http_hook_start(struct ag_offload *o, const struct k8s_handler *h,
                                        const char *pod_ip, const struct k8s_container_port *ports,
                                        size_t n_ports, int64_t timeout_ms, ag_http_hook_fn fn,
                                        void *data, struct cb_error *err)
{
        struct ag_http_hook *hk = calloc(1, sizeof(*hk));
        if (hk == NULL) {
                cb_error_set(err, ENOMEM, "http hook");
                return NULL;
        }
        if (http_hook_url(h, pod_ip, ports, n_ports, hk->url, sizeof(hk->url), err) < 0) {
                free(hk);
                return NULL;
        }
        hk->fn = fn;
        hk->data = data;
        hk->timeout_ms = timeout_ms > 0 ? timeout_ms : 1000;
        struct curl_slist *l = curl_slist_append(NULL, "User-Agent: " HOOK_USER_AGENT);
        for (size_t i = 0; l != NULL && i < h->n_headers; i++) {
                char line[1024];
                snprintf(line, sizeof(line), "%s: %s", h->headers[i].name ? h->headers[i].name : "",
                         h->headers[i].value ? h->headers[i].value : "");
                struct curl_slist *n = curl_slist_append(l, line);
                if (n == NULL) {
                        curl_slist_free_all(l);
                        l = NULL;
                        break;
                }
                l = n;
        }
        if (l == NULL) {
                free(hk);
                cb_error_set(err, ENOMEM, "http hook headers");
                return NULL;
        }
        hk->headers = l;
        if (ag_offload_submit(o, hook_work, hook_done, hk, err) < 0) {
                curl_slist_free_all(hk->headers);
                free(hk);
                return NULL;
        }
        return hk;
}

void ag_http_hook_cancel(struct ag_http_hook *hk)
{
        if (hk != NULL)
                hk->fn = NULL;
}
