/*
 * test_size_based.c - PyTorch FX size_based partitioning on hand-built
 * graphs. Each expected answer was worked out by hand from
 * accelerator_partitioner.py (1.13); the derivation is in the comments.
 * tests/python/test_size_based_fx_random.py compares with PyTorch itself.
 */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fx/size_based.h"
#include "fx_test.h"
#include "partd/partd.h"
#include "partd/result.h"

#define CHAIN_NODES                                                                      \
    "{\"graph\":{\"nodes\":["                                                            \
    "{\"name\":\"x\",\"op\":\"placeholder\",\"output_bytes\":10},"                        \
    "{\"name\":\"a\",\"op\":\"call_module\",\"inputs\":[\"x\"],\"output_bytes\":10,\"param_bytes\":30}," \
    "{\"name\":\"b\",\"op\":\"call_module\",\"inputs\":[\"a\"],\"output_bytes\":10,\"param_bytes\":50}," \
    "{\"name\":\"c\",\"op\":\"call_function\",\"inputs\":[\"b\"],\"output_bytes\":10},"  \
    "{\"name\":\"d\",\"op\":\"call_function\",\"inputs\":[\"c\"],\"output_bytes\":10},"  \
    "{\"name\":\"out\",\"op\":\"output\",\"inputs\":[\"d\"]}]},"                         \
    "\"options\":{\"mode\":\"size_based\"},"
/* Sizes (FX total): x 10, a 40, b 60, c 10, d 10: graph total 130. */

static void test_fits_on_largest_device(void **state)
{
    (void)state;
    /* 130 <= 150: one partition on the device with the most memory (the
     * first of equals), used memory = the graph total. */
    planned p = plan_text(CHAIN_NODES "\"devices\":[{\"name\":\"s\",\"memory_bytes\":20},"
                                      "{\"name\":\"l1\",\"memory_bytes\":150},"
                                      "{\"name\":\"l2\",\"memory_bytes\":150}]}");
    assert_int_equal(p.rc, PARTD_OK);
    assert_int_equal(p.plan->n_parts, 1);
    expect_part(&p, 0, "a b c d", "l1", 130);
    assert_int_equal(p.plan->parts[0].n_inputs, 1); /* x */
    assert_int_equal(p.plan->parts[0].n_outputs, 1); /* d, read by output */
    assert_false(p.plan->summary.optimal);
    planned_free(&p);
}

static void test_not_enough_memory_in_all_devices(void **state)
{
    (void)state;
    /* 130 > 60 + 60 */
    planned p = plan_text(CHAIN_NODES "\"devices\":[{\"name\":\"g0\",\"memory_bytes\":60},"
                                      "{\"name\":\"g1\",\"memory_bytes\":60}]}");
    assert_int_equal(p.rc, PARTD_EINFEASIBLE);
    assert_non_null(strstr(p.pb.detail, "Devices have no enough memory"));
    tu_assert_error(&p.pb, "/devices", "120 B in all; the graph needs 130 B");
    assert_int_equal(tu_problem_member(&p.pb, "short_bytes"), 10);
    planned_free(&p);
}

static void test_greedy_fill_heterogeneous(void **state)
{
    (void)state;
    /* Devices 100 and 80 (130 > 100, 130 <= 180):
     * a: extra 40+10(x) = 50, first device >= 50 is g0; left 50, used 50.
     * b: extra 60 > 50: new partition on the first free device fitting
     *    b alone (60 + a's 10 = 70): g1; left 10, used 70.
     * c: 10 <= 10: joins; left 0, used 80.
     * d: 10 > 0 and every device has a partition: single-node partition
     *    {d}, used 10 + c's 10 = 20.
     * Mapping: left g0 50, g1 0; sorted g1, g0. On g1 (holds b, c): d needs
     * 10, not < 0. On g0 (holds x, a): 10 + c's 10 = 20 < 50: g0. */
    planned p = plan_text(CHAIN_NODES "\"devices\":[{\"name\":\"g0\",\"memory_bytes\":100},"
                                      "{\"name\":\"g1\",\"memory_bytes\":80}]}");
    assert_int_equal(p.rc, PARTD_OK);
    assert_int_equal(p.plan->n_parts, 3);
    expect_part(&p, 0, "a", "g0", 50);
    expect_part(&p, 1, "b c", "g1", 80);
    expect_part(&p, 2, "d", "g0", 20);
    /* links: 0 -> 1 -> 2 */
    assert_int_equal(p.plan->parts[1].n_parents, 1);
    assert_int_equal(p.plan->parts[1].parents[0], 0);
    assert_int_equal(p.plan->parts[1].children[0], 2);
    assert_int_equal(p.plan->parts[1].outputs[0], 3); /* c */
    planned_free(&p);
}

