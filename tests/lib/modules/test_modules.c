/*
 * test_modules.c - graph.modules decoding (lib/modules.c): a valid
 * module_info, the tree it gives (ancestry by fqn prefix at a "." boundary,
 * non-contiguous subtrees), and every validation error with its pointer.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <jansson.h>

#include "modules/modules.h"
#include "partd/partd.h"
#include "testutil.h"

static const char *stat_json(const char *fqn, int leaf)
{
    static char buf[2048];
    snprintf(buf, sizeof buf,
             "{\"fqn\":\"%s\",\"param_per_module\":1000,\"grad_per_module\":1000,"
             "\"grad_total\":500,\"act_fw_per_module\":4000,\"act_bw_per_module\":100,"
             "\"act_grad_per_module\":200,\"act_total\":9000,\"input_per_module\":10,"
             "\"output_per_module\":20,\"fw_runtime_per_module\":1.5,"
             "\"bw_runtime_per_module\":3.0,\"is_leaf\":%s,\"sac_runtime\":%s,"
             "\"sac_memory\":%s,\"n_segments\":%s,\"slopes\":%s,\"intercepts\":%s,"
             "\"breakpoints\":%s,\"tradeoff_curve\":%s}",
             fqn, leaf ? "true" : "false", leaf ? "0" : "2.5", leaf ? "0" : "5000",
             leaf ? "0" : "2", leaf ? "[]" : "[0.5,1.5]", leaf ? "[]" : "[0,-0.5]",
             leaf ? "[]" : "[0,0.5,1]", leaf ? "{}" : "{\"0.0\":0.0,\"1.0\":1.0}");
    return buf;
}

/* M, M.a, M.a.x, M.ab, M.b, M.b.y; pre-order deliberately non-contiguous
 * (M.b's subtree is split by M.ab). */
static json_t *valid_modules(void)
{
    const char *names[6] = { "M", "M.a", "M.a.x", "M.ab", "M.b", "M.b.y" };
    int leaf[6] = { 0, 0, 1, 1, 0, 1 };
    json_t *stats = json_array();
    for (int i = 5; i >= 0; i--) /* mod_stats in any order */
        json_array_append_new(stats, json_loads(stat_json(names[i], leaf[i]), 0, NULL));
    json_t *order = json_loads(
        "{\"fw_pre_order\":[\"M\",\"M.a\",\"M.b\",\"M.a.x\",\"M.ab\",\"M.b.y\"],"
        "\"fw_post_order\":[\"M.a.x\",\"M.a\",\"M.ab\",\"M.b.y\",\"M.b\",\"M\"],"
        "\"bw_pre_order\":[\"M\",\"M.b\",\"M.b.y\",\"M.ab\",\"M.a\",\"M.a.x\"],"
        "\"bw_post_order\":[\"M.b.y\",\"M.b\",\"M.ab\",\"M.a.x\",\"M.a\",\"M\"]}",
        0, NULL);
    json_t *m = json_object();
    json_object_set_new(m, "mod_order", order);
    json_object_set_new(m, "mod_stats", stats);
    assert_non_null(order);
    return m;
}

static json_t *stat_of(json_t *m, const char *fqn)
{
    json_t *stats = json_object_get(m, "mod_stats");
    for (size_t i = 0; i < json_array_size(stats); i++) {
        json_t *s = json_array_get(stats, i);
        if (strcmp(json_string_value(json_object_get(s, "fqn")), fqn) == 0)
            return s;
    }
    fail_msg("no stat %s", fqn);
    return NULL;
}

static size_t stat_index(json_t *m, const char *fqn)
{
    json_t *stats = json_object_get(m, "mod_stats");
    for (size_t i = 0; i < json_array_size(stats); i++)
        if (strcmp(json_string_value(json_object_get(json_array_get(stats, i), "fqn")),
                   fqn) == 0)
            return i;
    return (size_t)-1;
}

