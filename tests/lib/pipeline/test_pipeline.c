/*
 * test_pipeline.c - the pipeline planner (lib/pipeline*.c).
 *
 * 1. A brute-force reference: random small graphs (up to 14 operations,
 *    placeholders, get_attr nodes with and without named params, shared
 *    params, skip connections), random heterogeneous devices, random
 *    cut_after, every balance_by and schedule. The reference enumerates every
 *    split, computes every stage's figures straight from the contract's
 *    formulas on its own copy of the graph, and picks the optimum with the
 *    contract's tie breaks; the planner must return the same split with the
 *    same figures, or the same shortfall when nothing fits. Values are dyadic
 *    (latencies in eighths, speeds powers of two, 1000 / rate a power of two)
 *    so that both sides compute exactly and ties are true ties.
 * 2. Hand-computed cases: pass-through liveness, tied params, get_attr
 *    params, 1f1b memory, the infeasible report, every 422, cancellation.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "partd/cancel.h"
#include "partd/decode.h"
#include "partd/partd.h"
#include "partd/plan.h"
#include "partd/problem.h"
#include "pipeline/pipeline.h"
#include "pipeline/pipeline_model.h"
#include "pipeline/pipeline_search.h"
#include "testutil.h"

/* ---- small utilities ----------------------------------------------------- */

typedef struct buf {
    char *s;
    size_t n, cap;
} buf;

static void bprintf(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bprintf(buf *b, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int k = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        assert_true(k >= 0);
        if (b->s && b->n + (size_t)k < b->cap) {
            b->n += (size_t)k;
            return;
        }
        b->cap = (b->cap + (size_t)k + 1) * 2;
        b->s = realloc(b->s, b->cap);
        assert_non_null(b->s);
    }
}

static uint64_t rng_state;

static uint32_t rnd(uint32_t n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state % n);
}

/* Decodes JSON text, runs the pipeline planner. */
static int plan_text(const char *json, partd_request **req_out, partd_plan **plan,
                     partd_problem *pb)
{
    partd_request *req = NULL;
    partd_problem_init(pb);
    int rc = partd_request_decode(json, strlen(json), NULL, &req, pb);
    if (rc != PARTD_OK) {
        fprintf(stderr, "decode failed: %s\n%s\n", pb->detail ? pb->detail : "",
                pb->n_errors ? pb->errors[0].message : "");
        fail();
    }
    *plan = NULL;
    rc = partd_pipeline(req, NULL, plan, pb);
    *req_out = req;
    return rc;
}

static int has_error(const partd_problem *pb, const char *pointer)
{
    for (uint32_t i = 0; i < pb->n_errors; i++)
        if (strcmp(pb->errors[i].pointer, pointer) == 0)
            return 1;
    return 0;
}

/* ---- the reference's graph ----------------------------------------------- */

#define MAXN 40
#define MAXOPS 14
#define MAXIN 4
#define MAXPAR 3
#define NPARAMS 4

enum { K_PH, K_GA, K_OP, K_OUT };

typedef struct rnode {
    int kind;
    int n_in, in[MAXIN];
    int64_t out_bytes, param_bytes;
    int n_par, par[MAXPAR]; /* named params; n_par < 0: none given */
    double lat, mem_lat;
    int module;             /* block number for ops */
} rnode;

typedef struct rgraph {
    int n, m;
    rnode node[MAXN];
    int op_of_rank[MAXOPS];
    int64_t param_size[NPARAMS];
    int S, n_dev;
    double speed[5];
    int64_t memory[5];
    int balance_by, schedule, microbatches;
    double param_factor, rate;
    int n_cuts;
    int cut_node[5];  /* node whose name is given, or -1 for a module */
    int cut_module[5];
} rgraph;

static const char *balance_names[] = {"time", "memory", "params", "uniform"};
static const char *schedule_names[] = {"inference", "gpipe", "1f1b"};

/* Latency in eighths (dyadic, exact in every sum) or an arbitrary double. */
static double random_latency(int dyadic)
{
    return dyadic ? rnd(33) / 8.0 : rnd(100000) / 24999.7;
}

