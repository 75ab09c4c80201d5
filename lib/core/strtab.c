/* strtab.c - interned strings; see strtab.h. */
#include "partd/strtab.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <sodium/crypto_shorthash_siphash24.h>
#include <sodium/core.h>
#include <sodium/randombytes.h>


#define FIRST_SLOTS 64
#define MAX_SLOTS (UINT32_C(1) << 31)
/* The recent-strings cache: entries, and the index size that brings it. */
#define RECENT 4096
#define RECENT_FROM (UINT32_C(1) << 16)
/* Slot arrays this large go on huge pages where the kernel offers them. */
#define HUGE_PAGE ((size_t)2 << 20)
/* A rebuild asks for the slot of the string this many ahead. */
#define PREFETCH_AHEAD 16

void partd_strtab_init(partd_strtab *t)
{
    memset(t, 0, sizeof *t);
}

void partd_strtab_free(partd_strtab *t)
{
    free(t->bytes);
    free(t->span);
    free(t->slots);
    free(t->recent);
    memset(t, 0, sizeof *t);
}

uint64_t partd_strtab_bytes(const partd_strtab *t)
{
    return (uint64_t)t->cap + (uint64_t)t->span_cap * sizeof *t->span +
           (uint64_t)t->n_slots * sizeof *t->slots + (t->recent ? RECENT * sizeof *t->recent : 0);
}

/* ---- the key and the hash ------------------------------------------------ */

/* A key no client can know, from the kernel's random pool through
 * libsodium (sodium_init is idempotent and thread-safe). */
static void draw_key(uint8_t key[16])
{
    if (sodium_init() < 0)
        abort(); /* no random source at all: nothing can be keyed */
    randombytes_buf(key, crypto_shorthash_siphash24_KEYBYTES);
}

static uint64_t hash_bytes(const partd_strtab *t, const char *s, size_t len)
{
    unsigned char out[8];
    crypto_shorthash_siphash24(out, (const unsigned char *)s, len, t->key);
    uint64_t h;
    memcpy(&h, out, sizeof h);
    return h;
}

static void hash_all(partd_strtab *t)
{
    for (uint32_t id = 0; id < t->count; id++)
        t->span[id].hash = (uint32_t)hash_bytes(t, t->bytes + t->span[id].offset,
                                                t->span[id].length);
}

/* ---- the index ------------------------------------------------------------ */

/* A slot of an index of mask + 1 slots holds id + 1 in the bits of the
 * mask (ids stay below half of it) and, above them, the bits of the
 * string's hash that its home does not use: a tag that settles most
 * mismatches without reading the string. 0 is an empty slot. */
static inline uint32_t tag_of(uint32_t h32, uint32_t mask)
{
    return h32 & ~mask;
}

static int same(const partd_strtab *t, uint32_t id, const char *s, size_t len)
{
    return t->span[id].length == len && memcmp(t->bytes + t->span[id].offset, s, len) == 0;
}

/* The slot holding the string, or the first empty slot of its run: at
 * most PARTD_STRTAB_PROBE_MAX slots from home. *at = its index, or
 * UINT32_MAX when the run is full; *read = the slots read. Returns the
 * id, or PARTD_STR_NONE. */
static uint32_t lookup(const partd_strtab *t, const char *s, size_t len, uint32_t h32,
                       uint32_t *at, uint32_t *read)
{
    uint32_t mask = t->n_slots - 1, i = h32 & mask, tag = tag_of(h32, mask);
    *at = UINT32_MAX;
    for (uint32_t k = 0; k < PARTD_STRTAB_PROBE_MAX; k++, i = (i + 1) & mask) {
        uint32_t slot = t->slots[i];
        *read = k + 1;
        if (!slot) {
            *at = i;
            return PARTD_STR_NONE;
        }
        if ((slot & ~mask) == tag && same(t, (slot & mask) - 1, s, len))
            return (slot & mask) - 1;
    }
    return PARTD_STR_NONE;
}

/* n empty slots. A large index is read at random, a cache miss per
 * lookup: on huge pages that miss is not also a TLB miss. */
static uint32_t *new_slots(uint32_t n)
{
    size_t bytes = (size_t)n * sizeof(uint32_t);
    if (bytes < HUGE_PAGE)
        return calloc(n, sizeof(uint32_t));
    uint32_t *p = aligned_alloc(HUGE_PAGE, bytes);
    if (!p)
        return NULL;
    madvise(p, bytes, MADV_HUGEPAGE);
    memset(p, 0, bytes);
    return p;
}

/* Puts every string into the n empty slots: 0, or -1 when one would sit
 * too far from home. The hashes are known (span), so this reads the
 * strings in id order and asks early for the slots it will write. */
static int place_all(const partd_strtab *t, uint32_t *slots, uint32_t n)
{
    uint32_t mask = n - 1;
    for (uint32_t id = 0; id < t->count; id++) {
        if (id + PREFETCH_AHEAD < t->count)
            __builtin_prefetch(&slots[t->span[id + PREFETCH_AHEAD].hash & mask], 1);
        uint32_t h32 = t->span[id].hash, i = h32 & mask, k = 0;
        for (; slots[i] && k < PARTD_STRTAB_PROBE_MAX; k++)
            i = (i + 1) & mask;
        if (k == PARTD_STRTAB_PROBE_MAX)
            return -1;
        slots[i] = tag_of(h32, mask) | (id + 1);
    }
    return 0;
}

/* A new index of n slots, or more while some string would sit too far
 * from home; with rekey (or once a key has put too many strings
 * together), under a new key. 0, or -1 out of memory with the table as
 * it was. */