/* Decodes `m` (consumed) and expects rejection with an error at pointer. */
static void expect_error(json_t *m, const char *pointer, const char *needle)
{
    partd_strtab st;
    partd_strtab_init(&st);
    partd_problem pb;
    partd_problem_init(&pb);
    struct partd_modules *out = (void *)1;
    char *canon = (void *)1;
    int rc = partd_modules_decode(m, &st, &pb, &out, &canon);
    assert_int_equal(rc, PARTD_EINVALID);
    assert_null(out);
    assert_null(canon);
    assert_int_equal(pb.status, 422);
    tu_assert_error(&pb, pointer, needle);
    partd_problem_free(&pb);
    partd_strtab_free(&st);
    json_decref(m);
}

static void test_valid_tree(void **state)
{
    (void)state;
    json_t *m = valid_modules();
    partd_strtab st;
    partd_strtab_init(&st);
    partd_problem pb;
    partd_problem_init(&pb);
    struct partd_modules *mods = NULL;
    char *canon = NULL;
    assert_int_equal(partd_modules_decode(m, &st, &pb, &mods, &canon), PARTD_OK);
    assert_int_equal(pb.n_errors, 0);
    assert_non_null(canon);
    assert_int_equal(mods->n, 6);
    const char *pre[6] = { "M", "M.a", "M.b", "M.a.x", "M.ab", "M.b.y" };
    const char *parent[6] = { NULL, "M", "M", "M.a", "M", "M.b" };
    for (int i = 0; i < 6; i++) {
        assert_string_equal(partd_str(&st, mods->mods[i].fqn), pre[i]);
        if (!parent[i])
            assert_int_equal(mods->mods[i].parent, PARTD_NONE);
        else
            assert_string_equal(partd_str(&st, mods->mods[mods->mods[i].parent].fqn),
                                parent[i]);
    }
    for (uint32_t i = 0; i < 6; i++)
        assert_int_equal(partd_modules_find(mods, mods->mods[i].fqn), i);
    assert_int_equal(partd_modules_find(mods, partd_strtab_intern(&st, "M.c", 3)),
                     PARTD_NONE);
    /* "M.a" is not an ancestor of "M.ab"; it is of "M.a.x". */
    assert_false(partd_modules_is_ancestor(mods, 1, 4));
    assert_true(partd_modules_is_ancestor(mods, 1, 3));
    assert_true(partd_modules_is_ancestor(mods, 0, 5));
    assert_false(partd_modules_is_ancestor(mods, 3, 3));
    /* post order: M.a.x M.a M.ab M.b.y M.b M */
    uint32_t post[6] = { 3, 1, 4, 5, 2, 0 };
    for (int k = 0; k < 6; k++) {
        assert_int_equal(mods->post_order[k], post[k]);
        assert_int_equal(mods->mods[post[k]].post_pos, k);
    }
    assert_int_equal(mods->mods[1].n_segments, 2);
    assert_true(mods->mods[1].slopes[1] == 1.5);
    assert_true(mods->mods[1].intercepts[1] == -0.5);
    assert_int_equal(mods->mods[1].sac_memory, 5000);
    assert_true(mods->mods[3].is_leaf);
    /* the canonical text sorts keys */
    assert_non_null(strstr(canon, "{\"mod_order\":{\"bw_post_order\""));
    free(canon);
    partd_modules_free(mods);
    partd_problem_free(&pb);
    partd_strtab_free(&st);
    json_decref(m);
}

static void test_sac_stats_valid(void **state)
{
    (void)state;
    json_t *m = valid_modules();
    json_object_set_new(stat_of(m, "M.a"), "sac_stats", json_loads(
        "{\"func_names\":[\"aten.mm\",\"aten.relu_\",\"aten.t\"],\"runtimes\":[1,2,0.5],"
        "\"memory\":[100,0,0],\"view_like_ops\":[2],\"rand_ops\":[],"
        "\"saved_autograd_ops\":[0],\"inplace_ops\":[[1,0]],\"force_store_random\":false}",
        0, NULL));
    partd_strtab st;
    partd_strtab_init(&st);
    partd_problem pb;
    partd_problem_init(&pb);
    struct partd_modules *mods = NULL;
    assert_int_equal(partd_modules_decode(m, &st, &pb, &mods, NULL), PARTD_OK);
    const partd_sac_stats *s = mods->mods[1].sac_stats;
    assert_non_null(s);
    assert_int_equal(s->n_ops, 3);
    assert_string_equal(partd_str(&st, s->func_names[1]), "aten.relu_");
    assert_int_equal(s->memory[0], 100);
    assert_int_equal(s->n_inplace, 1);
    assert_int_equal(s->inplace_op[0], 1);
    assert_int_equal(s->inplace_parent[0], 0);
    assert_int_equal(s->view_like_ops[0], 2);
    assert_null(mods->mods[0].sac_stats);
    partd_modules_free(mods);
    partd_problem_free(&pb);
    partd_strtab_free(&st);
    json_decref(m);
}