static void random_graph(rgraph *g, int dyadic)
{
    memset(g, 0, sizeof *g);
    int m = rnd(10) == 0 ? 1 + (int)rnd(MAXOPS) : 4 + (int)rnd(MAXOPS - 3);
    int n_ph = 1 + (int)rnd(2), n_ga = (int)rnd(3);
    for (int x = 0; x < NPARAMS; x++)
        g->param_size[x] = 1 + rnd(60);
    int n = 0, ops = 0;
    /* Placeholders first, then ops with get_attr/placeholders interleaved. */
    for (int i = 0; i < n_ph; i++) {
        rnode *v = &g->node[n++];
        v->kind = K_PH;
        v->out_bytes = rnd(80);
        v->n_par = -1;
    }
    int extra_ph = rnd(3) == 0;
    while (ops < m) {
        if ((n_ga > 0 && rnd(4) == 0) || (extra_ph && rnd(5) == 0)) {
            rnode *v = &g->node[n++];
            v->n_par = -1;
            if (n_ga > 0) {
                n_ga--;
                v->kind = K_GA;
                v->out_bytes = rnd(50);
                if (rnd(2)) {
                    v->n_par = 1 + (int)rnd(2);
                    for (int k = 0; k < v->n_par; k++)
                        v->par[k] = (int)rnd(NPARAMS);
                    if (v->n_par == 2 && v->par[0] == v->par[1])
                        v->n_par = 1;
                } else if (rnd(3) == 0) {
                    v->param_bytes = rnd(50);
                }
            } else {
                extra_ph = 0;
                v->kind = K_PH;
                v->out_bytes = rnd(80);
            }
            continue;
        }
        rnode *v = &g->node[n];
        v->kind = K_OP;
        v->n_par = -1;
        v->out_bytes = rnd(100);
        v->lat = random_latency(dyadic);
        v->mem_lat = rnd(3) == 0 ? random_latency(dyadic) : 0;
        if (rnd(4) == 0)
            v->lat = 0;
        v->module = ops / 3;
        int choice = (int)rnd(4);
        if (choice == 0) {
            v->n_par = 1 + (int)rnd(MAXPAR);
            int k = 0;
            for (int t = 0; t < v->n_par; t++) {
                int x = (int)rnd(NPARAMS), dup = 0;
                for (int u = 0; u < k; u++)
                    dup |= v->par[u] == x;
                if (!dup)
                    v->par[k++] = x;
            }
            v->n_par = k;
        } else if (choice == 1) {
            v->param_bytes = rnd(70);
        }
        /* Inputs: the previous node often (a chain), plus random earlier ones. */
        int want = 1 + (int)rnd(3);
        for (int t = 0; t < want && n > 0; t++) {
            int u = t == 0 && rnd(3) ? n - 1 : (int)rnd((uint32_t)n);
            if (g->node[u].kind == K_OUT)
                continue;
            int dup = 0;
            for (int k = 0; k < v->n_in; k++)
                dup |= v->in[k] == u;
            if (!dup && v->n_in < MAXIN)
                v->in[v->n_in++] = u;
        }
        g->op_of_rank[ops++] = n;
        n++;
    }
    rnode *o = &g->node[n++];
    o->kind = K_OUT;
    o->n_par = -1;
    o->in[o->n_in++] = g->op_of_rank[m - 1];
    if (rnd(2)) {
        int u = g->op_of_rank[rnd((uint32_t)m)];
        if (u != o->in[0])
            o->in[o->n_in++] = u;
    }
    g->n = n;
    g->m = m;

    g->n_dev = rnd(8) == 0 ? 1 : 2 + (int)rnd(4);
    int homogeneous = rnd(3) == 0;
    for (int d = 0; d < g->n_dev; d++) {
        static const double speeds[] = {0.5, 1, 2, 4}, odd_speeds[] = {0.7, 1.3, 1.9, 0.45};
        g->speed[d] = homogeneous ? 1 : dyadic ? speeds[rnd(4)] : odd_speeds[rnd(4)];
        g->memory[d] = 200 + rnd(rnd(4) == 0 ? 600 : 2000);
    }
    int max_s = g->n_dev < m ? g->n_dev : m;
    g->S = max_s - (int)rnd(max_s > 3 ? 3 : 1);
    g->balance_by = (int)rnd(4);
    g->schedule = (int)rnd(3);
    g->microbatches = 1 + (int)rnd(4);
    static const double factors[] = {1, 2, 1.5, 4};
    g->param_factor = factors[rnd(4)];
    g->rate = dyadic ? 1000.0 * (double)(1u << rnd(6)) : 1000.0 * (1 + rnd(5000)) / 77.0;
    /* cut_after: distinct positions 1..m-1, by node name or module. */
    g->n_cuts = g->S > 1 ? (int)rnd((uint32_t)g->S) : 0;
    int used[MAXOPS + 1] = {0};
    int k = 0;
    for (int t = 0; t < g->n_cuts; t++) {
        int r = (int)rnd((uint32_t)m);
        if (rnd(3) == 0) {
            /* module of op r: ends after the block's last op */
            int blk = g->node[g->op_of_rank[r]].module;
            int last = r;
            while (last + 1 < m && g->node[g->op_of_rank[last + 1]].module == blk)
                last++;
            if (last + 1 >= m || used[last + 1])
                continue;
            used[last + 1] = 1;
            g->cut_node[k] = -1;
            g->cut_module[k++] = blk;
        } else {
            if (r + 1 >= m || used[r + 1])
                continue;
            used[r + 1] = 1;
            g->cut_node[k++] = g->op_of_rank[r];
        }
    }
    g->n_cuts = k;
}

static const char *kind_name(int k)
{
    return k == K_PH ? "placeholder" : k == K_GA ? "get_attr" : k == K_OP ? "call_function"
                                                                         : "output";
}

static char *graph_json(const rgraph *g)
{
    buf b = {0};
    bprintf(&b, "{\"graph\":{\"nodes\":[");
    for (int i = 0; i < g->n; i++) {
        const rnode *v = &g->node[i];
        bprintf(&b, "%s{\"name\":\"n%d\",\"op\":\"%s\",\"inputs\":[", i ? "," : "", i,
                kind_name(v->kind));
        for (int k = 0; k < v->n_in; k++)
            bprintf(&b, "%s\"n%d\"", k ? "," : "", v->in[k]);
        bprintf(&b, "]");
        if (v->kind != K_OUT)
            bprintf(&b, ",\"output_bytes\":%lld", (long long)v->out_bytes);
        if (v->n_par >= 0) {
            bprintf(&b, ",\"params\":[");
            for (int k = 0; k < v->n_par; k++)
                bprintf(&b, "%s{\"name\":\"p%d\",\"bytes\":%lld}", k ? "," : "", v->par[k],
                        (long long)g->param_size[v->par[k]]);
            bprintf(&b, "]");
        } else if (v->param_bytes) {
            bprintf(&b, ",\"param_bytes\":%lld", (long long)v->param_bytes);
        }
        if (v->kind == K_OP)
            bprintf(&b, ",\"latency_ms\":%.17g,\"mem_latency_ms\":%.17g,\"module\":\"blk%d.op%d\"",
                    v->lat, v->mem_lat, v->module, i);
        bprintf(&b, "}");
    }
    bprintf(&b, "]},\"devices\":[");
    for (int d = 0; d < g->n_dev; d++)
        bprintf(&b, "%s{\"name\":\"d%d\",\"memory_bytes\":%lld,\"speed\":%.17g}", d ? "," : "",
                d, (long long)g->memory[d], g->speed[d]);
    bprintf(&b,
            "],\"options\":{\"mode\":\"pipeline\",\"transfer_bytes_per_sec\":%.17g,"
            "\"pipeline\":{\"stages\":%d,\"balance_by\":\"%s\",\"schedule\":\"%s\","
            "\"microbatches\":%d,\"param_factor\":%.17g,\"cut_after\":[",
            g->rate, g->S, balance_names[g->balance_by], schedule_names[g->schedule],
            g->microbatches, g->param_factor);
    for (int k = 0; k < g->n_cuts; k++) {
        if (g->cut_node[k] >= 0)
            bprintf(&b, "%s\"n%d\"", k ? "," : "", g->cut_node[k]);
        else
            bprintf(&b, "%s\"blk%d\"", k ? "," : "", g->cut_module[k]);
    }
    bprintf(&b, "]}}}");
    return b.s;
}

