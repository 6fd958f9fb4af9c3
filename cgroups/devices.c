/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The device policy of an unprivileged container, runc's default list:
 * mknod of any node is allowed (m), but read and write only on
 *
 *   c 1:3 null, 1:5 zero, 1:7 full, 1:8 random, 1:9 urandom,
 *   c 5:0 tty, 5:1 console, 5:2 ptmx, c 136:* (the pts), c 10:200 (tun)
 *
 * so a container with CAP_MKNOD (in the default set) still cannot open the
 * host's disks. cgroup v1: "a" written to devices.deny, then the list to
 * devices.allow. cgroup v2 has no device files: a BPF_PROG_TYPE_CGROUP_DEVICE
 * program built here (a handful of instructions, as crun builds its own) is
 * loaded with bpf(2) and attached to the container's cgroup; it stays
 * attached after its fd is closed and goes with the cgroup.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cgroups/cgroup.h"
#include "lib/cleanup.h"

struct dev_rule {
        char type;     /* 'c', 'b', 'a' (any) */
        int32_t major; /* -1 = any */
        int32_t minor; /* -1 = any */
        const char *access;
};

static const struct dev_rule rules[] = {
    {'c', -1, -1, "m"}, {'b', -1, -1, "m"}, {'c', 1, 3, "rwm"},    {'c', 1, 5, "rwm"},
    {'c', 1, 7, "rwm"}, {'c', 1, 8, "rwm"}, {'c', 1, 9, "rwm"},    {'c', 5, 0, "rwm"},
    {'c', 5, 1, "rwm"}, {'c', 5, 2, "rwm"}, {'c', 136, -1, "rwm"}, {'c', 10, 200, "rwm"},
};

static int write_file(const char *dir, const char *name, const char *value, struct cb_error *err)
{
        char p[4096];
        if ((size_t)snprintf(p, sizeof(p), "%s/%s", dir, name) >= sizeof(p))
                return cb_error_set(err, ENAMETOOLONG, "%s/%s is too long", dir, name);
        _cleanup_close_ int fd = open(p, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return cb_error_set(err, errno, "cannot open %s", p);
        size_t len = strlen(value);
        if (write(fd, value, len) != (ssize_t)len)
                return cb_error_set(err, errno, "cannot write \"%s\" to %s", value, p);
        return 0;
}

static int restrict_v1(const char *path, struct cb_error *err)
{
        char dir[4096];
        if (cg_dir(path, "devices", dir, sizeof(dir), err) < 0)
                return -1;
        if (write_file(dir, "devices.deny", "a", err) < 0)
                return -1;
        for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
                char line[64], maj[16], min[16];
                snprintf(maj, sizeof(maj), rules[i].major < 0 ? "*" : "%d", rules[i].major);
                snprintf(min, sizeof(min), rules[i].minor < 0 ? "*" : "%d", rules[i].minor);
                snprintf(line, sizeof(line), "%c %s:%s %s", rules[i].type, maj, min,
                         rules[i].access);
                if (write_file(dir, "devices.allow", line, err) < 0)
                        return -1;
        }
        return 0;
}

/* ---- cgroup v2: the BPF program ------------------------------------------------------ */

#define INSN(c, d, s, o, i)                                                                        \
        ((struct bpf_insn){.code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i)})

static size_t rule_insns(const struct dev_rule *r, struct bpf_insn *out)
{
        /* R2 = type, R3 = requested access, R4 = major, R5 = minor (see below).
         * Every check jumps to the next rule when it does not match. */
        struct bpf_insn b[16];
        size_t n = 0;
        int access = 0;
        for (const char *a = r->access; *a; a++)
                access |= *a == 'm'   ? BPF_DEVCG_ACC_MKNOD
                          : *a == 'r' ? BPF_DEVCG_ACC_READ
                                      : BPF_DEVCG_ACC_WRITE;
        int all = BPF_DEVCG_ACC_MKNOD | BPF_DEVCG_ACC_READ | BPF_DEVCG_ACC_WRITE;
        /* placeholders: off is patched to skip the rest of the block */
        if (r->type != 'a')
                b[n++] = INSN(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_2, 0, 0,
                              r->type == 'c' ? BPF_DEVCG_DEV_CHAR : BPF_DEVCG_DEV_BLOCK);
        if (access != all) {
                /* R1 = R3 & ~access: a requested bit outside the rule */
                b[n++] = INSN(BPF_ALU | BPF_MOV | BPF_X, BPF_REG_1, BPF_REG_3, 0, 0);
                b[n++] = INSN(BPF_ALU | BPF_AND | BPF_K, BPF_REG_1, 0, 0, ~access);
                b[n++] = INSN(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_1, 0, 0, 0);
        }
        if (r->major >= 0)
                b[n++] = INSN(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_4, 0, 0, r->major);
        if (r->minor >= 0)
                b[n++] = INSN(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_5, 0, 0, r->minor);
        b[n++] = INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 1);
        b[n++] = INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
        for (size_t i = 0; i < n; i++) {
                if (BPF_CLASS(b[i].code) == BPF_JMP && BPF_OP(b[i].code) == BPF_JNE)
                        b[i].off = (int16_t)(n - i - 1);
                out[i] = b[i];
        }
        return n;
}

