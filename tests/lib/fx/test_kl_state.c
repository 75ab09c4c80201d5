/*
 * test_kl_state.c - the list FX's kl_based pass works on (kl_internal.h):
 * Partition sets with a node in two partitions, FX's memory of a partition
 * (an input from outside counted once per reading node), the partitions'
 * links and cycles, the cost with a transfer counted once per distinct node
 * and nothing between partitions on one device, and the incremental state
 * agreeing with the full recomputation.
 */
#include "fx_test.h"

#include "fx/kl_internal.h"

/* x, w -> a (1 ms) -> b (2 ms) -> c (4 ms), c also reading a; 16 B/s */
static const char GRAPH[] =
    "{\"graph\":{\"nodes\":[{\"name\":\"x\",\"op\":\"placeholder\",\"output_bytes\":4},"
    "{\"name\":\"w\",\"op\":\"get_attr\",\"output_bytes\":8,\"params\":[{\"name\":\"w.weight\","
    "\"bytes\":8}]},"
    "{\"name\":\"a\",\"op\":\"call_function\",\"inputs\":[\"x\",\"w\"],\"output_bytes\":16,"
    "\"latency_ms\":1},"
    "{\"name\":\"b\",\"op\":\"call_function\",\"inputs\":[\"a\"],\"output_bytes\":24,"
    "\"latency_ms\":2},"
    "{\"name\":\"c\",\"op\":\"call_function\",\"inputs\":[\"a\",\"b\"],\"output_bytes\":8,"
    "\"latency_ms\":4},"
    "{\"name\":\"out\",\"op\":\"output\",\"inputs\":[\"c\"]}]},"
    "\"devices\":[{\"name\":\"d0\",\"memory_bytes\":1000},{\"name\":\"d1\",\"memory_bytes\":1000}],"
    "\"options\":{\"mode\":\"kl_based\",\"transfer_bytes_per_sec\":16.0}}";

enum { A = 2, B = 3, C = 4 };

typedef struct fixture {
    partd_request *req;
    partd__kl k;
} fixture;

/* a in partition 0, b and c in 1; with the incremental state noting
 * every change from the start when fast */
static void setup(fixture *t, int fast)
{
    t->req = tu_decode_ok(GRAPH);
    assert_string_equal(partd_node_name(t->req, A), "a");
    assert_string_equal(partd_node_name(t->req, C), "c");
    assert_int_equal(partd__kl_state_init(&t->k, t->req, 2, 0), PARTD_OK);
    if (fast) {
        assert_int_equal(partd__kl_fast_init(&t->k), PARTD_OK);
        assert_true(t->k.f.on);
        t->k.track = 1;
    }
    assert_int_equal(partd__kl_state_add(&t->k, 0, A), PARTD_OK);
    assert_int_equal(partd__kl_state_add(&t->k, 1, B), PARTD_OK);
    assert_int_equal(partd__kl_state_add(&t->k, 1, C), PARTD_OK);
}

static void teardown(fixture *t)
{
    partd__kl_fast_free(&t->k.f);
    partd__kl_state_free(&t->k);
    partd_request_free(t->req);
}

static void test_a_node_in_two_partitions(void **state)
{
    (void)state;
    fixture t;
    setup(&t, 0);
    assert_int_equal(partd__kl_state_add(&t.k, 1, A), PARTD_OK);
    assert_int_equal(t.k.n_dups, 1);
    uint32_t dev[2] = {0, 1};
    assert_int_equal(partd__kl_state_memory(&t.k), PARTD_OK);
    assert_int_equal(partd__kl_state_edges(&t.k), PARTD_OK);
    assert_int_equal(partd__kl_answer_valid(&t.k, dev, NULL), 0);
    partd__kl_state_remove(&t.k, 1, A);
    partd__kl_state_remove(&t.k, 1, A); /* not there: nothing */
    assert_int_equal(t.k.n_dups, 0);
    assert_int_equal(t.k.mn[A], 1);
    /* a move: b to partition 0 */
    assert_int_equal(partd__kl_state_swap(&t.k, B, PARTD_NONE, 1, 0), PARTD_OK);
    assert_int_equal(t.k.mn[B], 1);
    assert_int_equal(t.k.m[B][0].p, 0);
    teardown(&t);
}

