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
 * them is solved by regret matching+, many cheap rounds on its matrix.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "partd/partd.h"
#include "training_search.h"

/* Paths and assignments kept at most; rounds of play on their matrix. */
#define MAX_PATHS 48
#define MAX_ANSWERS 48
#define PLAY_ROUNDS 1000

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
    double *x, *w;             /* scratch: a mix's durations (3V), weights (5V) */
    double *F, *B, *I, *W, *zero;
    uint32_t *cnt, *dcnt;
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
    if (r->n_paths == MAX_PATHS)
        return 0;
    double *p = r->path + (size_t)r->n_paths * 5 * V;
    for (uint32_t k = 0; k < 4 * V; k++)
        p[k] = r->cnt[k];
    for (uint32_t j = 0; j < V; j++)
        p[4 * V + j] = r->dcnt[j];
    for (uint32_t q = 0; q < r->n_paths; q++)
        if (!memcmp(r->path + (size_t)q * 5 * V, p, 5 * V * sizeof *p))
            return 0;
    for (uint32_t k = 0; k < r->n_ans; k++)
        r->A[r->n_paths * MAX_ANSWERS + k] = path_len(r, p, r->ans + (size_t)k * 3 * V);
    r->n_paths++;
    return 1;
}

static int add_answer(relax *r, const double *d)
{
    uint32_t V = r->V;
    if (r->n_ans == MAX_ANSWERS)
        return 0;
    double *a = r->ans + (size_t)r->n_ans * 3 * V;
    memcpy(a, d, 3 * V * sizeof *a);
    for (uint32_t p = 0; p < r->n_paths; p++)
        r->A[p * MAX_ANSWERS + r->n_ans] = path_len(r, r->path + (size_t)p * 5 * V, a);
    r->n_ans++;
    return 1;
}

/* L(lam), and the assignment answering lam (its durations into r->x). */
static double answer(relax *r, uint64_t *work)
{
    const partd_training_model *md = r->md;
    const partd_training_cfg *c = r->c;
    uint32_t V = r->V;
    double *w = r->w, M = md->M, sum = 0;
    memset(w, 0, 5 * V * sizeof *w);
    for (uint32_t p = 0; p < r->n_paths; p++)
        for (uint32_t k = 0; k < 5 * V; k++)
            w[k] += r->lam[p] * r->path[(size_t)p * 5 * V + k];
    memset(r->x, 0, 3 * V * sizeof *r->x);
    for (uint32_t u = 0; u < md->n_units; u++) {
        const partd_training_unit *un = &md->units[u];
        double best = INFINITY;
        uint32_t bj = 0;
        for (uint32_t j = 0; j < V; j++) {
            double t = (w[j] * un->f + w[V + j] * un->b + w[2 * V + j] * (un->b - un->w) +
                        w[3 * V + j] * un->w) /
                       (c->speed[j] * M);
            if (t < best) {
                best = t;
                bj = j;
            }
        }
        sum += best;
        double s = c->speed[bj] * M;
        r->x[bj] += un->f / s;
        r->x[V + bj] += un->b / s;
        r->x[2 * V + bj] += un->w / s;
    }
    for (uint32_t j = 0; j < V; j++)
        sum += w[4 * V + j] * r->dmin[j];
    *work += (uint64_t)md->n_units * V;
    return sum;
}

/* A mix from positive regrets q[0..n) (uniform when none). */
static void mix_of(const double *q, uint32_t n, double *x)
{
    double s = 0;
    for (uint32_t i = 0; i < n; i++)
        s += q[i];
    for (uint32_t i = 0; i < n; i++)
        x[i] = s > 0 ? q[i] / s : 1.0 / n;
}

/* u = the payoffs of each row (rows = 1) or column (rows = 0) of A against
 * the other side's mix x; returns what mix y gets against x (u . y). The
 * regrets q move by sign x (u - that), kept positive. */
static double regrets(const relax *r, int rows, const double *x, const double *y, double *u,
                      double *q, double sign)
{
    uint32_t n = rows ? r->n_paths : r->n_ans, m = rows ? r->n_ans : r->n_paths;
    double v = 0;
    for (uint32_t i = 0; i < n; i++) {
        double s = 0;
        for (uint32_t k = 0; k < m; k++)
            s += (rows ? r->A[i * MAX_ANSWERS + k] : r->A[k * MAX_ANSWERS + i]) * x[k];
        u[i] = s;
        v += y[i] * s;
    }
    for (uint32_t i = 0; i < n; i++)
        q[i] = fmax(0, q[i] + sign * (u[i] - v));
    return v;
}

/* The paths x answers game by regret matching+ (alternating, the mixes
 * averaged with weight t): lam and mu its players' mixes; the value the
 * paths' mix guarantees against every answer kept. */
