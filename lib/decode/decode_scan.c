/* decode_scan.c - the pre-scan of a chunk; see decode_scan.h. */
#include "decode_scan.h"

#include <stdio.h>
#include <string.h>

static void nul_walk_start(partd_jscan *s, const char *p)
{
    s->nul_chunk = p;
    s->nul_at = 0;
    s->nul_in = s->in_string;
    s->nul_esc = s->esc0 == PARTD_ESC_BACKSLASH;
}

/* jansson reads a NUL byte that ends a number or a literal (true, false,
 * null) as nothing: its lexer puts the byte back, and its reader takes a
 * NUL in its look-ahead for "read the next byte". Such a NUL is read here
 * as a token boundary (only that one: another NUL right after it is an
 * error). Whether the NUL is in a string is known by walking the chunk
 * from where the last call left off, so that a chunk full of NULs is
 * still read once. */
int partd__decode_scan_skips_nul(partd_jscan *s, const char *p, size_t x)
{
    if (p != s->nul_chunk || x < s->nul_at) /* a walk from the chunk's start */
        nul_walk_start(s, p);
    int in = s->nul_in, esc = s->nul_esc;
    for (size_t i = s->nul_at; i < x; i++) {
        char c = p[i];
        if (!in)
            in = c == '"';
        else if (esc)
            esc = 0;
        else if (c == '\\')
            esc = 1;
        else if (c == '"')
            in = 0;
    }
    s->nul_walked += x - s->nul_at;
    s->nul_at = x;
    s->nul_in = (uint8_t)in;
    s->nul_esc = (uint8_t)esc;
    unsigned char prev = x ? (unsigned char)p[x - 1] : s->last;
    int alnum = (prev >= '0' && prev <= '9') || ((prev | 0x20) >= 'a' && (prev | 0x20) <= 'z');
    return alnum && !in;
}

/* ---- pre-scan --------------------------------------------------------------- */

