/*
 * pipeline_set.h - sets of stage-boundary positions as sorted runs, and a
 * cursor for queries that never decrease (internal to pipeline*.c).
 *
 * Allocation: a partd_pipeline_set owns `run` (free it); set_add/set_add_range return
 * PARTD_OK, or PARTD_ENOMEM (partd.h) when out of memory.
 */
#ifndef PARTD_PIPELINE_SET_H
#define PARTD_PIPELINE_SET_H

#include <stdint.h>
#include <stdlib.h>

#include "partd/partd.h"

typedef struct partd_pipeline_run {
    int32_t lo, hi; /* inclusive */
} partd_pipeline_run;

typedef struct partd_pipeline_set {
    partd_pipeline_run *run;
    uint32_t n, cap;
    uint64_t count;
} partd_pipeline_set;

static inline void set_clear(partd_pipeline_set *s)
{
    s->n = 0;
    s->count = 0;
}

/* Appends x, larger than every element. */
static inline int set_add(partd_pipeline_set *s, int32_t x)
{
    s->count++;
    if (s->n && s->run[s->n - 1].hi + 1 == x) {
        s->run[s->n - 1].hi = x;
        return PARTD_OK;
    }
    if (s->n == s->cap) {
        uint32_t cap = s->cap ? 2 * s->cap : 16;
        partd_pipeline_run *r = realloc(s->run, cap * sizeof *r);
        if (!r)
            return PARTD_ENOMEM;
        s->run = r;
        s->cap = cap;
    }
    s->run[s->n++] = (partd_pipeline_run){x, x};
    return PARTD_OK;
}

static inline int set_add_range(partd_pipeline_set *s, int32_t lo, int32_t hi)
{
    if (lo > hi)
        return PARTD_OK;
    if (set_add(s, lo))
        return PARTD_ENOMEM;
    s->run[s->n - 1].hi = hi;
    s->count += (uint64_t)(hi - lo);
    return PARTD_OK;
}

/* Walks a set with queries that never decrease. */
typedef struct partd_pipeline_cursor {
    const partd_pipeline_set *set;
    uint32_t i;
    uint64_t base; /* elements in runs before run i */
} partd_pipeline_cursor;

static inline void cursor_init(partd_pipeline_cursor *c, const partd_pipeline_set *s)
{
    c->set = s;
    c->i = 0;
    c->base = 0;
}

/* Smallest element >= x, INT32_MAX when none. */
static inline int32_t cursor_next(partd_pipeline_cursor *c, int32_t x)
{
    const partd_pipeline_set *s = c->set;
    while (c->i < s->n && s->run[c->i].hi < x) {
        c->base += (uint64_t)(s->run[c->i].hi - s->run[c->i].lo) + 1;
        c->i++;
    }
    if (c->i == s->n)
        return INT32_MAX;
    return x > s->run[c->i].lo ? x : s->run[c->i].lo;
}

/* Index within the set of x, the element cursor_next just returned. */
static inline uint64_t cursor_index(const partd_pipeline_cursor *c, int32_t x)
{
    return c->base + (uint64_t)(x - c->set->run[c->i].lo);
}

/* Index of x in s (x must be an element). */
static inline uint64_t set_index(const partd_pipeline_set *s, int32_t x)
{
    partd_pipeline_cursor c;
    cursor_init(&c, s);
    cursor_next(&c, x);
    return cursor_index(&c, x);
}

#endif
