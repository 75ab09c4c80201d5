/* export_fairscale.c - the `fairscale` format: JSON for fairscale's (and
 * torchgpipe's) Pipe; see export.h.
 *
 * What Pipe reads (facebookresearch/fairscale, fairscale/nn/pipe/pipe.py):
 * an nn.Sequential, `balance` (the number of its children per partition,
 * each positive, summing to its length: check_balance), `chunks` (the
 * microbatches) and `checkpoint`, one of 'always', 'except_last' or
 * 'never' (default 'except_last'): a partition is checkpointed whole for
 * all microbatches, all but the last, or none; partition i runs on
 * devices[i]; a parameter two partitions on distinct devices share is
 * refused (verify_splitting). Pipe runs GPipe: every microbatch's forward,
 * then the backwards.
 *
 * Training plans: `balance` counts the plan's modules per stage (`layers`
 * lists them in order, the Sequential to build); a schedule other than
 * GPipe is refused (Pipe would keep all M microbatches in flight where the
 * plan keeps fewer), LoopedBFS with one stage per rank (GPipe's memory,
 * another order) listed; the plan's checkpoint mode maps to Pipe's, and
 * under `auto` any checkpointed unit makes it 'always', the safe side of
 * per-unit sets (listed). Node-level plans (pipeline, size_based, FX
 * modes): `balance` in nodes (the result's, or each partition's node
 * count), partitions must follow each other (every child after its parent),
 * 'never' (they plan no checkpointing), and `chunks` the pipeline's
 * microbatches (summary.microbatches; a result written before partd
 * recorded it gives them through summary.total_ms = the sum of stage times
 * + (M - 1) x bottleneck_ms; 1 for size_based and the FX modes, whose
 * graph is one batch). Pipe runs GPipe: a pipeline plan made for gpipe is
 * said exactly, one made for 1f1b refused (more in flight than planned),
 * one made for inference, or that does not record its schedule, listed.
 * `devices`: each partition's device. */
#include "export_internal.h"

#include <math.h>
#include <string.h>

#include "partd/enums.h"
#include "partd/partd.h"

static const char *checkpoint_mode(partd__export_ctx *c)
{
    const partd__export_plan *p = c->plan;
    switch (p->checkpoint) {
    case PARTD_CHECKPOINT_NEVER: return "never";
    case PARTD_CHECKPOINT_ALWAYS: return "always";
    case PARTD_CHECKPOINT_EXCEPT_LAST: return "except_last";
    default: break;
    }
    size_t ck = partd__export_n_checkpointed(p), units = 0;
    for (uint32_t j = 0; j < p->n_stages; j++)
        units += json_array_size(p->stages[j].units);
    if (ck == 0)
        return "never";
    if (ck < units)
        partd__export_approx(c, "checkpoint-whole-partitions", "/partitions",
                             "Pipe checkpoints every partition whole ('always'); the plan "
                             "checkpoints %zu of %zu units (more recomputation than planned)",
                             ck, units);
    return "always";
}

static json_t *stage_devices(const partd__export_plan *p)
{
    json_t *a = json_array();
    for (uint32_t j = 0; a && j < p->n_stages; j++)
        if (json_array_append_new(a, json_string(p->stages[j].device)) != 0) {
            json_decref(a);
            return NULL;
        }
    return a;
}

/* pipe.py verify_splitting: "module with duplicate parameters on distinct
 * devices is not supported". */
static const char tied_apart[] =
    "is shared by partitions on distinct devices, which Pipe refuses (verify_splitting)";

static int training(partd__export_ctx *c, char **out, size_t *len)
{
    const partd__export_plan *p = c->plan;
    partd__export_refuse_tied(c, 1, tied_apart);
    if (p->sched == PARTD_TRAINING_LOOPED_BFS && p->v == 1)
        partd__export_approx(c, "pipe-runs-gpipe", p->sched_pointer,
                             "Pipe runs GPipe's order, not LoopedBFS's: as many microbatches "
                             "in flight, another step time");
    else if (p->sched != PARTD_TRAINING_GPIPE)
        partd__export_refuse(c, p->sched_pointer,
                             "Pipe runs GPipe (every forward, then the backwards), which keeps "
                             "all %u microbatches in flight where %s keeps fewer: more memory "
                             "than planned",
                             p->microbatches, partd_training_schedule_name(p->sched));
    partd__export_names *mods;
    int rc = partd__export_modules(c, &mods);
    if (rc != PARTD_OK)
        return rc;
    const char *mode = checkpoint_mode(c);
    json_t *balance = json_array();
    for (uint32_t j = 0; balance && j < p->n_stages; j++)
        if (json_array_append_new(balance, json_integer((json_int_t)mods[j].n)) != 0) {
            json_decref(balance);
            balance = NULL;
        }
    json_t *doc = json_object();
    if (!doc || json_object_set_new(doc, "balance", balance) ||
        json_object_set_new(doc, "chunks", json_integer(p->microbatches)) ||
        json_object_set_new(doc, "checkpoint", json_string(mode)) ||
        json_object_set_new(doc, "layers", partd__export_json_module_list(mods, p->n_stages)) ||
        json_object_set_new(doc, "devices", stage_devices(p))) {
        if (!doc)
            json_decref(balance);
        json_decref(doc);
        doc = NULL;
    }
    partd__export_modules_free(mods, p->n_stages);
    if (!doc)
        return PARTD_ENOMEM;
    if (c->n_refusals || c->rc != PARTD_OK) {
        json_decref(doc);
        return c->rc != PARTD_OK ? c->rc : PARTD_EINVALID;
    }
    return partd__export_json_finish(c, doc, out, len);
}

