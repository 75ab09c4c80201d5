/*
 * test_training_timeline.c - a plan's step re-timed from its own figures
 * (partd/timeline.h, lib/training/training_timeline.c).
 *
 * Actions read as PyTorch writes them; a case worked by hand (GPipe on two
 * ranks, a delay across the cut, recomputation in the checkpointed
 * backwards: every start and end); the planner's own plans, every schedule
 * and checkpoint mode, re-timed from the plan and from its result document
 * alone give back step_ms and every rank's busy_ms, each action starting
 * when its rank and its inputs are free; and every way figures can fail to
 * be a plan, each named by its pointer.
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
#include <jansson.h>

#include "partd/partd.h"
#include "partd/plan.h"
#include "partd/problem.h"
#include "partd/result.h"
#include "partd/timeline.h"
#include "partd/training_types.h"
#include "testutil.h"

#define EPS 1e-9

static partd_timeline_action act(const char *s)
{
    partd_timeline_action a;
    assert_true(partd_timeline_action_parse(s, &a));
    return a;
}

static void test_actions_as_pytorch_writes_them(void **state)
{
    (void)state;
    partd_timeline_action a = act("12I305");
    assert_int_equal(a.stage, 12);
    assert_int_equal(a.kind, PARTD_TIMELINE_I);
    assert_int_equal(a.microbatch, 305);
    assert_int_equal(act("0W0").kind, PARTD_TIMELINE_W);
    assert_int_equal(act("3B1").kind, PARTD_TIMELINE_B);
    static const char *const bad[] = {"",     "F1",           "3F",           "3X1",
                                      "3f1",  "-1F0",         "3F1x",         " 3F1",
                                      "3F 1", "1234567890F0", "0F1234567890", "3SEND_F1"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_false(partd_timeline_action_parse(bad[i], &a));
    assert_int_equal(partd_timeline_checkpointed(PARTD_CHECKPOINT_ALWAYS, 8), 8);
    assert_int_equal(partd_timeline_checkpointed(PARTD_CHECKPOINT_AUTO, 8), 8);
    assert_int_equal(partd_timeline_checkpointed(PARTD_CHECKPOINT_EXCEPT_LAST, 8), 7);
    assert_int_equal(partd_timeline_checkpointed(PARTD_CHECKPOINT_NEVER, 8), 0);
}

/* GPipe, two ranks, M = 2: F = 1 and 3, B = 2 and 1, a 0.5 ms delay across
 * the cut, and 1 ms of recomputation in stage 0's backward of microbatch 0
 * (checkpointed = 1). Rank 1: F0 1.5-4.5 (0F0 + 0.5), F1 4.5-7.5, B0
 * 7.5-8.5, B1 8.5-9.5. Rank 0: F0 0-1, F1 1-2, B0 waits for 1B0 + 0.5:
 * 9-12 (2 + 1 recomputed), B1 12-14. */
static void test_hand_worked_gpipe(void **state)
{
    (void)state;
    const partd_timeline_stage st[] = {{0, 1, 2, 1.5, 0.5, 1, 0.5}, {1, 3, 1, 0.5, 0.5, 0, 0}};
    const partd_timeline_action a[] = {act("0F0"), act("0F1"), act("0B0"), act("0B1"),
                                       act("1F0"), act("1F1"), act("1B0"), act("1B1")};
    const uint32_t off[] = {0, 4, 8};
    partd_timeline_plan p = {2, 2, 2, 1, st, off, a};
    partd_timeline t;
    assert_int_equal(partd_timeline_run(&p, &t, NULL, 0), PARTD_OK);
    static const double start[] = {0, 1, 9, 12, 1.5, 4.5, 7.5, 8.5};
    static const double end[] = {1, 2, 12, 14, 4.5, 7.5, 8.5, 9.5};
    assert_int_equal(t.n, 8);
    for (uint32_t i = 0; i < 8; i++) {
        assert_true(fabs(t.start[i] - start[i]) < EPS);
        assert_true(fabs(t.end[i] - end[i]) < EPS);
    }
    assert_true(fabs(t.step_ms - 14) < EPS);
    assert_true(fabs(t.busy[0] - 7) < EPS && fabs(t.busy[1] - 8) < EPS);
    assert_true(fabs(partd_timeline_duration(&p, &a[2]) - 3) < EPS);
    assert_true(fabs(partd_timeline_duration(&p, &a[3]) - 2) < EPS);
    partd_timeline_free(&t);
    partd_timeline_free(&t); /* a freed timeline is a zeroed one */
}

/* ---- the planner's plans, re-timed ---------------------------------------------------- */

static char text[16384];

/* Eight units of uneven times and sizes, two devices of two speeds, a slow
 * link (every cut between ranks costs time). */
