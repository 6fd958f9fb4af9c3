/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/core/page.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"

/* page_assets.c, generated from agent/core/page/ at build time. */
extern const unsigned char ag_page_timeline_html[], ag_page_timeline_css[], ag_page_timeline_js[];
extern const size_t ag_page_timeline_html_len, ag_page_timeline_css_len, ag_page_timeline_js_len;

struct buf {
        char *p;
        size_t len, cap;
        bool oom;
};

static void put(struct buf *b, const char *s, size_t n)
{
        if (b->oom)
                return;
        if (b->len + n + 1 > b->cap) {
                size_t cap = b->cap ? b->cap : 4096;
                while (cap < b->len + n + 1)
                        cap *= 2;
                char *p = realloc(b->p, cap);
                if (p == NULL) {
                        b->oom = true;
                        return;
                }
                b->p = p;
                b->cap = cap;
        }
        memcpy(b->p + b->len, s, n);
        b->len += n;
        b->p[b->len] = '\0';
}

static void puts_(struct buf *b, const char *s)
{
        put(b, s, strlen(s));
}

static void __attribute__((format(printf, 2, 3))) putf(struct buf *b, const char *fmt, ...)
{
        char tmp[512];
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
        va_end(ap);
        if (n > 0)
                put(b, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

/* Text into HTML (element content and quoted attributes). */
static void esc(struct buf *b, const char *s)
{
        for (; s != NULL && *s; s++) {
                switch (*s) {
                case '<':
                        puts_(b, "&lt;");
                        break;
                case '>':
                        puts_(b, "&gt;");
                        break;
                case '&':
                        puts_(b, "&amp;");
                        break;
                case '"':
                        puts_(b, "&quot;");
                        break;
                case '\'':
                        puts_(b, "&#39;");
                        break;
                default:
                        put(b, s, 1);
                }
        }
}

static void ms(struct buf *b, double us)
{
        putf(b, "%.1f ms", us / 1000.0);
}

/* The last "phase:P" step. */
static const char *last_phase(const cJSON *tl)
{
        const char *phase = "";
        const cJSON *s;
        cJSON_ArrayForEach(s, tl) if (strncmp(cb_json_str(s, "step"), "phase:", 6) == 0) phase =
            cb_json_str(s, "step") + 6;
        return phase;
}

static void diff_list(struct buf *b, const cJSON *diff)
{
        puts_(b, "<ul class=\"diff\">");
        const cJSON *op;
        cJSON_ArrayForEach(op, diff)
        {
                const char *o = cb_json_str(op, "op");
                putf(b, "<li class=\"%s\">",
                     o[0] == 'a'   ? "add"
                     : o[0] == 'r' ? "remove"
                                   : "change");
                esc(b, o);
                puts_(b, " <code>");
                esc(b, cb_json_str(op, "path"));
                puts_(b, "</code>");
                for (int k = 0; k < 2; k++) {
                        const cJSON *v =
                            cJSON_GetObjectItemCaseSensitive(op, k == 0 ? "old" : "new");
                        if (v == NULL)
                                continue;
                        char *t = cJSON_PrintUnformatted(v);
                        puts_(b, k == 0 ? " <del>" : " <ins>");
                        if (t != NULL && strlen(t) > 200)
                                t[200] = '\0';
                        esc(b, t);
                        puts_(b, k == 0 ? "</del>" : "</ins>");
                        free(t);
                }
                puts_(b, "</li>");
        }
        puts_(b, "</ul>");
}

static void pod_rows(struct buf *b, const cJSON *pod)
{
        const cJSON *tl = cJSON_GetObjectItemCaseSensitive(pod, "timeline");
        const cJSON *hist = cJSON_GetObjectItemCaseSensitive(pod, "history");
        puts_(b, "<tr><th scope=\"row\">");
        esc(b, cb_json_str(pod, "namespace"));
        puts_(b, "/");
        esc(b, cb_json_str(pod, "name"));
        puts_(b, "</th><td>");
        esc(b, last_phase(tl));
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(pod, "gone")))
                puts_(b, " (gone)");
        puts_(b, "</td><td><table class=\"steps\"><tr><th>step</th><th>offset</th><th>+</th></tr>");
        double prev = 0;
        const cJSON *s;
        cJSON_ArrayForEach(s, tl)
        {
                double off = cb_json_num(s, "offsetUs");
                puts_(b, "<tr><td>");
                esc(b, cb_json_str(s, "step"));
                puts_(b, "</td><td>");
                ms(b, off);
                puts_(b, "</td><td>");
                ms(b, off - prev);
                puts_(b, "</td></tr>");
                prev = off;
        }
        puts_(b, "</table></td><td>");
        const cJSON *h;
        cJSON_ArrayForEach(h, hist)
        {
                const char *kind = cb_json_str(h, "kind");
                puts_(b, "<div class=\"entry\">");
                ms(b, cb_json_num(h, "offsetUs"));
                puts_(b, " <b>");
                esc(b, kind);
                puts_(b, "</b> ");
                if (strcmp(kind, "event") == 0) {
                        esc(b, cb_json_str(h, "type"));
                        puts_(b, " ");
                        esc(b, cb_json_str(h, "reason"));
                        puts_(b, ": ");
                        esc(b, cb_json_str(h, "message"));
                } else if (strcmp(kind, "statusAck") == 0) {
                        putf(b, "%s (%d)",
                             cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(h, "accepted"))
                                 ? "accepted"
                                 : "not accepted",
                             (int)cb_json_num(h, "code"));
                } else {
                        esc(b, cb_json_str(h, "object"));
                        esc(b, cb_json_str(h, "phase"));
                        diff_list(b, cJSON_GetObjectItemCaseSensitive(h, "diff"));
                }
                puts_(b, "</div>");
        }
        puts_(b, "</td></tr>\n");
}

char *ag_page_render(const cJSON *timelines)
{
        const char *tpl = (const char *)ag_page_timeline_html;
        const char *mark = strstr(tpl, "<!--TABLE-->");
        struct buf b = {0};
        if (mark == NULL)
                mark = tpl + ag_page_timeline_html_len;
        put(&b, tpl, (size_t)(mark - tpl));
        const cJSON *pods = cJSON_GetObjectItemCaseSensitive(timelines, "pods");
        puts_(&b, "<table id=\"static\" class=\"static\"><thead><tr><th>pod</th><th>phase</th>"
                  "<th>steps</th><th>status changes, spec changes, events</th></tr></thead>"
                  "<tbody>\n");
        const cJSON *pod;
        cJSON_ArrayForEach(pod, pods) pod_rows(&b, pod);
        if (cJSON_GetArraySize(pods) == 0)
                puts_(&b, "<tr><td colspan=\"4\">no pods on this node yet</td></tr>");
        puts_(&b, "</tbody></table>\n");
        if (*mark != '\0')
                puts_(&b, mark + strlen("<!--TABLE-->"));
        if (b.oom) {
                free(b.p);
                return NULL;
        }
        return b.p;
}

const char *ag_page_asset(const char *name, const char **ret_type, size_t *ret_len)
{
        if (strcmp(name, "timeline.js") == 0) {
                *ret_type = "text/javascript; charset=utf-8";
                *ret_len = ag_page_timeline_js_len;
                return (const char *)ag_page_timeline_js;
        }
        if (strcmp(name, "timeline.css") == 0) {
                *ret_type = "text/css; charset=utf-8";
                *ret_len = ag_page_timeline_css_len;
                return (const char *)ag_page_timeline_css;
        }
        return NULL;
}
