/* test_result.c - rendering a plan as the contract's result document. */
#include "partd/clock.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "partd/partd.h"
#include "partd/plan_types.h"
#include "partd/result.h"

/* x -> a -> b -> output; a and b share the named parameter "w". Planning
 * order is the request's: x=0, a=1, b=2, output=3. */
static const char *const request =
    "{\"graph\":{\"name\":\"m\",\"nodes\":["
    "{\"name\":\"x\",\"op\":\"placeholder\",\"output_bytes\":8},"
    "{\"name\":\"a\",\"op\":\"call_module\",\"inputs\":[\"x\"],\"output_bytes\":4,"
    "\"latency_ms\":0.5,\"params\":[{\"name\":\"w\",\"bytes\":16}]},"
    "{\"name\":\"b\",\"op\":\"call_function\",\"inputs\":[\"a\"],\"output_bytes\":2,"
    "\"latency_ms\":0.25,\"params\":[{\"name\":\"w\",\"bytes\":16}]},"
    "{\"name\":\"output\",\"op\":\"output\",\"inputs\":[\"b\"]}]},"
    "\"devices\":[{\"name\":\"g0\",\"memory_bytes\":1000,\"logical_id\":7},"
    "{\"name\":\"g1\",\"memory_bytes\":1000,\"logical_id\":3}]}";

static uint32_t *u32s(uint32_t n, const uint32_t *v)
{
    uint32_t *a = malloc((n ? n : 1) * sizeof *a);
    assert_non_null(a);
    memcpy(a, v, n * sizeof *a);
    return a;
}

/* Two stages by hand: [a] on g0, [b] on g1. */
static partd_plan *two_stages(const partd_request *req, partd_mode mode)
{
    partd_plan *plan = partd_plan_alloc(mode, 2);
    assert_non_null(plan);
    for (uint32_t s = 0; s < 2; s++) {
        partd_part *p = &plan->parts[s];
        p->n_nodes = 1;
        p->nodes = u32s(1, (uint32_t[]){1 + s});
        p->n_devices = 1;
        p->devices = u32s(1, (uint32_t[]){s});
        p->memory_bytes = 100 + s;
        p->param_bytes = 16;
    }
    uint32_t node_part[4] = {PARTD_NONE, 0, 1, PARTD_NONE};
    assert_int_equal(partd_plan_link(req, node_part, plan), PARTD_OK);
    partd_plan_fill_times(req, plan);
    if (mode == PARTD_MODE_PIPELINE) {
        plan->balance = u32s(2, (uint32_t[]){1, 1});
        plan->n_boundaries = 1;
        plan->boundaries = calloc(1, sizeof *plan->boundaries);
        assert_non_null(plan->boundaries);
        plan->boundaries[0] = (partd_boundary){1, 1, u32s(1, (uint32_t[]){1}), 4};
        plan->summary.optimal = 1;
    }
    return plan;
}

