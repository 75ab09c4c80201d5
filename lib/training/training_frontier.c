/*
 * training_frontier.c - the Pareto frontier of checkpoint sets; see
 * training_frontier.h.
 */
#include "training_frontier.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "partd/partd.h"

static int reserve(partd_training_frontier *fr, uint32_t n)
{
    if (n <= fr->cap)
        return PARTD_OK;
    uint32_t cap = fr->cap ? fr->cap : 16;
    while (cap < n)
        cap *= 2;
    double *R = realloc(fr->R, cap * sizeof *R);
    if (R)
        fr->R = R;
    int64_t *D = realloc(fr->D, cap * sizeof *D);
    if (D)
        fr->D = D;
    double *R2 = realloc(fr->R2, cap * sizeof *R2);
    if (R2)
        fr->R2 = R2;
    int64_t *D2 = realloc(fr->D2, cap * sizeof *D2);
    if (D2)
        fr->D2 = D2;
    uint32_t *par2 = realloc(fr->par2, cap * sizeof *par2);
    if (par2)
        fr->par2 = par2;
    uint8_t *take2 = realloc(fr->take2, cap);
    if (take2)
        fr->take2 = take2;
    if (!R || !D || !R2 || !D2 || !par2 || !take2)
        return PARTD_ENOMEM;
    fr->cap = cap;
    return PARTD_OK;
}

int partd__training_frontier_init(partd_training_frontier *fr, uint32_t max_steps, int record)
{
    memset(fr, 0, sizeof *fr);
    fr->record = record;
    fr->max_steps = max_steps;
    if (reserve(fr, 16) != PARTD_OK)
        return PARTD_ENOMEM;
    if (record) {
        size_t n = max_steps ? max_steps : 1;
        fr->parent = calloc(n, sizeof *fr->parent);
        fr->take = calloc(n, sizeof *fr->take);
        fr->step_item = calloc(n, sizeof *fr->step_item);
        if (!fr->parent || !fr->take || !fr->step_item)
            return PARTD_ENOMEM;
    }
    partd__training_frontier_reset(fr);
    return PARTD_OK;
}

static void drop_steps(partd_training_frontier *fr)
{
    for (uint32_t s = 0; s < fr->n_steps; s++) {
        free(fr->parent[s]);
        free(fr->take[s]);
    }
    fr->n_steps = 0;
}

void partd__training_frontier_free(partd_training_frontier *fr)
{
    drop_steps(fr);
    free(fr->R);
    free(fr->D);
    free(fr->R2);
    free(fr->D2);
    free(fr->par2);
    free(fr->take2);
    free(fr->parent);
    free(fr->take);
    free(fr->step_item);
    memset(fr, 0, sizeof *fr);
}

void partd__training_frontier_reset(partd_training_frontier *fr)
{
    drop_steps(fr);
    fr->n = 1;
    fr->R[0] = 0;
    fr->D[0] = 0;
}

/* Keeps the old points (A) and the old points plus the unit (B) that no
 * other dominates: walking both lists from the largest D down, a point
 * stays when its R is below every R seen (ties in D: the smaller R first,
 * A before B). */
int partd__training_frontier_add(partd_training_frontier *fr, double F, int64_t d, uint32_t item)
{
    uint32_t n = fr->n;
    if (2 * (uint64_t)n > PARTD_TRAINING_MAX_FRONTIER)
        return PARTD_ETOOBIG;
    if (reserve(fr, 2 * n) != PARTD_OK)
        return PARTD_ENOMEM;
    int64_t i = (int64_t)n - 1, j = (int64_t)n - 1;
    uint32_t m = 0;
    double best = INFINITY;
    while (i >= 0 || j >= 0) {
        int take;
        if (j < 0)
            take = 0;
        else if (i < 0)
            take = 1;
        else if (fr->D[i] != fr->D[j] + d)
            take = fr->D[j] + d > fr->D[i];
        else
            take = fr->R[j] + F < fr->R[i];
        double R = take ? fr->R[j] + F : fr->R[i];
        int64_t D = take ? fr->D[j] + d : fr->D[i];
        uint32_t parent = (uint32_t)(take ? j-- : i--);
        if (R < best) {
            best = R;
            fr->R2[m] = R;
            fr->D2[m] = D;
            fr->par2[m] = parent;
            fr->take2[m++] = (uint8_t)take;
        }
    }
    uint32_t *par = NULL;
    uint8_t *tk = NULL;
    if (fr->record) {
        if (fr->n_steps == fr->max_steps)
            return PARTD_EINTERNAL;
        par = malloc(m * sizeof *par);
        tk = malloc(m);
        if (!par || !tk) {
            free(par);
            free(tk);
            return PARTD_ENOMEM;
        }
        fr->parent[fr->n_steps] = par;
        fr->take[fr->n_steps] = tk;
        fr->step_item[fr->n_steps++] = item;
    }
    for (uint32_t k = 0; k < m; k++) {
        uint32_t from = m - 1 - k; /* ascending D */
        fr->R[k] = fr->R2[from];
        fr->D[k] = fr->D2[from];
        if (par) {
            par[k] = fr->par2[from];
            tk[k] = fr->take2[from];
        }
    }
    fr->n = m;
    return PARTD_OK;
}

void partd__training_frontier_items(const partd_training_frontier *fr, uint32_t point, uint32_t steps, uint8_t *in_item)
{
    for (uint32_t s = steps; s-- > 0;) {
        if (fr->take[s][point])
            in_item[fr->step_item[s]] = 1;
        point = fr->parent[s][point];
    }
}
