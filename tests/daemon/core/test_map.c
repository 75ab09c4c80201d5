/* test_map.c - daemon/core/map.c: the string-keyed hash map. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

#include "core/map.h"
#include "partd/partd.h"

static void test_map(void **state)
{
    (void)state;
    partd_map m;
    partd_map_init(&m);
    static char keys[1000][16];
    for (int i = 0; i < 1000; i++) {
        snprintf(keys[i], sizeof keys[i], "k%d", i);
        assert_int_equal(partd_map_put(&m, keys[i], &keys[i]), PARTD_OK);
    }
    assert_int_equal(m.count, 1000);
    for (int i = 0; i < 1000; i++)
        assert_ptr_equal(partd_map_get(&m, keys[i]), &keys[i]);
    assert_null(partd_map_get(&m, "nope"));
    for (int i = 0; i < 1000; i += 2)
        assert_ptr_equal(partd_map_remove(&m, keys[i]), &keys[i]);
    assert_int_equal(m.count, 500);
    assert_null(partd_map_get(&m, "k0"));
    assert_non_null(partd_map_get(&m, "k1"));
    assert_null(partd_map_remove(&m, "k0"));
    partd_map_free(&m);
}

static void test_map_replaces_and_grows_back_empty(void **state)
{
    (void)state;
    partd_map m;
    partd_map_init(&m);
    int a = 1, b = 2;
    assert_int_equal(partd_map_put(&m, "k", &a), PARTD_OK);
    assert_int_equal(partd_map_put(&m, "k", &b), PARTD_OK);
    assert_int_equal(m.count, 1);
    assert_ptr_equal(partd_map_get(&m, "k"), &b);
    assert_ptr_equal(partd_map_remove(&m, "k"), &b);
    assert_int_equal(m.count, 0);
    assert_null(partd_map_get(&m, "k"));
    partd_map_free(&m);
}

/* FNV-1a (64-bit), the hash the map used before it had a key. */
static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        h = (h ^ *p) * 1099511628211ULL;
    return h;
}

static size_t longest_chain(const partd_map *m)
{
    size_t longest = 0;
    for (size_t i = 0; i < m->n_buckets; i++) {
        size_t n = 0;
        for (const partd_map_entry *e = m->buckets[i]; e; e = e->next)
            n++;
        if (n > longest)
            longest = n;
    }
    return longest;
}

/* 512 keys that an unkeyed FNV-1a puts in one bucket of any map up to
 * 2^12 buckets (found by trying keys, as a client would try requests):
 * with the map's own key they spread like any others. */
static void test_keys_chosen_to_collide_spread(void **state)
{
    (void)state;
    enum { N = 512 };
    static char keys[N][24];
    uint64_t want = fnv1a("k0") & 0xfff;
    int n = 0;
    for (uint64_t i = 0; n < N; i++) {
        char k[24];
        snprintf(k, sizeof k, "k%llu", (unsigned long long)i);
        if ((fnv1a(k) & 0xfff) == want)
            memcpy(keys[n++], k, sizeof k);
    }
    partd_map m;
    partd_map_init(&m);
    for (int i = 0; i < N; i++)
        assert_int_equal(partd_map_put(&m, keys[i], keys[i]), PARTD_OK);
    assert_true(m.n_buckets >= N && m.n_buckets <= 4096);
    assert_true(longest_chain(&m) <= 8);
    for (int i = 0; i < N; i++)
        assert_ptr_equal(partd_map_get(&m, keys[i]), keys[i]);
    partd_map_free(&m);
}

/* Two maps place the same keys differently: the bucket is not a function
 * of the key alone. */
static void test_each_map_has_its_own_key(void **state)
{
    (void)state;
    partd_map a, b;
    partd_map_init(&a);
    partd_map_init(&b);
    assert_memory_not_equal(a.key, b.key, sizeof a.key);
    partd_map_free(&a);
    partd_map_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_map),
        cmocka_unit_test(test_map_replaces_and_grows_back_empty),
        cmocka_unit_test(test_keys_chosen_to_collide_spread),
        cmocka_unit_test(test_each_map_has_its_own_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
