/*
 * decode_token.c - where the tokens at the edges of a chunk start and end,
 * for the reading layer that holds a token cut by a chunk's end back from
 * yajl until it is whole (decode_stream.c says why): the end of a string
 * (its unescaped quote, with a run of backslashes that may have begun in
 * the chunk before), the run of word bytes that makes a number or a
 * literal, and how many bytes of a token yajl is left holding unfinished.
 *
 * The pre-scan's counts (decode_scan.h: quotes, escaped quotes, whether a
 * string was open at the chunk's start) tell where a string ends without
 * reading the chunk again. Nothing allocates and nothing fails: every
 * answer is an offset, SIZE_MAX meaning "past the chunk".
 */
#define _GNU_SOURCE /* memrchr */
#include <stdint.h>
#include <string.h>

#include "decode_internal.h"

static int word_byte(unsigned char c)
{
    return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') || c == '-' ||
           c == '+' || c == '.';
}

/* 1 when the quote at p[x] is escaped: an odd run of backslashes before
 * it, counting the one left open by the previous chunk (esc) when the run
 * reaches `from`, the start of the string's part in p. */
static int escaped(const char *p, size_t from, size_t x, int esc)
{
    size_t run = 0;
    while (x - run > from && p[x - run - 1] == '\\')
        run++;
    if (x - run == from)
        run += (size_t)esc;
    return (int)(run & 1);
}

/* Just past the first unescaped quote of p[from, n), or SIZE_MAX. */
static size_t string_end(const char *p, size_t from, size_t n, int esc)
{
    for (size_t i = from; i < n;) {
        const char *q = memchr(p + i, '"', n - i);
        if (!q)
            break;
        size_t x = (size_t)(q - p);
        if (!escaped(p, from, x, esc))
            return x + 1;
        i = x + 1;
    }
    return SIZE_MAX;
}

/* The last unescaped quote of p[from, n), or SIZE_MAX. */
static size_t last_quote(const char *p, size_t from, size_t n, int esc)
{
    for (size_t end = n; end > from;) {
        const char *q = memrchr(p + from, '"', end - from);
        if (!q)
            break;
        size_t x = (size_t)(q - p);
        if (!escaped(p, from, x, esc))
            return x;
        end = x;
    }
    return SIZE_MAX;
}

size_t partd__decode_token_open_after(const char *p, size_t from, size_t to, size_t open,
                                      int in_string, int esc)
{
    if (in_string) {
        size_t q = last_quote(p, from, to, esc);
        return q == SIZE_MAX ? open + (to - from) : to - q;
    }
    size_t t = to;
    while (t > from && word_byte((unsigned char)p[t - 1]))
        t--;
    return t == from ? open + (to - from) : to - t;
}

size_t partd__decode_token_held_end(const partd_jscan *scan, partd_jheld held, const char *p,
                                    size_t n)
{
    if (held == PARTD_HELD_WORD) {
        size_t i = 0;
        while (i < n && word_byte((unsigned char)p[i]))
            i++;
        return i < n ? i : SIZE_MAX;
    }
    /* no unescaped quote in the chunk: all of it is in the string */
    if (scan->quotes == scan->escaped_quotes)
        return SIZE_MAX;
    return string_end(p, 0, n, scan->esc0 == PARTD_ESC_BACKSLASH);
}

size_t partd__decode_token_cut(const partd_jscan *scan, const char *p, size_t from, size_t n,
                               partd_jheld *kind, int *in_string)
{
    *in_string = scan->in_string ^ (int)((scan->quotes - scan->escaped_quotes) & 1);
    *kind = PARTD_HELD_NONE;
    if (*in_string) {
        int esc = from == 0 && scan->esc0 == PARTD_ESC_BACKSLASH;
        size_t q = last_quote(p, from, n, esc);
        if (q == SIZE_MAX)
            return n; /* not JSON; yajl will say so */
        *kind = PARTD_HELD_STRING;
        return q;
    }
    size_t t = n;
    while (t > from && word_byte((unsigned char)p[t - 1]))
        t--;
    if (t < n)
        *kind = PARTD_HELD_WORD;
    return t;
}
