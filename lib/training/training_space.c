/*
 * training_space.c - the configurations of a training request; see
 * training_space.h.
 */
#include "training_space.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "partd/partd.h"

static int add_desc(partd_training_space *sp, partd_training_schedule s, uint32_t v, uint32_t S,
                    const uint32_t *dev, uint32_t combo, uint32_t seq, uint32_t nseq)
{
    if (partd__training_grow(&sp->d, sizeof *sp->d, &sp->cap, (size_t)sp->n + 1) != PARTD_OK ||
        partd__training_grow(&sp->dev, sizeof *sp->dev, &sp->devcap, sp->ndev + S) != PARTD_OK)
        return PARTD_ENOMEM;
    memcpy(sp->dev + sp->ndev, dev, S * sizeof *dev);
    sp->d[sp->n++] =
        (partd_training_desc){(uint8_t)s, (uint8_t)v, S, (uint32_t)sp->ndev, combo, seq, nseq};
    sp->ndev += S;
    return PARTD_OK;
}

/* The v values of schedule s with S ranks. */
static uint32_t v_range(const partd_training_model *md, partd_training_schedule s, uint32_t S,
                        uint32_t *lo, uint32_t *hi)
{
    uint32_t fixed = partd_training_schedule_v(s, 0);
    if (fixed) {
        *lo = *hi = fixed;
    } else if (md->opt->virtual_stages) {
        *lo = *hi = md->opt->virtual_stages;
    } else {
        *lo = 1;
        *hi = PARTD_TRAINING_MAX_VIRTUAL;
    }
    while (*hi >= *lo && (uint64_t)S * *hi > md->n_units)
        (*hi)--;
    return *hi >= *lo;
}

/* The device sequences of S ranks: given, or every sequence of classes. */
typedef struct seqs {
    uint32_t *dev;             /* count * S */
    uint32_t count, S;
} seqs;

static int seq_push(seqs *q, const uint32_t *dev, size_t *cap)
{
    if (partd__training_grow(&q->dev, sizeof *q->dev, cap, ((size_t)q->count + 1) * q->S) != PARTD_OK)
        return PARTD_ENOMEM;
    memcpy(q->dev + (size_t)q->count * q->S, dev, q->S * sizeof *dev);
    q->count++;
    return PARTD_OK;
}

/* Depth-first over class sequences in lexicographic order, each class's
 * devices in list order; stops (partial) past limit. */
static int class_seqs(const partd_training_model *md, seqs *q, uint32_t *used, uint32_t *cur,
                      uint32_t pos, size_t *cap, uint32_t limit, int *partial)
{
    if (pos == q->S)
        return seq_push(q, cur, cap);
    for (uint32_t c = 0; c < md->n_classes; c++) {
        if (used[c] == md->cls_count[c])
            continue;
        if (q->count >= limit) {
            *partial = 1;
            return PARTD_OK;
        }
        cur[pos] = md->cls_dev[md->cls_dev_off[c] + used[c]];
        used[c]++;
        int rc = class_seqs(md, q, used, cur, pos + 1, cap, limit, partial);
        used[c]--;
        if (rc != PARTD_OK)
            return rc;
    }
    return PARTD_OK;
}

static int cmp_speed_desc(const void *x, const void *y, void *ctx)
{
    const partd_request *req = ctx;
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    double sa = req->devices[a].speed, sb = req->devices[b].speed;
    if (sa != sb)
        return sa > sb ? -1 : 1;
    return a < b ? -1 : a > b;
}

/* When the sequences were cut: the fastest S devices in both orders. */
static int extra_seqs(const partd_training_model *md, seqs *q, size_t *cap)
{
    uint32_t n = md->req->n_devices, S = q->S;
    uint32_t *all = malloc(n * sizeof *all), *rev = malloc(S * sizeof *rev);
    if (!all || !rev) {
        free(all);
        free(rev);
        return PARTD_ENOMEM;
    }
    for (uint32_t d = 0; d < n; d++)
        all[d] = d;
    for (uint32_t i = 1; i < n; i++) /* insertion sort: stable, no context qsort */
        for (uint32_t k = i; k > 0 && cmp_speed_desc(&all[k], &all[k - 1], (void *)md->req) < 0; k--) {
            uint32_t t = all[k];
            all[k] = all[k - 1];
            all[k - 1] = t;
        }
    for (uint32_t r = 0; r < S; r++)
        rev[r] = all[S - 1 - r];
    int rc = seq_push(q, all, cap);
    if (rc == PARTD_OK)
        rc = seq_push(q, rev, cap);
    free(all);
    free(rev);
    return rc;
}