static int restrict_v2(const char *path, struct cb_error *err)
{
        struct bpf_insn prog[16 * (sizeof(rules) / sizeof(rules[0])) + 16];
        size_t n = 0;
        /* struct bpf_cgroup_dev_ctx { u32 access_type; u32 major; u32 minor; } in R1;
         * access_type = access << 16 | type */
        prog[n++] = INSN(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_2, BPF_REG_1, 0, 0);
        prog[n++] = INSN(BPF_ALU | BPF_MOV | BPF_X, BPF_REG_3, BPF_REG_2, 0, 0);
        prog[n++] = INSN(BPF_ALU | BPF_AND | BPF_K, BPF_REG_2, 0, 0, 0xffff);
        prog[n++] = INSN(BPF_ALU | BPF_RSH | BPF_K, BPF_REG_3, 0, 0, 16);
        prog[n++] = INSN(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_4, BPF_REG_1, 4, 0);
        prog[n++] = INSN(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_5, BPF_REG_1, 8, 0);
        for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++)
                n += rule_insns(&rules[i], prog + n);
        prog[n++] = INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0);
        prog[n++] = INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);

        char dir[4096];
        if (cg_dir(path, "memory", dir, sizeof(dir), err) < 0)
                return -1;
        _cleanup_close_ int cgfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (cgfd < 0)
                return cb_error_set(err, errno, "cannot open the cgroup %s", dir);
        char log[4096] = "";
        union bpf_attr load;
        memset(&load, 0, sizeof(load));
        load.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
        load.insns = (uint64_t)(uintptr_t)prog;
        load.insn_cnt = (uint32_t)n;
        load.license = (uint64_t)(uintptr_t) "Apache-2.0";
        load.log_buf = (uint64_t)(uintptr_t)log;
        load.log_size = sizeof(log);
        load.log_level = 1;
        int pfd = (int)syscall(SYS_bpf, BPF_PROG_LOAD, &load, sizeof(load));
        if (pfd < 0) {
                /* retry without a log: some kernels refuse log_level for
                 * programs that load fine */
                int e = errno;
                load.log_buf = 0;
                load.log_size = 0;
                load.log_level = 0;
                pfd = (int)syscall(SYS_bpf, BPF_PROG_LOAD, &load, sizeof(load));
                if (pfd < 0)
                        return cb_error_set(err, e, "cannot load the device policy for %s%s%.200s",
                                            dir, log[0] ? ": " : "", log);
        }
        _cleanup_close_ int prog_fd = pfd;
        (void)fcntl(prog_fd, F_SETFD, FD_CLOEXEC);
        union bpf_attr at;
        memset(&at, 0, sizeof(at));
        at.target_fd = (uint32_t)cgfd;
        at.attach_bpf_fd = (uint32_t)prog_fd;
        at.attach_type = BPF_CGROUP_DEVICE;
        at.attach_flags = BPF_F_ALLOW_MULTI;
        if (syscall(SYS_bpf, BPF_PROG_ATTACH, &at, sizeof(at)) < 0)
                return cb_error_set(err, errno, "cannot attach the device policy to %s", dir);
        return 0;
}

int cg_restrict_devices(const char *path, struct cb_error *err)
{
        if (cg_init(err) < 0)
                return -1;
        if (cg_mode_version(cg_current_mode()) == CG_V2)
                return restrict_v2(path, err);
        return restrict_v1(path, err);
}
