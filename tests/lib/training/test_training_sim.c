/*
 * test_training_sim.c - the step model (lib/training/training_sim.c).
 *
 * A case worked by hand (GPipe on two ranks with a delay across the cut:
 * every start, the step, the critical path, the memory with and without
 * checkpointing). Then, for every schedule and many (S, v, M) with random
 * durations and delays: each action starts no earlier than its rank's
 * previous one ends and its inputs (plus the delay across their cut) are
 * there, and at one of those instants; no rank runs two actions at once;
 * the step is the last end; busy times are the sums; the critical path's
 * counts give back the step; and every rank's memory returns to nothing
 * held once its list is done, its peak at least its largest single hold.
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

#include "partd/partd.h"
#include "training/training_schedule.h"
#include "training/training_sim.h"

#define EPS 1e-9

static void test_hand_worked_gpipe(void **state)
{
    (void)state;
    partd_training_lists l;
    partd_training_sim s;
    assert_int_equal(partd_training_schedule_build(PARTD_TRAINING_GPIPE, 2, 1, 2, &l), PARTD_OK);
    assert_int_equal(partd__training_sim_build(&l, &s), PARTD_OK);
    double F[] = {1, 3}, B[] = {2, 1}, I[] = {1, 0.5}, R[] = {0, 0}, W[] = {1, 0.5},
           delta[] = {0.5, 0};
    partd_training_durations d = {F, B, I, R, W, delta, 0};
    double busy[2];
    assert_true(fabs(partd__training_sim_run(&s, &d, busy) - 13.0) < EPS);
    /* ends, rank 0: F0 1, F1 2, B0 11 (waits for 1B0 at 8.5 + 0.5), B1 13;
     * rank 1: F0 4.5 (0F0 + 0.5), F1 7.5, B0 8.5, B1 9.5 */
    static const double ends[] = {1, 2, 11, 13, 4.5, 7.5, 8.5, 9.5};
    for (uint32_t i = 0; i < l.n; i++)
        assert_true(fabs(s.end[i] - ends[i]) < EPS);
    assert_true(fabs(busy[0] - 6) < EPS && fabs(busy[1] - 8) < EPS);
    uint32_t cnt[8], dcnt[2];
    partd__training_sim_critical(&s, &d, cnt, dcnt);
    /* 0F0 -> 1F0 -> 1F1 -> 1B0 -> 0B0 -> 0B1, crossing the cut twice */
    assert_int_equal(cnt[PARTD_TRAINING_F * 2 + 0], 1);
    assert_int_equal(cnt[PARTD_TRAINING_F * 2 + 1], 2);
    assert_int_equal(cnt[PARTD_TRAINING_B * 2 + 0], 2);
    assert_int_equal(cnt[PARTD_TRAINING_B * 2 + 1], 1);
    assert_int_equal(dcnt[0], 2);
    /* memory of rank 0: 10 bytes per microbatch held from F to B */
    int64_t hu[] = {10, 20}, hc[] = {4, 20}, tr[] = {7, 0}, peak, end;
    partd__training_sim_memory(&s, 0, hu, hu, tr, 0, &peak, NULL, &end);
    assert_int_equal(peak, 20);
    assert_int_equal(end, 0);
    /* checkpointed: 4 held each, 7 more while a backward runs: 8 + 7 */
    int64_t own[2] = {0, 0};
    partd__training_sim_memory(&s, 0, hc, hu, tr, 2, &peak, own, &end);
    assert_int_equal(peak, 15);
    assert_int_equal(own[0], 15);
    assert_int_equal(end, 0);
    partd__training_sim_free(&s);
    partd_training_lists_free(&l);
}

static uint64_t rng_state = 88172645463325252ull;

static double uniform(double lo, double hi)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return lo + (hi - lo) * (double)(rng_state >> 11) / 9007199254740992.0;
}

static double dep_ready(const partd_training_sim *s, const partd_training_durations *d,
                        uint32_t a, int which)
{
    uint32_t x = which == 1 ? s->dep1[a] : s->dep2[a];
    const partd_training_action *act = &s->l->act[a];
    double delay = which == 1 ? (act->kind == PARTD_TRAINING_F ? d->delta[act->stage - 1] : 0)
                              : d->delta[act->stage];
    return s->end[x] + delay;
}

