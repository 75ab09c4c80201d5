/*
 * cache.c - LRU of result documents. See cache.h.
 *
 * A doubly linked list (most recent at the head) plus a hash map for lookup.
 * The byte charge of an entry is what it holds in memory, not what its
 * bytes measure: every buffer it owns (each form of its document, its
 * summary, the entry itself) at the size malloc gave it, and its slot in
 * the map. Forms arrive in buffers larger than their lengths (a rendered
 * document grows by doubling from 64 KiB, a coded form is allocated at the
 * compressor's worst-case bound), so each is first cut to its length: a
 * small result would otherwise hold tens of times what it measures, and
 * the budget would bound nothing.
 */
#include "cache.h"

#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/map.h"
#include "partd/partd.h"

struct partd_cache {
    pthread_mutex_t lock;
    partd_map map;
    partd_cache_entry *head, *tail;
    uint64_t max_bytes, bytes, entries;
    atomic_uint_fast64_t hits, misses;
};

partd_cache *partd_cache_new(uint64_t max_bytes)
{
    partd_cache *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    pthread_mutex_init(&c->lock, NULL);
    partd_map_init(&c->map);
    c->max_bytes = max_bytes;
    return c;
}

/* What malloc holds for p: its usable size and the chunk's header. */
static size_t held(void *p)
{
    return p ? malloc_usable_size(p) + sizeof(size_t) : 0;
}

/* An entry's node in the map and its share of the buckets (one bucket per
 * entry, the table at most half empty). */
#define MAP_SLOT_BYTES (sizeof(partd_map_entry) + sizeof(size_t) + 2 * sizeof(void *))

/* Cuts a form's buffer to its length when that frees more than malloc's
 * rounding; a buffer realloc cannot move stays as it is (and is charged
 * as it is). */
static void fit(partd_blob *b)
{
    if (!b->data || b->len == 0 || malloc_usable_size(b->data) - b->len < 64)
        return;
    char *p = realloc(b->data, b->len);
    if (p)
        b->data = p;
}

static void entry_free(partd_cache_entry *e)
{
    partd_encoding_forms_free(e->forms);
    free(e->summary);
    free(e);
}

void partd_cache_entry_release(partd_cache_entry *e)
{
    if (e && atomic_fetch_sub(&e->refs, 1) == 1)
        entry_free(e);
}

static void unlink_entry(partd_cache *c, partd_cache_entry *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        c->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        c->tail = e->prev;
    e->prev = e->next = NULL;
}

static void push_front(partd_cache *c, partd_cache_entry *e)
{
    e->prev = NULL;
    e->next = c->head;
    if (c->head)
        c->head->prev = e;
    c->head = e;
    if (!c->tail)
        c->tail = e;
}

/* Drops the entry from the cache; readers holding a reference keep it alive. */
static void evict(partd_cache *c, partd_cache_entry *e)
{
    unlink_entry(c, e);
    partd_map_remove(&c->map, e->key);
    c->bytes -= e->charge;
    c->entries--;
    e->linked = 0;
    partd_cache_entry_release(e);
}

void partd_cache_free(partd_cache *c)
{
    if (!c)
        return;
    while (c->head)
        evict(c, c->head);
    partd_map_free(&c->map);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

unsigned partd_cache_entry_codings(const partd_cache_entry *e)
{
    unsigned set = 1u << PARTD_CODING_IDENTITY;
    for (int c = 0; c < PARTD_CODINGS; c++)
        if (e->forms[c].data)
            set |= 1u << c;
    return set;
}

int partd_cache_put(partd_cache *c, const char *key, const char *etag,
                    partd_blob *forms, char *summary, partd_cache_entry **out)
{
    if (out)
        *out = NULL;
    partd_cache_entry *e = calloc(1, sizeof *e);
    if (!e) {
        partd_encoding_forms_free(forms);
        free(summary);
        return PARTD_ENOMEM;
    }
    snprintf(e->key, sizeof e->key, "%s", key);
    snprintf(e->etag, sizeof e->etag, "%s", etag);
    e->charge = held(e) + held(summary) + MAP_SLOT_BYTES;
    for (int k = 0; k < PARTD_CODINGS; k++) {
        e->forms[k] = forms[k];
        fit(&e->forms[k]);
        e->charge += held(e->forms[k].data);
        forms[k].data = NULL;
        forms[k].len = 0;
    }
    e->summary = summary;
    atomic_init(&e->refs, 1);

    pthread_mutex_lock(&c->lock);
    partd_cache_entry *old = partd_map_get(&c->map, key);
    if (old) {
        /* Results are deterministic: keep the one already there. */
        unlink_entry(c, old);
        push_front(c, old);
        if (out) {
            atomic_fetch_add(&old->refs, 1);
            *out = old;
        }
        pthread_mutex_unlock(&c->lock);
        partd_cache_entry_release(e);
        return PARTD_OK;
    }
    if (e->charge > c->max_bytes || partd_map_put(&c->map, e->key, e) != PARTD_OK) {
        /* Not cached, but still handed to the caller. */
        pthread_mutex_unlock(&c->lock);
        if (out)
            *out = e;
        else
            partd_cache_entry_release(e);
        return PARTD_OK;
    }
    e->linked = 1;
    push_front(c, e);
    c->bytes += e->charge;
    c->entries++;
    while (c->bytes > c->max_bytes && c->tail && c->tail != e)
        evict(c, c->tail);
    if (out) {
        atomic_fetch_add(&e->refs, 1);
        *out = e;
    }
    pthread_mutex_unlock(&c->lock);
    return PARTD_OK;
}

partd_cache_entry *partd_cache_get(partd_cache *c, const char *key)
{
    pthread_mutex_lock(&c->lock);
    partd_cache_entry *e = partd_map_get(&c->map, key);
    if (e) {
        if (c->head != e) {
            unlink_entry(c, e);
            push_front(c, e);
        }
        atomic_fetch_add(&e->refs, 1);
    }
    pthread_mutex_unlock(&c->lock);
    if (e)
        atomic_fetch_add(&c->hits, 1);
    else
        atomic_fetch_add(&c->misses, 1);
    return e;
}

void partd_cache_remove(partd_cache *c, const char *key)
{
    pthread_mutex_lock(&c->lock);
    partd_cache_entry *e = partd_map_get(&c->map, key);
    if (e)
        evict(c, e);
    pthread_mutex_unlock(&c->lock);
}

void partd_cache_stats_get(partd_cache *c, partd_cache_stats *out)
{
    pthread_mutex_lock(&c->lock);
    out->bytes = c->bytes;
    out->entries = c->entries;
    pthread_mutex_unlock(&c->lock);
    out->hits = atomic_load(&c->hits);
    out->misses = atomic_load(&c->misses);
}
