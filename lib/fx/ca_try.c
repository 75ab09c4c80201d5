/*
 * ca_try.c - one pair's try in a round of FX's cost_aware pass
 * (ca_internal.h): the union's edges, bytes and input credit from its own
 * nodes, whether the merge closes a cycle (searched only when the bfs
 * levels differ by two or more), and FX's mapping of the list with the
 * pair merged, taken from the round's state before the first of the pair,
 * shared by the tries of one first partition up to their second, then to
 * the end and the union. Errors: none; a list that does not map gives
 * PARTD_NONE as the union's device.
 */
#include <string.h>

#include "ca_internal.h"
#include "fx_internal.h"
#include "partd/partd.h"

/* The union of the partitions at positions i and j: the bytes of its edges
 * (as build_edges counts them, placeholders and get_attrs both ends read
 * included) and the credit of its inputs. */
void partd__ca_try_scan(partd__ca_state *st, uint32_t i, uint32_t j)
{
    const partd_graph *g = st->g;
    partd__ca_round *d = &st->rd;
    const partd__ca_rec *rs[2] = {&st->recs[st->order[i]], &st->recs[st->order[j]]};
    uint32_t t = ++d->n_tok, tu = ++d->u_tok;
    for (int h = 0; h < 2; h++)
        for (uint32_t x = 0; x < rs[h]->n; x++)
            d->in_u[rs[h]->ops[x]] = t;
    d->n_in = d->n_out = d->n_cu = 0;
    for (int h = 0; h < 2; h++)
        for (uint32_t x = 0; x < rs[h]->n; x++) {
            uint32_t v = rs[h]->ops[x];
            for (uint32_t k = g->in_off[v]; k < g->in_off[v + 1]; k++) {
                uint32_t u = g->in_idx[k];
                if (d->in_u[u] == t)
                    continue;
                uint32_t q = st->c_part_of[u];
                if (q == PARTD_NONE) {
                    if (partd__fx_is_constant(g, u) && d->nseen[u] != t) {
                        d->nseen[u] = t;
                        d->cu[d->n_cu++] = u;
                    }
                    continue;
                }
                if (d->in_st[q] != tu) {
                    d->in_st[q] = tu;
                    d->in_list[d->n_in++] = q;
                    d->in_comm[q] = d->in_cred[q] = 0;
                }
                d->in_cred[q] += partd__fx_output(g, u);
                if (d->nseen[u] != t) {
                    d->nseen[u] = t;
                    d->in_comm[q] += partd__fx_output(g, u);
                }
            }
        }
    for (int h = 0; h < 2; h++)
        for (uint32_t x = 0; x < rs[h]->n; x++) {
            uint32_t v = rs[h]->ops[x], tt = ++d->p_tok;
            for (uint32_t k = g->user_off[v]; k < g->user_off[v + 1]; k++) {
                uint32_t w = g->user_idx[k];
                uint32_t q = st->c_part_of[w];
                if (d->in_u[w] == t || q == PARTD_NONE)
                    continue;
                if (d->out_st[q] != tu) {
                    d->out_st[q] = tu;
                    d->out_list[d->n_out++] = q;
                    d->out_comm[q] = 0;
                }
                if (d->pst[q] != tt) {
                    d->pst[q] = tt;
                    d->out_comm[q] += partd__fx_output(g, v);
                }
            }
        }
    /* a placeholder or get_attr the union and a neighbour both read */
    for (int side = 0; side < 2; side++)
        for (uint32_t c = 0; c < d->n_cu; c++) {
            uint32_t x = d->cu[c], tt = ++d->p_tok;
            for (uint32_t k = g->user_off[x]; k < g->user_off[x + 1]; k++) {
                uint32_t q = st->c_part_of[g->user_idx[k]];
                if (q == PARTD_NONE || q == i || q == j || d->pst[q] == tt)
                    continue;
                if (side == 0 && d->in_st[q] == tu) {
                    d->pst[q] = tt;
                    d->in_comm[q] += partd__fx_output(g, x);
                } else if (side == 1 && d->out_st[q] == tu) {
                    d->pst[q] = tt;
                    d->out_comm[q] += partd__fx_output(g, x);
                }
            }
        }
}

