/*
 * test_aot_based.c - FX's aot_based mode: the given map, FX's memory and
 * cost, options.aot's validation, and the maps FX would hand back broken.
 * tests/python/test_fx_modes_random.py compares with PyTorch itself.
 */
#include "fx_test.h"

#include <stdio.h>

#include "fx/aot_based.h"

/* x (8) -> a (8 + 16 params, 2 ms) -> b (reads a and x, 3 ms) -> c (1 ms,
 * memory-bound 4 ms). */
#define GRAPH                                                                             \
    "{\"graph\":{\"nodes\":["                                                             \
    "{\"name\":\"x\",\"op\":\"placeholder\",\"output_bytes\":8},"                         \
    "{\"name\":\"a\",\"op\":\"call_module\",\"inputs\":[\"x\"],\"output_bytes\":8,"       \
    "\"param_bytes\":16,\"latency_ms\":2},"                                               \
    "{\"name\":\"b\",\"op\":\"call_function\",\"inputs\":[\"a\",\"x\"],\"output_bytes\":8," \
    "\"latency_ms\":3},"                                                                  \
    "{\"name\":\"c\",\"op\":\"call_function\",\"inputs\":[\"b\"],\"output_bytes\":8,"     \
    "\"latency_ms\":1,\"mem_latency_ms\":4},"                                             \
    "{\"name\":\"out\",\"op\":\"output\",\"inputs\":[\"c\"]}]},"                          \
    "\"devices\":[{\"name\":\"d0\",\"memory_bytes\":100},{\"name\":\"d1\",\"memory_bytes\":40}],"

#define AOT(map) "\"options\":{\"mode\":\"aot_based\",\"transfer_bytes_per_sec\":8000,\"aot\":" map "}}"

static void test_map_memory_and_cost(void **state)
{
    (void)state;
    planned p = plan_text(GRAPH AOT("{\"partition_of\":{\"a\":3,\"b\":1,\"c\":1},"
                                    "\"device_of\":{\"1\":\"d1\",\"3\":[\"d0\"]}}"));
    assert_int_equal(p.rc, PARTD_OK);
    assert_int_equal(p.plan->n_parts, 2);
    /* partitions by id: 1 = {b, c} (b 8 + a read from outside 8, c 8, and
     * x, which b reads, in the set: 8) = 32 on d1; 3 = {a} (x 8 in the set,
     * a 24) = 32 on d0 */
    expect_part(&p, 0, "b c", "d1", 32);
    expect_part(&p, 1, "a", "d0", 32);
    /* FX's cost: a 2 ms, then a and x (in both sets, so counted: FX's
     * quirk) 16 bytes at 8000 B/s = 2 ms, then b + c = 3 + 4 ms */
    assert_true(p.plan->summary.has_latency);
    assert_true(p.plan->summary.latency_ms > 11.0 - 1e-9 && p.plan->summary.latency_ms < 11.0 + 1e-9);
    planned_free(&p);
}

static void test_same_devices_cost_no_transfer(void **state)
{
    (void)state;
    planned p = plan_text(GRAPH AOT("{\"partition_of\":{\"a\":0,\"b\":1,\"c\":1},"
                                    "\"device_of\":{\"0\":\"d0\",\"1\":\"d0\"}}"));
    assert_int_equal(p.rc, PARTD_OK);
    assert_true(p.plan->summary.latency_ms > 9.0 - 1e-9 && p.plan->summary.latency_ms < 9.0 + 1e-9);
    planned_free(&p);
}

static void test_cycle_is_refused(void **state)
{
    (void)state;
    /* a and c in partition 0, b in 1: 0 -> 1 -> 0. FX returns this. */
    planned p = plan_text(GRAPH AOT("{\"partition_of\":{\"a\":0,\"b\":1,\"c\":0},"
                                    "\"device_of\":{\"0\":\"d0\",\"1\":\"d0\"}}"));
    assert_int_equal(p.rc, PARTD_EINFEASIBLE);
    tu_assert_error(&p.pb, "/options/aot/partition_of", "a result of its own");
    planned_free(&p);
}

static void test_device_over_memory_is_refused(void **state)
{
    (void)state;
    /* everything on d1 (40 bytes): the set needs 8 + 24 + 8 + 8 = 48 */
    planned p = plan_text(GRAPH AOT("{\"partition_of\":{\"a\":0,\"b\":0,\"c\":0},"
                                    "\"device_of\":{\"0\":\"d1\"}}"));
    assert_int_equal(p.rc, PARTD_EINFEASIBLE);
    tu_assert_error(&p.pb, "/options/aot/device_of/0", "needs 48 B");
    planned_free(&p);
}

static void test_every_reference_is_checked(void **state)
{
    (void)state;
    partd_problem pb;
    tu_decode_fail(GRAPH AOT("{\"partition_of\":{\"a\":0,\"x\":0,\"zz\":1,\"b\":-1},"
                             "\"device_of\":{\"0\":\"nope\",\"01\":\"d0\",\"5\":7}}"),
                   PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/options/aot/partition_of/x", "placeholder");
    tu_assert_error(&pb, "/options/aot/partition_of/zz", "names no node");
    tu_assert_error(&pb, "/options/aot/partition_of/b", "");
    tu_assert_error(&pb, "/options/aot/partition_of", "operation node \"c\"");
    tu_assert_error(&pb, "/options/aot/device_of/0", "names no device");
    tu_assert_error(&pb, "/options/aot/device_of/01", "not a partition id");
    tu_assert_error(&pb, "/options/aot/device_of/5", "device name");
    partd_problem_free(&pb);
}

static void test_missing_map_and_other_modes(void **state)
{
    (void)state;
    partd_problem pb;
    tu_decode_fail(GRAPH "\"options\":{\"mode\":\"aot_based\"}}", PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/options/aot", "is required");
    partd_problem_free(&pb);
    tu_decode_fail(GRAPH "\"options\":{\"mode\":\"aot_based\",\"aot\":{\"partition_of\":"
                         "{\"a\":0,\"b\":0,\"c\":0}}}}",
                   PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/options/aot/device_of", "is required");
    partd_problem_free(&pb);
    tu_decode_fail(GRAPH "\"options\":{\"mode\":\"aot_based\",\"aot\":{\"partition_of\":"
                         "{\"a\":0,\"b\":0,\"c\":2},\"device_of\":{\"0\":\"d0\"}}}}",
                   PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/options/aot/device_of", "no device for partition 2");
    partd_problem_free(&pb);
    tu_decode_fail(GRAPH "\"options\":{\"mode\":\"size_based\",\"aot\":{}}}", PARTD_EINVALID,
                   &pb);
    tu_assert_error(&pb, "/options/aot", "mode aot_based only");
    partd_problem_free(&pb);
}

static void test_direct_call_needs_the_map(void **state)
{
    (void)state;
    partd_request *req = tu_decode_ok(GRAPH "\"options\":{\"mode\":\"cost_aware\"}}");
    partd_plan *plan = NULL;
    partd_problem pb;
    partd_problem_init(&pb);
    assert_int_equal(partd_aot_based(req, NULL, &plan, &pb), PARTD_EINVALID);
    assert_null(plan);
    partd_problem_free(&pb);
    partd_request_free(req);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_map_memory_and_cost),
        cmocka_unit_test(test_same_devices_cost_no_transfer),
        cmocka_unit_test(test_cycle_is_refused),
        cmocka_unit_test(test_device_over_memory_is_refused),
        cmocka_unit_test(test_every_reference_is_checked),
        cmocka_unit_test(test_missing_map_and_other_modes),
        cmocka_unit_test(test_direct_call_needs_the_map),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
