/*
 * test_training_stage.c - one stage's figures and its checkpoint sets
 * (lib/training/training_stage.c).
 *
 * A graph worked by hand (a parameter shared by two units, a get_attr read
 * by two units, a placeholder read twice, mem_latency_ms, backward_ms,
 * weight_grad_ms): every stage's forward, backward and weight-gradient
 * part (weight_grad_fraction 0.5 and 0.25), in, act, params and the bytes
 * live after it, through one window moved back and forth; the parameters
 * of several stages together, a shared one once. Then the checkpoint sets:
 * never the empty set alone, always/except_last the whole stage; under
 * auto exactly the sets no other beats in recomputation, bytes discarded
 * and transient (every subset of the stage enumerated here, units that
 * cost nothing to recompute among them), each giving its units back; with
 * masks every subset.
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
#include "training/training_stage.h"

static char text[16384];

static partd_request *decode(const char *nodes, const char *training)
{
    snprintf(text, sizeof text,
             "{\"graph\":{\"nodes\":[%s]},\"devices\":[{\"name\":\"d0\",\"memory_bytes\":100000}],"
             "\"options\":{\"mode\":\"training\",\"training\":{\"unit_depth\":2%s}}}",
             nodes, training);
    return tu_decode_ok(text);
}

static void build(partd_training_model *md, const partd_request *req)
{
    partd_problem pb;
    partd_problem_init(&pb);
    assert_int_equal(partd__training_model_build(md, req, &pb), PARTD_OK);
    partd_problem_free(&pb);
}

/* ---- figures, by hand -------------------------------------------------------- */

/* Units at depth 2: l.0 = {a0, a1}, l.1 = {b0, b1}, l.2 = {c0}, l.3 = {c1}.
 * Per node f, b, w (fraction 0.5 / 0.25):
 *   a0: 1, 2 (2 x 1), 1 / 0.5 (holds `tied`)
 *   a1: 3 (mem_latency), 4 (given), 1.5 (given)
 *   b0: 2, 4, 2 / 1 (param_bytes)
 *   b1: 1, 2, 1 / 0.5 (reads the get_attr w)
 *   c0: 1, 2, 1 / 0.5 (`tied` again, and `own`)
 *   c1: 0.5, 1 (given), 0.5 / 0.25 (reads w) */
#define HAND_NODES                                                                            \
    "{\"name\":\"x\",\"op\":\"placeholder\",\"output_bytes\":8},"                            \
    "{\"name\":\"w\",\"op\":\"get_attr\",\"output_bytes\":30},"                              \
    "{\"name\":\"a0\",\"op\":\"call_module\",\"module\":\"l.0.a\",\"inputs\":[\"x\"],"        \
    "\"output_bytes\":100,\"latency_ms\":1,\"params\":[{\"name\":\"tied\",\"bytes\":50}]},"   \
    "{\"name\":\"a1\",\"op\":\"call_module\",\"module\":\"l.0.b\",\"inputs\":[\"a0\"],"       \
    "\"output_bytes\":40,\"latency_ms\":2,\"mem_latency_ms\":3,\"backward_ms\":4,"           \
    "\"weight_grad_ms\":1.5},"                                                                \
    "{\"name\":\"b0\",\"op\":\"call_module\",\"module\":\"l.1\",\"inputs\":[\"a1\",\"x\"],"   \
    "\"output_bytes\":200,\"latency_ms\":2,\"param_bytes\":20},"                              \
    "{\"name\":\"b1\",\"op\":\"call_function\",\"module\":\"l.1\",\"inputs\":[\"b0\",\"w\"]," \
    "\"output_bytes\":10,\"latency_ms\":1},"                                                  \
    "{\"name\":\"c0\",\"op\":\"call_module\",\"module\":\"l.2\",\"inputs\":[\"b1\",\"a0\"],"  \
    "\"output_bytes\":60,\"latency_ms\":1,\"params\":[{\"name\":\"tied\",\"bytes\":50},"      \
    "{\"name\":\"own\",\"bytes\":7}]},"                                                       \
    "{\"name\":\"c1\",\"op\":\"call_function\",\"module\":\"l.3\",\"inputs\":[\"c0\",\"w\"]," \
    "\"output_bytes\":5,\"latency_ms\":0.5,\"backward_ms\":1},"                               \
    "{\"name\":\"output\",\"op\":\"output\",\"inputs\":[\"c1\"]}"

