/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/pods/worker_internal.h"

/* ---- stopping a container: preStop hook, then the stop signal ---------------
 *
 * As the kubelet's killContainer: with a grace period, the preStop hook
 * runs first (exec inside the container, or sleep) and may use the whole
 * grace period; then the stop signal; SIGKILL to the container's cgroup when
 * the grace period is over, with at least 2 s after the signal when the
 * hook used it all. */

void pw_send_stop_signal(struct ag_pod_worker *w, struct ctr *c)
{
        struct cb_error err = {0};
        c->in_prestop = false;
        if (pw_sidecar_must_wait(w, c))
                return;
        c->signalled = true;
        if (!c->running)
                return;
        if (rt_container_signal(w->env->root_dir, c->id,
                                c->stop_signal > 0 ? c->stop_signal : SIGTERM, &err) < 0 &&
            err.code != ESRCH)
                pw_emit_event(w, c, "Warning", "FailedKillPod", "%s", err.msg);
}

void pw_end_hook(struct ctr *c)
{
        if (c->http_hook != NULL) {
                ag_http_hook_cancel(c->http_hook);
                c->http_hook = NULL;
        }
        if (c->hook_io != NULL) {
                ag_io_free(c->hook_io);
                c->hook_io = NULL;
        }
        if (c->hook_pidfd >= 0) {
                rt_container_exec_kill(c->hook_pidfd, NULL);
                int code;
                rt_container_exec_reap(c->hook_pidfd, true, &code, NULL);
                close(c->hook_pidfd);
                c->hook_pidfd = -1;
        }
        if (c->hook_out >= 0) {
                close(c->hook_out);
                c->hook_out = -1;
        }
        if (c->hook_timer != NULL)
                ag_timer_disarm(c->hook_timer);
}

static void pod_ref(const struct ag_pod_worker *w, char *buf, size_t size)
{
        /* The kubelet's format.Pod: name_namespace(uid) */
        snprintf(buf, size, "%s_%s(%s)", w->pod->meta.name, pw_pod_ns(w->pod), w->pod->meta.uid);
}

/* A postStart or preStop hook ended (ok, or msg: the kubelet's event text). */
void pw_hook_finished(struct ctr *c, bool ok, const char *msg)
{
        struct ag_pod_worker *w = c->w;
        int kind = c->hook_kind;
        c->hook_kind = 0;
        pw_end_hook(c);
        if (kind == HOOK_PRESTOP) {
                if (!ok)
                        pw_emit_event(w, c, "Warning", "FailedPreStopHook", "%s", msg);
                ag_pod_worker_mark(w, "preStopDone", c->spec->name);
                pw_send_stop_signal(w, c);
                return;
        }
        if (kind != HOOK_POSTSTART)
                return;
        c->in_poststart = false;
        if (ok) {
                ag_pod_worker_mark(w, "postStartDone", c->spec->name);
                if (!w->terminating && c->running)
                        pw_start_probers(w, c);
        } else if (c->running && !w->terminating) {
                /* As the kubelet: the container is killed; its exit goes
                 * through the restart policy. */
                pw_emit_event(w, c, "Warning", "FailedPostStartHook", "%s", msg);
                pw_emit_event(w, c, "Normal", "Killing", "FailedPostStartHook");
                pw_probe_kill_quiet(w, c);
        }
        pw_compute_status(w);
        ag_timer_arm(w->kick, 0);
}

static void on_hook_exit(struct ag_io *io, int fd, uint32_t events, void *data)
{
        struct ctr *c = data;
        struct ag_pod_worker *w = c->w;
        (void)io;
        (void)fd;
        (void)events;
        int code = -1;
        char out[1024] = "";
        size_t len = 0;
        if (c->hook_out >= 0)
                rt_container_exec_read(c->hook_out, out, sizeof(out) - 1, &len);
        out[len] = '\0';
        if (rt_container_exec_reap(c->hook_pidfd, false, &code, NULL) < 0)
                code = -1;
        /* out of epoll before the close (as prober.c:exec_done) */
        ag_io_free(c->hook_io);
        c->hook_io = NULL;
        close(c->hook_pidfd);
        c->hook_pidfd = -1;
        const struct k8s_handler *h =
            c->hook_kind == HOOK_POSTSTART ? &c->spec->post_start : &c->spec->pre_stop;
        char cmd[512] = "", ref[512], msg[4096];
        for (size_t i = 0, n = 0; i < h->n_command && n < sizeof(cmd); i++)
                n +=
                    (size_t)snprintf(cmd + n, sizeof(cmd) - n, "%s%s", i ? " " : "", h->command[i]);
        pod_ref(w, ref, sizeof(ref));
        snprintf(msg, sizeof(msg),
                 "Exec lifecycle hook ([%.500s]) for Container \"%.253s\" in Pod \"%.500s\" "
                 "failed - error: command '%.500s' exited with %d: , message: \"%.1000s\"",
                 cmd, c->spec->name, ref, cmd, code, out);
        pw_hook_finished(c, code == 0, msg);
}

