/*
 * pipeline_search.c - exact bottleneck search and tie-breaking DP; see
 * pipeline_search.h.
 *
 * Method.
 *  1. Decision probe for a bound B (forward): F[s] is the set of positions a
 *     stage s can start at after s stages of cost <= B that fit their
 *     devices. For a fixed start a, the allowed ends form an interval
 *     [partd_pipeline_min_end, last end whose cost and memory still pass]: cost and
 *     memory only grow with e. So F[s+1] is a union of such intervals, found
 *     in one sweep with the start increasing and the end never moving back
 *     (only ends beyond the largest end reached so far are worth testing).
 *     Each stage is a partd_pipeline_window sliding forward: O(m + readers) at worst.
 *  2. Capacity bounds (below) give every cut a smallest position under B
 *     from prefix sums alone; the probe never looks before it. Near the
 *     optimum this leaves windows of a few positions per cut.
 *  3. The probe's outcome depends only on the outcomes of the comparisons
 *     with B it made (stage tests and capacity bounds). After an infeasible
 *     probe nothing changes until B reaches the smallest value that failed,
 *     so the lower end jumps there; after a feasible one the upper end drops
 *     to the largest value that passed. The search starts at the capacity
 *     lower bound, grows the bound until a probe is feasible, then bisects
 *     until the ends meet: the optimum is the exact cost of a stage, proven
 *     infeasible just below. The uniform objective, whose smallest stage
 *     size depends on B, steps through the integers instead.
 *  4. After each feasible probe a backward pass keeps only positions from
 *     which the end is still reachable (W[s] = F[s] and able to finish);
 *     every split of cost <= B has its cuts there, so later probes only sweep
 *     these windows, with cached windows (partd_pipeline_window) at their left ends.
 *  5. Ties among the optimal splits: pipeline_ties.c, over the final W.
 */
#include "pipeline_search.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "partd/partd.h"
#include "pipeline_set.h"
#include "pipeline_ties.h"

#define CHECK_EVERY 4096

/* ---- search state -------------------------------------------------------- */

typedef struct search {
    const partd_pipeline_model *md;
    const partd_cancel *cancel;
    uint32_t S;
    uint64_t steps;
    partd_pipeline_set *F;     /* S + 1 sets: reachable starts of the current probe */
    partd_pipeline_set *W;     /* S + 1 sets: windows of the best feasible bound so far */
    partd_pipeline_set *cand;  /* S + 1 sets: what the next probe may use */
    int32_t *pmin; /* S + 1: smallest start of each stage (capacity bounds) */
    const struct capacity *cap;
    partd_pipeline_window *base; /* S: a window at (min cand[s], min cand[s+1]) */
} search;

/* A window to start stage s's sweep at (a, e): the cached one when it is not
 * past that point (it only ever moves forward), else an empty one. */
static partd_pipeline_window start_window(const search *st, uint32_t s, int32_t a, int32_t e)
{
    partd_pipeline_window w = st->base[s];
    if (w.a > a || w.e > e)
        w = (partd_pipeline_window){a, a, 0, 0};
    return w;
}

static int tick(search *st)
{
    if (++st->steps % CHECK_EVERY == 0)
        return partd_cancel_check(st->cancel);
    return PARTD_OK;
}

/* Outcome of one stage test. */
enum { TEST_MEMORY = 0, TEST_COST, TEST_PASS };

static int stage_test(const partd_pipeline_model *md, uint32_t s, const partd_pipeline_window *w, double bound,
                      double *cost)
{
    partd_pipeline_stage ev;
    partd_pipeline_stage_eval(md, s, w, &ev);
    *cost = ev.cost;
    if (!ev.mem_ok && md->objective != PL_OBJ_SHORTFALL)
        return TEST_MEMORY;
    return ev.cost <= bound ? TEST_PASS : TEST_COST;
}

/* ---- capacity bounds ----------------------------------------------------- */

