/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cgroupfs driver: pod and container cgroups through libcgroup 2.0.2.
 *
 * libcgroup finds the hierarchies' mount points (cgroup_init), updates
 * limits in place, attaches on v2 and deletes recursively, on v1 and v2
 * alike. The places that touch files directly, because libcgroup 2.0.2
 * cannot do the job, or not at the cost a pod start can pay:
 *   - creation (create_in): cgroup_create_cgroup reads the whole of
 *     /proc/mounts once per controller, a cost that grows with the node's
 *     mount table; the directories and limit files are made here, at the
 *     mount points libcgroup found;
 *   - v2 cgroup.subtree_control of the ancestors (enable_v2_controllers):
 *     on v2, libcgroup 2.0.2 enables the controllers in the direct parent
 *     only, and a path more than one level below an existing cgroup
 *     ("kubepods/burstable/pod<uid>" on a fresh node) fails with ENOENT
 *     (checked in the VM of tests/integration/cgroupv2_qemu.sh). So
 *     cg_create creates level by level and makes sure
 *     every ancestor, root included, hands cpu, memory and pids down;
 *   - v1 attach writes cgroup.procs: cgroup_attach_task_pid writes the v1
 *     "tasks" file, which moves one thread, not the process;
 *   - reading (pids, children, oom, stats): libcgroup's cgroup_get_cgroup
 *     reads every file of every controller; a named file is read directly
 *     and parsed by the pure parsers in parse.c;
 *   - v2 cgroup.kill, which libcgroup does not know.
 */
#include "cgroups/cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libcgroup.h>
#include <linux/sched.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lib/cleanup.h"
#include "lib/file.h"

#define CG_PATH_MAX  512
#define CG_DIR_MAX   4096
#define CG_FILE_MAX  (1024 * 1024) /* the largest interface file read (cgroup.procs) */
#define CG_MAX_DEPTH 32
#define CG_MAX_FILES 16
#define CG_MAX_HIERS 5

/* Controllers a pod or container cgroup is created in. cpuacct exists on
 * v1 only (v2 reports usage in cpu.stat). */
static const char *const v1_controllers[] = {"cpu", "cpuacct", "memory", "pids", "devices"};
static const char *const v2_controllers[] = {"cpu", "memory", "pids"};

/* A hierarchy the needed controllers live in: one on v2, up to four on v1
 * (fewer when controllers are co-mounted, e.g. "cpu,cpuacct"). */
struct hier {
        const char *controller; /* a controller mounted there */
        char *mount;
};

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int init_rc;
static struct cb_error init_err;
static enum cg_mode mode;
static struct hier hiers[CG_MAX_HIERS];
static size_t n_hiers;
static char *mounts[CB_ARRAY_SIZE(
    v1_controllers)]; /* mount point per needed controller, NULL when not mounted */

/* libcgroup logs through a callback; library code never prints, so the
 * last warning or error is kept and appended to the error message. */
static __thread char lcg_log[256];

__attribute__((format(printf, 3, 0))) static void lcg_logger(void *userdata, int level,
                                                             const char *fmt, va_list ap)
{
        if (level > CGROUP_LOG_WARNING)
                return;
        vsnprintf(lcg_log, sizeof(lcg_log), fmt, ap);
        lcg_log[strcspn(lcg_log, "\n")] = '\0';
}

static const char *const *controllers(size_t *n)
{
        if (mode == CG_MODE_UNIFIED) {
                *n = CB_ARRAY_SIZE(v2_controllers);
                return v2_controllers;
        }
        *n = CB_ARRAY_SIZE(v1_controllers);
        return v1_controllers;
}

