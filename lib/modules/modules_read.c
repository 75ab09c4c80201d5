/*
 * modules_read.c - required-member readers for graph.modules; see
 * modules_internal.h.
 */
#include "modules_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void partd__modules_report(partd_reader *d, const char *pointer, const char *fmt, ...)
{
    char msg[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    partd_problem_add(d->pb, pointer, "%s", msg);
}

int partd__modules_get_bytes(partd_reader *d, json_t *obj, const char *base, const char *key,
                       int64_t min, int64_t *out)
{
    char ptr[PARTD_POINTER_CAP];
    json_t *v = partd_json_read_required(d, obj, base, key, ptr);
    return v ? partd_json_read_bytes(d, v, ptr, min, out) : PARTD_EINVALID;
}

/* Times (ms) and the recompute curve's numbers: within +-MAX_NUMBER, as the
 * request schema says, so that the SAC models stay within the solver's range
 * (CBC asserts on larger coefficients). */
#define MAX_NUMBER 1e12

int partd__modules_number_value(partd_reader *d, json_t *v, const char *ptr, int nonneg,
                          double *out)
{
    return partd_json_read_number(d, v, ptr, nonneg ? 0 : -MAX_NUMBER, 0, MAX_NUMBER, out);
}

int partd__modules_get_number(partd_reader *d, json_t *obj, const char *base, const char *key,
                        int nonneg, double *out)
{
    char ptr[PARTD_POINTER_CAP];
    json_t *v = partd_json_read_required(d, obj, base, key, ptr);
    return v ? partd__modules_number_value(d, v, ptr, nonneg, out) : PARTD_EINVALID;
}

int partd__modules_get_bool(partd_reader *d, json_t *obj, const char *base, const char *key,
                      int *out)
{
    char ptr[PARTD_POINTER_CAP];
    json_t *v = partd_json_read_required(d, obj, base, key, ptr);
    return v ? partd_json_read_bool(d, v, ptr, out) : PARTD_EINVALID;
}

json_t *partd__modules_get_array(partd_reader *d, json_t *obj, const char *base,
                           const char *key, char *ptr)
{
    json_t *v = partd_json_read_required(d, obj, base, key, ptr);
    return v && partd_json_read_array(d, v, ptr, NULL) == 0 ? v : NULL;
}

int partd__modules_get_numbers(partd_reader *d, json_t *obj, const char *base,
                         const char *key, int nonneg, double **out, uint32_t *n)
{
    *out = NULL;
    *n = 0;
    char arr_ptr[PARTD_POINTER_CAP], ptr[PARTD_POINTER_CAP];
    json_t *arr = partd__modules_get_array(d, obj, base, key, arr_ptr);
    if (!arr)
        return PARTD_EINVALID;
    size_t len = json_array_size(arr);
    if (len == 0)
        return PARTD_OK;
    double *xs = calloc(len, sizeof *xs);
    if (!xs) {
        d->oom = 1;
        return PARTD_EINVALID;
    }
    int bad = 0;
    for (size_t i = 0; i < len; i++) {
        partd_pointer_index(ptr, arr_ptr, i);
        if (partd__modules_number_value(d, json_array_get(arr, i), ptr, nonneg, &xs[i]) < 0)
            bad = 1;
    }
    *out = xs;
    *n = (uint32_t)len;
    return bad ? PARTD_EINVALID : PARTD_OK;
}
