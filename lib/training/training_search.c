/*
 * training_search.c - the search over configurations, splits and
 * checkpoint sets; see training_search.h.
 *
 * Configurations are enumerated in the order of the tie keys: ranks S,
 * then schedule (contract order), v, and the device sequence (a sequence
 * of device classes, each class's devices in list order, classes in the
 * order of their first device). Then:
 *   - exhaustive, when the splits of every configuration are few: every
 *     split, every checkpoint set of every stage (per rank, only the sets
 *     that no other beats in recomputation, memory and tie order; only
 *     the fastest when the ranks' sets multiply into too many plans),
 *     every plan timed: the answer is optimal;
 *   - otherwise, in the order of their fluid bounds while below the best
 *     step, the speed-balanced split of the first, middle and last device
 *     order of every (ranks, schedule, v), then of every order of the best
 *     of those; the best configurations improved by moving one cut at a
 *     time while the plan improves; and, when at most BOUND_COMBOS
 *     (ranks, schedule, v) have configurations whose fluid bound is below
 *     the best step, each of them the relaxation of training_bound.c over
 *     all those device orders at once (the combo of the best plan first,
 *     the others stopping once past the least bound so far). The least
 *     bound is the answer's lower bound; optimal when it meets the step.
 * Work (actions timed, units priced) is counted, not clocked, so that the
 * answer is the same on every machine.
 */
#include "training_search.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "partd/partd.h"

/* Exhaustive when every configuration's splits add up to at most this, and
 * while the plans timed and the checkpoint combinations sized stay below
 * EXH_PLANS and EXH_COMBOS. */
#define EXH_SPLITS 20000
#define EXH_PLANS 400000
#define EXH_COMBOS 4000000
/* When the ranks' kept combinations make more plans than this, each keeps
 * only those no other beats in every stage's recomputation: the step stays
 * the least, the tie on memory among equal steps is no longer searched. */
#define EXH_PRODUCT 64
/* Configurations at most: past it, each rank count tries as many device
 * sequences as its share allows (at least a few, at most SEQ_CAP), the
 * others bounded by the fluid bound of the fastest devices. */
#define CONFIG_CAP 20000
#define SEQ_CAP 512
#define SEQ_MIN 4
/* Work budgets of the large search (actions timed, units priced). */
#define WORK_SCAN 150000000ull
#define SCAN_COMBOS 8
/* Up to this many configurations, every one is scanned at once. */
#define SCAN_ALL 1024
#define WORK_IMPROVE 60000000ull
#define WORK_BOUND 60000000ull
#define IMPROVE_CONFIGS 24
/* The relaxation bounds configurations only when it can bound every one
 * below the best step (the least bound is the answer's): at most this many
 * (ranks, schedule, v), each over all its device orders. */
#define BOUND_COMBOS 256

typedef struct desc {
    uint8_t sched, v;
    uint32_t S, dev_off;
    uint32_t combo;            /* its (ranks, schedule, v) */
    uint32_t seq, nseq;        /* its device sequence among the combo's */
} desc;

typedef struct space {
    const partd_training_model *md;
    const partd_cancel *cancel;
    desc *d;
    uint32_t n, n_combos;
    size_t cap;
    uint32_t *dev;             /* the devices of every configuration */
    size_t ndev, devcap;
    uint8_t *hot;              /* per combo: every sequence is tried */
    int partial;               /* some device sequences were left out */
    double partial_lb;         /* the fluid bound of those left out */
} space;

/* ---- configurations ----------------------------------------------------------- */

static int add_desc(space *sp, partd_training_schedule s, uint32_t v, uint32_t S,
                    const uint32_t *dev, uint32_t combo, uint32_t seq, uint32_t nseq)
{
    if (partd__training_grow(&sp->d, sizeof *sp->d, &sp->cap, (size_t)sp->n + 1) != PARTD_OK ||
        partd__training_grow(&sp->dev, sizeof *sp->dev, &sp->devcap, sp->ndev + S) != PARTD_OK)
        return PARTD_ENOMEM;
    memcpy(sp->dev + sp->ndev, dev, S * sizeof *dev);
    sp->d[sp->n++] = (desc){(uint8_t)s, (uint8_t)v, S, (uint32_t)sp->ndev, combo, seq, nseq};
    sp->ndev += S;
    return PARTD_OK;
}

