/* test_plan_modules.c - the module whose call begins each partition of a
 * node-level plan (plan_modules.c, partd_part.first_module): the outermost
 * module called once whose first operation begins the partition, and none
 * where pipeline()'s split_spec could not say the cut. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "partd/partd.h"
#include "partd/plan.h"
#include "plan/plan_internal.h"

/* One operation: "name op module target" ("-" for none), in program order. */
typedef struct op {
    const char *name, *op, *module, *target;
} op;

/* A request of the operations chained after a placeholder x. */
static partd_request *request_of(const op *ops, size_t n)
{
    size_t cap = 512 + 256 * n;
    char *json = malloc(cap);
    assert_non_null(json);
    size_t len = (size_t)snprintf(json, cap,
                                  "{\"graph\":{\"nodes\":[{\"name\":\"x\",\"op\":\"placeholder\","
                                  "\"output_bytes\":8}");
    const char *prev = "x";
    for (size_t i = 0; i < n; i++) {
        len += (size_t)snprintf(json + len, cap - len,
                                ",{\"name\":\"%s\",\"op\":\"%s\",\"inputs\":[\"%s\"],"
                                "\"output_bytes\":4,\"latency_ms\":1",
                                ops[i].name, ops[i].op, prev);
        if (strcmp(ops[i].module, "-") != 0)
            len += (size_t)snprintf(json + len, cap - len, ",\"module\":\"%s\"", ops[i].module);
        if (strcmp(ops[i].target, "-") != 0)
            len += (size_t)snprintf(json + len, cap - len, ",\"target\":\"%s\"", ops[i].target);
        len += (size_t)snprintf(json + len, cap - len, "}");
        prev = ops[i].name;
    }
    snprintf(json + len, cap - len,
             ",{\"name\":\"output\",\"op\":\"output\",\"inputs\":[\"%s\"]}]},"
             "\"devices\":[{\"name\":\"g\",\"memory_bytes\":100000}]}",
             prev);
    partd_request *req = tu_decode_ok(json);
    free(json);
    return req;
}

/* Partitions of `sizes[j]` consecutive operations each (node 0 is x). */
static partd_plan *plan_of(const uint32_t *sizes, uint32_t n_parts)
{
    partd_plan *plan = partd_plan_alloc(PARTD_MODE_PIPELINE, n_parts);
    assert_non_null(plan);
    uint32_t node = 1;
    for (uint32_t j = 0; j < n_parts; j++) {
        partd_part *p = &plan->parts[j];
        p->n_nodes = sizes[j];
        p->nodes = malloc(sizes[j] * sizeof *p->nodes);
        assert_non_null(p->nodes);
        for (uint32_t k = 0; k < sizes[j]; k++)
            p->nodes[k] = node++;
    }
    return plan;
}

/* The first modules of the cut (NULL: none), as one string "a|-|b". */
static void assert_firsts(const op *ops, size_t n, const uint32_t *sizes, uint32_t n_parts,
                          const char *want)
{
    partd_request *req = request_of(ops, n);
    partd_plan *plan = plan_of(sizes, n_parts);
    assert_int_equal(partd__plan_first_modules(req, plan), PARTD_OK);
    char got[512] = "";
    for (uint32_t j = 0; j < n_parts; j++) {
        uint32_t m = plan->parts[j].first_module;
        snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", j ? "|" : "",
                 m == PARTD_NONE ? "-" : partd_str(&req->strings, m));
    }
    assert_string_equal(got, want);
    partd_plan_free(plan);
    partd_request_free(req);
}

/* A transformer as torchtitan builds it: embeddings, layers.N each adding
 * its attention and MLP to the residual (operations of its own), a norm and
 * the output; `layers` a ModuleDict, never called. */
static const op llm[] = {
    {"emb", "call_module", "tok_embeddings", "tok_embeddings"},
    {"l0_attn", "call_module", "layers.0.attention", "layers.0.attention"},
    {"l0_add", "call_function", "layers.0", "add"},
    {"l0_mlp", "call_module", "layers.0.mlp", "layers.0.mlp"},
    {"l0_add_1", "call_function", "layers.0", "add"},
    {"l1_attn", "call_module", "layers.1.attention", "layers.1.attention"},
    {"l1_add", "call_function", "layers.1", "add"},
    {"l1_mlp", "call_module", "layers.1.mlp", "layers.1.mlp"},
    {"l1_add_1", "call_function", "layers.1", "add"},
    {"norm", "call_module", "norm", "norm"},
    {"out", "call_module", "output", "output"},
};

static void test_cuts_at_layers(void **state)
{
    (void)state;
    /* the layer itself (it is called: its adds), not the never-called
     * ModuleDict, nor its attention (inner: the same point, a longer name) */
    assert_firsts(llm, 11, (uint32_t[]){5, 4, 2}, 3, "tok_embeddings|layers.1|norm");
    assert_firsts(llm, 11, (uint32_t[]){1, 10}, 2, "tok_embeddings|layers.0");
}

static void test_cuts_inside_a_module_have_none(void **state)
{
    (void)state;
    /* before layers.0's first add: layers.0 began earlier, and the add
     * belongs to no module below it */
    assert_firsts(llm, 11, (uint32_t[]){2, 9}, 2, "tok_embeddings|-");
    /* before layers.0.mlp: inside layers.0, but the mlp's own call begins */
    assert_firsts(llm, 11, (uint32_t[]){3, 8}, 2, "tok_embeddings|layers.0.mlp");
}

