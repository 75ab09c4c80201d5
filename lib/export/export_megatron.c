/* export_megatron.c - the `megatron` format: Megatron-LM command-line
 * arguments (one per line, `#` comments; `grep -v '^#' FILE | xargs`
 * appends them to a command); see export.h.
 *
 * What Megatron-Core reads (NVIDIA/Megatron-LM,
 * megatron/core/transformer/pipeline_parallel_layer_layout.py,
 * PipelineParallelLayerLayout): --pipeline-model-parallel-layout is a list
 * of stages separated by `|` (`,` is cosmetic), each a string of layers,
 * `E` the embedding, `t` a decoder layer, `L` the loss (final norm, output
 * layer and loss), `m` an MTP layer, with `x*n` and `(...)*n` repeats;
 * stage i of the list runs on rank i mod P (the layout is read as
 * [vpp_rank * P + pp_rank]), so P stages per virtual round, the virtual
 * pipeline size being the number of stages / P; validate_layer_layout needs
 * E first and L last, each exactly once, and as many `t` as --num-layers.
 * Recomputation (megatron/core/transformer/transformer_block.py,
 * _checkpointed_forward): --recompute-granularity full with
 * --recompute-method block checkpoints the first --recompute-num-layers
 * layers of every stage (each virtual stage's block), for every microbatch.
 *
 * So: the layers are the units named <prefix>.<integer> (one prefix,
 * indices 0, 1, 2, ... in order, each counted once however many "#k" runs
 * it has); the units before the first layer are the embedding and must all
 * be on stage 0, those after the last are the loss and must all be on the
 * last stage; anything else, a layer cut between stages, or a unit between
 * layers, is refused. The V placement (ZBVZeroBubble, DualPipeV) is
 * refused; Megatron runs its own (interleaved) 1F1B, the plan's order for
 * 1F1B and Interleaved1F1B with microbatches grouped by P, fewer
 * microbatches in flight than GPipe, LoopedBFS and a larger group hold
 * (listed: less memory, another step time), and more than interleaved
 * zero-bubble orders hold (refused). Checkpointed units must be layers (the
 * embedding and loss cannot be); N covers the last checkpointed layer of
 * every stage, so layers the plan keeps may be recomputed too (listed). */
#include "export_internal.h"

#include <stdlib.h>
#include <string.h>

#include "partd/enums.h"
#include "partd/partd.h"

typedef struct layout {
    uint32_t *layers;      /* per stage: decoder layers (each counted once) */
    uint32_t *ck_reach;    /* per stage: 1 + position of its last checkpointed layer */
    uint32_t *ck_count;    /* per stage: its checkpointed layers */
    uint32_t embed_stage;  /* stage of the embedding units */
    uint32_t loss_stage;   /* stage of the loss units */
    uint64_t n_layers;
    const char *prefix;    /* of the layers' names, prefix_len bytes */
    size_t prefix_len;
    int partial;           /* a layer has checkpointed and unchecked runs */
} layout;

enum part { EMBED, LAYERS, LOSS };

static void unit_pointer(char *buf, size_t cap, uint32_t j, size_t i)
{
    partd__export_stage_pointer(buf, cap, j, "units", i);
}

/* One unit, in plan order: which part it belongs to, the layer it counts. */
typedef struct walker {
    partd__export_ctx *c;
    layout *lo;
    enum part part;
    int64_t layer;         /* current layer index, -1 before the first */
    uint32_t layer_stage;  /* stage of its first run */
    int layer_ck;          /* the current layer counts as checkpointed */
    int layer_kept;        /* a run of the current layer is not checkpointed */
} walker;

static void walk_layer(walker *w, uint32_t j, size_t i, const char *u, size_t prefix,
                       uint64_t index)
{
    layout *lo = w->lo;
    char ptr[128];
    unit_pointer(ptr, sizeof ptr, j, i);
    if (w->part == LOSS) {
        partd__export_refuse(w->c, ptr,
                             "%s comes after units that are not layers: Megatron's stages "
                             "hold the embedding, then layers, then the loss",
                             u);
        return;
    }
    if (!lo->prefix) {
        lo->prefix = u;
        lo->prefix_len = prefix;
    } else if (prefix != lo->prefix_len || strncmp(u, lo->prefix, prefix) != 0) {
        partd__export_refuse(w->c, ptr,
                             "%s is a layer of another stack than %.*s: Megatron's layout "
                             "has one stack of decoder layers",
                             u, (int)lo->prefix_len, lo->prefix);
        return;
    }
    w->part = LAYERS;
    if ((int64_t)index == w->layer) { /* a further run of the same layer */
        if (w->layer_stage != j)
            partd__export_refuse(w->c, ptr,
                                 "layer %s is cut between stages %u and %u: Megatron builds "
                                 "whole layers",
                                 u, w->layer_stage, j);
    } else if ((int64_t)index != w->layer + 1) {
        partd__export_refuse(w->c, ptr,
                             "%s comes where layer %lld belongs: Megatron numbers layers from 0 "
                             "in the order its stages hold them",
                             u, (long long)w->layer + 1);
        return;
    } else {
        w->layer = (int64_t)index;
        w->layer_stage = j;
        w->layer_ck = w->layer_kept = 0;
        lo->layers[j]++;
        lo->n_layers++;
    }
    if (!partd__export_is_checkpointed(&w->c->plan->stages[j], u))
        w->layer_kept = 1;
    else if (!w->layer_ck) {
        w->layer_ck = 1;
        lo->ck_count[j]++;
        lo->ck_reach[j] = lo->layers[j];
    }
    lo->partial |= w->layer_ck && w->layer_kept;
}

