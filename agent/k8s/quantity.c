/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/k8s/quantity.h"

#include <stdio.h>
#include <string.h>

/*
 * resource.Quantity parsing with exact arithmetic.
 *
 * The number is kept as a decimal digit string D (leading zeros dropped) and
 * a decimal exponent, so x = D * 10^exp10 * 2^exp2. Value() and MilliValue()
 * are ceil(|x| * 10^s) for s = 0 and 3, computed on the digit string; no
 * floating point is involved.
 *
 * Very long mantissas: only the first QTY_KEEP significant digits are kept
 * and the rest collapse to a "sticky" flag (some non-zero digit was dropped).
 * Once the integer part is bounded (at most ~22 digits, larger is refused or
 * saturated), at least 60 kept digits lie after the decimal point; since
 * 2^exp2 <= 2^60 divides 10^60, a dropped non-zero tail can never carry into
 * the integer part, and only makes the result round up by one. So the
 * truncation is exact for ceil().
 */

#define QTY_KEEP      100
#define QTY_DIGITS    (QTY_KEEP + 24)
#define QTY_EXP_CLAMP 100000

struct qnum {
        unsigned char d[QTY_DIGITS]; /* most significant first, values 0..9 */
        int n;
        long exp10;
        int exp2;
        bool sticky;
};

static const unsigned __int128 INT64_LIMIT = (unsigned __int128)INT64_MAX;

static int invalid(struct cb_error *err, const char *s, const char *why)
{
        return cb_error_set(err, 0, "invalid quantity \"%.64s%s\": %s", s,
                            strlen(s) > 64 ? "..." : "", why);
}

/* Suffix -> base-10 exponent or base-2 exponent and the format. */
static int interpret_suffix(const char *s, size_t len, long *exp10, int *exp2,
                            enum k8s_quantity_format *fmt)
{
        static const struct {
                const char *sfx;
                int e10, e2;
        } table[] = {
            {"", 0, 0},    {"n", -9, 0},  {"u", -6, 0},  {"m", -3, 0},
            {"k", 3, 0},   {"M", 6, 0},   {"G", 9, 0},   {"T", 12, 0},
            {"P", 15, 0},  {"E", 18, 0},  {"Ki", 0, 10}, {"Mi", 0, 20},
            {"Gi", 0, 30}, {"Ti", 0, 40}, {"Pi", 0, 50}, {"Ei", 0, 60},
        };
        for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
                if (strlen(table[i].sfx) == len && memcmp(table[i].sfx, s, len) == 0) {
                        *exp10 = table[i].e10;
                        *exp2 = table[i].e2;
                        *fmt = table[i].e2 != 0 ? K8S_QF_BINARY_SI : K8S_QF_DECIMAL_SI;
                        return 0;
                }
        }
        if (len < 2 || (s[0] != 'e' && s[0] != 'E'))
                return -1;
        size_t i = 1;
        bool neg = false;
        if (s[i] == '+' || s[i] == '-')
                neg = s[i++] == '-';
        if (i == len)
                return -1;
        long e = 0;
        for (; i < len; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return -1;
                if (e < QTY_EXP_CLAMP)
                        e = e * 10 + (s[i] - '0');
        }
        *exp10 = neg ? -e : e;
        *exp2 = 0;
        *fmt = K8S_QF_DECIMAL_EXP;
        return 0;
}

static void push_digit(struct qnum *q, char c, bool frac)
{
        if (q->n == 0 && c == '0') {
                if (frac)
                        q->exp10--;
                return;
        }
        if (q->n < QTY_KEEP) {
                q->d[q->n++] = (unsigned char)(c - '0');
                if (frac)
                        q->exp10--;
        } else {
                if (c != '0')
                        q->sticky = true;
                if (!frac)
                        q->exp10++;
        }
}

