/*
 * plan_types.c - allocating, freeing and linking plans, and their time
 * figures; see plan_types.h.
 */
#include "partd/plan_types.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "partd/partd.h"
#include "partd/training_types.h"
#include "sac/sac.h"

/* ---- allocation ---------------------------------------------------------- */

partd_plan *partd_plan_alloc(partd_mode mode, uint32_t n_parts)
{
    partd_plan *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->mode = mode;
    p->n_parts = n_parts;
    p->parts = calloc(n_parts ? n_parts : 1, sizeof *p->parts);
    if (!p->parts) {
        free(p);
        return NULL;
    }
    for (uint32_t i = 0; i < n_parts; i++)
        p->parts[i].first_module = PARTD_NONE;
    return p;
}

void partd_plan_training_free(partd_training_result *t)
{
    if (!t)
        return;
    for (uint32_t u = 0; t->unit_names && u < t->n_units; u++)
        free(t->unit_names[u]);
    free(t->unit_names);
    for (uint32_t s = 0; t->stages && s < t->n_stages; s++)
        free(t->stages[s].checkpointed);
    free(t->stages);
    free(t->ranks);
    free(t->action_off);
    free(t->action_stage);
    free(t->action_mb);
    free(t->action_kind);
    free(t);
}

void partd_plan_free(partd_plan *plan)
{
    if (!plan)
        return;
    for (uint32_t i = 0; i < plan->n_parts; i++) {
        partd_part *pt = &plan->parts[i];
        free(pt->nodes);
        free(pt->devices);
        free(pt->inputs);
        free(pt->outputs);
        free(pt->parents);
        free(pt->children);
    }
    free(plan->parts);
    free(plan->balance);
    for (uint32_t i = 0; i < plan->n_boundaries; i++)
        free(plan->boundaries[i].tensors);
    free(plan->boundaries);
    for (uint32_t i = 0; i < plan->n_tied; i++)
        free(plan->tied[i].parts);
    free(plan->tied);
    partd_sac_result_free(plan->sac);
    partd_plan_training_free(plan->training);
    for (uint32_t i = 0; i < plan->n_warnings; i++)
        free(plan->warnings[i].message);
    free(plan->warnings);
    free(plan);
}

int partd_plan_warn(partd_plan *plan, const char *code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *msg = n >= 0 ? malloc((size_t)n + 1) : NULL;
    partd_warning *w = msg ? realloc(plan->warnings, (plan->n_warnings + 1) * sizeof *w) : NULL;
    if (!w) {
        free(msg);
        return PARTD_ENOMEM;
    }
    va_start(ap, fmt);
    vsnprintf(msg, (size_t)n + 1, fmt, ap);
    va_end(ap);
    plan->warnings = w;
    w[plan->n_warnings++] = (partd_warning){code, msg};
    return PARTD_OK;
}

/* ---- linking partitions -------------------------------------------------- */

typedef struct u32vec {
    uint32_t *a;
    uint32_t n, cap;
} u32vec;

