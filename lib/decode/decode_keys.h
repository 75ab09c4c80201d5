/*
 * decode_keys.h - the keys of the open JSON objects, for the reading
 * layer's duplicate-key check (decode_stream.h).
 *
 * The keys of every open object live in one arena, in nesting order; an
 * object's keys are released when it ends. A new key is compared with the
 * object's keys one by one while the object is small (their offsets and
 * lengths side by side, so that a mismatch costs a compare of lengths);
 * once it has more than a few, its keys also go into a string table
 * (strtab.h), whose keyed hash and bounded probes keep a huge object
 * linear whatever its keys are, crafted to collide or not.
 *
 * Errors: partd__decode_keys_add returns -1 when memory runs out (the arena
 * and set stay valid). Ownership: the arena owns the key bytes; a keyset
 * owns its table until partd__decode_keys_close.
 */
#ifndef PARTD_DECODE_KEYS_H
#define PARTD_DECODE_KEYS_H

#include <stddef.h>
#include <stdint.h>

#include "partd/strtab.h"

typedef struct partd_keyref {
    uint32_t off, len;  /* a key's bytes in the arena */
} partd_keyref;

typedef struct partd_keys {
    char *arena;        /* the keys' bytes, each NUL-terminated */
    size_t used, cap;
    partd_keyref *refs; /* the keys of the small objects open */
    uint32_t n_refs, refs_cap;
} partd_keys;

typedef struct partd_keyset {
    uint32_t n_keys;
    uint32_t first;     /* refs index of its first key */
    size_t start;       /* arena offset of its first key */
    size_t last;        /* arena offset of its last key */
    partd_strtab *set;  /* its keys, once large */
} partd_keyset;

/* An object starts: its keys follow those of the objects around it. */
static inline void partd__decode_keys_open(const partd_keys *s, partd_keyset *f)
{
    *f = (partd_keyset){.start = s->used, .first = s->n_refs};
}

/* 1 when the object already has the key (len bytes). */
int partd__decode_keys_has(const partd_keys *s, const partd_keyset *f, const char *k, size_t len);

/* Adds a key (len bytes) to the object: 0, 1 when the object already had
 * it (nothing added: one lookup does both), or -1 when memory ran out. */
int partd__decode_keys_add(partd_keys *s, partd_keyset *f, const char *k, size_t len);

/* The object's last key, NUL-terminated (valid until the arena grows). */
static inline const char *partd__decode_keys_last(const partd_keys *s, const partd_keyset *f)
{
    return s->arena + f->last;
}

/* The object ended: its keys and its set are released. */
void partd__decode_keys_close(partd_keys *s, partd_keyset *f);
void partd__decode_keys_free(partd_keys *s);

#endif