static double play(relax *r)
{
    uint32_t P = r->n_paths, K = r->n_ans;
    double *qr = calloc(P, sizeof *qr), *qc = calloc(K, sizeof *qc);
    double *xr = calloc(P, sizeof *xr), *xc = calloc(K, sizeof *xc);
    double *u = calloc(P > K ? P : K, sizeof *u);
    double value = INFINITY;
    if (!qr || !qc || !xr || !xc || !u)
        goto out;
    memset(r->lam, 0, P * sizeof *r->lam);
    memset(r->mu, 0, K * sizeof *r->mu);
    for (uint32_t t = 1; t <= PLAY_ROUNDS; t++) {
        /* the paths' regrets against the answers' mix, then the answers'
         * (a minimiser's) against the paths' new mix */
        mix_of(qc, K, xc);
        mix_of(qr, P, xr);
        regrets(r, 1, xc, xr, u, qr, 1);
        mix_of(qr, P, xr);
        regrets(r, 0, xr, xc, u, qc, -1);
        for (uint32_t q = 0; q < P; q++)
            r->lam[q] += t * xr[q];
        for (uint32_t k = 0; k < K; k++)
            r->mu[k] += t * xc[k];
    }
    double total = (double)PLAY_ROUNDS * (PLAY_ROUNDS + 1) / 2;
    for (uint32_t q = 0; q < P; q++)
        r->lam[q] /= total;
    for (uint32_t k = 0; k < K; k++)
        r->mu[k] /= total;
    /* what lam guarantees against the answers kept */
    regrets(r, 0, r->lam, r->mu, u, qc, 0);
    for (uint32_t k = 0; k < K; k++)
        value = u[k] < value ? u[k] : value;
out:
    free(qr);
    free(qc);
    free(xr);
    free(xc);
    free(u);
    return value;
}

static int relax_init(relax *r, const partd_training_model *md, partd_training_cfg *c)
{
    memset(r, 0, sizeof *r);
    r->md = md;
    r->c = c;
    uint32_t V = r->V = c->V;
    r->dmin = calloc(V, sizeof *r->dmin);
    r->path = malloc((size_t)MAX_PATHS * 5 * V * sizeof *r->path);
    r->ans = malloc((size_t)MAX_ANSWERS * 3 * V * sizeof *r->ans);
    r->A = malloc((size_t)MAX_PATHS * MAX_ANSWERS * sizeof *r->A);
    r->lam = calloc(MAX_PATHS, sizeof *r->lam);
    r->mu = calloc(MAX_ANSWERS, sizeof *r->mu);
    r->x = calloc(3 * V, sizeof *r->x);
    r->w = calloc(5 * V, sizeof *r->w);
    double **v[] = {&r->F, &r->B, &r->I, &r->W, &r->zero};
    int ok = 1;
    for (size_t k = 0; k < sizeof v / sizeof *v; k++)
        ok &= (*v[k] = calloc(V, sizeof(double))) != NULL;
    r->cnt = malloc(4 * (size_t)V * sizeof *r->cnt);
    r->dcnt = malloc(V * sizeof *r->dcnt);
    return ok && r->dmin && r->path && r->ans && r->A && r->lam && r->mu && r->x && r->w &&
                   r->cnt && r->dcnt
               ? PARTD_OK
               : PARTD_ENOMEM;
}

static void relax_free(relax *r)
{
    void *a[] = {r->dmin, r->path, r->ans, r->A, r->lam, r->mu, r->x, r->w,
                 r->F, r->B, r->I, r->W, r->zero, r->cnt, r->dcnt};
    for (size_t k = 0; k < sizeof a / sizeof *a; k++)
        free(a[k]);
}

double partd__training_bound(const partd_training_model *md, partd_training_cfg *c,
                             const uint32_t *cut, uint32_t iters, double stop, uint64_t *work)
{
    uint32_t V = c->V;
    double lb = partd__training_fluid(md, c->dev, c->S);
    relax r;
    if (relax_init(&r, md, c) != PARTD_OK || lb > stop)
        goto out; /* no memory for the relaxation, or no need: the fluid bound stands */
    for (uint32_t j = 0; j + 1 < V; j++)
        r.dmin[j] = c->rank[j] != c->rank[j + 1]
                        ? md->ms_per_byte * (double)md->min_live / (double)md->M
                        : 0.0;
    /* the plan of cut: the first answer, its critical path the first path */
    partd__training_eval_stages(md, c, cut);
    memcpy(r.x, c->F, V * sizeof *r.x);
    memcpy(r.x + V, c->B, V * sizeof *r.x);
    memcpy(r.x + 2 * V, c->W, V * sizeof *r.x);
    add_answer(&r, r.x);
    add_path(&r, r.x, work);
    for (uint32_t it = 0; it < iters && lb <= stop; it++) {
        double game = play(&r);
        *work += (uint64_t)PLAY_ROUNDS * r.n_paths * r.n_ans / 8;
        double L = answer(&r, work);
        lb = L > lb ? L : lb;
        int grew = L < game * (1 - 1e-9) && add_answer(&r, r.x);
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
