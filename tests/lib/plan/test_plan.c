/* test_plan.c - the dispatcher: each mode reaches its planner, SAC runs
 * when asked, and failures come back as codes with their problems. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "partd/cancel.h"
#include "partd/partd.h"
#include "partd/plan.h"

/* x -> a -> b -> c -> output, three devices. %s: the options member. */
static char *request(const char *options, int64_t memory)
{
    const char *fmt =
        "{\"graph\":{\"name\":\"m\",\"nodes\":["
        "{\"name\":\"x\",\"op\":\"placeholder\",\"output_bytes\":8},"
        "{\"name\":\"a\",\"op\":\"call_module\",\"inputs\":[\"x\"],\"output_bytes\":4,"
        "\"param_bytes\":100,\"latency_ms\":1},"
        "{\"name\":\"b\",\"op\":\"call_module\",\"inputs\":[\"a\"],\"output_bytes\":4,"
        "\"param_bytes\":100,\"latency_ms\":1},"
        "{\"name\":\"c\",\"op\":\"call_module\",\"inputs\":[\"b\"],\"output_bytes\":4,"
        "\"param_bytes\":100,\"latency_ms\":1},"
        "{\"name\":\"output\",\"op\":\"output\",\"inputs\":[\"c\"]}]},"
        "\"devices\":[{\"name\":\"g0\",\"memory_bytes\":%lld},"
        "{\"name\":\"g1\",\"memory_bytes\":%lld},{\"name\":\"g2\",\"memory_bytes\":%lld}],"
        "\"options\":%s}";
    char *out = malloc(4096);
    assert_non_null(out);
    snprintf(out, 4096, fmt, (long long)memory, (long long)memory, (long long)memory,
             options);
    return out;
}

static int run(const char *options, int64_t memory, const partd_cancel *cancel,
               partd_plan **plan, partd_problem *pb)
{
    char *json = request(options, memory);
    partd_request *req = tu_decode_ok(json);
    free(json);
    partd_problem_init(pb);
    *plan = (partd_plan *)1; /* must be overwritten either way */
    int rc = partd_plan_run(req, cancel, plan, pb);
    partd_request_free(req);
    return rc;
}

static void test_pipeline_mode(void **state)
{
    (void)state;
    partd_plan *plan;
    partd_problem pb;
    assert_int_equal(run("{\"mode\":\"pipeline\"}", 1000, NULL, &plan, &pb), PARTD_OK);
    assert_non_null(plan);
    assert_int_equal(plan->mode, PARTD_MODE_PIPELINE);
    assert_int_equal(plan->n_parts, 3); /* default stages: min(devices, ops) */
    assert_non_null(plan->balance);
    assert_int_equal(plan->n_boundaries, 2);
    assert_null(plan->sac);
    assert_int_equal(pb.status, 0);
    partd_plan_free(plan);
    partd_problem_free(&pb);
}

static void test_size_based_mode(void **state)
{
    (void)state;
    partd_plan *plan;
    partd_problem pb;
    assert_int_equal(run("{\"mode\":\"size_based\"}", 1000, NULL, &plan, &pb), PARTD_OK);
    assert_non_null(plan);
    assert_int_equal(plan->mode, PARTD_MODE_SIZE_BASED);
    assert_int_equal(plan->n_parts, 1); /* the graph fits one device */
    assert_null(plan->balance);
    assert_int_equal(plan->n_boundaries, 0);
    partd_plan_free(plan);
    partd_problem_free(&pb);
}

/* The warnings of a plan of request(options) with graph.batch_size (0:
 * none), as "code code ..." ("" for none). */
static void warnings_of(const char *options, int batch, char *codes, size_t cap)
{
    char *json = request(options, 100000);
    char with[4200];
    const char *at = strstr(json, "\"nodes\"");
    snprintf(with, sizeof with, "%.*s\"batch_size\":%d,%s", (int)(at - json), json, batch, at);
    partd_request *req = tu_decode_ok(batch ? with : json);
    free(json);
    partd_problem pb;
    partd_problem_init(&pb);
    partd_plan *plan;
    assert_int_equal(partd_plan_run(req, NULL, &plan, &pb), PARTD_OK);
    codes[0] = '\0';
    for (uint32_t i = 0; i < plan->n_warnings; i++) {
        assert_non_null(strstr(plan->warnings[i].message, "graph.batch_size"));
        snprintf(codes + strlen(codes), cap - strlen(codes), "%s%s", i ? " " : "",
                 plan->warnings[i].code);
    }
    partd_plan_free(plan);
    partd_problem_free(&pb);
    partd_request_free(req);
}

/* Training takes the graph as the whole batch, divided into M microbatches
 * (contract): M above graph.batch_size, or not dividing it, is planned with
 * a warning. Pipeline takes the graph as one microbatch: no warning. */
