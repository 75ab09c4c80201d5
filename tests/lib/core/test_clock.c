/* test_clock.c - lib/core/clock.c: the monotonic clock never goes back and
 * counts nanoseconds (a second of CLOCK_MONOTONIC is 1e9 of its units). */
#include "testutil.h"

#include <time.h>

#include "partd/clock.h"

static void test_never_goes_back(void **state)
{
    (void)state;
    int64_t last = partd_clock_ns();
    assert_true(last > 0);
    for (int i = 0; i < 100000; i++) {
        int64_t now = partd_clock_ns();
        assert_true(now >= last);
        last = now;
    }
}

/* The same clock as CLOCK_MONOTONIC, in nanoseconds: read between two
 * readings of the system's, it lies between them. */
static void test_nanoseconds_of_clock_monotonic(void **state)
{
    (void)state;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    int64_t ns = partd_clock_ns();
    clock_gettime(CLOCK_MONOTONIC, &b);
    assert_true(ns >= (int64_t)a.tv_sec * 1000000000 + a.tv_nsec);
    assert_true(ns <= (int64_t)b.tv_sec * 1000000000 + b.tv_nsec);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_never_goes_back),
        cmocka_unit_test(test_nanoseconds_of_clock_monotonic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
