/* test_decode.c - request decoding: one test per validation rule. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "partd/partd.h"

#define DEV "\"devices\":[{\"name\":\"g0\",\"memory_bytes\":1000}]"
#define OPNODE "{\"name\":\"a\",\"op\":\"call_function\"}"

static void expect_error(const char *json, const char *pointer, const char *needle)
{
    partd_problem pb;
    tu_decode_fail(json, PARTD_EINVALID, &pb);
    assert_int_equal(pb.status, 422);
    tu_assert_error(&pb, pointer, needle);
    partd_problem_free(&pb);
}

static void test_minimal_request_decodes_with_defaults(void **state)
{
    (void)state;
    partd_request *r = tu_decode_ok("{\"graph\":{\"nodes\":[" OPNODE "]}," DEV "}");
    assert_int_equal(r->graph.n_nodes, 1);
    assert_int_equal(r->graph.n_ops, 1);
    assert_int_equal(r->graph.output_node, PARTD_NONE);
    assert_int_equal(r->n_devices, 1);
    assert_int_equal(r->devices[0].logical_id, 0);
    assert_true(r->devices[0].speed == 1.0);
    assert_int_equal(r->options.mode, PARTD_MODE_PIPELINE);
    assert_int_equal(r->options.pipeline.stages, 1);
    assert_int_equal(r->options.pipeline.microbatches, 1);
    assert_true(r->options.transfer_bytes_per_sec == 1e10);
    assert_int_equal(r->options.sac.enabled, 0);
    assert_int_equal(strncmp(r->graph_hash, "sha256:", 7), 0);
    assert_int_equal(strlen(r->graph_hash), 71);
    partd_request_free(r);
}

static void test_full_node_members_decode(void **state)
{
    (void)state;
    partd_request *r = tu_decode_ok(
        "{\"graph\":{\"name\":\"m\",\"meta\":{\"any\":[1,{\"x\":null}]},\"nodes\":["
        "{\"name\":\"x\",\"op\":\"placeholder\",\"output_bytes\":64},"
        "{\"name\":\"w\",\"op\":\"get_attr\",\"target\":\"lin.weight\","
        " \"params\":[{\"name\":\"lin.weight\",\"bytes\":256}]},"
        "{\"name\":\"a\",\"op\":\"call_module\",\"target\":\"lin\",\"module\":\"lin\","
        " \"inputs\":[\"x\",\"w\",\"x\"],\"output_bytes\":32,"
        " \"params\":[{\"name\":\"lin.weight\",\"bytes\":256},{\"name\":\"lin.bias\",\"bytes\":8}],"
        " \"latency_ms\":1.5,\"mem_latency_ms\":2,\"meta\":{\"k\":1}},"
        "{\"name\":\"o\",\"op\":\"output\",\"inputs\":[\"a\"]}]}," DEV "}");
    const partd_graph *g = &r->graph;
    assert_int_equal(g->n_nodes, 4);
    assert_int_equal(g->output_node, 3);
    /* inputs deduplicated as FX does: x, w */
    assert_int_equal(g->in_off[3] - g->in_off[2], 2);
    assert_int_equal(g->in_idx[g->in_off[2]], 0);
    assert_int_equal(g->in_idx[g->in_off[2] + 1], 1);
    /* shared parameter stored once */
    assert_int_equal(g->n_params, 2);
    assert_int_equal(g->param_bytes[2], 264);
    assert_int_equal(g->param_bytes[1], 256);
    assert_true(partd_node_time_ms(g, 2) == 2.0);
    /* users in ascending order */
    assert_int_equal(g->user_off[1] - g->user_off[0], 1);
    assert_int_equal(g->user_idx[g->user_off[0]], 2);
    assert_string_equal(partd_str(&r->strings, g->module[2]), "lin");
    partd_request_free(r);
}

static void test_malformed_json_is_400(void **state)
{
    (void)state;
    partd_problem pb;
    tu_decode_fail("{\"graph\": [", PARTD_EMALFORMED, &pb);
    assert_int_equal(pb.status, 400);
    assert_non_null(strstr(pb.detail, "line 1"));
    partd_problem_free(&pb);
}

static void test_duplicate_keys_are_rejected(void **state)
{
    (void)state;
    partd_problem pb;
    tu_decode_fail("{\"graph\":{},\"graph\":{}}", PARTD_EMALFORMED, &pb);
    assert_non_null(strstr(pb.detail, "duplicate"));
    partd_problem_free(&pb);
}

static void test_huge_number_is_rejected(void **state)
{
    (void)state;
    partd_problem pb;
    tu_decode_fail("{\"graph\":{\"nodes\":[{\"name\":\"a\",\"op\":\"call_function\","
                   "\"latency_ms\":1e400}]}," DEV "}",
                   PARTD_EMALFORMED, &pb);
    assert_int_equal(pb.status, 400);
    partd_problem_free(&pb);
}

static void test_root_must_be_object(void **state)
{
    (void)state;
    expect_error("[1,2]", "", "must be a JSON object");
}

static void test_graph_is_required(void **state)
{
    (void)state;
    expect_error("{" DEV "}", "/graph", "is required");
    /* a result given where a request belongs says so */
    expect_error("{\"mode\":\"pipeline\",\"partitions\":[],\"summary\":{}}", "/graph",
                 "is required: this is a result document (it has /partitions), which `partd "
                 "show` draws");
}

static void test_nodes_must_be_array(void **state)
{
    (void)state;
    expect_error("{\"graph\":{\"nodes\":{}}," DEV "}", "/graph/nodes", "must be an array");
}

