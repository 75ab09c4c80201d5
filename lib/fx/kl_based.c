/*
 * kl_based.c - FX's kl_based mode; see kl_based.h.
 *
 * FX (kl_based_partition in accelerator_partitioner.py, 1.13) starts from
 * size_based's partitions and, for every operation `node` in graph order
 * and every other partition p1, tries each node n1 of p1 and then no node
 * (None): it swaps node and n1 between p0 and p1 with Partition.add_node
 * and remove_node, relinks, costs the list (infinity when p0 or p1 lies on
 * a cycle or the list does not map onto devices afresh), swaps back with
 * the same calls in the other direction and maps the list afresh again.
 * Its quirks, kept here:
 *   - p0 is the partition size_based gave node (node_to_partition is never
 *     updated), so once node has moved, the "swap" adds it to p1 and the
 *     swap back adds it to p0: a try can change the list, and a node can
 *     end in two partitions. Partitions are therefore held as sets: each
 *     operation lists the partitions that hold it, and a placeholder or
 *     get_attr is in a partition while an operation there reads it (what
 *     add_node and remove_node keep true).
 *   - swap_node_to_partition answers the cost of its last try (the move)
 *     with the cheapest pair (first of equals), and the pair is taken when
 *     that move's cost is below the best so far; the best so far is that
 *     move's cost.
 *   - node_pair is never cleared: the last pair taken is swapped again
 *     after every later operation.
 *   - the devices after a taken swap are those the last try's swap back
 *     mapped (memory is not checked again); mapping only gives devices to
 *     partitions without one.
 * FX costs every try by walking every path of the partitions' DAG and
 * relinking every partition. Here, while nothing is in two partitions (and
 * the partitions are few enough for P x P tables), a try updates only what
 * its swap changes: the two partitions' memory, their links, and the
 * longest paths in them from the first swapped operation on; the cost is
 * then the longest path over the partitions' DAG (FX's figure to the bit,
 * as fx_eval.c). Otherwise a try is one pass over the graph. A try is made
 * only when it can matter: while nothing is in two partitions, a try of
 * (node, p1) has no effect on the list, and the pairs of p1 matter only
 * when the move's cost beats the best so far, so the move is costed first
 * and the pairs only then.
 */
#include "kl_based.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fx_internal.h"
#include "partd/partd.h"
#include "size_based.h"

#define RAISED (-1.0) /* a try whose costing FX never finishes (a cycle it walks) */

typedef struct ent {
    uint32_t p; /* a partition holding the node */
    double d;   /* the longest path in p ending at the node (seconds) */
} ent;

typedef struct fast {
    int on;
    uint32_t P;
    uint32_t *part;        /* op -> partition as last carried over, PARTD_NONE */
    double *sec, *d;       /* node latency; longest path in its partition ending at it */
    double *lat;           /* per partition: its critical path */
    int64_t *used;         /* per partition: FX's used_mem_bytes */
    uint32_t **pl, *pn, *pcap; /* each partition's operations, ascending */
    uint32_t *from;        /* per partition: lowest operation whose path may be stale */
    uint32_t *cid;         /* placeholder or get_attr -> its row of cc */
    uint32_t *cc;          /* its reading edges per partition */
    uint32_t *ec;          /* P x P [producer][consumer]: operation edges */
    int64_t *w;            /* P x P [consumer][producer]: their output bytes, per edge */
    int64_t *c;            /* P x P [producer][consumer]: FX's comm bytes of the link */
    uint32_t *pending, n_pending; /* operations add_node/remove_node changed since */
    uint8_t *is_pending;
} fast;

typedef struct kl {
    const partd_request *req;
    const partd_graph *g;
    uint32_t n, P, D;
    ent **m;           /* op -> partitions holding it */
    uint32_t *mn, *mcap;
    uint32_t n_dups;   /* operations in more than one partition */
    uint32_t *dev;     /* FX's logical_device_ids, one device or PARTD_NONE */
    int dev_stale;     /* dev must become the fresh mapping of the list */
    uint64_t tok;
    uint64_t *nstamp;  /* per node */
    uint64_t *pstamp, *astamp; /* per partition */
    uint64_t *dstamp;  /* per device */
    int64_t *used;
    /* operations of each partition, graph order */
    uint32_t *po_off, *po;
    size_t po_cap;
    /* partitions' DAG: parents of each child (CSR), bytes per edge */
    uint32_t *e_off, *e_src;
    int64_t *e_bytes;
    size_t e_cap;
    uint32_t *ch_off, *ch;
    int64_t *acc;
    uint8_t *flag;
    uint32_t *touched;
    /* mapping */
    int64_t *left, *credit;
    uint32_t *order, *fdev, *fdev2;
    /* longest path */
    double *lat, *best;
    uint32_t *indeg, *queue;
    uint8_t *reach;
    uint32_t *list;    /* snapshot of p1's operations */
    int track;         /* add_node and remove_node note what they change */
    int check;         /* every incremental figure against the full recomputation */
    int mismatch;
    fast f;
} kl;

static void note(kl *k, uint32_t v);

static int slot_of(const kl *k, uint32_t v, uint32_t p)
{
    for (uint32_t i = 0; i < k->mn[v]; i++)
        if (k->m[v][i].p == p)
            return (int)i;
    return -1;
}

static int add_node(kl *k, uint32_t p, uint32_t v)
{
    if (slot_of(k, v, p) >= 0)
        return PARTD_OK;
    if (k->mn[v] == k->mcap[v]) {
        uint32_t cap = k->mcap[v] ? 2 * k->mcap[v] : 2;
        ent *e = realloc(k->m[v], cap * sizeof *e);
        if (!e)
            return PARTD_ENOMEM;
        k->m[v] = e;
        k->mcap[v] = cap;
    }
    k->m[v][k->mn[v]++] = (ent){p, 0};
    note(k, v);
    if (k->mn[v] == 2)
        k->n_dups++;
    return PARTD_OK;
}

