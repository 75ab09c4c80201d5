/*
 * test_training_search.c - the training planner's exact search
 * (lib/training_search.c).
 *
 * Small random requests (2 to 6 units, 1 to 4 devices of mixed memory and
 * speed, gpipe and 1f1b, several microbatch counts, device_order given and
 * auto, stages auto or fixed) are built into the planner's model and stage
 * table (training_model.h), and the search's answer is compared with an
 * enumeration of every stage count, every split into contiguous ranges and
 * every device order, scored from the same table: the least step
 * (sum of stage times + (M - 1) x largest), or in shortfall mode the least
 * largest shortfall. The answer's picks must be a valid plan (ranges cover
 * the units in order, distinct devices, their classes, k per position) whose
 * score is the optimum. Also: the search limit (PARTD_ETOOBIG) and a raised
 * cancel flag (PARTD_ECANCELLED).
 */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cancel.h"
#include "partd.h"
#include "training_model.h"
#include "training_search.h"

#define MAXD 4

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static int irand(int lo, int hi)
{
    return lo + (int)(rnd() % (uint64_t)(hi - lo + 1));
}

static char text[16384];

/* n units m0..m{n-1} in a chain, devices, options.training. */
static void random_request(uint32_t n, uint32_t n_dev, const char *training)
{
    size_t len = (size_t)snprintf(text, sizeof text,
                                  "{\"graph\":{\"nodes\":[{\"name\":\"x\",\"op\":\"placeholder\"}");
    for (uint32_t u = 0; u < n; u++) {
        char input[16] = "x";
        if (u)
            snprintf(input, sizeof input, "u%u", u - 1);
        len += (size_t)snprintf(text + len, sizeof text - len,
                                ",{\"name\":\"u%u\",\"op\":\"call_module\",\"module\":\"m%u\","
                                "\"inputs\":[\"%s\"],\"output_bytes\":%d,\"latency_ms\":%d,"
                                "\"backward_ms\":%d}",
                                u, u, input, irand(1, 40) * 25, irand(1, 9), irand(1, 20));
    }
    len += (size_t)snprintf(text + len, sizeof text - len,
                            ",{\"name\":\"output\",\"op\":\"output\",\"inputs\":[\"u%u\"]}]},"
                            "\"devices\":[",
                            n - 1);
    for (uint32_t d = 0; d < n_dev; d++)
        len += (size_t)snprintf(text + len, sizeof text - len,
                                "%s{\"name\":\"d%u\",\"memory_bytes\":%d,\"speed\":%s}",
                                d ? "," : "", d, irand(4, 24) * 250,
                                rnd() % 2 ? "1" : "2");
    snprintf(text + len, sizeof text - len,
             "],\"options\":{\"mode\":\"training\",\"transfer_bytes_per_sec\":100000,"
             "\"training\":{\"unit_depth\":1,%s}}}",
             training);
}

/* ---- the enumeration ------------------------------------------------------------ */

typedef struct brute {
    const tr_model *md;
    uint32_t S;
    double best;
    double t[MAXD];
} brute;

/* The value of the stage [a, b) at position p of S on class cls, from its
 * row; INFINITY when the range is not a candidate stage. */
static double cell(const tr_model *md, uint32_t a, uint32_t b, uint32_t cls, uint32_t p,
                   uint32_t S)
{
    if (b - a > md->len[a])
        return INFINITY;
    tr_rows *rows;
    const double *row;
    assert_int_equal(tr_rows_init(md, &rows), PARTD_OK);
    assert_int_equal(tr_row(rows, a, b - a, &row), PARTD_OK);
    double v = row[tr_row_index(md, a, b, cls, tr_kidx(md, tr_k(md, S - p)))];
    tr_rows_free(rows);
    return v;
}

static double score(const tr_model *md, const double *t, uint32_t S)
{
    double sum = 0, max = 0;
    for (uint32_t p = 0; p < S; p++) {
        sum += t[p];
        max = t[p] > max ? t[p] : max;
    }
    return md->shortfall ? max : sum + ((double)md->M - 1) * max;
}

static void enumerate(brute *bf, uint32_t a, uint32_t p, uint32_t used)
{
    const tr_model *md = bf->md;
    if (p == bf->S) {
        if (a == md->n_units) {
            double v = score(md, bf->t, bf->S);
            if (v < bf->best)
                bf->best = v;
        }
        return;
    }
    for (uint32_t b = a + 1; b + (bf->S - p - 1) <= md->n_units; b++)
        for (uint32_t dev = 0; dev < md->req->n_devices; dev++) {
            if (!md->opt->device_order_auto && dev != p)
                continue;
            if (used >> dev & 1)
                continue;
            double t = cell(md, a, b, md->dev_class[dev], p, bf->S);
            if (isinf(t))
                continue;
            bf->t[p] = t;
            enumerate(bf, b, p + 1, used | 1u << dev);
        }
}

