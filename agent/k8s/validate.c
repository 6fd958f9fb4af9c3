/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/k8s/validate.h"

#include <stdio.h>
#include <string.h>

static bool alnum_lower(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool label_n(const char *s, size_t n)
{
        if (n == 0 || n > 63 || !alnum_lower(s[0]) || !alnum_lower(s[n - 1]))
                return false;
        for (size_t i = 0; i < n; i++)
                if (!alnum_lower(s[i]) && s[i] != '-')
                        return false;
        return true;
}

bool k8s_is_dns1123_label(const char *s)
{
        return s != NULL && label_n(s, strlen(s));
}

bool k8s_is_dns1123_subdomain(const char *s)
{
        if (s == NULL)
                return false;
        size_t n = strlen(s);
        if (n == 0 || n > 253)
                return false;
        for (const char *p = s;;) {
                const char *dot = strchr(p, '.');
                size_t len = dot ? (size_t)(dot - p) : strlen(p);
                /* subdomain labels may be up to 253 as a whole, 63 each */
                if (!label_n(p, len))
                        return false;
                if (dot == NULL)
                        return true;
                p = dot + 1;
        }
}

static bool uid_ok(const char *s)
{
        size_t n = s ? strlen(s) : 0;
        if (n == 0 || n > 128 || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = s[i];
                bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                          (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
                if (!ok)
                        return false;
        }
        return true;
}

static int invalid(struct cb_error *err, const char *field, const char *value, const char *why)
{
        /* the value as the apiserver quotes it, cut at 128 bytes */
        return cb_error_set(err, 0, "%s: Invalid value: \"%.128s\": %s", field, value ? value : "",
                            why);
}

#define LABEL_WHY                                                                                  \
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "   \
        "and must start and end with an alphanumeric character"
#define SUBDOMAIN_WHY                                                                              \
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "  \
        "or '.', and must start and end with an alphanumeric character"

static int check_container(const struct k8s_pod *p, const struct k8s_container *c,
                           const char *field, size_t i, struct cb_error *err)
{
        char f[96];
        snprintf(f, sizeof(f), "spec.%s[%zu].name", field, i);
        if (!k8s_is_dns1123_label(c->name))
                return invalid(err, f, c->name, LABEL_WHY);
        /* unique across init and regular containers: compare with those before it */
        const struct k8s_container *prev = p->spec.init_containers;
        size_t n_prev = field[0] == 'i' ? i : p->spec.n_init_containers;
        for (int pass = 0; pass < 2; pass++) {
                for (size_t j = 0; j < n_prev; j++)
                        if (prev[j].name != NULL && strcmp(prev[j].name, c->name) == 0)
                                return cb_error_set(err, 0, "%s: Duplicate value: \"%s\"", f,
                                                    c->name);
                if (field[0] == 'i')
                        break;
                prev = p->spec.containers;
                n_prev = i;
        }
        for (size_t j = 0; j < c->n_volume_mounts; j++) {
                const struct k8s_volume_mount *m = &c->volume_mounts[j];
                snprintf(f, sizeof(f), "spec.%s[%zu].volumeMounts[%zu]", field, i, j);
                if (!k8s_is_dns1123_label(m->name))
                        return invalid(err, f, m->name, "the name of a volume of the pod");
                if (m->mount_path == NULL || m->mount_path[0] != '/')
                        return invalid(err, f, m->mount_path, "mountPath must be an absolute path");
        }
        return 0;
}

int k8s_pod_validate_paths(const struct k8s_pod *p, struct cb_error *err)
{
        if (!uid_ok(p->meta.uid))
                return invalid(err, "metadata.uid", p->meta.uid,
                               "a uid of 1 to 128 letters, digits, '-', '_' or '.' (a UUID)");
        if (p->meta.namespace_ != NULL && !k8s_is_dns1123_label(p->meta.namespace_))
                return invalid(err, "metadata.namespace", p->meta.namespace_, LABEL_WHY);
        if (!k8s_is_dns1123_subdomain(p->meta.name))
                return invalid(err, "metadata.name", p->meta.name, SUBDOMAIN_WHY);
        for (size_t i = 0; i < p->spec.n_init_containers; i++)
                if (check_container(p, &p->spec.init_containers[i], "initContainers", i, err) < 0)
                        return -1;
        for (size_t i = 0; i < p->spec.n_containers; i++)
                if (check_container(p, &p->spec.containers[i], "containers", i, err) < 0)
                        return -1;
        for (size_t i = 0; i < p->spec.n_volumes; i++) {
                const struct k8s_volume *v = &p->spec.volumes[i];
                char f[96];
                snprintf(f, sizeof(f), "spec.volumes[%zu].name", i);
                if (!k8s_is_dns1123_label(v->name))
                        return invalid(err, f, v->name, LABEL_WHY);
                for (size_t j = 0; j < i; j++)
                        if (strcmp(p->spec.volumes[j].name, v->name) == 0)
                                return cb_error_set(err, 0, "%s: Duplicate value: \"%s\"", f,
                                                    v->name);
                if (v->kind == K8S_VOLUME_HOST_PATH &&
                    (v->host_path == NULL || v->host_path[0] != '/')) {
                        snprintf(f, sizeof(f), "spec.volumes[%zu].hostPath.path", i);
                        return invalid(err, f, v->host_path, "must be an absolute path");
                }
                /* ValidatePersistentVolumeClaimVolumeSource */
                if (v->kind == K8S_VOLUME_PVC && (v->claim_name == NULL || !v->claim_name[0])) {
                        snprintf(f, sizeof(f), "spec.volumes[%zu].persistentVolumeClaim.claimName",
                                 i);
                        return cb_error_set(err, 0, "%s: Required value", f);
                }
        }
        return 0;
}

bool k8s_json_has_nul(const char *text, size_t len)
{
        for (const char *p = text; (p = memmem(p, len - (size_t)(p - text), "\\u0000", 6));
             p += 6) {
                /* an escape only after an even run of backslashes before it */
                size_t bs = 0;
                for (const char *q = p; q > text && q[-1] == '\\'; q--)
                        bs++;
                if (bs % 2 == 0)
                        return true;
        }
        return false;
}

size_t k8s_json_mark_nul(char *text, size_t len)
{
        size_t n = 0;
        for (char *p = text; (p = memmem(p, len - (size_t)(p - text), "\\u0000", 6)); p += 6) {
                size_t bs = 0;
                for (const char *q = p; q > text && q[-1] == '\\'; q--)
                        bs++;
                if (bs % 2 == 0) {
                        memset(p, K8S_NUL_MARK, 6);
                        n++;
                }
        }
        return n;
}

static bool marked(const char *s)
{
        return s != NULL && strchr(s, K8S_NUL_MARK) != NULL;
}

/* Depth-first; path holds the path to item (its parent's part written). */
static bool find_nul(const cJSON *item, char *path, size_t size, size_t used)
{
        if (cJSON_IsString(item) && marked(item->valuestring))
                return true;
        size_t i = 0;
        for (const cJSON *c = item->child; c != NULL; c = c->next, i++) {
                int w;
                if (cJSON_IsArray(item))
                        w = snprintf(path + used, size - used, "[%zu]", i);
                else {
                        char key[160];
                        k8s_nul_display(c->string != NULL ? c->string : "", key, sizeof(key));
                        w = snprintf(path + used, size - used, "%s%s", used ? "." : "", key);
                }
                size_t u = w < 0 ? used : used + (size_t)w < size ? used + (size_t)w : size - 1;
                if (marked(c->string) || find_nul(c, path, size, u))
                        return true;
                path[used] = '\0';
        }
        return false;
}

bool k8s_json_find_nul(const cJSON *obj, char *path, size_t size)
{
        if (size == 0)
                return false;
        path[0] = '\0';
        return obj != NULL && find_nul(obj, path, size, 0);
}

void k8s_nul_display(const char *s, char *buf, size_t size)
{
        size_t o = 0;
        if (size == 0)
                return;
        for (; *s != '\0' && o + 1 < size; s++) {
                if (*s != K8S_NUL_MARK) {
                        buf[o++] = *s;
                        continue;
                }
                int run = 1;
                while (run < 6 && s[run] == K8S_NUL_MARK)
                        run++;
                s += run - 1;
                if (o + 7 > size)
                        break;
                memcpy(buf + o, "\\u0000", 6);
                o += 6;
        }
        buf[o] = '\0';
}

int k8s_pod_validate_supported(const struct k8s_pod *p, const char **ret_reason,
                               struct cb_error *err)
{
        if (p->spec.unsupported == NULL)
                return 0;
        *ret_reason =
            p->spec.unsupported_reason != NULL ? p->spec.unsupported_reason : "UnsupportedPodSpec";
        return cb_error_set(err, 0, "%s", p->spec.unsupported);
}
