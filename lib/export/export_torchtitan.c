/* export_torchtitan.c - the `torchtitan` format: a job config (TOML) for
 * pytorch/torchtitan; see export.h.
 *
 * What torchtitan reads (torchtitan/config/job_config.py, Parallelism and
 * ActivationCheckpoint; torchtitan/distributed/pipeline_parallel.py,
 * pipeline_llm, build_pipeline_schedule and pipeline_module_split;
 * torchtitan/distributed/activation_checkpoint.py, apply_ac):
 *   [parallelism] pipeline_parallel_degree: the ranks S;
 *     module_fqns_per_model_part: per stage, the module names it keeps;
 *     pipeline_module_split keeps top-level children by name and entries
 *     of a top-level ModuleList/ModuleDict ("layers.3"), nothing deeper,
 *     and places stages by the schedule class's style ("loop" or "v");
 *   pipeline_parallel_schedule: get_schedule_class's name;
 *   pipeline_parallel_schedule_csv: a compute-only CSV loaded with
 *     _PipelineScheduleRuntime._load_csv instead of the class's order;
 *   n_microbatches = [training] local_batch_size //
 *     pipeline_parallel_microbatch_size;
 *   [activation_checkpoint] mode: "none", or "full": every block of
 *     model.layers wrapped (torchtitan checkpoints all layers or none).
 * So: the units are the module names (a "#k" run adds nothing; a module cut
 * between stages, or named three deep, is refused; a parameter tied across
 * stages is refused, since every stage is built from its own deep copy of
 * the model and the copies would train apart); the CSV is named only
 * when the plan's order is not the class's own (export it with --format
 * pytorch); a checkpointed unit that is not a block of `layers` is refused
 * (torchtitan would keep its activations: more memory than planned); some
 * layers checkpointed, or microbatch M - 1 left unchecked (except_last),
 * become every layer checkpointed for every microbatch, an approximation
 * on the safe side, listed as a comment. */
#include "export_internal.h"

#include <string.h>

#include "partd/enums.h"
#include "partd/partd.h"

#define SCHEDULE_CSV "partd-schedule.csv"

/* A TOML basic string (toml.io v1.0.0, "String"). */
static void toml_string(partd__export_text *f, const char *s)
{
    partd__export_printf(f, "%c", '"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            partd__export_printf(f, "\\%c", *p);
        else if (*p == '\n')
            partd__export_printf(f, "%s", "\\n");
        else if (*p == '\t')
            partd__export_printf(f, "%s", "\\t");
        else if (*p < 0x20 || *p == 0x7f)
            partd__export_printf(f, "\\u%04X", *p);
        else
            partd__export_printf(f, "%c", *p);
    }
    partd__export_printf(f, "%c", '"');
}

static int is_layers_block(const char *unit)
{
    size_t prefix, len = partd__export_unit_base_len(unit);
    uint64_t index;
    return partd__export_layer_index(unit, len, &prefix, &index) && prefix == 6 &&
           strncmp(unit, "layers", 6) == 0;
}

/* Module names deeper than a ModuleList entry: pipeline_module_split
 * cannot keep them. */
static void check_depth(partd__export_ctx *c)
{
    const partd__export_plan *p = c->plan;
    for (uint32_t j = 0; j < p->n_stages; j++)
        for (size_t i = 0; i < json_array_size(p->stages[j].units); i++) {
            const char *u = partd__export_str_at(p->stages[j].units, i);
            const char *dot = memchr(u, '.', partd__export_unit_base_len(u));
            if (!dot || !memchr(dot + 1, '.', partd__export_unit_base_len(u) - (size_t)(dot + 1 - u)))
                continue;
            char ptr[128];
            partd__export_stage_pointer(ptr, sizeof ptr, j, "units", i);
            partd__export_refuse(c, ptr,
                                 "%s is three modules deep: torchtitan's pipeline_module_split "
                                 "keeps top-level modules and entries of a top-level "
                                 "ModuleList or ModuleDict only (plan with a smaller "
                                 "training.unit_depth)",
                                 u);
        }
}

/* [activation_checkpoint] mode, refusing and listing what it cannot say. */
static const char *ac_mode(partd__export_ctx *c)
{
    const partd__export_plan *p = c->plan;
    size_t layers = 0, layers_ck = 0, ck = 0;
    for (uint32_t j = 0; j < p->n_stages; j++)
        for (size_t i = 0; i < json_array_size(p->stages[j].units); i++) {
            const char *u = partd__export_str_at(p->stages[j].units, i);
            int block = is_layers_block(u), is_ck = partd__export_is_checkpointed(&p->stages[j], u);
            layers += block;
            layers_ck += block && is_ck;
            ck += is_ck;
            if (is_ck && !block) {
                char ptr[128];
                partd__export_stage_pointer(ptr, sizeof ptr, j, "units", i);
                partd__export_refuse(c, ptr,
                                     "%s is checkpointed, and torchtitan checkpoints only the "
                                     "blocks of model.layers (apply_ac): it would keep its "
                                     "activations, more memory than planned",
                                     u);
            }
        }
    if (ck == 0)
        return "none";
    if (layers_ck < layers)
        partd__export_approx(c, "checkpoint-all-layers", "/partitions",
                             "the plan checkpoints %zu of %zu layers; torchtitan checkpoints "
                             "every layer or none, so all %zu are (more recomputation than "
                             "planned)",
                             layers_ck, layers, layers);
    if (p->checkpoint == PARTD_CHECKPOINT_EXCEPT_LAST && p->microbatches > 1)
        partd__export_approx(c, "checkpoint-every-microbatch", "/summary/checkpoint",
                             "the plan leaves the last microbatch unchecked (except_last); "
                             "torchtitan checkpoints every microbatch (more recomputation "
                             "than planned)");
    return "full";
}

