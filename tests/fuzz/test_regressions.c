/*
 * test_regressions.c - every input a fuzzer or a sanitizer ever tripped on,
 * plus the whole seed corpus, replayed through the fuzz targets' checks.
 *
 * The checks are the fuzz drivers' own (tests/fuzz/targets.c and
 * http_harness.c, compiled into this binary), so `make test` and `make asan`
 * run them on every committed input without libFuzzer:
 *   tests/fuzz/corpus/<driver>/       the seed corpus
 *   tests/fuzz/regressions/<driver>/  inputs that once crashed or broke an
 *                                     invariant (named after what they hit)
 * Named C tests below pin the individual findings with their expectation.
 * Run from the tree root (as `make test` does).
 */
#define _GNU_SOURCE /* before any header: the harness uses nftw, strcasestr */
#include "testutil.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fs.h"
#include "partd/partd.h"
#include "partd/result.h"

/* The targets are test code shared with the fuzz drivers; the Makefile links
 * only tests/support/ into tests, so they are compiled in here. */
#include "http_harness.c"
#include "targets.c"

typedef const char *(*target_fn)(const uint8_t *data, size_t size);

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Replays every file of `dir` (sorted, so runs are repeatable); a missing
 * directory counts as empty. Returns the number of files replayed. */
static unsigned replay_dir(const char *dir, target_fn target)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            names = realloc(names, cap * sizeof *names);
            assert_non_null(names);
        }
        names[n] = strdup(e->d_name);
        assert_non_null(names[n]);
        n++;
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof *names, by_name);
    for (size_t i = 0; i < n; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        size_t len = 0;
        char *data = NULL;
        assert_int_equal(partd_fs_read_file(path, SIZE_MAX, &data, &len), PARTD_OK);
        const char *bad = target((const uint8_t *)data, len);
        if (bad)
            fprintf(stderr, "%s: %s\n", path, bad);
        assert_null(bad);
        free(data);
        free(names[i]);
    }
    free(names);
    return (unsigned)n;
}

static void test_request_corpus(void **state)
{
    (void)state;
    unsigned n = replay_dir("tests/fuzz/corpus/request", partd_fuzz_request);
    n += replay_dir("tests/fuzz/regressions/request", partd_fuzz_request);
    assert_true(n >= 20); /* the seeds are there: the test is not vacuous */
}

static void test_modules_corpus(void **state)
{
    (void)state;
    unsigned n = replay_dir("tests/fuzz/corpus/modules", partd_fuzz_modules);
    n += replay_dir("tests/fuzz/regressions/modules", partd_fuzz_modules);
    assert_true(n >= 5);
}

static void test_http_corpus(void **state)
{
    (void)state;
    assert_int_equal(partd_fuzz_http_start(), 0);
    unsigned n = replay_dir("tests/fuzz/corpus/http", partd_fuzz_http_one);
    n += replay_dir("tests/fuzz/regressions/http", partd_fuzz_http_one);
    partd_fuzz_http_stop();
    assert_true(n >= 10);
}

/* Found by fuzz_request: a plan with a single partition has no parents and
 * no children, and linking it passed qsort a NULL array (undefined
 * behaviour that UBSan reports; lib/plan.c finish()). */
static void test_single_stage_plan_links(void **state)
{
    (void)state;
    static const char req[] =
        "{\"graph\":{\"nodes\":["
        "{\"name\":\"x\",\"op\":\"placeholder\",\"output_bytes\":-0},"
        "{\"name\":\"a\",\"op\":\"call_module\",\"inputs\":[\"x\"],\"output_bytes\":4},"
        "{\"name\":\"o\",\"op\":\"output\",\"inputs\":[\"a\"]}]},"
        "\"devices\":[{\"name\":\"d0\",\"memory_bytes\":100},"
        "{\"name\":\"d1\",\"memory_bytes\":100}]}";
    int rc;
    partd_problem pb;
    char *out = tu_plan_json(req, &rc, &pb);
    assert_int_equal(rc, PARTD_OK);
    assert_non_null(strstr(out, "\"parents\":[],\"children\":[]"));
    free(out);
    partd_problem_free(&pb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_stage_plan_links),
        cmocka_unit_test(test_request_corpus),
        cmocka_unit_test(test_modules_corpus),
        cmocka_unit_test(test_http_corpus),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