static void test_training_warns_when_microbatches_do_not_fit_the_batch(void **state)
{
    (void)state;
    const char *training = "{\"mode\":\"training\",\"training\":{\"microbatches\":4}}";
    char codes[256];
    warnings_of(training, 2, codes, sizeof codes);
    assert_string_equal(codes, "microbatches-above-batch");
    warnings_of(training, 6, codes, sizeof codes);
    assert_string_equal(codes, "microbatches-do-not-divide-batch");
    warnings_of(training, 8, codes, sizeof codes);
    assert_string_equal(codes, "");
    warnings_of(training, 0, codes, sizeof codes);
    assert_string_equal(codes, "");
    warnings_of("{\"pipeline\":{\"schedule\":\"1f1b\",\"microbatches\":4}}", 1, codes,
                sizeof codes);
    assert_string_equal(codes, "");
}

static void test_unsupported_mode(void **state)
{
    (void)state;
    char *json = request("{}", 1000);
    partd_request *req = tu_decode_ok(json);
    free(json);
    req->options.mode = PARTD_MODE_COUNT; /* a mode no planner handles */
    partd_problem pb;
    partd_problem_init(&pb);
    partd_plan *plan = (partd_plan *)1;
    assert_int_equal(partd_plan_run(req, NULL, &plan, &pb), PARTD_EINVALID);
    assert_null(plan);
    assert_int_equal(pb.status, 422);
    assert_string_equal(pb.type, "urn:partd:problem:unsupported-mode");
    tu_assert_error(&pb, "/options/mode", "not available");
    partd_problem_free(&pb);
    partd_request_free(req);
}

static void test_planner_errors_pass_through(void **state)
{
    (void)state;
    partd_plan *plan;
    partd_problem pb;
    /* A cut_after naming no node never reaches the planner: decoding
     * refuses it (every check that needs only the request is made there). */
    char *json = request("{\"pipeline\":{\"cut_after\":[\"nope\"]}}", 1000);
    tu_decode_fail(json, PARTD_EINVALID, &pb);
    free(json);
    assert_int_equal(pb.status, 422);
    tu_assert_error(&pb, "/options/pipeline/cut_after/0", "");
    partd_problem_free(&pb);
    /* No plan: 100-byte parameters on 50-byte devices, either mode. */
    assert_int_equal(run("{\"mode\":\"pipeline\"}", 50, NULL, &plan, &pb), PARTD_EINFEASIBLE);
    assert_null(plan);
    assert_int_not_equal(pb.status, 0);
    partd_problem_free(&pb);
    assert_int_equal(run("{\"mode\":\"size_based\"}", 50, NULL, &plan, &pb), PARTD_EINFEASIBLE);
    assert_null(plan);
    assert_int_not_equal(pb.status, 0);
    partd_problem_free(&pb);
}

static void test_sac_without_modules(void **state)
{
    (void)state;
    partd_problem pb;
    /* options.sac needs graph.modules: refused while decoding. */
    char *json = request("{\"sac\":{}}", 1000);
    tu_decode_fail(json, PARTD_EINVALID, &pb);
    free(json);
    assert_int_equal(pb.status, 422);
    partd_problem_free(&pb);
}

/* 250-byte devices: the graph (300 bytes of parameters) does not fit one,
 * so size_based takes its greedy path, which checks the flag (its
 * one-device shortcut finishes without looking). */
static void test_cancelled(void **state)
{
    (void)state;
    partd_cancel c;
    partd_cancel_init(&c, 0);
    atomic_store(&c.cancelled, 1);
    const char *modes[] = {"{\"mode\":\"pipeline\"}", "{\"mode\":\"size_based\"}"};
    for (int i = 0; i < 2; i++) {
        partd_plan *plan;
        partd_problem pb;
        assert_int_equal(run(modes[i], 250, &c, &plan, &pb), PARTD_ECANCELLED);
        assert_null(plan);
        assert_int_equal(pb.status, 409);
        assert_string_equal(pb.type, "urn:partd:problem:cancelled");
        partd_problem_free(&pb);
    }
}

static void test_deadline_passed(void **state)
{
    (void)state;
    partd_cancel c;
    partd_cancel_init(&c, 0);
    c.deadline_ns = 1; /* long past */
    const char *modes[] = {"{\"mode\":\"pipeline\"}", "{\"mode\":\"size_based\"}"};
    for (int i = 0; i < 2; i++) {
        partd_plan *plan;
        partd_problem pb;
        assert_int_equal(run(modes[i], 250, &c, &plan, &pb), PARTD_ETIMEOUT);
        assert_null(plan);
        assert_int_equal(pb.status, 422);
        assert_string_equal(pb.type, "urn:partd:problem:job-timeout");
        partd_problem_free(&pb);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pipeline_mode),
        cmocka_unit_test(test_size_based_mode),
        cmocka_unit_test(test_unsupported_mode),
        cmocka_unit_test(test_training_warns_when_microbatches_do_not_fit_the_batch),
        cmocka_unit_test(test_planner_errors_pass_through),
        cmocka_unit_test(test_sac_without_modules),
        cmocka_unit_test(test_cancelled),
        cmocka_unit_test(test_deadline_passed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
