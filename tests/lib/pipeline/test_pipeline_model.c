/* test_pipeline_model.c - pipeline_model.c: the pipeline planner's cost
 * model. On random small graphs (skips, tied parameters, get_attr tensors,
 * several placeholders) every stage window [a, e), reached afresh or by
 * sliding, counts exactly the parameter and received bytes that a direct
 * reading of the contract gives; required cuts, activation copies per
 * schedule and the fixed-point times are checked too. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "partd/partd.h"
#include "pipeline/pipeline_model.h"
#include "pipeline_test_graphs.h"

/* The contract's reading of stage [a, e): parameters stored once (named ones
 * by name, unnamed get_attr tensors by node) and bytes received (placeholders
 * and earlier operations' outputs), each counted once. */
static void direct_window(const tg_graph *g, int a, int e, int64_t *params, int64_t *recv)
{
    int param_seen[TG_MAX_PARAMS] = {0};
    int node_seen[TG_MAX_NODES] = {0};
    *params = *recv = 0;
    for (int r = a; r < e; r++) {
        const tg_node *op = &g->nodes[g->op_node[r]];
        if (op->n_params == 0)
            *params += op->own_param_bytes;
        for (int k = 0; k < op->n_params; k++)
            if (!param_seen[op->params[k]]++)
                *params += g->param_bytes[op->params[k]];
        for (int k = 0; k < op->n_inputs; k++) {
            int in = op->inputs[k];
            const tg_node *src = &g->nodes[in];
            if (node_seen[in]++)
                continue;
            if (src->kind == TG_GET_ATTR) {
                if (src->n_params == 0)
                    *params += src->output_bytes;
                for (int q = 0; q < src->n_params; q++)
                    if (!param_seen[src->params[q]]++)
                        *params += g->param_bytes[src->params[q]];
            } else if (src->kind == TG_PLACEHOLDER || src->rank < a) {
                *recv += src->output_bytes;
            }
        }
    }
}

static void check_windows(const tg_graph *g, const partd_pipeline_model *md)
{
    int m = g->n_ops;
    for (int a = 0; a < m; a++) {
        partd_pipeline_window slide = {a, a, 0, 0};
        for (int e = a + 1; e <= m; e++) {
            partd_pipeline_window fresh = {0, 0, 0, 0};
            partd_pipeline_window_move(md, &fresh, a, e);
            partd_pipeline_window_move(md, &slide, a, e); /* grows one reader at a time */
            int64_t params, recv;
            direct_window(g, a, e, &params, &recv);
            partd_pipeline_stage st;
            partd_pipeline_stage_eval(md, 0, &fresh, &st);
            assert_int_equal(st.params, params);
            assert_int_equal(st.recv, recv);
            assert_int_equal(slide.p, fresh.p);
            assert_int_equal(slide.r, fresh.r);
        }
    }
    /* Sliding forward from the left end too: [0, m) -> [a, m). */
    partd_pipeline_window w = {0, 0, 0, 0};
    partd_pipeline_window_move(md, &w, 0, m);
    for (int a = 1; a < m; a++) {
        partd_pipeline_window_move(md, &w, a, m);
        int64_t params, recv;
        direct_window(g, a, m, &params, &recv);
        partd_pipeline_stage st;
        partd_pipeline_stage_eval(md, 0, &w, &st);
        assert_int_equal(st.params, params);
        assert_int_equal(st.recv, recv);
    }
}

static void test_windows_count_each_resource_once(void **state)
{
    (void)state;
    for (unsigned seed = 1; seed <= 400; seed++) {
        tg_graph g;
        tg_random(&g, seed, 1);
        char *json = tg_request_json(&g, "time", "inference", 1, NULL, 0);
        partd_request *req = tu_decode_ok(json);
        partd_pipeline_model md;
        partd_problem pb;
        partd_problem_init(&pb);
        assert_int_equal(partd_pipeline_model_build(&md, req, NULL, 0, &pb), PARTD_OK);
        assert_int_equal(md.m, (uint32_t)g.n_ops);
        check_windows(&g, &md);
        partd_pipeline_model_free(&md);
        partd_problem_free(&pb);
        partd_request_free(req);
        free(json);
    }
}