/* ---- the reference's cost model, straight from the contract -------------- */

typedef struct rstage {
    double compute, time, cost;
    int64_t recv, params, act, mem;
} rstage;

static int rank_of(const rgraph *g, int node)
{
    for (int r = 0; r < g->m; r++)
        if (g->op_of_rank[r] == node)
            return r;
    return -1;
}

static void ref_stage(const rgraph *g, int s, int a, int e, rstage *st)
{
    int seen_in[MAXN] = {0}, seen_par[NPARAMS] = {0}, seen_ga[MAXN] = {0};
    memset(st, 0, sizeof *st);
    for (int r = a; r < e; r++) {
        const rnode *v = &g->node[g->op_of_rank[r]];
        st->compute += (v->lat > v->mem_lat ? v->lat : v->mem_lat) / g->speed[s];
        st->act += v->out_bytes;
        if (v->n_par >= 0) {
            for (int k = 0; k < v->n_par; k++)
                seen_par[v->par[k]] = 1;
        } else {
            st->params += v->param_bytes;
        }
        for (int k = 0; k < v->n_in; k++) {
            int u = v->in[k];
            const rnode *w = &g->node[u];
            if (w->kind == K_GA) {
                if (w->n_par >= 0)
                    for (int t = 0; t < w->n_par; t++)
                        seen_par[w->par[t]] = 1;
                else
                    seen_ga[u] = 1;
            } else if (w->kind == K_PH) {
                seen_in[u] = 1;
            } else {
                int ru = rank_of(g, u);
                if (ru < a)
                    seen_in[u] = 1;
            }
        }
    }
    for (int u = 0; u < g->n; u++) {
        if (seen_in[u])
            st->recv += g->node[u].out_bytes;
        if (seen_ga[u])
            st->params += g->node[u].out_bytes > g->node[u].param_bytes ? g->node[u].out_bytes
                                                                        : g->node[u].param_bytes;
    }
    for (int x = 0; x < NPARAMS; x++)
        if (seen_par[x])
            st->params += g->param_size[x];
    int64_t k = 1;
    if (g->schedule == 1)
        k = g->microbatches;
    else if (g->schedule == 2)
        k = g->microbatches < g->S - s ? g->microbatches : g->S - s;
    double pp = g->param_factor * (double)st->params;
    int64_t ip = (int64_t)pp;
    if ((double)ip < pp)
        ip++;
    st->mem = ip + k * st->act + st->recv;
    st->time = st->compute + 1000.0 * (double)st->recv / g->rate;
    int chunk = g->m / g->S, residual = g->m % g->S;
    int target = chunk + (s < residual ? 1 : 0);
    switch (g->balance_by) {
    case 0:
        st->cost = st->time;
        break;
    case 1:
        st->cost = (double)st->mem / (double)g->memory[s];
        break;
    case 2:
        st->cost = (double)st->params;
        break;
    default:
        st->cost = abs((e - a) - target);
        break;
    }
}

/* Cut positions required by cut_after. */
static void required_cuts(const rgraph *g, int *req)
{
    memset(req, 0, sizeof(int) * (MAXOPS + 1));
    for (int k = 0; k < g->n_cuts; k++) {
        int node = -1;
        if (g->cut_node[k] >= 0) {
            node = g->cut_node[k];
        } else {
            for (int r = 0; r < g->m; r++)
                if (g->node[g->op_of_rank[r]].module == g->cut_module[k])
                    node = g->op_of_rank[r];
        }
        req[rank_of(g, node) + 1] = 1;
    }
}

typedef struct rbest {
    int found;
    int cuts[6];
    double obj, sum;
    int64_t short_by;
    int short_stage;
} rbest;

typedef struct enum_state {
    const rgraph *g;
    int req[MAXOPS + 1];
    int cuts[6];
    int shortfall; /* 1: minimise the largest shortfall, no memory limit */
    rbest best;
} enum_state;

static void consider(enum_state *es)
{
    const rgraph *g = es->g;
    double obj = -1e180, sum = 0;
    int64_t worst = INT64_MIN;
    int worst_stage = 0;
    for (int s = 0; s < g->S; s++) {
        rstage st;
        ref_stage(g, s, es->cuts[s], es->cuts[s + 1], &st);
        if (!es->shortfall && st.mem > g->memory[s])
            return;
        double c = es->shortfall ? (double)(st.mem - g->memory[s]) : st.cost;
        if (c > obj)
            obj = c;
        if (st.mem - g->memory[s] > worst) {
            worst = st.mem - g->memory[s];
            worst_stage = s;
        }
        sum += st.time;
    }
    if (es->best.found && (obj > es->best.obj || (obj == es->best.obj && sum >= es->best.sum)))
        return;
    es->best.found = 1;
    es->best.obj = obj;
    es->best.sum = sum;
    es->best.short_by = worst;
    es->best.short_stage = worst_stage;
    memcpy(es->best.cuts, es->cuts, sizeof es->cuts);
}

/* Every split, cuts in lexicographic order, so the first best is the one with
 * the earliest cuts. */
