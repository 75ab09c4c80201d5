/* test_time.c - daemon/core/time.c: RFC 3339 times. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

#include "core/time.h"
#include "partd/partd.h"

static void test_rfc3339(void **state)
{
    (void)state;
    char buf[32];
    partd_time_rfc3339(0, buf);
    assert_string_equal(buf, "1970-01-01T00:00:00.000Z");
    partd_time_rfc3339(1700000000123, buf);
    assert_string_equal(buf, "2023-11-14T22:13:20.123Z");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rfc3339),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
