/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Layer extraction (runtime/unpack.c) against hostile archives, built here
 * with libarchive's writer. Every hostile case asserts that the layer is
 * refused, that the error names the entry, and that nothing appeared
 * outside the target dir. Needs root (ownership, device nodes, trusted.*
 * xattrs): exits 77 otherwise.
 */
#include <archive.h>
#include <archive_entry.h>
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "runtime/image.h"

#include "helpers.h"

struct tent {
        const char *path;
        int type;            /* AE_IFREG, AE_IFDIR, AE_IFLNK; 0 = hardlink */
        const char *content; /* file data, or symlink/hardlink target */
        int mode;
        int uid, gid;
        long mtime;
};

static char base[256], target[300], outside[300], tarpath[300];

static void write_tar(const char *path, const struct tent *ents, size_t n, int gzip)
{
        struct archive *a = archive_write_new();
        ck_assert_ptr_nonnull(a);
        ck_assert_int_eq(archive_write_set_format_pax_restricted(a), ARCHIVE_OK);
        if (gzip)
                ck_assert_int_eq(archive_write_add_filter_gzip(a), ARCHIVE_OK);
        ck_assert_int_eq(archive_write_open_filename(a, path), ARCHIVE_OK);
        for (size_t i = 0; i < n; i++) {
                struct archive_entry *e = archive_entry_new();
                archive_entry_set_pathname(e, ents[i].path);
                archive_entry_set_uid(e, ents[i].uid);
                archive_entry_set_gid(e, ents[i].gid);
                archive_entry_set_mtime(e, ents[i].mtime ? ents[i].mtime : 1700000000, 0);
                int mode = ents[i].mode ? ents[i].mode : (ents[i].type == AE_IFDIR ? 0755 : 0644);
                archive_entry_set_perm(e, (mode_t)mode);
                size_t len = 0;
                switch (ents[i].type) {
                case AE_IFREG:
                        archive_entry_set_filetype(e, AE_IFREG);
                        len = ents[i].content ? strlen(ents[i].content) : 0;
                        archive_entry_set_size(e, (la_int64_t)len);
                        break;
                case AE_IFDIR:
                        archive_entry_set_filetype(e, AE_IFDIR);
                        break;
                case AE_IFLNK:
                        archive_entry_set_filetype(e, AE_IFLNK);
                        archive_entry_set_symlink(e, ents[i].content);
                        break;
                default: /* hardlink */
                        archive_entry_set_filetype(e, AE_IFREG);
                        archive_entry_set_hardlink(e, ents[i].content);
                        archive_entry_set_size(e, 0);
                }
                ck_assert_int_eq(archive_write_header(a, e), ARCHIVE_OK);
                if (len > 0)
                        ck_assert_int_eq(archive_write_data(a, ents[i].content, len),
                                         (la_ssize_t)len);
                archive_entry_free(e);
        }
        ck_assert_int_eq(archive_write_close(a), ARCHIVE_OK);
        archive_write_free(a);
}

static void setup(void)
{
        snprintf(base, sizeof(base), "/tmp/cubelet-unpack-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(base));
        snprintf(target, sizeof(target), "%s/target", base);
        snprintf(outside, sizeof(outside), "%s/outside", base);
        snprintf(tarpath, sizeof(tarpath), "%s/layer.tar", base);
        ck_assert_int_eq(mkdir(target, 0755), 0);
        ck_assert_int_eq(mkdir(outside, 0755), 0);
}

static void teardown(void)
{
        struct cb_error err = {0};
        rt_rm_rf(base, &err);
}

static int exists(const char *dir, const char *rel)
{
        char p[1024];
        struct stat st;
        snprintf(p, sizeof(p), "%s/%s", dir, rel);
        return lstat(p, &st) == 0;
}

/* Entries in the outside dir other than the sentinels the test made. */
static int outside_count(void)
{
        DIR *d = opendir(outside);
        ck_assert_ptr_nonnull(d);
        int n = 0;
        struct dirent *de;
        while ((de = readdir(d)) != NULL)
                if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0 &&
                    strcmp(de->d_name, "secret") != 0 && strcmp(de->d_name, "keep") != 0)
                        n++;
        closedir(d);
        return n;
}

