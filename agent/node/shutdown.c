/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/node/shutdown.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-bus.h>

#include "agent/core/log.h"
#include "agent/k8s/shutdown.h"
#include "lib/cleanup.h"
#include "lib/file.h"

#define LOGIND         "org.freedesktop.login1"
#define LOGIND_PATH    "/org/freedesktop/login1"
#define LOGIND_MGR     "org.freedesktop.login1.Manager"
#define RECONNECT_MS   1000 /* the kubelet's dbusReconnectPeriod */
#define RELOAD_WAIT_MS 500  /* logind rereads its configuration on SIGHUP */
#define DROPIN_NAME    "99-cubelet.conf"

enum phase {
        PH_OFF,      /* not connected (failed, or waiting to reconnect) */
        PH_DELAY,    /* reading InhibitDelayMaxUSec */
        PH_RELOAD,   /* the drop-in written, logind reloading */
        PH_REREAD,   /* reading it again */
        PH_INHIBIT,  /* the signal matched, Inhibit sent */
        PH_WATCHING, /* inhibitor held, waiting for PrepareForShutdown */
};

struct ag_shutdown {
        struct ag_loop *loop;
        struct ag_shutdown_config cfg;
        char *conf_dir, *node_name;
        struct k8s_shutdown_plan plan;
        sd_bus *bus;
        struct ag_io *io;
        struct ag_timer *bus_timer;   /* sd_bus_get_timeout */
        struct ag_timer *retry;       /* reconnect / reread */
        struct ag_timer *group_timer; /* the current group's time */
        sd_bus_slot *call, *match;
        enum phase phase;
        bool started;     /* the sequence succeeded once: reconnect when the bus goes */
        bool logged_down; /* the reconnect failure was logged */
        bool in_process;  /* inside sd_bus_process: the bus goes after it returns */
        bool failed;      /* the sequence failed: drop the bus */
        int inhibit_fd;   /* the delay inhibitor, -1 none */
        /* a shutdown being handled */
        bool shutting_down, cancel_pending;
        int group;      /* the group being stopped, K8S_SHUTDOWN_GROUPS when done */
        char **waiting; /* uids of the group's pods still stopping */
        size_t n_waiting;
        uint64_t started_ms;
};

static void update_io(struct ag_shutdown *s);
static void start_sequence(struct ag_shutdown *s);
static void next_group(struct ag_shutdown *s);

static void release_inhibitor(struct ag_shutdown *s)
{
        if (s->inhibit_fd >= 0)
                close(s->inhibit_fd);
        s->inhibit_fd = -1;
}

static void drop_bus(struct ag_shutdown *s)
{
        s->call = sd_bus_slot_unref(s->call);
        s->match = sd_bus_slot_unref(s->match);
        if (s->io != NULL)
                ag_io_free(s->io);
        s->io = NULL;
        if (s->bus_timer != NULL)
                ag_timer_disarm(s->bus_timer);
        s->bus = sd_bus_close_unref(s->bus);
        s->phase = PH_OFF;
}

/* The sequence failed: before a first success the manager stays off, as
 * the kubelet's Start() error; afterwards it tries again every second. */
static void fail(struct ag_shutdown *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct ag_shutdown *s, const char *fmt, ...)
{
        char msg[768];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        s->failed = true;
        ag_timer_disarm(s->retry);
        if (!s->in_process)
                drop_bus(s);
        if (!s->started) {
                log_error("graceful node shutdown is off: %s; a node shutdown stops the pods "
                          "without their grace period (docs/operations.md, \"Graceful node "
                          "shutdown\")",
                          msg);
                return;
        }
        if (!s->logged_down)
                log_warning("graceful node shutdown: %s; reconnecting every %d ms", msg,
                            RECONNECT_MS);
        else
                log_v(2, "graceful node shutdown: %s", msg);
        s->logged_down = true;
        ag_timer_arm(s->retry, RECONNECT_MS);
}

