/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Paths below a directory fd, one component at a time (runtime/
 * image_internal.h): the layer unpacker's entry paths and the importer's
 * archive files. Apart from runtime/unpack.c so that a program that opens
 * files beneath a directory does not link the unpacker and libarchive (the
 * agent unpacks in the cubelet-unpack helper).
 */
#include "runtime/image_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/cleanup.h"

void rt_components_free(struct rt_components *c)
{
        free(c->buf);
        free(c->v);
        c->buf = NULL;
        c->v = NULL;
}

/* Splits p on '/', dropping leading "./", empty and "." components.
 * Refuses absolute paths and "..". Returns 0 or -1 with *why set. */
int rt_split_path(const char *p, struct rt_components *ret, const char **why)
{
        while (p[0] == '.' && p[1] == '/')
                p += 2;
        if (p[0] == '/') {
                *why = "absolute path";
                return -1;
        }
        struct rt_components c = {.buf = strdup(p)};
        c.v = calloc(strlen(p) / 2 + 2, sizeof(char *));
        if (c.buf == NULL || c.v == NULL) {
                rt_components_free(&c);
                *why = "out of memory";
                return -1;
        }
        char *save = NULL;
        for (char *t = strtok_r(c.buf, "/", &save); t != NULL; t = strtok_r(NULL, "/", &save)) {
                if (strcmp(t, ".") == 0)
                        continue;
                if (strcmp(t, "..") == 0) {
                        rt_components_free(&c);
                        *why = "\"..\" component would leave the layer directory";
                        return -1;
                }
                c.v[c.n++] = t;
        }
        *ret = c;
        return 0;
}

/* Opens the directory named by comps[0..n) below rootfd, one component at a
 * time, never following a symlink. Missing components are created (0755)
 * when create is set. */
int rt_open_dirs_beneath(int rootfd, char **comps, size_t n, int create, const char *entry,
                         struct cb_error *err)
{
        _cleanup_close_ int fd = openat(rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return cb_error_set(err, errno, "layer entry \"%s\": cannot open target dir",
                                    entry);
        for (size_t i = 0; i < n; i++) {
                int nfd = openat(fd, comps[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (nfd < 0 && errno == ENOENT && create) {
                        if (mkdirat(fd, comps[i], 0755) < 0 && errno != EEXIST)
                                return cb_error_set(err, errno,
                                                    "layer entry \"%s\": cannot create "
                                                    "parent \"%s\"",
                                                    entry, comps[i]);
                        nfd = openat(fd, comps[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                }
                if (nfd < 0) {
                        int e = errno;
                        struct stat st;
                        if ((e == ELOOP || e == ENOTDIR) &&
                            fstatat(fd, comps[i], &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                            S_ISLNK(st.st_mode))
                                return cb_error_set(err, 0,
                                                    "layer entry \"%s\": parent component "
                                                    "\"%s\" is a symlink; refusing to write "
                                                    "through it",
                                                    entry, comps[i]);
                        return cb_error_set(err, e, "layer entry \"%s\": cannot open parent \"%s\"",
                                            entry, comps[i]);
                }
                close(fd);
                fd = nfd;
        }
        return take_fd(&fd);
}

int rt_open_beneath(int dirfd, const char *relpath, int flags, struct cb_error *err)
{
        struct rt_components pc;
        const char *why;
        if (rt_split_path(relpath, &pc, &why) < 0)
                return cb_error_set(err, 0, "\"%s\": %s", relpath, why);
        if (pc.n == 0) {
                rt_components_free(&pc);
                return cb_error_set(err, 0, "\"%s\": not a file name", relpath);
        }
        int pfd = rt_open_dirs_beneath(dirfd, pc.v, pc.n - 1, 0, relpath, err);
        int fd = -1;
        if (pfd >= 0) {
                fd = openat(pfd, pc.v[pc.n - 1], flags | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0)
                        cb_error_set(err, errno, "cannot open \"%s\"", relpath);
                close(pfd);
        }
        rt_components_free(&pc);
        return fd;
}
