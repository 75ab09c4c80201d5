/*
 * test_enums.c - the enum name tables: each round-trips, and the decoder,
 * the cache key and the result all use the table's names.
 */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "partd/enums.h"
#include "partd/hash.h"
#include "partd/partd.h"

static const partd_enum_table *const tables[] = {
    &partd_enums_op_table, &partd_enums_mode_table, &partd_enums_balance_by_table,
    &partd_enums_schedule_table, &partd_enums_checkpoint_table, &partd_enums_device_order_table,
    &partd_enums_sac_status_table, &partd_enums_result_detail_table,
};
#define N_TABLES (sizeof tables / sizeof *tables)

static void test_tables_round_trip(void **state)
{
    (void)state;
    for (size_t k = 0; k < N_TABLES; k++) {
        const partd_enum_table *t = tables[k];
        assert_non_null(t->what);
        assert_true(t->count > 0);
        assert_null(t->names[t->count]); /* NULL-terminated for partd_json_read_enum */
        for (int v = 0; v < t->count; v++) {
            const char *name = partd_enums_name(t, v);
            assert_non_null(name);
            assert_true(name[0] != '\0');
            int back = -1;
            assert_int_equal(partd_enums_parse(t, name, &back), PARTD_OK);
            assert_int_equal(back, v);
            for (int w = v + 1; w < t->count; w++)
                assert_string_not_equal(name, t->names[w]);
        }
    }
}

static void test_out_of_range_and_unknown_names(void **state)
{
    (void)state;
    for (size_t k = 0; k < N_TABLES; k++) {
        const partd_enum_table *t = tables[k];
        assert_null(partd_enums_name(t, -1));
        assert_null(partd_enums_name(t, t->count));
        int out = 12345;
        assert_int_equal(partd_enums_parse(t, "no-such-name", &out), PARTD_EINVALID);
        assert_int_equal(partd_enums_parse(t, "", &out), PARTD_EINVALID);
        assert_int_equal(partd_enums_parse(t, NULL, &out), PARTD_EINVALID);
        assert_int_equal(out, 12345);
    }
    /* Names are exact: no case folding, no prefixes. */
    partd_mode m = PARTD_MODE_SIZE_BASED;
    assert_int_equal(partd_mode_parse("Pipeline", &m), PARTD_EINVALID);
    assert_int_equal(partd_mode_parse("pipe", &m), PARTD_EINVALID);
    assert_int_equal(m, PARTD_MODE_SIZE_BASED);
}

static void test_typed_accessors(void **state)
{
    (void)state;
    assert_string_equal(partd_mode_name(PARTD_MODE_PIPELINE), "pipeline");
    assert_string_equal(partd_mode_name(PARTD_MODE_SIZE_BASED), "size_based");
    assert_string_equal(partd_schedule_name(PARTD_SCHEDULE_1F1B), "1f1b");
    assert_string_equal(partd_balance_by_name(PARTD_BALANCE_PARAMS), "params");
    assert_string_equal(partd_op_name(PARTD_OP_GET_ATTR), "get_attr");
    assert_string_equal(partd_sac_status_name(PARTD_SAC_NO_SOLUTION), "no_solution");
    partd_schedule s = PARTD_SCHEDULE_INFERENCE;
    assert_int_equal(partd_schedule_parse("gpipe", &s), PARTD_OK);
    assert_int_equal(s, PARTD_SCHEDULE_GPIPE);
}

/* One device, one operation; every option spelled out (the pipeline block
 * only for mode pipeline, the one mode that reads it). */