/* Strings a client sends that are never interned have the names' limit
 * too: an order list's fqn and an op's name, reported by their length,
 * never quoted back. */
static void test_long_strings_are_refused_by_length(void **state)
{
    (void)state;
    char *big = malloc(5000);
    assert_non_null(big);
    memset(big, 'q', 4999);
    big[4999] = '\0';
    json_t *m = valid_modules();
    json_array_set_new(json_object_get(json_object_get(m, "mod_order"), "fw_pre_order"), 2,
                       json_string(big));
    expect_error(m, "/graph/modules/mod_order/fw_pre_order/2", "is 4999 bytes long");
    m = valid_modules();
    json_object_set_new(stat_of(m, "M.a"), "sac_stats", json_pack(
        "{s:[s,s], s:[i,i], s:[i,i], s:[], s:[], s:[], s:[], s:b}", "func_names", "aten.mm", big,
        "runtimes", 1, 2, "memory", 0, 0, "view_like_ops", "rand_ops", "saved_autograd_ops",
        "inplace_ops", "force_store_random", 0));
    char ptr[128];
    snprintf(ptr, sizeof ptr, "/graph/modules/mod_stats/%zu/sac_stats/func_names/1",
             stat_index(m, "M.a"));
    expect_error(m, ptr, "is 4999 bytes long");
    free(big);
}

static void test_not_object(void **state)
{
    (void)state;
    expect_error(json_array(), "/graph/modules", "object");
}

static void test_unknown_member(void **state)
{
    (void)state;
    json_t *m = valid_modules();
    json_object_set_new(m, "extra", json_true());
    expect_error(m, "/graph/modules/extra", "unknown");
    m = valid_modules();
    json_object_set_new(stat_of(m, "M.b"), "index", json_integer(3));
    char ptr[64];
    snprintf(ptr, sizeof ptr, "/graph/modules/mod_stats/%zu/index", stat_index(m, "M.b"));
    expect_error(m, ptr, "unknown");
    m = valid_modules();
    json_object_set_new(json_object_get(m, "mod_order"), "fw_order", json_array());
    expect_error(m, "/graph/modules/mod_order/fw_order", "unknown");
}

static void test_missing_members(void **state)
{
    (void)state;
    json_t *m = valid_modules();
    json_object_del(m, "mod_order");
    expect_error(m, "/graph/modules/mod_order", "is required");
    m = valid_modules();
    json_object_del(m, "mod_stats");
    expect_error(m, "/graph/modules/mod_stats", "is required");
    const char *keys[] = { "param_per_module", "act_total", "sac_runtime", "is_leaf",
                           "n_segments", "slopes", "intercepts", "breakpoints",
                           "tradeoff_curve", "fqn", "grad_total" };
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        m = valid_modules();
        size_t idx = stat_index(m, "M.a");
        json_object_del(stat_of(m, "M.a"), keys[k]);
        char ptr[96];
        snprintf(ptr, sizeof ptr, "/graph/modules/mod_stats/%zu/%s", idx, keys[k]);
        expect_error(m, ptr, "is required");
    }
    m = valid_modules();
    json_object_del(json_object_get(m, "mod_order"), "bw_post_order");
    expect_error(m, "/graph/modules/mod_order/bw_post_order", "is required");
}

