/*
 * pipeline_ties.c - smallest sum of stage times, then earliest cuts, among
 * the splits of optimal bottleneck; see pipeline_ties.h.
 *
 * H_s(a) is the best suffix from start a of stage s: the smallest sum of the
 * times of stages s..S-1 (ticks and received bytes, exact) and, on equal
 * sums, the smallest end of stage s. Following the ends from 0 gives the
 * earliest cuts among the best sums, because each choice is the smallest end
 * that keeps the optimal sum.
 */
#include "pipeline_ties.h"

#include <stdlib.h>
#include <string.h>

#include "partd/partd.h"

#define CHECK_EVERY 4096

typedef struct tie_value {
    int64_t ticks;
    __int128 recv;
} tie_value;

/* Sign of (a - b) in milliseconds. Differences are taken in integers first,
 * so equal sums compare equal and adding the same amount to both never
 * changes the answer. */
static int tie_cmp(const partd_pipeline_model *md, int64_t xa, __int128 ra, int64_t xb, __int128 rb)
{
    __int128 dr = ra - rb;
    /* 128-bit to double is a library call; differences nearly always fit. */
    double r = dr >= INT64_MIN && dr <= INT64_MAX ? (double)(int64_t)dr : (double)dr;
    double d = (double)(xa - xb) * md->tick_ms + r * md->ms_per_byte;
    return d < 0 ? -1 : d > 0;
}

typedef struct tie_table {
    tie_value *h;  /* per element of W[s] */
    int32_t *next; /* its best end; -1: cannot finish from there */
} tie_table;

typedef struct ties {
    const partd_pipeline_model *md;
    const partd_cancel *cancel;
    const partd_pipeline_set *W;
    double bound;
    uint64_t steps;
    tie_table *t;
} ties;

static int tick(ties *tt)
{
    if (++tt->steps % CHECK_EVERY == 0)
        return partd_cancel_check(tt->cancel);
    return PARTD_OK;
}

static int stage_ok(const ties *tt, uint32_t s, const partd_pipeline_window *w, partd_pipeline_stage *ev)
{
    partd_pipeline_stage_eval(tt->md, s, w, ev);
    return (ev->mem_ok || tt->md->objective == PL_OBJ_SHORTFALL) && ev->cost <= tt->bound;
}

/* ---- few pairs: enumerate them -------------------------------------------- */

static int stage_by_pairs(ties *tt, uint32_t s)
{
    const partd_pipeline_model *md = tt->md;
    const partd_pipeline_set *starts = &tt->W[s], *ends = &tt->W[s + 1];
    const tie_table *rest = &tt->t[s + 1];
    partd_pipeline_window base = {0, 0, 0, 0};
    partd_pipeline_cursor c0;
    cursor_init(&c0, ends);
    uint64_t idx = 0;
    for (uint32_t i = 0; i < starts->n; i++) {
        for (int32_t a = starts->run[i].lo; a <= starts->run[i].hi; a++, idx++) {
            int32_t lim = partd_pipeline_max_end(md, s, a);
            int32_t e = cursor_next(&c0, partd_pipeline_min_end(md, s, a, tt->bound));
            int32_t best_e = -1;
            tie_value best = {0, 0};
            if (e <= lim)
                partd_pipeline_window_move(md, &base, a, e);
            partd_pipeline_window w = base;
            partd_pipeline_cursor c1 = c0;
            for (; e <= lim; e = cursor_next(&c1, e + 1)) {
                int rc = tick(tt);
                if (rc)
                    return rc;
                partd_pipeline_window_move(md, &w, a, e);
                partd_pipeline_stage ev;
                if (!stage_ok(tt, s, &w, &ev))
                    break; /* costs only grow with e */
                uint64_t j = cursor_index(&c1, e);
                if (rest->next[j] < 0)
                    continue;
                tie_value v = {ev.ticks + rest->h[j].ticks, ev.recv + rest->h[j].recv};
                if (best_e < 0 || tie_cmp(md, v.ticks, v.recv, best.ticks, best.recv) < 0) {
                    best = v;
                    best_e = e;
                }
            }
            tt->t[s].h[idx] = best;
            tt->t[s].next[idx] = best_e;
        }
    }
    return PARTD_OK;
}

/* ---- many pairs: sweep the starts with a segment tree over the ends ------- */

/* Suffix adds and point reads (a Fenwick tree of differences). */
typedef struct fenwick {
    int64_t *v; /* 1-based */
    uint32_t n;
} fenwick;

static void fw_add_suffix(fenwick *f, uint32_t j, int64_t d)
{
    for (uint32_t i = j + 1; i <= f->n; i += i & (~i + 1))
        f->v[i] += d;
}

