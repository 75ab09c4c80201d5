/*
 * training_search.c - the search over configurations, splits and
 * checkpoint sets; see training_search.h.
 *
 * The configurations (training_space.c) are searched exhaustively
 * (training_exhaustive.c) when the splits of every one are few and no
 * device sequence was left out: the answer is then optimal. Otherwise, or
 * when the exhaustive search finds too many checkpoint sets after all, by
 * the large search (training_heuristic.c), whose lower bound the answer
 * carries; optimal when it meets the step.
 */
#include "training_search.h"

#include <string.h>

#include "partd/partd.h"
#include "training_exhaustive.h"
#include "training_heuristic.h"
#include "training_space.h"

/* Is sp small enough for the exhaustive search? */
static int small_space(const partd_training_space *sp)
{
    uint64_t total = 0;
    for (uint32_t k = 0; k < sp->n; k++)
        total += partd__training_space_splits(sp->md->n_units, sp->d[k].S * sp->d[k].v,
                                              PARTD_TRAINING_EXHAUSTIVE_SPLITS);
    return sp->n && !sp->partial && total <= PARTD_TRAINING_EXHAUSTIVE_SPLITS;
}

/* The best plan into out (b's plan moves there). */
static void answer(const partd_training_model *md, partd_training_best *b, int exhaustive,
                   double lower, partd_training_found *out)
{
    out->best = b->p;
    b->any = 0;
    out->found = out->best.feasible;
    out->optimal = exhaustive || (out->found && lower >= out->best.step);
    out->lower_bound = out->optimal ? out->best.step
                                    : (lower < out->best.step ? lower : out->best.step);
    md->stats->exhaustive = exhaustive;
}

int partd__training_search(const partd_training_model *md, const partd_cancel *cancel,
                           partd_training_found *out)
{
    memset(out, 0, sizeof *out);
    partd_training_space sp;
    partd_training_best b = {{0}, 0};
    int rc = partd__training_space_enumerate(&sp, md, cancel);
    double lower = 0;
    int exhaustive_done = 0;
    if (rc == PARTD_OK && small_space(&sp)) {
        rc = partd__training_exhaustive(&sp, &b, md->stats);
        if (rc == PARTD_ETOOBIG) { /* too many checkpoint sets: the large search */
            rc = PARTD_OK;
            partd__training_plan_free(&b.p);
            b.any = 0;
        } else {
            exhaustive_done = rc == PARTD_OK;
        }
    }
    if (rc == PARTD_OK && sp.n && !exhaustive_done)
        rc = partd__training_heuristic(&sp, &b, md->stats, &lower);
    if (rc == PARTD_OK && b.any)
        answer(md, &b, exhaustive_done, lower, out);
    if (b.any)
        partd__training_plan_free(&b.p);
    partd__training_space_free(&sp);
    return rc;
}

void partd__training_found_free(partd_training_found *f)
{
    partd__training_plan_free(&f->best);
    memset(f, 0, sizeof *f);
}
