/*
 * training_timeline.c - a plan's step re-timed from its own figures
 * (partd/timeline.h): the figures checked, the lists handed to the step
 * simulator (training_sim.h) the planner times its plans with.
 */
#include "partd/timeline.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "partd/partd.h"
#include "training_schedule.h"
#include "training_sim.h"

/* The simulator keeps a microbatch in 16 bits. */
#define MAX_MICROBATCHES 65536u

static const char KINDS[] = "FBIW";

static int invalid(char *err, size_t errcap, const char *fmt, ...)
{
    if (errcap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errcap, fmt, ap);
        va_end(ap);
    }
    return PARTD_EINVALID;
}

/* Up to 9 decimal digits at *s: the value, *s moved past them; -1 none. */
static long digits(const char **s)
{
    long v = 0;
    int n = 0;
    for (; **s >= '0' && **s <= '9'; (*s)++, n++) {
        if (n == 9)
            return -1;
        v = v * 10 + (**s - '0');
    }
    return n ? v : -1;
}

int partd_timeline_action_parse(const char *s, partd_timeline_action *out)
{
    long stage = digits(&s);
    const char *k = stage >= 0 && *s ? strchr(KINDS, *s) : NULL;
    if (!k)
        return 0;
    s++;
    long mb = digits(&s);
    if (mb < 0 || *s)
        return 0;
    out->stage = (uint32_t)stage;
    out->microbatch = (uint32_t)mb;
    out->kind = (uint8_t)(k - KINDS);
    return 1;
}

uint32_t partd_timeline_checkpointed(partd_checkpoint mode, uint32_t microbatches)
{
    switch (mode) {
    case PARTD_CHECKPOINT_NEVER: return 0;
    case PARTD_CHECKPOINT_EXCEPT_LAST: return microbatches ? microbatches - 1 : 0;
    default: return microbatches;
    }
}

double partd_timeline_duration(const partd_timeline_plan *p, const partd_timeline_action *a)
{
    const partd_timeline_stage *st = &p->stage[a->stage];
    double rec = a->microbatch < p->checkpointed ? st->recompute_ms : 0.0;
    switch (a->kind) {
    case PARTD_TIMELINE_F: return st->forward_ms;
    case PARTD_TIMELINE_B: return st->backward_ms + rec;
    case PARTD_TIMELINE_I: return st->input_grad_ms + rec;
    default: return st->weight_grad_ms;
    }
}

void partd_timeline_free(partd_timeline *t)
{
    free(t->start);
    free(t->end);
    free(t->busy);
    memset(t, 0, sizeof *t);
}

static int check_stages(const partd_timeline_plan *p, char *err, size_t errcap)
{
    static const char *const names[] = {"forward_ms",     "backward_ms",  "input_grad_ms",
                                        "weight_grad_ms", "recompute_ms", "send_ms"};
    for (uint32_t j = 0; j < p->stages; j++) {
        const partd_timeline_stage *st = &p->stage[j];
        const double v[] = {st->forward_ms,     st->backward_ms,  st->input_grad_ms,
                            st->weight_grad_ms, st->recompute_ms, st->send_ms};
        if (st->rank >= p->ranks)
            return invalid(err, errcap, "/partitions/%u/rank must be below the %u ranks", j,
                           p->ranks);
        for (int k = 0; k < 6; k++)
            if (!isfinite(v[k]) || v[k] < 0)
                return invalid(err, errcap,
                               "/partitions/%u/%s must be a finite number of at least 0", j,
                               names[k]);
    }
    return PARTD_OK;
}

/* Each action on its stage's rank, once; cnt (4 per stage and microbatch)
 * counts them by kind. */
static int check_actions(const partd_timeline_plan *p, uint8_t *cnt, char *err, size_t errcap)
{
    for (uint32_t r = 0; r < p->ranks; r++)
        for (uint32_t i = p->action_off[r]; i < p->action_off[r + 1]; i++) {
            const partd_timeline_action *a = &p->action[i];
            uint32_t k = i - p->action_off[r];
            if (a->kind > PARTD_TIMELINE_W || a->stage >= p->stages ||
                a->microbatch >= p->microbatches)
                return invalid(err, errcap,
                               "/schedule/actions/%u/%u names a stage, kind or microbatch the "
                               "plan does not have (%u stages, %u microbatches)",
                               r, k, p->stages, p->microbatches);
            char name[40];
            snprintf(name, sizeof name, "%u%c%u", a->stage, KINDS[a->kind], a->microbatch);
            if (p->stage[a->stage].rank != r)
                return invalid(err, errcap,
                               "/schedule/actions/%u/%u (%s) is on rank %u, its stage on rank %u",
                               r, k, name, r, p->stage[a->stage].rank);
            uint8_t *c = &cnt[((size_t)a->stage * p->microbatches + a->microbatch) * 4 + a->kind];
            if (*c)
                return invalid(err, errcap, "/schedule/actions/%u/%u (%s) runs a second time", r, k,
                               name);
            *c = 1;
        }
    return PARTD_OK;
}

