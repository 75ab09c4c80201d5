/*
 * decode_scan.h - the pre-scan of the request decoder's reading layer:
 * the bytes of a chunk that jansson refuses and yajl lets through
 * (decode_stream.h says which), and jansson's one odd acceptance, a NUL
 * byte that ends a number or a literal. The state carries across chunks,
 * so a character or an escape may be split anywhere. Nothing allocates.
 */
#ifndef PARTD_DECODE_SCAN_H
#define PARTD_DECODE_SCAN_H

#include <stddef.h>
#include <stdint.h>

typedef enum partd_esc_state {
    PARTD_ESC_NONE, PARTD_ESC_BACKSLASH, PARTD_ESC_HEX, PARTD_ESC_NEED_BS, PARTD_ESC_NEED_U
} partd_esc_state;

typedef struct partd_jscan {
    partd_esc_state esc, esc0; /* now; at the start of the chunk */
    uint8_t hex_n, second;
    uint32_t hex, high;
    uint8_t utf8_left;         /* continuation bytes still expected */
    uint8_t utf8_lo, utf8_hi;  /* range of the next one */
    uint8_t in_string;         /* at the start of the chunk */
    unsigned char last;        /* the last byte of the previous chunk */
    size_t escaped_quotes;     /* \" in the current chunk */
    size_t lines, quotes;      /* newlines and quotes in the current chunk */
    /* the NUL rule's walk through the current chunk: which, how far, and
     * whether a string (and an escape in it) is open there */
    const char *nul_chunk;
    size_t nul_at;
    uint8_t nul_in, nul_esc;
    uint64_t nul_walked;       /* bytes that walk has read, all chunks */
} partd_jscan;

/* Offset of the first byte of p[0, n) that jansson refuses and yajl may
 * not, with `what` (cap bytes) saying why; n when there is none. */
size_t partd__decode_scan_chunk(partd_jscan *s, const char *p, size_t n, char *what, size_t cap);

/* 1 when the NUL at p[x] of the current chunk is one jansson reads as a
 * token boundary. Calls for one chunk with x ascending read it once; a
 * new chunk, or an x before the last, starts the walk at the chunk's
 * start. */
int partd__decode_scan_skips_nul(partd_jscan *s, const char *p, size_t x);

/* The chunk p[0, n) was parsed (after partd__decode_scan_chunk found it good:
 * lines and quotes count the whole chunk then). */
void partd__decode_scan_done(partd_jscan *s, const char *p, size_t n);

#endif
