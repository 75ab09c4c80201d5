/*
 * test_training.c - the training planner (lib/training/training*.c) and
 * its request members (lib/decode/decode_training.c, weight_grad_ms,
 * validation, hashing).
 *
 * Hand-computed cases: units and the default unit_depth rule; one stage's
 * figures and memory read from GPipe's order under every checkpoint mode;
 * checkpoint auto picking the unit that fits; device_order auto taking the
 * fast device; a result's ranks and actions; the same plan twice; every
 * validation error with its pointer; what goes into the hashes. The
 * exhaustive comparison with a brute force is
 * tests/python/test_training_bruteforce.py.
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
#include "partd/plan.h"
#include "partd/problem.h"
#include "partd/result.h"
#include "testutil.h"
#include "training/training.h"

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
    assert_int_equal(partd__training_units(req, &names, &first, &n, &depth), PARTD_OK);
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
 * lat 2, backward 1) -> op2 (l.2: out 50, lat 1). One rank, GPipe, M = 2,
 * param_factor 1: F = 4 / 2, B = (2 + 1 + 2) / 2; W = op0's half of its
 * backward (it holds parameters) / 2 = 0.5; in = 8, act = 350. GPipe holds
 * both microbatches before the first backward: never: 2 x 358 / 2 + 10;
 * always: the stage discards everything, 2 x 8 held and 350 recomputed
 * while a backward runs: (16 + 350) / 2 + 10; except_last: microbatch 0
 * checkpointed (8), 1 not (358), 350 during B0: 716 / 2 + 10. */
#define CHAIN_NODES                                                                           \
    "{\"name\":\"x\",\"op\":\"placeholder\",\"output_bytes\":8},"                            \
    "{\"name\":\"op0\",\"op\":\"call_module\",\"module\":\"l.0\",\"inputs\":[\"x\"],"         \
    "\"output_bytes\":100,\"latency_ms\":1,\"param_bytes\":10},"                              \
    "{\"name\":\"op1\",\"op\":\"call_module\",\"module\":\"l.1\",\"inputs\":[\"op0\"],"       \
    "\"output_bytes\":200,\"latency_ms\":2,\"backward_ms\":1},"                               \
    "{\"name\":\"op2\",\"op\":\"call_module\",\"module\":\"l.2\",\"inputs\":[\"op1\"],"       \
    "\"output_bytes\":50,\"latency_ms\":1},"                                                  \
    "{\"name\":\"output\",\"op\":\"output\",\"inputs\":[\"op2\"]}"

static void check_chain(const char *mode, int64_t device, double recompute, int64_t memory,
                        uint32_t checkpointed, double step)
{
    char training[256], devices[128];
    snprintf(training, sizeof training,
             "\"checkpoint\":\"%s\",\"microbatches\":2,\"schedule\":\"GPipe\",\"stages\":1,"
             "\"param_factor\":1",
             mode);
    snprintf(devices, sizeof devices, "{\"name\":\"d0\",\"memory_bytes\":%lld}", (long long)device);
    partd_request *req;
    partd_plan *plan = plan_ok(request(CHAIN_NODES, devices, training), &req);
    const partd_training_result *t = plan->training;
    const partd_training_stage *st = &t->stages[0];
    assert_true(fabs(st->forward_ms - 2.0) < EPS);
    assert_true(fabs(st->backward_ms - 2.5) < EPS);
    assert_true(fabs(st->weight_grad_ms - 0.5) < EPS);
    assert_true(fabs(st->input_grad_ms - 2.0) < EPS);
    assert_true(fabs(st->send_ms) < EPS);
    assert_true(fabs(st->recompute_ms - recompute) < EPS);
    assert_true(fabs(st->time_ms - (st->forward_ms + st->backward_ms + st->recompute_ms)) < EPS);
    assert_int_equal(st->param_memory_bytes, 10);
    assert_int_equal(st->input_memory_bytes, 4);
    assert_int_equal(st->memory_bytes, memory);
    assert_int_equal(t->ranks[0].memory_bytes, memory);
    assert_int_equal(plan->parts[0].memory_bytes, memory);
    assert_int_equal(st->n_checkpointed, checkpointed);
    assert_true(fabs(t->step_ms - step) < EPS);
    assert_true(t->optimal && t->gap == 0 && t->lower_bound_ms == t->step_ms);
    partd_plan_free(plan);
    partd_request_free(req);
}

