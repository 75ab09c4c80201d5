/* export_pytorch.c - the formats of PyTorch's torch.distributed.pipelining:
 * `pytorch`, each rank's compute actions as a CSV, and `pytorch-split`, the
 * arguments of pipeline() and of the schedule class; see export.h.
 *
 * `pytorch`: one row per rank, one cell per compute action in the order the
 * rank runs them, written as PyTorch writes actions ("3F1", "0I7"): the
 * "compute_only" format that PipelineScheduleMulti._load_csv and
 * _PipelineScheduleRuntime._load_csv read (csv.reader, _Action.from_str per
 * cell) and that torchtitan's pipeline_parallel_schedule_csv names. The order
 * is checked with PyTorch's own rules first (export_rules.c), so a file
 * partd writes is one PyTorch loads: an order that breaks them is refused.
 * The CSV says nothing else (no comments: csv.reader would read them as
 * actions), so it carries no approximation.
 *
 * `pytorch-split`: JSON with `split_spec` (each stage's first module but the
 * first stage's -> "BEGINNING", the SplitPoint pipeline() splits before;
 * splitting before stage 0's first module would make an empty stage),
 * `schedule` (get_schedule_class's name), `n_microbatches`, `stage_to_rank`,
 * plus `devices` (each rank's device) and `checkpointed` (each stage's
 * checkpointed units, which pipeline() does not wrap itself: partd.apply
 * does). A split inside a module, and an order the named class does not run
 * (use `pytorch`), are refused.
 *
 * Node-level plans (pipeline, size_based) name FX nodes, which pipeline()
 * does not know (it traces with torch.export); it splits before a module's
 * call. The planner marks each partition whose first node begins the only
 * call of a module with that module (`first_module`, lib/plan/
 * plan_internal.h says when), and split_spec names those; a partition
 * without one is refused, naming it. Stage j runs on rank j, so partitions
 * must have devices of their own. The schedule is the pipeline's own
 * (summary.schedule: gpipe as GPipe, 1f1b as 1F1B, which needs M >= S; an
 * inference plan is refused) with summary.microbatches; size_based plans one
 * batch: GPipe with one microbatch. Nothing is approximated. */
#include "export_internal.h"

#include <stdlib.h>
#include <string.h>

#include "partd/partd.h"

static int refuse_no_order(partd__export_ctx *c)
{
    const partd__export_plan *p = c->plan;
    partd__export_refuse(c, "/summary/microbatches",
                         "the result lists no actions and %s cannot run %u microbatches on %u "
                         "ranks with %u stages each",
                         partd_training_schedule_name(p->sched), p->microbatches, p->n_ranks, p->v);
    return PARTD_EINVALID;
}

int partd__export_pytorch(partd__export_ctx *c, char **out, size_t *len)
{
    const partd__export_plan *p = c->plan;
    if (!p->order.off)
        return refuse_no_order(c);
    if (partd__export_pytorch_rules(c) || c->n_refusals || c->rc != PARTD_OK)
        return c->rc != PARTD_OK ? c->rc : PARTD_EINVALID;
    partd__export_text t;
    partd__export_text_init(&t);
    for (uint32_t r = 0; r < p->n_ranks; r++) {
        for (uint32_t i = p->order.off[r]; i < p->order.off[r + 1]; i++) {
            char name[24];
            partd_training_action_name(&p->order.act[i], name, sizeof name);
            partd__export_printf(&t, "%s%s", i > p->order.off[r] ? "," : "", name);
        }
        partd__export_printf(&t, "%c", '\n');
    }
    return partd__export_text_finish(&t, out, len);
}

/* split_spec: the first module of stages 1.. as a split before it. */
static json_t *split_spec(partd__export_ctx *c)
{
    const partd__export_plan *p = c->plan;
    json_t *spec = json_object();
    for (uint32_t j = 1; spec && j < p->n_stages; j++) {
        const char *first = partd__export_str_at(p->stages[j].units, 0);
        if (partd__export_unit_base_len(first) != strlen(first)) {
            char ptr[128];
            partd__export_stage_pointer(ptr, sizeof ptr, j, "units", 0);
            partd__export_refuse(c, ptr,
                                 "stage %u begins inside a module (unit %s): pipeline() splits "
                                 "only before or after a whole module",
                                 j, first);
            continue;
        }
        if (json_object_set_new(spec, first, json_string("BEGINNING")) != 0) {
            json_decref(spec);
            return NULL;
        }
    }
    return spec;
}

