/*
 * test_decode_training.c - options.training (lib/decode_training.c), driven
 * through partd_request_decode: the defaults, every member's accepted range
 * and its type and range errors at their JSON Pointers, stages "auto" /
 * integer / more than the devices, schedule "inference" refused, unknown
 * members, and the microbatches default filled from the devices; v3's
 * schedule (a name, v2's names, a list, auto), virtual_stages and
 * weight_grad_fraction.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "decode/decode_training.h"
#include "partd/decode.h"
#include "partd/enums.h"
#include "partd/partd.h"
#include "partd/problem.h"
#include "testutil.h"

static char text[4096];

/* Three units at depth 2 (and deeper), one at depth 1. */
#define NODES                                                                                 \
    "{\"name\":\"x\",\"op\":\"placeholder\"},"                                               \
    "{\"name\":\"a\",\"op\":\"call_function\",\"module\":\"l.0\",\"inputs\":[\"x\"],"       \
    "\"output_bytes\":10,\"latency_ms\":1},"                                                  \
    "{\"name\":\"b\",\"op\":\"call_function\",\"module\":\"l.1\",\"inputs\":[\"a\"],"       \
    "\"output_bytes\":10,\"latency_ms\":1},"                                                  \
    "{\"name\":\"c\",\"op\":\"call_function\",\"module\":\"l.2\",\"inputs\":[\"b\"],"       \
    "\"output_bytes\":10,\"latency_ms\":1}"

/* A request with three devices and `training` as the body of
 * options.training (NULL: member absent). */
static const char *request_mode(const char *mode, const char *training)
{
    if (training)
        snprintf(text, sizeof text,
                 "{\"graph\":{\"nodes\":[" NODES "]},\"devices\":["
                 "{\"name\":\"d0\",\"memory_bytes\":1000},{\"name\":\"d1\",\"memory_bytes\":1000},"
                 "{\"name\":\"d2\",\"memory_bytes\":1000}],"
                 "\"options\":{\"mode\":\"%s\",\"training\":%s}}",
                 mode, training);
    else
        snprintf(text, sizeof text,
                 "{\"graph\":{\"nodes\":[" NODES "]},\"devices\":["
                 "{\"name\":\"d0\",\"memory_bytes\":1000},{\"name\":\"d1\",\"memory_bytes\":1000},"
                 "{\"name\":\"d2\",\"memory_bytes\":1000}],"
                 "\"options\":{\"mode\":\"%s\"}}",
                 mode);
    return text;
}

static const char *request(const char *training)
{
    return request_mode("training", training);
}

static partd_training_options decode_ok(const char *training)
{
    partd_request *req = tu_decode_ok(request(training));
    partd_training_options to = req->options.training;
    partd_request_free(req);
    return to;
}

/* The request is refused with exactly `n_errors` errors, one of them at
 * `pointer` containing `needle`. */
static void decode_bad(const char *mode, const char *training, const char *pointer,
                       const char *needle, uint32_t n_errors)
{
    partd_problem pb;
    tu_decode_fail(request_mode(mode, training), PARTD_EINVALID, &pb);
    assert_int_equal(pb.status, 422);
    tu_assert_error(&pb, pointer, needle);
    if (pb.n_errors != n_errors) {
        for (uint32_t i = 0; i < pb.n_errors; i++)
            fprintf(stderr, "  %s: %s\n", pb.errors[i].pointer, pb.errors[i].message);
    }
    assert_int_equal(pb.n_errors, n_errors);
    partd_problem_free(&pb);
}

static void bad(const char *training, const char *pointer, const char *needle)
{
    decode_bad("training", training, pointer, needle, 1);
}

/* ---- defaults --------------------------------------------------------------- */

static void assert_defaults(const partd_training_options *to, uint32_t microbatches)
{
    assert_int_equal(to->schedules, 1u << PARTD_TRAINING_1F1B);
    assert_int_equal(to->schedule_named, 1);
    assert_int_equal(to->virtual_stages, 0);
    assert_true(to->weight_grad_fraction == 0.5);
    assert_int_equal(to->checkpoint, PARTD_CHECKPOINT_AUTO);
    assert_int_equal(to->stages, 0);
    assert_int_equal(to->device_order_auto, 0);
    assert_int_equal(to->unit_depth, 0);
    assert_int_equal(to->microbatches, microbatches);
    assert_true(to->backward_factor == 2.0);
    assert_true(to->param_factor == 4.0);
}

static void test_defaults_direct(void **state)
{
    (void)state;
    partd_training_options to;
    memset(&to, 0xab, sizeof to);
    partd__decode_training_defaults(&to);
    assert_defaults(&to, 0);
}

static void test_defaults_absent_and_empty(void **state)
{
    (void)state;
    partd_training_options to = decode_ok(NULL);
    assert_defaults(&to, 3); /* microbatches default: the number of devices */
    to = decode_ok("{}");
    assert_defaults(&to, 3);
    /* Other modes get the same defaults. */
    partd_request *req = tu_decode_ok(request_mode("pipeline", NULL));
    assert_defaults(&req->options.training, 3);
    partd_request_free(req);
}

