/* test_strtab.c - interned strings: interning, lookup, growth, and a cost
 * that crafted names cannot raise. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collide.h"
#include "partd/strtab.h"

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

/* 2^13 names whose FNV-1a hashes (what the table hashed with before it
 * was keyed) agree in their low 24 bits, interned and looked up again: every operation reads at most
 * PARTD_STRTAB_PROBE_MAX slots, and all of them together a few per name,
 * as for any names. With FNV-1a and linear probing they read 2^13 * 2^13
 * / 2 slots. */
static void test_crafted_names_cost_linear(void **state)
{
    (void)state;
    enum { BLOCKS = 13, N = 1 << BLOCKS, LEN = BLOCKS * PARTD_COLLIDE_BLOCK };
    char (*pairs)[PARTD_COLLIDE_BLOCK] = malloc(2 * BLOCKS * sizeof *pairs);
    char *names = malloc((size_t)N * (LEN + 1));
    assert_non_null(pairs);
    assert_non_null(names);
    assert_int_equal(partd_collide_pairs(BLOCKS, pairs), 0);
    for (uint32_t i = 0; i < N; i++)
        partd_collide_name(pairs, BLOCKS, i, names + (size_t)i * (LEN + 1));
    uint32_t h0 = partd_collide_fnv1a(names, LEN) & PARTD_COLLIDE_MASK;
    for (uint32_t i = 0; i < N; i++) /* they do collide under FNV-1a */
        assert_int_equal(partd_collide_fnv1a(names + (size_t)i * (LEN + 1), LEN) & PARTD_COLLIDE_MASK, h0);
    partd_strtab t;
    partd_strtab_init(&t);
    for (int pass = 0; pass < 2; pass++)
        for (uint32_t i = 0; i < N; i++) {
            uint64_t before = t.probes;
            assert_int_equal(partd_strtab_intern(&t, names + (size_t)i * (LEN + 1), LEN), i);
            assert_true(t.probes - before <= PARTD_STRTAB_PROBE_MAX);
        }
    assert_int_equal(t.count, N);
    assert_true(t.probes <= (uint64_t)8 * N);
    partd_strtab_free(&t);
    free(names);
    free(pairs);
}

/* Two tables draw their own keys: the same names, the same ids. */
static void test_ids_do_not_depend_on_the_key(void **state)
{
    (void)state;
    partd_strtab a, b;
    partd_strtab_init(&a);
    partd_strtab_init(&b);
    char buf[32];
    for (uint32_t i = 0; i < 5000; i++) {
        int n = snprintf(buf, sizeof buf, "layer.%u", i * 7919u % 5000u);
        assert_int_equal(partd_strtab_intern(&a, buf, (size_t)n), partd_strtab_intern(&b, buf, (size_t)n));
    }
    assert_memory_not_equal(a.key, b.key, sizeof a.key);
    partd_strtab_free(&a);
    partd_strtab_free(&b);
}

/* A hint saves hashing again: taken before the table had a key (ignored)
 * or while it grows past several sizes in between, the hinted intern
 * gives what a plain one gives. */
static void test_hinted_interns_match_plain_ones(void **state)
{
    (void)state;
    partd_strtab t;
    partd_strtab_init(&t);
    partd_strtab_hint early = partd_strtab_prefetch(&t, "first", 5);
    assert_int_equal(partd_strtab_intern_hinted(&t, "first", 5, early), 0);
    partd_strtab_hint h = partd_strtab_prefetch(&t, "later", 5);
    char buf[32];
    for (uint32_t i = 0; i < 100000; i++) {
        int n = snprintf(buf, sizeof buf, "n%u", i);
        partd_strtab_intern(&t, buf, (size_t)n);
    }
    uint32_t id = partd_strtab_intern_hinted(&t, "later", 5, h);
    assert_int_equal(id, t.count - 1);
    assert_int_equal(partd_strtab_find(&t, "later", 5), id);
    assert_int_equal(partd_strtab_intern(&t, "later", 5), id);
    h = partd_strtab_prefetch(&t, "n7", 2);
    assert_int_equal(partd_strtab_intern_hinted(&t, "n7", 2, h), 8);
    partd_strtab_free(&t);
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
        cmocka_unit_test(test_crafted_names_cost_linear),
        cmocka_unit_test(test_ids_do_not_depend_on_the_key),
        cmocka_unit_test(test_hinted_interns_match_plain_ones),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
