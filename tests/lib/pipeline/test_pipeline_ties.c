/*
 * test_pipeline_ties.c - the tie breaks among optimal splits
 * (partd__pipeline_ties_break), on their own.
 *
 * Random chains with skip connections, dyadic latencies (eighths of a ms),
 * speeds 1, 2, 4 and 1000 bytes/s (one ms per byte), so that every stage time
 * and every sum of them is exact in a double and ties are true ties. The
 * windows given to partd__pipeline_ties_break are as wide as possible (every position a
 * stage boundary could take), which the function must accept: it is told
 * every cut lies in them, not that every position in them is usable. The
 * reference enumerates every split, keeps those whose stages all fit memory
 * and cost at most the bound, and takes the smallest sum of stage times,
 * then the earliest cuts. Both the pair enumeration and the sweep
 * (tie_sweep_always) must agree with it.
 */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "partd/partd.h"
#include "pipeline/pipeline_model.h"
#include "pipeline/pipeline_set.h"
#include "pipeline/pipeline_ties.h"

#define MAXOPS 9
#define MAXS 4

static uint64_t rng_state;

static uint32_t rnd(uint32_t n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state % n);
}

/* m operations o0..o(m-1) after a placeholder; each reads the previous one
 * and sometimes an earlier one. Few distinct values, so ties are common. */
static char *random_request(uint32_t m, uint32_t stages, int64_t memory)
{
    size_t cap = 8192;
    char *s = malloc(cap);
    assert_non_null(s);
    size_t n = (size_t)snprintf(s, cap,
                                "{\"graph\":{\"name\":\"g\",\"nodes\":[{\"name\":\"x\","
                                "\"op\":\"placeholder\",\"output_bytes\":%u}",
                                1 + rnd(4));
    for (uint32_t i = 0; i < m; i++) {
        char prev[16], skip[24] = "";
        snprintf(prev, sizeof prev, i ? "o%u" : "x", i - 1);
        if (i >= 2 && rnd(3) == 0)
            snprintf(skip, sizeof skip, ",\"o%u\"", rnd(i - 1));
        n += (size_t)snprintf(s + n, cap - n,
                              ",{\"name\":\"o%u\",\"op\":\"call_module\",\"inputs\":[\"%s\"%s],"
                              "\"output_bytes\":%u,\"param_bytes\":%u,\"latency_ms\":%g}",
                              i, prev, skip, 1 + rnd(3), rnd(3) * 8, (1 + rnd(4)) / 8.0);
    }
    n += (size_t)snprintf(s + n, cap - n,
                          ",{\"name\":\"output\",\"op\":\"output\",\"inputs\":[\"o%u\"]}]},"
                          "\"devices\":[",
                          m - 1);
    for (uint32_t d = 0; d < stages; d++)
        n += (size_t)snprintf(s + n, cap - n,
                              "%s{\"name\":\"d%u\",\"memory_bytes\":%lld,\"speed\":%u}",
                              d ? "," : "", d, (long long)memory, 1u << rnd(3));
    snprintf(s + n, cap - n,
             "],\"options\":{\"transfer_bytes_per_sec\":1000,\"pipeline\":{\"stages\":%u}}}",
             stages);
    return s;
}

typedef struct best {
    int found;
    double sum;
    int32_t cuts[MAXS + 1];
} best;

typedef struct ref {
    const partd_pipeline_model *md;
    double bound;
    int32_t cuts[MAXS + 1];
    best b;
    double opt_bottleneck; /* min over memory-feasible splits of max cost */
} ref;

static void stage_of(const partd_pipeline_model *md, uint32_t s, int32_t a, int32_t e, partd_pipeline_stage *ev)
{
    partd_pipeline_window w = {0, 0, 0, 0};
    partd_pipeline_window_move(md, &w, a, e);
    partd_pipeline_stage_eval(md, s, &w, ev);
}

static void enumerate(ref *r, uint32_t s, int32_t a)
{
    const partd_pipeline_model *md = r->md;
    uint32_t S = md->stages;
    if (s == S) {
        double sum = 0, worst = 0;
        int fits = 1, within = 1;
        for (uint32_t k = 0; k < S; k++) {
            partd_pipeline_stage ev = {0};
            stage_of(md, k, r->cuts[k], r->cuts[k + 1], &ev);
            sum += ev.time_ms;
            fits &= ev.mem_ok;
            within &= ev.cost <= r->bound;
            if (ev.cost > worst)
                worst = ev.cost;
        }
        if (fits && worst < r->opt_bottleneck)
            r->opt_bottleneck = worst;
        /* Lexicographic enumeration: the first of equal sums has the
         * earliest cuts. */
        if (fits && within && (!r->b.found || sum < r->b.sum)) {
            r->b.found = 1;
            r->b.sum = sum;
            memcpy(r->b.cuts, r->cuts, sizeof r->cuts);
        }
        return;
    }
    int32_t last = s + 1 == S ? (int32_t)md->m : (int32_t)(md->m - (S - 1 - s));
    for (int32_t e = s + 1 == S ? last : a + 1; e <= last; e++) {
        r->cuts[s + 1] = e;
        enumerate(r, s + 1, e);
    }
}

/* W[0] = {0}, W[S] = {m}, W[s] = every position stage s could start at. */
static void wide_windows(const partd_pipeline_model *md, partd_pipeline_set *W)
{
    uint32_t S = md->stages;
    memset(W, 0, (S + 1) * sizeof *W);
    assert_int_equal(set_add(&W[0], 0), PARTD_OK);
    for (uint32_t s = 1; s < S; s++)
        assert_int_equal(set_add_range(&W[s], (int32_t)s, (int32_t)(md->m - (S - s))), PARTD_OK);
    assert_int_equal(set_add(&W[S], (int32_t)md->m), PARTD_OK);
}

