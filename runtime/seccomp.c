/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Seccomp filters (pattern 7): compiled with libseccomp in the process that
 * starts containers (the agent), exported as raw BPF into a sealed memfd,
 * cached per (profile, relevant capabilities), handed to the monitor and
 * installed by the container's init with seccomp(SECCOMP_SET_MODE_FILTER)
 * as the last step before execve (or before the capability drop when
 * no_new_privs is off: loading a filter then needs CAP_SYS_ADMIN).
 *
 * RuntimeDefault follows the Docker/containerd/Podman default profile:
 * default action ERRNO(EPERM); the ordinary system calls allowed; clone
 * allowed only without namespace flags; clone3 answers ENOSYS so the C
 * library falls back to clone, whose flags a filter can inspect (clone3
 * passes them in memory). The administrative calls (mount, unshare, setns,
 * bpf, keyctl, kexec, modules, reboot, swap, clock setting, ptrace, ...)
 * are refused, and allowed again when the container holds the capability
 * that guards them (CAP_SYS_ADMIN, CAP_SYS_PTRACE, CAP_SYS_TIME, ...), as
 * in those profiles. keyctl, add_key and request_key stay refused always
 * (the kernel keyring is not namespaced).
 *
 * Localhost: an OCI/Docker seccomp JSON file under <root_dir>/seccomp/:
 * defaultAction, defaultErrnoRet, architectures, syscalls[] with
 * names/name, action, errnoRet and args (index, value, valueTwo, op).
 * Privileged containers and Unconfined get no filter.
 *
 * Compiling RuntimeDefault with libseccomp costs about 16 ms of CPU (perf,
 * session 10: a quarter of a one-shot `run-pod`), so a compiled program is
 * kept twice: in memory for the process's life, and on disk under
 * <root_dir>/cache/seccomp/ for the next process (run-pod, an agent after
 * a restart). A disk entry is used only when its key matches byte for
 * byte: the cubelet executable (inode, size, mtime), libseccomp's version
 * and API level, the kernel release, the profile kind, the capabilities
 * that change it and, for Localhost, the whole profile text. See
 * disk_key() and the file format above disk_load().
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "lib/cleanup.h"
#include "lib/file.h"
#include "runtime/container.h"
#include "runtime/container_internal.h"
#include "runtime/syscalls.h"