static void test_pipeline_document_text(void **state)
{
    (void)state;
    partd_request *req = tu_decode_ok(request);
    partd_plan *plan = two_stages(req, PARTD_MODE_PIPELINE);
    /* the dispatcher's first_module, written where set (any string here) */
    plan->parts[1].first_module = partd_strtab_find(&req->strings, "b", 1);
    assert_int_not_equal(plan->parts[1].first_module, PARTD_NONE);
    size_t len = 0;
    char *text = partd_result_to_json(req, plan, &len);
    assert_non_null(text);
    assert_int_equal(strlen(text), len);
    /* transfer: 1e10 B/s default, stage 1 receives a's 4 bytes = 4e-7 ms. */
    assert_string_equal(
        text,
        "{\"mode\":\"pipeline\",\"partitions\":["
        "{\"id\":0,\"device\":\"g0\",\"logical_ids\":[7],\"nodes\":[\"a\"],"
        "\"memory_bytes\":100,\"device_memory_bytes\":1000,\"param_bytes\":16,\"compute_ms\":0.5,\"transfer_in_bytes\":8,"
        "\"time_ms\":0.5000008,\"inputs\":[\"x\"],\"outputs\":[\"a\"],\"parents\":[],"
        "\"children\":[1]},"
        "{\"id\":1,\"device\":\"g1\",\"logical_ids\":[3],\"nodes\":[\"b\"],"
        "\"memory_bytes\":101,\"device_memory_bytes\":1000,\"param_bytes\":16,\"compute_ms\":0.25,\"transfer_in_bytes\":4,"
        "\"time_ms\":0.2500004,\"inputs\":[\"a\"],\"outputs\":[\"b\"],\"parents\":[0],"
        "\"children\":[],\"first_module\":\"b\"}],"
        "\"balance\":[1,1],"
        "\"boundaries\":[{\"after\":\"a\",\"tensors\":[\"a\"],\"bytes\":4}],"
        "\"tied_params\":[{\"param\":\"w\",\"partitions\":[0,1]}],"
        "\"summary\":{\"partitions\":2,\"bottleneck_ms\":0.5000008,\"total_ms\":0.7500012,"
        "\"transfer_bytes\":12,\"peak_memory_bytes\":101,\"optimal\":true,"
        "\"schedule\":\"inference\",\"microbatches\":1}}\n");
    /* Deterministic: the same plan renders to the same bytes. */
    char *again = partd_result_to_json(req, plan, NULL);
    assert_string_equal(again, text);
    free(again);
    free(text);
    partd_plan_free(plan);
    partd_request_free(req);
}

static void test_size_based_has_no_pipeline_members(void **state)
{
    (void)state;
    partd_request *req = tu_decode_ok(request);
    partd_plan *plan = two_stages(req, PARTD_MODE_SIZE_BASED);
    char *text = partd_result_to_json(req, plan, NULL);
    json_error_t err;
    json_t *doc = json_loads(text, 0, &err);
    assert_non_null(doc);
    assert_string_equal(json_string_value(json_object_get(doc, "mode")), "size_based");
    assert_null(json_object_get(doc, "balance"));
    assert_null(json_object_get(doc, "boundaries"));
    assert_null(json_object_get(doc, "sac"));
    assert_int_equal(json_array_size(json_object_get(doc, "partitions")), 2);
    assert_false(json_is_true(json_object_get(json_object_get(doc, "summary"), "optimal")));
    json_decref(doc);
    free(text);
    partd_plan_free(plan);
    partd_request_free(req);
}

/* warnings: a list of {code, message} at the end of the document, in the
 * order added (text escaped as every string is); absent when there is none
 * (test_pipeline_document_text). */
static void test_warnings_are_listed(void **state)
{
    (void)state;
    partd_request *req = tu_decode_ok(request);
    partd_plan *plan = two_stages(req, PARTD_MODE_PIPELINE);
    assert_int_equal(partd_plan_warn(plan, "first", "M (%d) is \"large\"", 8), PARTD_OK);
    assert_int_equal(partd_plan_warn(plan, "second", "another"), PARTD_OK);
    char *text = partd_result_to_json(req, plan, NULL);
    const char *tail = "},\"warnings\":[{\"code\":\"first\",\"message\":"
                       "\"M (8) is \\\"large\\\"\"},{\"code\":\"second\",\"message\":\"another\"}]}\n";
    assert_true(strlen(text) > strlen(tail));
    assert_string_equal(text + strlen(text) - strlen(tail), tail);
    free(text);
    partd_plan_free(plan);
    partd_request_free(req);
}

/* A partition without devices (never produced by a planner) still renders:
 * "device" is "" and logical_ids is empty. An empty plan renders too. */
static void test_degenerate_plans_render(void **state)
{
    (void)state;
    partd_request *req = tu_decode_ok(request);
    partd_plan *plan = partd_plan_alloc(PARTD_MODE_SIZE_BASED, 1);
    char *text = partd_result_to_json(req, plan, NULL);
    assert_non_null(strstr(text, "\"device\":\"\",\"logical_ids\":[],\"nodes\":[]"));
    free(text);
    partd_plan_free(plan);

    plan = partd_plan_alloc(PARTD_MODE_PIPELINE, 0);
    text = partd_result_to_json(req, plan, NULL);
    assert_non_null(strstr(text, "\"partitions\":[],\"boundaries\":[],\"tied_params\":[]"));
    free(text);
    partd_plan_free(plan);
    partd_request_free(req);
}

