/*
 * training_schedule.c - the seven schedules' action lists; see
 * training_schedule.h. Each builder follows the contract's sentence for
 * its schedule, counters per rank.
 */
#include "training_schedule.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "partd/partd.h"

uint32_t partd_training_schedule_v(partd_training_schedule s, uint32_t v)
{
    switch (s) {
    case PARTD_TRAINING_GPIPE:
    case PARTD_TRAINING_1F1B: return 1;
    case PARTD_TRAINING_ZBV:
    case PARTD_TRAINING_DUALPIPEV: return 2;
    default: return v;
    }
}

/* 1 when the V placement (ZBVZeroBubble, DualPipeV) applies. */
static int is_v(partd_training_schedule s)
{
    return s == PARTD_TRAINING_ZBV || s == PARTD_TRAINING_DUALPIPEV;
}

int partd_training_schedule_splits(partd_training_schedule s)
{
    return s == PARTD_TRAINING_INTERLEAVED_ZB || s == PARTD_TRAINING_ZBV ||
           s == PARTD_TRAINING_DUALPIPEV;
}

/* Interleaved schedules: R = max(1, M / S) rounds of G = M / R. */
static uint32_t rounds(uint32_t S, uint32_t M)
{
    return M / S > 1 ? M / S : 1;
}

int partd_training_schedule_allows(partd_training_schedule s, uint32_t S, uint32_t v,
                                    uint32_t M)
{
    if (S < 1 || M < 1 || v != partd_training_schedule_v(s, v) || v < 1)
        return 0;
    switch (s) {
    case PARTD_TRAINING_1F1B: return M >= S;
    case PARTD_TRAINING_INTERLEAVED_1F1B:
    case PARTD_TRAINING_INTERLEAVED_ZB: return M % rounds(S, M) == 0;
    case PARTD_TRAINING_DUALPIPEV: return M >= 2 * S;
    default: return 1;
    }
}

const char *partd_training_schedule_condition(partd_training_schedule s)
{
    switch (s) {
    case PARTD_TRAINING_1F1B: return "needs microbatches >= stages";
    case PARTD_TRAINING_INTERLEAVED_1F1B:
    case PARTD_TRAINING_INTERLEAVED_ZB:
        return "needs microbatches to be a multiple of max(1, microbatches / stages)";
    case PARTD_TRAINING_DUALPIPEV: return "needs microbatches >= 2 x stages";
    default: return "runs with any microbatches";
    }
}

uint32_t partd_training_schedule_rank(partd_training_schedule s, uint32_t S, uint32_t j)
{
    if (is_v(s) && (j / S) % 2 == 1)
        return S - 1 - j % S;
    return j % S;
}

/* ---- one rank's list ------------------------------------------------------ */

typedef struct rank_list {
    partd_training_action *a;
    uint32_t n;
} rank_list;

static void emit(rank_list *l, uint32_t stage, uint8_t kind, uint32_t mb)
{
    l->a[l->n++] = (partd_training_action){stage, (uint16_t)mb, kind, 0};
}

static void gpipe(rank_list *l, uint32_t M, uint32_t r)
{
    for (uint32_t m = 0; m < M; m++)
        emit(l, r, PARTD_TRAINING_F, m);
    for (uint32_t m = 0; m < M; m++)
        emit(l, r, PARTD_TRAINING_B, m);
}

/* w = min(M, S - r) forwards, then B and F alternately while forwards
 * remain, then the remaining backwards. */
static void one_f_one_b(rank_list *l, uint32_t S, uint32_t M, uint32_t r)
{
    uint32_t w = M < S - r ? M : S - r, f = 0, b = 0;
    while (f < w)
        emit(l, r, PARTD_TRAINING_F, f++);
    while (f < M) {
        emit(l, r, PARTD_TRAINING_B, b++);
        emit(l, r, PARTD_TRAINING_F, f++);
    }
    while (b < M)
        emit(l, r, PARTD_TRAINING_B, b++);
}