/* Every stage u of a split whose stage costs are <= B holds at most
 * B * alpha_u + beta_u of an additive amount L (compute time at speed 1 for
 * `time`; for `memory` and the shortfall, param_factor * own parameter bytes
 * + k_min * activation bytes, a lower bound of the stages' memory; own
 * parameter bytes for `params`; operations for `uniform`), and at most
 * M_u / k_u activation bytes and M_u of that memory to fit its device.
 * Stages t..S-1 together therefore hold L(a, m) <= B * sum(alpha) +
 * sum(beta) when cut t is at a: pmin[t], the smallest such a, is a lower
 * bound of cut t in every split of cost <= B. The margins
 * cover rounding, so the bound never excludes a feasible split. Near the
 * optimum the suffix capacities are nearly used up and the windows
 * [pmin[t], reach] are narrow, which keeps the probes cheap. */

/* Suffix sums over stages (S + 1 entries each, index S is 0). */
typedef struct capacity {
    uint32_t stages;
    double speed_sum;  /* of all stages */
    double *alpha, *beta, *act_cap;
    double *mem_cap;   /* sum of M_u */
    double *k_min;     /* min of k_u over u >= t (index S: unused) */
} capacity;

static int capacity_init(const partd_pipeline_model *md, capacity *c)
{
    uint32_t S = md->stages;
    c->alpha = calloc(S + 1, sizeof *c->alpha);
    c->beta = calloc(S + 1, sizeof *c->beta);
    c->act_cap = calloc(S + 1, sizeof *c->act_cap);
    c->mem_cap = calloc(S + 1, sizeof *c->mem_cap);
    c->k_min = calloc(S + 1, sizeof *c->k_min);
    if (!c->alpha || !c->beta || !c->act_cap || !c->mem_cap || !c->k_min)
        return -1;
    c->k_min[S] = INFINITY;
    c->stages = S;
    c->speed_sum = 0;
    for (uint32_t u = 0; u < S; u++)
        c->speed_sum += md->speed[md->stage_speed[u]];
    const double up = 1 + 0x1p-40;
    for (uint32_t u = S; u-- > 0;) {
        double k = (double)md->k_act[u], M = (double)md->mem_limit[u], al = 1, be = 0;
        switch (md->objective) {
        case PARTD_PIPELINE_OBJ_TIME:
            al = md->speed[md->stage_speed[u]] * up;
            break;
        case PARTD_PIPELINE_OBJ_MEMORY:
            al = M * up;
            be = 2;
            break;
        case PARTD_PIPELINE_OBJ_PARAMS:
            break;
        case PARTD_PIPELINE_OBJ_UNIFORM:
            be = md->target[u];
            break;
        case PL_OBJ_SHORTFALL:
            al = up;
            be = M * up + 1024;
            break;
        }
        c->alpha[u] = c->alpha[u + 1] + al;
        c->beta[u] = c->beta[u + 1] + be;
        c->act_cap[u] = c->act_cap[u + 1] + M / k * up + 1;
        c->mem_cap[u] = c->mem_cap[u + 1] + M * up + 2;
        c->k_min[u] = k < c->k_min[u + 1] ? k : c->k_min[u + 1];
    }
    return 0;
}

static void capacity_free(capacity *c)
{
    free(c->alpha);
    free(c->beta);
    free(c->act_cap);
    free(c->mem_cap);
    free(c->k_min);
}

/* The least memory stages holding [a, m) can use from stage t on:
 * param_factor * own params + k_min * activations, each stage's memory being
 * at least its share of that. */
static double suffix_memory(const partd_pipeline_model *md, const capacity *c, uint32_t t, int32_t a)
{
    int32_t m = (int32_t)md->m;
    return md->param_factor * (double)(md->own_param[m] - md->own_param[a]) +
           c->k_min[t] * (double)(md->act[m] - md->act[a]);
}

