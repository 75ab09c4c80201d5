/*
 * sparse_nn.c - FX's sparse_nn mode; see sparse_nn.h.
 *
 * This follows sparse_nn_partition in accelerator_partitioner.py (1.13)
 * step by step:
 *   - operations in node order fill the current partition; crossing from
 *     non-embedding to embedding nodes or back starts a new one unless the
 *     current one's used memory is still 0 (then it goes on, and ends up in
 *     the list of the region it is in when it is left); a node that does
 *     not fit starts a new one. The fit test counts the node's inputs not
 *     yet in the set, placeholders too (get_extra_size_of before add_node);
 *   - each list (non-embedding first) is then combined: the smallest
 *     partition (stable sort by used memory) with the largest one, then the
 *     next largest, ..., whose bfs level (longest path from a partition
 *     without parents) is within 1 of its own and whose union fits a
 *     device; until the smallest combines with none. The union is appended
 *     to the partition list and to the list, the two removed.
 */
#include "sparse_nn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fx_internal.h"
#include "partd/partd.h"

typedef struct rec {
    uint32_t *ops;
    uint32_t n, cap;
    int64_t used;
} rec;

typedef struct ids {
    uint32_t *a;
    uint32_t n;
} ids;

typedef struct state {
    const partd_request *req;
    const partd_graph *g;
    int64_t avail;
    rec *recs;
    uint32_t n_recs;
    uint32_t *part_of;     /* op -> rec */
    uint32_t *mark;        /* node -> rec + 1 of the newest set holding it */
    uint32_t *stamp;       /* node -> token (unions) */
    uint32_t token;
    ids order;             /* FX's self.partitions */
    ids emb, non;          /* embedding_partitions, non_embedding_partitions */
    uint32_t *level;       /* per rec */
} state;

static int is_embedding(const state *st, uint32_t v)
{
    uint32_t t = st->g->module_type[v];
    return t != PARTD_NONE && strstr(partd_str(&st->req->strings, t), "Embedding") != NULL;
}

static uint32_t new_rec(state *st)
{
    uint32_t r = st->n_recs++;
    memset(&st->recs[r], 0, sizeof st->recs[r]);
    st->order.a[st->order.n++] = r;
    return r;
}

static int rec_push(rec *r, uint32_t v)
{
    if (r->n == r->cap) {
        uint32_t cap = r->cap ? r->cap * 2 : 8;
        uint32_t *a = realloc(r->ops, cap * sizeof *a);
        if (!a)
            return -1;
        r->ops = a;
        r->cap = cap;
    }
    r->ops[r->n++] = v;
    return 0;
}

/* get_extra_size_of(v, set of r) */
static int64_t extra_size(const state *st, uint32_t r, uint32_t v)
{
    const partd_graph *g = st->g;
    int64_t b = partd__fx_total(g, v);
    for (uint32_t k = g->in_off[v]; k < g->in_off[v + 1]; k++)
        if (st->mark[g->in_idx[k]] != r + 1)
            b += partd__fx_output(g, g->in_idx[k]);
    return b;
}

static int add_node(state *st, uint32_t r, uint32_t v)
{
    const partd_graph *g = st->g;
    for (uint32_t k = g->in_off[v]; k < g->in_off[v + 1]; k++) {
        uint32_t u = g->in_idx[k];
        if (partd__fx_is_constant(g, u) && st->mark[u] != r + 1) {
            st->mark[u] = r + 1;
            st->recs[r].used += partd__fx_total(g, u);
        }
    }
    st->mark[v] = r + 1;
    st->recs[r].used += extra_size(st, r, v);
    st->part_of[v] = r;
    return rec_push(&st->recs[r], v);
}

static void too_large(state *st, uint32_t v, int64_t need, partd_problem *pb)
{
    char b[PARTD_PROBLEM_BYTES_CAP], has[PARTD_PROBLEM_BYTES_CAP], ptr[64];
    partd_problem_bytes(b, (double)need);
    partd_problem_bytes(has, (double)st->avail);
    partd_problem_set(pb, 422, "infeasible", "No feasible plan",
                      "node \"%s\" is too large to fit into a device: it needs %s with its "
                      "inputs and each device has %s",
                      partd_node_name(st->req, v), b, has);
    partd_problem_set_shortfall(pb, need, st->avail);
    snprintf(ptr, sizeof ptr, "/graph/nodes/%u", st->g->request_index[v]);
    partd_problem_add(pb, ptr, "needs %s; each device has %s", b, has);
}

