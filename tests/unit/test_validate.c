/* SPDX-License-Identifier: Apache-2.0 */
/* Names that become path components on the node (agent/k8s/validate.h):
 * hostile uids, names and volume names from an apiserver are refused with
 * kube-apiserver's texts before anything touches the disk. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/k8s/validate.h"
#include "lib/cleanup.h"

#include "helpers.h"

static int validate(const char *meta, const char *spec, char *msg, size_t size)
{
        char json[4096];
        snprintf(json, sizeof(json), "{\"metadata\":%s,\"spec\":%s}", meta, spec);
        _cleanup_cjson_ cJSON *j = cJSON_Parse(json);
        ck_assert_msg(j != NULL, "bad test JSON: %s", json);
        struct k8s_pod *p = NULL;
        struct cb_error err = {0};
        ck_assert_msg(k8s_pod_from_json(j, &p, &err) == 0, "decode: %s", err.msg);
        int r = k8s_pod_validate_paths(p, &err);
        snprintf(msg, size, "%s", err.msg);
        k8s_pod_free(p);
        return r;
}

#define META(uid) "{\"name\":\"web-0\",\"namespace\":\"team-a\",\"uid\":\"" uid "\"}"
#define ONE       "{\"containers\":[{\"name\":\"app\",\"image\":\"b\"}]}"

START_TEST(test_good_pods)
{
        char msg[1024];
        ck_assert_int_eq(
            validate(META("0d5b8f2e-9a1c-4b7e-8f00-3c2a1b0e9d8c"), ONE, msg, sizeof(msg)), 0);
        /* a static pod's uid is a hash in hex */
        ck_assert_int_eq(
            validate(META("8e1b5c0f2a6d4e3b9c7a1f0e2d3c4b5a"),
                     "{\"volumes\":[{\"name\":\"data\",\"emptyDir\":{}},{\"name\":"
                     "\"host\",\"hostPath\":{\"path\":\"/srv/x\"}}],\"initContainers\":"
                     "[{\"name\":\"init\",\"image\":\"b\"}],\"containers\":[{\"name\":"
                     "\"app\",\"image\":\"b\",\"volumeMounts\":[{\"name\":\"data\","
                     "\"mountPath\":\"/data\"}]}]}",
                     msg, sizeof(msg)),
            0);
        ck_assert(k8s_is_dns1123_subdomain("a.b-c.d0"));
        ck_assert(!k8s_is_dns1123_subdomain("a..b"));
        ck_assert(!k8s_is_dns1123_label("-a"));
        ck_assert(!k8s_is_dns1123_label("A"));
}
END_TEST

START_TEST(test_hostile_pods)
{
        static const struct {
                const char *meta, *spec, *want;
        } t[] = {
            {META("../../../../tmp/x"), ONE,
             "metadata.uid: Invalid value: \"../../../../tmp/x\": a uid of 1 to 128"},
            {META(".."), ONE, "metadata.uid: Invalid value: \"..\""},
            {"{\"name\":\"web-0\",\"namespace\":\"team-a\"}", ONE,
             "metadata.uid: Invalid value: \"\""},
            {"{\"name\":\"web/0\",\"namespace\":\"a\",\"uid\":\"u1\"}", ONE,
             "metadata.name: Invalid value: \"web/0\": a lowercase RFC 1123 subdomain"},
            {"{\"name\":\"web\",\"namespace\":\"../kube-system\",\"uid\":\"u1\"}", ONE,
             "metadata.namespace: Invalid value: \"../kube-system\": a lowercase RFC 1123 label"},
            {META("u1"), "{\"containers\":[{\"name\":\"../app\",\"image\":\"b\"}]}",
             "spec.containers[0].name: Invalid value: \"../app\""},
            {META("u1"),
             "{\"initContainers\":[{\"name\":\"app\",\"image\":\"b\"}],\"containers\":[{\"name\":"
             "\"app\",\"image\":\"b\"}]}",
             "spec.containers[0].name: Duplicate value: \"app\""},
            {META("u1"),
             "{\"volumes\":[{\"name\":\"../../etc\",\"emptyDir\":{}}],"
             "\"containers\":[{\"name\":\"a\",\"image\":\"b\"}]}",
             "spec.volumes[0].name: Invalid value: \"../../etc\""},
            {META("u1"),
             "{\"volumes\":[{\"name\":\"v\",\"emptyDir\":{}},{\"name\":\"v\",\"emptyDir\":{}}],"
             "\"containers\":[{\"name\":\"a\",\"image\":\"b\"}]}",
             "spec.volumes[1].name: Duplicate value: \"v\""},
            {META("u1"),
             "{\"volumes\":[{\"name\":\"h\",\"hostPath\":{\"path\":\"etc\"}}],\"containers\":[{"
             "\"name\":\"a\",\"image\":\"b\"}]}",
             "spec.volumes[0].hostPath.path: Invalid value: \"etc\": must be an absolute path"},
            {META("u1"),
             "{\"containers\":[{\"name\":\"a\",\"image\":\"b\",\"volumeMounts\":[{\"name\":\"x/y\","
             "\"mountPath\":\"/m\"}]}]}",
             "spec.containers[0].volumeMounts[0]: Invalid value: \"x/y\""},
        };
        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
                char msg[1024];
                ck_assert_msg(validate(t[i].meta, t[i].spec, msg, sizeof(msg)) == -1,
                              "%zu accepted", i);
                ck_assert_msg(strncmp(msg, t[i].want, strlen(t[i].want)) == 0, "%zu: %s", i, msg);
        }
}
END_TEST

