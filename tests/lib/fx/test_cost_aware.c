/*
 * test_cost_aware.c - FX's cost_aware mode on a hand-built diamond
 * and a graph with skip connections and shared inputs (answers checked
 * against PyTorch 1.13's Partitioner), and a graph FX hands back without
 * devices. tests/python/test_fx_modes_random.py
 * compares with PyTorch itself on random graphs.
 */
#include "fx_test.h"

#include <stdlib.h>

#include "gen.h"

#include "fx/cost_aware.h"

/* x -> a (8 + 24 params, 1 ms) -> b (2 ms), c (4 ms) -> d (8 + 24, 1 ms);
 * 8-byte outputs at 8000 B/s: 1 ms per output sent. */
#define GRAPH                                                                             \
    "{\"graph\":{\"nodes\":["                                                             \
    "{\"name\":\"x\",\"op\":\"placeholder\",\"output_bytes\":8},"                         \
    "{\"name\":\"a\",\"op\":\"call_module\",\"inputs\":[\"x\"],\"output_bytes\":8,"       \
    "\"param_bytes\":24,\"latency_ms\":1},"                                               \
    "{\"name\":\"b\",\"op\":\"call_function\",\"inputs\":[\"a\"],\"output_bytes\":8,\"latency_ms\":2}," \
    "{\"name\":\"c\",\"op\":\"call_function\",\"inputs\":[\"a\"],\"output_bytes\":8,\"latency_ms\":4}," \
    "{\"name\":\"d\",\"op\":\"call_module\",\"inputs\":[\"b\",\"c\"],\"output_bytes\":8," \
    "\"param_bytes\":24,\"latency_ms\":1},"                                               \
    "{\"name\":\"out\",\"op\":\"output\",\"inputs\":[\"d\"]}]},"                          \
    "\"options\":{\"mode\":\"cost_aware\",\"transfer_bytes_per_sec\":8000},"

static void assert_ms(double got, double want)
{
    assert_true(got > want - 1e-9 && got < want + 1e-9);
}

static void test_merges_as_fx(void **state)
{
    (void)state;
    /* FX merges down to {d} on g0 and {a, b, c} on g1: 5 ms, 1 ms for
     * b and c's outputs (16 bytes: 2 ms), 1 ms: 8 ms */
    planned p = plan_text(GRAPH "\"devices\":[{\"name\":\"g0\",\"memory_bytes\":60},"
                                "{\"name\":\"g1\",\"memory_bytes\":60}]}");
    assert_int_equal(p.rc, PARTD_OK);
    assert_int_equal(p.plan->n_parts, 2);
    expect_part(&p, 0, "d", "g0", 48);
    expect_part(&p, 1, "a b c", "g1", 56);
    assert_ms(p.plan->summary.latency_ms, 8.0);
    planned_free(&p);
}

static void test_shared_devices_cost_nothing(void **state)
{
    (void)state;
    /* nothing merges, but the mapping puts a and b on g1, c and d on g0:
     * a 1, a's output to c 1, c 4, d 1 = 7 ms */
    planned p = plan_text(GRAPH "\"devices\":[{\"name\":\"g0\",\"memory_bytes\":70},"
                                "{\"name\":\"g1\",\"memory_bytes\":50}]}");
    assert_int_equal(p.rc, PARTD_OK);
    assert_int_equal(p.plan->n_parts, 4);
    expect_part(&p, 0, "a", "g1", 40);
    expect_part(&p, 1, "b", "g1", 16);
    expect_part(&p, 2, "c", "g0", 16);
    expect_part(&p, 3, "d", "g0", 48);
    assert_ms(p.plan->summary.latency_ms, 7.0);
    planned_free(&p);
}

static void test_fx_without_devices_is_refused(void **state)
{
    (void)state;
    /* d needs 48 bytes and no device has more than 40: FX returns the four
     * partitions with no device at all; partd says why there is no plan */
    partd_request *req = tu_decode_ok(GRAPH "\"devices\":[{\"name\":\"g0\",\"memory_bytes\":40},"
                                            "{\"name\":\"g1\",\"memory_bytes\":40},"
                                            "{\"name\":\"g2\",\"memory_bytes\":40}]}");
    partd_plan *plan = NULL;
    partd_problem pb;
    partd_problem_init(&pb);
    assert_int_equal(partd_cost_aware(req, NULL, &plan, &pb), PARTD_EINFEASIBLE);
    assert_null(plan);
    tu_assert_error(&pb, "/graph/nodes/4", "needs 48 B");
    partd_problem_free(&pb);
    partd_request_free(req);
}

/* x and a get_attr w read across the graph, skip connections a -> c and
 * a -> f (merging a with c or f closes a cycle through b or e), a branch d
 * beside them: 8-byte outputs at 8000 B/s. */
