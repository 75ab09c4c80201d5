/*
 * test_training_frontier.c - the Pareto frontier of checkpoint sets
 * (lib/training_frontier.c).
 *
 * Small random inputs are compared with an enumeration of every subset;
 * hand-made cases check dominated points pruned, ties in D or R, identical
 * units giving c + 1 points, the sets read back from a recording frontier,
 * reset, and the limits (ETOOBIG past PARTD_TRAINING_MAX_FRONTIER points, EINTERNAL past
 * the recorded steps).
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
#include "training/training_frontier.h"

#define MAX_ITEMS 12

typedef struct point {
    double R;
    int64_t D;
} point;

/* The frontier by enumeration: every distinct (R, D) of a subset that no
 * other subset dominates (D at least as large for R at most as large, one of
 * them strictly), by D ascending. F are multiples of 1/4, so sums are exact
 * in any order. */
static uint32_t brute_frontier(uint32_t n, const double *F, const int64_t *d, point *out)
{
    uint32_t n_sets = 1u << n, m = 0;
    point *all = malloc(n_sets * sizeof *all);
    assert_non_null(all);
    for (uint32_t s = 0; s < n_sets; s++) {
        all[s].R = 0;
        all[s].D = 0;
        for (uint32_t k = 0; k < n; k++)
            if (s >> k & 1) {
                all[s].R += F[k];
                all[s].D += d[k];
            }
    }
    for (uint32_t s = 0; s < n_sets; s++) {
        int dominated = 0;
        for (uint32_t t = 0; t < n_sets && !dominated; t++)
            dominated = all[t].D >= all[s].D && all[t].R <= all[s].R &&
                        (all[t].D > all[s].D || all[t].R < all[s].R);
        int seen = 0;
        for (uint32_t k = 0; k < m && !seen; k++)
            seen = out[k].R == all[s].R && out[k].D == all[s].D;
        if (!dominated && !seen)
            out[m++] = all[s];
    }
    free(all);
    /* insertion sort by D */
    for (uint32_t i = 1; i < m; i++)
        for (uint32_t j = i; j > 0 && out[j - 1].D > out[j].D; j--) {
            point t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    return m;
}

static void assert_frontier(const partd_training_frontier *fr, const point *want, uint32_t n_want)
{
    if (fr->n != n_want) {
        fprintf(stderr, "frontier has %u points, want %u\n", fr->n, n_want);
        for (uint32_t k = 0; k < fr->n; k++)
            fprintf(stderr, "  got (%g, %lld)\n", fr->R[k], (long long)fr->D[k]);
        for (uint32_t k = 0; k < n_want; k++)
            fprintf(stderr, "  want (%g, %lld)\n", want[k].R, (long long)want[k].D);
    }
    assert_int_equal(fr->n, n_want);
    for (uint32_t k = 0; k < n_want; k++) {
        assert_true(fr->R[k] == want[k].R);
        assert_int_equal(fr->D[k], want[k].D);
    }
}

/* Every point's recorded set sums to its (R, D). */
static void assert_sets_add_up(const partd_training_frontier *fr, uint32_t n, const double *F,
                               const int64_t *d, const uint32_t *item_of)
{
    for (uint32_t p = 0; p < fr->n; p++) {
        uint8_t in[MAX_ITEMS] = {0};
        partd__training_frontier_items(fr, p, fr->n_steps, in);
        double R = 0;
        int64_t D = 0;
        for (uint32_t k = 0; k < n; k++)
            if (in[item_of[k]]) {
                R += F[k];
                D += d[k];
            }
        assert_true(R == fr->R[p]);
        assert_int_equal(D, fr->D[p]);
    }
}

static void test_random_against_enumeration(void **state)
{
    (void)state;
    srand(12345);
    point want[1u << MAX_ITEMS];
    for (int trial = 0; trial < 300; trial++) {
        uint32_t n = 1 + (uint32_t)(rand() % 8);
        double F[MAX_ITEMS];
        int64_t d[MAX_ITEMS];
        uint32_t item_of[MAX_ITEMS];
        /* few distinct values, so ties in R and in D happen often */
        for (uint32_t k = 0; k < n; k++) {
            F[k] = (rand() % 9) / 4.0;
            d[k] = 1 + rand() % (trial % 2 ? 4 : 40);
            item_of[k] = n - 1 - k;
        }
        partd_training_frontier fr;
        assert_int_equal(partd__training_frontier_init(&fr, n, 1), PARTD_OK);
        for (uint32_t k = 0; k < n; k++)
            assert_int_equal(partd__training_frontier_add(&fr, F[k], d[k], item_of[k]), PARTD_OK);
        uint32_t m = brute_frontier(n, F, d, want);
        assert_frontier(&fr, want, m);
        /* R strictly ascending with D */
        for (uint32_t k = 1; k < fr.n; k++) {
            assert_true(fr.D[k] > fr.D[k - 1]);
            assert_true(fr.R[k] > fr.R[k - 1]);
        }
        assert_int_equal(fr.n_steps, n);
        assert_sets_add_up(&fr, n, F, d, item_of);
        partd__training_frontier_free(&fr);
    }
}

static void test_dominated_pruned(void **state)
{
    (void)state;
    partd_training_frontier fr;
    assert_int_equal(partd__training_frontier_init(&fr, 0, 0), PARTD_OK);
    assert_int_equal(fr.n, 1);
    assert_true(fr.R[0] == 0);
    assert_int_equal(fr.D[0], 0);
    /* a = (1, 10) dominates b = (5, 1) */
    assert_int_equal(partd__training_frontier_add(&fr, 1, 10, 0), PARTD_OK);
    assert_int_equal(partd__training_frontier_add(&fr, 5, 1, 1), PARTD_OK);
    const point want[] = {{0, 0}, {1, 10}, {6, 11}};
    assert_frontier(&fr, want, 3);
    partd__training_frontier_free(&fr);
}

static void test_ties(void **state)
{
    (void)state;
    partd_training_frontier fr;
    assert_int_equal(partd__training_frontier_init(&fr, 0, 0), PARTD_OK);
    /* equal D: the smaller R stays */
    assert_int_equal(partd__training_frontier_add(&fr, 2, 5, 0), PARTD_OK);
    assert_int_equal(partd__training_frontier_add(&fr, 1, 5, 1), PARTD_OK);
    const point want1[] = {{0, 0}, {1, 5}, {3, 10}};
    assert_frontier(&fr, want1, 3);
    partd__training_frontier_reset(&fr);
    /* equal R: the larger D stays */
    assert_int_equal(partd__training_frontier_add(&fr, 1, 3, 0), PARTD_OK);
    assert_int_equal(partd__training_frontier_add(&fr, 1, 7, 1), PARTD_OK);
    const point want2[] = {{0, 0}, {1, 7}, {2, 10}};
    assert_frontier(&fr, want2, 3);
    partd__training_frontier_reset(&fr);
    /* a free unit (F = 0) dominates the empty set */
    assert_int_equal(partd__training_frontier_add(&fr, 0, 4, 0), PARTD_OK);
    const point want3[] = {{0, 4}};
    assert_frontier(&fr, want3, 1);
    partd__training_frontier_free(&fr);
}

static void test_identical_units_grouped(void **state)
{
    (void)state;
    partd_training_frontier fr;
    const uint32_t c = 200;
    assert_int_equal(partd__training_frontier_init(&fr, c, 1), PARTD_OK);
    for (uint32_t k = 0; k < c; k++) {
        assert_int_equal(partd__training_frontier_add(&fr, 1.5, 8, k), PARTD_OK);
        assert_int_equal(fr.n, k + 2); /* c identical units: c + 1 points */
    }
    uint8_t *in = calloc(c, 1);
    assert_non_null(in);
    for (uint32_t p = 0; p < fr.n; p++) {
        assert_true(fr.R[p] == 1.5 * p);
        assert_int_equal(fr.D[p], 8 * (int64_t)p);
        memset(in, 0, c);
        partd__training_frontier_items(&fr, p, fr.n_steps, in);
        uint32_t count = 0;
        for (uint32_t k = 0; k < c; k++)
            count += in[k];
        assert_int_equal(count, p);
    }
    free(in);
    partd__training_frontier_free(&fr);
}

static void test_items_at_earlier_step(void **state)
{
    (void)state;
    partd_training_frontier fr;
    assert_int_equal(partd__training_frontier_init(&fr, 3, 1), PARTD_OK);
    assert_int_equal(partd__training_frontier_add(&fr, 1, 1, 7), PARTD_OK);  /* item 7 */
    assert_int_equal(partd__training_frontier_add(&fr, 2, 2, 3), PARTD_OK);  /* item 3 */
    /* after two steps: (0,0) (1,1) (2,2) (3,3); point 3 = {7, 3} */
    assert_int_equal(fr.n, 4);
    uint8_t in[8] = {0};
    partd__training_frontier_items(&fr, 3, 2, in);
    assert_int_equal(in[7], 1);
    assert_int_equal(in[3], 1);
    memset(in, 0, sizeof in);
    partd__training_frontier_items(&fr, 2, 2, in); /* (2,2) = {3} */
    assert_int_equal(in[7], 0);
    assert_int_equal(in[3], 1);
    memset(in, 0, sizeof in);
    partd__training_frontier_items(&fr, 1, 1, in); /* after step 1: point 1 = {7} */
    assert_int_equal(in[7], 1);
    assert_int_equal(in[3], 0);
    /* reset forgets the steps */
    partd__training_frontier_reset(&fr);
    assert_int_equal(fr.n, 1);
    assert_int_equal(fr.n_steps, 0);
    assert_int_equal(partd__training_frontier_add(&fr, 1, 1, 5), PARTD_OK);
    assert_int_equal(fr.n_steps, 1);
    partd__training_frontier_free(&fr);
}

static void test_recorded_steps_limit(void **state)
{
    (void)state;
    partd_training_frontier fr;
    assert_int_equal(partd__training_frontier_init(&fr, 2, 1), PARTD_OK);
    assert_int_equal(partd__training_frontier_add(&fr, 1, 1, 0), PARTD_OK);
    assert_int_equal(partd__training_frontier_add(&fr, 1, 2, 1), PARTD_OK);
    assert_int_equal(partd__training_frontier_add(&fr, 1, 3, 2), PARTD_EINTERNAL);
    assert_int_equal(fr.n_steps, 2);
    partd__training_frontier_free(&fr);
    /* freeing twice is harmless: free leaves a zeroed frontier */
    partd__training_frontier_free(&fr);
}

static void test_too_many_points(void **state)
{
    (void)state;
    partd_training_frontier fr;
    assert_int_equal(partd__training_frontier_init(&fr, 0, 0), PARTD_OK);
    /* Distinct powers of two with R = D: no subset dominates another, so
     * k units give 2^k points. */
    uint32_t k = 0;
    int rc = PARTD_OK;
    for (; k < 30 && rc == PARTD_OK; k++) {
        int64_t v = (int64_t)1 << k;
        rc = partd__training_frontier_add(&fr, (double)v, v, k);
        if (rc == PARTD_OK)
            assert_int_equal(fr.n, (uint32_t)v << 1);
    }
    assert_int_equal(rc, PARTD_ETOOBIG);
    assert_int_equal(fr.n, PARTD_TRAINING_MAX_FRONTIER); /* the frontier before the refused unit */
    assert_int_equal(k, 21);
    partd__training_frontier_free(&fr);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_against_enumeration),
        cmocka_unit_test(test_dominated_pruned),
        cmocka_unit_test(test_ties),
        cmocka_unit_test(test_identical_units_grouped),
        cmocka_unit_test(test_items_at_earlier_step),
        cmocka_unit_test(test_recorded_steps_limit),
        cmocka_unit_test(test_too_many_points),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
