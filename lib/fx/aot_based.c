/*
 * aot_based.c - FX's aot_based mode; see aot_based.h.
 *
 * FX's aot_based_partition rebuilds Partition objects from
 * node_to_partition_mapping (add_node per node: the operation and the
 * placeholders and get_attrs it reads) and sets logical_device_ids from
 * partition_to_logical_device_mapping; decoding resolved both
 * (decode_aot.c), so what is left is FX's memory, the checks FX skips and
 * the cost.
 */
#include "aot_based.h"

#include <stdio.h>
#include <stdlib.h>

#include "fx_internal.h"
#include "partd/partd.h"

static void device_pointer(const partd_request *req, uint32_t part, char *ptr, size_t cap)
{
    snprintf(ptr, cap, "/options/aot/device_of/%lld",
             (long long)req->options.aot.part_id[part]);
}

/* What a device holds: the union of the node sets of the partitions given
 * it, each node with its inputs from outside the union (FX's used memory of
 * that union). FX itself checks nothing here. */
static int check_memory(const partd_request *req, const partd__fx_layout *l,
                        const int64_t *used, partd_problem *pb)
{
    const partd_graph *g = &req->graph;
    int64_t *held = calloc(req->n_devices, sizeof *held);
    uint8_t *on = calloc((size_t)l->n_parts + 1, 1);
    uint32_t *stamp = malloc(((size_t)g->n_nodes + 1) * sizeof *stamp);
    if (!held || !on || !stamp) {
        free(held);
        free(on);
        free(stamp);
        return PARTD_ENOMEM;
    }
    for (uint32_t v = 0; v < g->n_nodes; v++)
        stamp[v] = PARTD_NONE;
    for (uint32_t d = 0; d < req->n_devices; d++) {
        for (uint32_t p = 0; p < l->n_parts; p++) {
            on[p] = 0;
            for (uint32_t i = l->dev_off[p]; i < l->dev_off[p + 1]; i++)
                on[p] |= l->dev_idx[i] == d;
        }
        for (uint32_t v = 0; v < g->n_nodes; v++) {
            uint32_t p = l->part_of[v];
            if (p == PARTD_NONE || !on[p])
                continue;
            held[d] += partd__fx_total(g, v);
            for (uint32_t k = g->in_off[v]; k < g->in_off[v + 1]; k++) {
                uint32_t u = g->in_idx[k], q = l->part_of[u];
                if (partd__fx_is_constant(g, u)) {
                    if (stamp[u] != d) {
                        stamp[u] = d;
                        held[d] += partd__fx_total(g, u);
                    }
                } else if (!on[q]) {
                    held[d] += partd__fx_output(g, u);
                }
            }
        }
    }
    free(on);
    free(stamp);
    int rc = PARTD_OK;
    for (uint32_t d = 0; d < req->n_devices; d++) {
        if (held[d] <= req->devices[d].memory_bytes)
            continue;
        char need[PARTD_PROBLEM_BYTES_CAP], has[PARTD_PROBLEM_BYTES_CAP], ptr[96];
        partd_problem_bytes(need, (double)held[d]);
        partd_problem_bytes(has, (double)req->devices[d].memory_bytes);
        if (rc == PARTD_OK) {
            partd_problem_set(pb, 422, "infeasible", "No feasible plan",
                              "the partitions options.aot gives device \"%s\" need %s and it "
                              "has %s",
                              partd_device_name(req, d), need, has);
            partd_problem_set_shortfall(pb, held[d], req->devices[d].memory_bytes);
        }
        for (uint32_t p = 0; p < l->n_parts; p++)
            for (uint32_t i = l->dev_off[p]; i < l->dev_off[p + 1]; i++)
                if (l->dev_idx[i] == d) {
                    char b[PARTD_PROBLEM_BYTES_CAP];
                    partd_problem_bytes(b, (double)used[p]);
                    device_pointer(req, p, ptr, sizeof ptr);
                    partd_problem_add(pb, ptr, "partition %lld needs %s of device \"%s\" (%s "
                                      "in all, %s available)",
                                      (long long)req->options.aot.part_id[p], b,
                                      partd_device_name(req, d), need, has);
                }
        rc = PARTD_EINFEASIBLE;
    }
    free(held);
    return rc;
}

int partd_aot_based(const partd_request *req, const partd_cancel *cancel, partd_plan **out,
                    partd_problem *problem)
{
    const partd_aot_options *a = &req->options.aot;
    *out = NULL;
    if (!a->part_of || !a->n_parts) {
        partd_problem_set(problem, 422, "invalid-request", "Invalid request",
                          "mode aot_based needs options.aot");
        partd_problem_add(problem, "/options/aot", "is required by mode aot_based");
        return PARTD_EINVALID;
    }
    int rc = partd_cancel_check(cancel);
    if (rc != PARTD_OK)
        return rc;
    partd__fx_layout l = {a->n_parts, a->part_of, a->dev_off, a->dev_idx};
    int64_t *used = malloc(((size_t)a->n_parts + 1) * sizeof *used);
    if (!used)
        return PARTD_ENOMEM;
    rc = partd__fx_memory(req, &l, used);
    if (rc == PARTD_OK)
        rc = check_memory(req, &l, used, problem);
    double sec = 0;
    uint32_t cycle = PARTD_NONE;
    if (rc == PARTD_OK)
        rc = partd__fx_latency(req, &l, &sec, &cycle);
    if (rc == PARTD_EINFEASIBLE && cycle != PARTD_NONE) {
        char ptr[96];
        partd_problem_set(problem, 422, "infeasible", "No feasible plan",
                          "the partitions options.aot gives depend on each other in a cycle "
                          "(partition %lld is on it): no order runs them",
                          (long long)a->part_id[cycle]);
        snprintf(ptr, sizeof ptr, "/options/aot/partition_of");
        partd_problem_add(problem, ptr, "partition %lld reads, through other partitions, a "
                          "result of its own",
                          (long long)a->part_id[cycle]);
    }
    if (rc == PARTD_OK)
        rc = partd__fx_plan(req, PARTD_MODE_AOT_BASED, &l, used, sec, out);
    free(used);
    return rc;
}
