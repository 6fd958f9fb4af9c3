/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness for image layers: the bytes are a layer (tar, possibly
 * compressed) unpacked by the real unpacker (rt_layer_unpack, with overlay
 * whiteouts) into a fresh root under a temp dir. Besides crashes, a finding
 * is anything landing outside that root: the temp dir must hold exactly
 * root/, outside/ and the layer file, outside/ (a sibling a "../outside"
 * entry would reach) exactly its victim file, unchanged and with one link.
 *
 * Run as root the unpack runs with the filesystem uid of an unused user
 * (setfsuid, uid FUZZ_UID) with CAP_CHOWN and CAP_MKNOD only: an escape can
 * then write only what that user owns (the temp dir), never the host's
 * files, while chown and device nodes still work. Entries owned by another
 * user cannot be written into afterwards (no CAP_FOWNER/DAC_OVERRIDE): the
 * seeds use uid FUZZ_UID.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/image.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_UID 100000
#define VICTIM   "victim: must stay unchanged\n"

static char top[128], root[160], outside[160], layer[160], victim[192];

static void die(const char *what)
{
        perror(what);
        abort();
}

static void cleanup(void)
{
        struct cb_error err = {0};
        (void)rt_rm_rf(top, &err);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
        (void)argc;
        (void)argv;
        /* on a tmpfs when there is one: on ext4 the per-input mkdir, unpack
         * and removal cost more than the unpacker (3.6x slower) */
        const char *tmp = getenv("FUZZ_UNPACK_TMPDIR");
        if (tmp == NULL)
                tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        if ((size_t)snprintf(top, sizeof(top), "%s/cubelet-fuzz-unpack-XXXXXX", tmp) >=
                sizeof(top) ||
            mkdtemp(top) == NULL)
                die("mkdtemp");
        snprintf(root, sizeof(root), "%s/root", top);
        snprintf(outside, sizeof(outside), "%s/outside", top);
        snprintf(layer, sizeof(layer), "%s/layer", top);
        snprintf(victim, sizeof(victim), "%s/victim", outside);
        atexit(cleanup);
        if (mkdir(outside, 0755) < 0)
                die("mkdir outside");
        FILE *f = fopen(victim, "w");
        if (f == NULL || fputs(VICTIM, f) < 0 || fclose(f) != 0)
                die("victim");
        if (geteuid() == 0 &&
            (chown(top, FUZZ_UID, FUZZ_UID) < 0 || chown(outside, FUZZ_UID, FUZZ_UID) < 0 ||
             chown(victim, FUZZ_UID, FUZZ_UID) < 0))
                die("chown");
        return 0;
}

/* fsuid FUZZ_UID with CAP_CHOWN and CAP_MKNOD effective again; or back to
 * root. */
static void as_fuzz_user(bool on)
{
        if (geteuid() != 0)
                return;
        setfsgid(on ? FUZZ_UID : 0);
        setfsuid(on ? FUZZ_UID : 0);
        if (on) {
                cap_t c = cap_get_proc();
                cap_value_t v[] = {CAP_CHOWN, CAP_MKNOD};
                if (c == NULL || cap_set_flag(c, CAP_EFFECTIVE, 2, v, CAP_SET) < 0 ||
                    cap_set_proc(c) < 0)
                        die("capabilities");
                cap_free(c);
        }
}

static void check_contained(void)
{
        DIR *d = opendir(top);
        struct dirent *de;
        if (d == NULL)
                die("opendir top");
        while ((de = readdir(d)) != NULL) {
                const char *n = de->d_name;
                if (strcmp(n, ".") && strcmp(n, "..") && strcmp(n, "root") &&
                    strcmp(n, "outside") && strcmp(n, "layer")) {
                        fprintf(stderr, "unpack escaped the root: %s/%s\n", top, n);
                        abort();
                }
        }
        closedir(d);
        d = opendir(outside);
        if (d == NULL)
                die("opendir outside");
        while ((de = readdir(d)) != NULL) {
                if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
                    strcmp(de->d_name, "victim")) {
                        fprintf(stderr, "unpack escaped the root: %s/%s\n", outside, de->d_name);
                        abort();
                }
        }
        closedir(d);
        struct stat st;
        char buf[64] = {0};
        int fd = open(victim, O_RDONLY | O_NOFOLLOW);
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 ||
            read(fd, buf, sizeof(buf) - 1) != (ssize_t)strlen(VICTIM) || strcmp(buf, VICTIM)) {
                fprintf(stderr, "unpack touched %s\n", victim);
                abort();
        }
        close(fd);
        if (lstat(top, &st) < 0 || !S_ISDIR(st.st_mode) || lstat(outside, &st) < 0 ||
            !S_ISDIR(st.st_mode)) {
                fprintf(stderr, "unpack replaced %s or %s\n", top, outside);
                abort();
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct cb_error err = {0};

        int fd = open(layer, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || (size > 0 && write(fd, data, size) != (ssize_t)size) || close(fd) < 0)
                die("layer");
        if (mkdir(root, 0755) < 0)
                die("mkdir root");
        if (geteuid() == 0 && chown(root, FUZZ_UID, FUZZ_UID) < 0)
                die("chown root");
        as_fuzz_user(true);
        int r = rt_layer_unpack(layer, root, RT_UNPACK_OVERLAY_WHITEOUTS, &err);
        as_fuzz_user(false);
        if (getenv("FUZZ_UNPACK_VERBOSE") != NULL)
                fprintf(stderr, "unpack: %d %s\n", r, r < 0 ? err.msg : "");
        check_contained();
        if (rt_rm_rf(root, &err) < 0) {
                fprintf(stderr, "rm -rf %s: %s\n", root, err.msg);
                abort();
        }
        return 0;
}