static const char *reply_error(sd_bus_message *m, char *buf, size_t size)
{
        const sd_bus_error *e = sd_bus_message_get_error(m);
        if (e == NULL)
                return NULL;
        snprintf(buf, size, "%s: %s", e->name ? e->name : "error", e->message ? e->message : "");
        return buf;
}

/* A reply to the call in flight: true when it is no error; else the
 * sequence fails with what the call was for and logind's error. */
static bool reply_ok(struct ag_shutdown *s, sd_bus_message *m, const char *what)
{
        s->call = sd_bus_slot_unref(s->call);
        char buf[512];
        if (reply_error(m, buf, sizeof(buf)) == NULL)
                return true;
        fail(s, "%s: %s", what, buf);
        return false;
}

/* Sends a method call (the one in flight: s->call) and moves to phase. */
static void call(struct ag_shutdown *s, enum phase phase, const char *dest, const char *path,
                 const char *iface, const char *method, sd_bus_message_handler_t cb,
                 const char *types, ...)
{
        s->call = sd_bus_slot_unref(s->call);
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r = sd_bus_message_new_method_call(s->bus, &m, dest, path, iface, method);
        if (r >= 0) {
                va_list ap;
                va_start(ap, types);
                r = sd_bus_message_appendv(m, types, ap);
                va_end(ap);
        }
        if (r >= 0)
                r = sd_bus_call_async(s->bus, &s->call, m, cb, s, 0);
        if (r < 0) {
                fail(s, "%s.%s: %s", iface, method, strerror(-r));
                return;
        }
        s->phase = phase;
        update_io(s);
}

/* ---- the shutdown itself ---- */

static void clear_waiting(struct ag_shutdown *s)
{
        for (size_t i = 0; i < s->n_waiting; i++)
                free(s->waiting[i]);
        free(s->waiting);
        s->waiting = NULL;
        s->n_waiting = 0;
}

static void node_event(struct ag_shutdown *s, const char *message)
{
        struct ag_event_object node = {.kind = "Node", .name = s->node_name, .uid = s->node_name};
        if (s->cfg.events != NULL)
                ag_events_record(s->cfg.events, &node, "Normal", "NodeShutdown", message);
}

static void set_shutting_down(struct ag_shutdown *s, bool on)
{
        s->shutting_down = on;
        ag_pods_set_shutting_down(s->cfg.pods, on);
        if (s->cfg.shutting_down != NULL)
                s->cfg.shutting_down(on, s->cfg.data);
}

static void take_inhibitor(struct ag_shutdown *s);

static void shutdown_done(struct ag_shutdown *s)
{
        ag_timer_disarm(s->group_timer);
        clear_waiting(s);
        s->group = K8S_SHUTDOWN_GROUPS;
        release_inhibitor(s);
        log_info("graceful node shutdown: pods stopped in %llu ms, inhibitor released: the node "
                 "will shut down shortly",
                 (unsigned long long)(ag_now_ms() - s->started_ms));
        if (s->cancel_pending) {
                /* The cancellation that came while the pods were stopping,
                 * acted on now (the kubelet handles it after its shutdown
                 * processing, and records its event then). */
                s->cancel_pending = false;
                node_event(s, "Shutdown manager detected shutdown cancellation");
                set_shutting_down(s, false);
                take_inhibitor(s);
        }
}

