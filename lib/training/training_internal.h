/*
 * training_internal.h - the training planner's model (internal to
 * training*.c).
 *
 * Owns, for one request in mode "training":
 *   - the units (contract: maximal runs of operations with the same module
 *     prefix at unit_depth) and their names (training_units.c);
 *   - per unit, at speed 1 and for the whole batch: forward f, backward b,
 *     its weight-gradient part w, output bytes; prefix sums of f, b, w;
 *   - the bytes live across every cut between units (the `boundaries` of a
 *     pipeline), and the parameter resources each unit reads (named
 *     parameters, get_attr nodes), so that a rank holding several stages
 *     stores a shared parameter once;
 *   - per operation, for the checkpoint rule: its first reader outside its
 *     unit (training_stage.c);
 *   - the device classes: devices of equal speed and memory_bytes are
 *     interchangeable, and a class's devices are taken in list order.
 * Stage figures (training_stage.c) are computed from these on demand, so
 * the planner's memory stays linear in the units.
 *
 * Ownership: partd_training_model owns every array
 * (partd__training_model_free). Errors: PARTD_ENOMEM, PARTD_EINVALID
 * (problem filled).
 */
#ifndef PARTD_TRAINING_INTERNAL_H
#define PARTD_TRAINING_INTERNAL_H

#include <stdint.h>

#include "partd/cancel.h"
#include "partd/model.h"
#include "partd/problem.h"
#include "partd/training_types.h"
#include "pipeline/pipeline_model.h"

typedef struct partd_training_unit {
    int32_t lo, hi;            /* operation ranks [lo, hi) */
    double f, b, w;            /* speed 1, whole batch */
    int64_t act;               /* output bytes of its operations */
} partd_training_unit;

typedef struct partd_training_model {
    const partd_request *req;
    const partd_training_options *opt;
    partd_pipeline_model pl;   /* ranks, windows, parameters */
    uint32_t M;                /* microbatches */
    uint32_t depth;            /* unit_depth used */
    double ms_per_byte;        /* 1000 / transfer_bytes_per_sec */

    uint32_t n_units;
    partd_training_unit *units;
    uint32_t *unit_of;         /* per operation rank */
    char **unit_name;          /* n_units malloc'd names */
    double *pf, *pb, *pw;      /* n_units + 1: prefix sums of f, b, w */
    int64_t *live;             /* n_units + 1: bytes live across the cut before unit u */
    int64_t min_live;          /* least live over the cuts 1 .. n_units - 1 */

    double *f;                 /* per operation rank, speed 1 */
    int32_t *next_outside;     /* per rank: first reading rank past its unit, INT32_MAX none */
    int32_t *last_user;        /* per rank: last reading rank, -1 none */
    uint32_t *lu_off, *lu_idx, *no_off, *no_idx; /* CSR by rank of the above */

    /* Parameter resources: unit u reads res_idx[res_off[u] .. res_off[u+1])
     * (each once), resource x has res_bytes[x]; anon[u] (prefix, n + 1) the
     * unnamed param_bytes of operations. */
    uint32_t n_res;
    uint32_t *res_off, *res_idx;
    int64_t *res_bytes;
    int64_t *anon;

    uint32_t n_classes;
    double *cls_speed;
    int64_t *cls_mem;
    uint32_t *cls_count;       /* devices in the class */
    uint32_t *cls_dev_off, *cls_dev; /* the class's devices in list order (CSR) */
    uint32_t *dev_class;       /* device -> class */

    partd_training_stats *stats; /* the caller's, or own_stats */
    partd_training_stats own_stats;
} partd_training_model;

/* training_units.c */
int partd__training_model_build(partd_training_model *md, const partd_request *req,
                                partd_problem *pb);
void partd__training_model_free(partd_training_model *md);
uint32_t partd__training_units_default_depth(const partd_request *req);
/* The number of units at depth (planning order; as the model builds them). */
uint32_t partd__training_units_count(const partd_request *req, uint32_t depth);

/* The search's memory count: delta bytes allocated (> 0) or freed (< 0). */
static inline void partd_training_mem(const partd_training_model *md, int64_t delta)
{
    partd_training_stats *st = md->stats;
    st->live_bytes = (uint64_t)((int64_t)st->live_bytes + delta);
    if (st->live_bytes > st->peak_bytes)
        st->peak_bytes = st->live_bytes;
}

/* Room for `need` elements of `size` bytes in *array (capacity *cap in
 * elements, doubled as needed): PARTD_OK or PARTD_ENOMEM (*array kept). */
int partd__training_grow(void *array, size_t size, size_t *cap, size_t need);

/* Checkpointed microbatches of the checkpoint mode: m < c. */
uint32_t partd__training_checkpointed(const partd_training_model *md);

#endif
