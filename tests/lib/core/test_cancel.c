/* test_cancel.c - the cancel flag and deadlines (no sleeping: deadlines are
 * set in the past or far in the future). */
#include "partd/clock.h"
#include "testutil.h"

#include "partd/cancel.h"
#include "partd/partd.h"

static void test_null_is_never_cancelled(void **state)
{
    (void)state;
    assert_int_equal(partd_cancel_check(NULL), PARTD_OK);
}

static void test_fresh_flag_without_deadline(void **state)
{
    (void)state;
    partd_cancel c;
    partd_cancel_init(&c, 0);
    assert_int_equal(c.deadline_ns, 0);
    assert_int_equal(partd_cancel_check(&c), PARTD_OK);
    partd_cancel_init(&c, -5); /* negative: no deadline either */
    assert_int_equal(c.deadline_ns, 0);
    assert_int_equal(partd_cancel_check(&c), PARTD_OK);
}

static void test_raised_flag_cancels(void **state)
{
    (void)state;
    partd_cancel c;
    partd_cancel_init(&c, 0);
    atomic_store(&c.cancelled, 1);
    assert_int_equal(partd_cancel_check(&c), PARTD_ECANCELLED);
}

static void test_cancel_wins_over_deadline(void **state)
{
    (void)state;
    partd_cancel c;
    partd_cancel_init(&c, 0);
    c.deadline_ns = 1; /* long past */
    atomic_store(&c.cancelled, 1);
    assert_int_equal(partd_cancel_check(&c), PARTD_ECANCELLED);
}

static void test_deadline(void **state)
{
    (void)state;
    partd_cancel c;
    int64_t before = partd_clock_ns();
    partd_cancel_init(&c, 3600 * 1000); /* an hour */
    int64_t after = partd_clock_ns();
    assert_true(c.deadline_ns >= before + 3600LL * 1000000000);
    assert_true(c.deadline_ns <= after + 3600LL * 1000000000);
    assert_int_equal(partd_cancel_check(&c), PARTD_OK);
    c.deadline_ns = partd_clock_ns(); /* reached */
    assert_int_equal(partd_cancel_check(&c), PARTD_ETIMEOUT);
}

static void test_monotonic_never_decreases(void **state)
{
    (void)state;
    int64_t prev = partd_clock_ns();
    assert_true(prev > 0);
    for (int i = 0; i < 1000; i++) {
        int64_t now = partd_clock_ns();
        assert_true(now >= prev);
        prev = now;
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_null_is_never_cancelled),
        cmocka_unit_test(test_fresh_flag_without_deadline),
        cmocka_unit_test(test_raised_flag_cancels),
        cmocka_unit_test(test_cancel_wins_over_deadline),
        cmocka_unit_test(test_deadline),
        cmocka_unit_test(test_monotonic_never_decreases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
