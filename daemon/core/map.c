/* map.c - see map.h. */
#include "map.h"

#include <sodium/crypto_shorthash_siphash24.h>
#include <sodium/core.h>
#include <sodium/randombytes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "partd/partd.h"

/* Keys come from clients (a cache key is the digest of a request, and a
 * client can try requests until their digests share a bucket), so the
 * hash is SipHash under a key of the map's own: which bucket a key lands
 * in cannot be known outside the process. */
static size_t hash_key(const partd_map *m, const char *key)
{
    unsigned char out[8];
    crypto_shorthash_siphash24(out, (const unsigned char *)key, strlen(key), m->key);
    uint64_t h;
    memcpy(&h, out, sizeof h);
    return (size_t)h;
}

/* A key no client can know, from the kernel's random pool through
 * libsodium (sodium_init is idempotent and thread-safe). */
static void draw_key(unsigned char key[16])
{
    if (sodium_init() < 0)
        abort(); /* no random source at all: nothing can be keyed */
    randombytes_buf(key, crypto_shorthash_siphash24_KEYBYTES);
}

void partd_map_init(partd_map *m)
{
    memset(m, 0, sizeof *m);
    draw_key(m->key);
}

void partd_map_free(partd_map *m)
{
    for (size_t i = 0; i < m->n_buckets; i++) {
        partd_map_entry *e = m->buckets[i];
        while (e) {
            partd_map_entry *next = e->next;
            free(e);
            e = next;
        }
    }
    free(m->buckets);
    memset(m, 0, sizeof *m);
}

static partd_map_entry **find_slot(const partd_map *m, const char *key)
{
    if (m->n_buckets == 0)
        return NULL;
    partd_map_entry **slot = &m->buckets[hash_key(m, key) & (m->n_buckets - 1)];
    while (*slot && strcmp((*slot)->key, key) != 0)
        slot = &(*slot)->next;
    return slot;
}

void *partd_map_get(const partd_map *m, const char *key)
{
    partd_map_entry **slot = find_slot(m, key);
    return slot && *slot ? (*slot)->value : NULL;
}

static int grow(partd_map *m)
{
    size_t n = m->n_buckets ? m->n_buckets * 2 : 64;
    partd_map_entry **b = calloc(n, sizeof *b);
    if (!b)
        return PARTD_ENOMEM;
    for (size_t i = 0; i < m->n_buckets; i++) {
        partd_map_entry *e = m->buckets[i];
        while (e) {
            partd_map_entry *next = e->next;
            size_t j = hash_key(m, e->key) & (n - 1);
            e->next = b[j];
            b[j] = e;
            e = next;
        }
    }
    free(m->buckets);
    m->buckets = b;
    m->n_buckets = n;
    return PARTD_OK;
}

int partd_map_put(partd_map *m, const char *key, void *value)
{
    partd_map_entry **slot = find_slot(m, key);
    if (slot && *slot) {
        (*slot)->key = key;
        (*slot)->value = value;
        return PARTD_OK;
    }
    if (m->count + 1 > m->n_buckets) {
        if (grow(m) != PARTD_OK)
            return PARTD_ENOMEM;
        slot = find_slot(m, key);
    }
    partd_map_entry *e = malloc(sizeof *e);
    if (!e)
        return PARTD_ENOMEM;
    e->key = key;
    e->value = value;
    e->next = NULL;
    *slot = e;
    m->count++;
    return PARTD_OK;
}

void *partd_map_remove(partd_map *m, const char *key)
{
    partd_map_entry **slot = find_slot(m, key);
    if (!slot || !*slot)
        return NULL;
    partd_map_entry *e = *slot;
    void *v = e->value;
    *slot = e->next;
    free(e);
    m->count--;
    return v;
}