static void test_node_must_be_object(void **state)
{
    (void)state;
    expect_error("{\"graph\":{\"nodes\":[" OPNODE ",7]}," DEV "}", "/graph/nodes/1",
                 "must be an object");
}

static void test_wrong_type_is_named(void **state)
{
    (void)state;
    expect_error("{\"graph\":{\"nodes\":[{\"name\":\"a\",\"op\":\"call_function\","
                 "\"output_bytes\":\"12\"}]}," DEV "}",
                 "/graph/nodes/0/output_bytes", "must be an integer number of bytes, not a string");
}

static void test_negative_bytes(void **state)
{
    (void)state;
    expect_error("{\"graph\":{\"nodes\":[{\"name\":\"a\",\"op\":\"call_function\","
                 "\"param_bytes\":-1}]}," DEV "}",
                 "/graph/nodes/0/param_bytes", "must be between 0 and 2^53");
}

static void test_non_integer_bytes(void **state)
{
    (void)state;
    expect_error("{\"graph\":{\"nodes\":[{\"name\":\"a\",\"op\":\"call_function\","
                 "\"output_bytes\":1.5}]}," DEV "}",
                 "/graph/nodes/0/output_bytes", "must be an integer number of bytes, not 1.5");
}

static void test_bytes_above_2_53(void **state)
{
    (void)state;
    expect_error("{\"graph\":{\"nodes\":[{\"name\":\"a\",\"op\":\"call_function\","
                 "\"output_bytes\":9007199254740993}]}," DEV "}",
                 "/graph/nodes/0/output_bytes", "must be between 0 and 2^53");
}

static void test_negative_latency(void **state)
{
    (void)state;
    expect_error("{\"graph\":{\"nodes\":[{\"name\":\"a\",\"op\":\"call_function\","
                 "\"latency_ms\":-0.5}]}," DEV "}",
                 "/graph/nodes/0/latency_ms", "must be at least 0");
}

static void test_unknown_member_in_node(void **state)
{
    (void)state;
    expect_error("{\"graph\":{\"nodes\":[{\"name\":\"a\",\"op\":\"call_function\","
                 "\"colour\":1}]}," DEV "}",
                 "/graph/nodes/0/colour", "unknown member");
}

static void test_unknown_member_pointer_is_escaped(void **state)
{
    (void)state;
    expect_error("{\"graph\":{\"nodes\":[" OPNODE "]}," DEV ",\"a/b~c\":1}", "/a~1b~0c",
                 "unknown member");
}

static void test_unknown_member_in_options(void **state)
{
    (void)state;
    expect_error("{\"graph\":{\"nodes\":[" OPNODE "]}," DEV ",\"options\":{\"pipeline\":"
                 "{\"stagez\":2}}}",
                 "/options/pipeline/stagez", "unknown member");
}

/* graph.name is kept (for jobs and pictures), cut at a character's start. */
static void test_graph_name_is_kept(void **state)
{
    (void)state;
    partd_request *r = tu_decode_ok("{\"graph\":{\"nodes\":[" OPNODE "]}," DEV "}");
    assert_null(r->graph_name);
    partd_request_free(r);
    r = tu_decode_ok("{\"graph\":{\"name\":\"GPT2 \\u00e9\",\"nodes\":[" OPNODE "]}," DEV "}");
    assert_string_equal(r->graph_name, "GPT2 \xc3\xa9");
    partd_request_free(r);
    /* 255 ASCII bytes and a two-byte character: the character is dropped */
    char json[1024];
    char name[300];
    memset(name, 'a', 255);
    strcpy(name + 255, "\xc3\xa9tail");
    snprintf(json, sizeof json, "{\"graph\":{\"name\":\"%s\",\"nodes\":[" OPNODE "]}," DEV "}",
             name);
    r = tu_decode_ok(json);
    assert_int_equal(strlen(r->graph_name), 255);
    partd_request_free(r);
}

/* graph.batch_size: an integer of at least 1, 0 in the model when absent. */
static void test_batch_size(void **state)
{
    (void)state;
    partd_request *r = tu_decode_ok("{\"graph\":{\"nodes\":[" OPNODE "]}," DEV "}");
    assert_int_equal(r->graph.batch_size, 0);
    partd_request_free(r);
    r = tu_decode_ok("{\"graph\":{\"batch_size\":32.0,\"nodes\":[" OPNODE "]}," DEV "}");
    assert_int_equal(r->graph.batch_size, 32);
    partd_request_free(r);
    expect_error("{\"graph\":{\"batch_size\":0,\"nodes\":[" OPNODE "]}," DEV "}",
                 "/graph/batch_size", "must be between 1 and 2^53, not 0");
    expect_error("{\"graph\":{\"batch_size\":1.5,\"nodes\":[" OPNODE "]}," DEV "}",
                 "/graph/batch_size", "an integer is needed");
    expect_error("{\"graph\":{\"batch_size\":\"8\",\"nodes\":[" OPNODE "]}," DEV "}",
                 "/graph/batch_size", "must be an integer, not a string");
    expect_error("{\"graph\":{\"batchsize\":8,\"nodes\":[" OPNODE "]}," DEV "}",
                 "/graph/batchsize", "did you mean \"batch_size\"?");
}

/* The message of the error at pointer (which must exist). */
static const char *message_at(const partd_problem *pb, const char *pointer)
{
    for (uint32_t i = 0; i < pb->n_errors; i++)
        if (strcmp(pb->errors[i].pointer, pointer) == 0)
            return pb->errors[i].message;
    fail_msg("no error at %s", pointer);
    return NULL;
}

/* A misspelt member is answered with the nearest known name, at every
 * level; a name near none gets no guess. */