/* L(a, m), rounded down by more than any rounding in the stage costs. */
static double suffix_amount(const partd_pipeline_model *md, const capacity *c, uint32_t t, int32_t a)
{
    int32_t m = (int32_t)md->m;
    switch (md->objective) {
    case PARTD_PIPELINE_OBJ_TIME: {
        /* A stage's ticks at speed v are at least (its X difference) / v less
         * a tick and a relative 2^-51, and X is at least the node times in
         * ticks less half a tick per node; the double prefix sums err by at
         * most m ulps of the total. Subtract more than all of that. */
        double total = md->time_prefix[m];
        return (total - md->time_prefix[a]) - total * (double)(m + c->stages) * 0x1p-49 -
               ((double)m + c->speed_sum + (double)c->stages) * 2 * md->tick_ms;
    }
    case PARTD_PIPELINE_OBJ_MEMORY:
    case PL_OBJ_SHORTFALL:
        return suffix_memory(md, c, t, a) * (1 - 0x1p-40);
    case PARTD_PIPELINE_OBJ_PARAMS:
        return (double)(md->own_param[m] - md->own_param[a]);
    case PARTD_PIPELINE_OBJ_UNIFORM:
        break;
    }
    return (double)(m - a);
}

/* The smallest bound under which cut t may sit at a (non-increasing in a),
 * and whether the activations from a on fit the remaining devices at all. */
static double need_at(const partd_pipeline_model *md, const capacity *c, uint32_t t, int32_t a, int *fits)
{
    *fits = md->objective == PL_OBJ_SHORTFALL ||
            ((double)(md->act[md->m] - md->act[a]) <= c->act_cap[t] &&
             suffix_memory(md, c, t, a) * (1 - 0x1p-40) <= c->mem_cap[t]);
    return (suffix_amount(md, c, t, a) - c->beta[t]) / c->alpha[t];
}

/* Fills st->pmin for bound B. Like a probe, it records the smallest need
 * that failed on the bound alone and the largest that passed, so that the
 * probe runs the same for any bound between them. Returns 0 when cut 0
 * cannot be at 0, i.e. nothing fits under B. */
static int capacity_starts(search *st, double bound, double *min_fail, double *max_pass)
{
    const partd_pipeline_model *md = st->md;
    uint32_t S = st->S;
    st->pmin[S] = (int32_t)md->m;
    int fits;
    for (uint32_t t = 0; t < S; t++) {
        int32_t lo = (int32_t)t, hi = (int32_t)md->m - (int32_t)(S - t);
        if (t == 0)
            hi = 0;
        double need = need_at(md, st->cap, t, hi, &fits);
        if (!fits || need > bound) {
            if (fits && need < *min_fail)
                *min_fail = need;
            return 0;
        }
        while (lo < hi) {
            int32_t mid = lo + (hi - lo) / 2;
            need = need_at(md, st->cap, t, mid, &fits);
            if (fits && need <= bound)
                hi = mid;
            else
                lo = mid + 1;
        }
        st->pmin[t] = lo;
        need = need_at(md, st->cap, t, lo, &fits);
        if (need > *max_pass)
            *max_pass = need;
        if (lo > (int32_t)t) {
            need = need_at(md, st->cap, t, lo - 1, &fits);
            if (fits && need < *min_fail)
                *min_fail = need;
        }
    }
    return 1;
}

/* ---- decision probe ------------------------------------------------------ */

typedef struct probe_out {
    int feasible;
    double min_fail; /* smallest cost that failed only on the bound */
    double max_pass; /* largest cost that passed */
} probe_out;

/* One stage of the forward sweep: F[s] -> F[s+1] within cand[s+1]. */
static int forward_stage(search *st, uint32_t s, double bound, probe_out *po)
{
    const partd_pipeline_model *md = st->md;
    partd_pipeline_set *next = &st->F[s + 1];
    const partd_pipeline_set *from = &st->F[s];
    partd_pipeline_cursor c;
    cursor_init(&c, &st->cand[s + 1]);
    set_clear(next);
    int32_t reached = st->pmin[s + 1] - 1;
    partd_pipeline_window w = start_window(st, s, from->run[0].lo, cursor_next(&c, reached + 1));
    for (uint32_t i = 0; i < from->n; i++) {
        for (int32_t a = from->run[i].lo; a <= from->run[i].hi; a++) {
            int32_t lim = partd_pipeline_max_end(md, s, a);
            int32_t lo = partd_pipeline_min_end(md, s, a, bound);
            int32_t e = cursor_next(&c, lo > reached + 1 ? lo : reached + 1);
            while (e <= lim) {
                int rc = tick(st);
                if (rc)
                    return rc;
                partd_pipeline_window_move(md, &w, a, e);
                double cost;
                int t = stage_test(md, s, &w, bound, &cost);
                if (t == TEST_COST && cost < po->min_fail)
                    po->min_fail = cost;
                if (t != TEST_PASS)
                    break;
                if (cost > po->max_pass)
                    po->max_pass = cost;
                if (set_add(next, e))
                    return PARTD_ENOMEM;
                reached = e;
                e = cursor_next(&c, e + 1);
            }
        }
    }
    return PARTD_OK;
}

