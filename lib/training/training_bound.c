/*
 * training_bound.c - lower bounds on the step of every plan of a
 * configuration; see training_search.h.
 *
 * The step of a plan is the longest path through its actions, so every
 * path P gives len_P = sum over stages j of (its F, B, I and W counts at j)
 * x (j's durations) + (its delays crossed), a lower bound of that plan's
 * step. Relax the plan: let each unit's work go to any stage, or in parts
 * to several (contiguity and wholeness dropped), without recomputation,
 * every delay at the least live bytes of any cut. Stage durations are then
 * linear in the assignment, and for weights lambda over a set of paths,
 *   L(lambda) = min over assignments of sum_P lambda_P len_P
 *             = sum over units u of min over stages j of u's weighted cost
 *               at j + the weighted delays
 * is at most the step of every plan of the configuration: it separates by
 * unit. Any weights give a valid bound; good ones come from the game
 * between paths and assignments (the relaxation's value), played on the
 * few paths and assignments found so far (double oracle): the critical
 * path of the assignments' mix joins the paths, the assignment answering
 * the paths' weights joins the assignments, and the small game between
 * them is solved by regret matching+ (training_game.c), many cheap rounds
 * on its matrix. The paths through every rank's whole list
 * (training_paths.c) carry the fluid bound and each rank's idle.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "partd/partd.h"
#include "training_game.h"
#include "training_paths.h"
#include "training_search.h"

/* Paths and assignments kept at most; rounds of play on their matrix. */
#define MAX_PATHS 48
#define MAX_ANSWERS 48
_Static_assert(2 * PARTD_TRAINING_BOUND_RANKS <= MAX_PATHS, "room for the paths that follow devices");
#define PLAY_ROUNDS 100

double partd__training_fluid(const partd_training_model *md, const uint32_t *dev, uint32_t S)
{
    double speed = 0, fastest = 0, largest = 0;
    for (uint32_t r = 0; r < S; r++) {
        double s = md->req->devices[dev[r]].speed;
        speed += s;
        fastest = s > fastest ? s : fastest;
    }
    for (uint32_t u = 0; u < md->n_units; u++) {
        double w = md->units[u].f + md->units[u].b;
        largest = w > largest ? w : largest;
    }
    uint32_t n = md->n_units;
    double fluid = (md->pf[n] + md->pb[n]) / speed, whole = largest / fastest;
    return fluid > whole ? fluid : whole;
}

typedef struct relax {
    const partd_training_model *md;
    partd_training_cfg *c;
    uint32_t V;
    double *dmin;              /* V: the least delay across each cut */
    /* paths: counts F, B, I, W per stage and delays (5V each) */
    double *path;
    uint32_t n_paths;
    /* assignments: durations F, B, W per stage (3V each) */
    double *ans;
    uint32_t n_ans;
    double *A;                 /* MAX_PATHS x MAX_ANSWERS: len of path p under answer k */
    double *lam, *mu;          /* the game's mixes */
    double *x, *w, *tmp;       /* scratch: a mix's durations (3V), weights (10V), a path (5V) */
    double *best;              /* MAX_PATHS: the paths' weights of the best bound so far */
    double *F, *B, *I, *W, *zero;
    uint32_t *cnt, *dcnt;
    /* the device orders: speed of stage j under order o at speeds[o * V + j] */
    double *speeds;
    uint32_t n_orders;
    /* Paths 0 .. D - 1 follow a device: path d is, under order o, the path
     * through the whole list of the rank holding device d (rpath, S x 5V),
     * at rank dpos[o * D + d] (NO: not in order o, no path: length 0). The
     * others are the same under every order. Answer k is under order
     * ans_order[k]. */
    uint32_t D;
    double *rpath, *none;
    uint32_t *dpos, *ans_order;
    /* the units by kind (equal f, b and w), kind k n_of[k] times */
    uint32_t K;
    double *kf, *kb, *kw;
    uint32_t *n_of;
    /* the kinds among the units stage j may hold: wk[wk_off[j] ..
     * wk_off[j + 1]) (NULL: not kept, the stages' least content unused) */
    uint32_t *wk_off, *wk;
    /* scratch: per kind x stage, the weighted cost at speed 1; per kind the
     * least cost and its stage; per stage its kind held at least */
    double *num, *kmin;
    uint32_t *karg, *kbest, *mand, *mbest;
} relax;