static void test_activation_copies_follow_the_schedule(void **state)
{
    (void)state;
    tg_graph g;
    tg_random(&g, 7, 4);
    const char *schedules[] = {"inference", "gpipe", "1f1b"};
    for (int k = 0; k < 3; k++) {
        char *json = tg_request_json(&g, "time", schedules[k], 3, NULL, 0);
        partd_request *req = tu_decode_ok(json);
        partd_pipeline_model md;
        partd_problem pb;
        partd_problem_init(&pb);
        assert_int_equal(partd_pipeline_model_build(&md, req, NULL, 0, &pb), PARTD_OK);
        for (uint32_t s = 0; s < md.stages; s++) {
            int64_t want = k == 0 ? 1 : k == 1 ? 3 : (3 < (int64_t)(md.stages - s) ? 3 : (int64_t)(md.stages - s));
            assert_int_equal(md.k_act[s], want);
        }
        partd_pipeline_model_free(&md);
        partd_problem_free(&pb);
        partd_request_free(req);
        free(json);
    }
}

static void test_required_cuts_bound_every_stage(void **state)
{
    (void)state;
    tg_graph g;
    tg_random(&g, 11, 3);
    int32_t cuts[] = {2, 4};
    char *json = tg_request_json(&g, "time", "inference", 1, NULL, 0);
    partd_request *req = tu_decode_ok(json);
    partd_pipeline_model md;
    partd_problem pb;
    partd_problem_init(&pb);
    assert_int_equal(partd_pipeline_model_build(&md, req, cuts, 2, &pb), PARTD_OK);
    for (int32_t a = 0; a <= (int32_t)md.m; a++) {
        int32_t want = a < 2 ? 2 : a < 4 ? 4 : (int32_t)md.m;
        assert_int_equal(md.next_cut[a], want);
    }
    /* A stage starting at 0 may end at the first required cut at the latest. */
    assert_true(partd_pipeline_max_end(&md, 0, 0) <= 2);
    partd_pipeline_model_free(&md);
    partd_problem_free(&pb);
    partd_request_free(req);
    free(json);
}

static void test_stage_times_telescope_in_ticks(void **state)
{
    (void)state;
    for (unsigned seed = 1; seed <= 50; seed++) {
        tg_graph g;
        tg_random(&g, seed, 3);
        char *json = tg_request_json(&g, "time", "inference", 1, NULL, 0);
        partd_request *req = tu_decode_ok(json);
        partd_pipeline_model md;
        partd_problem pb;
        partd_problem_init(&pb);
        assert_int_equal(partd_pipeline_model_build(&md, req, NULL, 0, &pb), PARTD_OK);
        for (uint32_t s = 0; s < md.stages; s++) {
            /* Any split of [0, m) into two windows adds up to the whole. */
            for (int32_t c = 1; c < (int32_t)md.m; c++) {
                partd_pipeline_window left = {0, 0, 0, 0}, right = {0, 0, 0, 0}, all = {0, 0, 0, 0};
                partd_pipeline_window_move(&md, &left, 0, c);
                partd_pipeline_window_move(&md, &right, c, (int32_t)md.m);
                partd_pipeline_window_move(&md, &all, 0, (int32_t)md.m);
                partd_pipeline_stage l, r, w;
                partd_pipeline_stage_eval(&md, s, &left, &l);
                partd_pipeline_stage_eval(&md, s, &right, &r);
                partd_pipeline_stage_eval(&md, s, &all, &w);
                assert_int_equal(l.ticks + r.ticks, w.ticks);
                double want = md.time_prefix[md.m] / md.speed[md.stage_speed[s]];
                assert_true(fabs(w.compute_ms - want) <= 1e-9 * (1 + want));
                assert_int_equal(l.act + r.act, w.act);
            }
        }
        partd_pipeline_model_free(&md);
        partd_problem_free(&pb);
        partd_request_free(req);
        free(json);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_windows_count_each_resource_once),
        cmocka_unit_test(test_activation_copies_follow_the_schedule),
        cmocka_unit_test(test_required_cuts_bound_every_stage),
        cmocka_unit_test(test_stage_times_telescope_in_ticks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