static void next_group(struct ag_shutdown *s)
{
        ag_timer_disarm(s->group_timer);
        clear_waiting(s);
        while (++s->group < K8S_SHUTDOWN_GROUPS) {
                struct ag_pod_ref *refs = NULL;
                size_t n = 0;
                if (ag_pods_active(s->cfg.pods, &refs, &n) < 0) {
                        log_error("graceful node shutdown: out of memory listing the pods");
                        continue;
                }
                int64_t group_s = s->plan.group_s[s->group];
                int64_t *grace = calloc(n + 1, sizeof(*grace));
                s->waiting = calloc(n + 1, sizeof(*s->waiting));
                /* Copies first: stopping a pod changes what is active. */
                for (size_t i = 0; i < n && s->waiting != NULL && grace != NULL; i++) {
                        if (k8s_shutdown_group(refs[i].pod) != s->group)
                                continue;
                        grace[s->n_waiting] = k8s_shutdown_grace(refs[i].pod, group_s);
                        s->waiting[s->n_waiting++] = strdup(refs[i].uid);
                }
                free(refs);
                if (s->waiting == NULL || grace == NULL)
                        log_error("graceful node shutdown: out of memory: the %s pods are not "
                                  "stopped",
                                  s->group == K8S_SHUTDOWN_CRITICAL ? "critical" : "regular");
                if (s->n_waiting == 0) {
                        free(grace);
                        clear_waiting(s); /* the list is made for each group */
                        continue;         /* no pods in this group: no wait either */
                }
                log_info("graceful node shutdown: stopping %zu %s pod(s) (%llds)", s->n_waiting,
                         s->group == K8S_SHUTDOWN_CRITICAL ? "critical" : "regular",
                         (long long)group_s);
                ag_timer_arm(s->group_timer, (uint64_t)group_s * 1000);
                for (size_t i = 0; i < s->n_waiting; i++) {
                        const char *uid = s->waiting[i];
                        if (uid == NULL || ag_pods_terminate_by_kubelet(
                                               s->cfg.pods, uid, grace[i], K8S_SHUTDOWN_REASON,
                                               K8S_SHUTDOWN_MESSAGE, false) < 0)
                                log_v(1, "graceful node shutdown: pod %s is no longer active",
                                      uid ? uid : "?");
                }
                free(grace);
                return;
        }
        shutdown_done(s);
}

static void on_pod_finished(const char *uid, void *data)
{
        struct ag_shutdown *s = data;
        if (!s->shutting_down || s->group < 0 || s->group >= K8S_SHUTDOWN_GROUPS)
                return;
        bool left = false;
        for (size_t i = 0; i < s->n_waiting; i++) {
                if (s->waiting[i] != NULL && strcmp(s->waiting[i], uid) == 0) {
                        free(s->waiting[i]);
                        s->waiting[i] = NULL;
                }
                left = left || s->waiting[i] != NULL;
        }
        if (!left && s->n_waiting > 0)
                next_group(s);
}

static void on_group_timer(struct ag_timer *t, void *data)
{
        struct ag_shutdown *s = data;
        (void)t;
        log_v(1, "graceful node shutdown: the %s pods' time (%llds) is up",
              s->group == K8S_SHUTDOWN_CRITICAL ? "critical" : "regular",
              (long long)s->plan.group_s[s->group]);
        next_group(s);
}

static void begin_shutdown(struct ag_shutdown *s)
{
        if (s->shutting_down && s->group < K8S_SHUTDOWN_GROUPS) {
                /* Being handled. A cancellation that came meanwhile is
                 * overtaken: the node goes on shutting down (the kubelet
                 * handles the two signals in order after its processing,
                 * and ends shutting down). */
                if (s->cancel_pending) {
                        s->cancel_pending = false;
                        log_info("graceful node shutdown: logind announced a shutdown again: "
                                 "the cancellation is overtaken");
                        node_event(s, "Shutdown manager detected shutdown cancellation");
                        node_event(s, "Shutdown manager detected shutdown event");
                }
                return;
        }
        log_info("graceful node shutdown: logind announced a shutdown: stopping the pods "
                 "(regular %llds, then critical %llds)",
                 (long long)s->plan.group_s[K8S_SHUTDOWN_REGULAR],
                 (long long)s->plan.group_s[K8S_SHUTDOWN_CRITICAL]);
        node_event(s, "Shutdown manager detected shutdown event");
        s->started_ms = ag_now_ms();
        set_shutting_down(s, true);
        s->group = -1;
        next_group(s);
}

static void cancel_shutdown(struct ag_shutdown *s)
{
        if (s->shutting_down && s->group < K8S_SHUTDOWN_GROUPS) {
                /* The kubelet finishes the stopping first. */
                log_info("graceful node shutdown: logind cancelled the shutdown: acted on once "
                         "the pods are stopped");
                s->cancel_pending = true;
                return;
        }
        log_info("graceful node shutdown: logind cancelled the shutdown");
        node_event(s, "Shutdown manager detected shutdown cancellation");
        if (s->shutting_down)
                set_shutting_down(s, false);
        take_inhibitor(s);
}

