/*
 * training.c - the training planner's entry: model, search, and the plan
 * or the problem document; the request checks that need the graph; see
 * training.h.
 */
#include "training.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "partd/partd.h"
#include "training_internal.h"
#include "training_search.h"

/* ---- the plan ------------------------------------------------------------------ */

typedef struct builder {
    const partd_training_model *md;
    partd_training_cfg c;
    const partd_training_plan *p;
    partd_plan *plan;
    partd_training_result *tr;
    double *busy;
    int64_t *mem;
    uint32_t *node_part;
} builder;

/* memory = N // M + ceil(param_factor * P + (N % M) / M), as training_eval.c. */
static int64_t bytes_of(const partd_training_model *md, int64_t N, int64_t P)
{
    int64_t M = md->M;
    double pd = ceil(md->opt->param_factor * (double)P + (double)(N % M) / (double)M);
    return N / M + (pd < 0x1p62 ? (int64_t)pd : INT64_MAX / 4);
}

static int stage_figures(builder *bd, uint32_t j, const int64_t *stage_peak)
{
    const partd_training_model *md = bd->md;
    partd_training_cfg *c = &bd->c;
    const partd_training_fig *g = &c->fig[j];
    partd_training_stage *st = &bd->tr->stages[j];
    const partd_training_ckpt *x = &bd->p->x[j];
    st->rank = c->rank[j];
    st->first_unit = g->a;
    st->n_units = g->b - g->a;
    st->checkpointed = malloc((g->b - g->a) * sizeof *st->checkpointed);
    if (!st->checkpointed)
        return PARTD_ENOMEM;
    int rc = partd__training_ckpt_units(&c->cs, g->a, g->b, x, st->checkpointed,
                                        &st->n_checkpointed);
    if (rc != PARTD_OK)
        return rc;
    st->forward_ms = c->F[j];
    st->backward_ms = c->B[j];
    st->input_grad_ms = c->I[j];
    st->weight_grad_ms = c->W[j];
    st->recompute_ms = st->n_checkpointed ? c->R[j] : 0.0;
    st->send_ms = c->delta[j];
    st->time_ms = st->forward_ms + st->backward_ms + st->recompute_ms;
    double pf = md->opt->param_factor;
    st->param_memory_bytes = (int64_t)ceil(pf * (double)g->params);
    st->input_memory_bytes = g->in / md->M;
    st->activation_memory_bytes = (g->act - x->D) / md->M;
    st->memory_bytes = bytes_of(md, stage_peak[j], g->params);
    return PARTD_OK;
}

static int fill_part(builder *bd, uint32_t j)
{
    const partd_training_model *md = bd->md;
    const partd_training_fig *g = &bd->c.fig[j];
    const partd_training_stage *st = &bd->tr->stages[j];
    partd_part *pt = &bd->plan->parts[j];
    int32_t lo = md->units[g->a].lo, hi = md->units[g->b - 1].hi;
    pt->n_nodes = (uint32_t)(hi - lo);
    pt->nodes = malloc(pt->n_nodes * sizeof *pt->nodes);
    pt->devices = malloc(sizeof *pt->devices);
    if (!pt->nodes || !pt->devices)
        return PARTD_ENOMEM;
    for (int32_t r = lo; r < hi; r++) {
        pt->nodes[r - lo] = md->pl.op_node[r];
        bd->node_part[md->pl.op_node[r]] = j;
    }
    pt->n_devices = 1;
    pt->devices[0] = bd->c.dev[st->rank];
    pt->memory_bytes = st->memory_bytes;
    pt->param_bytes = g->params;
    pt->compute_ms = st->time_ms;
    pt->transfer_in_bytes = g->in;
    pt->time_ms = st->time_ms;
    bd->plan->balance[j] = pt->n_nodes;
    return PARTD_OK;
}

static int fill_schedule(builder *bd)
{
    const partd_training_lists *l = &bd->c.lists;
    partd_training_result *tr = bd->tr;
    tr->action_off = malloc((l->S + 1) * sizeof *tr->action_off);
    tr->action_stage = malloc((l->n ? l->n : 1) * sizeof *tr->action_stage);
    tr->action_mb = malloc((l->n ? l->n : 1) * sizeof *tr->action_mb);
    tr->action_kind = malloc(l->n ? l->n : 1);
    if (!tr->action_off || !tr->action_stage || !tr->action_mb || !tr->action_kind)
        return PARTD_ENOMEM;
    memcpy(tr->action_off, l->off, (l->S + 1) * sizeof *l->off);
    for (uint32_t i = 0; i < l->n; i++) {
        tr->action_stage[i] = l->act[i].stage;
        tr->action_mb[i] = l->act[i].mb;
        tr->action_kind[i] = l->act[i].kind;
    }
    tr->schedule = l->schedule;
    tr->virtual_stages = l->v;
    return PARTD_OK;
}

