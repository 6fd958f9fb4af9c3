/* SPDX-License-Identifier: Apache-2.0 */
#include <arpa/inet.h>
#include <check.h>
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/core/endpoint.h"
#include "agent/core/loop.h"
#include "agent/core/metrics.h"

#include "helpers.h"

/* The sources: what the agent would give the endpoint. */
struct state {
        struct ag_metrics *metrics;
        int health_calls;
        int timeline_calls;
        int sockets_seen;    /* sockets and anon inodes open while serving /pods */
        int sockets_no_exec; /* ... of which not close-on-exec */
};

static cJSON *src_pods(void *data)
{
        struct state *st = data;
        /* Every socket and epoll/event fd open while a request is served
         * (listening socket, the connection, MHD's epoll fd) must be
         * close-on-exec: the agent execs container runtimes. */
        DIR *d = opendir("/proc/self/fd");
        struct dirent *de;
        while (d != NULL && (de = readdir(d)) != NULL) {
                char path[300], link[256];
                snprintf(path, sizeof(path), "/proc/self/fd/%s", de->d_name);
                ssize_t n = readlink(path, link, sizeof(link) - 1);
                if (n <= 0)
                        continue;
                link[n] = '\0';
                if (strncmp(link, "socket:", 7) != 0 && strncmp(link, "anon_inode:", 11) != 0)
                        continue;
                int fd = atoi(de->d_name);
                if (fd == dirfd(d))
                        continue;
                st->sockets_seen++;
                if ((fcntl(fd, F_GETFD) & FD_CLOEXEC) == 0)
                        st->sockets_no_exec++;
        }
        if (d != NULL)
                closedir(d);
        return cJSON_Parse("{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{},"
                           "\"items\":[{\"metadata\":{\"name\":\"web\",\"namespace\":\"default\","
                           "\"uid\":\"u-1\"},\"status\":{\"phase\":\"Running\"}}]}");
}

static cJSON *src_timelines(void *data)
{
        struct state *st = data;
        /* The second call fails: the endpoint must answer 500. */
        if (st->timeline_calls++ > 0)
                return NULL;
        return cJSON_Parse("{\"pods\":[{\"namespace\":\"default\",\"name\":\"web\",\"uid\":"
                           "\"u-1\",\"timeline\":[{\"step\":\"sandboxReady\",\"seconds\":0.5}]}]}");
}

static char *src_metrics(void *data)
{
        struct state *st = data;
        return ag_metrics_render(st->metrics);
}

static bool src_healthy(void *data, char *why, size_t size)
{
        struct state *st = data;
        /* Healthy on the first call, then not. */
        if (st->health_calls++ == 0)
                return true;
        snprintf(why, size, "pod workers stuck: last sync 5m0s ago");
        return false;
}

/* --- the client, in a forked child --------------------------------------- */

struct buf {
        char *p;
        size_t n;
};

static size_t collect(char *ptr, size_t size, size_t nmemb, void *data)
{
        struct buf *b = data;
        char *np = realloc(b->p, b->n + size * nmemb + 1);
        if (np == NULL)
                return 0;
        memcpy(np + b->n, ptr, size * nmemb);
        b->n += size * nmemb;
        np[b->n] = '\0';
        b->p = np;
        return size * nmemb;
}

struct request {
        const char *method;
        const char *path;
        const char *auth; /* an Authorization header, or NULL */
};

#define TOKEN  "0123456789abcdef"
#define BEARER "Authorization: Bearer " TOKEN

static const struct request requests[] = {
    {"GET", "/healthz", NULL},
    {"GET", "/healthz", NULL},
    {"GET", "/metrics", NULL},
    {"HEAD", "/metrics", NULL},
    {"GET", "/pods", BEARER},
    {"GET", "/timelines", BEARER},
    {"GET", "/timelines", BEARER},
    {"GET", "/nope", NULL},
    {"GET", "/healthz/x", NULL},
    {"DELETE", "/pods", NULL},
    {"POST", "/metrics", NULL},
    {"GET", "/healthz", NULL},
    /* /pods and /timelines only with the token (12..16) */
    {"GET", "/pods", NULL},
    {"GET", "/pods", "Authorization: Bearer 0123456789abcdeX"},
    {"GET", "/pods", "Authorization: Bearer " TOKEN "0"},
    {"GET", "/pods?token=" TOKEN, NULL},
    {"GET", "/pods?token=nope", NULL},
};
#define NREQUESTS (sizeof(requests) / sizeof(requests[0]))

