/* test_export_megatron.c - the `megatron` format (export_megatron.c): the
 * layout string, the recomputation flags, refusals and approximations. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "export_results.h"
#include "partd/partd.h"

static char *export_spec(const char *sched, uint32_t ranks, uint32_t v, uint32_t m,
                         const char *const *units, const char *const *ck, unsigned flags, int rc,
                         partd_problem *pb)
{
    tu_training_spec s = {sched, ranks, v, m, "auto", units, ck, 0};
    char *text = tu_training_result_text(&s);
    char *out = tu_export_expect(text, PARTD_EXPORT_MEGATRON, flags, rc, pb);
    free(text);
    return out;
}

static void test_interleaved_layout_and_recompute(void **state)
{
    (void)state;
    const char *units[] = {"tok_embeddings layers.0", "layers.1", "layers.2",
                           "layers.3 norm output"};
    const char *ck[] = {"layers.0", "layers.1", "layers.2", "layers.3"};
    partd_problem pb;
    char *out = export_spec("Interleaved1F1B", 2, 2, 4, units, ck, PARTD_EXPORT_STRICT, PARTD_OK,
                            &pb);
    assert_string_equal(out,
                        "# partd export --format megatron: a training plan of 4 stages on 2 "
                        "ranks, schedule Interleaved1F1B, 4 microbatches, checkpoint auto.\n"
                        "# rank 0 runs on device gpu0\n"
                        "# rank 1 runs on device gpu1\n"
                        "# the plan runs 4 microbatches a step: --global-batch-size = 4 x "
                        "--micro-batch-size x the data-parallel size\n"
                        "--pipeline-model-parallel-size 2\n"
                        "--pipeline-model-parallel-layout 'Et|t|t|tL'\n"
                        "--num-layers 4\n"
                        "--recompute-granularity full\n"
                        "--recompute-method block\n"
                        "--recompute-num-layers 1\n");
    free(out);
    partd_problem_free(&pb);
}

static void test_repeats_and_each_layer_once(void **state)
{
    (void)state;
    /* layers.1 has a second run: still one layer */
    const char *units[] = {"wte drop layers.0 layers.1 layers.1#2 layers.2",
                           "layers.3 layers.4 ln_f lm_head"};
    partd_problem pb;
    char *out = export_spec("1F1B", 2, 1, 4, units, NULL, PARTD_EXPORT_STRICT, PARTD_OK, &pb);
    assert_non_null(strstr(out, "--pipeline-model-parallel-layout 'Et*3|t*2L'\n"
                                "--num-layers 5\n"));
    assert_null(strstr(out, "recompute"));
    free(out);
    partd_problem_free(&pb);
}

