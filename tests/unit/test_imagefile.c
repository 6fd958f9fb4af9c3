/* SPDX-License-Identifier: Apache-2.0 */
/* rt_image_read_file (runtime/image_file.c): a file of an image as the
 * container sees it through overlayfs (topmost layer first, whiteouts,
 * opaque directories, symlinks followed inside the image), never a host
 * file, and only a regular file (a FIFO or a device is refused without
 * being opened: no hang). The layers are made by hand in a temporary
 * directory (overlay whiteouts are 0/0 character devices: mknod needs root). */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "lib/cleanup.h"
#include "runtime/image.h"

#include "helpers.h"

static char dir[64];
static char layer[3][128];
static const char *dirs[3];
static struct rt_image img;

static void setup(void)
{
        snprintf(dir, sizeof(dir), "/tmp/cubelet-imagefile-%d", (int)getpid());
        for (int i = 0; i < 3; i++) {
                snprintf(layer[i], sizeof(layer[i]), "%s/l%d", dir, i);
                dirs[i] = layer[i];
                ck_assert_int_eq(th_sh("mkdir -p %s/etc", layer[i]), 0);
        }
        img = (struct rt_image){.ref = "test/evil:1", .n_layers = 3, .layer_dirs = dirs};
}

static void teardown(void)
{
        th_sh("rm -rf %s", dir);
}

/* read rel: the text, or NULL when absent; *msg the error (NULL on success) */
static char *get(const char *rel, const char **msg)
{
        static struct cb_error err;
        char *text = NULL;
        memset(&err, 0, sizeof(err));
        int r = rt_image_read_file(&img, rel, 1 << 20, &text, &err);
        *msg = r < 0 ? err.msg : NULL;
        ck_assert(r == 0 || text == NULL);
        return text;
}

START_TEST(test_layers_and_whiteouts)
{
        const char *msg;
        ck_assert_int_eq(
            th_sh("echo low > %s/etc/passwd; echo up > %s/etc/passwd", layer[0], layer[2]), 0);
        _cleanup_free_ char *t = get("etc/passwd", &msg);
        ck_assert_ptr_null(msg);
        ck_assert_str_eq(t, "up\n");
        /* an overlay whiteout in the middle layer hides the lower file */
        ck_assert_int_eq(
            th_sh("echo g > %s/etc/group; mknod %s/etc/group c 0 0", layer[0], layer[1]), 0);
        ck_assert_ptr_null(get("etc/group", &msg));
        ck_assert_ptr_null(msg);
        /* an opaque directory hides what lower layers have beneath it */
        ck_assert_int_eq(
            th_sh("mkdir -p %s/opq %s/opq && echo x > %s/opq/f", layer[0], layer[2], layer[0]), 0);
        char opq[256];
        snprintf(opq, sizeof(opq), "%s/opq", layer[2]);
        ck_assert_int_eq(setxattr(opq, "trusted.overlay.opaque", "y", 1, 0), 0);
        ck_assert_ptr_null(get("opq/f", &msg));
        ck_assert_ptr_null(msg);
        /* a file over a lower directory hides it */
        ck_assert_int_eq(th_sh("mkdir -p %s/d && echo x > %s/d/f && echo file > %s/d", layer[0],
                               layer[0], layer[1]),
                         0);
        ck_assert_ptr_null(get("d/f", &msg));
        ck_assert_ptr_null(msg);
}
END_TEST