/* Runs every request with one easy handle (keep-alive) and writes a JSON
 * array of {status, ctype, body, headers} to fd. */
static void client(int port, int fd)
{
        cJSON *out = cJSON_CreateArray();
        CURL *c = curl_easy_init();
        for (size_t i = 0; c != NULL && i < NREQUESTS; i++) {
                char url[128];
                snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, requests[i].path);
                struct buf body = {0}, headers = {0};
                curl_easy_reset(c);
                curl_easy_setopt(c, CURLOPT_URL, url);
                curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
                curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
                curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
                curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
                curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, collect);
                curl_easy_setopt(c, CURLOPT_HEADERDATA, &headers);
                struct curl_slist *hdr =
                    requests[i].auth != NULL ? curl_slist_append(NULL, requests[i].auth) : NULL;
                curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
                if (strcmp(requests[i].method, "HEAD") == 0)
                        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
                else if (strcmp(requests[i].method, "POST") == 0)
                        curl_easy_setopt(c, CURLOPT_POSTFIELDS, "x=1");
                else if (strcmp(requests[i].method, "GET") != 0)
                        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, requests[i].method);
                CURLcode rc = curl_easy_perform(c);
                curl_slist_free_all(hdr);
                long status = 0;
                char *ctype = NULL;
                curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
                curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ctype);
                cJSON *r = cJSON_CreateObject();
                cJSON_AddNumberToObject(r, "status", rc == CURLE_OK ? (double)status : -1);
                cJSON_AddStringToObject(r, "error", rc == CURLE_OK ? "" : curl_easy_strerror(rc));
                cJSON_AddStringToObject(r, "ctype", ctype != NULL ? ctype : "");
                cJSON_AddStringToObject(r, "body", body.p != NULL ? body.p : "");
                cJSON_AddStringToObject(r, "headers", headers.p != NULL ? headers.p : "");
                cJSON_AddItemToArray(out, r);
                free(body.p);
                free(headers.p);
        }
        char *text = cJSON_PrintUnformatted(out);
        size_t len = text != NULL ? strlen(text) : 0;
        for (size_t off = 0; off < len;) {
                ssize_t n = write(fd, text + off, len - off);
                if (n <= 0)
                        _exit(2);
                off += (size_t)n;
        }
        _exit(c != NULL && text != NULL ? 0 : 1);
}

/* --- the parent's loop ---------------------------------------------------- */

struct results {
        struct ag_loop *loop;
        struct buf data;
        bool eof, timed_out;
};

static void on_results(struct ag_io *io, int fd, uint32_t events, void *data)
{
        struct results *r = data;
        char chunk[4096];
        ssize_t n = read(fd, chunk, sizeof(chunk));
        if (n > 0) {
                collect(chunk, 1, (size_t)n, &r->data);
                return;
        }
        if (n < 0 && errno == EINTR)
                return;
        r->eof = true;
        ag_io_free(io);
        ag_loop_quit(r->loop);
}

static void on_deadline(struct ag_timer *t, void *data)
{
        struct results *r = data;
        r->timed_out = true;
        ag_loop_quit(r->loop);
}

static const char *field(cJSON *a, size_t i, const char *name)
{
        cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(a, (int)i), name);
        ck_assert_msg(cJSON_IsString(v), "response %zu has no %s", i, name);
        return v->valuestring;
}

static int status_of(cJSON *a, size_t i)
{
        cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(a, (int)i), "status");
        ck_assert_msg(cJSON_IsNumber(v), "response %zu has no status", i);
        return v->valueint;
}

