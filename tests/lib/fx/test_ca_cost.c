/*
 * test_ca_cost.c - a try of FX's cost_aware pass (ca_internal.h) against
 * the full recomputation of the merged list, round after round of merges:
 * the cycle test, whether the list maps, and the cost, in full and
 * incrementally, to the bit, and the device of every partition; an
 * incremental try bounded by its own cost does not stop (the last of
 * equals wins), one bounded under it may. Devices whose memory left lands
 * exactly on a step's need, or ties another's, hold a try's walk to the
 * round's mapping at its boundaries; the ranges of shift a walk jumps by
 * keep the round's step at their corners.
 */
#include "fx_test.h"

#include <math.h>
#include <stdlib.h>

#include "fx/ca_internal.h"

/* x, w (read by a and f) -> a .. h with skips; 1000 B/s */
#define GRAPH                                                                                 \
    "{\"graph\":{\"nodes\":[{\"name\":\"x\",\"op\":\"placeholder\",\"output_bytes\":40},"     \
    "{\"name\":\"w\",\"op\":\"get_attr\",\"output_bytes\":16,\"params\":[{\"name\":\"w.weight\"," \
    "\"bytes\":16}]},"                                                                        \
    "{\"name\":\"a\",\"op\":\"call_module\",\"inputs\":[\"x\",\"w\"],\"output_bytes\":32,"    \
    "\"param_bytes\":64,\"latency_ms\":3},"                                                   \
    "{\"name\":\"b\",\"op\":\"call_function\",\"inputs\":[\"a\"],\"output_bytes\":8,"         \
    "\"latency_ms\":1},"                                                                      \
    "{\"name\":\"c\",\"op\":\"call_function\",\"inputs\":[\"a\",\"x\"],\"output_bytes\":24,"  \
    "\"latency_ms\":2},"                                                                      \
    "{\"name\":\"d\",\"op\":\"call_function\",\"inputs\":[\"b\",\"c\"],\"output_bytes\":16,"  \
    "\"latency_ms\":5},"                                                                      \
    "{\"name\":\"e\",\"op\":\"call_function\",\"inputs\":[\"b\"],\"output_bytes\":48,"        \
    "\"latency_ms\":1},"                                                                      \
    "{\"name\":\"f\",\"op\":\"call_module\",\"inputs\":[\"d\",\"e\",\"w\"],\"output_bytes\":8," \
    "\"param_bytes\":32,\"latency_ms\":4},"                                                   \
    "{\"name\":\"g\",\"op\":\"call_function\",\"inputs\":[\"c\"],\"output_bytes\":8,"         \
    "\"latency_ms\":2},"                                                                      \
    "{\"name\":\"h\",\"op\":\"call_function\",\"inputs\":[\"f\",\"g\"],\"output_bytes\":8,"   \
    "\"latency_ms\":1},"                                                                      \
    "{\"name\":\"out\",\"op\":\"output\",\"inputs\":[\"h\"]}]},"                              \
    "\"options\":{\"mode\":\"cost_aware\",\"transfer_bytes_per_sec\":1000},"

typedef struct tried {
    int cycle;
    uint32_t dev_u;
    uint32_t *map;         /* the merged list's devices, as the candidate orders them */
    int64_t used;
    double full, lazy;
} tried;

typedef struct counts {
    uint32_t cycles, unmapped, costed, stopped, corners;
} counts;

/* Whether the round's step at position k stays what it is when each
 * device's memory left moves by dl (the partition's inputs where they
 * were): its device keeps room, and every other device lacks room or
 * stays strictly above it in memory left (else a stable sort by memory
 * left could put it first). */
static int step_kept(const partd__ca_round *d, uint32_t k, const int64_t *dl)
{
    uint32_t D = d->D, c = d->bdev[k];
    const int64_t *lack = d->lack + (size_t)k * D, *left = d->s_left + (size_t)k * D;
    if (dl[c] <= lack[c])
        return 0;
    for (uint32_t dv = 0; dv < D; dv++)
        if (dv != c && dl[dv] > lack[dv] && left[dv] + dl[dv] <= left[c] + dl[c])
            return 0;
    return 1;
}

/* The ranges a walk jumps by (ca_round.c) are safe: every corner of each
 * position's ranges keeps the round's step, unless the position is marked
 * as one where any shift may change it; where a range is unbounded, the
 * first shift past the device's lack stands in for its far end. */
