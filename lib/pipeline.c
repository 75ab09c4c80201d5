/*
 * pipeline.c - the exact pipeline-stage planner (mode "pipeline"); see
 * pipeline.h.
 *
 * This unit checks what only the planner can check (stages against devices
 * and operations, cut_after names), runs the search (pipeline_search.c) on
 * the cost model (pipeline_model.c), and turns the split into a plan:
 * partitions with the contract's figures, balance, boundaries, tied
 * parameters, summary. When no split fits the devices' memory it searches
 * again for the split minimising the largest shortfall and reports it.
 *
 * Where non-operation nodes sit (they belong to no partition):
 *   - cut_after naming a placeholder or get_attr node cuts after the last
 *     operation before it (an error when that leaves a stage empty);
 *   - boundaries: a placeholder is produced before stage 0, so it is live
 *     across every cut up to its last reader (it enters the pipeline at the
 *     first stage and is passed on); an operation's output is live across the
 *     cuts after it up to its last reader; the output node reads after the
 *     last stage, so graph outputs are live across every later cut;
 *     get_attr nodes are parameters held by each stage reading them, never
 *     live across a cut.
 *   - cut_after resolution: pipeline_cuts.c.
 */
#include "pipeline.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "partd.h"
#include "pipeline_cuts.h"
#include "pipeline_model.h"
#include "pipeline_search.h"

/* ---- validation ---------------------------------------------------------- */

static void invalid(partd_problem *pb)
{
    partd_problem_set(pb, 422, "invalid-request", "Invalid request",
                      "the pipeline options do not fit the graph and devices");
}

static int check_stages(const partd_request *req, partd_problem *pb)
{
    uint32_t S = req->options.pipeline.stages;
    const char *ptr = "/options/pipeline/stages";
    int bad = 0;
    if (S == 0) {
        partd_problem_add(pb, ptr, "must be at least 1");
        bad = 1;
    }
    if (S > req->n_devices) {
        partd_problem_add(pb, ptr, "%u stages need %u devices; there are %u", S, S,
                          req->n_devices);
        bad = 1;
    }
    if (S > req->graph.n_ops) {
        partd_problem_add(pb, ptr, "%u stages need %u operation nodes; the graph has %u", S,
                          S, req->graph.n_ops);
        bad = 1;
    }
    return bad;
}


/* ---- the plan ------------------------------------------------------------ */

static int fill_parts(const pl_model *md, const int32_t *cuts, partd_plan *plan,
                      uint32_t *node_part)
{
    const partd_request *req = md->req;
    partd_summary *sum = &plan->summary;
    double total = 0;
    for (uint32_t s = 0; s < md->stages; s++) {
        partd_part *pt = &plan->parts[s];
        int32_t a = cuts[s], e = cuts[s + 1];
        pt->n_nodes = (uint32_t)(e - a);
        pt->nodes = malloc(pt->n_nodes * sizeof *pt->nodes);
        pt->devices = malloc(sizeof *pt->devices);
        if (!pt->nodes || !pt->devices)
            return PARTD_ENOMEM;
        for (int32_t r = a; r < e; r++) {
            pt->nodes[r - a] = md->op_node[r];
            node_part[md->op_node[r]] = s;
        }
        pt->n_devices = 1;
        pt->devices[0] = s;
        pl_window w = {0, 0, 0, 0};
        pl_window_move(md, &w, a, e);
        pl_stage ev;
        pl_stage_eval(md, s, &w, &ev);
        pt->memory_bytes = ev.mem;
        pt->param_bytes = ev.params;
        pt->transfer_in_bytes = ev.recv;
        pt->compute_ms = ev.compute_ms;
        pt->time_ms = ev.time_ms;
        plan->balance[s] = pt->n_nodes;
        total += ev.time_ms;
        if (ev.time_ms > sum->bottleneck_ms)
            sum->bottleneck_ms = ev.time_ms;
        sum->transfer_bytes = partd_bytes_add(sum->transfer_bytes, ev.recv);
        if (ev.mem > sum->peak_memory_bytes)
            sum->peak_memory_bytes = ev.mem;
    }
    sum->total_ms =
        total + (double)(req->options.pipeline.microbatches - 1) * sum->bottleneck_ms;
    return PARTD_OK;
}

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
static int tensor_span(const pl_model *md, uint32_t v, int32_t *birth, int32_t *last)
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

int pl_fill_boundaries(const pl_model *md, const int32_t *cuts, partd_plan *plan)
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

