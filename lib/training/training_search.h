/*
 * training_search.h - the training search (internal to training*.c).
 *
 * A configuration is a schedule, its v, S ranks and the device of each
 * rank; a plan adds the split of the units into V = S * v stages and each
 * stage's checkpoint set. training_eval.c times a plan (training_sim.h)
 * and reads its memory; training_search.c searches the plans (with
 * training_space.c, training_exhaustive.c, training_heuristic.c);
 * training_bound.c bounds the step of every plan of a configuration from
 * below.
 *
 * The search (partd__training_search) minimises step_ms subject to every
 * rank's peak fitting its device, ties to the smaller largest memory
 * fraction, then the schedule listed first, the smaller v, the fewer
 * ranks, the earlier cuts, the devices earlier in the list, and per stage
 * in stage order the smaller checkpoint set (fewer units, then the earlier
 * units). The configurations are enumerated by training_space.c; small
 * spaces are searched exhaustively (training_exhaustive.c: the answer is
 * then proven optimal); larger ones by local search from speed-balanced
 * splits (training_heuristic.c), and every configuration gets a lower
 * bound (training_bound.c: the fluid bound, and the relaxed longest paths,
 * one relaxation for all the device orders of a (ranks, schedule, v), when
 * few of those are left to bound): the answer carries the least of them.
 *
 * Ownership: a partd_training_cfg owns its lists, simulator and scratch
 * (partd__training_cfg_free); a partd_training_plan owns its arrays
 * (partd__training_plan_free), a partd_training_best its plan when any.
 * Errors: PARTD_ENOMEM, PARTD_ETOOBIG (a checkpoint frontier past its
 * limit), PARTD_EINVALID (a schedule that cannot run: a bug), the cancel
 * flag's codes.
 */
#ifndef PARTD_TRAINING_SEARCH_H
#define PARTD_TRAINING_SEARCH_H

#include "partd/cancel.h"
#include "training_internal.h"
#include "training_schedule.h"
#include "training_sim.h"
#include "training_stage.h"

/* A configuration: which schedule runs on which devices. */
typedef struct partd_training_cfg {
    const partd_training_model *md;
    int64_t counted;           /* bytes counted in md->stats */
    partd_training_schedule sched;
    uint32_t S, v, V;
    uint32_t *dev;             /* S: device of each rank */
    uint32_t *rank;            /* V: rank of each stage */
    double *speed;             /* V: speed of each stage's device */
    partd_training_lists lists;
    partd_training_sim sim;
    /* Scratch of an evaluation (V each, busy S). */
    partd_training_fig *fig;
    double *F, *B, *I, *R, *W, *delta, *busy;
    int64_t *held_c, *held_u, *trans, *peak;
    int64_t *rmem;             /* S: each rank's memory with the plan's sets, */
    int rmem_ok;               /* when eval_choose just read them */
    uint32_t *rs, *rn;         /* rank r's stages: rs[r * v + i], i < rn[r] */
    /* eval_choose's memory: the sets it chose for each rank's stages when
     * they last had these ranges (a rank's sets depend on nothing else). */
    uint32_t *seen_a, *seen_b; /* V */
    partd_training_ckpt *seen_x; /* V */
    int64_t *seen_mem;         /* S */
    uint8_t *seen_ok;          /* S */
    uint64_t work;             /* actions timed and walked for memory */
    uint32_t *mark, gen;       /* n_res: parameter marks */
    uint32_t *ra, *rb;         /* a rank's stages (v) */
    partd_training_ckpts cs;
    partd_training_ckpt *cand; /* candidates (partd__training_load_candidates) */
    uint32_t *cand_off;
    size_t cand_cap;
} partd_training_cfg;

/* A plan and its figures. */
typedef struct partd_training_plan {
    partd_training_schedule sched;
    uint32_t S, v, V;
    uint32_t *dev;             /* S */
    uint32_t *cut;             /* V + 1: stage j is units [cut[j], cut[j + 1]) */
    partd_training_ckpt *x;    /* V */
    int feasible;
    double step, memfrac;
    int64_t shortfall;         /* the largest memory - device memory of a rank */
    uint32_t short_rank;
} partd_training_plan;

int partd__training_cfg_build(partd_training_cfg *c, const partd_training_model *md,
                              partd_training_schedule sched, uint32_t S, uint32_t v,
                              const uint32_t *dev);
