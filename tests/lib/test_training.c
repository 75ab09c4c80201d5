/*
 * test_training.c - the training planner (lib/training*.c) and its request
 * members (lib/decode_training.c, backward_ms, hashing).
 *
 * Hand-computed cases: units and the default unit_depth rule, one stage's
 * figures under every checkpoint mode, the transient term deciding the
 * auto checkpoint set, 1f1b and gpipe in-flight counts, device_order auto
 * taking the device that helps, the infeasible problem document, and every
 * validation error with its pointer. The exhaustive comparison with a brute
 * force is tests/python/test_training_bruteforce.py.
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

#include "decode.h"
#include "partd.h"
#include "plan.h"
#include "problem.h"
#include "testutil.h"
#include "training.h"

#define EPS 1e-9

static char text[8192];

/* A request: nodes (JSON list members), devices, options.training members. */
static const char *request_at(const char *nodes, const char *devices, const char *training,
                              double rate)
{
    snprintf(text, sizeof text,
             "{\"graph\":{\"nodes\":[%s]},\"devices\":[%s],"
             "\"options\":{\"mode\":\"training\",\"transfer_bytes_per_sec\":%g,"
             "\"training\":{%s}}}",
             nodes, devices, rate, training);
    return text;
}

/* At 1000 bytes/s a byte sent costs 1 ms. */
static const char *request(const char *nodes, const char *devices, const char *training)
{
    return request_at(nodes, devices, training, 1000);
}

static partd_plan *plan_ok(const char *json, partd_request **req_out)
{
    partd_request *req = tu_decode_ok(json);
    partd_problem pb;
    partd_problem_init(&pb);
    partd_plan *plan = NULL;
    int rc = partd_plan_run(req, NULL, &plan, &pb);
    if (rc != PARTD_OK)
        fprintf(stderr, "plan: %s %s\n", partd_strerror(rc), pb.detail ? pb.detail : "");
    assert_int_equal(rc, PARTD_OK);
    assert_non_null(plan->training);
    partd_problem_free(&pb);
    *req_out = req;
    return plan;
}

static int plan_fail(const char *json, partd_problem *pb)
{
    partd_request *req = tu_decode_ok(json);
    partd_problem_init(pb);
    partd_plan *plan = NULL;
    int rc = partd_plan_run(req, NULL, &plan, pb);
    assert_null(plan);
    partd_request_free(req);
    return rc;
}

static void assert_sum_adds_up(const partd_training_stage *st)
{
    assert_true(fabs(st->time_ms - (st->forward_ms + st->backward_ms + st->recompute_ms +
                                     st->comm_ms)) < EPS);
}

/* ---- units ---------------------------------------------------------------- */

#define UNIT_NODES                                                                            \
    "{\"name\":\"x\",\"op\":\"placeholder\"},"                                               \
    "{\"name\":\"e\",\"op\":\"call_module\",\"module\":\"emb\",\"inputs\":[\"x\"]},"         \
    "{\"name\":\"q0\",\"op\":\"call_module\",\"module\":\"h.0.attn\",\"inputs\":[\"e\"]},"   \
    "{\"name\":\"m0\",\"op\":\"call_module\",\"module\":\"h.0.mlp\",\"inputs\":[\"q0\"]},"   \
    "{\"name\":\"q1\",\"op\":\"call_module\",\"module\":\"h.1.attn\",\"inputs\":[\"m0\"]},"  \
    "{\"name\":\"m1\",\"op\":\"call_module\",\"module\":\"h.1.mlp\",\"inputs\":[\"q1\"]},"   \
    "{\"name\":\"add\",\"op\":\"call_function\",\"inputs\":[\"m1\",\"e\"]},"                  \
    "{\"name\":\"e2\",\"op\":\"call_module\",\"module\":\"emb\",\"inputs\":[\"add\"]},"      \
    "{\"name\":\"output\",\"op\":\"output\",\"inputs\":[\"e2\"]}"

