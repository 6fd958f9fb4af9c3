/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Capabilities (pattern 8): libcap for names, raw system calls for the
 * transition in the container's init, so the order is explicit:
 *
 *   1. PR_CAPBSET_DROP for every capability not in the set (needs
 *      CAP_SETPCAP, so it happens while the process is still full root);
 *   2. (init.c) setgroups, PR_SET_KEEPCAPS, setresgid, setresuid;
 *   3. capset: effective = permitted = the set, inheritable empty;
 *   4. ambient set cleared.
 *
 * Inheritable and ambient stay empty, as containerd and CRI-O do since
 * CVE-2022-24769: a root container gets the set as its effective
 * capabilities after execve (root's file capabilities are "all" masked by
 * the bounding set), a non-root container gets none unless a binary has
 * file capabilities, which is what Kubernetes users expect.
 */
#include <errno.h>
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/container.h"
#include "runtime/container_internal.h"

static const char *const default_caps[] = {
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_FSETID",
    "CAP_FOWNER",
    "CAP_MKNOD",
    "CAP_NET_RAW",
    "CAP_SETGID",
    "CAP_SETUID",
    "CAP_SETFCAP",
    "CAP_SETPCAP",
    "CAP_NET_BIND_SERVICE",
    "CAP_SYS_CHROOT",
    "CAP_KILL",
    "CAP_AUDIT_WRITE",
    NULL,
};

const char *const *rt_caps_default(size_t *ret_n)
{
        if (ret_n != NULL)
                *ret_n = (sizeof(default_caps) / sizeof(default_caps[0]) - 1);
        return default_caps;
}

int rt_cap_last(void)
{
        static int last = -1;
        if (last >= 0)
                return last;
        /* /proc/sys/kernel/cap_last_cap through libcap, which probes with
         * PR_CAPBSET_READ when /proc is not there */
        int n = (int)cap_max_bits() - 1;
        if (n < 0 || n > 63)
                n = CAP_LAST_CAP;
        last = n;
        return last;
}

int rt_caps_parse(const char *const *names, size_t n, uint64_t *ret_mask, struct cb_error *err)
{
        uint64_t mask = 0;
        for (size_t i = 0; i < n; i++) {
                const char *name = names[i];
                if (name == NULL)
                        return cb_error_set(err, EINVAL, "capabilities[%zu]: missing name", i);
                if (strcasecmp(name, "ALL") == 0 || strcasecmp(name, "CAP_ALL") == 0) {
                        for (int c = 0; c <= rt_cap_last(); c++)
                                mask |= UINT64_C(1) << c;
                        continue;
                }
                char lower[64];
                size_t off = 0;
                if (strncasecmp(name, "CAP_", 4) != 0)
                        off = (size_t)snprintf(lower, sizeof(lower), "cap_");
                size_t len = strlen(name);
                if (off + len >= sizeof(lower))
                        return cb_error_set(err, EINVAL,
                                            "capabilities[%zu]: unknown capability "
                                            "\"%s\"",
                                            i, name);
                for (size_t k = 0; k <= len; k++)
                        lower[off + k] = (char)tolower((unsigned char)name[k]);
                cap_value_t v;
                if (cap_from_name(lower, &v) < 0 || v < 0 || v > 63)
                        return cb_error_set(err, EINVAL,
                                            "capabilities[%zu]: unknown capability \"%s\" "
                                            "(names as in capabilities(7), e.g. NET_ADMIN)",
                                            i, name);
                if (v > rt_cap_last())
                        continue; /* the kernel does not know it: nothing to grant */
                mask |= UINT64_C(1) << v;
        }
        *ret_mask = mask;
        return 0;
}

int rt_caps_drop_bounding(uint64_t caps, struct cb_error *err)
{
        for (int c = 0; c <= rt_cap_last(); c++) {
                if (caps & (UINT64_C(1) << c))
                        continue;
                if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
                        return cb_error_set(err, errno,
                                            "cannot drop capability %d from the "
                                            "bounding set",
                                            c);
        }
        return 0;
}

int rt_caps_set(uint64_t caps, struct cb_error *err)
{
        struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
        struct __user_cap_data_struct data[2];
        memset(data, 0, sizeof(data));
        data[0].effective = data[0].permitted = (uint32_t)caps;
        data[1].effective = data[1].permitted = (uint32_t)(caps >> 32);
        if (syscall(SYS_capset, &hdr, data) < 0)
                return cb_error_set(err, errno, "cannot set capabilities (capset)");
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
                return cb_error_set(err, errno, "cannot clear the ambient capabilities");
        return 0;
}
