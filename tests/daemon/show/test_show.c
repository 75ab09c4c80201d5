/* test_show.c - `partd show`'s renderers: a well-formed, self-contained,
 * deterministic SVG with escaped names; the training timeline of a v3
 * result drawn from its own schedule.actions for each of the seven
 * schedules: one block per action with its rank, stage and microbatch, in
 * its rank's order, never overlapping, after its inputs, where the step
 * model puts it, the last ending at step_ms; recomputation inside its B or
 * I; memory per rank against its device; a v2 result drawn without a
 * timeline; bounded size at 64 ranks and 1,000 nodes; the text table with
 * ranks and each rank's order; and one-sentence errors naming the member
 * by JSON Pointer. */
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "testutil.h"

#include "core/buf.h"
#include "partd/partd.h"
#include "partd/timeline.h"
#include "show/show.h"
#include "show/show_result.h"
#include "training/training_schedule.h"

#define EPS 1e-6 /* block edges are drawn exactly where the next begins */
#define X0 206.0 /* where the timeline's time 0 is */

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

/* Figures of stage j, per microbatch: uneven, a backward split into I and
 * W, recomputation on every other stage, a delay across cuts between
 * ranks. */
static partd_timeline_stage stage_figures(uint32_t j, uint32_t rank, uint32_t next_rank, int last)
{
    double f = 1.0 + 0.25 * (double)(j % 3);
    return (partd_timeline_stage){rank,
                                  f,
                                  2 * f,
                                  1.2 * f,
                                  0.8 * f,
                                  j % 2 ? 0 : 0.5 * f,
                                  !last && next_rank != rank ? 0.25 : 0.0};
}

/* A training result of contract v3 as partd writes one: schedule `name`
 * on S ranks with v stages each and M microbatches, each rank's list as
 * PyTorch's class builds it (the planner's own builder), its step and
 * busy times from the step model. */
