/*
 * training.c - the training planner's entry: model, candidate stages, search,
 * and the plan or the problem document; see training.h.
 */
#include "training.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "partd.h"
#include "training_model.h"
#include "training_search.h"

void partd_training_result_free(partd_training_result *t)
{
    if (!t)
        return;
    for (uint32_t u = 0; t->unit_names && u < t->n_units; u++)
        free(t->unit_names[u]);
    free(t->unit_names);
    for (uint32_t s = 0; t->stages && s < t->n_stages; s++)
        free(t->stages[s].checkpointed);
    free(t->stages);
    free(t);
}

/* ---- the plan --------------------------------------------------------------- */

/* The stage figures of pick p, with its checkpoint set (fit: least time
 * among those that fit; else least memory). */
static int stage_figures(const tr_model *md, const tr_pick *pk, int fit,
                         partd_training_stage *st, tr_range *rg)
{
    tr_ckpt x;
    int rc = tr_stage_choose(md, pk->a, pk->b, pk->cls, pk->k, fit, rg, &x, &st->checkpointed,
                             &st->n_checkpointed);
    if (rc != PARTD_OK)
        return rc;
    double v = md->cls_speed[pk->cls], M = md->M;
    double c = tr_checkpointed_microbatches(md);
    st->first_unit = pk->a;
    st->n_units = pk->b - pk->a;
    st->in_flight = pk->k;
    st->forward_ms = rg->fwd / v / M;
    st->backward_ms = rg->bwd / v / M;
    st->recompute_ms = x.any ? c / M * (x.recompute / v) / M : 0.0;
    st->comm_ms = rg->comm_ms / M;
    st->time_ms = tr_stage_time(md, rg, &x, v);
    st->memory_bytes = tr_stage_memory(md, rg, &x, pk->k);
    tr_stage_memory_parts(md, rg, &x, pk->k, &st->input_memory_bytes,
                          &st->activation_memory_bytes);
    st->param_memory_bytes =
        st->memory_bytes - st->input_memory_bytes - st->activation_memory_bytes;
    return PARTD_OK;
}

static int fill_part(const tr_model *md, const tr_pick *pk, uint32_t p, const tr_range *rg,
                     const partd_training_stage *st, partd_plan *plan, uint32_t *node_part)
{
    partd_part *pt = &plan->parts[p];
    int32_t lo = md->units[pk->a].lo, hi = md->units[pk->b - 1].hi;
    pt->n_nodes = (uint32_t)(hi - lo);
    pt->nodes = malloc(pt->n_nodes * sizeof *pt->nodes);
    pt->devices = malloc(sizeof *pt->devices);
    if (!pt->nodes || !pt->devices)
        return PARTD_ENOMEM;
    for (int32_t r = lo; r < hi; r++) {
        pt->nodes[r - lo] = md->pl.op_node[r];
        node_part[md->pl.op_node[r]] = p;
    }
    pt->n_devices = 1;
    pt->devices[0] = pk->device;
    pt->memory_bytes = st->memory_bytes;
    pt->param_bytes = rg->params;
    pt->compute_ms = st->forward_ms + st->backward_ms + st->recompute_ms;
    pt->transfer_in_bytes = rg->in;
    pt->time_ms = st->time_ms;
    plan->balance[p] = pt->n_nodes;
    /* The search only picks stages that fit; a plan that does not is a bug. */
    return st->memory_bytes <= md->req->devices[pk->device].memory_bytes ? PARTD_OK
                                                                         : PARTD_EINTERNAL;
}

static void fill_summary(const tr_model *md, partd_plan *plan, partd_training_result *tr)
{
    partd_summary *s = &plan->summary;
    double sum = 0, max = 0;
    for (uint32_t p = 0; p < plan->n_parts; p++) {
        const partd_part *pt = &plan->parts[p];
        sum += pt->time_ms;
        if (pt->time_ms > max)
            max = pt->time_ms;
        s->transfer_bytes += pt->transfer_in_bytes;
        if (pt->memory_bytes > s->peak_memory_bytes)
            s->peak_memory_bytes = pt->memory_bytes;
    }
    double M = md->M;
    tr->step_ms = sum + (M - 1) * max;
    tr->bottleneck_ms = max;
    tr->bubble_fraction =
        tr->step_ms > 0 ? 1.0 - M * sum / ((double)plan->n_parts * tr->step_ms) : 0.0;
    s->bottleneck_ms = max;
    s->total_ms = tr->step_ms;
    s->optimal = 1;
    tr->microbatches = md->M;
    tr->unit_depth = md->depth;
    tr->schedule = md->opt->schedule;
    tr->checkpoint = md->opt->checkpoint;
}