static const char *request(const char *schedule, const char *checkpoint, uint32_t memory, int v2)
{
    size_t k = (size_t)snprintf(text, sizeof text,
                                "{\"graph\":{\"nodes\":[{\"name\":\"x\",\"op\":\"placeholder\","
                                "\"output_bytes\":64}");
    for (int i = 0; i < 8; i++) {
        char prev[8];
        snprintf(prev, sizeof prev, i ? "n%d" : "x", i - 1);
        k += (size_t)snprintf(text + k, sizeof text - k,
                              ",{\"name\":\"n%d\",\"op\":\"call_module\",\"module\":\"h.%d\","
                              "\"inputs\":[\"%s\"],\"output_bytes\":%d,\"latency_ms\":%g,"
                              "\"backward_ms\":%g,\"param_bytes\":%d}",
                              i, i, prev, 1000 + 370 * i, 1.0 + (i % 3), 2.5 + (i % 2),
                              50 * (i + 1));
    }
    snprintf(text + k, sizeof text - k,
             ",{\"name\":\"output\",\"op\":\"output\",\"inputs\":[\"n7\"]}]},"
             "\"devices\":[{\"name\":\"a\",\"memory_bytes\":%u},"
             "{\"name\":\"b\",\"memory_bytes\":%u,\"speed\":2}],"
             "\"options\":{\"mode\":\"training\",\"transfer_bytes_per_sec\":20000,"
             "\"training\":{\"schedule\":\"%s\",\"checkpoint\":\"%s\","
             "\"microbatches\":4,\"stages\":2%s}}}",
             memory, memory, schedule, checkpoint, v2 ? ",\"virtual_stages\":2" : "");
    return text;
}

/* The result's stage figures and actions, as a timeline's plan. */
typedef struct figures {
    partd_timeline_stage *st;
    partd_timeline_action *a;
    uint32_t *off;
    partd_timeline_plan p;
} figures;

static void figures_of_plan(const partd_training_result *t, figures *f)
{
    uint32_t n = t->action_off[t->n_ranks];
    f->st = calloc(t->n_stages, sizeof *f->st);
    f->a = calloc(n, sizeof *f->a);
    f->off = calloc(t->n_ranks + 1, sizeof *f->off);
    assert_non_null(f->st);
    assert_non_null(f->a);
    assert_non_null(f->off);
    for (uint32_t j = 0; j < t->n_stages; j++) {
        const partd_training_stage *s = &t->stages[j];
        f->st[j] = (partd_timeline_stage){s->rank,          s->forward_ms,     s->backward_ms,
                                          s->input_grad_ms, s->weight_grad_ms, s->recompute_ms,
                                          s->send_ms};
    }
    for (uint32_t i = 0; i < n; i++)
        f->a[i] = (partd_timeline_action){t->action_stage[i], t->action_mb[i], t->action_kind[i]};
    memcpy(f->off, t->action_off, (t->n_ranks + 1) * sizeof *f->off);
    f->p = (partd_timeline_plan){t->n_ranks,
                                 t->n_stages,
                                 t->microbatches,
                                 partd_timeline_checkpointed(t->checkpoint, t->microbatches),
                                 f->st,
                                 f->off,
                                 f->a};
}

static double num(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    assert_true(json_is_number(v));
    return json_number_value(v);
}

/* The same from the result document alone. */
static void figures_of_document(const char *json, figures *f)
{
    json_t *doc = json_loads(json, 0, NULL);
    assert_non_null(doc);
    json_t *parts = json_object_get(doc, "partitions"),
           *lists = json_object_get(json_object_get(doc, "schedule"), "actions");
    json_t *sum = json_object_get(doc, "summary");
    uint32_t V = (uint32_t)json_array_size(parts), S = (uint32_t)json_array_size(lists), n = 0;
    for (uint32_t r = 0; r < S; r++)
        n += (uint32_t)json_array_size(json_array_get(lists, r));
    f->st = calloc(V, sizeof *f->st);
    f->a = calloc(n, sizeof *f->a);
    f->off = calloc(S + 1, sizeof *f->off);
    for (uint32_t j = 0; j < V; j++) {
        json_t *o = json_array_get(parts, j);
        f->st[j] = (partd_timeline_stage){(uint32_t)num(o, "rank"), num(o, "forward_ms"),
                                          num(o, "backward_ms"),    num(o, "input_grad_ms"),
                                          num(o, "weight_grad_ms"), num(o, "recompute_ms"),
                                          num(o, "send_ms")};
    }
    for (uint32_t r = 0, i = 0; r < S; r++) {
        json_t *l = json_array_get(lists, r);
        for (size_t k = 0; k < json_array_size(l); k++)
            f->a[i++] = act(json_string_value(json_array_get(l, k)));
        f->off[r + 1] = i;
    }
    partd_checkpoint mode = PARTD_CHECKPOINT_AUTO;
    assert_int_equal(
        partd_checkpoint_parse(json_string_value(json_object_get(sum, "checkpoint")), &mode), 0);
    uint32_t M = (uint32_t)num(sum, "microbatches");
    f->p =
        (partd_timeline_plan){S, V, M, partd_timeline_checkpointed(mode, M), f->st, f->off, f->a};
    json_decref(doc);
}

