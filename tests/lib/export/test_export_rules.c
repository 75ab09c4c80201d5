/* test_export_rules.c - PyTorch's rules for an order in export_rules.c
 * (_validate_schedule, _add_send_recv): every class's own order keeps them,
 * and each rule catches what it is there for. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/export_internal.h"
#include "partd/partd.h"

typedef struct fixture {
    partd__export_plan plan;
    partd__export_ctx ctx;
    partd_problem pb;
} fixture;

static void fixture_init(fixture *f, uint32_t ranks, uint32_t v, uint32_t m)
{
    memset(f, 0, sizeof *f);
    partd_problem_init(&f->pb);
    f->plan.mode = "training";
    f->plan.training = 1;
    f->plan.n_ranks = ranks;
    f->plan.v = v;
    f->plan.n_stages = ranks * v;
    f->plan.microbatches = m;
    f->plan.order.off = calloc(ranks + 1, sizeof *f->plan.order.off);
    f->plan.order.act = calloc(256, sizeof *f->plan.order.act);
    assert_non_null(f->plan.order.off);
    assert_non_null(f->plan.order.act);
    f->ctx.plan = &f->plan;
    f->ctx.format = PARTD_EXPORT_PYTORCH;
    f->ctx.pb = &f->pb;
}

static void fixture_free(fixture *f)
{
    partd_training_lists_free(&f->plan.order);
    partd_problem_free(&f->pb);
}

/* "0F0 0B0" as rank r's list; ranks are given in order, each once. */
static void set_actions(fixture *f, uint32_t r, const char *list)
{
    partd_training_lists *o = &f->plan.order;
    assert_int_equal(o->off[r], o->n);
    char *copy = strdup(list), *save = NULL;
    for (char *t = strtok_r(copy, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
        unsigned stage, mb;
        char kind;
        assert_int_equal(sscanf(t, "%u%c%u", &stage, &kind, &mb), 3);
        const char *k = strchr("FBIW", kind);
        assert_non_null(k);
        assert_true(o->n < 256);
        o->act[o->n++] = (partd_training_action){stage, (uint16_t)mb, (uint8_t)(k - "FBIW"), 0};
    }
    free(copy);
    for (uint32_t q = r + 1; q <= f->plan.n_ranks; q++)
        o->off[q] = o->n;
}

static void test_every_class_order_keeps_the_rules(void **state)
{
    (void)state;
    unsigned ran[PARTD_TRAINING_SCHEDULE_COUNT] = {0};
    for (int s = 0; s < PARTD_TRAINING_SCHEDULE_COUNT; s++)
        for (uint32_t ranks = 1; ranks <= 4; ranks++)
            for (uint32_t v = 1; v <= 3; v++)
                for (uint32_t m = 1; m <= 9; m++) {
                    fixture f;
                    fixture_init(&f, ranks, v, m);
                    f.plan.sched = (partd_training_schedule)s;
                    partd_training_lists_free(&f.plan.order);
                    int ok = partd__export_own_order(&f.plan, &f.plan.order) == PARTD_OK;
                    if (ok) {
                        ran[s]++;
                        assert_int_equal(partd__export_pytorch_rules(&f.ctx), 0);
                        assert_int_equal(f.ctx.n_refusals, 0);
                        assert_true(partd__export_order_is_own(&f.plan));
                    }
                    fixture_free(&f);
                }
    for (int s = 0; s < PARTD_TRAINING_SCHEDULE_COUNT; s++)
        assert_true(ran[s] > 0);
}

static void test_rules_backward_before_forward(void **state)
{
    (void)state;
    fixture f;
    fixture_init(&f, 1, 1, 1);
    set_actions(&f, 0, "0B0 0F0");
    assert_int_equal(partd__export_pytorch_rules(&f.ctx), 1);
    tu_assert_error(&f.pb, "/schedule/actions/0/0", "before its forward");
    fixture_free(&f);
}

static void test_rules_weight_before_input(void **state)
{
    (void)state;
    fixture f;
    fixture_init(&f, 1, 1, 1);
    set_actions(&f, 0, "0F0 0W0 0I0");
    assert_int_equal(partd__export_pytorch_rules(&f.ctx), 1);
    tu_assert_error(&f.pb, "/schedule/actions/0/1", "before its I");
    fixture_free(&f);
}

static void test_rules_stage_on_two_ranks(void **state)
{
    (void)state;
    fixture f;
    fixture_init(&f, 2, 1, 1);
    set_actions(&f, 0, "0F0 0B0");
    set_actions(&f, 1, "1F0 1B0 0F0");
    assert_true(partd__export_pytorch_rules(&f.ctx) >= 1);
    tu_assert_error(&f.pb, "/schedule/actions/1/2", "two ranks");
    fixture_free(&f);
}

static void test_rules_counts_per_stage(void **state)
{
    (void)state;
    fixture f;
    fixture_init(&f, 1, 1, 2);
    set_actions(&f, 0, "0F0 0F1 0B0 0I1");
    assert_int_equal(partd__export_pytorch_rules(&f.ctx), 1);
    tu_assert_error(&f.pb, "/partitions/0", "1 I and 0 W");
    fixture_free(&f);
}

static void test_rules_a_stalled_lowering(void **state)
{
    (void)state;
    fixture f;
    fixture_init(&f, 2, 1, 2);
    /* rank 0 waits for 1B0 before sending 0F1; rank 1 waits for 0F1 */
    set_actions(&f, 0, "0F0 0B0 0F1 0B1");
    set_actions(&f, 1, "1F1 1B1 1F0 1B0");
    assert_int_equal(partd__export_pytorch_rules(&f.ctx), 2);
    tu_assert_error(&f.pb, "/schedule/actions/0/1", "waits forever");
    tu_assert_error(&f.pb, "/schedule/actions/1/0", "waits forever");
    fixture_free(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_class_order_keeps_the_rules),
        cmocka_unit_test(test_rules_backward_before_forward),
        cmocka_unit_test(test_rules_weight_before_input),
        cmocka_unit_test(test_rules_stage_on_two_ranks),
        cmocka_unit_test(test_rules_counts_per_stage),
        cmocka_unit_test(test_rules_a_stalled_lowering),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
