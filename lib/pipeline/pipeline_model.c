/*
 * pipeline_model.c - the pipeline planner's cost model; see
 * pipeline_model.h.
 */
#include "pipeline_model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "partd/partd.h"

typedef struct occurrence {
    int32_t q, r;
    int64_t wc;
} occurrence;

typedef struct occ_list {
    occurrence *a;
    size_t n, cap;
} occ_list;

static int occ_push(occ_list *l, int32_t q, int32_t r, int64_t bytes, int param_class)
{
    if (bytes == 0)
        return 0; /* contributes nothing to any stage */
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 1024;
        occurrence *a = realloc(l->a, cap * sizeof *a);
        if (!a)
            return -1;
        l->a = a;
        l->cap = cap;
    }
    l->a[l->n++] = (occurrence){q, r, bytes * 2 + (param_class ? 1 : 0)};
    return 0;
}

/* A get_attr node's parameter bytes when it names no params: its output is
 * the parameter (FX sizes it once), so the larger of the two figures. */
static int64_t get_attr_bytes(const partd_graph *g, uint32_t v)
{
    return g->output_bytes[v] > g->param_bytes[v] ? g->output_bytes[v] : g->param_bytes[v];
}

/* Occurrences of placeholders, operation outputs and unnamed get_attr nodes:
 * one per reading operation, chained from the birth rank. */
static int collect_node_occurrences(const partd_pipeline_model *md, occ_list *l)
{
    const partd_graph *g = &md->req->graph;
    for (uint32_t v = 0; v < g->n_nodes; v++) {
        int32_t prev;
        int64_t bytes;
        int param_class = 0;
        if (partd_op_is_operation(g->op[v])) {
            prev = (int32_t)md->node_rank[v];
            bytes = g->output_bytes[v];
        } else if (g->op[v] == PARTD_OP_PLACEHOLDER) {
            prev = -1;
            bytes = g->output_bytes[v];
        } else if (g->op[v] == PARTD_OP_GET_ATTR && !g->has_params[v]) {
            prev = -1;
            bytes = get_attr_bytes(g, v);
            param_class = 1;
        } else {
            continue; /* output node; get_attr naming params: see below */
        }
        for (uint32_t k = g->user_off[v]; k < g->user_off[v + 1]; k++) {
            uint32_t r = md->node_rank[g->user_idx[k]];
            if (r == PARTD_NONE)
                continue;
            if (occ_push(l, prev, (int32_t)r, bytes, param_class))
                return -1;
            prev = (int32_t)r;
        }
    }
    return 0;
}

/* Occurrences of named parameters: read by the operations that name them and
 * by the operations that read a get_attr node naming them. */
static int collect_param_occurrences(const partd_pipeline_model *md, occ_list *l)
{
    const partd_graph *g = &md->req->graph;
    if (g->n_params == 0)
        return 0;
    int32_t *last = malloc(g->n_params * sizeof *last);
    if (!last)
        return -1;
    for (uint32_t x = 0; x < g->n_params; x++)
        last[x] = -1;
    int rc = 0;
    for (uint32_t r = 0; r < md->m && rc == 0; r++) {
        uint32_t v = md->op_node[r];
        /* k == in_off[v+1] stands for v itself. */
        for (uint32_t k = g->in_off[v]; k <= g->in_off[v + 1] && rc == 0; k++) {
            uint32_t src = k < g->in_off[v + 1] ? g->in_idx[k] : v;
            if (src != v && g->op[src] != PARTD_OP_GET_ATTR)
                continue;
            for (uint32_t j = g->par_off[src]; j < g->par_off[src + 1]; j++) {
                uint32_t x = g->par_idx[j];
                if (last[x] == (int32_t)r)
                    continue; /* already read by this operation */
                rc = occ_push(l, last[x], (int32_t)r, g->param_size[x], 1);
                last[x] = (int32_t)r;
                if (rc)
                    break;
            }
        }
    }
    free(last);
    return rc;
}