static int build_plan(tr_model *md, const tr_solution *sol, partd_plan **out)
{
    const partd_request *req = md->req;
    uint32_t S = sol->S;
    partd_plan *plan = partd_plan_alloc(PARTD_MODE_TRAINING, S);
    uint32_t *node_part = malloc((req->graph.n_nodes ? req->graph.n_nodes : 1) *
                                 sizeof *node_part);
    int32_t *cuts = malloc((S + 1) * sizeof *cuts);
    partd_training_result *tr = calloc(1, sizeof *tr);
    int rc = PARTD_ENOMEM;
    if (!plan || !node_part || !cuts || !tr || !(plan->balance = malloc(S * sizeof *plan->balance)) ||
        !(tr->stages = calloc(S, sizeof *tr->stages)))
        goto out;
    plan->training = tr;
    tr->n_stages = S;
    for (uint32_t v = 0; v < req->graph.n_nodes; v++)
        node_part[v] = PARTD_NONE;
    rc = PARTD_OK;
    for (uint32_t p = 0; p < S && rc == PARTD_OK; p++) {
        tr_range rg;
        rc = stage_figures(md, &sol->stages[p], 1, &tr->stages[p], &rg);
        if (rc == PARTD_OK)
            rc = fill_part(md, &sol->stages[p], p, &rg, &tr->stages[p], plan, node_part);
        cuts[p] = md->units[sol->stages[p].a].lo;
    }
    cuts[S] = (int32_t)md->pl.m;
    if (rc == PARTD_OK) {
        pl_model pl = md->pl; /* shares the arrays; only the stage count differs */
        pl.stages = S;
        rc = pl_fill_boundaries(&pl, cuts, plan);
    }
    if (rc == PARTD_OK)
        rc = partd_plan_link(req, node_part, plan);
    if (rc == PARTD_OK) {
        fill_summary(md, plan, tr);
        tr->n_units = md->n_units;
        tr->unit_names = md->unit_name; /* the plan takes the names */
        md->unit_name = NULL;
    }
out:
    if (!plan || !plan->training)
        partd_training_result_free(tr);
    free(node_part);
    free(cuts);
    if (rc != PARTD_OK) {
        partd_plan_free(plan);
        return rc;
    }
    *out = plan;
    return PARTD_OK;
}

/* ---- no plan fits ----------------------------------------------------------- */

static int report_shortfall(const tr_model *md, const tr_solution *sol, partd_problem *pb)
{
    const partd_request *req = md->req;
    partd_training_stage *st = calloc(sol->S, sizeof *st);
    if (!st)
        return PARTD_ENOMEM;
    uint32_t worst = 0;
    int64_t worst_short = INT64_MIN;
    int rc = PARTD_OK;
    for (uint32_t p = 0; p < sol->S && rc == PARTD_OK; p++) {
        tr_range rg;
        rc = stage_figures(md, &sol->stages[p], 0, &st[p], &rg);
        int64_t sh = st[p].memory_bytes - req->devices[sol->stages[p].device].memory_bytes;
        if (rc == PARTD_OK && sh > worst_short) {
            worst_short = sh;
            worst = p;
        }
    }
    if (rc == PARTD_OK) {
        uint32_t dev = sol->stages[worst].device;
        partd_problem_set(pb, 422, "infeasible", "No feasible plan",
                          "no training plan fits the devices' memory; in the plan that "
                          "minimises the largest shortfall (%u stage%s, least memory "
                          "checkpointing), stage %u on device \"%s\" needs %lld bytes and "
                          "has %lld: short by %lld bytes",
                          sol->S, sol->S == 1 ? "" : "s", worst, partd_device_name(req, dev),
                          (long long)st[worst].memory_bytes,
                          (long long)req->devices[dev].memory_bytes, (long long)worst_short);
        for (uint32_t p = 0; p < sol->S; p++) {
            const tr_pick *pk = &sol->stages[p];
            int64_t sh = st[p].memory_bytes - req->devices[pk->device].memory_bytes;
            if (sh <= 0)
                continue;
            char ptr[64];
            snprintf(ptr, sizeof ptr, "/devices/%u/memory_bytes", pk->device);
            partd_problem_add(pb, ptr,
                              "stage %u (units \"%s\" to \"%s\") needs %lld bytes: short by "
                              "%lld bytes",
                              p, md->unit_name[pk->a], md->unit_name[pk->b - 1],
                              (long long)st[p].memory_bytes, (long long)sh);
        }
    }
    for (uint32_t p = 0; p < sol->S; p++)
        free(st[p].checkpointed);
    free(st);
    return rc == PARTD_OK ? PARTD_EINFEASIBLE : rc;
}