/* The bounded renderer makes the same bytes, refuses a document over its
 * limit, and stops for a cancel or a deadline that has passed. */
static void test_bounded_render(void **state)
{
    (void)state;
    partd_request *req = tu_decode_ok(request);
    partd_plan *plan = two_stages(req, PARTD_MODE_PIPELINE);
    size_t len = 0, blen = 0;
    char *text = partd_result_to_json(req, plan, &len);
    assert_non_null(text);
    int rc = -1;
    char *bounded = partd_result_render(req, plan, NULL, 0, &blen, NULL, &rc);
    assert_int_equal(rc, PARTD_OK);
    assert_int_equal(blen, len);
    assert_string_equal(bounded, text);
    free(bounded);
    /* Exactly at the limit fits (the limit counts the final newline). */
    bounded = partd_result_render(req, plan, NULL, len, &blen, NULL, &rc);
    assert_int_equal(rc, PARTD_OK);
    assert_string_equal(bounded, text);
    free(bounded);
    assert_null(partd_result_render(req, plan, NULL, len - 1, &blen, NULL, &rc));
    assert_int_equal(rc, PARTD_ETOOBIG);
    assert_null(partd_result_render(req, plan, NULL, 10, &blen, NULL, &rc));
    assert_int_equal(rc, PARTD_ETOOBIG);

    partd_cancel cancel;
    partd_cancel_init(&cancel, 0);
    atomic_store(&cancel.cancelled, 1);
    assert_null(partd_result_render(req, plan, &cancel, 0, &blen, NULL, &rc));
    assert_int_equal(rc, PARTD_ECANCELLED);
    partd_cancel_init(&cancel, 0);
    cancel.deadline_ns = partd_clock_ns() - 1; /* already past */
    assert_null(partd_result_render(req, plan, &cancel, 0, &blen, NULL, &rc));
    assert_int_equal(rc, PARTD_ETIMEOUT);
    free(text);
    partd_plan_free(plan);
    partd_request_free(req);
}


/* The summary detail: the same document without the node lists. */
static void test_summary_detail_text(void **state)
{
    (void)state;
    partd_request *req = tu_decode_ok(request);
    req->options.result_detail = PARTD_RESULT_DETAIL_SUMMARY;
    partd_plan *plan = two_stages(req, PARTD_MODE_PIPELINE);
    int rc = -1;
    size_t len = 0;
    char *summary = NULL;
    char *text = partd_result_render(req, plan, NULL, 0, &len, &summary, &rc);
    assert_int_equal(rc, PARTD_OK);
    assert_string_equal(
        text,
        "{\"mode\":\"pipeline\",\"partitions\":["
        "{\"id\":0,\"device\":\"g0\",\"logical_ids\":[7],"
        "\"memory_bytes\":100,\"device_memory_bytes\":1000,\"param_bytes\":16,\"compute_ms\":0.5,\"transfer_in_bytes\":8,"
        "\"time_ms\":0.5000008,\"parents\":[],\"children\":[1]},"
        "{\"id\":1,\"device\":\"g1\",\"logical_ids\":[3],"
        "\"memory_bytes\":101,\"device_memory_bytes\":1000,\"param_bytes\":16,\"compute_ms\":0.25,\"transfer_in_bytes\":4,"
        "\"time_ms\":0.2500004,\"parents\":[0],\"children\":[]}],"
        "\"balance\":[1,1],"
        "\"boundaries\":[{\"after\":\"a\",\"bytes\":4}],"
        "\"tied_params\":[{\"param\":\"w\",\"partitions\":[0,1]}],"
        "\"summary\":{\"partitions\":2,\"bottleneck_ms\":0.5000008,\"total_ms\":0.7500012,"
        "\"transfer_bytes\":12,\"peak_memory_bytes\":101,\"optimal\":true,"
        "\"schedule\":\"inference\",\"microbatches\":1}}\n");
    assert_int_equal(len, strlen(text));
    /* The summary is the member's text as written. */
    assert_string_equal(summary, "{\"partitions\":2,\"bottleneck_ms\":0.5000008,"
                                 "\"total_ms\":0.7500012,\"transfer_bytes\":12,"
                                 "\"peak_memory_bytes\":101,\"optimal\":true,"
                                 "\"schedule\":\"inference\",\"microbatches\":1}");
    free(summary);
    free(text);
    partd_plan_free(plan);
    partd_request_free(req);
}