#define SKIPS                                                                             \
    "{\"graph\":{\"nodes\":["                                                             \
    "{\"name\":\"x\",\"op\":\"placeholder\",\"output_bytes\":8},"                         \
    "{\"name\":\"w\",\"op\":\"get_attr\",\"output_bytes\":16,"                            \
    "\"params\":[{\"name\":\"w.weight\",\"bytes\":16}]},"                                   \
    "{\"name\":\"a\",\"op\":\"call_module\",\"inputs\":[\"x\",\"w\"],\"output_bytes\":8,"  \
    "\"param_bytes\":24,\"latency_ms\":1},"                                               \
    "{\"name\":\"b\",\"op\":\"call_function\",\"inputs\":[\"a\",\"x\"],\"output_bytes\":8,"  \
    "\"latency_ms\":2},"                                                                  \
    "{\"name\":\"c\",\"op\":\"call_function\",\"inputs\":[\"a\",\"b\",\"w\"],"               \
    "\"output_bytes\":8,\"latency_ms\":1},"                                               \
    "{\"name\":\"d\",\"op\":\"call_function\",\"inputs\":[\"x\"],\"output_bytes\":8,"       \
    "\"latency_ms\":3},"                                                                  \
    "{\"name\":\"e\",\"op\":\"call_module\",\"inputs\":[\"c\",\"d\",\"w\"],"                \
    "\"output_bytes\":8,\"param_bytes\":24,\"latency_ms\":1},"                            \
    "{\"name\":\"f\",\"op\":\"call_function\",\"inputs\":[\"e\",\"a\"],\"output_bytes\":8,"  \
    "\"latency_ms\":2},"                                                                  \
    "{\"name\":\"out\",\"op\":\"output\",\"inputs\":[\"f\"]}]},"                          \
    "\"options\":{\"mode\":\"cost_aware\",\"transfer_bytes_per_sec\":8000},"

static void test_skips_and_shared_inputs_as_fx(void **state)
{
    (void)state;
    /* PyTorch 1.13: c, e and f end on g1 (8 ms) */
    planned p = plan_text(SKIPS "\"devices\":[{\"name\":\"g0\",\"memory_bytes\":100},"
                                "{\"name\":\"g1\",\"memory_bytes\":100}]}");
    assert_int_equal(p.rc, PARTD_OK);
    assert_int_equal(p.plan->n_parts, 4);
    expect_part(&p, 0, "a", "g0", 56);
    expect_part(&p, 1, "b", "g0", 24);
    expect_part(&p, 2, "d", "g0", 16);
    expect_part(&p, 3, "c e f", "g1", 96);
    assert_ms(p.plan->summary.latency_ms, 8.0);
    planned_free(&p);
    /* three devices: the one merge joins b and d, which share no edge */
    p = plan_text(SKIPS "\"devices\":[{\"name\":\"g0\",\"memory_bytes\":80},"
                        "{\"name\":\"g1\",\"memory_bytes\":80},"
                        "{\"name\":\"g2\",\"memory_bytes\":80}]}");
    assert_int_equal(p.rc, PARTD_OK);
    assert_int_equal(p.plan->n_parts, 5);
    expect_part(&p, 0, "a", "g0", 56);
    expect_part(&p, 1, "c", "g1", 40);
    expect_part(&p, 2, "e", "g2", 64);
    expect_part(&p, 3, "f", "g0", 24);
    expect_part(&p, 4, "b d", "g1", 32);
    assert_ms(p.plan->summary.latency_ms, 14.0);
    planned_free(&p);
}

static void test_fits_one_device(void **state)
{
    (void)state;
    planned p = plan_text(GRAPH "\"devices\":[{\"name\":\"g0\",\"memory_bytes\":80},"
                                "{\"name\":\"g1\",\"memory_bytes\":90}]}");
    assert_int_equal(p.rc, PARTD_OK);
    assert_int_equal(p.plan->n_parts, 1);
    expect_part(&p, 0, "a b c d", "g1", 88);
    assert_ms(p.plan->summary.latency_ms, 6.0);
    planned_free(&p);
}

/* A generated graph of about 1000 nodes on twice as many devices as take
 * the pass's state past its cap (none holds the graph, so the pass would
 * run): a 422 naming /devices, before anything is allocated for it. */
static void test_state_over_its_cap_is_refused(void **state)
{
    (void)state;
    uint32_t n_dev = (uint32_t)(2 * PARTD_COST_AWARE_MAX_STATE_BYTES /
                                ((uint64_t)1000 * PARTD_COST_AWARE_CELL_BYTES));
    partd_gen_spec spec = {.n_nodes = 1000, .n_devices = n_dev, .memory_slack = 1.5,
                           .mode = "cost_aware", .seed = 1};
    char *json = partd_gen_request(&spec, NULL);
    assert_non_null(json);
    planned p = plan_text(json);
    assert_true(p.req->graph.n_ops > 500);
    assert_int_equal(p.rc, PARTD_ETOOBIG);
    assert_int_equal(p.pb.status, 422);
    assert_string_equal(p.pb.type, "urn:partd:problem:search-limit");
    assert_int_equal(p.pb.n_errors, 1);
    assert_string_equal(p.pb.errors[0].pointer, "/devices");
    planned_free(&p);
    free(json);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_merges_as_fx),
        cmocka_unit_test(test_shared_devices_cost_nothing),
        cmocka_unit_test(test_fx_without_devices_is_refused),
        cmocka_unit_test(test_fits_one_device),
        cmocka_unit_test(test_skips_and_shared_inputs_as_fx),
        cmocka_unit_test(test_state_over_its_cap_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