static void test_types_and_ranges(void **state)
{
    (void)state;
    struct { const char *key; json_t *(*make)(void); const char *needle; } cases[] = {
        { "act_total", NULL, "must be an integer number of bytes, not 1.5" },
        { "grad_total", NULL, "must be between 0 and 2^53, not -1" },
        { "fw_runtime_per_module", NULL, "must be at least 0" },
        { "sac_runtime", NULL, "must be a number, not a string" },
        { "is_leaf", NULL, "must be a boolean, not an integer" },
        { "n_segments", NULL, "must be an integer, not 2.5; an integer is needed" },
        { "tradeoff_curve", NULL, "must be an object, not an array" },
        { "slopes", NULL, "must be an array, not an object" },
    };
    json_t *values[] = { json_real(1.5), json_integer(-1), json_real(-0.1),
                         json_string("x"), json_integer(1), json_real(2.5),
                         json_array(), json_object() };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        json_t *m = valid_modules();
        size_t idx = stat_index(m, "M.a");
        json_object_set(stat_of(m, "M.a"), cases[k].key, values[k]);
        char ptr[96];
        snprintf(ptr, sizeof ptr, "/graph/modules/mod_stats/%zu/%s", idx, cases[k].key);
        expect_error(m, ptr, cases[k].needle);
        json_decref(values[k]);
    }
    json_t *m = valid_modules();
    size_t idx = stat_index(m, "M.a");
    json_object_set_new(json_object_get(stat_of(m, "M.a"), "tradeoff_curve"), "0.5",
                        json_string("x"));
    char ptr[96];
    snprintf(ptr, sizeof ptr, "/graph/modules/mod_stats/%zu/tradeoff_curve/0.5", idx);
    expect_error(m, ptr, "number");
    m = valid_modules();
    json_object_set_new(stat_of(m, "M.a"), "fqn", json_string(""));
    snprintf(ptr, sizeof ptr, "/graph/modules/mod_stats/%zu/fqn", idx);
    expect_error(m, ptr, "must not be empty");
    m = valid_modules();
    json_array_set_new(json_object_get(stat_of(m, "M.a"), "breakpoints"), 1,
                       json_string("x"));
    snprintf(ptr, sizeof ptr, "/graph/modules/mod_stats/%zu/breakpoints/1", idx);
    expect_error(m, ptr, "number");
    expect_error(json_loads("{\"mod_order\":{},\"mod_stats\":[]}", 0, NULL),
                 "/graph/modules/mod_stats", "at least one");
    m = valid_modules();
    json_array_set_new(json_object_get(m, "mod_stats"), 0, json_integer(3));
    expect_error(m, "/graph/modules/mod_stats/0", "object");
}

static void test_segments_length(void **state)
{
    (void)state;
    json_t *m = valid_modules();
    size_t idx = stat_index(m, "M.a");
    json_array_append_new(json_object_get(stat_of(m, "M.a"), "slopes"), json_real(1));
    char ptr[96];
    snprintf(ptr, sizeof ptr, "/graph/modules/mod_stats/%zu/slopes", idx);
    expect_error(m, ptr, "n_segments (2)");
    m = valid_modules();
    json_object_set_new(stat_of(m, "M.a"), "n_segments", json_integer(3));
    snprintf(ptr, sizeof ptr, "/graph/modules/mod_stats/%zu/intercepts", idx);
    expect_error(m, ptr, "n_segments (3)");
}