static void test_fill_defaults(void **state)
{
    (void)state;
    partd_request *req = calloc(1, sizeof *req);
    assert_non_null(req);
    partd__decode_training_defaults(&req->options.training);
    req->n_devices = 0; /* no devices yet: one microbatch */
    partd__decode_training_fill_defaults(req);
    assert_int_equal(req->options.training.microbatches, 1);

    req->options.training.microbatches = 0;
    req->n_devices = 5000; /* capped */
    partd__decode_training_fill_defaults(req);
    assert_int_equal(req->options.training.microbatches, PARTD_TRAINING_MAX_MICROBATCHES);

    req->options.training.microbatches = 7; /* given: kept */
    partd__decode_training_fill_defaults(req);
    assert_int_equal(req->options.training.microbatches, 7);
    free(req);
}

/* ---- accepted values ---------------------------------------------------------- */

static void test_every_member_read(void **state)
{
    (void)state;
    partd_training_options to =
        decode_ok("{\"schedule\":\"gpipe\",\"microbatches\":1024,\"stages\":3,"
                  "\"device_order\":\"auto\",\"checkpoint\":\"except_last\","
                  "\"unit_depth\":1024,\"backward_factor\":64,\"param_factor\":0.5}");
    assert_int_equal(to.schedules, 1u << PARTD_TRAINING_GPIPE);
    assert_int_equal(to.microbatches, 1024);
    assert_int_equal(to.stages, 3);
    assert_int_equal(to.device_order_auto, 1);
    assert_int_equal(to.checkpoint, PARTD_CHECKPOINT_EXCEPT_LAST);
    assert_int_equal(to.unit_depth, 1024);
    assert_true(to.backward_factor == 64.0);
    assert_true(to.param_factor == 0.5);

    to = decode_ok("{\"schedule\":\"1f1b\",\"microbatches\":1,\"stages\":1,"
                   "\"device_order\":\"given\",\"checkpoint\":\"never\",\"unit_depth\":1,"
                   "\"backward_factor\":1e-9,\"param_factor\":64}");
    assert_int_equal(to.schedules, 1u << PARTD_TRAINING_1F1B);
    assert_int_equal(to.microbatches, 1);
    assert_int_equal(to.stages, 1);
    assert_int_equal(to.device_order_auto, 0);
    assert_int_equal(to.checkpoint, PARTD_CHECKPOINT_NEVER);
    assert_int_equal(to.unit_depth, 1);
    assert_true(to.backward_factor == 1e-9);
    assert_true(to.param_factor == 64.0);

    to = decode_ok("{\"schedule\":\"ZBVZeroBubble\",\"virtual_stages\":\"auto\","
                   "\"weight_grad_fraction\":0}");
    assert_int_equal(to.schedules, 1u << PARTD_TRAINING_ZBV);
    assert_int_equal(to.schedule_named, 1);
    assert_int_equal(to.virtual_stages, 0);
    assert_true(to.weight_grad_fraction == 0);
    to = decode_ok("{\"schedule\":\"auto\",\"virtual_stages\":8,\"weight_grad_fraction\":1}");
    assert_int_equal(to.schedules, (1u << PARTD_TRAINING_SCHEDULE_COUNT) - 1);
    assert_int_equal(to.schedule_named, 0);
    assert_int_equal(to.virtual_stages, 8);
    assert_true(to.weight_grad_fraction == 1);
    to = decode_ok("{\"schedule\":[\"DualPipeV\",\"1f1b\"],\"microbatches\":6}");
    assert_int_equal(to.schedules, (1u << PARTD_TRAINING_DUALPIPEV) | (1u << PARTD_TRAINING_1F1B));
    assert_int_equal(to.schedule_named, 0);
    to = decode_ok("{\"checkpoint\":\"always\"}");
    assert_int_equal(to.checkpoint, PARTD_CHECKPOINT_ALWAYS);
    to = decode_ok("{\"checkpoint\":\"auto\"}");
    assert_int_equal(to.checkpoint, PARTD_CHECKPOINT_AUTO);
}

static void test_stages_auto_and_integer(void **state)
{
    (void)state;
    assert_int_equal(decode_ok("{\"stages\":\"auto\"}").stages, 0);
    assert_int_equal(decode_ok("{\"stages\":2}").stages, 2);
    assert_int_equal(decode_ok("{\"stages\":3}").stages, 3); /* = devices */
}

/* ---- errors ------------------------------------------------------------------- */

static void test_stages_errors(void **state)
{
    (void)state;
    const char *p = "/options/training/stages";
    bad("{\"stages\":4}", p, "between 1 and 3 (the number of devices), not 4");
    bad("{\"stages\":0}", p, "between 1 and 3");
    bad("{\"stages\":-1}", p, "not -1");
    bad("{\"stages\":\"Auto\"}", p, "must be an integer or \"auto\", not a string");
    bad("{\"stages\":2.0}", p, "must be an integer or \"auto\"");
    bad("{\"stages\":null}", p, "not null");
    bad("{\"stages\":true}", p, "must be an integer or \"auto\"");
}

