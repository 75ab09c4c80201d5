/*
 * decode_yajl.c - yajl behind an allocator of its own: the reading layer's
 * only calls into the parser (decode_internal.h, "the reading layer's
 * parts").
 *
 * yajl does not check its allocations, so its allocator leaves the parse
 * by longjmp when one fails: every call into yajl here stands behind its
 * own setjmp (nothing of the caller lives across the jump), and the
 * blocks yajl holds are tracked so that they can be freed once it has
 * been left half-way. Errors: each call returns -1 when an allocation
 * failed inside, after which yajl's memory is freed and y->h is NULL.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode_internal.h"

static void nomem_jump(partd_yajl *y)
{
    longjmp(y->on_nomem, 1);
}

/* The slot of yajl's block p (NULL: a free slot), or -1. */
static int block_of(const partd_yajl *y, const void *p)
{
    for (int i = 0; i < PARTD_DECODE_YAJL_BLOCKS; i++)
        if (y->blocks[i] == p)
            return i;
    return -1;
}


static void *ya_malloc(void *ctx, size_t n)
{
    partd_yajl *y = ctx;
    int i = block_of(y, NULL);
    void *p = i < 0 ? NULL : malloc(n);
    if (!p)
        nomem_jump(y);
    return y->blocks[i] = p;
}

static void *ya_realloc(void *ctx, void *old, size_t n)
{
    partd_yajl *y = ctx;
    if (!old)
        return ya_malloc(ctx, n);
    int i = block_of(y, old); /* always found: yajl's own block */
    void *p = realloc(old, n);
    if (!p)
        nomem_jump(y); /* old is still tracked and still valid */
    return y->blocks[i] = p;
}

static void ya_free(void *ctx, void *p)
{
    partd_yajl *y = ctx;
    if (!p)
        return;
    int i = block_of(y, p);
    if (i >= 0)
        y->blocks[i] = NULL;
    free(p);
}

/* After a jump out of yajl: its state is unusable, its memory is ours. */
static void drop_yajl(partd_yajl *y)
{
    for (int i = 0; i < PARTD_DECODE_YAJL_BLOCKS; i++) {
        free(y->blocks[i]);
        y->blocks[i] = NULL;
    }
    y->h = NULL;
}

__attribute__((noinline)) int partd__decode_yajl_open(partd_yajl *const y,
                                                      const yajl_callbacks *cb, void *ctx)
{
    yajl_alloc_funcs afs = {ya_malloc, ya_realloc, ya_free, y}; /* yajl copies it */
    if (setjmp(y->on_nomem)) {
        drop_yajl(y);
        return -1;
    }
    y->h = yajl_alloc(cb, &afs, ctx);
    /* the pre-scan checks UTF-8 more strictly than yajl does */
    yajl_config(y->h, yajl_dont_validate_strings, 1);
    return 0;
}

__attribute__((noinline)) int partd__decode_yajl_parse(partd_yajl *const y, const char *p,
                                                       size_t n, yajl_status *st)
{
    if (setjmp(y->on_nomem)) {
        drop_yajl(y);
        return -1;
    }
    *st = n ? yajl_parse(y->h, (const unsigned char *)p, n) : yajl_complete_parse(y->h);
    return 0;
}

__attribute__((noinline)) int partd__decode_yajl_error(partd_yajl *const y, const char *p,
                                                       size_t n, char *what, size_t cap)
{
    if (setjmp(y->on_nomem)) {
        drop_yajl(y);
        return -1;
    }
    unsigned char *m = yajl_get_error(y->h, 0, (const unsigned char *)p, n);
    const char *t = m ? (const char *)m : "syntax error";
    if (strncmp(t, "parse error: ", 13) == 0)
        t += 13;
    snprintf(what, cap, "%s", t);
    what[strcspn(what, "\n")] = '\0';
    if (m)
        yajl_free_error(y->h, m);
    return 0;
}

void partd__decode_yajl_close(partd_yajl *y)
{
    if (y->h)
        yajl_free(y->h);
    y->h = NULL;
}
