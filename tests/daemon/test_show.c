/* test_show.c - `partd show`'s renderers: a well-formed, self-contained,
 * deterministic SVG with escaped names; the training timeline drawn one
 * block per stage and microbatch in the schedule's order, without overlap
 * and after its inputs; bounded size at 64 stages and 1,000 nodes; the text
 * table; and one-sentence errors naming the member by JSON Pointer. */
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "testutil.h"

#include "buf.h"
#include "partd.h"
#include "show.h"
#include "show_schedule.h"

#define EPS 1e-6 /* block edges are drawn exactly where the next begins */

/* A training result as the contract describes it: S stages, M microbatches,
 * `nodes` operation nodes spread over the stages. */
static json_t *training_doc(size_t S, long M, const char *schedule, size_t nodes)
{
    json_t *parts = json_array();
    double sum = 0, max = 0;
    for (size_t s = 0; s < S; s++) {
        double f = 1.0 + 0.25 * (double)(s % 3), b = 2 * f, rc = s % 2 ? 0 : 0.5 * f, comm = 0.25;
        json_t *names = json_array(), *units = json_array(), *ckpt = json_array();
        for (size_t i = s * nodes / S; i < (s + 1) * nodes / S; i++) {
            char n[32];
            snprintf(n, sizeof n, "n%zu", i);
            json_array_append_new(names, json_string(n));
        }
        for (int u = 0; u < 3; u++) {
            char n[32];
            snprintf(n, sizeof n, "layers.%zu", s * 3 + (size_t)u);
            json_array_append_new(units, json_string(n));
            if (u == 0 && rc > 0)
                json_array_append_new(ckpt, json_string(n));
        }
        char dev[32];
        snprintf(dev, sizeof dev, "gpu%zu", s);
        long k = strcmp(schedule, "gpipe") == 0 ? M : (long)fmin((double)M, (double)(S - s));
        double t = f + b + rc + comm;
        sum += t;
        max = fmax(max, t);
        json_array_append_new(
            parts, json_pack("{s:I,s:s,s:[I],s:o,s:I,s:I,s:I,s:f,s:I,s:f,s:[],s:[],s:[],s:[],"
                             "s:o,s:o,s:I,s:f,s:f,s:f,s:f}",
                             "id", (json_int_t)s, "device", dev, "logical_ids", (json_int_t)s,
                             "nodes", names, "memory_bytes", (json_int_t)(3 + s % 4) << 30,
                             "device_memory_bytes", (json_int_t)8 << 30, "param_bytes",
                             (json_int_t)1 << 29, "compute_ms", (f + b) * (double)M,
                             "transfer_in_bytes", (json_int_t)(s ? 1 << 26 : 0), "time_ms", t,
                             "inputs", "outputs", "parents", "children", "units", units,
                             "checkpointed", ckpt, "in_flight", (json_int_t)k, "forward_ms", f,
                             "backward_ms", b, "recompute_ms", rc, "comm_ms", comm));
    }
    double step = sum + (double)(M - 1) * max;
    return json_pack("{s:s,s:o,s:[],s:{s:I,s:f,s:f,s:I,s:I,s:b,s:f,s:f,s:I,s:I,s:s,s:s,s:I}}",
                     "mode", "training", "partitions", parts, "tied_params", "summary",
                     "partitions", (json_int_t)S, "bottleneck_ms", max, "total_ms", step,
                     "transfer_bytes", (json_int_t)0, "peak_memory_bytes", (json_int_t)6 << 30,
                     "optimal", 1, "step_ms", step, "bubble_fraction",
                     1 - (double)M * sum / ((double)S * step), "stages", (json_int_t)S,
                     "microbatches", (json_int_t)M, "schedule", schedule, "checkpoint", "auto",
                     "unit_depth", (json_int_t)2);
}

