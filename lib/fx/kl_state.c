/*
 * kl_state.c - the list of partitions FX's kl_based pass works on, and
 * FX's full recomputation of a try over it; see kl_internal.h.
 *
 * The list is held as FX's Partition sets: each operation lists the
 * partitions that hold it (a node can end in two, see kl_based.c), and a
 * placeholder or get_attr is in a partition while an operation there reads
 * it (what add_node and remove_node keep true). add and remove note each
 * operation they change for the incremental state (kl_fast.c), which
 * carries the notes over.
 *
 * The full recomputation is FX's own, over the whole list: memory
 * (Partition.recalculate_mem_size), the partitions' DAG
 * (set_parents_and_children), check_dependency, a fresh
 * get_device_to_partitions_mapping and get_latency_of_partitioned_graph,
 * each figure FX's to the last bit. Errors: PARTD_OK or PARTD_ENOMEM.
 */
#include <stdlib.h>
#include <string.h>

#include "fx_internal.h"
#include "kl_internal.h"
#include "partd/partd.h"

int partd__kl_state_init(partd__kl *k, const partd_request *req, uint32_t n_parts, int check)
{
    const partd_graph *g = &req->graph;
    *k = (partd__kl){0};
    k->req = req;
    k->g = g;
    k->n = g->n_nodes;
    k->P = n_parts;
    k->D = req->n_devices;
    k->check = check;
    size_t N = (size_t)k->n + 1, P = (size_t)k->P + 2, D = (size_t)k->D + 1;
    k->m = calloc(N, sizeof *k->m);
    k->mn = calloc(N, sizeof *k->mn);
    k->mcap = calloc(N, sizeof *k->mcap);
    k->nstamp = calloc(N, sizeof *k->nstamp);
    k->list = malloc(N * sizeof *k->list);
    k->dev = malloc(P * sizeof *k->dev);
    k->fdev = malloc(P * sizeof *k->fdev);
    k->fdev2 = malloc(P * sizeof *k->fdev2);
    k->pstamp = calloc(P, sizeof *k->pstamp);
    k->astamp = calloc(P, sizeof *k->astamp);
    k->used = malloc(P * sizeof *k->used);
    k->po_off = malloc(P * sizeof *k->po_off);
    k->e_off = malloc(P * sizeof *k->e_off);
    k->e_cap = 64;
    k->e_src = malloc(k->e_cap * sizeof *k->e_src);
    k->e_bytes = malloc(k->e_cap * sizeof *k->e_bytes);
    k->ch_off = malloc(P * sizeof *k->ch_off);
    k->acc = malloc(P * sizeof *k->acc);
    k->flag = malloc(P * sizeof *k->flag);
    k->touched = malloc(P * sizeof *k->touched);
    k->lat = malloc(P * sizeof *k->lat);
    k->best = malloc(P * sizeof *k->best);
    k->indeg = malloc(P * sizeof *k->indeg);
    k->queue = malloc(P * sizeof *k->queue);
    k->reach = malloc(P * sizeof *k->reach);
    k->dstamp = calloc(D, sizeof *k->dstamp);
    k->left = malloc(D * sizeof *k->left);
    k->credit = malloc(D * sizeof *k->credit);
    k->order = malloc(D * sizeof *k->order);
    if (k->m && k->mn && k->mcap && k->nstamp && k->list && k->dev && k->fdev && k->fdev2 &&
        k->pstamp && k->astamp && k->used && k->po_off && k->e_off && k->e_src && k->e_bytes &&
        k->ch_off && k->acc && k->flag && k->touched && k->lat && k->best && k->indeg &&
        k->queue && k->reach && k->dstamp && k->left && k->credit && k->order)
        return PARTD_OK;
    return PARTD_ENOMEM;
}

