/*
 * training_eval.c - configurations and plans: building a configuration,
 * timing and sizing a plan, choosing its checkpoint sets, ordering plans;
 * see training_search.h.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "partd/partd.h"
#include "training_search.h"

void partd__training_cfg_free(partd_training_cfg *c)
{
    if (c->md)
        partd_training_mem(c->md, -c->counted);
    partd__training_sim_free(&c->sim);
    partd_training_lists_free(&c->lists);
    partd__training_ckpts_free(&c->cs);
    void *arrays[] = {c->dev,  c->rank,   c->speed,  c->fig,    c->F,      c->B,
                      c->I,    c->R,      c->W,      c->delta,  c->busy,   c->held_c,
                      c->held_u, c->trans, c->peak,  c->mark,   c->ra,     c->rb,
                      c->cand, c->cand_off, c->rmem, c->rs, c->rn, c->seen_a,
                      c->seen_b, c->seen_x, c->seen_mem, c->seen_ok};
    for (size_t k = 0; k < sizeof arrays / sizeof *arrays; k++)
        free(arrays[k]);
    memset(c, 0, sizeof *c);
}

int partd__training_cfg_build(partd_training_cfg *c, const partd_training_model *md,
                              partd_training_schedule sched, uint32_t S, uint32_t v,
                              const uint32_t *dev)
{
    memset(c, 0, sizeof *c);
    c->sched = sched;
    c->S = S;
    c->v = partd_training_schedule_v(sched, v);
    c->V = S * c->v;
    int rc = partd_training_schedule_build(sched, S, c->v, md->M, &c->lists);
    if (rc == PARTD_OK)
        rc = partd__training_sim_build(&c->lists, &c->sim);
    if (rc == PARTD_OK)
        rc = partd__training_ckpts_init(&c->cs, md);
    if (rc != PARTD_OK) {
        partd__training_cfg_free(c);
        return rc;
    }
    size_t V = c->V;
    c->dev = malloc(S * sizeof *c->dev);
    c->rank = malloc(V * sizeof *c->rank);
    c->speed = malloc(V * sizeof *c->speed);
    c->fig = malloc(V * sizeof *c->fig);
    double **d[] = {&c->F, &c->B, &c->I, &c->R, &c->W, &c->delta};
    int ok = c->dev && c->rank && c->speed && c->fig;
    for (size_t k = 0; k < sizeof d / sizeof *d; k++)
        ok &= (*d[k] = calloc(V, sizeof **d[k])) != NULL;
    c->busy = calloc(S, sizeof *c->busy);
    c->rmem = calloc(S, sizeof *c->rmem);
    c->rs = calloc(V, sizeof *c->rs);
    c->rn = calloc(S, sizeof *c->rn);
    c->seen_a = calloc(V, sizeof *c->seen_a);
    c->seen_b = calloc(V, sizeof *c->seen_b);
    c->seen_x = calloc(V, sizeof *c->seen_x);
    c->seen_mem = calloc(S, sizeof *c->seen_mem);
    c->seen_ok = calloc(S, 1);
    c->held_c = calloc(V, sizeof *c->held_c);
    c->held_u = calloc(V, sizeof *c->held_u);
    c->trans = calloc(V, sizeof *c->trans);
    c->peak = calloc(V, sizeof *c->peak);
    c->mark = calloc(md->n_res ? md->n_res : 1, sizeof *c->mark);
    c->ra = malloc(V * sizeof *c->ra);
    c->rb = malloc(V * sizeof *c->rb);
    c->cand_off = calloc(V + 1, sizeof *c->cand_off);
    ok &= c->rs && c->rn && c->seen_a && c->seen_b && c->seen_x && c->seen_mem && c->seen_ok;
    ok &= c->busy && c->rmem && c->held_c && c->held_u && c->trans && c->peak && c->mark && c->ra &&
          c->rb && c->cand_off;
    if (!ok) {
        partd__training_cfg_free(c);
        return PARTD_ENOMEM;
    }
    memcpy(c->dev, dev, S * sizeof *dev);
    /* what the search holds for it: the lists, the simulator, the scratch */
    size_t n = c->lists.n;
    c->md = md;
    c->counted = (int64_t)(n * (sizeof(partd_training_action) + 5 * sizeof(uint32_t) + 3 +
                                sizeof(double)) +
                           V * (sizeof(partd_training_fig) + 7 * sizeof(double) +
                                5 * sizeof(int64_t) + 3 * sizeof(uint32_t)) +
                           (md->n_res ? md->n_res : 1) * sizeof(uint32_t) +
                           (size_t)md->n_units * 2 * sizeof(int64_t));
    partd_training_mem(md, c->counted);
    for (uint32_t j = 0; j < c->V; j++) {
        uint32_t r = c->rank[j] = partd_training_schedule_rank(sched, S, j);
        c->speed[j] = md->req->devices[c->dev[r]].speed;
        c->rs[r * c->v + c->rn[r]++] = j;
    }
    return PARTD_OK;
}

