/*
 * strtab.h - interned strings.
 *
 * Names (nodes, devices, modules, parameters) are stored once in a string
 * table and referred to by a 32-bit id everywhere else, which keeps the model
 * compact and makes name comparison an integer comparison.
 *
 * Every string in a table comes from a client, so the table must cost the
 * same whatever the strings are: names crafted to collide must not turn
 * lookups into scans. The index is an open-addressing table hashed with
 * SipHash-2-4 (libsodium's crypto_shorthash) under a 128-bit key that each
 * table draws from libsodium's randombytes when it first needs one: a client can
 * neither read nor steer where its names land. On top of that, no string
 * may sit more than PARTD_STRTAB_PROBE_MAX slots past its home: an insert
 * that would break the rule draws a new key and rebuilds the index (with
 * more room when a new key at its size does not help), so that every
 * lookup reads at most PARTD_STRTAB_PROBE_MAX slots whatever the input. Ids are
 * given in order of first intern and nothing depends on where a string
 * sits in the index, so the key changes nothing that anyone can see.
 *
 * Ownership: the table owns its bytes; ids stay valid until partd_strtab_free.
 * Errors: partd_strtab_intern returns PARTD_STR_NONE on allocation failure.
 */
#ifndef PARTD_STRTAB_H
#define PARTD_STRTAB_H

#include <stddef.h>
#include <stdint.h>

#define PARTD_STR_NONE UINT32_MAX
/* No string sits further than this from its home slot. Runs this long
 * come by chance about once in 10^5 indexes of 4M slots (linear probing
 * at most half full), so a new key is rarely drawn but for an attack. */
#define PARTD_STRTAB_PROBE_MAX 128

typedef struct partd_strtab_span {
    uint32_t offset;    /* in bytes */
    uint32_t length;    /* without the NUL */
    uint32_t hash;      /* low half of its hash under the table's key */
} partd_strtab_span;

typedef struct partd_strtab {
    char *bytes;        /* all strings, each NUL-terminated */
    size_t used, cap;
    partd_strtab_span *span; /* id -> where its bytes are */
    uint32_t count, span_cap;
    /* open-addressing index: id + 1 (0 = empty) in the low bits, a tag
     * from the string's hash above them (strtab.c) */
    uint32_t *slots;
    uint32_t n_slots;   /* power of two */
    /* strings interned or found lately, by hash (a tag, id + 1): a large
     * graph names mostly what it named a moment ago, and this answers
     * without a cache miss in the index (NULL while the index is small) */
    uint64_t *recent;
    uint8_t key[16];    /* SipHash key; drawn with the first slots */
    uint32_t key_gen;   /* keys drawn so far (0: none yet) */
    uint64_t probes;    /* slots read by every lookup so far (for tests) */
} partd_strtab;

void partd_strtab_init(partd_strtab *t);
void partd_strtab_free(partd_strtab *t);

/* Returns the id of the string (len bytes, may contain no NUL), adding it if
 * new; PARTD_STR_NONE when out of memory. */
uint32_t partd_strtab_intern(partd_strtab *t, const char *s, size_t len);

/* Returns the id or PARTD_STR_NONE when the string was never interned. */
uint32_t partd_strtab_find(const partd_strtab *t, const char *s, size_t len);

/* A string's hash, kept for an intern soon after. */
typedef struct partd_strtab_hint {
    uint64_t hash;
    uint32_t key_gen;   /* the key it was made with */
} partd_strtab_hint;

/* Starts reading the index where the string would be, for an intern
 * soon after: a new name costs a cache miss in a large index, which this
 * overlaps with whatever the caller does in between. The hint returned
 * saves partd_strtab_intern_hinted hashing the string again. */
partd_strtab_hint partd_strtab_prefetch(const partd_strtab *t, const char *s, size_t len);

/* partd_strtab_intern with the hint of partd_strtab_prefetch for the same
 * string (a hint made under a key the table has since replaced is
 * ignored). */
uint32_t partd_strtab_intern_hinted(partd_strtab *t, const char *s, size_t len,
                                    partd_strtab_hint hint);

/* Bytes the table holds (strings, spans, index), for size estimates. */
uint64_t partd_strtab_bytes(const partd_strtab *t);

static inline const char *partd_str(const partd_strtab *t, uint32_t id)
{
    return t->bytes + t->span[id].offset;
}

static inline uint32_t partd_strlen(const partd_strtab *t, uint32_t id)
{
    return t->span[id].length;
}

#endif
