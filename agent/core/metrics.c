/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/core/metrics.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const double ag_metrics_buckets[AG_METRICS_NBUCKETS] = {
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300,
};

enum metric_type { METRIC_COUNTER, METRIC_GAUGE, METRIC_HISTOGRAM };

static const char *const type_names[] = {"counter", "gauge", "histogram"};

struct series {
        char **values;                         /* one per family label name */
        double value;                          /* counter, gauge */
        uint64_t buckets[AG_METRICS_NBUCKETS]; /* histogram, not cumulative */
        uint64_t count;
        double sum;
};

struct family {
        char *name;
        char *help;
        enum metric_type type;
        char **label_names;
        size_t nlabels;
        struct series **series; /* sorted by label values */
        size_t nseries, cap;
};

struct ag_metrics {
        struct family **families; /* sorted by name */
        size_t nfamilies, cap;
};

struct ag_metrics *ag_metrics_new(void)
{
        return calloc(1, sizeof(struct ag_metrics));
}

static void series_free(struct series *s, size_t nlabels)
{
        if (s == NULL)
                return;
        for (size_t i = 0; i < nlabels && s->values != NULL; i++)
                free(s->values[i]);
        free(s->values);
        free(s);
}

static void family_free(struct family *f)
{
        if (f == NULL)
                return;
        for (size_t i = 0; i < f->nseries; i++)
                series_free(f->series[i], f->nlabels);
        free(f->series);
        for (size_t i = 0; i < f->nlabels; i++)
                free(f->label_names[i]);
        free(f->label_names);
        free(f->name);
        free(f->help);
        free(f);
}

void ag_metrics_free(struct ag_metrics *m)
{
        if (m == NULL)
                return;
        for (size_t i = 0; i < m->nfamilies; i++)
                family_free(m->families[i]);
        free(m->families);
        free(m);
}

/* [a-zA-Z_:][a-zA-Z0-9_:]* for metric names; labels do not allow ':'. */
static bool valid_name(const char *s, bool colon)
{
        if (s == NULL || *s == '\0' || (*s >= '0' && *s <= '9'))
                return false;
        for (; *s != '\0'; s++) {
                char c = *s;
                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '_' || (colon && c == ':')))
                        return false;
        }
        return true;
}

static size_t count_labels(const char *const *labels)
{
        size_t n = 0;
        while (labels != NULL && labels[2 * n] != NULL)
                n++;
        return n;
}

static int check_labels(const char *name, enum metric_type type, const char *const *labels,
                        size_t n, struct cb_error *err)
{
        for (size_t i = 0; i < n; i++) {
                const char *ln = labels[2 * i];
                if (!valid_name(ln, false) || strncmp(ln, "__", 2) == 0)
                        return cb_error_set(err, 0,
                                            "metric %s: label name \"%s\" is invalid: use "
                                            "[a-zA-Z_][a-zA-Z0-9_]* not starting with __",
                                            name, ln);
                if (type == METRIC_HISTOGRAM && strcmp(ln, "le") == 0)
                        return cb_error_set(err, 0,
                                            "metric %s: label name \"le\" is reserved for "
                                            "histogram buckets: rename the label",
                                            name);
                if (labels[2 * i + 1] == NULL)
                        return cb_error_set(err, 0, "metric %s: label %s has no value", name, ln);
                for (size_t j = 0; j < i; j++)
                        if (strcmp(labels[2 * j], ln) == 0)
                                return cb_error_set(err, 0, "metric %s: label %s given twice", name,
                                                    ln);
        }
        return 0;
}

static int grow(void *arrayp, size_t *cap, size_t n)
{
        void ***array = arrayp;
        if (n < *cap)
                return 0;
        size_t ncap = *cap == 0 ? 8 : 2 * *cap;
        void **a = reallocarray(*array, ncap, sizeof(void *));
        if (a == NULL)
                return -1;
        *array = a;
        *cap = ncap;
        return 0;
}

static struct family *family_new(const char *name, const char *help, enum metric_type type,
                                 const char *const *labels, size_t n)
{
        struct family *f = calloc(1, sizeof(*f));
        if (f == NULL)
                return NULL;
        f->type = type;
        f->name = strdup(name);
        f->help = strdup(help != NULL ? help : "");
        f->label_names = calloc(n + 1, sizeof(char *));
        if (f->name == NULL || f->help == NULL || f->label_names == NULL)
                goto fail;
        for (; f->nlabels < n; f->nlabels++) {
                f->label_names[f->nlabels] = strdup(labels[2 * f->nlabels]);
                if (f->label_names[f->nlabels] == NULL)
                        goto fail;
        }
        return f;
fail:
        family_free(f);
        return NULL;
}