static int reindex(partd_strtab *t, uint32_t n, int rekey)
{
    uint8_t old_key[16];
    int rekeyed = 0;
    memcpy(old_key, t->key, sizeof old_key);
    if (n >= RECENT_FROM && !t->recent && !(t->recent = calloc(RECENT, sizeof *t->recent)))
        return -1;
    for (; n && n <= MAX_SLOTS; n *= 2, rekey = 1) {
        uint32_t *slots = new_slots(n);
        if (!slots)
            break;
        if (rekey || !t->n_slots) {
            draw_key(t->key);
            t->key_gen++;
            hash_all(t);
            rekeyed = 1;
        }
        if (place_all(t, slots, n) == 0) {
            free(t->slots);
            t->slots = slots;
            t->n_slots = n;
            return 0;
        }
        free(slots);
    }
    if (rekeyed && t->n_slots) { /* back to the index as it was */
        memcpy(t->key, old_key, sizeof old_key);
        t->key_gen++;
        hash_all(t);
    }
    return -1;
}

/* ---- strings --------------------------------------------------------------- */

static int reserve(partd_strtab *t, size_t len)
{
    if (t->used + len + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 4096;
        while (t->used + len + 1 > cap)
            cap *= 2;
        if (cap > UINT32_MAX)
            return -1; /* offsets are 32-bit */
        char *b = realloc(t->bytes, cap);
        if (!b)
            return -1;
        t->bytes = b;
        t->cap = cap;
    }
    if (t->count == t->span_cap) {
        uint32_t cap = t->span_cap ? t->span_cap * 2 : 256;
        partd_strtab_span *sp = realloc(t->span, cap * sizeof *sp);
        if (!sp)
            return -1;
        t->span = sp;
        t->span_cap = cap;
    }
    return 0;
}

/* The recent-strings cache entry of a string, picked by the hash's high
 * half (which neither home nor tag use); it holds the low half and
 * id + 1. */
static inline uint64_t *recent_entry(const partd_strtab *t, uint64_t h)
{
    return &t->recent[(h >> 32) & (RECENT - 1)];
}

static uint32_t recent_find(const partd_strtab *t, uint64_t h, const char *s, size_t len)
{
    uint64_t r = *recent_entry(t, h);
    if ((uint32_t)(r >> 32) == (uint32_t)h && (uint32_t)r && same(t, (uint32_t)r - 1, s, len))
        return (uint32_t)r - 1;
    return PARTD_STR_NONE;
}

uint32_t partd_strtab_find(const partd_strtab *t, const char *s, size_t len)
{
    if (!t->n_slots)
        return PARTD_STR_NONE;
    uint64_t h = hash_bytes(t, s, len);
    uint32_t id = t->recent ? recent_find(t, h, s, len) : PARTD_STR_NONE, at, read;
    return id != PARTD_STR_NONE ? id : lookup(t, s, len, (uint32_t)h, &at, &read);
}

partd_strtab_hint partd_strtab_prefetch(const partd_strtab *t, const char *s, size_t len)
{
    if (!t->n_slots)
        return (partd_strtab_hint){0, 0};
    uint64_t h = hash_bytes(t, s, len);
    __builtin_prefetch(&t->slots[(uint32_t)h & (t->n_slots - 1)]);
    return (partd_strtab_hint){h, t->key_gen};
}

/* Adds a new string whose lookup ended at slot `at` (UINT32_MAX: its run
 * was full); *h becomes its hash under the key the table ends with. */
static uint32_t insert(partd_strtab *t, const char *s, size_t len, uint64_t *h, uint32_t at)
{
    if (len > UINT32_MAX - 1 || t->count == PARTD_STR_NONE - 1 || reserve(t, len) != 0)
        return PARTD_STR_NONE;
    /* At most half full, and never further than PARTD_STRTAB_PROBE_MAX
     * from home: a full run means a new key. */
    for (;;) {
        int grow = (uint64_t)(t->count + 1) * 2 > t->n_slots;
        if (!grow && at != UINT32_MAX)
            break;
        if (reindex(t, grow ? t->n_slots * 2 : t->n_slots, at == UINT32_MAX) != 0)
            return PARTD_STR_NONE;
        uint32_t read;
        *h = hash_bytes(t, s, len);
        lookup(t, s, len, (uint32_t)*h, &at, &read);
    }
    uint32_t id = t->count++;
    t->span[id] = (partd_strtab_span){(uint32_t)t->used, (uint32_t)len, (uint32_t)*h};
    memcpy(t->bytes + t->used, s, len);
    t->bytes[t->used + len] = '\0';
    t->used += len + 1;
    t->slots[at] = tag_of((uint32_t)*h, t->n_slots - 1) | (id + 1);
    return id;
}

static uint32_t intern(partd_strtab *t, const char *s, size_t len, uint64_t h)
{
    uint32_t id = t->recent ? recent_find(t, h, s, len) : PARTD_STR_NONE, at, read;
    if (id != PARTD_STR_NONE)
        return id;
    id = lookup(t, s, len, (uint32_t)h, &at, &read);
    t->probes += read;
    if (id == PARTD_STR_NONE)
        id = insert(t, s, len, &h, at);
    if (t->recent && id != PARTD_STR_NONE)
        *recent_entry(t, h) = (uint64_t)(uint32_t)h << 32 | (id + 1);
    return id;
}

uint32_t partd_strtab_intern(partd_strtab *t, const char *s, size_t len)
{
    if (!t->n_slots && reindex(t, FIRST_SLOTS, 1) != 0)
        return PARTD_STR_NONE;
    return intern(t, s, len, hash_bytes(t, s, len));
}

uint32_t partd_strtab_intern_hinted(partd_strtab *t, const char *s, size_t len,
                                    partd_strtab_hint hint)
{
    if (!t->n_slots || hint.key_gen != t->key_gen)
        return partd_strtab_intern(t, s, len);
    return intern(t, s, len, hint.hash);
}
