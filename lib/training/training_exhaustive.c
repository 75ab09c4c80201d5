/*
 * training_exhaustive.c - every plan of a small space; see
 * training_exhaustive.h.
 */
#include "training_exhaustive.h"

#include <stdlib.h>
#include <string.h>

#include "partd/partd.h"

typedef struct exh {
    const partd_training_space *sp;
    partd_training_cfg c;
    partd_training_plan p;
    partd_training_best *b;
    uint64_t plans, combos, work;
    /* per rank: its stages and the combos kept (flat, v indices each) */
    uint32_t *rs, *rk;         /* stages of rank r: rs[r * v + i], count rk[r] */
    uint32_t *nkeep;
    size_t *keepcap, kmemcap;
    uint32_t **kept;           /* per rank: v candidate indices per combo kept */
    int64_t *kmem;             /* the memory of each combo kept (the rank at hand) */
} exh;

/* Is combo a (sets ia, memory ma) at least as good as b on every stage's
 * recomputation and on memory, and no later in the tie order? Then a plan
 * with b does no better than the same plan with a. */
static int dominates(const exh *e, uint32_t r, const uint32_t *ia, int64_t ma, const uint32_t *ib,
                     int64_t mb)
{
    uint32_t k = e->rk[r];
    if (ma > mb)
        return 0;
    int order = 0; /* the first stage where the sets differ decides */
    for (uint32_t i = 0; i < k; i++) {
        uint32_t j = e->rs[r * e->c.v + i];
        const partd_training_ckpt *xa = &e->c.cand[e->c.cand_off[j] + ia[i]], *xb = &e->c.cand[e->c.cand_off[j] + ib[i]];
        if (xa->R > xb->R)
            return 0;
        if (!order)
            order = partd__training_mask_cmp(xa->mask, xb->mask);
    }
    return order <= 0;
}

/* Does combo a beat combo b in every stage's recomputation (equal ones:
 * in memory, then tie order)? */
static int faster(const exh *e, uint32_t r, const uint32_t *ia, int64_t ma, const uint32_t *ib,
                  int64_t mb)
{
    int equal = 1;
    for (uint32_t i = 0; i < e->rk[r]; i++) {
        uint32_t j = e->rs[r * e->c.v + i];
        double ra = e->c.cand[e->c.cand_off[j] + ia[i]].R, rb = e->c.cand[e->c.cand_off[j] + ib[i]].R;
        if (ra > rb)
            return 0;
        equal &= ra == rb;
    }
    return !equal || dominates(e, r, ia, ma, ib, mb);
}

/* Keeps only rank r's kept combos that no other beats in every stage's
 * recomputation (equal ones: the least memory, then the tie order). */
static int keep_fastest(exh *e, uint32_t r)
{
    const partd_training_model *md = e->sp->md;
    uint32_t v = e->c.v, n = e->nkeep[r], w = 0;
    if (partd__training_grow(&e->kmem, sizeof *e->kmem, &e->kmemcap, n) != PARTD_OK)
        return PARTD_ENOMEM;
    for (uint32_t q = 0; q < n; q++) { /* the memories again: kmem held another rank's */
        for (uint32_t i = 0; i < e->rk[r]; i++) {
            uint32_t j = e->rs[r * v + i];
            e->p.x[j] = e->c.cand[e->c.cand_off[j] + e->kept[r][(size_t)q * v + i]];
        }
        e->kmem[q] = partd__training_eval_rank_memory(md, &e->c, r, e->p.x);
    }
    uint8_t *out = calloc(n, 1);
    if (!out)
        return PARTD_ENOMEM;
    for (uint32_t q = 0; q < n; q++) {
        const uint32_t *iq = e->kept[r] + (size_t)q * v;
        for (uint32_t o = 0; o < n && !out[q]; o++) {
            const uint32_t *io = e->kept[r] + (size_t)o * v;
            /* of two that beat each other (the same figures), the first stays */
            out[q] = o != q && faster(e, r, io, e->kmem[o], iq, e->kmem[q]) &&
                     !(o > q && faster(e, r, iq, e->kmem[q], io, e->kmem[o]));
        }
    }
    for (uint32_t q = 0; q < n; q++)
        if (!out[q]) {
            memmove(e->kept[r] + (size_t)w * v, e->kept[r] + (size_t)q * v, v * sizeof(uint32_t));
            e->kmem[w++] = e->kmem[q];
        }
    free(out);
    e->nkeep[r] = w;
    return PARTD_OK;
}