/* ---- D-Bus ---- */

static int on_prepare(sd_bus_message *m, void *data, sd_bus_error *ret_error)
{
        struct ag_shutdown *s = data;
        (void)ret_error;
        int active = 0;
        int r = sd_bus_message_read(m, "b", &active);
        if (r < 0) {
                log_error("graceful node shutdown: PrepareForShutdown without a boolean: %s",
                          strerror(-r));
                return 0;
        }
        log_v(1, "graceful node shutdown: PrepareForShutdown(%s)", active ? "true" : "false");
        if (active)
                begin_shutdown(s);
        else
                cancel_shutdown(s);
        return 0;
}

static int on_inhibit(sd_bus_message *m, void *data, sd_bus_error *ret_error)
{
        struct ag_shutdown *s = data;
        (void)ret_error;
        if (!reply_ok(s, m, "logind refused the delay inhibitor (Inhibit)"))
                return 0;
        int fd = -1;
        int r = sd_bus_message_read(m, "h", &fd);
        int own = r >= 0 ? fcntl(fd, F_DUPFD_CLOEXEC, 3) : -1;
        if (own < 0) {
                fail(s, "the inhibitor's fd: %s", strerror(r < 0 ? -r : errno));
                return 0;
        }
        release_inhibitor(s); /* an earlier one (reconnected, or cancelled) */
        s->inhibit_fd = own;
        s->phase = PH_WATCHING;
        if (!s->started || s->logged_down)
                log_info("graceful node shutdown: holding a logind delay inhibitor, watching "
                         "PrepareForShutdown (shutdownGracePeriod %llds, "
                         "shutdownGracePeriodCriticalPods %llds)",
                         (long long)s->plan.total_s,
                         (long long)s->plan.group_s[K8S_SHUTDOWN_CRITICAL]);
        s->started = true;
        s->logged_down = false;
        return 0;
}

static void take_inhibitor(struct ag_shutdown *s)
{
        if (s->bus == NULL)
                return;
        call(s, PH_INHIBIT, LOGIND, LOGIND_PATH, LOGIND_MGR, "Inhibit", on_inhibit, "ssss",
             "shutdown", "cubelet", "cubelet needs time to handle node shutdown", "delay");
}

static int on_match(sd_bus_message *m, void *data, sd_bus_error *ret_error)
{
        struct ag_shutdown *s = data;
        (void)ret_error;
        char buf[512];
        if (reply_error(m, buf, sizeof(buf)) != NULL)
                fail(s, "cannot watch PrepareForShutdown (AddMatch): %s", buf);
        return 0;
}

static void watch_and_inhibit(struct ag_shutdown *s)
{
        s->match = sd_bus_slot_unref(s->match);
        int r = sd_bus_match_signal_async(s->bus, &s->match, LOGIND, LOGIND_PATH, LOGIND_MGR,
                                          "PrepareForShutdown", on_prepare, on_match, s);
        if (r < 0) {
                fail(s, "cannot watch PrepareForShutdown: %s", strerror(-r));
                return;
        }
        take_inhibitor(s);
}

static int on_delay(sd_bus_message *m, void *data, sd_bus_error *ret_error);

static void read_delay(struct ag_shutdown *s, enum phase phase)
{
        call(s, phase, LOGIND, LOGIND_PATH, "org.freedesktop.DBus.Properties", "Get", on_delay,
             "ss", LOGIND_MGR, "InhibitDelayMaxUSec");
}

static int on_reload(sd_bus_message *m, void *data, sd_bus_error *ret_error)
{
        struct ag_shutdown *s = data;
        (void)ret_error;
        if (!reply_ok(s, m,
                      "cannot make logind reload its configuration (systemd1 KillUnit "
                      "systemd-logind.service SIGHUP)"))
                return 0;
        ag_timer_arm(s->retry, RELOAD_WAIT_MS); /* then read it again */
        return 0;
}

