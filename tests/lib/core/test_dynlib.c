/*
 * test_dynlib.c - a library loaded on first use (partd/dynlib.h): its
 * functions called through the table, a library that is not there and a
 * function a library lacks named in the error, and the first answer kept.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "partd/dynlib.h"
#include "partd/partd.h"

static const char *const libm_names[] = {"cos", "ldexp"};

static void test_functions_called_through_the_table(void **state)
{
    (void)state;
    partd_dynlib_fn fns[2] = {0};
    partd_dynlib lib = PARTD_DYNLIB_INIT("libm.so.6", libm_names, fns, 2);
    assert_int_equal(partd_dynlib_load(&lib), PARTD_OK);
    double (*cos_)(double) = (double (*)(double))fns[0];
    double (*ldexp_)(double, int) = (double (*)(double, int))fns[1];
    assert_true(cos_(0.0) == 1.0);
    assert_true(ldexp_(3.0, 4) == 48.0);
    assert_int_equal(partd_dynlib_load(&lib), PARTD_OK);
}

static void test_missing_library_is_named(void **state)
{
    (void)state;
    partd_dynlib_fn fns[2] = {0};
    partd_dynlib lib = PARTD_DYNLIB_INIT("libpartd-no-such.so.1", libm_names, fns, 2);
    assert_int_equal(partd_dynlib_load(&lib), PARTD_EINTERNAL);
    assert_non_null(strstr(lib.err, "cannot load libpartd-no-such.so.1"));
    /* the first answer stands */
    lib.err[0] = 0;
    assert_int_equal(partd_dynlib_load(&lib), PARTD_EINTERNAL);
}

static void test_missing_function_is_named(void **state)
{
    (void)state;
    static const char *const names[] = {"cos", "partd_no_such_function"};
    partd_dynlib_fn fns[2] = {0};
    partd_dynlib lib = PARTD_DYNLIB_INIT("libm.so.6", names, fns, 2);
    assert_int_equal(partd_dynlib_load(&lib), PARTD_EINTERNAL);
    assert_string_equal(lib.err, "libm.so.6 has no function partd_no_such_function");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_functions_called_through_the_table),
        cmocka_unit_test(test_missing_library_is_named),
        cmocka_unit_test(test_missing_function_is_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