/* Fills err from a libcgroup return code. */
static int lcg_error(struct cb_error *err, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int lcg_error(struct cb_error *err, int rc, const char *fmt, ...)
{
        char what[CB_ERROR_MSG_MAX / 2];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(what, sizeof(what), fmt, ap);
        va_end(ap);
        int e = rc == ECGOTHER ? cgroup_get_last_errno() : 0;
        return cb_error_set(err, e, "%s: libcgroup: %s%s%s%s", what, cgroup_strerror(rc),
                            lcg_log[0] != '\0' ? " (" : "", lcg_log, lcg_log[0] != '\0' ? ")" : "");
}

static void do_init(void)
{
        if (cg_detect_mode(&mode, &init_err) < 0) {
                init_rc = -1;
                return;
        }
        cgroup_set_logger(lcg_logger, CGROUP_LOG_WARNING, NULL);
        lcg_log[0] = '\0';
        int rc = cgroup_init();
        if (rc != 0) {
                init_rc = lcg_error(&init_err, rc,
                                    "cannot initialise libcgroup (cgroup mode %s); are the "
                                    "cgroup file systems mounted under /sys/fs/cgroup?",
                                    cg_mode_name(mode));
                return;
        }
        size_t n;
        const char *const *ctrl = controllers(&n);
        for (size_t i = 0; i < n; i++) {
                char *mp = NULL;
                if (cgroup_get_subsys_mount_point(ctrl[i], &mp) != 0 || mp == NULL)
                        continue;
                mounts[i] = mp;
                size_t h = 0;
                while (h < n_hiers && strcmp(hiers[h].mount, mp) != 0)
                        h++;
                if (h == n_hiers && n_hiers < CG_MAX_HIERS) {
                        hiers[n_hiers].controller = ctrl[i];
                        hiers[n_hiers].mount = mp;
                        n_hiers++;
                }
        }
        init_rc = 0;
}

int cg_init(struct cb_error *err)
{
        pthread_once(&init_once, do_init);
        if (init_rc < 0) {
                if (err != NULL)
                        *err = init_err;
                return -1;
        }
        return 0;
}

enum cg_mode cg_current_mode(void)
{
        return mode;
}

/* Every needed controller must be mounted before anything is created, so
 * a cgroup never exists in some hierarchies only. */
static int check_mounted(struct cb_error *err)
{
        size_t n;
        const char *const *ctrl = controllers(&n);
        for (size_t i = 0; i < n; i++)
                if (mounts[i] == NULL)
                        return cb_error_set(
                            err, ENOENT, "the %s controller is not available (cgroup mode %s): %s",
                            ctrl[i], cg_mode_name(mode),
                            mode == CG_MODE_UNIFIED
                                ? "it is missing from cgroup.controllers of the "
                                  "cgroup2 root"
                                : "mount its v1 hierarchy under /sys/fs/cgroup");
        return 0;
}

/* Normalises a cgroup path: strips leading and trailing '/', refuses the
 * root, empty and "."/".." components, and too long paths. */
static int norm_path(const char *in, char *out, struct cb_error *err)
{
        if (in == NULL)
                return cb_error_set(err, EINVAL, "cgroup path is NULL");
        while (*in == '/')
                in++;
        size_t len = strlen(in);
        while (len > 0 && in[len - 1] == '/')
                len--;
        if (len == 0)
                return cb_error_set(err, EINVAL,
                                    "cgroup path \"%s\" names the root cgroup; give a path "
                                    "below it such as \"kubepods/pod<uid>\"",
                                    in);
        if (len >= CG_PATH_MAX)
                return cb_error_set(err, ENAMETOOLONG, "cgroup path of %zu bytes is longer than %d",
                                    len, CG_PATH_MAX - 1);
        memcpy(out, in, len);
        out[len] = '\0';
        for (const char *c = out; *c != '\0';) {
                size_t clen = strcspn(c, "/");
                if (clen == 0 || (clen == 1 && c[0] == '.') ||
                    (clen == 2 && c[0] == '.' && c[1] == '.'))
                        return cb_error_set(err, EINVAL,
                                            "cgroup path \"%s\" has an empty, \".\" or \"..\" "
                                            "component",
                                            out);
                c += clen;
                if (*c == '/')
                        c++;
        }
        return 0;
}

/* "<mount>/<path>" (path may be "" for the root). */
static int join(char *buf, size_t size, const char *mount, const char *path, struct cb_error *err)
{
        int n = snprintf(buf, size, "%s%s%s", mount, path[0] != '\0' ? "/" : "", path);
        if (n < 0 || (size_t)n >= size)
                return cb_error_set(err, ENAMETOOLONG, "cgroup directory %s/%s is too long", mount,
                                    path);
        return n;
}

static int is_dir(const char *p)
{
        struct stat st;
        return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int write_str(const char *file, const char *value, struct cb_error *err)
{
        _cleanup_close_ int fd = open(file, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return cb_error_set(err, errno, "cannot open %s", file);
        size_t len = strlen(value);
        ssize_t n;
        do
                n = write(fd, value, len);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return cb_error_set(err, errno, "cannot write \"%s\" to %s", value, file);
        if ((size_t)n != len)
                return cb_error_set(err, EIO, "short write of \"%s\" to %s", value, file);
        return 0;
}

/* Reads <dir>/<name>. */
static int read_in(const char *dir, const char *name, char **ret, struct cb_error *err)
{
        char file[CG_DIR_MAX];
        if ((size_t)snprintf(file, sizeof(file), "%s/%s", dir, name) >= sizeof(file))
                return cb_error_set(err, ENAMETOOLONG, "%s/%s is too long", dir, name);
        return cb_read_file(file, CG_FILE_MAX, ret, NULL, err);
}

/* True when the space-separated list in buf contains word. */
static int has_word(const char *buf, const char *word)
{
        size_t wlen = strlen(word);
        for (const char *p = buf; *p != '\0';) {
                p += strspn(p, " \n");
                size_t len = strcspn(p, " \n");
                if (len == wlen && strncmp(p, word, len) == 0)
                        return 1;
                p += len;
        }
        return 0;
}

/*
 * v2: makes cpu, memory and pids available to the children of dir by
 * writing "+<controller>" to dir/cgroup.subtree_control, for each one not
 * enabled yet. The kernel refuses (EBUSY) when dir holds processes (no
 * internal processes): the error says so.
 */
static int enable_v2_controllers(const char *dir, struct cb_error *err)
{
        _cleanup_free_ char *avail = NULL, *enabled = NULL;
        if (read_in(dir, "cgroup.subtree_control", &enabled, err) < 0 ||
            read_in(dir, "cgroup.controllers", &avail, err) < 0)
                return -1;
        for (size_t i = 0; i < CB_ARRAY_SIZE(v2_controllers); i++) {
                const char *c = v2_controllers[i];
                if (has_word(enabled, c))
                        continue;
                if (!has_word(avail, c))
                        return cb_error_set(err, ENOENT,
                                            "the %s controller is not in %s/cgroup.controllers; "
                                            "enable it in the parent's cgroup.subtree_control "
                                            "(systemd: Delegate=yes)",
                                            c, dir);
                char file[CG_DIR_MAX], value[32];
                if ((size_t)snprintf(file, sizeof(file), "%s/cgroup.subtree_control", dir) >=
                    sizeof(file))
                        return cb_error_set(err, ENAMETOOLONG, "%s is too long", dir);
                snprintf(value, sizeof(value), "+%s", c);
                struct cb_error e;
                if (write_str(file, value, &e) < 0) {
                        if (err != NULL)
                                *err = e;
                        if (e.code == EBUSY)
                                return cb_error_prefix(err,
                                                       "%s holds processes, and cgroup v2 "
                                                       "enables controllers only above "
                                                       "leaves; move them into a leaf cgroup",
                                                       dir);
                        return -1;
                }
        }
        return 0;
}

/* Builds a libcgroup cgroup for path with every needed controller and the
 * given files (controller = the file name up to the first '.'). */
static struct cgroup *lcg_build(const char *path, const struct cg_file *files, size_t nfiles,
                                struct cb_error *err)
{
        lcg_log[0] = '\0';
        struct cgroup *cg = cgroup_new_cgroup(path);
        if (cg == NULL) {
                cb_error_set(err, ENOMEM, "cannot allocate a libcgroup cgroup for %s", path);
                return NULL;
        }
        size_t n;
        const char *const *ctrl = controllers(&n);
        struct cgroup_controller *cc[CB_ARRAY_SIZE(v1_controllers)] = {0};
        for (size_t i = 0; i < n; i++) {
                cc[i] = cgroup_add_controller(cg, ctrl[i]);
                if (cc[i] == NULL) {
                        cgroup_free(&cg);
                        cb_error_set(err, ENOMEM, "cannot add controller %s to %s", ctrl[i], path);
                        return NULL;
                }
        }
        for (size_t f = 0; f < nfiles; f++) {
                size_t plen = strcspn(files[f].name, ".");
                size_t i = 0;
                while (i < n &&
                       !(strlen(ctrl[i]) == plen && strncmp(ctrl[i], files[f].name, plen) == 0))
                        i++;
                if (i == n) {
                        cgroup_free(&cg);
                        cb_error_set(err, EINVAL, "%s: no controller for file %s", path,
                                     files[f].name);
                        return NULL;
                }
                int rc = cgroup_add_value_string(cc[i], files[f].name, files[f].value);
                if (rc != 0) {
                        cgroup_free(&cg);
                        lcg_error(err, rc, "%s: cannot set %s to \"%s\"", path, files[f].name,
                                  files[f].value);
                        return NULL;
                }
        }
        return cg;
}

/* The controller index (in controllers()) a file belongs to: its name up to
 * the first '.'; -1 when none matches or the name could leave the cgroup
 * directory. */
static int file_controller(const char *name)
{
        if (strchr(name, '/') != NULL)
                return -1;
        size_t n, plen = strcspn(name, ".");
        const char *const *ctrl = controllers(&n);
        for (size_t i = 0; i < n; i++)
                if (strlen(ctrl[i]) == plen && strncmp(ctrl[i], name, plen) == 0)
                        return (int)i;
        return -1;
}

/* mkdir of dir and of its missing parents below the first skip bytes (the
 * hierarchy's mount point); an existing directory is fine. */
static int mkdir_below(char *dir, size_t skip, struct cb_error *err)
{
        for (char *c = dir + skip + 1;; c++) {
                if (*c != '/' && *c != '\0')
                        continue;
                char saved = *c;
                *c = '\0';
                if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
                        cb_error_set(err, errno, "cannot create cgroup directory %s", dir);
                        *c = saved;
                        return -1;
                }
                *c = saved;
                if (saved == '\0')
                        return 0;
        }
}

/*
 * Creates <mount>/<p> (with its parents) in every hierarchy, then writes
 * each file in the hierarchy of its controller, controller by controller
 * and in the given order within one, as libcgroup's cgroup_create_cgroup
 * does. Made here rather than through libcgroup: libcgroup 2.0.2 reads and
 * parses the whole of /proc/mounts once per controller of every create
 * (5 reads on v1), and the node's mount table grows with its pods (the
 * namespace pins): 0.054 ms a read with 22 mounts, 0.27 ms with 353. The
 * mount points are the ones libcgroup found at cg_init.
 */
static int create_in(const char *p, const struct cg_file *files, size_t nfiles,
                     struct cb_error *err)
{
        int idx[CG_MAX_FILES];
        if (nfiles > CG_MAX_FILES)
                return cb_error_set(err, EINVAL, "%s: %zu files, at most %d", p, nfiles,
                                    CG_MAX_FILES);
        for (size_t f = 0; f < nfiles; f++) {
                idx[f] = file_controller(files[f].name);
                if (idx[f] < 0)
                        return cb_error_set(err, EINVAL, "%s: no controller for file %s", p,
                                            files[f].name);
        }
        char dir[CG_DIR_MAX];
        for (size_t h = 0; h < n_hiers; h++) {
                if (join(dir, sizeof(dir), hiers[h].mount, p, err) < 0 ||
                    mkdir_below(dir, strlen(hiers[h].mount), err) < 0)
                        return -1;
        }
        size_t n;
        controllers(&n);
        for (size_t i = 0; i < n; i++)
                for (size_t f = 0; f < nfiles; f++) {
                        if (idx[f] != (int)i)
                                continue;
                        char file[CG_DIR_MAX];
                        if (join(dir, sizeof(dir), mounts[i], p, err) < 0)
                                return -1;
                        if ((size_t)snprintf(file, sizeof(file), "%s/%s", dir, files[f].name) >=
                            sizeof(file))
                                return cb_error_set(err, ENAMETOOLONG, "%s/%s is too long", dir,
                                                    files[f].name);
                        if (write_str(file, files[f].value, err) < 0)
                                return cb_error_prefix(err, "cannot set %s to \"%s\" in cgroup %s",
                                                       files[f].name, files[f].value, p);
                }
        return 0;
}

static size_t render(const struct cg_limits *limits, struct cg_file *files)
{
        if (limits == NULL)
                return 0;
        return cg_render_files(limits, cg_mode_version(mode), files, CG_MAX_FILES);
}

int cg_create(const char *path, const struct cg_limits *limits, struct cb_error *err)
{
        char p[CG_PATH_MAX];
        if (cg_init(err) < 0 || check_mounted(err) < 0 || norm_path(path, p, err) < 0)
                return -1;
        if (mode == CG_MODE_UNIFIED) {
                /* Level by level: each ancestor exists and hands cpu, memory
                 * and pids down before its child is created. */
                char dir[CG_DIR_MAX];
                if (join(dir, sizeof(dir), hiers[0].mount, "", err) < 0 ||
                    enable_v2_controllers(dir, err) < 0)
                        return -1;
                for (char *slash = strchr(p, '/'); slash != NULL; slash = strchr(slash + 1, '/')) {
                        *slash = '\0';
                        int r = create_in(p, NULL, 0, err);
                        if (r == 0 && join(dir, sizeof(dir), hiers[0].mount, p, err) < 0)
                                r = -1;
                        if (r == 0)
                                r = enable_v2_controllers(dir, err);
                        *slash = '/';
                        if (r < 0)
                                return -1;
                }
        }
        struct cg_file files[CG_MAX_FILES];
        size_t n = render(limits, files);
        return create_in(p, files, n, err);
}

int cg_update(const char *path, const struct cg_limits *limits, struct cb_error *err)
{
        char p[CG_PATH_MAX];
        if (cg_init(err) < 0 || check_mounted(err) < 0 || norm_path(path, p, err) < 0)
                return -1;
        bool exists;
        if (cg_exists(p, &exists, err) < 0)
                return -1;
        if (!exists)
                return cb_error_set(err, ENOENT, "cannot update cgroup %s: it does not exist", p);
        struct cg_file files[CG_MAX_FILES];
        size_t n = render(limits, files);
        if (n == 0)
                return 0;
        struct cgroup *cg = lcg_build(p, files, n, err);
        if (cg == NULL)
                return -1;
        lcg_log[0] = '\0';
        int rc = cgroup_modify_cgroup(cg);
        cgroup_free(&cg);
        if (rc != 0)
                return lcg_error(err, rc, "cannot update cgroup %s", p);
        return 0;
}

int cg_attach(const char *path, pid_t pid, struct cb_error *err)
{
        char p[CG_PATH_MAX];
        if (cg_init(err) < 0 || check_mounted(err) < 0 || norm_path(path, p, err) < 0)
                return -1;
        if (pid <= 0)
                return cb_error_set(err, EINVAL, "cannot attach pid %d to %s: not a process",
                                    (int)pid, p);
        if (pid == getpid())
                return cb_error_set(err, EPERM,
                                    "refusing to attach the agent's own pid %d to %s: the "
                                    "agent never lives in a cgroup it manages",
                                    (int)pid, p);
        if (mode == CG_MODE_UNIFIED) {
                struct cgroup *cg = lcg_build(p, NULL, 0, err);
                if (cg == NULL)
                        return -1;
                lcg_log[0] = '\0';
                int rc = cgroup_attach_task_pid(cg, pid);
                cgroup_free(&cg);
                if (rc != 0)
                        return lcg_error(err, rc, "cannot attach pid %d to cgroup %s", (int)pid, p);
                return 0;
        }
        /* v1: cgroup.procs moves every thread of the process at once */
        char file[CG_DIR_MAX], value[16];
        snprintf(value, sizeof(value), "%d", (int)pid);
        for (size_t h = 0; h < n_hiers; h++) {
                if (join(file, sizeof(file), hiers[h].mount, p, err) < 0)
                        return -1;
                if (!is_dir(file)) {
                        /* A cgroup made by an agent from before the devices
                         * controller joined (an upgrade under running
                         * containers): the others still apply. */
                        if (strcmp(hiers[h].controller, "devices") == 0)
                                continue;
                        return cb_error_set(err, ENOENT,
                                            "cannot attach pid %d to %s: %s does not exist; "
                                            "create the cgroup first",
                                            (int)pid, p, file);
                }
                size_t len = strlen(file);
                if ((size_t)snprintf(file + len, sizeof(file) - len, "/cgroup.procs") >=
                    sizeof(file) - len)
                        return cb_error_set(err, ENAMETOOLONG, "%s is too long", file);
                if (write_str(file, value, err) < 0)
                        return cb_error_prefix(err, "cannot attach pid %d to cgroup %s", (int)pid,
                                               p);
        }
        return 0;
}

int cg_dir(const char *path, const char *controller, char *buf, size_t size, struct cb_error *err)
{
        char p[CG_PATH_MAX];
        if (cg_init(err) < 0 || norm_path(path, p, err) < 0)
                return -1;
        size_t n;
        const char *const *ctrl = controllers(&n);
        for (size_t i = 0; i < n; i++)
                if (strcmp(ctrl[i], controller) == 0 && mounts[i] != NULL)
                        return join(buf, size, mounts[i], p, err);
        return cb_error_set(err, ENOENT, "the %s controller is not mounted (cgroup mode %s)",
                            controller, cg_mode_name(mode));
}

static const char *mount_of(const char *controller)
{
        size_t n;
        const char *const *ctrl = controllers(&n);
        for (size_t i = 0; i < n; i++)
                if (strcmp(ctrl[i], controller) == 0)
                        return mounts[i];
        return NULL;
}

int cg_root_dir(const char *controller, char *buf, size_t size, struct cb_error *err)
{
        if (cg_init(err) < 0)
                return -1;
        const char *m = mount_of(controller);
        if (m == NULL)
                return cb_error_set(err, ENOENT,
                                    "the %s controller is not mounted (cgroup mode %s)", controller,
                                    cg_mode_name(mode));
        int n = snprintf(buf, size, "%s", m);
        if (n < 0 || (size_t)n >= size)
                return cb_error_set(err, ENAMETOOLONG, "cgroup mount %s is too long", m);
        return n;
}

int cg_exists(const char *path, bool *ret, struct cb_error *err)
{
        char dir[CG_DIR_MAX];
        if (cg_dir(path, "memory", dir, sizeof(dir), err) < 0)
                return -1;
        *ret = is_dir(dir);
        return 0;
}

/*
 * Walks the cgroup directory dir and every cgroup below it (pre-order),
 * calling fn on each. Cgroup directories contain only files and child
 * cgroups. A directory removed meanwhile is skipped.
 */
typedef int (*walk_fn)(const char *dir, void *ud, struct cb_error *err);

static int walk(const char *dir, int depth, walk_fn fn, void *ud, struct cb_error *err)
{
        if (depth > CG_MAX_DEPTH)
                return cb_error_set(err, ELOOP, "cgroup tree at %s is deeper than %d levels", dir,
                                    CG_MAX_DEPTH);
        if (fn(dir, ud, err) < 0)
                return -1;
        int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) {
                if (errno == ENOENT)
                        return 0;
                return cb_error_set(err, errno, "cannot open %s", dir);
        }
        DIR *d = fdopendir(fd);
        if (d == NULL) {
                int e = errno;
                close(fd);
                return cb_error_set(err, e, "cannot read %s", dir);
        }
        int r = 0;
        struct dirent *de;
        while (r == 0 && (de = readdir(d)) != NULL) {
                if (de->d_type != DT_DIR || strcmp(de->d_name, ".") == 0 ||
                    strcmp(de->d_name, "..") == 0)
                        continue;
                char sub[CG_DIR_MAX];
                if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name) >= sizeof(sub))
                        r = cb_error_set(err, ENAMETOOLONG, "%s/%s is too long", dir, de->d_name);
                else
                        r = walk(sub, depth + 1, fn, ud, err);
        }
        closedir(d);
        return r;
}