typedef struct want_fig {
    uint32_t a, b;
    double f, bw, w_half, w_quarter;
    int64_t in, act, params, live_out;
} want_fig;

/* in: the distinct nodes outside read (x once, the get_attr never);
 * params: `tied` once, w as 30 bytes; live_out: what crosses the cut after
 * the stage (x until b0, a0 until c0, ...). */
static const want_fig hand[] = {
    {0, 1, 4, 6, 2.5, 2.0, 8, 140, 50, 148},
    {1, 2, 3, 6, 3.0, 1.5, 48, 210, 50, 110},
    {2, 3, 1, 2, 1.0, 0.5, 110, 60, 57, 60},
    {3, 4, 0.5, 1, 0.5, 0.25, 60, 5, 30, 0},
    {0, 2, 7, 12, 5.5, 3.5, 8, 350, 100, 110},
    {1, 3, 4, 8, 4.0, 2.0, 148, 270, 107, 60},
    {2, 4, 1.5, 3, 1.5, 0.75, 110, 65, 87, 0},
    {1, 4, 4.5, 9, 4.5, 2.25, 148, 275, 107, 0},
    {0, 4, 8.5, 15, 7.0, 4.25, 8, 415, 107, 0},
};

static void check_fig(const partd_training_fig *g, const want_fig *x, int quarter)
{
    assert_int_equal(g->a, x->a);
    assert_int_equal(g->b, x->b);
    assert_true(fabs(g->f - x->f) < 1e-12);
    assert_true(fabs(g->bw - x->bw) < 1e-12);
    if (fabs(g->w - (quarter ? x->w_quarter : x->w_half)) >= 1e-12)
        fail_msg("[%u, %u): w %g", x->a, x->b, g->w);
    assert_int_equal(g->in, x->in);
    assert_int_equal(g->act, x->act);
    assert_int_equal(g->params, x->params);
    assert_int_equal(g->live_out, x->live_out);
}

static void test_figures_by_hand(void **state)
{
    (void)state;
    for (int quarter = 0; quarter < 2; quarter++) {
        partd_request *req = decode(HAND_NODES, quarter ? ",\"weight_grad_fraction\":0.25" : "");
        partd_training_model md;
        build(&md, req);
        assert_int_equal(md.n_units, 4);
        size_t n = sizeof hand / sizeof *hand;
        /* one window through every stage, forwards and back, and a fresh
         * one for each: the same figures */
        partd_pipeline_window w = {0, 0, 0, 0};
        for (size_t k = 0; k < 2 * n; k++) {
            const want_fig *x = &hand[k < n ? k : 2 * n - 1 - k];
            partd_training_fig g;
            partd__training_fig(&md, &w, x->a, x->b, &g);
            check_fig(&g, x, quarter);
            partd_pipeline_window fresh = {0, 0, 0, 0};
            partd__training_fig(&md, &fresh, x->a, x->b, &g);
            check_fig(&g, x, quarter);
        }
        partd__training_model_free(&md);
        partd_request_free(req);
    }
}

static int64_t union_of(const partd_training_model *md, const uint32_t *a, const uint32_t *b,
                        uint32_t k, uint32_t *mark, uint32_t *gen)
{
    ++*gen;
    return partd__training_params_union(md, a, b, k, mark, *gen);
}