static void fill_summary(builder *bd, const partd_training_found *f)
{
    const partd_training_model *md = bd->md;
    partd_training_result *tr = bd->tr;
    partd_summary *s = &bd->plan->summary;
    double sum = 0, max = 0;
    for (uint32_t r = 0; r < tr->n_ranks; r++) {
        sum += tr->ranks[r].busy_ms;
        max = tr->ranks[r].busy_ms > max ? tr->ranks[r].busy_ms : max;
        if (tr->ranks[r].memory_bytes > s->peak_memory_bytes)
            s->peak_memory_bytes = tr->ranks[r].memory_bytes;
    }
    for (uint32_t j = 0; j < bd->plan->n_parts; j++)
        s->transfer_bytes += bd->plan->parts[j].transfer_in_bytes;
    tr->step_ms = bd->p->step;
    tr->bottleneck_ms = max;
    tr->bubble_fraction =
        tr->step_ms > 0 ? 1.0 - sum / ((double)tr->n_ranks * tr->step_ms) : 0.0;
    tr->optimal = f->optimal;
    tr->lower_bound_ms = f->optimal ? tr->step_ms : f->lower_bound;
    tr->gap = tr->step_ms > 0 ? (tr->step_ms - tr->lower_bound_ms) / tr->step_ms : 0.0;
    if (tr->gap < 0)
        tr->gap = 0;
    tr->microbatches = md->M;
    tr->unit_depth = md->depth;
    tr->checkpoint = md->opt->checkpoint;
    s->bottleneck_ms = max;
    s->total_ms = tr->step_ms;
    s->optimal = f->optimal;
}

static int build_result(builder *bd, const partd_training_found *f)
{
    const partd_training_model *md = bd->md;
    partd_training_cfg *c = &bd->c;
    partd_training_result *tr = bd->tr;
    uint32_t V = c->V, S = c->S;
    partd__training_eval_stages(md, c, bd->p->cut);
    partd_training_plan p = {0};
    int rc = partd__training_plan_alloc(&p, S, V);
    int64_t *stage_peak = calloc(V, sizeof *stage_peak);
    if (rc != PARTD_OK || !stage_peak) {
        partd__training_plan_free(&p);
        free(stage_peak);
        return PARTD_ENOMEM;
    }
    partd__training_plan_copy(&p, bd->p);
    partd__training_eval_plan(md, c, &p, bd->busy, bd->mem);
    for (uint32_t r = 0; r < S; r++) {
        int64_t N;
        partd__training_sim_memory(&c->sim, r, c->held_c, c->held_u, c->trans,
                                   partd__training_checkpointed(md), &N, stage_peak, NULL);
        tr->ranks[r] = (partd_training_rank){c->dev[r], bd->mem[r], bd->busy[r]};
    }
    /* the plan timed again must be the plan the search found */
    if (p.step != bd->p->step || !p.feasible)
        rc = PARTD_EINTERNAL;
    partd__training_plan_free(&p);
    for (uint32_t j = 0; j < V && rc == PARTD_OK; j++)
        rc = stage_figures(bd, j, stage_peak);
    for (uint32_t j = 0; j < V && rc == PARTD_OK; j++)
        rc = fill_part(bd, j);
    free(stage_peak);
    if (rc == PARTD_OK)
        rc = fill_schedule(bd);
    if (rc == PARTD_OK)
        fill_summary(bd, f);
    return rc;
}

