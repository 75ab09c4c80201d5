/*
 * show_table.h - the cells of `partd show --format text` (show_text.c,
 * show_text_training.c): figures right-aligned, names left-aligned and cut,
 * two spaces after each cell. Private to daemon/show.
 *
 * Everything appends to a partd_buf (buf.h) and fails only by its `failed`
 * flag. Names pass through partd__show_fmt_plain(), so none can send
 * control sequences to the terminal.
 */
#ifndef PARTD_SHOW_TABLE_H
#define PARTD_SHOW_TABLE_H

#include <stddef.h>

#include "core/buf.h"

/* Names in the table: at most this many characters. */
#define PARTD_SHOW_TABLE_NAME_CHARS 32

/* A cell of width characters: right-aligned (figures) or left-aligned. */
void partd__show_table_cell(partd_buf *b, const char *s, size_t width, int right);
/* A figure in ms with three decimals, right-aligned. */
void partd__show_table_ms(partd_buf *b, double ms, size_t width);
/* A name, cut to PARTD_SHOW_TABLE_NAME_CHARS, left-aligned. */
void partd__show_table_name(partd_buf *b, const char *name, size_t width);
/* width, widened to hold name as a name cell shows it. */
size_t partd__show_table_widen(size_t width, const char *name);
/* Ends a line: cells end with two spaces, a line does not. */
void partd__show_table_end_line(partd_buf *b);

#endif
