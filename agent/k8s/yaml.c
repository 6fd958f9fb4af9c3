/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/k8s/k8s.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "lib/cleanup.h"
#include "lib/file.h"

/*
 * JSON or YAML text -> cJSON tree.
 *
 * JSON goes through cJSON after a cheap pre-scan that enforces the depth and
 * string limits (so cJSON never recurses deeply on hostile input). YAML goes
 * through libyaml's event API with an explicit stack, typed with the YAML 1.2
 * core schema for plain scalars; a number node keeps its text in valuestring
 * (k8s.h). Anchors and aliases are supported: an alias is a copy of the
 * anchored node, and every node, copies included, counts against a bound so
 * "billion laughs" input is refused instead of expanded: at most
 * YAML_MAX_ALIAS_NODES nodes may come from alias copies.
 */

/* Total nodes of one YAML stream, alias copies included. */
#define YAML_MAX_NODES   (4u << 20)
#define YAML_MAX_ANCHORS 4096
/* Nodes created by alias copies: far above what a manifest needs, far below
 * what an exponential expansion reaches. */
#define YAML_MAX_ALIAS_NODES 100000

/* ---- JSON ---- */

static void line_col(const char *text, size_t pos, size_t *line, size_t *col)
{
        *line = 1;
        *col = 1;
        for (size_t i = 0; i < pos; i++) {
                if (text[i] == '\n') {
                        (*line)++;
                        *col = 1;
                } else {
                        (*col)++;
                }
        }
}

static int json_prescan(const char *text, size_t len, struct cb_error *err)
{
        size_t depth = 0, str_start = 0;
        bool in_str = false;
        for (size_t i = 0; i < len; i++) {
                char c = text[i];
                if (in_str) {
                        if (c == '\\')
                                i++;
                        else if (c == '"')
                                in_str = false;
                        if (i - str_start > K8S_MAX_STRING_BYTES) {
                                size_t line, col;
                                line_col(text, str_start, &line, &col);
                                return cb_error_set(err, 0,
                                                    "line %zu, column %zu: a string exceeds the "
                                                    "limit of %u bytes",
                                                    line, col, K8S_MAX_STRING_BYTES);
                        }
                        continue;
                }
                if (c == '"') {
                        in_str = true;
                        str_start = i;
                } else if (c == '{' || c == '[') {
                        if (++depth > K8S_MAX_DEPTH) {
                                size_t line, col;
                                line_col(text, i, &line, &col);
                                return cb_error_set(err, 0,
                                                    "line %zu, column %zu: nesting deeper than "
                                                    "the limit of %d levels",
                                                    line, col, K8S_MAX_DEPTH);
                        }
                } else if ((c == '}' || c == ']') && depth > 0) {
                        depth--;
                }
        }
        return 0;
}

static int parse_json(const char *text, size_t len, cJSON **ret, struct cb_error *err)
{
        const char *end = NULL;
        if (json_prescan(text, len, err) < 0)
                return -1;
        cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, false);
        if (root == NULL) {
                size_t pos = end != NULL && end >= text ? (size_t)(end - text) : 0, line, col;
                if (pos > len)
                        pos = len;
                line_col(text, pos, &line, &col);
                return cb_error_set(err, 0, "line %zu, column %zu: invalid JSON%s", line, col,
                                    pos >= len ? " (unexpected end of input)" : "");
        }
        for (size_t i = end != NULL ? (size_t)(end - text) : len; i < len; i++) {
                if (text[i] != ' ' && text[i] != '\t' && text[i] != '\n' && text[i] != '\r' &&
                    text[i] != '\0') {
                        size_t line, col;
                        line_col(text, i, &line, &col);
                        cJSON_Delete(root);
                        return cb_error_set(err, 0,
                                            "line %zu, column %zu: unexpected text after the "
                                            "JSON value",
                                            line, col);
                }
        }
        *ret = root;
        return 0;
}