static int device_seqs(const partd_training_model *md, uint32_t S, uint32_t limit, seqs *q,
                       int *partial)
{
    memset(q, 0, sizeof *q);
    q->S = S;
    size_t cap = 0;
    uint32_t *cur = malloc(S * sizeof *cur);
    uint32_t *used = calloc(md->n_classes, sizeof *used);
    int rc = cur && used ? PARTD_OK : PARTD_ENOMEM;
    if (rc == PARTD_OK && !md->opt->device_order_auto) {
        for (uint32_t r = 0; r < S; r++)
            cur[r] = r;
        rc = seq_push(q, cur, &cap);
    } else if (rc == PARTD_OK) {
        int cut = 0;
        rc = class_seqs(md, q, used, cur, 0, &cap, limit, &cut);
        if (rc == PARTD_OK && cut) {
            *partial = 1;
            rc = extra_seqs(md, q, &cap);
        }
    }
    free(cur);
    free(used);
    return rc;
}

/* The fluid bound of the fastest S devices: below every left-out sequence. */
static double fastest_fluid(const partd_training_model *md, uint32_t S)
{
    uint32_t n = md->req->n_devices;
    uint32_t *dev = malloc(n * sizeof *dev);
    uint8_t *used = calloc(n, 1);
    double lb = 0;
    if (dev && used) {
        for (uint32_t k = 0; k < S; k++) {
            uint32_t best = n;
            for (uint32_t d = 0; d < n; d++)
                if (!used[d] &&
                    (best == n || md->req->devices[d].speed > md->req->devices[best].speed))
                    best = d;
            used[best] = 1;
            dev[k] = best;
        }
        lb = partd__training_fluid(md, dev, S);
    }
    free(dev);
    free(used);
    return lb;
}

static int enumerate(partd_training_space *sp)
{
    const partd_training_model *md = sp->md;
    const partd_training_options *o = md->opt;
    uint32_t n_dev = md->req->n_devices, max_s = n_dev < md->n_units ? n_dev : md->n_units;
    uint32_t lo = o->stages ? o->stages : 1, hi = o->stages ? o->stages : max_s;
    sp->partial_lb = INFINITY;
    /* (ranks, schedule, v) combinations, to share PARTD_TRAINING_SPACE_CAP among */
    uint64_t combos = 0;
    for (uint32_t S = lo; S <= hi; S++)
        for (int s = 0; s < PARTD_TRAINING_SCHEDULE_COUNT; s++) {
            uint32_t vlo, vhi;
            if ((o->schedules >> s & 1) && v_range(md, s, S, &vlo, &vhi))
                for (uint32_t v = vlo; v <= vhi; v++)
                    combos += partd_training_schedule_allows(s, S, v, md->M);
        }
    uint64_t share = combos ? PARTD_TRAINING_SPACE_CAP / combos : PARTD_TRAINING_SPACE_SEQ_CAP;
    uint32_t limit = share < PARTD_TRAINING_SPACE_SEQ_MIN   ? PARTD_TRAINING_SPACE_SEQ_MIN
                     : share > PARTD_TRAINING_SPACE_SEQ_CAP ? PARTD_TRAINING_SPACE_SEQ_CAP
                                                            : (uint32_t)share;
    for (uint32_t S = lo; S <= hi; S++) {
        seqs q;
        int partial = 0;
        int rc = device_seqs(md, S, limit, &q, &partial);
        if (partial) {
            sp->partial = 1;
            double f = fastest_fluid(md, S);
            sp->partial_lb = f < sp->partial_lb ? f : sp->partial_lb;
        }
        for (int s = 0; s < PARTD_TRAINING_SCHEDULE_COUNT && rc == PARTD_OK; s++) {
            uint32_t vlo, vhi;
            if (!(o->schedules >> s & 1) || !v_range(md, s, S, &vlo, &vhi))
                continue;
            for (uint32_t v = vlo; v <= vhi && rc == PARTD_OK; v++) {
                if (!partd_training_schedule_allows(s, S, v, md->M))
                    continue;
                for (uint32_t k = 0; k < q.count && rc == PARTD_OK; k++)
                    rc = add_desc(sp, s, v, S, q.dev + (size_t)k * S, sp->n_combos, k, q.count);
                sp->n_combos++;
            }
        }
        free(q.dev);
        if (rc != PARTD_OK)
            return rc;
    }
    return PARTD_OK;
}

int partd__training_space_build(const partd_training_space *sp, uint32_t k,
                                partd_training_cfg *c)
{
    const partd_training_desc *d = &sp->d[k];
    return partd__training_cfg_build(c, sp->md, d->sched, d->S, d->v, sp->dev + d->dev_off);
}

uint64_t partd__training_space_splits(uint32_t n, uint32_t V, uint64_t limit)
{
    if (V > n)
        return 0;
    uint64_t r = 1;
    uint32_t k = V - 1 < n - V ? V - 1 : n - V;
    for (uint32_t i = 1; i <= k; i++) {
        r = r * (n - 1 - k + i) / i;
        if (r > limit)
            return limit + 1;
    }
    return r;
}

int partd__training_space_enumerate(partd_training_space *sp, const partd_training_model *md,
                                    const partd_cancel *cancel)
{
    memset(sp, 0, sizeof *sp);
    sp->md = md;
    sp->cancel = cancel;
    return enumerate(sp);
}

void partd__training_space_free(partd_training_space *sp)
{
    free(sp->d);
    free(sp->dev);
    memset(sp, 0, sizeof *sp);
}