static void remove_node(kl *k, uint32_t p, uint32_t v)
{
    int s = slot_of(k, v, p);
    if (s < 0)
        return;
    k->m[v][s] = k->m[v][--k->mn[v]];
    note(k, v);
    if (k->mn[v] == 1)
        k->n_dups--;
}

/* FX's swap_nodes(n0, n1, p0, p1); either node may be PARTD_NONE. */
static int swap_nodes(kl *k, uint32_t n0, uint32_t n1, uint32_t p0, uint32_t p1)
{
    int rc = PARTD_OK;
    if (n0 != PARTD_NONE) {
        remove_node(k, p0, n0);
        rc = add_node(k, p1, n0);
    }
    if (n1 != PARTD_NONE && rc == PARTD_OK) {
        rc = add_node(k, p0, n1);
        remove_node(k, p1, n1);
    }
    return rc;
}

/* used[] (Partition.recalculate_mem_size) and the operations of each
 * partition. */
static int memory(kl *k)
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
                if (!partd__fx_is_constant(g, u) && slot_of(k, u, p) < 0)
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

static void accumulate(kl *k, uint64_t t, uint32_t *nt, uint32_t a, int64_t bytes, int edge)
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
static int edges(kl *k)
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
                    int outside = slot_of(k, u, q) < 0;
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
static int on_cycle(kl *k, uint32_t p)
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
static int map_devices(kl *k, uint32_t *dev)
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
                if (partd__fx_is_constant(g, u) || slot_of(k, u, p) >= 0)
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
        return dev[a] != PARTD_NONE && dev[a] == dev[b];
    const partd_part *x = &sb->parts[a], *y = &sb->parts[b];
    return x->n_devices && x->n_devices == y->n_devices &&
           memcmp(x->devices, y->devices, x->n_devices * sizeof *x->devices) == 0;
}

/* get_latency_of_partitioned_graph with devices dev, or sb's (seconds),
 * after memory() and edges(): FX walks from the partitions without
 * parents, so only what they reach counts, and a cycle they reach never
 * ends (RAISED). */
static double latency(kl *k, const uint32_t *dev, const partd_plan *sb)
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
                int su = slot_of(k, g->in_idx[j], p);
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
    return tail < n_reach ? RAISED : worst;
}

/* The incremental state. While no operation is in two partitions, a try
 * changes the partitions of one or two operations, so what FX recomputes
 * for the whole list is kept up to date instead: each partition's memory,
 * the partitions' links (dense P x P tables: op edges, bytes per edge for
 * the device mapping's credit, FX's comm bytes per link), and the longest
 * path ending at each operation within its partition, recomputed in a
 * partition from the lowest operation a change can reach. All of it is a
 * function of the list alone (integer sums, and the same longest-path
 * recurrence over the same inputs), so a try's cost is the full
 * recomputation's to the bit. add_node and remove_node note each operation
 * they change; sync() carries the notes over when nothing is in two
 * partitions, and the full recomputation serves while something is. */
#define FAST_MAX_P 256u

static void note(kl *k, uint32_t v)
{
    fast *f = &k->f;
    if (!k->track || f->is_pending[v])
        return;
    f->is_pending[v] = 1;
    f->pending[f->n_pending++] = v;
}

/* users of op u in partition q */
static int users_in(const kl *k, uint32_t u, uint32_t q)
{
    const partd_graph *g = k->g;
    for (uint32_t j = g->user_off[u]; j < g->user_off[u + 1]; j++)
        if (k->f.part[g->user_idx[j]] == q)
            return 1;
    return 0;
}