struct pid_list {
        pid_t *pids;
        size_t n;
};

static int collect_pids(const char *dir, void *ud, struct cb_error *err)
{
        struct pid_list *l = ud;
        _cleanup_free_ char *buf = NULL;
        struct cb_error e;
        if (read_in(dir, "cgroup.procs", &buf, &e) < 0) {
                if (e.code == ENOENT)
                        return 0; /* removed while walking */
                if (err != NULL)
                        *err = e;
                return -1;
        }
        if (cg_parse_pids(buf, &l->pids, &l->n, err) < 0)
                return cb_error_prefix(err, "%s/cgroup.procs", dir);
        return 0;
}

static int cmp_pid(const void *a, const void *b)
{
        pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
        return (x > y) - (x < y);
}

int cg_list_pids(const char *path, pid_t **ret_pids, size_t *ret_n, struct cb_error *err)
{
        char p[CG_PATH_MAX];
        if (cg_init(err) < 0 || norm_path(path, p, err) < 0)
                return -1;
        struct pid_list l = {0};
        for (size_t h = 0; h < n_hiers; h++) {
                char dir[CG_DIR_MAX];
                if (join(dir, sizeof(dir), hiers[h].mount, p, err) < 0 ||
                    (is_dir(dir) && walk(dir, 0, collect_pids, &l, err) < 0)) {
                        free(l.pids);
                        return -1;
                }
        }
        size_t out = 0;
        if (l.n > 0) {
                qsort(l.pids, l.n, sizeof(*l.pids), cmp_pid);
                for (size_t i = 0; i < l.n; i++)
                        if (out == 0 || l.pids[out - 1] != l.pids[i])
                                l.pids[out++] = l.pids[i];
        }
        *ret_pids = l.pids;
        *ret_n = out;
        return 0;
}