void partd__kl_state_free(partd__kl *k)
{
    for (uint32_t v = 0; k->m && v < k->n; v++)
        free(k->m[v]);
    free(k->m);
    free(k->mn);
    free(k->mcap);
    free(k->nstamp);
    free(k->list);
    free(k->dev);
    free(k->fdev);
    free(k->fdev2);
    free(k->pstamp);
    free(k->astamp);
    free(k->used);
    free(k->po_off);
    free(k->po);
    free(k->e_off);
    free(k->e_src);
    free(k->e_bytes);
    free(k->ch_off);
    free(k->ch);
    free(k->acc);
    free(k->flag);
    free(k->touched);
    free(k->lat);
    free(k->best);
    free(k->indeg);
    free(k->queue);
    free(k->reach);
    free(k->dstamp);
    free(k->left);
    free(k->credit);
    free(k->order);
}

/* v's partitions changed: noted for the incremental state while it tracks */
static void note(partd__kl *k, uint32_t v)
{
    partd__kl_fast *f = &k->f;
    if (!k->track || f->is_pending[v])
        return;
    f->is_pending[v] = 1;
    f->pending[f->n_pending++] = v;
}

int partd__kl_state_add(partd__kl *k, uint32_t p, uint32_t v)
{
    if (partd__kl_slot_of(k, v, p) >= 0)
        return PARTD_OK;
    if (k->mn[v] == k->mcap[v]) {
        uint32_t cap = k->mcap[v] ? 2 * k->mcap[v] : 2;
        partd__kl_ent *e = realloc(k->m[v], cap * sizeof *e);
        if (!e)
            return PARTD_ENOMEM;
        k->m[v] = e;
        k->mcap[v] = cap;
    }
    k->m[v][k->mn[v]++] = (partd__kl_ent){p, 0};
    note(k, v);
    if (k->mn[v] == 2)
        k->n_dups++;
    return PARTD_OK;
}

void partd__kl_state_remove(partd__kl *k, uint32_t p, uint32_t v)
{
    int s = partd__kl_slot_of(k, v, p);
    if (s < 0)
        return;
    k->m[v][s] = k->m[v][--k->mn[v]];
    note(k, v);
    if (k->mn[v] == 1)
        k->n_dups--;
}

/* FX's swap_nodes(n0, n1, p0, p1); either node may be PARTD_NONE. */
int partd__kl_state_swap(partd__kl *k, uint32_t n0, uint32_t n1, uint32_t p0, uint32_t p1)
{
    int rc = PARTD_OK;
    if (n0 != PARTD_NONE) {
        partd__kl_state_remove(k, p0, n0);
        rc = partd__kl_state_add(k, p1, n0);
    }
    if (n1 != PARTD_NONE && rc == PARTD_OK) {
        rc = partd__kl_state_add(k, p0, n1);
        partd__kl_state_remove(k, p1, n1);
    }
    return rc;
}

/* used[] (Partition.recalculate_mem_size) and the operations of each
 * partition. */
int partd__kl_state_memory(partd__kl *k)
{
    const partd_graph *g = k->g;
    uint32_t P = k->P;
    size_t M = 0;
    memset(k->po_off, 0, ((size_t)P + 2) * sizeof *k->po_off);
    for (uint32_t p = 0; p < P; p++)
        k->used[p] = 0;
    for (uint32_t v = 0; v < k->n; v++) {
        M += k->mn[v];
        for (uint32_t s = 0; s < k->mn[v]; s++) {
            uint32_t p = k->m[v][s].p;
            k->po_off[p + 2]++;
            k->used[p] += partd__fx_total(g, v);
            for (uint32_t j = g->in_off[v]; j < g->in_off[v + 1]; j++) {
                uint32_t u = g->in_idx[j];
                if (!partd__fx_is_constant(g, u) && partd__kl_slot_of(k, u, p) < 0)
                    k->used[p] += partd__fx_output(g, u);
            }
        }
        if (partd__fx_is_constant(g, v)) {
            uint64_t t = ++k->tok;
            for (uint32_t j = g->user_off[v]; j < g->user_off[v + 1]; j++) {
                uint32_t y = g->user_idx[j];
                for (uint32_t s = 0; s < k->mn[y]; s++) {
                    uint32_t p = k->m[y][s].p;
                    if (k->pstamp[p] != t) {
                        k->pstamp[p] = t;
                        k->used[p] += partd__fx_total(g, v);
                    }
                }
            }
        }
    }
    if (M > k->po_cap) {
        uint32_t *po = realloc(k->po, M * sizeof *po);
        if (!po)
            return PARTD_ENOMEM;
        k->po = po;
        k->po_cap = M;
    }
    for (uint32_t p = 0; p < P; p++)
        k->po_off[p + 2] += k->po_off[p + 1];
    for (uint32_t v = 0; v < k->n; v++)
        for (uint32_t s = 0; s < k->mn[v]; s++)
            k->po[k->po_off[k->m[v][s].p + 1]++] = v;
    return PARTD_OK;
}