static void check_units(const char *devices, const char *training, uint32_t want_depth,
                        const char *const *want)
{
    partd_request *req = tu_decode_ok(request(UNIT_NODES, devices, training));
    char **names;
    uint32_t *first, n, depth;
    assert_int_equal(partd_training_units(req, &names, &first, &n, &depth), PARTD_OK);
    assert_int_equal(depth, want_depth);
    uint32_t i = 0;
    for (; want[i]; i++) {
        assert_true(i < n);
        assert_string_equal(names[i], want[i]);
    }
    assert_int_equal(i, n);
    for (uint32_t u = 0; u < n; u++)
        free(names[u]);
    free(names);
    free(first);
    partd_request_free(req);
}

static void test_units_and_default_depth(void **state)
{
    (void)state;
    const char *one = "{\"name\":\"d0\",\"memory_bytes\":1000}";
    const char *three = "{\"name\":\"d0\",\"memory_bytes\":1000},"
                        "{\"name\":\"d1\",\"memory_bytes\":1000},"
                        "{\"name\":\"d2\",\"memory_bytes\":1000}";
    /* One device needs 2 units: depth 1 already gives 4 (a run without a
     * module is named by its first node; a repeated name gets #k). */
    static const char *const d1[] = {"emb", "h", "add", "emb#2", NULL};
    check_units(one, "", 1, d1);
    /* Three devices need 6: depth 2 gives 5, depth 3 gives 7. */
    static const char *const d3[] = {"emb", "h.0.attn", "h.0.mlp", "h.1.attn", "h.1.mlp",
                                     "add", "emb#2", NULL};
    check_units(three, "", 3, d3);
    static const char *const d2[] = {"emb", "h.0", "h.1", "add", "emb#2", NULL};
    check_units(three, "\"unit_depth\":2", 2, d2);
    /* Ten devices: no depth gives 20 units, so the deepest (3). */
    char many[1024] = "";
    for (int i = 0; i < 10; i++)
        snprintf(many + strlen(many), sizeof many - strlen(many),
                 "%s{\"name\":\"g%d\",\"memory_bytes\":1000}", i ? "," : "", i);
    check_units(many, "", 3, d3);
}

/* ---- one stage, every checkpoint mode -------------------------------------- */

/* x (8 bytes) -> op0 (l.0: out 100, lat 1, params 10) -> op1 (l.1: out 200,
 * lat 2, backward 1) -> op2 (l.2: out 50, lat 1). One stage, M = 2, gpipe,
 * param_factor 1, 1000 bytes/s: comm = in = 8 ms.
 * forward 4, backward 2 + 1 + 2 = 5; kept(empty) = 350. */
#define CHAIN_NODES                                                                           \
    "{\"name\":\"x\",\"op\":\"placeholder\",\"output_bytes\":8},"                            \
    "{\"name\":\"op0\",\"op\":\"call_module\",\"module\":\"l.0\",\"inputs\":[\"x\"],"         \
    "\"output_bytes\":100,\"latency_ms\":1,\"param_bytes\":10},"                              \
    "{\"name\":\"op1\",\"op\":\"call_module\",\"module\":\"l.1\",\"inputs\":[\"op0\"],"       \
    "\"output_bytes\":200,\"latency_ms\":2,\"backward_ms\":1},"                               \
    "{\"name\":\"op2\",\"op\":\"call_module\",\"module\":\"l.2\",\"inputs\":[\"op1\"],"       \
    "\"output_bytes\":50,\"latency_ms\":1},"                                                  \
    "{\"name\":\"output\",\"op\":\"output\",\"inputs\":[\"op2\"]}"

