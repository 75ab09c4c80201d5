/* show_fmt.c - locale-free number formatting and text escaping; see show_fmt.h. */
#include "show_fmt.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "partd/problem.h"

void partd__show_fmt_fixed(char out[PARTD_SHOW_NUM_CAP], double v, int decimals)
{
    static const double pow10[] = {1, 10, 100, 1000, 10000, 100000, 1000000};
    if (decimals < 0)
        decimals = 0;
    if (decimals > 6)
        decimals = 6;
    if (!isfinite(v))
        v = 0;
    /* Clamped so that the scaled value fits in 64 bits. */
    double limit = 1e18 / pow10[decimals];
    if (v > limit)
        v = limit;
    if (v < -limit)
        v = -limit;
    double scaled = round(fabs(v) * pow10[decimals]);
    uint64_t n = (uint64_t)scaled;
    uint64_t div = (uint64_t)pow10[decimals];
    const char *sign = (v < 0 && n != 0) ? "-" : "";
    if (decimals == 0)
        snprintf(out, PARTD_SHOW_NUM_CAP, "%s%llu", sign, (unsigned long long)n);
    else
        snprintf(out, PARTD_SHOW_NUM_CAP, "%s%llu.%0*llu", sign, (unsigned long long)(n / div),
                 decimals, (unsigned long long)(n % div));
}

void partd__show_fmt_coord(char out[PARTD_SHOW_NUM_CAP], double v)
{
    partd__show_fmt_fixed(out, v, 1);
    size_t n = strlen(out);
    if (n >= 2 && strcmp(out + n - 2, ".0") == 0)
        out[n - 2] = '\0';
    if (strcmp(out, "-0") == 0)
        strcpy(out, "0");
}

static const char *const unit_names[] = {"B", "KiB", "MiB", "GiB", "TiB"};

const char *partd__show_fmt_unit_name(int unit)
{
    return unit_names[unit < 0 ? 0 : unit > 4 ? 4 : unit];
}

double partd__show_fmt_unit_scale(int unit)
{
    return ldexp(1.0, 10 * (unit < 0 ? 0 : unit > 4 ? 4 : unit));
}

int partd__show_fmt_bytes_unit(double max_bytes)
{
    int unit = 0;
    while (unit < 4 && max_bytes >= partd__show_fmt_unit_scale(unit + 1))
        unit++;
    return unit;
}

/* The words of problem documents (problem.h), so that a failure and the
 * picture give a figure alike. */
void partd__show_fmt_bytes(char out[PARTD_SHOW_NUM_CAP], double bytes)
{
    _Static_assert(PARTD_SHOW_NUM_CAP >= PARTD_PROBLEM_BYTES_CAP, "room for the text");
    partd_problem_bytes(out, bytes);
}

void partd__show_fmt_bytes_in(char out[PARTD_SHOW_NUM_CAP], double bytes, int unit)
{
    double v = bytes / partd__show_fmt_unit_scale(unit);
    /* Ticks are multiples of a nice step: print as few decimals as needed. */
    int d = 0;
    while (d < 3 && fabs(v * pow(10, d) - round(v * pow(10, d))) > 1e-6)
        d++;
    partd__show_fmt_fixed(out, v, d);
}

void partd__show_fmt_ms(char out[PARTD_SHOW_NUM_CAP], double ms)
{
    char num[PARTD_SHOW_NUM_CAP];
    double a = fabs(ms);
    partd__show_fmt_fixed(num, ms, a >= 1000 ? 0 : a >= 100 ? 1 : a >= 1 ? 2 : 3);
    snprintf(out, PARTD_SHOW_NUM_CAP, "%.32s ms", num);
}

double partd__show_fmt_nice_step(double max, int target)
{
    if (!(max > 0) || target < 1)
        return 1;
    double raw = max / target;
    double p = pow(10, floor(log10(raw)));
    static const double mult[] = {1, 2, 5, 10};
    for (int i = 0; i < 4; i++)
        if (mult[i] * p >= raw * (1 - 1e-12))
            return mult[i] * p;
    return 10 * p;
}

/* Length of the UTF-8 sequence starting with byte c (1 for stray bytes). */
static size_t seq_len(unsigned char c)
{
    return c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
}

/* The sequence at s, clipped to the string's end. */
static size_t clipped_len(const char *s)
{
    size_t n = seq_len((unsigned char)*s);
    for (size_t i = 1; i < n; i++)
        if (s[i] == '\0')
            return i;
    return n;
}

size_t partd__show_fmt_chars(const char *s)
{
    size_t n = 0;
    while (*s) {
        s += clipped_len(s);
        n++;
    }
    return n;
}

static void xml_char(partd_buf *b, const char *s, size_t n)
{
    unsigned char c = (unsigned char)s[0];
    if (n == 1) {
        switch (c) {
        case '&': partd_buf_puts(b, "&amp;"); return;
        case '<': partd_buf_puts(b, "&lt;"); return;
        case '>': partd_buf_puts(b, "&gt;"); return;
        case '"': partd_buf_puts(b, "&quot;"); return;
        case '\'': partd_buf_puts(b, "&#39;"); return;
        default: break;
        }
        if (c < 0x20 || c >= 0x80) { /* controls, and stray bytes */
            partd_buf_puts(b, "\xEF\xBF\xBD");
            return;
        }
    }
    /* U+FFFE and U+FFFF are not XML characters. */
    if (n == 3 && c == 0xEF && (unsigned char)s[1] == 0xBF && (unsigned char)s[2] >= 0xBE) {
        partd_buf_puts(b, "\xEF\xBF\xBD");
        return;
    }
    partd_buf_append(b, s, n);
}

void partd__show_fmt_xml(partd_buf *b, const char *s, size_t max_chars)
{
    size_t count = 0;
    while (*s) {
        if (max_chars && count == max_chars) {
            partd_buf_puts(b, "\xE2\x80\xA6");
            return;
        }
        size_t n = clipped_len(s);
        xml_char(b, s, n);
        s += n;
        count++;
    }
}

void partd__show_fmt_plain(partd_buf *b, const char *s, size_t max_chars)
{
    size_t count = 0;
    while (*s) {
        if (max_chars && count == max_chars) {
            partd_buf_puts(b, "\xE2\x80\xA6");
            return;
        }
        size_t n = clipped_len(s);
        unsigned char c = (unsigned char)s[0];
        int control = (n == 1 && (c < 0x20 || c == 0x7F || c >= 0x80)) ||
                      (n == 2 && c == 0xC2 && (unsigned char)s[1] < 0xA0);
        if (control)
            partd_buf_puts(b, "?");
        else
            partd_buf_append(b, s, n);
        s += n;
        count++;
    }
}
