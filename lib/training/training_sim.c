/*
 * training_sim.c - the step model; see training_sim.h.
 */
#include "training_sim.h"

#include <stdlib.h>
#include <string.h>

#include "partd/partd.h"

#define NO PARTD_TRAINING_NO

void partd__training_sim_free(partd_training_sim *s)
{
    free(s->order);
    free(s->prev);
    free(s->dep1);
    free(s->dep2);
    free(s->rank_last);
    free(s->loc);
    free(s->rank_of_stage);
    free(s->end);
    free(s->why);
    memset(s, 0, sizeof *s);
}

/* Action indices by (stage, microbatch): forwards, and backwards (B or I). */
static int index_actions(const partd_training_lists *l, uint32_t *fwd, uint32_t *bwd,
                         uint32_t *ist, partd_training_sim *s)
{
    size_t VM = (size_t)l->V * l->M;
    for (size_t i = 0; i < VM; i++)
        fwd[i] = bwd[i] = ist[i] = NO;
    for (uint32_t r = 0; r < l->S; r++)
        for (uint32_t i = l->off[r]; i < l->off[r + 1]; i++) {
            const partd_training_action *a = &l->act[i];
            if (a->stage >= l->V || a->mb >= l->M)
                return PARTD_EINVALID;
            size_t k = (size_t)a->stage * l->M + a->mb;
            uint32_t *slot = a->kind == PARTD_TRAINING_F   ? &fwd[k]
                             : a->kind == PARTD_TRAINING_W ? &ist[k]
                                                           : &bwd[k];
            if (*slot != NO)
                return PARTD_EINVALID;
            *slot = i;
            s->rank_of_stage[a->stage] = r;
        }
    return PARTD_OK;
}

static void resolve(const partd_training_lists *l, const uint32_t *fwd, const uint32_t *bwd,
                    partd_training_sim *s)
{
    uint32_t M = l->M;
    for (uint32_t r = 0; r < l->S; r++) {
        uint32_t seen[PARTD_TRAINING_MAX_VIRTUAL], nseen = 0;
        for (uint32_t i = l->off[r]; i < l->off[r + 1]; i++) {
            const partd_training_action *a = &l->act[i];
            size_t k = (size_t)a->stage * M + a->mb;
            uint32_t q = 0;
            while (q < nseen && seen[q] != a->stage)
                q++;
            if (q == nseen && nseen < PARTD_TRAINING_MAX_VIRTUAL)
                seen[nseen++] = a->stage;
            s->loc[i] = (uint8_t)q;
            s->prev[i] = i > l->off[r] ? i - 1 : NO;
            s->dep1[i] = s->dep2[i] = NO;
            s->rank_last[i] = a->kind == PARTD_TRAINING_B || a->kind == PARTD_TRAINING_W;
            switch (a->kind) {
            case PARTD_TRAINING_F:
                if (a->stage > 0)
                    s->dep1[i] = fwd[k - M];
                break;
            case PARTD_TRAINING_W:
                s->dep1[i] = bwd[k];
                break;
            default:
                s->dep1[i] = fwd[k];
                if (a->stage + 1 < l->V)
                    s->dep2[i] = bwd[k + M];
                break;
            }
        }
    }
}

/* Kahn's algorithm over the (at most three) inputs of every action: a FIFO
 * in index order, so the order is deterministic. */
static int topo_order(const partd_training_lists *l, partd_training_sim *s)
{
    uint32_t n = l->n;
    uint32_t *indeg = calloc(n ? n : 1, sizeof *indeg);
    uint32_t *soff = calloc((size_t)n + 1, sizeof *soff);
    uint32_t *succ = malloc(3 * (size_t)(n ? n : 1) * sizeof *succ);
    int rc = PARTD_ENOMEM;
    if (!indeg || !soff || !succ)
        goto out;
    for (uint32_t i = 0; i < n; i++) {
        const uint32_t in[3] = {s->prev[i], s->dep1[i], s->dep2[i]};
        for (int k = 0; k < 3; k++)
            if (in[k] != NO) {
                indeg[i]++;
                soff[in[k] + 1]++;
            }
    }
    for (uint32_t i = 0; i < n; i++)
        soff[i + 1] += soff[i];
    for (uint32_t i = 0; i < n; i++) {
        const uint32_t in[3] = {s->prev[i], s->dep1[i], s->dep2[i]};
        for (int k = 0; k < 3; k++)
            if (in[k] != NO)
                succ[soff[in[k]]++] = i;
    }
    for (uint32_t i = n; i > 0; i--)
        soff[i] = soff[i - 1];
    soff[0] = 0;
    uint32_t head = 0, tail = 0;
    for (uint32_t i = 0; i < n; i++)
        if (!indeg[i])
            s->order[tail++] = i;
    while (head < tail) {
        uint32_t a = s->order[head++];
        for (uint32_t k = soff[a]; k < soff[a + 1]; k++)
            if (--indeg[succ[k]] == 0)
                s->order[tail++] = succ[k];
    }
    rc = tail == n ? PARTD_OK : PARTD_EINVALID;
out:
    free(indeg);
    free(soff);
    free(succ);
    return rc;
}

