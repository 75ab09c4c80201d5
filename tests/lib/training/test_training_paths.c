/*
 * test_training_paths.c - the path through every rank's whole list
 * (lib/training/training_paths.h).
 *
 * For every schedule on a small stack over three ranks of mixed speeds,
 * the stages' durations timed: each rank's path holds at least all of its
 * actions, and its length is at least the rank's busy time and at most the
 * step (it is a path through the plan's actions).
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
#include "training/training_paths.h"
#include "training_test.h"

static void check(const partd_training_model *md, partd_training_schedule s, uint32_t v)
{
    enum { S = 3 };
    const uint32_t dev[S] = {2, 0, 1};
    partd_training_cfg c;
    assert_int_equal(partd__training_cfg_build(&c, md, s, S, v, dev), PARTD_OK);
    uint32_t V = c.V, n = md->n_units;
    uint32_t *cut = malloc((V + 1) * sizeof *cut);
    double *I = malloc(V * sizeof *I), *zero = calloc(V, sizeof *zero);
    double *dmin = calloc(V, sizeof *dmin), *rpath = malloc((size_t)S * 5 * V * sizeof *rpath);
    double busy[S];
    assert_non_null(cut && I && zero && dmin && rpath);
    for (uint32_t j = 0; j <= V; j++)
        cut[j] = (uint32_t)((uint64_t)j * n / V);
    partd__training_eval_stages(md, &c, cut);
    for (uint32_t j = 0; j < V; j++) {
        I[j] = c.B[j] - c.W[j];
        dmin[j] = j + 1 < V && c.rank[j] != c.rank[j + 1] ? 0.25 : 0;
    }
    partd_training_durations du = {c.F, c.B, I, zero, c.W, dmin, 0};
    double step = partd__training_sim_run(&c.sim, &du, busy);
    uint64_t work = 0;
    assert_int_equal(partd__training_paths_ranks(&c, &du, dmin, rpath, &work), PARTD_OK);
    assert_true(work > 0);
    for (uint32_t q = 0; q < S; q++) {
        const double *p = rpath + (size_t)q * 5 * V;
        double len = 0, own = 0;
        for (uint32_t j = 0; j < V; j++) {
            len += p[j] * c.F[j] + p[V + j] * c.B[j] + p[2 * V + j] * I[j] +
                   p[3 * V + j] * c.W[j] + p[4 * V + j] * dmin[j];
            if (c.rank[j] == q)
                own += p[j] + p[V + j] + p[2 * V + j] + p[3 * V + j];
        }
        assert_true(own >= c.lists.off[q + 1] - c.lists.off[q]);
        assert_true(len >= busy[q] * (1 - 1e-12));
        assert_true(len <= step * (1 + 1e-12));
    }
    free(cut);
    free(I);
    free(zero);
    free(dmin);
    free(rpath);
    partd__training_cfg_free(&c);
}

static void test_every_rank_path(void **state)
{
    (void)state;
    partd_request *req = tt_stack(12, (const double[]){1, 2, 1.5}, 3, 1000000000);
    partd_training_model md;
    tt_model(&md, req);
    int checked = 0;
    for (int s = 0; s < PARTD_TRAINING_SCHEDULE_COUNT; s++) {
        uint32_t v = partd_training_schedule_v(s, 0) ? partd_training_schedule_v(s, 0) : 2;
        if (!partd_training_schedule_allows(s, 3, v, md.M))
            continue;
        check(&md, s, v);
        checked++;
    }
    assert_true(checked >= 4);
    partd__training_model_free(&md);
    partd_request_free(req);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_rank_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