static void test_stage_figures_every_mode(void **state)
{
    (void)state;
    /* step: F0 F1 B0 B1, recomputation in the checkpointed B's */
    check_chain("never", 100000, 0.0, 368, 0, 9.0);
    check_chain("always", 100000, 2.0, 193, 3, 13.0);
    check_chain("except_last", 100000, 2.0, 368, 3, 11.0);
    check_chain("auto", 100000, 0.0, 368, 0, 9.0);
    /* 350 bytes: only l.2 discards anything (50, its output read by no
     * operation of the stage): (2 x 308 + 50) / 2 + 10 = 343, 0.5 ms more
     * per backward. */
    check_chain("auto", 350, 0.5, 343, 1, 10.0);
}

/* ---- devices and the result --------------------------------------------------- */

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

static void test_device_order_auto_takes_the_fast_device(void **state)
{
    (void)state;
    const char *devs = "{\"name\":\"slow\",\"memory_bytes\":100000},"
                       "{\"name\":\"fast\",\"memory_bytes\":100000,\"speed\":4}";
    partd_request *req;
    partd_plan *plan = plan_ok(request(FOUR_UNITS, devs, "\"stages\":1,\"microbatches\":2"), &req);
    assert_int_equal(plan->training->ranks[0].device, 0);
    double given = plan->training->step_ms;
    partd_plan_free(plan);
    partd_request_free(req);
    plan = plan_ok(request(FOUR_UNITS, devs,
                           "\"stages\":1,\"microbatches\":2,\"device_order\":\"auto\""),
                   &req);
    assert_int_equal(plan->training->ranks[0].device, 1);
    assert_true(fabs(plan->training->step_ms * 4 - given) < EPS);
    partd_plan_free(plan);
    partd_request_free(req);
}

/* 1F1B on four ranks of one unit each: every rank's actions, the ranks'
 * busy times (8 actions of 1 ms F and 2 ms B over M = 4 ... per microbatch
 * 0.25 and 0.5), and the step's bubble. */