static double path_len(const relax *r, const double *p, const double *d)
{
    uint32_t V = r->V;
    const double *F = d, *B = d + V, *W = d + 2 * V;
    double len = 0;
    for (uint32_t j = 0; j < V; j++)
        len += p[j] * F[j] + p[V + j] * B[j] + p[2 * V + j] * (B[j] - W[j]) +
               p[3 * V + j] * W[j] + p[4 * V + j] * r->dmin[j];
    return len;
}

/* The counts of path p under order o. */
static const double *counts(const relax *r, uint32_t p, uint32_t o)
{
    if (p >= r->D)
        return r->path + (size_t)p * 5 * r->V;
    uint32_t q = r->dpos[(size_t)o * r->D + p];
    return q == PARTD_TRAINING_NO ? r->none : r->rpath + (size_t)q * 5 * r->V;
}

static int keep_path(relax *r, const double *p);

/* The critical path of durations d (3V) joins the paths; 0 when it is
 * there already or there is no room. */
static int add_path(relax *r, const double *d, uint64_t *work)
{
    partd_training_cfg *c = r->c;
    uint32_t V = r->V;
    for (uint32_t j = 0; j < V; j++) {
        r->F[j] = d[j];
        r->B[j] = d[V + j];
        r->W[j] = d[2 * V + j];
        r->I[j] = r->B[j] - r->W[j];
    }
    partd_training_durations du = {r->F, r->B, r->I, r->zero, r->W, r->dmin, 0};
    partd__training_sim_run(&c->sim, &du, NULL);
    partd__training_sim_critical(&c->sim, &du, r->cnt, r->dcnt);
    *work += c->lists.n;
    double *p = r->tmp;
    for (uint32_t k = 0; k < 4 * V; k++)
        p[k] = r->cnt[k];
    for (uint32_t j = 0; j < V; j++)
        p[4 * V + j] = r->dcnt[j];
    return keep_path(r, p);
}

/* The slot of a new path or answer among n of at most cap (the first
 * `fixed` never replaced): the next, or, when full, the one of least
 * weight in the game's last mix (its place in the game is the least). */
static uint32_t slot(uint32_t n, uint32_t cap, uint32_t fixed, const double *weight)
{
    if (n < cap)
        return n;
    uint32_t k = fixed;
    for (uint32_t i = fixed + 1; i < cap; i++)
        k = weight[i] < weight[k] ? i : k;
    return k;
}

/* Path p (5V) joins the paths unless it is there. */
static int keep_path(relax *r, const double *p)
{
    uint32_t V = r->V;
    for (uint32_t i = r->D; i < r->n_paths; i++)
        if (!memcmp(r->path + (size_t)i * 5 * V, p, 5 * V * sizeof *p))
            return 0;
    uint32_t at = slot(r->n_paths, MAX_PATHS, r->D, r->lam);
    double *q = r->path + (size_t)at * 5 * V;
    memcpy(q, p, 5 * V * sizeof *q);
    for (uint32_t k = 0; k < r->n_ans; k++)
        r->A[at * MAX_ANSWERS + k] = path_len(r, q, r->ans + (size_t)k * 3 * V);
    r->lam[at] = 0;
    r->n_paths += at == r->n_paths;
    return 1;
}

/* For every rank, the path through all its actions under durations d
 * (3V), into r->rpath (training_paths.h). Every plan's step is at least
 * each one's length, so their mix carries the ranks' busy times (the fluid
 * bound) together with the idle before and after each. */
static int add_rank_paths(relax *r, const double *d, uint64_t *work)
{
    partd_training_cfg *c = r->c;
    uint32_t V = r->V;
    for (uint32_t j = 0; j < V; j++) {
        r->F[j] = d[j];
        r->B[j] = d[V + j];
        r->W[j] = d[2 * V + j];
        r->I[j] = r->B[j] - r->W[j];
    }
    partd_training_durations du = {r->F, r->B, r->I, r->zero, r->W, r->dmin, 0};
    partd__training_sim_run(&c->sim, &du, NULL);
    return partd__training_paths_ranks(c, &du, r->dmin, r->rpath, work);
}

static void add_answer(relax *r, const double *d, uint32_t o)
{
    uint32_t V = r->V, at = slot(r->n_ans, MAX_ANSWERS, 0, r->mu);
    double *a = r->ans + (size_t)at * 3 * V;
    memcpy(a, d, 3 * V * sizeof *a);
    r->ans_order[at] = o;
    for (uint32_t p = 0; p < r->n_paths; p++)
        r->A[p * MAX_ANSWERS + at] = path_len(r, counts(r, p, o), a);
    r->mu[at] = 0;
    r->n_ans += at == r->n_ans;
}

