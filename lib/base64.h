/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Standard base64 (RFC 4648 section 4, the "+/" alphabet) for every place
 * cubelet reads it: Secret data (encoding/json's []byte), kubeconfig
 * *-data fields, docker config "auth" entries. The decoding itself is
 * OpenSSL's EVP_DecodeBlock; this adds what Go's decoder does around it
 * (newlines skipped, padding rules) and the offset of the first bad byte,
 * which Go's CorruptInputError reports ("illegal base64 data at input byte N").
 */

#include <stddef.h>
#include <sys/types.h>

enum {
        CB_B64_SKIP_NEWLINES = 1 << 0, /* '\r' and '\n' anywhere are ignored (as Go's decoder) */
        CB_B64_SKIP_SPACE = 1 << 1,    /* ' ' and '\t' too */
        CB_B64_PAD_OPTIONAL = 1 << 2,  /* the final "=" or "==" may be left out */
        CB_B64_STRICT_BITS = 1 << 3,   /* refuse non-zero bits after the last byte ("YR==") */
};

/* Bytes out must hold for len bytes of input (the result is NUL-terminated). */
static inline size_t cb_base64_max(size_t len)
{
        return len / 4 * 3 + 4;
}

/* Decodes in[0..len) into out (cb_base64_max(len) bytes). Returns the number
 * of bytes, or -1 with *bad (may be NULL) the offset in `in` of the first byte
 * that makes the input invalid (len - len % 4 style offset for a truncated
 * last group, as Go reports it). */
ssize_t cb_base64_decode(const char *in, size_t len, unsigned flags, unsigned char *out,
                         size_t *bad);
