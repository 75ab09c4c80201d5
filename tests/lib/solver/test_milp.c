/*
 * test_milp.c - the MILP in arrays and its solve (lib/milp.c).
 *
 * The builder's arrays (indexes, zeros skipped, growth, free), the numeric
 * pre-check refusing NaN, infinite and over-large numbers and indexes off
 * the model with a 422 problem at /graph/modules, a failed add (oom) and a
 * zero time limit, a small knapsack solved to its known optimum (and its LP
 * relaxation), an infeasible model, a raised cancel, and a memory limit too
 * small for the solver (500 "solver-failed").
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

#include "partd/cancel.h"
#include "partd/partd.h"
#include "partd/problem.h"
#include "solver/milp.h"
#include "solver/solver_child.h"

#define EPS 1e-6

/* ---- building ------------------------------------------------------------- */

static void test_builder_arrays(void **state)
{
    (void)state;
    partd_milp b;
    memset(&b, 0, sizeof b);
    assert_int_equal(partd_milp_add_col(&b, 0, 1, -5, 1), 0);
    assert_int_equal(partd_milp_add_col(&b, -2, 3.5, 0.25, 0), 1);
    int cols[] = {0, 1, 0};
    double vals[] = {2, 0, -1};
    assert_int_equal(partd_milp_add_row(&b, -PARTD_MILP_INF, 7, 3, cols, vals), 0);
    assert_int_equal(partd_milp_add_row(&b, 1, 1, 1, &cols[1], &vals[0]), 1);
    assert_int_equal(b.n_cols, 2);
    assert_int_equal(b.n_rows, 2);
    assert_int_equal(b.n_nz, 3); /* the zero skipped */
    assert_true(b.col_lb[1] == -2 && b.col_ub[1] == 3.5 && b.obj[1] == 0.25);
    assert_int_equal(b.is_int[0], 1);
    assert_int_equal(b.is_int[1], 0);
    assert_true(b.row_lb[0] == -PARTD_MILP_INF && b.row_ub[0] == 7);
    assert_true(b.row_lb[1] == 1 && b.row_ub[1] == 1);
    assert_int_equal(b.nz_row[0], 0);
    assert_int_equal(b.nz_col[0], 0);
    assert_true(b.nz_val[0] == 2);
    assert_int_equal(b.nz_row[1], 0);
    assert_int_equal(b.nz_col[1], 0);
    assert_true(b.nz_val[1] == -1);
    assert_int_equal(b.nz_row[2], 1);
    assert_int_equal(b.nz_col[2], 1);
    assert_true(b.nz_val[2] == 2);
    assert_int_equal(b.oom, 0);
    partd_milp_free(&b);
    assert_null(b.col_lb);
    assert_int_equal(b.n_cols, 0);
    partd_milp_free(&b); /* twice: harmless */
}

static void test_builder_grows(void **state)
{
    (void)state;
    partd_milp b;
    memset(&b, 0, sizeof b);
    enum { N = 1000 };
    static int cols[N];
    static double vals[N];
    for (int c = 0; c < N; c++) {
        assert_int_equal(partd_milp_add_col(&b, 0, c, c, c & 1), c);
        cols[c] = c;
        vals[c] = c + 1;
    }
    for (int r = 0; r < 300; r++)
        assert_int_equal(partd_milp_add_row(&b, 0, r, N, cols, vals), r);
    assert_int_equal(b.n_nz, 300 * N);
    assert_true(b.cap_cols >= N && b.cap_rows >= 300 && b.cap_nz >= 300 * N);
    for (int c = 0; c < N; c++)
        assert_true(b.col_ub[c] == c && b.obj[c] == c && b.is_int[c] == (c & 1));
    assert_int_equal(b.nz_row[300 * N - 1], 299);
    assert_int_equal(b.nz_col[300 * N - 1], N - 1);
    assert_true(b.nz_val[300 * N - 1] == N);
    partd_milp_free(&b);
}

/* ---- the pre-check ---------------------------------------------------------- */

/* The knapsack: min -(5a + 4b + 3c) s.t. 2a + 3b + c <= 5; optimum a = b = 1,
 * c = 0, objective -9. LP relaxation: a = c = 1, b = 2/3, objective -32/3. */
static void knapsack(partd_milp *b, int is_int)
{
    memset(b, 0, sizeof *b);
    int cols[] = {0, 1, 2};
    double w[] = {2, 3, 1};
    partd_milp_add_col(b, 0, 1, -5, is_int);
    partd_milp_add_col(b, 0, 1, -4, is_int);
    partd_milp_add_col(b, 0, 1, -3, is_int);
    partd_milp_add_row(b, -PARTD_MILP_INF, 5, 3, cols, w);
}

static int solve(const partd_milp *b, const partd_solver_env *env, partd_milp_result *res,
                 double *x)
{
    partd_milp_params p = { 10.0, 0, 1, env };
    res->x = x;
    return partd_milp_solve(b, &p, res);
}