/* The kubelet's OverrideInhibitDelay: a logind.conf drop-in with
 * InhibitDelayMaxSec, then SIGHUP to systemd-logind through systemd. */
static void raise_delay(struct ag_shutdown *s, uint64_t have_us)
{
        char path[4200], text[256];
        struct cb_error err = {0};
        snprintf(path, sizeof(path), "%s/" DROPIN_NAME, s->conf_dir);
        int n = snprintf(text, sizeof(text),
                         "# cubelet logind override (shutdownGracePeriod)\n[Login]\n"
                         "InhibitDelayMaxSec=%lld\n",
                         (long long)s->plan.total_s);
        log_info("graceful node shutdown: logind's InhibitDelayMaxUSec is %llus, below "
                 "shutdownGracePeriod %llds: writing %s and reloading logind",
                 (unsigned long long)(have_us / 1000000), (long long)s->plan.total_s, path);
        /* A few bytes into the page cache (no fsync): logind reads it now,
         * and the agent writes it again at every start. */
        if (cb_mkdir_p(s->conf_dir, 0755, 0755, &err) < 0 ||
            cb_write_file_replace(path, text, (size_t)n, 0644, &err) < 0) {
                fail(s, "cannot raise logind's InhibitDelayMaxSec to %llds: %s",
                     (long long)s->plan.total_s, err.msg);
                return;
        }
        call(s, PH_RELOAD, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
             "org.freedesktop.systemd1.Manager", "KillUnit", on_reload, "ssi",
             "systemd-logind.service", "all", 1);
}

static int on_delay(sd_bus_message *m, void *data, sd_bus_error *ret_error)
{
        struct ag_shutdown *s = data;
        (void)ret_error;
        if (!reply_ok(s, m,
                      "cannot read logind's InhibitDelayMaxUSec (is systemd-logind running?)"))
                return 0;
        uint64_t us = 0;
        int r = sd_bus_message_read(m, "v", "t", &us);
        if (r < 0) {
                fail(s, "InhibitDelayMaxUSec from logind is not a uint64: %s", strerror(-r));
                return 0;
        }
        uint64_t want_us = (uint64_t)s->plan.total_s * 1000000;
        log_v(1, "graceful node shutdown: logind's InhibitDelayMaxUSec is %llu",
              (unsigned long long)us);
        if (us >= want_us) {
                watch_and_inhibit(s);
                return 0;
        }
        if (s->phase == PH_REREAD) {
                fail(s,
                     "logind's InhibitDelayMaxSec is still %llus after the override, below "
                     "shutdownGracePeriod %llds (a later logind.conf drop-in than " DROPIN_NAME
                     " may set it)",
                     (unsigned long long)(us / 1000000), (long long)s->plan.total_s);
                return 0;
        }
        raise_delay(s, us);
        return 0;
}

static void process(struct ag_shutdown *s)
{
        if (s->bus == NULL)
                return;
        int r;
        s->in_process = true;
        while ((r = sd_bus_process(s->bus, NULL)) > 0 && !s->failed)
                ;
        s->in_process = false;
        if (s->failed) {
                drop_bus(s); /* a callback gave up on it */
                return;
        }
        if (r < 0) {
                fail(s, "the system bus connection ended: %s", strerror(-r));
                return;
        }
        update_io(s);
}

static void on_bus_io(struct ag_io *io, int fd, uint32_t events, void *data)
{
        (void)io;
        (void)fd;
        (void)events;
        process(data);
}

static void on_bus_timer(struct ag_timer *t, void *data)
{
        (void)t;
        process(data);
}