static int build_plan(const pl_model *md, const int32_t *cuts, partd_plan **out)
{
    const partd_request *req = md->req;
    partd_plan *plan = partd_plan_alloc(PARTD_MODE_PIPELINE, md->stages);
    uint32_t *node_part = malloc((req->graph.n_nodes ? req->graph.n_nodes : 1) *
                                 sizeof *node_part);
    int rc = PARTD_ENOMEM;
    if (plan && node_part && (plan->balance = malloc(md->stages * sizeof *plan->balance))) {
        for (uint32_t v = 0; v < req->graph.n_nodes; v++)
            node_part[v] = PARTD_NONE;
        rc = fill_parts(md, cuts, plan, node_part);
        if (rc == PARTD_OK)
            rc = pl_fill_boundaries(md, cuts, plan);
        if (rc == PARTD_OK)
            rc = partd_plan_link(req, node_part, plan);
        plan->summary.optimal = 1;
    }
    free(node_part);
    if (rc != PARTD_OK) {
        partd_plan_free(plan);
        return rc;
    }
    *out = plan;
    return PARTD_OK;
}

/* ---- no feasible split --------------------------------------------------- */

static void report_shortfall(const pl_model *md, const int32_t *cuts, partd_problem *pb)
{
    const partd_request *req = md->req;
    uint32_t worst = 0;
    int64_t worst_short = INT64_MIN, worst_mem = 0;
    int64_t *mem = malloc(md->stages * sizeof *mem);
    for (uint32_t s = 0; s < md->stages; s++) {
        pl_window w = {0, 0, 0, 0};
        pl_window_move(md, &w, cuts[s], cuts[s + 1]);
        pl_stage ev;
        pl_stage_eval(md, s, &w, &ev);
        if (mem)
            mem[s] = ev.mem;
        if (ev.mem - md->mem_limit[s] > worst_short) {
            worst_short = ev.mem - md->mem_limit[s];
            worst = s;
            worst_mem = ev.mem;
        }
    }
    partd_problem_set(pb, 422, "infeasible", "No feasible plan",
                      "no split into %u stages fits the devices' memory; in the split that "
                      "minimises the largest shortfall, stage %u on device \"%s\" needs %lld "
                      "bytes and has %lld: short by %lld bytes",
                      md->stages, worst, partd_device_name(req, worst), (long long)worst_mem,
                      (long long)md->mem_limit[worst], (long long)worst_short);
    for (uint32_t s = 0; s < md->stages && mem; s++) {
        if (mem[s] <= md->mem_limit[s])
            continue;
        char ptr[64];
        snprintf(ptr, sizeof ptr, "/devices/%u/memory_bytes", s);
        partd_problem_add(pb, ptr,
                          "stage %u (operations \"%s\" to \"%s\") needs %lld bytes: short by "
                          "%lld bytes",
                          s, partd_node_name(req, md->op_node[cuts[s]]),
                          partd_node_name(req, md->op_node[cuts[s + 1] - 1]),
                          (long long)mem[s], (long long)(mem[s] - md->mem_limit[s]));
    }
    free(mem);
}

/* ---- entry --------------------------------------------------------------- */

int partd_pipeline(const partd_request *req, const partd_cancel *cancel, partd_plan **out,
                   partd_problem *problem)
{
    *out = NULL;
    int bad = check_stages(req, problem);
    int32_t *cuts = NULL;
    uint32_t n_cuts = 0;
    /* Decoding made both checks already (validate.c): these only guard
     * against a request built some other way. */
    int rc = partd_pipeline_resolve_cuts(req, &cuts, &n_cuts, problem);
    if (rc == PARTD_ENOMEM)
        return rc;
    if (bad || rc == PARTD_EINVALID) {
        free(cuts);
        invalid(problem);
        return PARTD_EINVALID;
    }
    pl_model md;
    rc = pl_model_build(&md, req, cuts, n_cuts, problem);
    free(cuts);
    int32_t *split = malloc((md.stages + 1) * sizeof *split);
    if (rc == PARTD_OK && !split)
        rc = PARTD_ENOMEM;
    pl_result res = {.cuts = split};
    if (rc == PARTD_OK)
        rc = pl_search(&md, cancel, &res);
    if (rc == PARTD_OK && !res.found) {
        md.objective = PL_OBJ_SHORTFALL;
        rc = pl_search(&md, cancel, &res);
        if (rc == PARTD_OK && !res.found)
            rc = PARTD_EINTERNAL; /* without memory limits a split always exists */
        if (rc == PARTD_OK) {
            report_shortfall(&md, split, problem);
            rc = PARTD_EINFEASIBLE;
        }
    } else if (rc == PARTD_OK) {
        rc = build_plan(&md, split, out);
    }
    if (rc == PARTD_EINTERNAL)
        partd_problem_set(problem, 500, "internal-error", "Internal error",
                          "the pipeline planner found its windows inconsistent; please "
                          "report this request");
    free(split);
    pl_model_free(&md);
    return rc;
}