int cg_kill_all(const char *path, int sig, struct cb_error *err)
{
        _cleanup_free_ pid_t *pids = NULL;
        size_t n;
        if (cg_list_pids(path, &pids, &n, err) < 0)
                return -1;
        char p[CG_PATH_MAX];
        if (norm_path(path, p, err) < 0)
                return -1;
        if (mode == CG_MODE_UNIFIED && sig == SIGKILL) {
                /* cgroup.kill (Linux >= 5.14) kills the whole subtree
                 * atomically, also processes forked meanwhile. */
                char file[CG_DIR_MAX];
                if (join(file, sizeof(file), hiers[0].mount, p, err) < 0)
                        return -1;
                size_t len = strlen(file);
                if ((size_t)snprintf(file + len, sizeof(file) - len, "/cgroup.kill") <
                    sizeof(file) - len) {
                        if (access(file, F_OK) == 0) {
                                if (write_str(file, "1", err) < 0)
                                        return cb_error_prefix(err, "cannot kill cgroup %s", p);
                                return (int)n;
                        }
                }
        }
        int count = 0;
        for (size_t i = 0; i < n; i++) {
                if (pids[i] == getpid())
                        continue; /* never: the agent is not in its cgroups */
                if (kill(pids[i], sig) == 0)
                        count++;
                else if (errno != ESRCH)
                        return cb_error_set(err, errno, "cannot signal pid %d in cgroup %s",
                                            (int)pids[i], p);
        }
        return count;
}

