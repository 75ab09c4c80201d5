/*
 * test_training_schedule.c - the seven schedules (lib/training/
 * training_schedule.c).
 *
 * Spot checks: every rank's list for a few (S, v, M) of each schedule,
 * copied by hand from what PyTorch's classes build (torch/distributed/
 * pipelining/schedules.py, 2026: Schedule1F1B's runtime order,
 * ScheduleLoopedBFS, ScheduleInterleaved1F1B, ScheduleInterleavedZeroBubble,
 * ScheduleZBVZeroBubble, ScheduleDualPipeV with its overlapped pairs as F
 * then B). The conditions and placements. Then for every schedule and many
 * (S, v, M): every stage runs on its rank one F and either one B or one I
 * and one W per microbatch, F before the backward, W after its I. The
 * whole tables against a reference written from the contract's words are
 * tests/python/test_training_schedules.py.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "partd/partd.h"
#include "training/training_schedule.h"

/* Rank r's actions as one space-separated string. */
static char *rank_string(const partd_training_lists *l, uint32_t r)
{
    size_t cap = 16 * (size_t)(l->off[r + 1] - l->off[r]) + 1, len = 0;
    char *s = malloc(cap);
    assert_non_null(s);
    s[0] = '\0';
    for (uint32_t i = l->off[r]; i < l->off[r + 1]; i++) {
        char name[24];
        partd_training_action_name(&l->act[i], name, sizeof name);
        len += (size_t)snprintf(s + len, cap - len, "%s%s", i > l->off[r] ? " " : "", name);
    }
    return s;
}

static void check(partd_training_schedule sched, uint32_t S, uint32_t v, uint32_t M,
                  const char *const *want)
{
    partd_training_lists l;
    assert_int_equal(partd_training_schedule_build(sched, S, v, M, &l), PARTD_OK);
    assert_int_equal(l.S, S);
    for (uint32_t r = 0; r < S; r++) {
        char *got = rank_string(&l, r);
        if (strcmp(got, want[r]) != 0)
            fprintf(stderr, "%s S=%u v=%u M=%u rank %u:\n got  %s\n want %s\n",
                    partd_training_schedule_name(sched), S, v, M, r, got, want[r]);
        assert_string_equal(got, want[r]);
        free(got);
    }
    partd_training_lists_free(&l);
}

static void test_pytorch_orders(void **state)
{
    (void)state;
    static const char *const gpipe[] = {"0F0 0F1 0F2 0B0 0B1 0B2", "1F0 1F1 1F2 1B0 1B1 1B2"};
    check(PARTD_TRAINING_GPIPE, 2, 1, 3, gpipe);
    static const char *const one_f_one_b[] = {"0F0 0F1 0F2 0B0 0F3 0B1 0B2 0B3",
                                              "1F0 1F1 1B0 1F2 1B1 1F3 1B2 1B3",
                                              "2F0 2B0 2F1 2B1 2F2 2B2 2F3 2B3"};
    check(PARTD_TRAINING_1F1B, 3, 1, 4, one_f_one_b);
    static const char *const looped[] = {"0F0 0F1 2F0 2F1 2B1 2B0 0B1 0B0",
                                         "1F0 1F1 3F0 3F1 3B1 3B0 1B1 1B0"};
    check(PARTD_TRAINING_LOOPED_BFS, 2, 2, 2, looped);
    static const char *const inter[] = {
        "0F0 0F1 2F0 2F1 0F2 2B0 0F3 2B1 2F2 0B0 2F3 0B1 2B2 2B3 0B2 0B3",
        "1F0 1F1 3F0 3B0 3F1 3B1 1F2 1B0 1F3 1B1 3F2 3B2 3F3 3B3 1B2 1B3"};
    check(PARTD_TRAINING_INTERLEAVED_1F1B, 2, 2, 4, inter);
    static const char *const inter3[] = {"0F0 0F1 0F2 3F0 3F1 3F2 3B0 3B1 3B2 0B0 0B1 0B2",
                                         "1F0 1F1 1F2 4F0 4F1 4F2 4B0 4B1 4B2 1B0 1B1 1B2",
                                         "2F0 2F1 2F2 5F0 5B0 5F1 5B1 5F2 5B2 2B0 2B1 2B2"};
    check(PARTD_TRAINING_INTERLEAVED_1F1B, 3, 2, 3, inter3);
    static const char *const zb[] = {
        "0F0 0F1 2F0 2F1 2I0 2W0 0F2 2I1 2W1 0F3 0I0 0W0 2F2 0I1 0W1 2F3 2I2 2W2 2I3 2W3 0I2 "
        "0W2 0I3 0W3",
        "1F0 1F1 3F0 3I0 3F1 3I1 3W0 1F2 1I0 3W1 1F3 1I1 1W0 3F2 3I2 1W1 3F3 3I3 3W2 1I2 3W3 "
        "1I3 1W2 1W3"};
    check(PARTD_TRAINING_INTERLEAVED_ZB, 2, 2, 4, zb);
    static const char *const zbv[] = {
        "0F0 0F1 0F2 3F0 3I0 3W0 3F1 3I1 3W1 0I0 0W0 3F2 3I2 3W2 0I1 0W1 0I2 0W2",
        "1F0 2F0 1F1 2F1 2I0 2W0 1F2 1I0 1W0 2F2 2I1 2W1 1I1 2I2 1I2 1W1 2W2 1W2"};
    check(PARTD_TRAINING_ZBV, 2, 2, 3, zbv);
    static const char *const dual[] = {
        "0F0 0F1 0F2 3F0 3I0 3W0 3F1 0F3 3B1 3F2 0B0 3B2 3F3 0B1 3B3 0I2 0W2 0I3 0W3",
        "1F0 2F0 1F1 2F1 1F2 2B0 2F2 1B0 1F3 2B1 2F3 1B1 2B2 1B2 2I3 1I3 2W3 1W3"};
    check(PARTD_TRAINING_DUALPIPEV, 2, 2, 4, dual);
}

