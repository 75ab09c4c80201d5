/*
 * test_training_search.c - configurations, plans and the search
 * (lib/training/training_search.h: training_eval.c, training_bound.c,
 * training_search.c and the units it searches with).
 *
 * On one graph of five units (a unit that costs nothing to recompute, a
 * shared parameter, a get_attr, a skip):
 *   - the tie order of plans, one key at a time, and of checkpoint sets;
 *   - a plan's step, busy times and memory against the contract worked
 *     here: durations from the stage figures, timed by the simulator, and
 *     each rank's memory walked along its list, for every schedule, split,
 *     device order and checkpoint mode;
 *   - the checkpoint choice of a rank of one stage: the least
 *     recomputation that fits, or the least memory, against every subset;
 *   - the fluid bound (worked by hand) and the relaxation never above the
 *     step of any plan of the configuration;
 *   - the search against every plan of the space enumerated here (every
 *     schedule, v, rank count, device order, split and checkpoint set):
 *     the same plan, proven optimal; with no plan that fits, the same
 *     least shortfall.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include <cmocka.h>

#include "partd/decode.h"
#include "partd/partd.h"
#include "testutil.h"
#include "training/training_search.h"

/* Units at depth 2, each an inner operation (read only inside its unit)
 * and the unit's output; whole-graph figures at speed 1:
 *   l.0: f 2, b 4, discards a0 (120) in a stage that holds l.1 and l.2
 *   l.1: f 3, b 5 (a1's backward_ms 3)
 *   l.2: f 0, b 0, discards a2 (90): free to recompute
 *   l.3: f 3.5, b 7 (a3's weight_grad_ms 1; it reads the get_attr)
 *   l.4: f 2, b 4 (`tied` again)
 * Forward 10.5 and backward 20 in all. */
#define NODES                                                                                  \
    "{\"name\":\"x\",\"op\":\"placeholder\",\"output_bytes\":40},"                            \
    "{\"name\":\"w\",\"op\":\"get_attr\",\"output_bytes\":20},"                               \
    "{\"name\":\"a0\",\"op\":\"call_module\",\"module\":\"l.0.a\",\"inputs\":[\"x\"],"         \
    "\"output_bytes\":120,\"latency_ms\":1,\"params\":[{\"name\":\"tied\",\"bytes\":40}]},"    \
    "{\"name\":\"b0\",\"op\":\"call_module\",\"module\":\"l.0.b\",\"inputs\":[\"a0\"],"        \
    "\"output_bytes\":30,\"latency_ms\":1},"                                                   \
    "{\"name\":\"a1\",\"op\":\"call_module\",\"module\":\"l.1.a\",\"inputs\":[\"b0\"],"        \
    "\"output_bytes\":300,\"latency_ms\":2,\"backward_ms\":3,\"param_bytes\":10},"             \
    "{\"name\":\"b1\",\"op\":\"call_module\",\"module\":\"l.1.b\",\"inputs\":[\"a1\"],"        \
    "\"output_bytes\":30,\"latency_ms\":1},"                                                   \
    "{\"name\":\"a2\",\"op\":\"call_function\",\"module\":\"l.2.a\",\"inputs\":[\"b1\"],"      \
    "\"output_bytes\":90},"                                                                    \
    "{\"name\":\"b2\",\"op\":\"call_function\",\"module\":\"l.2.b\",\"inputs\":[\"a2\",\"b0\"]," \
    "\"output_bytes\":30},"                                                                    \
    "{\"name\":\"a3\",\"op\":\"call_module\",\"module\":\"l.3.a\",\"inputs\":[\"b2\",\"w\"],"  \
    "\"output_bytes\":200,\"latency_ms\":3,\"weight_grad_ms\":1},"                             \
    "{\"name\":\"b3\",\"op\":\"call_module\",\"module\":\"l.3.b\",\"inputs\":[\"a3\"],"        \
    "\"output_bytes\":30,\"latency_ms\":0.5},"                                                 \
    "{\"name\":\"a4\",\"op\":\"call_module\",\"module\":\"l.4.a\",\"inputs\":[\"b3\"],"        \
    "\"output_bytes\":150,\"latency_ms\":1,\"params\":[{\"name\":\"tied\",\"bytes\":40}]},"    \
    "{\"name\":\"b4\",\"op\":\"call_module\",\"module\":\"l.4.b\",\"inputs\":[\"a4\"],"        \
    "\"output_bytes\":20,\"latency_ms\":1},"                                                   \
    "{\"name\":\"output\",\"op\":\"output\",\"inputs\":[\"b4\"]}"