START_TEST(test_serves_routes)
{
        struct cb_error err = {0};
        struct ag_loop *loop = NULL;
        ck_assert_msg(ag_loop_new(&loop, &err) == 0, "%s", err.msg);

        struct state st = {.metrics = ag_metrics_new()};
        ck_assert_int_eq(ag_metrics_observe(st.metrics, "cubelet_pod_step_duration_seconds",
                                            "Seconds from the pod worker's start to each step.",
                                            (const char *const[]){"step", "sandboxReady", NULL},
                                            0.5, &err),
                         0);
        char *want_metrics = ag_metrics_render(st.metrics);
        struct ag_endpoint_sources src = {
            .pods = src_pods,
            .timelines = src_timelines,
            .metrics = src_metrics,
            .healthy = src_healthy,
            .data = &st,
            .token = TOKEN,
        };
        struct ag_endpoint *ep = NULL;
        ck_assert_msg(ag_endpoint_start(loop, "127.0.0.1", 0, &src, &ep, &err) == 0, "%s", err.msg);
        int port = ag_endpoint_port(ep);
        ck_assert_int_gt(port, 0);

        int p[2];
        ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                close(p[0]);
                client(port, p[1]);
        }
        close(p[1]);

        struct results r = {.loop = loop};
        struct ag_io *io = ag_io_new(loop, p[0], EPOLLIN, on_results, &r, &err);
        ck_assert_ptr_nonnull(io);
        struct ag_timer *deadline = ag_timer_new(loop, on_deadline, &r, &err);
        ck_assert_ptr_nonnull(deadline);
        ag_timer_arm(deadline, 30000);
        ck_assert_msg(ag_loop_run(loop, &err) == 0, "%s", err.msg);
        close(p[0]);
        int wstatus = 0;
        ck_assert_int_eq(waitpid(pid, &wstatus, 0), pid);
        ck_assert_msg(!r.timed_out, "the client did not finish within 30s");
        ck_assert_msg(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0, "client failed: %d",
                      wstatus);

        cJSON *a = cJSON_Parse(r.data.p);
        ck_assert_msg(cJSON_GetArraySize(a) == (int)NREQUESTS, "client output: %s", r.data.p);
        for (size_t i = 0; i < NREQUESTS; i++)
                ck_assert_msg(status_of(a, i) > 0, "%s %s: %s", requests[i].method,
                              requests[i].path, field(a, i, "error"));

        /* GET /healthz: healthy, then unhealthy with the reason. */
        ck_assert_int_eq(status_of(a, 0), 200);
        ck_assert_str_eq(field(a, 0, "body"), "ok");
        ck_assert_str_eq(field(a, 0, "ctype"), "text/plain; charset=utf-8");
        ck_assert_int_eq(status_of(a, 1), 500);
        ck_assert_str_eq(field(a, 1, "body"), "pod workers stuck: last sync 5m0s ago");

        /* GET and HEAD /metrics. */
        ck_assert_int_eq(status_of(a, 2), 200);
        ck_assert_str_eq(field(a, 2, "ctype"), "text/plain; version=0.0.4; charset=utf-8");
        ck_assert_str_eq(field(a, 2, "body"), want_metrics);
        ck_assert_ptr_nonnull(strstr(
            field(a, 2, "body"),
            "cubelet_pod_step_duration_seconds_bucket{step=\"sandboxReady\",le=\"0.5\"} 1\n"));
        ck_assert_int_eq(status_of(a, 3), 200);
        ck_assert_str_eq(field(a, 3, "body"), "");
        ck_assert_str_eq(field(a, 3, "ctype"), "text/plain; version=0.0.4; charset=utf-8");

        /* GET /pods: the source's PodList. */
        ck_assert_int_eq(status_of(a, 4), 200);
        ck_assert_str_eq(field(a, 4, "ctype"), "application/json");
        cJSON *pods = cJSON_Parse(field(a, 4, "body"));
        ck_assert_ptr_nonnull(pods);
        ck_assert_str_eq(cJSON_GetObjectItem(pods, "kind")->valuestring, "PodList");
        cJSON *item = cJSON_GetArrayItem(cJSON_GetObjectItem(pods, "items"), 0);
        ck_assert_str_eq(
            cJSON_GetObjectItem(cJSON_GetObjectItem(item, "metadata"), "name")->valuestring, "web");
        cJSON_Delete(pods);

        /* GET /timelines: the source's data, then 500 when it fails. */
        ck_assert_int_eq(status_of(a, 5), 200);
        ck_assert_str_eq(field(a, 5, "ctype"), "application/json");
        cJSON *tl = cJSON_Parse(field(a, 5, "body"));
        ck_assert_ptr_nonnull(tl);
        cJSON *tp = cJSON_GetArrayItem(cJSON_GetObjectItem(tl, "pods"), 0);
        ck_assert_str_eq(cJSON_GetObjectItem(tp, "uid")->valuestring, "u-1");
        cJSON *step = cJSON_GetArrayItem(cJSON_GetObjectItem(tp, "timeline"), 0);
        ck_assert_str_eq(cJSON_GetObjectItem(step, "step")->valuestring, "sandboxReady");
        cJSON_Delete(tl);
        ck_assert_int_eq(status_of(a, 6), 500);
        ck_assert_str_eq(field(a, 6, "body"), "cannot produce /timelines\n");

        /* Unknown paths 404, other methods 405 with Allow. */
        ck_assert_int_eq(status_of(a, 7), 404);
        ck_assert_int_eq(status_of(a, 8), 404);
        ck_assert_int_eq(status_of(a, 9), 405);
        ck_assert_ptr_nonnull(strstr(field(a, 9, "headers"), "Allow: GET, HEAD\r\n"));
        ck_assert_int_eq(status_of(a, 10), 405);
        ck_assert_int_eq(status_of(a, 11), 500); /* the server still answers after a 405 */

        /* Without the token (or with a wrong one) /pods and /timelines are
         * 401; the token in the query (a browser) works. */
        for (size_t i = 12; i <= 14; i++)
                ck_assert_msg(status_of(a, i) == 401, "request %zu: %d", i, status_of(a, i));
        ck_assert_ptr_nonnull(strstr(field(a, 12, "body"), "endpoint.token"));
        ck_assert_int_eq(status_of(a, 15), 200);
        ck_assert_int_eq(status_of(a, 16), 401);
        cJSON_Delete(a);

        /* The endpoint's fds are all close-on-exec (seen while serving). */
        ck_assert_int_ge(st.sockets_seen, 3);
        ck_assert_int_eq(st.sockets_no_exec, 0);
        ck_assert_int_eq(st.health_calls, 3);

        ag_timer_free(deadline);
        ag_endpoint_free(ep);
        ag_loop_free(loop);
        ag_metrics_free(st.metrics);
        free(want_metrics);
        free(r.data.p);
}
END_TEST

