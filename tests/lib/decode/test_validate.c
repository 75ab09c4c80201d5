/* test_validate.c - validate.c: the checks that need the whole decoded
 * request, called directly on decoded requests and through decoding (which
 * runs them last): cut_after names, options.sac without graph.modules,
 * unknown ac_units, a valid request untouched. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "decode/validate.h"
#include "partd/partd.h"
#include "partd/strtab.h"

static const char *const CHAIN =
    "{\"graph\":{\"nodes\":["
    "{\"name\":\"x\",\"op\":\"placeholder\",\"output_bytes\":8},"
    "{\"name\":\"a\",\"op\":\"call_module\",\"inputs\":[\"x\"],\"output_bytes\":4,"
    "\"param_bytes\":16,\"latency_ms\":1,\"module\":\"blk.0\"},"
    "{\"name\":\"b\",\"op\":\"call_module\",\"inputs\":[\"a\"],\"output_bytes\":4,"
    "\"param_bytes\":16,\"latency_ms\":1,\"module\":\"blk.1\"}]},"
    "\"devices\":[{\"name\":\"g0\",\"memory_bytes\":1000},{\"name\":\"g1\",\"memory_bytes\":1000}]"
    "%s}";

static char *with_options(const char *options)
{
    size_t n = strlen(CHAIN) + strlen(options) + 1;
    char *s = malloc(n);
    snprintf(s, n, CHAIN, options);
    return s;
}

static void test_a_valid_request_passes(void **state)
{
    (void)state;
    char *json = with_options(",\"options\":{\"pipeline\":{\"cut_after\":[\"a\"]}}");
    partd_request *req = tu_decode_ok(json);
    partd_problem pb;
    partd_problem_init(&pb);
    assert_int_equal(partd__validate_request(req, &pb), PARTD_OK);
    assert_int_equal(pb.n_errors, 0);
    partd_problem_free(&pb);
    partd_request_free(req);
    free(json);
}

static void test_cut_after_naming_nothing(void **state)
{
    (void)state;
    /* Directly: a decoded request whose cut_after is changed to a name the
     * graph does not have. */
    char *json = with_options(",\"options\":{\"pipeline\":{\"cut_after\":[\"a\"]}}");
    partd_request *req = tu_decode_ok(json);
    req->options.pipeline.cut_after[0] = partd_strtab_intern(&req->strings, "nope", 4);
    partd_problem pb;
    partd_problem_init(&pb);
    assert_int_equal(partd__validate_request(req, &pb), PARTD_EINVALID);
    tu_assert_error(&pb, "/options/pipeline/cut_after/0", "");
    partd_problem_free(&pb);
    partd_request_free(req);
    free(json);
    /* Through decoding: the same 422, before any planner. */
    json = with_options(",\"options\":{\"pipeline\":{\"cut_after\":[\"nope\"]}}");
    tu_decode_fail(json, PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/options/pipeline/cut_after/0", "");
    partd_problem_free(&pb);
    free(json);
}

static void test_sac_needs_modules(void **state)
{
    (void)state;
    char *json = with_options("");
    partd_request *req = tu_decode_ok(json);
    req->options.sac.enabled = 1; /* options.sac, but no graph.modules */
    partd_problem pb;
    partd_problem_init(&pb);
    assert_int_equal(partd__validate_request(req, &pb), PARTD_EINVALID);
    tu_assert_error(&pb, "/graph/modules", "");
    partd_problem_free(&pb);
    partd_request_free(req);
    free(json);
    json = with_options(",\"options\":{\"sac\":{}}");
    tu_decode_fail(json, PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/graph/modules", "");
    partd_problem_free(&pb);
    free(json);
}

static void test_every_mode_is_planned(void **state)
{
    (void)state;
    /* kl_based was once refused here; every mode of the contract decodes */
    partd_request *req = tu_decode_ok("{\"graph\":{\"nodes\":[{\"name\":\"x\",\"op\":\"placeholder\"},"
                                      "{\"name\":\"a\",\"op\":\"call_function\",\"inputs\":[\"x\"]}]},"
                                      "\"devices\":[{\"name\":\"d\",\"memory_bytes\":10}],"
                                      "\"options\":{\"mode\":\"kl_based\"}}");
    assert_int_equal(req->options.mode, PARTD_MODE_KL_BASED);
    partd_request_free(req);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_valid_request_passes),
        cmocka_unit_test(test_cut_after_naming_nothing),
        cmocka_unit_test(test_sac_needs_modules),
        cmocka_unit_test(test_every_mode_is_planned),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