static uint32_t lower_bound(const uint32_t *a, uint32_t n, uint32_t v)
{
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (a[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void stale_from(fast *f, uint32_t p, uint32_t v)
{
    if (f->from[p] == PARTD_NONE || v < f->from[p])
        f->from[p] = v;
}

/* op v leaves its partition */
static void detach(kl *k, uint32_t v)
{
    const partd_graph *g = k->g;
    fast *f = &k->f;
    uint32_t P = f->P, a = f->part[v];
    f->part[v] = PARTD_NONE;
    uint32_t i = lower_bound(f->pl[a], f->pn[a], v);
    memmove(f->pl[a] + i, f->pl[a] + i + 1, (f->pn[a] - i - 1) * sizeof *f->pl[a]);
    f->pn[a]--;
    stale_from(f, a, v);
    f->used[a] -= partd__fx_total(g, v);
    uint64_t t = ++k->tok;
    for (uint32_t j = g->in_off[v]; j < g->in_off[v + 1]; j++) {
        uint32_t u = g->in_idx[j];
        int64_t ou = partd__fx_output(g, u);
        if (partd__fx_is_constant(g, u)) {
            uint32_t *cc = f->cc + (size_t)f->cid[u] * P;
            if (--cc[a] == 0) {
                f->used[a] -= partd__fx_total(g, u);
                for (uint32_t b = 0; b < P; b++)
                    if (b != a && cc[b]) {
                        f->c[(size_t)a * P + b] -= ou;
                        f->c[(size_t)b * P + a] -= ou;
                    }
            }
            continue;
        }
        uint32_t s = f->part[u];
        if (s != a)
            f->used[a] -= ou;
        if (s == PARTD_NONE || s == a)
            continue;
        f->ec[(size_t)s * P + a]--;
        f->w[(size_t)a * P + s] -= ou;
        if (k->nstamp[u] != t) {
            k->nstamp[u] = t;
            if (!users_in(k, u, a))
                f->c[(size_t)s * P + a] -= ou;
        }
    }
    int64_t ov = partd__fx_output(g, v);
    t = ++k->tok;
    for (uint32_t j = g->user_off[v]; j < g->user_off[v + 1]; j++) {
        uint32_t b = f->part[g->user_idx[j]];
        if (b == PARTD_NONE)
            continue;
        if (b == a) {
            f->used[a] += ov;
            continue;
        }
        f->ec[(size_t)a * P + b]--;
        f->w[(size_t)b * P + a] -= ov;
        if (k->pstamp[b] != t) {
            k->pstamp[b] = t;
            f->c[(size_t)a * P + b] -= ov;
        }
    }
}

/* op v, in no partition, joins b */
static int attach(kl *k, uint32_t v, uint32_t b)
{
    const partd_graph *g = k->g;
    fast *f = &k->f;
    uint32_t P = f->P;
    if (f->pn[b] == f->pcap[b]) {
        uint32_t cap = f->pcap[b] ? 2 * f->pcap[b] : 64;
        uint32_t *pl = realloc(f->pl[b], (size_t)cap * sizeof *pl);
        if (!pl)
            return PARTD_ENOMEM;
        f->pl[b] = pl;
        f->pcap[b] = cap;
    }
    f->used[b] += partd__fx_total(g, v);
    uint64_t t = ++k->tok;
    for (uint32_t j = g->in_off[v]; j < g->in_off[v + 1]; j++) {
        uint32_t u = g->in_idx[j];
        int64_t ou = partd__fx_output(g, u);
        if (partd__fx_is_constant(g, u)) {
            uint32_t *cc = f->cc + (size_t)f->cid[u] * P;
            if (cc[b]++ == 0) {
                f->used[b] += partd__fx_total(g, u);
                for (uint32_t q = 0; q < P; q++)
                    if (q != b && cc[q]) {
                        f->c[(size_t)b * P + q] += ou;
                        f->c[(size_t)q * P + b] += ou;
                    }
            }
            continue;
        }
        uint32_t s = f->part[u];
        if (s != b)
            f->used[b] += ou;
        if (s == PARTD_NONE || s == b)
            continue;
        f->ec[(size_t)s * P + b]++;
        f->w[(size_t)b * P + s] += ou;
        if (k->nstamp[u] != t) {
            k->nstamp[u] = t;
            if (!users_in(k, u, b))
                f->c[(size_t)s * P + b] += ou;
        }
    }
    int64_t ov = partd__fx_output(g, v);
    t = ++k->tok;
    for (uint32_t j = g->user_off[v]; j < g->user_off[v + 1]; j++) {
        uint32_t q = f->part[g->user_idx[j]];
        if (q == PARTD_NONE)
            continue;
        if (q == b) {
            f->used[b] -= ov;
            continue;
        }
        f->ec[(size_t)b * P + q]++;
        f->w[(size_t)q * P + b] += ov;
        if (k->pstamp[q] != t) {
            k->pstamp[q] = t;
            f->c[(size_t)b * P + q] += ov;
        }
    }
    f->part[v] = b;
    uint32_t i = lower_bound(f->pl[b], f->pn[b], v);
    memmove(f->pl[b] + i + 1, f->pl[b] + i, (f->pn[b] - i) * sizeof *f->pl[b]);
    f->pl[b][i] = v;
    f->pn[b]++;
    stale_from(f, b, v);
    return PARTD_OK;
}

/* the longest paths of partition p from its first stale operation on, and
 * its critical path (latency()'s recurrence) */
static void repath(kl *k, uint32_t p)
{
    const partd_graph *g = k->g;
    fast *f = &k->f;
    const uint32_t *pl = f->pl[p];
    uint32_t n = f->pn[p];
    for (uint32_t i = lower_bound(pl, n, f->from[p]); i < n; i++) {
        uint32_t v = pl[i];
        double top = 0;
        for (uint32_t j = g->in_off[v]; j < g->in_off[v + 1]; j++) {
            uint32_t u = g->in_idx[j];
            if (f->part[u] == p && f->d[u] > top)
                top = f->d[u];
        }
        f->d[v] = top + f->sec[v];
    }
    double lat = 0;
    for (uint32_t i = 0; i < n; i++)
        if (f->d[pl[i]] > lat)
            lat = f->d[pl[i]];
    f->lat[p] = lat;
    f->from[p] = PARTD_NONE;
}

/* The incremental state brought up to the list: *ready 1, or 0 while an
 * operation is in two partitions (or the state is off). */
static int sync(kl *k, int *ready)
{
    fast *f = &k->f;
    *ready = 0;
    if (!f->on || k->n_dups)
        return PARTD_OK;
    for (uint32_t i = 0; i < f->n_pending; i++) {
        uint32_t v = f->pending[i];
        uint32_t want = k->mn[v] ? k->m[v][0].p : PARTD_NONE;
        f->is_pending[v] = 0;
        if (want == f->part[v])
            continue;
        if (f->part[v] != PARTD_NONE)
            detach(k, v);
        if (want != PARTD_NONE && attach(k, v, want) != PARTD_OK) {
            f->on = 0; /* half carried over: the full recomputation from here */
            return PARTD_ENOMEM;
        }
    }
    f->n_pending = 0;
    for (uint32_t p = 0; p < f->P; p++)
        if (f->from[p] != PARTD_NONE)
            repath(k, p);
    *ready = 1;
    return PARTD_OK;
}

/* on_cycle over the tables */
static int on_cycle_fast(kl *k, uint32_t p)
{
    const fast *f = &k->f;
    uint32_t P = f->P, head = 0, tail = 0;
    uint64_t t = ++k->tok;
    k->pstamp[p] = t;
    k->queue[tail++] = p;
    while (head < tail) {
        const uint32_t *row = f->ec + (size_t)k->queue[head++] * P;
        for (uint32_t c = 0; c < P; c++) {
            if (!row[c])
                continue;
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

/* map_devices over the tables: a partition's credit on a device is the
 * bytes per edge it reads from the partitions there */
static int map_fast(kl *k, uint32_t *dev)
{
    const fast *f = &k->f;
    uint32_t D = k->D, P = f->P;
    for (uint32_t d = 0; d < D; d++) {
        k->left[d] = k->req->devices[d].memory_bytes;
        k->order[d] = d;
    }
    for (uint32_t p = 0; p < P; p++)
        if (dev[p] != PARTD_NONE)
            k->left[dev[p]] -= f->used[p];
    for (uint32_t p = 0; p < P; p++) {
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
        const int64_t *row = f->w + (size_t)p * P;
        for (uint32_t s = 0; s < P; s++)
            if (s != p && dev[s] != PARTD_NONE)
                k->credit[dev[s]] += row[s];
        uint32_t chosen = PARTD_NONE;
        int64_t extra = 0;
        for (uint32_t j = 0; j < D && chosen == PARTD_NONE; j++) {
            uint32_t d = k->order[j];
            extra = f->used[p] - k->credit[d];
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

/* latency() over the tables */
static double latency_fast(kl *k, const uint32_t *dev)
{
    const fast *f = &k->f;
    uint32_t P = f->P, head = 0, tail = 0, n_reach = 0;
    for (uint32_t q = 0; q < P; q++) {
        k->reach[q] = 0;
        k->indeg[q] = 0;
        for (uint32_t a = 0; a < P; a++)
            k->indeg[q] += f->ec[(size_t)a * P + q] != 0;
    }
    for (uint32_t q = 0; q < P; q++)
        if (!k->indeg[q]) {
            k->reach[q] = 1;
            k->queue[tail++] = q;
        }
    while (head < tail) {
        const uint32_t *row = f->ec + (size_t)k->queue[head++] * P;
        n_reach++;
        for (uint32_t c = 0; c < P; c++)
            if (row[c] && !k->reach[c]) {
                k->reach[c] = 1;
                k->queue[tail++] = c;
            }
    }
    head = tail = 0;
    for (uint32_t q = 0; q < P; q++) {
        k->indeg[q] = 0;
        if (!k->reach[q])
            continue;
        for (uint32_t a = 0; a < P; a++)
            k->indeg[q] += f->ec[(size_t)a * P + q] && k->reach[a];
        if (!k->indeg[q])
            k->queue[tail++] = q;
    }
    double worst = 0, rate = k->req->options.transfer_bytes_per_sec;
    while (head < tail) {
        uint32_t q = k->queue[head++];
        double in = 0;
        for (uint32_t a = 0; a < P; a++) {
            if (!f->ec[(size_t)a * P + q] || !k->reach[a])
                continue;
            double comm = same_devices(dev, NULL, a, q) ? 0.0 : (double)f->c[(size_t)a * P + q] / rate;
            double x = k->best[a] + comm;
            if (x > in)
                in = x;
        }
        k->best[q] = in + f->lat[q];
        if (k->best[q] > worst)
            worst = k->best[q];
        const uint32_t *row = f->ec + (size_t)q * P;
        for (uint32_t c = 0; c < P; c++)
            if (row[c] && --k->indeg[c] == 0)
                k->queue[tail++] = c;
    }
    return tail < n_reach ? RAISED : worst;
}

/* try_swap's costing over the tables */
static double cost_fast(kl *k, uint32_t p0, uint32_t p1)
{
    if (on_cycle_fast(k, p0) || on_cycle_fast(k, p1))
        return INFINITY;
    for (uint32_t p = 0; p < k->P; p++)
        k->fdev[p] = PARTD_NONE;
    return map_fast(k, k->fdev) ? latency_fast(k, k->fdev) : INFINITY;
}

static int fast_init(kl *k)
{
    const partd_graph *g = k->g;
    fast *f = &k->f;
    uint32_t P = k->P, n_const = 0;
    for (uint32_t v = 0; v < k->n; v++)
        n_const += partd__fx_is_constant(g, v) != 0;
    if (P < 2 || P > FAST_MAX_P || (uint64_t)n_const * P > (1u << 22))
        return PARTD_OK; /* the full recomputation throughout */
    size_t N = (size_t)k->n + 1, PP = (size_t)P * P;
    f->P = P;
    f->part = malloc(N * sizeof *f->part);
    f->sec = malloc(N * sizeof *f->sec);
    f->d = calloc(N, sizeof *f->d);
    f->cid = malloc(N * sizeof *f->cid);
    f->pending = malloc(N * sizeof *f->pending);
    f->is_pending = calloc(N, 1);
    f->lat = calloc(P, sizeof *f->lat);
    f->used = calloc(P, sizeof *f->used);
    f->from = malloc(P * sizeof *f->from);
    f->pn = calloc(P, sizeof *f->pn);
    f->pl = calloc(P, sizeof *f->pl);
    f->pcap = calloc(P, sizeof *f->pcap);
    f->cc = calloc((size_t)n_const * P + 1, sizeof *f->cc);
    f->ec = calloc(PP, sizeof *f->ec);
    f->w = calloc(PP, sizeof *f->w);
    f->c = calloc(PP, sizeof *f->c);
    if (!f->part || !f->sec || !f->d || !f->cid || !f->pending || !f->is_pending || !f->lat ||
        !f->used || !f->from || !f->pn || !f->pl || !f->pcap || !f->cc || !f->ec || !f->w || !f->c)
        return PARTD_ENOMEM;
    for (uint32_t p = 0; p < P; p++)
        f->from[p] = PARTD_NONE;
    for (uint32_t v = 0, c = 0; v < k->n; v++) {
        f->part[v] = PARTD_NONE;
        f->sec[v] = partd__fx_node_sec(g, v);
        f->cid[v] = partd__fx_is_constant(g, v) ? c++ : PARTD_NONE;
    }
    f->on = 1;
    return PARTD_OK;
}

static void fast_free(fast *f)
{
    for (uint32_t p = 0; f->pl && p < f->P; p++)
        free(f->pl[p]);
    free(f->pl);
    free(f->part);
    free(f->sec);
    free(f->d);
    free(f->cid);
    free(f->pending);
    free(f->is_pending);
    free(f->lat);
    free(f->used);
    free(f->from);
    free(f->pn);
    free(f->pcap);
    free(f->cc);
    free(f->ec);
    free(f->w);
    free(f->c);
}

/* try_swap's costing by the full recomputation */
static int cost_full(kl *k, uint32_t p0, uint32_t p1, double *cost)
{
    int rc = memory(k);
    if (rc == PARTD_OK)
        rc = edges(k);
    if (rc != PARTD_OK)
        return rc;
    *cost = INFINITY;
    if (!on_cycle(k, p0) && !on_cycle(k, p1)) {
        for (uint32_t p = 0; p < k->P; p++)
            k->fdev[p] = PARTD_NONE;
        if (map_devices(k, k->fdev))
            *cost = latency(k, k->fdev, NULL);
    }
    return PARTD_OK;
}

/* FX's try_swap_nodes: the cost of the list with the swap made, and the
 * swap undone by the reverse calls; the list is then mapped afresh. */
static int try_swap(kl *k, uint32_t n0, uint32_t n1, uint32_t p0, uint32_t p1, double *cost)
{
    int ready = 0, rc = swap_nodes(k, n0, n1, p0, p1);
    if (rc == PARTD_OK)
        rc = sync(k, &ready);
    if (rc != PARTD_OK)
        return rc;
    if (!ready) {
        if ((rc = cost_full(k, p0, p1, cost)) != PARTD_OK)
            return rc;
    } else {
        *cost = cost_fast(k, p0, p1);
        if (k->check) {
            double full;
            memcpy(k->fdev2, k->fdev, k->P * sizeof *k->fdev);
            if ((rc = cost_full(k, p0, p1, &full)) != PARTD_OK)
                return rc;
            if (memcmp(&full, cost, sizeof full) != 0 ||
                memcmp(k->used, k->f.used, k->P * sizeof *k->used) != 0 ||
                memcmp(k->fdev2, k->fdev, k->P * sizeof *k->fdev) != 0)
                k->mismatch = 1;
        }
    }
    k->dev_stale = 1;
    return swap_nodes(k, n1, n0, p0, p1);
}

/* map_devices(dev) on the list as it is now */
static int map_list(kl *k, uint32_t *dev)
{
    int ready, rc = sync(k, &ready);
    if (rc != PARTD_OK)
        return rc;
    if (!ready) {
        if ((rc = memory(k)) == PARTD_OK)
            map_devices(k, dev);
        return rc;
    }
    if (k->check) {
        memcpy(k->fdev2, dev, k->P * sizeof *dev);
        if ((rc = memory(k)) != PARTD_OK)
            return rc;
        map_devices(k, k->fdev2);
    }
    map_fast(k, dev);
    if (k->check && (memcmp(k->fdev2, dev, k->P * sizeof *dev) != 0 ||
                     memcmp(k->used, k->f.used, k->P * sizeof *k->used) != 0))
        k->mismatch = 1;
    return PARTD_OK;
}

/* dev as FX holds it: the fresh mapping of the list after the last try. */
static int settle_devices(kl *k)
{
    if (!k->dev_stale)
        return PARTD_OK;
    for (uint32_t p = 0; p < k->P; p++)
        k->dev[p] = PARTD_NONE;
    int rc = map_list(k, k->dev);
    if (rc == PARTD_OK)
        k->dev_stale = 0;
    return rc;
}

/* p1's operations in graph order (list(p1.nodes) without its placeholders
 * and get_attrs, which FX skips) into list, *n of them. */
static int snapshot(kl *k, uint32_t p1, uint32_t *n)
{
    int ready, rc = sync(k, &ready);
    if (rc != PARTD_OK)
        return rc;
    if (ready) {
        *n = k->f.pn[p1];
        memcpy(k->list, k->f.pl[p1], *n * sizeof *k->list);
        return PARTD_OK;
    }
    uint32_t c = 0;
    for (uint32_t v = 0; v < k->n; v++)
        if (slot_of(k, v, p1) >= 0)
            k->list[c++] = v;
    *n = c;
    return PARTD_OK;
}

static int has_shared(const kl *k, uint32_t p0, uint32_t p1)
{
    if (!k->n_dups)
        return 0;
    for (uint32_t v = 0; v < k->n; v++)
        if (k->mn[v] > 1 && slot_of(k, v, p0) >= 0 && slot_of(k, v, p1) >= 0)
            return 1;
    return 0;
}

typedef struct pick {
    uint32_t n0, n1, p0, p1;
    int have;
} pick;

/* swap_node_to_partition(node, p0, p1) and what kl_based_partition does
 * with its answer. *raised when a try's costing never ends in FX. */
static int visit(kl *k, uint32_t node, uint32_t p0, uint32_t p1, double *cost, pick *pk,
                 int *raised)
{
    double c = INFINITY, min = INFINITY;
    uint32_t best = PARTD_NONE;
    int rc, clean = k->mn[node] == 1 && k->m[node][0].p == p0 && !has_shared(k, p0, p1);
    if (clean) {
        /* every try leaves the list as it was: the pairs matter only when
         * the move (FX's answer for p1) beats the best so far */
        if ((rc = try_swap(k, node, PARTD_NONE, p0, p1, &c)) != PARTD_OK)
            return rc;
        if (c == RAISED) {
            *raised = 1;
            return PARTD_OK;
        }
        if (!(c < *cost))
            return PARTD_OK;
        double move = c;
        uint32_t n;
        if ((rc = snapshot(k, p1, &n)) != PARTD_OK)
            return rc;
        for (uint32_t i = 0; i < n; i++) {
            if ((rc = try_swap(k, node, k->list[i], p0, p1, &c)) != PARTD_OK)
                return rc;
            if (c == RAISED) {
                *raised = 1;
                return PARTD_OK;
            }
            if (c < min) {
                min = c;
                best = k->list[i];
            }
        }
        if (move < min)
            best = PARTD_NONE;
        *cost = move;
    } else {
        uint32_t n;
        if ((rc = snapshot(k, p1, &n)) != PARTD_OK)
            return rc;
        int found = 0;
        for (uint32_t i = 0; i <= n; i++) {
            uint32_t n1 = i < n ? k->list[i] : PARTD_NONE;
            if ((rc = try_swap(k, node, n1, p0, p1, &c)) != PARTD_OK)
                return rc;
            if (c == RAISED) {
                *raised = 1;
                return PARTD_OK;
            }
            if (c < min) {
                min = c;
                best = n1;
                found = 1;
            }
        }
        if (!(c < *cost) || !found)
            return PARTD_OK;
        *cost = c;
    }
    *pk = (pick){node, best, p0, p1, 1};
    return PARTD_OK;
}

/* The plan of the list (nothing in two partitions) with devices dev, or
 * sb's, empty partitions left out. */
static int plan_of(kl *k, const uint32_t *dev, const partd_plan *sb, double sec,
                   partd_plan **out)
{
    const partd_graph *g = k->g;
    uint32_t P = k->P, n_keep = 0;
    uint32_t *part_of = malloc(((size_t)k->n + 1) * sizeof *part_of);
    uint32_t *id = malloc(((size_t)P + 1) * sizeof *id);
    uint32_t *dev_off = malloc(((size_t)P + 2) * sizeof *dev_off);
    size_t nd = P;
    for (uint32_t p = 0; sb && p < P; p++)
        nd += sb->parts[p].n_devices;
    uint32_t *dev_idx = malloc((nd + 1) * sizeof *dev_idx);
    int64_t *used = malloc(((size_t)P + 1) * sizeof *used);
    int rc = PARTD_ENOMEM;
    if (!part_of || !id || !dev_off || !dev_idx || !used)
        goto out;
    uint32_t at = 0;
    for (uint32_t p = 0; p < P; p++) {
        id[p] = PARTD_NONE;
        if (k->po_off[p] == k->po_off[p + 1])
            continue;
        id[p] = n_keep;
        dev_off[n_keep] = at;
        if (sb)
            for (uint32_t i = 0; i < sb->parts[p].n_devices; i++)
                dev_idx[at++] = sb->parts[p].devices[i];
        else if (dev[p] != PARTD_NONE)
            dev_idx[at++] = dev[p];
        used[n_keep++] = k->used[p];
    }
    dev_off[n_keep] = at;
    for (uint32_t v = 0; v < k->n; v++)
        part_of[v] = k->mn[v] ? id[k->m[v][0].p] : PARTD_NONE;
    partd__fx_layout l = {n_keep, part_of, dev_off, dev_idx};
    (void)g;
    rc = partd__fx_plan(k->req, PARTD_MODE_KL_BASED, &l, used, sec, out);
out:
    free(part_of);
    free(id);
    free(dev_off);
    free(dev_idx);
    free(used);
    return rc;
}

/* FX's own rules on the final list: nothing in two partitions, every
 * partition with operations on a device, no cycle, each device within its
 * memory (the union of its partitions' nodes, each with its inputs from
 * outside the union). */
static int on_device(const uint32_t *dev, const partd_plan *sb, uint32_t p, uint32_t d)
{
    if (!sb)
        return dev[p] == d;
    for (uint32_t i = 0; i < sb->parts[p].n_devices; i++)
        if (sb->parts[p].devices[i] == d)
            return 1;
    return 0;
}

static int valid(kl *k, const uint32_t *dev, const partd_plan *sb)
{
    const partd_graph *g = k->g;
    if (k->n_dups)
        return 0;
    for (uint32_t p = 0; p < k->P; p++)
        if (k->po_off[p] != k->po_off[p + 1] && (sb ? !sb->parts[p].n_devices : dev[p] == PARTD_NONE))
            return 0;
    /* a cycle anywhere: Kahn's algorithm over every partition */
    uint32_t head = 0, tail = 0;
    for (uint32_t q = 0; q < k->P; q++) {
        k->indeg[q] = k->e_off[q + 1] - k->e_off[q];
        if (!k->indeg[q])
            k->queue[tail++] = q;
    }
    while (head < tail) {
        uint32_t a = k->queue[head++];
        for (uint32_t j = k->ch_off[a]; j < k->ch_off[a + 1]; j++)
            if (--k->indeg[k->ch[j]] == 0)
                k->queue[tail++] = k->ch[j];
    }
    if (tail < k->P)
        return 0;
    for (uint32_t d = 0; d < k->D; d++) {
        int64_t held = 0;
        uint64_t t = ++k->tok;
        for (uint32_t v = 0; v < k->n; v++) {
            if (!k->mn[v] || !on_device(dev, sb, k->m[v][0].p, d))
                continue;
            held += partd__fx_total(g, v);
            for (uint32_t j = g->in_off[v]; j < g->in_off[v + 1]; j++) {
                uint32_t u = g->in_idx[j];
                if (partd__fx_is_constant(g, u)) {
                    if (k->nstamp[u] != t) {
                        k->nstamp[u] = t;
                        held += partd__fx_total(g, u);
                    }
                } else if (!k->mn[u] || !on_device(dev, sb, k->m[u][0].p, d)) {
                    held += partd__fx_output(g, u);
                }
            }
        }
        if (held > k->req->devices[d].memory_bytes)
            return 0;
    }
    return 1;
}

/* size_based's list and devices obey FX's rules (its greedy pass can put
 * a partition on a device too small for it); 1, 0, or -1 on ENOMEM. */
static int sb_valid(kl *k, const partd_plan *sb)
{
    kl t = *k;
    t.n_dups = 0;
    t.track = 0;
    t.f.on = 0;
    t.m = calloc(k->n + (size_t)1, sizeof *t.m);
    t.mn = calloc(k->n + (size_t)1, sizeof *t.mn);
    t.mcap = calloc(k->n + (size_t)1, sizeof *t.mcap);
    t.po = NULL;
    t.po_cap = 0;
    t.e_src = malloc(k->e_cap * sizeof *t.e_src);
    t.e_bytes = malloc(k->e_cap * sizeof *t.e_bytes);
    t.ch = NULL;
    int ok = -1;
    if (t.m && t.mn && t.mcap && t.e_src && t.e_bytes) {
        int rc = PARTD_OK;
        for (uint32_t p = 0; p < sb->n_parts && rc == PARTD_OK; p++)
            for (uint32_t i = 0; i < sb->parts[p].n_nodes && rc == PARTD_OK; i++)
                rc = add_node(&t, p, sb->parts[p].nodes[i]);
        if (rc == PARTD_OK)
            rc = memory(&t);
        if (rc == PARTD_OK)
            rc = edges(&t);
        if (rc == PARTD_OK)
            ok = valid(&t, t.dev, sb);
    }
    for (uint32_t v = 0; t.m && v < k->n; v++)
        free(t.m[v]);
    free(t.m);
    free(t.mn);
    free(t.mcap);
    free(t.po);
    free(t.e_src);
    free(t.e_bytes);
    free(t.ch);
    k->tok = t.tok;
    return ok;
}

/* Where FX's answer is broken: the list mapped afresh when that is valid,
 * or size_based's plan when that is, whichever costs less (the list on
 * ties); PARTD_EINFEASIBLE when neither is. */
static int instead(kl *k, const partd_plan *sb, double sb_sec, partd_plan **out,
                   partd_problem *pb)
{
    int rc = memory(k);
    if (rc == PARTD_OK)
        rc = edges(k);
    if (rc != PARTD_OK)
        return rc;
    for (uint32_t p = 0; p < k->P; p++)
        k->fdev[p] = PARTD_NONE;
    int sb_ok = sb_valid(k, sb);
    if (sb_ok < 0)
        return PARTD_ENOMEM;
    if (!k->n_dups && map_devices(k, k->fdev) && valid(k, k->fdev, NULL)) {
        double sec = latency(k, k->fdev, NULL);
        if (sec != RAISED && (!sb_ok || sec <= sb_sec))
            return plan_of(k, k->fdev, NULL, sec, out);
    }
    if (!sb_ok) {
        partd_problem_set(pb, 422, "infeasible", "No feasible plan",
                          "FX's kl_based pass ends with a device over its memory, and neither "
                          "its partitions nor size_based's map onto the devices within their memory");
        partd_problem_add(pb, "/devices", "too little memory for FX's kl_based partitions");
        return PARTD_EINFEASIBLE;
    }
    /* back to size_based's list and devices */
    for (uint32_t v = 0; v < k->n; v++)
        while (k->mn[v])
            remove_node(k, k->m[v][0].p, v);
    for (uint32_t p = 0; p < sb->n_parts; p++) {
        for (uint32_t i = 0; i < sb->parts[p].n_nodes; i++)
            if ((rc = add_node(k, p, sb->parts[p].nodes[i])) != PARTD_OK)
                return rc;
    }
    if ((rc = memory(k)) != PARTD_OK)
        return rc;
    return plan_of(k, k->fdev, sb, sb_sec, out);
}

static int run(kl *k, const partd_plan *sb, const partd_cancel *cancel, partd_plan **out,
               partd_problem *pb)
{
    const partd_graph *g = k->g;
    int rc = PARTD_OK;
    uint32_t *home = malloc(((size_t)k->n + 1) * sizeof *home);
    if (!home)
        return PARTD_ENOMEM;
    for (uint32_t v = 0; v < k->n; v++)
        home[v] = PARTD_NONE;
    if ((rc = fast_init(k)) != PARTD_OK)
        goto out;
    k->track = k->f.on;
    for (uint32_t p = 0; p < k->P && rc == PARTD_OK; p++) {
        if (!sb->parts[p].n_devices) {
            rc = PARTD_EINTERNAL; /* size_based maps every partition */
            break;
        }
        k->dev[p] = sb->parts[p].devices[0];
        for (uint32_t i = 0; i < sb->parts[p].n_nodes && rc == PARTD_OK; i++) {
            home[sb->parts[p].nodes[i]] = p;
            rc = add_node(k, p, sb->parts[p].nodes[i]);
        }
    }
    if (rc == PARTD_OK)
        rc = memory(k);
    if (rc == PARTD_OK)
        rc = edges(k);
    if (rc != PARTD_OK)
        goto out;
    double cost = latency(k, k->dev, sb), sb_sec = cost;
    if (cost == RAISED) {
        rc = PARTD_EINTERNAL; /* size_based's partitions follow node order */
        goto out;
    }
    if (k->P == 1) {
        /* nothing to swap with: size_based's partition and devices */
        int ok = sb_valid(k, sb);
        rc = ok < 0 ? PARTD_ENOMEM
             : ok   ? plan_of(k, k->dev, sb, cost, out)
                    : instead(k, sb, sb_sec, out, pb);
        goto out;
    }
    pick pk = {0};
    int raised = 0;
    for (uint32_t node = 0; node < k->n && !raised; node++) {
        if (!partd_op_is_operation(g->op[node]))
            continue;
        if ((rc = partd_cancel_check(cancel)) != PARTD_OK)
            goto out;
        uint32_t p0 = home[node];
        for (uint32_t p1 = 0; p1 < k->P && !raised; p1++)
            if (p1 != p0 && (rc = visit(k, node, p0, p1, &cost, &pk, &raised)) != PARTD_OK)
                goto out;
        if (raised || !pk.have)
            continue;
        /* the pair is swapped with the devices the last try left */
        if ((rc = settle_devices(k)) != PARTD_OK ||
            (rc = swap_nodes(k, pk.n0, pk.n1, pk.p0, pk.p1)) != PARTD_OK ||
            (rc = map_list(k, k->dev)) != PARTD_OK)
            goto out;
    }
    if (!raised) {
        if ((rc = settle_devices(k)) != PARTD_OK || (rc = memory(k)) != PARTD_OK)
            goto out;
        map_devices(k, k->dev);
        if ((rc = edges(k)) != PARTD_OK)
            goto out;
        if (valid(k, k->dev, NULL)) {
            double sec = latency(k, k->dev, NULL);
            if (sec == RAISED)
                rc = PARTD_EINTERNAL; /* valid: no cycle */
            else
                rc = plan_of(k, k->dev, NULL, sec, out);
            goto out;
        }
    }
    rc = instead(k, sb, sb_sec, out, pb);
out:
    free(home);
    return rc;
}

static int kl_based(const partd_request *req, const partd_cancel *cancel, partd_plan **out,
                    partd_problem *problem, int check)
{
    const partd_graph *g = &req->graph;
    int rc = partd__fx_whole(req, PARTD_MODE_KL_BASED, out, problem);
    if (rc != PARTD_OK || *out)
        return rc;
    partd_plan *sb = NULL;
    if ((rc = partd_size_based(req, cancel, &sb, problem)) != PARTD_OK)
        return rc;
    kl k = {0};
    k.req = req;
    k.g = g;
    k.n = g->n_nodes;
    k.P = sb->n_parts;
    k.D = req->n_devices;
    size_t N = (size_t)k.n + 1, P = (size_t)k.P + 2, D = (size_t)k.D + 1;
    k.m = calloc(N, sizeof *k.m);
    k.mn = calloc(N, sizeof *k.mn);
    k.mcap = calloc(N, sizeof *k.mcap);
    k.nstamp = calloc(N, sizeof *k.nstamp);
    k.list = malloc(N * sizeof *k.list);
    k.dev = malloc(P * sizeof *k.dev);
    k.fdev = malloc(P * sizeof *k.fdev);
    k.fdev2 = malloc(P * sizeof *k.fdev2);
    k.check = check;
    k.pstamp = calloc(P, sizeof *k.pstamp);
    k.astamp = calloc(P, sizeof *k.astamp);
    k.used = malloc(P * sizeof *k.used);
    k.po_off = malloc(P * sizeof *k.po_off);
    k.e_off = malloc(P * sizeof *k.e_off);
    k.e_cap = 64;
    k.e_src = malloc(k.e_cap * sizeof *k.e_src);
    k.e_bytes = malloc(k.e_cap * sizeof *k.e_bytes);
    k.ch_off = malloc(P * sizeof *k.ch_off);
    k.acc = malloc(P * sizeof *k.acc);
    k.flag = malloc(P * sizeof *k.flag);
    k.touched = malloc(P * sizeof *k.touched);
    k.lat = malloc(P * sizeof *k.lat);
    k.best = malloc(P * sizeof *k.best);
    k.indeg = malloc(P * sizeof *k.indeg);
    k.queue = malloc(P * sizeof *k.queue);
    k.reach = malloc(P * sizeof *k.reach);
    k.dstamp = calloc(D, sizeof *k.dstamp);
    k.left = malloc(D * sizeof *k.left);
    k.credit = malloc(D * sizeof *k.credit);
    k.order = malloc(D * sizeof *k.order);
    rc = PARTD_ENOMEM;
    if (k.m && k.mn && k.mcap && k.nstamp && k.list && k.dev && k.fdev && k.fdev2 && k.pstamp &&
        k.astamp && k.used && k.po_off && k.e_off && k.e_src && k.e_bytes && k.ch_off &&
        k.acc && k.flag && k.touched && k.lat && k.best && k.indeg && k.queue && k.reach &&
        k.dstamp && k.left && k.credit && k.order)
        rc = run(&k, sb, cancel, out, problem);
    if (rc == PARTD_OK && k.mismatch)
        rc = PARTD_EINTERNAL;
    fast_free(&k.f);
    for (uint32_t v = 0; k.m && v < k.n; v++)
        free(k.m[v]);
    free(k.m);
    free(k.mn);
    free(k.mcap);
    free(k.nstamp);
    free(k.list);
    free(k.dev);
    free(k.fdev);
    free(k.fdev2);
    free(k.pstamp);
    free(k.astamp);
    free(k.used);
    free(k.po_off);
    free(k.po);
    free(k.e_off);
    free(k.e_src);
    free(k.e_bytes);
    free(k.ch_off);
    free(k.ch);
    free(k.acc);
    free(k.flag);
    free(k.touched);
    free(k.lat);
    free(k.best);
    free(k.indeg);
    free(k.queue);
    free(k.reach);
    free(k.dstamp);
    free(k.left);
    free(k.credit);
    free(k.order);
    partd_plan_free(sb);
    if (rc != PARTD_OK && *out) {
        partd_plan_free(*out);
        *out = NULL;
    }
    return rc;
}

int partd_kl_based(const partd_request *req, const partd_cancel *cancel, partd_plan **out,
                   partd_problem *problem)
{
    return kl_based(req, cancel, out, problem, 0);
}

int partd_kl_based_checked(const partd_request *req, const partd_cancel *cancel,
                           partd_plan **out, partd_problem *problem)
{
    return kl_based(req, cancel, out, problem, 1);
}