static void free_windows(partd_pipeline_set *W, uint32_t S)
{
    for (uint32_t s = 0; s <= S; s++)
        free(W[s].run);
}

static void check_bound(partd_pipeline_model *md, double bound)
{
    ref r = {.md = md, .bound = bound, .opt_bottleneck = INFINITY};
    enumerate(&r, 0, 0);
    assert_true(r.b.found);
    partd_pipeline_set W[MAXS + 1];
    wide_windows(md, W);
    for (int sweep = 0; sweep < 2; sweep++) {
        md->tie_sweep_always = sweep;
        int32_t cuts[MAXS + 1] = {0};
        assert_int_equal(partd__pipeline_ties_break(md, NULL, W, bound, cuts), PARTD_OK);
        for (uint32_t s = 0; s <= md->stages; s++)
            assert_int_equal(cuts[s], r.b.cuts[s]);
    }
    free_windows(W, md->stages);
}

static void with_model(uint64_t seed, void (*check)(partd_pipeline_model *md))
{
    rng_state = seed * 0x9E3779B97F4A7C15ull + 7;
    uint32_t S = 2 + rnd(MAXS - 1);
    uint32_t m = S + rnd(MAXOPS - S + 1);
    char *json = random_request(m, S, 1000000);
    partd_request *req = tu_decode_ok(json);
    free(json);
    partd_problem pb;
    partd_problem_init(&pb);
    partd_pipeline_model md;
    assert_int_equal(partd_pipeline_model_build(&md, req, NULL, 0, &pb), PARTD_OK);
    assert_int_equal(md.stages, S);
    assert_int_equal(md.m, m);
    check(&md);
    partd_pipeline_model_free(&md);
    partd_problem_free(&pb);
    partd_request_free(req);
}

/* No bound: the smallest sum of stage times over every split. */
static void unbounded(partd_pipeline_model *md)
{
    check_bound(md, INFINITY);
}

/* The optimal bottleneck as the bound: only the optimal splits compete. */
static void at_optimum(partd_pipeline_model *md)
{
    ref r = {.md = md, .bound = INFINITY, .opt_bottleneck = INFINITY};
    enumerate(&r, 0, 0);
    check_bound(md, r.opt_bottleneck);
}

static void test_unbounded_matches_reference(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 300; seed++)
        with_model(seed, unbounded);
}

static void test_optimal_bound_matches_reference(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 300; seed++)
        with_model(seed, at_optimum);
}

/* Equal stages everywhere: every split ties on the sum, so the earliest
 * cuts win: 1, 2, ..., S-1. */
static void test_full_tie_takes_earliest_cuts(void **state)
{
    (void)state;
    const char *json =
        "{\"graph\":{\"name\":\"g\",\"nodes\":["
        "{\"name\":\"x\",\"op\":\"placeholder\",\"output_bytes\":0},"
        "{\"name\":\"a\",\"op\":\"call_module\",\"inputs\":[\"x\"],\"output_bytes\":0,"
        "\"latency_ms\":1},"
        "{\"name\":\"b\",\"op\":\"call_module\",\"inputs\":[\"a\"],\"output_bytes\":0,"
        "\"latency_ms\":1},"
        "{\"name\":\"c\",\"op\":\"call_module\",\"inputs\":[\"b\"],\"output_bytes\":0,"
        "\"latency_ms\":1},"
        "{\"name\":\"d\",\"op\":\"call_module\",\"inputs\":[\"c\"],\"output_bytes\":0,"
        "\"latency_ms\":1}]},"
        "\"devices\":[{\"name\":\"g0\",\"memory_bytes\":100},"
        "{\"name\":\"g1\",\"memory_bytes\":100},{\"name\":\"g2\",\"memory_bytes\":100}]}";
    partd_request *req = tu_decode_ok(json);
    partd_problem pb;
    partd_problem_init(&pb);
    partd_pipeline_model md;
    assert_int_equal(partd_pipeline_model_build(&md, req, NULL, 0, &pb), PARTD_OK);
    partd_pipeline_set W[4];
    wide_windows(&md, W);
    for (int sweep = 0; sweep < 2; sweep++) {
        md.tie_sweep_always = sweep;
        int32_t cuts[4];
        assert_int_equal(partd__pipeline_ties_break(&md, NULL, W, INFINITY, cuts), PARTD_OK);
        assert_int_equal(cuts[0], 0);
        assert_int_equal(cuts[1], 1);
        assert_int_equal(cuts[2], 2);
        assert_int_equal(cuts[3], 4);
        /* Bound 2 ms: the only splits are those with no stage over 2. */
        assert_int_equal(partd__pipeline_ties_break(&md, NULL, W, 2.0, cuts), PARTD_OK);
        assert_int_equal(cuts[1], 1);
        assert_int_equal(cuts[2], 2);
    }
    /* A bound no split meets: the windows admit no split. */
    for (int sweep = 0; sweep < 2; sweep++) {
        md.tie_sweep_always = sweep;
        int32_t cuts[4];
        assert_int_equal(partd__pipeline_ties_break(&md, NULL, W, 0.5, cuts), PARTD_EINTERNAL);
    }
    free_windows(W, 3);
    partd_pipeline_model_free(&md);
    partd_problem_free(&pb);
    partd_request_free(req);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unbounded_matches_reference),
        cmocka_unit_test(test_optimal_bound_matches_reference),
        cmocka_unit_test(test_full_tie_takes_earliest_cuts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