static void test_unknown_members_name_the_nearest(void **state)
{
    (void)state;
    partd_problem pb;
    tu_decode_fail("{\"grpah\":1,\"graph\":{\"node\":[],\"nodes\":[{\"name\":\"a\",\"op\":"
                   "\"call_module\",\"latency\":1,\"id\":2,\"Module\":\"m\",\"params\":["
                   "{\"name\":\"w\",\"bytes\":4,\"byte\":4,\"size\":4}]}]},"
                   "\"devices\":[{\"name\":\"g0\",\"memory\":1000,\"memory_bytes\":1000}],"
                   "\"options\":{\"Mode\":\"pipeline\",\"pipeline\":{\"microbatch\":2,"
                   "\"shedule\":\"gpipe\",\"stagez\":1,\"balance\":\"time\"}}}",
                   PARTD_EINVALID, &pb);
    static const char *const hints[][2] = {
        {"/grpah", "graph"},
        {"/graph/node", "nodes"},
        {"/graph/nodes/0/latency", "latency_ms"},
        {"/graph/nodes/0/Module", "module"},
        {"/graph/nodes/0/params/0/byte", "bytes"},
        {"/devices/0/memory", "memory_bytes"},
        {"/options/Mode", "mode"},
        {"/options/pipeline/microbatch", "microbatches"},
        {"/options/pipeline/shedule", "schedule"},
        {"/options/pipeline/stagez", "stages"},
        {"/options/pipeline/balance", "balance_by"},
    };
    for (size_t i = 0; i < sizeof hints / sizeof hints[0]; i++) {
        char want[96];
        snprintf(want, sizeof want, "unknown member; did you mean \"%s\"?", hints[i][1]);
        assert_string_equal(message_at(&pb, hints[i][0]), want);
    }
    assert_string_equal(message_at(&pb, "/graph/nodes/0/id"), "unknown member");
    assert_string_equal(message_at(&pb, "/graph/nodes/0/params/0/size"), "unknown member");
    partd_problem_free(&pb);
}

static void test_result_detail(void **state)
{
    (void)state;
    partd_request *r = tu_decode_ok("{\"graph\":{\"nodes\":[" OPNODE "]}," DEV "}");
    assert_int_equal(r->options.result_detail, PARTD_RESULT_DETAIL_FULL);
    partd_request_free(r);
    r = tu_decode_ok("{\"graph\":{\"nodes\":[" OPNODE "]}," DEV
                     ",\"options\":{\"result\":{\"detail\":\"summary\"}}}");
    assert_int_equal(r->options.result_detail, PARTD_RESULT_DETAIL_SUMMARY);
    partd_request_free(r);
    r = tu_decode_ok("{\"graph\":{\"nodes\":[" OPNODE "]}," DEV
                     ",\"options\":{\"result\":{}}}");
    assert_int_equal(r->options.result_detail, PARTD_RESULT_DETAIL_FULL);
    partd_request_free(r);
    expect_error("{\"graph\":{\"nodes\":[" OPNODE "]}," DEV ",\"options\":{\"result\":"
                 "{\"detail\":\"summary\",\"nodes\":false}}}",
                 "/options/result/nodes", "unknown member");
    expect_error("{\"graph\":{\"nodes\":[" OPNODE "]}," DEV ",\"options\":{\"result\":"
                 "\"summary\"}}",
                 "/options/result", "object");
    expect_error("{\"graph\":{\"nodes\":[" OPNODE "]}," DEV ",\"options\":{\"result\":"
                 "{\"detail\":\"brief\"}}}",
                 "/options/result/detail", "must be one of");
    expect_error("{\"graph\":{\"nodes\":[" OPNODE "]}," DEV ",\"options\":{\"result\":"
                 "{\"detail\":1}}}",
                 "/options/result/detail", "must be");
}

static void test_meta_is_free_form_but_an_object(void **state)
{
    (void)state;
    partd_request *r = tu_decode_ok("{\"meta\":{\"anything\":{\"goes\":[1]}},\"graph\":{\"nodes\":["
                                    "{\"name\":\"a\",\"op\":\"call_function\",\"meta\":{\"z\":1}}]},"
                                    "\"devices\":[{\"name\":\"g0\",\"memory_bytes\":1,"
                                    "\"meta\":{\"rack\":\"r1\"}}]}");
    partd_request_free(r);
    expect_error("{\"graph\":{\"nodes\":[{\"name\":\"a\",\"op\":\"call_function\",\"meta\":3}]}," DEV
                 "}",
                 "/graph/nodes/0/meta", "must be an object");
}

static void test_name_required_and_non_empty(void **state)
{
    (void)state;
    expect_error("{\"graph\":{\"nodes\":[{\"op\":\"call_function\"}]}," DEV "}",
                 "/graph/nodes/0/name", "is required");
    expect_error("{\"graph\":{\"nodes\":[{\"name\":\"\",\"op\":\"call_function\"}]}," DEV "}",
                 "/graph/nodes/0/name", "must not be empty");
}

static void test_name_longer_than_1024_bytes(void **state)
{
    (void)state;
    char *json = malloc(4096);
    char name[1100];
    memset(name, 'n', 1025);
    name[1025] = '\0';
    snprintf(json, 4096, "{\"graph\":{\"nodes\":[{\"name\":\"%s\",\"op\":\"call_function\"}]}," DEV "}",
             name);
    expect_error(json, "/graph/nodes/0/name", "names are at most 1024 bytes");
    free(json);
}