static json_t *per_stage(const partd__export_plan *p, int checkpointed)
{
    json_t *a = json_array();
    for (uint32_t j = 0; a && j < p->n_stages; j++) {
        const json_t *ck = p->stages[j].checkpointed;
        json_t *v = !checkpointed ? json_integer(p->stages[j].rank)
                    : ck          ? json_deep_copy(ck)
                                  : json_array();
        if (json_array_append_new(a, v) != 0) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

/* ---- node-level plans ------------------------------------------------------ */

/* split_spec from the partitions' first_module; each partition on a device
 * of its own (pipeline()'s stage j on rank j). */
static json_t *node_split_spec(partd__export_ctx *c)
{
    const partd__export_plan *p = c->plan;
    json_t *spec = json_object();
    for (uint32_t j = 0; spec && j < p->n_stages; j++) {
        const partd__export_stage *s = &p->stages[j];
        char ptr[96];
        for (uint32_t i = 0; i < j; i++)
            if (strcmp(p->stages[i].device, s->device) == 0) {
                partd__export_stage_pointer(ptr, sizeof ptr, j, "device", (size_t)-1);
                partd__export_refuse(c, ptr,
                                     "partition %u shares device %s with partition %u: the "
                                     "plan says no order for a rank that runs two stages",
                                     j, s->device, i);
                break;
            }
        if (j == 0)
            continue;
        if (!s->first_module) {
            const char *first = s->nodes ? partd__export_str_at(s->nodes, 0) : NULL;
            partd__export_stage_pointer(ptr, sizeof ptr, j, NULL, (size_t)-1);
            partd__export_refuse(c, ptr,
                                 "partition %u begins at node %s, which does not begin the only "
                                 "call of a module (no first_module: the cut falls inside a "
                                 "module or among the root's own operations, or the module runs "
                                 "twice), and pipeline() splits only before a module's call: "
                                 "apply the plan with --format fx or partd.apply.split",
                                 j, first ? first : "(not listed)");
            continue;
        }
        if (json_object_set_new(spec, s->first_module, json_string("BEGINNING")) != 0) {
            json_decref(spec);
            return NULL;
        }
    }
    return spec;
}

/* The schedule class a node-level plan runs as: GPipe over the result's
 * one batch (size_based), the pipeline's own (gpipe, 1f1b); an inference
 * plan, or one that does not record its schedule, is refused. *m gets the
 * microbatches. */
static const char *node_schedule(partd__export_ctx *c, uint32_t *m)
{
    const partd__export_plan *p = c->plan;
    *m = 1;
    if (strcmp(p->mode, "pipeline") != 0)
        return "GPipe";
    *m = p->microbatches;
    switch (p->pipeline_schedule) {
    case PARTD_SCHEDULE_GPIPE: return "GPipe";
    case PARTD_SCHEDULE_1F1B:
        if (p->microbatches >= p->n_stages)
            return "1F1B";
        partd__export_refuse(c, "/summary/microbatches",
                             "PyTorch's Schedule1F1B needs at least as many microbatches as "
                             "stages: %u for %u",
                             p->microbatches, p->n_stages);
        return NULL;
    case PARTD_SCHEDULE_INFERENCE:
        partd__export_refuse(c, "/summary/schedule",
                             "the plan counted memory for inference (one microbatch's outputs "
                             "per stage); pipeline()'s schedules run training steps, which keep "
                             "activations until their backward");
        return NULL;
    default:
        partd__export_refuse(c, "/summary/schedule",
                             "the result does not record the pipeline's schedule and "
                             "microbatches (written before partd recorded them): plan it again");
        return NULL;
    }
}

/* The document, once split_spec (taken; NULL: ENOMEM, or a refusal made),
 * the schedule and M are known. */
static int split_document(partd__export_ctx *c, json_t *spec, const char *sched, uint32_t m,
                          char **out, size_t *len)
{
    const partd__export_plan *p = c->plan;
    if (!spec || c->n_refusals) {
        json_decref(spec);
        return spec || c->n_refusals ? PARTD_EINVALID : PARTD_ENOMEM;
    }
    json_t *doc = json_object();
    if (!doc || json_object_set_new(doc, "split_spec", spec) != 0 ||
        json_object_set_new(doc, "schedule", json_string(sched)) ||
        json_object_set_new(doc, "n_microbatches", json_integer(m)) ||
        json_object_set_new(doc, "stage_to_rank", per_stage(p, 0)) ||
        json_object_set_new(doc, "devices", partd__export_json_rank_devices(p)) ||
        json_object_set_new(doc, "checkpointed", per_stage(p, 1)) ||
        json_object_set_new(doc, "tied_params", partd__export_json_tied(p))) {
        if (!doc)
            json_decref(spec);
        json_decref(doc);
        return PARTD_ENOMEM;
    }
    return partd__export_json_finish(c, doc, out, len);
}

int partd__export_pytorch_split(partd__export_ctx *c, char **out, size_t *len)
{
    const partd__export_plan *p = c->plan;
    if (!p->training) {
        uint32_t m;
        const char *sched = node_schedule(c, &m);
        return split_document(c, node_split_spec(c), sched, m, out, len);
    }
    if (!p->order.off)
        return refuse_no_order(c);
    int own = partd__export_order_is_own(p);
    if (own < 0)
        return own;
    if (!own)
        partd__export_refuse(c, "/schedule/actions",
                             "the plan's order is not %s's own, and pipeline()'s schedule runs "
                             "the class's: export the order with --format pytorch "
                             "(_PipelineScheduleRuntime._load_csv)",
                             partd_training_schedule_name(p->sched));
    return split_document(c, split_spec(c), partd_training_schedule_name(p->sched),
                          p->microbatches, out, len);
}