static const char *const allowed[] = {
    "accept",
    "accept4",
    "access",
    "adjtimex",
    "alarm",
    "bind",
    "brk",
    "cachestat",
    "capget",
    "capset",
    "chdir",
    "chmod",
    "chown",
    "chown32",
    "clock_adjtime",
    "clock_adjtime64",
    "clock_getres",
    "clock_getres_time64",
    "clock_gettime",
    "clock_gettime64",
    "clock_nanosleep",
    "clock_nanosleep_time64",
    "close",
    "close_range",
    "connect",
    "copy_file_range",
    "creat",
    "dup",
    "dup2",
    "dup3",
    "epoll_create",
    "epoll_create1",
    "epoll_ctl",
    "epoll_ctl_old",
    "epoll_pwait",
    "epoll_pwait2",
    "epoll_wait",
    "epoll_wait_old",
    "eventfd",
    "eventfd2",
    "execve",
    "execveat",
    "exit",
    "exit_group",
    "faccessat",
    "faccessat2",
    "fadvise64",
    "fadvise64_64",
    "fallocate",
    "fanotify_mark",
    "fchdir",
    "fchmod",
    "fchmodat",
    "fchmodat2",
    "fchown",
    "fchown32",
    "fchownat",
    "fcntl",
    "fcntl64",
    "fdatasync",
    "fgetxattr",
    "flistxattr",
    "flock",
    "fork",
    "fremovexattr",
    "fsetxattr",
    "fstat",
    "fstat64",
    "fstatat64",
    "fstatfs",
    "fstatfs64",
    "fsync",
    "ftruncate",
    "ftruncate64",
    "futex",
    "futex_requeue",
    "futex_time64",
    "futex_wait",
    "futex_waitv",
    "futex_wake",
    "futimesat",
    "getcpu",
    "getcwd",
    "getdents",
    "getdents64",
    "getegid",
    "getegid32",
    "geteuid",
    "geteuid32",
    "getgid",
    "getgid32",
    "getgroups",
    "getgroups32",
    "getitimer",
    "getpeername",
    "getpgid",
    "getpgrp",
    "getpid",
    "getppid",
    "getpriority",
    "getrandom",
    "getresgid",
    "getresgid32",
    "getresuid",
    "getresuid32",
    "getrlimit",
    "get_robust_list",
    "getrusage",
    "getsid",
    "getsockname",
    "getsockopt",
    "get_thread_area",
    "gettid",
    "gettimeofday",
    "getuid",
    "getuid32",
    "getxattr",
    "inotify_add_watch",
    "inotify_init",
    "inotify_init1",
    "inotify_rm_watch",
    "io_cancel",
    "ioctl",
    "io_destroy",
    "io_getevents",
    "io_pgetevents",
    "io_pgetevents_time64",
    "ioprio_get",
    "ioprio_set",
    "io_setup",
    "io_submit",
    /* no io_uring_setup/enter/register: a ring runs operations seccomp never
     * sees, and its bugs were container escapes; containerd 2.0
     * (containerd#9320) and moby (moby#46762) dropped them, so the default
     * EPERM answers (issue 15 item 15) */
    "ipc",
    "kill",
    "landlock_add_rule",
    "landlock_create_ruleset",
    "landlock_restrict_self",
    "lchown",
    "lchown32",
    "lgetxattr",
    "link",
    "linkat",
    "listen",
    "listxattr",
    "llistxattr",
    "_llseek",
    "lremovexattr",
    "lseek",
    "lsetxattr",
    "lstat",
    "lstat64",
    "madvise",
    "map_shadow_stack",
    "membarrier",
    "memfd_create",
    "memfd_secret",
    "mincore",
    "mkdir",
    "mkdirat",
    "mknod",
    "mknodat",
    "mlock",
    "mlock2",
    "mlockall",
    "mmap",
    "mmap2",
    "mprotect",
    "mq_getsetattr",
    "mq_notify",
    "mq_open",
    "mq_timedreceive",
    "mq_timedreceive_time64",
    "mq_timedsend",
    "mq_timedsend_time64",
    "mq_unlink",
    "mremap",
    "msgctl",
    "msgget",
    "msgrcv",
    "msgsnd",
    "msync",
    "munlock",
    "munlockall",
    "munmap",
    "name_to_handle_at",
    "nanosleep",
    "newfstatat",
    "_newselect",
    "open",
    "openat",
    "openat2",
    "pause",
    "pidfd_getfd",
    "pidfd_open",
    "pidfd_send_signal",
    "pipe",
    "pipe2",
    "pkey_alloc",
    "pkey_free",
    "pkey_mprotect",
    "poll",
    "ppoll",
    "ppoll_time64",
    "prctl",
    "pread64",
    "preadv",
    "preadv2",
    "prlimit64",
    "process_mrelease",
    "pselect6",
    "pselect6_time64",
    "pwrite64",
    "pwritev",
    "pwritev2",
    "read",
    "readahead",
    "readlink",
    "readlinkat",
    "readv",
    "recv",
    "recvfrom",
    "recvmmsg",
    "recvmmsg_time64",
    "recvmsg",
    "remap_file_pages",
    "removexattr",
    "rename",
    "renameat",
    "renameat2",
    "restart_syscall",
    "rmdir",
    "rseq",
    "rt_sigaction",
    "rt_sigpending",
    "rt_sigprocmask",
    "rt_sigqueueinfo",
    "rt_sigreturn",
    "rt_sigsuspend",
    "rt_sigtimedwait",
    "rt_sigtimedwait_time64",
    "rt_tgsigqueueinfo",
    "sched_getaffinity",
    "sched_getattr",
    "sched_getparam",
    "sched_get_priority_max",
    "sched_get_priority_min",
    "sched_getscheduler",
    "sched_rr_get_interval",
    "sched_rr_get_interval_time64",
    "sched_setaffinity",
    "sched_setattr",
    "sched_setparam",
    "sched_setscheduler",
    "sched_yield",
    "seccomp",
    "select",
    "semctl",
    "semget",
    "semop",
    "semtimedop",
    "semtimedop_time64",
    "send",
    "sendfile",
    "sendfile64",
    "sendmmsg",
    "sendmsg",
    "sendto",
    "setfsgid",
    "setfsgid32",
    "setfsuid",
    "setfsuid32",
    "setgid",
    "setgid32",
    "setgroups",
    "setgroups32",
    "setitimer",
    "setpgid",
    "setpriority",
    "setregid",
    "setregid32",
    "setresgid",
    "setresgid32",
    "setresuid",
    "setresuid32",
    "setreuid",
    "setreuid32",
    "setrlimit",
    "set_robust_list",
    "setsid",
    "setsockopt",
    "set_thread_area",
    "set_tid_address",
    "setuid",
    "setuid32",
    "setxattr",
    "shmat",
    "shmctl",
    "shmdt",
    "shmget",
    "shutdown",
    "sigaltstack",
    "signalfd",
    "signalfd4",
    "sigprocmask",
    "sigreturn",
    "socket",
    "socketcall",
    "socketpair",
    "splice",
    "stat",
    "stat64",
    "statfs",
    "statfs64",
    "statx",
    "symlink",
    "symlinkat",
    "sync",
    "sync_file_range",
    "syncfs",
    "sysinfo",
    "tee",
    "tgkill",
    "time",
    "timer_create",
    "timer_delete",
    "timer_getoverrun",
    "timer_gettime",
    "timer_gettime64",
    "timer_settime",
    "timer_settime64",
    "timerfd_create",
    "timerfd_gettime",
    "timerfd_gettime64",
    "timerfd_settime",
    "timerfd_settime64",
    "times",
    "tkill",
    "truncate",
    "truncate64",
    "ugetrlimit",
    "umask",
    "uname",
    "unlink",
    "unlinkat",
    "utime",
    "utimensat",
    "utimensat_time64",
    "utimes",
    "vfork",
    "vmsplice",
    "wait4",
    "waitid",
    "waitpid",
    "write",
    "writev",
    "arch_prctl",
    "modify_ldt",
    "chroot",
    "personality",
    "pidfd_getfd",
};