static void accumulate(partd__kl *k, uint64_t t, uint32_t *nt, uint32_t a, int64_t bytes, int edge)
{
    if (k->astamp[a] != t) {
        k->astamp[a] = t;
        k->acc[a] = 0;
        k->flag[a] = 0;
        k->touched[(*nt)++] = a;
    }
    k->acc[a] += bytes;
    k->flag[a] |= (uint8_t)edge;
}

/* set_parents_and_children: A is a parent of B when an operation of A
 * outside B has a user in B; the edge carries the output bytes of the
 * distinct nodes of A (its placeholders and get_attrs too) that nodes of B
 * read (get_comm_latency_between). */
int partd__kl_state_edges(partd__kl *k)
{
    const partd_graph *g = k->g;
    uint32_t P = k->P;
    size_t m = 0;
    for (uint32_t q = 0; q < P; q++) {
        k->e_off[q] = (uint32_t)m;
        uint64_t tq = ++k->tok;
        uint32_t nt = 0;
        for (uint32_t i = k->po_off[q]; i < k->po_off[q + 1]; i++) {
            uint32_t v = k->po[i];
            for (uint32_t j = g->in_off[v]; j < g->in_off[v + 1]; j++) {
                uint32_t u = g->in_idx[j];
                if (k->nstamp[u] == tq)
                    continue;
                k->nstamp[u] = tq;
                if (partd__fx_is_constant(g, u)) {
                    uint64_t tc = ++k->tok;
                    for (uint32_t x = g->user_off[u]; x < g->user_off[u + 1]; x++) {
                        uint32_t y = g->user_idx[x];
                        for (uint32_t s = 0; s < k->mn[y]; s++) {
                            uint32_t a = k->m[y][s].p;
                            if (a == q || k->pstamp[a] == tc)
                                continue;
                            k->pstamp[a] = tc;
                            accumulate(k, tq, &nt, a, partd__fx_output(g, u), 0);
                        }
                    }
                } else {
                    int outside = partd__kl_slot_of(k, u, q) < 0;
                    for (uint32_t s = 0; s < k->mn[u]; s++)
                        if (k->m[u][s].p != q)
                            accumulate(k, tq, &nt, k->m[u][s].p, partd__fx_output(g, u),
                                       outside);
                }
            }
        }
        for (uint32_t i = 0; i < nt; i++) {
            uint32_t a = k->touched[i];
            if (!k->flag[a])
                continue;
            if (m == k->e_cap) {
                size_t cap = k->e_cap * 2;
                uint32_t *s = realloc(k->e_src, cap * sizeof *s);
                if (s)
                    k->e_src = s;
                int64_t *b = realloc(k->e_bytes, cap * sizeof *b);
                if (b)
                    k->e_bytes = b;
                if (!s || !b)
                    return PARTD_ENOMEM;
                k->e_cap = cap;
            }
            k->e_src[m] = a;
            k->e_bytes[m++] = k->acc[a];
        }
    }
    k->e_off[P] = (uint32_t)m;
    uint32_t *ch = realloc(k->ch, (m + 1) * sizeof *ch);
    if (!ch)
        return PARTD_ENOMEM;
    k->ch = ch;
    memset(k->ch_off, 0, ((size_t)P + 2) * sizeof *k->ch_off);
    for (size_t j = 0; j < m; j++)
        k->ch_off[k->e_src[j] + 2]++;
    for (uint32_t p = 0; p < P; p++)
        k->ch_off[p + 2] += k->ch_off[p + 1];
    for (uint32_t q = 0; q < P; q++)
        for (uint32_t j = k->e_off[q]; j < k->e_off[q + 1]; j++)
            k->ch[k->ch_off[k->e_src[j] + 1]++] = q;
    return PARTD_OK;
}