static int probe(search *st, double bound, probe_out *po)
{
    po->feasible = 0;
    po->min_fail = INFINITY;
    po->max_pass = -INFINITY;
    int rc = partd_cancel_check(st->cancel);
    if (rc)
        return rc;
    if (!capacity_starts(st, bound, &po->min_fail, &po->max_pass))
        return PARTD_OK;
    set_clear(&st->F[0]);
    if (set_add(&st->F[0], 0))
        return PARTD_ENOMEM;
    for (uint32_t s = 0; s < st->S; s++) {
        rc = forward_stage(st, s, bound, po);
        if (rc)
            return rc;
        if (st->F[s + 1].n == 0)
            return PARTD_OK;
    }
    po->feasible = 1;
    return PARTD_OK;
}

/* W[s] = starts in F[s] from which the end is reachable under bound: the
 * smallest allowed end in W[s+1] passes iff any does (costs grow with e). */
static int backward(search *st, double bound)
{
    const partd_pipeline_model *md = st->md;
    uint32_t S = st->S;
    set_clear(&st->W[S]);
    if (set_add(&st->W[S], (int32_t)md->m))
        return PARTD_ENOMEM;
    for (uint32_t s = S; s-- > 0;) {
        partd_pipeline_set *out = &st->W[s];
        const partd_pipeline_set *from = &st->F[s];
        partd_pipeline_cursor c;
        cursor_init(&c, &st->W[s + 1]);
        set_clear(out);
        if (from->n == 0)
            continue;
        partd_pipeline_window w = start_window(st, s, from->run[0].lo,
                                   cursor_next(&c, partd_pipeline_min_end(md, s, from->run[0].lo, bound)));
        for (uint32_t i = 0; i < from->n; i++) {
            for (int32_t a = from->run[i].lo; a <= from->run[i].hi; a++) {
                int32_t e = cursor_next(&c, partd_pipeline_min_end(md, s, a, bound));
                if (e > partd_pipeline_max_end(md, s, a))
                    continue;
                int rc = tick(st);
                if (rc)
                    return rc;
                partd_pipeline_window_move(md, &w, a, e);
                double cost;
                if (stage_test(md, s, &w, bound, &cost) == TEST_PASS && set_add(out, a))
                    return PARTD_ENOMEM;
            }
        }
    }
    return PARTD_OK;
}

/* Makes the windows of the last feasible probe the candidates of the next. */
static int adopt_windows(search *st)
{
    for (uint32_t s = 0; s <= st->S; s++) {
        partd_pipeline_set *c = &st->cand[s];
        set_clear(c);
        for (uint32_t i = 0; i < st->W[s].n; i++)
            if (set_add_range(c, st->W[s].run[i].lo, st->W[s].run[i].hi))
                return PARTD_ENOMEM;
    }
    for (uint32_t s = 0; s < st->S; s++) {
        if (st->cand[s].n == 0 || st->cand[s + 1].n == 0)
            continue;
        int32_t a = st->cand[s].run[0].lo, e = st->cand[s + 1].run[0].lo;
        partd_pipeline_window_move(st->md, &st->base[s], a, e > a ? e : a);
    }
    return PARTD_OK;
}

static double midpoint(double lo, double hi)
{
    double mid = lo > 0 && hi > 4 * lo ? sqrt(lo) * sqrt(hi) : lo + (hi - lo) / 2;
    return mid > lo && mid < hi ? mid : lo;
}

/* Finds the optimal bound; on return W holds its windows. First from the
 * capacity lower bound upwards in growing steps until a probe is feasible
 * (the windows stay narrow when the start is close), then bisection. */
