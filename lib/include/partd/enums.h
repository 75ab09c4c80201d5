/*
 * enums.h - every named enumeration of the request and the result: the C
 * values and their wire names, from one list per enum.
 *
 * The decoder (decode_node.c, decode_options.c) parses names with these tables, the cache key
 * (hash.c) and the result (result.c, sac.c) print names from them, so the
 * names a request is decoded from can never drift from the names its cache
 * key is computed over or its result reports.
 *
 * Each enum is one X-macro list of (C constant, wire name) in value order,
 * from 0. Adding a value is one X(...) line in its list. Adding an enum is
 * its list, one PARTD_ENUM_DECLARE line below and one PARTD_ENUM_DEFINE line
 * in enums.c. PARTD_ENUM_DECLARE(x, PARTD_X_COUNT, LIST) gives
 *   typedef enum partd_x {..., PARTD_X_COUNT} partd_x;
 *   extern const partd_enum_table partd_enums_x_table;
 *   const char *partd_x_name(partd_x v);          NULL when v is out of range
 *   int partd_x_parse(const char *name, partd_x *out);
 *
 * Errors: partd_enums_parse() and the *_parse() accessors return PARTD_OK,
 * or PARTD_EINVALID (partd.h) for a name not in the table, leaving *out
 * unchanged. Nothing here allocates; the tables are static and immutable.
 */
#ifndef PARTD_ENUMS_H
#define PARTD_ENUMS_H

/* graph.nodes[].op */
#define PARTD_OP_LIST(X)                        \
    X(PARTD_OP_PLACEHOLDER, "placeholder")      \
    X(PARTD_OP_GET_ATTR, "get_attr")            \
    X(PARTD_OP_CALL_MODULE, "call_module")      \
    X(PARTD_OP_CALL_FUNCTION, "call_function")  \
    X(PARTD_OP_CALL_METHOD, "call_method")      \
    X(PARTD_OP_OUTPUT, "output")

/* options.mode */
#define PARTD_MODE_LIST(X)                      \
    X(PARTD_MODE_PIPELINE, "pipeline")          \
    X(PARTD_MODE_SIZE_BASED, "size_based")     \
    X(PARTD_MODE_TRAINING, "training")         \
    X(PARTD_MODE_COST_AWARE, "cost_aware")     \
    X(PARTD_MODE_KL_BASED, "kl_based")         \
    X(PARTD_MODE_SPARSE_NN, "sparse_nn")       \
    X(PARTD_MODE_AOT_BASED, "aot_based")

/* options.pipeline.balance_by */
#define PARTD_BALANCE_BY_LIST(X)                \
    X(PARTD_BALANCE_TIME, "time")               \
    X(PARTD_BALANCE_MEMORY, "memory")           \
    X(PARTD_BALANCE_PARAMS, "params")           \
    X(PARTD_BALANCE_UNIFORM, "uniform")

/* options.pipeline.schedule */
#define PARTD_SCHEDULE_LIST(X)                  \
    X(PARTD_SCHEDULE_INFERENCE, "inference")    \
    X(PARTD_SCHEDULE_GPIPE, "gpipe")            \
    X(PARTD_SCHEDULE_1F1B, "1f1b")

/* options.training.schedule (v3): the names torch.distributed.pipelining's
 * get_schedule_class takes, in the contract's order (the tie order) */
#define PARTD_TRAINING_SCHEDULE_LIST(X)                          \
    X(PARTD_TRAINING_GPIPE, "GPipe")                             \
    X(PARTD_TRAINING_1F1B, "1F1B")                               \
    X(PARTD_TRAINING_LOOPED_BFS, "LoopedBFS")                    \
    X(PARTD_TRAINING_INTERLEAVED_1F1B, "Interleaved1F1B")        \
    X(PARTD_TRAINING_INTERLEAVED_ZB, "InterleavedZeroBubble")    \
    X(PARTD_TRAINING_ZBV, "ZBVZeroBubble")                       \
    X(PARTD_TRAINING_DUALPIPEV, "DualPipeV")

