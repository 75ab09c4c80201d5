/* decode_keys.c - the keys of the open objects; see decode_keys.h. */
#include "decode_keys.h"

#include <stdlib.h>
#include <string.h>

#define SMALL_OBJECT 16 /* keys compared one by one up to this many */

static uint32_t hash_bytes(const char *k, size_t len)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)k[i]) * 16777619u;
    return h;
}

/* Arena entry: uint32 length, the bytes, a NUL. */
static const char *arena_key(const partd_keys *s, size_t off, uint32_t *len)
{
    memcpy(len, s->arena + off, sizeof *len);
    return s->arena + off + sizeof *len;
}

static int set_insert(partd_keys *s, partd_keyset *f, size_t off)
{
    if ((f->n_keys + 1) * 2 > f->set_cap) {
        uint32_t cap = f->set_cap ? f->set_cap * 2 : 64;
        uint32_t *set = calloc(cap, sizeof *set);
        if (!set)
            return -1;
        for (uint32_t i = 0; i < f->set_cap; i++)
            if (f->set[i]) {
                uint32_t len;
                const char *k = arena_key(s, f->set[i] - 1, &len);
                uint32_t j = hash_bytes(k, len) & (cap - 1);
                while (set[j])
                    j = (j + 1) & (cap - 1);
                set[j] = f->set[i];
            }
        free(f->set);
        f->set = set;
        f->set_cap = cap;
    }
    uint32_t len;
    const char *k = arena_key(s, off, &len);
    uint32_t j = hash_bytes(k, len) & (f->set_cap - 1);
    while (f->set[j])
        j = (j + 1) & (f->set_cap - 1);
    f->set[j] = (uint32_t)off + 1;
    return 0;
}

/* 1 when the open object already has the key. */
int partd_keyset_has(const partd_keys *s, const partd_keyset *f, const char *k, size_t len)
{
    if (f->set) {
        uint32_t j = hash_bytes(k, len) & (f->set_cap - 1);
        for (; f->set[j]; j = (j + 1) & (f->set_cap - 1)) {
            uint32_t l;
            const char *o = arena_key(s, f->set[j] - 1, &l);
            if (l == len && memcmp(o, k, len) == 0)
                return 1;
        }
        return 0;
    }
    size_t off = f->start;
    for (uint32_t i = 0; i < f->n_keys; i++) {
        uint32_t l;
        const char *o = arena_key(s, off, &l);
        if (l == len && memcmp(o, k, len) == 0)
            return 1;
        off += sizeof l + l + 1;
    }
    return 0;
}

/* Stores the key of the open object; -1 when memory ran out. */
int partd_keyset_add(partd_keys *s, partd_keyset *f, const char *k, size_t len)
{
    size_t need = sizeof(uint32_t) + len + 1;
    if (len > UINT32_MAX || s->used + need > UINT32_MAX - 1)
        return -1;
    if (s->used + need > s->cap) {
        size_t cap = s->cap ? s->cap : 4096;
        while (cap < s->used + need)
            cap *= 2;
        char *a = realloc(s->arena, cap);
        if (!a)
            return -1;
        s->arena = a;
        s->cap = cap;
    }
    size_t off = s->used;
    uint32_t l = (uint32_t)len;
    memcpy(s->arena + off, &l, sizeof l);
    memcpy(s->arena + off + sizeof l, k, len);
    s->arena[off + sizeof l + len] = '\0';
    s->used += need;
    f->last = off + sizeof l;
    f->n_keys++;
    if (f->n_keys == SMALL_OBJECT + 1) {
        size_t o = f->start;
        uint32_t total = f->n_keys;
        for (uint32_t i = 0; i < total; i++) {
            uint32_t kl;
            memcpy(&kl, s->arena + o, sizeof kl);
            f->n_keys = i; /* set_insert sizes by the keys so far */
            if (set_insert(s, f, o) != 0)
                return -1;
            o += sizeof kl + kl + 1;
        }
        f->n_keys = total;
    } else if (f->set) {
        f->n_keys--;
        int rc = set_insert(s, f, off);
        f->n_keys++;
        return rc;
    }
    return 0;
}

void partd_keyset_close(partd_keys *s, partd_keyset *f)
{
    s->used = f->start;
    free(f->set);
    f->set = NULL;
}

void partd_keys_free(partd_keys *s)
{
    free(s->arena);
    s->arena = NULL;
    s->used = s->cap = 0;
}