static void figures_free(figures *f)
{
    free(f->st);
    free(f->a);
    free(f->off);
}

/* Each action starts when its rank's previous one has ended and its inputs
 * are there, and at the latest of those instants. */
static void check_starts(const partd_timeline_plan *p, const partd_timeline *t)
{
    const partd_timeline_action *a = p->action;
    for (uint32_t r = 0; r < p->ranks; r++)
        for (uint32_t i = p->action_off[r]; i < p->action_off[r + 1]; i++) {
            double ready = i > p->action_off[r] ? t->end[i - 1] : 0;
            for (uint32_t k = 0; k < t->n; k++) {
                int same = a[k].microbatch == a[i].microbatch;
                double d = -1;
                if (a[i].kind == PARTD_TIMELINE_F && same && a[k].kind == PARTD_TIMELINE_F &&
                    a[k].stage + 1 == a[i].stage)
                    d = t->end[k] + p->stage[a[k].stage].send_ms;
                if ((a[i].kind == PARTD_TIMELINE_B || a[i].kind == PARTD_TIMELINE_I) && same &&
                    ((a[k].kind == PARTD_TIMELINE_F && a[k].stage == a[i].stage) ||
                     (a[k].kind != PARTD_TIMELINE_F && a[k].kind != PARTD_TIMELINE_W &&
                      a[k].stage == a[i].stage + 1)))
                    d = t->end[k] + (a[k].stage == a[i].stage ? 0 : p->stage[a[i].stage].send_ms);
                if (a[i].kind == PARTD_TIMELINE_W && same && a[k].kind == PARTD_TIMELINE_I &&
                    a[k].stage == a[i].stage)
                    d = t->end[k];
                ready = fmax(ready, d);
            }
            assert_true(fabs(t->start[i] - ready) < EPS);
            assert_true(fabs(t->end[i] - t->start[i] - partd_timeline_duration(p, &a[i])) < EPS);
        }
}

static void check_schedule(const char *schedule, const char *checkpoint, uint32_t memory)
{
    int rc;
    partd_problem pb;
    partd_problem_init(&pb);
    /* the loop schedules with two stages per rank */
    int loop = strstr(schedule, "Looped") || strstr(schedule, "Interleaved");
    partd_request *req = tu_decode_ok(request(schedule, checkpoint, memory, loop));
    partd_plan *plan = NULL;
    rc = partd_plan_run(req, NULL, &plan, &pb);
    if (rc != PARTD_OK)
        fprintf(stderr, "%s %s: %s %s\n", schedule, checkpoint, partd_strerror(rc),
                pb.detail ? pb.detail : "");
    assert_int_equal(rc, PARTD_OK);
    const partd_training_result *tr = plan->training;
    figures f;
    figures_of_plan(tr, &f);
    partd_timeline t;
    assert_int_equal(partd_timeline_run(&f.p, &t, NULL, 0), PARTD_OK);
    /* the planner's own arithmetic: the very same doubles */
    assert_true(t.step_ms == tr->step_ms);
    for (uint32_t r = 0; r < tr->n_ranks; r++)
        assert_true(t.busy[r] == tr->ranks[r].busy_ms);
    check_starts(&f.p, &t);
    double recomputed = 0;
    for (uint32_t j = 0; j < tr->n_stages; j++)
        recomputed += tr->stages[j].recompute_ms;
    if (strcmp(checkpoint, "always") == 0 || memory < 8000)
        assert_true(recomputed > 0);
    partd_timeline_free(&t);
    figures_free(&f);
    /* the result document alone (15 significant digits) */
    char *json = partd_result_to_json(req, plan, NULL);
    assert_non_null(json);
    figures_of_document(json, &f);
    assert_int_equal(partd_timeline_run(&f.p, &t, NULL, 0), PARTD_OK);
    assert_true(fabs(t.step_ms - tr->step_ms) <= 1e-12 * tr->step_ms);
    partd_timeline_free(&t);
    figures_free(&f);
    free(json);
    partd_plan_free(plan);
    partd_request_free(req);
    partd_problem_free(&pb);
}