/* System calls refused unless the container holds the capability. */
struct cap_group {
        int cap;
        const char *const *names;
};

static const char *const sys_admin[] = {"bpf",
                                        "fanotify_init",
                                        "fsconfig",
                                        "fsmount",
                                        "fsopen",
                                        "fspick",
                                        "lookup_dcookie",
                                        "mount",
                                        "mount_setattr",
                                        "move_mount",
                                        "open_tree",
                                        "perf_event_open",
                                        "quotactl",
                                        "quotactl_fd",
                                        "setdomainname",
                                        "sethostname",
                                        "setns",
                                        "syslog",
                                        "umount",
                                        "umount2",
                                        "unshare",
                                        "pivot_root",
                                        "open_by_handle_at",
                                        NULL};
static const char *const sys_boot[] = {"reboot", "kexec_load", "kexec_file_load", NULL};
static const char *const sys_module[] = {"init_module", "finit_module", "delete_module", NULL};
static const char *const sys_pacct[] = {"acct", NULL};
static const char *const sys_ptrace[] = {"kcmp", "process_vm_readv", "process_vm_writev", "ptrace",
                                         NULL};
static const char *const sys_rawio[] = {"iopl", "ioperm", NULL};
static const char *const sys_time[] = {"settimeofday", "stime", "clock_settime", "clock_settime64",
                                       NULL};
static const char *const sys_tty[] = {"vhangup", NULL};
static const char *const sys_nice[] = {
    "get_mempolicy", "mbind", "set_mempolicy", "set_mempolicy_home_node", "migrate_pages",
    "move_pages",    NULL};
static const char *const sys_resource[] = {"swapon", "swapoff", NULL};
static const char *const syslog_names[] = {"syslog", NULL};

static const struct cap_group cap_groups[] = {
    {CAP_SYS_ADMIN, sys_admin},    {CAP_SYS_BOOT, sys_boot},      {CAP_SYS_MODULE, sys_module},
    {CAP_SYS_PACCT, sys_pacct},    {CAP_SYS_PTRACE, sys_ptrace},  {CAP_SYS_RAWIO, sys_rawio},
    {CAP_SYS_TIME, sys_time},      {CAP_SYS_TTY_CONFIG, sys_tty}, {CAP_SYS_NICE, sys_nice},
    {CAP_SYS_ADMIN, sys_resource}, {CAP_SYSLOG, syslog_names},
};

#define NS_FLAGS                                                                                   \
        (CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | \
         CLONE_NEWCGROUP | 0x00000080 /* CLONE_NEWTIME */)

static void ctx_releasep(scmp_filter_ctx *ctx)
{
        if (*ctx != NULL)
                seccomp_release(*ctx);
}

static int sc_error(struct cb_error *err, int rc, const char *what, const char *name)
{
        return cb_error_set(err, -rc, "seccomp: cannot add %s rule for %s", what, name);
}

/* Adds an allow rule; names unknown to libseccomp on this arch are skipped. */
static int allow(scmp_filter_ctx ctx, const char *name, struct cb_error *err)
{
        int nr = seccomp_syscall_resolve_name(name);
        if (nr == __NR_SCMP_ERROR)
                return 0;
        int rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
        if (rc < 0 && rc != -EEXIST && rc != -EACCES)
                return sc_error(err, rc, "allow", name);
        return 0;
}

static void add_arches(scmp_filter_ctx ctx)
{
#if defined(__x86_64__)
        /* 32-bit binaries in a container are normal; their calls go through
         * the same rules. Errors (EEXIST) are ignored. */
        (void)seccomp_arch_add(ctx, SCMP_ARCH_X86);
        (void)seccomp_arch_add(ctx, SCMP_ARCH_X32);
#endif
}