/* The loop over the nodes (reset_partition_in_sparse_nn and all). */
static int fill(state *st, partd_problem *pb)
{
    const partd_graph *g = st->g;
    uint32_t cur = new_rec(st);
    int in_emb = 0;
    for (uint32_t v = 0; v < g->n_nodes; v++) {
        if (!partd_op_is_operation(g->op[v]))
            continue;
        if (is_embedding(st, v) != in_emb) {
            if (st->recs[cur].used != 0) {
                ids *list = in_emb ? &st->emb : &st->non;
                list->a[list->n++] = cur;
                cur = new_rec(st);
            }
            in_emb = !in_emb;
        }
        int64_t extra = extra_size(st, cur, v);
        if (extra + st->recs[cur].used > st->avail) {
            ids *list = in_emb ? &st->emb : &st->non;
            list->a[list->n++] = cur;
            cur = new_rec(st);
            extra = extra_size(st, cur, v);
            if (extra > st->avail) {
                too_large(st, v, extra, pb);
                return PARTD_EINFEASIBLE;
            }
        }
        if (add_node(st, cur, v) != 0)
            return PARTD_ENOMEM;
    }
    ids *list = in_emb ? &st->emb : &st->non;
    list->a[list->n++] = cur;
    return PARTD_OK;
}

/* get_bfs_level_partition over the partitions of st->order. */
static int levels(state *st)
{
    return partd__fx_levels(st->g, st->part_of, st->n_recs, st->order.a, st->order.n, st->level);
}

/* calculate_mem_bytes_needed(a, b): used memory of the union. */
static int64_t union_bytes(state *st, uint32_t a, uint32_t b)
{
    const rec *ra = &st->recs[a], *rb = &st->recs[b];
    return partd__fx_union_bytes(st->g, ra->ops, ra->n, rb->ops, rb->n, st->stamp, &st->token);
}

static void ids_remove(ids *l, uint32_t r)
{
    for (uint32_t i = 0; i < l->n; i++)
        if (l->a[i] == r) {
            memmove(l->a + i, l->a + i + 1, (l->n - i - 1) * sizeof *l->a);
            l->n--;
            return;
        }
}

/* combine_two_partitions(p, s): the union appended, p and s removed. */
static int merge(state *st, uint32_t p, uint32_t s, int64_t used, ids *list)
{
    uint32_t r = new_rec(st);
    rec *n = &st->recs[r];
    n->cap = st->recs[p].n + st->recs[s].n;
    n->ops = malloc((n->cap ? n->cap : 1) * sizeof *n->ops);
    if (!n->ops)
        return PARTD_ENOMEM;
    memcpy(n->ops, st->recs[p].ops, st->recs[p].n * sizeof *n->ops);
    memcpy(n->ops + st->recs[p].n, st->recs[s].ops, st->recs[s].n * sizeof *n->ops);
    n->n = n->cap;
    n->used = used;
    for (uint32_t i = 0; i < n->n; i++)
        st->part_of[n->ops[i]] = r;
    ids_remove(&st->order, p);
    ids_remove(&st->order, s);
    ids_remove(list, s);
    ids_remove(list, p);
    list->a[list->n++] = r;
    free(st->recs[p].ops);
    free(st->recs[s].ops);
    st->recs[p].ops = st->recs[s].ops = NULL;
    return PARTD_OK;
}

static int cmp_used_state_less(const state *st, uint32_t a, uint32_t b)
{
    return st->recs[a].used < st->recs[b].used;
}