/* ---- plans ------------------------------------------------------------------- */

int partd__training_plan_alloc(partd_training_plan *p, uint32_t S, uint32_t V)
{
    memset(p, 0, sizeof *p);
    p->S = S;
    p->V = V;
    p->dev = calloc(S, sizeof *p->dev);
    p->cut = calloc(V + 1, sizeof *p->cut);
    p->x = calloc(V, sizeof *p->x);
    if (p->dev && p->cut && p->x)
        return PARTD_OK;
    partd__training_plan_free(p);
    return PARTD_ENOMEM;
}

void partd__training_plan_free(partd_training_plan *p)
{
    free(p->dev);
    free(p->cut);
    free(p->x);
    memset(p, 0, sizeof *p);
}

int partd__training_plan_copy(partd_training_plan *dst, const partd_training_plan *src)
{
    if (dst->S != src->S || dst->V != src->V || !dst->cut) {
        partd__training_plan_free(dst);
        if (partd__training_plan_alloc(dst, src->S, src->V) != PARTD_OK)
            return PARTD_ENOMEM;
    }
    uint32_t *dev = dst->dev, *cut = dst->cut;
    partd_training_ckpt *x = dst->x;
    *dst = *src;
    dst->dev = dev;
    dst->cut = cut;
    dst->x = x;
    memcpy(dev, src->dev, src->S * sizeof *dev);
    memcpy(cut, src->cut, (src->V + 1) * sizeof *cut);
    memcpy(x, src->x, src->V * sizeof *x);
    return PARTD_OK;
}

/* ---- figures ------------------------------------------------------------------ */

void partd__training_eval_stages(const partd_training_model *md, partd_training_cfg *c,
                                 const uint32_t *cut)
{
    partd_pipeline_window w = {0, 0, 0, 0};
    double M = md->M;
    for (uint32_t j = 0; j < c->V; j++) {
        partd_training_fig *g = &c->fig[j];
        partd__training_fig(md, &w, cut[j], cut[j + 1], g);
        double s = c->speed[j];
        c->F[j] = g->f / s / M;
        c->B[j] = g->bw / s / M;
        c->W[j] = g->w / s / M;
        c->I[j] = (g->bw - g->w) / s / M;
        c->delta[j] = j + 1 < c->V && c->rank[j] != c->rank[j + 1]
                          ? md->ms_per_byte * (double)g->live_out / M
                          : 0.0;
        c->held_u[j] = g->in + g->act;
    }
}

/* Sets the checkpoint-dependent figures of stage j. */
static void set_ckpt(const partd_training_model *md, partd_training_cfg *c, uint32_t j,
                     const partd_training_ckpt *x)
{
    c->R[j] = x->R / c->speed[j] / (double)md->M;
    c->held_c[j] = c->held_u[j] - x->D;
    c->trans[j] = x->T;
}

/* memory = N / M + param_factor * P, in whole bytes: N // M +
 * ceil(pf * P + (N % M) / M). */