/* A pipeline result of version 1 (no device_memory_bytes). */
static const char *PIPELINE =
    "{\"mode\":\"pipeline\",\"partitions\":["
    "{\"id\":0,\"device\":\"gpu0\",\"logical_ids\":[0],\"nodes\":[\"a\",\"b\"],"
    "\"memory_bytes\":3000,\"param_bytes\":1000,\"compute_ms\":2.0,\"transfer_in_bytes\":500,"
    "\"time_ms\":2.5,\"inputs\":[],\"outputs\":[],\"parents\":[],\"children\":[1]},"
    "{\"id\":1,\"device\":\"gpu1\",\"logical_ids\":[1],\"nodes\":[\"c\"],"
    "\"memory_bytes\":2000,\"param_bytes\":1500,\"compute_ms\":4.0,\"transfer_in_bytes\":100,"
    "\"time_ms\":4.25,\"inputs\":[],\"outputs\":[],\"parents\":[0],\"children\":[]}],"
    "\"balance\":[2,1],\"boundaries\":[],\"tied_params\":[],"
    "\"summary\":{\"partitions\":2,\"bottleneck_ms\":4.25,\"total_ms\":6.75,"
    "\"transfer_bytes\":600,\"peak_memory_bytes\":3000,\"optimal\":true}}";

static char *dump(json_t *doc)
{
    char *s = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(doc);
    assert_non_null(s);
    return s;
}

static char *svg_of(const char *json)
{
    partd_buf b;
    partd_buf_init(&b);
    char err[256];
    int rc = partd_show_svg(json, strlen(json), &b, err, sizeof err);
    if (rc != PARTD_OK)
        fail_msg("partd_show_svg: %s", err);
    return partd_buf_take(&b, NULL);
}

