/*
 * pipeline_boundaries.c - the tensors live across each cut of a split
 * (Slapo's liveness): the `boundaries` of a pipeline or training plan; see
 * pipeline_model.h.
 */
#include <stdlib.h>

#include "partd/partd.h"
#include "partd/plan_types.h"
#include "pipeline_model.h"

/* Index of the first cut position > x among cuts[1..S-1] (as boundary index
 * j, cut j sits at cuts[j+1]); S - 1 when none. */
static uint32_t first_cut_after(const int32_t *cuts, uint32_t S, int32_t x)
{
    uint32_t lo = 0, hi = S - 1;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (cuts[mid + 1] > x)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* The cuts [*j0, *j1) a tensor crosses: born at rank `birth` (-1 before the
 * pipeline), last read at rank `last` (m for the output node). */
static void crossed_cuts(const int32_t *cuts, uint32_t S, int32_t birth, int32_t last,
                         uint32_t *j0, uint32_t *j1)
{
    *j0 = first_cut_after(cuts, S, birth);
    *j1 = first_cut_after(cuts, S, last); /* cuts at positions <= last */
    if (*j1 < *j0)
        *j1 = *j0;
}

/* Birth and last reader of a tensor that can cross cuts; 0 when it cannot. */
static int tensor_span(const partd_pipeline_model *md, uint32_t v, int32_t *birth, int32_t *last)
{
    const partd_graph *g = &md->req->graph;
    if (partd_op_is_operation(g->op[v]))
        *birth = (int32_t)md->node_rank[v];
    else if (g->op[v] == PARTD_OP_PLACEHOLDER)
        *birth = -1;
    else
        return 0;
    *last = -1;
    for (uint32_t k = g->user_off[v]; k < g->user_off[v + 1]; k++) {
        uint32_t u = g->user_idx[k];
        /* Only operations and the output node read other nodes. */
        int32_t r = md->node_rank[u] == PARTD_NONE ? (int32_t)md->m : (int32_t)md->node_rank[u];
        if (r > *last)
            *last = r;
    }
    return *last > *birth;
}

int partd_pipeline_boundaries_fill(const partd_pipeline_model *md, const int32_t *cuts, partd_plan *plan)
{
    const partd_graph *g = &md->req->graph;
    uint32_t S = md->stages, nb = S - 1;
    if (nb == 0)
        return PARTD_OK;
    plan->boundaries = calloc(nb, sizeof *plan->boundaries);
    if (!plan->boundaries)
        return PARTD_ENOMEM;
    plan->n_boundaries = nb; /* only now: partd_plan_free walks them */
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t j = 0; j < nb; j++) {
            partd_boundary *b = &plan->boundaries[j];
            if (pass == 1) {
                b->tensors = malloc((b->n_tensors ? b->n_tensors : 1) * sizeof *b->tensors);
                if (!b->tensors)
                    return PARTD_ENOMEM;
                b->after = md->op_node[cuts[j + 1] - 1];
            }
            b->n_tensors = 0;
            b->bytes = 0;
        }
        for (uint32_t v = 0; v < g->n_nodes; v++) {
            int32_t birth, last;
            if (!tensor_span(md, v, &birth, &last))
                continue;
            uint32_t j0, j1;
            crossed_cuts(cuts, S, birth, last, &j0, &j1);
            for (uint32_t j = j0; j < j1; j++) {
                partd_boundary *b = &plan->boundaries[j];
                if (pass == 1) {
                    b->tensors[b->n_tensors] = v;
                    b->bytes += g->output_bytes[v];
                }
                b->n_tensors++;
            }
        }
    }
    return PARTD_OK;
}
