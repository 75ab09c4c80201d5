/* gen.c - synthetic transformer-like requests; see gen.h. */
#include "gen.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct buf {
    char *s;
    size_t n, cap;
    int failed;
} buf;

static void put(buf *b, const char *fmt, ...)
{
    if (b->failed)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int w = vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
        va_end(ap);
        if (w < 0) {
            b->failed = 1;
            return;
        }
        if ((size_t)w < b->cap - b->n) {
            b->n += (size_t)w;
            return;
        }
        size_t cap = b->cap ? b->cap * 2 : 1 << 20;
        char *s = realloc(b->s, cap);
        if (!s) {
            b->failed = 1;
            return;
        }
        b->s = s;
        b->cap = cap;
    }
}

/* xorshift64*: deterministic across platforms. */
static uint64_t next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ULL;
}

static double uniform(uint64_t *s, double lo, double hi)
{
    return lo + (hi - lo) * (double)(next(s) >> 11) / 9007199254740992.0;
}

typedef struct gen {
    buf b;
    uint64_t rng;
    int first;
    long long total;      /* FX total bytes of all nodes */
    long long act;        /* activation bytes of one hidden state */
    long long hidden_sq;  /* bytes of an h x h weight */
    int identical;        /* blocks alike: latency by position in the block */
    double fixed_lat;     /* > 0: the next node's latency */
} gen;

/* One node. inputs: up to 3 names (NULL-terminated list). */
static void node(gen *g, const char *op, const char *name, long long out, const char *params,
                 long long param_bytes, const char *module, const char *in0, const char *in1,
                 const char *in2)
{
    double lat = g->fixed_lat > 0 ? g->fixed_lat : uniform(&g->rng, 0.01, 0.5);
    g->fixed_lat = 0;
    put(&g->b, "%s{\"name\":\"%s\",\"op\":\"%s\",\"output_bytes\":%lld,\"latency_ms\":%.4f",
        g->first ? "" : ",\n", name, op, out, lat);
    g->first = 0;
    if (params)
        put(&g->b, ",\"params\":[{\"name\":\"%s\",\"bytes\":%lld}]", params, param_bytes);
    else if (param_bytes)
        put(&g->b, ",\"param_bytes\":%lld", param_bytes);
    if (module)
        put(&g->b, ",\"module\":\"%s\"", module);
    const char *ins[3] = {in0, in1, in2};
    int any = 0;
    for (int i = 0; i < 3; i++)
        if (ins[i]) {
            put(&g->b, "%s\"%s\"", any ? "," : ",\"inputs\":[", ins[i]);
            any = 1;
        }
    if (any)
        put(&g->b, "]");
    put(&g->b, "}");
    g->total += out + (strcmp(op, "get_attr") == 0 ? 0 : param_bytes);
}

/* A node of a block; identical blocks give the k-th node of every block the
 * same latency. */
static void block_node(gen *g, int k, const char *op, const char *name, long long out,
                       long long param_bytes, const char *module, const char *in0,
                       const char *in1)
{
    if (g->identical)
        g->fixed_lat = 0.05 + 0.02 * k;
    node(g, op, name, out, NULL, param_bytes, module, in0, in1, NULL);
}

/* One block: 14 nodes, residual skips, q/k/v fan-out. `x` is the block
 * input's name; the output name is written into out. */