/* 1 when the TOML must name a CSV of the plan's order. */
static int need_csv(partd__export_ctx *c)
{
    const partd__export_plan *p = c->plan;
    if (!p->order.off) {
        partd__export_refuse(c, "/summary/microbatches",
                             "the result lists no actions and %s cannot run %u microbatches "
                             "on %u ranks",
                             partd_training_schedule_name(p->sched), p->microbatches, p->n_ranks);
        return 0;
    }
    int own = partd__export_order_is_own(p);
    if (own != 0) {
        if (own < 0)
            c->rc = own;
        return 0;
    }
    partd__export_pytorch_rules(c);
    return 1;
}

static void write_comments(partd__export_ctx *c, partd__export_text *f, int csv)
{
    const partd__export_plan *p = c->plan;
    partd__export_comment_header(c, f, "#");
    partd__export_printf(f, "# n_microbatches = local_batch_size / pipeline_parallel_microbatch_size = %u "
               "(scale both alike for larger microbatches)\n",
            p->microbatches);
    if (partd__export_n_checkpointed(p)) {
        partd__export_printf(f, "# checkpointed units:");
        for (uint32_t j = 0; j < p->n_stages; j++) {
            partd__export_printf(f, "%s stage %u:", j ? ";" : "", j);
            for (size_t i = 0; i < json_array_size(p->stages[j].checkpointed); i++)
                partd__export_printf(f, "%s %s", i ? "," : "", partd__export_str_at(p->stages[j].checkpointed, i));
            if (!json_array_size(p->stages[j].checkpointed))
                partd__export_printf(f, " none");
        }
        partd__export_printf(f, "\n");
    }
    if (csv)
        partd__export_printf(f, "# the plan's order is not %s's own: write it beside this file with\n"
                   "#   partd export RESULT.json --format pytorch -o %s\n",
                partd_training_schedule_name(p->sched), SCHEDULE_CSV);
    partd__export_comment_warnings(c, f, "#");
}

static void write_toml(partd__export_ctx *c, partd__export_text *f, const partd__export_names *mods,
                       const char *mode, int csv)
{
    const partd__export_plan *p = c->plan;
    write_comments(c, f, csv);
    partd__export_printf(f, "\n[parallelism]\npipeline_parallel_degree = %u\npipeline_parallel_schedule = ",
            p->n_ranks);
    toml_string(f, partd_training_schedule_name(p->sched));
    partd__export_printf(f, "\nmodule_fqns_per_model_part = [\n");
    for (uint32_t j = 0; j < p->n_stages; j++) {
        partd__export_printf(f, "  [");
        for (size_t i = 0; i < mods[j].n; i++) {
            partd__export_printf(f, "%s", i ? ", " : "");
            toml_string(f, mods[j].v[i]);
        }
        partd__export_printf(f, "],\n");
    }
    partd__export_printf(f, "]\npipeline_parallel_microbatch_size = 1\n");
    if (csv) {
        partd__export_printf(f, "pipeline_parallel_schedule_csv = ");
        toml_string(f, SCHEDULE_CSV);
        partd__export_printf(f, "%c", '\n');
    }
    partd__export_printf(f, "\n[training]\nlocal_batch_size = %u\n", p->microbatches);
    partd__export_printf(f, "\n[activation_checkpoint]\nmode = ");
    toml_string(f, mode);
    partd__export_printf(f, "%c", '\n');
}

int partd__export_torchtitan(partd__export_ctx *c, char **out, size_t *len)
{
    partd__export_names *mods;
    int rc = partd__export_modules(c, &mods);
    if (rc != PARTD_OK)
        return rc;
    check_depth(c);
    /* pipeline_module_split builds every stage from its own deep copy */
    partd__export_refuse_tied(c, 0,
                              "is shared by several stages, and torchtitan builds each stage "
                              "from its own copy of the model: the copies would train apart");
    int csv = need_csv(c);
    const char *mode = ac_mode(c);
    if (c->n_refusals || c->rc != PARTD_OK) {
        partd__export_modules_free(mods, c->plan->n_stages);
        return c->rc != PARTD_OK ? c->rc : PARTD_EINVALID;
    }
    partd__export_text t;
    partd__export_text_init(&t);
    write_toml(c, &t, mods, mode, csv);
    rc = partd__export_text_finish(&t, out, len);
    partd__export_modules_free(mods, c->plan->n_stages);
    return rc;
}