static char *request_with(const char *mode, const char *balance_by, const char *schedule)
{
    const char *fmt =
        "{\"graph\":{\"name\":\"m\",\"nodes\":["
        "{\"name\":\"x\",\"op\":\"placeholder\",\"output_bytes\":8},"
        "{\"name\":\"a\",\"op\":\"call_module\",\"inputs\":[\"x\"],\"output_bytes\":4,"
        "\"param_bytes\":16,\"latency_ms\":0.25},"
        "{\"name\":\"output\",\"op\":\"output\",\"inputs\":[\"a\"]}]},"
        "\"devices\":[{\"name\":\"g0\",\"memory_bytes\":1000}],"
        "\"options\":{\"mode\":\"%s\",\"transfer_bytes_per_sec\":1e10%s}}";
    char block[256] = "";
    if (strcmp(mode, "pipeline") == 0)
        snprintf(block, sizeof block,
                 ",\"pipeline\":{\"stages\":1,\"balance_by\":\"%s\",\"cut_after\":[],"
                 "\"schedule\":\"%s\",\"microbatches\":1,\"param_factor\":1.0}",
                 balance_by, schedule);
    if (strcmp(mode, "aot_based") == 0)
        snprintf(block, sizeof block,
                 ",\"aot\":{\"partition_of\":{\"a\":0},\"device_of\":{\"0\":\"g0\"}}");
    char *out = malloc(2048);
    assert_non_null(out);
    snprintf(out, 2048, fmt, mode, block);
    return out;
}

/* The cache key by its definition (hash.h): SHA-256 of the canonical
 * {devices, graph_hash, options, planner_version}, with the option names
 * taken from the tables. */
static void expected_cache_key(const partd_request *r, char out[72])
{
    const partd_options *o = &r->options;
    json_t *doc = json_pack(
        "{s:[{s:s, s:I, s:I, s:f}], s:s, s:{s:s, s:f, s:{s:I, s:s, s:[], s:s, s:I, s:f}, s:n},"
        " s:s}",
        "devices", "name", "g0", "memory_bytes", (json_int_t)1000, "logical_id",
        (json_int_t)0, "speed", 1.0,
        "graph_hash", r->graph_hash,
        "options", "mode", partd_mode_name(o->mode), "transfer_bytes_per_sec", 1e10,
        "pipeline", "stages", (json_int_t)1, "balance_by",
        partd_balance_by_name(o->pipeline.balance_by), "cut_after", "schedule",
        partd_schedule_name(o->pipeline.schedule), "microbatches", (json_int_t)1,
        "param_factor", 1.0, "sac",
        "planner_version", PARTD_PLANNER_VERSION);
    assert_non_null(doc);
    /* options.result only for a detail other than the default "full", so
     * that every other request keeps its key */
    if (o->result_detail != PARTD_RESULT_DETAIL_FULL)
        assert_int_equal(json_object_set_new(json_object_get(doc, "options"), "result",
                                             json_pack("{s:s}", "detail",
                                                       partd_result_detail_name(
                                                           o->result_detail))),
                         0);
    char *text = json_dumps(doc, JSON_SORT_KEYS | JSON_COMPACT | JSON_ENSURE_ASCII |
                                     JSON_REAL_PRECISION(17));
    json_decref(doc);
    assert_non_null(text);
    assert_int_equal(partd_hash_bytes(text, strlen(text), out), PARTD_OK);
    free(text);
}

static void check_names(int mode, int balance_by, int schedule)
{
    const char *mn = partd_enums_mode_table.names[mode];
    const char *bn = partd_enums_balance_by_table.names[balance_by];
    const char *sn = partd_enums_schedule_table.names[schedule];
    char *json = request_with(mn, bn, sn);

    /* decode: the name gives the table's value */
    partd_request *r = tu_decode_ok(json);
    assert_int_equal(r->options.mode, mode);
    assert_int_equal(r->options.pipeline.balance_by, balance_by);
    assert_int_equal(r->options.pipeline.schedule, schedule);

    /* hash: the cache key is computed over the same names (a training
     * request's key also covers options.training: tests/lib/test_training.c,
     * an aot_based one options.aot) */
    if (mode != PARTD_MODE_TRAINING && mode != PARTD_MODE_AOT_BASED) {
        char key[72];
        expected_cache_key(r, key);
        assert_string_equal(r->cache_key, key);
    }
    partd_request_free(r);

    /* result: reports the mode by the same name */
    int rc;
    partd_problem pb;
    char *text = tu_plan_json(json, &rc, &pb);
    assert_int_equal(rc, PARTD_OK);
    json_t *doc = json_loads(text, 0, NULL);
    assert_non_null(doc);
    assert_string_equal(json_string_value(json_object_get(doc, "mode")), mn);
    json_decref(doc);
    free(text);
    partd_problem_free(&pb);
    free(json);
}

