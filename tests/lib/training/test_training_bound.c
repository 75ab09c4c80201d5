/*
 * test_training_bound.c - the lower bounds (lib/training/training_bound.c).
 *
 * For every schedule on small stacks of uneven units, two and three ranks
 * of mixed speeds: the bound is at most the step of every split of the
 * configuration (all of them timed), at least the fluid bound, and, for
 * 1F1B on a stack of 12 units (whose bubbles the relaxation sees best),
 * within 3 % of the best split.
 *
 * The bound of a whole (schedule, v, S) over every device order at once,
 * on small random stacks (units of few kinds, so that the stages' least
 * content counts): at most the least step of every order and every split
 * (all timed), and, for some, past the fluid bound.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include <cmocka.h>

#include "partd/decode.h"
#include "partd/partd.h"
#include "testutil.h"
#include "training/training_search.h"

static char text[16384];

/* n units of one node each, latencies lat[u] ms (NULL: 1..4 by a rule),
 * on devices of the speeds. */
static partd_request *stack_of(uint32_t n, const double *speed, uint32_t S, uint32_t M,
                               const uint32_t *lat)
{
    size_t len = (size_t)snprintf(text, sizeof text,
                                  "{\"graph\":{\"nodes\":[{\"name\":\"x\",\"op\":\"placeholder\","
                                  "\"output_bytes\":64}");
    for (uint32_t u = 0; u < n; u++) {
        char in[16] = "x";
        if (u)
            snprintf(in, sizeof in, "n%u", u - 1);
        len += (size_t)snprintf(text + len, sizeof text - len,
                                ",{\"name\":\"n%u\",\"op\":\"call_module\",\"module\":\"l.%u\","
                                "\"inputs\":[\"%s\"],\"output_bytes\":64,\"latency_ms\":%u,"
                                "\"param_bytes\":%u}",
                                u, u, in, lat ? lat[u] : 1 + (u * 7) % 4, u % 3);
    }
    len += (size_t)snprintf(text + len, sizeof text - len, "]},\"devices\":[");
    for (uint32_t r = 0; r < S; r++)
        len += (size_t)snprintf(text + len, sizeof text - len,
                                "%s{\"name\":\"d%u\",\"memory_bytes\":1000000000,\"speed\":%g}",
                                r ? "," : "", r, speed[r]);
    snprintf(text + len, sizeof text - len,
             "],\"options\":{\"mode\":\"training\",\"transfer_bytes_per_sec\":1e6,"
             "\"training\":{\"schedule\":\"auto\",\"microbatches\":%u,\"unit_depth\":2,"
             "\"checkpoint\":\"never\"}}}",
             M);
    return tu_decode_ok(text);
}

static partd_request *stack(uint32_t n, const double *speed, uint32_t S, uint32_t M)
{
    return stack_of(n, speed, S, M, NULL);
}

/* The least step over every split of c (cuts in lexicographic order). */
static double best_split(const partd_training_model *md, partd_training_cfg *c)
{
    partd_training_plan p;
    assert_int_equal(partd__training_plan_alloc(&p, c->S, c->V), PARTD_OK);
    uint32_t V = c->V, n = md->n_units;
    for (uint32_t j = 0; j <= V; j++)
        p.cut[j] = j < V ? j : n;
    double best = INFINITY;
    for (;;) {
        partd__training_eval_stages(md, c, p.cut);
        assert_int_equal(partd__training_eval_choose(md, c, &p), PARTD_OK);
        best = p.step < best ? p.step : best;
        uint32_t j = V - 1;
        while (j >= 1 && p.cut[j] + 1 > n - (V - j))
            j--;
        if (j < 1)
            break;
        p.cut[j]++;
        for (uint32_t i = j + 1; i < V; i++)
            p.cut[i] = p.cut[i - 1] + 1;
    }
    partd__training_plan_free(&p);
    return best;
}

static void check(uint32_t n, const double *speed, uint32_t S, uint32_t M, double within)
{
    partd_request *req = stack(n, speed, S, M);
    partd_problem pb;
    partd_problem_init(&pb);
    partd_training_model md;
    assert_int_equal(partd__training_model_build(&md, req, &pb), PARTD_OK);
    uint32_t dev[8];
    for (uint32_t r = 0; r < S; r++)
        dev[r] = r;
    for (int s = 0; s < PARTD_TRAINING_SCHEDULE_COUNT; s++)
        for (uint32_t v = 1; v <= 2; v++) {
            if (partd_training_schedule_v(s, v) != v || !partd_training_schedule_allows(s, S, v, M) ||
                S * v > n)
                continue;
            partd_training_cfg c;
            assert_int_equal(partd__training_cfg_build(&c, &md, s, S, v, dev), PARTD_OK);
            double best = best_split(&md, &c);
            uint32_t *cut = malloc((c.V + 1) * sizeof *cut);
            for (uint32_t j = 0; j <= c.V; j++)
                cut[j] = j * n / c.V;
            uint64_t work = 0;
            double lb = partd__training_bound(&md, &c, cut, 100, INFINITY, &work);
            double fluid = partd__training_fluid(&md, dev, S);
            if (!(lb <= best * (1 + 1e-9)) || lb < fluid)
                fail_msg("%s v=%u: bound %g, best %g, fluid %g", partd_training_schedule_name(s),
                         v, lb, best, fluid);
            if (within > 0 && s == PARTD_TRAINING_1F1B && lb < best * (1 - within))
                fail_msg("%s: bound %g more than %g below the best split %g",
                         partd_training_schedule_name(s), lb, within, best);
            assert_true(work > 0);
            free(cut);
            partd__training_cfg_free(&c);
        }
    partd__training_model_free(&md);
    partd_problem_free(&pb);
    partd_request_free(req);
}