/* options.training.checkpoint (fairscale's modes, and auto) */
#define PARTD_CHECKPOINT_LIST(X)                \
    X(PARTD_CHECKPOINT_NEVER, "never")          \
    X(PARTD_CHECKPOINT_ALWAYS, "always")        \
    X(PARTD_CHECKPOINT_EXCEPT_LAST, "except_last") \
    X(PARTD_CHECKPOINT_AUTO, "auto")

/* options.training.device_order */
#define PARTD_DEVICE_ORDER_LIST(X)              \
    X(PARTD_DEVICE_ORDER_GIVEN, "given")        \
    X(PARTD_DEVICE_ORDER_AUTO, "auto")

/* options.result.detail: the whole document, or partitions and boundaries
 * without their node lists */
#define PARTD_RESULT_DETAIL_LIST(X)             \
    X(PARTD_RESULT_DETAIL_FULL, "full")         \
    X(PARTD_RESULT_DETAIL_SUMMARY, "summary")

/* result sac.*.status: the status of one SAC answer (NO_SOLUTION: a
 * frontier point the time limit cut before any plan). INFEASIBLE is the
 * planner's own: it fails the plan and never appears in a result. */
#define PARTD_SAC_STATUS_LIST(X)                \
    X(PARTD_SAC_OPTIMAL, "optimal")             \
    X(PARTD_SAC_FEASIBLE, "feasible")           \
    X(PARTD_SAC_INFEASIBLE, "infeasible")       \
    X(PARTD_SAC_NO_SOLUTION, "no_solution")

typedef struct partd_enum_table {
    const char *what;          /* the enum's member, e.g. "mode" */
    const char *const *names;  /* names[value], NULL-terminated */
    int count;
} partd_enum_table;

/* The name of `value`, or NULL when it is not in [0, count). */
const char *partd_enums_name(const partd_enum_table *t, int value);

/* The value named `name` (exact, case-sensitive): PARTD_OK and *out set, or
 * PARTD_EINVALID with *out unchanged (also for a NULL name). */
int partd_enums_parse(const partd_enum_table *t, const char *name, int *out);

#define PARTD_ENUM_CONST(id, name) id,

/* An enum partd_<short> with its table partd_enums_<short>_table and the
 * inline partd_<short>_name() and partd_<short>_parse(). */
#define PARTD_ENUM_DECLARE(short, count, LIST)                                \
    typedef enum partd_##short { LIST(PARTD_ENUM_CONST) count } partd_##short; \
    extern const partd_enum_table partd_enums_##short##_table;                \
    static inline const char *partd_##short##_name(partd_##short v)           \
    {                                                                         \
        return partd_enums_name(&partd_enums_##short##_table, (int)v);        \
    }                                                                         \
    static inline int partd_##short##_parse(const char *name, partd_##short *out) \
    {                                                                         \
        int v = 0;                                                            \
        int rc = partd_enums_parse(&partd_enums_##short##_table, name, &v);   \
        if (rc == 0)                                                          \
            *out = (partd_##short)v;                                                   \
        return rc;                                                            \
    }

PARTD_ENUM_DECLARE(op, PARTD_OP_COUNT, PARTD_OP_LIST)
PARTD_ENUM_DECLARE(mode, PARTD_MODE_COUNT, PARTD_MODE_LIST)
PARTD_ENUM_DECLARE(balance_by, PARTD_BALANCE_BY_COUNT, PARTD_BALANCE_BY_LIST)
PARTD_ENUM_DECLARE(schedule, PARTD_SCHEDULE_COUNT, PARTD_SCHEDULE_LIST)
PARTD_ENUM_DECLARE(training_schedule, PARTD_TRAINING_SCHEDULE_COUNT, PARTD_TRAINING_SCHEDULE_LIST)
PARTD_ENUM_DECLARE(checkpoint, PARTD_CHECKPOINT_COUNT, PARTD_CHECKPOINT_LIST)
PARTD_ENUM_DECLARE(device_order, PARTD_DEVICE_ORDER_COUNT, PARTD_DEVICE_ORDER_LIST)
PARTD_ENUM_DECLARE(result_detail, PARTD_RESULT_DETAIL_COUNT, PARTD_RESULT_DETAIL_LIST)
PARTD_ENUM_DECLARE(sac_status, PARTD_SAC_STATUS_COUNT, PARTD_SAC_STATUS_LIST)

#endif
