/*
 * test_training_game.c - the matrix game of the relaxation
 * (lib/training/training_game.h).
 *
 * Matching pennies (value 1/2, both players even), a game with a dominant
 * row (its value and pure mix), on a matrix stored with a stride past its
 * columns: the mixes sum to 1 and the value returned is what the rows'
 * mix guarantees, at most the game's value and near it.
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

#include "training/training_game.h"

static double guarantee(const double *A, uint32_t stride, uint32_t P, uint32_t K,
                        const double *lam)
{
    double least = INFINITY;
    for (uint32_t k = 0; k < K; k++) {
        double s = 0;
        for (uint32_t p = 0; p < P; p++)
            s += lam[p] * A[p * stride + k];
        least = s < least ? s : least;
    }
    return least;
}

static void test_matching_pennies(void **state)
{
    (void)state;
    /* stride 4: the columns past 2 are not the game's */
    const double A[] = {1, 0, 9, 9, 0, 1, 9, 9};
    double lam[2], mu[2];
    double v = partd__training_game_play(A, 4, 2, 2, 100, lam, mu);
    assert_true(fabs(lam[0] + lam[1] - 1) < 1e-12);
    assert_true(fabs(mu[0] + mu[1] - 1) < 1e-12);
    assert_true(fabs(v - guarantee(A, 4, 2, 2, lam)) < 1e-12);
    assert_true(v <= 0.5 + 1e-12);
    assert_true(v >= 0.45);
    assert_true(fabs(lam[0] - 0.5) < 0.05 && fabs(mu[0] - 0.5) < 0.05);
}

static void test_a_dominant_row(void **state)
{
    (void)state;
    /* row 1 beats row 0 against every column; column 2 is the least */
    const double A[] = {1, 2, 0.5, 3, 4, 2};
    double lam[2], mu[3];
    double v = partd__training_game_play(A, 3, 2, 3, 50, lam, mu);
    assert_true(lam[1] > 0.95);
    assert_true(mu[2] > 0.9);
    assert_true(fabs(v - guarantee(A, 3, 2, 3, lam)) < 1e-12);
    assert_true(v <= 2 + 1e-12 && v >= 1.9);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matching_pennies),
        cmocka_unit_test(test_a_dominant_row),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