#define N_UNITS 5
#define MAX_V 8

static char text[16384];

/* devices: "speed:memory,..." */
static partd_request *request(const char *devices, const char *training, double rate)
{
    char devs[1024] = "";
    size_t len = 0;
    int k = 0;
    for (const char *p = devices; *p; k++) {
        double speed;
        long long mem;
        int used;
        assert_int_equal(sscanf(p, "%lf:%lld%n", &speed, &mem, &used), 2);
        len += (size_t)snprintf(devs + len, sizeof devs - len,
                                "%s{\"name\":\"d%d\",\"speed\":%g,\"memory_bytes\":%lld}",
                                k ? "," : "", k, speed, mem);
        p += used;
        p += *p == ',';
    }
    snprintf(text, sizeof text,
             "{\"graph\":{\"nodes\":[" NODES "]},\"devices\":[%s],"
             "\"options\":{\"mode\":\"training\",\"transfer_bytes_per_sec\":%g,"
             "\"training\":{\"unit_depth\":2,\"param_factor\":2%s}}}",
             devs, rate, training);
    return tu_decode_ok(text);
}

static void build(partd_training_model *md, const partd_request *req)
{
    partd_problem pb;
    partd_problem_init(&pb);
    assert_int_equal(partd__training_model_build(md, req, &pb), PARTD_OK);
    assert_int_equal(md->n_units, N_UNITS);
    partd_problem_free(&pb);
}

/* The next split of n units into V stages, cuts in lexicographic order;
 * 0 after the last. */
static int next_split(uint32_t *cut, uint32_t V, uint32_t n)
{
    uint32_t j = V - 1;
    while (j >= 1 && cut[j] + 1 > n - (V - j))
        j--;
    if (j < 1)
        return 0;
    cut[j]++;
    for (uint32_t i = j + 1; i < V; i++)
        cut[i] = cut[i - 1] + 1;
    return 1;
}

static void first_split(uint32_t *cut, uint32_t V, uint32_t n)
{
    for (uint32_t j = 0; j <= V; j++)
        cut[j] = j < V ? j : n;
}

/* The next choice of one candidate per stage (c->cand, masks loaded);
 * 0 after the last. */
static int next_sets(const partd_training_cfg *c, uint32_t *pick)
{
    for (uint32_t j = 0; j < c->V; j++) {
        if (++pick[j] < c->cand_off[j + 1] - c->cand_off[j])
            return 1;
        pick[j] = 0;
    }
    return 0;
}

static void set_x(const partd_training_cfg *c, const uint32_t *pick, partd_training_plan *p)
{
    for (uint32_t j = 0; j < c->V; j++)
        p->x[j] = c->cand[c->cand_off[j] + pick[j]];
}

/* ---- the order of plans ------------------------------------------------------------ */

static void plan_of(partd_training_plan *p, partd_training_schedule s, uint32_t S, uint32_t v)
{
    assert_int_equal(partd__training_plan_alloc(p, S, S * v), PARTD_OK);
    p->sched = s;
    p->v = v;
    p->feasible = 1;
    p->step = 10;
    p->memfrac = 0.5;
    p->shortfall = -100;
    for (uint32_t r = 0; r < S; r++)
        p->dev[r] = r;
    for (uint32_t j = 0; j <= p->V; j++)
        p->cut[j] = j;
    p->cut[p->V] = 8;
}

/* a before b, and b after a */
static void before(const partd_training_plan *a, const partd_training_plan *b)
{
    assert_true(partd__training_plan_cmp(a, b) < 0);
    assert_true(partd__training_plan_cmp(b, a) > 0);
}