static void test_params_union(void **state)
{
    (void)state;
    partd_request *req = decode(HAND_NODES, "");
    partd_training_model md;
    build(&md, req);
    uint32_t *mark = calloc(md.n_res ? md.n_res : 1, sizeof *mark), gen = 0;
    /* each stage alone: its params figure */
    for (size_t k = 0; k < sizeof hand / sizeof *hand; k++)
        assert_int_equal(union_of(&md, &hand[k].a, &hand[k].b, 1, mark, &gen), hand[k].params);
    /* l.0 and l.2 share `tied`: 50 + 57 - 50 */
    uint32_t a1[] = {0, 2}, b1[] = {1, 3};
    assert_int_equal(union_of(&md, a1, b1, 2, mark, &gen), 57);
    /* l.1 and l.3 both read the get_attr: 50 + 30 - 30 */
    uint32_t a2[] = {1, 3}, b2[] = {2, 4};
    assert_int_equal(union_of(&md, a2, b2, 2, mark, &gen), 50);
    /* the halves of the graph: 100 + 87 - 50 - 30, the whole graph's */
    uint32_t a3[] = {2, 0}, b3[] = {4, 2};
    assert_int_equal(union_of(&md, a3, b3, 2, mark, &gen), 107);
    /* sharing nothing: the sum (l.0's 50, l.1's anonymous 20 and w's 30) */
    uint32_t a4[] = {0, 1}, b4[] = {1, 2};
    assert_int_equal(union_of(&md, a4, b4, 2, mark, &gen), 100);
    /* every mark was set: a new generation counts afresh */
    for (uint32_t x = 0; x < md.n_res; x++)
        assert_true(mark[x] <= gen);
    assert_int_equal(union_of(&md, a1, b1, 2, mark, &gen), 57);
    free(mark);
    partd__training_model_free(&md);
    partd_request_free(req);
}

/* ---- checkpoint sets -------------------------------------------------------------- */

/* A generated chain of n units of two operations each: unit u's first
 * operation reads the previous unit's last (x for unit 0) and, for some
 * units, a skip from an earlier unit's first; its second reads its first.
 * The test knows every reader, so it works out what each unit discards. */
#define MAX_UNITS 9
#define OPS (2 * MAX_UNITS)

typedef struct chain {
    uint32_t n;
    double lat[OPS];
    int64_t bytes[OPS];
    int skip[OPS];             /* an extra input (operation index), or -1 */
} chain;

/* Units 1 and 8 cost nothing to recompute; in the whole chain 5 and 7
 * discard the same bytes at different costs, 0, 1 and 2 nothing (skips
 * read them). */
static const chain CHAIN = {
    MAX_UNITS,
    {1, 1, 0, 0, 2, 1, 1, 0, 1, 1, 3, 0, 0.5, 0.5, 1, 1, 0, 0},
    {100, 10, 60, 10, 100, 20, 30, 10, 200, 10, 60, 40, 10, 30, 60, 40, 70, 30},
    {-1, -1, -1, -1, -1, -1, 2, -1, -1, -1, 4, -1, -1, -1, 0, -1, -1, -1},
};

static const char *chain_json(const chain *c)
{
    static char nodes[8192];
    size_t len = (size_t)snprintf(nodes, sizeof nodes,
                                  "{\"name\":\"x\",\"op\":\"placeholder\",\"output_bytes\":8}");
    for (uint32_t i = 0; i < 2 * c->n; i++) {
        char in[32];
        if (i == 0)
            snprintf(in, sizeof in, "\"x\"");
        else if (c->skip[i] >= 0)
            snprintf(in, sizeof in, "\"o%u\",\"o%d\"", i - 1, c->skip[i]);
        else
            snprintf(in, sizeof in, "\"o%u\"", i - 1);
        len += (size_t)snprintf(nodes + len, sizeof nodes - len,
                                ",{\"name\":\"o%u\",\"op\":\"call_module\",\"module\":\"l.%u.%c\","
                                "\"inputs\":[%s],\"output_bytes\":%lld,\"latency_ms\":%g}",
                                i, i / 2, i % 2 ? 'b' : 'a', in, (long long)c->bytes[i], c->lat[i]);
    }
    snprintf(nodes + len, sizeof nodes - len, ",{\"name\":\"output\",\"op\":\"output\",\"inputs\":[\"o%u\"]}",
             2 * c->n - 1);
    return nodes;
}

/* What unit u discards in the stage [a, b): the outputs of its operations
 * that no operation of the stage outside u reads. */
static int64_t discards(const chain *c, uint32_t a, uint32_t b, uint32_t u)
{
    int64_t d = 0;
    for (uint32_t i = 2 * u; i < 2 * u + 2; i++) {
        int read = 0;
        for (uint32_t r = 2 * a; r < 2 * b; r++)
            if (r / 2 != u && (r == i + 1 || c->skip[r] == (int)i))
                read = 1;
        if (!read)
            d += c->bytes[i];
    }
    return d;
}