/* The v values of schedule s with S ranks. */
static uint32_t v_range(const partd_training_model *md, partd_training_schedule s, uint32_t S,
                        uint32_t *lo, uint32_t *hi)
{
    uint32_t fixed = partd_training_schedule_v(s, 0);
    if (fixed) {
        *lo = *hi = fixed;
    } else if (md->opt->virtual_stages) {
        *lo = *hi = md->opt->virtual_stages;
    } else {
        *lo = 1;
        *hi = PARTD_TRAINING_MAX_VIRTUAL;
    }
    while (*hi >= *lo && (uint64_t)S * *hi > md->n_units)
        (*hi)--;
    return *hi >= *lo;
}

/* The device sequences of S ranks: given, or every sequence of classes. */
typedef struct seqs {
    uint32_t *dev;             /* count * S */
    uint32_t count, S;
} seqs;

static int seq_push(seqs *q, const uint32_t *dev, size_t *cap)
{
    if (partd__training_grow(&q->dev, sizeof *q->dev, cap, ((size_t)q->count + 1) * q->S) != PARTD_OK)
        return PARTD_ENOMEM;
    memcpy(q->dev + (size_t)q->count * q->S, dev, q->S * sizeof *dev);
    q->count++;
    return PARTD_OK;
}

/* Depth-first over class sequences in lexicographic order, each class's
 * devices in list order; stops (partial) past limit. */
static int class_seqs(const partd_training_model *md, seqs *q, uint32_t *used, uint32_t *cur,
                      uint32_t pos, size_t *cap, uint32_t limit, int *partial)
{
    if (pos == q->S)
        return seq_push(q, cur, cap);
    for (uint32_t c = 0; c < md->n_classes; c++) {
        if (used[c] == md->cls_count[c])
            continue;
        if (q->count >= limit) {
            *partial = 1;
            return PARTD_OK;
        }
        cur[pos] = md->cls_dev[md->cls_dev_off[c] + used[c]];
        used[c]++;
        int rc = class_seqs(md, q, used, cur, pos + 1, cap, limit, partial);
        used[c]--;
        if (rc != PARTD_OK)
            return rc;
    }
    return PARTD_OK;
}

static int cmp_speed_desc(const void *x, const void *y, void *ctx)
{
    const partd_request *req = ctx;
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    double sa = req->devices[a].speed, sb = req->devices[b].speed;
    if (sa != sb)
        return sa > sb ? -1 : 1;
    return a < b ? -1 : a > b;
}

/* When the sequences were cut: the fastest S devices in both orders. */
static int extra_seqs(const partd_training_model *md, seqs *q, size_t *cap)
{
    uint32_t n = md->req->n_devices, S = q->S;
    uint32_t *all = malloc(n * sizeof *all), *rev = malloc(S * sizeof *rev);
    if (!all || !rev) {
        free(all);
        free(rev);
        return PARTD_ENOMEM;
    }
    for (uint32_t d = 0; d < n; d++)
        all[d] = d;
    for (uint32_t i = 1; i < n; i++) /* insertion sort: stable, no context qsort */
        for (uint32_t k = i; k > 0 && cmp_speed_desc(&all[k], &all[k - 1], (void *)md->req) < 0; k--) {
            uint32_t t = all[k];
            all[k] = all[k - 1];
            all[k - 1] = t;
        }
    for (uint32_t r = 0; r < S; r++)
        rev[r] = all[S - 1 - r];
    int rc = seq_push(q, all, cap);
    if (rc == PARTD_OK)
        rc = seq_push(q, rev, cap);
    free(all);
    free(rev);
    return rc;
}

static int device_seqs(const partd_training_model *md, uint32_t S, uint32_t limit, seqs *q,
                       int *partial)
{
    memset(q, 0, sizeof *q);
    q->S = S;
    size_t cap = 0;
    uint32_t *cur = malloc(S * sizeof *cur);
    uint32_t *used = calloc(md->n_classes, sizeof *used);
    int rc = cur && used ? PARTD_OK : PARTD_ENOMEM;
    if (rc == PARTD_OK && !md->opt->device_order_auto) {
        for (uint32_t r = 0; r < S; r++)
            cur[r] = r;
        rc = seq_push(q, cur, &cap);
    } else if (rc == PARTD_OK) {
        int cut = 0;
        rc = class_seqs(md, q, used, cur, 0, &cap, limit, &cut);
        if (rc == PARTD_OK && cut) {
            *partial = 1;
            rc = extra_seqs(md, q, &cap);
        }
    }
    free(cur);
    free(used);
    return rc;
}