static json_t *training_v3(const char *name, uint32_t S, uint32_t v, uint32_t M,
                           const char *checkpoint)
{
    partd_training_schedule sch = PARTD_TRAINING_GPIPE;
    assert_int_equal(partd_training_schedule_parse(name, &sch), 0);
    partd_training_lists l;
    assert_int_equal(partd_training_schedule_build(sch, S, v, M, &l), PARTD_OK);
    partd_timeline_stage *st = calloc(l.V, sizeof *st);
    partd_timeline_action *act = calloc(l.n, sizeof *act);
    for (uint32_t j = 0; j < l.V; j++)
        st[j] = stage_figures(j, partd_training_schedule_rank(sch, S, j),
                              j + 1 < l.V ? partd_training_schedule_rank(sch, S, j + 1) : 0,
                              j + 1 == l.V);
    for (uint32_t i = 0; i < l.n; i++)
        act[i] = (partd_timeline_action){l.act[i].stage, l.act[i].mb, l.act[i].kind};
    partd_checkpoint mode = PARTD_CHECKPOINT_AUTO;
    assert_int_equal(partd_checkpoint_parse(checkpoint, &mode), 0);
    partd_timeline_plan plan = {S, l.V, M, partd_timeline_checkpointed(mode, M), st, l.off, act};
    partd_timeline t;
    assert_int_equal(partd_timeline_run(&plan, &t, NULL, 0), PARTD_OK);
    json_t *parts = json_array(), *ranks = json_array(), *lists = json_array();
    for (uint32_t j = 0; j < l.V; j++) {
        json_t *units = json_array(), *ckpt = json_array();
        for (int u = 0; u < 3; u++) {
            char n[32];
            snprintf(n, sizeof n, "layers.%u", j * 3 + (uint32_t)u);
            json_array_append_new(units, json_string(n));
            if (u == 0 && st[j].recompute_ms > 0)
                json_array_append_new(ckpt, json_string(n));
        }
        char dev[32], node[32];
        snprintf(dev, sizeof dev, "gpu%u", st[j].rank);
        snprintf(node, sizeof node, "n%u", j);
        double time = st[j].forward_ms + st[j].backward_ms + st[j].recompute_ms;
        json_array_append_new(
            parts,
            json_pack("{s:I,s:s,s:[I],s:[s],s:I,s:I,s:I,s:f,s:I,s:f,s:[],s:[],s:[],s:[],"
                      "s:I,s:o,s:o,s:f,s:f,s:f,s:f,s:f,s:f,s:I,s:I,s:I}",
                      "id", (json_int_t)j, "device", dev, "logical_ids", (json_int_t)j, "nodes",
                      node, "memory_bytes", (json_int_t)(1 + j % 3) << 28, "device_memory_bytes",
                      (json_int_t)8 << 30, "param_bytes", (json_int_t)1 << 26, "compute_ms", time,
                      "transfer_in_bytes", (json_int_t)(j ? 1 << 20 : 0), "time_ms", time, "inputs",
                      "outputs", "parents", "children", "rank", (json_int_t)st[j].rank, "units",
                      units, "checkpointed", ckpt, "forward_ms", st[j].forward_ms, "backward_ms",
                      st[j].backward_ms, "input_grad_ms", st[j].input_grad_ms, "weight_grad_ms",
                      st[j].weight_grad_ms, "recompute_ms", st[j].recompute_ms, "send_ms",
                      st[j].send_ms, "param_memory_bytes", (json_int_t)1 << 28,
                      "input_memory_bytes", (json_int_t)1 << 20, "activation_memory_bytes",
                      (json_int_t)1 << 24));
    }
    double sum = 0, max = 0;
    for (uint32_t r = 0; r < S; r++) {
        json_t *list = json_array(), *ids = json_array();
        for (uint32_t i = l.off[r]; i < l.off[r + 1]; i++) {
            char a[24];
            partd_training_action_name(&l.act[i], a, sizeof a);
            json_array_append_new(list, json_string(a));
        }
        for (uint32_t j = 0; j < l.V; j++)
            if (st[j].rank == r)
                json_array_append_new(ids, json_integer(j));
        json_array_append_new(lists, list);
        char dev[32];
        snprintf(dev, sizeof dev, "gpu%u", r);
        json_array_append_new(ranks, json_pack("{s:I,s:s,s:o,s:I,s:I,s:f}", "rank", (json_int_t)r,
                                               "device", dev, "stages", ids, "memory_bytes",
                                               (json_int_t)(2 + r % 5) << 30, "device_memory_bytes",
                                               (json_int_t)8 << 30, "busy_ms", t.busy[r]));
        sum += t.busy[r];
        max = fmax(max, t.busy[r]);
    }
    json_t *doc = json_pack(
        "{s:s,s:o,s:[],s:o,s:{s:s,s:I,s:o},s:{s:I,s:f,s:f,s:I,s:I,s:b,s:f,s:f,s:I,s:I,s:I,s:s,"
        "s:s,s:I,s:f,s:f}}",
        "mode", "training", "partitions", parts, "tied_params", "ranks", ranks, "schedule", "name",
        name, "virtual_stages", (json_int_t)l.v, "actions", lists, "summary", "partitions",
        (json_int_t)l.V, "bottleneck_ms", max, "total_ms", t.step_ms, "transfer_bytes",
        (json_int_t)0, "peak_memory_bytes", (json_int_t)6 << 30, "optimal", 1, "step_ms", t.step_ms,
        "bubble_fraction", 1 - sum / ((double)S * t.step_ms), "stages", (json_int_t)S,
        "virtual_stages", (json_int_t)l.v, "microbatches", (json_int_t)M, "schedule", name,
        "checkpoint", checkpoint, "unit_depth", (json_int_t)2, "gap", 0.0, "lower_bound_ms",
        t.step_ms);
    assert_non_null(doc);
    partd_timeline_free(&t);
    partd_training_lists_free(&l);
    free(st);
    free(act);
    return doc;
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
    json_t *doc = training_v3("1F1B", 2, 1, 2, "auto");
    json_object_set_new(json_array_get(json_object_get(doc, "partitions"), 1), "device",
                        json_string("<g&\"'>\x01"));
    json_object_set_new(json_array_get(json_object_get(doc, "ranks"), 1), "device",
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
    char *json = dump(training_v3("ZBVZeroBubble", 5, 2, 7, "except_last"));
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
    char kind;
    size_t rank, stage, mb;
    double x, y, w, h;
} block;

/* Reads every action's block drawn, in document order. */
static block *blocks_of(const char *svg, size_t *n)
{
    size_t cap = count(svg, "data-stage=");
    block *v = calloc(cap + 1, sizeof *v);
    *n = 0;
    for (const char *p = strstr(svg, "<rect class=\""); p; p = strstr(p + 1, "<rect class=\"")) {
        block k;
        char cls[4];
        if (sscanf(p,
                   "<rect class=\"%3[A-Za-z]\" data-rank=\"%zu\" data-stage=\"%zu\" "
                   "data-microbatch=\"%zu\" x=\"%lf\" y=\"%lf\" width=\"%lf\" height=\"%lf\"",
                   cls, &k.rank, &k.stage, &k.mb, &k.x, &k.y, &k.w, &k.h) != 8)
            continue;
        assert_int_equal(strlen(cls), 1);
        assert_non_null(strchr("FBIW", cls[0]));
        k.kind = cls[0];
        v[(*n)++] = k;
    }
    assert_int_equal(*n, cap);
    return v;
}

static const block *find(const block *v, size_t n, char kind, size_t s, size_t m)
{
    for (size_t i = 0; i < n; i++)
        if (v[i].kind == kind && v[i].stage == s && v[i].mb == m)
            return &v[i];
    return NULL;
}

/* The one block of action a ("3F1"). */
static const block *action_block(const block *v, size_t n, const char *a)
{
    partd_timeline_action x;
    assert_true(partd_timeline_action_parse(a, &x));
    const block *found = NULL;
    for (size_t i = 0; i < n; i++)
        if (v[i].kind == "FBIW"[x.kind] && v[i].stage == x.stage && v[i].mb == x.microbatch) {
            assert_null(found);
            found = &v[i];
        }
    if (!found)
        fail_msg("no block for %s", a);
    return found;
}

/* The x of the timeline's step_ms mark: the last dashed mark drawn. */
static double step_mark(const char *svg)
{
    const char *last = NULL;
    for (const char *p = strstr(svg, "<line class=\"mark\""); p;
         p = strstr(p + 1, "<line class=\"mark\""))
        last = p;
    assert_non_null(last);
    double x;
    assert_int_equal(sscanf(last, "<line class=\"mark\" x1=\"%lf\"", &x), 1);
    return x;
}

static double picture_height(const char *svg)
{
    double h;
    assert_int_equal(sscanf(strstr(svg, "height=\""), "height=\"%lf\"", &h), 1);
    return h;
}

/* Block b waits for block in (plus the delay d): never starts before. */
static void after(const block *b, const block *in, double d, double scale)
{
    assert_non_null(in);
    assert_true(b->x >= in->x + in->w + d * scale - 0.11);
}

/* The picture of a v3 result against its own actions and the step model. */
static void check_timeline(const char *name, uint32_t S, uint32_t v, uint32_t M,
                           const char *checkpoint)
{
    json_t *doc = training_v3(name, S, v, M, checkpoint);
    json_t *lists = json_object_get(json_object_get(doc, "schedule"), "actions");
    json_t *parts = json_object_get(doc, "partitions");
    double step = json_number_value(json_object_get(json_object_get(doc, "summary"), "step_ms"));
    char *json = json_dumps(doc, JSON_COMPACT);
    char *svg = svg_of(json);
    assert_well_formed(svg);
    size_t n, total = 0;
    block *v_ = blocks_of(svg, &n);
    double mark = step_mark(svg), scale = (mark - X0) / step, height = picture_height(svg);
    double last = 0;
    for (size_t r = 0; r < S; r++) {
        json_t *list = json_array_get(lists, r);
        double top = 1e9, bottom = 0;
        const block *prev = NULL;
        for (size_t i = 0; i < json_array_size(list); i++) {
            /* one block per action, on its rank, in the order of its list */
            const block *b = action_block(v_, n, json_string_value(json_array_get(list, i)));
            assert_int_equal(b->rank, r);
            assert_true(b->x >= X0 - 0.05 && b->x + b->w <= 960 && b->y + b->h <= height);
            if (prev)
                assert_true(b->x >= prev->x + prev->w - EPS); /* one action at a time */
            prev = b;
            top = fmin(top, b->y);
            bottom = fmax(bottom, b->y + b->h);
            last = fmax(last, b->x + b->w);
        }
        total += json_array_size(list);
        /* ranks are rows of their own, in rank order */
        for (size_t k = 0; k < n; k++)
            if (v_[k].rank > r)
                assert_true(v_[k].y >= bottom);
        (void)top;
    }
    assert_int_equal(n, total);
    /* the last block ends at the result's step_ms */
    assert_true(fabs(last - mark) < 0.051);
    /* every input there before its action starts */
    for (size_t k = 0; k < n; k++) {
        const block *b = &v_[k];
        json_t *st = json_array_get(parts, b->stage);
        if (b->kind == 'F' && b->stage > 0) {
            json_t *prev = json_array_get(parts, b->stage - 1);
            after(b, find(v_, n, 'F', b->stage - 1, b->mb),
                  json_number_value(json_object_get(prev, "send_ms")), scale);
        }
        if (b->kind == 'B' || b->kind == 'I') {
            after(b, find(v_, n, 'F', b->stage, b->mb), 0, scale);
            if (b->stage + 1 < json_array_size(parts)) {
                const block *g = find(v_, n, 'B', b->stage + 1, b->mb);
                after(b, g ? g : find(v_, n, 'I', b->stage + 1, b->mb),
                      json_number_value(json_object_get(st, "send_ms")), scale);
            }
        }
        if (b->kind == 'W')
            after(b, find(v_, n, 'I', b->stage, b->mb), 0, scale);
    }
    free(v_);
    free(svg);
    free(json);
    json_decref(doc);
}

static void test_timeline_of_every_schedule(void **state)
{
    (void)state;
    check_timeline("GPipe", 4, 1, 6, "auto");
    check_timeline("GPipe", 1, 1, 3, "never");
    check_timeline("1F1B", 4, 1, 8, "except_last");
    check_timeline("1F1B", 3, 1, 3, "auto");
    check_timeline("LoopedBFS", 3, 2, 4, "auto");
    check_timeline("Interleaved1F1B", 2, 3, 4, "auto");
    check_timeline("Interleaved1F1B", 4, 2, 8, "always");
    check_timeline("InterleavedZeroBubble", 4, 2, 8, "auto");
    check_timeline("InterleavedZeroBubble", 3, 2, 5, "never");
    check_timeline("ZBVZeroBubble", 4, 2, 8, "auto");
    check_timeline("ZBVZeroBubble", 2, 2, 1, "auto");
    check_timeline("DualPipeV", 4, 2, 8, "auto");
    check_timeline("DualPipeV", 2, 2, 6, "except_last");
    /* legible at 8 ranks x 4 stages each x 32 microbatches */
    check_timeline("Interleaved1F1B", 8, 4, 32, "auto");
    check_timeline("InterleavedZeroBubble", 8, 4, 32, "auto");
}

/* Blocks where the step model puts them: x = time 0 + start x scale. */
static void test_blocks_at_the_step_models_times(void **state)
{
    (void)state;
    json_t *doc = training_v3("InterleavedZeroBubble", 3, 2, 6, "auto");
    char *json = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    partd__show_result r;
    char err[256];
    assert_int_equal(partd__show_result_parse(json, strlen(json), &r, err, sizeof err), PARTD_OK);
    char *svg = svg_of(json);
    size_t n;
    block *v = blocks_of(svg, &n);
    double scale = (step_mark(svg) - X0) / r.step_ms;
    assert_int_equal(n, r.timeline.n);
    for (size_t i = 0; i < n; i++) {
        char a[32];
        snprintf(a, sizeof a, "%u%c%u", r.actions[i].stage, "FBIW"[r.actions[i].kind],
                 r.actions[i].microbatch);
        const block *b = action_block(v, n, a);
        assert_true(fabs(b->x - (X0 + r.timeline.start[i] * scale)) <= 0.11);
        assert_true(fabs(b->x + b->w - (X0 + r.timeline.end[i] * scale)) <= 0.11);
    }
    free(v);
    free(svg);
    free(json);
    partd__show_result_free(&r);
}

static void test_recomputation_inside_backward(void **state)
{
    (void)state;
    /* GPipe on two ranks: stage 0 recomputes (0.5 ms) in each checkpointed
     * backward, stage 1 does not; except_last leaves microbatch 2 alone */
    char *json = dump(training_v3("GPipe", 2, 1, 3, "except_last"));
    char *svg = svg_of(json);
    const char *tl = strstr(svg, "One training step");
    assert_non_null(tl);
    assert_int_equal(count(tl, "<rect class=\"recomp\""), 1 + 2); /* the legend's, 0B0, 0B1 */
    size_t n;
    block *v = blocks_of(svg, &n);
    const block *b0 = find(v, n, 'B', 0, 0);
    char at[64];
    snprintf(at, sizeof at, "<rect class=\"recomp\" x=\"%g\"", b0->x);
    assert_non_null(strstr(tl, at)); /* at the start of its backward */
    free(v);
    free(svg);
    free(json);
}

static void test_memory_per_rank_against_its_device(void **state)
{
    (void)state;
    char *json = dump(training_v3("1F1B", 4, 1, 8, "auto"));
    char *svg = svg_of(json);
    assert_non_null(strstr(svg, "Memory and busy time per rank"));
    /* rank 3: 5 GiB of 8 GiB */
    assert_non_null(strstr(svg, ">5.00 GiB (62.5%)<"));
    assert_int_equal(count(svg, "<rect class=\"peak\""), 1 + 4);
    assert_non_null(strstr(svg, ">stage <tspan>2: layers.6..layers.8 (1 ckpt)</tspan></text>"));
    free(svg);
    free(json);
}

static void test_v2_results_draw_without_timeline(void **state)
{
    (void)state;
    char *json = dump(training_doc(3, 4, "1f1b", 12));
    char *svg = svg_of(json);
    assert_well_formed(svg);
    assert_int_equal(count(svg, "data-microbatch"), 0);
    assert_non_null(strstr(svg, "no schedule.actions"));
    char *text = text_of(json);
    assert_non_null(strstr(text, "1f1b, 4 microbatches"));
    assert_null(strstr(text, "actions, each rank's"));
    free(text);
    free(svg);
    free(json);
}

static void test_64_ranks_1000_nodes_stay_small(void **state)
{
    (void)state;
    json_t *doc = training_v3("1F1B", 64, 1, 64, "auto");
    json_t *parts = json_object_get(doc, "partitions");
    for (size_t s = 0; s < 64; s++) {
        json_t *names = json_array();
        for (size_t i = s * 1000 / 64; i < (s + 1) * 1000 / 64; i++) {
            char nm[32];
            snprintf(nm, sizeof nm, "n%zu", i);
            json_array_append_new(names, json_string(nm));
        }
        json_object_set_new(json_array_get(parts, s), "nodes", names);
    }
    char *json = dump(doc);
    char *svg = svg_of(json);
    assert_well_formed(svg);
    assert_int_equal(count(svg, "<rect class=\"F\" data-rank="), 64 * 64);
    /* the timeline about 1.47 MB, the units panel 32 KB (192 boxes) */
    assert_true(strlen(svg) < 1600 * 1000);
    assert_null(strstr(svg, ">n999<")); /* nodes are counted, not listed */
    free(svg);
    free(json);
}

/* Past 65,536 actions the timeline is not drawn block by block; the
 * table still lists every rank's order. */
static void test_too_many_actions_are_not_drawn(void **state)
{
    (void)state;
    char *json = dump(training_v3("GPipe", 2, 1, 16400, "never"));
    char *svg = svg_of(json);
    assert_well_formed(svg);
    assert_int_equal(count(svg, "data-microbatch"), 0);
    assert_non_null(strstr(svg, "not drawn action by action"));
    char *text = text_of(json);
    assert_non_null(strstr(text, "  rank 1: 1F0-16399 1B0-16399\n"));
    free(text);
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

/* The picture says what its bars hold (a training stage's parameter bar is
 * param_factor x its parameters; elsewhere the parameters once, the rest of
 * param_factor's copies in the rest) and shows each stage's units, the
 * checkpointed ones marked, not only the table. */
static void test_pictures_say_what_they_show(void **state)
{
    (void)state;
    /* param_memory_bytes is 4 x param_bytes; stages 0 and 2 recompute */
    char *json = dump(training_v3("1F1B", 3, 1, 4, "auto"));
    char *svg = svg_of(json);
    assert_well_formed(svg);
    assert_non_null(strstr(svg, "parameters x 4.0 (param_factor: weights, gradients, optimizer "
                                "state)"));
    assert_non_null(strstr(svg, ">params x param_factor<"));
    assert_null(strstr(svg, "counted once"));
    assert_non_null(strstr(svg, ">Units per stage<"));
    assert_int_equal(count(svg, " data-unit="), 9);
    /* stages 0 and 2 checkpoint their first unit */
    assert_int_equal(count(svg, "<rect class=\"unit ckpt\" data-unit="), 2);
    assert_non_null(strstr(svg, "<g class=\"units\" data-units-of=\"2\">\n<rect class=\"unit ckpt\" "
                                "data-unit=\"layers.6\""));
    assert_non_null(strstr(svg, "<g class=\"units\" data-units-of=\"1\">\n<rect class=\"unit\" "
                                "data-unit=\"layers.3\""));
    assert_non_null(strstr(svg, "<title>layers.6 (checkpointed)</title>"));
    assert_non_null(strstr(svg, ">1/3 checkpointed<"));
    free(svg);
    free(json);
    /* unit names are escaped in attributes, tooltips and labels */
    json_t *doc = training_v3("1F1B", 2, 1, 2, "auto");
    json_array_set_new(json_object_get(json_array_get(json_object_get(doc, "partitions"), 1),
                                       "units"),
                       0, json_string("<u>&\"'"));
    json = dump(doc);
    svg = svg_of(json);
    assert_well_formed(svg);
    assert_non_null(strstr(svg, "data-unit=\"&lt;u&gt;&amp;&quot;&#39;\""));
    free(svg);
    free(json);
    svg = svg_of(PIPELINE);
    assert_non_null(strstr(svg, "parameters counted once (1x); their other param_factor copies "
                                "(gradients, optimizer state) are in the rest"));
    assert_null(strstr(svg, "Units per stage"));
    free(svg);
}

static void test_text_table(void **state)
{
    (void)state;
    char *json = dump(training_v3("LoopedBFS", 2, 2, 4, "auto"));
    char *text = text_of(json);
    assert_non_null(strstr(text, "partd plan: training, 4 stages on 2 ranks\n"));
    assert_non_null(strstr(text, "LoopedBFS, 2 stages per rank, 4 microbatches"));
    assert_non_null(strstr(text, "(the step model): "));
    assert_non_null(strstr(text, " ms, the result's step_ms\n"));
    /* ranks: device, memory against the device's, busy, stages */
    assert_non_null(strstr(
        text, " rank  device      memory   of device  % device       busy ms    idle  stages\n"));
    assert_non_null(strstr(
        text, "    1  gpu1      3.00 GiB    8.00 GiB     37.5%        27.000   29.9%  1 3\n"));
    /* stages: rank, figures, units, checkpointed */
    assert_non_null(
        strstr(text, "rank      fwd ms      bwd ms    igrad ms    wgrad ms   recomp ms"));
    assert_non_null(strstr(text, "3: layers.0..layers.2   1/3: layers.0\n"));
    assert_non_null(strstr(text, "3: layers.9..layers.11  0/3\n"));
    /* each rank's order, runs written compactly: LoopedBFS runs backwards
     * from the last microbatch */
    assert_non_null(strstr(text, "  rank 0: 0F0-3 2F0-3 2B3-0 0B3-0\n"));
    assert_non_null(strstr(text, "  rank 1: 1F0-3 3F0-3 3B3-0 1B3-0\n"));
    free(text);
    free(json);
    json = dump(training_v3("1F1B", 2, 1, 3, "auto"));
    text = text_of(json);
    assert_non_null(strstr(text, "  rank 0: 0F0-1 0B0 0F2 0B1-2\n"));
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
    /* a request says what it is and what makes a result of it */
    assert_rejected("{\"graph\":{\"nodes\":[]},\"devices\":[]}", PARTD_EINVALID,
                    "this is a request (it has /graph); `partd plan REQUEST.json` makes a "
                    "result from it");
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
    assert_rejected(s, PARTD_EINVALID, "/summary/schedule must name a training schedule");
    free(s);
    /* v3: the actions must be a plan */
    doc = training_v3("1F1B", 2, 1, 2, "auto");
    json_array_set_new(
        json_array_get(json_object_get(json_object_get(doc, "schedule"), "actions"), 1), 0,
        json_string("0F0"));
    s = dump(doc);
    assert_rejected(s, PARTD_EINVALID,
                    "/schedule/actions/1/0 (0F0) is on rank 1, its stage on rank 0");
    free(s);
    doc = training_v3("1F1B", 2, 1, 2, "auto");
    json_array_set_new(
        json_array_get(json_object_get(json_object_get(doc, "schedule"), "actions"), 0), 2,
        json_string("0X1"));
    s = dump(doc);
    assert_rejected(s, PARTD_EINVALID,
                    "/schedule/actions/0/2 must be an action as PyTorch writes it");
    free(s);
    doc = training_v3("1F1B", 2, 1, 2, "auto");
    json_object_del(doc, "ranks");
    s = dump(doc);
    assert_rejected(s, PARTD_EINVALID, "/ranks is missing");
    free(s);
    doc = training_v3("1F1B", 2, 1, 2, "auto");
    json_object_del(json_array_get(json_object_get(doc, "partitions"), 1), "input_grad_ms");
    s = dump(doc);
    assert_rejected(s, PARTD_EINVALID, "/partitions/1/input_grad_ms is missing");
    free(s);
    doc = training_v3("1F1B", 2, 1, 2, "auto");
    json_object_del(json_object_get(doc, "summary"), "checkpoint");
    s = dump(doc);
    assert_rejected(s, PARTD_EINVALID, "/summary/checkpoint is missing");
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
        cmocka_unit_test(test_timeline_of_every_schedule),
        cmocka_unit_test(test_blocks_at_the_step_models_times),
        cmocka_unit_test(test_recomputation_inside_backward),
        cmocka_unit_test(test_memory_per_rank_against_its_device),
        cmocka_unit_test(test_v2_results_draw_without_timeline),
        cmocka_unit_test(test_64_ranks_1000_nodes_stay_small),
        cmocka_unit_test(test_too_many_actions_are_not_drawn),
        cmocka_unit_test(test_many_partitions_are_grouped),
        cmocka_unit_test(test_text_table),
        cmocka_unit_test(test_pictures_say_what_they_show),
        cmocka_unit_test(test_sac_frontier),
        cmocka_unit_test(test_errors_name_the_member),
    };
    return cmocka_run_group_tests_name("show", tests, NULL, NULL);
}
