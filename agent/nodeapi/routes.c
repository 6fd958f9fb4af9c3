/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The node API's routes (docs/node-api.md, "Endpoints"): a request,
 * authenticated and authorized, goes to /healthz, /pods, /stats/summary,
 * /containerLogs (logs.c) or, for exec, attach and portForward, is checked
 * and upgraded to SPDY/3.1 or WebSocket (exec.c, portforward.c,
 * framing.c). Also finding a request's pod and container in the node's pods.
 */
#include "agent/nodeapi/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "agent/core/log.h"
#include "agent/pods/stats.h"
#include "lib/cleanup.h"
#include "runtime/sandbox.h"

#define MAX_ARGS 256 /* query parameters */
/* the kubelet's streamCreationTimeout default: the streams of an exec or
 * a port-forward request must all be open within it */
#define STREAM_CREATION_MS 30000

/* ---- finding pods and containers ---- */

static const cJSON *jget(const cJSON *o, const char *k)
{
        return cJSON_GetObjectItemCaseSensitive(o, k);
}

static const char *jstr(const cJSON *o, const char *k)
{
        const cJSON *v = jget(o, k);
        return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool in_spec(const cJSON *pod, const char *name)
{
        const cJSON *spec = jget(pod, "spec");
        static const char *const lists[] = {"containers", "initContainers", "ephemeralContainers"};
        for (size_t i = 0; i < CB_ARRAY_SIZE(lists); i++) {
                const cJSON *c;
                cJSON_ArrayForEach(c, jget(spec, lists[i]))
                {
                        const char *n = jstr(c, "name");
                        if (n != NULL && strcmp(n, name) == 0)
                                return true;
                }
        }
        return false;
}

/* 0, or the HTTP status with f->msg. container NULL: the pod only. */
int ag_napi_find_target(struct ag_napi *s, const struct ag_napi_target *t, const char *container,
                        struct found *f)
{
        memset(f, 0, sizeof(*f));
        f->list = s->cfg.pods != NULL ? s->cfg.pods(s->cfg.data) : NULL;
        const cJSON *item;
        cJSON_ArrayForEach(item, jget(f->list, "items"))
        {
                const cJSON *meta = jget(item, "metadata");
                const char *ns = jstr(meta, "namespace"), *name = jstr(meta, "name");
                if (ns == NULL || name == NULL || strcmp(ns, t->ns) != 0 ||
                    strcmp(name, t->pod) != 0)
                        continue;
                const char *uid = jstr(meta, "uid");
                if (t->uid[0] != '\0' && (uid == NULL || strcmp(uid, t->uid) != 0))
                        continue;
                f->pod = item;
                f->uid = uid;
        }
        if (f->pod == NULL) {
                snprintf(f->msg, sizeof(f->msg), "pod \"%s/%s\" not found on this node", t->ns,
                         t->pod);
                return 404;
        }
        if (container == NULL)
                return 0;
        if (!in_spec(f->pod, container)) {
                snprintf(f->msg, sizeof(f->msg), "container \"%s\" not found in pod \"%s/%s\"",
                         container, t->ns, t->pod);
                return 404;
        }
        const cJSON *st = jget(f->pod, "status");
        static const char *const lists[] = {"containerStatuses", "initContainerStatuses",
                                            "ephemeralContainerStatuses"};
        for (size_t i = 0; i < CB_ARRAY_SIZE(lists); i++) {
                const cJSON *cs;
                cJSON_ArrayForEach(cs, jget(st, lists[i]))
                {
                        const char *n = jstr(cs, "name");
                        if (n == NULL || strcmp(n, container) != 0)
                                continue;
                        const char *cid = jstr(cs, "containerID");
                        if (cid != NULL && strncmp(cid, "cubelet://", 10) == 0)
                                f->cid = cid + 10;
                        f->running = jget(jget(cs, "state"), "running") != NULL;
                }
        }
        return 0;
}

void ag_napi_found_clear(struct found *f)
{
        cJSON_Delete(f->list);
        f->list = NULL;
}

static void args_free(struct args *a)
{
        for (size_t i = 0; i < a->n; i++)
                free(a->v[i]);
        free(a->v);
        a->v = NULL;
        a->n = 0;
}

static int args_read(struct conn *c, struct args *a, struct cb_error *err)
{
        const char *q = c->req.url != NULL ? strchr(c->req.url, '?') : NULL;
        return ag_napi_query_split(q != NULL ? q + 1 : "", MAX_ARGS, &a->v, &a->n, err);
}

/* ---- streaming requests ---- */

/* A portForward request: the pod is here and has a sandbox (its network
 * namespace). 0 with *ret_pf, or the HTTP status with msg. */
static int check_portforward(struct conn *c, const struct ag_napi_target *t, struct pfwd **ret_pf,
                             char *msg, size_t size)
{
        struct ag_napi *s = c->srv;
        struct found f;
        int code = ag_napi_find_target(s, t, NULL, &f);
        if (code != 0) {
                snprintf(msg, size, "%s", f.msg);
                ag_napi_found_clear(&f);
                return code;
        }
        struct pfwd *pf = calloc(1, sizeof(*pf));
        if (pf == NULL) {
                ag_napi_found_clear(&f);
                snprintf(msg, size, "out of memory");
                return 500;
        }
        pf->c = c;
        snprintf(pf->ns, sizeof(pf->ns), "%s", t->ns);
        snprintf(pf->pod, sizeof(pf->pod), "%s", t->pod);
        snprintf(pf->uid, sizeof(pf->uid), "%s", f.uid ? f.uid : "");
        struct rt_sandbox sb;
        struct cb_error err = {0};
        if (f.uid == NULL || rt_sandbox_load(s->cfg.root_dir, f.uid, &sb, &err) < 0) {
                snprintf(msg, size, "pod \"%s/%s\" has no sandbox yet: %.300s", t->ns, t->pod,
                         err.msg);
                ag_napi_found_clear(&f);
                free(pf);
                return 400;
        }
        snprintf(pf->netns, sizeof(pf->netns), "%s", sb.netns_path);
        ag_napi_found_clear(&f);
        *ret_pf = pf;
        return 0;
}

/* An exec or attach request: its parameters, the container running (and for
 * attach -i/-t made with stdin/tty). *ret_x is made even for a refusal; 0,
 * or the HTTP status with msg. */
static int check_exec(struct conn *c, enum ag_napi_route r, const struct ag_napi_target *t,
                      struct exec **ret_x, char *msg, size_t size)
{
        struct ag_napi *s = c->srv;
        struct found f;
        /* the session exists even for a refusal: a WebSocket refusal goes
         * on its error channel */
        struct exec *x = calloc(1, sizeof(*x));
        if (x == NULL) {
                snprintf(msg, size, "out of memory");
                return 500;
        }
        x->c = c;
        x->srv = s;
        x->t = *t;
        x->pidfd = x->in_fd = x->out_fd = x->err_fd = x->pty = -1;
        x->att_fd = x->att_ino = x->att_sock = -1;
        x->attach = r == AG_NAPI_ATTACH;
        *ret_x = x;
        struct args a = {0};
        struct cb_error err = {0};
        struct ag_napi_exec_options o = {0};
        if (args_read(c, &a, &err) < 0 ||
            ag_napi_exec_options_parse((const char *const *)a.v, a.n, r == AG_NAPI_EXEC, &o, &err) <
                0) {
                snprintf(msg, size, "%s", err.msg);
                args_free(&a);
                return 400;
        }
        /* argv points into a.v: keep copies that outlive the request */
        size_t total = 0;
        for (size_t i = 0; i < o.argc; i++)
                total += strlen(o.argv[i]) + 1;
        char **argv = malloc((o.argc + 1) * sizeof(char *) + total);
        if (argv == NULL) {
                free(o.argv);
                args_free(&a);
                snprintf(msg, size, "out of memory");
                return 500;
        }
        char *p = (char *)(argv + o.argc + 1);
        for (size_t i = 0; i < o.argc; i++) {
                size_t l = strlen(o.argv[i]) + 1;
                memcpy(p, o.argv[i], l);
                argv[i] = p;
                p += l;
        }
        argv[o.argc] = NULL;
        free(o.argv);
        o.argv = (const char **)argv;
        args_free(&a);
        x->opts = o;
        int code = ag_napi_find_target(s, t, t->container, &f);
        if (code != 0) {
                snprintf(msg, size, "%s", f.msg);
                ag_napi_found_clear(&f);
                return code;
        }
        if (f.cid == NULL || !f.running) {
                snprintf(msg, size, "container \"%s\" in pod \"%s\" is not running", t->container,
                         t->pod);
                ag_napi_found_clear(&f);
                return 400;
        }
        if (x->attach && (o.in || o.tty)) {
                struct rt_container_state cst;
                struct cb_error e2 = {0};
                if (rt_container_state(s->cfg.root_dir, f.cid, &cst, &e2) < 0) {
                        snprintf(msg, size, "%s", e2.msg);
                        ag_napi_found_clear(&f);
                        return 500;
                }
                if ((o.in && !cst.stdin_open) || (o.tty && !cst.tty)) {
                        snprintf(msg, size,
                                 "container \"%s\" in pod \"%s\" was created without %s: set "
                                 "%s in its spec to attach with %s",
                                 t->container, t->pod, o.in && !cst.stdin_open ? "stdin" : "a tty",
                                 o.in && !cst.stdin_open ? "stdin: true" : "tty: true",
                                 o.in && !cst.stdin_open ? "-i" : "-t");
                        ag_napi_found_clear(&f);
                        return 400;
                }
        }
        x->cid = strdup(f.cid);
        ag_napi_found_clear(&f);
        if (x->cid == NULL) {
                snprintf(msg, size, "out of memory");
                return 500;
        }
        return 0;
}

/* What an exec/attach/portForward request asks for, checked: 0, or the
 * HTTP status with msg. On success *x (exec/attach) or *pf is made. */
static int stream_check(struct conn *c, enum ag_napi_route r, const struct ag_napi_target *t,
                        struct exec **ret_x, struct pfwd **ret_pf, char *msg, size_t size)
{
        if (r == AG_NAPI_PORTFORWARD)
                return check_portforward(c, t, ret_pf, msg, size);
        return check_exec(c, r, t, ret_x, msg, size);
}
static const char *const ws_exec_protocols[] = {"v5.channel.k8s.io", "v4.channel.k8s.io",
                                                "channel.k8s.io", NULL};
static const char *const ws_pf_protocols[] = {"SPDY/3.1+portforward.k8s.io", NULL};
static const char *const spdy_exec_protocols[] = {"v4.channel.k8s.io", NULL};
static const char *const spdy_pf_protocols[] = {"portforward.k8s.io", NULL};

/* httpstream.Handshake's refusal of the client's X-Stream-Protocol-Version
 * (cl, NULL: none sent): plain text, the lists as Go prints them. */
static void refuse_stream_protocols(struct conn *c, const char *cl, const char *const *sup)
{
        if (cl == NULL) {
                log_v(2, "node API: SPDY upgrade without X-Stream-Protocol-Version");
                ag_napi_conn_head(c, 400, "text/plain; charset=utf-8", -1);
                ag_napi_conn_printf(c, "unable to upgrade: X-Stream-Protocol-Version is "
                                       "required\n");
                c->mode = C_RESPONSE;
                c->close_after_flush = true;
                return;
        }
        char list[256];
        size_t li = 0;
        for (const char *p = cl; *p != '\0' && li + 1 < sizeof(list); p++) {
                if (*p == ',') {
                        while (p[1] == ' ')
                                p++;
                        list[li++] = ' ';
                } else {
                        list[li++] = *p;
                }
        }
        list[li] = '\0';
        log_v(2, "node API: SPDY protocols [%s] refused", list);
        ag_napi_conn_printf(c,
                            "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; "
                            "charset=utf-8\r\nX-Accepted-Stream-Protocol-Versions: "
                            "%s\r\nConnection: close\r\n\r\nunable to upgrade: unable to "
                            "negotiate protocol: client supports [%s], server accepts "
                            "[%s]\n",
                            sup[0], list, sup[0]);
        c->mode = C_RESPONSE;
        c->close_after_flush = true;
}

/* "Upgrade: SPDY/3.1": everything is checked before the 101, and a refusal
 * is a plain response (client-go shows its Status). */
static void upgrade_spdy(struct conn *c, enum ag_napi_route r, const struct ag_napi_target *t,
                         const uint8_t *rest, size_t rest_len)
{
        const char *const *sup = r == AG_NAPI_PORTFORWARD ? spdy_pf_protocols : spdy_exec_protocols;
        const char *proto = ag_napi_negotiate(c->req.stream_protocol, sup);
        if (proto == NULL)
                return refuse_stream_protocols(c, c->req.stream_protocol, sup);
        struct exec *x = NULL;
        struct pfwd *pf = NULL;
        struct cb_error err = {0};
        char msg[1200];
        /* refused before the upgrade: client-go shows the Status */
        int code = stream_check(c, r, t, &x, &pf, msg, sizeof(msg));
        if (code != 0) {
                ag_napi_exec_free(x);
                ag_napi_pfwd_free(pf);
                return ag_napi_respond_error(c, code, msg);
        }
        if (ag_spdy_session_new(true, &ag_napi_spdy_cbs, c, &c->spdy, &err) < 0) {
                ag_napi_exec_free(x);
                ag_napi_pfwd_free(pf);
                return ag_napi_respond_error(c, 500, err.msg);
        }
        ag_napi_conn_printf(c,
                            "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n"
                            "Upgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: %s\r\n\r\n",
                            proto);
        c->mode = C_SPDY;
        c->ex = x;
        c->pf = pf;
        if (x != NULL) {
                x->spdy = true;
                x->proto = AG_NAPI_CHANNEL_V4;
                ag_timer_arm(c->timer, STREAM_CREATION_MS);
        }
        if (rest_len > 0)
                ag_napi_conn_input(c, rest, rest_len);
}

/* "Upgrade: websocket": only the upgrade itself is checked before the 101;
 * the request's refusal goes on the error channel, or for the port-forward
 * tunnel (no channel for it) in the close. */
static void upgrade_websocket(struct conn *c, enum ag_napi_route r, const struct ag_napi_target *t,
                              const uint8_t *rest, size_t rest_len)
{
        char msg[1200];
        if (c->req.ws_key == NULL || c->req.ws_version == NULL ||
            strcmp(c->req.ws_version, "13") != 0)
                return ag_napi_respond_error(c, 400,
                                             "unable to upgrade: a WebSocket upgrade needs "
                                             "Sec-WebSocket-Key and Sec-WebSocket-Version 13");
        const char *const *sup = r == AG_NAPI_PORTFORWARD ? ws_pf_protocols : ws_exec_protocols;
        const char *proto = ag_napi_negotiate(c->req.ws_protocol, sup);
        if (proto == NULL && c->req.ws_protocol != NULL) {
                snprintf(msg, sizeof(msg),
                         "unable to upgrade: requested protocol(s) [%.200s] are not supported: "
                         "use one of %s%s%s",
                         c->req.ws_protocol, sup[0], sup[1] ? ", " : "", sup[1] ? sup[1] : "");
                return ag_napi_respond_error(c, 400, msg);
        }
        if (r == AG_NAPI_PORTFORWARD && proto == NULL)
                return ag_napi_respond_error(c, 400,
                                             "unable to upgrade: port-forward over WebSocket "
                                             "needs the SPDY/3.1+portforward.k8s.io protocol");
        struct exec *x = NULL;
        struct pfwd *pf = NULL;
        struct cb_error err = {0};
        int code = stream_check(c, r, t, &x, &pf, msg, sizeof(msg));
        if (ag_napi_ws_start(c, proto, &err) < 0) {
                ag_napi_exec_free(x);
                ag_napi_pfwd_free(pf);
                return ag_napi_respond_error(c, 500, err.msg);
        }
        if (r == AG_NAPI_PORTFORWARD) {
                if (code != 0) {
                        /* the tunnel has no channel for it: the close says why */
                        log_v(2, "node API: port-forward refused (%d): %s", code, msg);
                        wslay_event_queue_close(c->ws, 1011, (const uint8_t *)msg,
                                                strlen(msg) > 120 ? 120 : strlen(msg));
                        (void)wslay_event_send(c->ws);
                        ag_timer_arm(c->timer, CLOSE_WAIT_MS);
                        return;
                }
                if (ag_spdy_session_new(true, &ag_napi_spdy_cbs, c, &c->spdy, &err) < 0) {
                        ag_napi_pfwd_free(pf);
                        c->dead = true;
                        return;
                }
                c->pf = pf;
                c->ws_tunnel = true;
        } else {
                c->ex = x;
                x->proto = ag_napi_channel_proto_from_name(proto);
                if (code != 0) {
                        /* Refused after the upgrade, on the error channel:
                         * kubectl shows it (a refused WebSocket upgrade
                         * makes it retry with SPDY and report that). */
                        log_v(2, "node API: streaming request refused (%d): %s", code, msg);
                        ag_napi_exec_finish(x, 0, msg);
                } else {
                        /* an empty message on the first output channel tells
                         * the client the streams are ready, as the kubelet
                         * does */
                        ag_napi_exec_queue(x,
                                           x->opts.out   ? AG_NAPI_CH_STDOUT
                                           : x->opts.err ? AG_NAPI_CH_STDERR
                                                         : AG_NAPI_CH_ERROR,
                                           NULL, 0);
                        ag_napi_exec_begin(x);
                }
        }
        if (rest_len > 0 && !c->dead)
                ag_napi_conn_input(c, rest, rest_len);
}

static void handle_upgrade(struct conn *c, enum ag_napi_route r, const struct ag_napi_target *t,
                           const uint8_t *rest, size_t rest_len)
{
        if (strcasecmp(c->req.upgrade, "SPDY/3.1") == 0)
                return upgrade_spdy(c, r, t, rest, rest_len);
        if (strcasecmp(c->req.upgrade, "websocket") == 0)
                return upgrade_websocket(c, r, t, rest, rest_len);
        return ag_napi_respond_error(c, 400,
                                     "unable to upgrade: only websocket and SPDY/3.1 are "
                                     "supported");
}

/* The request, authenticated and authorized. */
void ag_napi_serve_request(struct conn *c, const uint8_t *rest, size_t rest_len)
{
        struct ag_napi *s = c->srv;
        int code;
        char path[2048];
        size_t pl = strcspn(c->req.url ? c->req.url : "", "?");
        if (c->req.url == NULL || pl >= sizeof(path))
                return ag_napi_respond_error(c, 404,
                                             "the server could not find the requested resource");
        memcpy(path, c->req.url, pl);
        path[pl] = '\0';
        struct ag_napi_target t;
        enum ag_napi_route r = ag_napi_route_path(path, &t);
        log_v(3, "node API: %s %s (%s)", c->req.method, path, c->who);
        if (r == AG_NAPI_NONE)
                return ag_napi_respond_error(c, 404,
                                             "the server could not find the requested resource");
        bool streaming = r == AG_NAPI_EXEC || r == AG_NAPI_ATTACH || r == AG_NAPI_PORTFORWARD;
        if (streaming) {
                if (!c->hp.upgrade || c->req.upgrade == NULL) {
                        /* the target's problem first, as the kubelet */
                        struct exec *x = NULL;
                        struct pfwd *pf = NULL;
                        char msg[1200];
                        code = stream_check(c, r, &t, &x, &pf, msg, sizeof(msg));
                        ag_napi_exec_free(x);
                        ag_napi_pfwd_free(pf);
                        if (code != 0)
                                return ag_napi_respond_error(c, code, msg);
                        return ag_napi_respond_error(
                            c, 400,
                            "unable to upgrade: missing upgrade headers in "
                            "request (exec, attach and portForward need "
                            "Upgrade: SPDY/3.1 or websocket)");
                }
                return handle_upgrade(c, r, &t, rest, rest_len);
        }
        if (strcmp(c->req.method, "GET") != 0 && strcmp(c->req.method, "HEAD") != 0)
                return ag_napi_respond_error(
                    c, 405,
                    "the server does not allow this method on the requested "
                    "resource");
        switch (r) {
        case AG_NAPI_HEALTHZ: {
                char why[256] = "";
                if (s->cfg.healthy != NULL && !s->cfg.healthy(s->cfg.data, why, sizeof(why)))
                        return ag_napi_respond(c, 500, "text/plain", strdup(why));
                return ag_napi_respond(c, 200, "text/plain", strdup("ok"));
        }
        case AG_NAPI_PODS: {
                _cleanup_cjson_ cJSON *l = s->cfg.pods != NULL ? s->cfg.pods(s->cfg.data) : NULL;
                char *b = l != NULL ? cJSON_PrintUnformatted(l) : NULL;
                if (b == NULL)
                        return ag_napi_respond_error(c, 500, "cannot list the pods");
                return ag_napi_respond(c, 200, "application/json", b);
        }
        case AG_NAPI_STATS_SUMMARY: {
                _cleanup_cjson_ cJSON *o =
                    s->cfg.summary != NULL ? s->cfg.summary(s->cfg.data) : NULL;
                char *b = o != NULL ? cJSON_PrintUnformatted(o) : NULL;
                if (b == NULL)
                        return ag_napi_respond_error(c, 500, "cannot read the node's statistics");
                return ag_napi_respond(c, 200, "application/json", b);
        }
        case AG_NAPI_METRICS_RESOURCE: {
                /* The same figures as /stats/summary, as the kubelet's
                 * resource metrics collector reads them from its summary
                 * provider; a failed read is resource_scrape_error 1. */
                _cleanup_cjson_ cJSON *o =
                    s->cfg.summary != NULL ? s->cfg.summary(s->cfg.data) : NULL;
                char *b = ag_resource_metrics_text(o);
                if (b == NULL)
                        return ag_napi_respond_error(c, 500, "cannot render the resource metrics");
                return ag_napi_respond(c, 200, "text/plain; version=0.0.4; charset=utf-8", b);
        }
        case AG_NAPI_LOGS: {
                struct args a = {0};
                struct cb_error err = {0};
                if (args_read(c, &a, &err) < 0) {
                        args_free(&a);
                        return ag_napi_respond_error(c, 400, err.msg);
                }
                ag_napi_start_logs(c, &t, &a);
                args_free(&a);
                return;
        }
        default:
                return ag_napi_respond_error(c, 404, "not found");
        }
}