/* check_dependency: p lies on a cycle of the partitions' DAG. */
int partd__kl_state_on_cycle(partd__kl *k, uint32_t p)
{
    uint64_t t = ++k->tok;
    uint32_t head = 0, tail = 0;
    k->pstamp[p] = t;
    k->queue[tail++] = p;
    while (head < tail) {
        uint32_t a = k->queue[head++];
        for (uint32_t j = k->ch_off[a]; j < k->ch_off[a + 1]; j++) {
            uint32_t c = k->ch[j];
            if (c == p)
                return 1;
            if (k->pstamp[c] != t) {
                k->pstamp[c] = t;
                k->queue[tail++] = c;
            }
        }
    }
    return 0;
}

/* get_device_to_partitions_mapping on dev: partitions with a device hold
 * its memory (their used bytes), the others in list order go best-fit onto
 * the device with the least memory left (a stable sort) that has strictly
 * more than they need there. 1 when all found one, else 0 (the partitions
 * from the first that found none are left without). */
int partd__kl_state_map(partd__kl *k, uint32_t *dev)
{
    const partd_graph *g = k->g;
    uint32_t D = k->D;
    for (uint32_t d = 0; d < D; d++) {
        k->left[d] = k->req->devices[d].memory_bytes;
        k->order[d] = d;
    }
    for (uint32_t p = 0; p < k->P; p++)
        if (dev[p] != PARTD_NONE)
            k->left[dev[p]] -= k->used[p];
    for (uint32_t p = 0; p < k->P; p++) {
        if (dev[p] != PARTD_NONE)
            continue;
        for (uint32_t i = 1; i < D; i++) {
            uint32_t d = k->order[i], j = i;
            while (j > 0 && k->left[k->order[j - 1]] > k->left[d]) {
                k->order[j] = k->order[j - 1];
                j--;
            }
            k->order[j] = d;
        }
        for (uint32_t d = 0; d < D; d++)
            k->credit[d] = 0;
        /* a device already holding an input (in any of its partitions)
         * needs no room for it: get_extra_size_of over the union */
        for (uint32_t i = k->po_off[p]; i < k->po_off[p + 1]; i++) {
            uint32_t x = k->po[i];
            for (uint32_t j = g->in_off[x]; j < g->in_off[x + 1]; j++) {
                uint32_t u = g->in_idx[j];
                if (partd__fx_is_constant(g, u) || partd__kl_slot_of(k, u, p) >= 0)
                    continue;
                uint64_t t = ++k->tok;
                for (uint32_t s = 0; s < k->mn[u]; s++) {
                    uint32_t d = dev[k->m[u][s].p];
                    if (d == PARTD_NONE || k->dstamp[d] == t)
                        continue;
                    k->dstamp[d] = t;
                    k->credit[d] += partd__fx_output(g, u);
                }
            }
        }
        uint32_t chosen = PARTD_NONE;
        int64_t extra = 0;
        for (uint32_t j = 0; j < D && chosen == PARTD_NONE; j++) {
            uint32_t d = k->order[j];
            extra = k->used[p] - k->credit[d];
            if (extra < k->left[d])
                chosen = d;
        }
        if (chosen == PARTD_NONE)
            return 0;
        dev[p] = chosen;
        k->left[chosen] -= extra;
    }
    return 1;
}