static void test_planned_steps_re_timed(void **state)
{
    (void)state;
    static const char *const schedules[] = {
        "GPipe",         "1F1B",     "LoopedBFS", "Interleaved1F1B", "InterleavedZeroBubble",
        "ZBVZeroBubble", "DualPipeV"};
    static const char *const modes[] = {"never", "always", "except_last", "auto"};
    for (size_t s = 0; s < sizeof schedules / sizeof *schedules; s++)
        for (size_t m = 0; m < sizeof modes / sizeof *modes; m++)
            check_schedule(schedules[s], modes[m], 1u << 30);
    /* memory tight enough that auto checkpoints some units */
    check_schedule("1F1B", "auto", 7300);
}

/* ---- figures that are not a plan -------------------------------------------------------- */

static void check_invalid(const partd_timeline_plan *p, const char *says)
{
    partd_timeline t;
    char err[256];
    assert_int_equal(partd_timeline_run(p, &t, err, sizeof err), PARTD_EINVALID);
    if (!strstr(err, says))
        fail_msg("\"%s\" does not say \"%s\"", err, says);
    assert_null(t.start);
    assert_null(t.busy);
}

static void test_figures_that_are_not_a_plan(void **state)
{
    (void)state;
    partd_timeline_stage st[] = {{0, 1, 2, 1.5, 0.5, 0, 0.5}, {1, 3, 1, 0.5, 0.5, 0, 0}};
    partd_timeline_action a[] = {act("0F0"), act("0B0"), act("1F0"), act("1B0")};
    uint32_t off[] = {0, 2, 4};
    partd_timeline_plan good = {2, 2, 1, 1, st, off, a}, p = good;
    partd_timeline t;
    assert_int_equal(partd_timeline_run(&good, &t, NULL, 0), PARTD_OK);
    assert_true(fabs(t.step_ms - 8.0) < EPS); /* 0F0, 1F0 at 1.5, 1B0, 0B0 at 6 */
    partd_timeline_free(&t);

    p.microbatches = 0;
    check_invalid(&p, "/summary");
    p = good;
    st[1].backward_ms = -1;
    check_invalid(&p, "/partitions/1/backward_ms");
    st[1].backward_ms = NAN;
    check_invalid(&p, "/partitions/1/backward_ms");
    st[1].backward_ms = 1;
    st[0].rank = 2;
    check_invalid(&p, "/partitions/0/rank");
    st[0].rank = 0;
    a[2] = act("0F1");
    check_invalid(&p, "/schedule/actions/1/0 names a stage, kind or microbatch");
    a[2] = act("0F0");
    check_invalid(&p, "/schedule/actions/1/0 (0F0) is on rank 1, its stage on rank 0");
    st[0].rank = 1;
    check_invalid(&p, "/schedule/actions/0/0 (0F0) is on rank 0, its stage on rank 1");
    st[0].rank = 0;
    a[2] = act("1F0");
    a[3] = act("1I0");
    check_invalid(&p, "stage 1 has an I without a W or a W without an I for microbatch 0");
    a[3] = act("1W0");
    check_invalid(&p, "stage 1 has an I without a W or a W without an I for microbatch 0");
    a[3] = act("1B0");
    a[1] = act("1B0");
    check_invalid(&p, "/schedule/actions/0/1 (1B0) is on rank 0, its stage on rank 1");
    a[1] = act("0B0");
    off[1] = 3;
    a[2] = act("0B0");
    check_invalid(&p, "/schedule/actions/0/2 (0B0) runs a second time");
    off[1] = 2;
    a[2] = act("1F0");
    /* fewer actions than every (stage, microbatch) needs */
    p.microbatches = 2;
    check_invalid(&p, "holds 4 actions, fewer than");
    p = good;
    /* rank 0 runs its backward before its forward: it waits forever */
    a[0] = act("0B0");
    a[1] = act("0F0");
    check_invalid(&p, "wait for each other forever");
    a[0] = act("0F0");
    a[1] = act("0B0");
    /* no forward for (1, 0): a second backward in its place */
    partd_timeline_action b[] = {act("0F0"), act("0B0"), act("1I0"), act("1W0"), act("1B0")};
    p.action = b;
    check_invalid(&p, "stage 1 has no F for microbatch 0");
    /* a W after a full backward */
    b[2] = act("1F0");
    uint32_t five[] = {0, 2, 5};
    p.action_off = five;
    check_invalid(&p, "stage 1 has a W after a B for microbatch 0");
    b[3] = act("1I0");
    b[4] = act("1W0");
    p.action_off = off;
    assert_int_equal(partd_timeline_run(&p, &t, NULL, 0), PARTD_EINVALID);
    p.action_off = five;
    assert_int_equal(partd_timeline_run(&p, &t, NULL, 0), PARTD_OK);
    partd_timeline_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_actions_as_pytorch_writes_them),
        cmocka_unit_test(test_hand_worked_gpipe),
        cmocka_unit_test(test_planned_steps_re_timed),
        cmocka_unit_test(test_figures_that_are_not_a_plan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