static void expect_refused(const struct tent *ents, size_t n, const char *entry, const char *why)
{
        struct cb_error err = {0};
        write_tar(tarpath, ents, n, 0);
        int rc = rt_layer_unpack(tarpath, target, RT_UNPACK_OVERLAY_WHITEOUTS, &err);
        ck_assert_msg(rc < 0, "a layer with \"%s\" was accepted", entry);
        char quoted[512];
        snprintf(quoted, sizeof(quoted), "\"%s", entry);
        ck_assert_msg(strstr(err.msg, quoted) != NULL, "error \"%s\" does not name %s", err.msg,
                      quoted);
        ck_assert_msg(strstr(err.msg, why) != NULL, "error \"%s\" lacks \"%s\"", err.msg, why);
}

START_TEST(test_dotdot_escape)
{
        const struct tent t[] = {{"ok", AE_IFREG, "fine", 0, 0, 0, 0},
                                 {"../escape", AE_IFREG, "pwned", 0, 0, 0, 0}};
        expect_refused(t, 2, "../escape", "\"..\"");
        ck_assert(!exists(base, "escape"));
        const struct tent t2[] = {{"a/b/../../../escape2", AE_IFREG, "pwned", 0, 0, 0, 0}};
        expect_refused(t2, 1, "a/b/../../../escape2", "\"..\"");
        ck_assert(!exists(base, "escape2"));
        ck_assert_int_eq(outside_count(), 0);
}
END_TEST

START_TEST(test_absolute_path)
{
        char abs[512];
        snprintf(abs, sizeof(abs), "%s/abs", outside);
        const struct tent t[] = {{abs, AE_IFREG, "pwned", 0, 0, 0, 0}};
        expect_refused(t, 1, abs, "absolute");
        ck_assert(!exists(outside, "abs"));
        ck_assert(!exists(target, abs + 1));
}
END_TEST

START_TEST(test_symlink_to_root_then_write)
{
        /* link -> / then link/<base>/outside/x would land in outside/x. */
        char through[512];
        snprintf(through, sizeof(through), "link%s/x", outside);
        const struct tent t[] = {{"link", AE_IFLNK, "/", 0, 0, 0, 0},
                                 {through, AE_IFREG, "pwned", 0, 0, 0, 0}};
        expect_refused(t, 2, through, "symlink");
        ck_assert_int_eq(outside_count(), 0);
        /* The symlink itself is kept as data: it is not followed. */
        char buf[16] = {0};
        char p[512];
        snprintf(p, sizeof(p), "%s/link", target);
        ck_assert_int_eq(readlink(p, buf, sizeof(buf) - 1), 1);
}
END_TEST

START_TEST(test_symlink_dotdot_chain)
{
        const struct tent t[] = {{"up", AE_IFLNK, "..", 0, 0, 0, 0},
                                 {"up/outside/x", AE_IFREG, "pwned", 0, 0, 0, 0}};
        expect_refused(t, 2, "up/outside/x", "symlink");
        const struct tent t2[] = {{"d", AE_IFDIR, NULL, 0, 0, 0, 0},
                                  {"d/up1", AE_IFLNK, "..", 0, 0, 0, 0},
                                  {"d/up2", AE_IFLNK, "up1/..", 0, 0, 0, 0},
                                  {"d/up2/outside/y", AE_IFREG, "pwned", 0, 0, 0, 0}};
        expect_refused(t2, 4, "d/up2/outside/y", "symlink");
        /* A directory entry through the chain is refused the same way. */
        const struct tent t3[] = {{"d/up2/outside/newdir", AE_IFDIR, NULL, 0, 0, 0, 0}};
        expect_refused(t3, 1, "d/up2/outside/newdir", "symlink");
        ck_assert_int_eq(outside_count(), 0);
}
END_TEST

START_TEST(test_hardlink_outside)
{
        char secret[512];
        snprintf(secret, sizeof(secret), "%s/secret", outside);
        FILE *f = fopen(secret, "we");
        ck_assert_ptr_nonnull(f);
        fputs("secret", f);
        fclose(f);
        const struct tent t[] = {{"h", 0, "../outside/secret", 0, 0, 0, 0}};
        expect_refused(t, 1, "h", "\"..\"");
        const struct tent t2[] = {{"h2", 0, secret, 0, 0, 0, 0}};
        expect_refused(t2, 1, "h2", "absolute");
        const struct tent t3[] = {{"s", AE_IFLNK, outside, 0, 0, 0, 0},
                                  {"h3", 0, "s/secret", 0, 0, 0, 0}};
        expect_refused(t3, 2, "h3", "symlink");
        struct stat st;
        ck_assert_int_eq(stat(secret, &st), 0);
        ck_assert_int_eq(st.st_nlink, 1);
        ck_assert(!exists(target, "h") && !exists(target, "h2") && !exists(target, "h3"));
}
END_TEST

