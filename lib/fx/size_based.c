/*
 * size_based.c - PyTorch FX Partitioner, PartitionMode.size_based; see
 * size_based.h.
 *
 * This follows torch/fx/experimental/accelerator_partitioner.py (1.13)
 * statement by statement, including its quirks, because the point of the
 * mode is to give the same answer as PyTorch:
 *   - a partition's node set includes the placeholder and get_attr nodes its
 *     operations read (Partition.add_node), and its used_mem_bytes is the sum
 *     over that set of get_extra_size_of(node, set): a node's total size plus
 *     the output size of each distinct input outside the set;
 *   - the greedy fill only checks the *current* partition's left memory and
 *     opens a new partition on the first unused device that fits the node
 *     alone; a partition whose used memory is still 0 picks a device again;
 *   - once every device has a partition, each remaining operation gets a
 *     single-node partition, and those are mapped onto devices by best fit:
 *     devices re-sorted (stably) by left memory before each partition, the
 *     first whose left memory is *strictly* larger than the extra bytes wins;
 *     the extra bytes count a placeholder again even when the device already
 *     holds it (get_extra_size_of always adds the node's own size).
 * Sizes as FX computes them: total = output + parameters; a get_attr node's
 * output is its parameter, so its size counts once (max of the two figures).
 */
#include "size_based.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "partd/partd.h"

#define CHECK_EVERY 65536

/* ---- FX sizes ------------------------------------------------------------ */

static int64_t fx_total(const partd_graph *g, uint32_t v)
{
    if (g->op[v] == PARTD_OP_GET_ATTR)
        return g->output_bytes[v] > g->param_bytes[v] ? g->output_bytes[v] : g->param_bytes[v];
    return g->output_bytes[v] + g->param_bytes[v];
}

static int64_t fx_output(const partd_graph *g, uint32_t v)
{
    return g->op[v] == PARTD_OP_GET_ATTR ? fx_total(g, v) : g->output_bytes[v];
}

static int is_constant(const partd_graph *g, uint32_t v)
{
    return g->op[v] == PARTD_OP_PLACEHOLDER || g->op[v] == PARTD_OP_GET_ATTR;
}

/* ---- a set of (node, device) pairs --------------------------------------- */

/* Which nodes each device holds, for the mapping phase's
 * "is this input already on the device" test. */
typedef struct pair_set {
    uint64_t *slots; /* key + 1; 0 = empty */
    size_t cap, n;
} pair_set;

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}

static int pair_set_has(const pair_set *s, uint32_t node, uint32_t dev)
{
    if (!s->cap)
        return 0;
    uint64_t key = ((uint64_t)node << 32 | dev) + 1;
    for (size_t i = mix(key) & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
        if (s->slots[i] == key)
            return 1;
        if (!s->slots[i])
            return 0;
    }
}

static int pair_set_add(pair_set *s, uint32_t node, uint32_t dev)
{
    if ((s->n + 1) * 2 > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 1024;
        uint64_t *slots = calloc(cap, sizeof *slots);
        if (!slots)
            return -1;
        for (size_t i = 0; i < s->cap; i++) {
            if (!s->slots[i])
                continue;
            size_t j = mix(s->slots[i]) & (cap - 1);
            while (slots[j])
                j = (j + 1) & (cap - 1);
            slots[j] = s->slots[i];
        }
        free(s->slots);
        s->slots = slots;
        s->cap = cap;
    }
    uint64_t key = ((uint64_t)node << 32 | dev) + 1;
    size_t i = mix(key) & (s->cap - 1);
    while (s->slots[i]) {
        if (s->slots[i] == key)
            return 0;
        i = (i + 1) & (s->cap - 1);
    }
    s->slots[i] = key;
    s->n++;
    return 0;
}

/* ---- partitioner state --------------------------------------------------- */

typedef struct fx_part {
    uint32_t first, end;   /* range in st->members: its node set */
    int64_t used;          /* used_mem_bytes */
    int64_t left;          /* partition_to_left_mem_bytes (greedy phase) */
    uint32_t dev_first;    /* range in st->part_devs: logical_device_ids */
    uint32_t n_devs;
} fx_part;