static void check_chain(const char *mode, double recompute, int64_t memory,
                        uint32_t checkpointed)
{
    char training[256];
    snprintf(training, sizeof training,
             "\"checkpoint\":\"%s\",\"microbatches\":2,\"schedule\":\"gpipe\",\"stages\":1,"
             "\"param_factor\":1",
             mode);
    partd_request *req;
    partd_plan *plan =
        plan_ok(request(CHAIN_NODES, "{\"name\":\"d0\",\"memory_bytes\":100000}", training),
                &req);
    const partd_training_stage *st = &plan->training->stages[0];
    assert_int_equal(st->in_flight, 2);
    assert_true(fabs(st->forward_ms - 2.0) < EPS);
    assert_true(fabs(st->backward_ms - 2.5) < EPS);
    assert_true(fabs(st->comm_ms - 4.0) < EPS);
    assert_true(fabs(st->recompute_ms - recompute) < EPS);
    assert_sum_adds_up(st);
    assert_int_equal(st->memory_bytes, memory);
    assert_int_equal(plan->parts[0].memory_bytes, memory);
    assert_int_equal(st->n_checkpointed, checkpointed);
    assert_true(fabs(plan->training->step_ms - 2 * st->time_ms) < EPS);
    partd_plan_free(plan);
    partd_request_free(req);
}

static void test_stage_figures_every_mode(void **state)
{
    (void)state;
    /* never: c = 0, k_c = 0: (2*8 + 2*350) / 2 + 10 = 368. */
    check_chain("never", 0.0, 368, 0);
    /* always: c = k_c = 2, whole stage one checkpoint: kept 0, transient
     * 350: (16 + 350) / 2 + 10 = 193; recompute (2/2) * 4 / 2 = 2. */
    check_chain("always", 2.0, 193, 3);
    /* except_last: c = 1, k_c = 1: (16 + 0 + 350 + 350) / 2 + 10 = 368;
     * recompute (1/2) * 4 / 2 = 1. */
    check_chain("except_last", 1.0, 368, 3);
    /* auto with ample memory: nothing to gain, nothing checkpointed. */
    check_chain("auto", 0.0, 368, 0);
}

/* ---- the transient term ------------------------------------------------------ */

/* Three two-node units, M = 1, nothing received:
 *   l.0: a0 (100, 1 ms) a1 (100, 1 ms): checkpointed discards a0: d = 100
 *   l.1: b0 (200, 3 ms) b1 (200, 3 ms): b1 is read by c0: d = 200
 *   l.2: c0 (300, .5 ms) c1 (10, .5 ms): c1 read by output only: d = 310
 * memory(X) = 910 - D(X) + max d (X non-empty): {} 910, any single unit
 * 910 (the transient cancels the saving), {0,1} 810, {0,2} 810,
 * {1,2} 710, {0,1,2} 610. Times: 9 + 18 + recompute. */
#define TRANSIENT_NODES                                                                       \
    "{\"name\":\"x\",\"op\":\"placeholder\"},"                                               \
    "{\"name\":\"a0\",\"op\":\"call_module\",\"module\":\"l.0\",\"inputs\":[\"x\"],"          \
    "\"output_bytes\":100,\"latency_ms\":1},"                                                 \
    "{\"name\":\"a1\",\"op\":\"call_module\",\"module\":\"l.0\",\"inputs\":[\"a0\"],"         \
    "\"output_bytes\":100,\"latency_ms\":1},"                                                 \
    "{\"name\":\"b0\",\"op\":\"call_module\",\"module\":\"l.1\",\"inputs\":[\"a1\"],"         \
    "\"output_bytes\":200,\"latency_ms\":3},"                                                 \
    "{\"name\":\"b1\",\"op\":\"call_module\",\"module\":\"l.1\",\"inputs\":[\"b0\"],"         \
    "\"output_bytes\":200,\"latency_ms\":3},"                                                 \
    "{\"name\":\"c0\",\"op\":\"call_module\",\"module\":\"l.2\",\"inputs\":[\"b1\"],"         \
    "\"output_bytes\":300,\"latency_ms\":0.5},"                                               \
    "{\"name\":\"c1\",\"op\":\"call_module\",\"module\":\"l.2\",\"inputs\":[\"c0\"],"         \
    "\"output_bytes\":10,\"latency_ms\":0.5},"                                                \
    "{\"name\":\"output\",\"op\":\"output\",\"inputs\":[\"c1\"]}"

