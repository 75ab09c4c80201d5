/* show_schedule.c - the simulated training step; see show_schedule.h. */
#include "show_schedule.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "partd.h"

#define MAX_BLOCKS ((size_t)1 << 24)

void show_schedule_order(size_t stages, size_t microbatches, int one_f_one_b, size_t s,
                         uint32_t *ops)
{
    size_t k = 0, next_fwd = 0;
    size_t warmup = microbatches;
    if (one_f_one_b && stages - s < warmup)
        warmup = stages - s;
    for (; next_fwd < warmup; next_fwd++)
        ops[k++] = SHOW_OP_FWD(next_fwd);
    for (size_t b = 0; b < microbatches; b++) {
        ops[k++] = SHOW_OP_BWD(b);
        /* gpipe has run every forward already, so this only fires for 1f1b. */
        if (next_fwd < microbatches)
            ops[k++] = SHOW_OP_FWD(next_fwd++);
    }
}

void show_schedule_free(show_schedule *sch)
{
    free(sch->fwd_start);
    free(sch->fwd_end);
    free(sch->bwd_start);
    free(sch->bwd_end);
    memset(sch, 0, sizeof *sch);
}

typedef struct sim {
    show_schedule *sch;
    const double *fwd_ms, *bwd_ms;
    uint32_t *ops;   /* [s * 2M + k] */
    size_t *next;    /* per stage: index of its next operation */
    double *free_at; /* per stage: when it finishes its last block */
} sim;

/* The time op of stage s may start, or -1 while an input is missing. The
 * end arrays hold -1 for blocks not yet run. */
static double ready_at(const sim *x, size_t s, uint32_t op)
{
    const show_schedule *sch = x->sch;
    size_t M = sch->microbatches, m = SHOW_OP_MB(op);
    double t = x->free_at[s];
    if (!SHOW_OP_IS_BWD(op)) {
        if (s == 0)
            return t;
        double in = sch->fwd_end[(s - 1) * M + m];
        return in < 0 ? -1 : fmax(t, in);
    }
    double own = sch->fwd_end[s * M + m];
    if (own < 0)
        return -1;
    t = fmax(t, own);
    if (s + 1 == sch->stages)
        return t;
    double grad = sch->bwd_end[(s + 1) * M + m];
    return grad < 0 ? -1 : fmax(t, grad);
}

/* Runs stage s as far as its inputs allow; the number of blocks run. */
static size_t advance(sim *x, size_t s)
{
    show_schedule *sch = x->sch;
    size_t M = sch->microbatches, ran = 0;
    while (x->next[s] < 2 * M) {
        uint32_t op = x->ops[s * 2 * M + x->next[s]];
        double start = ready_at(x, s, op);
        if (start < 0)
            break;
        size_t i = s * M + SHOW_OP_MB(op);
        double end = start + (SHOW_OP_IS_BWD(op) ? x->bwd_ms[s] : x->fwd_ms[s]);
        if (SHOW_OP_IS_BWD(op)) {
            sch->bwd_start[i] = start;
            sch->bwd_end[i] = end;
        } else {
            sch->fwd_start[i] = start;
            sch->fwd_end[i] = end;
        }
        x->free_at[s] = end;
        x->next[s]++;
        ran++;
    }
    return ran;
}

static int durations_valid(size_t stages, const double *fwd_ms, const double *bwd_ms)
{
    for (size_t s = 0; s < stages; s++)
        if (!isfinite(fwd_ms[s]) || !isfinite(bwd_ms[s]) || fwd_ms[s] < 0 || bwd_ms[s] < 0)
            return 0;
    return 1;
}

static int simulate(sim *x)
{
    show_schedule *sch = x->sch;
    size_t S = sch->stages, total = 2 * S * sch->microbatches, done = 0;
    /* Sweep the stages until every block has run; a sweep that runs none
     * would mean the order deadlocks, which the two schedules never do. */
    while (done < total) {
        size_t ran = 0;
        for (size_t s = 0; s < S; s++)
            ran += advance(x, s);
        for (size_t s = S; s-- > 0;)
            ran += advance(x, s);
        if (ran == 0)
            return PARTD_EINTERNAL;
        done += ran;
    }
    for (size_t s = 0; s < S; s++)
        sch->makespan = fmax(sch->makespan, x->free_at[s]);
    return PARTD_OK;
}

int show_schedule_run(size_t stages, size_t microbatches, int one_f_one_b,
                      const double *fwd_ms, const double *bwd_ms, show_schedule *out)
{
    memset(out, 0, sizeof *out);
    if (stages == 0 || microbatches == 0 || microbatches > MAX_BLOCKS / stages ||
        !durations_valid(stages, fwd_ms, bwd_ms))
        return PARTD_EINVALID;
    size_t n = stages * microbatches;
    out->stages = stages;
    out->microbatches = microbatches;
    out->fwd_start = malloc(n * sizeof(double));
    out->fwd_end = malloc(n * sizeof(double));
    out->bwd_start = malloc(n * sizeof(double));
    out->bwd_end = malloc(n * sizeof(double));
    sim x = {out, fwd_ms, bwd_ms, malloc(2 * n * sizeof(uint32_t)),
             calloc(stages, sizeof(size_t)), calloc(stages, sizeof(double))};
    int rc = PARTD_ENOMEM;
    if (out->fwd_start && out->fwd_end && out->bwd_start && out->bwd_end && x.ops && x.next &&
        x.free_at) {
        for (size_t i = 0; i < n; i++)
            out->fwd_start[i] = out->fwd_end[i] = out->bwd_start[i] = out->bwd_end[i] = -1;
        for (size_t s = 0; s < stages; s++)
            show_schedule_order(stages, microbatches, one_f_one_b, s, x.ops + s * 2 * microbatches);
        rc = simulate(&x);
    }
    free(x.ops);
    free(x.next);
    free(x.free_at);
    if (rc != PARTD_OK)
        show_schedule_free(out);
    return rc;
}
