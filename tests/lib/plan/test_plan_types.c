/* test_plan_types.c - what every planner shares: allocation, linking
 * partitions (inputs, outputs, parents, children, tied parameters) and the
 * contract's time figures. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "partd/partd.h"
#include "partd/plan_types.h"

/* Planning order = request order:
 *   0 x placeholder (8 B)      1 w get_attr param "emb" (32 B)
 *   2 a call_module(x, w)      3 b call_module(a), param "emb"
 *   4 c call_function(a, b)    5 d call_function(c, x)   6 output(d)
 * Partitions: {a} {b} {c, d}. */
static const char *const request =
    "{\"graph\":{\"name\":\"m\",\"nodes\":["
    "{\"name\":\"x\",\"op\":\"placeholder\",\"output_bytes\":8},"
    "{\"name\":\"w\",\"op\":\"get_attr\",\"output_bytes\":32,"
    "\"params\":[{\"name\":\"emb\",\"bytes\":32}]},"
    "{\"name\":\"a\",\"op\":\"call_module\",\"inputs\":[\"x\",\"w\"],\"output_bytes\":4,"
    "\"latency_ms\":1,\"mem_latency_ms\":3},"
    "{\"name\":\"b\",\"op\":\"call_module\",\"inputs\":[\"a\"],\"output_bytes\":2,"
    "\"latency_ms\":2,\"params\":[{\"name\":\"emb\",\"bytes\":32}]},"
    "{\"name\":\"c\",\"op\":\"call_function\",\"inputs\":[\"a\",\"b\"],\"output_bytes\":6,"
    "\"latency_ms\":4},"
    "{\"name\":\"d\",\"op\":\"call_function\",\"inputs\":[\"c\",\"x\"],\"output_bytes\":1,"
    "\"latency_ms\":8},"
    "{\"name\":\"output\",\"op\":\"output\",\"inputs\":[\"d\"]}]},"
    "\"devices\":[{\"name\":\"g0\",\"memory_bytes\":1000},"
    "{\"name\":\"g1\",\"memory_bytes\":1000,\"speed\":2},"
    "{\"name\":\"g2\",\"memory_bytes\":1000,\"speed\":4}],"
    "\"options\":{\"transfer_bytes_per_sec\":1000,\"pipeline\":{\"microbatches\":3}}}";

static const uint32_t node_part[7] = {PARTD_NONE, PARTD_NONE, 0, 1, 2, 2, PARTD_NONE};

static void set_nodes(partd_part *p, uint32_t n, const uint32_t *nodes, uint32_t device)
{
    p->n_nodes = n;
    p->nodes = malloc(n * sizeof *p->nodes);
    assert_non_null(p->nodes);
    memcpy(p->nodes, nodes, n * sizeof *p->nodes);
    p->n_devices = 1;
    p->devices = malloc(sizeof *p->devices);
    assert_non_null(p->devices);
    p->devices[0] = device;
}

static partd_plan *three_parts(partd_mode mode)
{
    partd_plan *plan = partd_plan_alloc(mode, 3);
    assert_non_null(plan);
    assert_int_equal(plan->mode, mode);
    assert_int_equal(plan->n_parts, 3);
    assert_null(plan->tied);
    assert_null(plan->sac);
    set_nodes(&plan->parts[0], 1, (uint32_t[]){2}, 0);
    set_nodes(&plan->parts[1], 1, (uint32_t[]){3}, 1);
    set_nodes(&plan->parts[2], 2, (uint32_t[]){4, 5}, 2);
    plan->parts[0].memory_bytes = 50;
    plan->parts[1].memory_bytes = 70;
    plan->parts[2].memory_bytes = 60;
    return plan;
}

static void assert_list(const uint32_t *got, uint32_t n, const uint32_t *want, uint32_t n_want)
{
    assert_int_equal(n, n_want);
    for (uint32_t i = 0; i < n; i++)
        assert_int_equal(got[i], want[i]);
}