void partd__training_cfg_free(partd_training_cfg *c);

int partd__training_plan_alloc(partd_training_plan *p, uint32_t S, uint32_t V);
void partd__training_plan_free(partd_training_plan *p);
int partd__training_plan_copy(partd_training_plan *dst, const partd_training_plan *src);

/* Stage figures and durations of the cuts p->cut into c's scratch. */
void partd__training_eval_stages(const partd_training_model *md, partd_training_cfg *c,
                                 const uint32_t *cut);

/* The memory of rank r with the checkpoint sets x (V): bytes. */
int64_t partd__training_eval_rank_memory(const partd_training_model *md, partd_training_cfg *c,
                                         uint32_t r, const partd_training_ckpt *x);

/* Times and sizes the plan p (cuts and x set; after eval_stages): step,
 * feasibility, memory fraction, shortfall. busy (S) and mem (S) optional. */
void partd__training_eval_plan(const partd_training_model *md, partd_training_cfg *c,
                               partd_training_plan *p, double *busy, int64_t *mem);

/* The checkpoint candidates of the stages js[0..k) (js NULL: stages 0..k)
 * of the cuts into c->cand, those of js[q] from c->cand_off[q]; masks:
 * every subset with its units (training_stage.h). */
int partd__training_load_candidates(partd_training_cfg *c, const uint32_t *cut,
                                    const uint32_t *js, uint32_t k, int masks);

/* Chooses every stage's checkpoint set for the cuts p->cut (after
 * eval_stages): per rank, the least recomputation that fits (exact for a
 * rank of one stage; greedy by bytes saved per ms for several), the least
 * memory when nothing fits. Then evaluates p. */
int partd__training_eval_choose(const partd_training_model *md, partd_training_cfg *c,
                                partd_training_plan *p);

/* Checkpoint sets by their units (bit masks): fewer units first, then the
 * earlier units. */
int partd__training_mask_cmp(uint64_t x, uint64_t y);

/* < 0 when a is the better plan, > 0 when b is, 0 when they tie on every
 * key (contract, "The search"; see above). */
int partd__training_plan_cmp(const partd_training_plan *a, const partd_training_plan *b);

/* The best plan offered so far (any = 0: none yet). */
typedef struct partd_training_best {
    partd_training_plan p;
    int any;
} partd_training_best;

/* Keeps a copy of p when it is the first or beats b's plan (ties keep the
 * earlier): PARTD_OK or PARTD_ENOMEM. */
int partd__training_plan_offer(partd_training_best *b, const partd_training_plan *p);

/* training_bound.c: a lower bound on the step of every plan of c, from at
 * most `iters` rounds; stops early once it passes `stop`. *work counts
 * what it did. */
double partd__training_bound(const partd_training_model *md, partd_training_cfg *c,
                             const uint32_t *cut, uint32_t iters, double stop, uint64_t *work);

/* The relaxation follows each device's rank (the fluid bound with the
 * bubbles) up to this many ranks; past them it bounds little beyond the
 * fluid bound, and the search leaves it out. */
#define PARTD_TRAINING_BOUND_RANKS 24

/* The same for every plan of c's schedule, v and S under any of n_orders
 * device orders (devs: n_orders x S, each rank's device under each, c's
 * own first; NULL: c's order alone), from the bound `fluid`, which holds
 * for all of them: one bound on a whole class of configurations. Rounds
 * while *work has grown by less than budget. */
double partd__training_bound_orders(const partd_training_model *md, partd_training_cfg *c,
                                    const uint32_t *cut, const uint32_t *devs,
                                    uint32_t n_orders, double fluid, uint64_t budget,
                                    double stop, uint64_t *work);

/* The fluid bound of ranks on devices dev[0..S): all work over all speed,
 * and the largest unit's work over the fastest speed (a unit is never
 * split, and its rank runs all of it). */
double partd__training_fluid(const partd_training_model *md, const uint32_t *dev, uint32_t S);

/* training_search.c */
typedef struct partd_training_found {
    int found;                 /* a plan fits */
    partd_training_plan best;  /* the plan (or, found = 0, the least short) */
    int optimal;
    double lower_bound;
} partd_training_found;

int partd__training_search(const partd_training_model *md, const partd_cancel *cancel,
                           partd_training_found *out);
void partd__training_found_free(partd_training_found *f);

#endif