static void enumerate(enum_state *es, int s, int from)
{
    const rgraph *g = es->g;
    if (s == g->S) {
        for (int p = 1; p < g->m; p++)
            if (es->req[p]) {
                int ok = 0;
                for (int t = 1; t < g->S; t++)
                    ok |= es->cuts[t] == p;
                if (!ok)
                    return;
            }
        consider(es);
        return;
    }
    if (s == g->S - 1) {
        es->cuts[s + 1] = g->m;
        enumerate(es, s + 1, g->m);
        return;
    }
    for (int p = from; p <= g->m - (g->S - 1 - s); p++) {
        es->cuts[s + 1] = p;
        enumerate(es, s + 1, p + 1);
    }
}

/* The search itself on the same request, with the tie breaks' segment-tree
 * sweep forced on every stage (the public path enumerates pairs when the
 * windows are narrow, as they are on graphs this small), and for an
 * infeasible request the shortfall split itself. */
static void check_internal_search(const rgraph *g, const enum_state *es,
                                  const partd_request *req, int feasible, uint64_t seed)
{
    int32_t cuts[MAXOPS + 1];
    uint32_t n_cuts = 0;
    for (int p = 1; p < g->m; p++)
        if (es->req[p])
            cuts[n_cuts++] = p;
    partd_problem pb;
    partd_problem_init(&pb);
    partd_pipeline_model md;
    assert_int_equal(partd_pipeline_model_build(&md, req, cuts, n_cuts, &pb), PARTD_OK);
    md.tie_sweep_always = 1;
    if (!feasible)
        md.objective = PL_OBJ_SHORTFALL;
    int32_t split[8];
    partd_pipeline_result res = {.cuts = split};
    assert_int_equal(partd__pipeline_search(&md, NULL, &res), PARTD_OK);
    assert_true(res.found);
    int same = 1;
    for (int s = 0; s <= g->S; s++)
        same &= split[s] == es->best.cuts[s];
    if (!same) {
        fprintf(stderr, "seed %llu: sweep split differs; want", (unsigned long long)seed);
        for (int s = 1; s <= g->S; s++)
            fprintf(stderr, " %d", es->best.cuts[s]);
        fprintf(stderr, ", got");
        for (int s = 1; s <= g->S; s++)
            fprintf(stderr, " %d", split[s]);
        fprintf(stderr, "\n");
    }
    assert_true(same);
    assert_true(res.bottleneck == es->best.obj);
    partd_pipeline_model_free(&md);
    partd_problem_free(&pb);
}

static void check_one(uint64_t seed)
{
    rgraph g;
    rng_state = seed * 0x9E3779B97F4A7C15ull + 1;
    random_graph(&g, 1);
    char *json = graph_json(&g);
    enum_state es = {.g = &g};
    required_cuts(&g, es.req);
    es.cuts[0] = 0;
    enumerate(&es, 0, 1);
    int feasible = es.best.found;
    if (!feasible) {
        es.shortfall = 1;
        enumerate(&es, 0, 1);
        assert_true(es.best.found);
    }

    partd_request *req;
    partd_plan *plan;
    partd_problem pb;
    int rc = plan_text(json, &req, &plan, &pb);
    if (!feasible) {
        if (rc != PARTD_EINFEASIBLE)
            fprintf(stderr, "seed %llu: expected infeasible\n%s\n", (unsigned long long)seed,
                    json);
        assert_int_equal(rc, PARTD_EINFEASIBLE);
        char expect[128];
        snprintf(expect, sizeof expect, "stage %d on device \"d%d\"", es.best.short_stage,
                 es.best.short_stage);
        assert_non_null(strstr(pb.detail, expect));
        if (tu_problem_member(&pb, "short_bytes") != es.best.short_by)
            fprintf(stderr, "seed %llu: %s\nwant short by %lld bytes\n%s\n",
                    (unsigned long long)seed, pb.detail, (long long)es.best.short_by, json);
        assert_int_equal(tu_problem_member(&pb, "short_bytes"), es.best.short_by);
        char ptr[64];
        snprintf(ptr, sizeof ptr, "/devices/%d/memory_bytes", es.best.short_stage);
        assert_true(has_error(&pb, ptr));
    } else {
        if (rc != PARTD_OK)
            fprintf(stderr, "seed %llu: rc %d %s\n%s\n", (unsigned long long)seed, rc,
                    pb.detail ? pb.detail : "", json);
        assert_int_equal(rc, PARTD_OK);
        assert_int_equal(plan->n_parts, (uint32_t)g.S);
        int pos = 0, same = 1;
        for (int s = 0; s < g.S; s++) {
            pos += (int)plan->balance[s];
            same &= pos == es.best.cuts[s + 1];
        }
        if (!same) {
            fprintf(stderr, "seed %llu: split differs; want", (unsigned long long)seed);
            for (int s = 1; s <= g.S; s++)
                fprintf(stderr, " %d", es.best.cuts[s]);
            fprintf(stderr, " (obj %.17g sum %.17g); got balance", es.best.obj, es.best.sum);
            for (int s = 0; s < g.S; s++)
                fprintf(stderr, " %u", plan->balance[s]);
            fprintf(stderr, "\n%s\n", json);
        }
        assert_true(same);
        double sum = 0;
        for (int s = 0; s < g.S; s++) {
            rstage st;
            ref_stage(&g, s, es.best.cuts[s], es.best.cuts[s + 1], &st);
            const partd_part *pt = &plan->parts[s];
            assert_int_equal(pt->memory_bytes, st.mem);
            assert_int_equal(pt->param_bytes, st.params);
            assert_int_equal(pt->transfer_in_bytes, st.recv);
            assert_true(pt->compute_ms == st.compute);
            assert_true(pt->time_ms == st.time);
            sum += st.time;
        }
        assert_true(plan->summary.optimal);
        assert_true(plan->summary.total_ms ==
                    sum + (g.microbatches - 1) * plan->summary.bottleneck_ms);
    }
    check_internal_search(&g, &es, req, feasible, seed);
    partd_plan_free(plan);
    partd_problem_free(&pb);
    partd_request_free(req);
    free(json);
}

