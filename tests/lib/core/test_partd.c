/* test_partd.c - partd.c: every status code has its own text, unknown codes
 * a fixed one, and the codes keep the values the daemon maps to HTTP. */
#include <string.h>

#include "testutil.h"

#include "partd/partd.h"

static void test_every_code_has_its_own_text(void **state)
{
    (void)state;
    const int codes[] = {PARTD_OK,        PARTD_ENOMEM,   PARTD_EMALFORMED, PARTD_EINVALID,
                         PARTD_EINFEASIBLE, PARTD_ECANCELLED, PARTD_ETIMEOUT, PARTD_EINTERNAL,
                         PARTD_EIO,       PARTD_ETOOBIG};
    const size_t n = sizeof codes / sizeof codes[0];
    for (size_t i = 0; i < n; i++) {
        const char *t = partd_strerror(codes[i]);
        assert_non_null(t);
        assert_string_not_equal(t, "unknown error");
        for (size_t j = 0; j < i; j++)
            assert_string_not_equal(t, partd_strerror(codes[j]));
    }
    assert_string_equal(partd_strerror(PARTD_OK), "ok");
    assert_string_equal(partd_strerror(PARTD_EINFEASIBLE), "no feasible plan");
}

static void test_unknown_codes_are_named_unknown(void **state)
{
    (void)state;
    assert_string_equal(partd_strerror(1), "unknown error");
    assert_string_equal(partd_strerror(-1000), "unknown error");
    assert_string_equal(partd_strerror(PARTD_ETOOBIG - 1), "unknown error");
}

static void test_errors_are_negative_and_ok_is_zero(void **state)
{
    (void)state;
    /* Callers test "rc < 0" and "rc == PARTD_OK"; the store's positive
     * codes (daemon/store.h) must never collide with these. */
    assert_int_equal(PARTD_OK, 0);
    const int codes[] = {PARTD_ENOMEM, PARTD_EMALFORMED, PARTD_EINVALID, PARTD_EINFEASIBLE,
                         PARTD_ECANCELLED, PARTD_ETIMEOUT, PARTD_EINTERNAL, PARTD_EIO,
                         PARTD_ETOOBIG};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
        assert_true(codes[i] < 0);
    assert_non_null(strstr(PARTD_PLANNER_VERSION, "partd-planner/"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_code_has_its_own_text),
        cmocka_unit_test(test_unknown_codes_are_named_unknown),
        cmocka_unit_test(test_errors_are_negative_and_ok_is_zero),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