static int build_default(scmp_filter_ctx ctx, uint64_t caps, struct cb_error *err)
{
        add_arches(ctx);
        for (size_t i = 0; i < CB_ARRAY_SIZE(allowed); i++)
                if (allow(ctx, allowed[i], err) < 0)
                        return -1;
        for (size_t g = 0; g < CB_ARRAY_SIZE(cap_groups); g++) {
                if (!(caps & (UINT64_C(1) << cap_groups[g].cap)))
                        continue;
                for (const char *const *n = cap_groups[g].names; *n != NULL; n++)
                        if (allow(ctx, *n, err) < 0)
                                return -1;
        }
        int rc;
        if (caps & (UINT64_C(1) << CAP_SYS_ADMIN)) {
                rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone), 0);
                if (rc < 0)
                        return sc_error(err, rc, "allow", "clone");
                rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone3), 0);
                if (rc < 0)
                        return sc_error(err, rc, "allow", "clone3");
        } else {
                /* x86_64 and most arches: flags are the first argument */
                rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
                                      SCMP_A0(SCMP_CMP_MASKED_EQ, NS_FLAGS, 0));
                if (rc < 0)
                        return sc_error(err, rc, "conditional", "clone");
                rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
                if (rc < 0)
                        return sc_error(err, rc, "ENOSYS", "clone3");
        }
        return 0;
}

/* ---- OCI JSON profiles ---------------------------------------------------- */

static int parse_action(const cJSON *obj, const char *field, uint32_t errno_default, uint32_t *ret,
                        struct cb_error *err)
{
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(obj, field);
        if (!cJSON_IsString(a))
                return cb_error_set(err, EINVAL, "%s: missing or not a string", field);
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(obj, "errnoRet");
        if (e == NULL)
                e = cJSON_GetObjectItemCaseSensitive(obj, "defaultErrnoRet");
        uint32_t eno = cJSON_IsNumber(e) ? (uint32_t)e->valuedouble : errno_default;
        const char *s = a->valuestring;
        if (strcmp(s, "SCMP_ACT_ALLOW") == 0)
                *ret = SCMP_ACT_ALLOW;
        else if (strcmp(s, "SCMP_ACT_ERRNO") == 0)
                *ret = SCMP_ACT_ERRNO(eno);
        else if (strcmp(s, "SCMP_ACT_KILL") == 0 || strcmp(s, "SCMP_ACT_KILL_THREAD") == 0)
                *ret = SCMP_ACT_KILL;
        else if (strcmp(s, "SCMP_ACT_KILL_PROCESS") == 0)
                *ret = SCMP_ACT_KILL_PROCESS;
        else if (strcmp(s, "SCMP_ACT_TRAP") == 0)
                *ret = SCMP_ACT_TRAP;
        else if (strcmp(s, "SCMP_ACT_LOG") == 0)
                *ret = SCMP_ACT_LOG;
        else if (strcmp(s, "SCMP_ACT_TRACE") == 0)
                *ret = SCMP_ACT_TRACE(eno);
        else
                return cb_error_set(err, EINVAL,
                                    "%s: unknown action \"%s\" (SCMP_ACT_ALLOW, SCMP_ACT_ERRNO, "
                                    "SCMP_ACT_KILL, SCMP_ACT_KILL_PROCESS, SCMP_ACT_TRAP, "
                                    "SCMP_ACT_LOG, SCMP_ACT_TRACE)",
                                    field, s);
        return 0;
}

static int parse_op(const char *s, enum scmp_compare *ret)
{
        static const struct {
                const char *name;
                enum scmp_compare op;
        } ops[] = {
            {"SCMP_CMP_NE", SCMP_CMP_NE},
            {"SCMP_CMP_LT", SCMP_CMP_LT},
            {"SCMP_CMP_LE", SCMP_CMP_LE},
            {"SCMP_CMP_EQ", SCMP_CMP_EQ},
            {"SCMP_CMP_GE", SCMP_CMP_GE},
            {"SCMP_CMP_GT", SCMP_CMP_GT},
            {"SCMP_CMP_MASKED_EQ", SCMP_CMP_MASKED_EQ},
        };
        for (size_t i = 0; i < CB_ARRAY_SIZE(ops); i++)
                if (strcmp(s, ops[i].name) == 0) {
                        *ret = ops[i].op;
                        return 0;
                }
        return -1;
}

static int parse_args(const cJSON *args, struct scmp_arg_cmp *cmp, unsigned *ret_n, size_t i,
                      struct cb_error *err)
{
        unsigned n = 0;
        const cJSON *a;
        cJSON_ArrayForEach(a, args)
        {
                if (n >= 6)
                        return cb_error_set(err, EINVAL, "syscalls[%zu].args: more than 6", i);
                const cJSON *idx = cJSON_GetObjectItemCaseSensitive(a, "index");
                const cJSON *val = cJSON_GetObjectItemCaseSensitive(a, "value");
                const cJSON *two = cJSON_GetObjectItemCaseSensitive(a, "valueTwo");
                const cJSON *op = cJSON_GetObjectItemCaseSensitive(a, "op");
                enum scmp_compare o;
                if (!cJSON_IsNumber(idx) || idx->valuedouble < 0 || idx->valuedouble > 5 ||
                    !cJSON_IsNumber(val) || !cJSON_IsString(op) ||
                    parse_op(op->valuestring, &o) < 0)
                        return cb_error_set(err, EINVAL,
                                            "syscalls[%zu].args[%u]: want index 0..5, a numeric "
                                            "value and op SCMP_CMP_*",
                                            i, n);
                cmp[n].arg = (unsigned)idx->valuedouble;
                cmp[n].op = o;
                cmp[n].datum_a = (scmp_datum_t)val->valuedouble;
                cmp[n].datum_b = cJSON_IsNumber(two) ? (scmp_datum_t)two->valuedouble : 0;
                n++;
        }
        *ret_n = n;
        return 0;
}

