/*
 * test_kl_based.c - FX's kl_based mode on small graphs whose answers were
 * checked against PyTorch 1.13's Partitioner: one where its swaps move
 * nodes away from size_based's partitions, one where FX hands back
 * partitions without devices (partd plans validly instead), and the graph
 * that fits one device. tests/python/test_fx_modes_random.py compares with
 * PyTorch itself on random graphs.
 */
#include "fx_test.h"

#include "fx/kl_based.h"

#include <stdio.h>
#include <stdlib.h>

static void assert_ms(double got, double want)
{
    assert_true(got > want - 1e-9 && got < want + 1e-9);
}

/* size_based gives [op0 op1 op2 op3] on d0 and [op4] on d1; FX's swaps
 * leave op1 with op4: 14 ms */
static const char SWAPS[] =
    "{\"graph\":{\"nodes\":[{\"name\":\"x0\",\"op\":\"placeholder\",\"output_bytes\":4},{\"name\":\"x1\",\"op\":\""
    "placeholder\",\"output_bytes\":0},{\"name\":\"w0\",\"op\":\"get_attr\",\"output_bytes\":8,\"params\":[{"
    "\"name\":\"w0.weight\",\"bytes\":8}]},{\"name\":\"op0\",\"op\":\"call_method\",\"inputs\":[\"x0\",\"x1\"],\"o"
    "utput_bytes\":16,\"latency_ms\":1,\"mem_latency_ms\":1},{\"name\":\"op1\",\"op\":\"call_method\",\"inp"
    "uts\":[\"x0\",\"x1\",\"w0\"],\"output_bytes\":24,\"latency_ms\":7},{\"name\":\"op2\",\"op\":\"call_method\""
    ",\"inputs\":[\"w0\",\"op0\",\"x1\"],\"output_bytes\":24,\"latency_ms\":2},{\"name\":\"op3\",\"op\":\"call_m"
    "ethod\",\"inputs\":[\"w0\",\"x1\"],\"output_bytes\":0,\"latency_ms\":0.5},{\"name\":\"op4\",\"op\":\"call_"
    "function\",\"inputs\":[\"op1\",\"w0\"],\"output_bytes\":24,\"latency_ms\":7},{\"name\":\"out\",\"op\":\"ou"
    "tput\",\"inputs\":[\"op4\"]}]},\"devices\":[{\"name\":\"d0\",\"memory_bytes\":95},{\"name\":\"d1\",\"memor"
    "y_bytes\":65},{\"name\":\"d2\",\"memory_bytes\":65}],\"options\":{\"mode\":\"kl_based\",\"transfer_byt"
    "es_per_sec\":64.0}"
    "}";

static void test_swaps_as_fx(void **state)
{
    (void)state;
    planned p = plan_text(SWAPS);
    assert_int_equal(p.rc, PARTD_OK);
    assert_int_equal(p.plan->mode, PARTD_MODE_KL_BASED);
    assert_int_equal(p.plan->n_parts, 2);
    expect_part(&p, 0, "op0 op2 op3", "d1", 52);
    expect_part(&p, 1, "op1 op4", "d2", 60);
    assert_ms(p.plan->summary.latency_ms, 14.0);
    planned_free(&p);
}

/* FX's swaps end with both partitions without a device (its fresh mapping
 * wants strictly more memory than a partition needs); partd returns
 * size_based's plan, which fits: op0 on d1 exactly */
static const char BROKEN[] =
    "{\"graph\":{\"nodes\":[{\"name\":\"x0\",\"op\":\"placeholder\",\"output_bytes\":4},{\"name\":\"x1\",\"op\":\""
    "placeholder\",\"output_bytes\":16},{\"name\":\"w0\",\"op\":\"get_attr\",\"output_bytes\":8,\"params\":["
    "{\"name\":\"w0.weight\",\"bytes\":8}]},{\"name\":\"op0\",\"op\":\"call_method\",\"inputs\":[\"x1\"],\"outpu"
    "t_bytes\":16,\"latency_ms\":3.25},{\"name\":\"op1\",\"op\":\"call_function\",\"inputs\":[\"x0\",\"w0\"],\""
    "output_bytes\":4,\"latency_ms\":1},{\"name\":\"out\",\"op\":\"output\",\"inputs\":[\"op1\"]}]},\"devices"
    "\":[{\"name\":\"d0\",\"memory_bytes\":18},{\"name\":\"d1\",\"memory_bytes\":32},{\"name\":\"d2\",\"memory_"
    "bytes\":25}],\"options\":{\"mode\":\"kl_based\",\"transfer_bytes_per_sec\":10000000000.0}"
    "}";