static void test_bounds_hold_and_are_close(void **state)
{
    (void)state;
    static const double two[] = {1.0, 2.0}, three[] = {2.0, 1.0, 1.0};
    check(6, two, 2, 4, 0);
    check(7, three, 3, 6, 0);
    check(12, two, 2, 8, 0.03);
    check(12, three, 3, 6, 0.03);
}

/* Every sequence of S distinct devices of n (n <= 4), into devs (room for
 * 24 x S): their count. */
static uint32_t orders(uint32_t n, uint32_t S, uint32_t *devs)
{
    uint32_t count = 0;
    for (uint32_t code = 0; code < 256; code++) {
        uint32_t seq[4], used = 0, ok = 1;
        for (uint32_t r = 0; r < S && ok; r++) {
            seq[r] = (code >> (2 * r)) & 3;
            ok = seq[r] < n && !(used >> seq[r] & 1);
            used |= 1u << seq[r];
        }
        if (ok && (code >> (2 * S)) == 0) {
            memcpy(devs + (size_t)count * S, seq, S * sizeof *seq);
            count++;
        }
    }
    return count;
}

static void test_class_bounds_hold(void **state)
{
    (void)state;
    static const double speeds[] = {2.0, 1.0, 1.0};
    uint64_t rng = 12345;
    uint32_t above = 0, checked = 0;
    for (int round = 0; round < 6; round++) {
        uint32_t n = 6 + (uint32_t)round % 3, M = 4 + 2 * ((uint32_t)round % 2), lat[8];
        for (uint32_t u = 0; u < n; u++) {
            rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
            lat[u] = 1 + (uint32_t)(rng >> 60) % 3; /* few kinds: equal units repeat */
        }
        partd_request *req = stack_of(n, speeds, 3, M, lat);
        partd_problem pb;
        partd_problem_init(&pb);
        partd_training_model md;
        assert_int_equal(partd__training_model_build(&md, req, &pb), PARTD_OK);
        for (uint32_t S = 2; S <= 3; S++)
            for (int s = 0; s < PARTD_TRAINING_SCHEDULE_COUNT; s++)
                for (uint32_t v = 1; v <= 2; v++) {
                    if (partd_training_schedule_v(s, v) != v ||
                        !partd_training_schedule_allows(s, S, v, M) || S * v > n)
                        continue;
                    uint32_t devs[24 * 3], k = orders(3, S, devs);
                    /* the least step of every order and split, and the least fluid bound */
                    double best = INFINITY, fluid = INFINITY;
                    for (uint32_t o = 0; o < k; o++) {
                        partd_training_cfg c;
                        assert_int_equal(partd__training_cfg_build(&c, &md, s, S, v, devs + o * S),
                                         PARTD_OK);
                        double b = best_split(&md, &c), f = partd__training_fluid(&md, devs + o * S, S);
                        best = b < best ? b : best;
                        fluid = f < fluid ? f : fluid;
                        partd__training_cfg_free(&c);
                    }
                    partd_training_cfg c;
                    assert_int_equal(partd__training_cfg_build(&c, &md, s, S, v, devs), PARTD_OK);
                    uint32_t cut[7];
                    for (uint32_t j = 0; j <= c.V; j++)
                        cut[j] = j * n / c.V;
                    uint64_t work = 0;
                    double lb = partd__training_bound_orders(&md, &c, cut, devs, k, fluid, 20000000,
                                                             INFINITY, &work);
                    if (!(lb <= best * (1 + 1e-9)) || lb < fluid)
                        fail_msg("%s S=%u v=%u, %u units, M=%u: class bound %g, least step %g, "
                                 "fluid %g",
                                 partd_training_schedule_name(s), S, v, n, M, lb, best, fluid);
                    above += lb > fluid * (1 + 1e-6);
                    checked++;
                    partd__training_cfg_free(&c);
                }
        partd__training_model_free(&md);
        partd_problem_free(&pb);
        partd_request_free(req);
    }
    assert_true(checked >= 40);
    /* the bound sees bubbles, not only all work over all speed */
    assert_true(above * 2 >= checked);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bounds_hold_and_are_close),
        cmocka_unit_test(test_class_bounds_hold),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
