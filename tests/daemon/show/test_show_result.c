/* test_show_result.c - show_result.c: a result document read for drawing:
 * the figures of each partition with memory split into parameters, received
 * tensors and the rest (adding up to memory_bytes; a training stage's own
 * param, input and activation memory when the result has them), results
 * without device memory, training and SAC parts, every refusal naming
 * its member, and the word for a part ("stage", "partition"). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "testutil.h"

#include "partd/partd.h"
#include "show/show_result.h"

static const char *PIPELINE =
    "{\"mode\":\"pipeline\",\"partitions\":["
    "{\"id\":0,\"device\":\"gpu<0>\",\"logical_ids\":[0],\"nodes\":[\"a\",\"b\"],"
    "\"memory_bytes\":1000,\"param_bytes\":300,\"compute_ms\":2.0,\"transfer_in_bytes\":100,"
    "\"time_ms\":2.5,\"device_memory_bytes\":4000,\"inputs\":[],\"outputs\":[],\"parents\":[],"
    "\"children\":[1]},"
    "{\"id\":1,\"device\":\"gpu1\",\"logical_ids\":[1],\"nodes\":[\"c\"],"
    "\"memory_bytes\":500,\"param_bytes\":0,\"compute_ms\":1.0,\"transfer_in_bytes\":200,"
    "\"time_ms\":1.5,\"device_memory_bytes\":4000,\"inputs\":[],\"outputs\":[],\"parents\":[0],"
    "\"children\":[]}],"
    "\"balance\":[2,1],\"boundaries\":[],\"tied_params\":[],"
    "\"summary\":{\"partitions\":2,\"bottleneck_ms\":2.5,\"total_ms\":4.0,"
    "\"transfer_bytes\":300,\"peak_memory_bytes\":1000,\"optimal\":true}}";

static void test_partitions_and_memory_split(void **state)
{
    (void)state;
    partd__show_result r;
    char err[256] = "";
    assert_int_equal(partd__show_result_parse(PIPELINE, strlen(PIPELINE), &r, err, sizeof err),
                     PARTD_OK);
    assert_string_equal(r.mode, "pipeline");
    assert_false(r.training);
    assert_int_equal(r.n_parts, 2);
    assert_true(r.has_device_memory);
    assert_string_equal(r.parts[0].device, "gpu<0>");
    assert_int_equal(r.parts[0].nodes, 2);
    for (size_t i = 0; i < r.n_parts; i++) {
        const partd__show_part *p = &r.parts[i];
        assert_true(p->params >= 0 && p->received >= 0 && p->rest >= 0);
        assert_true(p->params + p->received + p->rest == p->memory_bytes);
    }
    assert_true(r.parts[0].params == 300 && r.parts[0].received == 100);
    assert_true(r.bottleneck_ms == 2.5 && r.peak_bytes == 1000);
    assert_false(r.sac.present);
    assert_string_equal(partd__show_result_part_word(&r), "stage");
    r.mode = "size_based";
    assert_string_equal(partd__show_result_part_word(&r), "partition");
    partd__show_result_free(&r);
}

static void test_results_without_device_memory_are_read(void **state)
{
    (void)state;
    char doc[4096];
    snprintf(doc, sizeof doc, "%s", PIPELINE);
    char *p;
    while ((p = strstr(doc, ",\"device_memory_bytes\":4000")))
        memmove(p, p + strlen(",\"device_memory_bytes\":4000"),
                strlen(p + strlen(",\"device_memory_bytes\":4000")) + 1);
    partd__show_result r;
    char err[256];
    assert_int_equal(partd__show_result_parse(doc, strlen(doc), &r, err, sizeof err), PARTD_OK);
    assert_false(r.has_device_memory);
    assert_true(r.parts[0].device_memory_bytes < 0);
    partd__show_result_free(&r);
}

/* options.result.detail "summary": no nodes, inputs, outputs or tensors;
 * read with the node count unknown (-1), everything else as in full. */