static void test_root_operations_have_none(void **state)
{
    (void)state;
    static const op ops[] = {
        {"a", "call_module", "a", "a"},
        {"add", "call_function", "-", "add"},
        {"b", "call_module", "b", "b"},
    };
    assert_firsts(ops, 3, (uint32_t[]){1, 2}, 2, "a|-");
    assert_firsts(ops, 3, (uint32_t[]){2, 1}, 2, "a|b");
}

static void test_modules_called_twice_have_none(void **state)
{
    (void)state;
    /* relu called twice: a second call of it would split again */
    static const op shared[] = {
        {"conv", "call_module", "block.conv", "block.conv"},
        {"relu", "call_module", "block.relu", "block.relu"},
        {"conv2", "call_module", "block.conv2", "block.conv2"},
        {"relu_1", "call_module", "block.relu", "block.relu"},
    };
    assert_firsts(shared, 4, (uint32_t[]){1, 3}, 2, "block.conv|-");
    assert_firsts(shared, 4, (uint32_t[]){2, 2}, 2, "block.conv|block.conv2");
    /* a module whose operations are broken by another's may be called
     * twice: its first submodule's call is taken instead */
    static const op apart[] = {
        {"a", "call_module", "a", "a"},
        {"e", "call_module", "enc.lin", "enc.lin"},
        {"d", "call_module", "dec.lin", "dec.lin"},
        {"e2", "call_function", "enc", "add"},
    };
    assert_firsts(apart, 4, (uint32_t[]){1, 3}, 2, "a|enc.lin");
    static const op together[] = {
        {"a", "call_module", "a", "a"},
        {"e", "call_module", "enc.lin", "enc.lin"},
        {"e2", "call_function", "enc", "add"},
        {"d", "call_module", "dec.lin", "dec.lin"},
    };
    assert_firsts(together, 4, (uint32_t[]){1, 3}, 2, "a|enc");
    /* a module that calls no submodule cannot show a second call */
    static const op functional[] = {
        {"a", "call_module", "a", "a"},
        {"mul", "call_function", "scale", "mul"},
        {"add", "call_function", "scale", "add"},
    };
    assert_firsts(functional, 3, (uint32_t[]){1, 2}, 2, "a|-");
    /* a call_module without its target: unknown */
    static const op untargeted[] = {
        {"a", "call_module", "a", "a"},
        {"b", "call_module", "b", "-"},
    };
    assert_firsts(untargeted, 2, (uint32_t[]){1, 1}, 2, "a|-");
}

/* Partitions that are not consecutive runs in id order: none at all. */
static void test_partitions_out_of_order_have_none(void **state)
{
    (void)state;
    partd_request *req = request_of(llm, 11);
    partd_plan *plan = plan_of((uint32_t[]){5, 4, 2}, 3);
    /* swap the node lists of partitions 1 and 2 */
    partd_part t = plan->parts[1];
    plan->parts[1] = plan->parts[2];
    plan->parts[2] = t;
    assert_int_equal(partd__plan_first_modules(req, plan), PARTD_OK);
    for (uint32_t j = 0; j < 3; j++)
        assert_int_equal(plan->parts[j].first_module, PARTD_NONE);
    partd_plan_free(plan);
    partd_request_free(req);
}

/* Nodes listed out of program order (planned in a topological order of
 * partd's): the request's order is no program's, so none at all. */
static void test_requests_out_of_order_have_none(void **state)
{
    (void)state;
    partd_request *req = tu_decode_ok(
        "{\"graph\":{\"nodes\":[{\"name\":\"x\",\"op\":\"placeholder\"},"
        "{\"name\":\"b\",\"op\":\"call_module\",\"module\":\"b\",\"target\":\"b\","
        "\"inputs\":[\"a\"]},"
        "{\"name\":\"a\",\"op\":\"call_module\",\"module\":\"a\",\"target\":\"a\","
        "\"inputs\":[\"x\"]},{\"name\":\"output\",\"op\":\"output\",\"inputs\":[\"b\"]}]},"
        "\"devices\":[{\"name\":\"g\",\"memory_bytes\":1000}]}");
    assert_false(req->graph.order_was_topological);
    partd_plan *plan = plan_of((uint32_t[]){1, 1}, 2);
    assert_int_equal(partd__plan_first_modules(req, plan), PARTD_OK);
    assert_int_equal(plan->parts[0].first_module, PARTD_NONE);
    assert_int_equal(plan->parts[1].first_module, PARTD_NONE);
    partd_plan_free(plan);
    partd_request_free(req);
}

/* Through the dispatcher: a pipeline plan's result names them. */
static void test_pipeline_plans_get_them(void **state)
{
    (void)state;
    partd_request *req = request_of(llm, 11);
    partd_problem pb;
    partd_problem_init(&pb);
    partd_plan *plan = NULL;
    assert_int_equal(partd_plan_run(req, NULL, &plan, &pb), PARTD_OK);
    assert_int_equal(plan->n_parts, 1);
    assert_string_equal(partd_str(&req->strings, plan->parts[0].first_module), "tok_embeddings");
    partd_plan_free(plan);
    partd_problem_free(&pb);
    partd_request_free(req);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cuts_at_layers),
        cmocka_unit_test(test_cuts_inside_a_module_have_none),
        cmocka_unit_test(test_root_operations_have_none),
        cmocka_unit_test(test_modules_called_twice_have_none),
        cmocka_unit_test(test_partitions_out_of_order_have_none),
        cmocka_unit_test(test_requests_out_of_order_have_none),
        cmocka_unit_test(test_pipeline_plans_get_them),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
