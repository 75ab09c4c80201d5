/* strtab.c - interned strings; see strtab.h. */
#include "strtab.h"

#include <stdlib.h>
#include <string.h>

void partd_strtab_init(partd_strtab *t)
{
    memset(t, 0, sizeof *t);
}

void partd_strtab_free(partd_strtab *t)
{
    free(t->bytes);
    free(t->offset);
    free(t->length);
    free(t->slots);
    memset(t, 0, sizeof *t);
}

/* FNV-1a: names are short and not adversarially chosen to collide in a way
 * that matters (a collision costs a probe, never correctness). */
static uint32_t hash_bytes(const char *s, size_t len)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 16777619u;
    }
    return h;
}

static int same(const partd_strtab *t, uint32_t id, const char *s, size_t len)
{
    return t->length[id] == len && memcmp(t->bytes + t->offset[id], s, len) == 0;
}

uint32_t partd_strtab_find(const partd_strtab *t, const char *s, size_t len)
{
    if (!t->n_slots)
        return PARTD_STR_NONE;
    uint32_t mask = t->n_slots - 1;
    for (uint32_t i = hash_bytes(s, len) & mask;; i = (i + 1) & mask) {
        uint32_t slot = t->slots[i];
        if (!slot)
            return PARTD_STR_NONE;
        if (same(t, slot - 1, s, len))
            return slot - 1;
    }
}

static int grow_slots(partd_strtab *t)
{
    uint32_t n = t->n_slots ? t->n_slots * 2 : 64;
    uint32_t *slots = calloc(n, sizeof *slots);
    if (!slots)
        return -1;
    for (uint32_t id = 0; id < t->count; id++) {
        uint32_t i = hash_bytes(t->bytes + t->offset[id], t->length[id]) & (n - 1);
        while (slots[i])
            i = (i + 1) & (n - 1);
        slots[i] = id + 1;
    }
    free(t->slots);
    t->slots = slots;
    t->n_slots = n;
    return 0;
}

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
    if (t->count == t->offset_cap) {
        uint32_t cap = t->offset_cap ? t->offset_cap * 2 : 256;
        uint32_t *o = realloc(t->offset, cap * sizeof *o);
        if (!o)
            return -1;
        t->offset = o;
        uint32_t *l = realloc(t->length, cap * sizeof *l);
        if (!l)
            return -1;
        t->length = l;
        t->offset_cap = cap;
    }
    if ((uint64_t)(t->count + 1) * 2 > t->n_slots && grow_slots(t) != 0)
        return -1;
    return 0;
}

uint32_t partd_strtab_intern(partd_strtab *t, const char *s, size_t len)
{
    uint32_t id = partd_strtab_find(t, s, len);
    if (id != PARTD_STR_NONE)
        return id;
    if (t->count == PARTD_STR_NONE - 1 || reserve(t, len) != 0)
        return PARTD_STR_NONE;
    id = t->count++;
    t->offset[id] = (uint32_t)t->used;
    t->length[id] = (uint32_t)len;
    memcpy(t->bytes + t->used, s, len);
    t->bytes[t->used + len] = '\0';
    t->used += len + 1;
    uint32_t mask = t->n_slots - 1;
    uint32_t i = hash_bytes(s, len) & mask;
    while (t->slots[i])
        i = (i + 1) & mask;
    t->slots[i] = id + 1;
    return id;
}