/* --- the page, the trace and the event stream ---------------------------------- */

static cJSON *src_timelines_ok(void *data)
{
        (void)data;
        return cJSON_Parse(
            "{\"pods\":[{\"namespace\":\"default\",\"name\":\"web<b>\",\"uid\":\"u-1\","
            "\"timeline\":[{\"step\":\"workerStarted\",\"offsetUs\":0,\"time\":"
            "\"2026-12-01T23:00:00.000100Z\"},{\"step\":\"phase:Running\",\"offsetUs\":900,"
            "\"time\":\"2026-12-01T23:00:00.001000Z\"}],\"history\":[{\"kind\":\"status\","
            "\"offsetUs\":950,\"diff\":[{\"op\":\"change\",\"path\":\"status.phase\",\"old\":"
            "\"Pending\",\"new\":\"Running\"}]}]}]}");
}

static int64_t mono_us(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

struct stream {
        struct buf b;
        int signal_fd;
        bool signalled;
        int64_t latency_us;
        char step[256];
};

/* Signals the parent once the snapshot arrived; stops at the first step. */
static size_t on_stream(char *ptr, size_t size, size_t nmemb, void *data)
{
        struct stream *st = data;
        collect(ptr, size, nmemb, &st->b);
        if (!st->signalled && strstr(st->b.p, "event: snapshot\ndata: {") != NULL &&
            strstr(strstr(st->b.p, "event: snapshot"), "\n\n") != NULL) {
                st->signalled = true;
                if (write(st->signal_fd, "c", 1) != 1)
                        return 0;
        }
        char *ev = strstr(st->b.p, "event: step\ndata: ");
        if (ev != NULL && strstr(ev, "\n\n") != NULL) {
                int64_t sent = 0;
                char *m = strstr(ev, "\"mono\":");
                if (m != NULL)
                        sent = strtoll(m + 7, NULL, 10);
                st->latency_us = mono_us() - sent;
                snprintf(st->step, sizeof(st->step), "%.*s", (int)(strstr(ev, "\n\n") - ev), ev);
                return 0; /* done: abort the transfer */
        }
        return size * nmemb;
}

static void get(CURL *c, cJSON *out, const char *url, struct stream *st)
{
        struct buf body = {0}, headers = {0};
        curl_easy_reset(c);
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, st ? on_stream : collect);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, st ? (void *)st : (void *)&body);
        curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, collect);
        curl_easy_setopt(c, CURLOPT_HEADERDATA, &headers);
        CURLcode rc = curl_easy_perform(c);
        long status = 0;
        char *ctype = NULL;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ctype);
        cJSON *r = cJSON_CreateObject();
        cJSON_AddNumberToObject(r, "status", (double)status);
        cJSON_AddStringToObject(r, "error", rc == CURLE_OK ? "" : curl_easy_strerror(rc));
        cJSON_AddStringToObject(r, "ctype", ctype != NULL ? ctype : "");
        cJSON_AddStringToObject(r, "body", st ? st->step : body.p != NULL ? body.p : "");
        cJSON_AddStringToObject(r, "headers", headers.p != NULL ? headers.p : "");
        if (st != NULL)
                cJSON_AddNumberToObject(r, "latencyUs", (double)st->latency_us);
        cJSON_AddItemToArray(out, r);
        free(body.p);
        free(headers.p);
}