static void test_plan_order(void **state)
{
    (void)state;
    partd_training_plan a, b;
    plan_of(&a, PARTD_TRAINING_1F1B, 2, 1);
    plan_of(&b, PARTD_TRAINING_1F1B, 2, 1);
    assert_int_equal(partd__training_plan_cmp(&a, &b), 0);
    /* a plan that fits before one that does not, however fast */
    b.feasible = 0;
    b.step = 1;
    before(&a, &b);
    /* of two that do not fit: the smaller shortfall, whatever the step */
    a.feasible = 0;
    a.step = 20;
    a.shortfall = 5;
    b.shortfall = 6;
    before(&a, &b);
    b.shortfall = 5;
    b.step = 1;
    assert_int_equal(partd__training_plan_cmp(&a, &b), 0);
    a.feasible = b.feasible = 1;
    a.step = b.step = 10;
    /* the smaller step first, even with more memory */
    a.step = 9;
    a.memfrac = 0.9;
    before(&a, &b);
    /* steps within 1e-9 tie: then the smaller largest memory fraction */
    a.step = 10 * (1 + 1e-12);
    before(&b, &a);
    a.memfrac = 0.4;
    before(&a, &b);
    a.memfrac = b.memfrac;
    assert_int_equal(partd__training_plan_cmp(&a, &b), 0);
    partd__training_plan_free(&a);
    partd__training_plan_free(&b);
    /* then the schedule listed first, even with a larger v or more ranks;
     * then the smaller v, even with more ranks; then the fewer ranks */
    static const struct {
        partd_training_schedule s[2];
        uint32_t S[2], v[2];
    } configs[] = {
        {{PARTD_TRAINING_GPIPE, PARTD_TRAINING_1F1B}, {2, 1}, {1, 1}},
        {{PARTD_TRAINING_INTERLEAVED_1F1B, PARTD_TRAINING_INTERLEAVED_ZB}, {1, 1}, {4, 1}},
        {{PARTD_TRAINING_ZBV, PARTD_TRAINING_DUALPIPEV}, {2, 1}, {2, 2}},
        {{PARTD_TRAINING_LOOPED_BFS, PARTD_TRAINING_LOOPED_BFS}, {2, 1}, {1, 3}},
        {{PARTD_TRAINING_GPIPE, PARTD_TRAINING_GPIPE}, {1, 2}, {1, 1}},
    };
    for (size_t k = 0; k < sizeof configs / sizeof *configs; k++) {
        plan_of(&a, configs[k].s[0], configs[k].S[0], configs[k].v[0]);
        plan_of(&b, configs[k].s[1], configs[k].S[1], configs[k].v[1]);
        before(&a, &b);
        partd__training_plan_free(&a);
        partd__training_plan_free(&b);
    }
    /* then the earlier cuts, the first that differs deciding */
    plan_of(&a, PARTD_TRAINING_GPIPE, 3, 1);
    plan_of(&b, PARTD_TRAINING_GPIPE, 3, 1);
    a.cut[1] = 2;
    a.cut[2] = 7;
    b.cut[1] = 3;
    b.cut[2] = 4;
    a.dev[0] = 2;
    a.x[0] = (partd_training_ckpt){1, 1, 1, 0x7};
    before(&a, &b);
    /* then the devices earlier in the list, whatever the sets */
    b.cut[1] = 2;
    b.cut[2] = 7;
    b.dev[0] = 1;
    b.x[0] = (partd_training_ckpt){1, 1, 1, 0xf};
    before(&b, &a);
    /* then per stage the smaller checkpoint set: fewer units, then the
     * earlier units */
    a.dev[0] = 1;
    b.x[0] = (partd_training_ckpt){1, 1, 1, 0x8};
    before(&b, &a);
    b.x[0] = (partd_training_ckpt){1, 1, 1, 0xb};
    before(&a, &b);
    b.x[0] = a.x[0];
    b.x[1] = (partd_training_ckpt){0, 0, 0, 0x1};
    before(&a, &b);
    b.x[1] = a.x[1];
    assert_int_equal(partd__training_plan_cmp(&a, &b), 0);
    /* a copy compares equal, and owns its arrays */
    partd_training_plan c = {0};
    assert_int_equal(partd__training_plan_copy(&c, &a), PARTD_OK);
    assert_int_equal(partd__training_plan_cmp(&c, &a), 0);
    assert_true(c.cut != a.cut && c.dev != a.dev && c.x != a.x);
    partd__training_plan_free(&c);
    partd__training_plan_free(&a);
    partd__training_plan_free(&b);
}

static void test_mask_order(void **state)
{
    (void)state;
    /* fewer units first */
    assert_true(partd__training_mask_cmp(0, 1) < 0);
    assert_true(partd__training_mask_cmp(0x80, 0x3) < 0);
    assert_true(partd__training_mask_cmp(0x7, 0x30) > 0);
    /* as many: the earlier units, the first that differs deciding */
    assert_true(partd__training_mask_cmp(0x9, 0x6) < 0);
    assert_true(partd__training_mask_cmp(0x5, 0x9) < 0);
    assert_true(partd__training_mask_cmp(0x8000000000000001ull, 0x3) > 0);
    assert_true(partd__training_mask_cmp(0x6, 0x9) > 0);
    assert_int_equal(partd__training_mask_cmp(0x2c, 0x2c), 0);
    assert_int_equal(partd__training_mask_cmp(0, 0), 0);
}