typedef struct state {
    const partd_request *req;
    const partd_graph *g;
    partd_problem *pb;
    uint32_t *members;     /* node sets of all partitions, contiguous */
    uint32_t n_members;
    uint32_t *mark;        /* node -> partition id + 1 of the newest set holding it */
    fx_part *parts;
    uint32_t n_parts;
    uint32_t *part_devs;   /* device indices, per partition ranges */
    uint32_t n_part_devs;
    uint8_t *occupied;     /* devices taken in the greedy phase */
} state;

static int state_init(state *st, const partd_request *req, partd_problem *pb)
{
    const partd_graph *g = &req->graph;
    memset(st, 0, sizeof *st);
    st->req = req;
    st->g = g;
    st->pb = pb;
    size_t members = (size_t)g->n_nodes + g->in_off[g->n_nodes] + 1;
    st->members = malloc(members * sizeof *st->members);
    st->mark = calloc(g->n_nodes, sizeof *st->mark);
    st->parts = calloc((size_t)g->n_ops + 1, sizeof *st->parts);
    /* A partition can pick a device more than once (the zero-size quirk), at
     * most once per operation added. */
    st->part_devs = malloc(((size_t)g->n_ops + req->n_devices + 1) * sizeof *st->part_devs);
    st->occupied = calloc(req->n_devices, 1);
    return st->members && st->mark && st->parts && st->part_devs && st->occupied ? 0 : -1;
}

static void state_free(state *st)
{
    free(st->members);
    free(st->mark);
    free(st->parts);
    free(st->part_devs);
    free(st->occupied);
}

static fx_part *create_partition(state *st)
{
    fx_part *p = &st->parts[st->n_parts++];
    p->first = p->end = st->n_members;
    p->dev_first = st->n_part_devs;
    return p;
}

static uint32_t part_id(const state *st, const fx_part *p)
{
    return (uint32_t)(p - st->parts);
}

static int in_part(const state *st, const fx_part *p, uint32_t v)
{
    return st->mark[v] == part_id(st, p) + 1;
}

/* get_extra_size_of(v, partition's node set) */
static int64_t extra_size(const state *st, const fx_part *p, uint32_t v)
{
    const partd_graph *g = st->g;
    int64_t bytes = fx_total(g, v);
    for (uint32_t k = g->in_off[v]; k < g->in_off[v + 1]; k++)
        if (!p || !in_part(st, p, g->in_idx[k]))
            bytes += fx_output(g, g->in_idx[k]);
    return bytes;
}

/* Partition.add_node: the operation and the placeholders/get_attrs it reads
 * join the set; used_mem_bytes is recomputed (incrementally: no earlier
 * member reads the new operation, and constants have no inputs). */
static void add_node(state *st, fx_part *p, uint32_t v)
{
    const partd_graph *g = st->g;
    uint32_t mark = part_id(st, p) + 1;
    for (uint32_t k = g->in_off[v]; k < g->in_off[v + 1]; k++) {
        uint32_t u = g->in_idx[k];
        if (is_constant(g, u) && st->mark[u] != mark) {
            st->mark[u] = mark;
            st->members[st->n_members++] = u;
            p->used += fx_total(g, u);
        }
    }
    st->mark[v] = mark;
    st->members[st->n_members++] = v;
    p->end = st->n_members;
    p->used += extra_size(st, p, v);
}

/* find_device_based_on_size: the first unoccupied device that holds the node
 * alone. Returns the device index or PARTD_NONE (problem filled). */
static uint32_t find_device_for_node(state *st, uint32_t v)
{
    int64_t needed = extra_size(st, NULL, v);
    for (uint32_t d = 0; d < st->req->n_devices; d++)
        if (!st->occupied[d] && st->req->devices[d].memory_bytes >= needed) {
            st->occupied[d] = 1;
            return d;
        }
    char need[PARTD_PROBLEM_BYTES_CAP];
    partd_problem_bytes(need, (double)needed);
    partd_problem_set(st->pb, 422, "infeasible", "No feasible plan",
                      "node \"%s\" is too large to fit any device: it needs %s with its inputs "
                      "and no unused device has that much",
                      partd_node_name(st->req, v), need);
    partd_problem_set_int(st->pb, "memory_bytes", needed);
    char ptr[64];
    snprintf(ptr, sizeof ptr, "/graph/nodes/%u", st->g->request_index[v]);
    partd_problem_add(st->pb, ptr, "needs %s; no unused device has that much", need);
    return PARTD_NONE;
}