/* combine_partitions_based_on_size(list) */
static int combine(state *st, ids *list, const partd_cancel *cancel)
{
    uint32_t *sorted = malloc(((size_t)list->n + 1) * sizeof *sorted);
    if (!sorted)
        return PARTD_ENOMEM;
    int rc = PARTD_OK;
    /* FX pops from an empty list here (IndexError): nothing to combine */
    while (list->n > 0 && rc == PARTD_OK) {
        if ((rc = partd_cancel_check(cancel)) != PARTD_OK || (rc = levels(st)) != PARTD_OK)
            break;
        /* sorted(partitions, key=used_mem_bytes): stable insertion sort */
        uint32_t n = list->n;
        for (uint32_t i = 0; i < n; i++) {
            uint32_t r = list->a[i], j = i;
            while (j > 0 && cmp_used_state_less(st, r, sorted[j - 1])) {
                sorted[j] = sorted[j - 1];
                j--;
            }
            sorted[j] = r;
        }
        uint32_t s = sorted[0];
        int found = 0;
        for (uint32_t i = n; i-- > 1 && !found;) {
            uint32_t p = sorted[i];
            uint32_t lp = st->level[p], ls = st->level[s];
            if ((lp > ls ? lp - ls : ls - lp) > 1)
                continue;
            int64_t need = union_bytes(st, p, s);
            if (need <= st->avail) {
                rc = merge(st, p, s, need, list);
                found = 1;
            }
        }
        if (!found)
            break;
    }
    free(sorted);
    return rc;
}

static int fail_devices(state *st, partd_problem *pb, uint32_t n_emb)
{
    partd_problem_set(pb, 422, "infeasible", "No feasible plan",
                      "Need %u devices, but only %u provided: sparse_nn puts each of its %u "
                      "embedding partitions on a device of its own",
                      n_emb, st->req->n_devices, n_emb);
    partd_problem_add(pb, "/devices", "%u devices; the embedding partitions need %u",
                      st->req->n_devices, n_emb);
    return PARTD_EINFEASIBLE;
}

/* The partitions as a layout (indices in FX's list order) with devices. */
static int finish(state *st, partd_plan **out, partd_problem *pb)
{
    const partd_request *req = st->req;
    const partd_graph *g = st->g;
    uint32_t P = st->order.n, D = req->n_devices;
    uint32_t *index = malloc(((size_t)st->n_recs + 1) * sizeof *index);
    uint32_t *part_of = malloc(((size_t)g->n_nodes + 1) * sizeof *part_of);
    uint32_t *dev_off = calloc((size_t)P + 1, sizeof *dev_off);
    uint32_t *dev_idx = malloc(((size_t)P * (D ? D : 1) + 1) * sizeof *dev_idx);
    uint32_t *one = malloc(((size_t)P + 1) * sizeof *one);
    int64_t *used = malloc(((size_t)P + 1) * sizeof *used);
    int rc = PARTD_ENOMEM;
    if (!index || !part_of || !dev_off || !dev_idx || !one || !used)
        goto out;
    for (uint32_t i = 0; i < P; i++) {
        index[st->order.a[i]] = i;
        used[i] = st->recs[st->order.a[i]].used;
    }
    for (uint32_t v = 0; v < g->n_nodes; v++)
        part_of[v] = st->part_of[v] == PARTD_NONE ? PARTD_NONE : index[st->part_of[v]];
    partd__fx_layout l = {P, part_of, dev_off, dev_idx};
    uint32_t n_emb = st->emb.n;
    if (n_emb == 0) {
        /* FX leaves the partitions without a device here (after raising
         * IndexError): FX's own mapping places them */
        int found = partd__fx_map(req, &l, used, one);
        if (found < 0)
            goto out;
        if (!found) {
            partd_problem_set(pb, 422, "infeasible", "No feasible plan",
                              "Cannot get a valid partition to logical device mapping: the "
                              "graph has no embedding node, and its %u partitions do not all "
                              "fit the devices",
                              P);
            partd_problem_add(pb, "/devices", "too little memory for the %u partitions", P);
            rc = PARTD_EINFEASIBLE;
            goto out;
        }
        for (uint32_t p = 0; p < P; p++) {
            dev_off[p + 1] = p + 1;
            dev_idx[p] = one[p];
        }
    } else {
        if (n_emb > D) {
            rc = fail_devices(st, pb, n_emb);
            goto out;
        }
        int64_t non_total = 0;
        for (uint32_t i = 0; i < st->non.n; i++)
            non_total += st->recs[st->non.a[i]].used;
        for (uint32_t i = 0; i < n_emb; i++) {
            int64_t need = non_total + st->recs[st->emb.a[i]].used;
            if (need <= st->avail)
                continue;
            char b[PARTD_PROBLEM_BYTES_CAP], has[PARTD_PROBLEM_BYTES_CAP];
            partd_problem_bytes(b, (double)need);
            partd_problem_bytes(has, (double)st->avail);
            partd_problem_set(pb, 422, "infeasible", "No feasible plan",
                              "partition_%u (embedding partition) and non embedding partitions "
                              "can not fit into one device: they need %s and a device has %s",
                              index[st->emb.a[i]], b, has);
            partd_problem_set_shortfall(pb, need, st->avail);
            partd_problem_add(pb, "/devices", "each device has %s; %s needed", has, b);
            rc = PARTD_EINFEASIBLE;
            goto out;
        }
        /* embedding partition i on device i; the others on all of those */
        uint32_t *emb_dev = one;
        for (uint32_t p = 0; p < P; p++)
            emb_dev[p] = PARTD_NONE;
        for (uint32_t i = 0; i < n_emb; i++)
            emb_dev[index[st->emb.a[i]]] = i;
        uint32_t at = 0;
        for (uint32_t p = 0; p < P; p++) {
            if (emb_dev[p] != PARTD_NONE)
                dev_idx[at++] = emb_dev[p];
            else
                for (uint32_t i = 0; i < n_emb; i++)
                    dev_idx[at++] = i;
            dev_off[p + 1] = at;
        }
    }
    double sec = 0;
    uint32_t cycle;
    rc = partd__fx_latency(req, &l, &sec, &cycle);
    if (rc == PARTD_EINFEASIBLE)
        rc = PARTD_EINTERNAL; /* combining within one bfs level never makes a cycle */
    if (rc == PARTD_OK)
        rc = partd__fx_plan(req, PARTD_MODE_SPARSE_NN, &l, used, sec, out);
out:
    free(index);
    free(part_of);
    free(dev_off);
    free(dev_idx);
    free(one);
    free(used);
    return rc;
}