/* ---- entry ------------------------------------------------------------------ */

static int search_limit(const partd_request *req, partd_problem *pb)
{
    if (req->options.training.device_order_auto) {
        partd_problem_set(pb, 422, "search-limit", "Search limit",
                          "device_order auto: too many distinct kinds of devices (speed and "
                          "memory) for the exact search over stage counts per kind");
        partd_problem_add(pb, "/options/training/device_order",
                          "use \"given\", or fewer distinct kinds of devices");
    } else {
        partd_problem_set(pb, 422, "search-limit", "Search limit",
                          "too many units times stages for the exact search");
        partd_problem_add(pb, "/options/training/unit_depth",
                          "a smaller depth gives fewer units");
    }
    return PARTD_ETOOBIG;
}

int partd_training_stats_run(const partd_request *req, const partd_cancel *cancel,
                             partd_plan **out, partd_problem *problem,
                             partd_training_stats *stats)
{
    *out = NULL;
    tr_model md;
    tr_solution sol = {0};
    int rc = tr_model_build(&md, req, problem);
    if (stats) {
        memset(stats, 0, sizeof *stats);
        md.stats = stats;
    }
    if (rc == PARTD_OK)
        rc = tr_ranges_build(&md, 0, cancel, problem);
    if (rc == PARTD_OK)
        rc = tr_search(&md, cancel, &sol);
    if (rc == PARTD_OK && !sol.found) {
        rc = tr_ranges_build(&md, 1, cancel, problem);
        if (rc == PARTD_OK)
            rc = tr_search(&md, cancel, &sol);
        if (rc == PARTD_OK)
            rc = sol.found ? report_shortfall(&md, &sol, problem) : PARTD_EINTERNAL;
    } else if (rc == PARTD_OK) {
        rc = build_plan(&md, &sol, out);
    }
    if (rc == PARTD_ETOOBIG && sol.frontier_limit && !problem->status)
        tr_frontier_problem(problem);
    if (rc == PARTD_ETOOBIG && !problem->status)
        search_limit(req, problem);
    if (rc == PARTD_EINTERNAL)
        partd_problem_set(problem, 500, "internal-error", "Internal error",
                          "the training planner found its plan inconsistent; please report "
                          "this request");
    tr_solution_free(&sol);
    tr_model_free(&md);
    return rc;
}

int partd_training(const partd_request *req, const partd_cancel *cancel, partd_plan **out,
                   partd_problem *problem)
{
    return partd_training_stats_run(req, cancel, out, problem, NULL);
}

uint32_t partd_training_default_depth(const partd_request *req)
{
    return tr_default_depth(req);
}

int partd_training_units(const partd_request *req, char ***names, uint32_t **first_rank,
                         uint32_t *n, uint32_t *depth)
{
    partd_problem pb;
    partd_problem_init(&pb);
    tr_model md;
    int rc = tr_model_build(&md, req, &pb);
    partd_problem_free(&pb);
    if (rc != PARTD_OK && rc != PARTD_EINVALID) {
        tr_model_free(&md);
        return rc;
    }
    *first_rank = malloc((md.n_units + 1) * sizeof **first_rank);
    if (!*first_rank) {
        tr_model_free(&md);
        return PARTD_ENOMEM;
    }
    for (uint32_t u = 0; u < md.n_units; u++)
        (*first_rank)[u] = (uint32_t)md.units[u].lo;
    (*first_rank)[md.n_units] = md.pl.m;
    *names = md.unit_name;
    *n = md.n_units;
    *depth = md.depth;
    md.unit_name = NULL;
    tr_model_free(&md);
    return PARTD_OK;
}