/* L(lam), and the relaxed plan answering lam (its durations into r->x).
 * Relaxed: every unit goes to any stage (the least weighted cost), under
 * any of the device orders, and every stage j also holds one unit of the
 * units j .. n - V + j it may hold (each stage holds one of them, distinct
 * ones: charging each stage the least extra cost of one of them over that
 * unit's least cost anywhere stays below the real plan's cost). */
static double answer(relax *r, uint64_t *work, uint32_t *order)
{
    const partd_training_model *md = r->md;
    uint32_t V = r->V, K = r->K;
    double *w = r->w, *wo = r->w + 5 * V, M = md->M, best = INFINITY;
    memset(w, 0, 5 * V * sizeof *w);
    for (uint32_t p = r->D; p < r->n_paths; p++)
        for (uint32_t k = 0; k < 5 * V; k++)
            w[k] += r->lam[p] * r->path[(size_t)p * 5 * V + k];
    uint32_t bo = 0;
    for (uint32_t o = 0; o < r->n_orders; o++) {
        /* the weights under order o: the paths that follow a device move */
        memcpy(wo, w, 5 * V * sizeof *wo);
        for (uint32_t p = 0; p < r->D; p++) {
            const double *q = counts(r, p, o);
            if (r->lam[p] > 0 && q != r->none)
                for (uint32_t k = 0; k < 5 * V; k++)
                    wo[k] += r->lam[p] * q[k];
        }
        for (uint32_t k = 0; k < K; k++)
            for (uint32_t j = 0; j < V; j++)
                r->num[(size_t)k * V + j] = wo[j] * r->kf[k] + wo[V + j] * r->kb[k] +
                                            wo[2 * V + j] * (r->kb[k] - r->kw[k]) +
                                            wo[3 * V + j] * r->kw[k];
        const double *sp = r->speeds + (size_t)o * V;
        double sum = 0;
        for (uint32_t j = 0; j < V; j++)
            sum += wo[4 * V + j] * r->dmin[j];
        for (uint32_t k = 0; k < K; k++) {
            double m = INFINITY;
            uint32_t a = 0;
            for (uint32_t j = 0; j < V; j++) {
                double t = r->num[(size_t)k * V + j] / (sp[j] * M);
                if (t < m) {
                    m = t;
                    a = j;
                }
            }
            r->kmin[k] = m;
            r->karg[k] = a;
            sum += r->n_of[k] * m;
        }
        for (uint32_t j = 0; r->wk_off && j < V; j++) {
            double e = INFINITY;
            for (uint32_t q = r->wk_off[j]; q < r->wk_off[j + 1]; q++) {
                uint32_t k = r->wk[q];
                double t = r->num[(size_t)k * V + j] / (sp[j] * M) - r->kmin[k];
                if (t < e) {
                    e = t;
                    r->mand[j] = k;
                }
            }
            sum += e;
        }
        *work += (uint64_t)(K + r->D) * V * 5;
        if (sum < best) {
            best = sum;
            bo = o;
            memcpy(r->kbest, r->karg, K * sizeof *r->kbest);
            if (r->wk_off)
                memcpy(r->mbest, r->mand, V * sizeof *r->mbest);
        }
    }
    *order = bo;
    /* weights summing past 1 (rounding) would overstate the bound */
    double tot = 0;
    for (uint32_t p = 0; p < r->n_paths; p++)
        tot += r->lam[p];
    if (tot > 1)
        best /= tot;
    const double *sp = r->speeds + (size_t)bo * V;
    memset(r->x, 0, 3 * V * sizeof *r->x);
    for (uint32_t k = 0; k < K; k++) {
        uint32_t j = r->kbest[k];
        double s = sp[j] * M / r->n_of[k];
        r->x[j] += r->kf[k] / s;
        r->x[V + j] += r->kb[k] / s;
        r->x[2 * V + j] += r->kw[k] / s;
    }
    for (uint32_t j = 0; r->wk_off && j < V; j++) {
        uint32_t k = r->mbest[j], a = r->kbest[k];
        double s = sp[j] * M, sa = sp[a] * M;
        r->x[j] += r->kf[k] / s;
        r->x[V + j] += r->kb[k] / s;
        r->x[2 * V + j] += r->kw[k] / s;
        r->x[a] -= r->kf[k] / sa;
        r->x[V + a] -= r->kb[k] / sa;
        r->x[2 * V + a] -= r->kw[k] / sa;
    }
    return best;
}