static void test_unknown_op(void **state)
{
    (void)state;
    expect_error("{\"graph\":{\"nodes\":[{\"name\":\"a\",\"op\":\"call_kernel\"}]}," DEV "}",
                 "/graph/nodes/0/op", "must be one of placeholder, get_attr");
}

static void test_duplicate_node_names(void **state)
{
    (void)state;
    expect_error("{\"graph\":{\"nodes\":[" OPNODE "," OPNODE "]}," DEV "}", "/graph/nodes/1/name",
                 "duplicate node name \"a\" (first at /graph/nodes/0)");
}

static void test_input_naming_no_node(void **state)
{
    (void)state;
    expect_error("{\"graph\":{\"nodes\":[{\"name\":\"a\",\"op\":\"call_function\","
                 "\"inputs\":[\"ghost\"]}]}," DEV "}",
                 "/graph/nodes/0/inputs/0", "names no node: \"ghost\"");
}

static void test_more_than_one_output(void **state)
{
    (void)state;
    expect_error("{\"graph\":{\"nodes\":[" OPNODE ",{\"name\":\"o1\",\"op\":\"output\"},"
                 "{\"name\":\"o2\",\"op\":\"output\"}]}," DEV "}",
                 "/graph/nodes/2/op", "more than one output node (first at /graph/nodes/1)");
}

static void test_reading_the_output_node(void **state)
{
    (void)state;
    expect_error("{\"graph\":{\"nodes\":[{\"name\":\"o\",\"op\":\"output\"},"
                 "{\"name\":\"a\",\"op\":\"call_function\",\"inputs\":[\"o\"]}]}," DEV "}",
                 "/graph/nodes/1/inputs/0", "reads the output node");
}

static void test_placeholder_reads_nothing(void **state)
{
    (void)state;
    expect_error("{\"graph\":{\"nodes\":[" OPNODE ",{\"name\":\"x\",\"op\":\"placeholder\","
                 "\"inputs\":[\"a\"]}]}," DEV "}",
                 "/graph/nodes/1/inputs", "a placeholder node reads no other node");
}

static void test_cycle_names_its_nodes(void **state)
{
    (void)state;
    partd_problem pb;
    tu_decode_fail("{\"graph\":{\"nodes\":["
                   "{\"name\":\"x\",\"op\":\"placeholder\"},"
                   "{\"name\":\"a\",\"op\":\"call_function\",\"inputs\":[\"x\",\"c\"]},"
                   "{\"name\":\"b\",\"op\":\"call_function\",\"inputs\":[\"a\"]},"
                   "{\"name\":\"c\",\"op\":\"call_function\",\"inputs\":[\"b\"]}]}," DEV "}",
                   PARTD_EINVALID, &pb);
    assert_int_equal(pb.n_errors, 1);
    const char *m = pb.errors[0].message;
    assert_non_null(strstr(m, "cycle:"));
    assert_non_null(strstr(m, "\"a\""));
    assert_non_null(strstr(m, "\"b\""));
    assert_non_null(strstr(m, "\"c\""));
    assert_null(strstr(m, "\"x\""));
    /* each step is an edge: a -> b -> c -> a */
    assert_non_null(strstr(m, "\"a\" -> \"b\" -> \"c\" -> \"a\""));
    partd_problem_free(&pb);
}

static void test_self_loop_is_a_cycle(void **state)
{
    (void)state;
    expect_error("{\"graph\":{\"nodes\":[{\"name\":\"a\",\"op\":\"call_function\","
                 "\"inputs\":[\"a\"]}]}," DEV "}",
                 "/graph/nodes/0/inputs", "cycle: \"a\" -> \"a\"");
}

static void test_no_operation_node(void **state)
{
    (void)state;
    expect_error("{\"graph\":{\"nodes\":[{\"name\":\"x\",\"op\":\"placeholder\"}]}," DEV "}",
                 "/graph/nodes", "no operation node");
}

static void test_empty_graph(void **state)
{
    (void)state;
    expect_error("{\"graph\":{\"nodes\":[]}," DEV "}", "/graph/nodes",
                 "at least one node");
}

static void test_no_devices(void **state)
{
    (void)state;
    expect_error("{\"graph\":{\"nodes\":[" OPNODE "]},\"devices\":[]}", "/devices",
                 "at least one device");
    expect_error("{\"graph\":{\"nodes\":[" OPNODE "]}}", "/devices", "is required");
}

static void test_device_memory_must_be_positive(void **state)
{
    (void)state;
    expect_error("{\"graph\":{\"nodes\":[" OPNODE "]},\"devices\":[{\"name\":\"g\","
                 "\"memory_bytes\":0}]}",
                 "/devices/0/memory_bytes", "must be between 1 and 2^53");
}

static void test_device_speed_must_be_positive(void **state)
{
    (void)state;
    expect_error("{\"graph\":{\"nodes\":[" OPNODE "]},\"devices\":[{\"name\":\"g\","
                 "\"memory_bytes\":5,\"speed\":0}]}",
                 "/devices/0/speed", "must be at least 1e-09 and at most 1e+09");
}

/* A speed so small that a time divided by it overflows is refused up front,
 * with the allowed range. */
static void test_tiny_speed_is_rejected_with_its_range(void **state)
{
    (void)state;
    expect_error("{\"graph\":{\"nodes\":[" OPNODE "]},\"devices\":[{\"name\":\"g\","
                 "\"memory_bytes\":5,\"speed\":1e-308}]}",
                 "/devices/0/speed", "must be at least 1e-09 and at most 1e+09, not 1e-308");
    expect_error("{\"graph\":{\"nodes\":[" OPNODE "]}," DEV
                 ",\"options\":{\"transfer_bytes_per_sec\":1e-300}}",
                 "/options/transfer_bytes_per_sec", "must be at least 1 and at most 1e+18");
    expect_error("{\"graph\":{\"nodes\":[{\"name\":\"a\",\"op\":\"call_function\","
                 "\"latency_ms\":1e300}]}," DEV "}",
                 "/graph/nodes/0/latency_ms", "at most 1e+12");
}