static int build_plan(partd_training_model *md, const partd_training_found *f,
                      partd_plan **out)
{
    const partd_request *req = md->req;
    const partd_training_plan *p = &f->best;
    uint32_t V = p->V;
    builder bd = {md, {0}, p, NULL, NULL, NULL, NULL, NULL};
    int rc = partd__training_cfg_build(&bd.c, md, p->sched, p->S, p->v, p->dev);
    if (rc != PARTD_OK)
        return rc;
    bd.plan = partd_plan_alloc(PARTD_MODE_TRAINING, V);
    bd.tr = calloc(1, sizeof *bd.tr);
    bd.busy = calloc(p->S, sizeof *bd.busy);
    bd.mem = calloc(p->S, sizeof *bd.mem);
    bd.node_part = malloc((req->graph.n_nodes ? req->graph.n_nodes : 1) * sizeof *bd.node_part);
    int32_t *cuts = malloc((V + 1) * sizeof *cuts);
    rc = PARTD_ENOMEM;
    if (!bd.plan || !bd.tr || !bd.busy || !bd.mem || !bd.node_part || !cuts ||
        !(bd.plan->balance = malloc(V * sizeof *bd.plan->balance)) ||
        !(bd.tr->stages = calloc(V, sizeof *bd.tr->stages)) ||
        !(bd.tr->ranks = calloc(p->S, sizeof *bd.tr->ranks)))
        goto out;
    bd.plan->training = bd.tr;
    bd.tr->n_stages = V;
    bd.tr->n_ranks = p->S;
    for (uint32_t v = 0; v < req->graph.n_nodes; v++)
        bd.node_part[v] = PARTD_NONE;
    rc = build_result(&bd, f);
    for (uint32_t j = 0; j < V; j++)
        cuts[j] = md->units[p->cut[j]].lo;
    cuts[V] = (int32_t)md->pl.m;
    if (rc == PARTD_OK) {
        partd_pipeline_model pl = md->pl; /* shares the arrays; only the stage count differs */
        pl.stages = V;
        rc = partd_pipeline_boundaries_fill(&pl, cuts, bd.plan);
    }
    if (rc == PARTD_OK)
        rc = partd_plan_link(req, bd.node_part, bd.plan);
    if (rc == PARTD_OK) {
        bd.tr->n_units = md->n_units;
        bd.tr->unit_names = md->unit_name; /* the plan takes the names */
        md->unit_name = NULL;
    }
out:
    if (!bd.plan || !bd.plan->training)
        partd_plan_training_free(bd.tr);
    free(bd.busy);
    free(bd.mem);
    free(bd.node_part);
    free(cuts);
    partd__training_cfg_free(&bd.c);
    if (rc != PARTD_OK) {
        partd_plan_free(bd.plan);
        return rc;
    }
    *out = bd.plan;
    return PARTD_OK;
}

/* ---- no plan fits ------------------------------------------------------------- */

static int report_shortfall(const partd_training_model *md, const partd_training_found *f,
                            partd_problem *pb)
{
    const partd_request *req = md->req;
    const partd_training_plan *p = &f->best;
    partd_training_cfg c;
    int rc = partd__training_cfg_build(&c, md, p->sched, p->S, p->v, p->dev);
    int64_t *mem = calloc(p->S, sizeof *mem);
    partd_training_plan q = {0};
    if (rc == PARTD_OK && (!mem || partd__training_plan_alloc(&q, p->S, p->V) != PARTD_OK))
        rc = PARTD_ENOMEM;
    if (rc == PARTD_OK) {
        partd__training_plan_copy(&q, p);
        partd__training_eval_stages(md, &c, q.cut);
        partd__training_eval_plan(md, &c, &q, NULL, mem);
        uint32_t r = q.short_rank, dev = p->dev[r];
        char need[PARTD_PROBLEM_BYTES_CAP], has[PARTD_PROBLEM_BYTES_CAP], by[PARTD_PROBLEM_BYTES_CAP];
        partd_problem_set(pb, 422, "infeasible", "No feasible plan",
                          "no training plan fits the devices' memory; in the plan needing the "
                          "least memory found (%s, %u rank%s, %u stage%s per rank), rank %u on "
                          "device \"%s\" needs %s and has %s: short by %s",
                          partd_training_schedule_name(p->sched), p->S, p->S == 1 ? "" : "s",
                          p->v, p->v == 1 ? "" : "s", r, partd_device_name(req, dev),
                          partd_problem_bytes(need, (double)mem[r]),
                          partd_problem_bytes(has, (double)req->devices[dev].memory_bytes),
                          partd_problem_bytes(by, (double)q.shortfall));
        partd_problem_set_shortfall(pb, mem[r], req->devices[dev].memory_bytes);
        for (uint32_t k = 0; k < p->S; k++) {
            int64_t sh = mem[k] - req->devices[p->dev[k]].memory_bytes;
            if (sh <= 0)
                continue;
            char ptr[64];
            snprintf(ptr, sizeof ptr, "/devices/%u/memory_bytes", p->dev[k]);
            partd_problem_add(pb, ptr, "rank %u on device \"%s\" needs %s: short by %s", k,
                              partd_device_name(req, p->dev[k]),
                              partd_problem_bytes(need, (double)mem[k]),
                              partd_problem_bytes(by, (double)sh));
        }
    }
    partd__training_plan_free(&q);
    free(mem);
    partd__training_cfg_free(&c);
    return rc == PARTD_OK ? PARTD_EINFEASIBLE : rc;
}