int cg_destroy(const char *path, struct cb_error *err)
{
        char p[CG_PATH_MAX];
        if (cg_init(err) < 0 || norm_path(path, p, err) < 0)
                return -1;
        _cleanup_free_ pid_t *pids = NULL;
        size_t npids;
        if (cg_list_pids(p, &pids, &npids, err) < 0)
                return -1;
        if (npids > 0) {
                char list[256] = "";
                size_t off = 0;
                for (size_t i = 0; i < npids && off < sizeof(list) - 16; i++)
                        off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%d",
                                                i > 0 ? " " : "", (int)pids[i]);
                return cb_error_set(err, EBUSY,
                                    "cannot remove cgroup %s: %zu process(es) still in it "
                                    "(pids %s%s); kill them first (cg_kill_all)",
                                    p, npids, list, off >= sizeof(list) - 16 ? " ..." : "");
        }
        /* Only the hierarchies the cgroup exists in: a crash may have left
         * it in some of them. */
        struct cgroup *cg = cgroup_new_cgroup(p);
        if (cg == NULL)
                return cb_error_set(err, ENOMEM, "cannot allocate a libcgroup cgroup for %s", p);
        size_t present = 0;
        for (size_t h = 0; h < n_hiers; h++) {
                char dir[CG_DIR_MAX];
                if (join(dir, sizeof(dir), hiers[h].mount, p, err) < 0) {
                        cgroup_free(&cg);
                        return -1;
                }
                if (!is_dir(dir))
                        continue;
                if (cgroup_add_controller(cg, hiers[h].controller) == NULL) {
                        cgroup_free(&cg);
                        return cb_error_set(err, ENOMEM, "cannot add controller %s to %s",
                                            hiers[h].controller, p);
                }
                present++;
        }
        int rc = 0;
        if (present > 0) {
                lcg_log[0] = '\0';
                /* IGNORE_MIGRATION: a process that raced in makes rmdir fail
                 * (EBUSY) instead of being moved to the parent. */
                rc = cgroup_delete_cgroup_ext(cg, CGFLAG_DELETE_RECURSIVE |
                                                      CGFLAG_DELETE_IGNORE_MIGRATION);
        }
        cgroup_free(&cg);
        if (rc != 0)
                return lcg_error(err, rc, "cannot remove cgroup %s", p);
        for (size_t h = 0; h < n_hiers; h++) {
                char dir[CG_DIR_MAX];
                if (join(dir, sizeof(dir), hiers[h].mount, p, err) < 0)
                        return -1;
                if (is_dir(dir))
                        return cb_error_set(err, EBUSY,
                                            "cannot remove cgroup %s: %s is still there after "
                                            "the recursive delete",
                                            p, dir);
        }
        return 0;
}