/* One rank's list, for shapes whose other ranks the cases above cover. */
static void check_rank(partd_training_schedule sched, uint32_t S, uint32_t v, uint32_t M,
                       uint32_t r, const char *want)
{
    partd_training_lists l;
    assert_int_equal(partd_training_schedule_build(sched, S, v, M, &l), PARTD_OK);
    char *got = rank_string(&l, r);
    assert_string_equal(got, want);
    free(got);
    partd_training_lists_free(&l);
}

static void test_pytorch_orders_more_shapes(void **state)
{
    (void)state;
    /* 1F1B with twice as many microbatches as ranks: min(M, S - r) warm-up */
    check_rank(PARTD_TRAINING_1F1B, 4, 1, 8, 0,
               "0F0 0F1 0F2 0F3 0B0 0F4 0B1 0F5 0B2 0F6 0B3 0F7 0B4 0B5 0B6 0B7");
    check_rank(PARTD_TRAINING_1F1B, 4, 1, 8, 2,
               "2F0 2F1 2B0 2F2 2B1 2F3 2B2 2F4 2B3 2F5 2B4 2F6 2B5 2F7 2B6 2B7");
    check_rank(PARTD_TRAINING_1F1B, 4, 1, 8, 3,
               "3F0 3B0 3F1 3B1 3F2 3B2 3F3 3B3 3F4 3B4 3F5 3B5 3F6 3B6 3F7 3B7");
    /* ZBV with M past 2S - 1, and with fewer: built for 3, the third dropped */
    check_rank(PARTD_TRAINING_ZBV, 2, 2, 4, 0,
               "0F0 0F1 0F2 3F0 3I0 3W0 3F1 3I1 3W1 0F3 0I0 0W0 3F2 3I2 3W2 0I1 0W1 3F3 "
               "3I3 3W3 0I2 0W2 0I3 0W3");
    check_rank(PARTD_TRAINING_ZBV, 2, 2, 2, 1, "1F0 2F0 1F1 2F1 2I0 2W0 1I0 1W0 2I1 2W1 1I1 1W1");
}