/* Partitions a and b transfer nothing: the same non-empty device list
 * (size_based's lists when sb is given: its greedy pass can give a
 * partition more than one device). */
static int same_devices(const uint32_t *dev, const partd_plan *sb, uint32_t a, uint32_t b)
{
    if (!sb)
        return partd__kl_same_device(dev, a, b);
    const partd_part *x = &sb->parts[a], *y = &sb->parts[b];
    return x->n_devices && x->n_devices == y->n_devices &&
           memcmp(x->devices, y->devices, x->n_devices * sizeof *x->devices) == 0;
}

/* get_latency_of_partitioned_graph with devices dev, or sb's (seconds),
 * after partd__kl_state_memory and _edges: FX walks from the partitions without
 * parents, so only what they reach counts, and a cycle they reach never
 * ends (PARTD__KL_RAISED). */
double partd__kl_state_latency(partd__kl *k, const uint32_t *dev, const partd_plan *sb)
{
    const partd_graph *g = k->g;
    uint32_t P = k->P;
    for (uint32_t p = 0; p < P; p++) {
        k->lat[p] = 0;
        k->reach[p] = 0;
    }
    for (uint32_t v = 0; v < k->n; v++)
        for (uint32_t s = 0; s < k->mn[v]; s++) {
            uint32_t p = k->m[v][s].p;
            double top = 0;
            for (uint32_t j = g->in_off[v]; j < g->in_off[v + 1]; j++) {
                int su = partd__kl_slot_of(k, g->in_idx[j], p);
                if (su >= 0 && k->m[g->in_idx[j]][su].d > top)
                    top = k->m[g->in_idx[j]][su].d;
            }
            double d = top + partd__fx_node_sec(g, v);
            k->m[v][s].d = d;
            if (d > k->lat[p])
                k->lat[p] = d;
        }
    uint32_t head = 0, tail = 0, n_reach = 0;
    for (uint32_t q = 0; q < P; q++)
        if (k->e_off[q] == k->e_off[q + 1]) {
            k->reach[q] = 1;
            k->queue[tail++] = q;
        }
    while (head < tail) {
        uint32_t a = k->queue[head++];
        n_reach++;
        for (uint32_t j = k->ch_off[a]; j < k->ch_off[a + 1]; j++)
            if (!k->reach[k->ch[j]]) {
                k->reach[k->ch[j]] = 1;
                k->queue[tail++] = k->ch[j];
            }
    }
    head = tail = 0;
    for (uint32_t q = 0; q < P; q++) {
        k->indeg[q] = 0;
        if (!k->reach[q])
            continue;
        for (uint32_t j = k->e_off[q]; j < k->e_off[q + 1]; j++)
            k->indeg[q] += k->reach[k->e_src[j]];
        if (!k->indeg[q])
            k->queue[tail++] = q;
    }
    double worst = 0;
    while (head < tail) {
        uint32_t q = k->queue[head++];
        double in = 0;
        for (uint32_t j = k->e_off[q]; j < k->e_off[q + 1]; j++) {
            uint32_t a = k->e_src[j];
            if (!k->reach[a])
                continue;
            double comm = same_devices(dev, sb, a, q)
                              ? 0.0
                              : (double)k->e_bytes[j] / k->req->options.transfer_bytes_per_sec;
            double x = k->best[a] + comm;
            if (x > in)
                in = x;
        }
        k->best[q] = in + k->lat[q];
        if (k->best[q] > worst)
            worst = k->best[q];
        for (uint32_t j = k->ch_off[q]; j < k->ch_off[q + 1]; j++)
            if (--k->indeg[k->ch[j]] == 0)
                k->queue[tail++] = k->ch[j];
    }
    return tail < n_reach ? PARTD__KL_RAISED : worst;
}
