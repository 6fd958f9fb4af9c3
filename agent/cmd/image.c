/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `cubelet image`: the operator's view of the image store (runtime/image.h).
 *
 *   image pull [--insecure-registry HOST:PORT]... REF
 *   image import [--name REF] FILE
 *   image ls
 *   image inspect REF
 *   image rm REF...
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/cmd/cli.h"
#include "lib/error.h"
#include "runtime/image.h"

#define INSECURE_MAX 32

static void image_usage(FILE *f)
{
        fprintf(f, "Usage: cubelet [--root-dir DIR] image COMMAND\n\n"
                   "  pull [--insecure-registry HOST:PORT]... REF   pull from a registry\n"
                   "  import [--name REF] FILE   import an OCI archive or docker save output\n"
                   "  ls                         list images (REF, IMAGE ID, SIZE)\n"
                   "  inspect REF                show an image's config and layer dirs\n"
                   "  rm REF...                  remove references, then unused blobs\n");
}

/* "--flag value" or "--flag=value"; exits the parse with 2 on a missing value. */
static int opt_value(int argc, char **argv, int *i, const char *flag, const char **ret)
{
        size_t len = strlen(flag);
        if (strncmp(argv[*i], flag, len) != 0)
                return 0;
        if (argv[*i][len] == '=') {
                *ret = argv[*i] + len + 1;
                return 1;
        }
        if (argv[*i][len] != '\0')
                return 0;
        if (*i + 1 >= argc) {
                fprintf(stderr, "cubelet image: %s needs a value\n", flag);
                return -1;
        }
        *ret = argv[++*i];
        return 1;
}

/* Decimal units with three significant digits, as `docker images` shows. */
static void human_size(uint64_t n, char *buf, size_t size)
{
        static const char *const units[] = {"B", "kB", "MB", "GB", "TB"};
        double v = (double)n;
        size_t u = 0;
        while (v >= 1000 && u + 1 < sizeof(units) / sizeof(units[0])) {
                v /= 1000;
                u++;
        }
        snprintf(buf, size, "%.3g%s", v, units[u]);
}

static int do_pull(int argc, char **argv, const struct cb_global_opts *opts)
{
        const char *insecure[INSECURE_MAX];
        size_t ninsecure = 0;
        const char *ref = NULL;
        for (int i = 2; i < argc; i++) {
                const char *v;
                int r = opt_value(argc, argv, &i, "--insecure-registry", &v);
                if (r < 0)
                        return 2;
                if (r > 0) {
                        if (ninsecure == INSECURE_MAX) {
                                fprintf(stderr, "cubelet image pull: too many "
                                                "--insecure-registry flags\n");
                                return 2;
                        }
                        insecure[ninsecure++] = v;
                } else if (argv[i][0] == '-' || ref != NULL) {
                        fprintf(stderr, "cubelet image pull: unexpected argument \"%s\"\n",
                                argv[i]);
                        return 2;
                } else {
                        ref = argv[i];
                }
        }
        if (ref == NULL) {
                image_usage(stderr);
                return 2;
        }
        struct cb_error err = {0};
        char helper[PATH_MAX];
        if (ag_unpack_helper(helper, sizeof(helper), &err) < 0) {
                fprintf(stderr, "cubelet image pull: %s\n", err.msg);
                return 1;
        }
        struct rt_pull_opts po = {
            .insecure_registries = insecure, .n_insecure = ninsecure, .unpack_helper = helper};
        char *stored = NULL;
        if (rt_image_pull(opts->root_dir, ref, &po, &stored, &err) < 0) {
                fprintf(stderr, "cubelet image pull: %s\n", err.msg);
                return 1;
        }
        printf("%s\n", stored);
        free(stored);
        return 0;
}

static int do_import(int argc, char **argv, const struct cb_global_opts *opts)
{
        const char *name = NULL, *file = NULL;
        for (int i = 2; i < argc; i++) {
                int r = opt_value(argc, argv, &i, "--name", &name);
                if (r < 0)
                        return 2;
                if (r > 0)
                        continue;
                if (argv[i][0] == '-' || file != NULL) {
                        fprintf(stderr, "cubelet image import: unexpected argument \"%s\"\n",
                                argv[i]);
                        return 2;
                }
                file = argv[i];
        }
        if (file == NULL) {
                image_usage(stderr);
                return 2;
        }
        struct cb_error err = {0};
        char helper[PATH_MAX];
        if (ag_unpack_helper(helper, sizeof(helper), &err) < 0) {
                fprintf(stderr, "cubelet image import: %s\n", err.msg);
                return 1;
        }
        char **refs = NULL;
        if (rt_image_import(opts->root_dir, file, name, helper, &refs, &err) < 0) {
                fprintf(stderr, "cubelet image import: %s\n", err.msg);
                return 1;
        }
        for (char **p = refs; *p != NULL; p++)
                printf("%s\n", *p);
        rt_strv_free(refs);
        return 0;
}