static void check_ranges(const partd__ca_round *d, counts *n)
{
    uint32_t D = d->D, L = d->rng_leaves;
    if (d->fail_at < d->P)
        return;
    int64_t dl[8], opt[8][3];
    uint32_t n_opt[8];
    assert_true(D <= 8);
    for (uint32_t k = 0; k < d->P; k++) {
        int64_t zero[8] = {0};
        if (d->any_next[k] == k)
            continue;
        assert_true(step_kept(d, k, zero));
        uint64_t combos = 1;
        for (uint32_t dv = 0; dv < D; dv++) {
            int64_t lo = -d->rng_lo[(size_t)dv * 2 * L + L + k];
            int64_t hi = d->rng_hi[(size_t)dv * 2 * L + L + k];
            int64_t lack = d->lack[(size_t)k * D + dv];
            assert_true(lo <= 0 && hi >= 0);
            n_opt[dv] = 0;
            if (lo > -(INT64_MAX / 8))
                opt[dv][n_opt[dv]++] = lo;
            if (hi < INT64_MAX / 8)
                opt[dv][n_opt[dv]++] = hi;
            else if (lack >= 0)
                opt[dv][n_opt[dv]++] = lack + 1;
            if (!n_opt[dv])
                opt[dv][n_opt[dv]++] = 0;
            combos *= n_opt[dv];
        }
        for (uint64_t x = 0; x < combos; x++) {
            uint64_t y = x;
            for (uint32_t dv = 0; dv < D; dv++) {
                dl[dv] = opt[dv][y % n_opt[dv]];
                y /= n_opt[dv];
            }
            assert_true(step_kept(d, k, dl));
            n->corners++;
        }
    }
}

/* Every pair of the round's list tried as the search does (positions in
 * order, the tries of one first partition in order), then each merged
 * list recomputed in full, which overwrites the round's candidate. */
static void check_round(partd__ca_state *st, counts *n, uint32_t *merge_a, uint32_t *merge_b)
{
    double base;
    int ok;
    assert_int_equal(partd__ca_list_evaluate(st, PARTD_NONE, PARTD_NONE, 0, 0, &base, &ok),
                     PARTD_OK);
    assert_true(ok);
    assert_int_equal(partd__ca_round_build(st), PARTD_OK);
    partd__ca_round *d = &st->rd;
    uint32_t P = d->P;
    check_ranges(d, n);
    tried *t = calloc((size_t)P * P, sizeof *t);
    assert_non_null(t);
    for (uint32_t i = 0; i + 1 < P; i++) {
        partd__ca_try_start(st, i);
        for (uint32_t j = i + 1; j < P; j++) {
            tried *x = &t[i * P + j];
            x->cycle = partd__ca_try_closes_cycle(d, i, j);
            if (x->cycle)
                continue;
            const partd__ca_rec *a = &st->recs[st->order[i]], *b = &st->recs[st->order[j]];
            double lat_u = partd__ca_list_lat(st, a, b);
            x->used = partd__ca_list_bytes(st, a, b);
            partd__ca_try_scan(st, i, j);
            x->dev_u = partd__ca_try_map(st, i, j, x->used);
            if (x->dev_u == PARTD_NONE)
                continue;
            x->map = malloc(P * sizeof *x->map);
            assert_non_null(x->map);
            for (uint32_t q = 0; q < P; q++)
                if (q != i && q != j)
                    x->map[q - (q > i) - (q > j)] = partd__ca_dev(d, i, q);
            x->map[P - 2] = x->dev_u;
            x->full = partd__ca_cost_full(st, i, j, x->dev_u, lat_u);
            x->lazy = x->full;
            if (d->fail_at == P) {
                int adjacent = 0;
                for (uint32_t e = d->ch_off[i]; e < d->ch_off[i + 1]; e++)
                    adjacent |= d->ch[e] == j;
                for (uint32_t e = d->par_off[i]; e < d->par_off[i + 1]; e++)
                    adjacent |= d->par[e] == j;
                /* bounded by its own cost, a try must not stop: it wins
                 * a tie; bounded under it, it may */
                x->lazy =
                    partd__ca_cost_lazy(st, i, j, x->dev_u, lat_u, 0, x->full, adjacent);
                double bound = x->full * 0.75;
                double c = partd__ca_cost_lazy(st, i, j, x->dev_u, lat_u, 0, bound, adjacent);
                assert_true(c == HUGE_VAL || c == x->full);
                n->stopped += c == HUGE_VAL;
            }
        }
    }
    uint32_t *order = malloc(P * sizeof *order);
    assert_non_null(order);
    memcpy(order, st->order, P * sizeof *order);
    *merge_a = *merge_b = PARTD_NONE;
    for (uint32_t i = 0; i + 1 < P; i++)
        for (uint32_t j = i + 1; j < P; j++) {
            const tried *x = &t[i * P + j];
            double full = 0;
            assert_int_equal(
                partd__ca_list_evaluate(st, order[i], order[j], x->used, 1, &full, &ok), PARTD_OK);
            if (x->cycle) {
                assert_false(ok);
                n->cycles++;
                continue;
            }
            assert_int_equal(ok, x->dev_u != PARTD_NONE);
            if (!ok) {
                n->unmapped++;
                continue;
            }
            assert_memory_equal(x->map, st->c_dev, (P - 1) * sizeof *x->map);
            assert_memory_equal(&x->full, &full, sizeof full);
            assert_memory_equal(&x->lazy, &full, sizeof full);
            n->costed++;
            if (*merge_a == PARTD_NONE) {
                *merge_a = order[i];
                *merge_b = order[j];
            }
        }
    free(order);
    for (uint32_t x = 0; x < P * P; x++)
        free(t[x].map);
    free(t);
}