/* Whether merging positions i and j closes a cycle: a path of two edges or
 * more from the one to the other. Such a path climbs at least two bfs
 * levels, and every partition on it lies strictly between the two. */
int partd__ca_try_closes_cycle(partd__ca_round *d, uint32_t i, uint32_t j)
{
    uint32_t x = d->lvl[i] < d->lvl[j] ? i : j, y = x == i ? j : i;
    if (d->lvl[y] < d->lvl[x] + 2)
        return 0;
    uint32_t t = ++d->d_tok, head = 0, tail = 0;
    for (uint32_t k = d->ch_off[x]; k < d->ch_off[x + 1]; k++) {
        uint32_t c = d->ch[k];
        if (c != y && d->lvl[c] < d->lvl[y] && d->desc[c] != t) {
            d->desc[c] = t;
            d->queue[tail++] = c;
        }
    }
    while (head < tail) {
        uint32_t z = d->queue[head++];
        for (uint32_t k = d->ch_off[z]; k < d->ch_off[z + 1]; k++) {
            uint32_t c = d->ch[k];
            if (c == y)
                return 1;
            if (d->lvl[c] < d->lvl[y] && d->desc[c] != t) {
                d->desc[c] = t;
                d->queue[tail++] = c;
            }
        }
    }
    return 0;
}

/* One position k of a try's mapping (positions i and j removed; j is
 * PARTD_NONE while only i is): partd__fx_map's step on left, non, ord. */
static uint32_t map_step(partd__ca_state *st, int64_t *left, uint32_t *non, uint32_t *ord,
                         uint32_t i, uint32_t j, uint32_t k, uint32_t tok)
{
    partd__ca_round *d = &st->rd;
    uint32_t lo = d->par_off[k], hi = d->par_off[k + 1];
    for (uint32_t e = lo; e < hi; e++) {
        uint32_t q = d->par[e];
        if (q < k && q != i && q != j)
            d->credit[partd__ca_dev(d, i, q)] += d->cred[e];
    }
    int64_t extra = 0;
    uint32_t c = partd__ca_round_choose(d->D, left, non, ord, d->credit, st->c_used[k], &extra);
    for (uint32_t e = lo; e < hi; e++) {
        uint32_t q = d->par[e];
        if (q < k && q != i && q != j)
            d->credit[partd__ca_dev(d, i, q)] = 0;
    }
    if (c == PARTD_NONE)
        return c;
    d->tdev[k] = c;
    d->tst[k] = tok;
    if (c != d->bdev[k])
        d->chg[d->n_chg++] = k;
    partd__ca_round_take(d->D, left, ord, c, extra);
    non[c]++;
    return c;
}

/* The children of position p marked in ev for walk w, those after p (the
 * walk is past the others) queued in its heap. */
static void mark_children(const partd__ca_round *d, partd__ca_walk *w, uint32_t *ev, uint32_t p)
{
    for (uint32_t e = d->ch_off[p]; e < d->ch_off[p + 1]; e++) {
        uint32_t c = d->ch[e];
        if (ev[c] == w->tok)
            continue;
        ev[c] = w->tok;
        if (c > p)
            partd__ca_heap_push(w->mk, &w->n_mk, c);
    }
}

/* The first position from k on where the tree t (one of rng_lo,
 * rng_hi's) holds a value under y, or P. */
static uint32_t first_below(const partd__ca_round *d, const int64_t *t, uint32_t k, int64_t y)
{
    uint32_t L = d->rng_leaves, x = k + L;
    if (k >= d->P)
        return d->P;
    while (t[x] >= y) {
        while (x & 1)
            x >>= 1;
        if (!x)
            return d->P;
        x++;
    }
    while (x < L)
        x = t[2 * x] < y ? 2 * x : 2 * x + 1;
    return x - L < d->P ? x - L : d->P;
}

/* The first position from k on where walk w's shift may change the
 * round's step: a device's dl out of that position's range, or a tie. */