/* Every microbatch on the first local stage, then the second, ...; then
 * the backwards of the last local stage, microbatches M - 1 down to 0, then
 * of the stage before, ... */
static void looped_bfs(rank_list *l, uint32_t S, uint32_t v, uint32_t M, uint32_t r)
{
    for (uint32_t k = 0; k < v; k++)
        for (uint32_t m = 0; m < M; m++)
            emit(l, k * S + r, PARTD_TRAINING_F, m);
    for (uint32_t k = v; k-- > 0;)
        for (uint32_t m = M; m-- > 0;)
            emit(l, k * S + r, PARTD_TRAINING_B, m);
}

/* The k-th forward or backward of rank r in the interleaved schedules. */
typedef struct inter {
    uint32_t S, v, G, r;
} inter;

static uint32_t inter_mb(const inter *it, uint32_t k)
{
    return k / (it->G * it->v) * it->G + k % it->G;
}

static uint32_t inter_fwd_stage(const inter *it, uint32_t k)
{
    return (k / it->G) % it->v * it->S + it->r;
}

static uint32_t inter_bwd_stage(const inter *it, uint32_t k)
{
    return (it->v - 1 - (k / it->G) % it->v) * it->S + it->r;
}

/* Interleaved1F1B (zb = 0) and InterleavedZeroBubble (zb = 1): warm-up
 * forwards, then (next forward, next backward) pairs while forwards
 * remain, then the remaining backwards; with zb, right after its j-th I
 * the rank runs the W of its (j - r)-th I when j >= r, the rest at the end. */
static void interleaved(rank_list *l, uint32_t S, uint32_t v, uint32_t M, uint32_t r, int zb)
{
    uint32_t R = rounds(S, M);
    inter it = {S, v, M / R, r};
    uint32_t total = v * M, hops = (zb ? 1 : 2) * (S - 1 - r);
    uint32_t w = (v - 1) * it.G + hops;
    if (w > total)
        w = total;
    uint32_t f = 0, b = 0, wdone = 0;
    uint8_t bk = zb ? PARTD_TRAINING_I : PARTD_TRAINING_B;
    while (f < w) {
        emit(l, inter_fwd_stage(&it, f), PARTD_TRAINING_F, inter_mb(&it, f));
        f++;
    }
    while (b < total) {
        if (f < total) {
            emit(l, inter_fwd_stage(&it, f), PARTD_TRAINING_F, inter_mb(&it, f));
            f++;
        }
        emit(l, inter_bwd_stage(&it, b), bk, inter_mb(&it, b));
        if (zb && b >= r) {
            emit(l, inter_bwd_stage(&it, wdone), PARTD_TRAINING_W, inter_mb(&it, wdone));
            wdone++;
        }
        b++;
    }
    while (zb && wdone < total) {
        emit(l, inter_bwd_stage(&it, wdone), PARTD_TRAINING_W, inter_mb(&it, wdone));
        wdone++;
    }
}

/* A V schedule's two stages on one rank: forward and I counters, and the
 * I's still owing their W, oldest first (a ring of at most 2N). */
typedef struct vrank {
    rank_list *l;
    uint32_t st[2];
    uint32_t f[2], b[2];
    uint32_t *owed_stage, *owed_mb, head, tail;
} vrank;

static void v_fwd(vrank *x, int c)
{
    emit(x->l, x->st[c], PARTD_TRAINING_F, x->f[c]++);
}

/* An I (or B) of stage c; an I owes its W until v_w. */
static void v_bwd(vrank *x, int c, uint8_t kind)
{
    uint32_t m = x->b[c]++;
    emit(x->l, x->st[c], kind, m);
    if (kind == PARTD_TRAINING_I) {
        x->owed_stage[x->tail] = x->st[c];
        x->owed_mb[x->tail++] = m;
    }
}

/* The W of the oldest I without one. */
static void v_w(vrank *x)
{
    if (x->head < x->tail) {
        emit(x->l, x->owed_stage[x->head], PARTD_TRAINING_W, x->owed_mb[x->head]);
        x->head++;
    }
}