START_TEST(test_symlinks_stay_inside)
{
        const char *msg;
        /* the host's /etc/shadow (or any host file) is never read: an
         * absolute link resolves in the image, here to nothing */
        ck_assert_int_eq(th_sh("echo low > %s/etc/passwd && ln -s /etc/shadow %s/etc/passwd",
                               layer[0], layer[2]),
                         0);
        ck_assert_ptr_null(get("etc/passwd", &msg));
        ck_assert_ptr_null(msg);
        /* ... and to the image's own file, in any layer (the merged view),
         * through "..", which stops at the image's root */
        ck_assert_int_eq(th_sh("mkdir -p %s/data && echo image-shadow > %s/data/shadow && "
                               "ln -s ../../../../data/shadow %s/etc/shadow",
                               layer[0], layer[0], layer[1]),
                         0);
        _cleanup_free_ char *t = get("etc/passwd", &msg);
        ck_assert_ptr_null(msg);
        ck_assert_str_eq(t, "image-shadow\n");
        /* a directory link in an upper layer */
        ck_assert_int_eq(th_sh("mkdir -p %s/real && echo r > %s/real/group && ln -s /real %s/e2",
                               layer[0], layer[0], layer[2]),
                         0);
        _cleanup_free_ char *g = get("e2/group", &msg);
        ck_assert_ptr_null(msg);
        ck_assert_str_eq(g, "r\n");
        /* a lower layer's symlink under an upper directory is not followed
         * (overlayfs shows the upper directory) */
        ck_assert_int_eq(th_sh("ln -s /etc %s/x && mkdir -p %s/x", layer[0], layer[2]), 0);
        ck_assert_ptr_null(get("x/hostname", &msg));
        ck_assert_ptr_null(msg);
        /* a loop */
        ck_assert_int_eq(
            th_sh("ln -s loop2 %s/etc/loop1 && ln -s loop1 %s/etc/loop2", layer[2], layer[2]), 0);
        ck_assert_ptr_null(get("etc/loop1", &msg));
        ck_assert_ptr_nonnull(msg);
        ck_assert_msg(strstr(msg, "too many levels of symbolic links") != NULL, "%s", msg);
}
END_TEST

START_TEST(test_only_regular_files)
{
        const char *msg;
        /* a FIFO: refused at once (an open would block until a writer came) */
        char fifo[256];
        snprintf(fifo, sizeof(fifo), "%s/etc/group", layer[2]);
        ck_assert_int_eq(mkfifo(fifo, 0644), 0);
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        ck_assert_ptr_null(get("etc/group", &msg));
        clock_gettime(CLOCK_MONOTONIC, &b);
        ck_assert_ptr_nonnull(msg);
        ck_assert_str_eq(msg, "/etc/group in image test/evil:1 is a FIFO, not a regular file");
        ck_assert_int_lt(b.tv_sec - a.tv_sec, 2);
        /* a FIFO reached through a symlink */
        ck_assert_int_eq(th_sh("ln -s group %s/etc/passwd", layer[2]), 0);
        ck_assert_ptr_null(get("etc/passwd", &msg));
        ck_assert_str_eq(msg, "/etc/passwd in image test/evil:1 is a FIFO, not a regular file");
        /* devices are never opened (/dev/zero would never end, a tty or a
         * tape would act on the open) */
        ck_assert_int_eq(th_sh("mknod %s/etc/zero c 1 5 && mkdir %s/etc/dir", layer[2], layer[2]),
                         0);
        ck_assert_ptr_null(get("etc/zero", &msg));
        ck_assert_str_eq(msg, "/etc/zero in image test/evil:1 is a character device, not a regular "
                              "file");
        ck_assert_ptr_null(get("etc/dir", &msg));
        ck_assert_str_eq(msg, "/etc/dir in image test/evil:1 is a directory, not a regular file");
        /* the size cap */
        ck_assert_int_eq(th_sh("head -c 2000000 /dev/zero > %s/etc/big", layer[1]), 0);
        ck_assert_ptr_null(get("etc/big", &msg));
        ck_assert_str_eq(msg, "/etc/big in image test/evil:1 is larger than 1048576 bytes");
}
END_TEST

int main(void)
{
        if (geteuid() != 0) {
                printf(
                    "test_imagefile: needs root (overlay whiteouts, trusted xattrs), skipping\n");
                return 77;
        }
        Suite *s = suite_create("imagefile");
        TCase *tc = tcase_create("core");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, test_layers_and_whiteouts);
        tcase_add_test(tc, test_symlinks_stay_inside);
        tcase_add_test(tc, test_only_regular_files);
        suite_add_tcase(s, tc);
        return th_run(s) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