static void test_result_ranks_and_actions(void **state)
{
    (void)state;
    const char *devs = "{\"name\":\"d0\",\"memory_bytes\":100000},{\"name\":\"d1\",\"memory_bytes\":100000},"
                       "{\"name\":\"d2\",\"memory_bytes\":100000},{\"name\":\"d3\",\"memory_bytes\":100000}";
    partd_request *req;
    partd_plan *plan =
        plan_ok(request_at(FOUR_UNITS, devs, "\"stages\":4,\"microbatches\":4", 1e18), &req);
    const partd_training_result *t = plan->training;
    assert_int_equal(t->schedule, PARTD_TRAINING_1F1B);
    assert_int_equal(t->n_ranks, 4);
    assert_int_equal(t->n_stages, 4);
    assert_int_equal(t->virtual_stages, 1);
    for (uint32_t r = 0; r < 4; r++) {
        assert_int_equal(t->action_off[r + 1] - t->action_off[r], 8);
        assert_true(fabs(t->ranks[r].busy_ms - 3.0) < EPS);
        assert_int_equal(t->stages[r].rank, r);
    }
    /* rank 0 runs F0 F1 F2 F3 B0 B1 B2 B3 (warm-up min(M, S) = 4) */
    for (uint32_t i = 0; i < 8; i++) {
        assert_int_equal(t->action_kind[i], i < 4 ? 0 : 1);
        assert_int_equal(t->action_mb[i], i % 4);
    }
    /* F chain 4 x 0.25, then rank 3 alternates: ... step = 3 + 3 x 0.75 */
    assert_true(fabs(t->step_ms - 5.25) < EPS);
    assert_true(fabs(t->bubble_fraction - (1 - 12.0 / (4 * 5.25))) < EPS);
    /* the result document carries them */
    size_t len;
    char *json = partd_result_to_json(req, plan, &len);
    assert_non_null(strstr(json, "\"schedule\":{\"name\":\"1F1B\",\"virtual_stages\":1,"
                                 "\"actions\":[[\"0F0\",\"0F1\",\"0F2\",\"0F3\",\"0B0\""));
    assert_non_null(strstr(json, "\"ranks\":[{\"rank\":0,\"device\":\"d0\",\"stages\":[0],"));
    /* the same request plans to the same bytes */
    partd_plan *again;
    partd_problem pb;
    partd_problem_init(&pb);
    assert_int_equal(partd_plan_run(req, NULL, &again, &pb), PARTD_OK);
    char *json2 = partd_result_to_json(req, again, NULL);
    assert_string_equal(json, json2);
    free(json);
    free(json2);
    partd_plan_free(again);
    partd_problem_free(&pb);
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
    BAD("microbatches", "0", "");
    BAD("microbatches", "1025", "");
    BAD("unit_depth", "0", "");
    BAD("backward_factor", "0", "");
    BAD("param_factor", "-1", "");
    BAD("schedule", "\"inference\"", "unknown schedule");
    BAD("schedule", "\"Interleaved\"", "unknown schedule");
    BAD("schedule", "[]", "at least one");
    BAD("schedule", "7", "a schedule name");
    BAD("virtual_stages", "0", "");
    BAD("virtual_stages", "9", "");
    BAD("virtual_stages", "\"many\"", "an integer or \"auto\"");
    BAD("weight_grad_fraction", "1.5", "");
    BAD("weight_grad_fraction", "-0.1", "");
    BAD("checkpoint", "\"sometimes\"", "");
    BAD("device_order", "\"random\"", "");
    BAD("colour", "1", "unknown member");
#undef BAD
    check_invalid(FOUR_UNITS, "\"schedule\":[\"GPipe\",\"gpipe\"]", "/options/training/schedule/1",
                  "names GPipe twice");
    check_invalid(FOUR_UNITS, "\"schedule\":[\"ZBVZeroBubble\",\"Zero\"]",
                  "/options/training/schedule/1", "unknown schedule");
    /* a named schedule's conditions (PyTorch's), and v it cannot take */
    check_invalid(FOUR_UNITS, "\"schedule\":\"1F1B\",\"stages\":2,\"microbatches\":1",
                  "/options/training/schedule", "needs microbatches >= stages");
    check_invalid(FOUR_UNITS, "\"stages\":2,\"microbatches\":1", "/options/training/schedule",
                  "1F1B needs microbatches >= stages");
    check_invalid(FOUR_UNITS, "\"schedule\":\"DualPipeV\",\"stages\":2,\"microbatches\":3",
                  "/options/training/schedule", "needs microbatches >= 2 x stages");
    check_invalid(FOUR_UNITS, "\"schedule\":\"ZBVZeroBubble\",\"virtual_stages\":3",
                  "/options/training/virtual_stages", "runs 2 stages per rank");
    check_invalid(FOUR_UNITS, "\"schedule\":\"LoopedBFS\",\"stages\":2,\"virtual_stages\":3",
                  "/options/training/schedule", "needs 6 units");
    /* a list leaves out what cannot run, and fails only when nothing can */
    check_invalid(FOUR_UNITS, "\"schedule\":[\"DualPipeV\"],\"microbatches\":1",
                  "/options/training/schedule", "no schedule listed runs");
    check_invalid(FOUR_UNITS, "\"stages\":2,\"unit_depth\":1", "/options/training/stages",
                  "1 at unit_depth 1");
    partd_request_free(tu_decode_ok(request(FOUR_UNITS, "{\"name\":\"d0\",\"memory_bytes\":1000}",
                                            "\"schedule\":[\"DualPipeV\",\"1F1B\"],\"microbatches\":1")));
    /* weight_grad_ms: at most the node's backward (given, or 2 x latency) */
    check_invalid("{\"name\":\"a\",\"op\":\"call_function\",\"latency_ms\":1,\"weight_grad_ms\":2.5}",
                  "", "/graph/nodes/0/weight_grad_ms", "more than the node's backward time");
    check_invalid("{\"name\":\"a\",\"op\":\"call_function\",\"backward_ms\":1,\"weight_grad_ms\":1.5}",
                  "", "/graph/nodes/0/weight_grad_ms", "more than the node's backward time");
    check_invalid("{\"name\":\"a\",\"op\":\"call_function\",\"weight_grad_ms\":-1}", "",
                  "/graph/nodes/0/weight_grad_ms", "");
    check_invalid("{\"name\":\"a\",\"op\":\"call_function\",\"backward_ms\":-1}", "",
                  "/graph/nodes/0/backward_ms", "");
    /* in another mode the training checks do not apply */
    partd_request_free(
        tu_decode_ok("{\"graph\":{\"nodes\":[{\"name\":\"a\",\"op\":\"call_function\","
                     "\"weight_grad_ms\":5}]},\"devices\":[{\"name\":\"d\",\"memory_bytes\":1}]}"));
}