/* Multiplies the digit string by 2^exp2 (exp2 <= 60) in place. */
static void mul_pow2(struct qnum *q)
{
        for (int left = q->exp2; left > 0;) {
                int step = left > 10 ? 10 : left;
                unsigned carry = 0;
                for (int i = q->n - 1; i >= 0; i--) {
                        unsigned v = ((unsigned)q->d[i] << step) + carry;
                        q->d[i] = (unsigned char)(v % 10);
                        carry = v / 10;
                }
                while (carry > 0) {
                        memmove(q->d + 1, q->d, (size_t)q->n);
                        q->d[0] = (unsigned char)(carry % 10);
                        carry /= 10;
                        q->n++;
                }
                left -= step;
        }
}

/* ceil(|x| * 10^scale) into *out; -1 when it exceeds INT64_MAX. */
static int ceil_scaled(const struct qnum *q, int scale, unsigned __int128 *out)
{
        long k = q->exp10 + scale;
        long int_digits = (long)q->n + k; /* digits before the decimal point */
        unsigned __int128 v = 0;
        bool frac = q->sticky;

        if (q->n == 0) {
                *out = 0;
                return 0;
        }
        if (int_digits > 25)
                return -1;
        for (long i = 0; i < int_digits; i++) {
                unsigned digit = i < q->n ? q->d[i] : 0;
                v = v * 10 + digit;
        }
        for (long i = int_digits < 0 ? 0 : int_digits; i < q->n; i++)
                if (q->d[i] != 0)
                        frac = true;
        if (frac)
                v++;
        if (v > INT64_LIMIT)
                return -1;
        *out = v;
        return 0;
}

int k8s_quantity_parse(const char *s, struct k8s_quantity *q, struct cb_error *err)
{
        struct qnum num = {0};
        bool neg = false, any_digit = false;
        size_t i = 0, len;

        memset(q, 0, sizeof(*q));
        if (s == NULL || s[0] == '\0')
                return cb_error_set(err, 0, "invalid quantity \"\": a quantity cannot be empty");
        len = strlen(s);
        if (s[i] == '+' || s[i] == '-')
                neg = s[i++] == '-';
        for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
                push_digit(&num, s[i], false);
                any_digit = true;
        }
        if (i < len && s[i] == '.') {
                for (i++; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
                        push_digit(&num, s[i], true);
                        any_digit = true;
                }
        }
        if (!any_digit)
                return invalid(err, s, "it must start with a number");

        /* Suffix: letters from the suffix alphabet, an optional sign, digits. */
        size_t sfx = i;
        while (i < len && strchr("eEinumkKMGTP", s[i]) != NULL)
                i++;
        if (i < len && (s[i] == '+' || s[i] == '-'))
                i++;
        while (i < len && s[i] >= '0' && s[i] <= '9')
                i++;
        long exp10;
        enum k8s_quantity_format fmt;
        if (i != len || interpret_suffix(s + sfx, len - sfx, &exp10, &num.exp2, &fmt) < 0)
                return invalid(err, s,
                               "want <number><suffix> with a suffix of Ki, Mi, Gi, Ti, Pi, Ei, "
                               "n, u, m, k, M, G, T, P, E or e<exponent>");
        num.exp10 += exp10;
        if (num.exp10 > QTY_EXP_CLAMP)
                num.exp10 = QTY_EXP_CLAMP;
        if (num.exp10 < -QTY_EXP_CLAMP)
                num.exp10 = -QTY_EXP_CLAMP;
        /* A mantissa whose integer part is already too long cannot be multiplied
         * into range; refuse before growing the digit string. */
        if (num.n > 0 && (long)num.n + num.exp10 > 22)
                goto too_large;
        mul_pow2(&num);

        unsigned __int128 value, milli;
        if (ceil_scaled(&num, 0, &value) < 0)
                goto too_large;
        if (ceil_scaled(&num, 3, &milli) < 0) {
                milli = INT64_LIMIT;
                q->milli_saturated = true;
        }
        q->set = true;
        q->value = neg ? -(int64_t)value : (int64_t)value;
        q->milli = neg ? -(int64_t)milli : (int64_t)milli;
        /* Kubernetes shows binary quantities below 1 as decimal ones. */
        if (fmt == K8S_QF_BINARY_SI && milli < 1000)
                fmt = K8S_QF_DECIMAL_SI;
        q->format = fmt;
        q->text = s;
        return 0;