static int64_t memory_of(const partd_training_model *md, int64_t N, int64_t P)
{
    int64_t M = md->M;
    double pd = ceil(md->opt->param_factor * (double)P + (double)(N % M) / (double)M);
    if (!(pd < 0x1p62))
        return INT64_MAX / 2;
    int64_t m = N / M + (int64_t)pd;
    return m < 0 || m > INT64_MAX / 2 ? INT64_MAX / 2 : m;
}

/* The parameters of rank r's stages (a shared parameter once). */
static int64_t rank_params(const partd_training_model *md, partd_training_cfg *c, uint32_t r)
{
    uint32_t k = c->rn[r];
    for (uint32_t i = 0; i < k; i++) {
        c->ra[i] = c->fig[c->rs[r * c->v + i]].a;
        c->rb[i] = c->fig[c->rs[r * c->v + i]].b;
    }
    if (++c->gen == 0) { /* the marks wrapped: start again */
        memset(c->mark, 0, (md->n_res ? md->n_res : 1) * sizeof *c->mark);
        c->gen = 1;
    }
    return partd__training_params_union(md, c->ra, c->rb, k, c->mark, c->gen);
}

int64_t partd__training_eval_rank_memory(const partd_training_model *md, partd_training_cfg *c,
                                         uint32_t r, const partd_training_ckpt *x)
{
    for (uint32_t i = 0; i < c->rn[r]; i++) {
        uint32_t j = c->rs[r * c->v + i];
        set_ckpt(md, c, j, &x[j]);
    }
    int64_t N;
    partd__training_sim_memory(&c->sim, r, c->held_c, c->held_u, c->trans,
                               partd__training_checkpointed(md), &N, NULL, NULL);
    c->work += c->lists.off[r + 1] - c->lists.off[r];
    return memory_of(md, N, rank_params(md, c, r));
}

void partd__training_eval_plan(const partd_training_model *md, partd_training_cfg *c,
                               partd_training_plan *p, double *busy, int64_t *mem)
{
    for (uint32_t j = 0; j < c->V; j++)
        set_ckpt(md, c, j, &p->x[j]);
    partd_training_durations d = {c->F, c->B, c->I, c->R, c->W, c->delta,
                                  partd__training_checkpointed(md)};
    p->sched = c->sched;
    p->S = c->S;
    p->v = c->v;
    p->V = c->V;
    memcpy(p->dev, c->dev, c->S * sizeof *c->dev);
    p->step = partd__training_sim_run(&c->sim, &d, busy ? busy : c->busy);
    c->work += c->lists.n;
    p->feasible = 1;
    p->memfrac = 0;
    p->shortfall = INT64_MIN;
    for (uint32_t r = 0; r < c->S; r++) {
        int64_t m = c->rmem[r];
        if (!c->rmem_ok) {
            int64_t N;
            partd__training_sim_memory(&c->sim, r, c->held_c, c->held_u, c->trans, d.c, &N, NULL, NULL);
            m = memory_of(md, N, rank_params(md, c, r));
        }
        int64_t cap = md->req->devices[c->dev[r]].memory_bytes;
        if (mem)
            mem[r] = m;
        double frac = (double)m / (double)cap;
        if (frac > p->memfrac)
            p->memfrac = frac;
        if (m - cap > p->shortfall) {
            p->shortfall = m - cap;
            p->short_rank = r;
        }
        if (m > cap)
            p->feasible = 0;
    }
    c->rmem_ok = 0;
}

/* ---- checkpoint choice -------------------------------------------------------- */

/* The first candidate of stage [a, b): the empty set under auto and never,
 * the whole stage under always and except_last. */
static partd_training_ckpt first_candidate(const partd_training_model *md, uint32_t a, uint32_t b)
{
    if (md->opt->checkpoint == PARTD_CHECKPOINT_ALWAYS ||
        md->opt->checkpoint == PARTD_CHECKPOINT_EXCEPT_LAST) {
        int64_t act = md->pl.act[md->units[b - 1].hi] - md->pl.act[md->units[a].lo];
        uint64_t all = b - a >= 64 ? UINT64_MAX : (UINT64_C(1) << (b - a)) - 1;
        return (partd_training_ckpt){md->pf[b] - md->pf[a], act, act, all};
    }
    return (partd_training_ckpt){0, 0, 0, 0};
}