int partd_sparse_nn(const partd_request *req, const partd_cancel *cancel, partd_plan **out,
                    partd_problem *problem)
{
    const partd_graph *g = &req->graph;
    int rc = partd__fx_whole(req, PARTD_MODE_SPARSE_NN, out, problem);
    if (rc != PARTD_OK || *out)
        return rc;
    for (uint32_t d = 1; d < req->n_devices; d++)
        if (req->devices[d].memory_bytes != req->devices[0].memory_bytes) {
            char ptr[64];
            partd_problem_set(problem, 422, "infeasible", "No feasible plan",
                              "All devices must have same memory size! sparse_nn plans "
                              "devices of one size only");
            snprintf(ptr, sizeof ptr, "/devices/%u/memory_bytes", d);
            partd_problem_add(problem, ptr, "differs from /devices/0/memory_bytes");
            return PARTD_EINFEASIBLE;
        }
    state st = {0};
    st.req = req;
    st.g = g;
    st.avail = req->devices[0].memory_bytes;
    size_t most = 2 * (size_t)g->n_ops + 8; /* partitions made and unions */
    st.recs = calloc(most, sizeof *st.recs);
    st.part_of = malloc(((size_t)g->n_nodes + 1) * sizeof *st.part_of);
    st.mark = calloc((size_t)g->n_nodes + 1, sizeof *st.mark);
    st.stamp = calloc((size_t)g->n_nodes + 1, sizeof *st.stamp);
    st.order.a = malloc(most * sizeof *st.order.a);
    st.emb.a = malloc(most * sizeof *st.emb.a);
    st.non.a = malloc(most * sizeof *st.non.a);
    st.level = calloc(most, sizeof *st.level);
    rc = PARTD_ENOMEM;
    if (st.recs && st.part_of && st.mark && st.stamp && st.order.a && st.emb.a && st.non.a &&
        st.level) {
        for (uint32_t v = 0; v < g->n_nodes; v++)
            st.part_of[v] = PARTD_NONE;
        rc = fill(&st, problem);
        if (rc == PARTD_OK)
            rc = combine(&st, &st.non, cancel);
        if (rc == PARTD_OK)
            rc = combine(&st, &st.emb, cancel);
        if (rc == PARTD_OK)
            rc = finish(&st, out, problem);
    }
    for (uint32_t r = 0; st.recs && r < st.n_recs; r++)
        free(st.recs[r].ops);
    free(st.recs);
    free(st.part_of);
    free(st.mark);
    free(st.stamp);
    free(st.order.a);
    free(st.emb.a);
    free(st.non.a);
    free(st.level);
    return rc;
}