/* The model is refused before any solve, naming `what`. */
static void assert_refused(const partd_milp *b, const char *what)
{
    partd_problem pb;
    partd_problem_init(&pb);
    partd_solver_env env = { NULL, &pb, 0 };
    partd_milp_result res;
    double x[8];
    assert_int_equal(solve(b, &env, &res, x), PARTD_EINVALID);
    assert_int_equal(pb.status, 422);
    assert_non_null(pb.detail);
    if (!strstr(pb.detail, what))
        fprintf(stderr, "detail: %s\n", pb.detail);
    assert_non_null(strstr(pb.detail, what));
    assert_int_equal(pb.n_errors, 1);
    assert_string_equal(pb.errors[0].pointer, "/graph/modules");
    assert_non_null(strstr(pb.errors[0].message, "out of the solver's range"));
    partd_problem_free(&pb);
    /* Without a problem: the same code, nothing described. */
    assert_int_equal(solve(b, NULL, &res, x), PARTD_EINVALID);
    assert_int_equal(res.status, PARTD_MILP_NONE);
}

static void test_precheck_refuses(void **state)
{
    (void)state;
    partd_milp b;

    knapsack(&b, 1);
    b.obj[1] = NAN;
    assert_refused(&b, "an objective coefficient the solver cannot take (nan)");
    b.obj[1] = INFINITY;
    assert_refused(&b, "an objective coefficient");
    b.obj[1] = -2e20;
    assert_refused(&b, "an objective coefficient the solver cannot take (-2e+20)");
    partd_milp_free(&b);

    knapsack(&b, 1);
    b.nz_val[2] = 1e21;
    assert_refused(&b, "a constraint coefficient the solver cannot take (1e+21)");
    b.nz_val[2] = -INFINITY;
    assert_refused(&b, "a constraint coefficient");
    b.nz_val[2] = NAN;
    assert_refused(&b, "a constraint coefficient");
    partd_milp_free(&b);

    knapsack(&b, 1);
    b.col_ub[0] = 1e25; /* neither a number CBC takes nor its infinity */
    assert_refused(&b, "a variable bound the solver cannot take (1e+25)");
    b.col_ub[0] = 1;
    b.col_lb[2] = NAN;
    assert_refused(&b, "a variable bound");
    b.col_lb[2] = PARTD_MILP_INF; /* a lower bound of +infinity: named, not its upper bound */
    assert_refused(&b, "a variable bound the solver cannot take (1e+30)");
    partd_milp_free(&b);

    knapsack(&b, 1);
    b.row_ub[0] = -5e20;
    assert_refused(&b, "a constraint bound the solver cannot take (-5e+20)");
    b.row_ub[0] = -PARTD_MILP_INF; /* an upper bound of -infinity */
    assert_refused(&b, "a constraint bound");
    partd_milp_free(&b);

    knapsack(&b, 1);
    b.nz_col[1] = 3; /* off the model */
    assert_refused(&b, "a matrix index");
    b.nz_col[1] = -1;
    assert_refused(&b, "a matrix index");
    partd_milp_free(&b);
}

static void test_precheck_accepts_limits(void **state)
{
    (void)state;
    /* PARTD_MILP_MAX_ABS itself passes; so do infinite bounds. */
    partd_milp b;
    memset(&b, 0, sizeof b);
    int col = 0;
    double one = 1;
    partd_milp_add_col(&b, -PARTD_MILP_INF, PARTD_MILP_INF, 0, 0);
    partd_milp_add_col(&b, 0, PARTD_MILP_MAX_ABS, 1, 0);
    partd_milp_add_row(&b, -INFINITY, 4, 1, &col, &one);
    partd_milp_add_row(&b, -4, INFINITY, 1, &col, &one);
    partd_milp_result res;
    double x[2];
    assert_int_equal(solve(&b, NULL, &res, x), PARTD_OK);
    assert_int_equal(res.status, PARTD_MILP_OPTIMAL);
    assert_true(fabs(res.objective) < EPS);
    assert_true(fabs(x[1]) < EPS);
    partd_milp_free(&b);
}

static void test_oom_and_no_time(void **state)
{
    (void)state;
    partd_milp b;
    knapsack(&b, 1);
    partd_milp_result res;
    double x[3];
    partd_milp_params p = { 0, 0, 0, NULL };
    res.x = x;
    res.status = PARTD_MILP_OPTIMAL;
    assert_int_equal(partd_milp_solve(&b, &p, &res), PARTD_OK);
    assert_int_equal(res.status, PARTD_MILP_NONE);
    /* the time limit comes first: a bad number is not even looked at */
    b.obj[0] = NAN;
    assert_int_equal(partd_milp_solve(&b, &p, &res), PARTD_OK);
    assert_int_equal(res.status, PARTD_MILP_NONE);
    b.oom = 1;
    p.time_limit_s = 10;
    assert_int_equal(partd_milp_solve(&b, &p, &res), PARTD_ENOMEM);
    partd_milp_free(&b);
}

/* ---- solving ------------------------------------------------------------------ */