static int64_t fw_get(const fenwick *f, uint32_t j)
{
    int64_t s = 0;
    for (uint32_t i = j + 1; i > 0; i -= i & (~i + 1))
        s += f->v[i];
    return s;
}

/* Leftmost minimum of (x, r) over the ends that can finish, with suffix
 * adds to r. Node values include every add applied at or above them; lazy
 * holds what the children still miss. */
typedef struct segtree {
    const partd_pipeline_model *md;
    uint32_t n;
    int64_t *x;
    __int128 *r, *lazy;
    int32_t *arg; /* leaf index of the minimum, -1 when none can finish */
} segtree;

typedef struct seg_best {
    int64_t x;
    __int128 r;
    int32_t arg;
} seg_best;

static int better(const partd_pipeline_model *md, seg_best a, seg_best b)
{
    if (b.arg < 0)
        return a.arg >= 0;
    if (a.arg < 0)
        return 0;
    int c = tie_cmp(md, a.x, a.r, b.x, b.r);
    return c < 0 || (c == 0 && a.arg < b.arg);
}

static seg_best seg_at(const segtree *t, uint32_t node)
{
    return (seg_best){t->x[node], t->r[node], t->arg[node]};
}

static void seg_set(segtree *t, uint32_t node, seg_best b)
{
    t->x[node] = b.x;
    t->r[node] = b.r;
    t->arg[node] = b.arg;
}

static void seg_pull(segtree *t, uint32_t node)
{
    seg_best l = seg_at(t, 2 * node), r = seg_at(t, 2 * node + 1);
    seg_set(t, node, better(t->md, r, l) ? r : l);
}

static void seg_apply(segtree *t, uint32_t node, __int128 d)
{
    t->r[node] += d;
    t->lazy[node] += d;
}

static void seg_push(segtree *t, uint32_t node)
{
    if (t->lazy[node]) {
        seg_apply(t, 2 * node, t->lazy[node]);
        seg_apply(t, 2 * node + 1, t->lazy[node]);
        t->lazy[node] = 0;
    }
}

static void seg_build(segtree *t, uint32_t node, uint32_t lo, uint32_t hi, const seg_best *leaf)
{
    t->lazy[node] = 0;
    if (lo == hi) {
        seg_set(t, node, leaf[lo]);
        return;
    }
    uint32_t mid = lo + (hi - lo) / 2;
    seg_build(t, 2 * node, lo, mid, leaf);
    seg_build(t, 2 * node + 1, mid + 1, hi, leaf);
    seg_pull(t, node);
}

static void seg_add(segtree *t, uint32_t node, uint32_t lo, uint32_t hi, uint32_t from,
                    __int128 d)
{
    if (hi < from)
        return;
    if (lo >= from) {
        seg_apply(t, node, d);
        return;
    }
    seg_push(t, node);
    uint32_t mid = lo + (hi - lo) / 2;
    seg_add(t, 2 * node, lo, mid, from, d);
    seg_add(t, 2 * node + 1, mid + 1, hi, from, d);
    seg_pull(t, node);
}

static seg_best seg_query(segtree *t, uint32_t node, uint32_t lo, uint32_t hi, uint32_t ql,
                          uint32_t qr)
{
    if (qr < lo || hi < ql)
        return (seg_best){0, 0, -1};
    if (ql <= lo && hi <= qr)
        return seg_at(t, node);
    seg_push(t, node);
    uint32_t mid = lo + (hi - lo) / 2;
    seg_best l = seg_query(t, 2 * node, lo, mid, ql, qr);
    seg_best r = seg_query(t, 2 * node + 1, mid + 1, hi, ql, qr);
    return better(t->md, r, l) ? r : l;
}