/* ---- a plan's step and memory, against the contract ---------------------------------- */

/* Rank r's memory from its list (contract, "Actions, time and memory"). */
static int64_t walk_memory(const partd_training_model *md, const partd_training_cfg *c,
                           const partd_training_plan *p, uint32_t r)
{
    uint32_t ck = partd__training_checkpointed(md), M = md->M;
    int64_t cur = 0, peak = 0;
    for (uint32_t i = c->lists.off[r]; i < c->lists.off[r + 1]; i++) {
        const partd_training_action *a = &c->lists.act[i];
        const partd_training_fig *g = &c->fig[a->stage];
        int checkpointed = a->mb < ck;
        int64_t held = g->in + g->act - (checkpointed ? p->x[a->stage].D : 0);
        if (a->kind == PARTD_TRAINING_F)
            cur += held;
        int64_t extra = (a->kind == PARTD_TRAINING_B || a->kind == PARTD_TRAINING_I) && checkpointed
                            ? p->x[a->stage].T
                            : 0;
        peak = cur + extra > peak ? cur + extra : peak;
        if (a->kind == PARTD_TRAINING_B || a->kind == PARTD_TRAINING_W)
            cur -= held;
    }
    assert_int_equal(cur, 0);
    /* the rank's parameters, a shared one once */
    uint32_t a[MAX_V], b[MAX_V], k = 0;
    for (uint32_t j = 0; j < c->V; j++)
        if (c->rank[j] == r) {
            a[k] = p->cut[j];
            b[k++] = p->cut[j + 1];
        }
    uint32_t *mark = calloc(md->n_res ? md->n_res : 1, sizeof *mark);
    int64_t P = partd__training_params_union(md, a, b, k, mark, 1);
    free(mark);
    return peak / M + (int64_t)ceil(md->opt->param_factor * (double)P + (double)(peak % M) / M);
}

/* The plan p (cuts and sets) timed and sized as the contract says. */
static void check_plan(const partd_training_model *md, partd_training_cfg *c,
                       partd_training_plan *p, double rate)
{
    uint32_t V = c->V, S = c->S;
    double F[MAX_V], B[MAX_V], I[MAX_V], R[MAX_V], W[MAX_V], delta[MAX_V];
    double M = md->M;
    partd_pipeline_window win = {0, 0, 0, 0};
    for (uint32_t j = 0; j < V; j++) {
        partd_training_fig g;
        partd__training_fig(md, &win, p->cut[j], p->cut[j + 1], &g);
        uint32_t r = partd_training_schedule_rank(c->sched, S, j);
        assert_int_equal(c->rank[j], r);
        double s = md->req->devices[c->dev[r]].speed;
        F[j] = g.f / s / M;
        B[j] = g.bw / s / M;
        I[j] = (g.bw - g.w) / s / M;
        W[j] = g.w / s / M;
        R[j] = p->x[j].R / s / M;
        delta[j] = j + 1 < V && partd_training_schedule_rank(c->sched, S, j + 1) != r
                       ? 1000.0 * (double)g.live_out / M / rate
                       : 0;
    }
    partd_training_lists l;
    partd_training_sim sim;
    assert_int_equal(partd_training_schedule_build(c->sched, S, c->v, md->M, &l), PARTD_OK);
    assert_int_equal(partd__training_sim_build(&l, &sim), PARTD_OK);
    partd_training_durations d = {F, B, I, R, W, delta, partd__training_checkpointed(md)};
    double want_busy[8], busy[8];
    double step = partd__training_sim_run(&sim, &d, want_busy);
    int64_t mem[8];
    partd__training_eval_plan(md, c, p, busy, mem);
    if (fabs(p->step - step) > 1e-12 * step)
        fail_msg("%s S=%u v=%u: step %.17g, the simulator's %.17g",
                 partd_training_schedule_name(c->sched), S, c->v, p->step, step);
    assert_int_equal(p->sched, c->sched);
    assert_int_equal(p->S, S);
    assert_int_equal(p->v, c->v);
    assert_int_equal(p->V, V);
    int feasible = 1;
    double memfrac = 0;
    int64_t shortfall = INT64_MIN;
    for (uint32_t r = 0; r < S; r++) {
        assert_int_equal(p->dev[r], c->dev[r]);
        assert_true(fabs(busy[r] - want_busy[r]) <= 1e-12 * want_busy[r]);
        int64_t want = walk_memory(md, c, p, r), cap = md->req->devices[c->dev[r]].memory_bytes;
        if (mem[r] != want)
            fail_msg("%s S=%u v=%u rank %u: memory %lld, the contract's %lld",
                     partd_training_schedule_name(c->sched), S, c->v, r, (long long)mem[r],
                     (long long)want);
        feasible &= want <= cap;
        memfrac = fmax(memfrac, (double)want / (double)cap);
        shortfall = want - cap > shortfall ? want - cap : shortfall;
    }
    assert_int_equal(p->feasible, feasible);
    assert_true(p->memfrac == memfrac);
    assert_int_equal(p->shortfall, shortfall);
    partd__training_sim_free(&sim);
    partd_training_lists_free(&l);
}