static void test_recompute_covers_every_stage(void **state)
{
    (void)state;
    const char *units[] = {"emb layers.0 layers.1 layers.2", "layers.3 layers.4 layers.5 head"};
    const char *ck[] = {"layers.0", "layers.4"};
    partd_problem pb;
    char *out = export_spec("1F1B", 2, 1, 4, units, ck, 0, PARTD_OK, &pb);
    /* layers.4 is stage 1's second layer: the first 2 of every stage */
    assert_non_null(strstr(out, "--recompute-num-layers 2\n"));
    assert_non_null(strstr(out, "# warning (recompute-first-layers): Megatron recomputes the "
                                "first 2 layers of every stage"));
    free(out);
    partd_problem_free(&pb);
    export_spec("1F1B", 2, 1, 4, units, ck, PARTD_EXPORT_STRICT, PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/partitions", "first 2 layers");
    partd_problem_free(&pb);
}

static void test_schedules_megatron_runs_otherwise(void **state)
{
    (void)state;
    const char *units[] = {"emb layers.0", "layers.1 head"};
    partd_problem pb;
    char *out = export_spec("GPipe", 2, 1, 4, units, NULL, 0, PARTD_OK, &pb);
    assert_non_null(strstr(out, "# warning (megatron-schedule): Megatron runs its own 1F1B "
                                "order, not GPipe's"));
    free(out);
    partd_problem_free(&pb);
    export_spec("GPipe", 2, 1, 4, units, NULL, PARTD_EXPORT_STRICT, PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/schedule/name", "not GPipe's");
    partd_problem_free(&pb);
    const char *units4[] = {"emb layers.0", "layers.1", "layers.2", "layers.3 head"};
    export_spec("ZBVZeroBubble", 2, 2, 4, units4, NULL, 0, PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/schedule/name", "places stages in a V");
    partd_problem_free(&pb);
    export_spec("InterleavedZeroBubble", 2, 2, 4, units4, NULL, 0, PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/schedule/name", "more forwards in flight");
    partd_problem_free(&pb);
    /* 6 microbatches on 4 ranks: one round of 6, Megatron groups by 4 */
    const char *units8[] = {"emb layers.0", "layers.1", "layers.2", "layers.3",
                            "layers.4", "layers.5", "layers.6", "layers.7 head"};
    out = export_spec("Interleaved1F1B", 4, 2, 6, units8, NULL, 0, PARTD_OK, &pb);
    assert_non_null(strstr(out, "warning (megatron-schedule)"));
    free(out);
    partd_problem_free(&pb);
}

static void test_stages_megatron_cannot_build(void **state)
{
    (void)state;
    partd_problem pb;
    /* the embedding over two stages (a GPT-2 plan's wpe after the cut) */
    const char *a[] = {"positions wte", "wpe add h.0 h.1 ln_f", "lm_head"};
    export_spec("1F1B", 3, 1, 4, a, NULL, 0, PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/partitions/1/units/0", "on the first stage only");
    tu_assert_error(&pb, "/partitions/1/units/4", "the loss (L) on the last stage");
    partd_problem_free(&pb);
    /* a unit between layers */
    const char *b[] = {"emb layers.0 mid", "layers.1 head"};
    export_spec("1F1B", 2, 1, 4, b, NULL, 0, PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/partitions/1/units/0", "comes after units that are not layers");
    partd_problem_free(&pb);
    /* a layer cut between stages */
    const char *c[] = {"emb layers.0 layers.1", "layers.1#2 head"};
    export_spec("1F1B", 2, 1, 4, c, NULL, 0, PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/partitions/1/units/0", "cut between stages 0 and 1");
    partd_problem_free(&pb);
    /* layers out of order, and from two stacks */
    const char *d[] = {"emb layers.1 layers.0", "enc.2 head"};
    export_spec("1F1B", 2, 1, 4, d, NULL, 0, PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/partitions/0/units/1", "where layer 0 belongs");
    tu_assert_error(&pb, "/partitions/1/units/0", "another stack");
    partd_problem_free(&pb);
    /* the embedding checkpointed */
    const char *e[] = {"emb layers.0", "layers.1 head"};
    const char *eck[] = {"emb", ""};
    export_spec("1F1B", 2, 1, 4, e, eck, 0, PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/partitions/0/units/0", "recomputes decoder layers only");
    partd_problem_free(&pb);
    /* no embedding, no loss, no layers */
    const char *f[] = {"layers.0", "layers.1 head"};
    export_spec("1F1B", 2, 1, 4, f, NULL, 0, PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/partitions/0/units/0", "starts with the embedding");
    partd_problem_free(&pb);
    const char *g[] = {"emb layers.0", "layers.1"};
    export_spec("1F1B", 2, 1, 4, g, NULL, 0, PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/partitions", "ends with the loss");
    partd_problem_free(&pb);
    const char *h[] = {"a", "b"};
    export_spec("1F1B", 2, 1, 4, h, NULL, 0, PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/partitions", "no unit is a layer");
    partd_problem_free(&pb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_interleaved_layout_and_recompute),
        cmocka_unit_test(test_repeats_and_each_layer_once),
        cmocka_unit_test(test_recompute_covers_every_stage),
        cmocka_unit_test(test_schedules_megatron_runs_otherwise),
        cmocka_unit_test(test_stages_megatron_cannot_build),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