/* The stages' least content is kept while the kinds of the units each
 * stage may hold fit in this many entries. */
#define MAX_WINDOW_KINDS (1u << 16)

typedef struct kind_key {
    double f, b, w;
    uint32_t u;
} kind_key;

static int cmp_kind(const void *x, const void *y)
{
    const kind_key *a = x, *b = y;
    if (a->f != b->f)
        return a->f < b->f ? -1 : 1;
    if (a->b != b->b)
        return a->b < b->b ? -1 : 1;
    if (a->w != b->w)
        return a->w < b->w ? -1 : 1;
    return a->u < b->u ? -1 : a->u > b->u;
}

/* The units' kinds, and the kinds each stage may hold. */
static int kinds(relax *r)
{
    const partd_training_model *md = r->md;
    uint32_t n = md->n_units, V = r->V;
    kind_key *key = malloc((size_t)n * sizeof *key);
    uint32_t *kind_of = malloc((size_t)n * sizeof *kind_of);
    r->kf = malloc((size_t)n * 3 * sizeof *r->kf);
    r->n_of = calloc(n, sizeof *r->n_of);
    if (!key || !kind_of || !r->kf || !r->n_of) {
        free(key);
        free(kind_of);
        return PARTD_ENOMEM;
    }
    r->kb = r->kf + n;
    r->kw = r->kf + 2 * n;
    for (uint32_t u = 0; u < n; u++)
        key[u] = (kind_key){md->units[u].f, md->units[u].b, md->units[u].w, u};
    qsort(key, n, sizeof *key, cmp_kind);
    r->K = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (!i || key[i].f != key[i - 1].f || key[i].b != key[i - 1].b || key[i].w != key[i - 1].w) {
            r->kf[r->K] = key[i].f;
            r->kb[r->K] = key[i].b;
            r->kw[r->K] = key[i].w;
            r->K++;
        }
        kind_of[key[i].u] = r->K - 1;
        r->n_of[r->K - 1]++;
    }
    free(key);
    int rc = PARTD_ENOMEM;
    r->num = malloc((size_t)r->K * V * sizeof *r->num);
    r->kmin = malloc(r->K * sizeof *r->kmin);
    r->karg = malloc(r->K * sizeof *r->karg);
    r->kbest = malloc(r->K * sizeof *r->kbest);
    if (!r->num || !r->kmin || !r->karg || !r->kbest)
        goto out;
    rc = PARTD_OK;
    if ((uint64_t)r->K * V > MAX_WINDOW_KINDS || V > n)
        goto out;
    /* stage j holds units of j .. j + L - 1 only (every other stage holds one) */
    uint32_t L = n - V + 1, *in = calloc(r->K, sizeof *in);
    r->wk_off = malloc(((size_t)V + 1) * sizeof *r->wk_off);
    r->wk = malloc((size_t)r->K * V * sizeof *r->wk);
    r->mand = malloc((size_t)V * sizeof *r->mand);
    r->mbest = malloc((size_t)V * sizeof *r->mbest);
    if (!in || !r->wk_off || !r->wk || !r->mand || !r->mbest) {
        free(in);
        rc = PARTD_ENOMEM;
        goto out;
    }
    for (uint32_t u = 0; u < L; u++)
        in[kind_of[u]]++;
    uint32_t q = 0;
    for (uint32_t j = 0; j < V; j++) {
        r->wk_off[j] = q;
        for (uint32_t k = 0; k < r->K; k++)
            if (in[k])
                r->wk[q++] = k;
        in[kind_of[j]]--;
        if (j + L < n)
            in[kind_of[j + L]]++;
    }
    r->wk_off[V] = q;
    free(in);
out:
    free(kind_of);
    return rc;
}

/* devs: n_orders x S, the device of each rank under each order (NULL:
 * c's own order). */