static void test_eval_plan_is_the_contracts(void **state)
{
    (void)state;
    static const char *const modes[] = {"never", "always", "except_last", "auto"};
    static const uint32_t orders[][2] = {{0, 1}, {1, 0}};
    const double rate = 1e5; /* 100 bytes a microbatch: 1 ms */
    uint64_t plans = 0;
    for (uint32_t M = 3; M <= 4; M++)
        for (size_t mode = 0; mode < 4; mode++) {
            char training[128];
            snprintf(training, sizeof training, ",\"microbatches\":%u,\"checkpoint\":\"%s\"", M,
                     modes[mode]);
            partd_request *req = request("1:700,2:900", training, rate);
            partd_training_model md;
            build(&md, req);
            for (int s = 0; s < PARTD_TRAINING_SCHEDULE_COUNT; s++)
                for (uint32_t S = 1; S <= 2; S++)
                    for (uint32_t v = 1; v <= 2; v++) {
                        if (partd_training_schedule_v(s, v) != v || S * v > N_UNITS ||
                            !partd_training_schedule_allows(s, S, v, M))
                            continue;
                        for (uint32_t o = 0; o < S; o++) {
                            partd_training_cfg c;
                            partd_training_plan p;
                            assert_int_equal(partd__training_cfg_build(&c, &md, s, S, v, orders[o]),
                                             PARTD_OK);
                            assert_int_equal(partd__training_plan_alloc(&p, S, c.V), PARTD_OK);
                            first_split(p.cut, c.V, N_UNITS);
                            do {
                                partd__training_eval_stages(&md, &c, p.cut);
                                assert_int_equal(
                                    partd__training_load_candidates(&c, p.cut, NULL, c.V, 1),
                                    PARTD_OK);
                                uint32_t pick[MAX_V] = {0};
                                do {
                                    set_x(&c, pick, &p);
                                    check_plan(&md, &c, &p, rate);
                                    plans++;
                                } while (next_sets(&c, pick));
                            } while (next_split(p.cut, c.V, N_UNITS));
                            partd__training_plan_free(&p);
                            partd__training_cfg_free(&c);
                        }
                    }
            partd__training_model_free(&md);
            partd_request_free(req);
        }
    assert_true(plans > 1000);
}

/* ---- the checkpoint choice of a rank of one stage ------------------------------------ */

/* Returns how many devices fit with the unit that costs nothing
 * checkpointed and nothing else recomputed. */