/* First index j with E[j] >= x (n when none). */
static uint32_t lower_index(const int32_t *E, uint32_t n, int32_t x)
{
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (E[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

typedef struct sweep {
    uint32_t n;
    int32_t *E;       /* the ends, ascending */
    fenwick recv, par;/* recv(a, E[j]) and the P-class bytes of [a, E[j]) */
    segtree tree;     /* over (ticks to E[j] + suffix ticks, recv + suffix recv) */
    uint32_t last;    /* the previous start's last allowed end */
} sweep;

static void sweep_free(sweep *sw)
{
    free(sw->E);
    free(sw->recv.v);
    free(sw->par.v);
    free(sw->tree.x);
    free(sw->tree.r);
    free(sw->tree.lazy);
    free(sw->tree.arg);
}

/* Everything the sweep needs at the largest start a0. */
static int sweep_init(ties *tt, uint32_t s, int32_t a0, sweep *sw)
{
    const partd_pipeline_model *md = tt->md;
    const partd_pipeline_set *ends = &tt->W[s + 1];
    const tie_table *rest = &tt->t[s + 1];
    uint32_t n = (uint32_t)ends->count;
    memset(sw, 0, sizeof *sw);
    sw->n = n;
    sw->E = malloc(n * sizeof *sw->E);
    sw->recv = (fenwick){calloc(n + 1, sizeof(int64_t)), n};
    sw->par = (fenwick){calloc(n + 1, sizeof(int64_t)), n};
    segtree *t = &sw->tree;
    t->md = md;
    t->n = n;
    t->x = malloc(4 * (size_t)n * sizeof *t->x);
    t->r = malloc(4 * (size_t)n * sizeof *t->r);
    t->lazy = malloc(4 * (size_t)n * sizeof *t->lazy);
    t->arg = malloc(4 * (size_t)n * sizeof *t->arg);
    seg_best *leaf = malloc(n * sizeof *leaf);
    if (!sw->E || !sw->recv.v || !sw->par.v || !t->x || !t->r || !t->lazy || !t->arg || !leaf) {
        free(leaf);
        return PARTD_ENOMEM;
    }
    uint32_t j = 0;
    for (uint32_t i = 0; i < ends->n; i++)
        for (int32_t e = ends->run[i].lo; e <= ends->run[i].hi; e++)
            sw->E[j++] = e;
    partd_pipeline_window w = {a0, a0, 0, 0};
    int64_t prev_r = 0, prev_p = 0;
    for (j = 0; j < n; j++) {
        int64_t r = 0, p = 0;
        if (sw->E[j] > a0) {
            partd_pipeline_window_move(md, &w, a0, sw->E[j]);
            r = w.r;
            p = w.p;
        }
        fw_add_suffix(&sw->recv, j, r - prev_r);
        fw_add_suffix(&sw->par, j, p - prev_p);
        prev_r = r;
        prev_p = p;
        leaf[j] = (seg_best){partd_pipeline_ticks_at(md, s, sw->E[j]) + rest->h[j].ticks, rest->h[j].recv + r,
                             rest->next[j] >= 0 ? (int32_t)j : -1};
    }
    seg_build(t, 1, 0, n - 1, leaf);
    free(leaf);
    return PARTD_OK;
}

/* Adds d to the P or R bytes of every end after position x. */
static void sweep_add(sweep *sw, int32_t after, int64_t wc, int sign)
{
    uint32_t j = lower_index(sw->E, sw->n, after + 1);
    if (j == sw->n)
        return;
    int64_t d = sign * (wc >> 1);
    if (wc & 1) {
        fw_add_suffix(&sw->par, j, d);
    } else {
        fw_add_suffix(&sw->recv, j, d);
        seg_add(&sw->tree, 1, 0, sw->n - 1, j, d);
    }
}

/* Start a -> a - 1 (see pipeline_model.h): readers at a - 1 count for ends
 * after it; resources whose previous reader is a - 1 stop counting where
 * their next reader is. */
static void sweep_step_down(const partd_pipeline_model *md, sweep *sw, int32_t a)
{
    int32_t b = a - 1;
    for (uint32_t k = md->r_off[b]; k < md->r_off[b + 1]; k++)
        if (md->r_q[k] < b)
            sweep_add(sw, b, md->r_wc[k], 1);
    for (uint32_t k = md->q_off[b]; k < md->q_off[b + 1]; k++)
        sweep_add(sw, md->q_r[k], md->q_wc[k], -1);
}

static int sweep_ok(ties *tt, uint32_t s, const sweep *sw, int32_t a, uint32_t j)
{
    partd_pipeline_window w = {a, sw->E[j], fw_get(&sw->par, j), fw_get(&sw->recv, j)};
    partd_pipeline_stage ev;
    return stage_ok(tt, s, &w, &ev);
}

/* The last j in [lo, hi] with sweep_ok (which holds at lo and only fails
 * further on), galloping from the previous start's answer `guess`: ends
 * allowed from neighbouring starts are usually close. */
static uint32_t last_allowed(ties *tt, uint32_t s, const sweep *sw, int32_t a, uint32_t lo,
                             uint32_t hi, uint32_t guess)
{
    if (guess > lo && guess <= hi) {
        if (sweep_ok(tt, s, sw, a, guess)) {
            lo = guess;
            for (uint32_t step = 1; lo < hi; step *= 2) {
                uint32_t probe = hi - lo > step ? lo + step : hi;
                if (!sweep_ok(tt, s, sw, a, probe)) {
                    hi = probe - 1;
                    break;
                }
                lo = probe;
            }
        } else {
            hi = guess - 1;
            for (uint32_t step = 1; lo < hi; step *= 2) {
                uint32_t probe = hi - lo > step ? hi - step : lo;
                if (sweep_ok(tt, s, sw, a, probe)) {
                    lo = probe;
                    break;
                }
                hi = probe - 1;
            }
        }
    }
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo + 1) / 2;
        if (sweep_ok(tt, s, sw, a, mid))
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* H_s(a) for one start of the sweep. */
static void sweep_start(ties *tt, uint32_t s, sweep *sw, int32_t a, uint64_t idx)
{
    const partd_pipeline_model *md = tt->md;
    uint32_t jlo = lower_index(sw->E, sw->n, partd_pipeline_min_end(md, s, a, tt->bound));
    uint32_t jend = lower_index(sw->E, sw->n, partd_pipeline_max_end(md, s, a) + 1);
    tt->t[s].next[idx] = -1;
    memset(&tt->t[s].h[idx], 0, sizeof tt->t[s].h[idx]);
    if (jlo >= jend || !sweep_ok(tt, s, sw, a, jlo))
        return;
    /* The last allowed end: costs only grow with e. */
    uint32_t last = last_allowed(tt, s, sw, a, jlo, jend - 1, sw->last);
    sw->last = last;
    seg_best b = seg_query(&sw->tree, 1, 0, sw->n - 1, jlo, last);
    if (b.arg < 0)
        return;
    tt->t[s].h[idx] = (tie_value){b.x - partd_pipeline_ticks_at(md, s, a), b.r};
    tt->t[s].next[idx] = sw->E[b.arg];
}

static int stage_by_sweep(ties *tt, uint32_t s)
{
    const partd_pipeline_set *starts = &tt->W[s];
    if (starts->n == 0 || tt->W[s + 1].count == 0)
        return PARTD_OK;
    int32_t a_max = starts->run[starts->n - 1].hi, a_min = starts->run[0].lo;
    sweep sw;
    int rc = sweep_init(tt, s, a_max, &sw);
    uint64_t idx = starts->count;
    for (uint32_t i = starts->n; i-- > 0 && rc == PARTD_OK;) {
        for (int32_t a = starts->run[i].hi; a >= starts->run[i].lo; a--) {
            if ((rc = tick(tt)))
                break;
            sweep_start(tt, s, &sw, a, --idx);
            if (a == a_min)
                break;
            /* Down to the next start; positions between runs only move the
             * sweep. */
            int32_t stop = a == starts->run[i].lo ? starts->run[i - 1].hi : a - 1;
            for (int32_t b = a; b > stop; b--)
                sweep_step_down(tt->md, &sw, b);
        }
    }
    sweep_free(&sw);
    return rc;
}

/* ---- entry --------------------------------------------------------------- */

/* Enumerating pairs costs |W[s]| * |W[s+1]| at worst; the sweep about
 * (|W[s]| + |W[s+1]|) * log^2. */
static int few_pairs(const partd_pipeline_model *md, const partd_pipeline_set *W, uint32_t s)
{
    if (md->tie_sweep_always)
        return 0;
    double a = (double)W[s].count, b = (double)W[s + 1].count;
    return a * b <= 64.0 * (a + b) + 4096.0;
}

int partd__pipeline_ties_break(const partd_pipeline_model *md, const partd_cancel *cancel, const partd_pipeline_set *W,
                  double bound, int32_t *cuts)
{
    uint32_t S = md->stages;
    ties tt = {.md = md, .cancel = cancel, .W = W, .bound = bound};
    tt.t = calloc(S + 1, sizeof *tt.t);
    if (!tt.t)
        return PARTD_ENOMEM;
    int rc = PARTD_OK;
    for (uint32_t s = 0; s <= S && rc == PARTD_OK; s++) {
        size_t n = W[s].count ? W[s].count : 1;
        tt.t[s].h = calloc(n, sizeof *tt.t[s].h);
        tt.t[s].next = calloc(n, sizeof *tt.t[s].next);
        if (!tt.t[s].h || !tt.t[s].next)
            rc = PARTD_ENOMEM;
    }
    if (rc == PARTD_OK)
        tt.t[S].next[0] = (int32_t)md->m; /* W[S] = {m}: nothing left to add */
    for (uint32_t s = S; s-- > 0 && rc == PARTD_OK;)
        rc = few_pairs(md, W, s) ? stage_by_pairs(&tt, s) : stage_by_sweep(&tt, s);
    cuts[0] = 0;
    for (uint32_t s = 0; s < S && rc == PARTD_OK; s++) {
        cuts[s + 1] = tt.t[s].next[set_index(&W[s], cuts[s])];
        if (cuts[s + 1] < 0)
            rc = PARTD_EINTERNAL;
    }
    for (uint32_t s = 0; s <= S; s++) {
        free(tt.t[s].h);
        free(tt.t[s].next);
    }
    free(tt.t);
    return rc;
}
