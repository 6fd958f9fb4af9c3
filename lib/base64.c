/* SPDX-License-Identifier: Apache-2.0 */
#include "lib/base64.h"

#include <openssl/evp.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lib/cleanup.h"

static int b64_value(unsigned char c)
{
        static const char alphabet[] =
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        const char *p = c != '\0' ? strchr(alphabet, c) : NULL;
        return p != NULL ? (int)(p - alphabet) : -1;
}

static ssize_t refuse(size_t *bad, size_t offset)
{
        if (bad != NULL)
                *bad = offset;
        return -1;
}

ssize_t cb_base64_decode(const char *in, size_t len, unsigned flags, unsigned char *out,
                         size_t *bad)
{
        /* The significant characters, checked, into tmp (EVP_DecodeBlock
         * takes no inner whitespace and no missing padding). */
        _cleanup_free_ char *tmp = malloc(len + 4);
        if (tmp == NULL)
                return refuse(bad, 0);
        size_t n = 0, pads = 0, group_start = 0, last_data = 0, pad_at = 0;
        int last_value = 0;
        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char)in[i];
                if (((flags & CB_B64_SKIP_NEWLINES) && (c == '\r' || c == '\n')) ||
                    ((flags & CB_B64_SKIP_SPACE) &&
                     (c == ' ' || c == '\t' || c == '\r' || c == '\n')))
                        continue;
                if (n % 4 == 0)
                        group_start = i;
                if (c == '=') {
                        /* padding only in the last two places of the last group */
                        if (n % 4 < 2 || ++pads > 2)
                                return refuse(bad, i);
                        if (pads == 1)
                                pad_at = i;
                } else {
                        int v = b64_value(c);
                        /* after "x=" only "=" may follow: Go blames the "=" */
                        if (pads == 1 && n % 4 == 3)
                                return refuse(bad, pad_at);
                        if (v < 0 || pads > 0)
                                return refuse(bad, i);
                        last_value = v;
                        last_data = i;
                }
                tmp[n++] = (char)c;
        }
        if (n % 4 != 0) {
                if (pads > 0)
                        return refuse(bad, len); /* "YQ=": the second "=" is missing */
                if (!(flags & CB_B64_PAD_OPTIONAL) || n % 4 == 1)
                        return refuse(bad, group_start);
                while (n % 4 != 0) {
                        tmp[n++] = '=';
                        pads++;
                }
        }
        if ((flags & CB_B64_STRICT_BITS) && pads > 0 && (last_value & (pads == 2 ? 0xf : 0x3)) != 0)
                return refuse(bad, last_data);
        if (n > (size_t)0x7fffffff)
                return refuse(bad, 0);
        if (n == 0) {
                out[0] = '\0';
                return 0;
        }
        int r = EVP_DecodeBlock(out, (const unsigned char *)tmp, (int)n);
        if (r < 0 || (size_t)r < pads)
                return refuse(bad, 0);
        out[r - (int)pads] = '\0';
        return r - (ssize_t)pads;
}
