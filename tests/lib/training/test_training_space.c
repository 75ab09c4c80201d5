/*
 * test_training_space.c - the configurations of a training request
 * (lib/training/training_space.h).
 *
 * On stacks of one-node units over devices of given speeds:
 *   - every configuration the options allow, in the order of the tie keys
 *     (ranks, schedule, v, device sequence), each (ranks, schedule, v) a
 *     combo of every sequence of device classes, each class's devices in
 *     list order; built, a configuration has its ranks and devices;
 *   - past the cap, the sequences left out are bounded by the fluid bound
 *     of the fastest devices;
 *   - the number of splits, C(n - 1, V - 1), saturating.
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
#include "training/training_space.h"

static char text[65536];

/* n units of one node each on devices of the speeds; training options
 * `extra` appended. */
static partd_request *stack(uint32_t n, const double *speed, uint32_t S, const char *extra)
{
    size_t len = (size_t)snprintf(text, sizeof text,
                                  "{\"graph\":{\"nodes\":[{\"name\":\"x\",\"op\":\"placeholder\","
                                  "\"output_bytes\":64}");
    for (uint32_t u = 0; u < n; u++) {
        char in[16] = "x";
        if (u)
            snprintf(in, sizeof in, "n%u", u - 1);
        len += (size_t)snprintf(text + len, sizeof text - len,
                                ",{\"name\":\"n%u\",\"op\":\"call_module\",\"module\":\"l.%u\","
                                "\"inputs\":[\"%s\"],\"output_bytes\":64,\"latency_ms\":%u}",
                                u, u, in, 1 + u % 3);
    }
    len += (size_t)snprintf(text + len, sizeof text - len, "]},\"devices\":[");
    for (uint32_t r = 0; r < S; r++)
        len += (size_t)snprintf(text + len, sizeof text - len,
                                "%s{\"name\":\"d%u\",\"memory_bytes\":1000000000,\"speed\":%g}",
                                r ? "," : "", r, speed[r]);
    snprintf(text + len, sizeof text - len,
             "],\"options\":{\"mode\":\"training\",\"transfer_bytes_per_sec\":1e6,"
             "\"training\":{\"microbatches\":4,\"unit_depth\":2,\"checkpoint\":\"never\"%s}}}",
             extra);
    return tu_decode_ok(text);
}

static void model(partd_training_model *md, const partd_request *req)
{
    partd_problem pb;
    partd_problem_init(&pb);
    assert_int_equal(partd__training_model_build(md, req, &pb), PARTD_OK);
    partd_problem_free(&pb);
}

static const uint32_t *devs(const partd_training_space *sp, uint32_t k)
{
    return sp->dev + sp->d[k].dev_off;
}

static void test_every_configuration_in_tie_order(void **state)
{
    (void)state;
    /* three devices, two classes: d0 and d2 alike, d1 faster */
    const double speed[] = {1, 2, 1};
    partd_request *req = stack(4, speed, 3, ",\"device_order\":\"auto\",\"schedule\":\"1F1B\"");
    partd_training_model md;
    model(&md, req);
    partd_training_space sp;
    assert_int_equal(partd__training_space_enumerate(&sp, &md, NULL), PARTD_OK);
    assert_false(sp.partial);
    /* 1F1B has v = 1: S = 1 (2 class sequences), 2 (4: AA, AB, BA... as
     * classes A = {d0, d2}, B = {d1}: AA, AB, BA), 3 (AAB, ABA, BAA) */
    static const uint32_t want[][3] = {{0}, {1}, {0, 2}, {0, 1}, {1, 0},
                                       {0, 2, 1}, {0, 1, 2}, {1, 0, 2}};
    static const uint32_t want_S[] = {1, 1, 2, 2, 2, 3, 3, 3};
    assert_int_equal(sp.n, 8);
    assert_int_equal(sp.n_combos, 3);
    for (uint32_t k = 0; k < sp.n; k++) {
        const partd_training_desc *d = &sp.d[k];
        assert_int_equal(d->S, want_S[k]);
        assert_int_equal(d->v, 1);
        assert_int_equal(d->combo, d->S - 1);
        assert_int_equal(d->nseq, d->S == 1 ? 2 : 3);
        assert_int_equal(d->seq, k - (d->S == 1 ? 0 : d->S == 2 ? 2 : 5));
        assert_memory_equal(devs(&sp, k), want[k], d->S * sizeof(uint32_t));
        partd_training_cfg c;
        assert_int_equal(partd__training_space_build(&sp, k, &c), PARTD_OK);
        assert_int_equal(c.S, d->S);
        assert_int_equal(c.V, d->S);
        assert_memory_equal(c.dev, want[k], d->S * sizeof(uint32_t));
        partd__training_cfg_free(&c);
    }
    partd__training_space_free(&sp);
    partd__training_model_free(&md);
    partd_request_free(req);

    /* the given order: one sequence per rank count, the devices in list order */
    req = stack(4, speed, 3, ",\"device_order\":\"given\",\"schedule\":\"1F1B\",\"stages\":2");
    model(&md, req);
    assert_int_equal(partd__training_space_enumerate(&sp, &md, NULL), PARTD_OK);
    assert_int_equal(sp.n, 1);
    assert_int_equal(sp.d[0].S, 2);
    assert_memory_equal(devs(&sp, 0), ((uint32_t[]){0, 1}), 2 * sizeof(uint32_t));
    partd__training_space_free(&sp);
    partd__training_model_free(&md);
    partd_request_free(req);
}

static void test_sequences_left_out_are_bounded(void **state)
{
    (void)state;
    /* twelve devices of distinct speeds: more sequences than the cap */
    double speed[12];
    for (uint32_t d = 0; d < 12; d++)
        speed[d] = 1 + d / 4.0;
    partd_request *req = stack(12, speed, 12, ",\"device_order\":\"auto\"");
    partd_training_model md;
    model(&md, req);
    partd_training_space sp;
    assert_int_equal(partd__training_space_enumerate(&sp, &md, NULL), PARTD_OK);
    assert_true(sp.partial);
    /* no more than the cap, and among them the fastest devices */
    assert_true(sp.n <= PARTD_TRAINING_SPACE_CAP + 2 * sp.n_combos);
    double least = INFINITY;
    for (uint32_t S = 1; S <= 12; S++) {
        uint32_t fastest[12];
        for (uint32_t k = 0; k < S; k++)
            fastest[k] = 11 - k;
        double f = partd__training_fluid(&md, fastest, S);
        least = f < least ? f : least;
    }
    assert_true(fabs(sp.partial_lb - least) <= 1e-12 * least);
    int found = 0;
    for (uint32_t k = 0; k < sp.n && !found; k++)
        found = sp.d[k].S == 4 &&
                !memcmp(devs(&sp, k), ((uint32_t[]){11, 10, 9, 8}), 4 * sizeof(uint32_t));
    assert_true(found);
    partd__training_space_free(&sp);
    partd__training_model_free(&md);
    partd_request_free(req);
}

static void test_splits(void **state)
{
    (void)state;
    assert_int_equal(partd__training_space_splits(5, 3, 100), 6);
    assert_int_equal(partd__training_space_splits(5, 1, 100), 1);
    assert_int_equal(partd__training_space_splits(5, 5, 100), 1);
    assert_int_equal(partd__training_space_splits(5, 6, 100), 0);
    assert_int_equal(partd__training_space_splits(21, 11, 1000000), 184756);
    assert_int_equal(partd__training_space_splits(60, 30, 1000), 1001);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_configuration_in_tie_order),
        cmocka_unit_test(test_sequences_left_out_are_bounded),
        cmocka_unit_test(test_splits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