int partd__training_load_candidates(partd_training_cfg *c, const uint32_t *cut,
                                    const uint32_t *js, uint32_t k, int masks)
{
    uint32_t total = 0;
    for (uint32_t q = 0; q < k; q++) {
        uint32_t j = js ? js[q] : q;
        int rc = partd__training_ckpts_of(&c->cs, cut[j], cut[j + 1], masks);
        if (rc != PARTD_OK)
            return rc;
        if (partd__training_grow(&c->cand, sizeof *c->cand, &c->cand_cap,
                                 (size_t)total + c->cs.n) != PARTD_OK)
            return PARTD_ENOMEM;
        c->cand_off[q] = total;
        memcpy(c->cand + total, c->cs.c, c->cs.n * sizeof *c->cand);
        total += c->cs.n;
    }
    c->cand_off[k] = total;
    return PARTD_OK;
}

/* One stage: the first candidate (R ascending) that fits, else the least
 * memory. */
static void choose_one(const partd_training_model *md, partd_training_cfg *c,
                       partd_training_plan *p, uint32_t r, uint32_t j, int64_t cap, int64_t mem)
{
    uint32_t best = c->cand_off[0];
    int64_t best_mem = mem;
    for (uint32_t i = c->cand_off[0] + 1; i < c->cand_off[1]; i++) {
        p->x[j] = c->cand[i];
        int64_t m = partd__training_eval_rank_memory(md, c, r, p->x);
        if (m <= cap) {
            best = i;
            break;
        }
        if (m < best_mem) {
            best_mem = m;
            best = i;
        }
    }
    p->x[j] = c->cand[best];
}

/* Several stages: move one stage at a time to the candidate that saves the
 * most bytes per ms of recomputation, until the rank fits. */
static void choose_many(const partd_training_model *md, partd_training_cfg *c,
                        partd_training_plan *p, uint32_t r, const uint32_t *js, uint32_t k,
                        int64_t cap, int64_t mem)
{
    uint32_t idx[PARTD_TRAINING_MAX_VIRTUAL] = {0};
    while (mem > cap) {
        double best_rate = -1;
        uint32_t bk = 0, bi = 0;
        int64_t best_mem = mem;
        for (uint32_t q = 0; q < k; q++) {
            uint32_t j = js[q];
            partd_training_ckpt keep = p->x[j];
            for (uint32_t i = c->cand_off[q] + idx[q] + 1; i < c->cand_off[q + 1]; i++) {
                p->x[j] = c->cand[i];
                int64_t m = partd__training_eval_rank_memory(md, c, r, p->x);
                double dr = c->cand[i].R - keep.R;
                double rate = m < mem ? (double)(mem - m) / (dr > 0 ? dr : 1e-300) : -1;
                if (rate > best_rate) {
                    best_rate = rate;
                    bk = q;
                    bi = i;
                    best_mem = m;
                }
            }
            p->x[j] = keep;
        }
        if (best_rate < 0)
            break;
        p->x[js[bk]] = c->cand[bi];
        idx[bk] = bi - c->cand_off[bk];
        mem = best_mem;
    }
}

