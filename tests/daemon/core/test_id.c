/* test_id.c - daemon/core/id.c: ids: random, and strict hex. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

#include "core/id.h"
#include "partd/partd.h"

static void test_ids_are_random_hex(void **state)
{
    (void)state;
    char a[PARTD_ID_LEN + 1], b[PARTD_ID_LEN + 1];
    assert_int_equal(partd_id_new(a), PARTD_OK);
    assert_int_equal(partd_id_new(b), PARTD_OK);
    assert_true(partd_id_valid(a));
    assert_string_not_equal(a, b);
    assert_false(partd_id_valid("0123"));
    assert_false(partd_id_valid("0123456789ABCDEF0123456789abcdef"));
    assert_false(partd_id_valid("0123456789abcdef0123456789abcdef0"));
    assert_true(partd_id_valid("0123456789abcdef0123456789abcdef"));
}

static void test_id_rejects_non_hex(void **state)
{
    (void)state;
    assert_false(partd_id_valid(""));
    assert_false(partd_id_valid("0123456789abcdef0123456789abcdeg"));
    assert_false(partd_id_valid("0123456789abcdef 123456789abcdef"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ids_are_random_hex),
        cmocka_unit_test(test_id_rejects_non_hex),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