static void test_against_brute_force(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 5000; seed++)
        check_one(seed);
}

/* Arbitrary doubles (latencies, speeds, rates): sums round differently on
 * the two sides, so compare the optimum's value within 1e-9 and require the
 * planner's split to fit, not the split itself. This guards the margins of
 * the capacity bounds and the fixed-point times. */
static void check_one_inexact(uint64_t seed)
{
    rgraph g;
    rng_state = seed * 0xD1B54A32D192ED03ull + 7;
    random_graph(&g, 0);
    char *json = graph_json(&g);
    enum_state es = {.g = &g};
    required_cuts(&g, es.req);
    enumerate(&es, 0, 1);
    int feasible = es.best.found;
    if (!feasible) {
        es.shortfall = 1;
        enumerate(&es, 0, 1);
    }
    partd_request *req;
    partd_plan *plan;
    partd_problem pb;
    int rc = plan_text(json, &req, &plan, &pb);
    if (!feasible) {
        assert_int_equal(rc, PARTD_EINFEASIBLE);
        assert_int_equal(tu_problem_member(&pb, "short_bytes"), es.best.short_by);
    } else {
        assert_int_equal(rc, PARTD_OK);
        double obj = -1e300;
        int a = 0;
        for (int s = 0; s < g.S; s++) {
            rstage st;
            int e = a + (int)plan->balance[s];
            ref_stage(&g, s, a, e, &st);
            assert_true(st.mem <= g.memory[s]);
            if (st.cost > obj)
                obj = st.cost;
            a = e;
        }
        double tol = 1e-9 * (es.best.obj > 1 ? es.best.obj : 1);
        if (!(obj <= es.best.obj + tol && obj >= es.best.obj - tol))
            fprintf(stderr, "seed %llu: objective %.17g, optimum %.17g\n%s\n",
                    (unsigned long long)seed, obj, es.best.obj, json);
        assert_true(obj <= es.best.obj + tol && obj >= es.best.obj - tol);
    }
    partd_plan_free(plan);
    partd_problem_free(&pb);
    partd_request_free(req);
    free(json);
}

static void test_against_brute_force_inexact(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 3000; seed++)
        check_one_inexact(seed);
}

/* ---- hand-computed cases ------------------------------------------------- */

/* x -> a -> b -> c -> d, and a skip a -> d: with stages {a}, {b, c}, {d},
 * a crosses both cuts, passing through stage 1 that does not read it. */
static void test_skip_connection_liveness(void **state)
{
    (void)state;
    const char *json =
        "{\"graph\":{\"nodes\":["
        "{\"name\":\"x\",\"op\":\"placeholder\",\"output_bytes\":8},"
        "{\"name\":\"a\",\"op\":\"call_function\",\"inputs\":[\"x\"],\"output_bytes\":100,\"latency_ms\":1},"
        "{\"name\":\"b\",\"op\":\"call_function\",\"inputs\":[\"a\"],\"output_bytes\":10,\"latency_ms\":1},"
        "{\"name\":\"c\",\"op\":\"call_function\",\"inputs\":[\"b\"],\"output_bytes\":20,\"latency_ms\":1},"
        "{\"name\":\"d\",\"op\":\"call_function\",\"inputs\":[\"c\",\"a\"],\"output_bytes\":30,\"latency_ms\":1},"
        "{\"name\":\"out\",\"op\":\"output\",\"inputs\":[\"d\"]}]},"
        "\"devices\":[{\"name\":\"g0\",\"memory_bytes\":1000},{\"name\":\"g1\",\"memory_bytes\":1000},"
        "{\"name\":\"g2\",\"memory_bytes\":1000}],"
        "\"options\":{\"transfer_bytes_per_sec\":1000,\"pipeline\":{\"cut_after\":[\"a\",\"c\"]}}}";
    partd_request *req;
    partd_plan *plan;
    partd_problem pb;
    assert_int_equal(plan_text(json, &req, &plan, &pb), PARTD_OK);
    assert_int_equal(plan->n_boundaries, 2);
    /* Cut 0 after a: a (100). Cut 1 after c: c (20) and a (100), passing
     * through. x is read only by stage 0. */
    assert_string_equal(partd_node_name(req, plan->boundaries[0].after), "a");
    assert_int_equal(plan->boundaries[0].n_tensors, 1);
    assert_string_equal(partd_node_name(req, plan->boundaries[0].tensors[0]), "a");
    assert_int_equal(plan->boundaries[0].bytes, 100);
    assert_string_equal(partd_node_name(req, plan->boundaries[1].after), "c");
    assert_int_equal(plan->boundaries[1].n_tensors, 2);
    assert_string_equal(partd_node_name(req, plan->boundaries[1].tensors[0]), "a");
    assert_string_equal(partd_node_name(req, plan->boundaries[1].tensors[1]), "c");
    assert_int_equal(plan->boundaries[1].bytes, 120);
    /* Stage 1 receives a (read by b); stage 2 receives c and a: 120 bytes,
     * 120 ms at 1000 B/s. */
    assert_int_equal(plan->parts[0].transfer_in_bytes, 8);
    assert_int_equal(plan->parts[1].transfer_in_bytes, 100);
    assert_int_equal(plan->parts[2].transfer_in_bytes, 120);
    assert_true(plan->parts[2].time_ms == 1.0 + 120.0);
    assert_int_equal(plan->parts[2].memory_bytes, 30 + 120);
    assert_int_equal(plan->balance[0], 1);
    assert_int_equal(plan->balance[1], 2);
    assert_int_equal(plan->balance[2], 1);
    assert_int_equal(plan->parts[2].n_parents, 2); /* reads from stages 0 and 1 */
    partd_plan_free(plan);
    partd_problem_free(&pb);
    partd_request_free(req);
}