static void walk_other(walker *w, uint32_t j, size_t i, const char *u)
{
    layout *lo = w->lo;
    char ptr[128];
    unit_pointer(ptr, sizeof ptr, j, i);
    if (w->part == LAYERS)
        w->part = LOSS;
    if (w->part == EMBED && j != 0)
        partd__export_refuse(w->c, ptr,
                             "%s comes before the first layer, so belongs to the embedding, "
                             "and is not on stage 0: Megatron builds the embedding (E) on the "
                             "first stage only",
                             u);
    if (w->part == LOSS) {
        if (j != w->c->plan->n_stages - 1)
            partd__export_refuse(w->c, ptr,
                                 "%s comes after the last layer so far, and a stage after it "
                                 "holds more: Megatron's stages hold the embedding, then "
                                 "layers, then the loss (L) on the last stage",
                                 u);
        lo->loss_stage = j;
    }
    if (partd__export_is_checkpointed(&w->c->plan->stages[j], u))
        partd__export_refuse(w->c, ptr,
                             "%s is checkpointed, and Megatron recomputes decoder layers only: "
                             "it would keep its activations, more memory than planned",
                             u);
}

static void walk(partd__export_ctx *c, layout *lo)
{
    const partd__export_plan *p = c->plan;
    walker w = {c, lo, EMBED, -1, 0, 0, 0};
    lo->loss_stage = UINT32_MAX;
    int any_embed = 0;
    for (uint32_t j = 0; j < p->n_stages; j++)
        for (size_t i = 0; i < json_array_size(p->stages[j].units); i++) {
            const char *u = partd__export_str_at(p->stages[j].units, i);
            size_t prefix;
            uint64_t index;
            if (partd__export_layer_index(u, partd__export_unit_base_len(u), &prefix, &index)) {
                walk_layer(&w, j, i, u, prefix, index);
            } else {
                any_embed |= w.part == EMBED;
                walk_other(&w, j, i, u);
            }
        }
    if (lo->n_layers == 0)
        partd__export_refuse(c, "/partitions",
                             "no unit is a layer (<prefix>.<integer>): Megatron's layout is "
                             "made of decoder layers");
    else if (!any_embed)
        partd__export_refuse(c, "/partitions/0/units/0",
                             "no unit comes before the first layer: Megatron's layout starts "
                             "with the embedding (E) the plan does not hold");
    else if (lo->loss_stage == UINT32_MAX)
        partd__export_refuse(c, "/partitions",
                             "no unit comes after the last layer: Megatron's layout ends with "
                             "the loss (L) the plan does not hold");
}

/* The plan's order against what Megatron runs: its 1F1B, interleaved with
 * microbatches grouped by P (microbatch_group_size_per_vp_stage). */
static void check_schedule(partd__export_ctx *c)
{
    const partd__export_plan *p = c->plan;
    const char *name = partd_training_schedule_name(p->sched);
    uint32_t rounds = p->microbatches / p->n_ranks > 1 ? p->microbatches / p->n_ranks : 1;
    uint32_t group = p->microbatches / rounds;
    switch (p->sched) {
    case PARTD_TRAINING_ZBV:
    case PARTD_TRAINING_DUALPIPEV:
        partd__export_refuse(c, p->sched_pointer,
                             "%s places stages in a V; Megatron-Core's layout places stage i "
                             "on rank i mod %u",
                             name, p->n_ranks);
        return;
    case PARTD_TRAINING_INTERLEAVED_ZB:
        if (p->v > 1) {
            partd__export_refuse(c, p->sched_pointer,
                                 "Megatron runs interleaved 1F1B, which keeps more forwards "
                                 "in flight than %s: more memory than planned",
                                 name);
            return;
        }
        break;
    case PARTD_TRAINING_1F1B: return;
    case PARTD_TRAINING_INTERLEAVED_1F1B:
        if (p->v == 1)
            break; /* its warm-up is twice 1F1B's */
        if (group == p->n_ranks)
            return;
        if (group < p->n_ranks) {
            partd__export_refuse(c, "/summary/microbatches",
                                 "%u microbatches are fewer than %u ranks: Megatron's "
                                 "interleaved order would keep more in flight than planned",
                                 p->microbatches, p->n_ranks);
            return;
        }
        break;
    default: break;
    }
    partd__export_approx(c, "megatron-schedule", p->sched_pointer,
                         "Megatron runs its own %s order, not %s's: no more microbatches in "
                         "flight than planned, but another step time",
                         p->v > 1 ? "interleaved 1F1B" : "1F1B", name);
}

