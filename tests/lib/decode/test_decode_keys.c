/*
 * test_decode_keys.c - lib/decode/decode_keys.c, the keys of the open JSON
 * objects: a repeated key is found in a small object (compared one by one)
 * and in a large one (a string table), by a lookup or by the add that
 * refuses it, objects nest and release their keys when they end, keys are
 * compared by all their bytes (NUL included), and keys crafted to collide
 * cost what any keys cost.
 */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collide.h"
#include "decode/decode_keys.h"

static void add(partd_keys *s, partd_keyset *f, const char *k, size_t len)
{
    assert_false(partd__decode_keys_has(s, f, k, len));
    assert_int_equal(partd__decode_keys_add(s, f, k, len), 0);
    assert_true(partd__decode_keys_has(s, f, k, len));
}

static void test_small_object(void **state)
{
    (void)state;
    partd_keys s = {0};
    partd_keyset f;
    partd__decode_keys_open(&s, &f);
    add(&s, &f, "name", 4);
    add(&s, &f, "op", 2);
    add(&s, &f, "nam", 3); /* a prefix is another key */
    assert_true(partd__decode_keys_has(&s, &f, "name", 4));
    assert_false(partd__decode_keys_has(&s, &f, "names", 5));
    assert_string_equal(partd__decode_keys_last(&s, &f), "nam");
    assert_null(f.set);
    partd__decode_keys_close(&s, &f);
    partd__decode_keys_free(&s);
}

/* Past the small size the keys go into a string table; every key before and
 * after the switch is still found, and no absent key is. */
static void test_large_object_switches_to_a_set(void **state)
{
    (void)state;
    partd_keys s = {0};
    partd_keyset f;
    partd__decode_keys_open(&s, &f);
    char k[32];
    for (int i = 0; i < 5000; i++) {
        int n = snprintf(k, sizeof k, "key%d", i);
        add(&s, &f, k, (size_t)n);
        if (i == 100)
            assert_non_null(f.set);
    }
    for (int i = 0; i < 5000; i++) {
        int n = snprintf(k, sizeof k, "key%d", i);
        assert_true(partd__decode_keys_has(&s, &f, k, (size_t)n));
        n = snprintf(k, sizeof k, "yek%d", i);
        assert_false(partd__decode_keys_has(&s, &f, k, (size_t)n));
    }
    assert_int_equal(f.n_keys, 5000);
    partd__decode_keys_close(&s, &f);
    assert_null(f.set);
    partd__decode_keys_free(&s);
}

/* An inner object has keys of its own: the outer one's do not count, and
 * once the inner one ends its keys are gone and the outer's remain. */
static void test_nested_objects(void **state)
{
    (void)state;
    partd_keys s = {0};
    partd_keyset outer, inner;
    partd__decode_keys_open(&s, &outer);
    add(&s, &outer, "graph", 5);
    size_t used = s.used;
    partd__decode_keys_open(&s, &inner);
    add(&s, &inner, "graph", 5);
    for (int i = 0; i < 40; i++) {
        char k[16];
        int n = snprintf(k, sizeof k, "n%d", i);
        add(&s, &inner, k, (size_t)n);
    }
    partd__decode_keys_close(&s, &inner);
    assert_int_equal(s.used, used);
    assert_true(partd__decode_keys_has(&s, &outer, "graph", 5));
    assert_false(partd__decode_keys_has(&s, &outer, "n1", 2));
    add(&s, &outer, "devices", 7);
    partd__decode_keys_close(&s, &outer);
    assert_int_equal(s.used, 0);
    partd__decode_keys_free(&s);
}

static void test_keys_with_nul_bytes(void **state)
{
    (void)state;
    partd_keys s = {0};
    partd_keyset f;
    partd__decode_keys_open(&s, &f);
    add(&s, &f, "a\0b", 3);
    assert_false(partd__decode_keys_has(&s, &f, "a\0c", 3));
    assert_false(partd__decode_keys_has(&s, &f, "a", 1));
    add(&s, &f, "a", 1);
    add(&s, &f, "", 0);
    assert_true(partd__decode_keys_has(&s, &f, "", 0));
    partd__decode_keys_close(&s, &f);
    partd__decode_keys_free(&s);
}

static void test_add_reports_a_repeat(void **state)
{
    (void)state;
    partd_keys s = {0};
    partd_keyset f;
    partd__decode_keys_open(&s, &f);
    char k[32];
    for (int i = 0; i < 100; i++) {
        int n = snprintf(k, sizeof k, "key%d", i);
        assert_int_equal(partd__decode_keys_add(&s, &f, k, (size_t)n), 0);
        assert_string_equal(partd__decode_keys_last(&s, &f), k);
        /* every key so far is now a duplicate, whether the object is small
         * (compared one by one) or large (its table) */
        for (int j = 0; j <= i; j += 7) {
            int m = snprintf(k, sizeof k, "key%d", j);
            assert_int_equal(partd__decode_keys_add(&s, &f, k, (size_t)m), 1);
        }
    }
    assert_non_null(f.set);
    /* a nested object has its own keys */
    partd_keyset g;
    partd__decode_keys_open(&s, &g);
    assert_int_equal(partd__decode_keys_add(&s, &g, "key5", 4), 0);
    assert_int_equal(partd__decode_keys_add(&s, &g, "key5", 4), 1);
    partd__decode_keys_close(&s, &g);
    assert_int_equal(partd__decode_keys_add(&s, &f, "key5", 4), 1);
    assert_int_equal(partd__decode_keys_add(&s, &f, "key100", 6), 0);
    partd__decode_keys_close(&s, &f);
    assert_null(f.set);
    assert_int_equal(s.used, 0);
    partd__decode_keys_free(&s);
}

/* 2^13 keys whose FNV-1a hashes (what the key sets hashed with before they
 * were keyed) agree in their low 24 bits: a few slots read per key, as for
 * any keys, where FNV-1a and linear probing read 2^13 * 2^13 / 2. */
static void test_crafted_keys_cost_linear(void **state)
{
    (void)state;
    enum { BLOCKS = 13, N = 1 << BLOCKS, LEN = BLOCKS * PARTD_COLLIDE_BLOCK };
    char (*pairs)[PARTD_COLLIDE_BLOCK] = malloc(2 * BLOCKS * sizeof *pairs);
    assert_non_null(pairs);
    assert_int_equal(partd_collide_pairs(BLOCKS, pairs), 0);
    partd_keys s = {0};
    partd_keyset f;
    partd__decode_keys_open(&s, &f);
    char name[LEN + 1];
    for (uint32_t i = 0; i < N; i++) {
        partd_collide_name(pairs, BLOCKS, i, name);
        assert_int_equal(partd__decode_keys_add(&s, &f, name, LEN), 0);
    }
    partd_collide_name(pairs, BLOCKS, 12345 % N, name);
    assert_int_equal(partd__decode_keys_add(&s, &f, name, LEN), 1);
    assert_true(f.set->probes <= (uint64_t)8 * N);
    partd__decode_keys_close(&s, &f);
    partd__decode_keys_free(&s);
    free(pairs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_object),
        cmocka_unit_test(test_large_object_switches_to_a_set),
        cmocka_unit_test(test_nested_objects),
        cmocka_unit_test(test_keys_with_nul_bytes),
        cmocka_unit_test(test_add_reports_a_repeat),
        cmocka_unit_test(test_crafted_keys_cost_linear),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
