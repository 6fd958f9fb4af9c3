/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Cgroup mode detection. libcgroup 2.0.2 creates and writes on v1 and v2
 * alike but has no public call telling the modes apart, so the mode is read
 * from the file system types, the way crun's detect_cgroup_mode does it:
 *   - <mount> is cgroup2                               -> unified
 *   - <mount> is a tmpfs and <mount>/unified is cgroup2 -> hybrid
 *   - <mount> is a tmpfs otherwise                      -> legacy
 *   - anything else is not a cgroup mount: an error.
 */
#include "cgroups/cgroup.h"

#include <errno.h>
#include <linux/magic.h>
#include <stdio.h>
#include <sys/statfs.h>

const char *cg_mode_name(enum cg_mode mode)
{
        switch (mode) {
        case CG_MODE_LEGACY:
                return "legacy";
        case CG_MODE_HYBRID:
                return "hybrid";
        case CG_MODE_UNIFIED:
                return "unified";
        }
        return "unknown";
}

enum cg_version cg_mode_version(enum cg_mode mode)
{
        return mode == CG_MODE_UNIFIED ? CG_V2 : CG_V1;
}

int cg_detect_mode_at(const char *mount, enum cg_mode *ret, struct cb_error *err)
{
        struct statfs st;
        if (statfs(mount, &st) < 0)
                return cb_error_set(err, errno,
                                    "cannot detect the cgroup mode: statfs %s; mount cgroup2 "
                                    "(or the v1 hierarchies on a tmpfs) there",
                                    mount);
        if (st.f_type == CGROUP2_SUPER_MAGIC) {
                *ret = CG_MODE_UNIFIED;
                return 0;
        }
        if (st.f_type != TMPFS_MAGIC)
                return cb_error_set(err, 0,
                                    "cannot detect the cgroup mode: %s has file system type "
                                    "0x%lx, neither cgroup2 nor tmpfs (v1 hierarchies); mount "
                                    "cgroup2 there",
                                    mount, (unsigned long)st.f_type);
        char unified[4096];
        if ((size_t)snprintf(unified, sizeof(unified), "%s/unified", mount) >= sizeof(unified))
                return cb_error_set(err, ENAMETOOLONG, "cannot detect the cgroup mode of %s",
                                    mount);
        if (statfs(unified, &st) < 0) {
                if (errno != ENOENT)
                        return cb_error_set(err, errno, "cannot detect the cgroup mode: statfs %s",
                                            unified);
                *ret = CG_MODE_LEGACY;
                return 0;
        }
        *ret = st.f_type == CGROUP2_SUPER_MAGIC ? CG_MODE_HYBRID : CG_MODE_LEGACY;
        return 0;
}

int cg_detect_mode(enum cg_mode *ret, struct cb_error *err)
{
        return cg_detect_mode_at("/sys/fs/cgroup", ret, err);
}