static void give_device(state *st, fx_part *p, uint32_t d)
{
    st->part_devs[st->n_part_devs++] = d;
    p->n_devs++;
}

static void single_node_partition(state *st, uint32_t v)
{
    fx_part *p = create_partition(st);
    add_node(st, p, v);
}

/* The greedy loop of size_based_partition(). */
static int greedy_fill(state *st, const partd_cancel *cancel)
{
    const partd_graph *g = st->g;
    uint32_t n_devices = st->req->n_devices;
    fx_part *p = create_partition(st);
    for (uint32_t v = 0; v < g->n_nodes; v++) {
        if (v % CHECK_EVERY == 0) {
            int rc = partd_cancel_check(cancel);
            if (rc != PARTD_OK)
                return rc;
        }
        if (!partd_op_is_operation(g->op[v]))
            continue;
        if (st->n_parts > n_devices) {
            single_node_partition(st, v);
            continue;
        }
        int64_t needed = extra_size(st, p, v);
        if (p->used == 0) {
            uint32_t d = find_device_for_node(st, v);
            if (d == PARTD_NONE)
                return PARTD_EINFEASIBLE;
            p->left = st->req->devices[d].memory_bytes;
            give_device(st, p, d);
        } else if (p->left < needed) {
            if (st->n_parts == n_devices) {
                single_node_partition(st, v);
                continue;
            }
            uint32_t d = find_device_for_node(st, v);
            if (d == PARTD_NONE)
                return PARTD_EINFEASIBLE;
            p = create_partition(st);
            needed = extra_size(st, p, v);
            p->left = st->req->devices[d].memory_bytes;
            give_device(st, p, d);
        }
        add_node(st, p, v);
        p->left -= needed;
    }
    return PARTD_OK;
}

/* ---- mapping single-node partitions onto devices ------------------------- */

typedef struct mapping {
    int64_t *left;         /* device -> left memory */
    uint32_t *n_on;        /* device -> partitions on it */
    uint32_t *order;       /* devices by left memory, as FX's re-sorted dict */
    pair_set held;         /* (node, device) pairs */
} mapping;

static int hold_partition(state *st, mapping *m, const fx_part *p, uint32_t d)
{
    m->n_on[d]++;
    for (uint32_t i = p->first; i < p->end; i++)
        if (pair_set_add(&m->held, st->members[i], d) != 0)
            return -1;
    return 0;
}

/* Membership in a partition being mapped. Those are single-node partitions
 * (one operation and the constants it reads), all created before mapping
 * starts, so the greedy phase's marks no longer tell; their sets are tiny. */
static int member_of(const state *st, const fx_part *p, uint32_t u)
{
    for (uint32_t i = p->first; i < p->end; i++)
        if (st->members[i] == u)
            return 1;
    return 0;
}

/* calculate_extra_mem_bytes_needed_for(partition, partitions on d) */
static int64_t extra_on_device(const state *st, const mapping *m, const fx_part *p,
                               uint32_t d)
{
    if (m->n_on[d] == 0)
        return p->used;
    const partd_graph *g = st->g;
    int64_t bytes = 0;
    for (uint32_t i = p->first; i < p->end; i++) {
        uint32_t v = st->members[i];
        bytes += fx_total(g, v);
        for (uint32_t k = g->in_off[v]; k < g->in_off[v + 1]; k++) {
            uint32_t u = g->in_idx[k];
            if (!member_of(st, p, u) && !pair_set_has(&m->held, u, d))
                bytes += fx_output(g, u);
        }
    }
    return bytes;
}