static char *text_of(const char *json)
{
    partd_buf b;
    partd_buf_init(&b);
    char err[256];
    int rc = partd_show_text(json, strlen(json), &b, err, sizeof err);
    if (rc != PARTD_OK)
        fail_msg("partd_show_text: %s", err);
    return partd_buf_take(&b, NULL);
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* Tags nest and close, attribute values are quoted, and no '&' starts
 * anything but an entity: the XML well-formedness a browser insists on. */
static void assert_well_formed(const char *svg)
{
    const char *stack[64];
    size_t depth = 0, lens[64];
    assert_true(strncmp(svg, "<svg xmlns=\"http://www.w3.org/2000/svg\"", 39) == 0);
    for (const char *p = svg; *p; p++) {
        if (*p == '&') {
            assert_true(strncmp(p, "&amp;", 5) == 0 || strncmp(p, "&lt;", 4) == 0 ||
                        strncmp(p, "&gt;", 4) == 0 || strncmp(p, "&quot;", 6) == 0 ||
                        strncmp(p, "&#39;", 5) == 0);
            continue;
        }
        if (*p != '<')
            continue;
        const char *end = strchr(p, '>');
        assert_non_null(end);
        for (const char *q = p + 1; q < end; q++)
            assert_true(*q != '<');
        if (p[1] == '/') {
            assert_true(depth > 0);
            depth--;
            assert_memory_equal(p + 2, stack[depth], lens[depth]);
        } else if (end[-1] != '/') {
            assert_true(depth < 64);
            stack[depth] = p + 1;
            lens[depth] = strcspn(p + 1, " >");
            depth++;
        }
        p = end;
    }
    assert_int_equal(depth, 0);
    /* Self-contained: no scripts, no links, no other namespace. */
    assert_null(strstr(svg, "<script"));
    assert_null(strstr(svg, "href"));
    assert_int_equal(count(svg, "http"), 1);
}

static void test_pipeline_svg_is_well_formed(void **state)
{
    (void)state;
    char *svg = svg_of(PIPELINE);
    assert_well_formed(svg);
    assert_non_null(strstr(svg, "memory (KiB)"));
    assert_non_null(strstr(svg, "time (ms)"));
    assert_non_null(strstr(svg, ">gpu1<"));
    /* No device memory in a v1 result: no device box, an absolute scale. */
    assert_int_equal(count(svg, "<rect class=\"devmem\""), 0);
    assert_non_null(strstr(svg, "absolute scale"));
    assert_int_equal(count(svg, "class=\"fwd\""), 0);
    free(svg);
}

/* Sums the widths of the memory segments drawn in the row at height y. */
static double memory_width(const char *svg, const char *y)
{
    static const char *const cls[] = {"param", "act", "recv"};
    double total = 0;
    for (int k = 0; k < 3; k++) {
        char pat[64];
        snprintf(pat, sizeof pat, "<rect class=\"%s\" x=", cls[k]);
        for (const char *p = strstr(svg, pat); p; p = strstr(p + 1, pat)) {
            double x, w;
            char ry[16];
            if (sscanf(strchr(p, 'x'), "x=\"%lf\" y=\"%15[0-9.]\" width=\"%lf\"", &x, ry, &w) == 3 &&
                strcmp(ry, y) == 0)
                total += w;
        }
    }
    return total;
}

static void test_memory_bars_share_one_scale(void **state)
{
    (void)state;
    char *svg = svg_of(PIPELINE);
    /* Rows of the two stages (3000 and 2000 bytes), after the legend's swatch. */
    const char *legend = strstr(svg, "<rect class=\"param\" x=");
    const char *row0 = strstr(legend + 1, "<rect class=\"param\" x=");
    const char *row1 = strstr(row0 + 1, "<rect class=\"param\" x=");
    assert_non_null(row1);
    char y0[16], y1[16];
    assert_int_equal(sscanf(strstr(row0, "y=\""), "y=\"%15[0-9.]", y0), 1);
    assert_int_equal(sscanf(strstr(row1, "y=\""), "y=\"%15[0-9.]", y1), 1);
    double w0 = memory_width(svg, y0), w1 = memory_width(svg, y1);
    assert_true(w0 > 0 && w1 > 0);
    assert_true(fabs(w0 / w1 - 1.5) < 0.01);
    free(svg);
}

static void test_summary_results_without_nodes(void **state)
{
    (void)state;
    json_t *doc = json_loads(PIPELINE, 0, NULL);
    json_object_del(json_array_get(json_object_get(doc, "partitions"), 0), "nodes");
    char *json = dump(doc);
    char *text = text_of(json);
    assert_non_null(strstr(text, "    0  gpu0         -    2.93 KiB"));
    free(text);
    char *svg = svg_of(json);
    assert_well_formed(svg);
    free(svg);
    free(json);
}

static void test_names_are_escaped(void **state)
{
    (void)state;
    json_t *doc = training_doc(2, 2, "1f1b", 4);
    json_object_set_new(json_array_get(json_object_get(doc, "partitions"), 1), "device",
                        json_string("<g&\"'>\x01"));
    char *json = dump(doc);
    char *svg = svg_of(json);
    assert_well_formed(svg);
    assert_non_null(strstr(svg, "&lt;g&amp;&quot;&#39;&gt;\xEF\xBF\xBD"));
    assert_null(strstr(svg, "<g&"));
    char *text = text_of(json);
    assert_non_null(strstr(text, "<g&\"'>?"));
    assert_null(strchr(text, '\x01'));
    free(text);
    free(svg);
    free(json);
}

static void test_same_result_same_bytes(void **state)
{
    (void)state;
    char *json = dump(training_doc(5, 7, "gpipe", 50));
    char *a = svg_of(json);
    /* A locale with a decimal comma changes nothing. */
    const char *loc = setlocale(LC_NUMERIC, "de_DE.UTF-8");
    char *b = svg_of(json);
    if (loc)
        setlocale(LC_NUMERIC, "C");
    assert_string_equal(a, b);
    /* No decimal comma anywhere (this picture has no point lists). */
    for (const char *p = strchr(a, ','); p; p = strchr(p + 1, ','))
        assert_false(p[-1] >= '0' && p[-1] <= '9' && p[1] >= '0' && p[1] <= '9');
    free(a);
    free(b);
    free(json);
}

typedef struct block {
    size_t stage, mb;
    int bwd;
    double x, w;
} block;

/* Reads every fwd/bwd block drawn. */
static block *blocks_of(const char *svg, size_t *n)
{
    size_t cap = count(svg, "data-stage=");
    block *v = calloc(cap + 1, sizeof *v);
    *n = 0;
    for (const char *p = strstr(svg, "<rect class=\""); p; p = strstr(p + 1, "<rect class=\"")) {
        block k;
        char cls[8];
        if (sscanf(p, "<rect class=\"%3[a-z]\" data-stage=\"%zu\" data-microbatch=\"%zu\" x=\"%lf\" "
                      "y=\"%*[0-9.]\" width=\"%lf\"",
                   cls, &k.stage, &k.mb, &k.x, &k.w) != 5)
            continue;
        k.bwd = strcmp(cls, "bwd") == 0;
        assert_true(k.bwd || strcmp(cls, "fwd") == 0);
        v[(*n)++] = k;
    }
    return v;
}

static const block *find(const block *v, size_t n, size_t s, size_t m, int bwd)
{
    for (size_t i = 0; i < n; i++)
        if (v[i].stage == s && v[i].mb == m && v[i].bwd == bwd)
            return &v[i];
    fail_msg("no block for stage %zu microbatch %zu", s, m);
    return NULL;
}

static int by_x(const void *a, const void *b)
{
    const block *x = a, *y = b;
    return (x->x > y->x) - (x->x < y->x);
}

static void check_drawn_timeline(size_t S, size_t M, const char *schedule)
{
    char *json = dump(training_doc(S, (long)M, schedule, 40));
    char *svg = svg_of(json);
    assert_well_formed(svg);
    assert_int_equal(count(svg, "<rect class=\"fwd\" data-stage="), S * M);
    assert_int_equal(count(svg, "<rect class=\"bwd\" data-stage="), S * M);
    size_t n;
    block *v = blocks_of(svg, &n);
    assert_int_equal(n, 2 * S * M);
    uint32_t *ops = malloc(2 * M * sizeof *ops);
    block *lane = malloc(2 * M * sizeof *lane);
    for (size_t s = 0; s < S; s++) {
        for (size_t m = 0; m < M; m++) {
            const block *f = find(v, n, s, m, 0), *b = find(v, n, s, m, 1);
            lane[2 * m] = *f;
            lane[2 * m + 1] = *b;
            assert_true(b->x >= f->x + f->w - EPS); /* its own forward first */
            if (s > 0) {
                const block *in = find(v, n, s - 1, m, 0);
                assert_true(f->x >= in->x + in->w - EPS);
            }
            if (s + 1 < S) {
                const block *grad = find(v, n, s + 1, m, 1);
                assert_true(b->x >= grad->x + grad->w - EPS);
            }
        }
        /* Left to right, the stage's blocks follow the schedule, apart. */
        qsort(lane, 2 * M, sizeof *lane, by_x);
        show_schedule_order(S, M, strcmp(schedule, "1f1b") == 0, s, ops);
        for (size_t k = 0; k < 2 * M; k++) {
            assert_int_equal(lane[k].mb, SHOW_OP_MB(ops[k]));
            assert_int_equal(lane[k].bwd, (int)SHOW_OP_IS_BWD(ops[k]));
            if (k)
                assert_true(lane[k].x >= lane[k - 1].x + lane[k - 1].w - EPS);
        }
    }
    free(lane);
    free(ops);
    free(v);
    free(svg);
    free(json);
}

static void test_training_timeline_gpipe(void **state)
{
    (void)state;
    check_drawn_timeline(4, 6, "gpipe");
    check_drawn_timeline(1, 3, "gpipe");
}

static void test_training_timeline_1f1b(void **state)
{
    (void)state;
    check_drawn_timeline(4, 6, "1f1b");
    check_drawn_timeline(5, 3, "1f1b");
}

static void test_recomputation_inside_backward(void **state)
{
    (void)state;
    char *json = dump(training_doc(2, 2, "1f1b", 4));
    char *svg = svg_of(json);
    /* Stage 0 recomputes (rc = 0.5 ms), stage 1 does not: one block per
     * microbatch of stage 0, besides two legends and a time bar per stage. */
    assert_int_equal(count(svg, "<rect class=\"rc\""), 2 + 2 + 2);
    free(svg);
    free(json);
}

static void test_64_stages_1000_nodes_stay_small(void **state)
{
    (void)state;
    char *json = dump(training_doc(64, 64, "1f1b", 1000));
    char *svg = svg_of(json);
    assert_well_formed(svg);
    assert_int_equal(count(svg, "<rect class=\"fwd\" data-stage="), 64 * 64);
    assert_true(strlen(svg) < 1500 * 1000);
    assert_null(strstr(svg, ">n999<")); /* nodes are counted, not listed */
    free(svg);
    free(json);
}

static void test_many_partitions_are_grouped(void **state)
{
    (void)state;
    json_t *doc = json_loads(PIPELINE, 0, NULL);
    json_t *parts = json_object_get(doc, "partitions");
    for (int i = 0; i < 998; i++)
        json_array_append_new(parts, json_deep_copy(json_array_get(parts, 1)));
    char *json = dump(doc);
    char *svg = svg_of(json);
    assert_well_formed(svg);
    assert_true(strlen(svg) < 200 * 1000);
    assert_non_null(strstr(svg, ">0-7<"));
    assert_non_null(strstr(svg, ">group of 8<"));
    assert_non_null(strstr(svg, "rows of 8 stages"));
    char *text = text_of(json);
    assert_int_equal(count(text, "\n"), 3 + 1000 + 1);
    free(text);
    free(svg);
    free(json);
}

static void test_text_table(void **state)
{
    (void)state;
    char *json = dump(training_doc(4, 8, "1f1b", 100));
    char *text = text_of(json);
    assert_non_null(strstr(text, "partd plan: training, 4 stages\n"));
    assert_non_null(strstr(text, "1f1b, 8 microbatches"));
    assert_non_null(strstr(text, "stage  device   nodes      memory  % device"));
    assert_non_null(strstr(text, "    0  gpu0        25    3.00 GiB     37.5%"));
    assert_non_null(strstr(text, "1/3: layers.0\n"));
    assert_non_null(strstr(text, "0/3\n"));
    free(text);
    free(json);
    text = text_of(PIPELINE);
    assert_non_null(strstr(text, "    1  gpu1         1    1.95 KiB         -         4.250\n"));
    free(text);
}

static void test_sac_frontier(void **state)
{
    (void)state;
    json_t *doc = json_loads(PIPELINE, 0, NULL);
    json_t *sac = json_pack(
        "{s:s,s:{s:f,s:f},s:f,s:I,s:I,s:I,s:f,s:["
        "{s:I,s:s},{s:I,s:s,s:I,s:f,s:f},{s:I,s:s,s:I,s:f,s:f}]}",
        "status", "optimal", "ac_decisions", "h.0", 0.5, "h.1", 0.25, "recomputation_time_ms",
        3.0, "peak_memory_bytes", (json_int_t)90, "baseline_peak_memory_bytes",
        (json_int_t)200, "budget_bytes", (json_int_t)100, "gap", 0.0, "frontier",
        "budget_bytes", (json_int_t)50, "status", "infeasible", "budget_bytes", (json_int_t)100,
        "status", "optimal", "peak_memory_bytes", (json_int_t)90, "recomputation_time_ms", 3.0,
        "gap", 0.0, "budget_bytes", (json_int_t)150, "status", "optimal", "peak_memory_bytes",
        (json_int_t)140, "recomputation_time_ms", 1.0, "gap", 0.0);
    json_object_set_new(doc, "sac", sac);
    char *json = dump(doc);
    char *svg = svg_of(json);
    assert_well_formed(svg);
    assert_int_equal(count(svg, "<polyline"), 1);
    assert_int_equal(count(svg, "<circle class=\"dot\""), 2);
    assert_int_equal(count(svg, "<circle class=\"chosen\""), 1);
    assert_non_null(strstr(svg, "memory budget (B)"));
    char *text = text_of(json);
    assert_non_null(strstr(text, "h.0     50.0%\n"));
    assert_non_null(strstr(text, "no plan\n"));
    free(text);
    free(svg);
    free(json);
}

static void assert_rejected(const char *json, int want, const char *needle)
{
    partd_buf b;
    partd_buf_init(&b);
    char err[256];
    assert_int_equal(partd_show_svg(json, strlen(json), &b, err, sizeof err), want);
    if (!strstr(err, needle))
        fail_msg("'%s' does not say '%s'", err, needle);
    assert_null(strchr(err, '\n'));
    partd_buf_free(&b);
}

static char *replaced(const char *json, const char *from, const char *to)
{
    const char *p = strstr(json, from);
    assert_non_null(p);
    size_t n = strlen(json) - strlen(from) + strlen(to);
    char *s = malloc(n + 1);
    snprintf(s, n + 1, "%.*s%s%s", (int)(p - json), json, to, p + strlen(from));
    return s;
}

static void test_errors_name_the_member(void **state)
{
    (void)state;
    assert_rejected("{not json", PARTD_EMALFORMED, "not JSON");
    assert_rejected("[]", PARTD_EINVALID, "must be a JSON object");
    assert_rejected("{\"mode\":\"pipeline\"}", PARTD_EINVALID, "/partitions is missing");
    assert_rejected("{\"mode\":\"pipeline\",\"partitions\":[],\"summary\":{}}", PARTD_EINVALID,
                    "/partitions must be a non-empty array");
    char *s = replaced(PIPELINE, "\"memory_bytes\":2000", "\"memory_bytes\":\"2000\"");
    assert_rejected(s, PARTD_EINVALID, "/partitions/1/memory_bytes must be a number");
    free(s);
    s = replaced(PIPELINE, "\"device\":\"gpu0\",", "");
    assert_rejected(s, PARTD_EINVALID, "/partitions/0/device is missing");
    free(s);
    s = replaced(PIPELINE, "\"time_ms\":2.5", "\"time_ms\":-2.5");
    assert_rejected(s, PARTD_EINVALID, "/partitions/0/time_ms must be a number of at least 0");
    free(s);
    s = replaced(PIPELINE, "\"mode\":\"pipeline\"", "\"mode\":\"training\"");
    assert_rejected(s, PARTD_EINVALID, "/summary/microbatches is missing");
    free(s);
    json_t *doc = training_doc(2, 2, "1f1b", 4);
    json_object_del(json_array_get(json_object_get(doc, "partitions"), 1), "checkpointed");
    s = dump(doc);
    assert_rejected(s, PARTD_EINVALID, "/partitions/1/checkpointed is missing");
    free(s);
    doc = training_doc(2, 2, "interleaved", 4);
    s = dump(doc);
    assert_rejected(s, PARTD_EINVALID, "/summary/schedule must be gpipe or 1f1b");
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pipeline_svg_is_well_formed),
        cmocka_unit_test(test_memory_bars_share_one_scale),
        cmocka_unit_test(test_summary_results_without_nodes),
        cmocka_unit_test(test_names_are_escaped),
        cmocka_unit_test(test_same_result_same_bytes),
        cmocka_unit_test(test_training_timeline_gpipe),
        cmocka_unit_test(test_training_timeline_1f1b),
        cmocka_unit_test(test_recomputation_inside_backward),
        cmocka_unit_test(test_64_stages_1000_nodes_stay_small),
        cmocka_unit_test(test_many_partitions_are_grouped),
        cmocka_unit_test(test_text_table),
        cmocka_unit_test(test_sac_frontier),
        cmocka_unit_test(test_errors_name_the_member),
    };
    return cmocka_run_group_tests_name("show", tests, NULL, NULL);
}
