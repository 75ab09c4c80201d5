/* test_buf.c - buf.c: appends, NUL termination, growth across many pages,
 * reset, take, and the sticky failure flag. */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "core/buf.h"
#include "partd/partd.h"

static void test_appends_are_nul_terminated(void **state)
{
    (void)state;
    partd_buf b;
    partd_buf_init(&b);
    assert_int_equal(partd_buf_status(&b), PARTD_OK);
    partd_buf_puts(&b, "<svg");
    partd_buf_append(&b, " x=\"1\"", 6);
    partd_buf_cat(&b, ">", "</svg>", NULL);
    assert_int_equal(b.len, strlen("<svg x=\"1\"></svg>"));
    assert_string_equal(b.data, "<svg x=\"1\"></svg>");
    partd_buf_free(&b);
    assert_null(b.data);
    assert_int_equal(b.len, 0);
}

static void test_grows_over_many_appends(void **state)
{
    (void)state;
    partd_buf b;
    partd_buf_init(&b);
    for (int i = 0; i < 100000; i++)
        partd_buf_append(&b, "0123456789", 10);
    assert_int_equal(partd_buf_status(&b), PARTD_OK);
    assert_int_equal(b.len, 1000000);
    assert_true(b.cap > b.len);
    assert_int_equal(b.data[b.len], '\0');
    assert_memory_equal(b.data + 999990, "0123456789", 10);
    partd_buf_free(&b);
}

static void test_reset_keeps_storage_and_take_empties(void **state)
{
    (void)state;
    partd_buf b;
    partd_buf_init(&b);
    partd_buf_puts(&b, "first");
    size_t cap = b.cap;
    partd_buf_reset(&b);
    assert_int_equal(b.len, 0);
    assert_int_equal(b.cap, cap);
    partd_buf_puts(&b, "second");
    size_t len = 0;
    char *taken = partd_buf_take(&b, &len);
    assert_string_equal(taken, "second");
    assert_int_equal(len, 6);
    assert_int_equal(b.len, 0);
    free(taken);
    partd_buf_free(&b);
}

static void test_failure_is_sticky_until_reset(void **state)
{
    (void)state;
    partd_buf b;
    partd_buf_init(&b);
    partd_buf_puts(&b, "kept");
    b.failed = 1; /* as after a refused allocation */
    partd_buf_puts(&b, " dropped");
    assert_int_equal(partd_buf_status(&b), PARTD_ENOMEM);
    size_t len = 99;
    assert_null(partd_buf_take(&b, &len));
    partd_buf_reset(&b);
    assert_int_equal(partd_buf_status(&b), PARTD_OK);
    partd_buf_puts(&b, "again");
    assert_string_equal(b.data, "again");
    partd_buf_free(&b);
}

static void test_a_huge_append_fails_cleanly(void **state)
{
    (void)state;
    partd_buf b;
    partd_buf_init(&b);
    partd_buf_puts(&b, "x");
    /* A length no allocator can give: the append must fail, not wrap. */
    partd_buf_append(&b, "y", (size_t)-1 / 2);
    assert_int_equal(partd_buf_status(&b), PARTD_ENOMEM);
    partd_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_appends_are_nul_terminated),
        cmocka_unit_test(test_grows_over_many_appends),
        cmocka_unit_test(test_reset_keeps_storage_and_take_empties),
        cmocka_unit_test(test_failure_is_sticky_until_reset),
        cmocka_unit_test(test_a_huge_append_fails_cleanly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
