/* SPDX-License-Identifier: Apache-2.0 */
/* The token manager's refresh rule (the kubelet's requiresRefresh: 80 % of
 * the TTL, 24 h, jitter) on a fake clock, the TokenRequest body, and the
 * parse of a real TokenRequest answer; the agent's wall clock and its
 * test-only offset (lib/wallclock.h). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/client/tokenmgr.h"
#include "agent/k8s/k8s.h"
#include "lib/cleanup.h"
#include "lib/wallclock.h"

#include "helpers.h"

#define FX(rel) CUBELET_FIXTURES "/" rel

START_TEST(test_refresh_rule)
{
        int64_t iat = 1700000000, ttl = 3607, exp = iat + ttl;
        /* fresh until 80 % of the TTL has passed */
        ck_assert(!ag_token_requires_refresh(iat, exp, ttl, 0));
        ck_assert(!ag_token_requires_refresh(iat + ttl * 8 / 10 - 1, exp, ttl, 0));
        ck_assert(ag_token_requires_refresh(exp - ttl * 20 / 100 + 1, exp, ttl, 0));
        /* the jitter makes it earlier, by at most 10 s */
        ck_assert(ag_token_requires_refresh(exp - ttl * 20 / 100 - 5, exp, ttl, 10));
        ck_assert(!ag_token_requires_refresh(exp - ttl * 20 / 100 - 11, exp, ttl, 10));
        ck_assert_int_eq(ag_token_refresh_at(exp, ttl), exp - 721 + 1);
        /* a long token: refreshed 24 h after it was issued */
        int64_t long_ttl = 7 * 24 * 3600, lexp = iat + long_ttl;
        ck_assert(!ag_token_requires_refresh(iat + 24 * 3600 - 1, lexp, long_ttl, 0));
        ck_assert(ag_token_requires_refresh(iat + 24 * 3600 + 1, lexp, long_ttl, 0));
        ck_assert_int_eq(ag_token_refresh_at(lexp, long_ttl), iat + 24 * 3600 + 1);
        /* an expired token always */
        ck_assert(ag_token_requires_refresh(exp + 1, exp, ttl, 0));
}
END_TEST

START_TEST(test_request_body)
{
        struct ag_token_key k = {.ns = "default",
                                 .service_account = "default",
                                 .expiration_seconds = 3607,
                                 .pod_name = "web",
                                 .pod_uid = "u-1"};
        _cleanup_free_ char *b = ag_token_request_body(&k);
        _cleanup_cjson_ cJSON *j = cJSON_Parse(b);
        ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(j, "kind")), "TokenRequest");
        cJSON *spec = cJSON_GetObjectItem(j, "spec");
        ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(spec, "audiences")), 0);
        ck_assert_int_eq((int)cJSON_GetObjectItem(spec, "expirationSeconds")->valuedouble, 3607);
        cJSON *ref = cJSON_GetObjectItem(spec, "boundObjectRef");
        ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(ref, "kind")), "Pod");
        ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(ref, "name")), "web");
        ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(ref, "uid")), "u-1");
        k.audience = "vault";
        _cleanup_free_ char *b2 = ag_token_request_body(&k);
        ck_assert_ptr_nonnull(strstr(b2, "\"audiences\":[\"vault\"]"));
}
END_TEST

START_TEST(test_real_response)
{
        cJSON *j = NULL;
        struct cb_error err = {0};
        ck_assert_int_eq(
            k8s_parse_file(FX("real-cluster/tokenrequest-response-apisix-test.json"), &j, &err), 0);
        char *tok = NULL;
        int64_t exp = 0;
        ck_assert_msg(ag_token_response_parse(j, &tok, &exp, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(strncmp(tok, "eyJ", 3), 0);
        ck_assert_int_eq(exp, 1679533040); /* 2023-03-23T00:57:20Z */
        free(tok);
        cJSON_Delete(j);
        _cleanup_cjson_ cJSON *bad = cJSON_Parse("{\"status\":{\"token\":\"x\","
                                                 "\"expirationTimestamp\":\"soon\"}}");
        ck_assert_int_eq(ag_token_response_parse(bad, &tok, &exp, &err), -1);
        ck_assert_ptr_nonnull(strstr(err.msg, "not RFC 3339"));
        ck_assert_ptr_null(strstr(err.msg, "\"x\"")); /* the token is not in the error */
}
END_TEST

START_TEST(test_wall_offset)
{
        struct cb_error err = {0};
        int64_t off = 0;
        ck_assert_int_eq(cb_wall_offset_parse("-7200\n", &off, &err), 0);
        ck_assert_int_eq(off, -7200);
        ck_assert_int_eq(cb_wall_offset_parse(" 10800 ", &off, &err), 0);
        ck_assert_int_eq(off, 10800);
        ck_assert_int_eq(cb_wall_offset_parse("3h", &off, &err), -1);
        ck_assert_ptr_nonnull(strstr(err.msg, "trailing text"));
        ck_assert_int_eq(cb_wall_offset_parse("", &off, &err), -1);
        ck_assert_int_eq(cb_wall_offset_parse("999999999999", &off, &err), -1);
        ck_assert_int_eq(cb_wall_offset(), 0);
        int64_t before = cb_wall_now();
        cb_wall_set_offset(-7200);
        int64_t after = cb_wall_now();
        ck_assert(after <= before - 7200 + 1 && after >= before - 7200);
        ck_assert(cb_wall_now_us() / 1000000 - after <= 1);
        cb_wall_set_offset(0);
        ck_assert(cb_wall_now() - before <= 1);
        /* the back-off clock does not move with it */
        int64_t b = cb_boot_now();
        cb_wall_set_offset(86400);
        ck_assert(cb_boot_now() - b <= 1);
        cb_wall_set_offset(0);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("tokenmgr");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_refresh_rule);
        tcase_add_test(tc, test_request_body);
        tcase_add_test(tc, test_real_response);
        tcase_add_test(tc, test_wall_offset);
        suite_add_tcase(s, tc);
        return th_run(s) ? 1 : 0;
}