/* A weight named by the first op and by the head (tied embedding): stored once
 * per stage, listed as tied when it lands in two stages; a get_attr node read
 * by two stages is a parameter of both. */
static void test_tied_and_get_attr_params(void **state)
{
    (void)state;
    const char *json =
        "{\"graph\":{\"nodes\":["
        "{\"name\":\"ids\",\"op\":\"placeholder\",\"output_bytes\":4},"
        "{\"name\":\"scale\",\"op\":\"get_attr\",\"output_bytes\":16},"
        "{\"name\":\"emb\",\"op\":\"call_module\",\"inputs\":[\"ids\"],\"output_bytes\":10,"
        " \"params\":[{\"name\":\"wte\",\"bytes\":1000}],\"latency_ms\":1},"
        "{\"name\":\"mul\",\"op\":\"call_function\",\"inputs\":[\"emb\",\"scale\"],\"output_bytes\":10,\"latency_ms\":1},"
        "{\"name\":\"mlp\",\"op\":\"call_module\",\"inputs\":[\"mul\"],\"output_bytes\":10,\"param_bytes\":300,\"latency_ms\":1},"
        "{\"name\":\"mul2\",\"op\":\"call_function\",\"inputs\":[\"mlp\",\"scale\"],\"output_bytes\":10,\"latency_ms\":1},"
        "{\"name\":\"head\",\"op\":\"call_module\",\"inputs\":[\"mul2\"],\"output_bytes\":40,"
        " \"params\":[{\"name\":\"wte\",\"bytes\":1000},{\"name\":\"bias\",\"bytes\":8}],\"latency_ms\":1},"
        "{\"name\":\"out\",\"op\":\"output\",\"inputs\":[\"head\"]}]},"
        "\"devices\":[{\"name\":\"g0\",\"memory_bytes\":100000},{\"name\":\"g1\",\"memory_bytes\":100000}],"
        "\"options\":{\"transfer_bytes_per_sec\":1e18,\"pipeline\":{\"cut_after\":[\"mul\"],"
        "\"param_factor\":2}}}";
    partd_request *req;
    partd_plan *plan;
    partd_problem pb;
    assert_int_equal(plan_text(json, &req, &plan, &pb), PARTD_OK);
    /* stage 0: emb, mul: wte 1000 + scale 16 = 1016 parameter bytes. */
    assert_int_equal(plan->parts[0].param_bytes, 1016);
    assert_int_equal(plan->parts[0].memory_bytes, 2 * 1016 + 20 + 4);
    /* stage 1: mlp 300, scale 16, wte 1000, bias 8. */
    assert_int_equal(plan->parts[1].param_bytes, 1324);
    assert_int_equal(plan->parts[1].memory_bytes, 2 * 1324 + 60 + 10);
    assert_int_equal(plan->n_tied, 1);
    assert_string_equal(partd_str(&req->strings, req->graph.param_name[plan->tied[0].param]),
                        "wte");
    assert_int_equal(plan->tied[0].n_parts, 2);
    /* get_attr nodes are parameters, never live across a cut. */
    assert_int_equal(plan->boundaries[0].n_tensors, 1);
    assert_string_equal(partd_node_name(req, plan->boundaries[0].tensors[0]), "mul");
    partd_plan_free(plan);
    partd_problem_free(&pb);
    partd_request_free(req);
}

static const char *chain4_fmt =
    "{\"graph\":{\"nodes\":["
    "{\"name\":\"x\",\"op\":\"placeholder\",\"output_bytes\":10},"
    "{\"name\":\"a\",\"op\":\"call_function\",\"inputs\":[\"x\"],\"output_bytes\":100,\"latency_ms\":1,\"module\":\"enc.0\"},"
    "{\"name\":\"b\",\"op\":\"call_function\",\"inputs\":[\"a\"],\"output_bytes\":100,\"latency_ms\":1,\"module\":\"enc.1\"},"
    "{\"name\":\"c\",\"op\":\"call_function\",\"inputs\":[\"b\"],\"output_bytes\":100,\"latency_ms\":1,\"module\":\"dec\"},"
    "{\"name\":\"d\",\"op\":\"call_function\",\"inputs\":[\"c\"],\"output_bytes\":100,\"latency_ms\":1,\"module\":\"dec\"},"
    "{\"name\":\"out\",\"op\":\"output\",\"inputs\":[\"d\"]}]},"
    "\"devices\":[{\"name\":\"g0\",\"memory_bytes\":%lld},{\"name\":\"g1\",\"memory_bytes\":%lld},"
    "{\"name\":\"g2\",\"memory_bytes\":%lld}],"
    "\"options\":{\"transfer_bytes_per_sec\":1e18,\"pipeline\":{%s}}}";

static char *chain4(long long m0, long long m1, long long m2, const char *pipeline)
{
    buf b = {0};
    bprintf(&b, chain4_fmt, m0, m1, m2, pipeline);
    return b.s;
}

/* 1f1b with 4 microbatches and 3 stages holds min(4, 3 - s) activations. */
static void test_1f1b_memory(void **state)
{
    (void)state;
    char *json = chain4(100000, 100000, 100000,
                        "\"stages\":3,\"schedule\":\"1f1b\",\"microbatches\":4,"
                        "\"cut_after\":[\"a\",\"c\"]");
    partd_request *req;
    partd_plan *plan;
    partd_problem pb;
    assert_int_equal(plan_text(json, &req, &plan, &pb), PARTD_OK);
    assert_int_equal(plan->parts[0].memory_bytes, 3 * 100 + 10);
    assert_int_equal(plan->parts[1].memory_bytes, 2 * 200 + 100);
    assert_int_equal(plan->parts[2].memory_bytes, 1 * 100 + 100);
    /* total = sum of stage times + (microbatches - 1) * bottleneck. */
    double sum = 0;
    for (uint32_t s = 0; s < 3; s++)
        sum += plan->parts[s].time_ms;
    assert_true(plan->summary.bottleneck_ms == plan->parts[1].time_ms);
    assert_true(plan->summary.total_ms == sum + 3 * plan->summary.bottleneck_ms);
    partd_plan_free(plan);
    partd_problem_free(&pb);
    partd_request_free(req);
    free(json);
}