/* M from summary.total_ms = sum of time_ms + (M - 1) x bottleneck_ms; 0
 * when the figures do not give a whole number. */
static uint32_t pipeline_microbatches(const partd__export_plan *p)
{
    const json_t *s = json_object_get(p->doc, "summary");
    const json_t *total = json_object_get(s, "total_ms"), *bn = json_object_get(s, "bottleneck_ms");
    if (!json_is_number(total) || !json_is_number(bn) || json_number_value(bn) <= 0)
        return 0;
    double sum = 0;
    for (uint32_t j = 0; j < p->n_stages; j++) {
        const json_t *t = json_object_get(json_array_get(json_object_get(p->doc, "partitions"), j),
                                          "time_ms");
        if (!json_is_number(t))
            return 0;
        sum += json_number_value(t);
    }
    double m = (json_number_value(total) - sum) / json_number_value(bn) + 1;
    double whole = round(m);
    if (whole < 1 || whole > UINT32_MAX || fabs(m - whole) > 1e-6 * (whole > 1 ? whole : 1))
        return 0;
    return (uint32_t)whole;
}

/* Each partition's node count, or the result's own `balance`. */
static json_t *node_balance(partd__export_ctx *c)
{
    const partd__export_plan *p = c->plan;
    json_t *given = json_object_get(p->doc, "balance");
    if (json_is_array(given) && json_array_size(given) == p->n_stages)
        return json_deep_copy(given);
    json_t *a = json_array();
    for (uint32_t j = 0; a && j < p->n_stages; j++) {
        if (!p->stages[j].nodes) {
            char ptr[64];
            partd__export_stage_pointer(ptr, sizeof ptr, j, NULL, (size_t)-1);
            partd__export_refuse(c, ptr, "lists no nodes (options.result.detail summary) and "
                                         "the result has no balance");
            break;
        }
        json_int_t n = (json_int_t)json_array_size(p->stages[j].nodes);
        if (json_array_append_new(a, json_integer(n)) != 0) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

static void check_sequence(partd__export_ctx *c)
{
    const partd__export_plan *p = c->plan;
    for (uint32_t j = 0; j < p->n_stages; j++)
        for (size_t i = 0; i < json_array_size(p->stages[j].children); i++) {
            const json_t *k = json_array_get(p->stages[j].children, i);
            if (json_is_integer(k) && json_integer_value(k) > (json_int_t)j)
                continue;
            char ptr[128];
            partd__export_stage_pointer(ptr, sizeof ptr, j, "children", i);
            partd__export_refuse(c, ptr,
                                 "partition %u feeds an earlier partition: Pipe runs its "
                                 "partitions as one sequence",
                                 j);
        }
}

/* Pipe runs GPipe: exact for a gpipe plan, refused for 1f1b (all chunks
 * in flight where the plan holds fewer), listed for an inference plan and
 * for a result that does not record its schedule. */
static void pipeline_schedule(partd__export_ctx *c, uint32_t chunks)
{
    switch (c->plan->pipeline_schedule) {
    case PARTD_SCHEDULE_GPIPE: return;
    case PARTD_SCHEDULE_1F1B:
        partd__export_refuse(c, "/summary/schedule",
                             "Pipe runs GPipe (every forward, then the backwards), which keeps "
                             "all %u chunks in flight where the plan's 1f1b keeps fewer: more "
                             "memory than planned",
                             chunks);
        return;
    case PARTD_SCHEDULE_INFERENCE:
        partd__export_approx(c, "pipe-runs-gpipe", "/summary/schedule",
                             "the plan counted memory for inference (one chunk's outputs per "
                             "partition); Pipe holds that for forwards, but a training step "
                             "keeps every chunk's activations until its backward");
        return;
    default:
        partd__export_approx(c, "pipe-runs-gpipe", "/mode",
                             "Pipe runs GPipe; this result does not record the schedule it "
                             "counted memory for: it holds as planned when the request's "
                             "pipeline.schedule was gpipe");
    }
}

static int node_level(partd__export_ctx *c, char **out, size_t *len)
{
    const partd__export_plan *p = c->plan;
    int pipeline = strcmp(p->mode, "pipeline") == 0;
    uint32_t chunks = pipeline ? pipeline_microbatches(p) : 1;
    check_sequence(c);
    partd__export_refuse_tied(c, 1, tied_apart);
    if (pipeline && p->microbatches)
        chunks = p->microbatches;
    if (pipeline && chunks == 0) {
        chunks = 1;
        partd__export_approx(c, "chunks-unknown", "/summary/total_ms",
                             "the result's figures do not give its microbatch count: chunks 1, "
                             "fewer in flight than planned (set chunks to the request's "
                             "pipeline.microbatches)");
    }
    if (pipeline)
        pipeline_schedule(c, chunks);
    json_t *balance = node_balance(c);
    if (c->n_refusals || c->rc != PARTD_OK || !balance) {
        json_decref(balance);
        return c->rc != PARTD_OK ? c->rc : balance ? PARTD_EINVALID : PARTD_ENOMEM;
    }
    json_t *doc = json_object();
    if (!doc || json_object_set_new(doc, "balance", balance) ||
        json_object_set_new(doc, "chunks", json_integer(chunks)) ||
        json_object_set_new(doc, "checkpoint", json_string("never")) ||
        json_object_set_new(doc, "devices", stage_devices(p))) {
        if (!doc)
            json_decref(balance);
        json_decref(doc);
        return PARTD_ENOMEM;
    }
    return partd__export_json_finish(c, doc, out, len);
}

int partd__export_fairscale(partd__export_ctx *c, char **out, size_t *len)
{
    return c->plan->training ? training(c, out, len) : node_level(c, out, len);
}
