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

static char text[16384];

/* n units of one node each (latencies 1..3 by a rule) on devices of the
 * speeds and memory mem each; every schedule, device order auto, no
 * checkpoints. */
static partd_request *stack(uint32_t n, const double *speed, uint32_t S, long long mem)
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
                                u, u, in, 1 + (u * 7) % 3, 100 * (u % 3));
    }
    len += (size_t)snprintf(text + len, sizeof text - len, "]},\"devices\":[");
    for (uint32_t r = 0; r < S; r++)
        len += (size_t)snprintf(text + len, sizeof text - len,
                                "%s{\"name\":\"d%u\",\"memory_bytes\":%lld,\"speed\":%g}",
                                r ? "," : "", r, mem, speed[r]);
    snprintf(text + len, sizeof text - len,
             "],\"options\":{\"mode\":\"training\",\"transfer_bytes_per_sec\":1e6,"
             "\"training\":{\"schedule\":\"auto\",\"microbatches\":4,\"unit_depth\":2,"
             "\"device_order\":\"auto\",\"checkpoint\":\"never\"}}}");
    return tu_decode_ok(text);
}

static void model(partd_training_model *md, const partd_request *req)
{
    partd_problem pb;
    partd_problem_init(&pb);
    assert_int_equal(partd__training_model_build(md, req, &pb), PARTD_OK);
    partd_problem_free(&pb);
}

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
    partd_request *req = stack(12, (const double[]){1, 2, 1.5}, 3, 1000000000);
    partd_training_model md;
    model(&md, req);
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