static void update_io(struct ag_shutdown *s)
{
        if (s->bus == NULL || s->io == NULL)
                return;
        int ev = sd_bus_get_events(s->bus);
        if (ev < 0) {
                fail(s, "the system bus connection ended: %s", strerror(-ev));
                return;
        }
        uint32_t want = ((ev & POLLIN) ? EPOLLIN : 0) | ((ev & POLLOUT) ? EPOLLOUT : 0);
        struct cb_error err = {0};
        if (ag_io_set_events(s->io, want, &err) < 0)
                log_warning("graceful node shutdown: %s", err.msg);
        uint64_t until = 0;
        if (sd_bus_get_timeout(s->bus, &until) < 0 || until == UINT64_MAX) {
                ag_timer_disarm(s->bus_timer);
                return;
        }
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t now = (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
        ag_timer_arm(s->bus_timer, until > now ? (until - now + 999) / 1000 : 0);
}

static void start_sequence(struct ag_shutdown *s)
{
        drop_bus(s);
        s->failed = false;
        const char *addr = getenv("DBUS_SYSTEM_BUS_ADDRESS");
        int r = sd_bus_open_system(&s->bus);
        if (r < 0) {
                s->bus = NULL;
                fail(s, "cannot connect to the system bus (%s): %s",
                     addr ? addr : "unix:path=/run/dbus/system_bus_socket", strerror(-r));
                return;
        }
        struct cb_error err = {0};
        int fd = sd_bus_get_fd(s->bus);
        s->io = fd >= 0 ? ag_io_new(s->loop, fd, EPOLLIN, on_bus_io, s, &err) : NULL;
        if (s->io == NULL) {
                fail(s, "the system bus: %s", fd < 0 ? strerror(-fd) : err.msg);
                return;
        }
        read_delay(s, PH_DELAY);
}

static void on_retry(struct ag_timer *t, void *data)
{
        struct ag_shutdown *s = data;
        (void)t;
        if (s->phase == PH_RELOAD && s->bus != NULL)
                read_delay(s, PH_REREAD);
        else
                start_sequence(s);
}

int ag_shutdown_new(struct ag_loop *loop, const struct ag_shutdown_config *cfg,
                    struct ag_shutdown **ret, struct cb_error *err)
{
        *ret = NULL;
        struct k8s_shutdown_plan plan;
        k8s_shutdown_plan(cfg->grace_ms, cfg->critical_ms, &plan);
        if (!plan.enabled) {
                log_v(1, "no shutdownGracePeriod: a node shutdown stops the pods without their "
                         "grace period");
                return 0;
        }
        struct ag_shutdown *s = calloc(1, sizeof(*s));
        if (s == NULL)
                return cb_error_set(err, ENOMEM, "graceful node shutdown");
        s->loop = loop;
        s->cfg = *cfg;
        s->plan = plan;
        s->inhibit_fd = -1;
        s->group = K8S_SHUTDOWN_GROUPS;
        s->conf_dir = strdup(cfg->logind_conf_dir ? cfg->logind_conf_dir : AG_LOGIND_CONF_DIR);
        s->node_name = strdup(cfg->node_name);
        s->bus_timer = ag_timer_new(loop, on_bus_timer, s, err);
        s->retry = s->bus_timer ? ag_timer_new(loop, on_retry, s, err) : NULL;
        s->group_timer = s->retry ? ag_timer_new(loop, on_group_timer, s, err) : NULL;
        if (s->conf_dir == NULL || s->node_name == NULL || s->group_timer == NULL) {
                ag_shutdown_free(s);
                return err->msg[0] ? -1 : cb_error_set(err, ENOMEM, "graceful node shutdown");
        }
        ag_pods_set_finished_hook(cfg->pods, on_pod_finished, s);
        start_sequence(s);
        *ret = s;
        return 0;
}

void ag_shutdown_free(struct ag_shutdown *s)
{
        if (s == NULL)
                return;
        if (s->cfg.pods != NULL)
                ag_pods_set_finished_hook(s->cfg.pods, NULL, NULL);
        drop_bus(s);
        release_inhibitor(s);
        clear_waiting(s);
        if (s->bus_timer)
                ag_timer_free(s->bus_timer);
        if (s->retry)
                ag_timer_free(s->retry);
        if (s->group_timer)
                ag_timer_free(s->group_timer);
        free(s->conf_dir);
        free(s->node_name);
        free(s);
}

bool ag_shutdown_in_progress(const struct ag_shutdown *s)
{
        return s != NULL && s->shutting_down;
}