int partd__training_eval_choose(const partd_training_model *md, partd_training_cfg *c,
                                partd_training_plan *p)
{
    for (uint32_t r = 0; r < c->S; r++) {
        const uint32_t *js = c->rs + r * c->v;
        uint32_t k = c->rn[r];
        int same = c->seen_ok[r];
        for (uint32_t i = 0; i < k && same; i++)
            same = c->seen_a[js[i]] == p->cut[js[i]] && c->seen_b[js[i]] == p->cut[js[i] + 1];
        if (same) { /* the rank's stages as last time: its sets too */
            for (uint32_t i = 0; i < k; i++)
                p->x[js[i]] = c->seen_x[js[i]];
            c->rmem[r] = c->seen_mem[r];
            continue;
        }
        for (uint32_t i = 0; i < k; i++)
            p->x[js[i]] = first_candidate(md, p->cut[js[i]], p->cut[js[i] + 1]);
        int64_t cap = md->req->devices[c->dev[r]].memory_bytes;
        int64_t mem = partd__training_eval_rank_memory(md, c, r, p->x);
        if (mem > cap && md->opt->checkpoint == PARTD_CHECKPOINT_AUTO) {
            int rc = partd__training_load_candidates(c, p->cut, js, k, 0);
            if (rc != PARTD_OK)
                return rc;
            if (k == 1)
                choose_one(md, c, p, r, js[0], cap, mem);
            else
                choose_many(md, c, p, r, js, k, cap, mem);
            mem = partd__training_eval_rank_memory(md, c, r, p->x);
        }
        c->rmem[r] = c->seen_mem[r] = mem;
        c->seen_ok[r] = 1;
        for (uint32_t i = 0; i < k; i++) {
            c->seen_a[js[i]] = p->cut[js[i]];
            c->seen_b[js[i]] = p->cut[js[i] + 1];
            c->seen_x[js[i]] = p->x[js[i]];
        }
    }
    c->rmem_ok = 1;
    partd__training_eval_plan(md, c, p, NULL, NULL);
    return PARTD_OK;
}

/* ---- order -------------------------------------------------------------------- */

/* Equal within 1e-9 of the larger: the same figure reached by sums in
 * another order. */
static int fcmp(double a, double b)
{
    double m = fabs(a) > fabs(b) ? fabs(a) : fabs(b);
    if (fabs(a - b) <= 1e-9 * m)
        return 0;
    return a < b ? -1 : 1;
}

int partd__training_mask_cmp(uint64_t x, uint64_t y)
{
    int px = __builtin_popcountll(x), py = __builtin_popcountll(y);
    if (px != py)
        return px < py ? -1 : 1;
    while (x && y) {
        int ix = __builtin_ctzll(x), iy = __builtin_ctzll(y);
        if (ix != iy)
            return ix < iy ? -1 : 1;
        x &= x - 1;
        y &= y - 1;
    }
    return 0;
}

/* Sets known by their units compare as partd__training_mask_cmp says;
 * frontier points by their figures. */
static int ckpt_cmp(const partd_training_ckpt *a, const partd_training_ckpt *b)
{
    if (a->mask != b->mask)
        return partd__training_mask_cmp(a->mask, b->mask);
    if (a->R != b->R)
        return a->R < b->R ? -1 : 1;
    if (a->D != b->D)
        return a->D > b->D ? -1 : 1;
    return a->T < b->T ? -1 : a->T > b->T;
}

int partd__training_plan_cmp(const partd_training_plan *a, const partd_training_plan *b)
{
    int c;
    if (a->feasible != b->feasible)
        return a->feasible ? -1 : 1;
    if (!a->feasible) {
        if (a->shortfall != b->shortfall)
            return a->shortfall < b->shortfall ? -1 : 1;
    } else if ((c = fcmp(a->step, b->step)) || (c = fcmp(a->memfrac, b->memfrac))) {
        return c;
    }
    if (a->sched != b->sched)
        return a->sched < b->sched ? -1 : 1;
    if (a->v != b->v)
        return a->v < b->v ? -1 : 1;
    if (a->S != b->S)
        return a->S < b->S ? -1 : 1;
    for (uint32_t j = 1; j < a->V; j++)
        if (a->cut[j] != b->cut[j])
            return a->cut[j] < b->cut[j] ? -1 : 1;
    for (uint32_t r = 0; r < a->S; r++)
        if (a->dev[r] != b->dev[r])
            return a->dev[r] < b->dev[r] ? -1 : 1;
    for (uint32_t j = 0; j < a->V; j++)
        if ((c = ckpt_cmp(&a->x[j], &b->x[j])))
            return c;
    return 0;
}

int partd__training_plan_offer(partd_training_best *b, const partd_training_plan *p)
{
    if (b->any && partd__training_plan_cmp(p, &b->p) >= 0)
        return PARTD_OK;
    b->any = 1;
    return partd__training_plan_copy(&b->p, p);
}