/* ---- YAML scalars (YAML 1.2 core schema) ---- */

static bool all_in(const char *s, const char *set)
{
        if (*s == '\0')
                return false;
        for (; *s != '\0'; s++)
                if (strchr(set, *s) == NULL)
                        return false;
        return true;
}

static bool is_core_float(const char *s)
{
        /* [-+]? ( \.[0-9]+ | [0-9]+ ( \. [0-9]* )? ) ( [eE] [-+]? [0-9]+ )? */
        const char *p = s;
        bool digits = false;
        if (*p == '+' || *p == '-')
                p++;
        if (*p == '.') {
                p++;
                if (*p < '0' || *p > '9')
                        return false;
                while (*p >= '0' && *p <= '9')
                        p++;
        } else {
                while (*p >= '0' && *p <= '9') {
                        p++;
                        digits = true;
                }
                if (!digits)
                        return false;
                if (*p == '.')
                        for (p++; *p >= '0' && *p <= '9'; p++)
                                ;
        }
        if (*p == 'e' || *p == 'E') {
                p++;
                if (*p == '+' || *p == '-')
                        p++;
                if (*p < '0' || *p > '9')
                        return false;
                while (*p >= '0' && *p <= '9')
                        p++;
        }
        return *p == '\0';
}

static cJSON *number_node(double v, const char *text)
{
        cJSON *n = cJSON_CreateNumber(v);
        if (n == NULL)
                return NULL;
        n->valuestring = strdup(text);
        if (n->valuestring == NULL) {
                cJSON_Delete(n);
                return NULL;
        }
        return n;
}

/* An integer in decimal, 0o octal or 0x hex; NULL (with *is_int false) when
 * it is not one. Out-of-range integers stay strings unless decimal. */
static cJSON *int_node(const char *s, bool *is_int)
{
        const char *p = s;
        bool neg = false;
        int base = 10;
        *is_int = false;
        if (strncmp(s, "0o", 2) == 0 && all_in(s + 2, "01234567")) {
                base = 8;
                p = s + 2;
        } else if (strncmp(s, "0x", 2) == 0 && all_in(s + 2, "0123456789abcdefABCDEF")) {
                base = 16;
                p = s + 2;
        } else {
                if (*p == '+' || *p == '-')
                        neg = *p++ == '-';
                if (!all_in(p, "0123456789"))
                        return NULL;
        }
        *is_int = true;
        errno = 0;
        unsigned long long u = strtoull(p, NULL, base);
        if (errno == ERANGE || (neg && u > (unsigned long long)INT64_MAX + 1)) {
                if (base != 10) {
                        *is_int = false;
                        return NULL;
                }
                return number_node(strtod(s, NULL), s);
        }
        char dec[32];
        if (neg)
                snprintf(dec, sizeof(dec), "-%llu", u);
        else
                snprintf(dec, sizeof(dec), "%llu", u);
        return number_node(neg ? -(double)u : (double)u, dec);
}

static cJSON *plain_scalar(const char *s)
{
        static const char *const nulls[] = {"", "~", "null", "Null", "NULL"};
        static const char *const trues[] = {"true", "True", "TRUE"};
        static const char *const falses[] = {"false", "False", "FALSE"};
        bool is_int;
        for (size_t i = 0; i < CB_ARRAY_SIZE(nulls); i++)
                if (strcmp(s, nulls[i]) == 0)
                        return cJSON_CreateNull();
        for (size_t i = 0; i < CB_ARRAY_SIZE(trues); i++)
                if (strcmp(s, trues[i]) == 0)
                        return cJSON_CreateTrue();
        for (size_t i = 0; i < CB_ARRAY_SIZE(falses); i++)
                if (strcmp(s, falses[i]) == 0)
                        return cJSON_CreateFalse();
        cJSON *n = int_node(s, &is_int);
        if (is_int)
                return n;
        if (is_core_float(s))
                return number_node(strtod(s, NULL), s);
        const char *p = s;
        if (*p == '+' || *p == '-')
                p++;
        if (strcmp(p, ".inf") == 0 || strcmp(p, ".Inf") == 0 || strcmp(p, ".INF") == 0)
                return number_node(*s == '-' ? -INFINITY : INFINITY, s);
        if (strcmp(s, ".nan") == 0 || strcmp(s, ".NaN") == 0 || strcmp(s, ".NAN") == 0)
                return number_node(NAN, s);
        return cJSON_CreateString(s);
}