static void check_transient(int64_t device_memory, const char *const *want, double recompute,
                            int64_t memory)
{
    char dev[128];
    snprintf(dev, sizeof dev, "{\"name\":\"d0\",\"memory_bytes\":%lld}",
             (long long)device_memory);
    partd_request *req;
    partd_plan *plan = plan_ok(
        request(TRANSIENT_NODES, dev, "\"microbatches\":1,\"unit_depth\":2"), &req);
    const partd_training_result *t = plan->training;
    const partd_training_stage *st = &t->stages[0];
    uint32_t n = 0;
    for (; want[n]; n++) {
        assert_true(n < st->n_checkpointed);
        assert_string_equal(t->unit_names[st->checkpointed[n]], want[n]);
    }
    assert_int_equal(n, st->n_checkpointed);
    assert_true(fabs(st->recompute_ms - recompute) < EPS);
    assert_true(fabs(st->time_ms - (27.0 + recompute)) < EPS);
    assert_int_equal(st->memory_bytes, memory);
    partd_plan_free(plan);
    partd_request_free(req);
}

static void test_auto_checkpoint_with_transient(void **state)
{
    (void)state;
    static const char *const none[] = {NULL};
    static const char *const two[] = {"l.0", "l.2", NULL};
    static const char *const last_two[] = {"l.1", "l.2", NULL};
    static const char *const all[] = {"l.0", "l.1", "l.2", NULL};
    check_transient(910, none, 0.0, 910);
    /* Without the transient term l.2 alone (910 - 310 = 600) would do. */
    check_transient(909, two, 3.0, 810);
    check_transient(800, last_two, 7.0, 710);
    check_transient(700, all, 9.0, 610);
    /* 610 is the least: 600 bytes are 10 short. */
    partd_problem pb;
    assert_int_equal(plan_fail(request(TRANSIENT_NODES,
                                       "{\"name\":\"d0\",\"memory_bytes\":600}",
                                       "\"microbatches\":1,\"unit_depth\":2"),
                               &pb),
                     PARTD_EINFEASIBLE);
    assert_int_equal(pb.status, 422);
    assert_non_null(strstr(pb.detail, "stage 0 on device \"d0\" needs 610 bytes"));
    assert_non_null(strstr(pb.detail, "short by 10 bytes"));
    tu_assert_error(&pb, "/devices/0/memory_bytes", "short by 10 bytes");
    partd_problem_free(&pb);
}

/* ---- schedules ------------------------------------------------------------ */

#define FOUR_UNITS                                                                            \
    "{\"name\":\"x\",\"op\":\"placeholder\"},"                                               \
    "{\"name\":\"u0\",\"op\":\"call_module\",\"module\":\"b.0\",\"inputs\":[\"x\"],"          \
    "\"output_bytes\":10,\"latency_ms\":1},"                                                  \
    "{\"name\":\"u1\",\"op\":\"call_module\",\"module\":\"b.1\",\"inputs\":[\"u0\"],"         \
    "\"output_bytes\":10,\"latency_ms\":1},"                                                  \
    "{\"name\":\"u2\",\"op\":\"call_module\",\"module\":\"b.2\",\"inputs\":[\"u1\"],"         \
    "\"output_bytes\":10,\"latency_ms\":1},"                                                  \
    "{\"name\":\"u3\",\"op\":\"call_module\",\"module\":\"b.3\",\"inputs\":[\"u2\"],"         \
    "\"output_bytes\":10,\"latency_ms\":1},"                                                  \
    "{\"name\":\"output\",\"op\":\"output\",\"inputs\":[\"u3\"]}"

#define FOUR_DEVICES                                                                          \
    "{\"name\":\"d0\",\"memory_bytes\":100000},{\"name\":\"d1\",\"memory_bytes\":100000},"     \
    "{\"name\":\"d2\",\"memory_bytes\":100000},{\"name\":\"d3\",\"memory_bytes\":100000}"

