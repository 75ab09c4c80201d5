/*
 * training_heuristic.c - the search of a large space; see
 * training_heuristic.h.
 */
#include "training_heuristic.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "partd/partd.h"

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
    const partd_training_space *sp;
    partd_training_best *b;
    partd_training_stats *st;
    uint64_t work;
    uint8_t *hot;              /* per combo: every sequence is tried */
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

static int fits(const partd_training_best *b)
{
    return b->any && b->p.feasible;
}

/* Is a configuration whose fluid bound is f past the best plan? */
static int beyond(const partd_training_best *b, double f)
{
    return b->any && b->p.feasible && f > b->p.step * (1 + 1e-9);
}

/* The balanced split of one configuration, timed. */
static int scan_one(large *L, scored *x)
{
    const partd_training_model *md = L->sp->md;
    partd_training_cfg c;
    int rc = partd_cancel_check(L->sp->cancel);
    if (rc != PARTD_OK || (rc = partd__training_space_build(L->sp, x->k, &c)) != PARTD_OK)
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
        rc = partd__training_plan_offer(L->b, &x->p);
    L->st->configs++;
    partd__training_cfg_free(&c);
    return rc;
}

/* L->hot: the SCAN_COMBOS (ranks, schedule, v) whose sequences tried so
 * far gave the best plans. */
static int pick_combos(large *L, scored *sc)
{
    const partd_training_space *sp = L->sp;
    uint32_t *best = malloc((sp->n_combos ? sp->n_combos : 1) * sizeof *best);
    L->hot = calloc(sp->n_combos ? sp->n_combos : 1, 1);
    if (!best || !L->hot) {
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
            if (!L->hot[c] && best[c] != UINT32_MAX &&
                (top == UINT32_MAX || partd__training_plan_cmp(&sc[best[c]].p, &sc[best[top]].p) < 0))
                top = c;
        if (top == UINT32_MAX)
            break;
        L->hot[top] = 1;
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
    const partd_training_space *sp = L->sp;
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
            if ((rc = partd__training_space_build(sp, first->k, &c)) != PARTD_OK)
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

int partd__training_heuristic(const partd_training_space *sp, partd_training_best *b,
                              partd_training_stats *st, double *lower)
{
    const partd_training_model *md = sp->md;
    large L = {sp, b, st, 0, NULL};
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
        if (round == 1 && (rc = pick_combos(&L, sc)) != PARTD_OK)
            break;
        for (uint32_t i = 0; i < sp->n && rc == PARTD_OK && (L.work < WORK_SCAN || !fits(b)); i++) {
            const partd_training_desc *d = &sp->d[sc[i].k];
            int wanted = round == 0 ? sp->n <= SCAN_ALL || d->seq == 0 ||
                                          d->seq == d->nseq / 2 || d->seq + 1 == d->nseq
                                    : L.hot[d->combo];
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
        if ((rc = partd__training_space_build(sp, sc[i].k, &c)) != PARTD_OK)
            break;
        rc = improve(&L, &c, &sc[i].p, (WORK_IMPROVE - (L.work - improve_start)) / 2 + 1);
        if (rc == PARTD_OK)
            rc = partd__training_plan_offer(b, &sc[i].p);
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
    free(L.hot);
    return rc;
}
