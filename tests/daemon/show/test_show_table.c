/*
 * test_show_table.c - daemon/show/show_table.c, the cells of `partd show
 * --format text`: figures right-aligned, names left-aligned, cut to
 * PARTD_SHOW_TABLE_NAME_CHARS characters with an ellipsis and stripped of
 * control characters, two spaces after each cell, none at a line's end.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/buf.h"
#include "show/show_table.h"

static void test_cells_align_and_lines_end_clean(void **state)
{
    (void)state;
    partd_buf b;
    partd_buf_init(&b);
    partd__show_table_cell(&b, "stage", 7, 0);
    partd__show_table_cell(&b, "42", 5, 1);
    partd__show_table_ms(&b, 1.5, 9);
    partd__show_table_end_line(&b);
    partd__show_table_name(&b, "gpu0", 6);
    partd__show_table_ms(&b, 12345.6789, 9);
    partd__show_table_end_line(&b);
    assert_false(b.failed);
    assert_string_equal(b.data, "stage       42      1.500\n"
                                "gpu0    12345.679\n");
    partd_buf_free(&b);
}

/* A name longer than the limit is cut, with an ellipsis: the cell counts
 * characters, not bytes, so a multi-byte name pads like any other. */
static void test_names_are_cut_and_counted_in_characters(void **state)
{
    (void)state;
    char longname[64];
    memset(longname, 'x', 40);
    longname[40] = '\0';
    partd_buf b;
    partd_buf_init(&b);
    partd__show_table_name(&b, longname, 10);
    partd__show_table_end_line(&b);
    char want[64];
    memset(want, 'x', PARTD_SHOW_TABLE_NAME_CHARS);
    strcpy(want + PARTD_SHOW_TABLE_NAME_CHARS, "\xE2\x80\xA6\n");
    assert_string_equal(b.data, want);
    partd_buf_reset(&b);
    partd__show_table_name(&b, "gp\xC3\xBC", 5); /* 3 characters, 4 bytes */
    partd__show_table_cell(&b, "|", 1, 0);
    partd__show_table_end_line(&b);
    assert_string_equal(b.data, "gp\xC3\xBC    |\n");
    partd_buf_free(&b);
}

/* Nothing a name holds can move the terminal's cursor or colour it. */
static void test_control_characters_never_reach_the_terminal(void **state)
{
    (void)state;
    partd_buf b;
    partd_buf_init(&b);
    partd__show_table_name(&b, "a\x1b[31mb\nc", 0);
    partd__show_table_end_line(&b);
    assert_null(strchr(b.data, '\x1b'));
    assert_string_equal(b.data, "a?[31mb?c\n");
    partd_buf_free(&b);
}

static void test_widen_to_the_shown_name(void **state)
{
    (void)state;
    assert_int_equal(partd__show_table_widen(4, "ab"), 4);
    assert_int_equal(partd__show_table_widen(4, "abcdef"), 6);
    assert_int_equal(partd__show_table_widen(4, "gp\xC3\xBC\xC3\xBC"), 4);
    char longname[100];
    memset(longname, 'y', 99);
    longname[99] = '\0';
    /* a cut name shows the limit's characters and the ellipsis */
    assert_int_equal(partd__show_table_widen(4, longname), PARTD_SHOW_TABLE_NAME_CHARS + 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cells_align_and_lines_end_clean),
        cmocka_unit_test(test_names_are_cut_and_counted_in_characters),
        cmocka_unit_test(test_control_characters_never_reach_the_terminal),
        cmocka_unit_test(test_widen_to_the_shown_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