static void test_duplicates_and_orders(void **state)
{
    (void)state;
    json_t *m = valid_modules();
    json_array_append_new(json_object_get(m, "mod_stats"),
                          json_loads(stat_json("M.a", 0), 0, NULL));
    expect_error(m, "/graph/modules/mod_stats/6/fqn", "more than once");

    m = valid_modules();
    json_t *pre = json_object_get(json_object_get(m, "mod_order"), "fw_pre_order");
    json_array_set_new(pre, 2, json_string("M.a"));
    expect_error(m, "/graph/modules/mod_order/fw_pre_order/2", "more than once");

    m = valid_modules();
    pre = json_object_get(json_object_get(m, "mod_order"), "fw_pre_order");
    json_array_set_new(pre, 2, json_string("M.a"));
    expect_error(m, "/graph/modules/mod_order/fw_pre_order", "\"M.b\" of mod_stats is missing");

    m = valid_modules();
    json_t *post = json_object_get(json_object_get(m, "mod_order"), "fw_post_order");
    json_array_append_new(post, json_string("M.zz"));
    expect_error(m, "/graph/modules/mod_order/fw_post_order/6", "not in mod_stats");

    m = valid_modules();
    json_t *bw = json_object_get(json_object_get(m, "mod_order"), "bw_pre_order");
    json_array_remove(bw, 0);
    expect_error(m, "/graph/modules/mod_order/bw_pre_order", "\"M\" of mod_stats is missing");

    m = valid_modules();
    json_object_set_new(json_object_get(m, "mod_order"), "bw_post_order", json_string("M"));
    expect_error(m, "/graph/modules/mod_order/bw_post_order", "array");

    m = valid_modules();
    json_array_set_new(json_object_get(json_object_get(m, "mod_order"), "fw_post_order"),
                       0, json_integer(4));
    expect_error(m, "/graph/modules/mod_order/fw_post_order/0", "string");
}

static void test_root_first(void **state)
{
    (void)state;
    /* first of fw_pre_order inside another module */
    json_t *m = valid_modules();
    json_t *pre = json_object_get(json_object_get(m, "mod_order"), "fw_pre_order");
    json_array_set_new(pre, 0, json_string("M.a"));
    json_array_set_new(pre, 1, json_string("M"));
    expect_error(m, "/graph/modules/mod_order/fw_pre_order/0", "root");
    /* a module outside the root: "Mx.q" is not inside "M" */
    m = valid_modules();
    json_t *stat = json_loads(stat_json("Mx.q", 1), 0, NULL);
    json_array_append_new(json_object_get(m, "mod_stats"), stat);
    const char *lists[4] = { "fw_pre_order", "fw_post_order", "bw_pre_order",
                             "bw_post_order" };
    for (int k = 0; k < 4; k++)
        json_array_append_new(json_object_get(json_object_get(m, "mod_order"), lists[k]),
                              json_string("Mx.q"));
    expect_error(m, "/graph/modules/mod_order/fw_pre_order/6", "not inside the root");
}

static void test_sac_stats_errors(void **state)
{
    (void)state;
    const char *base =
        "{\"func_names\":[\"a\",\"b\",\"c\"],\"runtimes\":[1,2,3],\"memory\":[1,2,3],"
        "\"view_like_ops\":[2],\"rand_ops\":[],\"saved_autograd_ops\":[],"
        "\"inplace_ops\":[[1,0]],\"force_store_random\":false}";
    struct { const char *key; const char *value; const char *ptr; const char *needle; } cases[] = {
        { "view_like_ops", "[3]", "/view_like_ops/0", "op index" },
        { "rand_ops", "[-1]", "/rand_ops/0", "op index" },
        { "saved_autograd_ops", "[0, 7]", "/saved_autograd_ops/1", "op index" },
        { "inplace_ops", "[[1]]", "/inplace_ops/0", "pair" },
        { "inplace_ops", "[[1, 5]]", "/inplace_ops/0/1", "op index" },
        { "runtimes", "[1,2]", "/runtimes", "one entry per op" },
        { "memory", "[1,2,3,4]", "/memory", "one entry per op" },
        { "memory", "[1,-2,3]", "/memory/1", "must be between 0 and 2^53, not -2" },
        { "runtimes", "[1,-2,3]", "/runtimes/1", "must be at least 0" },
        { "force_store_random", "1", "/force_store_random", "must be a boolean" },
        { "func_names", "[\"a\", 3, \"c\"]", "/func_names/1", "string" },
        { "extra", "1", "/extra", "unknown" },
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        json_t *m = valid_modules();
        size_t idx = stat_index(m, "M.b");
        json_t *ss = json_loads(base, 0, NULL);
        json_object_set_new(ss, cases[k].key, json_loads(cases[k].value,
                                                         JSON_DECODE_ANY, NULL));
        json_object_set_new(stat_of(m, "M.b"), "sac_stats", ss);
        char ptr[128];
        snprintf(ptr, sizeof ptr, "/graph/modules/mod_stats/%zu/sac_stats%s", idx,
                 cases[k].ptr);
        expect_error(m, ptr, cases[k].needle);
    }
    json_t *m = valid_modules();
    size_t idx = stat_index(m, "M.b");
    json_t *ss = json_loads(base, 0, NULL);
    json_object_del(ss, "inplace_ops");
    json_object_set_new(stat_of(m, "M.b"), "sac_stats", ss);
    char ptr[128];
    snprintf(ptr, sizeof ptr, "/graph/modules/mod_stats/%zu/sac_stats/inplace_ops", idx);
    expect_error(m, ptr, "is required");
}