static void on_http_hook(bool ok, const char *error, void *data)
{
        struct ctr *c = data;
        c->http_hook = NULL;
        const struct k8s_handler *h =
            c->hook_kind == HOOK_POSTSTART ? &c->spec->post_start : &c->spec->pre_stop;
        char ref[512], msg[4096];
        pod_ref(c->w, ref, sizeof(ref));
        snprintf(msg, sizeof(msg),
                 "HTTP lifecycle hook (%.500s) for Container \"%.253s\" in Pod \"%.500s\" failed - "
                 "error: %.2500s",
                 h->path ? h->path : "", c->spec->name, ref, error ? error : "");
        pw_hook_finished(c, ok, msg);
}

void pw_on_hook_timer(struct ag_timer *t, void *data)
{
        struct ctr *c = data;
        (void)t;
        pw_hook_finished(c, true, NULL);
}

/* Starts a hook of kind HOOK_PRESTOP/HOOK_POSTSTART. false: nothing runs
 * (no handler, or it could not start: then the failure is reported as the
 * hook's and pw_hook_finished() has run). */
bool pw_start_hook(struct ag_pod_worker *w, struct ctr *c, const struct k8s_handler *h, int kind,
                   int64_t http_timeout_ms)
{
        struct cb_error err = {0};
        c->hook_kind = kind;
        switch (h->kind) {
        case K8S_HANDLER_NONE:
                c->hook_kind = 0;
                return false;
        case K8S_HANDLER_SLEEP:
                ag_timer_arm(c->hook_timer,
                             (uint64_t)(h->sleep_seconds > 0 ? h->sleep_seconds : 0) * 1000);
                return true;
        case K8S_HANDLER_EXEC: {
                const char **argv = calloc(h->n_command + 1, sizeof(char *));
                if (argv == NULL) {
                        cb_error_set(&err, ENOMEM, "exec hook");
                        break;
                }
                for (size_t i = 0; i < h->n_command; i++)
                        argv[i] = h->command[i];
                int r = rt_container_exec_start(w->env->root_dir, c->id, w->env->monitor_path, argv,
                                                &c->hook_pidfd, &c->hook_out, &err);
                free(argv);
                if (r == 0)
                        c->hook_io =
                            ag_io_new(w->env->loop, c->hook_pidfd, EPOLLIN, on_hook_exit, c, &err);
                if (r == 0 && c->hook_io != NULL)
                        return true;
                break;
        }
        case K8S_HANDLER_HTTP_GET:
                c->http_hook = ag_http_hook_start(
                    w->env->hooks, h,
                    w->pod->spec.host_network || w->n_pod_ips == 0 ? "127.0.0.1" : w->pod_ips[0],
                    c->spec->ports, c->spec->n_ports, http_timeout_ms, on_http_hook, c, &err);
                if (c->http_hook != NULL)
                        return true;
                break;
        default:
                cb_error_set(&err, 0, "a %s hook is not supported",
                             h->kind == K8S_HANDLER_TCP_SOCKET ? "tcpSocket" : "gRPC");
                break;
        }
        char ref[512], msg[4096];
        pod_ref(w, ref, sizeof(ref));
        snprintf(msg, sizeof(msg),
                 "%s lifecycle hook for Container \"%s\" in Pod \"%s\" failed - error: %s",
                 h->kind == K8S_HANDLER_EXEC       ? "Exec"
                 : h->kind == K8S_HANDLER_HTTP_GET ? "HTTP"
                                                   : "Unknown",
                 c->spec->name, ref, err.msg);
        pw_hook_finished(c, false, msg);
        return false;
}

/* Starts the preStop hook; false when there is none (or it cannot run:
 * then the stop signal goes at once). */
