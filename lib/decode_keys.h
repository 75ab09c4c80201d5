/*
 * decode_keys.h - the keys of the open JSON objects, for the reading
 * layer's duplicate-key check (decode_stream.h).
 *
 * The keys of every open object live in one arena, in nesting order; an
 * object's keys are released when it ends. A lookup compares the keys one
 * by one while an object is small and goes through a hash set once it has
 * more than a few, so a huge object is checked in linear time.
 *
 * Errors: partd_keyset_add returns -1 when memory runs out (the arena and
 * set stay valid). Ownership: the arena owns the key bytes; a keyset owns
 * its hash set until partd_keyset_close.
 */
#ifndef PARTD_DECODE_KEYS_H
#define PARTD_DECODE_KEYS_H

#include <stddef.h>
#include <stdint.h>

typedef struct partd_keys {
    char *arena;
    size_t used, cap;
} partd_keys;

typedef struct partd_keyset {
    uint32_t n_keys;
    size_t start;  /* arena offset of its first key */
    size_t last;   /* arena offset of its last key's bytes */
    uint32_t *set; /* key offsets + 1, once large */
    uint32_t set_cap;
} partd_keyset;

/* An object starts: its keys follow those of the objects around it. */
static inline void partd_keyset_open(const partd_keys *s, partd_keyset *f)
{
    *f = (partd_keyset){.start = s->used};
}

/* 1 when the object already has the key (len bytes). */
int partd_keyset_has(const partd_keys *s, const partd_keyset *f, const char *k, size_t len);

/* Stores a key of the object; 0, or -1 when memory ran out. */
int partd_keyset_add(partd_keys *s, partd_keyset *f, const char *k, size_t len);

/* The object's last key, NUL-terminated (valid until the arena grows). */
static inline const char *partd_keyset_last(const partd_keys *s, const partd_keyset *f)
{
    return s->arena + f->last;
}

/* The object ended: its keys and its set are released. */
void partd_keyset_close(partd_keys *s, partd_keyset *f);
void partd_keys_free(partd_keys *s);

#endif