static int hex_value(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* The four hex digits of a \u escape are complete: jansson's checks. */
static int escape_done(partd_jscan *s, char *what, size_t cap)
{
    uint32_t v = s->hex;
    s->esc = PARTD_ESC_NONE;
    if (s->second) {
        s->second = 0;
        if (v >= 0xDC00 && v <= 0xDFFF)
            return 0;
        snprintf(what, cap, "invalid Unicode '\\u%04X\\u%04X'", s->high, v);
        return -1;
    }
    if (v >= 0xD800 && v <= 0xDBFF) {
        s->high = v;
        s->esc = PARTD_ESC_NEED_BS;
        return 0;
    }
    if (v >= 0xDC00 && v <= 0xDFFF) {
        snprintf(what, cap, "invalid Unicode '\\u%04X'", v);
        return -1;
    }
    if (v == 0) {
        snprintf(what, cap, "\\u0000 is not allowed in a string");
        return -1;
    }
    return 0;
}

/* Offset of the first bad escape in p[0, n), or n. */
static size_t scan_escapes(partd_jscan *s, const unsigned char *p, size_t n, char *what,
                           size_t cap)
{
    size_t i = 0;
    while (i < n) {
        if (s->esc == PARTD_ESC_NONE) {
            const unsigned char *b = memchr(p + i, '\\', n - i);
            if (!b)
                return n;
            i = (size_t)(b - p) + 1;
            s->esc = PARTD_ESC_BACKSLASH;
            continue;
        }
        unsigned char c = p[i];
        int h;
        switch (s->esc) {
        case PARTD_ESC_BACKSLASH:
            s->escaped_quotes += c == '"';
            s->esc = c == 'u' ? PARTD_ESC_HEX : PARTD_ESC_NONE;
            s->hex = s->hex_n = 0;
            break;
        case PARTD_ESC_HEX:
            if ((h = hex_value(c)) < 0) {
                snprintf(what, cap, "invalid \\u escape");
                return i;
            }
            s->hex = s->hex * 16 + (uint32_t)h;
            if (++s->hex_n == 4 && escape_done(s, what, cap) != 0)
                return i;
            break;
        case PARTD_ESC_NEED_BS:
        case PARTD_ESC_NEED_U:
            if (c != (s->esc == PARTD_ESC_NEED_BS ? '\\' : 'u')) {
                snprintf(what, cap, "invalid Unicode '\\u%04X'", s->high);
                return i;
            }
            if (s->esc == PARTD_ESC_NEED_U) {
                s->esc = PARTD_ESC_HEX;
                s->second = 1;
                s->hex = s->hex_n = 0;
            } else {
                s->esc = PARTD_ESC_NEED_U;
            }
            break;
        case PARTD_ESC_NONE:
            break;
        }
        i++;
    }
    return n;
}

/* The range of the second byte after a lead byte (RFC 3629), or 0 when the
 * byte cannot start a character. */
static int utf8_lead(partd_jscan *s, unsigned char c)
{
    s->utf8_lo = 0x80;
    s->utf8_hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
        s->utf8_left = 1;
    else if (c >= 0xE0 && c <= 0xEF) {
        s->utf8_left = 2;
        if (c == 0xE0)
            s->utf8_lo = 0xA0; /* overlong */
        else if (c == 0xED)
            s->utf8_hi = 0x9F; /* surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        s->utf8_left = 3;
        if (c == 0xF0)
            s->utf8_lo = 0x90;
        else if (c == 0xF4)
            s->utf8_hi = 0x8F; /* above U+10FFFF */
    } else
        return 0;
    return 1;
}

/* Offset of the first byte that is not UTF-8 in p[0, n), or n. */
#define ONES UINT64_C(0x0101010101010101)
#define LOW7 (ONES * 0x7f)

/* 1 in each byte of w that equals c (of ONES * c), else 0: a zero byte of
 * x = w ^ c is the one whose top bit stays clear in ((x & LOW7) + LOW7) | x. */
static inline uint64_t bytes_equal(uint64_t w, uint64_t c)
{
    uint64_t x = w ^ c;
    return ~(((x & LOW7) + LOW7) | x | LOW7) >> 7;
}

/* The sum of the eight bytes of v (each at most 255). */
static size_t byte_sum(uint64_t v)
{
    v = (v & UINT64_C(0x00ff00ff00ff00ff)) + ((v >> 8) & UINT64_C(0x00ff00ff00ff00ff));
    return (size_t)((v * UINT64_C(0x0001000100010001)) >> 48);
}

/* Offset of the first byte that is not UTF-8 in p[0, n), or n; counts the
 * newlines and quotes on the way (for the position and the NUL rule). */
static size_t scan_utf8(partd_jscan *s, const unsigned char *p, size_t n, char *what,
                        size_t cap)
{
    size_t i = 0;
    while (i < n) {
        if (s->utf8_left) {
            if (p[i] < s->utf8_lo || p[i] > s->utf8_hi)
                goto bad;
            s->utf8_lo = 0x80;
            s->utf8_hi = 0xBF;
            s->utf8_left--;
            i++;
            continue;
        }
        /* ASCII eight bytes at a time, the counts in bytes of lines/quotes
         * (flushed before a byte can pass 255) */
        uint64_t lines = 0, quotes = 0;
        unsigned words = 0;
        while (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, p + i, 8);
            if (w & (ONES * 0x80))
                break;
            lines += bytes_equal(w, ONES * '\n');
            quotes += bytes_equal(w, ONES * '"');
            i += 8;
            if (++words == 255) {
                s->lines += byte_sum(lines);
                s->quotes += byte_sum(quotes);
                lines = quotes = 0;
                words = 0;
            }
        }
        s->lines += byte_sum(lines);
        s->quotes += byte_sum(quotes);
        for (; i < n && p[i] < 0x80; i++) {
            s->lines += p[i] == '\n';
            s->quotes += p[i] == '"';
        }
        if (i == n)
            break;
        if (!utf8_lead(s, p[i]))
            goto bad;
        i++;
    }
    return n;
bad:
    snprintf(what, cap, "unable to decode byte 0x%02x", p[i]);
    return i;
}

/* Offset of the first byte of p[0, n) that jansson refuses and yajl may
 * not, with `what` set; n when there is none. */
size_t partd__decode_scan_chunk(partd_jscan *s, const char *p, size_t n, char *what, size_t cap)
{
    s->esc0 = s->esc;
    s->escaped_quotes = s->lines = s->quotes = 0;
    nul_walk_start(s, p);
    const unsigned char *u = (const unsigned char *)p;
    char w2[256];
    size_t bad = scan_utf8(s, u, n, what, cap);
    size_t e = scan_escapes(s, u, bad, w2, sizeof w2);
    if (e < bad) {
        bad = e;
        snprintf(what, cap, "%s", w2);
    }
    /* yajl takes \v and \f as white space, jansson does not (inside a
     * string both refuse them unescaped). */
    static const char ws[2] = {'\v', '\f'};
    for (int k = 0; k < 2; k++) {
        const char *c = memchr(p, ws[k], bad);
        if (c) {
            bad = (size_t)(c - p);
            snprintf(what, cap, "invalid token (control character 0x%02x)", ws[k]);
        }
    }
    return bad;
}

void partd__decode_scan_done(partd_jscan *s, const char *p, size_t n)
{
    /* every quote that is not escaped opens or closes a string */
    s->in_string ^= (s->quotes - s->escaped_quotes) & 1;
    if (n)
        s->last = (unsigned char)p[n - 1];
}
