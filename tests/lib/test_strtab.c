/* test_strtab.c - interned strings: interning, lookup, growth. */
#include "testutil.h"

#include <stdio.h>
#include <string.h>

#include "strtab.h"

static void test_intern_returns_one_id_per_string(void **state)
{
    (void)state;
    partd_strtab t;
    partd_strtab_init(&t);
    uint32_t a = partd_strtab_intern(&t, "conv1", 5);
    uint32_t b = partd_strtab_intern(&t, "conv2", 5);
    assert_int_not_equal(a, PARTD_STR_NONE);
    assert_int_not_equal(b, PARTD_STR_NONE);
    assert_int_not_equal(a, b);
    assert_int_equal(partd_strtab_intern(&t, "conv1", 5), a);
    assert_int_equal(t.count, 2);
    assert_string_equal(partd_str(&t, a), "conv1");
    assert_int_equal(partd_strlen(&t, b), 5);
    partd_strtab_free(&t);
}

static void test_length_not_nul_delimits(void **state)
{
    (void)state;
    partd_strtab t;
    partd_strtab_init(&t);
    /* A prefix of a longer buffer is its own string. */
    uint32_t whole = partd_strtab_intern(&t, "layer1.0", 8);
    uint32_t prefix = partd_strtab_intern(&t, "layer1.0", 6);
    assert_int_not_equal(whole, prefix);
    assert_string_equal(partd_str(&t, prefix), "layer1");
    uint32_t empty = partd_strtab_intern(&t, "", 0);
    assert_int_not_equal(empty, PARTD_STR_NONE);
    assert_int_equal(partd_strlen(&t, empty), 0);
    assert_string_equal(partd_str(&t, empty), "");
    partd_strtab_free(&t);
}

static void test_find_never_adds(void **state)
{
    (void)state;
    partd_strtab t;
    partd_strtab_init(&t);
    /* On an empty table (no slots yet). */
    assert_int_equal(partd_strtab_find(&t, "x", 1), PARTD_STR_NONE);
    uint32_t x = partd_strtab_intern(&t, "x", 1);
    assert_int_equal(partd_strtab_find(&t, "x", 1), x);
    assert_int_equal(partd_strtab_find(&t, "y", 1), PARTD_STR_NONE);
    assert_int_equal(partd_strtab_find(&t, "xx", 2), PARTD_STR_NONE);
    assert_int_equal(t.count, 1);
    partd_strtab_free(&t);
}

/* Past every initial capacity (4096 bytes, 256 ids, 64 slots): ids stay
 * dense and stable, every string is still found with its bytes. */
static void test_growth_keeps_ids(void **state)
{
    (void)state;
    enum { N = 20000 };
    partd_strtab t;
    partd_strtab_init(&t);
    char buf[64];
    for (uint32_t i = 0; i < N; i++) {
        int n = snprintf(buf, sizeof buf, "model.layers.%u.attn.q_proj", i);
        assert_int_equal(partd_strtab_intern(&t, buf, (size_t)n), i);
    }
    assert_int_equal(t.count, N);
    assert_true(t.n_slots >= 2 * N);
    for (uint32_t i = 0; i < N; i++) {
        int n = snprintf(buf, sizeof buf, "model.layers.%u.attn.q_proj", i);
        assert_int_equal(partd_strtab_find(&t, buf, (size_t)n), i);
        assert_int_equal(partd_strtab_intern(&t, buf, (size_t)n), i);
        assert_string_equal(partd_str(&t, i), buf);
        assert_int_equal(partd_strlen(&t, i), (uint32_t)n);
    }
    assert_int_equal(t.count, N);
    partd_strtab_free(&t);
}

static void test_long_string_grows_the_buffer(void **state)
{
    (void)state;
    enum { LEN = 10000 };
    static char big[LEN];
    memset(big, 'a', LEN);
    partd_strtab t;
    partd_strtab_init(&t);
    uint32_t small = partd_strtab_intern(&t, "a", 1);
    uint32_t id = partd_strtab_intern(&t, big, LEN);
    assert_int_not_equal(id, PARTD_STR_NONE);
    assert_int_equal(partd_strlen(&t, id), LEN);
    assert_int_equal(strlen(partd_str(&t, id)), LEN);
    assert_string_equal(partd_str(&t, small), "a");
    partd_strtab_free(&t);
}

static void test_free_resets_and_allows_reuse(void **state)
{
    (void)state;
    partd_strtab t;
    partd_strtab_init(&t);
    partd_strtab_intern(&t, "a", 1);
    partd_strtab_free(&t);
    assert_int_equal(t.count, 0);
    assert_null(t.bytes);
    assert_int_equal(partd_strtab_find(&t, "a", 1), PARTD_STR_NONE);
    assert_int_equal(partd_strtab_intern(&t, "b", 1), 0);
    partd_strtab_free(&t);
    partd_strtab_free(&t); /* twice is harmless */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_intern_returns_one_id_per_string),
        cmocka_unit_test(test_length_not_nul_delimits),
        cmocka_unit_test(test_find_never_adds),
        cmocka_unit_test(test_growth_keeps_ids),
        cmocka_unit_test(test_long_string_grows_the_buffer),
        cmocka_unit_test(test_free_resets_and_allows_reuse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