static void test_summary_detail_results_are_read(void **state)
{
    (void)state;
    static const char *const cut[] = {"\"nodes\":[\"a\",\"b\"],", "\"nodes\":[\"c\"],",
                                      ",\"inputs\":[],\"outputs\":[]"};
    char doc[4096];
    snprintf(doc, sizeof doc, "%s", PIPELINE);
    for (size_t k = 0; k < sizeof cut / sizeof *cut; k++) {
        char *p;
        while ((p = strstr(doc, cut[k])))
            memmove(p, p + strlen(cut[k]), strlen(p + strlen(cut[k])) + 1);
    }
    assert_null(strstr(doc, "nodes"));
    assert_null(strstr(doc, "inputs"));
    partd__show_result r;
    char err[256] = "";
    assert_int_equal(partd__show_result_parse(doc, strlen(doc), &r, err, sizeof err), PARTD_OK);
    assert_int_equal(r.n_parts, 2);
    assert_int_equal(r.parts[0].nodes, -1);
    assert_int_equal(r.parts[1].nodes, -1);
    assert_true(r.parts[0].params == 300 && r.parts[0].received == 100);
    assert_true(r.bottleneck_ms == 2.5 && r.peak_bytes == 1000);
    partd__show_result_free(&r);
}

/* The bundled training example's result (read from the tree root). */
static char *example_training_result(size_t *len)
{
    FILE *f = fopen("examples/gpt2-training/result.json", "rb");
    assert_non_null(f);
    static char buf[1 << 20];
    *len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    assert_true(*len > 0 && *len < sizeof buf - 1);
    buf[*len] = 0;
    return buf;
}

static json_t *example_training_json(void)
{
    size_t len;
    const char *doc = example_training_result(&len);
    json_t *j = json_loadb(doc, len, 0, NULL);
    assert_non_null(j);
    return j;
}

static void test_training_stage_memory_split_is_its_own(void **state)
{
    (void)state;
    size_t len;
    const char *doc = example_training_result(&len);
    json_t *j = json_loadb(doc, len, 0, NULL);
    assert_non_null(j);
    partd__show_result r;
    char err[256] = "";
    assert_int_equal(partd__show_result_parse(doc, len, &r, err, sizeof err), PARTD_OK);
    assert_true(r.training);
    assert_int_equal(r.n_parts, json_array_size(json_object_get(j, "partitions")));
    int differs = 0;
    for (size_t i = 0; i < r.n_parts; i++) {
        json_t *o = json_array_get(json_object_get(j, "partitions"), i);
        const partd__show_part *p = &r.parts[i];
        double pm = (double)json_integer_value(json_object_get(o, "param_memory_bytes"));
        double im = (double)json_integer_value(json_object_get(o, "input_memory_bytes"));
        double am = (double)json_integer_value(json_object_get(o, "activation_memory_bytes"));
        double pb = (double)json_integer_value(json_object_get(o, "param_bytes"));
        assert_true(p->has_memory_split);
        /* v3: in and kept are one microbatch's; the stage's peak holds more */
        assert_true(p->params == pm && p->received == im && p->rest >= am);
        assert_true(p->params + p->received + p->rest == p->memory_bytes);
        differs |= pm != pb; /* param_factor x params, not the parameters' bytes */
    }
    assert_true(differs);
    partd__show_result_free(&r);

    /* A training result of an older version, without the split: the
     * parameters' bytes and in_flight microbatches of the received bytes. */
    json_t *parts = json_object_get(j, "partitions");
    for (size_t i = 0; i < json_array_size(parts); i++) {
        json_t *o = json_array_get(parts, i);
        json_object_del(o, "param_memory_bytes");
        json_object_del(o, "input_memory_bytes");
        json_object_del(o, "activation_memory_bytes");
    }
    char *old = json_dumps(j, JSON_COMPACT);
    assert_non_null(old);
    assert_int_equal(partd__show_result_parse(old, strlen(old), &r, err, sizeof err), PARTD_OK);
    for (size_t i = 0; i < r.n_parts; i++) {
        json_t *o = json_array_get(parts, i);
        const partd__show_part *p = &r.parts[i];
        double pb = (double)json_integer_value(json_object_get(o, "param_bytes"));
        double in = (double)json_integer_value(json_object_get(o, "transfer_in_bytes"));
        assert_false(p->has_memory_split);
        assert_true(p->params == pb);
        assert_true(p->received == in * (double)p->in_flight / (double)r.microbatches);
        assert_true(p->params + p->received + p->rest == p->memory_bytes);
    }
    partd__show_result_free(&r);
    free(old);
    json_decref(j);
}

/* A v3 result: its ranks, its actions, and its step re-timed from them by
 * the step model, giving back step_ms and each rank's busy_ms; the same
 * result without schedule and ranks is read as one of v2. */
