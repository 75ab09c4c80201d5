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

#include "partd/partd.h"
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

static int fill_parts(const partd_pipeline_model *md, const int32_t *cuts, partd_plan *plan,
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
        partd_pipeline_window w = {0, 0, 0, 0};
        partd_pipeline_window_move(md, &w, a, e);
        partd_pipeline_stage ev;
        partd_pipeline_stage_eval(md, s, &w, &ev);
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

static int build_plan(const partd_pipeline_model *md, const int32_t *cuts, partd_plan **out)
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
            rc = partd_pipeline_boundaries_fill(md, cuts, plan);
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

static void report_shortfall(const partd_pipeline_model *md, const int32_t *cuts, partd_problem *pb)
{
    const partd_request *req = md->req;
    uint32_t worst = 0;
    int64_t worst_short = INT64_MIN, worst_mem = 0;
    int64_t *mem = malloc(md->stages * sizeof *mem);
    for (uint32_t s = 0; s < md->stages; s++) {
        partd_pipeline_window w = {0, 0, 0, 0};
        partd_pipeline_window_move(md, &w, cuts[s], cuts[s + 1]);
        partd_pipeline_stage ev;
        partd_pipeline_stage_eval(md, s, &w, &ev);
        if (mem)
            mem[s] = ev.mem;
        if (ev.mem - md->mem_limit[s] > worst_short) {
            worst_short = ev.mem - md->mem_limit[s];
            worst = s;
            worst_mem = ev.mem;
        }
    }
    char need[PARTD_PROBLEM_BYTES_CAP], has[PARTD_PROBLEM_BYTES_CAP], by[PARTD_PROBLEM_BYTES_CAP];
    partd_problem_set(pb, 422, "infeasible", "No feasible plan",
                      "no split into %u stages fits the devices' memory; in the split that "
                      "minimises the largest shortfall, stage %u on device \"%s\" needs %s and "
                      "has %s: short by %s",
                      md->stages, worst, partd_device_name(req, worst),
                      partd_problem_bytes(need, (double)worst_mem),
                      partd_problem_bytes(has, (double)md->mem_limit[worst]),
                      partd_problem_bytes(by, (double)worst_short));
    partd_problem_set_shortfall(pb, worst_mem, md->mem_limit[worst]);
    for (uint32_t s = 0; s < md->stages && mem; s++) {
        if (mem[s] <= md->mem_limit[s])
            continue;
        char ptr[64];
        snprintf(ptr, sizeof ptr, "/devices/%u/memory_bytes", s);
        partd_problem_add(pb, ptr, "stage %u (operations \"%s\" to \"%s\") needs %s: short by %s",
                          s, partd_node_name(req, md->op_node[cuts[s]]),
                          partd_node_name(req, md->op_node[cuts[s + 1] - 1]),
                          partd_problem_bytes(need, (double)mem[s]),
                          partd_problem_bytes(by, (double)(mem[s] - md->mem_limit[s])));
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
    partd_pipeline_model md;
    rc = partd_pipeline_model_build(&md, req, cuts, n_cuts, problem);
    free(cuts);
    int32_t *split = malloc((md.stages + 1) * sizeof *split);
    if (rc == PARTD_OK && !split)
        rc = PARTD_ENOMEM;
    partd_pipeline_result res = {.cuts = split};
    if (rc == PARTD_OK)
        rc = partd__pipeline_search(&md, cancel, &res);
    if (rc == PARTD_OK && !res.found) {
        md.objective = PL_OBJ_SHORTFALL;
        rc = partd__pipeline_search(&md, cancel, &res);
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
    partd_pipeline_model_free(&md);
    return rc;
}
