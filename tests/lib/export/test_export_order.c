/* test_export_order.c - export_order.c: schedule names read as PyTorch's
 * get_schedule_class reads them, the class's own order taken from the
 * planner's generator (whose orders tests/lib/training/
 * test_training_schedule.c checks against PyTorch's), and a plan's order
 * compared with it. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "export/export_internal.h"
#include "partd/partd.h"

static void test_names_parse_case_insensitively(void **state)
{
    (void)state;
    partd_training_schedule s;
    assert_int_equal(partd__export_sched_parse("1f1b", &s), PARTD_OK);
    assert_int_equal(s, PARTD_TRAINING_1F1B);
    assert_int_equal(partd__export_sched_parse("gpipe", &s), PARTD_OK);
    assert_int_equal(s, PARTD_TRAINING_GPIPE);
    assert_int_equal(partd__export_sched_parse("ZBVZeroBubble", &s), PARTD_OK);
    assert_int_equal(s, PARTD_TRAINING_ZBV);
    assert_int_equal(partd__export_sched_parse("Interleaved1f1b", &s), PARTD_OK);
    assert_int_equal(s, PARTD_TRAINING_INTERLEAVED_1F1B);
    s = PARTD_TRAINING_DUALPIPEV;
    assert_int_equal(partd__export_sched_parse("PipeDream", &s), PARTD_EINVALID);
    assert_int_equal(s, PARTD_TRAINING_DUALPIPEV);
}

static partd__export_plan shape(partd_training_schedule s, uint32_t ranks, uint32_t v,
                                uint32_t m)
{
    partd__export_plan p;
    memset(&p, 0, sizeof p);
    p.training = 1;
    p.sched = s;
    p.n_ranks = ranks;
    p.v = v;
    p.n_stages = ranks * v;
    p.microbatches = m;
    return p;
}

static int own_rc(partd_training_schedule s, uint32_t ranks, uint32_t v, uint32_t m)
{
    partd__export_plan p = shape(s, ranks, v, m);
    partd_training_lists l;
    int rc = partd__export_own_order(&p, &l);
    if (rc == PARTD_OK) {
        assert_int_equal(l.S, ranks);
        assert_int_equal(l.V, ranks * v);
        partd_training_lists_free(&l);
    } else {
        assert_null(l.off);
    }
    return rc;
}

static void test_shapes_a_class_cannot_run(void **state)
{
    (void)state;
    assert_int_equal(own_rc(PARTD_TRAINING_1F1B, 4, 1, 3), PARTD_EINVALID); /* M < S */
    /* the generator would build GPipe's and 1F1B's v = 1 lists for any v:
     * a plan with two stages per rank is not one they run */
    assert_int_equal(own_rc(PARTD_TRAINING_1F1B, 2, 2, 4), PARTD_EINVALID);
    assert_int_equal(own_rc(PARTD_TRAINING_GPIPE, 2, 2, 4), PARTD_EINVALID);
    assert_int_equal(own_rc(PARTD_TRAINING_ZBV, 2, 3, 4), PARTD_EINVALID); /* two per rank */
    assert_int_equal(own_rc(PARTD_TRAINING_INTERLEAVED_1F1B, 4, 2, 10), PARTD_OK);
    assert_int_equal(own_rc(PARTD_TRAINING_INTERLEAVED_1F1B, 4, 2, 9), PARTD_EINVALID);
    assert_int_equal(own_rc(PARTD_TRAINING_DUALPIPEV, 2, 2, 3), PARTD_EINVALID); /* M < 2S */
    assert_int_equal(own_rc(PARTD_TRAINING_DUALPIPEV, 2, 2, 4), PARTD_OK);
}

static void test_order_is_own(void **state)
{
    (void)state;
    partd__export_plan p = shape(PARTD_TRAINING_INTERLEAVED_ZB, 2, 2, 4);
    assert_int_equal(partd__export_order_is_own(&p), 0); /* no order at all */
    assert_int_equal(partd__export_own_order(&p, &p.order), PARTD_OK);
    assert_int_equal(partd__export_order_is_own(&p), 1);
    /* swap rank 1's first two actions: same actions, another order */
    partd_training_action *a = &p.order.act[p.order.off[1]], t = a[0];
    a[0] = a[1];
    a[1] = t;
    assert_int_equal(partd__export_order_is_own(&p), 0);
    a[1] = a[0];
    a[0] = t;
    /* one action moved from rank 0's end to rank 1's start */
    p.order.off[1]--;
    assert_int_equal(partd__export_order_is_own(&p), 0);
    p.order.off[1]++;
    assert_int_equal(partd__export_order_is_own(&p), 1);
    /* the same lists under another class */
    p.sched = PARTD_TRAINING_INTERLEAVED_1F1B;
    assert_int_equal(partd__export_order_is_own(&p), 0);
    partd_training_lists_free(&p.order);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_parse_case_insensitively),
        cmocka_unit_test(test_shapes_a_class_cannot_run),
        cmocka_unit_test(test_order_is_own),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