/* Rounds merging the first pair that maps, down to one partition */
static counts check_rounds(const char *json)
{
    partd_request *req = tu_decode_ok(json);
    partd__ca_state st;
    counts n = {0};
    assert_int_equal(partd__ca_list_init(&st, req), PARTD_OK);
    assert_int_equal(st.n_order, 8);
    while (st.n_order > 1) {
        uint32_t a, b;
        check_round(&st, &n, &a, &b);
        if (a == PARTD_NONE)
            break;
        int64_t used = partd__ca_list_bytes(&st, &st.recs[a], &st.recs[b]);
        assert_int_equal(partd__ca_list_merge(&st, a, b, used), PARTD_OK);
        assert_int_equal(partd__ca_list_levels(&st), PARTD_OK);
    }
    partd__ca_list_free(&st);
    partd_request_free(req);
    return n;
}

static void test_tries_equal_the_full_cost(void **state)
{
    (void)state;
    counts n = check_rounds(GRAPH "\"devices\":[{\"name\":\"d0\",\"memory_bytes\":4000},"
                                  "{\"name\":\"d1\",\"memory_bytes\":4000}]}");
    assert_true(n.cycles > 0);
    assert_true(n.costed > 0);
    assert_true(n.stopped > 0);
}

static void test_tries_that_do_not_map(void **state)
{
    (void)state;
    counts n = check_rounds(GRAPH "\"devices\":[{\"name\":\"d0\",\"memory_bytes\":200},"
                                  "{\"name\":\"d1\",\"memory_bytes\":190},"
                                  "{\"name\":\"d2\",\"memory_bytes\":180}]}");
    assert_true(n.unmapped > 0);
    assert_true(n.costed > 0);
}

/* d0's 240 bytes leave it, in some try's walk, exactly what the round's
 * step there took from it: no room (a partition fits only in strictly
 * more than it takes), so the walk must step there in full. */
static void test_room_exactly_used_up(void **state)
{
    (void)state;
    counts n = check_rounds(GRAPH "\"devices\":[{\"name\":\"d0\",\"memory_bytes\":240},"
                                  "{\"name\":\"d1\",\"memory_bytes\":250}]}");
    assert_true(n.costed > 0);
}

/* Devices tying in memory left in some try's walk, from the start (equal
 * memory) and after steps (48 bytes apart): the first in the order with
 * room takes the partition, so the round's device is kept only while every
 * other with room stays strictly above it. */
static void test_memory_left_ties(void **state)
{
    (void)state;
    counts n = check_rounds(GRAPH "\"devices\":[{\"name\":\"d0\",\"memory_bytes\":230},"
                                  "{\"name\":\"d1\",\"memory_bytes\":230}]}");
    assert_true(n.costed > 0);
    n = check_rounds(GRAPH "\"devices\":[{\"name\":\"d0\",\"memory_bytes\":257},"
                           "{\"name\":\"d1\",\"memory_bytes\":209}]}");
    assert_true(n.costed > 0);
}

/* Four devices a little apart in memory, so that several have room at a
 * step: the gaps between them bound how far a walk's shift may go. */
static void test_devices_with_room(void **state)
{
    (void)state;
    counts n = check_rounds(GRAPH "\"devices\":[{\"name\":\"d0\",\"memory_bytes\":150},"
                                  "{\"name\":\"d1\",\"memory_bytes\":170},"
                                  "{\"name\":\"d2\",\"memory_bytes\":171},"
                                  "{\"name\":\"d3\",\"memory_bytes\":400}]}");
    assert_true(n.costed > 0);
    assert_true(n.corners > 50);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tries_equal_the_full_cost),
        cmocka_unit_test(test_tries_that_do_not_map),
        cmocka_unit_test(test_room_exactly_used_up),
        cmocka_unit_test(test_memory_left_ties),
        cmocka_unit_test(test_devices_with_room),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