/* A module fqn cut: "enc" ends after b, the last node of enc.0 and enc.1;
 * c and d fill stages 1 and 2. */
static void test_cut_after_module(void **state)
{
    (void)state;
    char *json = chain4(100000, 100000, 100000, "\"cut_after\":[\"enc\"]");
    partd_request *req;
    partd_plan *plan;
    partd_problem pb;
    assert_int_equal(plan_text(json, &req, &plan, &pb), PARTD_OK);
    assert_int_equal(plan->balance[0], 2);
    assert_int_equal(plan->balance[1], 1);
    assert_int_equal(plan->balance[2], 1);
    partd_plan_free(plan);
    partd_problem_free(&pb);
    partd_request_free(req);
    free(json);
}

/* Device 1 is too small for any stage holding an activation plus its input:
 * the report names it and the smallest possible shortfall. */
static void test_infeasible_report(void **state)
{
    (void)state;
    /* Stages of 1 op need 100 (act) + 100 (input) = 200 (stage 0: 110).
     * Device 1 has 150: every split leaves stage 1 at >= 200, short by 50. */
    char *json = chain4(100000, 150, 100000, "\"stages\":3");
    partd_request *req;
    partd_plan *plan;
    partd_problem pb;
    assert_int_equal(plan_text(json, &req, &plan, &pb), PARTD_EINFEASIBLE);
    assert_null(plan);
    assert_int_equal(pb.status, 422);
    assert_string_equal(pb.title, "No feasible plan");
    /* figures for people in the words, exact ones in members */
    assert_non_null(strstr(pb.detail, "stage 1 on device \"g1\" needs 200 B and has 150 B: short "
                                      "by 50 B"));
    assert_int_equal(tu_problem_member(&pb, "memory_bytes"), 200);
    assert_int_equal(tu_problem_member(&pb, "device_memory_bytes"), 150);
    assert_int_equal(tu_problem_member(&pb, "short_bytes"), 50);
    assert_true(has_error(&pb, "/devices/1/memory_bytes"));
    assert_int_equal(pb.n_errors, 1);
    partd_problem_free(&pb);
    partd_request_free(req);
    free(json);
}

/* cut_after needs only the request: decoding refuses it (422 before a job
 * is accepted), with the pointer and words the planner would use. */
static void expect_invalid(const char *pipeline, const char *pointer, const char *words)
{
    char *json = chain4(100000, 100000, 100000, pipeline);
    partd_problem pb;
    tu_decode_fail(json, PARTD_EINVALID, &pb);
    assert_int_equal(pb.status, 422);
    tu_assert_error(&pb, pointer, words);
    partd_problem_free(&pb);
    free(json);
}

static void test_cut_errors(void **state)
{
    (void)state;
    expect_invalid("\"cut_after\":[\"nope\"]", "/options/pipeline/cut_after/0",
                   "names no node and no module");
    expect_invalid("\"cut_after\":[\"a\",\"zz\"]", "/options/pipeline/cut_after/1",
                   "names no node and no module");
    /* "enc.1" is a module; "enc.1x" is not a prefix at a dot boundary. */
    expect_invalid("\"cut_after\":[\"enc.1x\"]", "/options/pipeline/cut_after/0", "names no");
    expect_invalid("\"stages\":2,\"cut_after\":[\"a\",\"b\"]",
                   "/options/pipeline/cut_after/1", "2 cuts need at least 3 stages");
    expect_invalid("\"cut_after\":[\"x\"]", "/options/pipeline/cut_after/0",
                   "leaves the first stage empty");
    expect_invalid("\"cut_after\":[\"d\"]", "/options/pipeline/cut_after/0",
                   "leaves the last stage empty");
    expect_invalid("\"cut_after\":[\"out\"]", "/options/pipeline/cut_after/0",
                   "leaves the last stage empty");
    expect_invalid("\"cut_after\":[\"b\",\"enc\"]", "/options/pipeline/cut_after/1",
                   "ends the same stage as /options/pipeline/cut_after/0");
}

/* stages beyond devices or operations can only come from a hand-built
 * request (decode bounds them), but the planner checks them itself. */
static void test_stage_errors(void **state)
{
    (void)state;
    char *json = chain4(100000, 100000, 100000, "\"stages\":3");
    partd_request *req;
    partd_plan *plan;
    partd_problem pb;
    assert_int_equal(plan_text(json, &req, &plan, &pb), PARTD_OK);
    partd_plan_free(plan);
    partd_problem_free(&pb);
    partd_problem_init(&pb);
    req->options.pipeline.stages = 5;
    assert_int_equal(partd_pipeline(req, NULL, &plan, &pb), PARTD_EINVALID);
    assert_true(has_error(&pb, "/options/pipeline/stages"));
    assert_non_null(strstr(pb.errors[0].message, "5 stages need 5 devices; there are 3"));
    assert_non_null(strstr(pb.errors[1].message, "5 stages need 5 operation nodes"));
    partd_problem_free(&pb);
    partd_request_free(req);
    free(json);
}

/* Request order not topological: planning order is x, a, b, out, c (the
 * output node before the dead operation c). cut_after "out" ends stage 0
 * after b, the last operation before it; the output node reads after the
 * last stage, so b, read only by it, is live across the cut. */
