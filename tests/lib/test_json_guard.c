/* test_json_guard.c - json_guard.c: outside a section jansson allocates as
 * usual; a section without a failure ends 0; a real allocation failure in
 * the middle of a parse (a child process whose address space is capped)
 * makes the section end 1 and the parse fail cleanly instead of reading
 * text it never saved. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

#include "json_guard.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#else
#define UNDER_ASAN 0
#endif

static void test_sections_without_failure_end_0(void **state)
{
    (void)state;
    partd_json_guard_begin();
    json_error_t e;
    json_t *doc = json_loads("{\"a\":[1,2,\"three\"]}", 0, &e);
    assert_int_equal(partd_json_guard_end(), 0);
    assert_non_null(doc);
    json_decref(doc); /* memory from inside a section is freed as usual */
    json_t *outside = json_pack("{s:i}", "b", 2);
    assert_non_null(outside);
    json_decref(outside);
    assert_int_equal(partd_json_guard_end(), 0); /* an empty end stays 0 */
}

/* In a child: parse a document of many long strings with the address space
 * capped, so an allocation fails part of the way; exit 0 when the guard saw
 * it and the parse failed cleanly, 2 when nothing failed, 1 otherwise. */
static int parse_under_cap(size_t cap)
{
    size_t n = 200000;
    char *text = malloc(n * 24 + 16);
    size_t len = 0;
    text[len++] = '[';
    for (size_t i = 0; i < n; i++)
        len += (size_t)sprintf(text + len, "%s\"s%018zu\"", i ? "," : "", i);
    text[len++] = ']';
    text[len] = '\0';
    struct rlimit rl = {cap, cap};
    setrlimit(RLIMIT_AS, &rl);
    partd_json_guard_begin();
    json_error_t e;
    json_t *doc = json_loadb(text, len, 0, &e);
    int failed = partd_json_guard_end();
    if (!failed)
        return doc ? 2 : 1;
    return doc ? 1 : 0;
}

static void test_a_failed_allocation_fails_the_whole_parse(void **state)
{
    (void)state;
    if (UNDER_ASAN)
        skip(); /* ASan reserves more address space than any cap allows */
    /* The current size plus the text and a little: the parse needs more. */
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    assert_int_equal(fscanf(f, "%lu", &pages), 1);
    fclose(f);
    size_t cap = (size_t)pages * (size_t)sysconf(_SC_PAGESIZE) + ((size_t)12 << 20);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(parse_under_cap(cap));
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status)); /* no crash, no heap corruption abort */
    assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sections_without_failure_end_0),
        cmocka_unit_test(test_a_failed_allocation_fails_the_whole_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