/* Python's sorted() is stable; re-sorting an ascending list after one entry
 * decreased moves it left past strictly larger entries only. */
static void stable_sort_devices(mapping *m, uint32_t n)
{
    for (uint32_t i = 1; i < n; i++) {
        uint32_t d = m->order[i], j = i;
        while (j > 0 && m->left[m->order[j - 1]] > m->left[d]) {
            m->order[j] = m->order[j - 1];
            j--;
        }
        m->order[j] = d;
    }
}

static int map_partitions(state *st, const partd_cancel *cancel)
{
    uint32_t n_dev = st->req->n_devices;
    mapping m = {0};
    m.left = malloc(n_dev * sizeof *m.left);
    m.n_on = calloc(n_dev, sizeof *m.n_on);
    m.order = malloc(n_dev * sizeof *m.order);
    int rc = PARTD_ENOMEM;
    if (!m.left || !m.n_on || !m.order)
        goto out;
    for (uint32_t d = 0; d < n_dev; d++) {
        m.left[d] = st->req->devices[d].memory_bytes;
        m.order[d] = d;
    }
    /* get_device_partition_stats: partitions that already have devices. */
    for (uint32_t i = 0; i < st->n_parts; i++) {
        fx_part *p = &st->parts[i];
        for (uint32_t k = 0; k < p->n_devs; k++) {
            uint32_t d = st->part_devs[p->dev_first + k];
            m.left[d] -= p->used;
            if (hold_partition(st, &m, p, d) != 0)
                goto out;
        }
    }
    rc = PARTD_OK;
    for (uint32_t i = 0; i < st->n_parts && rc == PARTD_OK; i++) {
        fx_part *p = &st->parts[i];
        if (p->n_devs)
            continue;
        if (i % 1024 == 0 && (rc = partd_cancel_check(cancel)) != PARTD_OK)
            break;
        stable_sort_devices(&m, n_dev);
        uint32_t chosen = PARTD_NONE;
        int64_t extra = 0;
        for (uint32_t j = 0; j < n_dev && chosen == PARTD_NONE; j++) {
            uint32_t d = m.order[j];
            extra = extra_on_device(st, &m, p, d);
            if (extra < m.left[d])
                chosen = d;
        }
        if (chosen == PARTD_NONE) {
            char used[PARTD_PROBLEM_BYTES_CAP];
            partd_problem_bytes(used, (double)p->used);
            partd_problem_set(st->pb, 422, "infeasible", "No feasible plan",
                              "Cannot get a valid partition to logical device mapping: "
                              "partition %u (node \"%s\", %s) fits on no device's "
                              "remaining memory",
                              i, partd_node_name(st->req, st->members[p->end - 1]), used);
            partd_problem_set_int(st->pb, "memory_bytes", p->used);
            char ptr[64];
            snprintf(ptr, sizeof ptr, "/graph/nodes/%u",
                     st->g->request_index[st->members[p->end - 1]]);
            partd_problem_add(st->pb, ptr, "no device has %s left for this node", used);
            rc = PARTD_EINFEASIBLE;
            break;
        }
        p->dev_first = st->n_part_devs;
        give_device(st, p, chosen);
        m.left[chosen] -= extra;
        if (hold_partition(st, &m, p, chosen) != 0)
            rc = PARTD_ENOMEM;
    }
out:
    free(m.left);
    free(m.n_on);
    free(m.order);
    free(m.held.slots);
    return rc;
}

/* ---- building the plan --------------------------------------------------- */

static int part_from_fx(const state *st, const fx_part *p, partd_part *out, uint32_t id,
                        uint32_t *node_part)
{
    const partd_graph *g = st->g;
    uint32_t n = 0;
    for (uint32_t i = p->first; i < p->end; i++)
        n += partd_op_is_operation(g->op[st->members[i]]);
    out->nodes = malloc((n ? n : 1) * sizeof *out->nodes);
    out->devices = malloc((p->n_devs ? p->n_devs : 1) * sizeof *out->devices);
    if (!out->nodes || !out->devices)
        return PARTD_ENOMEM;
    for (uint32_t i = p->first; i < p->end; i++) {
        uint32_t v = st->members[i];
        if (!partd_op_is_operation(g->op[v]))
            continue;
        out->nodes[out->n_nodes++] = v;
        out->param_bytes += g->param_bytes[v];
        node_part[v] = id;
    }
    for (uint32_t k = 0; k < p->n_devs; k++)
        out->devices[out->n_devices++] = st->part_devs[p->dev_first + k];
    out->memory_bytes = p->used;
    return PARTD_OK;
}

