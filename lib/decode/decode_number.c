/*
 * decode_number.c - a number as yajl lexed it, converted with jansson's
 * rules: no '.', 'e' or 'E' makes an integer, which must fit json_int_t; a
 * real must not overflow (underflow is fine). The common cases (short
 * integers, reals of few digits) are converted here without strtod;
 * the results are those strtoll and strtod give.
 *
 * Errors: partd__decode_number_read returns PARTD_OK, PARTD_EMALFORMED
 * with the words jansson would use, or PARTD_ENOMEM (a literal too long
 * for the buffer on the stack, whose copy could not be made).
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "decode_internal.h"
#include "partd/partd.h"

/* Clinger's fast path: a decimal of at most 15 significant digits times
 * 10^e with |e| <= 22 is a double exactly rounded by one multiplication or
 * division of two exactly held doubles, the value strtod gives. 1 with *out
 * set, or 0 for strtod. t is a number yajl has lexed. */
static int fast_real(const char *t, size_t len, double *out)
{
    static const double pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                   1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                   1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    size_t i = t[0] == '-';
    uint64_t m = 0;
    int digits = 0, e10 = 0, fraction = 0;
    for (; i < len && t[i] != 'e' && t[i] != 'E'; i++) {
        if (t[i] == '.') {
            fraction = 1;
            continue;
        }
        if (m || t[i] != '0') {
            if (++digits > 15)
                return 0;
            m = m * 10 + (uint64_t)(t[i] - '0');
        }
        e10 -= fraction;
    }
    if (i < len) { /* the exponent */
        int neg = t[++i] == '-', x = 0;
        i += t[i] == '-' || t[i] == '+';
        if (len - i > 4)
            return 0;
        for (; i < len; i++)
            x = x * 10 + (t[i] - '0');
        e10 += neg ? -x : x;
    }
    double d;
    if (m == 0)
        d = 0.0;
    else if (e10 >= 0 && e10 <= 22)
        d = (double)m * pow10[e10];
    else if (e10 < 0 && e10 >= -22)
        d = (double)m / pow10[-e10];
    else
        return 0;
    *out = t[0] == '-' ? -d : d;
    return 1;
}

int partd__decode_number_read(const char *t, size_t len, partd_scalar *v, const char **bad)
{
    *v = (partd_scalar){.type = JSON_INTEGER};
    int integer = 1;
    for (size_t k = 0; k < len && integer; k++)
        integer = t[k] != '.' && t[k] != 'e' && t[k] != 'E';
    if (integer && len <= 18) {
        size_t i = t[0] == '-';
        json_int_t x = 0;
        for (; i < len; i++)
            x = x * 10 + (t[i] - '0');
        v->i = t[0] == '-' ? -x : x;
        return PARTD_OK;
    }
    if (!integer && fast_real(t, len, &v->d)) {
        v->type = JSON_REAL;
        return PARTD_OK;
    }
    char num[64];
    char *buf = len < sizeof num ? num : malloc(len + 1);
    if (!buf)
        return PARTD_ENOMEM;
    memcpy(buf, t, len);
    buf[len] = '\0';
    errno = 0;
    *bad = NULL;
    if (integer) {
        v->i = strtoll(buf, NULL, 10);
        /* Too big for any integer type: delivered as the number it is, so
         * that the member's reader names it by pointer ("must be between 0
         * and 2^53, not 1e+20"), as it does 1e20. Only a literal past the
         * doubles too stays a syntax error. */
        if (errno == ERANGE) {
            errno = 0;
            v->type = JSON_REAL;
            v->d = strtod(buf, NULL);
            if (errno == ERANGE && (v->d == HUGE_VAL || v->d == -HUGE_VAL))
                *bad = v->d < 0 ? "too big negative integer" : "too big integer";
        }
    } else {
        v->type = JSON_REAL;
        v->d = strtod(buf, NULL);
        if (errno == ERANGE && (v->d == HUGE_VAL || v->d == -HUGE_VAL))
            *bad = "real number overflow";
    }
    if (buf != num)
        free(buf);
    return *bad ? PARTD_EMALFORMED : PARTD_OK;
}
