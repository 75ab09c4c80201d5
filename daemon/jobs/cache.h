/*
 * cache.h - in-memory LRU of result documents, keyed by cache_key, bounded
 * by a byte budget (--cache-max-bytes), in front of the store.
 *
 * An entry holds the document and its coded forms (encoding.h), each served
 * as is. Entries are reference counted: partd_cache_get() hands out a
 * reference that stays valid (immutable) after the entry is evicted, until
 * partd_cache_entry_release(); the HTTP layer serves a form straight from it
 * without copying. Thread-safe (one mutex, held only for list updates).
 *
 * The budget counts what entries hold in memory (each buffer at the size
 * malloc gave it, and the bookkeeping), so partd_cache_bytes is the
 * cache's share of the resident size.
 *
 * Errors: partd_cache_put returns PARTD_OK or PARTD_ENOMEM; a document
 * larger than the whole budget is simply not kept (PARTD_OK).
 */
#ifndef PARTD_DAEMON_CACHE_H
#define PARTD_DAEMON_CACHE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "core/encoding.h"

typedef struct partd_cache_entry {
    char key[72];
    char etag[72];      /* "sha256:..." of the document */
    /* forms[PARTD_CODING_IDENTITY] is the result document; coded forms may
     * be absent (data NULL). */
    partd_blob forms[PARTD_CODINGS];
    char *summary;      /* the result's summary object */
    atomic_int refs;
    /* list links and accounting, owned by the cache */
    struct partd_cache_entry *prev, *next;
    size_t charge;
    int linked;
} partd_cache_entry;

typedef struct partd_cache partd_cache;

partd_cache *partd_cache_new(uint64_t max_bytes);
void partd_cache_free(partd_cache *c);

/* Takes ownership of forms[0..PARTD_CODINGS) and of summary (malloc'd) in
 * every case, and clears forms[]. When out is not NULL it receives a
 * reference to the entry now cached under key (which may be an older equal
 * one), or NULL on ENOMEM. */
int partd_cache_put(partd_cache *c, const char *key, const char *etag,
                    partd_blob *forms, char *summary, partd_cache_entry **out);

/* The bit set of the forms an entry has, for partd_encoding_negotiate(). */
unsigned partd_cache_entry_codings(const partd_cache_entry *e);

/* A reference to the entry, or NULL on a miss. Counts hits and misses. */
partd_cache_entry *partd_cache_get(partd_cache *c, const char *key);

void partd_cache_remove(partd_cache *c, const char *key);

void partd_cache_entry_release(partd_cache_entry *e);

typedef struct partd_cache_stats {
    uint64_t bytes, entries, hits, misses;
} partd_cache_stats;

void partd_cache_stats_get(partd_cache *c, partd_cache_stats *out);

#endif