static uint32_t next_suspect(const partd__ca_round *d, const partd__ca_walk *w, uint32_t k)
{
    uint32_t L = d->rng_leaves, next = d->any_next[k];
    for (uint32_t x = 0; x < w->n_sd; x++) {
        uint32_t dv = w->sd[x];
        int64_t dl = w->dl[dv];
        /* every range holds 0: a shift up can only pass its top, one down
         * its bottom */
        const int64_t *t = (dl > 0 ? d->rng_hi : d->rng_lo) + (size_t)dv * 2 * L;
        uint32_t at = first_below(d, t, k, dl > 0 ? dl : -dl);
        if (at < next)
            next = at;
    }
    return next;
}

/* w->sd from w->dl */
static void walk_shifted(const partd__ca_round *d, partd__ca_walk *w)
{
    w->n_sd = 0;
    for (uint32_t dv = 0; dv < d->D; dv++)
        if (w->dl[dv])
            w->sd[w->n_sd++] = dv;
}

/* The walk's memory left before position k into left and its order into
 * ord (kept as exact before k). Sorted by memory left, the order is the
 * walk's own unless two devices tie and one of them holds a partition:
 * devices holding nothing never moved, so they keep their first order;
 * other ties replay the round's steps since the exact order, which the
 * walk shared. */
static void walk_order(partd__ca_round *d, partd__ca_walk *w, uint32_t k, int64_t *left,
                       uint32_t *ord)
{
    uint32_t D = d->D;
    const int64_t *sl = d->s_left + (size_t)k * D;
    const uint32_t *sn = d->s_non + (size_t)k * D;
    for (uint32_t dv = 0; dv < D; dv++)
        left[dv] = sl[dv] + w->dl[dv];
    if (w->ex == k) {
        memcpy(ord, w->ox, D * sizeof *ord);
        return;
    }
    int tie = 0;
    for (uint32_t x = 0; x < D; x++) {
        uint32_t dv = x, at = x;
        for (; at > 0; at--) {
            uint32_t o = ord[at - 1];
            if (left[o] < left[dv] || (left[o] == left[dv] && d->rank0[o] < d->rank0[dv]))
                break;
            ord[at] = o;
        }
        ord[at] = dv;
    }
    for (uint32_t x = 1; x < D && !tie; x++) {
        uint32_t a = ord[x - 1], b = ord[x];
        tie = left[a] == left[b] &&
              ((int64_t)sn[a] + w->dn[a] > 0 || (int64_t)sn[b] + w->dn[b] > 0);
    }
    if (tie) {
        const int64_t *el = d->s_left + (size_t)w->ex * D;
        for (uint32_t dv = 0; dv < D; dv++)
            left[dv] = el[dv] + w->dl[dv];
        memcpy(ord, w->ox, D * sizeof *ord);
        for (uint32_t m = w->ex; m < k; m++)
            partd__ca_round_take(D, left, ord, d->bdev[m], d->bextra[m]);
    }
    memcpy(w->ox, ord, D * sizeof *ord);
    w->ex = k;
}

/* map_step on a walk: position k's step taken in full (positions i and j
 * removed; j PARTD_NONE while only i is); a device moved off the round's
 * marks its children in ev. */
static uint32_t walk_step(partd__ca_state *st, partd__ca_walk *w, uint32_t *ev, uint32_t i,
                          uint32_t j, uint32_t k)
{
    partd__ca_round *d = &st->rd;
    uint32_t D = d->D;
    walk_order(d, w, k, d->left, d->ord);
    const uint32_t *sn = d->s_non + (size_t)k * D;
    for (uint32_t dv = 0; dv < D; dv++)
        d->non[dv] = (uint32_t)((int64_t)sn[dv] + w->dn[dv]);
    uint32_t lo = d->par_off[k], hi = d->par_off[k + 1];
    for (uint32_t e = lo; e < hi; e++) {
        uint32_t q = d->par[e];
        if (q < k && q != i && q != j)
            d->credit[partd__ca_dev(d, i, q)] += d->cred[e];
    }
    int64_t extra = 0;
    uint32_t c = partd__ca_round_choose(D, d->left, d->non, d->ord, d->credit, st->c_used[k],
                                        &extra);
    for (uint32_t e = lo; e < hi; e++) {
        uint32_t q = d->par[e];
        if (q < k && q != i && q != j)
            d->credit[partd__ca_dev(d, i, q)] = 0;
    }
    if (c == PARTD_NONE)
        return c;
    d->tdev[k] = c;
    d->tst[k] = w->tok;
    if (c != d->bdev[k]) {
        d->chg[d->n_chg++] = k;
        mark_children(d, w, ev, k);
    }
    partd__ca_round_take(D, d->left, d->ord, c, extra);
    memcpy(w->ox, d->ord, D * sizeof *d->ord);
    w->ex = k + 1;
    w->dn[c]++;
    w->dn[d->bdev[k]]--;
    const int64_t *nl = d->s_left + (size_t)(k + 1) * D;
    for (uint32_t dv = 0; dv < D; dv++)
        w->dl[dv] = d->left[dv] - nl[dv];
    walk_shifted(d, w);
    return c;
}