static void test_broken_answer_planned_validly(void **state)
{
    (void)state;
    planned p = plan_text(BROKEN);
    assert_int_equal(p.rc, PARTD_OK);
    assert_int_equal(p.plan->n_parts, 2);
    expect_part(&p, 0, "op0", "d1", 32);
    expect_part(&p, 1, "op1", "d0", 16);
    assert_ms(p.plan->summary.latency_ms, 3.25);
    planned_free(&p);
}

static void test_whole_graph_on_one_device(void **state)
{
    (void)state;
    /* the graph (120 bytes) fits d1: one partition, no swaps */
    planned p = plan_text(
        "{\"graph\":{\"nodes\":[{\"name\":\"x\",\"op\":\"placeholder\",\"output_bytes\":8},"
        "{\"name\":\"a\",\"op\":\"call_module\",\"inputs\":[\"x\"],\"output_bytes\":8,"
        "\"param_bytes\":96,\"latency_ms\":1},"
        "{\"name\":\"b\",\"op\":\"call_function\",\"inputs\":[\"a\"],\"output_bytes\":8,\"latency_ms\":2},"
        "{\"name\":\"out\",\"op\":\"output\",\"inputs\":[\"b\"]}]},"
        "\"options\":{\"mode\":\"kl_based\"},"
        "\"devices\":[{\"name\":\"d0\",\"memory_bytes\":100},{\"name\":\"d1\",\"memory_bytes\":200}]}");
    assert_int_equal(p.rc, PARTD_OK);
    assert_int_equal(p.plan->n_parts, 1);
    expect_part(&p, 0, "a b", "d1", 120);
    assert_ms(p.plan->summary.latency_ms, 3.0);
    planned_free(&p);
}

static void test_too_little_memory(void **state)
{
    (void)state;
    planned p = plan_text(
        "{\"graph\":{\"nodes\":[{\"name\":\"x\",\"op\":\"placeholder\",\"output_bytes\":8},"
        "{\"name\":\"a\",\"op\":\"call_module\",\"inputs\":[\"x\"],\"output_bytes\":8,"
        "\"param_bytes\":96},{\"name\":\"out\",\"op\":\"output\",\"inputs\":[\"a\"]}]},"
        "\"options\":{\"mode\":\"kl_based\"},"
        "\"devices\":[{\"name\":\"d0\",\"memory_bytes\":50},{\"name\":\"d1\",\"memory_bytes\":50}]}");
    assert_int_equal(p.rc, PARTD_EINFEASIBLE);
    assert_int_equal(p.pb.status, 422);
    planned_free(&p);
}

/* the same numbers on every platform */
static int draw(unsigned *seed)
{
    *seed = *seed * 1103515245u + 12345u;
    return (int)((*seed >> 16) & 0x7fff);
}

/* A random layered graph: two placeholders and two get_attrs read here
 * and there, each operation reading one to three of the last six nodes,
 * on 2 to 4 devices of a third of the graph or so (size_based gives 2 to
 * 5 partitions, and the pass swaps, leaves nodes in two partitions and
 * cycles). */