/* ---- YAML events -> tree ---- */

struct anchor {
        char *name;
        cJSON *node;
        size_t nodes; /* nodes in the subtree, once complete */
        bool complete;
};

struct frame {
        cJSON *node;
        char *key;   /* mapping: the pending key, NULL when a key is expected */
        long anchor; /* index into anchors, -1 */
        size_t nodes_at_start;
};

struct yparse {
        yaml_parser_t parser;
        struct cb_error *err;
        struct frame stack[K8S_MAX_DEPTH + 1];
        size_t depth;
        cJSON *root;
        struct anchor *anchors;
        size_t n_anchors;
        size_t nodes;
        size_t alias_nodes;
};

static int yerr(struct yparse *y, const yaml_mark_t *m, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int yerr(struct yparse *y, const yaml_mark_t *m, const char *fmt, ...)
{
        char msg[CB_ERROR_MSG_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        return cb_error_set(y->err, 0, "line %zu, column %zu: %s", m->line + 1, m->column + 1, msg);
}

static int parser_error(struct yparse *y)
{
        const yaml_parser_t *p = &y->parser;
        const char *problem = p->problem != NULL ? p->problem : "invalid YAML";
        if (p->error == YAML_MEMORY_ERROR)
                return cb_error_set(y->err, ENOMEM, "parsing YAML");
        if (p->error == YAML_READER_ERROR)
                return cb_error_set(y->err, 0, "byte offset %zu: %s", p->problem_offset, problem);
        return yerr(y, &p->problem_mark, "%s", problem);
}

static void yparse_reset(struct yparse *y)
{
        /* open containers are not attached to their parents yet */
        for (size_t i = 0; i < y->depth; i++) {
                free(y->stack[i].key);
                cJSON_Delete(y->stack[i].node);
        }
        y->depth = 0;
        if (y->root != NULL)
                cJSON_Delete(y->root);
        y->root = NULL;
        for (size_t i = 0; i < y->n_anchors; i++)
                free(y->anchors[i].name);
        free(y->anchors);
        y->anchors = NULL;
        y->n_anchors = 0;
}

static int count_node(struct yparse *y, const yaml_mark_t *m, size_t n)
{
        if (n > YAML_MAX_NODES || y->nodes > YAML_MAX_NODES - n)
                return yerr(y, m, "the document expands to more than %u nodes (aliases included)",
                            YAML_MAX_NODES);
        y->nodes += n;
        return 0;
}

static long add_anchor(struct yparse *y, const yaml_mark_t *m, const yaml_char_t *name, cJSON *node)
{
        if (name == NULL)
                return -1;
        if (y->n_anchors >= YAML_MAX_ANCHORS) {
                yerr(y, m, "more than %d anchors", YAML_MAX_ANCHORS);
                return -2;
        }
        if (y->n_anchors % 64 == 0) {
                struct anchor *a = realloc(y->anchors, (y->n_anchors + 64) * sizeof(*a));
                if (a == NULL) {
                        cb_error_set(y->err, ENOMEM, "parsing YAML");
                        return -2;
                }
                y->anchors = a;
        }
        struct anchor *a = &y->anchors[y->n_anchors];
        if ((a->name = strdup((const char *)name)) == NULL) {
                cb_error_set(y->err, ENOMEM, "parsing YAML");
                return -2;
        }
        a->node = node;
        a->nodes = 1;
        a->complete = false;
        return (long)y->n_anchors++;
}

/* Attaches a finished node to its parent (or makes it the root). Takes
 * ownership of node. */
static int attach(struct yparse *y, const yaml_mark_t *m, cJSON *node)
{
        if (y->depth == 0) {
                if (y->root != NULL) {
                        cJSON_Delete(node);
                        return yerr(y, m, "more than one root node");
                }
                y->root = node;
                return 0;
        }
        struct frame *f = &y->stack[y->depth - 1];
        if (cJSON_IsArray(f->node)) {
                cJSON_AddItemToArray(f->node, node);
                return 0;
        }
        if (f->key == NULL) {
                /* a mapping key: only scalars are accepted */
                if (cJSON_IsString(node)) {
                        f->key = strdup(node->valuestring);
                } else if (cJSON_IsNumber(node) && node->valuestring != NULL) {
                        f->key = strdup(node->valuestring);
                } else if (cJSON_IsTrue(node) || cJSON_IsFalse(node)) {
                        f->key = strdup(cJSON_IsTrue(node) ? "true" : "false");
                } else if (cJSON_IsNull(node)) {
                        f->key = strdup("null");
                } else {
                        cJSON_Delete(node);
                        return yerr(y, m, "a mapping key must be a scalar");
                }
                cJSON_Delete(node);
                if (f->key == NULL)
                        return cb_error_set(y->err, ENOMEM, "parsing YAML");
                return 0;
        }
        cJSON_AddItemToObject(f->node, f->key, node);
        free(f->key);
        f->key = NULL;
        return 0;
}

/* Scalar key strings are kept in the tree as attach() copies them, so a
 * scalar node created for a key is deleted right away; anchors on keys are
 * therefore not registered (an alias to a key is refused as unknown). */
static int on_scalar(struct yparse *y, const yaml_event_t *ev)
{
        const char *text = (const char *)ev->data.scalar.value;
        const char *tag = (const char *)ev->data.scalar.tag;
        bool is_key = y->depth > 0 && cJSON_IsObject(y->stack[y->depth - 1].node) &&
                      y->stack[y->depth - 1].key == NULL;
        cJSON *node;

        if (ev->data.scalar.length > K8S_MAX_STRING_BYTES)
                return yerr(y, &ev->start_mark,
                            "a scalar of %zu bytes exceeds the limit of %u bytes",
                            ev->data.scalar.length, K8S_MAX_STRING_BYTES);
        if (strlen(text) != ev->data.scalar.length)
                return yerr(y, &ev->start_mark, "a scalar contains a NUL character");
        if (count_node(y, &ev->start_mark, 1) < 0)
                return -1;
        if (ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE ||
            (tag != NULL && strcmp(tag, YAML_STR_TAG) == 0))
                node = cJSON_CreateString(text);
        else
                node = plain_scalar(text);
        if (node == NULL)
                return cb_error_set(y->err, ENOMEM, "parsing YAML");
        if (!is_key && ev->data.scalar.anchor != NULL) {
                long a = add_anchor(y, &ev->start_mark, ev->data.scalar.anchor, node);
                if (a == -2) {
                        cJSON_Delete(node);
                        return -1;
                }
                y->anchors[a].complete = true;
        }
        return attach(y, &ev->start_mark, node);
}

static int on_alias(struct yparse *y, const yaml_event_t *ev)
{
        const char *name = (const char *)ev->data.alias.anchor;
        for (size_t i = y->n_anchors; i-- > 0;) {
                struct anchor *a = &y->anchors[i];
                if (strcmp(a->name, name) != 0)
                        continue;
                if (!a->complete)
                        return yerr(y, &ev->start_mark,
                                    "alias *%s refers to a node that contains it", name);
                if (a->nodes > YAML_MAX_ALIAS_NODES ||
                    y->alias_nodes > YAML_MAX_ALIAS_NODES - a->nodes)
                        return yerr(y, &ev->start_mark, "aliases expand to more than %d nodes",
                                    YAML_MAX_ALIAS_NODES);
                y->alias_nodes += a->nodes;
                if (count_node(y, &ev->start_mark, a->nodes) < 0)
                        return -1;
                cJSON *copy = cJSON_Duplicate(a->node, true);
                if (copy == NULL)
                        return cb_error_set(y->err, ENOMEM, "parsing YAML");
                return attach(y, &ev->start_mark, copy);
        }
        return yerr(y, &ev->start_mark, "unknown alias *%s", name);
}

static int on_start(struct yparse *y, const yaml_event_t *ev, bool mapping)
{
        const yaml_char_t *anchor =
            mapping ? ev->data.mapping_start.anchor : ev->data.sequence_start.anchor;
        if (y->depth >= K8S_MAX_DEPTH)
                return yerr(y, &ev->start_mark, "nesting deeper than the limit of %d levels",
                            K8S_MAX_DEPTH);
        if (y->depth > 0 && cJSON_IsObject(y->stack[y->depth - 1].node) &&
            y->stack[y->depth - 1].key == NULL)
                return yerr(y, &ev->start_mark, "a mapping key must be a scalar");
        if (count_node(y, &ev->start_mark, 1) < 0)
                return -1;
        cJSON *node = mapping ? cJSON_CreateObject() : cJSON_CreateArray();
        if (node == NULL)
                return cb_error_set(y->err, ENOMEM, "parsing YAML");
        long a = add_anchor(y, &ev->start_mark, anchor, node);
        if (a == -2) {
                cJSON_Delete(node);
                return -1;
        }
        y->stack[y->depth++] =
            (struct frame){.node = node, .key = NULL, .anchor = a, .nodes_at_start = y->nodes - 1};
        return 0;
}

static int on_end(struct yparse *y, const yaml_event_t *ev)
{
        struct frame f = y->stack[--y->depth];
        free(f.key); /* only set on malformed input, which libyaml refuses */
        if (f.anchor >= 0) {
                y->anchors[f.anchor].complete = true;
                y->anchors[f.anchor].nodes = y->nodes - f.nodes_at_start;
        }
        return attach(y, &ev->start_mark, f.node);
}

static bool is_empty_doc(const cJSON *doc)
{
        return doc == NULL || cJSON_IsNull(doc);
}

static int parse_yaml(const char *text, size_t len, cJSON ***ret_docs, size_t *ret_n,
                      bool first_only, struct cb_error *err)
{
        struct yparse y = {.err = err};
        cJSON **docs = NULL;
        size_t n = 0, cap = 0;
        int r = -1;
        bool done = false;

        if (!yaml_parser_initialize(&y.parser))
                return cb_error_set(err, ENOMEM, "initializing the YAML parser");
        yaml_parser_set_input_string(&y.parser, (const unsigned char *)text, len);
        while (!done) {
                yaml_event_t ev;
                if (!yaml_parser_parse(&y.parser, &ev)) {
                        parser_error(&y);
                        goto out;
                }
                int rc = 0;
                switch (ev.type) {
                case YAML_STREAM_END_EVENT:
                        done = true;
                        break;
                case YAML_DOCUMENT_START_EVENT:
                        yparse_reset(&y);
                        break;
                case YAML_DOCUMENT_END_EVENT:
                        if (!is_empty_doc(y.root)) {
                                if (n >= K8S_MAX_LIST_ITEMS) {
                                        rc = yerr(&y, &ev.start_mark, "more than %d documents",
                                                  K8S_MAX_LIST_ITEMS);
                                        break;
                                }
                                if (n == cap) {
                                        size_t ncap = cap == 0 ? 4 : cap * 2;
                                        cJSON **nd = realloc(docs, ncap * sizeof(*nd));
                                        if (nd == NULL) {
                                                rc = cb_error_set(err, ENOMEM, "parsing YAML");
                                                break;
                                        }
                                        docs = nd;
                                        cap = ncap;
                                }
                                docs[n++] = y.root;
                                y.root = NULL;
                                if (first_only)
                                        done = true;
                        }
                        yparse_reset(&y);
                        break;
                case YAML_SCALAR_EVENT:
                        rc = on_scalar(&y, &ev);
                        break;
                case YAML_ALIAS_EVENT:
                        rc = on_alias(&y, &ev);
                        break;
                case YAML_SEQUENCE_START_EVENT:
                        rc = on_start(&y, &ev, false);
                        break;
                case YAML_MAPPING_START_EVENT:
                        rc = on_start(&y, &ev, true);
                        break;
                case YAML_SEQUENCE_END_EVENT:
                case YAML_MAPPING_END_EVENT:
                        rc = on_end(&y, &ev);
                        break;
                default:
                        break;
                }
                yaml_event_delete(&ev);
                if (rc < 0)
                        goto out;
        }
        *ret_docs = docs;
        *ret_n = n;
        docs = NULL;
        n = 0;
        r = 0;
out:
        k8s_free_documents(docs, n);
        yparse_reset(&y);
        yaml_parser_delete(&y.parser);
        return r;
}

/* ---- public ---- */

static bool looks_like_json(const char *text, size_t len)
{
        for (size_t i = 0; i < len; i++) {
                if (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r')
                        continue;
                return text[i] == '{' || text[i] == '[';
        }
        return false;
}

static int check_size(size_t len, struct cb_error *err)
{
        if (len > K8S_MAX_LIST_BYTES)
                return cb_error_set(err, 0, "the document is %zu bytes, over the limit of %u bytes",
                                    len, K8S_MAX_LIST_BYTES);
        return 0;
}

int k8s_parse_text(const char *text, size_t len, cJSON **ret, struct cb_error *err)
{
        cJSON **docs = NULL;
        size_t n = 0;
        *ret = NULL;
        if (check_size(len, err) < 0)
                return -1;
        if (looks_like_json(text, len))
                return parse_json(text, len, ret, err);
        if (parse_yaml(text, len, &docs, &n, true, err) < 0)
                return -1;
        if (n == 0) {
                free(docs);
                return cb_error_set(err, 0, "the text holds no document");
        }
        *ret = docs[0];
        for (size_t i = 1; i < n; i++)
                cJSON_Delete(docs[i]);
        free(docs);
        return 0;
}

int k8s_parse_documents(const char *text, size_t len, cJSON ***ret_docs, size_t *ret_n,
                        struct cb_error *err)
{
        *ret_docs = NULL;
        *ret_n = 0;
        if (check_size(len, err) < 0)
                return -1;
        if (looks_like_json(text, len)) {
                cJSON *doc;
                if (parse_json(text, len, &doc, err) < 0)
                        return -1;
                cJSON **docs = malloc(sizeof(*docs));
                if (docs == NULL) {
                        cJSON_Delete(doc);
                        return cb_error_set(err, ENOMEM, "parsing JSON");
                }
                docs[0] = doc;
                *ret_docs = docs;
                *ret_n = 1;
                return 0;
        }
        return parse_yaml(text, len, ret_docs, ret_n, false, err);
}

void k8s_free_documents(cJSON **docs, size_t n)
{
        if (docs == NULL)
                return;
        for (size_t i = 0; i < n; i++)
                cJSON_Delete(docs[i]);
        free(docs);
}

int k8s_parse_file(const char *path, cJSON **ret, struct cb_error *err)
{
        _cleanup_free_ char *buf = NULL;
        size_t len;
        *ret = NULL;
        if (cb_read_file(path, K8S_MAX_DOC_BYTES, &buf, &len, err) < 0)
                return -1;
        if (k8s_parse_text(buf, len, ret, err) < 0)
                return cb_error_prefix(err, "%s", path);
        return 0;
}