static void test_planning_order_and_output_position(void **state)
{
    (void)state;
    const char *json =
        "{\"graph\":{\"nodes\":["
        "{\"name\":\"a\",\"op\":\"call_function\",\"inputs\":[\"x\"],\"output_bytes\":10,\"latency_ms\":1},"
        "{\"name\":\"x\",\"op\":\"placeholder\",\"output_bytes\":1},"
        "{\"name\":\"b\",\"op\":\"call_function\",\"inputs\":[\"a\"],\"output_bytes\":20,\"latency_ms\":1},"
        "{\"name\":\"out\",\"op\":\"output\",\"inputs\":[\"b\"]},"
        "{\"name\":\"c\",\"op\":\"call_function\",\"inputs\":[\"a\"],\"output_bytes\":40,\"latency_ms\":1}]},"
        "\"devices\":[{\"name\":\"g0\",\"memory_bytes\":1000},{\"name\":\"g1\",\"memory_bytes\":1000}],"
        "\"options\":{\"pipeline\":{\"cut_after\":[\"out\"]}}}";
    partd_request *req;
    partd_plan *plan;
    partd_problem pb;
    assert_int_equal(plan_text(json, &req, &plan, &pb), PARTD_OK);
    assert_int_equal(plan->balance[0], 2);
    assert_int_equal(plan->balance[1], 1);
    assert_string_equal(partd_node_name(req, plan->parts[1].nodes[0]), "c");
    assert_int_equal(plan->parts[1].transfer_in_bytes, 10);
    assert_int_equal(plan->boundaries[0].n_tensors, 2);
    assert_string_equal(partd_node_name(req, plan->boundaries[0].tensors[0]), "a");
    assert_string_equal(partd_node_name(req, plan->boundaries[0].tensors[1]), "b");
    assert_int_equal(plan->boundaries[0].bytes, 30);
    partd_plan_free(plan);
    partd_problem_free(&pb);
    partd_request_free(req);
}

/* Uniform without constraints is DeepSpeed's partition_uniform: 10 ops in 3
 * stages -> 4, 3, 3. */
static void test_uniform_is_deepspeed(void **state)
{
    (void)state;
    buf b = {0};
    bprintf(&b, "{\"graph\":{\"nodes\":[{\"name\":\"x\",\"op\":\"placeholder\"}");
    for (int i = 0; i < 10; i++) {
        bprintf(&b, ",{\"name\":\"o%d\",\"op\":\"call_function\",\"latency_ms\":%d,", i,
                i == 0 ? 0 : 1);
        if (i == 0)
            bprintf(&b, "\"inputs\":[\"x\"]}");
        else
            bprintf(&b, "\"inputs\":[\"o%d\"]}", i - 1);
    }
    bprintf(&b, "]},\"devices\":[{\"name\":\"a\",\"memory_bytes\":100},{\"name\":\"b\","
                "\"memory_bytes\":100},{\"name\":\"c\",\"memory_bytes\":100}],"
                "\"options\":{\"pipeline\":{\"balance_by\":\"uniform\"}}}");
    partd_request *req;
    partd_plan *plan;
    partd_problem pb;
    assert_int_equal(plan_text(b.s, &req, &plan, &pb), PARTD_OK);
    assert_int_equal(plan->balance[0], 4);
    assert_int_equal(plan->balance[1], 3);
    assert_int_equal(plan->balance[2], 3);
    partd_plan_free(plan);
    partd_problem_free(&pb);
    partd_request_free(req);
    free(b.s);
}

static void test_cancelled(void **state)
{
    (void)state;
    buf b = {0};
    bprintf(&b, "{\"graph\":{\"nodes\":[{\"name\":\"x\",\"op\":\"placeholder\",\"output_bytes\":1}");
    for (int i = 0; i < 20000; i++) {
        bprintf(&b, ",{\"name\":\"o%d\",\"op\":\"call_function\",\"latency_ms\":%d,"
                    "\"output_bytes\":4,",
                i, 1 + i % 7);
        if (i == 0)
            bprintf(&b, "\"inputs\":[\"x\"]}");
        else
            bprintf(&b, "\"inputs\":[\"o%d\"]}", i - 1);
    }
    bprintf(&b, "]},\"devices\":[{\"name\":\"a\",\"memory_bytes\":1000000},{\"name\":\"b\","
                "\"memory_bytes\":1000000}]}");
    partd_request *req = NULL;
    partd_problem pb;
    partd_problem_init(&pb);
    assert_int_equal(partd_request_decode(b.s, b.n, NULL, &req, &pb), PARTD_OK);
    partd_cancel cancel;
    partd_cancel_init(&cancel, 0);
    atomic_store(&cancel.cancelled, 1);
    partd_plan *plan = NULL;
    assert_int_equal(partd_pipeline(req, &cancel, &plan, &pb), PARTD_ECANCELLED);
    assert_null(plan);
    atomic_store(&cancel.cancelled, 0);
    assert_int_equal(partd_pipeline(req, &cancel, &plan, &pb), PARTD_OK);
    assert_int_equal(plan->balance[0] + plan->balance[1], 20000);
    partd_plan_free(plan);
    partd_problem_free(&pb);
    partd_request_free(req);
    free(b.s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_skip_connection_liveness),
        cmocka_unit_test(test_tied_and_get_attr_params),
        cmocka_unit_test(test_1f1b_memory),
        cmocka_unit_test(test_cut_after_module),
        cmocka_unit_test(test_infeasible_report),
        cmocka_unit_test(test_cut_errors),
        cmocka_unit_test(test_stage_errors),
        cmocka_unit_test(test_planning_order_and_output_position),
        cmocka_unit_test(test_uniform_is_deepspeed),
        cmocka_unit_test(test_cancelled),
        cmocka_unit_test(test_against_brute_force),
        cmocka_unit_test(test_against_brute_force_inexact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