static int push(u32vec *v, uint32_t x)
{
    if (v->n == v->cap) {
        uint32_t cap = v->cap ? v->cap * 2 : 8;
        uint32_t *a = realloc(v->a, (size_t)cap * sizeof *a);
        if (!a)
            return -1;
        v->a = a;
        v->cap = cap;
    }
    v->a[v->n++] = x;
    return 0;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static void finish(u32vec *v, uint32_t **out, uint32_t *n)
{
    if (v->n)
        qsort(v->a, v->n, sizeof *v->a, cmp_u32);
    *out = v->a;
    *n = v->n;
}

/* One partition: stamp arrays are indexed by node and by partition and hold
 * (partition + 1) of the last partition that recorded the entry. */
static int link_part(const partd_graph *g, const uint32_t *node_part, uint32_t a,
                     partd_part *pt, uint32_t *node_stamp, uint32_t *parent_stamp,
                     uint32_t *child_stamp)
{
    u32vec in = {0}, out = {0}, par = {0}, chi = {0};
    uint32_t mark = a + 1;
    int rc = 0;
    for (uint32_t i = 0; i < pt->n_nodes && rc == 0; i++) {
        uint32_t v = pt->nodes[i];
        int read_elsewhere = 0;
        for (uint32_t k = g->in_off[v]; k < g->in_off[v + 1] && rc == 0; k++) {
            uint32_t u = g->in_idx[k], b = node_part[u];
            if (b == a)
                continue;
            if (node_stamp[u] != mark) {
                node_stamp[u] = mark;
                rc |= push(&in, u);
            }
            if (b != PARTD_NONE && parent_stamp[b] != mark) {
                parent_stamp[b] = mark;
                rc |= push(&par, b);
            }
        }
        for (uint32_t k = g->user_off[v]; k < g->user_off[v + 1] && rc == 0; k++) {
            uint32_t w = g->user_idx[k], b = node_part[w];
            if (b == a)
                continue;
            read_elsewhere = 1;
            if (b != PARTD_NONE && child_stamp[b] != mark) {
                child_stamp[b] = mark;
                rc |= push(&chi, b);
            }
        }
        if (read_elsewhere && rc == 0)
            rc |= push(&out, v);
    }
    finish(&in, &pt->inputs, &pt->n_inputs);
    finish(&out, &pt->outputs, &pt->n_outputs);
    finish(&par, &pt->parents, &pt->n_parents);
    finish(&chi, &pt->children, &pt->n_children);
    return rc ? PARTD_ENOMEM : PARTD_OK;
}

typedef struct param_use {
    uint32_t param, part;
} param_use;

static int cmp_use(const void *a, const void *b)
{
    const param_use *x = a, *y = b;
    if (x->param != y->param)
        return x->param < y->param ? -1 : 1;
    return x->part < y->part ? -1 : x->part > y->part;
}

/* Every (parameter, partition) pair: the partition's nodes name it, or read a
 * get_attr node that names it. */
static int collect_param_uses(const partd_request *req, const uint32_t *node_part,
                              param_use **out, size_t *n_out)
{
    const partd_graph *g = &req->graph;
    size_t cap = 64, n = 0;
    param_use *u = malloc(cap * sizeof *u);
    if (!u)
        return -1;
    for (uint32_t v = 0; v < g->n_nodes; v++) {
        uint32_t a = node_part[v];
        if (a == PARTD_NONE)
            continue;
        for (uint32_t k = g->in_off[v]; k <= g->in_off[v + 1]; k++) {
            uint32_t src = k < g->in_off[v + 1] ? g->in_idx[k] : v;
            if (src != v && g->op[src] != PARTD_OP_GET_ATTR)
                continue;
            for (uint32_t j = g->par_off[src]; j < g->par_off[src + 1]; j++) {
                if (n == cap) {
                    param_use *b = realloc(u, 2 * cap * sizeof *u);
                    if (!b) {
                        free(u);
                        return -1;
                    }
                    u = b;
                    cap *= 2;
                }
                u[n++] = (param_use){g->par_idx[j], a};
            }
        }
    }
    if (n)
        qsort(u, n, sizeof *u, cmp_use);
    *out = u;
    *n_out = n;
    return 0;
}

static int find_tied(const partd_request *req, const uint32_t *node_part, partd_plan *plan)
{
    param_use *u;
    size_t n;
    if (collect_param_uses(req, node_part, &u, &n) != 0)
        return PARTD_ENOMEM;
    u32vec parts = {0};
    int rc = PARTD_OK;
    for (size_t i = 0; i < n && rc == PARTD_OK;) {
        size_t j = i;
        parts.n = 0;
        for (; j < n && u[j].param == u[i].param; j++)
            if (!parts.n || parts.a[parts.n - 1] != u[j].part)
                if (push(&parts, u[j].part))
                    rc = PARTD_ENOMEM;
        if (rc == PARTD_OK && parts.n > 1) {
            partd_tied *t = realloc(plan->tied, (plan->n_tied + 1) * sizeof *t);
            uint32_t *copy = malloc(parts.n * sizeof *copy);
            if (!t || !copy) {
                free(copy);
                if (t)
                    plan->tied = t;
                rc = PARTD_ENOMEM;
                break;
            }
            plan->tied = t;
            memcpy(copy, parts.a, parts.n * sizeof *copy);
            plan->tied[plan->n_tied++] = (partd_tied){u[i].param, parts.n, copy};
        }
        i = j;
    }
    free(parts.a);
    free(u);
    return rc;
}

int partd_plan_link(const partd_request *req, const uint32_t *node_part, partd_plan *plan)
{
    const partd_graph *g = &req->graph;
    uint32_t *node_stamp = calloc(g->n_nodes ? g->n_nodes : 1, sizeof *node_stamp);
    uint32_t *parent_stamp = calloc(plan->n_parts ? plan->n_parts : 1, sizeof *parent_stamp);
    uint32_t *child_stamp = calloc(plan->n_parts ? plan->n_parts : 1, sizeof *child_stamp);
    int rc = PARTD_ENOMEM;
    if (node_stamp && parent_stamp && child_stamp) {
        rc = PARTD_OK;
        for (uint32_t a = 0; a < plan->n_parts && rc == PARTD_OK; a++)
            rc = link_part(g, node_part, a, &plan->parts[a], node_stamp, parent_stamp,
                           child_stamp);
    }
    free(node_stamp);
    free(parent_stamp);
    free(child_stamp);
    if (rc == PARTD_OK && !plan->tied)
        rc = find_tied(req, node_part, plan);
    return rc;
}

void partd_plan_fill_times(const partd_request *req, partd_plan *plan)
{
    const partd_graph *g = &req->graph;
    partd_summary *s = &plan->summary;
    double sum = 0;
    s->bottleneck_ms = 0;
    s->transfer_bytes = 0;
    s->peak_memory_bytes = 0;
    for (uint32_t a = 0; a < plan->n_parts; a++) {
        partd_part *pt = &plan->parts[a];
        double speed = pt->n_devices ? req->devices[pt->devices[0]].speed : 1.0;
        double compute = 0;
        for (uint32_t i = 0; i < pt->n_nodes; i++)
            compute += partd_node_time_ms(g, pt->nodes[i]);
        int64_t received = 0;
        for (uint32_t i = 0; i < pt->n_inputs; i++)
            if (g->op[pt->inputs[i]] != PARTD_OP_GET_ATTR)
                received += g->output_bytes[pt->inputs[i]];
        pt->compute_ms = compute / speed;
        pt->transfer_in_bytes = received;
        pt->time_ms = pt->compute_ms + 1000.0 * (double)received / req->options.transfer_bytes_per_sec;
        sum += pt->time_ms;
        if (pt->time_ms > s->bottleneck_ms)
            s->bottleneck_ms = pt->time_ms;
        s->transfer_bytes = partd_bytes_add(s->transfer_bytes, received);
        if (pt->memory_bytes > s->peak_memory_bytes)
            s->peak_memory_bytes = pt->memory_bytes;
    }
    uint32_t mb = plan->mode == PARTD_MODE_PIPELINE ? req->options.pipeline.microbatches : 1;
    s->total_ms = sum + (double)(mb - 1) * s->bottleneck_ms;
}