/* The W of the oldest I of stage c without one (ZBV's cool-down). */
static void v_w_of(vrank *x, int c)
{
    for (uint32_t i = x->head; i < x->tail; i++)
        if (x->owed_stage[i] == x->st[c]) {
            emit(x->l, x->owed_stage[i], PARTD_TRAINING_W, x->owed_mb[i]);
            memmove(x->owed_stage + i, x->owed_stage + i + 1,
                    (x->tail - i - 1) * sizeof *x->owed_stage);
            memmove(x->owed_mb + i, x->owed_mb + i + 1, (x->tail - i - 1) * sizeof *x->owed_mb);
            x->tail--;
            return;
        }
}

static void zbv(vrank *x, uint32_t S, uint32_t M, uint32_t r)
{
    uint32_t N = 2 * S - 1 > M ? 2 * S - 1 : M;
    for (uint32_t i = 0; i < 2 * (S - r) - 1; i++)
        v_fwd(x, 0);
    for (uint32_t i = 0; i < r; i++) {
        v_fwd(x, 1);
        v_fwd(x, 0);
    }
    for (uint32_t i = 0; i < S - r; i++) {
        v_fwd(x, 1);
        v_bwd(x, 1, PARTD_TRAINING_I);
        v_w(x);
    }
    while (x->f[1] < x->f[0] || x->f[0] < N) {
        if (x->f[0] < N)
            v_fwd(x, 0);
        v_bwd(x, 0, PARTD_TRAINING_I);
        v_w(x);
        v_fwd(x, 1);
        v_bwd(x, 1, PARTD_TRAINING_I);
        v_w(x);
    }
    for (uint32_t i = 0; i < r; i++) {
        v_bwd(x, 0, PARTD_TRAINING_I);
        v_bwd(x, 1, PARTD_TRAINING_I);
    }
    for (uint32_t i = 0; i < S - r; i++) {
        v_bwd(x, 0, PARTD_TRAINING_I);
        v_w_of(x, 0);
    }
    for (int c = 1; c >= 0; c--) /* c1's W's first, then c0's */
        for (uint32_t left = x->tail + 1; x->tail < left;) {
            left = x->tail;
            v_w_of(x, c);
        }
}

static void dualpipev(vrank *x, uint32_t S, uint32_t M, uint32_t r)
{
    for (uint32_t i = 0; i < 2 * (S - r - 1); i++)
        v_fwd(x, 0);
    for (uint32_t i = 0; i < r + 1; i++) {
        v_fwd(x, 0);
        v_fwd(x, 1);
    }
    for (uint32_t i = 0; i < S - r - 1; i++) {
        v_bwd(x, 1, PARTD_TRAINING_I);
        v_w(x);
        v_fwd(x, 1);
    }
    for (uint32_t i = 0; i < M - 2 * S + r + 1; i++) {
        v_fwd(x, 0);
        v_bwd(x, 1, PARTD_TRAINING_B);
        v_fwd(x, 1);
        v_bwd(x, 0, PARTD_TRAINING_B);
    }
    for (uint32_t i = 0; i < S - r - 1; i++) {
        v_bwd(x, 1, PARTD_TRAINING_B);
        v_fwd(x, 1);
        v_bwd(x, 0, PARTD_TRAINING_B);
    }
    /* B until iteration (r + 1) / 2, I from then on: for odd r the switch
     * comes before that iteration's X(s1), for even r between its X(s1)
     * and X(s0). */
    uint8_t k = PARTD_TRAINING_B;
    for (uint32_t i = 0; i < r + 1; i++) {
        if (i == (r + 1) / 2 && r % 2 == 1)
            k = PARTD_TRAINING_I;
        v_bwd(x, 1, k);
        if (i == (r + 1) / 2 && r % 2 == 0)
            k = PARTD_TRAINING_I;
        v_bwd(x, 0, k);
    }
    for (uint32_t i = 0; i < S - r - 1; i++) {
        v_w(x);
        v_bwd(x, 0, k);
    }
    for (uint32_t i = 0; i < r + 1; i++)
        v_w(x);
}