static int relax_init(relax *r, const partd_training_model *md, partd_training_cfg *c,
                      const uint32_t *devs, uint32_t n_orders)
{
    memset(r, 0, sizeof *r);
    r->md = md;
    r->c = c;
    uint32_t V = r->V = c->V, S = c->S;
    if (!devs) {
        devs = c->dev;
        n_orders = 1;
    }
    r->n_orders = n_orders;
    r->speeds = malloc((size_t)n_orders * V * sizeof *r->speeds);
    r->dpos = malloc((size_t)n_orders * md->req->n_devices * sizeof *r->dpos);
    r->ans_order = calloc(MAX_ANSWERS, sizeof *r->ans_order);
    uint32_t *dev_of = malloc(md->req->n_devices * sizeof *dev_of);
    if (!r->speeds || !r->dpos || !r->ans_order || !dev_of) {
        free(dev_of);
        return PARTD_ENOMEM;
    }
    /* the devices of any order, numbered in order of appearance */
    for (uint32_t d = 0; d < md->req->n_devices; d++)
        dev_of[d] = PARTD_TRAINING_NO;
    for (uint32_t o = 0; o < n_orders; o++)
        for (uint32_t q = 0; q < S; q++)
            if (dev_of[devs[(size_t)o * S + q]] == PARTD_TRAINING_NO)
                dev_of[devs[(size_t)o * S + q]] = r->D++;
    for (uint32_t o = 0; o < n_orders; o++) {
        for (uint32_t d = 0; d < r->D; d++)
            r->dpos[(size_t)o * r->D + d] = PARTD_TRAINING_NO;
        for (uint32_t q = 0; q < S; q++)
            r->dpos[(size_t)o * r->D + dev_of[devs[(size_t)o * S + q]]] = q;
        for (uint32_t j = 0; j < V; j++)
            r->speeds[(size_t)o * V + j] = md->req->devices[devs[(size_t)o * S + c->rank[j]]].speed;
    }
    free(dev_of);
    if (r->D > PARTD_TRAINING_BOUND_RANKS)
        r->D = 0; /* no room for the paths that follow devices */
    r->dmin = calloc(V, sizeof *r->dmin);
    r->path = malloc((size_t)MAX_PATHS * 5 * V * sizeof *r->path);
    r->rpath = malloc((size_t)S * 5 * V * sizeof *r->rpath);
    r->none = calloc(5 * (size_t)V, sizeof *r->none);
    r->ans = malloc((size_t)MAX_ANSWERS * 3 * V * sizeof *r->ans);
    r->A = malloc((size_t)MAX_PATHS * MAX_ANSWERS * sizeof *r->A);
    r->lam = calloc(MAX_PATHS, sizeof *r->lam);
    r->mu = calloc(MAX_ANSWERS, sizeof *r->mu);
    r->x = calloc(3 * V, sizeof *r->x);
    r->w = calloc(10 * V, sizeof *r->w);
    r->tmp = calloc(5 * V > MAX_PATHS ? 5 * V : MAX_PATHS, sizeof *r->tmp);
    r->best = calloc(MAX_PATHS, sizeof *r->best);
    double **v[] = {&r->F, &r->B, &r->I, &r->W, &r->zero};
    int ok = 1;
    for (size_t k = 0; k < sizeof v / sizeof *v; k++)
        ok &= (*v[k] = calloc(V, sizeof(double))) != NULL;
    r->cnt = malloc(4 * (size_t)V * sizeof *r->cnt);
    r->dcnt = malloc(V * sizeof *r->dcnt);
    ok &= r->tmp && r->best && r->dmin && r->path && r->rpath && r->none && r->ans && r->A && r->lam &&
          r->mu && r->x && r->w && r->cnt && r->dcnt;
    if (ok)
        for (uint32_t j = 0; j + 1 < V; j++)
            r->dmin[j] = c->rank[j] != c->rank[j + 1]
                             ? md->ms_per_byte * (double)md->min_live / (double)md->M
                             : 0.0;
    return ok ? kinds(r) : PARTD_ENOMEM;
}

static void relax_free(relax *r)
{
    void *a[] = {r->speeds, r->dpos, r->ans_order, r->rpath, r->none, r->dmin, r->path, r->ans,  r->A,    r->lam,  r->mu,   r->x,
                 r->w,    r->F,    r->B,    r->I,    r->W,    r->zero, r->cnt,
                 r->dcnt, r->tmp, r->best, r->kf,   r->n_of, r->num,  r->kmin, r->karg, r->kbest,
                 r->wk_off, r->wk, r->mand, r->mbest};
    for (size_t k = 0; k < sizeof a / sizeof *a; k++)
        free(a[k]);
}