/* Finds or creates the family and the series for labels; NULL on error. */
static struct series *lookup(struct ag_metrics *m, const char *name, const char *help,
                             enum metric_type type, const char *const *labels, struct cb_error *err)
{
        if (!valid_name(name, true)) {
                cb_error_set(err, 0, "metric name \"%s\" is invalid: use [a-zA-Z_:][a-zA-Z0-9_:]*",
                             name != NULL ? name : "(null)");
                return NULL;
        }
        size_t n = count_labels(labels);
        if (check_labels(name, type, labels, n, err) < 0)
                return NULL;

        /* Binary search for the family (sorted by name). */
        size_t lo = 0, hi = m->nfamilies;
        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (strcmp(m->families[mid]->name, name) < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        struct family *f = NULL;
        if (lo < m->nfamilies && strcmp(m->families[lo]->name, name) == 0) {
                f = m->families[lo];
                if (f->type != type) {
                        cb_error_set(err, 0, "metric %s is a %s, not a %s", name,
                                     type_names[f->type], type_names[type]);
                        return NULL;
                }
                bool same = f->nlabels == n;
                for (size_t i = 0; same && i < n; i++)
                        same = strcmp(f->label_names[i], labels[2 * i]) == 0;
                if (!same) {
                        cb_error_set(err, 0,
                                     "metric %s: the label names differ from its first use: "
                                     "give the same labels in the same order",
                                     name);
                        return NULL;
                }
        } else {
                if (grow(&m->families, &m->cap, m->nfamilies) < 0 ||
                    (f = family_new(name, help, type, labels, n)) == NULL) {
                        cb_error_set(err, ENOMEM, "metric %s", name);
                        return NULL;
                }
                memmove(&m->families[lo + 1], &m->families[lo],
                        (m->nfamilies - lo) * sizeof(m->families[0]));
                m->families[lo] = f;
                m->nfamilies++;
        }

        /* Series are sorted by their label values, compared in label order. */
        lo = 0;
        hi = f->nseries;
        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                int c = 0;
                for (size_t i = 0; c == 0 && i < n; i++)
                        c = strcmp(f->series[mid]->values[i], labels[2 * i + 1]);
                if (c < 0)
                        lo = mid + 1;
                else if (c > 0)
                        hi = mid;
                else
                        return f->series[mid];
        }
        struct series *s = calloc(1, sizeof(*s));
        if (s == NULL || grow(&f->series, &f->cap, f->nseries) < 0 ||
            (s->values = calloc(n + 1, sizeof(char *))) == NULL) {
                free(s);
                cb_error_set(err, ENOMEM, "metric %s", name);
                return NULL;
        }
        for (size_t i = 0; i < n; i++) {
                s->values[i] = strdup(labels[2 * i + 1]);
                if (s->values[i] == NULL) {
                        series_free(s, n);
                        cb_error_set(err, ENOMEM, "metric %s", name);
                        return NULL;
                }
        }
        memmove(&f->series[lo + 1], &f->series[lo], (f->nseries - lo) * sizeof(f->series[0]));
        f->series[lo] = s;
        f->nseries++;
        return s;
}

int ag_metrics_counter_add(struct ag_metrics *m, const char *name, const char *help,
                           const char *const *labels, double value, struct cb_error *err)
{
        if (!isfinite(value) || value < 0)
                return cb_error_set(err, 0,
                                    "metric %s: a counter only goes up by a finite amount, "
                                    "not %g",
                                    name, value);
        struct series *s = lookup(m, name, help, METRIC_COUNTER, labels, err);
        if (s == NULL)
                return -1;
        s->value += value;
        return 0;
}

int ag_metrics_gauge_set(struct ag_metrics *m, const char *name, const char *help,
                         const char *const *labels, double value, struct cb_error *err)
{
        struct series *s = lookup(m, name, help, METRIC_GAUGE, labels, err);
        if (s == NULL)
                return -1;
        s->value = value;
        return 0;
}

int ag_metrics_observe(struct ag_metrics *m, const char *name, const char *help,
                       const char *const *labels, double seconds, struct cb_error *err)
{
        if (!isfinite(seconds))
                return cb_error_set(err, 0, "metric %s: observation %g is not finite", name,
                                    seconds);
        struct series *s = lookup(m, name, help, METRIC_HISTOGRAM, labels, err);
        if (s == NULL)
                return -1;
        /* Bucket bounds are inclusive (le = less or equal); larger values
         * land only in +Inf, i.e. in count. */
        for (size_t i = 0; i < AG_METRICS_NBUCKETS; i++) {
                if (seconds <= ag_metrics_buckets[i]) {
                        s->buckets[i]++;
                        break;
                }
        }
        s->count++;
        s->sum += seconds;
        return 0;
}