typedef struct triple {
    double R;
    int64_t D, T;
} triple;

/* Every subset of the stage's units: its figures (index = mask). */
static void subsets(const chain *c, uint32_t a, uint32_t b, triple *out)
{
    uint32_t n = b - a;
    for (uint32_t mask = 0; mask < 1u << n; mask++) {
        triple t = {0, 0, 0};
        for (uint32_t i = 0; i < n; i++)
            if (mask >> i & 1) {
                int64_t d = discards(c, a, b, a + i);
                t.R += c->lat[2 * (a + i)] + c->lat[2 * (a + i) + 1];
                t.D += d;
                t.T = d > t.T ? d : t.T;
            }
        out[mask] = t;
    }
}

static int beats(const triple *x, const triple *y)
{
    return x->R <= y->R && x->D >= y->D && x->T <= y->T &&
           (x->R < y->R || x->D > y->D || x->T < y->T);
}

static int same(const triple *x, const triple *y)
{
    return x->R == y->R && x->D == y->D && x->T == y->T;
}

/* The candidates of [a, b) are exactly the distinct figures no subset
 * beats, R ascending from the empty set, and each gives back units with
 * its figures. */
static void check_auto(partd_training_ckpts *cs, const chain *c, uint32_t a, uint32_t b, int masks)
{
    static triple all[1u << MAX_UNITS];
    uint32_t n = b - a, n_sub = 1u << n;
    subsets(c, a, b, all);
    assert_int_equal(partd__training_ckpts_of(cs, a, b, masks), PARTD_OK);
    if (masks && n <= PARTD_TRAINING_MASK_UNITS) {
        /* every subset, its mask, its figures */
        assert_int_equal(cs->n, n_sub);
        for (uint32_t k = 0; k < n_sub; k++) {
            triple got = {cs->c[k].R, cs->c[k].D, cs->c[k].T};
            assert_true(cs->c[k].mask < n_sub);
            if (!same(&got, &all[cs->c[k].mask]))
                fail_msg("[%u, %u) mask %llx: R %g D %lld T %lld", a, b,
                         (unsigned long long)cs->c[k].mask, got.R, (long long)got.D, (long long)got.T);
            for (uint32_t q = 0; q < k; q++)
                assert_true(cs->c[q].mask != cs->c[k].mask);
        }
    } else {
        uint32_t n_front = 0;
        for (uint32_t s = 0; s < n_sub; s++) {
            int beaten = 0, first = 1;
            for (uint32_t t = 0; t < n_sub && !beaten; t++) {
                beaten = beats(&all[t], &all[s]);
                if (t < s && same(&all[t], &all[s]))
                    first = 0;
            }
            if (beaten || !first)
                continue;
            n_front++;
            int found = 0;
            for (uint32_t k = 0; k < cs->n; k++) {
                triple got = {cs->c[k].R, cs->c[k].D, cs->c[k].T};
                found += same(&got, &all[s]);
            }
            if (found != 1)
                fail_msg("[%u, %u): (R %g, D %lld, T %lld) is a candidate %d times", a, b, all[s].R,
                         (long long)all[s].D, (long long)all[s].T, found);
        }
        assert_int_equal(cs->n, n_front);
        assert_true(cs->c[0].R == 0 && cs->c[0].D == 0 && cs->c[0].T == 0);
        for (uint32_t k = 1; k < cs->n; k++)
            assert_true(cs->c[k - 1].R <= cs->c[k].R);
    }
    /* each candidate's units have its figures */
    uint32_t units[MAX_UNITS], n_units;
    partd_training_ckpt *copy = malloc(cs->n * sizeof *copy);
    uint32_t n_cand = cs->n;
    memcpy(copy, cs->c, n_cand * sizeof *copy);
    for (uint32_t k = 0; k < n_cand; k++) {
        assert_int_equal(partd__training_ckpt_units(cs, a, b, &copy[k], units, &n_units), PARTD_OK);
        uint32_t mask = 0;
        for (uint32_t i = 0; i < n_units; i++) {
            assert_true(units[i] >= a && units[i] < b);
            assert_true(i == 0 || units[i - 1] < units[i]);
            mask |= 1u << (units[i] - a);
        }
        triple got = {copy[k].R, copy[k].D, copy[k].T};
        if (!same(&got, &all[mask]))
            fail_msg("[%u, %u) candidate %u: units %x have R %g D %lld T %lld, it says %g %lld %lld",
                     a, b, k, mask, all[mask].R, (long long)all[mask].D, (long long)all[mask].T,
                     got.R, (long long)got.D, (long long)got.T);
        if (copy[k].mask)
            assert_int_equal(mask, copy[k].mask);
    }
    free(copy);
}