/* ---- hashing ---------------------------------------------------------------- */

static partd_request *decode_training(const char *node_extra, const char *training)
{
    snprintf(text, sizeof text,
             "{\"graph\":{\"nodes\":[{\"name\":\"a\",\"op\":\"call_function\",\"latency_ms\":1%s}]},"
             "\"devices\":[{\"name\":\"d\",\"memory_bytes\":1}],"
             "\"options\":{\"mode\":\"training\",\"training\":{%s}}}",
             node_extra, training);
    return tu_decode_ok(text);
}

static void test_hashes(void **state)
{
    (void)state;
    partd_request *r[8];
    r[0] = decode_training("", "");
    r[1] = decode_training(",\"weight_grad_ms\":0.5", "");
    r[2] = decode_training("", "\"schedule\":\"1f1b\"");
    r[3] = decode_training("", "\"schedule\":\"auto\"");
    r[4] = decode_training("", "\"schedule\":[\"DualPipeV\",\"GPipe\",\"1F1B\",\"LoopedBFS\","
                               "\"Interleaved1F1B\",\"InterleavedZeroBubble\",\"ZBVZeroBubble\"]");
    r[5] = decode_training("", "\"schedule\":\"auto\",\"virtual_stages\":1");
    r[6] = decode_training("", "\"weight_grad_fraction\":0.5,\"unit_depth\":1");
    r[7] = decode_training("", "\"weight_grad_fraction\":0.25");
    /* weight_grad_ms is part of graph_hash only when given */
    assert_string_not_equal(r[0]->graph_hash, r[1]->graph_hash);
    /* v2's names mean PyTorch's; auto means every schedule, in any order */
    assert_string_equal(r[0]->cache_key, r[2]->cache_key);
    assert_string_equal(r[3]->cache_key, r[4]->cache_key);
    assert_string_not_equal(r[0]->cache_key, r[3]->cache_key);
    assert_string_not_equal(r[3]->cache_key, r[5]->cache_key);
    /* defaults spelt out hash like defaults left out */
    assert_string_equal(r[0]->cache_key, r[6]->cache_key);
    assert_string_not_equal(r[0]->cache_key, r[7]->cache_key);
    for (int i = 0; i < 8; i++)
        partd_request_free(r[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_units_and_default_depth),
        cmocka_unit_test(test_stage_figures_every_mode),
        cmocka_unit_test(test_device_order_auto_takes_the_fast_device),
        cmocka_unit_test(test_result_ranks_and_actions),
        cmocka_unit_test(test_validation_errors),
        cmocka_unit_test(test_hashes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