static void test_no_valid_mapping(void **state)
{
    (void)state;
    /* As above with g0 = 60: a leaves g0 with 10, {d} needs 20 on g0 and
     * 10 on g1 (left 0): no device. */
    planned p = plan_text(CHAIN_NODES "\"devices\":[{\"name\":\"g0\",\"memory_bytes\":60},"
                                      "{\"name\":\"g1\",\"memory_bytes\":80}]}");
    assert_int_equal(p.rc, PARTD_EINFEASIBLE);
    assert_non_null(strstr(p.pb.detail, "valid partition to logical device mapping"));
    tu_assert_error(&p.pb, "/graph/nodes/4", "no device has 20 B left");
    assert_int_equal(tu_problem_member(&p.pb, "memory_bytes"), 20);
    planned_free(&p);
}

static void test_node_too_large_for_any_device(void **state)
{
    (void)state;
    /* Three devices of 60 (130 <= 180): a on g0 (left 10); b needs 70 alone
     * and no free device has that. */
    planned p = plan_text(CHAIN_NODES "\"devices\":[{\"name\":\"g0\",\"memory_bytes\":60},"
                                      "{\"name\":\"g1\",\"memory_bytes\":60},"
                                      "{\"name\":\"g2\",\"memory_bytes\":60}]}");
    assert_int_equal(p.rc, PARTD_EINFEASIBLE);
    assert_non_null(strstr(p.pb.detail, "\"b\" is too large to fit any device"));
    tu_assert_error(&p.pb, "/graph/nodes/2", "needs 70 B;");
    assert_int_equal(tu_problem_member(&p.pb, "memory_bytes"), 70);
    planned_free(&p);
}

static void test_zero_size_partition_picks_device_again(void **state)
{
    (void)state;
    /* a has size 0, so after adding it the partition's used memory is still
     * 0 and PyTorch picks a device again for b: the partition ends up with
     * two logical ids (g0 for a, g1 for b), left memory from g1.
     * a: device g0 (first fitting 0), left 30.  b: used == 0 again: first
     * free device fitting 30 is g1 (40): left 40 - 30 = 10.  c: 30 > 10:
     * new partition on g2. */
    planned p = plan_text("{\"graph\":{\"nodes\":["
                          "{\"name\":\"a\",\"op\":\"call_function\"},"
                          "{\"name\":\"b\",\"op\":\"call_module\",\"inputs\":[\"a\"],\"param_bytes\":30},"
                          "{\"name\":\"c\",\"op\":\"call_module\",\"inputs\":[\"b\"],\"param_bytes\":30}]},"
                          "\"options\":{\"mode\":\"size_based\"},"
                          "\"devices\":[{\"name\":\"g0\",\"memory_bytes\":30},"
                          "{\"name\":\"g1\",\"memory_bytes\":40},{\"name\":\"g2\",\"memory_bytes\":40}]}");
    assert_int_equal(p.rc, PARTD_OK);
    assert_int_equal(p.plan->n_parts, 2);
    expect_part(&p, 0, "a b", "g0 g1", 30);
    expect_part(&p, 1, "c", "g2", 30);
    size_t len;
    char *json = partd_result_to_json(p.req, p.plan, &len);
    assert_non_null(strstr(json, "\"logical_ids\":[0,1]"));
    free(json);
    planned_free(&p);
}

static void test_get_attr_counts_once(void **state)
{
    (void)state;
    /* A get_attr's output is its parameter: 64 bytes, not 128. Total
     * 64 + 8 = 72 fits the 72-byte device. */
    planned p = plan_text("{\"graph\":{\"nodes\":["
                          "{\"name\":\"w\",\"op\":\"get_attr\",\"output_bytes\":64,"
                          " \"params\":[{\"name\":\"w\",\"bytes\":64}]},"
                          "{\"name\":\"a\",\"op\":\"call_function\",\"inputs\":[\"w\"],\"output_bytes\":8}]},"
                          "\"options\":{\"mode\":\"size_based\"},"
                          "\"devices\":[{\"name\":\"g0\",\"memory_bytes\":72}]}");
    assert_int_equal(p.rc, PARTD_OK);
    expect_part(&p, 0, "a", "g0", 72);
    planned_free(&p);
}

static void test_logical_ids_are_reported(void **state)
{
    (void)state;
    planned p = plan_text(CHAIN_NODES "\"devices\":[{\"name\":\"g0\",\"memory_bytes\":100,\"logical_id\":7},"
                                      "{\"name\":\"g1\",\"memory_bytes\":80,\"logical_id\":3}]}");
    assert_int_equal(p.rc, PARTD_OK);
    char *json = partd_result_to_json(p.req, p.plan, NULL);
    assert_non_null(strstr(json, "{\"id\":0,\"device\":\"g0\",\"logical_ids\":[7]"));
    assert_non_null(strstr(json, "{\"id\":1,\"device\":\"g1\",\"logical_ids\":[3]"));
    assert_non_null(strstr(json, "{\"id\":2,\"device\":\"g0\",\"logical_ids\":[7]"));
    free(json);
    planned_free(&p);
}

