/*
 * kl_answer.c - what FX's kl_based pass answers: the plan of its list,
 * FX's own rules on that list (nothing in two partitions, every partition
 * on a device, no cycle, each device within its memory), and, where FX's
 * answer breaks them, the better of the list mapped afresh and size_based's
 * plan; see kl_internal.h.
 *
 * Errors: PARTD_OK, PARTD_ENOMEM; partd__kl_answer_instead returns
 * PARTD_EINFEASIBLE (422, problem filled) when neither plan is valid.
 */
#include <stdlib.h>
#include <string.h>

#include "fx_internal.h"
#include "kl_internal.h"
#include "partd/partd.h"
/* The plan of the list (nothing in two partitions) with devices dev, or
 * sb's, empty partitions left out. */
int partd__kl_answer_plan(partd__kl *k, const uint32_t *dev, const partd_plan *sb, double sec,
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

int partd__kl_answer_valid(partd__kl *k, const uint32_t *dev, const partd_plan *sb)
{
    const partd_graph *g = k->g;
    if (k->n_dups)
        return 0;
    for (uint32_t p = 0; p < k->P; p++)
        if (k->po_off[p] != k->po_off[p + 1] &&
            (sb ? !sb->parts[p].n_devices : dev[p] == PARTD_NONE))
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
int partd__kl_answer_sb_valid(partd__kl *k, const partd_plan *sb)
{
    partd__kl t = *k;
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
                rc = partd__kl_state_add(&t, p, sb->parts[p].nodes[i]);
        if (rc == PARTD_OK)
            rc = partd__kl_state_memory(&t);
        if (rc == PARTD_OK)
            rc = partd__kl_state_edges(&t);
        if (rc == PARTD_OK)
            ok = partd__kl_answer_valid(&t, t.dev, sb);
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
int partd__kl_answer_instead(partd__kl *k, const partd_plan *sb, double sb_sec,
                             partd_plan **out, partd_problem *pb)
{
    int rc = partd__kl_state_memory(k);
    if (rc == PARTD_OK)
        rc = partd__kl_state_edges(k);
    if (rc != PARTD_OK)
        return rc;
    for (uint32_t p = 0; p < k->P; p++)
        k->fdev[p] = PARTD_NONE;
    int sb_ok = partd__kl_answer_sb_valid(k, sb);
    if (sb_ok < 0)
        return PARTD_ENOMEM;
    if (!k->n_dups && partd__kl_state_map(k, k->fdev) && partd__kl_answer_valid(k, k->fdev, NULL)) {
        double sec = partd__kl_state_latency(k, k->fdev, NULL);
        if (sec != PARTD__KL_RAISED && (!sb_ok || sec <= sb_sec))
            return partd__kl_answer_plan(k, k->fdev, NULL, sec, out);
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
            partd__kl_state_remove(k, k->m[v][0].p, v);
    for (uint32_t p = 0; p < sb->n_parts; p++) {
        for (uint32_t i = 0; i < sb->parts[p].n_nodes; i++)
            if ((rc = partd__kl_state_add(k, p, sb->parts[p].nodes[i])) != PARTD_OK)
                return rc;
    }
    if ((rc = partd__kl_state_memory(k)) != PARTD_OK)
        return rc;
    return partd__kl_answer_plan(k, k->fdev, sb, sb_sec, out);
}