static void page_client(int port, int fd, int signal_fd)
{
        static const char *const paths[] = {
            "/ui",
            "/ui?token=" TOKEN,
            "/ui/timeline.js",
            "/ui/timeline.css",
            "/ui/nope",
            "/timelines?format=trace&token=" TOKEN,
            "/timelines?format=bogus&token=" TOKEN,
            "/timelines?watch=true",
        };
        cJSON *out = cJSON_CreateArray();
        CURL *c = curl_easy_init();
        char url[256];
        for (size_t i = 0; c != NULL && i < sizeof(paths) / sizeof(paths[0]); i++) {
                snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, paths[i]);
                get(c, out, url, NULL);
        }
        struct stream st = {.signal_fd = signal_fd};
        snprintf(url, sizeof(url), "http://127.0.0.1:%d/timelines?watch=true&token=" TOKEN, port);
        if (c != NULL)
                get(c, out, url, &st);
        char *text = cJSON_PrintUnformatted(out);
        size_t len = text != NULL ? strlen(text) : 0;
        for (size_t off = 0; off < len;) {
                ssize_t n = write(fd, text + off, len - off);
                if (n <= 0)
                        _exit(2);
                off += (size_t)n;
        }
        _exit(c != NULL && text != NULL ? 0 : 1);
}

struct publisher {
        struct ag_endpoint *ep;
        struct ag_io *io; /* freed here at EOF */
        int published;
};

/* The client has its snapshot: publish a step, stamped. */
static void on_signal(struct ag_io *io, int fd, uint32_t events, void *data)
{
        struct publisher *pb = data;
        char c;
        if (read(fd, &c, 1) != 1) {
                ag_io_free(io);
                pb->io = NULL;
                return;
        }
        char msg[128];
        snprintf(msg, sizeof(msg), "{\"uid\":\"u-1\",\"step\":\"phase:Succeeded\",\"mono\":%lld}",
                 (long long)mono_us());
        ck_assert_int_eq(ag_endpoint_stream_clients(pb->ep), 1);
        ag_endpoint_publish(pb->ep, "step", msg);
        pb->published++;
}