/* Rank r's combos that fit and that no other fitting one dominates; or
 * (none fits) the one of least memory, *fits = 0. */
static int rank_combos(exh *e, uint32_t r, int *fits)
{
    partd_training_cfg *c = &e->c;
    const partd_training_model *md = e->sp->md;
    uint32_t k = e->rk[r], v = c->v;
    int64_t cap = md->req->devices[c->dev[r]].memory_bytes;
    uint32_t idx[PARTD_TRAINING_MAX_VIRTUAL] = {0};
    uint32_t least[PARTD_TRAINING_MAX_VIRTUAL] = {0};
    int64_t least_mem = INT64_MAX;
    partd_training_ckpt *x = e->p.x;
    e->nkeep[r] = 0;
    *fits = 0;
    for (;;) {
        for (uint32_t i = 0; i < k; i++) {
            uint32_t j = e->rs[r * v + i];
            x[j] = e->c.cand[e->c.cand_off[j] + idx[i]];
        }
        int64_t m = partd__training_eval_rank_memory(md, c, r, x);
        if (++e->combos > PARTD_TRAINING_EXHAUSTIVE_COMBOS)
            return PARTD_ETOOBIG;
        if (m < least_mem) {
            least_mem = m;
            memcpy(least, idx, sizeof least);
        }
        if (m <= cap) {
            int dom = 0;
            uint32_t w = 0;
            for (uint32_t q = 0; q < e->nkeep[r] && !dom; q++)
                dom = dominates(e, r, e->kept[r] + (size_t)q * v, e->kmem[q], idx, m);
            /* drop the kept ones this one dominates */
            for (uint32_t q = 0; q < e->nkeep[r] && !dom; q++) {
                if (dominates(e, r, idx, m, e->kept[r] + (size_t)q * v, e->kmem[q]))
                    continue;
                memmove(e->kept[r] + (size_t)w * v, e->kept[r] + (size_t)q * v, v * sizeof(uint32_t));
                e->kmem[w++] = e->kmem[q];
            }
            if (!dom) {
                e->nkeep[r] = w;
                if (partd__training_grow(&e->kept[r], sizeof **e->kept, &e->keepcap[r],
                                         ((size_t)w + 1) * v) != PARTD_OK ||
                    partd__training_grow(&e->kmem, sizeof *e->kmem, &e->kmemcap, (size_t)w + 1) !=
                        PARTD_OK)
                    return PARTD_ENOMEM;
                memcpy(e->kept[r] + (size_t)w * v, idx, v * sizeof(uint32_t));
                e->kmem[w] = m;
                e->nkeep[r] = w + 1;
                *fits = 1;
            }
        }
        uint32_t i = 0;
        while (i < k) {
            uint32_t j = e->rs[r * v + i];
            if (++idx[i] < e->c.cand_off[j + 1] - e->c.cand_off[j])
                break;
            idx[i++] = 0;
        }
        if (i == k)
            break;
    }
    if (!*fits) {
        e->nkeep[r] = 1;
        if (partd__training_grow(&e->kept[r], sizeof **e->kept, &e->keepcap[r], v) != PARTD_OK)
            return PARTD_ENOMEM;
        memcpy(e->kept[r], least, v * sizeof(uint32_t));
    }
    return PARTD_OK;
}

/* Every product of the ranks' kept combos. */
static int time_products(exh *e)
{
    partd_training_cfg *c = &e->c;
    const partd_training_model *md = e->sp->md;
    uint32_t S = c->S, v = c->v;
    uint32_t *pick = calloc(S, sizeof *pick);
    if (!pick)
        return PARTD_ENOMEM;
    int rc = PARTD_OK;
    for (;;) {
        for (uint32_t r = 0; r < S; r++)
            for (uint32_t i = 0; i < e->rk[r]; i++) {
                uint32_t j = e->rs[r * v + i];
                e->p.x[j] = e->c.cand[e->c.cand_off[j] + e->kept[r][(size_t)pick[r] * v + i]];
            }
        partd__training_eval_plan(md, c, &e->p, NULL, NULL);
        e->plans++;
        e->work += c->lists.n;
        if ((rc = partd__training_plan_offer(e->b, &e->p)) != PARTD_OK)
            break;
        uint32_t r = 0;
        while (r < S && ++pick[r] >= e->nkeep[r])
            pick[r++] = 0;
        if (r == S)
            break;
    }
    free(pick);
    return rc;
}