static int build_plan(const state *st, partd_plan **out)
{
    const partd_graph *g = st->g;
    partd_plan *plan = partd_plan_alloc(PARTD_MODE_SIZE_BASED, st->n_parts);
    uint32_t *node_part = malloc((size_t)(g->n_nodes ? g->n_nodes : 1) * sizeof *node_part);
    int rc = PARTD_ENOMEM;
    if (!plan || !node_part)
        goto out;
    for (uint32_t v = 0; v < g->n_nodes; v++)
        node_part[v] = PARTD_NONE;
    rc = PARTD_OK;
    for (uint32_t i = 0; i < st->n_parts && rc == PARTD_OK; i++)
        rc = part_from_fx(st, &st->parts[i], &plan->parts[i], i, node_part);
    if (rc == PARTD_OK)
        rc = partd_plan_link(st->req, node_part, plan);
    if (rc == PARTD_OK)
        partd_plan_fill_times(st->req, plan);
out:
    free(node_part);
    if (rc != PARTD_OK) {
        partd_plan_free(plan);
        return rc;
    }
    plan->summary.optimal = 0; /* PyTorch's greedy, on purpose: no optimality claim */
    *out = plan;
    return PARTD_OK;
}

/* find_single_partition: every operation on the device with the most memory
 * (the first such device), used memory = the graph's total size. */
static int single_partition(state *st, int64_t total, uint32_t device)
{
    fx_part *p = create_partition(st);
    const partd_graph *g = st->g;
    for (uint32_t v = 0; v < g->n_nodes; v++)
        if (g->op[v] != PARTD_OP_OUTPUT) {
            st->members[st->n_members++] = v;
            st->mark[v] = 1;
        }
    p->end = st->n_members;
    p->used = total;
    give_device(st, p, device);
    return PARTD_OK;
}

int partd_size_based(const partd_request *req, const partd_cancel *cancel, partd_plan **out,
                     partd_problem *problem)
{
    const partd_graph *g = &req->graph;
    *out = NULL;
    state st;
    int rc = PARTD_ENOMEM;
    if (state_init(&st, req, problem) != 0)
        goto out;
    int64_t total = 0, all_memory = 0;
    for (uint32_t v = 0; v < g->n_nodes; v++)
        if (g->op[v] != PARTD_OP_OUTPUT)
            total += fx_total(g, v);
    uint32_t largest = 0;
    for (uint32_t d = 0; d < req->n_devices; d++) {
        all_memory += req->devices[d].memory_bytes;
        if (req->devices[d].memory_bytes > req->devices[largest].memory_bytes)
            largest = d;
    }
    if (total <= req->devices[largest].memory_bytes) {
        rc = single_partition(&st, total, largest);
    } else if (total > all_memory) {
        char need[PARTD_PROBLEM_BYTES_CAP], has[PARTD_PROBLEM_BYTES_CAP];
        partd_problem_bytes(need, (double)total);
        partd_problem_bytes(has, (double)all_memory);
        partd_problem_set(problem, 422, "infeasible", "No feasible plan",
                          "Devices have no enough memory for the module: the graph needs %s and "
                          "all devices together have %s",
                          need, has);
        partd_problem_set_shortfall(problem, total, all_memory);
        partd_problem_add(problem, "/devices", "%s in all; the graph needs %s", has, need);
        rc = PARTD_EINFEASIBLE;
    } else {
        rc = greedy_fill(&st, cancel);
        if (rc == PARTD_OK)
            rc = map_partitions(&st, cancel);
    }
    if (rc == PARTD_OK)
        rc = build_plan(&st, out);
out:
    state_free(&st);
    return rc;
}