START_TEST(test_nul_escapes)
{
        static const struct {
                const char *text;
                bool nul;
        } t[] = {
            {"{\"name\":\"web\\u0000../x\"}", true},
            {"{\"name\":\"a\\\\u0000\"}", false}, /* an escaped backslash, then text */
            {"{\"name\":\"a\\\\\\u0000\"}", true},
            {"{\"name\":\"\\u00001\"}", true},
            {"{\"name\":\"u0000\"}", false},
            {"", false},
        };
        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
                ck_assert_msg(k8s_json_has_nul(t[i].text, strlen(t[i].text)) == t[i].nul, "%s",
                              t[i].text);
}
END_TEST

/* Fields cubelet does not implement (issue 15 item 7): set to anything but
 * their default, the pod is refused with the reason and a message naming
 * the field and value; their defaults (and what needs nothing: None,
 * Default, IfPossible, Unconfined, Merge, hostUsers true) pass. */
static int supported(const char *spec, const char **reason, char *msg, size_t size)
{
        char json[4096];
        snprintf(json, sizeof(json), "{\"metadata\":%s,\"spec\":%s}",
                 META("0d5b8f2e-9a1c-4b7e-8f00-3c2a1b0e9d8c"), spec);
        _cleanup_cjson_ cJSON *j = cJSON_Parse(json);
        ck_assert_msg(j != NULL, "bad test JSON: %s", json);
        struct k8s_pod *p = NULL;
        struct cb_error err = {0};
        ck_assert_msg(k8s_pod_from_json(j, &p, &err) == 0, "decode: %s", err.msg);
        *reason = NULL;
        int r = k8s_pod_validate_supported(p, reason, &err);
        snprintf(msg, size, "%s", r < 0 ? err.msg : "");
        k8s_pod_free(p);
        return r;
}

#define C_(extra) "{\"name\":\"app\",\"image\":\"b\"" extra "}"
#define VM(extra) "\"volumeMounts\":[{\"name\":\"v\",\"mountPath\":\"/v\"" extra "}]"
#define VOL       ",\"volumes\":[{\"name\":\"v\",\"emptyDir\":{}}]"

static const struct {
        const char *spec, *reason, *msg;
} refused_cases[] = {
    {"{\"hostUsers\":false,\"containers\":[" C_("") "]}", "UnsupportedPodSpec",
     "can't set `spec.hostUsers: false`, runtime does not support user namespaces"},
    {"{\"containers\":[" C_("," VM(",\"mountPropagation\":\"HostToContainer\"")) "]" VOL "}",
     "UnsupportedPodSpec",
     "spec.containers[0].volumeMounts[0].mountPropagation: \"HostToContainer\": only None is "
     "implemented"},
    {"{\"initContainers\":[" C_(",\"securityContext\":{\"privileged\":true}," VM(
         ",\"mountPropagation\":\"Bidirectional\"")) "],"
                                                     "\"containers\":[" C_("") "]" VOL "}",
     "UnsupportedPodSpec",
     "spec.initContainers[0].volumeMounts[0].mountPropagation: \"Bidirectional\""},
    {"{\"containers\":[" C_("," VM(",\"recursiveReadOnly\":\"Enabled\",\"readOnly\":true")) "]" VOL
                                                                                            "}",
     "UnsupportedPodSpec",
     "spec.containers[0].volumeMounts[0].recursiveReadOnly: \"Enabled\": recursive read-only"},
    {"{\"securityContext\":{\"appArmorProfile\":{\"type\":\"RuntimeDefault\"}},\"containers\":[" C_(
         "") "]}",
     "AppArmor",
     "spec.securityContext.appArmorProfile: Cannot enforce AppArmor: cubelet does not implement "
     "AppArmor profiles (type RuntimeDefault)"},
    {"{\"containers\":[" C_(",\"securityContext\":{\"appArmorProfile\":{\"type\":"
                            "\"Localhost\",\"localhostProfile\":\"x\"}}") "]}",
     "AppArmor", "spec.containers[0].securityContext.appArmorProfile: Cannot enforce AppArmor"},
    {"{\"containers\":[" C_(",\"securityContext\":{\"procMount\":\"Unmasked\"}") "]}",
     "UnsupportedPodSpec",
     "spec.containers[0].securityContext.procMount: \"Unmasked\": cubelet always masks /proc"},
    {"{\"containers\":[" C_(
         ",\"volumeDevices\":[{\"name\":\"v\",\"devicePath\":\"/dev/xvda\"}]") "]}",
     "UnsupportedPodSpec", "spec.containers[0].volumeDevices: raw block devices"},
    {"{\"runtimeClassName\":\"gvisor\",\"containers\":[" C_("") "]}", "UnsupportedPodSpec",
     "spec.runtimeClassName: \"gvisor\": cubelet has one runtime"},
    {"{\"resourceClaims\":[{\"name\":\"gpu\"}],\"containers\":[" C_("") "]}", "UnsupportedPodSpec",
     "spec.resourceClaims: dynamic resource allocation"},
    /* pod-level hugepages (supported by the kubelet since 1.34): no hugetlb cgroup here */
    {"{\"resources\":{\"limits\":{\"cpu\":\"1\",\"hugepages-2Mi\":\"4Mi\"}},"
     "\"containers\":[" C_("") "]}",
     "UnsupportedPodSpec",
     "spec.resources.limits[hugepages-2Mi]: hugepages are not supported by cubelet"},
    {"{\"resources\":{\"requests\":{\"hugepages-1Gi\":\"1Gi\"}},\"containers\":[" C_("") "]}",
     "UnsupportedPodSpec", "spec.resources.requests[hugepages-1Gi]: hugepages are not supported"},
    {"{\"securityContext\":{\"supplementalGroupsPolicy\":\"Loose\"},\"containers\":[" C_("") "]}",
     "UnsupportedPodSpec",
     "spec.securityContext.supplementalGroupsPolicy: \"Loose\": supported values"},
};

