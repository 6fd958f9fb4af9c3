/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness for registry credentials: the docker config.json and
 * .dockercfg formats (node files and kubernetes.io/dockerconfigjson or
 * dockercfg Secrets) through k8s_keyring_add_text and a lookup for a few
 * image names; and lib/base64 on the raw bytes, checked both ways: every
 * input it accepts decodes within the size it promises, and what OpenSSL
 * encodes decodes back to the same bytes.
 */
#include <openssl/evp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/k8s/keyring.h"
#include "lib/base64.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void keyring(const char *text, bool dockercfg)
{
        static const char *const images[] = {"nginx", "reg.example:5000/ns/app:v1",
                                             "a.b.example/x@sha256:00", "docker.io/library/x"};
        struct cb_error err = {0};
        struct k8s_keyring k = {.a = cb_arena_new(1 << 24)};
        if (k.a == NULL)
                return;
        if (k8s_keyring_add_text(&k, text, dockercfg, 0, "fuzz", &err) == 0) {
                const struct k8s_registry_cred *found[8];
                for (size_t i = 0; i < sizeof(images) / sizeof(images[0]); i++) {
                        size_t n = k8s_keyring_lookup(&k, images[i], found, 8);
                        for (size_t j = 0; j < n; j++)
                                if (found[j]->key == NULL)
                                        abort();
                }
        }
        cb_arena_free(k.a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *text = malloc(size + 1);
        if (text == NULL)
                return 0;
        memcpy(text, data, size);
        text[size] = '\0';
        keyring(text, false);
        keyring(text, true);

        unsigned char *out = malloc(cb_base64_max(size));
        for (unsigned flags = 0; out != NULL && flags < 16; flags++) {
                ssize_t n = cb_base64_decode(text, size, flags, out, NULL);
                if (n > (ssize_t)(cb_base64_max(size) - 1))
                        abort();
        }
        free(out);

        /* round trip: OpenSSL's encoding of the input decodes back to it */
        size_t enc_len = (size + 2) / 3 * 4;
        char *enc = malloc(enc_len + 1);
        unsigned char *back = malloc(cb_base64_max(enc_len));
        if (enc != NULL && back != NULL && size < (1u << 20)) {
                EVP_EncodeBlock((unsigned char *)enc, data, (int)size);
                ssize_t n = cb_base64_decode(enc, enc_len, 0, back, NULL);
                if (n != (ssize_t)size || memcmp(back, data, size) != 0)
                        abort();
        }
        free(enc);
        free(back);
        free(text);
        return 0;
}
