/*
 * buf.h - a growable byte buffer for building documents (SVG, text) piece
 * by piece.
 *
 * The buffer owns its bytes (free with partd_buf_free). Appends never fail
 * loudly: an allocation failure sets `failed`, later appends do nothing, and
 * the producer reports PARTD_ENOMEM once at the end (partd_buf_status).
 * data is NUL-terminated after len bytes whenever it is non-NULL.
 */
#ifndef PARTD_DAEMON_BUF_H
#define PARTD_DAEMON_BUF_H

#include <stddef.h>

typedef struct partd_buf {
    char *data;
    size_t len;
    size_t cap;
    int failed; /* an allocation failed; the contents are incomplete */
} partd_buf;

void partd_buf_init(partd_buf *b);
void partd_buf_free(partd_buf *b);
/* Empties the buffer, keeping its storage and clearing `failed`. */
void partd_buf_reset(partd_buf *b);
void partd_buf_append(partd_buf *b, const void *data, size_t len);
void partd_buf_puts(partd_buf *b, const char *s);
/* Appends several NUL-terminated strings; the list ends with NULL. */
void partd_buf_cat(partd_buf *b, ...);
/* PARTD_OK, or PARTD_ENOMEM when an append failed. */
int partd_buf_status(const partd_buf *b);
/* Hands the bytes to the caller (malloc'd, NUL-terminated; caller frees)
 * and leaves the buffer empty. NULL when the buffer failed. */
char *partd_buf_take(partd_buf *b, size_t *len);

#endif