static void check_recompute(partd__export_ctx *c, const layout *lo, uint32_t n)
{
    const partd__export_plan *p = c->plan;
    int exact = !lo->partial;
    for (uint32_t j = 0; j < p->n_stages; j++) {
        uint32_t want = lo->layers[j] < n ? lo->layers[j] : n;
        exact &= lo->ck_count[j] == want && lo->ck_reach[j] == want;
    }
    if (!exact)
        partd__export_approx(c, "recompute-first-layers", "/partitions",
                             "Megatron recomputes the first %u layers of every stage "
                             "(--recompute-method block): layers the plan keeps are recomputed "
                             "too (more recomputation than planned)",
                             n);
    if (p->checkpoint == PARTD_CHECKPOINT_EXCEPT_LAST && p->microbatches > 1)
        partd__export_approx(c, "checkpoint-every-microbatch", "/summary/checkpoint",
                             "the plan leaves the last microbatch unchecked (except_last); "
                             "Megatron recomputes every microbatch");
}

static void write_layout(partd__export_text *f, const partd__export_plan *p, const layout *lo)
{
    partd__export_printf(f, "--pipeline-model-parallel-layout '");
    for (uint32_t j = 0; j < p->n_stages; j++) {
        partd__export_printf(f, "%s", j ? "|" : "");
        if (j == lo->embed_stage)
            partd__export_printf(f, "%c", 'E');
        if (lo->layers[j] == 1)
            partd__export_printf(f, "%c", 't');
        else if (lo->layers[j] > 1)
            partd__export_printf(f, "t*%u", lo->layers[j]);
        if (j == lo->loss_stage)
            partd__export_printf(f, "%c", 'L');
    }
    partd__export_printf(f, "'\n");
}

static int write_args(partd__export_ctx *c, const layout *lo, uint32_t n, char **out, size_t *len)
{
    const partd__export_plan *p = c->plan;
    partd__export_text t;
    partd__export_text_init(&t);
    partd__export_text *f = &t;
    partd__export_comment_header(c, f, "#");
    partd__export_printf(f, "# the plan runs %u microbatches a step: --global-batch-size = %u x "
               "--micro-batch-size x the data-parallel size\n",
            p->microbatches, p->microbatches);
    partd__export_comment_warnings(c, f, "#");
    partd__export_printf(f, "--pipeline-model-parallel-size %u\n", p->n_ranks);
    write_layout(f, p, lo);
    partd__export_printf(f, "--num-layers %llu\n", (unsigned long long)lo->n_layers);
    if (n)
        partd__export_printf(f, "--recompute-granularity full\n--recompute-method block\n"
                   "--recompute-num-layers %u\n",
                n);
    return partd__export_text_finish(&t, out, len);
}

int partd__export_megatron(partd__export_ctx *c, char **out, size_t *len)
{
    const partd__export_plan *p = c->plan;
    layout lo = {calloc(p->n_stages, sizeof(uint32_t)), calloc(p->n_stages, sizeof(uint32_t)),
                 calloc(p->n_stages, sizeof(uint32_t)), 0, UINT32_MAX, 0, NULL, 0, 0};
    int rc = lo.layers && lo.ck_reach && lo.ck_count ? PARTD_OK : PARTD_ENOMEM;
    uint32_t n = 0;
    if (rc == PARTD_OK) {
        check_schedule(c);
        walk(c, &lo);
        for (uint32_t j = 0; j < p->n_stages; j++)
            n = lo.ck_reach[j] > n ? lo.ck_reach[j] : n;
        if (n)
            check_recompute(c, &lo, n);
        if (c->n_refusals)
            rc = PARTD_EINVALID;
    }
    if (rc == PARTD_OK)
        rc = write_args(c, &lo, n, out, len);
    free(lo.layers);
    free(lo.ck_reach);
    free(lo.ck_count);
    return rc;
}