double partd__training_bound_orders(const partd_training_model *md, partd_training_cfg *c,
                                    const uint32_t *cut, const uint32_t *devs,
                                    uint32_t n_orders, double fluid, uint64_t budget,
                                    double stop, uint64_t *work)
{
    uint32_t V = c->V;
    uint64_t start = *work;
    double lb = fluid;
    relax r;
    if (relax_init(&r, md, c, devs, n_orders) != PARTD_OK || lb > stop)
        goto out; /* no memory for the relaxation, or no need: the fluid bound stands */
    /* the plan of cut (c's order, the first): the first answer, its ranks'
     * paths the paths that follow devices, its critical path the first
     * other path */
    partd__training_eval_stages(md, c, cut);
    memcpy(r.x, c->F, V * sizeof *r.x);
    memcpy(r.x + V, c->B, V * sizeof *r.x);
    memcpy(r.x + 2 * V, c->W, V * sizeof *r.x);
    if (r.D && add_rank_paths(&r, r.x, work) != PARTD_OK)
        goto out;
    r.n_paths = r.D;
    add_answer(&r, r.x, 0);
    add_path(&r, r.x, work);
    /* the best weights so far: first each device's path by its speed (the
     * fluid bound, and the idle before and after each rank) */
    double *best = r.best;
    memset(best, 0, MAX_PATHS * sizeof *best);
    double speed = 0;
    for (uint32_t d = 0; d < r.D; d++)
        for (uint32_t q = 0; q < c->S; q++)
            if (r.dpos[d] == q) {
                best[d] = md->req->devices[c->dev[q]].speed;
                speed += best[d];
            }
    for (uint32_t d = 0; d < r.D; d++)
        best[d] /= speed;
    if (r.D) {
        uint32_t o;
        memcpy(r.lam, best, MAX_PATHS * sizeof *best);
        double L = answer(&r, work, &o);
        lb = L > lb ? L : lb;
        add_answer(&r, r.x, o);
    }
    double best_L = lb;
    for (uint32_t it = 0; *work - start < budget && lb <= stop; it++) {
        double game = partd__training_game_play(r.A, MAX_ANSWERS, r.n_paths, r.n_ans,
                                                PLAY_ROUNDS, r.lam, r.mu);
        *work += (uint64_t)PLAY_ROUNDS * r.n_paths * r.n_ans / 8;
        uint32_t o;
        /* halfway between the game's weights and the best so far, and the
         * game's: the better one answers */
        memcpy(r.tmp, r.lam, MAX_PATHS * sizeof *r.lam);
        for (uint32_t p = 0; p < MAX_PATHS; p++)
            r.lam[p] = (r.lam[p] + best[p]) / 2;
        double H = answer(&r, work, &o);
        if (H > best_L) {
            best_L = H;
            memcpy(best, r.lam, MAX_PATHS * sizeof *best);
        }
        lb = H > lb ? H : lb;
        memcpy(r.lam, r.tmp, MAX_PATHS * sizeof *r.lam);
        double L = answer(&r, work, &o);
        if (L > best_L) {
            best_L = L;
            memcpy(best, r.lam, MAX_PATHS * sizeof *best);
        }
        lb = L > lb ? L : lb;
        int grew = 0;
        if (L < game * (1 - 1e-9)) {
            add_answer(&r, r.x, o);
            grew = 1;
        }
        /* the answers' mix, and its critical path */
        memset(r.x, 0, 3 * V * sizeof *r.x);
        for (uint32_t k = 0; k < r.n_ans; k++)
            for (uint32_t q = 0; q < 3 * V; q++)
                r.x[q] += r.mu[k] * r.ans[(size_t)k * 3 * V + q];
        grew |= add_path(&r, r.x, work);
        if (!grew)
            break;
    }
out:
    relax_free(&r);
    return lb;
}

double partd__training_bound(const partd_training_model *md, partd_training_cfg *c,
                             const uint32_t *cut, uint32_t iters, double stop, uint64_t *work)
{
    /* as many rounds as the relaxation of one order takes in iters
     * rounds at most: the answers' pricing and the game on full matrices */
    uint64_t round = (uint64_t)md->n_units * c->V * 5 + c->lists.n * 2 +
                     (uint64_t)PLAY_ROUNDS * MAX_PATHS * MAX_ANSWERS / 8;
    return partd__training_bound_orders(md, c, cut, NULL, 1,
                                        partd__training_fluid(md, c->dev, c->S),
                                        (uint64_t)iters * round, stop, work);
}