/* A chain x -> n1 -> ... -> n(N-1) where n_i also reads n_(i - N/2), split
 * uniformly into `stages` stages: boundaries in the middle list ~N/2 names,
 * so the document is large for a small request. */
static char *chain_request(unsigned n, unsigned stages, const char *detail)
{
    size_t cap = (size_t)n * 128 + (size_t)stages * 64 + 256, len = 0;
    char *t = malloc(cap);
    assert_non_null(t);
    len += (size_t)snprintf(t + len, cap - len, "{\"graph\":{\"name\":\"c\",\"nodes\":["
                            "{\"name\":\"x\",\"op\":\"placeholder\",\"output_bytes\":8}");
    for (unsigned i = 1; i < n; i++) {
        char prev[16] = "x", skip[24] = "";
        if (i > 1)
            snprintf(prev, sizeof prev, "n%u", i - 1);
        if (i > n / 2)
            snprintf(skip, sizeof skip, ",\"n%u\"", i - n / 2);
        len += (size_t)snprintf(t + len, cap - len,
                                ",{\"name\":\"n%u\",\"op\":\"call_function\",\"inputs\":"
                                "[\"%s\"%s],\"output_bytes\":8,\"latency_ms\":0.%u}",
                                i, prev, skip, 1 + i % 9);
    }
    len += (size_t)snprintf(t + len, cap - len,
                            ",{\"name\":\"output\",\"op\":\"output\",\"inputs\":[\"n%u\"]}]},"
                            "\"devices\":[", n - 1);
    for (unsigned d = 0; d < stages; d++)
        len += (size_t)snprintf(t + len, cap - len, "%s{\"name\":\"d%u\",\"memory_bytes\":%u}",
                                d ? "," : "", d, 1u << 30);
    snprintf(t + len, cap - len,
             "],\"options\":{\"pipeline\":{\"balance_by\":\"uniform\"},"
             "\"result\":{\"detail\":\"%s\"}}}",
             detail);
    return t;
}

typedef struct big {
    partd_request *req;
    partd_plan *plan;
} big;

static big plan_chain(unsigned n, unsigned stages, const char *detail)
{
    char *text = chain_request(n, stages, detail);
    big b = {tu_decode_ok(text), NULL};
    free(text);
    partd_problem pb;
    partd_problem_init(&pb);
    assert_int_equal(partd_plan_run(b.req, NULL, &b.plan, &pb), PARTD_OK);
    partd_problem_free(&pb);
    return b;
}

static void big_free(big *b)
{
    partd_plan_free(b->plan);
    partd_request_free(b->req);
}

/* The streamed text is what jansson prints for the same document (parsed
 * and dumped again with the flags the DOM renderer used), in both details;
 * the summary detail has no node lists and the same summary. */
static void test_same_bytes_as_a_dom(void **state)
{
    (void)state;
    const char *details[] = {"full", "summary"};
    char *summaries[2];
    for (int k = 0; k < 2; k++) {
        big b = plan_chain(600, 12, details[k]);
        size_t len;
        int rc;
        char *text = partd_result_render(b.req, b.plan, NULL, 0, &len, &summaries[k], &rc);
        assert_int_equal(rc, PARTD_OK);
        json_error_t err;
        json_t *doc = json_loads(text, 0, &err);
        assert_non_null(doc);
        char *again = json_dumps(doc, JSON_PRESERVE_ORDER | JSON_COMPACT |
                                          JSON_REAL_PRECISION(15));
        assert_non_null(again);
        assert_int_equal(strlen(again) + 1, len);
        assert_memory_equal(again, text, len - 1);
        assert_int_equal(text[len - 1], '\n');
        char *s = json_dumps(json_object_get(doc, "summary"),
                             JSON_PRESERVE_ORDER | JSON_COMPACT | JSON_REAL_PRECISION(15));
        assert_string_equal(s, summaries[k]);
        json_t *p0 = json_array_get(json_object_get(doc, "partitions"), 0);
        json_t *b0 = json_array_get(json_object_get(doc, "boundaries"), 5);
        assert_non_null(p0);
        assert_non_null(b0);
        int full = k == 0;
        assert_int_equal(json_object_get(p0, "nodes") != NULL, full);
        assert_int_equal(json_object_get(p0, "inputs") != NULL, full);
        assert_int_equal(json_object_get(p0, "outputs") != NULL, full);
        assert_int_equal(json_object_get(b0, "tensors") != NULL, full);
        assert_non_null(json_object_get(p0, "children"));
        assert_non_null(json_object_get(b0, "bytes"));
        free(s);
        free(again);
        json_decref(doc);
        free(text);
        big_free(&b);
    }
    assert_string_equal(summaries[0], summaries[1]);
    free(summaries[0]);
    free(summaries[1]);
}