static void test_tied_params_across_partitions(void **state)
{
    (void)state;
    /* emb and head share "wte" (64 bytes each way); they land in different
     * partitions, so wte is tied across 0 and 1. */
    planned p = plan_text("{\"graph\":{\"nodes\":["
                          "{\"name\":\"x\",\"op\":\"placeholder\",\"output_bytes\":4},"
                          "{\"name\":\"emb\",\"op\":\"call_module\",\"inputs\":[\"x\"],\"output_bytes\":8,"
                          " \"params\":[{\"name\":\"wte\",\"bytes\":64}]},"
                          "{\"name\":\"h\",\"op\":\"call_function\",\"inputs\":[\"emb\"],\"output_bytes\":8},"
                          "{\"name\":\"head\",\"op\":\"call_module\",\"inputs\":[\"h\"],\"output_bytes\":8,"
                          " \"params\":[{\"name\":\"wte\",\"bytes\":64}]}]},"
                          "\"options\":{\"mode\":\"size_based\"},"
                          "\"devices\":[{\"name\":\"g0\",\"memory_bytes\":90},{\"name\":\"g1\",\"memory_bytes\":90}]}");
    assert_int_equal(p.rc, PARTD_OK);
    assert_int_equal(p.plan->n_parts, 2);
    assert_int_equal(p.plan->n_tied, 1);
    assert_int_equal(p.plan->tied[0].n_parts, 2);
    char *json = partd_result_to_json(p.req, p.plan, NULL);
    assert_non_null(strstr(json, "\"tied_params\":[{\"param\":\"wte\",\"partitions\":[0,1]}]"));
    free(json);
    planned_free(&p);
}

static void test_result_is_deterministic_and_order_independent(void **state)
{
    (void)state;
    const char *a = CHAIN_NODES "\"devices\":[{\"name\":\"g0\",\"memory_bytes\":100},"
                                "{\"name\":\"g1\",\"memory_bytes\":80}]}";
    /* the same request with members shuffled and whitespace */
    const char *b =
        "{ \"devices\": [ {\"memory_bytes\":100, \"name\":\"g0\"}, {\"memory_bytes\":80,\"name\":\"g1\"} ],"
        "  \"options\": {\"mode\":\"size_based\"},"
        "  \"graph\": {\"nodes\": ["
        "  {\"output_bytes\":10, \"op\":\"placeholder\", \"name\":\"x\"},"
        "  {\"param_bytes\":30, \"output_bytes\":10, \"inputs\":[\"x\"], \"op\":\"call_module\", \"name\":\"a\"},"
        "  {\"inputs\":[\"a\"], \"param_bytes\":50, \"name\":\"b\", \"op\":\"call_module\", \"output_bytes\":10},"
        "  {\"name\":\"c\", \"output_bytes\":10, \"inputs\":[\"b\"], \"op\":\"call_function\"},"
        "  {\"output_bytes\":10, \"name\":\"d\", \"op\":\"call_function\", \"inputs\":[\"c\"]},"
        "  {\"inputs\":[\"d\"], \"op\":\"output\", \"name\":\"out\"} ] } }";
    int rc;
    partd_problem pb;
    char *r1 = tu_plan_json(a, &rc, &pb);
    partd_problem_free(&pb);
    char *r2 = tu_plan_json(a, &rc, &pb);
    partd_problem_free(&pb);
    char *r3 = tu_plan_json(b, &rc, &pb);
    partd_problem_free(&pb);
    assert_non_null(r1);
    assert_string_equal(r1, r2);
    assert_string_equal(r1, r3);
    free(r1);
    free(r2);
    free(r3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fits_on_largest_device),
        cmocka_unit_test(test_not_enough_memory_in_all_devices),
        cmocka_unit_test(test_greedy_fill_heterogeneous),
        cmocka_unit_test(test_no_valid_mapping),
        cmocka_unit_test(test_node_too_large_for_any_device),
        cmocka_unit_test(test_zero_size_partition_picks_device_again),
        cmocka_unit_test(test_get_attr_counts_once),
        cmocka_unit_test(test_logical_ids_are_reported),
        cmocka_unit_test(test_tied_params_across_partitions),
        cmocka_unit_test(test_result_is_deterministic_and_order_independent),
    };
    return cmocka_run_group_tests_name("size_based", tests, NULL, NULL);
}