static int check_choice(partd_training_schedule s, uint32_t M)
{
    char training[128];
    snprintf(training, sizeof training, ",\"microbatches\":%u", M);
    /* every set's memory, on a device that holds them all */
    partd_request *req = request("1:100000", training, 1e10);
    partd_training_model md;
    build(&md, req);
    uint32_t dev = 0;
    partd_training_cfg c;
    partd_training_plan p;
    assert_int_equal(partd__training_cfg_build(&c, &md, s, 1, 1, &dev), PARTD_OK);
    assert_int_equal(partd__training_plan_alloc(&p, 1, 1), PARTD_OK);
    first_split(p.cut, 1, N_UNITS);
    partd__training_eval_stages(&md, &c, p.cut);
    assert_int_equal(partd__training_load_candidates(&c, p.cut, NULL, 1, 1), PARTD_OK);
    uint32_t n = c.cand_off[1];
    assert_int_equal(n, 1u << N_UNITS);
    partd_training_ckpt *set = malloc(n * sizeof *set);
    int64_t *mem = malloc(n * sizeof *mem);
    memcpy(set, c.cand, n * sizeof *set);
    for (uint32_t k = 0; k < n; k++)
        mem[k] = partd__training_eval_rank_memory(&md, &c, 0, &set[k]);
    partd__training_plan_free(&p);
    partd__training_cfg_free(&c);
    partd__training_model_free(&md);
    partd_request_free(req);

    /* every memory a set needs, and a byte less, as the device */
    int free_fits = 0;
    for (uint32_t q = 0; q < 2 * n; q++) {
        int64_t cap = mem[q / 2] - (int64_t)(q % 2);
        char devices[64];
        snprintf(devices, sizeof devices, "1:%lld", (long long)cap);
        req = request(devices, training, 1e10);
        build(&md, req);
        assert_int_equal(partd__training_cfg_build(&c, &md, s, 1, 1, &dev), PARTD_OK);
        assert_int_equal(partd__training_plan_alloc(&p, 1, 1), PARTD_OK);
        first_split(p.cut, 1, N_UNITS);
        partd__training_eval_stages(&md, &c, p.cut);
        assert_int_equal(partd__training_eval_choose(&md, &c, &p), PARTD_OK);
        double least_r = INFINITY;
        int64_t least_mem = INT64_MAX;
        for (uint32_t k = 0; k < n; k++) {
            if (mem[k] <= cap && set[k].R < least_r)
                least_r = set[k].R;
            least_mem = mem[k] < least_mem ? mem[k] : least_mem;
        }
        /* the choice is a set of the stage, with the memory it says */
        int64_t got = -1;
        for (uint32_t k = 0; k < n; k++)
            if (set[k].R == p.x[0].R && set[k].D == p.x[0].D && set[k].T == p.x[0].T)
                got = mem[k];
        assert_true(got >= 0);
        if (least_r < INFINITY) {
            if (!p.feasible || p.x[0].R != least_r)
                fail_msg("%s, %lld bytes: recomputes %g (fits: %d), the least that fits %g",
                         partd_training_schedule_name(s), (long long)cap, p.x[0].R, p.feasible,
                         least_r);
            assert_true(got <= cap);
            free_fits += least_r == 0 && p.x[0].D > 0;
        } else {
            assert_false(p.feasible);
            assert_int_equal(got, least_mem);
            assert_int_equal(p.shortfall, least_mem - cap);
        }
        partd__training_plan_free(&p);
        partd__training_cfg_free(&c);
        partd__training_model_free(&md);
        partd_request_free(req);
    }
    free(set);
    free(mem);
    return free_fits;
}

static void test_choose_one_stage(void **state)
{
    (void)state;
    /* GPipe holds both microbatches before the first backward: l.2's 90
     * bytes, free to recompute, save 45 (1180 -> 1135) */
    assert_true(check_choice(PARTD_TRAINING_GPIPE, 2) > 0);
    /* 1F1B on one rank holds one microbatch: a single unit's transient
     * takes back what it saves */
    check_choice(PARTD_TRAINING_1F1B, 3);
    check_choice(PARTD_TRAINING_INTERLEAVED_ZB, 2);
}

/* ---- bounds ------------------------------------------------------------------------ */

/* The least step of every plan of c: every split, every checkpoint set. */
static double least_step(const partd_training_model *md, partd_training_cfg *c)
{
    partd_training_plan p;
    assert_int_equal(partd__training_plan_alloc(&p, c->S, c->V), PARTD_OK);
    first_split(p.cut, c->V, N_UNITS);
    double best = INFINITY;
    do {
        partd__training_eval_stages(md, c, p.cut);
        assert_int_equal(partd__training_load_candidates(c, p.cut, NULL, c->V, 1), PARTD_OK);
        uint32_t pick[MAX_V] = {0};
        do {
            set_x(c, pick, &p);
            partd__training_eval_plan(md, c, &p, NULL, NULL);
            best = p.step < best ? p.step : best;
        } while (next_sets(c, pick));
    } while (next_split(p.cut, c->V, N_UNITS));
    partd__training_plan_free(&p);
    return best;
}

