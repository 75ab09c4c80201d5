/* decode_keys.c - the keys of the open objects; see decode_keys.h. */
#include "decode_keys.h"

#include <stdlib.h>
#include <string.h>

#define SMALL_OBJECT 16 /* keys compared one by one up to this many */

/* 1 when a small object already has the key. */
static int small_has(const partd_keys *s, const partd_keyset *f, const char *k, size_t len)
{
    for (uint32_t i = f->first; i < f->first + f->n_keys; i++)
        if (s->refs[i].len == len && memcmp(s->arena + s->refs[i].off, k, len) == 0)
            return 1;
    return 0;
}

int partd__decode_keys_has(const partd_keys *s, const partd_keyset *f, const char *k, size_t len)
{
    return f->set ? partd_strtab_find(f->set, k, len) != PARTD_STR_NONE : small_has(s, f, k, len);
}

/* The object has grown: a table of the keys it has so far, which it keeps
 * from now on instead of refs. */
static int make_set(partd_keys *s, partd_keyset *f)
{
    if (!(f->set = malloc(sizeof *f->set)))
        return -1;
    partd_strtab_init(f->set);
    for (uint32_t i = f->first; i < f->first + f->n_keys; i++)
        if (partd_strtab_intern(f->set, s->arena + s->refs[i].off, s->refs[i].len) ==
            PARTD_STR_NONE)
            return -1;
    s->n_refs = f->first;
    return 0;
}

static int arena_append(partd_keys *s, partd_keyset *f, const char *k, size_t len)
{
    size_t need = len + 1;
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
    if (!f->set && s->n_refs == s->refs_cap) {
        uint32_t cap = s->refs_cap ? s->refs_cap * 2 : 256;
        partd_keyref *r = realloc(s->refs, cap * sizeof *r);
        if (!r)
            return -1;
        s->refs = r;
        s->refs_cap = cap;
    }
    size_t off = s->used;
    memcpy(s->arena + off, k, len);
    s->arena[off + len] = '\0';
    s->used += need;
    if (!f->set)
        s->refs[s->n_refs++] = (partd_keyref){(uint32_t)off, (uint32_t)len};
    f->last = off;
    f->n_keys++;
    return 0;
}

int partd__decode_keys_add(partd_keys *s, partd_keyset *f, const char *k, size_t len)
{
    if (!f->set && f->n_keys == SMALL_OBJECT && make_set(s, f) != 0)
        return -1;
    if (f->set) {
        uint32_t before = f->set->count;
        uint32_t id = partd_strtab_intern(f->set, k, len);
        if (id == PARTD_STR_NONE)
            return -1;
        if (id < before)
            return 1;
    } else if (small_has(s, f, k, len)) {
        return 1;
    }
    return arena_append(s, f, k, len);
}

void partd__decode_keys_close(partd_keys *s, partd_keyset *f)
{
    s->used = f->start;
    s->n_refs = f->first;
    if (f->set) {
        partd_strtab_free(f->set);
        free(f->set);
        f->set = NULL;
    }
}

void partd__decode_keys_free(partd_keys *s)
{
    free(s->arena);
    free(s->refs);
    *s = (partd_keys){0};
}