START_TEST(test_page_trace_and_stream)
{
        struct cb_error err = {0};
        struct ag_loop *loop = NULL;
        ck_assert_msg(ag_loop_new(&loop, &err) == 0, "%s", err.msg);
        struct ag_endpoint_sources src = {.timelines = src_timelines_ok, .token = TOKEN};
        struct ag_endpoint *ep = NULL;
        ck_assert_msg(ag_endpoint_start(loop, "127.0.0.1", 0, &src, &ep, &err) == 0, "%s", err.msg);
        /* No client: publishing is a no-op. */
        ag_endpoint_publish(ep, "step", "{}");
        ck_assert_int_eq(ag_endpoint_stream_clients(ep), 0);

        int p[2], sig[2];
        ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
        ck_assert_int_eq(pipe2(sig, O_CLOEXEC), 0);
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                close(p[0]);
                close(sig[0]);
                page_client(ag_endpoint_port(ep), p[1], sig[1]);
        }
        close(p[1]);
        close(sig[1]);
        struct results r = {.loop = loop};
        struct publisher pb = {.ep = ep};
        struct ag_io *io = ag_io_new(loop, p[0], EPOLLIN, on_results, &r, &err);
        struct ag_io *sio = ag_io_new(loop, sig[0], EPOLLIN, on_signal, &pb, &err);
        ck_assert_ptr_nonnull(io);
        ck_assert_ptr_nonnull(sio);
        pb.io = sio;
        struct ag_timer *deadline = ag_timer_new(loop, on_deadline, &r, &err);
        ag_timer_arm(deadline, 30000);
        ck_assert_msg(ag_loop_run(loop, &err) == 0, "%s", err.msg);
        int wstatus = 0;
        ck_assert_int_eq(waitpid(pid, &wstatus, 0), pid);
        ck_assert_msg(!r.timed_out, "the client did not finish within 30s");
        ck_assert_msg(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0, "client failed: %d",
                      wstatus);
        cJSON *a = cJSON_Parse(r.data.p);
        ck_assert_msg(cJSON_GetArraySize(a) == 9, "client output: %s", r.data.p);

        /* The page needs the token; it is the static table with the pod
         * (escaped), its steps and its status diff, and loads its script
         * and style from the endpoint (no inline script, CSP 'self'). */
        ck_assert_int_eq(status_of(a, 0), 401);
        ck_assert_int_eq(status_of(a, 1), 200);
        ck_assert_str_eq(field(a, 1, "ctype"), "text/html; charset=utf-8");
        const char *html = field(a, 1, "body");
        ck_assert_ptr_nonnull(strstr(html, "<table id=\"static\""));
        ck_assert_ptr_nonnull(strstr(html, "default/web&lt;b&gt;"));
        ck_assert_ptr_null(strstr(html, "web<b>"));
        ck_assert_ptr_nonnull(strstr(html, "<td>phase:Running</td><td>0.9 ms</td>"));
        ck_assert_ptr_nonnull(strstr(html,
                                     "<code>status.phase</code> <del>&quot;Pending&quot;</del> "
                                     "<ins>&quot;Running&quot;</ins>"));
        ck_assert_ptr_nonnull(strstr(html, "<script src=\"/ui/timeline.js\"></script>"));
        ck_assert_ptr_null(strstr(html, "http://"));
        ck_assert_ptr_null(strstr(html, "https://"));
        ck_assert_ptr_nonnull(
            strstr(field(a, 1, "headers"), "Content-Security-Policy: default-src 'self'"));
        ck_assert_int_eq(status_of(a, 2), 200);
        ck_assert_str_eq(field(a, 2, "ctype"), "text/javascript; charset=utf-8");
        ck_assert_ptr_nonnull(strstr(field(a, 2, "body"), "new EventSource("));
        ck_assert_int_eq(status_of(a, 3), 200);
        ck_assert_str_eq(field(a, 3, "ctype"), "text/css; charset=utf-8");
        ck_assert_int_eq(status_of(a, 4), 404);
        /* The trace export. */
        ck_assert_int_eq(status_of(a, 5), 200);
        cJSON *tr = cJSON_Parse(field(a, 5, "body"));
        ck_assert_ptr_nonnull(tr);
        ck_assert(cJSON_GetArraySize(cJSON_GetObjectItem(tr, "traceEvents")) >= 4);
        cJSON_Delete(tr);
        ck_assert_int_eq(status_of(a, 6), 400);
        /* The stream needs the token too; with it: the snapshot, then the
         * published step, pushed at once. */
        ck_assert_int_eq(status_of(a, 7), 401);
        ck_assert_int_eq(status_of(a, 8), 200);
        ck_assert_str_eq(field(a, 8, "ctype"), "text/event-stream");
        ck_assert_ptr_nonnull(strstr(field(a, 8, "body"), "\"step\":\"phase:Succeeded\""));
        ck_assert_int_eq(pb.published, 1);
        double lat = cJSON_GetObjectItem(cJSON_GetArrayItem(a, 8), "latencyUs")->valuedouble;
        ck_assert_msg(lat > 0 && lat < 200000, "publish to client took %.0f us", lat);
        printf("event stream: publish -> client %.0f us\n", lat);
        cJSON_Delete(a);
        ag_io_free(pb.io);
        close(p[0]);
        close(sig[0]);
        ag_timer_free(deadline);
        /* Freed with the stream client possibly still suspended. */
        ag_endpoint_free(ep);
        ag_loop_free(loop);
        free(r.data.p);
}
END_TEST

