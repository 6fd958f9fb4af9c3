/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * subPath and subPathExpr resolved safely inside their volume, as the
 * kubelet does since CVE-2017-1002101 and CVE-2021-25741
 * (pkg/volume/util/subpath): the path is opened from the volume's root
 * with openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS), so neither ".."
 * nor a symlink (one planted or swapped in by another container of the
 * pod) can lead outside the volume; a missing path is made as directories
 * (0755) one component at a time, never through a symlink. The opened fd
 * is then bound (/proc/self/fd/N) onto
 * <root>/pods/<uid>/volume-subpaths/<volume>/<container>/<index>, the
 * source the runtime mounts: what the check saw is what the container gets.
 * Blocking (mounts): off the loop.
 */

#include "lib/error.h"

/* Binds volume_dir/path onto target (made as an empty file or directory,
 * like the source). An existing bind on target is replaced. */
int ag_subpath_prepare(const char *volume_dir, const char *path, const char *target,
                       struct cb_error *err);