static void check_in_flight(const char *training, const uint32_t *want)
{
    partd_request *req;
    partd_plan *plan = plan_ok(request(FOUR_UNITS, FOUR_DEVICES, training), &req);
    assert_int_equal(plan->training->n_stages, 4);
    for (uint32_t s = 0; s < 4; s++) {
        assert_int_equal(plan->training->stages[s].in_flight, want[s]);
        assert_int_equal(plan->parts[s].devices[0], s);
    }
    partd_plan_free(plan);
    partd_request_free(req);
}

static void test_in_flight_1f1b_and_gpipe(void **state)
{
    (void)state;
    static const uint32_t f8[] = {4, 3, 2, 1}, f2[] = {2, 2, 2, 1}, g8[] = {8, 8, 8, 8};
    check_in_flight("\"stages\":4,\"microbatches\":8", f8);
    check_in_flight("\"stages\":4,\"microbatches\":2", f2);
    check_in_flight("\"stages\":4,\"microbatches\":8,\"schedule\":\"gpipe\"", g8);
}

static void test_stage_count_auto(void **state)
{
    (void)state;
    /* Four equal units (forward 1, backward 2), M = 8. Slow links: every
     * cut costs 20 ms of communication, so one stage is best (step 8 * 12
     * / 8 = 12 against 4 stages' 9 + 7 * 2.875). */
    partd_request *req;
    partd_plan *plan = plan_ok(request(FOUR_UNITS, FOUR_DEVICES, "\"microbatches\":8"), &req);
    assert_int_equal(plan->training->n_stages, 1);
    assert_true(fabs(plan->training->step_ms - 12.0) < EPS);
    assert_true(fabs(plan->training->bubble_fraction) < EPS);
    partd_plan_free(plan);
    partd_request_free(req);
    /* Fast links (10 bytes at 1e6 B/s = 0.01 ms): four stages; Σt is
     * fixed but the bottleneck falls. */
    plan = plan_ok(request_at(FOUR_UNITS, FOUR_DEVICES, "\"microbatches\":8", 1e6), &req);
    assert_int_equal(plan->training->n_stages, 4);
    double sum = 0, max = 0;
    for (uint32_t s = 0; s < 4; s++) {
        const partd_training_stage *st = &plan->training->stages[s];
        double want = (3.0 + ((s == 0 || s == 3) ? 0.01 : 0.02)) / 8;
        assert_true(fabs(st->time_ms - want) < EPS);
        assert_sum_adds_up(st);
        sum += want;
        max = want > max ? want : max;
    }
    assert_true(fabs(plan->training->step_ms - (sum + 7 * max)) < EPS);
    assert_true(fabs(plan->training->bubble_fraction -
                     (1 - 8 * sum / (4 * plan->training->step_ms))) < EPS);
    partd_plan_free(plan);
    partd_request_free(req);
}

/* ---- device order ------------------------------------------------------------ */

static void test_device_order_auto_takes_the_device_that_helps(void **state)
{
    (void)state;
    const char *devs = "{\"name\":\"slow\",\"memory_bytes\":100000,\"speed\":1},"
                       "{\"name\":\"fast\",\"memory_bytes\":100000,\"speed\":4}";
    partd_request *req;
    partd_plan *plan = plan_ok(request(FOUR_UNITS, devs, "\"stages\":1"), &req);
    assert_int_equal(plan->parts[0].devices[0], 0);
    partd_plan_free(plan);
    partd_request_free(req);
    plan = plan_ok(request(FOUR_UNITS, devs, "\"stages\":1,\"device_order\":\"auto\""), &req);
    assert_int_equal(plan->parts[0].devices[0], 1);
    /* 12 ms of work at speed 4, M = 2 (one per device), nothing sent. */
    assert_true(fabs(plan->parts[0].time_ms - 12.0 / 4 / 2) < EPS);
    partd_plan_free(plan);
    partd_request_free(req);

    /* Memory: only the second device holds the stage. */
    const char *mem = "{\"name\":\"small\",\"memory_bytes\":10},"
                      "{\"name\":\"large\",\"memory_bytes\":100000}";
    partd_problem pb;
    assert_int_equal(plan_fail(request(FOUR_UNITS, mem, "\"stages\":1"), &pb),
                     PARTD_EINFEASIBLE);
    tu_assert_error(&pb, "/devices/0/memory_bytes", "short by");
    partd_problem_free(&pb);
    plan = plan_ok(request(FOUR_UNITS, mem, "\"stages\":1,\"device_order\":\"auto\""), &req);
    assert_int_equal(plan->parts[0].devices[0], 1);
    partd_plan_free(plan);
    partd_request_free(req);
}

