/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The compiled seccomp filter's disk cache (runtime/seccomp.c): a program
 * compiled once is kept under <root>/cache/seccomp/ and used by the next
 * process; an entry is used only when it is intact, ours and of exactly the
 * same key, and anything else is compiled again. No root needed: nothing is
 * installed, the programs are only compared.
 */
#include <check.h>
#include <dirent.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/cleanup.h"
#include "lib/file.h"
#include "runtime/container.h"
#include "runtime/container_internal.h"
#include "runtime/image.h"
#include "helpers.h"

static char root[64];
static char cdir[128];

static void setup(void)
{
        snprintf(root, sizeof(root), "/tmp/cubelet-sccache.XXXXXX");
        ck_assert(mkdtemp(root) != NULL);
        snprintf(cdir, sizeof(cdir), "%s/cache/seccomp", root);
        rt_seccomp_cache_forget();
}

static void teardown(void)
{
        struct cb_error err = {0};
        rt_seccomp_cache_forget();
        (void)rt_rm_rf(root, &err);
}

/* The program rt_seccomp_fd hands out for this kind and caps. */
static void *program(enum rt_seccomp_kind kind, uint64_t caps, size_t *len)
{
        struct rt_container_config c = {0};
        c.root_dir = root;
        c.seccomp = kind;
        c.seccomp_profile = kind == RT_SECCOMP_LOCALHOST ? "p.json" : NULL;
        struct cb_error err = {0};
        int fd = -1;
        ck_assert_msg(rt_seccomp_fd(&c, caps, &fd, &err) == 0, "%s", err.msg);
        ck_assert(fd >= 0);
        void *prog = NULL;
        ck_assert_msg(rt_seccomp_read(fd, &prog, len, &err) == 0, "%s", err.msg);
        close(fd);
        return prog;
}

/* The cache's entries: their count, and the name of the last one. */
static int entries(char name[64])
{
        DIR *d = opendir(cdir);
        if (d == NULL)
                return 0;
        int n = 0;
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
                if (de->d_name[0] == '.')
                        continue;
                ck_assert_msg(strstr(de->d_name, ".tmp") == NULL, "left behind: %s", de->d_name);
                snprintf(name, 64, "%.63s", de->d_name);
                n++;
        }
        closedir(d);
        return n;
}

static char *entry_path(const char *name)
{
        static char p[256];
        snprintf(p, sizeof(p), "%s/%s", cdir, name);
        return p;
}

/* Rewrites an entry keeping its header and key, with prog as its program. */
static void replace_program(const char *name, const void *prog, uint32_t plen, int mode)
{
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        struct cb_error err = {0};
        ck_assert(cb_read_file(entry_path(name), 8 << 20, &buf, &len, &err) == 0);
        ck_assert(len > 20 && memcmp(buf, "CBSECBPF", 8) == 0);
        uint32_t klen;
        memcpy(&klen, buf + 12, 4);
        ck_assert(20 + (size_t)klen <= len);
        size_t out_len = 20 + klen + plen;
        char *out = malloc(out_len);
        ck_assert(out != NULL);
        memcpy(out, buf, 20 + klen);
        memcpy(out + 16, &plen, 4);
        memcpy(out + 20 + klen, prog, plen);
        unlink(entry_path(name));
        ck_assert(cb_write_file_replace(entry_path(name), out, out_len, mode, &err) == 0);
        ck_assert(chmod(entry_path(name), (mode_t)mode) == 0);
        free(out);
}

static const struct sock_filter allow_all[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};

START_TEST(test_compiled_once_then_read)
{
        char name[64];
        size_t len1 = 0, len2 = 0;
        _cleanup_free_ void *p1 = program(RT_SECCOMP_RUNTIME_DEFAULT, 0, &len1);
        ck_assert_ptr_nonnull(p1);
        ck_assert_int_eq(entries(name), 1);
        ck_assert(len1 > 100 * sizeof(struct sock_filter));

        /* the entry is what the next process reads: a one-instruction
         * program put in its place comes back (so it was not compiled) */
        rt_seccomp_cache_forget();
        replace_program(name, allow_all, sizeof(allow_all), 0600);
        _cleanup_free_ void *p2 = program(RT_SECCOMP_RUNTIME_DEFAULT, 0, &len2);
        ck_assert_uint_eq(len2, sizeof(allow_all));
        ck_assert(memcmp(p2, allow_all, sizeof(allow_all)) == 0);

        /* within one process the memory cache answers, file or not */
        unlink(entry_path(name));
        size_t len3 = 0;
        _cleanup_free_ void *p3 = program(RT_SECCOMP_RUNTIME_DEFAULT, 0, &len3);
        ck_assert_uint_eq(len3, sizeof(allow_all));
        ck_assert(memcmp(p3, allow_all, sizeof(allow_all)) == 0);
}
END_TEST

