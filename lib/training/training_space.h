/*
 * training_space.h - the configurations the training search goes through
 * (internal to training*.c).
 *
 * Owns the list of configurations of one request, in the order of the tie
 * keys: ranks S, then schedule (contract order), v, and the device
 * sequence (a sequence of device classes, each class's devices in list
 * order, classes in the order of their first device). Configurations of
 * the same (ranks, schedule, v) form a combo; the relaxation of
 * training_bound.c bounds a combo's device orders at once. Past
 * PARTD_TRAINING_SPACE_CAP configurations each rank count keeps as many
 * device sequences as its share allows; the others are bounded by the
 * fluid bound of the fastest devices (partial_lb).
 *
 * Ownership: a partd_training_space owns its configurations and their
 * devices (partd__training_space_free). Errors: PARTD_ENOMEM.
 */
#ifndef PARTD_TRAINING_SPACE_H
#define PARTD_TRAINING_SPACE_H

#include "partd/cancel.h"
#include "training_internal.h"
#include "training_search.h"

/* Configurations at most: past it, each rank count tries as many device
 * sequences as its share allows (at least PARTD_TRAINING_SPACE_SEQ_MIN, at
 * most PARTD_TRAINING_SPACE_SEQ_CAP), the others bounded by the fluid bound
 * of the fastest devices. */
#define PARTD_TRAINING_SPACE_CAP 20000
#define PARTD_TRAINING_SPACE_SEQ_CAP 512
#define PARTD_TRAINING_SPACE_SEQ_MIN 4

/* One configuration. */
typedef struct partd_training_desc {
    uint8_t sched, v;
    uint32_t S, dev_off;       /* its devices: space.dev + dev_off, S of them */
    uint32_t combo;            /* its (ranks, schedule, v) */
    uint32_t seq, nseq;        /* its device sequence among the combo's */
} partd_training_desc;

typedef struct partd_training_space {
    const partd_training_model *md;
    const partd_cancel *cancel;
    partd_training_desc *d;
    uint32_t n, n_combos;
    size_t cap;
    uint32_t *dev;             /* the devices of every configuration */
    size_t ndev, devcap;
    int partial;               /* some device sequences were left out */
    double partial_lb;         /* the fluid bound of those left out */
} partd_training_space;

/* Every configuration of md's request the options allow, into sp (zeroed
 * first; cancel kept for the searches). On error sp holds what was
 * enumerated so far: free it all the same. */
int partd__training_space_enumerate(partd_training_space *sp, const partd_training_model *md,
                                    const partd_cancel *cancel);
void partd__training_space_free(partd_training_space *sp);

/* Builds configuration k into c (partd__training_cfg_build's errors). */
int partd__training_space_build(const partd_training_space *sp, uint32_t k,
                                partd_training_cfg *c);

/* The splits of n units into V stages, C(n - 1, V - 1), saturating at
 * limit + 1 (0 when V > n). */
uint64_t partd__training_space_splits(uint32_t n, uint32_t V, uint64_t limit);

#endif
