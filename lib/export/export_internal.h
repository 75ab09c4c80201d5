/*
 * export_internal.h - what the files of lib/export share (partd__export_*,
 * private to this folder):
 *   export_read.c    the result document read into a partd__export_plan
 *   export_order.c   a plan's order against its class's own (built by the
 *                    training planner's generator, training_schedule.h)
 *   export_rules.c   PyTorch's rules for an order (what _load_csv checks)
 *   export_units.c   unit names: "#k" runs, layers named <prefix>.<integer>
 *   export_ctx.c     the context of one export: its refusals, its
 *                    approximations (warnings) and the output's text
 *   export_format.c  the formats' names and content types (partd/export.h)
 *   export.c         partd_export(): read, then run the format's writer
 *   export_<format>.c  one writer per format
 *
 * Ownership: a plan owns its jansson document (plan->doc) and the arrays it
 * allocates; every json_t and string a plan points at is borrowed from that
 * document and lives until partd__export_plan_free(). A context owns its
 * warnings. Errors: PARTD_OK or a negative PARTD_E* code (partd.h), as each
 * function says; refusals are not errors of the function that finds them but
 * entries in the context's problem (partd__export_refuse).
 */
#ifndef PARTD_EXPORT_INTERNAL_H
#define PARTD_EXPORT_INTERNAL_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "partd/export.h"
#include "partd/problem.h"
#include "training/training_schedule.h"

/* ---- the plan ---------------------------------------------------------- */

typedef struct partd__export_stage {
    uint32_t rank;          /* the rank that runs it (node-level plans: j) */
    const char *device;
    json_t *units;          /* arrays of strings, or NULL when absent */
    json_t *checkpointed;
    json_t *nodes;
    json_t *logical_ids;
    json_t *children;
    const char *first_module; /* node-level: the module whose call begins it */
} partd__export_stage;

typedef struct partd__export_plan {
    json_t *doc;                    /* owned */
    const char *mode;
    int training;                   /* 1: units, ranks, a schedule */
    uint32_t n_stages;              /* V: partitions[] */
    partd__export_stage *stages;
    /* pipeline results: the request's pipeline.schedule (partd_schedule,
     * enums.h) and microbatches, as summary records them; -1 and 0 for a
     * result that does not (written before partd recorded them) */
    int pipeline_schedule;
    uint32_t n_ranks;               /* S (node-level plans: n_stages) */
    /* training results only (but microbatches, and rank_device: each
     * node-level partition's device) */
    uint32_t v;                     /* stages per rank */
    uint32_t microbatches;          /* M (pipeline results: 0 when unknown) */
    partd_training_schedule sched;
    const char *sched_name;         /* as the result writes it */
    const char *sched_pointer;      /* where: /schedule/name or /summary/schedule */
    int checkpoint;                 /* partd_checkpoint (enums.h) */
    int actions_given;              /* the result lists schedule.actions */
    partd_training_lists order;     /* every rank's actions: the result's, or
                                     * the class's own when it lists none;
                                     * order.off NULL when neither */
    const char **rank_device;       /* n_ranks device names */
} partd__export_plan;

/* Reads result text into p (zeroed by the call). PARTD_OK; PARTD_EMALFORMED
 * (not JSON) or PARTD_EINVALID (not a result document: every reason found
 * an error of pb, pointer into the result), PARTD_ENOMEM. On failure p holds
 * nothing to free. */
int partd__export_read(const char *text, size_t len, partd__export_plan *p, partd_problem *pb);
void partd__export_plan_free(partd__export_plan *p);

/* ---- schedules (export_order.c) ----------------------------------------- */

/* PyTorch's name, case-insensitive as get_schedule_class reads it
 * (v2's "gpipe" and "1f1b" included): PARTD_OK or PARTD_EINVALID. */
int partd__export_sched_parse(const char *name, partd_training_schedule *out);

/* The named class's own lists for the plan's S, v and M, built by the
 * planner's generator (training/training_schedule.h) into *out. PARTD_OK;
 * PARTD_EINVALID when the class does not run that shape (v other than its
 * own, 1F1B with M < S, ...); PARTD_ENOMEM. */
int partd__export_own_order(const partd__export_plan *p, partd_training_lists *out);

/* 1 when every rank's list of the plan is the named class's own order, 0
 * when not (or the plan has none), PARTD_ENOMEM when that could not be
 * found out. */
int partd__export_order_is_own(const partd__export_plan *p);

/* ---- the context of one export (export_ctx.c) --------------------------------- */

/* A list of names (partd__export_modules). */
typedef struct partd__export_names {
    char **v;
    size_t n;
} partd__export_names;

typedef struct partd__export_note {
    char *code;
    char *message;
} partd__export_note;

typedef struct partd__export_ctx {
    const partd__export_plan *plan;
    partd_export_format format;
    unsigned flags;
    partd_problem *pb;          /* refusals, once the first is made */
    uint32_t n_refusals;
    partd__export_note *warnings;
    uint32_t n_warnings;
    int rc;                     /* PARTD_ENOMEM once an allocation failed */
} partd__export_ctx;

/* Frees what the context owns (its warnings). */
void partd__export_ctx_free(partd__export_ctx *c);

/* The format cannot say this: an error of the problem at `pointer` (a JSON
 * Pointer into the result, "" for the whole). */