static void test_memory_links_and_cost(void **state)
{
    (void)state;
    fixture t;
    setup(&t, 0);
    assert_int_equal(partd__kl_state_memory(&t.k), PARTD_OK);
    /* a 16 + x 4 + w 8; b 24 + c 8 + a's 16 read by each of them */
    assert_int_equal(t.k.used[0], 28);
    assert_int_equal(t.k.used[1], 64);
    assert_int_equal(partd__kl_state_edges(&t.k), PARTD_OK);
    assert_int_equal(partd__kl_state_on_cycle(&t.k, 0), 0);
    /* a's 16 bytes cross once: 1 ms + 1 s + 6 ms; nothing on one device */
    uint32_t two[2] = {0, 1}, one[2] = {1, 1};
    double sec = partd__kl_state_latency(&t.k, two, NULL);
    assert_true(sec > 1.007 - 1e-12 && sec < 1.007 + 1e-12);
    sec = partd__kl_state_latency(&t.k, one, NULL);
    assert_true(sec > 0.007 - 1e-12 && sec < 0.007 + 1e-12);
    assert_int_equal(partd__kl_answer_valid(&t.k, two, NULL), 1);
    /* c back with a: 0 -> 1 -> 0, a cycle; FX's walk starts from the
     * partitions without parents, here none: it costs nothing */
    assert_int_equal(partd__kl_state_swap(&t.k, C, PARTD_NONE, 1, 0), PARTD_OK);
    assert_int_equal(partd__kl_state_memory(&t.k), PARTD_OK);
    assert_int_equal(partd__kl_state_edges(&t.k), PARTD_OK);
    assert_int_equal(partd__kl_state_on_cycle(&t.k, 1), 1);
    assert_true(partd__kl_state_latency(&t.k, two, NULL) == 0.0);
    assert_int_equal(partd__kl_answer_valid(&t.k, two, NULL), 0);
    teardown(&t);
}

/* the incremental state follows the list: memory and cost as the full
 * recomputation's, to the bit */
static void test_incremental_follows_the_list(void **state)
{
    (void)state;
    fixture t;
    setup(&t, 1);
    assert_int_equal(partd__kl_state_swap(&t.k, B, PARTD_NONE, 1, 0), PARTD_OK); /* b to a */
    int ready = 0;
    assert_int_equal(partd__kl_fast_sync(&t.k, &ready), PARTD_OK);
    assert_true(ready);
    double fast = partd__kl_fast_cost(&t.k, 0, 1);
    assert_true(fast > 0 && fast < 10);
    uint32_t fdev[2] = {t.k.fdev[0], t.k.fdev[1]};
    assert_int_equal(partd__kl_state_memory(&t.k), PARTD_OK);
    assert_int_equal(partd__kl_state_edges(&t.k), PARTD_OK);
    assert_memory_equal(t.k.f.used, t.k.used, 2 * sizeof *t.k.used);
    uint32_t dev[2] = {PARTD_NONE, PARTD_NONE};
    assert_int_equal(partd__kl_state_map(&t.k, dev), 1);
    assert_memory_equal(dev, fdev, sizeof dev);
    double full = partd__kl_state_latency(&t.k, dev, NULL);
    assert_memory_equal(&fast, &full, sizeof fast);
    /* a in both: the incremental state stands aside */
    assert_int_equal(partd__kl_state_add(&t.k, 1, A), PARTD_OK);
    assert_int_equal(partd__kl_fast_sync(&t.k, &ready), PARTD_OK);
    assert_false(ready);
    teardown(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_node_in_two_partitions),
        cmocka_unit_test(test_memory_links_and_cost),
        cmocka_unit_test(test_incremental_follows_the_list),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