/* Counting sort of the occurrences into the by-reader and by-q groups. */
static int group_occurrences(partd_pipeline_model *md, const occ_list *l)
{
    uint32_t m = md->m;
    md->r_off = calloc(m + 2, sizeof *md->r_off);
    md->q_off = calloc(m + 2, sizeof *md->q_off);
    size_t n = l->n ? l->n : 1;
    md->r_q = malloc(n * sizeof *md->r_q);
    md->r_wc = malloc(n * sizeof *md->r_wc);
    md->q_r = malloc(n * sizeof *md->q_r);
    md->q_wc = malloc(n * sizeof *md->q_wc);
    if (!md->r_off || !md->q_off || !md->r_q || !md->r_wc || !md->q_r || !md->q_wc)
        return -1;
    for (size_t i = 0; i < l->n; i++) {
        md->r_off[l->a[i].r + 1]++;
        if (l->a[i].q >= 0)
            md->q_off[l->a[i].q + 1]++;
    }
    for (uint32_t i = 0; i < m; i++) {
        md->r_off[i + 1] += md->r_off[i];
        md->q_off[i + 1] += md->q_off[i];
    }
    md->r_off[m + 1] = md->r_off[m];
    md->q_off[m + 1] = md->q_off[m];
    uint32_t *rf = malloc((m + 1) * sizeof *rf), *qf = malloc((m + 1) * sizeof *qf);
    if (!rf || !qf) {
        free(rf);
        free(qf);
        return -1;
    }
    memcpy(rf, md->r_off, (m + 1) * sizeof *rf);
    memcpy(qf, md->q_off, (m + 1) * sizeof *qf);
    for (size_t i = 0; i < l->n; i++) {
        const occurrence *o = &l->a[i];
        uint32_t k = rf[o->r]++;
        md->r_q[k] = o->q;
        md->r_wc[k] = o->wc;
        if (o->q >= 0) {
            k = qf[o->q]++;
            md->q_r[k] = o->r;
            md->q_wc[k] = o->wc;
        }
    }
    free(rf);
    free(qf);
    return 0;
}

static int build_occurrences(partd_pipeline_model *md)
{
    occ_list l = {0};
    int rc = collect_node_occurrences(md, &l);
    if (rc == 0)
        rc = collect_param_occurrences(md, &l);
    if (rc == 0)
        rc = group_occurrences(md, &l);
    free(l.a);
    return rc;
}

static int build_prefix_sums(partd_pipeline_model *md)
{
    const partd_graph *g = &md->req->graph;
    md->act = malloc((md->m + 1) * sizeof *md->act);
    md->own_param = malloc((md->m + 1) * sizeof *md->own_param);
    if (!md->act || !md->own_param)
        return -1;
    md->act[0] = md->own_param[0] = 0;
    for (uint32_t r = 0; r < md->m; r++) {
        uint32_t v = md->op_node[r];
        md->act[r + 1] = md->act[r] + g->output_bytes[v];
        md->own_param[r + 1] = md->own_param[r] + (g->has_params[v] ? 0 : g->param_bytes[v]);
    }
    return 0;
}

/* Distinct speeds of the stages' devices, the tick exponent (every X[i] and
 * X[i] / v below 2^61), and the tick prefix sums. */
static int build_ticks(partd_pipeline_model *md, partd_problem *problem)
{
    const partd_request *req = md->req;
    const partd_graph *g = &req->graph;
    md->speed = calloc(md->stages ? md->stages : 1, sizeof *md->speed);
    md->stage_speed = malloc(md->stages * sizeof *md->stage_speed);
    if (!md->speed || !md->stage_speed)
        return PARTD_ENOMEM;
    for (uint32_t s = 0; s < md->stages; s++) {
        double v = req->devices[s].speed;
        uint32_t i = 0;
        while (i < md->n_speeds && md->speed[i] != v)
            i++;
        if (i == md->n_speeds)
            md->speed[md->n_speeds++] = v;
        md->stage_speed[s] = i;
    }
    md->time_prefix = malloc((md->m + 1) * sizeof *md->time_prefix);
    if (!md->time_prefix)
        return PARTD_ENOMEM;
    md->time_prefix[0] = 0;
    for (uint32_t r = 0; r < md->m; r++)
        md->time_prefix[r + 1] = md->time_prefix[r] + partd_node_time_ms(g, md->op_node[r]);
    double total = md->time_prefix[md->m];
    double slowest = md->speed[0];
    for (uint32_t i = 1; i < md->n_speeds; i++)
        if (md->speed[i] < slowest)
            slowest = md->speed[i];
    double worst = total / (slowest < 1 ? slowest : 1);
    if (!isfinite(worst)) {
        uint32_t s = 0;
        while (req->devices[s].speed != slowest)
            s++;
        char ptr[64];
        snprintf(ptr, sizeof ptr, "/devices/%u/speed", s);
        partd_problem_set(problem, 422, "invalid-request", "Invalid request",
                          "the graph's latencies divided by a device's speed overflow");
        partd_problem_add(problem, ptr, "too small for the graph's latencies");
        return PARTD_EINVALID;
    }
    int e = 0;
    if (worst > 0)
        frexp(worst, &e); /* worst < 2^e */
    md->tick_exp = 60 - e;
    if (md->tick_exp > 60)
        md->tick_exp = 60;
    md->tick_ms = ldexp(1.0, -md->tick_exp);
    int64_t *t = md->ticks = malloc((md->m + 1) * sizeof *t);
    if (!t)
        return PARTD_ENOMEM;
    t[0] = 0;
    for (uint32_t r = 0; r < md->m; r++)
        t[r + 1] = t[r] + llround(ldexp(partd_node_time_ms(g, md->op_node[r]), md->tick_exp));
    return PARTD_OK;
}