START_TEST(test_bad_entries_compiled_again)
{
        char name[64];
        size_t len1 = 0;
        _cleanup_free_ void *p1 = program(RT_SECCOMP_RUNTIME_DEFAULT, 0, &len1);
        ck_assert_int_eq(entries(name), 1);
        struct stat good;
        ck_assert(stat(entry_path(name), &good) == 0);

        /* writable by others: not trusted */
        rt_seccomp_cache_forget();
        replace_program(name, allow_all, sizeof(allow_all), 0622);
        size_t len = 0;
        _cleanup_free_ void *a = program(RT_SECCOMP_RUNTIME_DEFAULT, 0, &len);
        ck_assert_uint_eq(len, len1);
        ck_assert(memcmp(a, p1, len1) == 0);

        /* another key under the same name (one byte of the key changed):
         * a miss, compiled, and the entry written again whole */
        rt_seccomp_cache_forget();
        replace_program(name, allow_all, sizeof(allow_all), 0600);
        _cleanup_free_ char *buf = NULL;
        size_t blen = 0;
        struct cb_error err = {0};
        ck_assert(cb_read_file(entry_path(name), 8 << 20, &buf, &blen, &err) == 0);
        buf[20 + 5] ^= 1;
        ck_assert(cb_write_file_replace(entry_path(name), buf, blen, 0600, &err) == 0);
        _cleanup_free_ void *b = program(RT_SECCOMP_RUNTIME_DEFAULT, 0, &len);
        ck_assert_uint_eq(len, len1);
        ck_assert(memcmp(b, p1, len1) == 0);
        struct stat st;
        ck_assert(stat(entry_path(name), &st) == 0);
        ck_assert_int_eq(st.st_size, good.st_size);

        /* truncated (a power failure after the rename): compiled again */
        rt_seccomp_cache_forget();
        ck_assert(truncate(entry_path(name), good.st_size - 8) == 0);
        _cleanup_free_ void *c = program(RT_SECCOMP_RUNTIME_DEFAULT, 0, &len);
        ck_assert_uint_eq(len, len1);
        ck_assert(memcmp(c, p1, len1) == 0);
        ck_assert(stat(entry_path(name), &st) == 0);
        ck_assert_int_eq(st.st_size, good.st_size);

        /* a program that is no BPF program (size not a multiple of 8) */
        rt_seccomp_cache_forget();
        replace_program(name, allow_all, 5, 0600);
        _cleanup_free_ void *d = program(RT_SECCOMP_RUNTIME_DEFAULT, 0, &len);
        ck_assert_ptr_nonnull(d);
        ck_assert_uint_eq(len, len1);
}
END_TEST

START_TEST(test_key_covers_caps_and_profile)
{
        char name[64];
        size_t l0 = 0, ladmin = 0;
        _cleanup_free_ void *p0 = program(RT_SECCOMP_RUNTIME_DEFAULT, 0, &l0);
        _cleanup_free_ void *pa =
            program(RT_SECCOMP_RUNTIME_DEFAULT, UINT64_C(1) << CAP_SYS_ADMIN, &ladmin);
        ck_assert_int_eq(entries(name), 2);
        ck_assert(l0 != ladmin || memcmp(p0, pa, l0) != 0);

        /* a Localhost profile: its text is the key; an edit is a new entry,
         * and the new profile's program is what comes back */
        char dir[160], path[200];
        snprintf(dir, sizeof(dir), "%s/seccomp", root);
        ck_assert(mkdir(dir, 0700) == 0);
        snprintf(path, sizeof(path), "%s/p.json", dir);
        struct cb_error err = {0};
        const char *v1 = "{\"defaultAction\":\"SCMP_ACT_ALLOW\"}";
        const char *v2 = "{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":"
                         "[\"mkdir\"],\"action\":\"SCMP_ACT_ERRNO\"}]}";
        ck_assert(cb_write_file_replace(path, v1, strlen(v1), 0600, &err) == 0);
        size_t l1 = 0, l2 = 0, l3 = 0;
        _cleanup_free_ void *q1 = program(RT_SECCOMP_LOCALHOST, 0, &l1);
        ck_assert_int_eq(entries(name), 3);
        ck_assert(cb_write_file_replace(path, v2, strlen(v2), 0600, &err) == 0);
        rt_seccomp_cache_forget();
        _cleanup_free_ void *q2 = program(RT_SECCOMP_LOCALHOST, 0, &l2);
        ck_assert_int_eq(entries(name), 4);
        ck_assert(l1 != l2 || memcmp(q1, q2, l1) != 0);
        /* and the first profile again, from disk, is the first program */
        ck_assert(cb_write_file_replace(path, v1, strlen(v1), 0600, &err) == 0);
        rt_seccomp_cache_forget();
        _cleanup_free_ void *q3 = program(RT_SECCOMP_LOCALHOST, 0, &l3);
        ck_assert_uint_eq(l3, l1);
        ck_assert(memcmp(q3, q1, l1) == 0);
        ck_assert_int_eq(entries(name), 4);
}
END_TEST

START_TEST(test_stale_entries_pruned)
{
        char name[64];
        size_t len = 0;
        struct cb_error err = {0};
        ck_assert(cb_mkdir_p(cdir, 0700, 0700, &err) == 0);
        /* an entry of another executable (its key starts otherwise) */
        char stale[300];
        snprintf(stale, sizeof(stale), "%s/0123456789abcdef.bpf", cdir);
        const char blob[] = "CBSECBPF\1\0\0\0\4\0\0\0\10\0\0\0"
                            "oldk"
                            "\6\0\0\0\0\0\377\177";
        ck_assert(cb_write_file_replace(stale, blob, sizeof(blob) - 1, 0600, &err) == 0);
        _cleanup_free_ void *p = program(RT_SECCOMP_RUNTIME_DEFAULT, 0, &len);
        ck_assert_ptr_nonnull(p);
        ck_assert_int_eq(entries(name), 1);
        ck_assert(access(stale, F_OK) != 0);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("seccomp_cache");
        TCase *tc = tcase_create("disk");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, test_compiled_once_then_read);
        tcase_add_test(tc, test_bad_entries_compiled_again);
        tcase_add_test(tc, test_key_covers_caps_and_profile);
        tcase_add_test(tc, test_stale_entries_pruned);
        suite_add_tcase(s, tc);
        return th_run(s) ? 1 : 0;
}
