/*
 * test_solver_cbc.c - CBC's C interface loaded on first use
 * (solver/solver_cbc.h): every function found, and a small MILP solved
 * through the table in this process.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "partd/partd.h"
#include "solver/solver_cbc.h"

static void test_every_function_found(void **state)
{
    (void)state;
    const char *why = NULL;
    assert_int_equal(partd__cbc_load(&why), PARTD_OK);
    assert_string_equal(why, "");
    for (int f = 0; f < partd__cbc_count; f++)
        assert_non_null(partd__cbc_fns[f]);
}

/* max x + y with x + 2y <= 4, 3x + y <= 6, x and y integers in [0, 10]:
 * 2, at (2, 0), (1, 1) or (0, 2); (2, 1) breaks the second row */
static void test_a_milp_through_the_table(void **state)
{
    (void)state;
    const char *why;
    assert_int_equal(partd__cbc_load(&why), PARTD_OK);
    CoinBigIndex start[] = {0, 2, 4};
    int index[] = {0, 1, 0, 1};
    double value[] = {1, 3, 2, 1};
    double lb[] = {0, 0}, ub[] = {10, 10}, obj[] = {-1, -1};
    double row_lb[] = {-1e30, -1e30}, row_ub[] = {4, 6};
    Cbc_Model *m = Cbc_newModel();
    Cbc_loadProblem(m, 2, 2, start, index, value, lb, ub, obj, row_lb, row_ub);
    Cbc_setInteger(m, 0);
    Cbc_setInteger(m, 1);
    Cbc_setLogLevel(m, 0);
    Cbc_solve(m);
    assert_true(Cbc_isProvenOptimal(m));
    assert_true(Cbc_getObjValue(m) == -2.0);
    Cbc_deleteModel(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_function_found),
        cmocka_unit_test(test_a_milp_through_the_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