static char *random_graph(unsigned *seed, int n_ops)
{
    size_t cap = 256 + (size_t)n_ops * 200, at = 0;
    char *s = malloc(cap);
    assert_non_null(s);
    int64_t total = 0;
    at += (size_t)snprintf(s + at, cap - at,
                           "{\"graph\":{\"nodes\":[{\"name\":\"x0\",\"op\":\"placeholder\","
                           "\"output_bytes\":16},{\"name\":\"x1\",\"op\":\"placeholder\","
                           "\"output_bytes\":8},{\"name\":\"w0\",\"op\":\"get_attr\","
                           "\"output_bytes\":32},{\"name\":\"w1\",\"op\":\"get_attr\","
                           "\"output_bytes\":24}");
    total += 80;
    static const char *consts[] = {"x0", "x1", "w0", "w1"};
    for (int i = 0; i < n_ops; i++) {
        int out = 8 * (1 + draw(seed) % 4), par = draw(seed) % 3 ? 0 : 16 * (1 + draw(seed) % 3);
        total += out + par;
        at += (size_t)snprintf(s + at, cap - at,
                               ",{\"name\":\"op%d\",\"op\":\"%s\",\"output_bytes\":%d,"
                               "\"param_bytes\":%d,\"latency_ms\":%g,\"inputs\":[",
                               i, par ? "call_module" : "call_function", out, par,
                               0.25 * (1 + draw(seed) % 8));
        int n_in = 1 + draw(seed) % 3, n_put = 0;
        char put[3][16];
        for (int j = 0; j < n_in; j++) {
            int src = i - 1 - draw(seed) % 6;
            char name[16];
            if (src < 0 || draw(seed) % 8 == 0)
                snprintf(name, sizeof name, "%s", consts[draw(seed) % 4]);
            else
                snprintf(name, sizeof name, "op%d", src);
            int dup = 0;
            for (int q = 0; q < n_put; q++)
                dup |= strcmp(put[q], name) == 0;
            if (dup)
                continue;
            memcpy(put[n_put], name, sizeof name);
            at += (size_t)snprintf(s + at, cap - at, "%s\"%s\"", n_put++ ? "," : "", name);
        }
        at += (size_t)snprintf(s + at, cap - at, "]}");
    }
    int n_dev = 2 + draw(seed) % 3;
    at += (size_t)snprintf(s + at, cap - at,
                           ",{\"name\":\"out\",\"op\":\"output\",\"inputs\":[\"op%d\"]}]},"
                           "\"devices\":[",
                           n_ops - 1);
    for (int d = 0; d < n_dev; d++)
        at += (size_t)snprintf(s + at, cap - at, "%s{\"name\":\"d%d\",\"memory_bytes\":%lld}",
                               d ? "," : "", d,
                               (long long)(total * (30 + draw(seed) % 25) / 100));
    snprintf(s + at, cap - at,
             "],\"options\":{\"mode\":\"kl_based\",\"transfer_bytes_per_sec\":%d}}",
             1000 * (1 + draw(seed) % 50));
    return s;
}

/* The incremental figures are the full recomputation's to the bit on
 * every try, and the answers the same. */
static void test_incremental_as_full(void **state)
{
    (void)state;
    unsigned seed = 27;
    for (int round = 0; round < 60; round++) {
        char *json = random_graph(&seed, 12 + round % 30);
        partd_request *req = tu_decode_ok(json);
        partd_plan *a = NULL, *b = NULL;
        partd_problem pa, pb;
        partd_problem_init(&pa);
        partd_problem_init(&pb);
        int ra = partd_kl_based(req, NULL, &a, &pa);
        int rb = partd_kl_based_checked(req, NULL, &b, &pb);
        assert_int_equal(rb, ra);
        if (ra == PARTD_OK) {
            assert_int_equal(a->n_parts, b->n_parts);
            for (uint32_t p = 0; p < a->n_parts; p++) {
                assert_int_equal(a->parts[p].n_nodes, b->parts[p].n_nodes);
                assert_memory_equal(a->parts[p].nodes, b->parts[p].nodes,
                                    a->parts[p].n_nodes * sizeof *a->parts[p].nodes);
            }
            assert_memory_equal(&a->summary.latency_ms, &b->summary.latency_ms,
                                sizeof a->summary.latency_ms);
        }
        partd_plan_free(a);
        partd_plan_free(b);
        partd_problem_free(&pa);
        partd_problem_free(&pb);
        partd_request_free(req);
        free(json);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_swaps_as_fx),
        cmocka_unit_test(test_broken_answer_planned_validly),
        cmocka_unit_test(test_whole_graph_on_one_device),
        cmocka_unit_test(test_too_little_memory),
        cmocka_unit_test(test_incremental_as_full),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
