/* show_table.c - the cells of `partd show --format text`; see show_table.h. */
#include "show_table.h"

#include "show_fmt.h"

static void pad(partd_buf *b, size_t used, size_t width)
{
    for (; used < width; used++)
        partd_buf_puts(b, " ");
}

void partd__show_table_cell(partd_buf *b, const char *s, size_t width, int right)
{
    size_t n = partd__show_fmt_chars(s);
    if (right)
        pad(b, n, width);
    partd_buf_puts(b, s);
    if (!right)
        pad(b, n, width);
    partd_buf_puts(b, "  ");
}

void partd__show_table_end_line(partd_buf *b)
{
    while (b->len && b->data[b->len - 1] == ' ')
        b->data[--b->len] = '\0';
    partd_buf_puts(b, "\n");
}

void partd__show_table_ms(partd_buf *b, double ms, size_t width)
{
    char num[PARTD_SHOW_NUM_CAP];
    partd__show_fmt_fixed(num, ms, 3);
    partd__show_table_cell(b, num, width, 1);
}

void partd__show_table_name(partd_buf *b, const char *name, size_t width)
{
    partd_buf cut;
    partd_buf_init(&cut);
    partd__show_fmt_plain(&cut, name, PARTD_SHOW_TABLE_NAME_CHARS);
    partd__show_table_cell(b, cut.data ? cut.data : "", width, 0);
    if (cut.failed)
        b->failed = 1;
    partd_buf_free(&cut);
}

size_t partd__show_table_widen(size_t width, const char *name)
{
    size_t n = partd__show_fmt_chars(name);
    n = n > PARTD_SHOW_TABLE_NAME_CHARS + 1 ? PARTD_SHOW_TABLE_NAME_CHARS + 1 : n;
    return n > width ? n : width;
}