static void check_bounds(const char *devices, uint32_t M, double rate, double fluid_by_hand)
{
    char training[64];
    snprintf(training, sizeof training, ",\"microbatches\":%u", M);
    partd_request *req = request(devices, training, rate);
    partd_training_model md;
    build(&md, req);
    uint32_t n_dev = md.req->n_devices, dev[4], back[4];
    for (uint32_t r = 0; r < n_dev; r++) {
        dev[r] = r;
        back[r] = n_dev - 1 - r;
    }
    assert_true(fabs(partd__training_fluid(&md, dev, n_dev) - fluid_by_hand) < 1e-12);
    assert_true(fabs(partd__training_fluid(&md, back, n_dev) - fluid_by_hand) < 1e-12);
    uint32_t checked = 0;
    for (int s = 0; s < PARTD_TRAINING_SCHEDULE_COUNT; s++)
        for (uint32_t S = 1; S <= n_dev; S++)
            for (uint32_t v = 1; v <= 2; v++) {
                if (partd_training_schedule_v(s, v) != v || S * v > N_UNITS ||
                    !partd_training_schedule_allows(s, S, v, M))
                    continue;
                for (int o = 0; o < 2; o++) {
                    const uint32_t *order = o ? back : dev;
                    partd_training_cfg c;
                    assert_int_equal(partd__training_cfg_build(&c, &md, s, S, v, order), PARTD_OK);
                    double best = least_step(&md, &c);
                    double fluid = partd__training_fluid(&md, order, S);
                    uint32_t cut[MAX_V + 1];
                    first_split(cut, c.V, N_UNITS);
                    uint64_t work = 0;
                    double lb = partd__training_bound(&md, &c, cut, 50, INFINITY, &work);
                    if (fluid > best * (1 + 1e-12) || lb > best * (1 + 1e-9) || lb < fluid)
                        fail_msg("%s S=%u v=%u: fluid %g, bound %g, least step %g",
                                 partd_training_schedule_name(s), S, v, fluid, lb, best);
                    /* past `stop` the fluid bound stands */
                    assert_true(partd__training_bound(&md, &c, cut, 50, fluid / 2, &work) == fluid);
                    partd__training_cfg_free(&c);
                    checked++;
                }
            }
    assert_true(checked >= 8);
    partd__training_model_free(&md);
    partd_request_free(req);
}

static void test_bounds_below_every_plan(void **state)
{
    (void)state;
    /* all work over all speed: 30.5 / 3 */
    check_bounds("1:100000,2:100000", 4, 1e5, 30.5 / 3);
    /* l.3 (10.5 ms) over the fastest device is more than 30.5 / 3 */
    check_bounds("1:100000,1:100000,1:100000", 3, 2e4, 10.5);
    check_bounds("1:100000,1:100000,1:100000,1:100000", 4, 1e10, 10.5);
}

/* ---- the search against every plan ------------------------------------------------------ */

typedef struct ref {
    partd_training_plan best;
    int any;
    uint64_t plans;
} ref;

static void ref_config(const partd_training_model *md, ref *b, partd_training_schedule s,
                       uint32_t S, uint32_t v, const uint32_t *dev)
{
    partd_training_cfg c;
    partd_training_plan p;
    assert_int_equal(partd__training_cfg_build(&c, md, s, S, v, dev), PARTD_OK);
    assert_int_equal(partd__training_plan_alloc(&p, S, c.V), PARTD_OK);
    first_split(p.cut, c.V, N_UNITS);
    do {
        partd__training_eval_stages(md, &c, p.cut);
        assert_int_equal(partd__training_load_candidates(&c, p.cut, NULL, c.V, 1), PARTD_OK);
        uint32_t pick[MAX_V] = {0};
        do {
            set_x(&c, pick, &p);
            partd__training_eval_plan(md, &c, &p, NULL, NULL);
            b->plans++;
            if (!b->any || partd__training_plan_cmp(&p, &b->best) < 0) {
                assert_int_equal(partd__training_plan_copy(&b->best, &p), PARTD_OK);
                b->any = 1;
            }
        } while (next_sets(&c, pick));
    } while (next_split(p.cut, c.V, N_UNITS));
    partd__training_plan_free(&p);
    partd__training_cfg_free(&c);
}

/* Every sequence of S distinct devices (or the first S, in order). */
static void ref_devices(const partd_training_model *md, ref *b, partd_training_schedule s,
                        uint32_t S, uint32_t v, uint32_t *dev, uint32_t k, uint8_t *used)
{
    if (k == S) {
        ref_config(md, b, s, S, v, dev);
        return;
    }
    for (uint32_t d = 0; d < md->req->n_devices; d++) {
        if (used[d] || (!md->opt->device_order_auto && d != k))
            continue;
        used[d] = 1;
        dev[k] = d;
        ref_devices(md, b, s, S, v, dev, k + 1, used);
        used[d] = 0;
    }
}