static double brute_best(const tr_model *md)
{
    brute bf = {.md = md, .best = INFINITY};
    uint32_t lo = md->opt->stages ? md->opt->stages : 1;
    uint32_t hi = md->opt->stages ? md->opt->stages : md->max_stages;
    for (bf.S = lo; bf.S <= hi; bf.S++)
        enumerate(&bf, 0, 0, 0);
    return bf.best;
}

/* The solution is a plan; returns its score. */
static double solution_score(const tr_model *md, const tr_solution *sol)
{
    double t[MAXD];
    uint32_t used = 0, a = 0;
    assert_true(sol->S >= 1 && sol->S <= md->max_stages && sol->S <= MAXD);
    if (md->opt->stages)
        assert_int_equal(sol->S, md->opt->stages);
    for (uint32_t p = 0; p < sol->S; p++) {
        const tr_pick *pk = &sol->stages[p];
        assert_int_equal(pk->a, a);
        assert_true(pk->b > pk->a && pk->b <= md->n_units);
        assert_true(pk->device < md->req->n_devices);
        assert_false(used >> pk->device & 1);
        used |= 1u << pk->device;
        if (!md->opt->device_order_auto)
            assert_int_equal(pk->device, p);
        assert_int_equal(pk->cls, md->dev_class[pk->device]);
        assert_int_equal(pk->k, tr_k(md, sol->S - p));
        t[p] = cell(md, pk->a, pk->b, pk->cls, p, sol->S);
        assert_false(isinf(t[p]));
        a = pk->b;
    }
    assert_int_equal(a, md->n_units);
    return score(md, t, sol->S);
}

static int close_to(double x, double y)
{
    return fabs(x - y) <= 1e-9 * fmax(1, fabs(y));
}

/* Builds the model and the table (shortfall or not) and compares. Returns
 * 1 when a plan was found. */
static int compare(int shortfall, uint32_t *n_found)
{
    partd_request *req = tu_decode_ok(text);
    partd_problem pb;
    partd_problem_init(&pb);
    tr_model md;
    int rc = tr_model_build(&md, req, &pb);
    if (rc != PARTD_OK)
        fprintf(stderr, "model: %s %s\n", partd_strerror(rc), pb.detail ? pb.detail : "");
    assert_int_equal(rc, PARTD_OK);
    assert_int_equal(tr_ranges_build(&md, shortfall, NULL, &pb), PARTD_OK);
    tr_solution sol;
    assert_int_equal(tr_search(&md, NULL, &sol), PARTD_OK);
    double want = brute_best(&md);
    if (isinf(want)) {
        assert_int_equal(sol.found, 0);
    } else {
        assert_int_equal(sol.found, 1);
        double got = solution_score(&md, &sol);
        if (!close_to(got, want))
            fprintf(stderr, "search %.17g, enumeration %.17g\n%s\n", got, want, text);
        assert_true(close_to(got, want));
        (*n_found)++;
    }
    int found = sol.found;
    tr_solution_free(&sol);
    tr_model_free(&md);
    partd_problem_free(&pb);
    partd_request_free(req);
    return found;
}

static void test_against_enumeration(void **state)
{
    (void)state;
    static const char *const schedules[] = {"gpipe", "1f1b"};
    static const char *const orders[] = {"given", "auto"};
    static const uint32_t mbs[] = {1, 2, 3, 8};
    uint32_t found = 0, not_found = 0, shortfall_found = 0;
    char training[256];
    for (int trial = 0; trial < 240; trial++) {
        uint32_t n = (uint32_t)irand(2, 6), n_dev = (uint32_t)irand(1, MAXD);
        uint32_t max_s = n < n_dev ? n : n_dev;
        int fixed = rnd() % 3 == 0 ? irand(1, (int)max_s) : 0;
        char stages[32] = "\"auto\"";
        if (fixed)
            snprintf(stages, sizeof stages, "%d", fixed);
        snprintf(training, sizeof training,
                 "\"schedule\":\"%s\",\"device_order\":\"%s\",\"microbatches\":%u,"
                 "\"stages\":%s,\"checkpoint\":\"%s\"",
                 schedules[trial % 2], orders[(trial / 2) % 2], mbs[(trial / 4) % 4], stages,
                 rnd() % 2 ? "auto" : "never");
        random_request(n, n_dev, training);
        if (!compare(0, &found)) {
            not_found++;
            compare(1, &shortfall_found);
        }
    }
    /* both kinds of outcome were exercised */
    assert_true(found >= 40);
    assert_true(not_found >= 10);
    assert_int_equal(shortfall_found, not_found);
}

/* One device class per device, each with room for every stage: the count
 * vectors of device_order auto (2^devices) times the units pass the limit. */
