/*
 * hash.c - graph_hash and cache_key; see hash.h.
 *
 * The canonical graph text (keys sorted, compact, ASCII, numbers as described
 * at w_real) is streamed into the digest node by node, so hashing a
 * million-node graph needs no second copy of the graph in memory. Every
 * member is written with its default filled in, so a request that spells out
 * a default hashes like one that leaves it out.
 */
#include "partd/hash.h"
#include "partd/sha256.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "partd/enums.h"
#include "partd/partd.h"
#include "partd/problem.h"
#include "partd/training_types.h"
#include "training/training.h"

#define DUMP_FLAGS (JSON_SORT_KEYS | JSON_COMPACT | JSON_ENSURE_ASCII | JSON_REAL_PRECISION(17))

static void to_hex(const unsigned char *md, unsigned n, char out[72])
{
    static const char digits[] = "0123456789abcdef";
    memcpy(out, "sha256:", 7);
    for (unsigned i = 0; i < n && i < 32; i++) {
        out[7 + 2 * i] = digits[md[i] >> 4];
        out[8 + 2 * i] = digits[md[i] & 15];
    }
    out[71] = '\0';
}

void partd_hash_digest_text(const unsigned char md[PARTD_SHA256_BYTES], char out[72])
{
    to_hex(md, PARTD_SHA256_BYTES, out);
}

int partd_hash_bytes(const void *data, size_t len, char out[72])
{
    unsigned char md[PARTD_SHA256_BYTES];
    partd_sha256 c;
    int rc = partd_sha256_init(&c);
    if (rc != PARTD_OK)
        return rc;
    partd_sha256_update(&c, data, len);
    rc = partd_sha256_final(&c, md);
    if (rc == PARTD_OK)
        to_hex(md, sizeof md, out);
    return rc;
}

/* The canonical text is written into a buffer that feeds the digest in
 * large chunks. Strings of plain printable ASCII (node names, almost always)
 * are copied verbatim; anything else is escaped by jansson. */
typedef struct digest_writer {
    partd_sha256 ctx;
    char buf[1 << 16];
    size_t n;
    int failed;
} digest_writer;

static void w_flush(digest_writer *w)
{
    if (w->n)
        partd_sha256_update(&w->ctx, w->buf, w->n);
    w->n = 0;
}

static void w_raw(digest_writer *w, const char *s, size_t len)
{
    if (len > sizeof w->buf - w->n) {
        w_flush(w);
        if (len > sizeof w->buf) {
            partd_sha256_update(&w->ctx, s, len);
            return;
        }
    }
    memcpy(w->buf + w->n, s, len);
    w->n += len;
}

static void w_lit(digest_writer *w, const char *s)
{
    w_raw(w, s, strlen(s));
}

#define ONES UINT64_C(0x0101010101010101)
#define HIGH (ONES * 0x80)

/* 1 when no byte of w is below 0x20, above 0x7e, a quote or a backslash
 * (exact: the usual "has a byte less than / more than / equal to" tests). */
static inline int plain_word(uint64_t w)
{
    uint64_t below = (w - ONES * 0x20) & ~w;
    uint64_t above = (w + ONES * (127 - 0x7e)) | w;
    uint64_t q = w ^ (ONES * '"'), b = w ^ (ONES * '\\');
    uint64_t quote = (q - ONES) & ~q, backslash = (b - ONES) & ~b;
    return !((below | above | quote | backslash) & HIGH);
}

static int plain_ascii(const char *s, size_t len)
{
    size_t i = 0;
    for (uint64_t w; i + 8 <= len; i += 8) {
        memcpy(&w, s + i, 8);
        if (!plain_word(w))
            return 0;
    }
    for (; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c > 0x7e || c == '"' || c == '\\')
            return 0;
    }
    return 1;
}

static void w_str(digest_writer *w, const partd_request *r, uint32_t id)
{
    const char *s = partd_str(&r->strings, id);
    size_t len = partd_strlen(&r->strings, id);
    if (plain_ascii(s, len)) {
        w_raw(w, "\"", 1);
        w_raw(w, s, len);
        w_raw(w, "\"", 1);
        return;
    }
    json_t *js = json_stringn(s, len);
    char *text = js ? partd_problem_json_dumps(js, DUMP_FLAGS | JSON_ENCODE_ANY) : NULL;
    json_decref(js);
    if (!text) {
        w->failed = 1;
        return;
    }
    w_lit(w, text);
    free(text);
}

