/*
 * test_decode_graph.c - lib/decode/decode_graph.c and decode_node.c, the
 * graph part of the streaming decoder: graph members in any order, node
 * members in any order, params (shared, repeated, with param_bytes), the
 * checks of the graph object and its node count against the server's
 * limit, every error named by its JSON Pointer.
 */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "partd/partd.h"
#include "partd/strtab.h"

#define DEV "\"devices\":[{\"name\":\"g0\",\"memory_bytes\":1000}]"

static char *request(const char *graph)
{
    size_t n = strlen(graph) + 256;
    char *s = malloc(n);
    assert_non_null(s);
    snprintf(s, n, "{\"graph\":%s," DEV "}", graph);
    return s;
}

static void fails_at(const char *graph, const char *pointer, const char *needle)
{
    char *body = request(graph);
    partd_problem pb;
    tu_decode_fail(body, PARTD_EINVALID, &pb);
    tu_assert_error(&pb, pointer, needle);
    partd_problem_free(&pb);
    free(body);
}

/* Members of the graph and of a node in any order: the same request. */
static void test_member_order_does_not_matter(void **state)
{
    (void)state;
    char *a = request("{\"name\":\"m\",\"nodes\":[{\"name\":\"x\",\"op\":\"placeholder\","
                      "\"output_bytes\":8},{\"name\":\"y\",\"op\":\"call_module\",\"inputs\":"
                      "[\"x\"],\"latency_ms\":2.5,\"module\":\"l1\",\"params\":[{\"name\":"
                      "\"w\",\"bytes\":40}]}]}");
    char *b = request("{\"nodes\":[{\"output_bytes\":8,\"op\":\"placeholder\",\"name\":\"x\"},"
                      "{\"params\":[{\"bytes\":40,\"name\":\"w\"}],\"module\":\"l1\","
                      "\"latency_ms\":2.5,\"inputs\":[\"x\"],\"op\":\"call_module\",\"name\":"
                      "\"y\"}],\"name\":\"m\"}");
    partd_request *ra = tu_decode_ok(a), *rb = tu_decode_ok(b);
    const partd_graph *ga = &ra->graph, *gb = &rb->graph;
    assert_int_equal(ga->n_nodes, 2);
    assert_int_equal(gb->n_nodes, 2);
    assert_int_equal(ga->n_ops, 1);
    for (uint32_t i = 0; i < 2; i++) {
        assert_string_equal(partd_str(&ra->strings, ga->name[i]),
                            partd_str(&rb->strings, gb->name[i]));
        assert_int_equal(ga->op[i], gb->op[i]);
        assert_int_equal(ga->output_bytes[i], gb->output_bytes[i]);
        assert_int_equal(ga->param_bytes[i], gb->param_bytes[i]);
    }
    assert_int_equal(ga->param_bytes[1], 40);
    assert_true(ga->latency_ms[1] == 2.5);
    partd_request_free(ra);
    partd_request_free(rb);
    free(a);
    free(b);
}

/* A parameter named by two nodes is one parameter, counted in both. */
static void test_shared_parameters(void **state)
{
    (void)state;
    char *s = request("{\"nodes\":[{\"name\":\"a\",\"op\":\"call_module\",\"params\":[{\"name\":"
                      "\"wte\",\"bytes\":100},{\"name\":\"b\",\"bytes\":4}]},{\"name\":\"h\","
                      "\"op\":\"call_module\",\"inputs\":[\"a\"],\"params\":[{\"name\":\"wte\","
                      "\"bytes\":100}]}]}");
    partd_request *r = tu_decode_ok(s);
    assert_int_equal(r->graph.n_params, 2);
    assert_int_equal(r->graph.param_bytes[0], 104);
    assert_int_equal(r->graph.param_bytes[1], 100);
    partd_request_free(r);
    free(s);
}

static void test_graph_object_errors(void **state)
{
    (void)state;
    fails_at("{\"name\":7,\"nodes\":[{\"name\":\"a\",\"op\":\"call_function\"}]}", "/graph/name",
             "a string");
    fails_at("{\"name\":\"m\"}", "/graph/nodes", "is required");
    fails_at("{\"nodes\":[]}", "/graph/nodes", "at least one node");
    fails_at("{\"nodes\":{}}", "/graph/nodes", "an array");
    fails_at("{\"nodes\":[{\"name\":\"a\",\"op\":\"call_function\"}],\"colour\":1}",
             "/graph/colour", "unknown member");
    fails_at("[]", "/graph", "an object");
}

static void test_node_errors(void **state)
{
    (void)state;
    fails_at("{\"nodes\":[{\"op\":\"call_function\"}]}", "/graph/nodes/0/name", "is required");
    fails_at("{\"nodes\":[{\"name\":\"a\"}]}", "/graph/nodes/0/op", "is required");
    fails_at("{\"nodes\":[{\"name\":\"a\",\"op\":\"call_function\",\"param_bytes\":4,"
             "\"params\":[]}]}",
             "/graph/nodes/0/params", "either param_bytes or params");
    fails_at("{\"nodes\":[{\"name\":\"a\",\"op\":\"call_function\",\"params\":[{\"name\":\"w\","
             "\"bytes\":4},{\"name\":\"w\",\"bytes\":4}]}]}",
             "/graph/nodes/0/params/1/name", "names parameter \"w\" twice");
    fails_at("{\"nodes\":[{\"name\":\"a\",\"op\":\"call_function\",\"params\":[{\"bytes\":4}]}]}",
             "/graph/nodes/0/params/0/name", "is required");
    fails_at("{\"nodes\":[{\"name\":\"a\",\"op\":\"call_function\",\"params\":[{\"name\":\"w\","
             "\"bytes\":4,\"dtype\":\"f32\"}]}]}",
             "/graph/nodes/0/params/0/dtype", "unknown member");
    fails_at("{\"nodes\":[{\"name\":\"a\",\"op\":\"call_function\",\"speed\":1}]}",
             "/graph/nodes/0/speed", "unknown member");
}

/* More nodes than the server takes: one error naming the count and the
 * limit, whatever the nodes hold. */
static void test_node_count_limit(void **state)
{
    (void)state;
    char *s = request("{\"nodes\":[{\"name\":\"a\",\"op\":\"call_function\"},{\"name\":\"b\","
                      "\"op\":\"call_function\"},{\"name\":\"c\",\"op\":\"bogus\"}]}");
    partd_decode_limits lim = {.max_nodes = 2};
    partd_problem pb;
    partd_problem_init(&pb);
    partd_request *req = NULL;
    assert_int_equal(partd_request_decode(s, strlen(s), &lim, &req, &pb), PARTD_EINVALID);
    assert_null(req);
    tu_assert_error(&pb, "/graph/nodes", "has 3 nodes; this server takes at most 2");
    assert_int_equal(pb.n_errors, 1);
    partd_problem_free(&pb);
    lim.max_nodes = 3;
    partd_problem_init(&pb);
    assert_int_equal(partd_request_decode(s, strlen(s), &lim, &req, &pb), PARTD_EINVALID);
    tu_assert_error(&pb, "/graph/nodes/2/op", "");
    partd_problem_free(&pb);
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_member_order_does_not_matter),
        cmocka_unit_test(test_shared_parameters),
        cmocka_unit_test(test_graph_object_errors),
        cmocka_unit_test(test_node_errors),
        cmocka_unit_test(test_node_count_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
