/* test_console.c - the console page (daemon/http/handlers_console.c): the
 * Content-Security-Policy made from a page's inline blocks (hashes checked
 * against SHA-256 values computed independently, with Python's hashlib),
 * tags inside comments, several blocks, a buffer too small; and the
 * embedded page itself: one script and one style block, allowed by hash
 * alone. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "http/http_internal.h"
#include "partd/partd.h"

/* base64(sha256(...)) of "a{}", "x()" and "y()". */
#define H_STYLE "'sha256-X1RutGBrXCt9KkSaXMK7tHftWiRscFHOhxsS8tv8hBk='"
#define H_X "'sha256-D6IGS8VMvCoyaR/l0h9tERrBTATY01CoPS7l6xDv0kI='"
#define H_Y "'sha256-nwG+cZ8J4yZ7RZ4RWxVDwCwkMn9GJelY2VgKXNi2Uvk='"

#define TAIL                                                                                  \
    "; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; "   \
    "form-action 'none'"

static int csp(const char *page, char *out, size_t cap)
{
    return partd__http_console_csp((const unsigned char *)page, strlen(page), out, cap);
}

static void test_hashes_of_inline_blocks(void **state)
{
    (void)state;
    char out[512];
    assert_int_equal(csp("<html><style>a{}</style><body><script>x()</script></body>", out,
                         sizeof out),
                     PARTD_OK);
    assert_string_equal(out, "default-src 'none'; script-src " H_X "; style-src " H_STYLE TAIL);
}

static void test_every_block_and_only_real_ones(void **state)
{
    (void)state;
    char out[512];
    /* A tag named in a comment is text, not a block; the second script
     * counts; an unclosed block is not one. */
    assert_int_equal(csp("<!-- the <script> and <style> blocks --><script>x()</script>"
                         "<p>a</p><script>y()</script><style>a{}</style><script>z",
                         out, sizeof out),
                     PARTD_OK);
    assert_string_equal(out, "default-src 'none'; script-src " H_X " " H_Y
                             "; style-src " H_STYLE TAIL);
    /* No block at all: nothing may run or style. */
    assert_int_equal(csp("<p>plain</p><!-- unclosed <script>", out, sizeof out), PARTD_OK);
    assert_string_equal(out, "default-src 'none'; script-src; style-src" TAIL);
}

static void test_too_small(void **state)
{
    (void)state;
    char out[100];
    assert_int_equal(csp("<style>a{}</style><script>x()</script>", out, sizeof out),
                     PARTD_ETOOBIG);
    assert_string_equal(out, "");
    assert_int_equal(csp("", out, 10), PARTD_ETOOBIG);
    assert_string_equal(out, "");
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

static void test_embedded_page(void **state)
{
    (void)state;
    char out[512];
    assert_int_equal(
        partd__http_console_csp(partd_console_page, partd_console_page_len, out, sizeof out),
        PARTD_OK);
    assert_int_equal(count(out, "'sha256-"), 2);
    assert_null(strstr(out, "unsafe"));
    assert_non_null(strstr(out, "script-src 'sha256-"));
    assert_non_null(strstr(out, "style-src 'sha256-"));
    /* The page as the build embedded it: a whole HTML document. */
    char *page = malloc(partd_console_page_len + 1);
    assert_non_null(page);
    memcpy(page, partd_console_page, partd_console_page_len);
    page[partd_console_page_len] = '\0';
    assert_int_equal(strncmp(page, "<!DOCTYPE html>", 15), 0);
    assert_non_null(strstr(page, "</html>"));
    free(page);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hashes_of_inline_blocks),
        cmocka_unit_test(test_every_block_and_only_real_ones),
        cmocka_unit_test(test_too_small),
        cmocka_unit_test(test_embedded_page),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