static int build_profile(scmp_filter_ctx *ret_ctx, const char *json, struct cb_error *err)
{
        _cleanup_cjson_ cJSON *root = cJSON_Parse(json);
        if (root == NULL)
                return cb_error_set(err, EINVAL, "not valid JSON");
        uint32_t def;
        if (parse_action(root, "defaultAction", EPERM, &def, err) < 0)
                return -1;
        scmp_filter_ctx ctx = seccomp_init(def);
        if (ctx == NULL)
                return cb_error_set(err, ENOMEM, "seccomp_init failed");
        *ret_ctx = ctx;
        const cJSON *arches = cJSON_GetObjectItemCaseSensitive(root, "architectures");
        const cJSON *arch;
        cJSON_ArrayForEach(arch, arches)
        {
                if (!cJSON_IsString(arch) || strncmp(arch->valuestring, "SCMP_ARCH_", 10) != 0)
                        continue;
                char lower[32];
                size_t k = 0;
                for (const char *p = arch->valuestring + 10; *p != '\0' && k < sizeof(lower) - 1;
                     p++)
                        lower[k++] = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
                lower[k] = '\0';
                uint32_t token = seccomp_arch_resolve_name(lower);
                if (token != 0 && token != seccomp_arch_native())
                        (void)seccomp_arch_add(ctx, token);
        }
        const cJSON *sys;
        size_t i = 0;
        cJSON_ArrayForEach(sys, cJSON_GetObjectItemCaseSensitive(root, "syscalls"))
        {
                uint32_t act;
                if (parse_action(sys, "action", EPERM, &act, err) < 0)
                        return cb_error_prefix(err, "syscalls[%zu]", i);
                struct scmp_arg_cmp cmp[6];
                unsigned ncmp = 0;
                if (parse_args(cJSON_GetObjectItemCaseSensitive(sys, "args"), cmp, &ncmp, i, err) <
                    0)
                        return -1;
                const cJSON *names = cJSON_GetObjectItemCaseSensitive(sys, "names");
                const cJSON *one = cJSON_GetObjectItemCaseSensitive(sys, "name");
                const cJSON *nm;
                int count = 0;
                cJSON *single = NULL;
                if (cJSON_IsString(one)) {
                        single = cJSON_CreateArray();
                        cJSON_AddItemToArray(single, cJSON_CreateString(one->valuestring));
                        names = single;
                }
                cJSON_ArrayForEach(nm, names)
                {
                        if (!cJSON_IsString(nm))
                                continue;
                        count++;
                        int nr = seccomp_syscall_resolve_name(nm->valuestring);
                        if (nr == __NR_SCMP_ERROR)
                                continue; /* not on this architecture */
                        int rc = seccomp_rule_add_array(ctx, act, nr, ncmp, cmp);
                        if (rc < 0 && rc != -EACCES && rc != -EEXIST) {
                                cJSON_Delete(single);
                                return cb_error_set(err, -rc,
                                                    "syscalls[%zu]: cannot add a rule "
                                                    "for %s",
                                                    i, nm->valuestring);
                        }
                }
                cJSON_Delete(single);
                if (count == 0)
                        return cb_error_set(err, EINVAL, "syscalls[%zu]: no names", i);
                i++;
        }
        return 0;
}

/* ---- compile, export, cache ------------------------------------------------ */

struct cache_entry {
        int kind;
        uint64_t caps;
        uint64_t hash; /* FNV-1a of a Localhost profile's content */
        int fd;
};

#define CACHE_MAX 32
static struct cache_entry cache[CACHE_MAX];
static size_t cache_n;
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t fnv1a(const char *s, size_t len)
{
        uint64_t h = 1469598103934665603ULL;
        for (size_t i = 0; i < len; i++) {
                h ^= (unsigned char)s[i];
                h *= 1099511628211ULL;
        }
        return h;
}

static int export_memfd(scmp_filter_ctx ctx, int *ret_fd, struct cb_error *err)
{
        _cleanup_close_ int fd = memfd_create("cubelet-seccomp", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0)
                return cb_error_set(err, errno, "seccomp: cannot create a memfd");
        int rc = seccomp_export_bpf(ctx, fd);
        if (rc < 0)
                return cb_error_set(err, -rc, "seccomp: cannot export the filter");
        /* sealed: every container sharing the cached filter reads the same
         * program, nobody can change it afterwards */
        if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0)
                return cb_error_set(err, errno, "seccomp: cannot seal the filter memfd");
        *ret_fd = take_fd(&fd);
        return 0;
}