static void test_training_v3_is_re_timed(void **state)
{
    (void)state;
    size_t len;
    const char *doc = example_training_result(&len);
    json_t *j = json_loadb(doc, len, 0, NULL);
    partd__show_result r;
    char err[256] = "";
    assert_int_equal(partd__show_result_parse(doc, len, &r, err, sizeof err), PARTD_OK);
    json_t *ranks = json_object_get(j, "ranks"), *sum = json_object_get(j, "summary");
    assert_int_equal(r.n_ranks, json_array_size(ranks));
    assert_string_equal(r.schedule, json_string_value(json_object_get(sum, "schedule")));
    assert_int_equal(r.virtual_stages, 1);
    double step = json_number_value(json_object_get(sum, "step_ms"));
    assert_true(fabs(r.timeline.step_ms - step) <= 1e-9 * step);
    for (size_t k = 0; k < r.n_ranks; k++) {
        json_t *o = json_array_get(ranks, k);
        assert_string_equal(r.ranks[k].device, json_string_value(json_object_get(o, "device")));
        double busy = json_number_value(json_object_get(o, "busy_ms"));
        assert_true(fabs(r.timeline.busy[k] - busy) <= 1e-9 * busy);
        assert_true(r.ranks[k].busy_ms == busy);
        assert_true(r.ranks[k].memory_bytes ==
                    (double)json_integer_value(json_object_get(o, "memory_bytes")));
    }
    assert_int_equal(r.action_off[r.n_ranks], r.timeline.n);
    assert_int_equal(r.timeline.n, 2 * r.n_parts * (size_t)r.microbatches);
    partd__show_result_free(&r);

    json_object_del(j, "schedule");
    json_object_del(j, "ranks");
    char *v2 = json_dumps(j, JSON_COMPACT);
    assert_int_equal(partd__show_result_parse(v2, strlen(v2), &r, err, sizeof err), PARTD_OK);
    assert_int_equal(r.n_ranks, 0);
    assert_int_equal(r.timeline.n, 0);
    assert_int_equal(r.parts[0].rank, -1);
    partd__show_result_free(&r);
    free(v2);
    json_decref(j);
}

static void expect_refusal(const char *doc, int rc, const char *needle)
{
    partd__show_result r;
    char err[256] = "";
    assert_int_equal(partd__show_result_parse(doc, strlen(doc), &r, err, sizeof err), rc);
    if (!strstr(err, needle))
        fail_msg("error \"%s\" does not name \"%s\"", err, needle);
}

static void test_refusals_name_the_member(void **state)
{
    (void)state;
    expect_refusal("{not json", PARTD_EMALFORMED, "");
    expect_refusal("[1,2]", PARTD_EINVALID, "");
    expect_refusal("{\"mode\":\"pipeline\"}", PARTD_EINVALID, "/partitions");
    char doc[4096];
    snprintf(doc, sizeof doc, "%s", PIPELINE);
    char *p = strstr(doc, "\"memory_bytes\":500");
    memcpy(p, "\"memory_bytes\":\"5\"", strlen("\"memory_bytes\":500"));
    expect_refusal(doc, PARTD_EINVALID, "/partitions/1/memory_bytes");

    /* v3: one rank per list of actions, in order; a plan's actions */
    json_t *j = example_training_json();
    json_t *ranks = json_object_get(j, "ranks");
    json_array_remove(ranks, 2);
    char *s = json_dumps(j, JSON_COMPACT);
    expect_refusal(s, PARTD_EINVALID, "/ranks must be an array with one rank per list");
    free(s);
    json_decref(j);
    j = example_training_json();
    json_object_set_new(json_array_get(json_object_get(j, "ranks"), 1), "rank", json_integer(2));
    s = json_dumps(j, JSON_COMPACT);
    expect_refusal(s, PARTD_EINVALID, "/ranks/1/rank must be the rank's place in /ranks");
    free(s);
    json_decref(j);
    j = example_training_json();
    json_t *list = json_array_get(json_object_get(json_object_get(j, "schedule"), "actions"), 0);
    json_array_remove(list, json_array_size(list) - 1);
    s = json_dumps(j, JSON_COMPACT);
    expect_refusal(s, PARTD_EINVALID, "not a result document: /schedule/actions");
    free(s);
    json_decref(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_partitions_and_memory_split),
        cmocka_unit_test(test_results_without_device_memory_are_read),
        cmocka_unit_test(test_summary_detail_results_are_read),
        cmocka_unit_test(test_training_stage_memory_split_is_its_own),
        cmocka_unit_test(test_training_v3_is_re_timed),
        cmocka_unit_test(test_refusals_name_the_member),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
