/* buf.c - the growable byte buffer; see buf.h. */
#include "buf.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "partd/partd.h"

void partd_buf_init(partd_buf *b)
{
    memset(b, 0, sizeof *b);
}

void partd_buf_free(partd_buf *b)
{
    free(b->data);
    partd_buf_init(b);
}

void partd_buf_reset(partd_buf *b)
{
    b->len = 0;
    b->failed = 0;
    if (b->data)
        b->data[0] = '\0';
}

static int reserve(partd_buf *b, size_t extra)
{
    if (b->failed)
        return -1;
    if (extra >= SIZE_MAX / 2 - b->len) {
        b->failed = 1;
        return -1;
    }
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap *= 2;
    char *p = realloc(b->data, cap);
    if (!p) {
        b->failed = 1;
        return -1;
    }
    b->data = p;
    b->cap = cap;
    return 0;
}

void partd_buf_append(partd_buf *b, const void *data, size_t len)
{
    if (reserve(b, len) != 0)
        return;
    if (len)
        memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
}

void partd_buf_puts(partd_buf *b, const char *s)
{
    partd_buf_append(b, s, strlen(s));
}

void partd_buf_cat(partd_buf *b, ...)
{
    va_list ap;
    va_start(ap, b);
    for (const char *s = va_arg(ap, const char *); s; s = va_arg(ap, const char *))
        partd_buf_puts(b, s);
    va_end(ap);
}

int partd_buf_status(const partd_buf *b)
{
    return b->failed ? PARTD_ENOMEM : PARTD_OK;
}

char *partd_buf_take(partd_buf *b, size_t *len)
{
    if (b->failed || reserve(b, 0) != 0) {
        partd_buf_free(b);
        return NULL;
    }
    char *p = b->data;
    if (len)
        *len = b->len;
    partd_buf_init(b);
    return p;
}