static void test_search_limit(void **state)
{
    (void)state;
    const uint32_t n_dev = 24;
    size_t len = (size_t)snprintf(text, sizeof text,
                                  "{\"graph\":{\"nodes\":[{\"name\":\"x\",\"op\":\"placeholder\"},"
                                  "{\"name\":\"u0\",\"op\":\"call_module\",\"module\":\"m0\","
                                  "\"inputs\":[\"x\"],\"output_bytes\":10,\"latency_ms\":1},"
                                  "{\"name\":\"u1\",\"op\":\"call_module\",\"module\":\"m1\","
                                  "\"inputs\":[\"u0\"],\"output_bytes\":10,\"latency_ms\":1},"
                                  "{\"name\":\"output\",\"op\":\"output\",\"inputs\":[\"u1\"]}]},"
                                  "\"devices\":[");
    for (uint32_t d = 0; d < n_dev; d++)
        len += (size_t)snprintf(text + len, sizeof text - len,
                                "%s{\"name\":\"d%u\",\"memory_bytes\":%u}", d ? "," : "", d,
                                100000 + d);
    snprintf(text + len, sizeof text - len,
             "],\"options\":{\"mode\":\"training\",\"training\":{\"unit_depth\":1,"
             "\"device_order\":\"auto\"}}}");
    partd_request *req = tu_decode_ok(text);
    partd_problem pb;
    partd_problem_init(&pb);
    tr_model md;
    assert_int_equal(tr_model_build(&md, req, &pb), PARTD_OK);
    assert_int_equal(md.n_classes, n_dev);
    assert_int_equal(tr_ranges_build(&md, 0, NULL, &pb), PARTD_OK);
    tr_solution sol;
    assert_int_equal(tr_search(&md, NULL, &sol), PARTD_ETOOBIG);
    assert_int_equal(sol.found, 0);
    assert_null(sol.stages);
    tr_model_free(&md);
    partd_problem_free(&pb);
    partd_request_free(req);
}

static void test_cancelled(void **state)
{
    (void)state;
    static const char *const orders[] = {"given", "auto"};
    for (int k = 0; k < 2; k++) {
        char training[128];
        snprintf(training, sizeof training, "\"device_order\":\"%s\",\"microbatches\":4",
                 orders[k]);
        rng = 42;
        random_request(6, 4, training);
        partd_request *req = tu_decode_ok(text);
        partd_problem pb;
        partd_problem_init(&pb);
        tr_model md;
        assert_int_equal(tr_model_build(&md, req, &pb), PARTD_OK);
        assert_int_equal(tr_ranges_build(&md, 0, NULL, &pb), PARTD_OK);
        partd_cancel cancel;
        partd_cancel_init(&cancel, 0);
        atomic_store(&cancel.cancelled, 1);
        tr_solution sol;
        assert_int_equal(tr_search(&md, &cancel, &sol), PARTD_ECANCELLED);
        assert_int_equal(sol.found, 0);
        tr_solution_free(&sol);
        tr_model_free(&md);
        partd_problem_free(&pb);
        partd_request_free(req);
    }
}

/* device_order given: the 1f1b tails of the stage counts in batches (the
 * least room, md.tail_cap) give the same plan as all in one pass. */
static void test_given_tails_in_batches(void **state)
{
    (void)state;
    uint32_t batched = 0, found = 0;
    rng = 7;
    for (int trial = 0; trial < 40; trial++) {
        char training[160];
        snprintf(training, sizeof training,
                 "\"schedule\":\"1f1b\",\"microbatches\":%d,\"checkpoint\":\"%s\"",
                 irand(3, 8), rnd() % 2 ? "auto" : "never");
        random_request((uint32_t)irand(8, 16), (uint32_t)irand(3, 8), training);
        tr_solution sol[2];
        uint64_t rows[2];
        for (int k = 0; k < 2; k++) {
            partd_request *req = tu_decode_ok(text);
            partd_problem pb;
            partd_problem_init(&pb);
            tr_model md;
            assert_int_equal(tr_model_build(&md, req, &pb), PARTD_OK);
            if (k)
                md.tail_cap = (md.M - 1 < md.max_stages ? md.M - 1 : md.max_stages) + 1;
            assert_int_equal(tr_ranges_build(&md, 0, NULL, &pb), PARTD_OK);
            assert_int_equal(tr_search(&md, NULL, &sol[k]), PARTD_OK);
            rows[k] = md.stats->rows;
            tr_model_free(&md);
            partd_problem_free(&pb);
            partd_request_free(req);
        }
        assert_int_equal(sol[0].found, sol[1].found);
        assert_int_equal(sol[0].S, sol[1].S);
        for (uint32_t p = 0; p < sol[0].S; p++) {
            const tr_pick *x = &sol[0].stages[p], *y = &sol[1].stages[p];
            assert_true(x->a == y->a && x->b == y->b && x->cls == y->cls &&
                        x->device == y->device && x->k == y->k);
        }
        found += sol[0].found;
        batched += rows[1] > rows[0]; /* more passes over the rows: batches */
        tr_solution_free(&sol[0]);
        tr_solution_free(&sol[1]);
    }
    assert_true(found >= 10);
    assert_true(batched >= 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_against_enumeration),
        cmocka_unit_test(test_search_limit),
        cmocka_unit_test(test_cancelled),
        cmocka_unit_test(test_given_tails_in_batches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