static void test_integral_numbers_with_a_fraction_part_are_integers(void **state)
{
    (void)state;
    partd_request *r = tu_decode_ok(
        "{\"graph\":{\"nodes\":[{\"name\":\"a\",\"op\":\"call_function\","
        "\"output_bytes\":4096.0,\"params\":[{\"name\":\"w\",\"bytes\":2.5e1}]},"
        "{\"name\":\"b\",\"op\":\"call_function\",\"inputs\":[\"a\"]}]},"
        "\"devices\":[{\"name\":\"g\",\"memory_bytes\":1e3,\"logical_id\":7.0},"
        "{\"name\":\"h\",\"memory_bytes\":1000}],"
        "\"options\":{\"pipeline\":{\"stages\":2.0,\"microbatches\":3.0}}}");
    assert_int_equal(r->graph.output_bytes[0], 4096);
    assert_int_equal(r->graph.param_bytes[0], 25);
    assert_int_equal(r->devices[0].memory_bytes, 1000);
    assert_int_equal(r->devices[0].logical_id, 7);
    assert_int_equal(r->options.pipeline.stages, 2);
    assert_int_equal(r->options.pipeline.microbatches, 3);
    partd_request_free(r);
}

static void test_a_fraction_needs_an_integer(void **state)
{
    (void)state;
    expect_error("{\"graph\":{\"nodes\":[{\"name\":\"a\",\"op\":\"call_function\","
                 "\"output_bytes\":4096.5}]}," DEV "}",
                 "/graph/nodes/0/output_bytes", "not 4096.5; an integer is needed");
    expect_error("{\"graph\":{\"nodes\":[" OPNODE "]}," DEV
                 ",\"options\":{\"pipeline\":{\"microbatches\":2.5}}}",
                 "/options/pipeline/microbatches", "an integer is needed");
    /* an integer too large to hold is out of range, not "not an integer" */
    expect_error("{\"graph\":{\"nodes\":[{\"name\":\"a\",\"op\":\"call_function\","
                 "\"output_bytes\":1e300}]}," DEV "}",
                 "/graph/nodes/0/output_bytes", "must be between 0 and 2^53, not 1e+300");
    expect_error("{\"graph\":{\"nodes\":[" OPNODE "]}," DEV
                 ",\"options\":{\"pipeline\":{\"microbatches\":1e20}}}",
                 "/options/pipeline/microbatches", "must be between 1 and 1024, not 1e+20");
}

/* Sums near 2^53: exactly 2^53 is fine, one byte more names the member
 * where the total passed it. */
static void test_byte_sums_are_bounded_by_2_53(void **state)
{
    (void)state;
    partd_request *r = tu_decode_ok(
        "{\"graph\":{\"nodes\":[{\"name\":\"a\",\"op\":\"call_function\","
        "\"output_bytes\":4503599627370496,\"params\":[{\"name\":\"w\",\"bytes\":"
        "2251799813685248},{\"name\":\"v\",\"bytes\":2251799813685248}]}]},"
        "\"devices\":[{\"name\":\"g\",\"memory_bytes\":4503599627370496},"
        "{\"name\":\"h\",\"memory_bytes\":4503599627370496}]}");
    assert_int_equal(r->graph.param_bytes[0], INT64_C(1) << 52);
    partd_request_free(r);
    /* one node's parameters */
    expect_error("{\"graph\":{\"nodes\":[{\"name\":\"a\",\"op\":\"call_function\","
                 "\"params\":[{\"name\":\"w\",\"bytes\":9007199254740992},"
                 "{\"name\":\"v\",\"bytes\":9007199254740992},"
                 "{\"name\":\"u\",\"bytes\":9007199254740992}]}]}," DEV "}",
                 "/graph/nodes/0/params/1/bytes", "add up to more than 2^53");
    /* the graph */
    expect_error("{\"graph\":{\"nodes\":[{\"name\":\"a\",\"op\":\"call_function\","
                 "\"output_bytes\":9007199254740992},{\"name\":\"b\",\"op\":\"call_function\","
                 "\"param_bytes\":1}]}," DEV "}",
                 "/graph/nodes/1/param_bytes", "add up to more than 2^53");
    /* the devices */
    expect_error("{\"graph\":{\"nodes\":[" OPNODE "]},\"devices\":["
                 "{\"name\":\"g\",\"memory_bytes\":9007199254740992},"
                 "{\"name\":\"h\",\"memory_bytes\":1}]}",
                 "/devices/1/memory_bytes", "add up to more than 2^53");
}

/* Repeats among a node's inputs and params are found in linear time: a node
 * with 160,000 inputs and one with 160,000 params decode (the time is
 * measured by bench/, not asserted here). */