static int do_ls(const struct cb_global_opts *opts)
{
        struct cb_error err = {0};
        struct rt_image **imgs;
        size_t n;
        if (rt_image_list(opts->root_dir, &imgs, &n, &err) < 0) {
                fprintf(stderr, "cubelet image ls: %s\n", err.msg);
                return 1;
        }
        printf("%-60s %-12s %s\n", "REF", "IMAGE ID", "SIZE");
        for (size_t i = 0; i < n; i++) {
                char size[32];
                human_size(imgs[i]->size, size, sizeof(size));
                printf("%-60s %.12s %s\n", imgs[i]->ref, imgs[i]->config_digest + 7, size);
        }
        rt_image_list_free(imgs, n);
        return 0;
}

static void print_strv(const char *label, char **v)
{
        printf("%-12s", label);
        if (v == NULL) {
                printf(" (unset)\n");
                return;
        }
        for (; *v != NULL; v++)
                printf(" \"%s\"", *v);
        printf("\n");
}

static int do_inspect(int argc, char **argv, const struct cb_global_opts *opts)
{
        if (argc != 3) {
                image_usage(stderr);
                return 2;
        }
        struct cb_error err = {0};
        struct rt_image *img;
        if (rt_image_lookup(opts->root_dir, argv[2], &img, &err) < 0) {
                fprintf(stderr, "cubelet image inspect: %s\n", err.msg);
                return 1;
        }
        if (img == NULL) {
                fprintf(stderr, "cubelet image inspect: image %s is not in the store\n", argv[2]);
                return 1;
        }
        const struct rt_image_config *c = &img->config;
        printf("Ref:         %s\nManifest:    %s\nConfig:      %s\nPlatform:    %s/%s\n", img->ref,
               img->manifest_digest, img->config_digest, c->os ? c->os : "",
               c->architecture ? c->architecture : "");
        print_strv("Entrypoint:", c->entrypoint);
        print_strv("Cmd:", c->cmd);
        print_strv("Env:", c->env);
        printf("WorkingDir:  %s\nUser:        %s\nStopSignal:  %s\n",
               c->working_dir ? c->working_dir : "", c->user ? c->user : "",
               c->stop_signal ? c->stop_signal : "");
        for (size_t i = 0; i < img->n_layers; i++)
                printf("Layer:       %s %s\n", img->layer_digests[i], img->layer_dirs[i]);
        rt_image_free(img);
        return 0;
}

static int do_rm(int argc, char **argv, const struct cb_global_opts *opts)
{
        if (argc < 3) {
                image_usage(stderr);
                return 2;
        }
        int ret = 0;
        for (int i = 2; i < argc; i++) {
                struct cb_error err = {0};
                if (rt_image_remove(opts->root_dir, argv[i], &err) < 0) {
                        fprintf(stderr, "cubelet image rm: %s\n", err.msg);
                        ret = 1;
                        continue;
                }
                printf("removed %s\n", argv[i]);
        }
        return ret;
}

int cmd_image(int argc, char **argv, const struct cb_global_opts *opts)
{
        if (argc < 2) {
                image_usage(stderr);
                return 2;
        }
        const char *sub = argv[1];
        if (strcmp(sub, "-h") == 0 || strcmp(sub, "--help") == 0 || strcmp(sub, "help") == 0) {
                image_usage(stdout);
                return 0;
        }
        if (strcmp(sub, "pull") == 0)
                return do_pull(argc, argv, opts);
        if (strcmp(sub, "import") == 0)
                return do_import(argc, argv, opts);
        if (strcmp(sub, "ls") == 0 || strcmp(sub, "list") == 0)
                return argc == 2 ? do_ls(opts) : (image_usage(stderr), 2);
        if (strcmp(sub, "inspect") == 0)
                return do_inspect(argc, argv, opts);
        if (strcmp(sub, "rm") == 0)
                return do_rm(argc, argv, opts);
        fprintf(stderr, "cubelet image: unknown command \"%s\"\n", sub);
        image_usage(stderr);
        return 2;
}