static void test_auto_candidates_are_the_frontier(void **state)
{
    (void)state;
    partd_request *req = decode(chain_json(&CHAIN), "");
    partd_training_model md;
    build(&md, req);
    assert_int_equal(md.n_units, MAX_UNITS);
    partd_training_ckpts cs;
    assert_int_equal(partd__training_ckpts_init(&cs, &md), PARTD_OK);
    static const uint32_t stages[][2] = {{0, 9}, {0, 8}, {1, 9}, {0, 3}, {2, 7}, {4, 9},
                                         {5, 8}, {8, 9}, {1, 2}, {6, 9}};
    for (size_t k = 0; k < sizeof stages / sizeof *stages; k++)
        for (int masks = 0; masks < 2; masks++)
            check_auto(&cs, &CHAIN, stages[k][0], stages[k][1], masks);
    partd__training_ckpts_free(&cs);
    partd__training_model_free(&md);
    partd_request_free(req);
}

/* never: the empty set; always and except_last: the whole stage as one
 * unit (R its forward, D = T its activations), its units every unit (none
 * for except_last with one microbatch). */
static void check_mode(const char *mode, uint32_t M, int whole, int units_back)
{
    char training[128];
    snprintf(training, sizeof training, ",\"checkpoint\":\"%s\",\"microbatches\":%u", mode, M);
    partd_request *req = decode(chain_json(&CHAIN), training);
    partd_training_model md;
    build(&md, req);
    partd_training_ckpts cs;
    assert_int_equal(partd__training_ckpts_init(&cs, &md), PARTD_OK);
    for (uint32_t a = 0; a < MAX_UNITS; a++)
        for (uint32_t b = a + 1; b <= MAX_UNITS; b++)
            for (int masks = 0; masks < 2; masks++) {
                assert_int_equal(partd__training_ckpts_of(&cs, a, b, masks), PARTD_OK);
                assert_int_equal(cs.n, 1);
                double f = 0;
                int64_t act = 0;
                for (uint32_t i = 2 * a; i < 2 * b; i++) {
                    f += CHAIN.lat[i];
                    act += CHAIN.bytes[i];
                }
                const partd_training_ckpt *x = &cs.c[0];
                if (whole) {
                    assert_true(x->R == f);
                    assert_int_equal(x->D, act);
                    assert_int_equal(x->T, act);
                    assert_int_equal(x->mask, (1u << (b - a)) - 1);
                } else {
                    assert_true(x->R == 0 && x->D == 0 && x->T == 0 && x->mask == 0);
                }
                uint32_t units[MAX_UNITS], n_units;
                partd_training_ckpt keep = *x;
                assert_int_equal(partd__training_ckpt_units(&cs, a, b, &keep, units, &n_units),
                                 PARTD_OK);
                assert_int_equal(n_units, units_back ? b - a : 0);
                for (uint32_t i = 0; i < n_units; i++)
                    assert_int_equal(units[i], a + i);
            }
    assert_int_equal(partd__training_checkpointed(&md),
                     strcmp(mode, "never") == 0 ? 0 : strcmp(mode, "except_last") == 0 ? M - 1 : M);
    partd__training_ckpts_free(&cs);
    partd__training_model_free(&md);
    partd_request_free(req);
}

static void test_fixed_modes(void **state)
{
    (void)state;
    check_mode("never", 3, 0, 0);
    check_mode("always", 3, 1, 1);
    check_mode("always", 1, 1, 1);
    check_mode("except_last", 3, 1, 1);
    check_mode("except_last", 1, 1, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_figures_by_hand),
        cmocka_unit_test(test_params_union),
        cmocka_unit_test(test_auto_candidates_are_the_frontier),
        cmocka_unit_test(test_fixed_modes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
