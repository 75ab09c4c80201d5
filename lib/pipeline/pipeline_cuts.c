/*
 * pipeline_cuts.c - options.pipeline.cut_after resolved into stage-end
 * positions; see pipeline_cuts.h.
 *
 * A string that is a node name names that node; otherwise it is a module
 * fqn and names the last node (planning order) whose `module` is the fqn or
 * starts with fqn + ".". cut_after naming a placeholder or get_attr node
 * cuts after the last operation before it (an error when that leaves a
 * stage empty).
 */
#include "pipeline_cuts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "partd/partd.h"

typedef struct cut_ref {
    uint32_t str;   /* string id of the cut_after entry */
    uint32_t index; /* position in cut_after */
} cut_ref;

static int cmp_cut_ref(const void *x, const void *y)
{
    const cut_ref *a = x, *b = y;
    if (a->str != b->str)
        return a->str < b->str ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

/* Entries of refs[0..n) (sorted by str) whose string is id: [*lo, *hi). */
static void find_refs(const cut_ref *refs, uint32_t n, uint32_t id, uint32_t *lo, uint32_t *hi)
{
    uint32_t l = 0, h = n;
    while (l < h) {
        uint32_t mid = l + (h - l) / 2;
        if (refs[mid].str < id)
            l = mid + 1;
        else
            h = mid;
    }
    *lo = l;
    while (l < n && refs[l].str == id)
        l++;
    *hi = l;
}

/* The last node of each cut_after entry, by node name and by module fqn.
 * by_name/by_module: PARTD_NONE when nothing matched. */
static void match_cut_names(const partd_request *req, const cut_ref *refs, uint32_t n,
                            uint32_t *by_name, uint32_t *by_module)
{
    const partd_graph *g = &req->graph;
    const partd_strtab *st = &req->strings;
    for (uint32_t i = 0; i < n; i++)
        by_name[refs[i].index] = by_module[refs[i].index] = PARTD_NONE;
    for (uint32_t v = 0; v < g->n_nodes; v++) {
        uint32_t lo, hi;
        find_refs(refs, n, g->name[v], &lo, &hi);
        for (uint32_t k = lo; k < hi; k++)
            by_name[refs[k].index] = v;
        uint32_t mod = g->module[v];
        if (mod == PARTD_NONE)
            continue;
        /* Every prefix of the fqn at a '.' boundary, and the fqn itself. */
        const char *s = partd_str(st, mod);
        uint32_t len = partd_strlen(st, mod);
        for (uint32_t cut = 1; cut <= len; cut++) {
            if (cut < len && s[cut] != '.')
                continue;
            uint32_t id = partd_strtab_find(st, s, cut);
            if (id == PARTD_STR_NONE)
                continue;
            find_refs(refs, n, id, &lo, &hi);
            for (uint32_t k = lo; k < hi; k++)
                by_module[refs[k].index] = v;
        }
    }
}

typedef struct cut_pos {
    int32_t pos;
    uint32_t index;
} cut_pos;

static int cmp_cut_pos(const void *x, const void *y)
{
    const cut_pos *a = x, *b = y;
    if (a->pos != b->pos)
        return a->pos < b->pos ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

static void cut_pointer(char *buf, size_t cap, uint32_t i)
{
    snprintf(buf, cap, "/options/pipeline/cut_after/%u", i);
}

int partd_pipeline_resolve_cuts(const partd_request *req, int32_t **cuts_out,
                                uint32_t *n_out, partd_problem *pb)
{
    const partd_pipeline_options *po = &req->options.pipeline;
    const partd_graph *g = &req->graph;
    uint32_t n = po->n_cut_after, S = po->stages;
    char ptr[64];
    int bad = 0;
    *cuts_out = NULL;
    *n_out = 0;
    if (n == 0)
        return PARTD_OK;
    if (S >= 1 && n > S - 1) {
        cut_pointer(ptr, sizeof ptr, S - 1);
        partd_problem_add(pb, ptr, "%u cuts need at least %u stages; stages is %u", n, n + 1,
                          S);
        bad = 1;
    }
    cut_ref *refs = malloc(n * sizeof *refs);
    uint32_t *by_name = malloc(n * sizeof *by_name), *by_module = malloc(n * sizeof *by_module);
    uint32_t *ops_upto = malloc((g->n_nodes + 1) * sizeof *ops_upto);
    cut_pos *pos = malloc(n * sizeof *pos);
    int rc = PARTD_ENOMEM;
    if (!refs || !by_name || !by_module || !ops_upto || !pos)
        goto out;
    for (uint32_t i = 0; i < n; i++)
        refs[i] = (cut_ref){po->cut_after[i], i};
    qsort(refs, n, sizeof *refs, cmp_cut_ref);
    match_cut_names(req, refs, n, by_name, by_module);
    /* ops_upto[v] = operations among nodes 0..v-1. */
    ops_upto[0] = 0;
    for (uint32_t v = 0; v < g->n_nodes; v++)
        ops_upto[v + 1] = ops_upto[v] + (partd_op_is_operation(g->op[v]) ? 1 : 0);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t v = by_name[i] != PARTD_NONE ? by_name[i] : by_module[i];
        cut_pointer(ptr, sizeof ptr, i);
        if (v == PARTD_NONE) {
            partd_problem_add(pb, ptr, "\"%s\" names no node and no module",
                              partd_str(&req->strings, po->cut_after[i]));
            bad = 1;
            pos[i] = (cut_pos){-1, i};
            continue;
        }
        int32_t p = (int32_t)ops_upto[v + 1];
        pos[i] = (cut_pos){p, i};
        if (p == 0) {
            partd_problem_add(pb, ptr, "cutting after \"%s\" leaves the first stage empty",
                              partd_node_name(req, v));
            bad = 1;
        } else if (p == (int32_t)g->n_ops) {
            partd_problem_add(pb, ptr, "cutting after \"%s\" leaves the last stage empty",
                              partd_node_name(req, v));
            bad = 1;
        }
    }
    qsort(pos, n, sizeof *pos, cmp_cut_pos);
    for (uint32_t i = 1; i < n; i++) {
        if (pos[i].pos >= 0 && pos[i].pos == pos[i - 1].pos) {
            cut_pointer(ptr, sizeof ptr, pos[i].index);
            partd_problem_add(pb, ptr,
                              "ends the same stage as /options/pipeline/cut_after/%u, leaving "
                              "an empty stage between them",
                              pos[i - 1].index);
            bad = 1;
        }
    }
    if (!bad) {
        int32_t *cuts = malloc(n * sizeof *cuts);
        if (!cuts)
            goto out;
        for (uint32_t i = 0; i < n; i++)
            cuts[i] = pos[i].pos;
        *cuts_out = cuts;
        *n_out = n;
    }
    rc = bad ? PARTD_EINVALID : PARTD_OK;
out:
    free(refs);
    free(by_name);
    free(by_module);
    free(ops_upto);
    free(pos);
    return rc;
}