void partd__export_refuse(partd__export_ctx *c, const char *pointer, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The format says this only on the safe side: listed as a warning with
 * `code`, or, under PARTD_EXPORT_STRICT, refused at `pointer`. */
void partd__export_approx(partd__export_ctx *c, const char *code, const char *pointer,
                          const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Text formats: the opening comment lines (what the file is, the plan's
 * shape) and one `<prefix> warning (<code>): <message>` line per
 * approximation, appended to f (below). */
struct partd__export_text;
void partd__export_comment_header(const partd__export_ctx *c, struct partd__export_text *f,
                                  const char *prefix);
void partd__export_comment_warnings(const partd__export_ctx *c, struct partd__export_text *f,
                                    const char *prefix);

/* JSON formats: adds `warnings` (when there are any) to doc, takes the
 * reference to doc, and dumps it indented with a final newline into *out.
 * PARTD_OK or PARTD_ENOMEM. */
int partd__export_json_finish(partd__export_ctx *c, json_t *doc, char **out, size_t *len);

/* JSON arrays: each rank's device; every stage's modules in order (the
 * layer list of a runtime that takes one); NULL on ENOMEM. */
json_t *partd__export_json_rank_devices(const partd__export_plan *p);
json_t *partd__export_json_module_list(const partd__export_names *m, uint32_t n_stages);

/* The result's tied_params (param, partitions: its stages), copied, or []. */
json_t *partd__export_json_tied(const partd__export_plan *p);

/* Refuses, at /tied_params/<i>, each parameter the result lists as tied
 * whose stages are not all on one device (same_device 1) or not all one
 * stage (same_device 0), with the message "<param> <why>". */
void partd__export_refuse_tied(partd__export_ctx *c, int same_device, const char *why);

/* A growing text in memory: init, append with printf, then finish, which
 * hands the text over (malloc'd, NUL-terminated). An append that cannot
 * grow the text marks it failed and the rest are no-ops; finish then frees
 * it and returns PARTD_ENOMEM. (Not stdio's open_memstream: it can lose
 * bytes without flagging an error when it cannot grow.) */
typedef struct partd__export_text {
    char *buf;
    size_t len, cap;
    int failed;
} partd__export_text;

void partd__export_text_init(partd__export_text *t);
void partd__export_printf(partd__export_text *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int partd__export_text_finish(partd__export_text *t, char **out, size_t *len);

/* JSON Pointer of member `key` of partitions[j] ("/partitions/3/units"),
 * and of its element i when i is not (size_t)-1. buf holds at least 96
 * bytes plus the key. */
void partd__export_stage_pointer(char *buf, size_t cap, uint32_t j, const char *key, size_t i);

/* ---- unit names (export_units.c) ---------------------------------------- */

/* Length of a unit's name without its "#k" run suffix (k >= 2). */
size_t partd__export_unit_base_len(const char *name);

/* 1 when name[0..len) is <prefix>.<integer> (a layer of a stack, as
 * torchtitan's `layers.3` and Megatron's decoder layers are named), with
 * *prefix_len the length of <prefix> and *index the integer; 0 otherwise. */
int partd__export_layer_index(const char *name, size_t len, size_t *prefix_len,
                              uint64_t *index);

/* The string element i of a JSON array (NULL when not a string). */
const char *partd__export_str_at(const json_t *array, size_t i);

/* 1 when the unit is in the stage's `checkpointed` list. */
int partd__export_is_checkpointed(const partd__export_stage *s, const char *unit);

/* Number of checkpointed units over all stages. */
size_t partd__export_n_checkpointed(const partd__export_plan *p);

/* The modules of a training plan as runtimes that build stages from module
 * lists see them: for each stage, its units' names without "#k", each once,
 * in order. A module an earlier stage holds is refused in c at the unit
 * that comes back to it (a runtime cannot cut a module between stages).
 * *out: one malloc'd list per stage (partd__export_modules_free). PARTD_OK
 * or PARTD_ENOMEM. */
int partd__export_modules(partd__export_ctx *c, partd__export_names **out);
void partd__export_modules_free(partd__export_names *m, uint32_t n_stages);

/* ---- the formats ------------------------------------------------------- */

/* Each writer checks what it can say (refusals and approximations in c),
 * and when nothing is refused writes the export into *out. PARTD_OK;
 * PARTD_EINVALID when something was refused (nothing written);
 * PARTD_ENOMEM. */
int partd__export_torchtitan(partd__export_ctx *c, char **out, size_t *len);
int partd__export_pytorch(partd__export_ctx *c, char **out, size_t *len);
int partd__export_pytorch_split(partd__export_ctx *c, char **out, size_t *len);
int partd__export_megatron(partd__export_ctx *c, char **out, size_t *len);
int partd__export_deepspeed(partd__export_ctx *c, char **out, size_t *len);
int partd__export_fairscale(partd__export_ctx *c, char **out, size_t *len);
int partd__export_fx(partd__export_ctx *c, char **out, size_t *len);

/* PyTorch's rules for a compute-only order (export_rules.c; schedules.py,
 * _validate_schedule and _add_send_recv), applied to the plan's actions:
 * each violation refused in c at /schedule/actions/<rank>/<i>. Returns the
 * number of violations found (0: PyTorch loads and runs the order). */
uint32_t partd__export_pytorch_rules(partd__export_ctx *c);

#endif
