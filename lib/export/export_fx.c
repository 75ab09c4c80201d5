/* export_fx.c - the `fx` format: FX's Partitioner mappings by node name;
 * see export.h.
 *
 * torch.fx.experimental.accelerator_partitioner (PyTorch 1.13, Debian's
 * python3-torch): get_node_to_partition_mapping gives each node's partition
 * id, and PartitionerConfig takes node_to_partition_mapping with
 * partition_to_logical_device_mapping (partition id -> logical device ids)
 * for PartitionMode.aot_based. This writes both, the nodes by their names
 * (node.name), partitions by id, in the result's order:
 *   {"node_to_partition": {"conv1": 0, ...},
 *    "partition_to_logical_device_mapping": {"0": [0], ...}}
 * It holds for every result that lists its nodes (a training plan's
 * partitions are its stages); a result written with options.result.detail
 * "summary" lists none and is refused. Nothing is approximated. */
#include "export_internal.h"

#include <stdio.h>

#include "partd/partd.h"

static int add_stage(partd__export_ctx *c, uint32_t j, json_t *nodes, json_t *devices)
{
    const partd__export_stage *s = &c->plan->stages[j];
    if (!s->nodes) {
        char ptr[64];
        partd__export_stage_pointer(ptr, sizeof ptr, j, NULL, (size_t)-1);
        partd__export_refuse(c, ptr, "lists no nodes: the result was written with "
                                     "options.result.detail summary");
        return PARTD_OK;
    }
    for (size_t i = 0; i < json_array_size(s->nodes); i++)
        if (json_object_set_new(nodes, partd__export_str_at(s->nodes, i), json_integer(j)) != 0)
            return PARTD_ENOMEM;
    if (!json_is_array(s->logical_ids))
        return PARTD_OK;
    char key[16];
    snprintf(key, sizeof key, "%u", j);
    return json_object_set_new(devices, key, json_deep_copy(s->logical_ids)) == 0 ? PARTD_OK
                                                                                   : PARTD_ENOMEM;
}

int partd__export_fx(partd__export_ctx *c, char **out, size_t *len)
{
    json_t *doc = json_object(), *nodes = json_object(), *devices = json_object();
    int rc = doc && nodes && devices ? PARTD_OK : PARTD_ENOMEM;
    for (uint32_t j = 0; rc == PARTD_OK && j < c->plan->n_stages; j++)
        rc = add_stage(c, j, nodes, devices);
    if (rc == PARTD_OK && c->n_refusals)
        rc = PARTD_EINVALID;
    if (rc == PARTD_OK &&
        (json_object_set(doc, "node_to_partition", nodes) ||
         json_object_set(doc, "partition_to_logical_device_mapping", devices)))
        rc = PARTD_ENOMEM;
    json_decref(nodes);
    json_decref(devices);
    if (rc != PARTD_OK) {
        json_decref(doc);
        return rc;
    }
    return partd__export_json_finish(c, doc, out, len);
}