const char *ag_metrics_format_value(double v, char *buf, size_t size)
{
        if (isnan(v)) {
                snprintf(buf, size, "NaN");
                return buf;
        }
        if (isinf(v)) {
                snprintf(buf, size, v > 0 ? "+Inf" : "-Inf");
                return buf;
        }
        if (v == 0) {
                snprintf(buf, size, signbit(v) ? "-0" : "0");
                return buf;
        }
        /* The shortest digit count that reads back as v (Go's 'g', -1). */
        int prec = 1;
        char tmp[64];
        for (; prec < 17; prec++) {
                snprintf(tmp, sizeof(tmp), "%.*e", prec - 1, v);
                if (strtod(tmp, NULL) == v)
                        break;
        }
        snprintf(tmp, sizeof(tmp), "%.*e", prec - 1, v);
        int exp = (int)strtol(strchr(tmp, 'e') + 1, NULL, 10);
        /* Go uses the exponent form when exp < -4 or exp >= 6 for the
         * shortest precision (C's %g would compare with the digit count). */
        if (exp < -4 || exp >= 6)
                snprintf(buf, size, "%s", tmp);
        else
                snprintf(buf, size, "%.*f", prec - 1 - exp > 0 ? prec - 1 - exp : 0, v);
        return buf;
}

/* Label values escape \ " and newline; help text escapes \ and newline. */
static void put_escaped(FILE *f, const char *s, bool quote)
{
        for (; *s != '\0'; s++) {
                if (*s == '\\')
                        fputs("\\\\", f);
                else if (*s == '\n')
                        fputs("\\n", f);
                else if (quote && *s == '"')
                        fputs("\\\"", f);
                else
                        fputc(*s, f);
        }
}

static void put_labels(FILE *out, const struct family *fam, const struct series *s, const char *le)
{
        if (fam->nlabels == 0 && le == NULL)
                return;
        fputc('{', out);
        for (size_t i = 0; i < fam->nlabels; i++) {
                fprintf(out, "%s%s=\"", i > 0 ? "," : "", fam->label_names[i]);
                put_escaped(out, s->values[i], true);
                fputc('"', out);
        }
        if (le != NULL)
                fprintf(out, "%sle=\"%s\"", fam->nlabels > 0 ? "," : "", le);
        fputc('}', out);
}

static void render_family(FILE *out, const struct family *fam)
{
        char num[64];
        fprintf(out, "# HELP %s ", fam->name);
        put_escaped(out, fam->help, false);
        fprintf(out, "\n# TYPE %s %s\n", fam->name, type_names[fam->type]);
        for (size_t i = 0; i < fam->nseries; i++) {
                const struct series *s = fam->series[i];
                if (fam->type != METRIC_HISTOGRAM) {
                        fputs(fam->name, out);
                        put_labels(out, fam, s, NULL);
                        fprintf(out, " %s\n", ag_metrics_format_value(s->value, num, sizeof(num)));
                        continue;
                }
                uint64_t cumulative = 0;
                for (size_t b = 0; b < AG_METRICS_NBUCKETS; b++) {
                        cumulative += s->buckets[b];
                        fprintf(out, "%s_bucket", fam->name);
                        put_labels(
                            out, fam, s,
                            ag_metrics_format_value(ag_metrics_buckets[b], num, sizeof(num)));
                        fprintf(out, " %" PRIu64 "\n", cumulative);
                }
                fprintf(out, "%s_bucket", fam->name);
                put_labels(out, fam, s, "+Inf");
                fprintf(out, " %" PRIu64 "\n", s->count);
                fprintf(out, "%s_sum", fam->name);
                put_labels(out, fam, s, NULL);
                fprintf(out, " %s\n", ag_metrics_format_value(s->sum, num, sizeof(num)));
                fprintf(out, "%s_count", fam->name);
                put_labels(out, fam, s, NULL);
                fprintf(out, " %" PRIu64 "\n", s->count);
        }
}

char *ag_metrics_render(const struct ag_metrics *m)
{
        char *buf = NULL;
        size_t len = 0;
        FILE *out = open_memstream(&buf, &len);
        if (out == NULL)
                return NULL;
        for (size_t i = 0; i < m->nfamilies; i++)
                render_family(out, m->families[i]);
        bool failed = ferror(out) != 0;
        if (fclose(out) != 0 || failed) {
                free(buf);
                return NULL;
        }
        return buf;
}
