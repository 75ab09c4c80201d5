/*
 * sac_model.h - the SAC planner's view of a module tree and the exact
 * formulas that score a module-level plan (internal to the SAC unit).
 *
 * partd_sac_tree holds, per module, the constants of PyTorch's sac_milp model
 * (ACM, IA, the minimal discard ratio, which modules may be checkpointed) and
 * the per-module memory terms. partd__sac_evaluate() scores a plan whose
 * discard ratios are multiples of 1e-4 (PyTorch's 4-decimal rounding) exactly:
 * memory in 128-bit integer arithmetic, so a peak and a budget compare
 * without rounding error.
 *
 * Ownership: partd__sac_tree_build allocates the arrays of *t, released by
 * partd__sac_tree_free; plans are caller-owned arrays of tree->n.
 * Errors: PARTD_ENOMEM.
 */
#ifndef PARTD_SAC_MODEL_H
#define PARTD_SAC_MODEL_H

#include <stdint.h>

#include "modules/modules.h"

#define PARTD_SAC_RATIO_SCALE 10000 /* ratios are k / 10000 */

typedef struct partd_sac_tree {
    const partd_modules *m;
    uint32_t n;
    uint32_t world_size;
    int64_t reserve_bytes;   /* 3 x largest FSDP unit's parameters (FSDP only) */
    int64_t *acm;            /* max(sac_memory, act_fw_per_module) */
    int64_t *ia;             /* act_fw_per_module */
    int32_t *min_ratio_e4;   /* ceil(1e4 * (ACM - IA) / ACM), 0 when ACM == 0 */
    uint8_t *eligible;       /* y_i may be 1 */
    uint32_t *eligible_parent; /* nearest eligible strict ancestor or PARTD_NONE */
    int64_t *act;            /* act_total + act_grad_per_module */
    int64_t *fixed;          /* param_per_module(root) + grad_total (before / world_size) */
    uint32_t n_eligible;
} partd_sac_tree;

/* A module-level plan: y[i] (checkpointed), ratio_e4[i] (discard ratio
 * x 10000, 0 unless y[i]). */
typedef struct partd_sac_plan_vec {
    uint8_t *y;
    int32_t *ratio_e4;
} partd_sac_plan_vec;

/* Scores of a plan, by the model's formulas. */
typedef struct partd_sac_score {
    int64_t peak_bytes;      /* ceil of the exact peak */
    double recompute_ms;
    int within_ratio_bounds; /* every ratio within [min ratio, 1] */
    int nested;              /* 1 when two checkpointed modules are nested */
} partd_sac_score;

/* ac: module indices allowed to be checkpointed (NULL = every non-leaf);
 * fsdp: FSDP unit module indices (strict ancestors are excluded). */
int partd__sac_tree_build(const partd_modules *m, uint32_t world_size,
                         const uint32_t *ac, uint32_t n_ac,
                         const uint32_t *fsdp, uint32_t n_fsdp,
                         partd_sac_tree *t);
void partd__sac_tree_free(partd_sac_tree *t);

int partd__sac_plan_vec_alloc(partd_sac_plan_vec *p, uint32_t n);
void partd__sac_plan_vec_free(partd_sac_plan_vec *p);

/* Exact score of a plan. */
void partd__sac_evaluate(const partd_sac_tree *t, const partd_sac_plan_vec *p,
                        partd_sac_score *s);

/* 1 when the plan's exact peak is <= cap_bytes. */
int partd__sac_fits(const partd_sac_tree *t, const partd_sac_plan_vec *p,
                   int64_t cap_bytes);

/* Recompute fraction of module i at discard ratio r: max(0, max_k slope_k r
 * + intercept_k), 0 without segments. */
double partd__sac_recompute_fraction(const partd_module *mod, double r);

#endif