static void test_node_with_160000_inputs_and_params(void **state)
{
    (void)state;
    enum { N = 160000 };
    size_t cap = (size_t)N * 128 + 4096, n = 0;
    char *json = malloc(cap);
    assert_non_null(json);
    n += (size_t)snprintf(json + n, cap - n, "{\"graph\":{\"nodes\":[");
    for (int i = 0; i < N; i++)
        n += (size_t)snprintf(json + n, cap - n, "{\"name\":\"p%d\",\"op\":\"placeholder\"},", i);
    n += (size_t)snprintf(json + n, cap - n, "{\"name\":\"a\",\"op\":\"call_function\",\"inputs\":[");
    for (int i = 0; i < N; i++)
        n += (size_t)snprintf(json + n, cap - n, "\"p%d\",", i);
    /* repeats of the first and last input are dropped, as FX does */
    n += (size_t)snprintf(json + n, cap - n, "\"p0\",\"p%d\"]},", N - 1);
    n += (size_t)snprintf(json + n, cap - n, "{\"name\":\"b\",\"op\":\"call_function\",\"params\":[");
    for (int i = 0; i < N; i++)
        n += (size_t)snprintf(json + n, cap - n, "%s{\"name\":\"w%d\",\"bytes\":%d}", i ? "," : "", i, i % 7);
    snprintf(json + n, cap - n, "]}]}," DEV "}");
    partd_request *r = tu_decode_ok(json);
    const partd_graph *g = &r->graph;
    assert_int_equal(g->n_nodes, N + 2);
    assert_int_equal(g->in_off[N + 1] - g->in_off[N], N);
    for (uint32_t k = 0; k < N; k++)
        assert_int_equal(g->in_idx[g->in_off[N] + k], k);
    assert_int_equal(g->par_off[N + 2] - g->par_off[N + 1], N);
    int64_t want = 0;
    for (int i = 0; i < N; i++)
        want += i % 7;
    assert_int_equal(g->param_bytes[N + 1], want);
    partd_request_free(r);
    /* a repeated parameter is still named, at its second use */
    free(json);
    expect_error("{\"graph\":{\"nodes\":[{\"name\":\"a\",\"op\":\"call_module\","
                 "\"params\":[{\"name\":\"w\",\"bytes\":4},{\"name\":\"v\",\"bytes\":4},"
                 "{\"name\":\"w\",\"bytes\":4}]},{\"name\":\"b\",\"op\":\"call_module\","
                 "\"params\":[{\"name\":\"w\",\"bytes\":4}]}]}," DEV "}",
                 "/graph/nodes/0/params/2/name", "names parameter \"w\" twice");
}

static void test_duplicate_device_names(void **state)
{
    (void)state;
    expect_error("{\"graph\":{\"nodes\":[" OPNODE "]},\"devices\":[{\"name\":\"g\","
                 "\"memory_bytes\":5},{\"name\":\"g\",\"memory_bytes\":5}]}",
                 "/devices/1/name", "duplicate device name \"g\"");
}

static void test_duplicate_logical_ids(void **state)
{
    (void)state;
    expect_error("{\"graph\":{\"nodes\":[" OPNODE "]},\"devices\":[{\"name\":\"g\","
                 "\"memory_bytes\":5,\"logical_id\":1},{\"name\":\"h\",\"memory_bytes\":5}]}",
                 "/devices/1/logical_id", "duplicate logical id 1");
}