static void test_range_errors(void **state)
{
    (void)state;
    const char *p = "/options/training/";
    char ptr[96];
#define BAD(member, value, needle)                                                            \
    do {                                                                                      \
        snprintf(ptr, sizeof ptr, "%s%s", p, member);                                         \
        bad("{\"" member "\":" value "}", ptr, needle);                                       \
    } while (0)
    BAD("microbatches", "0", "between 1 and 1024, not 0");
    BAD("microbatches", "1025", "between 1 and 1024, not 1025");
    BAD("unit_depth", "0", "between 1 and 1024, not 0");
    BAD("unit_depth", "1025", "not 1025");
    BAD("backward_factor", "0", "greater than 0");
    BAD("backward_factor", "-2", "greater than 0");
    BAD("backward_factor", "64.5", "at most 64");
    BAD("param_factor", "0", "greater than 0");
    BAD("param_factor", "1e300", "at most 64");
    BAD("schedule", "\"inference\"", "unknown schedule \"inference\"");
    BAD("schedule", "\"Gpipe\"", "unknown schedule \"Gpipe\"");
    BAD("schedule", "[]", "at least one schedule");
    BAD("virtual_stages", "0", "between 1 and 8, not 0");
    BAD("virtual_stages", "9", "between 1 and 8, not 9");
    BAD("weight_grad_fraction", "1.01", "at most 1");
    BAD("weight_grad_fraction", "-1", "at least 0");
    BAD("checkpoint", "\"sometimes\"", "not \"sometimes\"");
    BAD("device_order", "\"random\"", "not \"random\"");
#undef BAD
}

static void test_type_errors(void **state)
{
    (void)state;
    const char *p = "/options/training/";
    char ptr[96];
#define BAD(member, value, needle)                                                            \
    do {                                                                                      \
        snprintf(ptr, sizeof ptr, "%s%s", p, member);                                         \
        bad("{\"" member "\":" value "}", ptr, needle);                                       \
    } while (0)
    BAD("microbatches", "\"2\"", "must be an integer, not a string");
    BAD("microbatches", "1.5", "must be an integer");
    BAD("unit_depth", "[1]", "must be an integer, not an array");
    BAD("backward_factor", "\"2\"", "must be a number, not a string");
    BAD("param_factor", "null", "must be a number, not null");
    BAD("schedule", "1", "must be a schedule name, not an integer");
    BAD("virtual_stages", "1.5", "must be an integer or \"auto\"");
    BAD("weight_grad_fraction", "\"half\"", "must be a number, not a string");
    BAD("checkpoint", "false", "must be a string");
    BAD("device_order", "{}", "must be a string");
#undef BAD
    bad("[]", "/options/training", "must be an object, not an array");
    bad("null", "/options/training", "must be an object");
    bad("\"1f1b\"", "/options/training", "must be an object");
}

static void test_unknown_members(void **state)
{
    (void)state;
    bad("{\"colour\":1}", "/options/training/colour", "unknown member");
    bad("{\"Schedule\":\"gpipe\"}", "/options/training/Schedule", "unknown member");
    /* Members of other option blocks do not belong here. */
    bad("{\"balance_by\":\"time\"}", "/options/training/balance_by", "unknown member");
}

static void test_errors_accumulate(void **state)
{
    (void)state;
    /* Every bad member is reported, each at its own pointer. */
    partd_problem pb;
    tu_decode_fail(request("{\"microbatches\":0,\"stages\":9,\"schedule\":\"inference\","
                           "\"param_factor\":-1,\"extra\":true}"),
                   PARTD_EINVALID, &pb);
    assert_int_equal(pb.n_errors, 5);
    tu_assert_error(&pb, "/options/training/microbatches", "between");
    tu_assert_error(&pb, "/options/training/stages", "between 1 and 3");
    tu_assert_error(&pb, "/options/training/schedule", "unknown schedule \"inference\"");
    tu_assert_error(&pb, "/options/training/param_factor", "greater than 0");
    tu_assert_error(&pb, "/options/training/extra", "unknown member");
    partd_problem_free(&pb);
}

/* Only mode training reads options.training (contract v3): under another
 * mode the block is refused whole, valid or not, with one error naming it. */
static void test_refused_in_other_modes(void **state)
{
    (void)state;
    decode_bad("pipeline", "{\"stages\":4}", "/options/training",
               "is read by mode training only, not by mode pipeline", 1);
    decode_bad("size_based", "{\"microbatches\":0}", "/options/training",
               "is read by mode training only, not by mode size_based", 1);
    decode_bad("pipeline", "{\"microbatches\":7}", "/options/training", "mode training only", 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_direct),
        cmocka_unit_test(test_defaults_absent_and_empty),
        cmocka_unit_test(test_fill_defaults),
        cmocka_unit_test(test_every_member_read),
        cmocka_unit_test(test_stages_auto_and_integer),
        cmocka_unit_test(test_stages_errors),
        cmocka_unit_test(test_range_errors),
        cmocka_unit_test(test_type_errors),
        cmocka_unit_test(test_unknown_members),
        cmocka_unit_test(test_errors_accumulate),
        cmocka_unit_test(test_refused_in_other_modes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