static int exh_split(exh *e)
{
    partd_training_cfg *c = &e->c;
    const partd_training_model *md = e->sp->md;
    partd__training_eval_stages(md, c, e->p.cut);
    int rc = partd__training_load_candidates(c, e->p.cut, NULL, c->V, 1);
    int all_fit = 1;
    for (uint32_t r = 0; r < c->S && rc == PARTD_OK; r++) {
        int fits;
        rc = rank_combos(e, r, &fits);
        all_fit &= fits;
    }
    if (rc != PARTD_OK)
        return rc;
    if (all_fit) {
        double product = 1;
        for (uint32_t r = 0; r < c->S; r++)
            product *= e->nkeep[r];
        for (uint32_t r = 0;
             r < c->S && product > PARTD_TRAINING_EXHAUSTIVE_PRODUCT && rc == PARTD_OK; r++)
            rc = keep_fastest(e, r);
        return rc == PARTD_OK ? time_products(e) : rc;
    }
    /* no plan of this split fits: its least-memory plan, for the problem */
    for (uint32_t r = 0; r < c->S; r++) {
        e->nkeep[r] = 1;
        for (uint32_t i = 0; i < e->rk[r]; i++) {
            uint32_t j = e->rs[r * c->v + i];
            e->p.x[j] = e->c.cand[e->c.cand_off[j] + e->kept[r][i]];
        }
    }
    partd__training_eval_plan(md, c, &e->p, NULL, NULL);
    e->plans++;
    return partd__training_plan_offer(e->b, &e->p);
}

/* Every split of the configuration, cuts in lexicographic order. */
static int exh_config(exh *e)
{
    partd_training_cfg *c = &e->c;
    uint32_t V = c->V, n = e->sp->md->n_units;
    for (uint32_t j = 0; j <= V; j++)
        e->p.cut[j] = j < V ? j : n;
    for (uint32_t r = 0; r < c->S; r++)
        e->rk[r] = 0;
    for (uint32_t j = 0; j < V; j++) {
        uint32_t r = c->rank[j];
        e->rs[r * c->v + e->rk[r]++] = j;
    }
    int rc = PARTD_OK;
    for (;;) {
        if ((rc = partd_cancel_check(e->sp->cancel)) != PARTD_OK || (rc = exh_split(e)) != PARTD_OK)
            return rc;
        if (e->plans > PARTD_TRAINING_EXHAUSTIVE_PLANS)
            return PARTD_ETOOBIG;
        /* next cuts: the last cut that can move right does, the later ones follow it */
        uint32_t j = V - 1;
        while (j >= 1 && e->p.cut[j] + 1 > n - (V - j))
            j--;
        if (j < 1)
            return PARTD_OK;
        e->p.cut[j]++;
        for (uint32_t i = j + 1; i < V; i++)
            e->p.cut[i] = e->p.cut[i - 1] + 1;
    }
}

int partd__training_exhaustive(const partd_training_space *sp, partd_training_best *b,
                               partd_training_stats *st)
{
    exh e;
    memset(&e, 0, sizeof e);
    e.sp = sp;
    e.b = b;
    int rc = PARTD_OK;
    for (uint32_t k = 0; k < sp->n && rc == PARTD_OK; k++) {
        if ((rc = partd__training_space_build(sp, k, &e.c)) != PARTD_OK)
            break;
        uint32_t S = e.c.S, V = e.c.V, v = e.c.v;
        e.rs = malloc((size_t)S * v * sizeof *e.rs);
        e.rk = calloc(S, sizeof *e.rk);
        e.nkeep = calloc(S, sizeof *e.nkeep);
        e.keepcap = calloc(S, sizeof *e.keepcap);
        e.kept = calloc(S, sizeof *e.kept);
        if (!e.rs || !e.rk || !e.nkeep || !e.keepcap || !e.kept ||
            partd__training_plan_alloc(&e.p, S, V) != PARTD_OK)
            rc = PARTD_ENOMEM;
        if (rc == PARTD_OK)
            rc = exh_config(&e);
        st->configs++;
        for (uint32_t r = 0; e.kept && r < S; r++)
            free(e.kept[r]);
        free(e.kept);
        free(e.rs);
        free(e.rk);
        free(e.nkeep);
        free(e.keepcap);
        partd__training_plan_free(&e.p);
        partd__training_cfg_free(&e.c);
    }
    free(e.kmem);
    st->evaluations += e.plans;
    st->work += e.work;
    return rc;
}