/* DeepSpeed's partition_uniform: equal chunks, the first (m mod S) stages
 * one operation larger. */
static void uniform_targets(partd_pipeline_model *md)
{
    int32_t chunk = (int32_t)(md->m / md->stages), residual = (int32_t)(md->m % md->stages);
    for (uint32_t s = 0; s < md->stages; s++)
        md->target[s] = chunk + ((int32_t)s < residual ? 1 : 0);
}

static int build_stage_constants(partd_pipeline_model *md, const int32_t *cuts, uint32_t n_cuts)
{
    const partd_request *req = md->req;
    const partd_pipeline_options *po = &req->options.pipeline;
    uint32_t S = md->stages;
    md->k_act = malloc(S * sizeof *md->k_act);
    md->mem_limit = malloc(S * sizeof *md->mem_limit);
    md->target = malloc(S * sizeof *md->target);
    md->next_cut = malloc((md->m + 1) * sizeof *md->next_cut);
    if (!md->k_act || !md->mem_limit || !md->target || !md->next_cut)
        return -1;
    for (uint32_t s = 0; s < S; s++) {
        int64_t k = 1;
        if (po->schedule == PARTD_SCHEDULE_GPIPE)
            k = po->microbatches;
        else if (po->schedule == PARTD_SCHEDULE_1F1B)
            k = po->microbatches < S - s ? po->microbatches : S - s;
        md->k_act[s] = k;
        md->mem_limit[s] = req->devices[s].memory_bytes;
    }
    uniform_targets(md);
    uint32_t c = 0;
    for (uint32_t a = 0; a <= md->m; a++) {
        while (c < n_cuts && cuts[c] <= (int32_t)a)
            c++;
        md->next_cut[a] = c < n_cuts ? cuts[c] : (int32_t)md->m;
    }
    return 0;
}

static int build_ranks(partd_pipeline_model *md)
{
    const partd_graph *g = &md->req->graph;
    md->op_node = malloc((md->m ? md->m : 1) * sizeof *md->op_node);
    md->node_rank = malloc((g->n_nodes ? g->n_nodes : 1) * sizeof *md->node_rank);
    if (!md->op_node || !md->node_rank)
        return -1;
    uint32_t r = 0;
    for (uint32_t v = 0; v < g->n_nodes; v++) {
        if (partd_op_is_operation(g->op[v])) {
            md->node_rank[v] = r;
            md->op_node[r++] = v;
        } else {
            md->node_rank[v] = PARTD_NONE;
        }
    }
    return 0;
}

int partd_pipeline_model_build(partd_pipeline_model *md, const partd_request *req, const int32_t *cuts,
                   uint32_t n_cuts, partd_problem *problem)
{
    memset(md, 0, sizeof *md);
    md->req = req;
    md->m = req->graph.n_ops;
    md->stages = req->options.pipeline.stages;
    md->param_factor = req->options.pipeline.param_factor;
    md->ms_per_byte = 1000.0 / req->options.transfer_bytes_per_sec;
    md->objective = (partd_pipeline_objective)req->options.pipeline.balance_by;
    if (build_ranks(md) || build_prefix_sums(md) || build_occurrences(md) ||
        build_stage_constants(md, cuts, n_cuts))
        return PARTD_ENOMEM;
    return build_ticks(md, problem);
}

void partd_pipeline_model_free(partd_pipeline_model *md)
{
    free(md->op_node);
    free(md->node_rank);
    free(md->act);
    free(md->own_param);
    free(md->time_prefix);
    free(md->ticks);
    free(md->speed);
    free(md->stage_speed);
    free(md->r_off);
    free(md->r_q);
    free(md->r_wc);
    free(md->q_off);
    free(md->q_r);
    free(md->q_wc);
    free(md->next_cut);
    free(md->k_act);
    free(md->mem_limit);
    free(md->target);
    memset(md, 0, sizeof *md);
}
