/*
 * plan_modules.c - the module whose call begins each partition of a
 * node-level plan; see plan_internal.h for the conditions.
 *
 * One pass over the operations counts, for every module fqn and every
 * prefix of one (interned in a table of their own), where its operations
 * begin and end, how many there are, whether one of them has exactly that
 * module, and what its call_module operations say about repeated calls.
 * Each partition then tries the prefixes of its first operation's module,
 * outermost first.
 */
#include "plan_internal.h"

#include <stdlib.h>
#include <string.h>

#include "partd/partd.h"
#include "partd/strtab.h"

typedef struct prefix {
    uint32_t first, last;  /* ordinals of the first and last operation under it */
    uint32_t count;        /* operations under it */
    uint8_t called;        /* an operation has exactly this module */
    uint8_t has_call;      /* a call_module operation under it */
    uint8_t repeated;      /* a call_module under it whose target repeats or is unknown */
} prefix;

typedef struct scan {
    const partd_request *req;
    partd_strtab names;    /* prefixes, ids dense from 0 */
    prefix *p;
    uint32_t cap;
    uint8_t *target_seen;  /* per request string: call_module targets, 0, 1, 2 = many */
} scan;

/* 1 when the operations, in graph order, run through the partitions in id
 * order, each partition one unbroken, non-empty run. */
static int consecutive(const partd_request *req, const partd_plan *plan, uint32_t *part_of)
{
    const partd_graph *g = &req->graph;
    for (uint32_t i = 0; i < g->n_nodes; i++)
        part_of[i] = PARTD_NONE;
    for (uint32_t j = 0; j < plan->n_parts; j++) {
        if (plan->parts[j].n_nodes == 0)
            return 0;
        for (uint32_t k = 0; k < plan->parts[j].n_nodes; k++)
            part_of[plan->parts[j].nodes[k]] = j;
    }
    uint32_t at = 0;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        if (!partd_op_is_operation((partd_op)g->op[i]))
            continue;
        if (part_of[i] == at + 1)
            at++;
        if (part_of[i] != at)
            return 0;
    }
    return at + 1 == plan->n_parts;
}

static int count_targets(scan *s)
{
    const partd_graph *g = &s->req->graph;
    s->target_seen = calloc(s->req->strings.count ? s->req->strings.count : 1, 1);
    if (!s->target_seen)
        return PARTD_ENOMEM;
    for (uint32_t i = 0; i < g->n_nodes; i++)
        if (g->op[i] == PARTD_OP_CALL_MODULE && g->target[i] != PARTD_NONE &&
            s->target_seen[g->target[i]] < 2)
            s->target_seen[g->target[i]]++;
    return PARTD_OK;
}

/* The stats of a prefix of a module's name, zeroed with first = k when
 * new; NULL on ENOMEM. */
static prefix *prefix_of(scan *s, const char *name, size_t len, uint32_t k)
{
    uint32_t before = s->names.count;
    uint32_t id = partd_strtab_intern(&s->names, name, len);
    if (id == PARTD_STR_NONE)
        return NULL;
    if (s->names.count > s->cap) {
        uint32_t cap = s->cap ? 2 * s->cap : 64;
        prefix *p = realloc(s->p, cap * sizeof *p);
        if (!p)
            return NULL;
        s->p = p;
        s->cap = cap;
    }
    prefix *x = &s->p[id];
    if (s->names.count != before) {
        memset(x, 0, sizeof *x);
        x->first = k;
    }
    return x;
}

/* Adds operation i, the k-th, to every prefix of its module. */
static int add_operation(scan *s, uint32_t i, uint32_t k)
{
    const partd_request *r = s->req;
    const partd_graph *g = &r->graph;
    const char *m = partd_str(&r->strings, g->module[i]);
    size_t len = partd_strlen(&r->strings, g->module[i]);
    int call = g->op[i] == PARTD_OP_CALL_MODULE;
    int repeated = call && (g->target[i] == PARTD_NONE || s->target_seen[g->target[i]] > 1);
    for (size_t end = 1; end <= len; end++) {
        if (end < len && m[end] != '.')
            continue;
        prefix *x = prefix_of(s, m, end, k);
        if (!x)
            return PARTD_ENOMEM;
        x->last = k;
        x->count++;
        x->called |= end == len;
        x->has_call |= call;
        x->repeated |= repeated;
    }
    return PARTD_OK;
}

/* The outermost prefix of operation i's module that begins its only call
 * at operation ordinal k, as a string id of the request; PARTD_NONE. */
static uint32_t first_module(const scan *s, uint32_t i, uint32_t k)
{
    const partd_request *r = s->req;
    uint32_t mod = r->graph.module[i];
    if (mod == PARTD_NONE)
        return PARTD_NONE;
    const char *m = partd_str(&r->strings, mod);
    size_t len = partd_strlen(&r->strings, mod);
    for (size_t end = 1; end <= len; end++) {
        if (end < len && m[end] != '.')
            continue;
        const prefix *x = &s->p[partd_strtab_find(&s->names, m, end)];
        if (x->called && x->first == k && x->last - x->first + 1 == x->count && x->has_call &&
            !x->repeated)
            /* called: an operation's module is this very name, so the
             * request holds it */
            return partd_strtab_find(&r->strings, m, end);
    }
    return PARTD_NONE;
}

static int scan_modules(scan *s, partd_plan *plan, const uint32_t *part_of)
{
    const partd_graph *g = &s->req->graph;
    int rc = count_targets(s);
    uint32_t k = 0;
    for (uint32_t i = 0; rc == PARTD_OK && i < g->n_nodes; i++)
        if (partd_op_is_operation((partd_op)g->op[i])) {
            if (g->module[i] != PARTD_NONE)
                rc = add_operation(s, i, k);
            k++;
        }
    if (rc != PARTD_OK)
        return rc;
    k = 0;
    for (uint32_t i = 0; i < g->n_nodes; i++)
        if (partd_op_is_operation((partd_op)g->op[i])) {
            partd_part *p = &plan->parts[part_of[i]];
            if (p->nodes[0] == i)
                p->first_module = first_module(s, i, k);
            k++;
        }
    return PARTD_OK;
}

int partd__plan_first_modules(const partd_request *req, partd_plan *plan)
{
    if (!req->graph.order_was_topological || plan->n_parts == 0)
        return PARTD_OK;
    uint32_t *part_of = malloc((req->graph.n_nodes ? req->graph.n_nodes : 1) * sizeof *part_of);
    if (!part_of)
        return PARTD_ENOMEM;
    int rc = PARTD_OK;
    if (consecutive(req, plan, part_of)) {
        scan s = {req, {0}, NULL, 0, NULL};
        partd_strtab_init(&s.names);
        rc = scan_modules(&s, plan, part_of);
        partd_strtab_free(&s.names);
        free(s.p);
        free(s.target_seen);
    }
    free(part_of);
    return rc;
}