static void test_decode_hash_and_result_share_the_names(void **state)
{
    (void)state;
    for (int m = 0; m < PARTD_MODE_COUNT; m++)
        if (m != PARTD_MODE_KL_BASED) /* refused before planning (test_validate.c) */
            check_names(m, PARTD_BALANCE_TIME, PARTD_SCHEDULE_INFERENCE);
    for (int b = 0; b < PARTD_BALANCE_BY_COUNT; b++)
        check_names(PARTD_MODE_PIPELINE, b, PARTD_SCHEDULE_INFERENCE);
    for (int s = 0; s < PARTD_SCHEDULE_COUNT; s++)
        check_names(PARTD_MODE_PIPELINE, PARTD_BALANCE_TIME, s);
}

/* options.result.detail: every name decodes to its value, the cache key
 * covers it by the same name, and the result leaves the node lists out. */
static void test_result_detail_names(void **state)
{
    (void)state;
    for (int d = 0; d < PARTD_RESULT_DETAIL_COUNT; d++) {
        char *json = request_with("pipeline", "time", "inference");
        char with[2300];
        snprintf(with, sizeof with, "%.*s,\"result\":{\"detail\":\"%s\"}}}",
                 (int)strlen(json) - 2, json, partd_enums_result_detail_table.names[d]);
        partd_request *r = tu_decode_ok(with);
        assert_int_equal(r->options.result_detail, d);
        char key[72];
        expected_cache_key(r, key);
        assert_string_equal(r->cache_key, key);
        partd_request_free(r);
        int rc;
        partd_problem pb;
        char *text = tu_plan_json(with, &rc, &pb);
        assert_int_equal(rc, PARTD_OK);
        assert_int_equal(strstr(text, "\"nodes\":") != NULL, d == PARTD_RESULT_DETAIL_FULL);
        free(text);
        partd_problem_free(&pb);
        free(json);
    }
}

static void test_decode_names_every_op(void **state)
{
    (void)state;
    const char *json =
        "{\"graph\":{\"name\":\"m\",\"nodes\":["
        "{\"name\":\"x\",\"op\":\"placeholder\",\"output_bytes\":8},"
        "{\"name\":\"w\",\"op\":\"get_attr\",\"output_bytes\":8},"
        "{\"name\":\"a\",\"op\":\"call_module\",\"inputs\":[\"x\"],\"output_bytes\":8},"
        "{\"name\":\"b\",\"op\":\"call_function\",\"inputs\":[\"a\",\"w\"],\"output_bytes\":8},"
        "{\"name\":\"c\",\"op\":\"call_method\",\"inputs\":[\"b\"],\"output_bytes\":8},"
        "{\"name\":\"output\",\"op\":\"output\",\"inputs\":[\"c\"]}]},"
        "\"devices\":[{\"name\":\"g0\",\"memory_bytes\":1000}]}";
    partd_request *r = tu_decode_ok(json);
    assert_int_equal(r->graph.n_nodes, PARTD_OP_COUNT);
    int seen[PARTD_OP_COUNT] = {0};
    for (uint32_t v = 0; v < r->graph.n_nodes; v++)
        seen[r->graph.op[v]]++;
    for (int op = 0; op < PARTD_OP_COUNT; op++)
        assert_int_equal(seen[op], 1);
    partd_request_free(r);

    /* An unknown op is rejected at its member. */
    partd_problem pb;
    tu_decode_fail("{\"graph\":{\"name\":\"m\",\"nodes\":["
                   "{\"name\":\"x\",\"op\":\"call_lambda\",\"output_bytes\":8}]},"
                   "\"devices\":[{\"name\":\"g0\",\"memory_bytes\":1000}]}",
                   PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/graph/nodes/0/op", "");
    partd_problem_free(&pb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tables_round_trip),
        cmocka_unit_test(test_out_of_range_and_unknown_names),
        cmocka_unit_test(test_typed_accessors),
        cmocka_unit_test(test_decode_hash_and_result_share_the_names),
        cmocka_unit_test(test_result_detail_names),
        cmocka_unit_test(test_decode_names_every_op),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
