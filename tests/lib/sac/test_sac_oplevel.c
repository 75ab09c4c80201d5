/* test_sac_oplevel.c - sac_oplevel.c: the op-level save/recompute policy of
 * one module against an enumeration of every policy, on random SACStats
 * with view-like, random and in-place ops: the policy keeps every
 * constraint, saves at most ceil(budget * total memory) bytes, and saves as
 * much runtime as the best policy does; contradictions and fixed saves over
 * the budget are infeasible. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "modules/modules.h"
#include "partd/partd.h"
#include "sac/sac_oplevel.h"

#define MAX_OPS 10

typedef struct stats_case {
    partd_sac_stats s;
    double runtimes[MAX_OPS];
    int64_t memory[MAX_OPS];
    uint32_t view[MAX_OPS], rand_ops[MAX_OPS], inplace_op[MAX_OPS], inplace_parent[MAX_OPS];
} stats_case;

static unsigned next_random(unsigned *st)
{
    *st = *st * 1103515245u + 12345u;
    return (*st >> 8) & 0xffffff;
}

static void random_stats(stats_case *c, unsigned seed)
{
    unsigned st = seed * 2654435761u + 7;
    memset(c, 0, sizeof *c);
    uint32_t n = 1 + next_random(&st) % MAX_OPS;
    c->s.n_ops = n;
    c->s.runtimes = c->runtimes;
    c->s.memory = c->memory;
    c->s.view_like_ops = c->view;
    c->s.rand_ops = c->rand_ops;
    c->s.inplace_op = c->inplace_op;
    c->s.inplace_parent = c->inplace_parent;
    for (uint32_t i = 0; i < n; i++) {
        c->runtimes[i] = (double)(1 + next_random(&st) % 200) / 16.0;
        c->memory[i] = 1 + (int64_t)(next_random(&st) % 5000);
        unsigned kind = next_random(&st) % 8;
        if (kind == 0)
            c->view[c->s.n_view_like++] = i;
        else if (kind == 1)
            c->rand_ops[c->s.n_rand++] = i;
        else if (kind == 2 && i > 0) {
            c->inplace_op[c->s.n_inplace] = i;
            c->inplace_parent[c->s.n_inplace++] = next_random(&st) % (i + 1); /* may be itself */
        }
    }
    c->s.force_store_random = next_random(&st) % 3 == 0;
}

static int in_list(const uint32_t *v, uint32_t n, uint32_t x)
{
    for (uint32_t i = 0; i < n; i++)
        if (v[i] == x)
            return 1;
    return 0;
}

/* Every constraint of PyTorch's model, for policy p (bit i = op i saved). */
static int policy_allowed(const partd_sac_stats *s, unsigned p, int64_t room)
{
    int64_t saved = 0;
    for (uint32_t i = 0; i < s->n_ops; i++) {
        int on = (p >> i) & 1;
        if (on)
            saved += s->memory[i];
        if (on && in_list(s->view_like_ops, s->n_view_like, i))
            return 0;
    }
    for (uint32_t k = 0; k < s->n_rand; k++) {
        int on = (p >> s->rand_ops[k]) & 1;
        if (on != (int)((p >> s->rand_ops[0]) & 1) || (s->force_store_random && !on))
            return 0;
    }
    for (uint32_t k = 0; k < s->n_inplace; k++) {
        uint32_t op = s->inplace_op[k], parent = s->inplace_parent[k];
        int on = (p >> op) & 1;
        if (op == parent ? !on : on != (int)((p >> parent) & 1))
            return 0;
    }
    return saved <= room;
}

static double saved_runtime(const partd_sac_stats *s, unsigned p)
{
    double t = 0;
    for (uint32_t i = 0; i < s->n_ops; i++)
        if ((p >> i) & 1)
            t += s->runtimes[i];
    return t;
}

static void check_against_enumeration(const stats_case *c, double budget)
{
    const partd_sac_stats *s = &c->s;
    int64_t total = 0;
    for (uint32_t i = 0; i < s->n_ops; i++)
        total += s->memory[i];
    int64_t room = (int64_t)ceil(budget * (double)total);
    int any = 0;
    double best = -1;
    for (unsigned p = 0; p < (1u << s->n_ops); p++)
        if (policy_allowed(s, p, room)) {
            double t = saved_runtime(s, p);
            if (!any || t > best)
                best = t;
            any = 1;
        }
    uint8_t policy[MAX_OPS];
    int feasible = -1;
    assert_int_equal(partd__sac_op_policy(s, budget, 10.0, NULL, policy, &feasible), PARTD_OK);
    assert_int_equal(feasible, any);
    if (!any)
        return;
    unsigned p = 0;
    for (uint32_t i = 0; i < s->n_ops; i++)
        p |= (unsigned)(policy[i] != 0) << i;
    assert_true(policy_allowed(s, p, room));
    assert_true(fabs(saved_runtime(s, p) - best) <= 1e-9);
}

static void test_policies_match_enumeration(void **state)
{
    (void)state;
    const double budgets[] = {0.0, 0.1, 0.35, 0.5, 0.8, 1.0};
    for (unsigned seed = 1; seed <= 250; seed++) {
        stats_case c;
        random_stats(&c, seed);
        check_against_enumeration(&c, budgets[seed % 6]);
    }
}

static void test_random_ops_forced_over_budget_are_infeasible(void **state)
{
    (void)state;
    stats_case c;
    memset(&c, 0, sizeof c);
    c.s.n_ops = 2;
    c.s.runtimes = c.runtimes;
    c.s.memory = c.memory;
    c.s.rand_ops = c.rand_ops;
    c.s.view_like_ops = c.view;
    c.s.inplace_op = c.inplace_op;
    c.s.inplace_parent = c.inplace_parent;
    c.runtimes[0] = c.runtimes[1] = 1;
    c.memory[0] = 900;
    c.memory[1] = 100;
    c.rand_ops[c.s.n_rand++] = 0;
    c.s.force_store_random = 1;
    uint8_t policy[2];
    int feasible = -1;
    assert_int_equal(partd__sac_op_policy(&c.s, 0.5, 10.0, NULL, policy, &feasible), PARTD_OK);
    assert_int_equal(feasible, 0);
    /* A view-like op that must equal a forced random parent contradicts. */
    c.s.force_store_random = 1;
    c.view[c.s.n_view_like++] = 1;
    c.inplace_op[c.s.n_inplace] = 1;
    c.inplace_parent[c.s.n_inplace++] = 0;
    assert_int_equal(partd__sac_op_policy(&c.s, 1.0, 10.0, NULL, policy, &feasible), PARTD_OK);
    assert_int_equal(feasible, 0);
}

static void test_empty_module_is_feasible(void **state)
{
    (void)state;
    partd_sac_stats s;
    memset(&s, 0, sizeof s);
    int feasible = -1;
    assert_int_equal(partd__sac_op_policy(&s, 0.5, 10.0, NULL, NULL, &feasible), PARTD_OK);
    assert_int_equal(feasible, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_policies_match_enumeration),
        cmocka_unit_test(test_random_ops_forced_over_budget_are_infeasible),
        cmocka_unit_test(test_empty_module_is_feasible),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