static void ref_search(const partd_training_model *md, ref *b)
{
    const partd_training_options *o = md->opt;
    uint32_t n_dev = md->req->n_devices, max_s = n_dev < N_UNITS ? n_dev : N_UNITS;
    for (uint32_t S = o->stages ? o->stages : 1; S <= (o->stages ? o->stages : max_s); S++)
        for (int s = 0; s < PARTD_TRAINING_SCHEDULE_COUNT; s++) {
            if (!(o->schedules >> s & 1))
                continue;
            uint32_t fixed = partd_training_schedule_v(s, 0);
            uint32_t lo = fixed ? fixed : o->virtual_stages ? o->virtual_stages : 1;
            uint32_t hi = fixed ? fixed : o->virtual_stages ? o->virtual_stages : MAX_V;
            for (uint32_t v = lo; v <= hi; v++) {
                if (S * v > N_UNITS || !partd_training_schedule_allows(s, S, v, md->M))
                    continue;
                uint32_t dev[8];
                uint8_t used[8] = {0};
                ref_devices(md, b, s, S, v, dev, 0, used);
            }
        }
}

/* The search's plan is the best of every plan; with none that fits, it has
 * the least shortfall. Returns whether the plan checkpoints something. */
static int check_search(const char *devices, const char *training, double rate)
{
    partd_request *req = request(devices, training, rate);
    partd_training_model md;
    build(&md, req);
    ref b = {{0}, 0, 0};
    ref_search(&md, &b);
    assert_true(b.any && b.plans > 0);
    partd_training_found f;
    assert_int_equal(partd__training_search(&md, NULL, &f), PARTD_OK);
    const partd_training_plan *p = &f.best, *q = &b.best;
    assert_int_equal(f.found, q->feasible);
    assert_int_equal(p->feasible, q->feasible);
    if (q->feasible) {
        if (partd__training_plan_cmp(p, q) != 0)
            fail_msg("%s / %s: the search's %s S=%u v=%u step %.17g memfrac %g, every plan's best "
                     "%s S=%u v=%u step %.17g memfrac %g",
                     devices, training, partd_training_schedule_name(p->sched), p->S, p->v, p->step,
                     p->memfrac, partd_training_schedule_name(q->sched), q->S, q->v, q->step,
                     q->memfrac);
        assert_true(f.optimal);
        assert_true(f.lower_bound == p->step);
    } else {
        assert_int_equal(p->shortfall, q->shortfall);
    }
    int ckpt = 0;
    for (uint32_t j = 0; j < p->V; j++)
        ckpt |= p->x[j].D > 0;
    assert_true(md.stats->exhaustive);
    partd__training_found_free(&f);
    partd__training_plan_free(&b.best);
    partd__training_model_free(&md);
    partd_request_free(req);
    return ckpt;
}

static void test_search_is_the_best_plan(void **state)
{
    (void)state;
    int ckpt = 0;
    /* two devices, any order, every schedule, memory that makes plans
     * checkpoint or split */
    static const char *const two[] = {"1:100000,2:100000", "1:700,2:500", "2:560,1:900",
                                      "1:520,1:520", "1:460,2:460"};
    for (size_t k = 0; k < sizeof two / sizeof *two; k++) {
        ckpt += check_search(two[k], ",\"microbatches\":2,\"device_order\":\"auto\","
                                     "\"schedule\":\"auto\"",
                             1e5);
        ckpt += check_search(two[k], ",\"microbatches\":4,\"schedule\":\"auto\"", 1e4);
    }
    /* three devices, two alike */
    ckpt += check_search("1:600,2:450,1:600", ",\"microbatches\":3,\"device_order\":\"auto\"", 1e5);
    ckpt += check_search("1:600,2:450,1:600",
                         ",\"microbatches\":3,\"schedule\":[\"GPipe\",\"ZBVZeroBubble\"],"
                         "\"checkpoint\":\"except_last\"",
                         1e5);
    ckpt += check_search("1:900,2:700,1:900",
                         ",\"microbatches\":2,\"stages\":2,\"checkpoint\":\"always\","
                         "\"virtual_stages\":2,\"schedule\":\"auto\"",
                         1e5);
    assert_true(ckpt > 0);
    /* nothing fits: the least shortfall */
    check_search("1:200,2:150", ",\"microbatches\":2,\"device_order\":\"auto\"", 1e5);
    check_search("1:200,1:200,2:100", ",\"microbatches\":3,\"schedule\":\"auto\"", 1e5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan_order),
        cmocka_unit_test(test_mask_order),
        cmocka_unit_test(test_eval_plan_is_the_contracts),
        cmocka_unit_test(test_choose_one_stage),
        cmocka_unit_test(test_bounds_below_every_plan),
        cmocka_unit_test(test_search_is_the_best_plan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
