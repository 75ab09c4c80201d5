/*
 * training_validate.c - the checks of a training request that need its
 * graph, made before a job exists (contract: a 422 names the member); see
 * training_types.h.
 */
#include <stdio.h>

#include "partd/partd.h"
#include "training_internal.h"
#include "training_schedule.h"

/* 0 <= weight_grad_ms <= the node's backward time (decoding checked >= 0). */
static int check_weight_grad(const partd_request *req, partd_problem *pb)
{
    const partd_graph *g = &req->graph;
    int bad = 0;
    for (uint32_t v = 0; v < g->n_nodes; v++) {
        if (!g->has_weight_grad[v])
            continue;
        double b = g->has_backward[v] ? g->backward_ms[v]
                                      : req->options.training.backward_factor * partd_node_time_ms(g, v);
        if (g->weight_grad_ms[v] <= b)
            continue;
        char ptr[64];
        snprintf(ptr, sizeof ptr, "/graph/nodes/%u/weight_grad_ms", g->request_index[v]);
        partd_problem_add(pb, ptr, "%g ms is more than the node's backward time, %g ms",
                          g->weight_grad_ms[v], b);
        bad = 1;
    }
    return bad;
}

typedef struct space {
    uint32_t lo, hi, M, units;
    uint32_t v;                /* virtual_stages, 0 = auto */
} space;

/* Does schedule s run with some S in [lo, hi] and v, with S * v <= units?
 * *cond: 1 when the microbatches rule every S out, 0 when units do. */
static int runs(const space *sp, partd_training_schedule s, int *cond)
{
    uint32_t fixed = partd_training_schedule_v(s, 0);
    int m_ok = 0;
    for (uint32_t S = sp->lo; S <= sp->hi; S++)
        for (uint32_t v = 1; v <= PARTD_TRAINING_MAX_VIRTUAL; v++) {
            if ((fixed && v != fixed) || (!fixed && sp->v && v != sp->v))
                continue;
            if (!partd_training_schedule_allows(s, S, v, sp->M))
                continue;
            m_ok = 1;
            if ((uint64_t)S * v <= sp->units)
                return 1;
        }
    *cond = !m_ok;
    return 0;
}

static int check_schedules(const partd_request *req, partd_problem *pb)
{
    const partd_training_options *o = &req->options.training;
    uint32_t depth = o->unit_depth ? o->unit_depth : partd__training_units_default_depth(req);
    uint32_t units = partd__training_units_count(req, depth);
    uint32_t ndev = req->n_devices, most = ndev < units ? ndev : units;
    if (o->stages > units) {
        partd_problem_add(pb, "/options/training/stages",
                          "%u stages need %u units; the graph has %u at unit_depth %u", o->stages,
                          o->stages, units, depth);
        return 1;
    }
    space sp = {o->stages ? o->stages : 1, o->stages ? o->stages : most, o->microbatches, units,
                o->virtual_stages};
    int any = 0;
    for (int s = 0; s < PARTD_TRAINING_SCHEDULE_COUNT; s++) {
        if (!(o->schedules >> s & 1))
            continue;
        const char *name = partd_training_schedule_name(s);
        uint32_t fixed = partd_training_schedule_v(s, 0);
        if (o->schedule_named && fixed && o->virtual_stages && o->virtual_stages != fixed) {
            partd_problem_add(pb, "/options/training/virtual_stages",
                              "%s runs %u stage%s per rank, not %u", name, fixed,
                              fixed == 1 ? "" : "s", o->virtual_stages);
            return 1;
        }
        int cond = 0;
        if (runs(&sp, s, &cond)) {
            any = 1;
        } else if (o->schedule_named) {
            if (cond)
                partd_problem_add(pb, "/options/training/schedule",
                                  "%s %s: microbatches %u, stages %s%u", name,
                                  partd_training_schedule_condition(s), o->microbatches,
                                  o->stages ? "" : "at least ", sp.lo);
            else
                partd_problem_add(pb, "/options/training/schedule",
                                  "%s needs %s%u units (stages x stages per rank); the graph has "
                                  "%u at unit_depth %u",
                                  name, o->stages ? "" : "at least ",
                                  sp.lo * (fixed ? fixed : (o->virtual_stages ? o->virtual_stages : 1)),
                                  units, depth);
            return 1;
        }
    }
    if (!any) {
        partd_problem_add(pb, "/options/training/schedule",
                          "no schedule listed runs with microbatches %u, %s%u stages, "
                          "virtual_stages %u and %u units",
                          o->microbatches, o->stages ? "" : "at least ", sp.lo,
                          o->virtual_stages, units);
        return 1;
    }
    return 0;
}

int partd_training_validate(const partd_request *req, partd_problem *pb)
{
    if (req->options.mode != PARTD_MODE_TRAINING)
        return PARTD_OK;
    int bad = check_weight_grad(req, pb);
    bad |= check_schedules(req, pb);
    return bad ? PARTD_EINVALID : PARTD_OK;
}