static int find_bound(search *st, double *best, int *found, uint32_t *probes)
{
    const partd_pipeline_model *md = st->md;
    int uniform = md->objective == PARTD_PIPELINE_OBJ_UNIFORM;
    int fits;
    double start = need_at(md, st->cap, 0, 0, &fits);
    *found = 0;
    if (!fits)
        return PARTD_OK; /* the activations alone do not fit */
    if (uniform)
        start = floor(start);
    double lo = md->objective == PL_OBJ_SHORTFALL ? 1 : 0, hi;
    if (start < lo)
        start = lo;
    double bound = start, grow = uniform ? 1 : start * 0x1p-12;
    probe_out po;
    int rc;
    for (;;) {
        if ((rc = probe(st, bound, &po)))
            return rc;
        ++*probes;
        if (po.feasible)
            break;
        /* Uniform: a larger bound also allows smaller stages, which no
         * failing test shows; only a bound of m leaves nothing out. */
        if (uniform ? bound >= (double)md->m : po.min_fail == INFINITY)
            return PARTD_OK;
        lo = uniform ? bound + 1 : po.min_fail;
        if (grow <= 0)
            grow = lo > 0 ? lo : 1;
        bound = bound + grow > lo ? bound + grow : lo;
        grow *= 2;
    }
    *found = 1;
    hi = uniform ? bound : po.max_pass;
    /* The probe would have run the same at hi, so F is F(hi). */
    if ((rc = backward(st, hi)) || (rc = adopt_windows(st)))
        return rc;
    while (lo < hi) {
        bound = uniform ? floor((lo + hi) / 2) : midpoint(lo, hi);
        if ((rc = probe(st, bound, &po)))
            return rc;
        ++*probes;
        if (po.feasible) {
            hi = uniform ? bound : po.max_pass;
            if ((rc = backward(st, hi)) || (rc = adopt_windows(st)))
                return rc;
        } else {
            lo = uniform ? bound + 1 : po.min_fail;
        }
    }
    *best = hi;
    return PARTD_OK;
}

/* ---- entry --------------------------------------------------------------- */

int partd__pipeline_search(const partd_pipeline_model *md, const partd_cancel *cancel, partd_pipeline_result *res)
{
    uint32_t S = md->stages;
    search st = {.md = md, .cancel = cancel, .S = S};
    st.F = calloc(S + 1, sizeof *st.F);
    st.W = calloc(S + 1, sizeof *st.W);
    st.cand = calloc(S + 1, sizeof *st.cand);
    st.pmin = calloc(S + 1, sizeof *st.pmin);
    st.base = calloc(S, sizeof *st.base);
    int rc = PARTD_ENOMEM;
    res->found = 0;
    res->probes = 0;
    capacity cap = {0};
    st.cap = &cap;
    if (st.F && st.W && st.cand && st.pmin && st.base && capacity_init(md, &cap) == 0) {
        rc = PARTD_OK;
        /* Candidates before any probe: every position that leaves one
         * operation to each stage. */
        for (uint32_t s = 0; s <= S && rc == PARTD_OK; s++) {
            int32_t lo = (int32_t)s, hi = (int32_t)(md->m - (S - s));
            if (s == 0)
                hi = 0;
            if (s == S)
                lo = hi = (int32_t)md->m;
            if (set_add_range(&st.cand[s], lo, hi))
                rc = PARTD_ENOMEM;
        }
        if (rc == PARTD_OK)
            rc = find_bound(&st, &res->bottleneck, &res->found, &res->probes);
        if (rc == PARTD_OK && res->found)
            rc = partd__pipeline_ties_break(md, cancel, st.W, res->bottleneck, res->cuts);
    }
    for (uint32_t s = 0; s <= S; s++) {
        if (st.F)
            free(st.F[s].run);
        if (st.W)
            free(st.W[s].run);
        if (st.cand)
            free(st.cand[s].run);
    }
    free(st.F);
    free(st.W);
    free(st.cand);
    free(st.pmin);
    free(st.base);
    capacity_free(&cap);
    return rc;
}