static void test_search_limit_many_device_kinds(void **state)
{
    (void)state;
    /* 24 devices of 24 kinds: counts per kind span 2^24 states, past the
     * exact search's limit: a 422 naming device_order, not a guess. */
    char devs[4096] = "";
    for (int i = 0; i < 24; i++)
        snprintf(devs + strlen(devs), sizeof devs - strlen(devs),
                 "%s{\"name\":\"g%d\",\"memory_bytes\":100000,\"speed\":%d}", i ? "," : "",
                 i, i + 1);
    partd_problem pb;
    assert_int_equal(plan_fail(request(FOUR_UNITS, devs, "\"device_order\":\"auto\""), &pb),
                     PARTD_ETOOBIG);
    assert_int_equal(pb.status, 422);
    tu_assert_error(&pb, "/options/training/device_order", "fewer distinct kinds");
    partd_problem_free(&pb);
    /* The same devices in the given order plan at once. */
    partd_request *req;
    partd_plan *plan = plan_ok(request(FOUR_UNITS, devs, ""), &req);
    assert_true(plan->training->n_stages >= 1);
    partd_plan_free(plan);
    partd_request_free(req);
}

/* ---- validation ------------------------------------------------------------ */

static void check_invalid(const char *nodes, const char *training, const char *pointer,
                          const char *needle)
{
    partd_problem pb;
    tu_decode_fail(request(nodes, "{\"name\":\"d0\",\"memory_bytes\":1000},"
                                  "{\"name\":\"d1\",\"memory_bytes\":1000}",
                           training),
                   PARTD_EINVALID, &pb);
    tu_assert_error(&pb, pointer, needle);
    partd_problem_free(&pb);
}

static void test_validation_errors(void **state)
{
    (void)state;
    const char *p = "/options/training/";
    char ptr[128];
#define BAD(member, value, needle)                                                            \
    do {                                                                                      \
        snprintf(ptr, sizeof ptr, "%s%s", p, member);                                         \
        check_invalid(FOUR_UNITS, "\"" member "\":" value, ptr, needle);                      \
    } while (0)
    BAD("stages", "0", "between 1 and 2");
    BAD("stages", "3", "between 1 and 2");
    BAD("stages", "\"some\"", "an integer or \"auto\"");
    BAD("stages", "1.5", "an integer or \"auto\"");
    BAD("microbatches", "0", "");
    BAD("microbatches", "1025", "");
    BAD("unit_depth", "0", "");
    BAD("backward_factor", "0", "");
    BAD("backward_factor", "65", "");
    BAD("param_factor", "-1", "");
    BAD("schedule", "\"inference\"", "");
    BAD("checkpoint", "\"sometimes\"", "");
    BAD("device_order", "\"random\"", "");
    BAD("colour", "1", "unknown member");
#undef BAD
    check_invalid("{\"name\":\"a\",\"op\":\"call_function\",\"backward_ms\":-1}", "",
                  "/graph/nodes/0/backward_ms", "");
    check_invalid("{\"name\":\"a\",\"op\":\"call_function\",\"backward_ms\":\"x\"}", "",
                  "/graph/nodes/0/backward_ms", "");
    /* More stages than units is known only once units are formed: 422. */
    partd_problem pb;
    snprintf(text, sizeof text,
             "{\"graph\":{\"nodes\":[" FOUR_UNITS "]},\"devices\":[" FOUR_DEVICES "],"
             "\"options\":{\"mode\":\"training\",\"training\":{\"stages\":4,"
             "\"unit_depth\":1}}}");
    assert_int_equal(plan_fail(text, &pb), PARTD_EINVALID);
    tu_assert_error(&pb, "/options/training/stages", "1 at unit_depth 1");
    partd_problem_free(&pb);
}