static void test_repeats_name_their_first_use(void **state)
{
    (void)state;
    partd_problem pb;
    tu_decode_fail("{\"graph\":{\"nodes\":[" OPNODE "]},\"devices\":["
                   "{\"name\":\"g\",\"memory_bytes\":5,\"logical_id\":3},"
                   "{\"name\":\"h\",\"memory_bytes\":5,\"logical_id\":1},"
                   "{\"name\":\"g\",\"memory_bytes\":5,\"logical_id\":2},"
                   "{\"name\":\"k\",\"memory_bytes\":5,\"logical_id\":1},"
                   "{\"name\":\"g\",\"memory_bytes\":5,\"logical_id\":4}],"
                   "\"options\":{\"pipeline\":{\"cut_after\":[\"x\",\"y\",\"x\",\"x\"]}}}",
                   PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/devices/2/name", "first at /devices/0");
    tu_assert_error(&pb, "/devices/4/name", "first at /devices/0");
    tu_assert_error(&pb, "/devices/3/logical_id", "duplicate logical id 1 (also /devices/1)");
    tu_assert_error(&pb, "/options/pipeline/cut_after/2", "repeats entry 0");
    tu_assert_error(&pb, "/options/pipeline/cut_after/3", "repeats entry 0");
    assert_int_equal(pb.n_errors, 5);
    partd_problem_free(&pb);
}

static void test_params_and_param_bytes_exclusive(void **state)
{
    (void)state;
    expect_error("{\"graph\":{\"nodes\":[{\"name\":\"a\",\"op\":\"call_module\",\"param_bytes\":4,"
                 "\"params\":[{\"name\":\"w\",\"bytes\":4}]}]}," DEV "}",
                 "/graph/nodes/0/params", "either param_bytes or params");
}

static void test_shared_param_sizes_must_agree(void **state)
{
    (void)state;
    expect_error("{\"graph\":{\"nodes\":[{\"name\":\"a\",\"op\":\"call_module\","
                 "\"params\":[{\"name\":\"w\",\"bytes\":4}]},"
                 "{\"name\":\"b\",\"op\":\"call_module\",\"params\":[{\"name\":\"w\",\"bytes\":8}]}]}," DEV
                 "}",
                 "/graph/nodes/1/params/0/bytes", "has 8 bytes here but 4 at /graph/nodes/0");
}

static void test_bad_options(void **state)
{
    (void)state;
    const char *base = "{\"graph\":{\"nodes\":[" OPNODE "]}," DEV ",\"options\":";
    char json[512];
    snprintf(json, sizeof json, "%s{\"mode\":\"fastest\"}}", base);
    expect_error(json, "/options/mode", "must be one of pipeline, size_based");
    snprintf(json, sizeof json, "%s{\"pipeline\":{\"stages\":2}}}", base);
    expect_error(json, "/options/pipeline/stages", "must be between 1 and 1");
    snprintf(json, sizeof json, "%s{\"pipeline\":{\"microbatches\":0}}}", base);
    expect_error(json, "/options/pipeline/microbatches", "must be between 1 and 1024");
    snprintf(json, sizeof json, "%s{\"transfer_bytes_per_sec\":0}}", base);
    expect_error(json, "/options/transfer_bytes_per_sec", "at least 1 and at most 1e+18");
    snprintf(json, sizeof json, "%s{\"sac\":{\"relative_gap\":2}}}", base);
    expect_error(json, "/options/sac/relative_gap", "at most 1");
    snprintf(json, sizeof json, "%s{\"sac\":{\"frontier_points\":1}}}", base);
    expect_error(json, "/options/sac/frontier_points", "between 2 and 100");
    snprintf(json, sizeof json, "%s{\"pipeline\":{\"cut_after\":[\"a\",\"a\"]}}}", base);
    expect_error(json, "/options/pipeline/cut_after/1", "repeats entry 0");
}

/* Each mode reads only its own options block (contract v3): a block for
 * another mode is refused naming the block and the modes that read it. */
static void test_options_of_another_mode_are_refused(void **state)
{
    (void)state;
    const char *base = "{\"graph\":{\"nodes\":[" OPNODE "]}," DEV ",\"options\":";
    char json[512];
    snprintf(json, sizeof json, "%s{\"mode\":\"training\",\"pipeline\":{\"microbatches\":16}}}",
             base);
    expect_error(json, "/options/pipeline",
                 "is read by mode pipeline only, not by mode training: training takes its "
                 "microbatches");
    snprintf(json, sizeof json, "%s{\"mode\":\"size_based\",\"pipeline\":{}}}", base);
    expect_error(json, "/options/pipeline",
                 "is read by mode pipeline only, not by mode size_based: remove it, or set "
                 "options.mode to the mode it is for");
    snprintf(json, sizeof json, "%s{\"training\":{\"microbatches\":2}}}", base);
    expect_error(json, "/options/training",
                 "is read by mode training only, not by mode pipeline (the default)");
    snprintf(json, sizeof json, "%s{\"mode\":\"training\",\"sac\":{}}}", base);
    expect_error(json, "/options/sac",
                 "is read by modes size_based and pipeline only, not by mode training: training "
                 "chooses what each stage checkpoints itself");
    /* a block's own errors are not reported when the block is refused whole */
    partd_problem pb;
    snprintf(json, sizeof json, "%s{\"mode\":\"training\",\"pipeline\":{\"stagez\":1}}}", base);
    tu_decode_fail(json, PARTD_EINVALID, &pb);
    assert_int_equal(pb.n_errors, 1);
    partd_problem_free(&pb);
    /* each mode with its own blocks decodes */
    snprintf(json, sizeof json, "%s{\"mode\":\"pipeline\",\"pipeline\":{},\"result\":{},"
             "\"transfer_bytes_per_sec\":1e9}}", base);
    partd_request_free(tu_decode_ok(json));
    snprintf(json, sizeof json, "%s{\"mode\":\"training\",\"training\":{},\"result\":{}}}", base);
    partd_request_free(tu_decode_ok(json));
}

/* options.sac needs graph.modules, and its units must name modules: the
 * request alone decides, so decoding refuses it (the budget's default is
 * tested with modules in test_sac). */
static void test_sac_options_are_checked_against_modules(void **state)
{
    (void)state;
    expect_error("{\"graph\":{\"nodes\":[" OPNODE "]}," DEV ",\"options\":{\"sac\":{}}}",
                 "/graph/modules", "options.sac needs graph.modules");
}

static void test_non_topological_order_is_repaired_stably(void **state)
{
    (void)state;
    /* request order: c(b) a d b(a) -> planning order a d b c: ready nodes are
     * taken in request order */
    partd_request *r = tu_decode_ok("{\"graph\":{\"nodes\":["
                                    "{\"name\":\"c\",\"op\":\"call_function\",\"inputs\":[\"b\"]},"
                                    "{\"name\":\"a\",\"op\":\"call_function\"},"
                                    "{\"name\":\"d\",\"op\":\"call_function\"},"
                                    "{\"name\":\"b\",\"op\":\"call_function\",\"inputs\":[\"a\"]}]}," DEV
                                    "}");
    assert_int_equal(r->graph.order_was_topological, 0);
    const char *expect[] = {"a", "d", "b", "c"};
    const uint32_t request_index[] = {1, 2, 3, 0};
    for (uint32_t i = 0; i < 4; i++) {
        assert_string_equal(partd_node_name(r, i), expect[i]);
        assert_int_equal(r->graph.request_index[i], request_index[i]);
    }
    /* c reads b, now at position 2 */
    assert_int_equal(r->graph.in_idx[r->graph.in_off[3]], 2);
    partd_request_free(r);
}

static void test_topological_order_is_kept(void **state)
{
    (void)state;
    partd_request *r = tu_decode_ok("{\"graph\":{\"nodes\":["
                                    "{\"name\":\"b\",\"op\":\"call_function\"},"
                                    "{\"name\":\"a\",\"op\":\"call_function\",\"inputs\":[\"b\"]}]}," DEV
                                    "}");
    assert_int_equal(r->graph.order_was_topological, 1);
    assert_string_equal(partd_node_name(r, 0), "b");
    partd_request_free(r);
}

static void test_errors_are_capped_at_100(void **state)
{
    (void)state;
    size_t cap = 200 * 64 + 256;
    char *json = malloc(cap);
    size_t n = (size_t)snprintf(json, cap, "{\"graph\":{\"nodes\":[" OPNODE);
    for (int i = 0; i < 150; i++)
        n += (size_t)snprintf(json + n, cap - n, ",{\"name\":\"n%d\",\"op\":\"bad\"}", i);
    snprintf(json + n, cap - n, "]}," DEV "}");
    partd_problem pb;
    tu_decode_fail(json, PARTD_EINVALID, &pb);
    assert_int_equal(pb.n_errors, PARTD_PROBLEM_MAX_ERRORS);
    assert_int_equal(pb.dropped, 50);
    assert_non_null(strstr(pb.detail, "150 errors"));
    char *doc = partd_problem_to_json(&pb, NULL);
    assert_non_null(strstr(doc, "\"errors_dropped\":50"));
    free(doc);
    partd_problem_free(&pb);
    free(json);
}

static void test_all_errors_reported_at_once(void **state)
{
    (void)state;
    partd_problem pb;
    tu_decode_fail("{\"graph\":{\"nodes\":[{\"name\":\"a\",\"op\":\"call_function\","
                   "\"output_bytes\":-5,\"inputs\":[\"zz\"]}]},\"devices\":[],\"extra\":1}",
                   PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/graph/nodes/0/output_bytes", "between 0");
    tu_assert_error(&pb, "/graph/nodes/0/inputs/0", "names no node");
    tu_assert_error(&pb, "/devices", "at least one device");
    tu_assert_error(&pb, "/extra", "unknown member");
    partd_problem_free(&pb);
}

static void test_model_byte_limit(void **state)
{
    (void)state;
    const char *json = "{\"graph\":{\"nodes\":[" OPNODE "]}," DEV "}";
    partd_decode_limits lim = {.max_model_bytes = 10};
    partd_problem pb;
    partd_problem_init(&pb);
    partd_request *r = NULL;
    assert_int_equal(partd_request_decode(json, strlen(json), &lim, &r, &pb), PARTD_ETOOBIG);
    assert_null(r);
    assert_int_equal(pb.status, 422);
    assert_non_null(strstr(pb.detail, "--max-model-bytes"));
    partd_problem_free(&pb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_minimal_request_decodes_with_defaults),
        cmocka_unit_test(test_full_node_members_decode),
        cmocka_unit_test(test_malformed_json_is_400),
        cmocka_unit_test(test_duplicate_keys_are_rejected),
        cmocka_unit_test(test_huge_number_is_rejected),
        cmocka_unit_test(test_root_must_be_object),
        cmocka_unit_test(test_graph_is_required),
        cmocka_unit_test(test_nodes_must_be_array),
        cmocka_unit_test(test_node_must_be_object),
        cmocka_unit_test(test_wrong_type_is_named),
        cmocka_unit_test(test_negative_bytes),
        cmocka_unit_test(test_non_integer_bytes),
        cmocka_unit_test(test_bytes_above_2_53),
        cmocka_unit_test(test_negative_latency),
        cmocka_unit_test(test_unknown_member_in_node),
        cmocka_unit_test(test_unknown_member_pointer_is_escaped),
        cmocka_unit_test(test_unknown_member_in_options),
        cmocka_unit_test(test_unknown_members_name_the_nearest),
        cmocka_unit_test(test_batch_size),
        cmocka_unit_test(test_graph_name_is_kept),
        cmocka_unit_test(test_options_of_another_mode_are_refused),
        cmocka_unit_test(test_result_detail),
        cmocka_unit_test(test_meta_is_free_form_but_an_object),
        cmocka_unit_test(test_name_required_and_non_empty),
        cmocka_unit_test(test_name_longer_than_1024_bytes),
        cmocka_unit_test(test_unknown_op),
        cmocka_unit_test(test_duplicate_node_names),
        cmocka_unit_test(test_input_naming_no_node),
        cmocka_unit_test(test_more_than_one_output),
        cmocka_unit_test(test_reading_the_output_node),
        cmocka_unit_test(test_placeholder_reads_nothing),
        cmocka_unit_test(test_cycle_names_its_nodes),
        cmocka_unit_test(test_self_loop_is_a_cycle),
        cmocka_unit_test(test_no_operation_node),
        cmocka_unit_test(test_empty_graph),
        cmocka_unit_test(test_no_devices),
        cmocka_unit_test(test_device_memory_must_be_positive),
        cmocka_unit_test(test_device_speed_must_be_positive),
        cmocka_unit_test(test_tiny_speed_is_rejected_with_its_range),
        cmocka_unit_test(test_integral_numbers_with_a_fraction_part_are_integers),
        cmocka_unit_test(test_a_fraction_needs_an_integer),
        cmocka_unit_test(test_byte_sums_are_bounded_by_2_53),
        cmocka_unit_test(test_node_with_160000_inputs_and_params),
        cmocka_unit_test(test_duplicate_device_names),
        cmocka_unit_test(test_duplicate_logical_ids),
        cmocka_unit_test(test_repeats_name_their_first_use),
        cmocka_unit_test(test_params_and_param_bytes_exclusive),
        cmocka_unit_test(test_shared_param_sizes_must_agree),
        cmocka_unit_test(test_bad_options),
        cmocka_unit_test(test_sac_options_are_checked_against_modules),
        cmocka_unit_test(test_non_topological_order_is_repaired_stably),
        cmocka_unit_test(test_topological_order_is_kept),
        cmocka_unit_test(test_errors_are_capped_at_100),
        cmocka_unit_test(test_all_errors_reported_at_once),
        cmocka_unit_test(test_model_byte_limit),
    };
    return cmocka_run_group_tests_name("decode", tests, NULL, NULL);
}