/* The V schedules on rank r; ZBV builds with N = max(2S - 1, M)
 * microbatches and drops those >= M. */
static int v_schedule(rank_list *l, partd_training_schedule s, uint32_t S, uint32_t M, uint32_t r)
{
    uint32_t N = 2 * S - 1 > M ? 2 * S - 1 : M;
    vrank x = {l, {r, 2 * S - 1 - r}, {0, 0}, {0, 0}, NULL, NULL, 0, 0};
    x.owed_stage = malloc(2 * (size_t)N * sizeof *x.owed_stage);
    x.owed_mb = malloc(2 * (size_t)N * sizeof *x.owed_mb);
    if (!x.owed_stage || !x.owed_mb) {
        free(x.owed_stage);
        free(x.owed_mb);
        return PARTD_ENOMEM;
    }
    if (s == PARTD_TRAINING_ZBV)
        zbv(&x, S, M, r);
    else
        dualpipev(&x, S, M, r);
    free(x.owed_stage);
    free(x.owed_mb);
    uint32_t k = 0;
    for (uint32_t i = 0; i < l->n; i++)
        if (l->a[i].mb < M)
            l->a[k++] = l->a[i];
    l->n = k;
    return PARTD_OK;
}

/* ---- entry ------------------------------------------------------------------ */

int partd_training_schedule_build(partd_training_schedule s, uint32_t S, uint32_t v,
                                   uint32_t M, partd_training_lists *out)
{
    memset(out, 0, sizeof *out);
    v = partd_training_schedule_v(s, v);
    if (!partd_training_schedule_allows(s, S, v, M) || M > PARTD_TRAINING_MAX_MICROBATCHES)
        return PARTD_EINVALID;
    /* ZBV builds up to 2S - 1 microbatches before dropping: room for 3vN. */
    uint32_t N = s == PARTD_TRAINING_ZBV && 2 * S - 1 > M ? 2 * S - 1 : M;
    size_t per = 3 * (size_t)v * N;
    out->schedule = s;
    out->S = S;
    out->v = v;
    out->V = S * v;
    out->M = M;
    out->off = malloc((S + 1) * sizeof *out->off);
    out->act = malloc(per * S * sizeof *out->act);
    partd_training_action *tmp = malloc(per * sizeof *tmp);
    int rc = out->off && out->act && tmp ? PARTD_OK : PARTD_ENOMEM;
    for (uint32_t r = 0; r < S && rc == PARTD_OK; r++) {
        rank_list l = {tmp, 0};
        switch (s) {
        case PARTD_TRAINING_GPIPE: gpipe(&l, M, r); break;
        case PARTD_TRAINING_1F1B: one_f_one_b(&l, S, M, r); break;
        case PARTD_TRAINING_LOOPED_BFS: looped_bfs(&l, S, v, M, r); break;
        case PARTD_TRAINING_INTERLEAVED_1F1B: interleaved(&l, S, v, M, r, 0); break;
        case PARTD_TRAINING_INTERLEAVED_ZB: interleaved(&l, S, v, M, r, 1); break;
        default: rc = v_schedule(&l, s, S, M, r); break;
        }
        out->off[r] = out->n;
        memcpy(out->act + out->n, tmp, l.n * sizeof *tmp);
        out->n += l.n;
    }
    free(tmp);
    if (rc != PARTD_OK) {
        partd_training_lists_free(out);
        return rc;
    }
    out->off[S] = out->n;
    return PARTD_OK;
}

void partd_training_lists_free(partd_training_lists *l)
{
    free(l->off);
    free(l->act);
    memset(l, 0, sizeof *l);
}

void partd_training_action_name(const partd_training_action *a, char *buf, unsigned cap)
{
    static const char kinds[] = "FBIW";
    snprintf(buf, cap, "%u%c%u", a->stage, kinds[a->kind & 3], (unsigned)a->mb);
}
