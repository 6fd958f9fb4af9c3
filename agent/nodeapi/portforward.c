/* SPDX-License-Identifier: Apache-2.0 */
/*
 * /portForward: SPDY streams in pairs (error + data per request id), each
 * pair copying bytes to and from a socket connected inside the pod's
 * network namespace (rt_sandbox_dial).
 */
#include "agent/nodeapi/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent/core/log.h"
#include "lib/cleanup.h"
#include "runtime/sandbox.h"

#define PF_MAX_PAIRS 128

struct pfpair {
        struct pfpair *next;
        struct pfwd *pf;
        char request_id[64];
        uint16_t port;
        uint32_t data_id, error_id;
        int sock;
        struct ag_io *io;
        uint8_t *to_sock; /* from the client, not yet written */
        size_t to_len;
        bool client_fin, sock_eof, data_fin_sent, shut_wr, failed;
};

/* ---- port forwarding (SPDY streams in pairs) ---- */

static void pair_free(struct pfpair *p)
{
        struct pfpair **pp = &p->pf->pairs;
        while (*pp != NULL && *pp != p)
                pp = &(*pp)->next;
        if (*pp == p) {
                *pp = p->next;
                p->pf->n_pairs--;
        }
        ag_io_free(p->io);
        if (p->sock >= 0)
                close(p->sock);
        free(p->to_sock);
        free(p);
}

void ag_napi_pfwd_free(struct pfwd *pf)
{
        if (pf == NULL)
                return;
        while (pf->pairs != NULL)
                pair_free(pf->pairs);
        free(pf);
}

/* Ends a pair from our side: FIN on both streams (the client closes its
 * listener's connection on the data stream's end). */
static void pair_end(struct pfpair *p)
{
        struct conn *c = p->pf->c;
        struct cb_error err = {0};
        if (p->data_id != 0 && !p->data_fin_sent)
                (void)ag_spdy_data(c->spdy, p->data_id, NULL, 0, true, &err);
        if (p->error_id != 0)
                (void)ag_spdy_data(c->spdy, p->error_id, NULL, 0, true, &err);
        ag_napi_spdy_flush(c);
        pair_free(p);
}

static void pair_error(struct pfpair *p, const char *why)
{
        struct pfwd *pf = p->pf;
        char msg[1024];
        /* the kubelet's wording (portforward/httpstream.go) */
        snprintf(msg, sizeof(msg), "error forwarding port %u to pod %s, uid %s: %s",
                 (unsigned)p->port, pf->pod, pf->uid, why);
        log_v(2, "node API: %s", msg);
        struct cb_error err = {0};
        if (p->error_id != 0)
                (void)ag_spdy_data(pf->c->spdy, p->error_id, msg, strlen(msg), false, &err);
        pair_end(p);
}

static void pair_events(struct pfpair *p)
{
        if (p->io == NULL)
                return;
        uint32_t ev = 0;
        if (!p->sock_eof && ag_napi_conn_pending(p->pf->c) < OUT_HIGH)
                ev |= EPOLLIN;
        if (p->to_len > 0)
                ev |= EPOLLOUT;
        ag_io_set_events(p->io, ev, NULL);
}