/* act_grad_per_module is a difference of snapshots in PyTorch: it may be
 * negative; other byte counts may not. */
static void test_negative_act_grad(void **state)
{
    (void)state;
    json_t *m = valid_modules();
    json_object_set_new(stat_of(m, "M.a"), "act_grad_per_module", json_integer(-300));
    partd_strtab st;
    partd_strtab_init(&st);
    partd_problem pb;
    partd_problem_init(&pb);
    struct partd_modules *mods = NULL;
    assert_int_equal(partd_modules_decode(m, &st, &pb, &mods, NULL), PARTD_OK);
    assert_int_equal(mods->mods[1].act_grad_per_module, -300);
    partd_modules_free(mods);
    partd_problem_free(&pb);
    partd_strtab_free(&st);
    json_decref(m);
    m = valid_modules();
    size_t idx = stat_index(m, "M.a");
    json_object_set_new(stat_of(m, "M.a"), "act_fw_per_module", json_integer(-1));
    char ptr[96];
    snprintf(ptr, sizeof ptr, "/graph/modules/mod_stats/%zu/act_fw_per_module", idx);
    expect_error(m, ptr, "between 0 and 2^53");
    m = valid_modules();
    json_object_set_new(stat_of(m, "M.a"), "act_grad_per_module",
                        json_integer(-(INT64_C(1) << 53) - 1));
    snprintf(ptr, sizeof ptr, "/graph/modules/mod_stats/%zu/act_grad_per_module", idx);
    expect_error(m, ptr, "must be between -2^53 and 2^53, not -9007199254740993");
}

/* An fqn is a name like a node's: the string table cannot hold U+0000. */
static void test_fqn_nul(void **state)
{
    (void)state;
    json_t *m = valid_modules();
    size_t idx = stat_index(m, "M.a");
    json_object_set_new(stat_of(m, "M.a"), "fqn", json_stringn("M.\0a", 4));
    char ptr[96];
    snprintf(ptr, sizeof ptr, "/graph/modules/mod_stats/%zu/fqn", idx);
    expect_error(m, ptr, "must not contain U+0000");
}

/* Every error is reported, not only the first. */
static void test_reports_all_errors(void **state)
{
    (void)state;
    json_t *m = valid_modules();
    json_object_set_new(stat_of(m, "M.a"), "act_total", json_integer(-5));
    json_object_set_new(stat_of(m, "M.b"), "sac_memory", json_real(1.5));
    partd_strtab st;
    partd_strtab_init(&st);
    partd_problem pb;
    partd_problem_init(&pb);
    struct partd_modules *out = NULL;
    assert_int_equal(partd_modules_decode(m, &st, &pb, &out, NULL), PARTD_EINVALID);
    assert_true(pb.n_errors >= 2);
    partd_problem_free(&pb);
    partd_strtab_free(&st);
    json_decref(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_tree),
        cmocka_unit_test(test_sac_stats_valid),
        cmocka_unit_test(test_not_object),
        cmocka_unit_test(test_unknown_member),
        cmocka_unit_test(test_long_strings_are_refused_by_length),
        cmocka_unit_test(test_missing_members),
        cmocka_unit_test(test_types_and_ranges),
        cmocka_unit_test(test_segments_length),
        cmocka_unit_test(test_duplicates_and_orders),
        cmocka_unit_test(test_root_first),
        cmocka_unit_test(test_sac_stats_errors),
        cmocka_unit_test(test_negative_act_grad),
        cmocka_unit_test(test_fqn_nul),
        cmocka_unit_test(test_reports_all_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