/* The capabilities that change the default profile. */
static uint64_t relevant_caps(uint64_t caps)
{
        uint64_t m = 0;
        for (size_t g = 0; g < CB_ARRAY_SIZE(cap_groups); g++)
                m |= UINT64_C(1) << cap_groups[g].cap;
        return caps & m;
}

static int load_profile(const struct rt_container_config *c, char **ret, size_t *ret_len,
                        struct cb_error *err)
{
        const char *p = c->seccomp_profile;
        if (p == NULL || p[0] == '\0' || p[0] == '/' || strstr(p, "..") != NULL)
                return cb_error_set(err, EINVAL,
                                    "seccomp profile \"%s\": want a path relative to "
                                    "%s/seccomp without \"..\"",
                                    p != NULL ? p : "", c->root_dir);
        char path[RT_PATH_MAX];
        if ((size_t)snprintf(path, sizeof(path), "%s/seccomp/%s", c->root_dir, p) >= sizeof(path))
                return cb_error_set(err, ENAMETOOLONG, "seccomp profile path is too long");
        if (cb_read_file(path, 4 << 20, ret, ret_len, err) < 0)
                return cb_error_prefix(err, "seccomp profile");
        return 0;
}

/* ---- the disk cache --------------------------------------------------------
 *
 * <root_dir>/cache/seccomp/<16 hex digits>.bpf, the digits the FNV-1a of the
 * key; the file:
 *
 *   "CBSECBPF" | u32 format (1) | u32 key length | u32 program length |
 *   key bytes | program (struct sock_filter[], the kernel's format)
 *
 * in host byte order. A file is used when it is a regular file owned by us,
 * writable by nobody else, of exactly the size its header gives, and its
 * key is ours; anything else is a miss (the filter is compiled and the file
 * written again). Written as <name>.<pid>.<tid>.tmp and renamed, without an
 * fsync: a file a power failure truncates fails the size check. Entries of
 * another executable, library or kernel can never match again: each write
 * removes them. Cache failures never fail a start: the filter is compiled.
 */

#define DISK_MAGIC   "CBSECBPF"
#define DISK_FORMAT  1u
#define DISK_HEADER  (8 + 3 * 4)
#define DISK_KEY_MAX ((4u << 20) + 4096u)

struct disk_key {
        char *buf;
        size_t len;
        size_t prefix; /* the part every entry of this executable/library/kernel shares */
};

static void disk_key_free(struct disk_key *k)
{
        free(k->buf);
        k->buf = NULL;
}

static int disk_key(const struct rt_container_config *c, uint64_t key_caps, const char *profile,
                    size_t plen, struct disk_key *ret)
{
        struct stat st;
        struct utsname un;
        if (stat("/proc/self/exe", &st) < 0 || uname(&un) < 0)
                return -1;
        const struct scmp_version *v = seccomp_version();
        char head[512];
        int prefix = snprintf(head, sizeof(head),
                              "cubelet seccomp cache 1\nexe %ju:%ju %jd %jd.%09ld\n"
                              "libseccomp %u.%u.%u api %u\nkernel %s %s\n",
                              (uintmax_t)st.st_dev, (uintmax_t)st.st_ino, (intmax_t)st.st_size,
                              (intmax_t)st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
                              v != NULL ? v->major : 0, v != NULL ? v->minor : 0,
                              v != NULL ? v->micro : 0, seccomp_api_get(), un.release, un.machine);
        if (prefix < 0 || (size_t)prefix >= sizeof(head))
                return -1;
        int tail =
            snprintf(head + prefix, sizeof(head) - (size_t)prefix,
                     "kind %d caps %016" PRIx64 " profile %zu\n", (int)c->seccomp, key_caps, plen);
        if (tail < 0 || (size_t)tail >= sizeof(head) - (size_t)prefix)
                return -1;
        size_t hlen = (size_t)prefix + (size_t)tail;
        if (hlen + plen > DISK_KEY_MAX)
                return -1;
        ret->buf = malloc(hlen + plen + 1);
        if (ret->buf == NULL)
                return -1;
        memcpy(ret->buf, head, hlen);
        if (plen > 0)
                memcpy(ret->buf + hlen, profile, plen);
        ret->len = hlen + plen;
        ret->prefix = (size_t)prefix;
        return 0;
}

/* The cache directory, created when missing; -1 when there is none we trust. */
static int disk_dir(const char *root_dir, bool create)
{
        if (root_dir == NULL || root_dir[0] == '\0')
                return -1;
        char path[RT_PATH_MAX];
        if ((size_t)snprintf(path, sizeof(path), "%s/cache/seccomp", root_dir) >= sizeof(path))
                return -1;
        if (create) {
                struct cb_error e = {0};
                if (cb_mkdir_p(path, 0700, 0700, &e) < 0)
                        return -1;
        }
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -1;
        struct stat st;
        if (fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 022) != 0) {
                close(fd);
                return -1;
        }
        return fd;
}

