/*
 * sac_oplevel.c - exact op-level save/recompute policy; see sac_oplevel.h.
 */
#include "sac_oplevel.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "partd/partd.h"
#include "sac_milp.h"

static uint32_t find(uint32_t *up, uint32_t x)
{
    while (up[x] != x) {
        up[x] = up[up[x]];
        x = up[x];
    }
    return x;
}

/* Union by smaller index, so a group's representative is its first op. */
static void unite(uint32_t *up, uint32_t a, uint32_t b)
{
    a = find(up, a);
    b = find(up, b);
    if (a < b)
        up[b] = a;
    else if (b < a)
        up[a] = b;
}

/* fix[g]: -1 free, 0 recompute, 1 save; 2 marks a contradiction. */
static void fix_group(int8_t *fix, uint32_t g, int8_t value)
{
    if (fix[g] == -1)
        fix[g] = value;
    else if (fix[g] != value)
        fix[g] = 2;
}

static void build_groups(const partd_sac_stats *s, uint32_t *up, int8_t *fix)
{
    for (uint32_t i = 0; i < s->n_ops; i++) {
        up[i] = i;
        fix[i] = -1;
    }
    if (!s->force_store_random)
        for (uint32_t k = 1; k < s->n_rand; k++)
            unite(up, s->rand_ops[k - 1], s->rand_ops[k]);
    for (uint32_t k = 0; k < s->n_inplace; k++)
        if (s->inplace_op[k] != s->inplace_parent[k])
            unite(up, s->inplace_op[k], s->inplace_parent[k]);
    if (s->force_store_random)
        for (uint32_t k = 0; k < s->n_rand; k++)
            fix_group(fix, find(up, s->rand_ops[k]), 1);
    for (uint32_t k = 0; k < s->n_view_like; k++)
        fix_group(fix, find(up, s->view_like_ops[k]), 0);
    for (uint32_t k = 0; k < s->n_inplace; k++)
        if (s->inplace_op[k] == s->inplace_parent[k])
            fix_group(fix, find(up, s->inplace_op[k]), 1);
}

typedef struct groups {
    uint32_t n_free;
    uint32_t *free_rep;     /* representative op of each free group */
    double *value, *weight; /* per free group */
    int64_t *weight_exact;
} groups;

/* Sums values and weights per group; weight-free groups are saved outright
 * (they cost no memory) and groups heavier than the remaining room are
 * recomputed, so only real choices reach the solver. */
static void collect(const partd_sac_stats *s, uint32_t *up, int8_t *fix,
                    int64_t room, groups *g, double *val_by_rep,
                    int64_t *w_by_rep)
{
    for (uint32_t i = 0; i < s->n_ops; i++) {
        val_by_rep[i] = 0;
        w_by_rep[i] = 0;
    }
    for (uint32_t i = 0; i < s->n_ops; i++) {
        uint32_t r = find(up, i);
        val_by_rep[r] += s->runtimes[i];
        w_by_rep[r] += s->memory[i];
    }
    g->n_free = 0;
    for (uint32_t i = 0; i < s->n_ops; i++) {
        if (find(up, i) != i || fix[i] != -1)
            continue;
        if (w_by_rep[i] == 0) {
            fix[i] = 1;
        } else if (w_by_rep[i] > room) {
            fix[i] = 0;
        } else {
            g->free_rep[g->n_free] = i;
            g->value[g->n_free] = val_by_rep[i];
            g->weight[g->n_free] = (double)w_by_rep[i];
            g->weight_exact[g->n_free] = w_by_rep[i];
            g->n_free++;
        }
    }
}

static int solve_groups(groups *g, int64_t room, double time_limit_s,
                        const partd_solver_env *env, int8_t *fix)
{
    if (g->n_free == 0)
        return PARTD_OK;
    int64_t total = 0;
    for (uint32_t k = 0; k < g->n_free; k++)
        total += g->weight_exact[k];
    if (total <= room) { /* everything fits: save all */
        for (uint32_t k = 0; k < g->n_free; k++)
            fix[g->free_rep[k]] = 1;
        return PARTD_OK;
    }
    uint8_t *x = calloc(g->n_free, 1);
    if (!x)
        return PARTD_ENOMEM;
    /* Weights are integers: an answer over `room` by the solver's tolerance
     * is cut off by lowering the capacity below it, and solved again. */
    double cap = (double)room;
    int rc = PARTD_OK;
    for (int attempt = 0; attempt < 3; attempt++) {
        partd_sac_solve_status st = PARTD_SAC_SOLVED_NONE;
        rc = partd__sac_knapsack_solve(g->n_free, g->value, g->weight, cap,
                                      time_limit_s, env, x, &st);
        if (rc == PARTD_OK && st != PARTD_SAC_SOLVED_OPTIMAL)
            rc = st == PARTD_SAC_SOLVED_INFEASIBLE ? PARTD_EINTERNAL : PARTD_ETIMEOUT;
        if (rc != PARTD_OK)
            break;
        int64_t used = 0;
        for (uint32_t k = 0; k < g->n_free; k++)
            used += x[k] ? g->weight_exact[k] : 0;
        if (used <= room) {
            for (uint32_t k = 0; k < g->n_free; k++)
                fix[g->free_rep[k]] = (int8_t)x[k];
            break;
        }
        cap = (double)room - (double)(used - room) - 0.5;
        rc = PARTD_EINTERNAL; /* unless a later attempt fits */
    }
    free(x);
    return rc;
}

int partd__sac_op_policy(const partd_sac_stats *s, double budget, double time_limit_s,
                        const partd_solver_env *env, uint8_t *policy, int *feasible)
{
    *feasible = 0;
    uint32_t n = s->n_ops;
    if (n == 0) {
        *feasible = 1;
        return PARTD_OK;
    }
    uint32_t *up = malloc(n * sizeof *up);
    int8_t *fix = malloc(n);
    double *val = malloc(n * sizeof *val);
    int64_t *w = malloc(n * sizeof *w);
    groups g = { 0, malloc(n * sizeof(uint32_t)), malloc(n * sizeof(double)),
                 malloc(n * sizeof(double)), malloc(n * sizeof(int64_t)) };
    int rc = PARTD_ENOMEM;
    if (!up || !fix || !val || !w || !g.free_rep || !g.value || !g.weight ||
        !g.weight_exact)
        goto done;
    rc = PARTD_OK;
    build_groups(s, up, fix);
    int64_t total = 0;
    for (uint32_t i = 0; i < n; i++)
        total += s->memory[i];
    /* PyTorch: max_memory = math.ceil(memory_budget * sum(memory)). */
    int64_t room = (int64_t)ceil(budget * (double)total);
    for (uint32_t i = 0; i < n; i++) {
        if (find(up, i) == i && fix[i] == 2)
            goto done; /* contradictory constraints: infeasible */
    }
    for (uint32_t i = 0; i < n; i++)
        if (fix[find(up, i)] == 1)
            room -= s->memory[i];
    if (room < 0)
        goto done;
    collect(s, up, fix, room, &g, val, w);
    rc = solve_groups(&g, room, time_limit_s, env, fix);
    if (rc != PARTD_OK)
        goto done;
    for (uint32_t i = 0; i < n; i++)
        policy[i] = fix[find(up, i)] == 1;
    *feasible = 1;
done:
    free(up);
    free(fix);
    free(val);
    free(w);
    free(g.free_rep);
    free(g.value);
    free(g.weight);
    free(g.weight_exact);
    return rc;
}