START_TEST(test_file_replaces_symlink)
{
        /* A file entry over a symlink pointing outside replaces the link
         * and never writes through it. */
        char victim[512];
        snprintf(victim, sizeof(victim), "%s/victim", outside);
        const struct tent t[] = {{"f", AE_IFLNK, victim, 0, 0, 0, 0},
                                 {"f", AE_IFREG, "new", 0, 0, 0, 0},
                                 {"d", AE_IFLNK, outside, 0, 0, 0, 0},
                                 {"d", AE_IFDIR, NULL, 0, 0, 0, 0},
                                 {"d/inside", AE_IFREG, "in", 0, 0, 0, 0}};
        struct cb_error err = {0};
        write_tar(tarpath, t, 5, 0);
        ck_assert_msg(rt_layer_unpack(tarpath, target, 0, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(outside_count(), 0);
        struct stat st;
        char p[512];
        snprintf(p, sizeof(p), "%s/f", target);
        ck_assert_int_eq(lstat(p, &st), 0);
        ck_assert(S_ISREG(st.st_mode));
        snprintf(p, sizeof(p), "%s/d", target);
        ck_assert_int_eq(lstat(p, &st), 0);
        ck_assert(S_ISDIR(st.st_mode));
        ck_assert(exists(target, "d/inside"));
}
END_TEST

START_TEST(test_metadata_kept)
{
        const struct tent t[] = {
            {"bin", AE_IFDIR, NULL, 0750, 0, 0, 1000},
            {"bin/tool", AE_IFREG, "#!/bin/sh\n", 04755, 1234, 5678, 2000},
            {"bin/alias", AE_IFLNK, "tool", 0777, 1234, 5678, 3000},
            {"bin/same", 0, "bin/tool", 0, 0, 0, 0},
        };
        struct cb_error err = {0};
        write_tar(tarpath, t, 4, 1); /* gzip-compressed */
        ck_assert_msg(rt_layer_unpack(tarpath, target, RT_UNPACK_OVERLAY_WHITEOUTS, &err) == 0,
                      "%s", err.msg);
        struct stat st, st2;
        char p[512], p2[512], buf[16] = {0};
        snprintf(p, sizeof(p), "%s/bin/tool", target);
        ck_assert_int_eq(lstat(p, &st), 0);
        ck_assert_int_eq(st.st_mode & 07777, 04755);
        ck_assert_int_eq(st.st_uid, 1234);
        ck_assert_int_eq(st.st_gid, 5678);
        ck_assert_int_eq(st.st_mtime, 2000);
        ck_assert_int_eq(st.st_size, 10);
        snprintf(p2, sizeof(p2), "%s/bin/same", target);
        ck_assert_int_eq(lstat(p2, &st2), 0);
        ck_assert_int_eq(st.st_ino, st2.st_ino);
        snprintf(p, sizeof(p), "%s/bin/alias", target);
        ck_assert_int_eq(lstat(p, &st), 0);
        ck_assert(S_ISLNK(st.st_mode));
        ck_assert_int_eq(st.st_uid, 1234);
        ck_assert_int_eq(st.st_mtime, 3000);
        ck_assert_int_eq(readlink(p, buf, sizeof(buf) - 1), 4);
        ck_assert_str_eq(buf, "tool");
        /* The directory's mtime survives the entries written into it. */
        snprintf(p, sizeof(p), "%s/bin", target);
        ck_assert_int_eq(lstat(p, &st), 0);
        ck_assert_int_eq(st.st_mode & 07777, 0750);
        ck_assert_int_eq(st.st_mtime, 1000);
}
END_TEST

static void unpack_into(const char *dir, const struct tent *t, size_t n)
{
        struct cb_error err = {0};
        ck_assert_int_eq(mkdir(dir, 0755), 0);
        write_tar(tarpath, t, n, 0);
        ck_assert_msg(rt_layer_unpack(tarpath, dir, RT_UNPACK_OVERLAY_WHITEOUTS, &err) == 0, "%s",
                      err.msg);
}

START_TEST(test_whiteouts_two_layers)
{
        char l1[512], l2[512], p[600];
        snprintf(l1, sizeof(l1), "%s/l1", base);
        snprintf(l2, sizeof(l2), "%s/l2", base);
        const struct tent layer1[] = {
            {"etc", AE_IFDIR, NULL, 0, 0, 0, 0},      {"etc/a", AE_IFREG, "a", 0, 0, 0, 0},
            {"etc/b", AE_IFREG, "b", 0, 0, 0, 0},     {"opq", AE_IFDIR, NULL, 0, 0, 0, 0},
            {"opq/old", AE_IFREG, "old", 0, 0, 0, 0},
        };
        const struct tent layer2[] = {
            {"etc/.wh.a", AE_IFREG, NULL, 0, 0, 0, 0},
            {"opq", AE_IFDIR, NULL, 0, 0, 0, 0},
            {"opq/.wh..wh..opq", AE_IFREG, NULL, 0, 0, 0, 0},
            {"opq/new", AE_IFREG, "new", 0, 0, 0, 0},
            {".wh..wh.plnk", AE_IFDIR, NULL, 0, 0, 0, 0}, /* aufs bookkeeping: skipped */
        };
        unpack_into(l1, layer1, sizeof(layer1) / sizeof(layer1[0]));
        unpack_into(l2, layer2, sizeof(layer2) / sizeof(layer2[0]));

        struct stat st;
        snprintf(p, sizeof(p), "%s/etc/a", l2);
        ck_assert_int_eq(lstat(p, &st), 0);
        ck_assert(S_ISCHR(st.st_mode));
        ck_assert_int_eq(major(st.st_rdev), 0);
        ck_assert_int_eq(minor(st.st_rdev), 0);
        ck_assert(!exists(l2, "etc/.wh.a"));
        ck_assert(!exists(l2, "opq/.wh..wh..opq"));
        ck_assert(!exists(l2, ".wh..wh.plnk"));
        ck_assert(exists(l2, "opq/new"));
        char val[8] = {0};
        snprintf(p, sizeof(p), "%s/opq", l2);
        ck_assert_int_eq(lgetxattr(p, "trusted.overlay.opaque", val, sizeof(val)), 1);
        ck_assert_str_eq(val, "y");
        /* Layer 1 is untouched by layer 2. */
        ck_assert(exists(l1, "etc/a") && exists(l1, "opq/old"));

        /* The real test of the representation: overlayfs honours it. */
        char mnt[512], opts[1400], up[512], work[512];
        snprintf(mnt, sizeof(mnt), "%s/mnt", base);
        snprintf(up, sizeof(up), "%s/up", base);
        snprintf(work, sizeof(work), "%s/work", base);
        ck_assert_int_eq(mkdir(mnt, 0755), 0);
        snprintf(opts, sizeof(opts), "lowerdir=%s:%s", l2, l1);
        if (mount("overlay", mnt, "overlay", MS_RDONLY, opts) < 0) {
                fprintf(stderr,
                        "test_whiteouts_two_layers: overlay mount unavailable (%s); "
                        "checked the on-disk form only\n",
                        strerror(errno));
                return;
        }
        int a = exists(mnt, "etc/a"), b = exists(mnt, "etc/b"), old = exists(mnt, "opq/old"),
            nw = exists(mnt, "opq/new");
        umount2(mnt, MNT_DETACH);
        ck_assert_msg(!a, "whiteout etc/.wh.a did not hide etc/a");
        ck_assert(b);
        ck_assert_msg(!old, "opaque opq/ did not hide opq/old");
        ck_assert(nw);
}
END_TEST

START_TEST(test_archive_overlay_xattr_dropped)
{
        /* A layer may not forge overlay metadata through pax xattrs. */
        struct archive *a = archive_write_new();
        archive_write_set_format_pax(a);
        ck_assert_int_eq(archive_write_open_filename(a, tarpath), ARCHIVE_OK);
        struct archive_entry *e = archive_entry_new();
        archive_entry_set_pathname(e, "d");
        archive_entry_set_filetype(e, AE_IFDIR);
        archive_entry_set_perm(e, 0755);
        archive_entry_xattr_add_entry(e, "trusted.overlay.opaque", "y", 1);
        archive_entry_xattr_add_entry(e, "user.kept", "1", 1);
        ck_assert_int_eq(archive_write_header(a, e), ARCHIVE_OK);
        archive_entry_free(e);
        archive_write_close(a);
        archive_write_free(a);
        struct cb_error err = {0};
        ck_assert_msg(rt_layer_unpack(tarpath, target, RT_UNPACK_OVERLAY_WHITEOUTS, &err) == 0,
                      "%s", err.msg);
        char p[512], val[8] = {0};
        snprintf(p, sizeof(p), "%s/d", target);
        ck_assert_int_lt(lgetxattr(p, "trusted.overlay.opaque", val, sizeof(val)), 0);
        ck_assert_int_eq(lgetxattr(p, "user.kept", val, sizeof(val)), 1);
}
END_TEST

START_TEST(test_rm_rf_no_follow)
{
        char p[512], victim[512];
        snprintf(victim, sizeof(victim), "%s/keep", outside);
        FILE *f = fopen(victim, "we");
        ck_assert_ptr_nonnull(f);
        fclose(f);
        snprintf(p, sizeof(p), "%s/sub", target);
        ck_assert_int_eq(mkdir(p, 0755), 0);
        snprintf(p, sizeof(p), "%s/sub/link", target);
        ck_assert_int_eq(symlink(outside, p), 0);
        struct cb_error err = {0};
        ck_assert_int_eq(rt_rm_rf(target, &err), 0);
        ck_assert(!exists(base, "target"));
        ck_assert(exists(outside, "keep"));
}
END_TEST

/* ---- the helper process (runtime/unpack_helper.c, cubelet-unpack) ---- */

START_TEST(test_helper_unpacks)
{
        const struct tent t[] = {{"a/b", AE_IFREG, "via-helper", 0640, 7, 8, 0},
                                 {"a/.wh.gone", AE_IFREG, "", 0, 0, 0, 0}};
        struct cb_error err = {0};
        write_tar(tarpath, t, 2, 1);
        ck_assert_msg(rt_layer_unpack_helper(CUBELET_UNPACK_BINARY, tarpath, target,
                                             RT_UNPACK_OVERLAY_WHITEOUTS, &err) == 0,
                      "%s", err.msg);
        char p[512];
        struct stat st;
        snprintf(p, sizeof(p), "%s/a/b", target);
        ck_assert_int_eq(lstat(p, &st), 0);
        ck_assert_int_eq(st.st_mode & 07777, 0640);
        ck_assert_int_eq(st.st_uid, 7);
        ck_assert_int_eq(st.st_gid, 8);
        /* the flags reached it: the whiteout is an overlay one */
        snprintf(p, sizeof(p), "%s/a/gone", target);
        ck_assert_int_eq(lstat(p, &st), 0);
        ck_assert(S_ISCHR(st.st_mode));
}
END_TEST

START_TEST(test_helper_reports_refusal)
{
        /* A hostile layer is refused by the helper with the very error the
         * unpacker gives in-process, and nothing lands outside. */
        const struct tent t[] = {{"ok", AE_IFREG, "fine", 0, 0, 0, 0},
                                 {"../escape", AE_IFREG, "pwned", 0, 0, 0, 0}};
        write_tar(tarpath, t, 2, 0);
        struct cb_error here = {0}, there = {0};
        ck_assert_int_lt(rt_layer_unpack(tarpath, target, 0, &here), 0);
        ck_assert_int_lt(rt_layer_unpack_helper(CUBELET_UNPACK_BINARY, tarpath, target, 0, &there),
                         0);
        ck_assert_str_eq(there.msg, here.msg);
        ck_assert_int_eq(there.code, here.code);
        ck_assert_int_eq(outside_count(), 0);
        /* a missing archive: the errno comes back with the message */
        struct cb_error miss = {0};
        char nothing[400];
        snprintf(nothing, sizeof(nothing), "%s/no-such.tar", base);
        ck_assert_int_lt(rt_layer_unpack_helper(CUBELET_UNPACK_BINARY, nothing, target, 0, &miss),
                         0);
        ck_assert_int_eq(miss.code, ENOENT);
        ck_assert_msg(strstr(miss.msg, "no-such.tar") != NULL, "%s", miss.msg);
}
END_TEST

/* A stand-in helper: a shell script with BODY, in the test's base dir. */
static void fake_helper(char *path, size_t size, const char *body)
{
        snprintf(path, size, "%s/fake-unpack", base);
        FILE *f = fopen(path, "w");
        ck_assert_ptr_nonnull(f);
        fprintf(f, "#!/bin/sh\n%s\n", body);
        fclose(f);
        ck_assert_int_eq(chmod(path, 0755), 0);
}

START_TEST(test_helper_killed_or_missing)
{
        char helper[400];
        struct cb_error err = {0};
        fake_helper(helper, sizeof(helper), "kill -KILL $$");
        ck_assert_int_lt(rt_layer_unpack_helper(helper, tarpath, target, 0, &err), 0);
        ck_assert_msg(strstr(err.msg, "killed by signal 9") != NULL, "%s", err.msg);
        fake_helper(helper, sizeof(helper), "exit 3");
        ck_assert_int_lt(rt_layer_unpack_helper(helper, tarpath, target, 0, &err), 0);
        ck_assert_msg(strstr(err.msg, "exited with status 3") != NULL, "%s", err.msg);
        ck_assert_int_lt(
            rt_layer_unpack_helper("/nonexistent/cubelet-unpack", tarpath, target, 0, &err), 0);
        ck_assert_msg(strstr(err.msg, "cannot start the layer unpacker /nonexistent") != NULL, "%s",
                      err.msg);
        ck_assert_int_eq(err.code, ENOENT);
        ck_assert_int_lt(rt_layer_unpack_helper(NULL, tarpath, target, 0, &err), 0);
        ck_assert_msg(strstr(err.msg, "no layer unpacker") != NULL, "%s", err.msg);
}
END_TEST

START_TEST(test_helper_gets_only_its_fds)
{
        /* An fd of the caller without O_CLOEXEC (as libcurl's sockets are)
         * does not reach the helper; its fd 3 is the report pipe and its
         * stdin is /dev/null. */
        int leak = open("/dev/zero", O_RDONLY);
        ck_assert_int_ge(leak, 0);
        char helper[400];
        fake_helper(helper, sizeof(helper),
                    "s=clean; for f in /proc/$$/fd/*; do [ \"$(readlink $f)\" = /dev/zero ] && "
                    "s=leaked; done; [ \"$(readlink /proc/$$/fd/0)\" = /dev/null ] || s=stdin; "
                    "echo \"0 $s $2 $3 $4 $5 $6\" >&3; exit 1");
        struct cb_error err = {0};
        ck_assert_int_lt(rt_layer_unpack_helper(helper, tarpath, target, 1, &err), 0);
        close(leak);
        char want[1024];
        snprintf(want, sizeof(want), "clean 3 %s %s 1 %d\n", tarpath, target, (int)getpid());
        ck_assert_str_eq(err.msg, want);
}
END_TEST

int main(void)
{
        if (geteuid() != 0) {
                fprintf(stderr, "test_unpack: needs root (ownership, device nodes, xattrs)\n");
                return 77;
        }
        Suite *s = suite_create("unpack");
        TCase *tc = tcase_create("hostile");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, test_dotdot_escape);
        tcase_add_test(tc, test_absolute_path);
        tcase_add_test(tc, test_symlink_to_root_then_write);
        tcase_add_test(tc, test_symlink_dotdot_chain);
        tcase_add_test(tc, test_hardlink_outside);
        tcase_add_test(tc, test_file_replaces_symlink);
        tcase_add_test(tc, test_metadata_kept);
        tcase_add_test(tc, test_whiteouts_two_layers);
        tcase_add_test(tc, test_archive_overlay_xattr_dropped);
        tcase_add_test(tc, test_rm_rf_no_follow);
        tcase_add_test(tc, test_helper_unpacks);
        tcase_add_test(tc, test_helper_reports_refusal);
        tcase_add_test(tc, test_helper_killed_or_missing);
        tcase_add_test(tc, test_helper_gets_only_its_fds);
        suite_add_tcase(s, tc);
        return th_run(s) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