/* Position p (i or j) left out of walk w: the round's step there undone. */
static void walk_skip(partd__ca_round *d, partd__ca_walk *w, uint32_t *ev, uint32_t p)
{
    w->dl[d->bdev[p]] += d->bextra[p];
    w->dn[d->bdev[p]]--;
    walk_shifted(d, w);
    w->ex = w->at = p + 1;
    mark_children(d, w, ev, p);
}

/* Whether the round's step at k is the walk's (no removed or moved
 * partition feeding k): the round's device keeps room, and every other
 * device still lacks it or stays strictly above it in memory left. */
static int walk_same(const partd__ca_round *d, const partd__ca_walk *w, uint32_t k)
{
    uint32_t D = d->D, c = d->bdev[k];
    const int64_t *lk = d->lack + (size_t)k * D, *sl = d->s_left + (size_t)k * D;
    if (w->dl[c] <= lk[c])
        return 0;
    int64_t lc = sl[c] + w->dl[c];
    for (uint32_t dv = 0; dv < D; dv++)
        if (dv != c && w->dl[dv] > lk[dv] && sl[dv] + w->dl[dv] <= lc)
            return 0;
    return 1;
}

/* Walk w on to position `to`: a position no removed or moved partition
 * feeds, where the walk's memory left keeps the round's step (walk_same),
 * takes the round's device without a step; the walk jumps from one
 * position that may not to the next (its heap of marks, the range trees).
 * 0 when some step finds none. */
static int walk_to(partd__ca_state *st, partd__ca_walk *w, uint32_t *ev, uint32_t i, uint32_t j,
                   uint32_t to)
{
    partd__ca_round *d = &st->rd;
    uint32_t rt = d->wr.tok;
    for (uint32_t k = w->at; k < to; k++) {
        while (w->n_mk && w->mk[0] < k)
            partd__ca_heap_pop(w->mk, &w->n_mk);
        uint32_t next = w->n_mk ? (uint32_t)w->mk[0] : d->P, suspect = next_suspect(d, w, k);
        k = suspect < next ? suspect : next;
        if (k >= to)
            break;
        if (d->evr[k] == rt || ev[k] == w->tok || !walk_same(d, w, k))
            if (walk_step(st, w, ev, i, j, k) == PARTD_NONE)
                return 0;
    }
    w->at = to;
    return 1;
}

/* Start the tries whose first partition is at position i: the mapping
 * with i removed, kept as far as the next try's second partition (the
 * tries of one i share it up to there). */
void partd__ca_try_start(partd__ca_state *st, uint32_t i)
{
    partd__ca_round *d = &st->rd;
    uint32_t D = d->D;
    d->r_at = i + 1;
    d->r_ok = i <= d->fail_at;
    if (!d->r_ok)
        return;
    d->n_chg = d->r_nchg = 0;
    if (d->fail_at == d->P) {
        partd__ca_walk *w = &d->wr;
        memset(w->dl, 0, D * sizeof *w->dl);
        memset(w->dn, 0, D * sizeof *w->dn);
        memcpy(w->ox, d->s_ord + (size_t)i * D, D * sizeof *w->ox);
        w->tok = ++d->e_tok;
        w->n_mk = 0;
        walk_skip(d, w, d->evr, i);
        return;
    }
    d->wr.tok = ++d->e_tok;
    memcpy(d->r_left, d->s_left + (size_t)i * D, D * sizeof *d->r_left);
    memcpy(d->r_non, d->s_non + (size_t)i * D, D * sizeof *d->r_non);
    memcpy(d->r_ord, d->s_ord + (size_t)i * D, D * sizeof *d->r_ord);
    d->n_chg = d->r_nchg = 0;
}

