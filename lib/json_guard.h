/*
 * json_guard.h - jansson allocations that stay failed once one fails.
 *
 * jansson's parser ignores a failed allocation while it saves the text of a
 * token (load.c: lex_save), then reads that text back past its end: an
 * allocation failure in the middle of json_loadb corrupts the heap. Inside
 * a guarded section, once one of jansson's allocations on this thread has
 * failed, every later one fails too, so the parser stops at its next
 * allocation with an error instead of reading text it never saved; the
 * section then reports that memory ran out, which tells an out-of-memory
 * parse from a syntax error exactly.
 *
 * The unit owns jansson's allocation functions: it installs them before
 * main (a constructor; they are malloc and free outside a section, so
 * memory jansson allocated earlier is freed the same way) and never changes
 * them again, so threads never race on them. Sections are per thread and
 * may not nest.
 */
#ifndef PARTD_JSON_GUARD_H
#define PARTD_JSON_GUARD_H

void partd_json_guard_begin(void);

/* Ends the section: 1 when one of jansson's allocations failed inside it,
 * else 0. */
int partd_json_guard_end(void);

#endif
