/* SPDX-License-Identifier: Apache-2.0 */
/* The kubelet's atomic writer: the ..<ts> / ..data / symlink layout,
 * modes, fsGroup, unchanged payloads, removed names, a swap under a
 * reader, bad paths. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/pods/atomic_writer.h"
#include "lib/cleanup.h"
#include "runtime/image.h"

#include "helpers.h"

static char dir[PATH_MAX];

static void setup(void)
{
        snprintf(dir, sizeof(dir), "/tmp/cubelet-aw-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
        rt_rm_rf(dir, NULL);
}

static char *slurp(const char *rel)
{
        char p[PATH_MAX * 2];
        snprintf(p, sizeof(p), "%s/%s", dir, rel);
        FILE *f = fopen(p, "re");
        if (f == NULL)
                return NULL;
        static char buf[4096];
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        buf[n] = '\0';
        fclose(f);
        return buf;
}

static int count_ts_dirs(void)
{
        DIR *d = opendir(dir);
        int n = 0;
        for (struct dirent *de; (de = readdir(d)) != NULL;)
                n += strncmp(de->d_name, "..2", 3) == 0;
        closedir(d);
        return n;
}

START_TEST(test_layout)
{
        struct ag_payload_file files[] = {
            {"token", "abc", 3, 0644, false, 0},
            {"ca.crt", "PEM", 3, 0400, false, 0},
            {"sub/dir/file", "x", 1, 0600, false, 0},
        };
        bool changed = false;
        struct cb_error err = {0};
        ck_assert_msg(ag_atomic_write(dir, files, 3, NULL, &changed, &err) == 0, "%s", err.msg);
        ck_assert(changed);
        char link[PATH_MAX * 2], target[256];
        snprintf(link, sizeof(link), "%s/..data", dir);
        ssize_t n = readlink(link, target, sizeof(target) - 1);
        ck_assert_int_gt(n, 0);
        target[n] = '\0';
        /* ..YYYY_MM_DD_HH_MM_SS.N */
        ck_assert_int_eq(strncmp(target, "..20", 4), 0);
        ck_assert_int_eq(target[6], '_');
        ck_assert_ptr_nonnull(strchr(target, '.') + 2);
        snprintf(link, sizeof(link), "%s/token", dir);
        n = readlink(link, target, sizeof(target) - 1);
        target[n] = '\0';
        ck_assert_str_eq(target, "..data/token");
        snprintf(link, sizeof(link), "%s/sub", dir);
        n = readlink(link, target, sizeof(target) - 1);
        target[n] = '\0';
        ck_assert_str_eq(target, "..data/sub");
        ck_assert_str_eq(slurp("token"), "abc");
        ck_assert_str_eq(slurp("sub/dir/file"), "x");
        struct stat sb;
        snprintf(link, sizeof(link), "%s/ca.crt", dir);
        ck_assert_int_eq(stat(link, &sb), 0);
        ck_assert_int_eq(sb.st_mode & 07777, 0400);
        snprintf(link, sizeof(link), "%s/sub/dir/file", dir);
        ck_assert_int_eq(stat(link, &sb), 0);
        ck_assert_int_eq(sb.st_mode & 07777, 0600);
        ck_assert_int_eq(count_ts_dirs(), 1);

        /* the same payload again writes nothing */
        ck_assert_int_eq(ag_atomic_write(dir, files, 3, NULL, &changed, &err), 0);
        ck_assert(!changed);
        /* a mode change is a change */
        files[1].mode = 0440;
        ck_assert_int_eq(ag_atomic_write(dir, files, 3, NULL, &changed, &err), 0);
        ck_assert(changed);
        snprintf(link, sizeof(link), "%s/ca.crt", dir);
        ck_assert_int_eq(stat(link, &sb), 0);
        ck_assert_int_eq(sb.st_mode & 07777, 0440);

        /* new content, "sub" gone: its link and the old directory go */
        struct ag_payload_file next[] = {{"token", "defg", 4, 0644, false, 0},
                                         {"ca.crt", "PEM", 3, 0400, false, 0}};
        ck_assert_int_eq(ag_atomic_write(dir, next, 2, NULL, &changed, &err), 0);
        ck_assert(changed);
        ck_assert_str_eq(slurp("token"), "defg");
        snprintf(link, sizeof(link), "%s/sub", dir);
        ck_assert_int_eq(lstat(link, &sb), -1);
        ck_assert_int_eq(count_ts_dirs(), 1);

        /* an empty payload (an optional object deleted): nothing visible */
        ck_assert_int_eq(ag_atomic_write(dir, NULL, 0, NULL, &changed, &err), 0);
        ck_assert(changed);
        ck_assert_ptr_null(slurp("token"));
        ck_assert_int_eq(count_ts_dirs(), 1);
}
END_TEST

START_TEST(test_fs_group)
{
        struct ag_payload_file files[] = {{"a/b", "1", 1, 0400, false, 0}};
        struct ag_atomic_opts o = {.has_fs_group = true, .fs_group = getgid()};
        struct cb_error err = {0};
        ck_assert_msg(ag_atomic_write(dir, files, 1, &o, NULL, &err) == 0, "%s", err.msg);
        char p[PATH_MAX * 2];
        struct stat sb;
        snprintf(p, sizeof(p), "%s/a/b", dir);
        ck_assert_int_eq(stat(p, &sb), 0);
        ck_assert_int_eq(sb.st_mode & 07777, 0440);
        ck_assert_int_eq(sb.st_gid, getgid());
        snprintf(p, sizeof(p), "%s/a", dir);
        ck_assert_int_eq(stat(p, &sb), 0);
        ck_assert_int_eq(sb.st_mode & 02000, 02000);
}
END_TEST

