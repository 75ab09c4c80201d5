/* export_deepspeed.c - the `deepspeed` format: JSON for DeepSpeed's
 * PipelineModule; see export.h.
 *
 * What DeepSpeed reads (microsoft/DeepSpeed, deepspeed/runtime/pipe/
 * module.py, PipelineModule): a list of layers, `num_stages`, and
 * `self.parts`, the layer index each stage starts at and the end
 * (stage_owner: parts[s] <= layer < parts[s + 1]), which
 * _partition_layers fills from partition_method ('parameters', 'uniform',
 * 'type:...'), so the plan's split is these bounds; forward() checkpoints
 * every run of activation_checkpoint_interval consecutive layers of the
 * stage (0: none), for every microbatch, but only runs that hold
 * parameters (_is_checkpointable) unless checkpointable_layers names their
 * classes; the engine's micro-batches per step are its
 * gradient_accumulation_steps. One stage per rank, run in its TrainSchedule
 * (deepspeed/runtime/pipe/schedule.py), a 1F1B order.
 *
 * So: the layers are the plan's modules in order (`layers`, the order to
 * build the LayerSpec list in), `parts` their stage bounds; a plan with
 * several stages per rank is refused; another order than 1F1B becomes
 * DeepSpeed's 1F1B (no more microbatches in flight than GPipe, looped or
 * zero-bubble orders hold: listed); any checkpointed unit gives interval 1,
 * every layer its own checkpoint, listed when the plan checkpoints fewer
 * (more recomputation than planned). `devices`: the device of each rank. */
#include "export_internal.h"

#include "partd/enums.h"
#include "partd/partd.h"

static int all_checkpointed(const partd__export_plan *p)
{
    for (uint32_t j = 0; j < p->n_stages; j++)
        if (json_array_size(p->stages[j].checkpointed) != json_array_size(p->stages[j].units))
            return 0;
    return 1;
}

static int interval(partd__export_ctx *c)
{
    const partd__export_plan *p = c->plan;
    if (partd__export_n_checkpointed(p) == 0)
        return 0;
    if (!all_checkpointed(p))
        partd__export_approx(c, "checkpoint-every-layer", "/partitions",
                             "activation_checkpoint_interval 1 checkpoints every layer of "
                             "every stage; the plan checkpoints %zu of its units (more "
                             "recomputation than planned)",
                             partd__export_n_checkpointed(p));
    if (p->checkpoint == PARTD_CHECKPOINT_EXCEPT_LAST && p->microbatches > 1)
        partd__export_approx(c, "checkpoint-every-microbatch", "/summary/checkpoint",
                             "the plan leaves the last microbatch unchecked (except_last); "
                             "DeepSpeed checkpoints every microbatch");
    return 1;
}

static json_t *parts(const partd__export_names *mods, uint32_t n_stages)
{
    json_t *a = json_array();
    size_t at = 0;
    if (!a || json_array_append_new(a, json_integer(0)) != 0)
        goto fail;
    for (uint32_t j = 0; j < n_stages; j++) {
        at += mods[j].n;
        if (json_array_append_new(a, json_integer((json_int_t)at)) != 0)
            goto fail;
    }
    return a;
fail:
    json_decref(a);
    return NULL;
}

int partd__export_deepspeed(partd__export_ctx *c, char **out, size_t *len)
{
    const partd__export_plan *p = c->plan;
    if (p->v > 1)
        partd__export_refuse(c, "/schedule/virtual_stages",
                             "DeepSpeed's PipelineModule runs one stage per rank; the plan runs "
                             "%u",
                             p->v);
    else if (p->sched != PARTD_TRAINING_1F1B)
        partd__export_approx(c, "deepspeed-schedule", p->sched_pointer,
                             "DeepSpeed runs its TrainSchedule (1F1B), not %s: no more "
                             "microbatches in flight than planned, another step time",
                             partd_training_schedule_name(p->sched));
    partd__export_names *mods;
    int rc = partd__export_modules(c, &mods);
    if (rc != PARTD_OK)
        return rc;
    int every = interval(c);
    if (c->n_refusals || c->rc != PARTD_OK) {
        partd__export_modules_free(mods, p->n_stages);
        return c->rc != PARTD_OK ? c->rc : PARTD_EINVALID;
    }
    json_t *doc = json_object();
    if (!doc || json_object_set_new(doc, "num_stages", json_integer(p->n_ranks)) ||
        json_object_set_new(doc, "parts", parts(mods, p->n_stages)) ||
        json_object_set_new(doc, "layers", partd__export_json_module_list(mods, p->n_stages)) ||
        json_object_set_new(doc, "activation_checkpoint_interval", json_integer(every)) ||
        json_object_set_new(doc, "micro_batches", json_integer(p->microbatches)) ||
        json_object_set_new(doc, "devices", partd__export_json_rank_devices(p)) ||
        json_object_set_new(doc, "tied_params", partd__export_json_tied(p))) {
        json_decref(doc);
        doc = NULL;
    }
    partd__export_modules_free(mods, p->n_stages);
    return doc ? partd__export_json_finish(c, doc, out, len) : PARTD_ENOMEM;
}