/* ---- entry ---------------------------------------------------------------------- */

int partd__training_stats_run(const partd_request *req, const partd_cancel *cancel,
                              partd_plan **out, partd_problem *problem,
                              partd_training_stats *stats)
{
    *out = NULL;
    partd_training_model md;
    partd_training_found f = {0};
    int rc = partd_training_validate(req, problem);
    if (rc != PARTD_OK) {
        if (rc == PARTD_EINVALID)
            partd_problem_set(problem, 422, "invalid-request", "Invalid request",
                              "the training options do not fit the graph");
        return rc;
    }
    rc = partd__training_model_build(&md, req, problem);
    if (stats) {
        memset(stats, 0, sizeof *stats);
        md.stats = stats;
    }
    if (rc == PARTD_OK)
        rc = partd__training_search(&md, cancel, &f);
    if (rc == PARTD_OK && !f.best.cut)
        rc = PARTD_EINTERNAL; /* validation left a configuration to search */
    else if (rc == PARTD_OK && !f.found)
        rc = report_shortfall(&md, &f, problem);
    else if (rc == PARTD_OK)
        rc = build_plan(&md, &f, out);
    if (rc == PARTD_ETOOBIG && !problem->status) {
        partd_problem_set(problem, 422, "search-limit", "Search limit",
                          "a stage has too many distinct units for the exact checkpoint "
                          "search (more than %u Pareto points); set "
                          "options.training.unit_depth or options.training.checkpoint",
                          PARTD_TRAINING_MAX_FRONTIER);
        partd_problem_add(problem, "/options/training/checkpoint", "too many distinct units");
    }
    if (rc == PARTD_EINTERNAL)
        partd_problem_set(problem, 500, "internal-error", "Internal error",
                          "the training planner found its plan inconsistent; please report "
                          "this request");
    partd__training_found_free(&f);
    partd__training_model_free(&md);
    return rc;
}

int partd_training(const partd_request *req, const partd_cancel *cancel, partd_plan **out,
                   partd_problem *problem)
{
    return partd__training_stats_run(req, cancel, out, problem, NULL);
}

uint32_t partd_training_default_depth(const partd_request *req)
{
    return partd__training_units_default_depth(req);
}

/* The model of req, for the tools below (they have no problem to fill). */
static int model_quiet(partd_training_model *md, const partd_request *req)
{
    partd_problem pb;
    partd_problem_init(&pb);
    int rc = partd__training_model_build(md, req, &pb);
    partd_problem_free(&pb);
    return rc;
}

int partd__training_units(const partd_request *req, char ***names, uint32_t **first_rank,
                          uint32_t *n, uint32_t *depth)
{
    partd_training_model md;
    int rc = model_quiet(&md, req);
    if (rc != PARTD_OK) {
        partd__training_model_free(&md);
        return rc;
    }
    *first_rank = malloc((md.n_units + 1) * sizeof **first_rank);
    if (!*first_rank) {
        partd__training_model_free(&md);
        return PARTD_ENOMEM;
    }
    for (uint32_t u = 0; u < md.n_units; u++)
        (*first_rank)[u] = (uint32_t)md.units[u].lo;
    (*first_rank)[md.n_units] = md.pl.m;
    *names = md.unit_name;
    *n = md.n_units;
    *depth = md.depth;
    md.unit_name = NULL;
    partd__training_model_free(&md);
    return PARTD_OK;
}

int partd__training_time_plan(const partd_request *req, partd_training_schedule s, uint32_t S,
                              uint32_t v, const uint32_t *dev, const uint32_t *cut,
                              double *step, int *fits)
{
    partd_training_model md;
    int rc = model_quiet(&md, req);
    partd_training_cfg c = {0};
    partd_training_plan p = {0};
    if (rc == PARTD_OK)
        rc = partd__training_cfg_build(&c, &md, s, S, v, dev);
    if (rc == PARTD_OK)
        rc = partd__training_plan_alloc(&p, S, c.V);
    if (rc == PARTD_OK) {
        memcpy(p.cut, cut, (c.V + 1) * sizeof *cut);
        partd__training_eval_stages(&md, &c, p.cut);
        rc = partd__training_eval_choose(&md, &c, &p);
        *step = p.step;
        *fits = p.feasible;
    }
    partd__training_plan_free(&p);
    partd__training_cfg_free(&c);
    partd__training_model_free(&md);
    return rc;
}
