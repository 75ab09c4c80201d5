/* test_text.c - daemon/core/text.c: constant-time secret comparison,
 * strict decimal numbers. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

#include "core/text.h"
#include "partd/partd.h"

static void test_secret_equal(void **state)
{
    (void)state;
    assert_true(partd_text_secret_equal("abc", 3, "abc", 3));
    assert_false(partd_text_secret_equal("abc", 3, "abd", 3));
    assert_false(partd_text_secret_equal("abc", 3, "abcd", 4));
    assert_false(partd_text_secret_equal("", 0, "a", 1));
}

static void test_parse_u64(void **state)
{
    (void)state;
    uint64_t v;
    assert_int_equal(partd_text_parse_u64("0", 10, &v), PARTD_OK);
    assert_int_equal(v, 0);
    assert_int_equal(partd_text_parse_u64("1000", 1000, &v), PARTD_OK);
    assert_int_equal(partd_text_parse_u64("1001", 1000, &v), PARTD_EINVALID);
    assert_int_equal(partd_text_parse_u64("18446744073709551615", UINT64_MAX, &v), PARTD_OK);
    assert_true(v == UINT64_MAX);
    assert_int_equal(partd_text_parse_u64("18446744073709551616", UINT64_MAX, &v), PARTD_EINVALID);
    assert_int_equal(partd_text_parse_u64("-1", 10, &v), PARTD_EINVALID);
    assert_int_equal(partd_text_parse_u64(" 1", 10, &v), PARTD_EINVALID);
    assert_int_equal(partd_text_parse_u64("1x", 10, &v), PARTD_EINVALID);
    assert_int_equal(partd_text_parse_u64("", 10, &v), PARTD_EINVALID);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_secret_equal),
        cmocka_unit_test(test_parse_u64),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
