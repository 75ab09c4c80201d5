/* collide.c - names crafted to collide under FNV-1a; see collide.h. */
#include "collide.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CANDIDATES (1u << 14) /* about 8 pairs collide in 24 bits among them */
#define BLOCKS_TOTAL 11881376u /* 26^5 */

uint32_t partd_collide_fnv1a(const char *s, size_t len)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 16777619u;
    }
    return h;
}

static uint32_t step(uint32_t h, const char *block)
{
    for (int i = 0; i < PARTD_COLLIDE_BLOCK; i++) {
        h ^= (unsigned char)block[i];
        h *= 16777619u;
    }
    return h;
}

/* Block number x < 26^5 as five letters. */
static void block_of(uint32_t x, char *out)
{
    for (int i = 0; i < PARTD_COLLIDE_BLOCK; i++) {
        out[i] = (char)('a' + x % 26);
        x /= 26;
    }
}

typedef struct cand {
    uint32_t h, x;
} cand;

static int cmp_cand(const void *a, const void *b)
{
    const cand *p = a, *q = b;
    if (p->h != q->h)
        return p->h < q->h ? -1 : 1;
    return (p->x > q->x) - (p->x < q->x);
}

int partd_collide_pairs(uint32_t n_blocks, char (*pairs)[PARTD_COLLIDE_BLOCK])
{
    cand *c = malloc(CANDIDATES * sizeof *c);
    if (!c)
        return -1;
    uint32_t h = 2166136261u;
    for (uint32_t b = 0; b < n_blocks; b++) {
        /* a different slice of the blocks for each pair: deterministic */
        uint32_t found = 0;
        for (uint32_t round = 0; !found; round++) {
            for (uint32_t k = 0; k < CANDIDATES; k++) {
                char blk[PARTD_COLLIDE_BLOCK];
                /* 7919 is prime to 26^5: distinct blocks */
                uint32_t x = (uint32_t)(((uint64_t)(k + (b + round) * CANDIDATES) * 7919u) %
                                        BLOCKS_TOTAL);
                block_of(x, blk);
                c[k] = (cand){step(h, blk) & PARTD_COLLIDE_MASK, x};
            }
            qsort(c, CANDIDATES, sizeof *c, cmp_cand);
            for (uint32_t k = 1; k < CANDIDATES && !found; k++)
                if (c[k].h == c[k - 1].h && c[k].x != c[k - 1].x) {
                    block_of(c[k - 1].x, pairs[2 * b]);
                    block_of(c[k].x, pairs[2 * b + 1]);
                    h = step(h, pairs[2 * b]);
                    found = 1;
                }
        }
    }
    free(c);
    return 0;
}

void partd_collide_name(char (*pairs)[PARTD_COLLIDE_BLOCK], uint32_t n_blocks, uint64_t i,
                        char *out)
{
    for (uint32_t b = 0; b < n_blocks; b++)
        memcpy(out + (size_t)b * PARTD_COLLIDE_BLOCK, pairs[2 * b + ((i >> b) & 1)],
               PARTD_COLLIDE_BLOCK);
    out[(size_t)n_blocks * PARTD_COLLIDE_BLOCK] = '\0';
}

void partd_collide_plain_name(uint32_t n_blocks, uint64_t i, char *out)
{
    size_t len = (size_t)n_blocks * PARTD_COLLIDE_BLOCK;
    int n = snprintf(out, len + 1, "n%llu", (unsigned long long)i);
    for (size_t k = (size_t)n; k < len; k++)
        out[k] = 'x';
    out[len] = '\0';
}