static void test_conditions_and_placement(void **state)
{
    (void)state;
    assert_false(partd_training_schedule_allows(PARTD_TRAINING_1F1B, 4, 1, 3));
    assert_true(partd_training_schedule_allows(PARTD_TRAINING_1F1B, 4, 1, 4));
    assert_true(partd_training_schedule_allows(PARTD_TRAINING_GPIPE, 4, 1, 1));
    assert_false(partd_training_schedule_allows(PARTD_TRAINING_GPIPE, 4, 2, 8));
    /* M = 10, S = 4: R = 2 rounds of 5; M = 9, S = 4: R = 2 does not divide */
    assert_true(partd_training_schedule_allows(PARTD_TRAINING_INTERLEAVED_1F1B, 4, 3, 10));
    assert_false(partd_training_schedule_allows(PARTD_TRAINING_INTERLEAVED_ZB, 4, 2, 9));
    assert_true(partd_training_schedule_allows(PARTD_TRAINING_INTERLEAVED_ZB, 4, 2, 3));
    assert_false(partd_training_schedule_allows(PARTD_TRAINING_DUALPIPEV, 3, 2, 5));
    assert_true(partd_training_schedule_allows(PARTD_TRAINING_DUALPIPEV, 3, 2, 6));
    assert_false(partd_training_schedule_allows(PARTD_TRAINING_ZBV, 3, 3, 6));
    assert_true(partd_training_schedule_allows(PARTD_TRAINING_ZBV, 3, 2, 1));
    partd_training_lists l;
    assert_int_equal(partd_training_schedule_build(PARTD_TRAINING_1F1B, 4, 1, 3, &l),
                     PARTD_EINVALID);
    assert_int_equal(partd_training_schedule_v(PARTD_TRAINING_ZBV, 7), 2);
    assert_int_equal(partd_training_schedule_v(PARTD_TRAINING_LOOPED_BFS, 7), 7);
    /* V placement: rank 0 holds the first and last stage, rank S-1 the middle two */
    static const uint32_t v4[8] = {0, 1, 2, 3, 3, 2, 1, 0};
    for (uint32_t j = 0; j < 8; j++) {
        assert_int_equal(partd_training_schedule_rank(PARTD_TRAINING_DUALPIPEV, 4, j), v4[j]);
        assert_int_equal(partd_training_schedule_rank(PARTD_TRAINING_LOOPED_BFS, 4, j), j % 4);
    }
}

/* Every (stage, microbatch) runs once F and once B, or once I and once W,
 * all on the stage's rank, F first and W after its I. */
static void check_complete(partd_training_schedule s, uint32_t S, uint32_t v, uint32_t M)
{
    partd_training_lists l;
    assert_int_equal(partd_training_schedule_build(s, S, v, M, &l), PARTD_OK);
    uint32_t V = l.V;
    int *pos = calloc((size_t)V * M * 4, sizeof *pos); /* index + 1 in its rank's list */
    assert_non_null(pos);
    for (uint32_t r = 0; r < S; r++)
        for (uint32_t i = l.off[r]; i < l.off[r + 1]; i++) {
            const partd_training_action *a = &l.act[i];
            assert_true(a->stage < V && a->mb < M);
            assert_int_equal(partd_training_schedule_rank(s, S, a->stage), r);
            int *slot = &pos[((size_t)a->stage * M + a->mb) * 4 + a->kind];
            assert_int_equal(*slot, 0);
            *slot = (int)(i - l.off[r]) + 1;
        }
    for (size_t k = 0; k < (size_t)V * M; k++) {
        int *p = &pos[k * 4];
        assert_true(p[PARTD_TRAINING_F] > 0);
        if (p[PARTD_TRAINING_B]) {
            assert_true(!p[PARTD_TRAINING_I] && !p[PARTD_TRAINING_W]);
            assert_true(p[PARTD_TRAINING_B] > p[PARTD_TRAINING_F]);
        } else {
            assert_true(p[PARTD_TRAINING_I] > p[PARTD_TRAINING_F]);
            assert_true(p[PARTD_TRAINING_W] > p[PARTD_TRAINING_I]);
        }
        assert_int_equal(!!p[PARTD_TRAINING_I], partd_training_schedule_splits(s) && !p[PARTD_TRAINING_B]);
    }
    free(pos);
    partd_training_lists_free(&l);
}

static void test_every_action_once(void **state)
{
    (void)state;
    uint32_t runs = 0;
    for (int s = 0; s < PARTD_TRAINING_SCHEDULE_COUNT; s++)
        for (uint32_t S = 1; S <= 6; S++)
            for (uint32_t v = 1; v <= 4; v++)
                for (uint32_t M = 1; M <= 17; M++)
                    if (partd_training_schedule_v(s, v) == v &&
                        partd_training_schedule_allows(s, S, v, M)) {
                        check_complete(s, S, v, M);
                        runs++;
                    }
    assert_true(runs > 1000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pytorch_orders),
        cmocka_unit_test(test_pytorch_orders_more_shapes),
        cmocka_unit_test(test_conditions_and_placement),
        cmocka_unit_test(test_every_action_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
