/*
 * decode_state.c - the decoding state that every part of the request
 * decoder writes to (partd_dec, decode_internal.h): its problem, the
 * out-of-memory flag, the bounded byte sums, and its release.
 */
#include <stdlib.h>

#include "decode_internal.h"
#include "partd/partd.h"

void partd__decode_add(partd_dec *d, const char *ptr, const char *msg)
{
    partd_problem_add(d->r.pb, ptr, "%s", msg);
}

void partd__decode_oom(partd_dec *d, const char *ptr)
{
    d->r.oom = 1;
    partd__decode_add(d, ptr, "out of memory");
}

int partd__decode_add_bytes(int64_t *total, int64_t b)
{
    return __builtin_add_overflow(*total, b, total) || *total > PARTD_MAX_BYTES;
}

void partd__decode_release(partd_dec *d)
{
    free(d->in_name_off);
    free(d->in_name);
    free(d->par_name_off);
    free(d->par_name);
    free(d->par_bytes);
    free(d->par_seen);
    d->in_name_off = d->in_name = d->par_name_off = d->par_name = d->par_seen = NULL;
    d->par_bytes = NULL;
    d->n_in_names = d->n_par_names = d->par_seen_cap = 0;
}
