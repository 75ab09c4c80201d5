/*
 * sac_model.c - constants of the sac_milp model and exact plan scoring; see
 * sac_model.h.
 *
 * Exactness: with ratios r_j = k_j / 1e4, a module's activation memory
 *   a_i = act_i - sum_{j before i in fw post-order, y_j} (ACM_j r_j - (ACM_j - IA_j))
 * times 1e4 is an integer, and the peak term a_i + fixed_i / world_size times
 * 1e4 * world_size is one too. Both fit in 128 bits (bytes < 2^53, n < 2^32).
 */
#include "sac_model.h"

#include <stdlib.h>
#include <string.h>

#include "partd/partd.h"

typedef __int128 i128;

static int alloc_arrays(partd_sac_tree *t, uint32_t n)
{
    t->acm = calloc(n, sizeof *t->acm);
    t->ia = calloc(n, sizeof *t->ia);
    t->min_ratio_e4 = calloc(n, sizeof *t->min_ratio_e4);
    t->eligible = calloc(n, sizeof *t->eligible);
    t->eligible_parent = calloc(n, sizeof *t->eligible_parent);
    t->act = calloc(n, sizeof *t->act);
    t->fixed = calloc(n, sizeof *t->fixed);
    return t->acm && t->ia && t->min_ratio_e4 && t->eligible &&
                   t->eligible_parent && t->act && t->fixed
               ? PARTD_OK
               : PARTD_ENOMEM;
}

/* PyTorch's p_i: the root's share is its parameters minus the other units'
 * (floored at 0, where PyTorch's model would be infeasible); the reserve is
 * 3 x max p_i, as in `max_m + 3 * max_p <= memory_budget`. */
static int64_t fsdp_reserve(const partd_modules *m, const uint8_t *is_unit)
{
    int64_t others = 0, largest = 0;
    for (uint32_t i = 1; i < m->n; i++)
        if (is_unit[i]) {
            others += m->mods[i].param_per_module;
            if (m->mods[i].param_per_module > largest)
                largest = m->mods[i].param_per_module;
        }
    int64_t root = m->mods[0].param_per_module - others;
    if (root > largest)
        largest = root;
    return 3 * largest;
}

static void mark_ineligible_ancestors(const partd_modules *m, uint32_t unit,
                                      uint8_t *eligible)
{
    for (uint32_t p = m->mods[unit].parent; p != PARTD_NONE; p = m->mods[p].parent)
        eligible[p] = 0;
}

static void fill_constants(const partd_modules *m, partd_sac_tree *t)
{
    int64_t root_params = m->mods[0].param_per_module;
    for (uint32_t i = 0; i < m->n; i++) {
        const partd_module *mod = &m->mods[i];
        t->ia[i] = mod->act_fw_per_module;
        /* PyTorch overrides sac_memory by act_fw_per_module when smaller. */
        t->acm[i] = mod->sac_memory > mod->act_fw_per_module ? mod->sac_memory
                                                             : mod->act_fw_per_module;
        if (t->acm[i] > 0) {
            i128 num = (i128)(t->acm[i] - t->ia[i]) * PARTD_SAC_RATIO_SCALE;
            t->min_ratio_e4[i] = (int32_t)((num + t->acm[i] - 1) / t->acm[i]);
        }
        t->act[i] = mod->act_total + mod->act_grad_per_module;
        t->fixed[i] = root_params + mod->grad_total;
    }
}

int partd__sac_tree_build(const partd_modules *m, uint32_t world_size,
                         const uint32_t *ac, uint32_t n_ac,
                         const uint32_t *fsdp, uint32_t n_fsdp,
                         partd_sac_tree *t)
{
    memset(t, 0, sizeof *t);
    t->m = m;
    t->n = m->n;
    t->world_size = world_size ? world_size : 1;
    if (alloc_arrays(t, m->n) != PARTD_OK) {
        partd__sac_tree_free(t);
        return PARTD_ENOMEM;
    }
    fill_constants(m, t);
    for (uint32_t i = 0; i < m->n; i++)
        t->eligible[i] = !m->mods[i].is_leaf && !ac;
    for (uint32_t k = 0; ac && k < n_ac; k++)
        t->eligible[ac[k]] = !m->mods[ac[k]].is_leaf;
    if (n_fsdp) {
        uint8_t *is_unit = calloc(m->n, 1);
        if (!is_unit) {
            partd__sac_tree_free(t);
            return PARTD_ENOMEM;
        }
        for (uint32_t k = 0; k < n_fsdp; k++) {
            is_unit[fsdp[k]] = 1;
            mark_ineligible_ancestors(m, fsdp[k], t->eligible);
        }
        t->reserve_bytes = fsdp_reserve(m, is_unit);
        free(is_unit);
    }
    for (uint32_t i = 0; i < m->n; i++) {
        t->eligible_parent[i] = PARTD_NONE;
        for (uint32_t p = m->mods[i].parent; p != PARTD_NONE; p = m->mods[p].parent)
            if (t->eligible[p]) {
                t->eligible_parent[i] = p;
                break;
            }
        t->n_eligible += t->eligible[i];
    }
    return PARTD_OK;
}

