/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The kubelet's atomic writer (pkg/volume/util/atomic_writer.go), for
 * configMap, secret, downwardAPI and projected volumes: the payload is
 * written into a fresh timestamped directory `..<YYYY_MM_DD_HH_MM_SS>.<n>`
 * inside the volume, the `..data` symlink is pointed at it with one
 * rename (readers see the old or the new set, never a mix), each
 * user-visible top-level name is a symlink `<name> -> ..data/<name>`,
 * names gone from the payload are removed, then the old directory. An
 * unchanged payload (same files, bytes and modes) writes nothing.
 *
 * Thread-safe, blocking I/O: run it off the loop (an offload job). Every
 * operation is relative to the volume directory's fd, nothing follows a
 * symlink the container could have planted except `..data`, which the
 * writer itself made.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"

struct ag_payload_file {
        const char *path; /* relative, checked: no "..", not absolute, no "..x" first element */
        const char *data;
        size_t len;
        int mode;         /* permission bits */
        bool has_fs_user; /* chowned to this user (the kubelet's FileProjection.FsUser) */
        int64_t fs_user;
};

struct ag_atomic_opts {
        bool has_fs_group; /* the pod's fsGroup: files and dirs chowned to it */
        int64_t fs_group;
        /* The kubelet's SetVolumeOwnership for its read-only volumes: with
         * fsGroup, files get g+r (0440 added), directories g+rx and setgid. */
};

/* Writes the payload into dir (which must exist). ret_changed (may be
 * NULL): whether anything was written. Errors name the file. */
int ag_atomic_write(const char *dir, const struct ag_payload_file *files, size_t n,
                    const struct ag_atomic_opts *opts, bool *ret_changed, struct cb_error *err);

/* A payload path as the atomic writer accepts it (its validatePath). */
int ag_payload_path_check(const char *path, struct cb_error *err);