static void disk_name(const struct disk_key *k, char name[32])
{
        snprintf(name, 32, "%016" PRIx64 ".bpf", fnv1a(k->buf, k->len));
}

/* All of len bytes at off (pread: the offset of a shared fd stays); -1 on
 * an error (errno) or a short file (errno 0). */
static int read_full(int fd, void *buf, size_t len, off_t off)
{
        size_t done = 0;
        while (done < len) {
                ssize_t n = pread(fd, (char *)buf + done, len - done, off + (off_t)done);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        if (n == 0)
                                errno = 0;
                        return -1;
                }
                done += (size_t)n;
        }
        return 0;
}

/* A sealed memfd holding the cached program, or -1 on a miss. */
static int disk_load(const char *root_dir, const struct disk_key *k)
{
        _cleanup_close_ int dfd = disk_dir(root_dir, false);
        if (dfd < 0)
                return -1;
        char name[32];
        disk_name(k, name);
        _cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -1;
        struct stat st;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
            (st.st_mode & 022) != 0 || st.st_size < DISK_HEADER)
                return -1;
        unsigned char h[DISK_HEADER];
        if (read_full(fd, h, sizeof(h), 0) < 0 || memcmp(h, DISK_MAGIC, 8) != 0)
                return -1;
        uint32_t format, klen, plen;
        memcpy(&format, h + 8, 4);
        memcpy(&klen, h + 12, 4);
        memcpy(&plen, h + 16, 4);
        if (format != DISK_FORMAT || klen != k->len || plen == 0 ||
            plen % sizeof(struct sock_filter) != 0 ||
            plen / sizeof(struct sock_filter) > BPF_MAXINSNS ||
            (uint64_t)st.st_size != (uint64_t)DISK_HEADER + klen + plen)
                return -1;
        _cleanup_free_ char *buf = malloc((size_t)klen + plen);
        if (buf == NULL || read_full(fd, buf, (size_t)klen + plen, DISK_HEADER) < 0 ||
            memcmp(buf, k->buf, klen) != 0)
                return -1;
        _cleanup_close_ int mfd = memfd_create("cubelet-seccomp", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (mfd < 0)
                return -1;
        size_t off = 0;
        while (off < plen) {
                ssize_t n = write(mfd, buf + klen + off, plen - off);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return -1;
                off += (size_t)n;
        }
        if (fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0)
                return -1;
        return take_fd(&mfd);
}

/* Removes the entries whose key starts otherwise than ours (another
 * executable, libseccomp or kernel: they can never match again). */
static void disk_prune(int dfd, const struct disk_key *k, const char *keep)
{
        int dup = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
        if (dup < 0)
                return;
        DIR *d = fdopendir(dup);
        if (d == NULL) {
                close(dup);
                return;
        }
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
                size_t n = strlen(de->d_name);
                if (n < 5 || strcmp(de->d_name + n - 4, ".bpf") != 0 ||
                    strcmp(de->d_name, keep) == 0)
                        continue;
                _cleanup_close_ int fd = openat(dfd, de->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
                unsigned char h[DISK_HEADER];
                _cleanup_free_ char *prefix = malloc(k->prefix);
                bool same = fd >= 0 && prefix != NULL && read_full(fd, h, sizeof(h), 0) == 0 &&
                            read_full(fd, prefix, k->prefix, DISK_HEADER) == 0 &&
                            memcmp(prefix, k->buf, k->prefix) == 0;
                if (!same)
                        (void)unlinkat(dfd, de->d_name, 0);
        }
        closedir(d);
}

static void disk_store(const char *root_dir, const struct disk_key *k, int prog_fd)
{
        struct cb_error e = {0};
        _cleanup_free_ void *prog = NULL;
        size_t plen = 0;
        if (rt_seccomp_read(prog_fd, &prog, &plen, &e) < 0 || plen > UINT32_MAX)
                return;
        _cleanup_close_ int dfd = disk_dir(root_dir, true);
        if (dfd < 0)
                return;
        char name[32], tmp[96];
        disk_name(k, name);
        snprintf(tmp, sizeof(tmp), "%s.%ld.%ld.tmp", name, (long)getpid(), (long)gettid());
        _cleanup_close_ int fd =
            openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return;
        unsigned char h[DISK_HEADER];
        uint32_t format = DISK_FORMAT, klen = (uint32_t)k->len, pl = (uint32_t)plen;
        memcpy(h, DISK_MAGIC, 8);
        memcpy(h + 8, &format, 4);
        memcpy(h + 12, &klen, 4);
        memcpy(h + 16, &pl, 4);
        struct iovec iov[3] = {{h, sizeof(h)}, {k->buf, k->len}, {prog, plen}};
        size_t want = sizeof(h) + k->len + plen;
        ssize_t n = writev(fd, iov, 3);
        if (n < 0 || (size_t)n != want || renameat(dfd, tmp, dfd, name) < 0) {
                (void)unlinkat(dfd, tmp, 0);
                return;
        }
        disk_prune(dfd, k, name);
}