static void check_run(partd_training_schedule sched, uint32_t S, uint32_t v, uint32_t M)
{
    partd_training_lists l;
    partd_training_sim s;
    assert_int_equal(partd_training_schedule_build(sched, S, v, M, &l), PARTD_OK);
    assert_int_equal(partd__training_sim_build(&l, &s), PARTD_OK);
    uint32_t V = l.V;
    double *x = calloc(6 * (size_t)V, sizeof *x);
    double *F = x, *B = x + V, *I = x + 2 * V, *R = x + 3 * V, *W = x + 4 * V, *delta = x + 5 * V;
    for (uint32_t j = 0; j < V; j++) {
        F[j] = uniform(0.1, 2);
        W[j] = uniform(0, 2);
        I[j] = uniform(0.1, 2);
        B[j] = I[j] + W[j];
        R[j] = uniform(0, 1);
        delta[j] = j + 1 < V && partd_training_schedule_rank(sched, S, j) !=
                                    partd_training_schedule_rank(sched, S, j + 1)
                       ? uniform(0, 0.5)
                       : 0;
    }
    partd_training_durations d = {F, B, I, R, W, delta, M / 2};
    double *busy = calloc(S, sizeof *busy);
    double step = partd__training_sim_run(&s, &d, busy);
    double last = 0;
    for (uint32_t r = 0; r < S; r++) {
        double sum = 0;
        for (uint32_t i = l.off[r]; i < l.off[r + 1]; i++) {
            double dur = partd__training_sim_duration(&d, &l.act[i]);
            double start = s.end[i] - dur, ready = 0;
            sum += dur;
            if (s.prev[i] != PARTD_TRAINING_NO) {
                assert_true(start >= s.end[s.prev[i]] - EPS); /* one action at a time */
                ready = s.end[s.prev[i]];
            }
            for (int k = 1; k <= 2; k++)
                if ((k == 1 ? s.dep1[i] : s.dep2[i]) != PARTD_TRAINING_NO) {
                    double e = dep_ready(&s, &d, i, k);
                    assert_true(start >= e - EPS); /* its inputs are there */
                    ready = e > ready ? e : ready;
                }
            assert_true(fabs(start - ready) < EPS); /* and it starts then */
            last = s.end[i] > last ? s.end[i] : last;
        }
        assert_true(fabs(sum - busy[r]) < 1e-9 * (1 + sum));
    }
    assert_true(fabs(step - last) < EPS);
    /* the critical path's length is the step (checkpointed microbatches
     * are the first M / 2: the path's actions carry their own R) */
    uint32_t *cnt = calloc(4 * (size_t)V, sizeof *cnt), *dcnt = calloc(V, sizeof *dcnt);
    partd__training_sim_critical(&s, &d, cnt, dcnt);
    uint32_t on_path = 0;
    for (uint32_t k = 0; k < 4 * V; k++)
        on_path += cnt[k];
    assert_true(on_path >= 2 * V);
    double zero_r[64] = {0};
    if (V <= 64) {
        partd_training_durations d0 = {F, B, I, zero_r, W, delta, 0};
        double step0 = partd__training_sim_run(&s, &d0, NULL);
        partd__training_sim_critical(&s, &d0, cnt, dcnt);
        double len = 0;
        for (uint32_t j = 0; j < V; j++)
            len += cnt[PARTD_TRAINING_F * V + j] * F[j] + cnt[PARTD_TRAINING_B * V + j] * B[j] +
                   cnt[PARTD_TRAINING_I * V + j] * I[j] + cnt[PARTD_TRAINING_W * V + j] * W[j] +
                   dcnt[j] * delta[j];
        assert_true(fabs(len - step0) < 1e-9 * (1 + step0));
        assert_true(step0 <= step + EPS); /* recomputation never shortens the step */
    }
    /* memory: back to nothing held at the end of every list */
    int64_t *hc = calloc(V, sizeof *hc), *hu = calloc(V, sizeof *hu), *tr = calloc(V, sizeof *tr);
    for (uint32_t j = 0; j < V; j++) {
        hu[j] = 100 + j;
        hc[j] = 40 + j;
        tr[j] = 30;
    }
    for (uint32_t r = 0; r < S; r++) {
        int64_t peak, end;
        partd__training_sim_memory(&s, r, hc, hu, tr, M / 2, &peak, NULL, &end);
        assert_int_equal(end, 0);
        assert_true(peak >= 40);
    }
    free(hc);
    free(hu);
    free(tr);
    free(cnt);
    free(dcnt);
    free(busy);
    free(x);
    partd__training_sim_free(&s);
    partd_training_lists_free(&l);
}

static void test_properties_every_schedule(void **state)
{
    (void)state;
    uint32_t runs = 0;
    for (int sched = 0; sched < PARTD_TRAINING_SCHEDULE_COUNT; sched++)
        for (uint32_t S = 1; S <= 5; S++)
            for (uint32_t v = 1; v <= 3; v++)
                for (uint32_t M = 1; M <= 12; M += 1 + M / 4)
                    if (partd_training_schedule_v(sched, v) == v &&
                        partd_training_schedule_allows(sched, S, v, M)) {
                        check_run(sched, S, v, M);
                        runs++;
                    }
    assert_true(runs > 300);
}

/* A list that waits for itself is refused. */
static void test_deadlock_refused(void **state)
{
    (void)state;
    partd_training_lists l;
    assert_int_equal(partd_training_schedule_build(PARTD_TRAINING_GPIPE, 2, 1, 1, &l), PARTD_OK);
    /* rank 1: B0 before F0 */
    partd_training_action t = l.act[l.off[1]];
    l.act[l.off[1]] = l.act[l.off[1] + 1];
    l.act[l.off[1] + 1] = t;
    partd_training_sim s;
    assert_int_equal(partd__training_sim_build(&l, &s), PARTD_EINVALID);
    partd_training_lists_free(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hand_worked_gpipe),
        cmocka_unit_test(test_properties_every_schedule),
        cmocka_unit_test(test_deadlock_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