too_large:
        memset(q, 0, sizeof(*q));
        return cb_error_set(err, 0,
                            "invalid quantity \"%.64s%s\": the magnitude exceeds 2^63-1 "
                            "(9223372036854775807)",
                            s, len > 64 ? "..." : "");
}

static int fmt_i128(char *out, size_t size, __int128 v)
{
        char tmp[48];
        int n = 0;
        unsigned __int128 u = v < 0 ? -(unsigned __int128)v : (unsigned __int128)v;
        do {
                tmp[n++] = (char)('0' + (int)(u % 10));
                u /= 10;
        } while (u > 0);
        if (v < 0)
                tmp[n++] = '-';
        for (int i = 0; i < n && (size_t)i < size; i++)
                out[i] = tmp[n - 1 - i];
        if (size > 0)
                out[(size_t)n < size ? (size_t)n : size - 1] = '\0';
        return n;
}

/*
 * Canonical form at milli precision (what the struct keeps): 0.1m was
 * rounded up to 1m by parsing. BinarySI is used for integral values of
 * magnitude >= 1024 (largest power of 1024 dividing it); everything else is
 * printed as mantissa and an exponent that is a multiple of 3, with the SI
 * suffix (DecimalSI) or e<exp> (DecimalExponent), like CanonicalizeBytes.
 */
int k8s_quantity_format(const struct k8s_quantity *q, char *buf, int size)
{
        static const char *const bin_sfx[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
        char num[64], sfx[32] = "";
        __int128 amount;
        int exp = -3;
        enum k8s_quantity_format fmt = q->format;

        if (q->milli_saturated)
                amount = (__int128)q->value * 1000;
        else
                amount = q->milli;
        if (!q->set || amount == 0)
                return snprintf(buf, (size_t)(size > 0 ? size : 0), "0");

        if (fmt == K8S_QF_BINARY_SI) {
                if ((amount > -1024000 && amount < 1024000) || amount % 1000 != 0)
                        fmt = K8S_QF_DECIMAL_SI;
        }
        if (fmt == K8S_QF_BINARY_SI) {
                __int128 v = amount / 1000;
                int e = 0;
                while (e < 6 && v % 1024 == 0) {
                        v /= 1024;
                        e++;
                }
                fmt_i128(num, sizeof(num), v);
                snprintf(sfx, sizeof(sfx), "%s", bin_sfx[e]);
        } else {
                while (amount % 10 == 0) {
                        amount /= 10;
                        exp++;
                }
                /* C's % keeps the sign like Go's, so the same cases apply. */
                switch (exp % 3) {
                case 1:
                case -2:
                        amount *= 10;
                        exp -= 1;
                        break;
                case 2:
                case -1:
                        amount *= 100;
                        exp -= 2;
                        break;
                }
                fmt_i128(num, sizeof(num), amount);
                if (fmt == K8S_QF_DECIMAL_EXP) {
                        if (exp != 0)
                                snprintf(sfx, sizeof(sfx), "e%d", exp);
                } else {
                        static const char *const dec_sfx[] = {"m", "",  "k", "M",
                                                              "G", "T", "P", "E"};
                        int idx = exp / 3 + 1;
                        if (idx >= 0 && idx < (int)(sizeof(dec_sfx) / sizeof(dec_sfx[0])))
                                snprintf(sfx, sizeof(sfx), "%s", dec_sfx[idx]);
                        else
                                snprintf(sfx, sizeof(sfx), "e%d", exp);
                }
        }
        return snprintf(buf, (size_t)(size > 0 ? size : 0), "%s%s", num, sfx);
}
