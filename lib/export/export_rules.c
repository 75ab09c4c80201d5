/* export_rules.c - PyTorch's rules for a compute-only order, applied to a
 * plan's actions; see export_internal.h.
 *
 * Source: pytorch/pytorch, torch/distributed/pipelining/schedules.py.
 * PipelineScheduleMulti._load_csv reads a row of actions per rank and calls
 * _validate_schedule: every stage on one rank; a B or I after the stage's F
 * of that microbatch, a W after its I; per stage, M forwards and M
 * backwards, as B or as I and W (counted as sets). _PipelineScheduleRuntime
 * then lowers the order with _add_send_recv: ranks in turn, each runs its
 * next action when what it receives has been sent (F(s, m) after
 * F(s - 1, m), B or I (s, m) after B or I (s + 1, m)); a turn in which no
 * rank moves is its "Malformed compute schedule". */
#include "export_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "partd/partd.h"

/* done bits, one per partd_training_kind (1 << kind) */
enum { DONE_F = 1, DONE_B = 2, DONE_I = 4, DONE_W = 8 };

typedef struct rules {
    partd__export_ctx *c;
    const partd__export_plan *p;
    uint8_t *done;        /* [stage * M + mb]: DONE_* bits */
    uint32_t *owner;      /* rank of each stage, UINT32_MAX until seen */
    uint32_t violations;
} rules;

static void violation(rules *u, uint32_t r, size_t i, const char *fmt, const char *detail)
{
    char ptr[96];
    snprintf(ptr, sizeof ptr, "/schedule/actions/%u/%zu", r, i);
    partd__export_refuse(u->c, ptr, fmt, detail);
    u->violations++;
}

static int is_backward(const partd_training_action *a)
{
    return a->kind == PARTD_TRAINING_B || a->kind == PARTD_TRAINING_I;
}

/* _validate_schedule's walk: rank by rank, action by action. */
static void check_action(rules *u, uint32_t r, size_t i, const partd_training_action *a)
{
    uint8_t *d = &u->done[(size_t)a->stage * u->p->microbatches + a->mb];
    char what[24];
    partd_training_action_name(a, what, sizeof what);
    if (is_backward(a) && !(*d & DONE_F))
        violation(u, r, i, "%s runs before its forward (PyTorch's _validate_schedule)", what);
    if (a->kind == PARTD_TRAINING_W && !(*d & DONE_I))
        violation(u, r, i, "%s runs before its I (PyTorch's _validate_schedule)", what);
    *d |= (uint8_t)(1u << a->kind);
    if (u->owner[a->stage] == UINT32_MAX)
        u->owner[a->stage] = r;
    else if (u->owner[a->stage] != r)
        violation(u, r, i, "%s: the stage runs on two ranks (PyTorch's _validate_schedule)",
                  what);
}

static void check_counts(rules *u)
{
    uint32_t m = u->p->microbatches;
    for (uint32_t s = 0; s < u->p->n_stages; s++) {
        uint32_t n[4] = {0, 0, 0, 0};
        for (uint32_t mb = 0; mb < m; mb++)
            for (int k = 0; k < 4; k++)
                n[k] += (u->done[(size_t)s * m + mb] >> k) & 1;
        if (n[0] != m || n[2] != n[3] || n[1] + (n[2] + n[3]) / 2 != m) {
            char ptr[32], msg[160];
            snprintf(ptr, sizeof ptr, "/partitions/%u", s);
            snprintf(msg, sizeof msg,
                     "stage %u runs %u F, %u B, %u I and %u W; PyTorch's _validate_schedule "
                     "needs %u F and %u backwards (B, or I and W)",
                     s, n[0], n[1], n[2], n[3], m, m);
            partd__export_refuse(u->c, ptr, "%s", msg);
            u->violations++;
        }
    }
}

/* _add_send_recv: rank by rank in turns, the next action of a rank goes in
 * when the action it receives from has gone in (F(s, m) after F(s - 1, m),
 * B or I (s, m) after B or I (s + 1, m)); a turn in which no rank moves is
 * PyTorch's "Malformed compute schedule". */
static void check_progress(rules *u)
{
    const partd__export_plan *p = u->p;
    const partd_training_lists *o = &p->order;
    uint32_t m = p->microbatches;
    uint32_t *next = malloc(p->n_ranks * sizeof *next);
    if (!next) {
        u->c->rc = PARTD_ENOMEM;
        return;
    }
    for (uint32_t r = 0; r < p->n_ranks; r++)
        next[r] = o->off[r];
    memset(u->done, 0, (size_t)p->n_stages * m);
    for (;;) {
        int moved = 0, left = 0;
        for (uint32_t r = 0; r < p->n_ranks; r++) {
            if (next[r] == o->off[r + 1])
                continue;
            left = 1;
            const partd_training_action *a = &o->act[next[r]];
            int ready = 1;
            if (a->kind == PARTD_TRAINING_F && a->stage > 0)
                ready = u->done[(size_t)(a->stage - 1) * m + a->mb] & DONE_F;
            else if (is_backward(a) && a->stage + 1 < p->n_stages)
                ready = u->done[(size_t)(a->stage + 1) * m + a->mb] & (DONE_B | DONE_I);
            if (!ready)
                continue;
            u->done[(size_t)a->stage * m + a->mb] |= (uint8_t)(1u << a->kind);
            next[r]++;
            moved = 1;
        }
        if (!left)
            break;
        if (!moved) {
            for (uint32_t r = 0; r < p->n_ranks; r++)
                if (next[r] < o->off[r + 1]) {
                    char what[24];
                    partd_training_action_name(&o->act[next[r]], what, sizeof what);
                    violation(u, r, next[r] - o->off[r],
                              "%s waits forever: no rank can move (PyTorch's _add_send_recv: "
                              "malformed compute schedule)",
                              what);
                }
            break;
        }
    }
    free(next);
}

uint32_t partd__export_pytorch_rules(partd__export_ctx *c)
{
    const partd__export_plan *p = c->plan;
    rules u = {c, p, calloc((size_t)p->n_stages * p->microbatches, 1),
               malloc(p->n_stages * sizeof(uint32_t)), 0};
    if (!u.done || !u.owner) {
        free(u.done);
        free(u.owner);
        c->rc = PARTD_ENOMEM;
        return 0;
    }
    for (uint32_t s = 0; s < p->n_stages; s++)
        u.owner[s] = UINT32_MAX;
    for (uint32_t r = 0; r < p->n_ranks; r++)
        for (uint32_t i = p->order.off[r]; i < p->order.off[r + 1]; i++)
            check_action(&u, r, i - p->order.off[r], &p->order.act[i]);
    check_counts(&u);
    if (u.violations == 0)
        check_progress(&u);
    free(u.done);
    free(u.owner);
    return u.violations;
}