START_TEST(test_refuses_beyond_loopback)
{
        const struct {
                const char *address;
                int port;
                const char *msg;
        } t[] = {
            {"0.0.0.0", 0,
             "serving beyond loopback needs TLS and a token, which cubelet does "
             "not support yet"},
            {"10.0.0.1", 10255, "not a loopback address"},
            {"128.0.0.1", 0, "not a loopback address"},
            {"::", 0, "not a loopback address"},
            {"::ffff:127.0.0.1", 0, "not a loopback address"},
            {"localhost", 0, "is not an IPv4 or IPv6 address"},
            {"127.0.0.1 ", 0, "is not an IPv4 or IPv6 address"},
            {"127.0.0.1", -1, "out of range"},
            {"127.0.0.1", 65536, "out of range"},
        };
        struct cb_error err = {0};
        struct ag_loop *loop = NULL;
        ck_assert_int_eq(ag_loop_new(&loop, &err), 0);
        struct ag_endpoint_sources src = {0};
        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
                struct ag_endpoint *ep = NULL;
                cb_error_clear(&err);
                ck_assert_msg(ag_endpoint_start(loop, t[i].address, t[i].port, &src, &ep, &err) ==
                                  -1,
                              "%s accepted", t[i].address);
                ck_assert_ptr_null(ep);
                ck_assert_msg(strstr(err.msg, t[i].msg) != NULL, "%s: \"%s\"", t[i].address,
                              err.msg);
        }
        ag_loop_free(loop);
}
END_TEST

static int connect_to(int family, const char *address, int port)
{
        struct sockaddr_storage ss = {0};
        socklen_t len;
        if (family == AF_INET) {
                struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
                v4->sin_family = AF_INET;
                v4->sin_port = htons((uint16_t)port);
                inet_pton(AF_INET, address, &v4->sin_addr);
                len = sizeof(*v4);
        } else {
                struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
                v6->sin6_family = AF_INET6;
                v6->sin6_port = htons((uint16_t)port);
                inet_pton(AF_INET6, address, &v6->sin6_addr);
                len = sizeof(*v6);
        }
        int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        ck_assert_int_ge(fd, 0);
        /* The kernel completes the handshake from the listen backlog, so
         * this works without running the loop. */
        int r = connect(fd, (struct sockaddr *)&ss, len);
        close(fd);
        return r;
}

START_TEST(test_loopback_addresses)
{
        struct cb_error err = {0};
        struct ag_loop *loop = NULL;
        ck_assert_int_eq(ag_loop_new(&loop, &err), 0);
        struct ag_endpoint_sources src = {0};

        /* NULL: the default, 127.0.0.1. */
        struct ag_endpoint *ep = NULL;
        ck_assert_msg(ag_endpoint_start(loop, NULL, 0, &src, &ep, &err) == 0, "%s", err.msg);
        int port = ag_endpoint_port(ep);
        ck_assert_int_eq(connect_to(AF_INET, "127.0.0.1", port), 0);
        ck_assert_int_ne(connect_to(AF_INET, "127.0.0.2", port), 0);

        /* The same port again: refused with the address and port. */
        struct ag_endpoint *ep2 = NULL;
        ck_assert_int_eq(ag_endpoint_start(loop, "127.0.0.1", port, &src, &ep2, &err), -1);
        char want[64];
        snprintf(want, sizeof(want), "on 127.0.0.1 port %d", port);
        ck_assert_msg(strstr(err.msg, want) != NULL, "%s", err.msg);
        ag_endpoint_free(ep);

        /* Anywhere in 127.0.0.0/8. */
        ck_assert_msg(ag_endpoint_start(loop, "127.0.0.2", 0, &src, &ep, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(connect_to(AF_INET, "127.0.0.2", ag_endpoint_port(ep)), 0);
        ag_endpoint_free(ep);

        /* ::1, when the host has IPv6 loopback. */
        int probe = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in6 v6 = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
        bool have_v6 = probe >= 0 && bind(probe, (struct sockaddr *)&v6, sizeof(v6)) == 0;
        if (probe >= 0)
                close(probe);
        if (have_v6) {
                ck_assert_msg(ag_endpoint_start(loop, "::1", 0, &src, &ep, &err) == 0, "%s",
                              err.msg);
                ck_assert_int_eq(connect_to(AF_INET6, "::1", ag_endpoint_port(ep)), 0);
                ag_endpoint_free(ep);
        }
        ag_endpoint_free(NULL);
        ag_loop_free(loop);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("endpoint");
        TCase *tc = tcase_create("core");
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_serves_routes);
        tcase_add_test(tc, test_page_trace_and_stream);
        tcase_add_test(tc, test_refuses_beyond_loopback);
        tcase_add_test(tc, test_loopback_addresses);
        suite_add_tcase(s, tc);
        return th_run(s) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