/* A sink that counts, and raises the job's cancel flag once it has taken
 * `cancel_after` bytes. */
typedef struct counting {
    size_t bytes, largest, cancel_after;
    partd_cancel *cancel;
} counting;

static int counting_sink(const char *data, size_t n, void *ctx)
{
    (void)data;
    counting *c = ctx;
    c->bytes += n;
    if (n > c->largest)
        c->largest = n;
    if (c->cancel && c->bytes >= c->cancel_after)
        atomic_store(&c->cancel->cancelled, 1);
    return PARTD_OK;
}

/* Over the limit, writing stops at the chunk that would pass it: the sink
 * never receives more than the limit. A cancel raised while the document
 * is written stops it within about a megabyte. */
static void test_limit_and_cancel_while_writing(void **state)
{
    (void)state;
    big b = plan_chain(6000, 300, "full");
    counting c = {0};
    assert_int_equal(partd_result_write(b.req, b.plan, NULL, 0, counting_sink, &c, NULL),
                     PARTD_OK);
    size_t whole = c.bytes;
    assert_true(whole > (size_t)3 << 20); /* room for several checks */
    assert_true(c.largest <= PARTD_JSON_OUT_CHUNK);

    const size_t limits[] = {1, 100, 65536, 1 << 20, whole - 1};
    for (size_t i = 0; i < sizeof limits / sizeof *limits; i++) {
        c = (counting){0};
        char *summary = (char *)"unset";
        assert_int_equal(partd_result_write(b.req, b.plan, NULL, limits[i], counting_sink, &c,
                                            &summary),
                         PARTD_ETOOBIG);
        assert_true(c.bytes <= limits[i]);
        assert_true(c.bytes + PARTD_JSON_OUT_CHUNK > limits[i]);
        assert_null(summary);
        size_t len = 7;
        int rc;
        assert_null(partd_result_render(b.req, b.plan, NULL, limits[i], &len, NULL, &rc));
        assert_int_equal(rc, PARTD_ETOOBIG);
    }
    c = (counting){0};
    assert_int_equal(partd_result_write(b.req, b.plan, NULL, whole, counting_sink, &c, NULL),
                     PARTD_OK);

    partd_cancel cancel;
    partd_cancel_init(&cancel, 0);
    c = (counting){.cancel = &cancel, .cancel_after = 100000};
    assert_int_equal(partd_result_write(b.req, b.plan, &cancel, 0, counting_sink, &c, NULL),
                     PARTD_ECANCELLED);
    assert_true(c.bytes <= c.cancel_after + ((size_t)1 << 20) + PARTD_JSON_OUT_CHUNK);
    assert_true(c.bytes < whole);
    big_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pipeline_document_text),
        cmocka_unit_test(test_size_based_has_no_pipeline_members),
        cmocka_unit_test(test_warnings_are_listed),
        cmocka_unit_test(test_degenerate_plans_render),
        cmocka_unit_test(test_bounded_render),
        cmocka_unit_test(test_summary_detail_text),
        cmocka_unit_test(test_same_bytes_as_a_dom),
        cmocka_unit_test(test_limit_and_cancel_while_writing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