/* partd__ca_try_map when the round's mapping is whole: walks. */
static uint32_t map_walk(partd__ca_state *st, uint32_t i, uint32_t j, int64_t used)
{
    partd__ca_round *d = &st->rd;
    uint32_t D = d->D, P = d->P;
    partd__ca_walk *r = &d->wr, *t = &d->wt;
    if (d->r_ok)
        d->r_ok = walk_to(st, r, d->evr, i, PARTD_NONE, j);
    d->r_nchg = d->n_chg;
    if (!d->r_ok)
        return PARTD_NONE;
    walk_order(d, r, j, d->left, d->ord);
    memcpy(t->dl, r->dl, D * sizeof *t->dl);
    memcpy(t->dn, r->dn, D * sizeof *t->dn);
    memcpy(t->ox, r->ox, D * sizeof *t->ox);
    t->at = t->ex = j;
    t->tok = ++d->e_tok;
    memcpy(t->mk, r->mk, r->n_mk * sizeof *t->mk);
    t->n_mk = r->n_mk;
    walk_skip(d, t, d->evt, j);
    if (!walk_to(st, t, d->evt, i, j, P))
        return PARTD_NONE;
    walk_order(d, t, P, d->left, d->ord);
    const uint32_t *sn = d->s_non + (size_t)P * D;
    for (uint32_t dv = 0; dv < D; dv++)
        d->non[dv] = (uint32_t)((int64_t)sn[dv] + t->dn[dv]);
    for (uint32_t x = 0; x < d->n_in; x++) {
        uint32_t q = d->in_list[x];
        d->credit[partd__ca_dev(d, i, q)] += d->in_cred[q];
    }
    int64_t extra = 0;
    uint32_t c = partd__ca_round_choose(D, d->left, d->non, d->ord, d->credit, used, &extra);
    for (uint32_t x = 0; x < d->n_in; x++) {
        uint32_t q = d->in_list[x];
        d->credit[partd__ca_dev(d, i, q)] = 0;
    }
    return c;
}

/* FX's mapping of the list with positions i < j removed and their union
 * (used bytes) last: the shared mapping with i removed advanced to j, then
 * the rest. Returns the union's device, or PARTD_NONE when some partition
 * finds none. */
uint32_t partd__ca_try_map(partd__ca_state *st, uint32_t i, uint32_t j, int64_t used)
{
    partd__ca_round *d = &st->rd;
    uint32_t D = d->D, P = d->P;
    d->n_chg = d->r_nchg;
    d->cur_j = j;
    if (d->fail_at == P)
        return map_walk(st, i, j, used);
    while (d->r_ok && d->r_at < j) {
        d->r_ok = map_step(st, d->r_left, d->r_non, d->r_ord, i, PARTD_NONE, d->r_at,
                           d->wr.tok) != PARTD_NONE;
        d->r_at++;
    }
    d->r_nchg = d->n_chg;
    if (!d->r_ok)
        return PARTD_NONE;
    memcpy(d->left, d->r_left, D * sizeof *d->left);
    memcpy(d->non, d->r_non, D * sizeof *d->non);
    memcpy(d->ord, d->r_ord, D * sizeof *d->ord);
    d->wt.tok = ++d->e_tok;
    for (uint32_t k = j + 1; k < P; k++)
        if (map_step(st, d->left, d->non, d->ord, i, j, k, d->wt.tok) == PARTD_NONE)
            return PARTD_NONE;
    for (uint32_t x = 0; x < d->n_in; x++) {
        uint32_t q = d->in_list[x];
        d->credit[partd__ca_dev(d, i, q)] += d->in_cred[q];
    }
    int64_t extra = 0;
    uint32_t c = partd__ca_round_choose(D, d->left, d->non, d->ord, d->credit, used, &extra);
    for (uint32_t x = 0; x < d->n_in; x++) {
        uint32_t q = d->in_list[x];
        d->credit[partd__ca_dev(d, i, q)] = 0;
    }
    return c;
}
