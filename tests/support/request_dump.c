/* request_dump.c - a decoded request as text; see request_dump.h. */
#include "request_dump.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "partd/partd.h"

static void u32s(FILE *f, const char *what, const uint32_t *a, size_t n)
{
    fprintf(f, "%s:", what);
    for (size_t i = 0; a && i < n; i++)
        fprintf(f, " %" PRIu32, a[i]);
    fputc('\n', f);
}

static void i64s(FILE *f, const char *what, const int64_t *a, size_t n)
{
    fprintf(f, "%s:", what);
    for (size_t i = 0; a && i < n; i++)
        fprintf(f, " %" PRId64, a[i]);
    fputc('\n', f);
}

static void f64s(FILE *f, const char *what, const double *a, size_t n)
{
    fprintf(f, "%s:", what);
    for (size_t i = 0; a && i < n; i++)
        fprintf(f, " %a", a[i]);
    fputc('\n', f);
}

static void u8s(FILE *f, const char *what, const uint8_t *a, size_t n)
{
    fprintf(f, "%s:", what);
    for (size_t i = 0; a && i < n; i++)
        fprintf(f, " %u", a[i]);
    fputc('\n', f);
}

char *tu_request_dump(const partd_request *r)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    fprintf(f, "strings %u\n", r->strings.count);
    for (uint32_t s = 0; s < r->strings.count; s++)
        fprintf(f, "%u=%s\n", s, partd_str(&r->strings, s));
    const partd_graph *g = &r->graph;
    uint32_t n = g->n_nodes;
    fprintf(f, "nodes %u ops %u output %u topo %d params %u\n", n, g->n_ops, g->output_node,
            g->order_was_topological, g->n_params);
    fprintf(f, "batch_size %lld\n", (long long)g->batch_size);
    u8s(f, "op", g->op, n);
    u32s(f, "name", g->name, n);
    u32s(f, "target", g->target, n);
    u32s(f, "module", g->module, n);
    u32s(f, "request_index", g->request_index, n);
    i64s(f, "output_bytes", g->output_bytes, n);
    i64s(f, "param_bytes", g->param_bytes, n);
    f64s(f, "latency", g->latency_ms, n);
    f64s(f, "mem_latency", g->mem_latency_ms, n);
    f64s(f, "backward", g->backward_ms, n);
    u8s(f, "has_backward", g->has_backward, n);
    f64s(f, "weight_grad", g->weight_grad_ms, n);
    u8s(f, "has_weight_grad", g->has_weight_grad, n);
    u8s(f, "has_params", g->has_params, n);
    u32s(f, "in_off", g->in_off, n + 1);
    u32s(f, "in_idx", g->in_idx, g->in_off ? g->in_off[n] : 0);
    u32s(f, "user_off", g->user_off, n + 1);
    u32s(f, "user_idx", g->user_idx, g->user_off ? g->user_off[n] : 0);
    u32s(f, "par_off", g->par_off, n + 1);
    u32s(f, "par_idx", g->par_idx, g->par_off ? g->par_off[n] : 0);
    u32s(f, "param_name", g->param_name, g->n_params);
    i64s(f, "param_size", g->param_size, g->n_params);
    for (uint32_t d = 0; d < r->n_devices; d++)
        fprintf(f, "device %u %" PRId64 " %" PRId64 " %a\n", r->devices[d].name,
                r->devices[d].memory_bytes, r->devices[d].logical_id, r->devices[d].speed);
    const partd_options *o = &r->options;
    fprintf(f, "mode %d rate %a\n", (int)o->mode, o->transfer_bytes_per_sec);
    fprintf(f, "pipeline %u %d %d %u %a\n", o->pipeline.stages, (int)o->pipeline.balance_by,
            (int)o->pipeline.schedule, o->pipeline.microbatches, o->pipeline.param_factor);
    u32s(f, "cut_after", o->pipeline.cut_after, o->pipeline.n_cut_after);
    fprintf(f, "sac %d %" PRId64 " %u %d %d %d %a %a %u\n", o->sac.enabled,
            o->sac.memory_budget_bytes, o->sac.world_size, o->sac.has_ac_units,
            o->sac.has_fsdp_units, o->sac.op_level, o->sac.time_limit_ms, o->sac.relative_gap,
            o->sac.frontier_points);
    u32s(f, "ac_units", o->sac.ac_units, o->sac.n_ac_units);
    u32s(f, "fsdp_units", o->sac.fsdp_units, o->sac.n_fsdp_units);
    const partd_training_options *t = &o->training;
    fprintf(f, "training %x %d %u %a %u %u %d %d %u %a %a\n", t->schedules, t->schedule_named,
            t->virtual_stages, t->weight_grad_fraction, t->microbatches, t->stages,
            t->device_order_auto, (int)t->checkpoint, t->unit_depth, t->backward_factor,
            t->param_factor);
    fprintf(f, "modules %s\ngraph_hash %s\ncache_key %s\n", r->modules ? "yes" : "no",
            r->graph_hash, r->cache_key);
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

char *tu_decode_outcome(int rc, const partd_request *r, const partd_problem *pb)
{
    if (rc == PARTD_EMALFORMED) {
        /* what is wrong, without where: see request_dump.h */
        const char *d = pb->detail ? pb->detail : "";
        const char *at = strstr(d, " (line ");
        int n = at ? (int)(at - d) : (int)strlen(d);
        size_t cap = (size_t)n + 64;
        char *out = malloc(cap);
        if (out)
            snprintf(out, cap, "rc %d\n%d %.*s", rc, pb->status, n, d);
        return out;
    }
    char *body = rc == 0 && r ? tu_request_dump(r) : partd_problem_to_json(pb, NULL);
    if (!body)
        return NULL;
    size_t n = snprintf(NULL, 0, "rc %d\n%s", rc, body) + 1;
    char *out = malloc(n);
    if (out)
        snprintf(out, n, "rc %d\n%s", rc, body);
    free(body);
    return out;
}
