/* export_order.c - a plan's schedule as the export needs it: the class its
 * result names, and whether its order is that class's own; see
 * export_internal.h.
 *
 * The orders themselves are the training planner's
 * (training/training_schedule.h): the lists partd times are the lists the
 * export writes and compares with, so one implementation of PyTorch's
 * classes serves both. Names are read as get_schedule_class reads them
 * (torch/distributed/pipelining/schedules.py: case-insensitively), which
 * also takes v2's "gpipe" and "1f1b". */
#include "export_internal.h"

#include <string.h>
#include <strings.h>

#include "partd/partd.h"

int partd__export_sched_parse(const char *name, partd_training_schedule *out)
{
    for (int s = 0; s < PARTD_TRAINING_SCHEDULE_COUNT; s++)
        if (strcasecmp(name, partd_training_schedule_name((partd_training_schedule)s)) == 0) {
            *out = (partd_training_schedule)s;
            return PARTD_OK;
        }
    return PARTD_EINVALID;
}

int partd__export_own_order(const partd__export_plan *p, partd_training_lists *out)
{
    memset(out, 0, sizeof *out);
    /* the builder replaces v by the class's own; a plan with another v is
     * one the class does not run */
    if (!partd_training_schedule_allows(p->sched, p->n_ranks, p->v, p->microbatches))
        return PARTD_EINVALID;
    return partd_training_schedule_build(p->sched, p->n_ranks, p->v, p->microbatches, out);
}

int partd__export_order_is_own(const partd__export_plan *p)
{
    if (!p->order.off)
        return 0;
    partd_training_lists own;
    int rc = partd__export_own_order(p, &own);
    if (rc != PARTD_OK)
        return rc == PARTD_ENOMEM ? PARTD_ENOMEM : 0;
    int same = own.n == p->order.n;
    for (uint32_t r = 0; same && r <= p->n_ranks; r++)
        same = own.off[r] == p->order.off[r];
    for (uint32_t i = 0; same && i < own.n; i++) {
        const partd_training_action *a = &own.act[i], *b = &p->order.act[i];
        same = a->stage == b->stage && a->kind == b->kind && a->mb == b->mb;
    }
    partd_training_lists_free(&own);
    return same;
}