/* libseccomp: the filter of this kind and caps (or Localhost profile) into
 * a sealed memfd. */
static int compile(const struct rt_container_config *c, uint64_t key_caps, const char *profile,
                   int *ret_fd, struct cb_error *err)
{
        _cleanup_(ctx_releasep) scmp_filter_ctx ctx = NULL;
        if (c->seccomp == RT_SECCOMP_LOCALHOST) {
                if (build_profile(&ctx, profile, err) < 0)
                        return cb_error_prefix(err, "seccomp profile %s", c->seccomp_profile);
        } else {
                ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
                if (ctx == NULL)
                        return cb_error_set(err, ENOMEM, "seccomp_init failed");
                if (build_default(ctx, key_caps, err) < 0)
                        return -1;
        }
        return export_memfd(ctx, ret_fd, err);
}

void rt_seccomp_cache_forget(void)
{
        pthread_mutex_lock(&cache_lock);
        for (size_t i = 0; i < cache_n; i++)
                close(cache[i].fd);
        cache_n = 0;
        pthread_mutex_unlock(&cache_lock);
}

int rt_seccomp_fd(const struct rt_container_config *c, uint64_t caps, int *ret_fd,
                  struct cb_error *err)
{
        *ret_fd = -1;
        if (c->privileged || c->seccomp == RT_SECCOMP_UNCONFINED)
                return 0;
        _cleanup_free_ char *profile = NULL;
        size_t plen = 0;
        uint64_t hash = 0, key_caps = 0;
        if (c->seccomp == RT_SECCOMP_LOCALHOST) {
                if (load_profile(c, &profile, &plen, err) < 0)
                        return -1;
                hash = fnv1a(profile, plen);
        } else {
                key_caps = relevant_caps(caps);
        }
        pthread_mutex_lock(&cache_lock);
        for (size_t i = 0; i < cache_n; i++) {
                if (cache[i].kind == (int)c->seccomp && cache[i].caps == key_caps &&
                    cache[i].hash == hash) {
                        int fd = fcntl(cache[i].fd, F_DUPFD_CLOEXEC, 3);
                        pthread_mutex_unlock(&cache_lock);
                        if (fd < 0)
                                return cb_error_set(err, errno, "seccomp: cannot dup the filter");
                        *ret_fd = fd;
                        return 0;
                }
        }
        pthread_mutex_unlock(&cache_lock);

        struct disk_key dk = {0};
        bool have_key = disk_key(c, key_caps, profile, plen, &dk) == 0;
        int fd = have_key ? disk_load(c->root_dir, &dk) : -1;
        if (fd < 0) {
                if (compile(c, key_caps, profile, &fd, err) < 0) {
                        disk_key_free(&dk);
                        return -1;
                }
                if (have_key)
                        disk_store(c->root_dir, &dk, fd);
        }
        disk_key_free(&dk);
        pthread_mutex_lock(&cache_lock);
        if (cache_n < CACHE_MAX) {
                int keep = fcntl(fd, F_DUPFD_CLOEXEC, 3);
                if (keep >= 0)
                        cache[cache_n++] =
                            (struct cache_entry){(int)c->seccomp, key_caps, hash, keep};
        }
        pthread_mutex_unlock(&cache_lock);
        *ret_fd = fd;
        return 0;
}

int rt_seccomp_read(int fd, void **ret_prog, size_t *ret_len, struct cb_error *err)
{
        struct stat st;
        if (fstat(fd, &st) < 0)
                return cb_error_set(err, errno, "seccomp: cannot stat the filter fd");
        size_t len = (size_t)st.st_size;
        if (len == 0 || len % sizeof(struct sock_filter) != 0 ||
            len / sizeof(struct sock_filter) > BPF_MAXINSNS)
                return cb_error_set(err, EINVAL,
                                    "seccomp: the filter fd holds %zu bytes, not a "
                                    "BPF program",
                                    len);
        _cleanup_free_ void *buf = malloc(len);
        if (buf == NULL)
                return cb_error_set(err, ENOMEM, "seccomp: cannot read the filter");
        /* pread: the cached memfd's file offset is shared */
        if (read_full(fd, buf, len, 0) < 0)
                return cb_error_set(err, errno != 0 ? errno : EIO,
                                    "seccomp: cannot read the filter");
        *ret_prog = steal_pointer(&buf);
        *ret_len = len;
        return 0;
}

int rt_seccomp_load(const void *prog, size_t len, struct cb_error *err)
{
        struct sock_fprog fprog = {
            .len = (unsigned short)(len / sizeof(struct sock_filter)),
            .filter = (struct sock_filter *)prog,
        };
        if (rt_seccomp(SECCOMP_SET_MODE_FILTER, 0, &fprog) < 0)
                return cb_error_set(err, errno, "cannot load the seccomp filter");
        return 0;
}