static int cmp_str(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

void cg_free_names(char **names, size_t n)
{
        if (names == NULL)
                return;
        for (size_t i = 0; i < n; i++)
                free(names[i]);
        free(names);
}

static int add_name(char ***names, size_t *n, const char *name, struct cb_error *err)
{
        for (size_t i = 0; i < *n; i++)
                if (strcmp((*names)[i], name) == 0)
                        return 0;
        char **nn = realloc(*names, (*n + 1) * sizeof(**names));
        if (nn == NULL)
                return cb_error_set(err, ENOMEM, "cannot list child cgroups");
        *names = nn;
        nn[*n] = strdup(name);
        if (nn[*n] == NULL)
                return cb_error_set(err, ENOMEM, "cannot list child cgroups");
        (*n)++;
        return 0;
}

int cg_list_children(const char *parent, char ***ret_names, size_t *ret_n, struct cb_error *err)
{
        char p[CG_PATH_MAX];
        if (cg_init(err) < 0 || norm_path(parent, p, err) < 0)
                return -1;
        char **names = NULL;
        size_t n = 0;
        for (size_t h = 0; h < n_hiers; h++) {
                char dir[CG_DIR_MAX];
                if (join(dir, sizeof(dir), hiers[h].mount, p, err) < 0)
                        goto fail;
                DIR *d = opendir(dir); /* glibc opens with O_CLOEXEC */
                if (d == NULL) {
                        if (errno == ENOENT)
                                continue;
                        cb_error_set(err, errno, "cannot list child cgroups of %s", dir);
                        goto fail;
                }
                struct dirent *de;
                int r = 0;
                while (r == 0 && (de = readdir(d)) != NULL)
                        if (de->d_type == DT_DIR && strcmp(de->d_name, ".") != 0 &&
                            strcmp(de->d_name, "..") != 0)
                                r = add_name(&names, &n, de->d_name, err);
                closedir(d);
                if (r < 0)
                        goto fail;
        }
        if (n > 0)
                qsort(names, n, sizeof(*names), cmp_str);
        *ret_names = names;
        *ret_n = n;
        return 0;
fail:
        cg_free_names(names, n);
        return -1;
}

/* Reads <mount of controller>/<p>/<name>. */
static int read_ctrl(const char *p, const char *controller, const char *name, char **ret,
                     struct cb_error *err)
{
        const char *mount = mount_of(controller);
        if (mount == NULL)
                return cb_error_set(err, ENOENT, "the %s controller is not mounted", controller);
        char dir[CG_DIR_MAX];
        if (join(dir, sizeof(dir), mount, p, err) < 0)
                return -1;
        return read_in(dir, name, ret, err);
}

static int read_u64(const char *p, const char *controller, const char *name, uint64_t *ret,
                    struct cb_error *err)
{
        _cleanup_free_ char *buf = NULL;
        if (read_ctrl(p, controller, name, &buf, err) < 0)
                return -1;
        if (cg_parse_u64(buf, ret, err) < 0)
                return cb_error_prefix(err, "%s of cgroup %s", name, p);
        return 0;
}

static int read_keyed(const char *p, const char *controller, const char *name, const char *key,
                      uint64_t *ret, struct cb_error *err)
{
        _cleanup_free_ char *buf = NULL;
        if (read_ctrl(p, controller, name, &buf, err) < 0)
                return -1;
        int r = cg_parse_keyed(buf, key, ret, err);
        if (r < 0)
                return cb_error_prefix(err, "%s of cgroup %s", name, p);
        if (r == 0)
                return cb_error_set(err, ENOENT, "%s of cgroup %s has no \"%s\" line", name, p,
                                    key);
        return 0;
}

int cg_read_oom(const char *path, struct cg_oom *ret, struct cb_error *err)
{
        char p[CG_PATH_MAX];
        if (cg_init(err) < 0 || norm_path(path, p, err) < 0)
                return -1;
        struct cg_oom o = {0};
        _cleanup_free_ char *buf = NULL;
        if (mode == CG_MODE_UNIFIED) {
                if (read_ctrl(p, "memory", "memory.events", &buf, err) < 0 ||
                    cg_parse_oom(buf, CG_V2, &o, err) < 0)
                        return -1;
        } else {
                if (read_ctrl(p, "memory", "memory.oom_control", &buf, err) < 0 ||
                    cg_parse_oom(buf, CG_V1, &o, err) < 0 ||
                    read_u64(p, "memory", "memory.failcnt", &o.limit_hits, err) < 0)
                        return -1;
        }
        *ret = o;
        return 0;
}

int cg_read_stats(const char *path, struct cg_stats *ret, struct cb_error *err)
{
        char p[CG_PATH_MAX];
        if (cg_init(err) < 0 || norm_path(path, p, err) < 0)
                return -1;
        struct cg_stats s = {0};
        uint64_t inactive;
        if (mode == CG_MODE_UNIFIED) {
                uint64_t usec;
                if (read_keyed(p, "cpu", "cpu.stat", "usage_usec", &usec, err) < 0 ||
                    read_u64(p, "memory", "memory.current", &s.memory_usage, err) < 0 ||
                    read_keyed(p, "memory", "memory.stat", "inactive_file", &inactive, err) < 0)
                        return -1;
                s.cpu_usage_ns = usec * 1000;
        } else {
                if (read_u64(p, "cpuacct", "cpuacct.usage", &s.cpu_usage_ns, err) < 0 ||
                    read_u64(p, "memory", "memory.usage_in_bytes", &s.memory_usage, err) < 0 ||
                    read_keyed(p, "memory", "memory.stat", "total_inactive_file", &inactive, err) <
                        0)
                        return -1;
        }
        s.memory_working_set = s.memory_usage > inactive ? s.memory_usage - inactive : 0;
        if (read_u64(p, "pids", "pids.current", &s.pids_current, err) < 0)
                return -1;
        *ret = s;
        return 0;
}

/* ---- locations: for processes that do not initialise libcgroup ------------------------ */

int cg_locate(const char *path, struct cg_location *ret, struct cb_error *err)
{
        char p[CG_PATH_MAX];
        if (cg_init(err) < 0 || check_mounted(err) < 0 || norm_path(path, p, err) < 0)
                return -1;
        struct cg_location l = {.version = mode == CG_MODE_UNIFIED ? 2 : 1};
        for (size_t h = 0; h < n_hiers && h < CG_LOC_MAX_DIRS; h++) {
                char dir[CG_DIR_MAX];
                if (join(dir, sizeof(dir), hiers[h].mount, p, err) < 0)
                        return -1;
                size_t len = strlen(dir);
                if (len >= CG_LOC_DIR_MAX)
                        return cb_error_set(err, ENAMETOOLONG, "cgroup directory %s is too long",
                                            dir);
                memcpy(l.dirs[l.n_dirs++], dir, len + 1);
        }
        const char *mm = mount_of("memory");
        if (mm == NULL)
                return cb_error_set(err, ENOENT, "the memory controller is not mounted");
        char dir[CG_DIR_MAX];
        if (join(dir, sizeof(dir), mm, p, err) < 0)
                return -1;
        size_t len = strlen(dir);
        if (len >= CG_LOC_DIR_MAX)
                return cb_error_set(err, ENAMETOOLONG, "cgroup directory %s is too long", dir);
        memcpy(l.memory_dir, dir, len + 1);
        *ret = l;
        return 0;
}

/* value written to <dir>/<name> in each hierarchy of l; who names the
 * process in the errors */
static int write_each(const struct cg_location *l, const char *name, const char *value,
                      const char *who, struct cb_error *err)
{
        for (size_t h = 0; h < l->n_dirs; h++) {
                if (!is_dir(l->dirs[h])) {
                        if (strstr(l->dirs[h], "/devices/") != NULL)
                                continue; /* made before devices joined (see cg_attach) */
                        return cb_error_set(err, ENOENT,
                                            "cannot attach %s: %s does not exist; create the "
                                            "cgroup first",
                                            who, l->dirs[h]);
                }
                char file[CG_LOC_DIR_MAX + 16];
                snprintf(file, sizeof(file), "%s/%s", l->dirs[h], name);
                if (write_str(file, value, err) < 0)
                        return cb_error_prefix(err, "cannot attach %s", who);
        }
        return 0;
}

int cg_attach_at(const struct cg_location *l, pid_t pid, struct cb_error *err)
{
        if (pid <= 0)
                return cb_error_set(err, EINVAL, "cannot attach pid %d: not a process", (int)pid);
        char value[16], who[32];
        snprintf(value, sizeof(value), "%d", (int)pid);
        snprintf(who, sizeof(who), "pid %d", (int)pid);
        return write_each(l, "cgroup.procs", value, who, err);
}

int cg_join_self_at(const struct cg_location *l, struct cb_error *err)
{
        if (l->version != 1)
                return cg_attach_at(l, getpid(), err);
        /* "0" is the writer itself; "tasks" moves that one thread: the
         * kernel takes no cgroup_threadgroup_rwsem for it */
        return write_each(l, "tasks", "0", "this process", err);
}

pid_t cg_fork_into(const struct cg_location *l, bool *placed, struct cb_error *err)
{
        *placed = false;
#ifdef SYS_clone3
        if (l != NULL && l->version == 2 && l->n_dirs == 1) {
                int fd = open(l->dirs[0], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (fd >= 0) {
                        /* the kernel's uapi struct: glibc 2.36 has no clone3 */
                        struct clone_args a = {
                            .flags = CLONE_INTO_CGROUP,
                            .exit_signal = SIGCHLD,
                            .cgroup = (uint64_t)fd,
                        };
                        long pid = syscall(SYS_clone3, &a, sizeof(a));
                        if (pid == 0) {
                                close(fd);
                                return 0;
                        }
                        close(fd);
                        if (pid > 0) {
                                *placed = true;
                                return (pid_t)pid;
                        }
                        /* ENOSYS/E2BIG (before 5.3/5.7), EBUSY/EOPNOTSUPP (not
                         * a leaf of a domain), EACCES, ENOENT: a plain fork,
                         * and the caller's attach says what is wrong */
                }
        }
#endif
        pid_t pid = fork();
        if (pid < 0)
                return cb_error_set(err, errno, "cannot fork");
        return pid;
}

int cg_read_oom_at(const struct cg_location *l, struct cg_oom *ret, struct cb_error *err)
{
        char file[CG_LOC_DIR_MAX + 32];
        struct cg_oom o = {0};
        _cleanup_free_ char *buf = NULL;
        size_t n;
        snprintf(file, sizeof(file), "%s/%s", l->memory_dir,
                 l->version == 2 ? "memory.events" : "memory.oom_control");
        if (cb_read_file(file, CG_FILE_MAX, &buf, &n, err) < 0 ||
            cg_parse_oom(buf, l->version == 2 ? CG_V2 : CG_V1, &o, err) < 0)
                return -1;
        if (l->version == 1) {
                _cleanup_free_ char *fc = NULL;
                snprintf(file, sizeof(file), "%s/memory.failcnt", l->memory_dir);
                if (cb_read_file(file, CG_FILE_MAX, &fc, &n, err) < 0 ||
                    cg_parse_u64(fc, &o.limit_hits, err) < 0)
                        return -1;
        }
        *ret = o;
        return 0;
}
