/* test_cache.c - the result LRU: byte budget (charging what entries hold
 * in memory), recency, references that outlive eviction, and concurrent
 * use. */
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "jobs/cache.h"
#include "partd/partd.h"

static char *text_of(size_t n, char fill)
{
    char *s = malloc(n + 1);
    memset(s, fill, n);
    s[n] = '\0';
    return s;
}

/* Caches a document of n copies of fill (no coded forms). */
static int put_text(partd_cache *c, const char *key, const char *etag, size_t n, char fill,
                    partd_cache_entry **out)
{
    partd_blob forms[PARTD_CODINGS] = {{text_of(n, fill), n}};
    int rc = partd_cache_put(c, key, etag, forms, strdup("{}"), out);
    assert_null(forms[PARTD_CODING_IDENTITY].data); /* ownership taken */
    return rc;
}

static void put(partd_cache *c, const char *key, size_t n)
{
    assert_int_equal(put_text(c, key, "sha256:e", n, 'x', NULL), PARTD_OK);
}

static int has(partd_cache *c, const char *key)
{
    partd_cache_entry *e = partd_cache_get(c, key);
    partd_cache_entry_release(e);
    return e != NULL;
}

static void test_hit_and_miss(void **state)
{
    (void)state;
    partd_cache *c = partd_cache_new(1 << 20);
    put(c, "a", 100);
    partd_cache_entry *e = partd_cache_get(c, "a");
    assert_non_null(e);
    assert_int_equal(e->forms[PARTD_CODING_IDENTITY].len, 100);
    assert_string_equal(e->etag, "sha256:e");
    assert_string_equal(e->summary, "{}");
    partd_cache_entry_release(e);
    assert_null(partd_cache_get(c, "b"));
    partd_cache_stats st;
    partd_cache_stats_get(c, &st);
    assert_int_equal(st.entries, 1);
    assert_true(st.bytes >= 100);
    assert_int_equal(st.hits, 1);
    assert_int_equal(st.misses, 1);
    partd_cache_free(c);
}

static void test_evicts_least_recently_used_within_budget(void **state)
{
    (void)state;
    partd_cache *c = partd_cache_new(3 * 1500);
    put(c, "a", 1000);
    put(c, "b", 1000);
    put(c, "c", 1000);
    assert_true(has(c, "a")); /* a is now the most recent */
    put(c, "d", 1000);        /* over budget: b goes */
    assert_true(has(c, "a"));
    assert_false(has(c, "b"));
    assert_true(has(c, "c"));
    assert_true(has(c, "d"));
    partd_cache_stats st;
    partd_cache_stats_get(c, &st);
    assert_true(st.bytes <= 3 * 1500);
    partd_cache_free(c);
}

static void test_larger_than_budget_is_not_kept_but_handed_out(void **state)
{
    (void)state;
    partd_cache *c = partd_cache_new(1000);
    put(c, "small", 10);
    partd_cache_entry *e = NULL;
    assert_int_equal(put_text(c, "huge", "sha256:h", 5000, 'y', &e),
                     PARTD_OK);
    assert_non_null(e);
    assert_int_equal(e->forms[PARTD_CODING_IDENTITY].len, 5000);
    assert_int_equal(e->forms[PARTD_CODING_IDENTITY].data[4999], 'y');
    partd_cache_entry_release(e);
    assert_false(has(c, "huge"));
    assert_true(has(c, "small")); /* not evicted for something never kept */
    partd_cache_free(c);
}

static void test_reference_outlives_eviction_and_removal(void **state)
{
    (void)state;
    partd_cache *c = partd_cache_new(1500);
    put(c, "a", 1000);
    partd_cache_entry *e = partd_cache_get(c, "a");
    put(c, "b", 1000); /* evicts a */
    assert_false(has(c, "a"));
    assert_int_equal(e->forms[PARTD_CODING_IDENTITY].data[999], 'x'); /* still readable (ASan checks) */
    partd_cache_entry_release(e);
    e = partd_cache_get(c, "b");
    partd_cache_remove(c, "b");
    assert_false(has(c, "b"));
    assert_int_equal(e->forms[PARTD_CODING_IDENTITY].len, 1000);
    partd_cache_entry_release(e);
    partd_cache_free(c);
}

static void test_second_put_keeps_the_first(void **state)
{
    (void)state;
    partd_cache *c = partd_cache_new(1 << 20);
    put(c, "k", 10);
    partd_cache_entry *e = NULL;
    put_text(c, "k", "sha256:other", 20, 'z', &e);
    assert_int_equal(e->forms[PARTD_CODING_IDENTITY].len, 10); /* deterministic results: the first stays */
    partd_cache_entry_release(e);
    partd_cache_stats st;
    partd_cache_stats_get(c, &st);
    assert_int_equal(st.entries, 1);
    partd_cache_free(c);
}