static void test_knapsack_optimum(void **state)
{
    (void)state;
    partd_milp b;
    knapsack(&b, 1);
    partd_milp_result res;
    double x[3] = {-1, -1, -1};
    assert_int_equal(solve(&b, NULL, &res, x), PARTD_OK);
    assert_int_equal(res.status, PARTD_MILP_OPTIMAL);
    assert_true(fabs(res.objective - -9) < EPS);
    assert_true(res.gap == 0);
    assert_true(fabs(x[0] - 1) < EPS);
    assert_true(fabs(x[1] - 1) < EPS);
    assert_true(fabs(x[2]) < EPS);
    partd_milp_free(&b);

    knapsack(&b, 0); /* the LP relaxation */
    assert_int_equal(solve(&b, NULL, &res, x), PARTD_OK);
    assert_int_equal(res.status, PARTD_MILP_OPTIMAL);
    assert_true(fabs(res.objective - -32.0 / 3) < EPS);
    assert_true(fabs(x[0] - 1) < EPS);
    assert_true(fabs(x[1] - 2.0 / 3) < EPS);
    assert_true(fabs(x[2] - 1) < EPS);
    partd_milp_free(&b);
}

static void test_equality_and_general_integers(void **state)
{
    (void)state;
    /* min x + y s.t. 3x + 5y = 19, x, y integer in [0, 10]: (3, 2) -> 5. */
    partd_milp b;
    memset(&b, 0, sizeof b);
    int cols[] = {0, 1};
    double v[] = {3, 5};
    partd_milp_add_col(&b, 0, 10, 1, 1);
    partd_milp_add_col(&b, 0, 10, 1, 1);
    partd_milp_add_row(&b, 19, 19, 2, cols, v);
    partd_milp_result res;
    double x[2];
    assert_int_equal(solve(&b, NULL, &res, x), PARTD_OK);
    assert_int_equal(res.status, PARTD_MILP_OPTIMAL);
    assert_true(fabs(res.objective - 5) < EPS);
    assert_true(fabs(x[0] - 3) < EPS);
    assert_true(fabs(x[1] - 2) < EPS);
    partd_milp_free(&b);
}

static void test_infeasible(void **state)
{
    (void)state;
    /* binaries a + b >= 3 */
    partd_milp b;
    memset(&b, 0, sizeof b);
    int cols[] = {0, 1};
    double v[] = {1, 1};
    partd_milp_add_col(&b, 0, 1, 1, 1);
    partd_milp_add_col(&b, 0, 1, 1, 1);
    partd_milp_add_row(&b, 3, PARTD_MILP_INF, 2, cols, v);
    partd_milp_result res;
    double x[2];
    assert_int_equal(solve(&b, NULL, &res, x), PARTD_OK);
    assert_int_equal(res.status, PARTD_MILP_INFEASIBLE);
    partd_milp_free(&b);

    /* integrality alone makes it infeasible: 2x = 1 */
    memset(&b, 0, sizeof b);
    double two = 2;
    partd_milp_add_col(&b, 0, 5, 0, 1);
    partd_milp_add_row(&b, 1, 1, 1, cols, &two);
    assert_int_equal(solve(&b, NULL, &res, x), PARTD_OK);
    assert_int_equal(res.status, PARTD_MILP_INFEASIBLE);
    partd_milp_free(&b);
}

static void test_cancelled(void **state)
{
    (void)state;
    partd_milp b;
    knapsack(&b, 1);
    partd_cancel cancel;
    partd_cancel_init(&cancel, 0);
    atomic_store(&cancel.cancelled, 1);
    partd_solver_env env = { &cancel, NULL, 0 };
    partd_milp_result res;
    double x[3];
    assert_int_equal(solve(&b, &env, &res, x), PARTD_ECANCELLED);
    assert_int_equal(res.status, PARTD_MILP_NONE);
    partd_milp_free(&b);
}

static void test_memory_limit_too_small(void **state)
{
    (void)state;
    if (!partd__child_can_limit_memory())
        skip(); /* ASan reserves terabytes of address space: no RLIMIT_AS */
    partd_milp b;
    knapsack(&b, 1);
    partd_problem pb;
    partd_problem_init(&pb);
    partd_solver_env env = { NULL, &pb, 4096 };
    partd_milp_result res;
    double x[3];
    assert_int_equal(solve(&b, &env, &res, x), PARTD_EINTERNAL);
    assert_int_equal(pb.status, 500);
    assert_non_null(strstr(pb.type, "solver-failed"));
    assert_non_null(strstr(pb.detail, "4096 bytes"));
    partd_problem_free(&pb);
    partd_milp_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builder_arrays),
        cmocka_unit_test(test_builder_grows),
        cmocka_unit_test(test_precheck_refuses),
        cmocka_unit_test(test_precheck_accepts_limits),
        cmocka_unit_test(test_oom_and_no_time),
        cmocka_unit_test(test_knapsack_optimum),
        cmocka_unit_test(test_equality_and_general_integers),
        cmocka_unit_test(test_infeasible),
        cmocka_unit_test(test_cancelled),
        cmocka_unit_test(test_memory_limit_too_small),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