/* true when the pair is over and was freed */
static bool pair_step(struct pfpair *p)
{
        struct conn *c = p->pf->c;
        struct cb_error err = {0};
        while (p->to_len > 0) {
                ssize_t n = write(p->sock, p->to_sock, p->to_len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        break;
                if (n < 0) { /* the server in the pod went away */
                        p->to_len = 0;
                        p->sock_eof = true;
                        break;
                }
                memmove(p->to_sock, p->to_sock + n, p->to_len - (size_t)n);
                p->to_len -= (size_t)n;
        }
        if (p->client_fin && p->to_len == 0 && !p->shut_wr) {
                p->shut_wr = true;
                (void)shutdown(p->sock, SHUT_WR);
        }
        if (c->read_paused && p->to_len < STDIN_HIGH / 2)
                c->read_paused = false;
        uint8_t buf[READ_CHUNK];
        for (int i = 0; i < 8 && !p->sock_eof && ag_napi_conn_pending(c) < OUT_HIGH; i++) {
                ssize_t n = read(p->sock, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        break;
                if (n <= 0) {
                        p->sock_eof = true;
                        break;
                }
                (void)ag_spdy_data(c->spdy, p->data_id, buf, (size_t)n, false, &err);
                ag_napi_spdy_flush(c);
        }
        if (p->sock_eof && !p->data_fin_sent) {
                p->data_fin_sent = true;
                (void)ag_spdy_data(c->spdy, p->data_id, NULL, 0, true, &err);
                ag_napi_spdy_flush(c);
        }
        if (p->sock_eof && (p->client_fin || p->shut_wr)) {
                pair_end(p);
                return true;
        }
        pair_events(p);
        return false;
}

static void on_pair_sock(struct ag_io *io, int fd, uint32_t events, void *data)
{
        (void)io;
        (void)fd;
        (void)events;
        struct pfpair *p = data;
        struct conn *c = p->pf->c;
        (void)pair_step(p);
        ag_napi_conn_update(c);
}

static void pair_connect(struct pfpair *p)
{
        struct pfwd *pf = p->pf;
        struct cb_error err = {0};
        if (rt_sandbox_dial(pf->netns, p->port, &p->sock, &err) < 0) {
                p->sock = -1;
                pair_error(p, err.msg);
                return;
        }
        p->io = ag_io_new(pf->c->srv->loop, p->sock, EPOLLIN, on_pair_sock, p, &err);
        if (p->io == NULL) {
                pair_error(p, err.msg);
                return;
        }
        log_v(2, "node API: port-forward %s/%s port %u (request %s)", pf->ns, pf->pod,
              (unsigned)p->port, p->request_id);
        (void)pair_step(p);
}

int ag_napi_pf_on_stream(struct conn *c, uint32_t id, const struct ag_spdy_header *h, size_t n,
                         bool fin)
{
        struct pfwd *pf = c->pf;
        struct cb_error err = {0};
        const char *type = ag_napi_header_get(h, n, "streamtype"),
                   *port = ag_napi_header_get(h, n, "port"),
                   *rid = ag_napi_header_get(h, n, "requestid");
        char *end = NULL;
        long pn = port != NULL ? strtol(port, &end, 10) : -1;
        if (type == NULL || (strcmp(type, "data") != 0 && strcmp(type, "error") != 0) ||
            port == NULL || *port == '\0' || end == NULL || *end != '\0' || pn < 1 || pn > 65535 ||
            rid == NULL || strlen(rid) >= sizeof(((struct pfpair *)0)->request_id)) {
                log_v(2,
                      "node API: port-forward: refused a stream (type \"%s\" port \"%s\" "
                      "requestID \"%s\")",
                      type ? type : "", port ? port : "", rid ? rid : "");
                (void)ag_spdy_rst(c->spdy, id, AG_SPDY_REFUSED_STREAM, &err);
                return 0;
        }
        if (ag_spdy_reply(c->spdy, id, NULL, 0, false, &err) < 0)
                return -1;
        struct pfpair *p = pf->pairs;
        while (p != NULL && strcmp(p->request_id, rid) != 0)
                p = p->next;
        if (p == NULL) {
                if (pf->n_pairs >= PF_MAX_PAIRS) {
                        (void)ag_spdy_rst(c->spdy, id, AG_SPDY_REFUSED_STREAM, &err);
                        return 0;
                }
                p = calloc(1, sizeof(*p));
                if (p == NULL)
                        return -1;
                p->pf = pf;
                p->sock = -1;
                p->port = (uint16_t)pn;
                snprintf(p->request_id, sizeof(p->request_id), "%s", rid);
                p->next = pf->pairs;
                pf->pairs = p;
                pf->n_pairs++;
        }
        bool data = strcmp(type, "data") == 0;
        if ((data ? p->data_id : p->error_id) != 0 || p->port != (uint16_t)pn) {
                (void)ag_spdy_rst(c->spdy, id, AG_SPDY_PROTOCOL_ERROR, &err);
                return 0;
        }
        if (data) {
                p->data_id = id;
                p->client_fin = fin;
        } else {
                p->error_id = id;
        }
        if (p->data_id != 0 && p->error_id != 0)
                pair_connect(p);
        return 0;
}

static struct pfpair *pair_of(struct pfwd *pf, uint32_t id)
{
        for (struct pfpair *p = pf->pairs; p != NULL; p = p->next)
                if (p->data_id == id || p->error_id == id)
                        return p;
        return NULL;
}

int ag_napi_pf_on_data(struct conn *c, uint32_t id, const uint8_t *buf, size_t len, bool fin)
{
        struct pfpair *p = pair_of(c->pf, id);
        if (p == NULL || id != p->data_id)
                return 0; /* the error stream carries nothing from the client */
        if (len > 0 && p->sock >= 0 && !p->shut_wr) {
                if (p->to_len + len > STDIN_HIGH * 2)
                        return 0; /* the pause keeps this from happening */
                uint8_t *nb = realloc(p->to_sock, p->to_len + len);
                if (nb == NULL)
                        return -1;
                p->to_sock = nb;
                memcpy(nb + p->to_len, buf, len);
                p->to_len += len;
                if (p->to_len >= STDIN_HIGH)
                        c->read_paused = true;
        }
        if (fin)
                p->client_fin = true;
        if (p->sock >= 0)
                (void)pair_step(p);
        return 0;
}

void ag_napi_pf_on_reset(struct conn *c, uint32_t id)
{
        struct pfpair *p = pair_of(c->pf, id);
        if (p != NULL && id == p->data_id)
                pair_free(p); /* the client gave up on this connection */
}

void ag_napi_pfwd_written(struct pfwd *pf)
{
        for (struct pfpair *p = pf->pairs, *next; p != NULL; p = next) {
                next = p->next;
                if (p->sock >= 0)
                        (void)pair_step(p);
        }
}