static void test_coded_forms_are_kept_and_charged(void **state)
{
    (void)state;
    partd_cache *c = partd_cache_new(1 << 20);
    partd_blob forms[PARTD_CODINGS] = {{text_of(1000, 'd'), 1000}};
    forms[PARTD_CODING_GZIP] = (partd_blob){text_of(300, 'g'), 300};
    assert_int_equal(partd_cache_put(c, "k", "sha256:e", forms, strdup("{}"), NULL), PARTD_OK);
    assert_null(forms[PARTD_CODING_GZIP].data);
    partd_cache_entry *e = partd_cache_get(c, "k");
    assert_non_null(e);
    assert_int_equal(partd_cache_entry_codings(e),
                     1u << PARTD_CODING_IDENTITY | 1u << PARTD_CODING_GZIP);
    assert_int_equal(e->forms[PARTD_CODING_GZIP].len, 300);
    assert_null(e->forms[PARTD_CODING_ZSTD].data);
    partd_cache_entry_release(e);
    partd_cache_stats st;
    partd_cache_stats_get(c, &st);
    assert_true(st.bytes >= 1300); /* every form counts against the budget */
    partd_cache_free(c);
}

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

#ifdef UNDER_ASAN
/* AddressSanitizer's allocator replaces glibc's, whose figures then stay
 * 0; it counts the bytes it has handed out itself. */
size_t __sanitizer_get_current_allocated_bytes(void);
static size_t heap_in_use(void)
{
    return __sanitizer_get_current_allocated_bytes();
}
#else
/* Bytes malloc has handed out and not taken back (heap and mmap). */
static size_t heap_in_use(void)
{
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}
#endif

/* The budget bounds memory: what the cache charges is what it holds, here
 * forms whose buffers are much larger than their lengths, as a rendered
 * document's and a compressor's are. The heap grows by what the cache
 * says it holds (within 5%: malloc's own rounding). */
static void test_charges_what_it_holds(void **state)
{
    (void)state;
    partd_cache *c = partd_cache_new(64 << 20);
    size_t before = heap_in_use();
    for (int i = 0; i < 200; i++) {
        char key[32];
        snprintf(key, sizeof key, "k%d", i);
        partd_blob forms[PARTD_CODINGS] = {{calloc(1, 65536), 2000}};
        forms[PARTD_CODING_ZSTD] = (partd_blob){calloc(1, 2100), 300};
        forms[PARTD_CODING_GZIP] = (partd_blob){calloc(1, 2100), 400};
        assert_int_equal(partd_cache_put(c, key, "sha256:e", forms, strdup("{\"n\":1}"), NULL),
                         PARTD_OK);
    }
    size_t held = heap_in_use() - before;
    partd_cache_stats st;
    partd_cache_stats_get(c, &st);
    assert_int_equal(st.entries, 200);
    if (st.bytes < held - held / 20 || st.bytes > held + held / 20)
        fail_msg("the cache charges %llu bytes but holds %zu",
                 (unsigned long long)st.bytes, held);
    partd_cache_free(c);
}

static void *hammer(void *arg)
{
    partd_cache *c = arg;
    char key[32];
    for (int i = 0; i < 20000; i++) {
        snprintf(key, sizeof key, "k%d", i % 97);
        if (i % 3 == 0) {
            put_text(c, key, "sha256:e", 64, 'q', NULL);
        } else {
            partd_cache_entry *e = partd_cache_get(c, key);
            if (e) {
                assert_int_equal(e->forms[PARTD_CODING_IDENTITY].data[63], 'q');
                partd_cache_entry_release(e);
            }
        }
        if (i % 101 == 0)
            partd_cache_remove(c, key);
    }
    return NULL;
}

static void test_concurrent_use(void **state)
{
    (void)state;
    partd_cache *c = partd_cache_new(40 * 300);
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, hammer, c);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    partd_cache_stats st;
    partd_cache_stats_get(c, &st);
    assert_true(st.bytes <= 40 * 300);
    partd_cache_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hit_and_miss),
        cmocka_unit_test(test_evicts_least_recently_used_within_budget),
        cmocka_unit_test(test_larger_than_budget_is_not_kept_but_handed_out),
        cmocka_unit_test(test_reference_outlives_eviction_and_removal),
        cmocka_unit_test(test_second_put_keeps_the_first),
        cmocka_unit_test(test_coded_forms_are_kept_and_charged),
        cmocka_unit_test(test_charges_what_it_holds),
        cmocka_unit_test(test_concurrent_use),
    };
    return cmocka_run_group_tests_name("cache", tests, NULL, NULL);
}