static void test_link(void **state)
{
    (void)state;
    partd_request *req = tu_decode_ok(request);
    partd_plan *plan = three_parts(PARTD_MODE_PIPELINE);
    assert_int_equal(partd_plan_link(req, node_part, plan), PARTD_OK);
    const partd_part *p = plan->parts;
    /* {a}: reads x and w (outside any partition), read by b and c. */
    assert_list(p[0].inputs, p[0].n_inputs, (uint32_t[]){0, 1}, 2);
    assert_list(p[0].outputs, p[0].n_outputs, (uint32_t[]){2}, 1);
    assert_int_equal(p[0].n_parents, 0);
    assert_list(p[0].children, p[0].n_children, (uint32_t[]){1, 2}, 2);
    /* {b}: reads a. */
    assert_list(p[1].inputs, p[1].n_inputs, (uint32_t[]){2}, 1);
    assert_list(p[1].outputs, p[1].n_outputs, (uint32_t[]){3}, 1);
    assert_list(p[1].parents, p[1].n_parents, (uint32_t[]){0}, 1);
    assert_list(p[1].children, p[1].n_children, (uint32_t[]){2}, 1);
    /* {c, d}: reads a, b, x (ascending, each once); d is read by output. */
    assert_list(p[2].inputs, p[2].n_inputs, (uint32_t[]){0, 2, 3}, 3);
    assert_list(p[2].outputs, p[2].n_outputs, (uint32_t[]){5}, 1);
    assert_list(p[2].parents, p[2].n_parents, (uint32_t[]){0, 1}, 2);
    assert_int_equal(p[2].n_children, 0);
    /* "emb" is used by {a} through the get_attr node it reads, and by {b}
     * directly. */
    assert_int_equal(plan->n_tied, 1);
    assert_string_equal(partd_str(&req->strings, req->graph.param_name[plan->tied[0].param]),
                        "emb");
    assert_list(plan->tied[0].parts, plan->tied[0].n_parts, (uint32_t[]){0, 1}, 2);
    partd_plan_free(plan);
    partd_request_free(req);
}

static void test_link_keeps_planner_ties(void **state)
{
    (void)state;
    partd_request *req = tu_decode_ok(request);
    partd_plan *plan = three_parts(PARTD_MODE_PIPELINE);
    plan->tied = calloc(1, sizeof *plan->tied);
    assert_non_null(plan->tied);
    plan->n_tied = 0; /* the planner decided: none */
    assert_int_equal(partd_plan_link(req, node_part, plan), PARTD_OK);
    assert_int_equal(plan->n_tied, 0);
    partd_plan_free(plan);
    partd_request_free(req);
}

static void test_fill_times(void **state)
{
    (void)state;
    partd_request *req = tu_decode_ok(request);
    partd_plan *plan = three_parts(PARTD_MODE_PIPELINE);
    assert_int_equal(partd_plan_link(req, node_part, plan), PARTD_OK);
    partd_plan_fill_times(req, plan);
    const partd_part *p = plan->parts;
    /* {a} on speed 1: max(1, 3) = 3 ms; receives x (8 B), not the get_attr
     * w; 8 B at 1000 B/s = 8 ms. */
    assert_true(p[0].compute_ms == 3.0);
    assert_int_equal(p[0].transfer_in_bytes, 8);
    assert_true(p[0].time_ms == 11.0);
    /* {b} on speed 2: 2 / 2 = 1 ms; receives a (4 B) = 4 ms. */
    assert_true(p[1].compute_ms == 1.0);
    assert_int_equal(p[1].transfer_in_bytes, 4);
    assert_true(p[1].time_ms == 5.0);
    /* {c, d} on speed 4: (4 + 8) / 4 = 3 ms; receives x, a, b = 14 B. */
    assert_true(p[2].compute_ms == 3.0);
    assert_int_equal(p[2].transfer_in_bytes, 14);
    assert_true(p[2].time_ms == 17.0);
    const partd_summary *s = &plan->summary;
    assert_true(s->bottleneck_ms == 17.0);
    /* pipeline: sum + (microbatches - 1) * bottleneck = 33 + 2 * 17 */
    assert_true(s->total_ms == 67.0);
    assert_int_equal(s->transfer_bytes, 26);
    assert_int_equal(s->peak_memory_bytes, 70);
    partd_plan_free(plan);

    /* Other modes ignore microbatches. */
    plan = three_parts(PARTD_MODE_SIZE_BASED);
    assert_int_equal(partd_plan_link(req, node_part, plan), PARTD_OK);
    partd_plan_fill_times(req, plan);
    assert_true(plan->summary.total_ms == 33.0);
    partd_plan_free(plan);
    partd_request_free(req);
}

static void test_alloc_and_free(void **state)
{
    (void)state;
    partd_plan_free(NULL);
    partd_plan *plan = partd_plan_alloc(PARTD_MODE_SIZE_BASED, 0);
    assert_non_null(plan);
    assert_non_null(plan->parts); /* never NULL, even for no partitions */
    assert_int_equal(plan->n_parts, 0);
    partd_plan_free(plan);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_link),
        cmocka_unit_test(test_link_keeps_planner_ties),
        cmocka_unit_test(test_fill_times),
        cmocka_unit_test(test_alloc_and_free),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