static void w_int(digest_writer *w, int64_t x)
{
    char tmp[24];
    int i = sizeof tmp;
    uint64_t u = x < 0 ? (uint64_t)0 - (uint64_t)x : (uint64_t)x;
    do {
        tmp[--i] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (x < 0)
        tmp[--i] = '-';
    w_raw(w, tmp + i, sizeof tmp - (size_t)i);
}

/* Doubles: the shortest decimal with at most 9 digits after the point that
 * reads back as exactly the same double (latencies are such numbers), else
 * "%.17g". Either text parses back to the same double, so distinct values
 * never share a text; glibc's "%.17g" alone costs ~10k instructions, too
 * much per node of a million-node graph. */
static void w_real(digest_writer *w, double x)
{
    static const double pow10[] = {1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9};
    if (x == 0) {
        w_lit(w, "0.0");
        return;
    }
    double ax = x < 0 ? -x : x;
    for (int k = 0; k <= 9 && ax < 1e6; k++) {
        double y = ax * pow10[k];
        if (y >= 9007199254740992.0 || y != (double)(int64_t)y)
            continue;
        int64_t digits = (int64_t)y;
        if ((double)digits / pow10[k] != ax)
            continue;
        /* "[-]<int>.<k digits, or 0>", without printf (per node) */
        if (x < 0)
            w_raw(w, "-", 1);
        w_int(w, digits / (int64_t)pow10[k]);
        int64_t frac = digits % (int64_t)pow10[k];
        char f[12] = "0";
        if (k)
            for (int i = k - 1; i >= 0; i--, frac /= 10)
                f[i] = (char)('0' + frac % 10);
        w_raw(w, ".", 1);
        w_raw(w, f, k ? (size_t)k : 1);
        return;
    }
    char tmp[40];
    int n = snprintf(tmp, sizeof tmp, "%.17g", x);
    if (!strpbrk(tmp, ".eEn") && n + 2 < (int)sizeof tmp)
        strcat(tmp, ".0");
    w_lit(w, tmp);
}

/* Keys in sorted order: backward_ms (only when given, so that graphs
 * without it keep their v1 hash), inputs, latency_ms, mem_latency_ms, module,
 * module_type (v3, only when given), name, op,
 * output_bytes, param_bytes, params, target, weight_grad_ms (v3, only when
 * given). */
static void w_node(digest_writer *w, const partd_request *r, uint32_t p)
{
    const partd_graph *g = &r->graph;
    if (g->has_backward[p]) {
        w_lit(w, "{\"backward_ms\":");
        w_real(w, g->backward_ms[p]);
        w_lit(w, ",\"inputs\":[");
    } else {
        w_lit(w, "{\"inputs\":[");
    }
    for (uint32_t k = g->in_off[p]; k < g->in_off[p + 1]; k++) {
        if (k > g->in_off[p])
            w_raw(w, ",", 1);
        w_str(w, r, g->name[g->in_idx[k]]);
    }
    w_lit(w, "],\"latency_ms\":");
    w_real(w, g->latency_ms[p]);
    w_lit(w, ",\"mem_latency_ms\":");
    w_real(w, g->mem_latency_ms[p]);
    if (g->module[p] != PARTD_NONE) {
        w_lit(w, ",\"module\":");
        w_str(w, r, g->module[p]);
    }
    if (g->module_type[p] != PARTD_NONE) {
        w_lit(w, ",\"module_type\":");
        w_str(w, r, g->module_type[p]);
    }
    w_lit(w, ",\"name\":");
    w_str(w, r, g->name[p]);
    w_lit(w, ",\"op\":\"");
    w_lit(w, partd_op_name((partd_op)g->op[p]));
    w_lit(w, "\",\"output_bytes\":");
    w_int(w, g->output_bytes[p]);
    w_lit(w, ",\"param_bytes\":");
    w_int(w, g->param_bytes[p]);
    if (g->has_params[p]) {
        w_lit(w, ",\"params\":[");
        for (uint32_t k = g->par_off[p]; k < g->par_off[p + 1]; k++) {
            w_lit(w, k > g->par_off[p] ? ",{\"bytes\":" : "{\"bytes\":");
            w_int(w, g->param_size[g->par_idx[k]]);
            w_lit(w, ",\"name\":");
            w_str(w, r, g->param_name[g->par_idx[k]]);
            w_raw(w, "}", 1);
        }
        w_raw(w, "]", 1);
    }
    if (g->target[p] != PARTD_NONE) {
        w_lit(w, ",\"target\":");
        w_str(w, r, g->target[p]);
    }
    if (g->has_weight_grad[p]) {
        w_lit(w, ",\"weight_grad_ms\":");
        w_real(w, g->weight_grad_ms[p]);
    }
    w_raw(w, "}", 1);
}

/* Nodes in request order: the order is part of what the client asked for
 * (size_based fills devices in it). batch_size only when given, so that
 * graphs without it keep their hash; it is part of the graph, as the
 * figures it qualifies are (a training plan's warnings depend on it). */
#define CANCEL_EVERY 65536 /* nodes between two looks at the cancel flag */

static int hash_graph(const partd_request *r, const char *modules_canonical,
                      const partd_cancel *cancel, char out[72])
{
    const partd_graph *g = &r->graph;
    digest_writer *w = calloc(1, sizeof *w);
    uint32_t *by_request = malloc((size_t)(g->n_nodes ? g->n_nodes : 1) * sizeof *by_request);
    int rc = PARTD_ENOMEM;
    if (!w || !by_request || partd_sha256_init(&w->ctx) != PARTD_OK)
        goto out;
    for (uint32_t p = 0; p < g->n_nodes; p++)
        by_request[g->request_index[p]] = p;
    w_lit(w, "{");
    if (g->batch_size) {
        w_lit(w, "\"batch_size\":");
        w_int(w, g->batch_size);
        w_lit(w, ",");
    }
    if (modules_canonical) {
        w_lit(w, "\"modules\":");
        w_lit(w, modules_canonical);
        w_lit(w, ",");
    }
    w_lit(w, "\"nodes\":[");
    for (uint32_t i = 0; i < g->n_nodes && !w->failed; i++) {
        if (i % CANCEL_EVERY == CANCEL_EVERY - 1 && (rc = partd_cancel_check(cancel)) != PARTD_OK)
            goto out;
        if (i)
            w_raw(w, ",", 1);
        w_node(w, r, by_request[i]);
    }
    w_lit(w, "]}");
    w_flush(w);
    unsigned char md[PARTD_SHA256_BYTES];
    if (!w->failed && partd_sha256_final(&w->ctx, md) == PARTD_OK) {
        to_hex(md, sizeof md, out);
        rc = PARTD_OK;
    }
out:
    if (w)
        partd_sha256_abort(&w->ctx);
    free(w);
    free(by_request);
    return rc;
}

static json_t *str(const partd_request *r, uint32_t id)
{
    return json_stringn(partd_str(&r->strings, id), partd_strlen(&r->strings, id));
}

static json_t *name_list(const partd_request *r, const uint32_t *ids, uint32_t n)
{
    json_t *a = json_array();
    for (uint32_t i = 0; i < n; i++)
        json_array_append_new(a, str(r, ids[i]));
    return a;
}

/* The training planner's own revision, beside PARTD_PLANNER_VERSION: 3 is
 * contract v3's step model (the timed order of PyTorch's schedules), whose
 * plans differ from revision 2's, so their cache entries are not served for
 * it. Other modes' cache keys are not affected. */
#define TRAINING_PLANNER_REVISION 3

/* The schedules allowed, in the contract's order (a name, the same name in
 * a list, and "auto" against all seven mean the same search). */
static json_t *schedule_list(const partd_training_options *t)
{
    json_t *a = json_array();
    for (int s = 0; s < PARTD_TRAINING_SCHEDULE_COUNT; s++)
        if (t->schedules >> s & 1)
            json_array_append_new(a, json_string(partd_training_schedule_name(s)));
    return a;
}

/* stages and virtual_stages "auto" when not given; unit_depth resolved by
 * the default rule, so that spelling out the default shares the cache
 * entry. */
static json_t *canonical_training(const partd_request *r)
{
    const partd_training_options *t = &r->options.training;
    uint32_t depth = t->unit_depth ? t->unit_depth : partd_training_default_depth(r);
    return json_pack("{s:I, s:o, s:o, s:f, s:I, s:o, s:s, s:s, s:o, s:f, s:f}",
                     "revision", (json_int_t)TRAINING_PLANNER_REVISION,
                     "schedule", schedule_list(t),
                     "virtual_stages", t->virtual_stages ? json_integer(t->virtual_stages)
                                                         : json_string("auto"),
                     "weight_grad_fraction", t->weight_grad_fraction,
                     "microbatches", (json_int_t)t->microbatches,
                     "stages", t->stages ? json_integer(t->stages) : json_string("auto"),
                     "device_order", partd_device_order_name(t->device_order_auto ? PARTD_DEVICE_ORDER_AUTO : PARTD_DEVICE_ORDER_GIVEN),
                     "checkpoint", partd_checkpoint_name(t->checkpoint),
                     "unit_depth", json_integer(depth),
                     "backward_factor", t->backward_factor,
                     "param_factor", t->param_factor);
}

static json_t *canonical_aot(const partd_request *r)
{
    const partd_aot_options *a = &r->options.aot;
    json_t *of = json_array(), *dev = json_array();
    for (uint32_t v = 0; a->part_of && v < r->graph.n_nodes; v++)
        if (a->part_of[v] != PARTD_NONE)
            json_array_append_new(of, json_pack("[o, I]", str(r, r->graph.name[v]),
                                                (json_int_t)a->part_id[a->part_of[v]]));
    for (uint32_t k = 0; k < a->n_parts; k++) {
        json_t *names = json_array();
        for (uint32_t i = a->dev_off[k]; i < a->dev_off[k + 1]; i++)
            json_array_append_new(names, str(r, r->devices[a->dev_idx[i]].name));
        json_array_append_new(dev, json_pack("[I, o]", (json_int_t)a->part_id[k], names));
    }
    return json_pack("{s:o, s:o}", "partition_of", of, "device_of", dev);
}

static json_t *canonical_options(const partd_request *r)
{
    const partd_options *o = &r->options;
    json_t *pipe = json_pack("{s:I, s:s, s:o, s:s, s:I, s:f}",
                             "stages", (json_int_t)o->pipeline.stages,
                             "balance_by", partd_balance_by_name(o->pipeline.balance_by),
                             "cut_after", name_list(r, o->pipeline.cut_after, o->pipeline.n_cut_after),
                             "schedule", partd_schedule_name(o->pipeline.schedule),
                             "microbatches", (json_int_t)o->pipeline.microbatches,
                             "param_factor", o->pipeline.param_factor);
    json_t *sac = json_null();
    if (o->sac.enabled) {
        json_decref(sac);
        sac = json_pack("{s:I, s:I, s:o, s:o, s:b, s:f, s:f, s:I}",
                        "memory_budget_bytes", (json_int_t)o->sac.memory_budget_bytes,
                        "world_size", (json_int_t)o->sac.world_size,
                        "ac_units", o->sac.has_ac_units
                                        ? name_list(r, o->sac.ac_units, o->sac.n_ac_units)
                                        : json_null(),
                        "fsdp_units", o->sac.has_fsdp_units
                                          ? name_list(r, o->sac.fsdp_units, o->sac.n_fsdp_units)
                                          : json_null(),
                        "op_level", o->sac.op_level,
                        "time_limit_ms", o->sac.time_limit_ms,
                        "relative_gap", o->sac.relative_gap,
                        "frontier_points", (json_int_t)o->sac.frontier_points);
    }
    json_t *doc = json_pack("{s:s, s:f, s:o, s:o}", "mode", partd_mode_name(o->mode),
                            "transfer_bytes_per_sec", o->transfer_bytes_per_sec,
                            "pipeline", pipe, "sac", sac);
    /* Only in aot_based mode: the given map, canonical (operations in
     * planning order, partitions by id). */
    if (doc && o->mode == PARTD_MODE_AOT_BASED)
        json_object_set_new(doc, "aot", canonical_aot(r));
    /* Only in training mode: every other request keeps its v1 cache_key. */
    if (doc && o->mode == PARTD_MODE_TRAINING)
        json_object_set_new(doc, "training", canonical_training(r));
    /* Only for the summary detail: a full result keeps its cache_key. */
    if (doc && o->result_detail != PARTD_RESULT_DETAIL_FULL &&
        json_object_set_new(doc, "result",
                            json_pack("{s:s}", "detail",
                                      partd_result_detail_name(o->result_detail))) != 0) {
        json_decref(doc);
        return NULL;
    }
    return doc;
}

static int hash_cache_key(const partd_request *r, char out[72])
{
    json_t *devices = json_array();
    for (uint32_t i = 0; i < r->n_devices; i++) {
        const partd_device *d = &r->devices[i];
        json_array_append_new(devices, json_pack("{s:o, s:I, s:I, s:f}",
                                                 "name", str(r, d->name),
                                                 "memory_bytes", (json_int_t)d->memory_bytes,
                                                 "logical_id", (json_int_t)d->logical_id,
                                                 "speed", d->speed));
    }
    json_t *doc = json_pack("{s:o, s:s, s:o, s:s}", "devices", devices,
                            "graph_hash", r->graph_hash,
                            "options", canonical_options(r),
                            "planner_version", PARTD_PLANNER_VERSION);
    if (!doc)
        return -1;
    char *s = partd_problem_json_dumps(doc, DUMP_FLAGS);
    json_decref(doc);
    if (!s)
        return -1;
    int rc = partd_hash_bytes(s, strlen(s), out);
    free(s);
    return rc == PARTD_OK ? 0 : -1;
}

int partd_hash_request(partd_request *req, const char *modules_canonical,
                       const partd_cancel *cancel)
{
    int rc = hash_graph(req, modules_canonical, cancel, req->graph_hash);
    if (rc != PARTD_OK)
        return rc;
    if (hash_cache_key(req, req->cache_key) != 0)
        return PARTD_ENOMEM;
    return PARTD_OK;
}