static void block(gen *g, int i, const char *x, char *out, size_t out_cap)
{
    char n[16][64], m[64];
    static const char *const names[] = {"ln1", "q", "k", "v", "scores", "softmax", "ctx", "proj",
                                        "add1", "ln2", "fc1", "gelu", "fc2", "add2"};
    for (int k = 0; k < 14; k++)
        snprintf(n[k], sizeof n[k], "h%d.%s", i, names[k]);
    long long a = g->identical ? g->act : (long long)(g->act * uniform(&g->rng, 0.8, 1.2));
    long long w = g->hidden_sq;
    snprintf(m, sizeof m, "h.%d", i);
    block_node(g, 0, "call_module", n[0], a, 8192, m, x, NULL);
    block_node(g, 1, "call_module", n[1], a, w, m, n[0], NULL);
    block_node(g, 2, "call_module", n[2], a, w, m, n[0], NULL);
    block_node(g, 3, "call_module", n[3], a, w, m, n[0], NULL);
    block_node(g, 4, "call_function", n[4], a * 2, 0, m, n[1], n[2]);
    block_node(g, 5, "call_function", n[5], a * 2, 0, m, n[4], NULL);
    block_node(g, 6, "call_function", n[6], a, 0, m, n[5], n[3]);
    block_node(g, 7, "call_module", n[7], a, w, m, n[6], NULL);
    block_node(g, 8, "call_function", n[8], a, 0, m, n[7], x);
    block_node(g, 9, "call_module", n[9], a, 8192, m, n[8], NULL);
    block_node(g, 10, "call_module", n[10], 4 * a, 4 * w, m, n[9], NULL);
    block_node(g, 11, "call_function", n[11], 4 * a, 0, m, n[10], NULL);
    block_node(g, 12, "call_module", n[12], a, 4 * w, m, n[11], NULL);
    block_node(g, 13, "call_function", n[13], a, 0, m, n[12], n[8]);
    snprintf(out, out_cap, "%s", n[13]);
}

static void devices(gen *g, const partd_gen_spec *spec)
{
    uint32_t nd = spec->n_devices ? spec->n_devices : 1;
    double each = spec->memory_slack * (double)g->total / nd;
    put(&g->b, "]},\"devices\":[");
    for (uint32_t d = 0; d < nd; d++) {
        double mem = spec->heterogeneous ? each * uniform(&g->rng, 0.7, 1.3) : each;
        double speed = spec->heterogeneous ? uniform(&g->rng, 0.5, 2.0) : 1.0;
        if (spec->two_kinds) {
            mem = each * (d < nd / 2 ? 1.3 : 0.7);
            speed = d < nd / 2 ? 2.0 : 1.0;
        }
        put(&g->b, "%s{\"name\":\"gpu%u\",\"memory_bytes\":%lld,\"speed\":%.3f}", d ? "," : "", d,
            (long long)mem + 1, speed);
    }
    put(&g->b, "],\"options\":{\"mode\":\"%s\"%s%s}}\n", spec->mode ? spec->mode : "pipeline",
        spec->extra_options ? "," : "", spec->extra_options ? spec->extra_options : "");
}

char *partd_gen_request(const partd_gen_spec *spec, size_t *len)
{
    gen g = {.rng = spec->seed * 0x9E3779B97F4A7C15ULL + 1, .first = 1,
             .identical = spec->identical_blocks};
    g.act = 512LL * 1024 * 4;        /* seq 512 x hidden 1024, fp32 */
    g.hidden_sq = 1024LL * 1024 * 4; /* 1024 x 1024 fp32 */
    uint32_t blocks = spec->n_nodes > 22 ? (spec->n_nodes - 8) / 14 : 1;
    put(&g.b, "{\"graph\":{\"name\":\"synthetic\",\"nodes\":[\n");
    node(&g, "placeholder", "input_ids", 512 * 8, NULL, 0, NULL, NULL, NULL, NULL);
    node(&g, "call_module", "wte", g.act, "wte.weight", 50257LL * 1024 * 4, "wte", "input_ids",
         NULL, NULL);
    node(&g, "get_attr", "wpe", 512LL * 1024 * 4, "wpe.weight", 512LL * 1024 * 4, NULL, NULL, NULL,
         NULL);
    node(&g, "call_function", "embed", g.act, NULL, 0, NULL, "wte", "wpe", NULL);
    char x[64] = "embed", y[64];
    for (uint32_t i = 0; i < blocks; i++) {
        block(&g, (int)i, x, y, sizeof y);
        memcpy(x, y, sizeof x);
    }
    node(&g, "call_module", "ln_f", g.act, NULL, 8192, "ln_f", x, NULL, NULL);
    node(&g, "call_module", "lm_head", 512LL * 50257 * 4, "wte.weight", 50257LL * 1024 * 4,
         "lm_head", "ln_f", NULL, NULL);
    node(&g, "output", "output", 0, NULL, 0, NULL, "lm_head", NULL, NULL);
    devices(&g, spec);
    if (g.b.failed) {
        free(g.b.s);
        return NULL;
    }
    if (len)
        *len = g.b.n;
    return g.b.s;
}