/* The fluid bound of the fastest S devices: below every left-out sequence. */
static double fastest_fluid(const partd_training_model *md, uint32_t S)
{
    uint32_t n = md->req->n_devices;
    uint32_t *dev = malloc(n * sizeof *dev);
    uint8_t *used = calloc(n, 1);
    double lb = 0;
    if (dev && used) {
        for (uint32_t k = 0; k < S; k++) {
            uint32_t best = n;
            for (uint32_t d = 0; d < n; d++)
                if (!used[d] &&
                    (best == n || md->req->devices[d].speed > md->req->devices[best].speed))
                    best = d;
            used[best] = 1;
            dev[k] = best;
        }
        lb = partd__training_fluid(md, dev, S);
    }
    free(dev);
    free(used);
    return lb;
}

static int enumerate(space *sp)
{
    const partd_training_model *md = sp->md;
    const partd_training_options *o = md->opt;
    uint32_t n_dev = md->req->n_devices, max_s = n_dev < md->n_units ? n_dev : md->n_units;
    uint32_t lo = o->stages ? o->stages : 1, hi = o->stages ? o->stages : max_s;
    sp->partial_lb = INFINITY;
    /* (ranks, schedule, v) combinations, to share CONFIG_CAP among */
    uint64_t combos = 0;
    for (uint32_t S = lo; S <= hi; S++)
        for (int s = 0; s < PARTD_TRAINING_SCHEDULE_COUNT; s++) {
            uint32_t vlo, vhi;
            if ((o->schedules >> s & 1) && v_range(md, s, S, &vlo, &vhi))
                for (uint32_t v = vlo; v <= vhi; v++)
                    combos += partd_training_schedule_allows(s, S, v, md->M);
        }
    uint64_t share = combos ? CONFIG_CAP / combos : SEQ_CAP;
    uint32_t limit = share < SEQ_MIN ? SEQ_MIN : share > SEQ_CAP ? SEQ_CAP : (uint32_t)share;
    for (uint32_t S = lo; S <= hi; S++) {
        seqs q;
        int partial = 0;
        int rc = device_seqs(md, S, limit, &q, &partial);
        if (partial) {
            sp->partial = 1;
            double f = fastest_fluid(md, S);
            sp->partial_lb = f < sp->partial_lb ? f : sp->partial_lb;
        }
        for (int s = 0; s < PARTD_TRAINING_SCHEDULE_COUNT && rc == PARTD_OK; s++) {
            uint32_t vlo, vhi;
            if (!(o->schedules >> s & 1) || !v_range(md, s, S, &vlo, &vhi))
                continue;
            for (uint32_t v = vlo; v <= vhi && rc == PARTD_OK; v++) {
                if (!partd_training_schedule_allows(s, S, v, md->M))
                    continue;
                for (uint32_t k = 0; k < q.count && rc == PARTD_OK; k++)
                    rc = add_desc(sp, s, v, S, q.dev + (size_t)k * S, sp->n_combos, k, q.count);
                sp->n_combos++;
            }
        }
        free(q.dev);
        if (rc != PARTD_OK)
            return rc;
    }
    return PARTD_OK;
}

static int build(const space *sp, uint32_t k, partd_training_cfg *c)
{
    const desc *d = &sp->d[k];
    return partd__training_cfg_build(c, sp->md, d->sched, d->S, d->v, sp->dev + d->dev_off);
}

/* C(n - 1, V - 1), saturating at limit + 1. */
static uint64_t splits(uint32_t n, uint32_t V, uint64_t limit)
{
    if (V > n)
        return 0;
    uint64_t r = 1;
    uint32_t k = V - 1 < n - V ? V - 1 : n - V;
    for (uint32_t i = 1; i <= k; i++) {
        r = r * (n - 1 - k + i) / i;
        if (r > limit)
            return limit + 1;
    }
    return r;
}

/* ---- the best plan ------------------------------------------------------------ */