void partd__sac_tree_free(partd_sac_tree *t)
{
    free(t->acm);
    free(t->ia);
    free(t->min_ratio_e4);
    free(t->eligible);
    free(t->eligible_parent);
    free(t->act);
    free(t->fixed);
    memset(t, 0, sizeof *t);
}

int partd__sac_plan_vec_alloc(partd_sac_plan_vec *p, uint32_t n)
{
    p->y = calloc(n ? n : 1, sizeof *p->y);
    p->ratio_e4 = calloc(n ? n : 1, sizeof *p->ratio_e4);
    if (!p->y || !p->ratio_e4) {
        partd__sac_plan_vec_free(p);
        return PARTD_ENOMEM;
    }
    return PARTD_OK;
}

void partd__sac_plan_vec_free(partd_sac_plan_vec *p)
{
    free(p->y);
    free(p->ratio_e4);
    p->y = NULL;
    p->ratio_e4 = NULL;
}

double partd__sac_recompute_fraction(const partd_module *mod, double r)
{
    double best = 0;
    for (uint32_t k = 0; k < mod->n_segments; k++) {
        double v = mod->slopes[k] * r + mod->intercepts[k];
        if (v > best)
            best = v;
    }
    return best;
}

/* max_i (a_i + fixed_i / ws) x (1e4 ws), exactly. */
static i128 peak_scaled(const partd_sac_tree *t, const partd_sac_plan_vec *p)
{
    const i128 scale = PARTD_SAC_RATIO_SCALE;
    i128 discarded = 0, peak = 0; /* peak >= 0: every term is >= 0 at y = 0 */
    int first = 1;
    for (uint32_t k = 0; k < t->n; k++) {
        uint32_t i = t->m->post_order[k];
        i128 v = ((i128)t->act[i] * scale - discarded) * t->world_size +
                 (i128)t->fixed[i] * scale;
        if (first || v > peak)
            peak = v;
        first = 0;
        if (p->y[i])
            discarded += (i128)t->acm[i] * p->ratio_e4[i] -
                         (i128)(t->acm[i] - t->ia[i]) * scale;
    }
    return peak;
}

static int64_t ceil_div(i128 num, i128 den)
{
    i128 q = num / den;
    if (num % den != 0 && num > 0)
        q++;
    return (int64_t)q;
}

void partd__sac_evaluate(const partd_sac_tree *t, const partd_sac_plan_vec *p,
                        partd_sac_score *s)
{
    memset(s, 0, sizeof *s);
    i128 den = (i128)PARTD_SAC_RATIO_SCALE * t->world_size;
    s->peak_bytes = ceil_div(peak_scaled(t, p), den);
    s->within_ratio_bounds = 1;
    for (uint32_t i = 0; i < t->n; i++) {
        if (!p->y[i])
            continue;
        const partd_module *mod = &t->m->mods[i];
        double r = (double)p->ratio_e4[i] / PARTD_SAC_RATIO_SCALE;
        s->recompute_ms += mod->sac_runtime * partd__sac_recompute_fraction(mod, r);
        if (p->ratio_e4[i] < t->min_ratio_e4[i] ||
            p->ratio_e4[i] > PARTD_SAC_RATIO_SCALE)
            s->within_ratio_bounds = 0;
        for (uint32_t a = t->m->mods[i].parent; a != PARTD_NONE; a = t->m->mods[a].parent)
            if (p->y[a])
                s->nested = 1;
    }
}

int partd__sac_fits(const partd_sac_tree *t, const partd_sac_plan_vec *p,
                   int64_t cap_bytes)
{
    i128 den = (i128)PARTD_SAC_RATIO_SCALE * t->world_size;
    return peak_scaled(t, p) <= (i128)cap_bytes * den;
}
