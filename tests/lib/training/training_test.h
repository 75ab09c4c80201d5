/*
 * training_test.h - what the tests of the training search share: a stack of
 * n single-node units on devices of given speeds, decoded as a training
 * request, and its model built. Included after <cmocka.h>.
 */
#ifndef PARTD_TESTS_TRAINING_TEST_H
#define PARTD_TESTS_TRAINING_TEST_H

#include <stdint.h>
#include <stdio.h>

#include "partd/decode.h"
#include "partd/partd.h"
#include "testutil.h"
#include "training/training_internal.h"

static char tt_text[16384];

/* n units of one node each (latencies 1..3 by a rule) on devices of the
 * speeds and memory mem each; every schedule, device order auto, no
 * checkpoints. */
static inline partd_request *tt_stack(uint32_t n, const double *speed, uint32_t S, long long mem)
{
    size_t len = (size_t)snprintf(tt_text, sizeof tt_text,
                                  "{\"graph\":{\"nodes\":[{\"name\":\"x\",\"op\":\"placeholder\","
                                  "\"output_bytes\":64}");
    for (uint32_t u = 0; u < n; u++) {
        char in[16] = "x";
        if (u)
            snprintf(in, sizeof in, "n%u", u - 1);
        len += (size_t)snprintf(tt_text + len, sizeof tt_text - len,
                                ",{\"name\":\"n%u\",\"op\":\"call_module\",\"module\":\"l.%u\","
                                "\"inputs\":[\"%s\"],\"output_bytes\":64,\"latency_ms\":%u,"
                                "\"param_bytes\":%u}",
                                u, u, in, 1 + (u * 7) % 3, 100 * (u % 3));
    }
    len += (size_t)snprintf(tt_text + len, sizeof tt_text - len, "]},\"devices\":[");
    for (uint32_t r = 0; r < S; r++)
        len += (size_t)snprintf(tt_text + len, sizeof tt_text - len,
                                "%s{\"name\":\"d%u\",\"memory_bytes\":%lld,\"speed\":%g}",
                                r ? "," : "", r, mem, speed[r]);
    snprintf(tt_text + len, sizeof tt_text - len,
             "],\"options\":{\"mode\":\"training\",\"transfer_bytes_per_sec\":1e6,"
             "\"training\":{\"schedule\":\"auto\",\"microbatches\":4,\"unit_depth\":2,"
             "\"device_order\":\"auto\",\"checkpoint\":\"never\"}}}");
    return tu_decode_ok(tt_text);
}

static inline void tt_model(partd_training_model *md, const partd_request *req)
{
    partd_problem pb;
    partd_problem_init(&pb);
    assert_int_equal(partd__training_model_build(md, req, &pb), PARTD_OK);
    partd_problem_free(&pb);
}

#endif