/* Every (stage, microbatch): one F and one B, or one F, one I and one W. */
static int check_complete(const partd_timeline_plan *p, const uint8_t *cnt, char *err,
                          size_t errcap)
{
    for (uint32_t j = 0; j < p->stages; j++)
        for (uint32_t m = 0; m < p->microbatches; m++) {
            const uint8_t *c = &cnt[((size_t)j * p->microbatches + m) * 4];
            const char *what = !c[PARTD_TIMELINE_F]                         ? "no F"
                               : c[PARTD_TIMELINE_B] && c[PARTD_TIMELINE_I] ? "both a B and an I"
                               : c[PARTD_TIMELINE_B] && c[PARTD_TIMELINE_W] ? "a W after a B"
                               : c[PARTD_TIMELINE_I] != c[PARTD_TIMELINE_W]
                                   ? "an I without a W or a W without an I"
                               : !c[PARTD_TIMELINE_B] && !c[PARTD_TIMELINE_I] ? "no backward"
                                                                              : NULL;
            if (what)
                return invalid(err, errcap, "/schedule/actions: stage %u has %s for microbatch %u",
                               j, what, m);
        }
    return PARTD_OK;
}

static int check(const partd_timeline_plan *p, char *err, size_t errcap)
{
    if (!p->ranks || !p->stages || !p->microbatches || p->microbatches > MAX_MICROBATCHES)
        return invalid(err, errcap, "/summary: a plan needs ranks, stages and 1 to %u microbatches",
                       MAX_MICROBATCHES);
    int rc = check_stages(p, err, errcap);
    if (rc != PARTD_OK)
        return rc;
    uint64_t n = 0;
    for (uint32_t r = 0; r < p->ranks; r++) {
        if (p->action_off[r + 1] < p->action_off[r])
            return invalid(err, errcap, "/schedule/actions/%u ends before it begins", r);
        n += p->action_off[r + 1] - p->action_off[r];
    }
    /* every (stage, microbatch) runs at least two actions; fewer actions
     * than that and one is missing, found without a table that large */
    if (p->action_off[0] != 0 || n < 2 * (uint64_t)p->stages * p->microbatches)
        return invalid(err, errcap,
                       "/schedule/actions holds %llu actions, fewer than an F and a backward "
                       "for each of %u stages and %u microbatches",
                       (unsigned long long)n, p->stages, p->microbatches);
    uint8_t *cnt = calloc((size_t)p->stages * p->microbatches, 4);
    if (!cnt)
        return PARTD_ENOMEM;
    rc = check_actions(p, cnt, err, errcap);
    if (rc == PARTD_OK)
        rc = check_complete(p, cnt, err, errcap);
    free(cnt);
    return rc;
}

/* The plan's lists as the simulator takes them. */
static int lists_of(const partd_timeline_plan *p, partd_training_lists *l)
{
    memset(l, 0, sizeof *l);
    l->S = p->ranks;
    l->V = p->stages;
    l->v = p->stages / p->ranks ? p->stages / p->ranks : 1;
    l->M = p->microbatches;
    l->n = p->action_off[p->ranks];
    l->off = malloc(((size_t)p->ranks + 1) * sizeof *l->off);
    l->act = malloc((l->n ? l->n : 1) * sizeof *l->act);
    if (!l->off || !l->act) {
        partd_training_lists_free(l);
        return PARTD_ENOMEM;
    }
    memcpy(l->off, p->action_off, ((size_t)p->ranks + 1) * sizeof *l->off);
    for (uint32_t i = 0; i < l->n; i++)
        l->act[i] = (partd_training_action){p->action[i].stage, (uint16_t)p->action[i].microbatch,
                                            p->action[i].kind, 0};
    return PARTD_OK;
}

/* Times the checked lists: the simulator's ends, starts = end - duration. */
static int simulate(const partd_timeline_plan *p, const partd_training_lists *l,
                    partd_timeline *out)
{
    size_t V = p->stages;
    double *d = malloc(6 * V * sizeof *d);
    if (!d)
        return PARTD_ENOMEM;
    for (size_t j = 0; j < V; j++) {
        const partd_timeline_stage *st = &p->stage[j];
        d[j] = st->forward_ms;
        d[V + j] = st->backward_ms;
        d[2 * V + j] = st->input_grad_ms;
        d[3 * V + j] = st->recompute_ms;
        d[4 * V + j] = st->weight_grad_ms;
        d[5 * V + j] = st->send_ms;
    }
    partd_training_durations dur = {d,         d + V,     d + 2 * V,      d + 3 * V,
                                    d + 4 * V, d + 5 * V, p->checkpointed};
    partd_training_sim sim;
    int rc = partd__training_sim_build(l, &sim);
    if (rc == PARTD_OK) {
        out->step_ms = partd__training_sim_run(&sim, &dur, out->busy);
        for (uint32_t i = 0; i < l->n; i++) {
            out->end[i] = sim.end[i];
            out->start[i] = sim.end[i] - partd__training_sim_duration(&dur, &l->act[i]);
        }
        partd__training_sim_free(&sim);
    }
    free(d);
    return rc;
}

int partd_timeline_run(const partd_timeline_plan *p, partd_timeline *out, char *err, size_t errcap)
{
    memset(out, 0, sizeof *out);
    if (errcap)
        err[0] = '\0';
    int rc = check(p, err, errcap);
    if (rc != PARTD_OK)
        return rc;
    partd_training_lists l;
    rc = lists_of(p, &l);
    if (rc != PARTD_OK)
        return rc;
    size_t n = l.n ? l.n : 1;
    out->n = l.n;
    out->start = malloc(n * sizeof *out->start);
    out->end = malloc(n * sizeof *out->end);
    out->busy = calloc(p->ranks, sizeof *out->busy);
    rc = out->start && out->end && out->busy ? simulate(p, &l, out) : PARTD_ENOMEM;
    partd_training_lists_free(&l);
    if (rc == PARTD_EINVALID)
        invalid(err, errcap, "/schedule/actions: the ranks' lists wait for each other forever");
    if (rc != PARTD_OK)
        partd_timeline_free(out);
    return rc;
}