int partd__training_sim_build(const partd_training_lists *l, partd_training_sim *out)
{
    memset(out, 0, sizeof *out);
    out->l = l;
    size_t n = l->n ? l->n : 1, VM = (size_t)l->V * l->M;
    out->order = malloc(n * sizeof *out->order);
    out->prev = malloc(n * sizeof *out->prev);
    out->dep1 = malloc(n * sizeof *out->dep1);
    out->dep2 = malloc(n * sizeof *out->dep2);
    out->rank_last = malloc(n);
    out->loc = malloc(n);
    out->rank_of_stage = calloc(l->V ? l->V : 1, sizeof *out->rank_of_stage);
    out->end = malloc(n * sizeof *out->end);
    out->why = malloc(n);
    uint32_t *idx = malloc(3 * (VM ? VM : 1) * sizeof *idx);
    int rc = PARTD_ENOMEM;
    if (out->order && out->prev && out->dep1 && out->dep2 && out->rank_last && out->loc &&
        out->rank_of_stage && out->end && out->why && idx) {
        rc = index_actions(l, idx, idx + VM, idx + 2 * VM, out);
        if (rc == PARTD_OK) {
            resolve(l, idx, idx + VM, out);
            rc = topo_order(l, out);
        }
    }
    free(idx);
    if (rc != PARTD_OK)
        partd__training_sim_free(out);
    return rc;
}

double partd__training_sim_duration(const partd_training_durations *d,
                                    const partd_training_action *a)
{
    uint32_t j = a->stage;
    double rec = a->mb < d->c ? d->R[j] : 0.0;
    switch (a->kind) {
    case PARTD_TRAINING_F: return d->F[j];
    case PARTD_TRAINING_B: return d->B[j] + rec;
    case PARTD_TRAINING_I: return d->I[j] + rec;
    default: return d->W[j];
    }
}

double partd__training_sim_run(partd_training_sim *s, const partd_training_durations *d,
                               double *busy)
{
    const partd_training_lists *l = s->l;
    double step = 0;
    for (uint32_t k = 0; k < l->n; k++) {
        uint32_t a = s->order[k];
        const partd_training_action *x = &l->act[a];
        double t = 0;
        uint8_t why = 0;
        if (s->prev[a] != NO && s->end[s->prev[a]] > t) {
            t = s->end[s->prev[a]];
            why = 1;
        }
        if (s->dep1[a] != NO) {
            /* F waits for the stage before it across its cut */
            double e = s->end[s->dep1[a]] + (x->kind == PARTD_TRAINING_F ? d->delta[x->stage - 1] : 0);
            if (e > t) {
                t = e;
                why = 2;
            }
        }
        if (s->dep2[a] != NO) {
            double e = s->end[s->dep2[a]] + d->delta[x->stage];
            if (e > t) {
                t = e;
                why = 3;
            }
        }
        s->why[a] = why;
        s->end[a] = t + partd__training_sim_duration(d, x);
        if (s->end[a] > step)
            step = s->end[a];
    }
    if (busy)
        for (uint32_t r = 0; r < l->S; r++) {
            double b = 0;
            for (uint32_t i = l->off[r]; i < l->off[r + 1]; i++)
                b += partd__training_sim_duration(d, &l->act[i]);
            busy[r] = b;
        }
    return step;
}

void partd__training_sim_critical(const partd_training_sim *s, const partd_training_durations *d,
                                  uint32_t *cnt, uint32_t *dcnt)
{
    const partd_training_lists *l = s->l;
    uint32_t V = l->V, a = NO;
    memset(cnt, 0, 4 * (size_t)V * sizeof *cnt);
    memset(dcnt, 0, (size_t)V * sizeof *dcnt);
    double best = -1;
    for (uint32_t i = 0; i < l->n; i++)
        if (s->end[i] > best) {
            best = s->end[i];
            a = i;
        }
    (void)d;
    while (a != NO) {
        const partd_training_action *x = &l->act[a];
        cnt[x->kind * V + x->stage]++;
        switch (s->why[a]) {
        case 1: a = s->prev[a]; break;
        case 2:
            if (x->kind == PARTD_TRAINING_F)
                dcnt[x->stage - 1]++;
            a = s->dep1[a];
            break;
        case 3:
            dcnt[x->stage]++;
            a = s->dep2[a];
            break;
        default: a = NO; break;
        }
    }
}

static int64_t sat_add(int64_t a, int64_t b)
{
    const int64_t cap = INT64_MAX / 2;
    return a > cap - b ? cap : a + b;
}

void partd__training_sim_memory(const partd_training_sim *s, uint32_t rank,
                                const int64_t *held_c, const int64_t *held_u,
                                const int64_t *transient, uint32_t c, int64_t *peak,
                                int64_t *stage_peak, int64_t *end)
{
    const partd_training_lists *l = s->l;
    int64_t cur = 0, best = 0;
    /* A rank holds at most v stages: their own sums, for stage_peak. */
    int64_t own[PARTD_TRAINING_MAX_VIRTUAL] = {0};
    for (uint32_t i = l->off[rank]; i < l->off[rank + 1]; i++) {
        const partd_training_action *a = &l->act[i];
        uint32_t k = s->loc[i];
        int ck = a->mb < c;
        int64_t h = ck ? held_c[a->stage] : held_u[a->stage];
        if (a->kind == PARTD_TRAINING_F) {
            cur = sat_add(cur, h);
            own[k] = sat_add(own[k], h);
        }
        int64_t extra = ck && (a->kind == PARTD_TRAINING_B || a->kind == PARTD_TRAINING_I)
                            ? transient[a->stage]
                            : 0;
        if (sat_add(cur, extra) > best)
            best = sat_add(cur, extra);
        if (stage_peak && sat_add(own[k], extra) > stage_peak[a->stage])
            stage_peak[a->stage] = sat_add(own[k], extra);
        if (s->rank_last[i]) {
            cur -= h;
            own[k] -= h;
        }
    }
    *peak = best;
    if (end)
        *end = cur;
}