/* A file with an fsUser is chowned to it (the token of a pod whose
 * containers all run as one user); an owner change alone rewrites it. */
START_TEST(test_fs_user)
{
        uid_t want = geteuid() == 0 ? 4242 : geteuid();
        struct ag_payload_file files[] = {{"token", "t", 1, 0600, true, want}};
        struct cb_error err = {0};
        bool changed = false;
        ck_assert_msg(ag_atomic_write(dir, files, 1, NULL, &changed, &err) == 0, "%s", err.msg);
        char p[PATH_MAX * 2];
        struct stat sb;
        snprintf(p, sizeof(p), "%s/token", dir);
        ck_assert_int_eq(stat(p, &sb), 0);
        ck_assert_int_eq(sb.st_mode & 07777, 0600);
        ck_assert_int_eq(sb.st_uid, want);
        ck_assert_int_eq(ag_atomic_write(dir, files, 1, NULL, &changed, &err), 0);
        ck_assert(!changed);
        if (geteuid() == 0) {
                files[0].fs_user = 4343;
                ck_assert_int_eq(ag_atomic_write(dir, files, 1, NULL, &changed, &err), 0);
                ck_assert(changed);
                ck_assert_int_eq(stat(p, &sb), 0);
                ck_assert_int_eq(sb.st_uid, 4343);
        }
}
END_TEST

START_TEST(test_bad_paths)
{
        static const char *const bad[] = {"/abs", "../x", "a/../b", "..data", "a//b", "", "./a"};
        struct cb_error err = {0};
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                struct ag_payload_file f = {bad[i], "x", 1, 0644, false, 0};
                ck_assert_msg(ag_atomic_write(dir, &f, 1, NULL, NULL, &err) == -1, "%s", bad[i]);
                ck_assert_msg(strstr(err.msg, "invalid path"), "%s", err.msg);
        }
        struct ag_payload_file dup[] = {{"a", "x", 1, 0644, false, 0},
                                        {"a", "y", 1, 0644, false, 0}};
        ck_assert_int_eq(ag_atomic_write(dir, dup, 2, NULL, NULL, &err), -1);
        ck_assert_ptr_nonnull(strstr(err.msg, "duplicate"));
        ck_assert_int_eq(count_ts_dirs(), 0);
}
END_TEST

/* A reader that opens the file by its user-visible name sees either the
 * old or the new bytes, never a mix or a partial file; a file opened
 * before a swap keeps its content. */
static volatile int stop_reader;
static long reads, mixed;

static void *reader(void *arg)
{
        (void)arg;
        char p[PATH_MAX * 2], buf[64];
        snprintf(p, sizeof(p), "%s/f", dir);
        while (!stop_reader) {
                int fd = open(p, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        continue; /* the old directory went between two lookups */
                ssize_t n = read(fd, buf, sizeof(buf) - 1);
                close(fd);
                if (n < 0)
                        continue;
                buf[n] = '\0';
                reads++;
                if (strcmp(buf, "AAAAAAAA") != 0 && strcmp(buf, "BBBBBBBB") != 0)
                        mixed++;
        }
        return NULL;
}

START_TEST(test_swap_under_reader)
{
        struct ag_payload_file a = {"f", "AAAAAAAA", 8, 0644, false, 0},
                               b = {"f", "BBBBBBBB", 8, 0644, false, 0};
        struct cb_error err = {0};
        ck_assert_int_eq(ag_atomic_write(dir, &a, 1, NULL, NULL, &err), 0);
        char p[PATH_MAX * 2];
        snprintf(p, sizeof(p), "%s/f", dir);
        _cleanup_close_ int held = open(p, O_RDONLY | O_CLOEXEC);
        ck_assert_int_ge(held, 0);
        pthread_t t;
        ck_assert_int_eq(pthread_create(&t, NULL, reader, NULL), 0);
        for (int i = 0; i < 400; i++)
                ck_assert_msg(ag_atomic_write(dir, i % 2 ? &a : &b, 1, NULL, NULL, &err) == 0, "%s",
                              err.msg);
        stop_reader = 1;
        pthread_join(t, NULL);
        ck_assert_int_eq(mixed, 0);
        ck_assert_int_gt(reads, 0);
        char buf[16] = "";
        ck_assert_int_eq(read(held, buf, sizeof(buf) - 1), 8);
        ck_assert_str_eq(buf, "AAAAAAAA");
        ck_assert_int_eq(count_ts_dirs(), 1);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("atomic_writer");
        TCase *tc = tcase_create("core");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, test_layout);
        tcase_add_test(tc, test_fs_group);
        tcase_add_test(tc, test_fs_user);
        tcase_add_test(tc, test_bad_paths);
        tcase_add_test(tc, test_swap_under_reader);
        suite_add_tcase(s, tc);
        return th_run(s) ? 1 : 0;
}