/* ---- hashing ---------------------------------------------------------------- */

static void test_hash_only_when_present(void **state)
{
    (void)state;
    /* options.training does not change a pipeline request's cache_key. */
    partd_request *a = tu_decode_ok(
        "{\"graph\":{\"nodes\":[{\"name\":\"a\",\"op\":\"call_function\"}]},"
        "\"devices\":[{\"name\":\"d\",\"memory_bytes\":1}]}");
    partd_request *b = tu_decode_ok(
        "{\"graph\":{\"nodes\":[{\"name\":\"a\",\"op\":\"call_function\"}]},"
        "\"devices\":[{\"name\":\"d\",\"memory_bytes\":1}],"
        "\"options\":{\"training\":{\"microbatches\":7}}}");
    partd_request *c = tu_decode_ok(
        "{\"graph\":{\"nodes\":[{\"name\":\"a\",\"op\":\"call_function\",\"backward_ms\":1}]},"
        "\"devices\":[{\"name\":\"d\",\"memory_bytes\":1}]}");
    partd_request *t1 = tu_decode_ok(
        "{\"graph\":{\"nodes\":[{\"name\":\"a\",\"op\":\"call_function\"}]},"
        "\"devices\":[{\"name\":\"d\",\"memory_bytes\":1}],"
        "\"options\":{\"mode\":\"training\"}}");
    partd_request *t2 = tu_decode_ok(
        "{\"graph\":{\"nodes\":[{\"name\":\"a\",\"op\":\"call_function\"}]},"
        "\"devices\":[{\"name\":\"d\",\"memory_bytes\":1}],"
        "\"options\":{\"mode\":\"training\",\"training\":{\"microbatches\":7}}}");
    partd_request *t3 = tu_decode_ok(
        "{\"graph\":{\"nodes\":[{\"name\":\"a\",\"op\":\"call_function\"}]},"
        "\"devices\":[{\"name\":\"d\",\"memory_bytes\":1}],"
        "\"options\":{\"mode\":\"training\",\"training\":{\"microbatches\":1,"
        "\"schedule\":\"1f1b\",\"checkpoint\":\"auto\"}}}");
    partd_request *t4 = tu_decode_ok(
        "{\"graph\":{\"nodes\":[{\"name\":\"a\",\"op\":\"call_function\"}]},"
        "\"devices\":[{\"name\":\"d\",\"memory_bytes\":1}],"
        "\"options\":{\"mode\":\"training\",\"training\":{\"unit_depth\":1}}}");
    /* unit_depth's default is resolved: spelling it out changes nothing. */
    assert_string_equal(t1->cache_key, t4->cache_key);
    partd_request_free(t4);
    assert_string_equal(a->cache_key, b->cache_key);
    assert_string_equal(a->graph_hash, b->graph_hash);
    assert_string_not_equal(a->graph_hash, c->graph_hash);
    assert_string_not_equal(t1->cache_key, t2->cache_key);
    /* Defaults spelt out hash like defaults left out (M = 1 device). */
    assert_string_equal(t1->cache_key, t3->cache_key);
    partd_request_free(a);
    partd_request_free(b);
    partd_request_free(c);
    partd_request_free(t1);
    partd_request_free(t2);
    partd_request_free(t3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_units_and_default_depth),
        cmocka_unit_test(test_stage_figures_every_mode),
        cmocka_unit_test(test_auto_checkpoint_with_transient),
        cmocka_unit_test(test_in_flight_1f1b_and_gpipe),
        cmocka_unit_test(test_stage_count_auto),
        cmocka_unit_test(test_device_order_auto_takes_the_device_that_helps),
        cmocka_unit_test(test_search_limit_many_device_kinds),
        cmocka_unit_test(test_validation_errors),
        cmocka_unit_test(test_hash_only_when_present),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