START_TEST(test_unsupported_refused)
{
        char msg[1024];
        const char *reason;
        int i = _i;
        ck_assert_msg(supported(refused_cases[i].spec, &reason, msg, sizeof(msg)) < 0,
                      "case %d accepted: %s", i, refused_cases[i].spec);
        ck_assert_str_eq(reason, refused_cases[i].reason);
        ck_assert_msg(strstr(msg, refused_cases[i].msg) != NULL, "case %d: want \"%s\" in \"%s\"",
                      i, refused_cases[i].msg, msg);
}
END_TEST

START_TEST(test_unsupported_defaults_pass)
{
        static const char *const ok[] = {
            "{\"hostUsers\":true,\"containers\":[" C_("") "]}",
            "{\"containers\":[" C_("," VM(",\"mountPropagation\":\"None\",\"recursiveReadOnly\":"
                                          "\"Disabled\"")) "]" VOL "}",
            "{\"containers\":[" C_(
                "," VM(",\"readOnly\":true,\"recursiveReadOnly\":\"IfPossible\"")) "]" VOL "}",
            "{\"securityContext\":{\"appArmorProfile\":{\"type\":\"Unconfined\"},\"sysctls\":[],"
            "\"supplementalGroupsPolicy\":\"Merge\",\"seLinuxOptions\":{\"level\":\"s0\"}},"
            "\"containers\":[" C_(",\"securityContext\":{\"procMount\":\"Default\"},"
                                  "\"resizePolicy\":[{\"resourceName\":\"cpu\",\"restartPolicy\":"
                                  "\"NotRequired\"}]") "]}",
            "{\"runtimeClassName\":\"\",\"hostAliases\":[],\"ephemeralContainers\":null,"
            "\"setHostnameAsFQDN\":false,\"schedulerName\":\"default-scheduler\","
            "\"topologySpreadConstraints\":[{\"maxSkew\":1}],\"containers\":[" C_("") "]}",
            /* pod-level cpu and memory (PodLevelResources) are implemented */
            "{\"resources\":{\"requests\":{\"cpu\":\"50m\",\"memory\":\"20Mi\"},"
            "\"limits\":{\"cpu\":\"100m\",\"memory\":\"40Mi\"}},\"containers\":[" C_("") "]}",
            "{\"resources\":{},\"containers\":[" C_("") "]}",
            "{\"resources\":null,\"containers\":[" C_("") "]}",
        };
        char msg[1024];
        const char *reason;
        for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
                ck_assert_msg(supported(ok[i], &reason, msg, sizeof(msg)) == 0, "%zu: %s: %s", i,
                              ok[i], msg);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("validate");
        TCase *tc = tcase_create("paths");
        tcase_add_test(tc, test_good_pods);
        tcase_add_test(tc, test_hostile_pods);
        tcase_add_test(tc, test_nul_escapes);
        tcase_add_loop_test(tc, test_unsupported_refused, 0,
                            (int)(sizeof(refused_cases) / sizeof(refused_cases[0])));
        tcase_add_test(tc, test_unsupported_defaults_pass);
        suite_add_tcase(s, tc);
        return th_run(s) ? EXIT_FAILURE : EXIT_SUCCESS;
}