typedef struct best {
    partd_training_plan p;
    int any;
} best;

static int offer(best *b, const partd_training_plan *p)
{
    if (b->any && partd__training_plan_cmp(p, &b->p) >= 0)
        return PARTD_OK;
    b->any = 1;
    return partd__training_plan_copy(&b->p, p);
}

/* ---- exhaustive ----------------------------------------------------------------- */

typedef struct exh {
    const space *sp;
    partd_training_cfg c;
    partd_training_plan p;
    best *b;
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
        if (++e->combos > EXH_COMBOS)
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
        if ((rc = offer(e->b, &e->p)) != PARTD_OK)
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
        for (uint32_t r = 0; r < c->S && product > EXH_PRODUCT && rc == PARTD_OK; r++)
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
    return offer(e->b, &e->p);
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
        if (e->plans > EXH_PLANS)
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

static int exhaustive(space *sp, best *b, partd_training_stats *st)
{
    exh e;
    memset(&e, 0, sizeof e);
    e.sp = sp;
    e.b = b;
    int rc = PARTD_OK;
    for (uint32_t k = 0; k < sp->n && rc == PARTD_OK; k++) {
        if ((rc = build(sp, k, &e.c)) != PARTD_OK)
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

/* ---- large spaces ---------------------------------------------------------------- */

/* Cuts giving every stage work in proportion to its device's speed. */
static void balanced_cuts(const partd_training_model *md, const partd_training_cfg *c, uint32_t *cut)
{
    uint32_t n = md->n_units, V = c->V;
    double total = md->pf[n] + md->pb[n], speed = 0, acc = 0;
    for (uint32_t j = 0; j < V; j++)
        speed += c->speed[j];
    cut[0] = 0;
    cut[V] = n;
    for (uint32_t j = 0; j + 1 < V; j++) {
        acc += c->speed[j];
        double target = total * acc / speed;
        uint32_t lo = cut[j] + 1, hi = n - (V - 1 - j), u = lo;
        while (u < hi && md->pf[u + 1] + md->pb[u + 1] <= target)
            u++;
        /* the nearer of u and u + 1 */
        if (u < hi && fabs(md->pf[u + 1] + md->pb[u + 1] - target) <
                          fabs(md->pf[u] + md->pb[u] - target))
            u++;
        cut[j + 1] = u;
    }
}

typedef struct large {
    space *sp;
    best *b;
    partd_training_stats *st;
    uint64_t work;
} large;

/* Moves one cut by one unit while the plan improves (first improvement,
 * cuts in order), within budget. */
static int improve(large *L, partd_training_cfg *c, partd_training_plan *p, uint64_t budget)
{
    const partd_training_model *md = L->sp->md;
    partd_training_plan q = {0};
    int rc = partd__training_plan_alloc(&q, c->S, c->V);
    uint64_t start = L->work;
    for (int better = 1; better && rc == PARTD_OK && L->work - start < budget;) {
        better = 0;
        for (uint32_t j = 1; j < c->V && rc == PARTD_OK && L->work - start < budget; j++)
            for (int dir = -1; dir <= 1; dir += 2) {
                uint32_t to = p->cut[j] + (uint32_t)dir;
                if (to <= p->cut[j - 1] || to >= p->cut[j + 1])
                    continue;
                memcpy(q.cut, p->cut, (c->V + 1) * sizeof *q.cut);
                q.cut[j] = to;
                partd__training_eval_stages(md, c, q.cut);
                uint64_t before = c->work;
                if ((rc = partd__training_eval_choose(md, c, &q)) != PARTD_OK)
                    break;
                L->work += c->work - before;
                L->st->evaluations++;
                if (partd__training_plan_cmp(&q, p) < 0) {
                    rc = partd__training_plan_copy(p, &q);
                    better = 1;
                }
            }
        if (rc == PARTD_OK)
            rc = partd_cancel_check(L->sp->cancel);
    }
    partd__training_plan_free(&q);
    return rc;
}

typedef struct scored {
    partd_training_plan p;     /* p.cut NULL: not timed (its fluid bound was past the best) */
    uint32_t k;
    double fluid;
} scored;

static int cmp_scored(const void *x, const void *y)
{
    const scored *a = x, *b = y;
    if (!a->p.cut != !b->p.cut)
        return a->p.cut ? -1 : 1;
    int c = a->p.cut ? partd__training_plan_cmp(&a->p, &b->p) : 0;
    return c ? c : (a->k < b->k ? -1 : a->k > b->k);
}

static int cmp_fluid(const void *x, const void *y)
{
    const scored *a = x, *b = y;
    if (a->fluid != b->fluid)
        return a->fluid < b->fluid ? -1 : 1;
    return a->k < b->k ? -1 : a->k > b->k;
}

static int fits(const best *b)
{
    return b->any && b->p.feasible;
}

/* Is a configuration whose fluid bound is f past the best plan? */
static int beyond(const best *b, double f)
{
    return b->any && b->p.feasible && f > b->p.step * (1 + 1e-9);
}

/* The balanced split of one configuration, timed. */
static int scan_one(large *L, scored *x)
{
    const partd_training_model *md = L->sp->md;
    partd_training_cfg c;
    int rc = partd_cancel_check(L->sp->cancel);
    if (rc != PARTD_OK || (rc = build(L->sp, x->k, &c)) != PARTD_OK)
        return rc;
    rc = partd__training_plan_alloc(&x->p, c.S, c.V);
    if (rc == PARTD_OK) {
        balanced_cuts(md, &c, x->p.cut);
        partd__training_eval_stages(md, &c, x->p.cut);
        rc = partd__training_eval_choose(md, &c, &x->p);
        L->work += c.work;
        L->st->evaluations++;
    }
    if (rc == PARTD_OK)
        rc = offer(L->b, &x->p);
    L->st->configs++;
    partd__training_cfg_free(&c);
    return rc;
}

/* sp->hot: the SCAN_COMBOS (ranks, schedule, v) whose sequences tried so
 * far gave the best plans. */
static int pick_combos(space *sp, scored *sc)
{
    uint32_t *best = malloc((sp->n_combos ? sp->n_combos : 1) * sizeof *best);
    sp->hot = calloc(sp->n_combos ? sp->n_combos : 1, 1);
    if (!best || !sp->hot) {
        free(best);
        return PARTD_ENOMEM;
    }
    for (uint32_t c = 0; c < sp->n_combos; c++)
        best[c] = UINT32_MAX;
    for (uint32_t i = 0; i < sp->n; i++) {
        uint32_t c = sp->d[sc[i].k].combo;
        if (sc[i].p.cut && (best[c] == UINT32_MAX ||
                            partd__training_plan_cmp(&sc[i].p, &sc[best[c]].p) < 0))
            best[c] = i;
    }
    for (uint32_t pick = 0; pick < SCAN_COMBOS; pick++) {
        uint32_t top = UINT32_MAX;
        for (uint32_t c = 0; c < sp->n_combos; c++)
            if (!sp->hot[c] && best[c] != UINT32_MAX &&
                (top == UINT32_MAX || partd__training_plan_cmp(&sc[best[c]].p, &sc[best[top]].p) < 0))
                top = c;
        if (top == UINT32_MAX)
            break;
        sp->hot[top] = 1;
    }
    free(best);
    return PARTD_OK;
}

/* The least bound, into *lb, of the configurations whose fluid bound is
 * at most stop (the others' is past it): those of each (ranks, schedule,
 * v) bounded together by the relaxation over their device orders
 * (training_bound.c), from the plan of theirs ranked first in sc (sorted
 * by cmp_scored), while at most BOUND_COMBOS have any and within budget;
 * otherwise by their fluid bounds. */
static int bound_classes(large *L, const scored *sc, double stop, double *lb)
{
    space *sp = L->sp;
    const partd_training_model *md = sp->md;
    uint32_t nc = sp->n_combos ? sp->n_combos : 1;
    uint32_t *count = calloc(nc + 1, sizeof *count), *at = malloc(sp->n * sizeof *at + 1);
    double *fluid = malloc(nc * sizeof *fluid);
    int rc = count && at && fluid ? PARTD_OK : PARTD_ENOMEM;
    uint32_t below = 0;
    for (uint32_t c = 0; rc == PARTD_OK && c < nc; c++)
        fluid[c] = INFINITY;
    for (uint32_t i = 0; rc == PARTD_OK && i < sp->n; i++)
        if (sc[i].fluid <= stop) {
            uint32_t c = sp->d[sc[i].k].combo;
            below += fluid[c] == INFINITY;
            fluid[c] = sc[i].fluid < fluid[c] ? sc[i].fluid : fluid[c];
            count[c + 1]++;
        }
    /* each combo's configurations in the order of sc */
    for (uint32_t c = 0; rc == PARTD_OK && c < nc; c++)
        count[c + 1] += count[c];
    for (uint32_t i = 0; rc == PARTD_OK && i < sp->n; i++)
        if (sc[i].fluid <= stop)
            at[count[sp->d[sc[i].k].combo]++] = i;
    for (uint32_t c = nc; rc == PARTD_OK && c > 0; c--)
        count[c] = count[c - 1];
    if (rc == PARTD_OK)
        count[0] = 0;
    /* the combos in the order of their best plans (the best plan's first):
     * the least bound is likely the first's, past which the others stop */
    uint32_t *by = malloc(nc * sizeof *by), nb = 0;
    if (!by)
        rc = PARTD_ENOMEM;
    for (uint32_t i = 0; rc == PARTD_OK && i < sp->n; i++) {
        uint32_t c = sp->d[sc[i].k].combo;
        if (sc[i].fluid <= stop && count[c] != count[c + 1] && at[count[c]] == i)
            by[nb++] = c;
    }
    /* those the relaxation leaves out first: the others stop past them */
    uint32_t keep = 0;
    for (uint32_t ib = 0; rc == PARTD_OK && ib < nb; ib++) {
        uint32_t cb = by[ib];
        const scored *first = &sc[at[count[cb]]];
        if (below <= BOUND_COMBOS && first->p.cut &&
            sp->d[first->k].S <= PARTD_TRAINING_BOUND_RANKS)
            by[keep++] = cb;
        else
            *lb = fluid[cb] < *lb ? fluid[cb] : *lb;
    }
    nb = keep;
    uint64_t start = L->work;
    for (uint32_t ib = 0; rc == PARTD_OK && ib < nb; ib++) {
        uint32_t cb = by[ib], lo = count[cb], hi = count[cb + 1];
        double v = fluid[cb];
        const scored *first = &sc[at[lo]];
        if (v <= *lb * (1 + 1e-9) && L->work - start < WORK_BOUND) {
            partd_training_cfg c;
            if ((rc = build(sp, first->k, &c)) != PARTD_OK)
                break;
            uint32_t *devs = malloc((size_t)(hi - lo) * c.S * sizeof *devs);
            if (!devs) {
                partd__training_cfg_free(&c);
                rc = PARTD_ENOMEM;
                break;
            }
            for (uint32_t q = lo; q < hi; q++)
                memcpy(devs + (size_t)(q - lo) * c.S, sp->dev + sp->d[sc[at[q]].k].dev_off,
                       c.S * sizeof *devs);
            /* the budget left, shared by the combos left */
            uint64_t left = WORK_BOUND - (L->work - start);
            v = partd__training_bound_orders(md, &c, first->p.cut, devs, hi - lo, v,
                                             left / (nb - ib), *lb * (1 + 1e-9), &L->work);
            free(devs);
            partd__training_cfg_free(&c);
            rc = partd_cancel_check(sp->cancel);
        }
        *lb = v < *lb ? v : *lb;
    }
    free(by);
    free(count);
    free(at);
    free(fluid);
    return rc;
}

static int heuristic(space *sp, best *b, partd_training_stats *st, double *lower)
{
    const partd_training_model *md = sp->md;
    large L = {sp, b, st, 0};
    scored *sc = calloc(sp->n ? sp->n : 1, sizeof *sc);
    if (!sc)
        return PARTD_ENOMEM;
    int rc = PARTD_OK;
    partd_training_cfg c;
    /* every configuration's balanced split, the fastest devices first, while
     * its fluid bound is below the best step found */
    for (uint32_t k = 0; k < sp->n; k++) {
        sc[k].k = k;
        sc[k].fluid = partd__training_fluid(md, sp->dev + sp->d[k].dev_off, sp->d[k].S);
    }
    qsort(sc, sp->n, sizeof *sc, cmp_fluid);
    /* first the first, middle and last device sequence of every (ranks,
     * schedule, v) (every sequence in a small space), then every sequence
     * of the SCAN_COMBOS best of those */
    for (int round = 0; round < 2 && rc == PARTD_OK; round++) {
        if (round == 1 && (rc = pick_combos(sp, sc)) != PARTD_OK)
            break;
        for (uint32_t i = 0; i < sp->n && rc == PARTD_OK && (L.work < WORK_SCAN || !fits(b)); i++) {
            const desc *d = &sp->d[sc[i].k];
            int wanted = round == 0 ? sp->n <= SCAN_ALL || d->seq == 0 ||
                                          d->seq == d->nseq / 2 || d->seq + 1 == d->nseq
                                    : sp->hot[d->combo];
            if (sc[i].p.cut || !wanted || beyond(b, sc[i].fluid))
                continue;
            rc = scan_one(&L, &sc[i]);
        }
    }
    if (rc == PARTD_OK)
        qsort(sc, sp->n, sizeof *sc, cmp_scored);
    /* the best configurations improved */
    uint64_t improve_start = L.work;
    for (uint32_t i = 0; i < sp->n && i < IMPROVE_CONFIGS && rc == PARTD_OK &&
                         L.work - improve_start < WORK_IMPROVE;
         i++) {
        if (!sc[i].p.cut)
            break;
        if ((rc = build(sp, sc[i].k, &c)) != PARTD_OK)
            break;
        rc = improve(&L, &c, &sc[i].p, (WORK_IMPROVE - (L.work - improve_start)) / 2 + 1);
        if (rc == PARTD_OK)
            rc = offer(b, &sc[i].p);
        partd__training_cfg_free(&c);
    }
    /* bounds: every configuration whose fluid bound is below the best step,
     * a (ranks, schedule, v) at a time, over all its device orders at once */
    double lb = b->any && b->p.feasible ? b->p.step : INFINITY;
    /* the device sequences left out: no bound past the least of theirs */
    if (sp->partial && sp->partial_lb < lb)
        lb = sp->partial_lb;
    double stop = lb * (1 + 1e-9);
    if (rc == PARTD_OK)
        rc = bound_classes(&L, sc, stop, &lb);
    *lower = lb;
    st->work += L.work;
    for (uint32_t k = 0; k < sp->n; k++)
        partd__training_plan_free(&sc[k].p);
    free(sc);
    return rc;
}

/* ---- entry ------------------------------------------------------------------------ */

int partd__training_search(const partd_training_model *md, const partd_cancel *cancel,
                           partd_training_found *out)
{
    memset(out, 0, sizeof *out);
    space sp;
    memset(&sp, 0, sizeof sp);
    sp.md = md;
    sp.cancel = cancel;
    sp.partial_lb = INFINITY;
    best b = {{0}, 0};
    int rc = enumerate(&sp);
    uint64_t total = 0;
    for (uint32_t k = 0; k < sp.n && rc == PARTD_OK; k++)
        total += splits(md->n_units, sp.d[k].S * sp.d[k].v, EXH_SPLITS);
    double lower = 0;
    int exhaustive_done = 0;
    if (rc == PARTD_OK && sp.n && !sp.partial && total <= EXH_SPLITS) {
        rc = exhaustive(&sp, &b, md->stats);
        if (rc == PARTD_ETOOBIG) { /* too many checkpoint sets: the large search */
            rc = PARTD_OK;
            partd__training_plan_free(&b.p);
            b.any = 0;
        } else {
            exhaustive_done = rc == PARTD_OK;
        }
    }
    if (rc == PARTD_OK && sp.n && !exhaustive_done)
        rc = heuristic(&sp, &b, md->stats, &lower);
    if (rc == PARTD_OK && b.any) {
        out->best = b.p;
        b.any = 0;
        out->found = out->best.feasible;
        out->optimal = exhaustive_done || (out->found && lower >= out->best.step);
        out->lower_bound = out->optimal ? out->best.step : (lower < out->best.step ? lower : out->best.step);
        md->stats->exhaustive = exhaustive_done;
    }
    if (b.any)
        partd__training_plan_free(&b.p);
    free(sp.d);
    free(sp.dev);
    free(sp.hot);
    return rc;
}

void partd__training_found_free(partd_training_found *f)
{
    partd__training_plan_free(&f->best);
    memset(f, 0, sizeof *f);
}
