/*
 * sac_milp.c - PyTorch's sac_milp model on COIN-OR CBC; see sac_milp.h.
 *
 * Variables per module j that may be checkpointed (the others have y_j = 0,
 * hence r_j = d_j = rcp_j = 0, and need no columns):
 *   y_j in {0,1}, r_j in [0,1], rcp_j >= 0 (recompute fraction),
 *   s_j in [0,1]  number of checkpointed modules on the path from the root to
 *                 j: s_j = s_e + y_j for the nearest eligible ancestor e, so
 *                 s_j <= 1 forbids nested checkpointing with O(n) rows (and is
 *                 the stronger clique form of PyTorch's pairwise rows),
 *   E_j           running sum of discards d over eligible modules up to j in
 *                 forward post-order: E_j = E_prev + ACM_j r_j - (ACM_j - IA_j) y_j,
 *                 so that "sum of d over modules earlier in post-order" is one
 *                 variable instead of an O(n) expression per module.
 * and one variable `peak`. Rows:
 *   r_j <= y_j,  r_j >= (1 - IA_j / ACM_j) y_j,
 *   rcp_j >= slope_k r_j + intercept_k y_j   (per segment k: exact, no big-M;
 *                                             at y_j = 0 it reads rcp_j >= 0),
 *   peak + E_last(i) >= act_i + fixed_i / world_size  for every module i, where
 *        E_last(i) is the running sum just before i; modules sharing E_last(i)
 *        share one row with the largest right-hand side,
 *   objective sum_j sac_runtime_j rcp_j (or `peak` for the min-peak problem).
 * Memory is scaled from bytes to GiB (an exact power-of-two scaling) so that
 * CBC's absolute tolerances act on numbers near 1; times stay in ms.
 */
#include "sac_milp.h"

#include <coin/Cbc_C_Interface.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cancel.h"
#include "partd.h"

#define GIB 1073741824.0
#define INF 1e30

/* ---- a small column/row/triplet builder -------------------------------- */

typedef struct lp_builder {
    int n_cols, n_rows, n_nz;
    int cap_cols, cap_rows, cap_nz;
    double *col_lb, *col_ub, *obj;
    uint8_t *is_int;
    double *row_lb, *row_ub;
    int *nz_row, *nz_col;
    double *nz_val;
    int oom;
} lp_builder;

static int grow(void **p, int *cap, int need, size_t size)
{
    if (need <= *cap)
        return 0;
    int nc = *cap ? *cap : 64;
    while (nc < need)
        nc *= 2;
    void *q = realloc(*p, (size_t)nc * size);
    if (!q)
        return -1;
    *p = q;
    *cap = nc;
    return 0;
}

static int add_col(lp_builder *b, double lb, double ub, double obj, int is_int)
{
    int cap = b->cap_cols, ok = 1;
    int c = cap;
    ok &= grow((void **)&b->col_lb, &c, b->n_cols + 1, sizeof(double)) == 0;
    c = cap;
    ok &= grow((void **)&b->col_ub, &c, b->n_cols + 1, sizeof(double)) == 0;
    c = cap;
    ok &= grow((void **)&b->obj, &c, b->n_cols + 1, sizeof(double)) == 0;
    c = cap;
    ok &= grow((void **)&b->is_int, &c, b->n_cols + 1, 1) == 0;
    if (!ok) {
        b->oom = 1;
        return -1;
    }
    b->cap_cols = c;
    b->col_lb[b->n_cols] = lb;
    b->col_ub[b->n_cols] = ub;
    b->obj[b->n_cols] = obj;
    b->is_int[b->n_cols] = (uint8_t)is_int;
    return b->n_cols++;
}

/* A row lb <= sum val[k] x[col[k]] <= ub. */
static int add_row(lp_builder *b, double lb, double ub, int n, const int *cols,
                   const double *vals)
{
    int cap = b->cap_rows, c = cap, ok = 1;
    ok &= grow((void **)&b->row_lb, &c, b->n_rows + 1, sizeof(double)) == 0;
    c = cap;
    ok &= grow((void **)&b->row_ub, &c, b->n_rows + 1, sizeof(double)) == 0;
    int capn = b->cap_nz, cn = capn;
    ok &= grow((void **)&b->nz_row, &cn, b->n_nz + n, sizeof(int)) == 0;
    cn = capn;
    ok &= grow((void **)&b->nz_col, &cn, b->n_nz + n, sizeof(int)) == 0;
    cn = capn;
    ok &= grow((void **)&b->nz_val, &cn, b->n_nz + n, sizeof(double)) == 0;
    if (!ok) {
        b->oom = 1;
        return -1;
    }
    b->cap_rows = c;
    b->cap_nz = cn;
    for (int k = 0; k < n; k++) {
        if (vals[k] == 0)
            continue;
        b->nz_row[b->n_nz] = b->n_rows;
        b->nz_col[b->n_nz] = cols[k];
        b->nz_val[b->n_nz] = vals[k];
        b->n_nz++;
    }
    b->row_lb[b->n_rows] = lb;
    b->row_ub[b->n_rows] = ub;
    return b->n_rows++;
}

static void builder_free(lp_builder *b)
{
    free(b->col_lb);
    free(b->col_ub);
    free(b->obj);
    free(b->is_int);
    free(b->row_lb);
    free(b->row_ub);
    free(b->nz_row);
    free(b->nz_col);
    free(b->nz_val);
}

/* Loads the builder into a new CBC model (column-major), NULL on ENOMEM. */
static Cbc_Model *load(const lp_builder *b)
{
    int *start = calloc((size_t)b->n_cols + 1, sizeof *start);
    int *index = malloc(((size_t)b->n_nz + 1) * sizeof *index);
    double *value = malloc(((size_t)b->n_nz + 1) * sizeof *value);
    Cbc_Model *m = NULL;
    if (!start || !index || !value)
        goto done;
    for (int k = 0; k < b->n_nz; k++)
        start[b->nz_col[k] + 1]++;
    for (int c = 0; c < b->n_cols; c++)
        start[c + 1] += start[c];
    int *fill = calloc((size_t)b->n_cols + 1, sizeof *fill);
    if (!fill)
        goto done;
    memcpy(fill, start, ((size_t)b->n_cols + 1) * sizeof *fill);
    for (int k = 0; k < b->n_nz; k++) { /* rows ascending within a column */
        int pos = fill[b->nz_col[k]]++;
        index[pos] = b->nz_row[k];
        value[pos] = b->nz_val[k];
    }
    free(fill);
    m = Cbc_newModel();
    if (!m)
        goto done;
    Cbc_loadProblem(m, b->n_cols, b->n_rows, start, index, value, b->col_lb,
                    b->col_ub, b->obj, b->row_lb, b->row_ub);
    for (int c = 0; c < b->n_cols; c++)
        if (b->is_int[c])
            Cbc_setInteger(m, c);
done:
    free(start);
    free(index);
    free(value);
    return m;
}

/* Single-threaded, fixed seeds, silent: the same model gives the same answer
 * on every run (unless the time limit cuts it). The limit is set by run(). */
static void configure(Cbc_Model *m, double relative_gap)
{
    Cbc_setLogLevel(m, 0);
    Cbc_setParameter(m, "log", "0");
    Cbc_setParameter(m, "slog", "0");
    Cbc_setParameter(m, "threads", "0");
    Cbc_setParameter(m, "randomSeed", "1234567");
    Cbc_setParameter(m, "randomCbcSeed", "1234567");
    Cbc_setParameter(m, "timeMode", "elapsed");
    Cbc_setAllowableFractionGap(m, relative_gap);
    Cbc_setAllowableGap(m, 1e-9);
}

/* CBC's driver (CbcMain0/CbcMain1, behind Cbc_solve) keeps state in globals
 * and is not safe to run in two threads at once (coin-or/Cbc#332), while the
 * daemon plans several jobs at once: solves take turns on this lock. It is
 * the library's only global, and it guards the solver's, not partd's, state. */
static pthread_mutex_t solver_lock = PTHREAD_MUTEX_INITIALIZER;

/* How often a thread waiting for the solver looks at its cancel flag: a job
 * cancelled while another job's solve holds the lock stops within this. */
#define LOCK_POLL_NS 20000000L

static struct timespec realtime_after(int64_t ns)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    int64_t total = (int64_t)t.tv_nsec + ns;
    t.tv_sec += (time_t)(total / 1000000000L);
    t.tv_nsec = (long)(total % 1000000000L);
    return t;
}

int partd_sac_solver_acquire(double time_limit_s, const partd_cancel *cancel)
{
    int64_t end = partd_monotonic_ns() + (int64_t)(time_limit_s * 1e9);
    for (;;) {
        int64_t left = end - partd_monotonic_ns();
        if (left <= 0)
            return PARTD_ETIMEOUT;
        struct timespec until = realtime_after(left < LOCK_POLL_NS ? left : LOCK_POLL_NS);
        int rc = pthread_mutex_timedlock(&solver_lock, &until);
        if (rc != ETIMEDOUT)
            return rc == 0 ? PARTD_OK : PARTD_EINTERNAL;
        rc = partd_cancel_check(cancel);
        if (rc != PARTD_OK)
            return rc;
    }
}

void partd_sac_solver_release(void)
{
    pthread_mutex_unlock(&solver_lock);
}

/* Solves under the lock with what is left of time_limit_s (wall clock). */
static int solve_locked(Cbc_Model *m, double time_limit_s, const partd_cancel *cancel)
{
    int64_t start = partd_monotonic_ns();
    if (time_limit_s <= 0 || partd_sac_solver_acquire(time_limit_s, cancel) != PARTD_OK)
        return -1;
    double left = time_limit_s - (double)(partd_monotonic_ns() - start) / 1e9;
    if (left < 0.001)
        left = 0.001;
    char buf[64];
    snprintf(buf, sizeof buf, "%.6f", left);
    Cbc_setParameter(m, "sec", buf);
    Cbc_setMaximumSeconds(m, left);
    Cbc_solve(m);
    partd_sac_solver_release();
    return 0;
}

static double relative_gap(double obj, double bound)
{
    double diff = obj - bound;
    if (diff <= 1e-9 * (fabs(obj) > 1 ? fabs(obj) : 1))
        return 0;
    return diff / (fabs(obj) > 1e-12 ? fabs(obj) : 1e-12);
}

/* Runs CBC; fills status/objective/gap and returns the column solution or
 * NULL (no solution). */
static const double *run(Cbc_Model *m, double time_limit_s, const partd_cancel *cancel,
                         partd_sac_solve_status *status, double *objective,
                         double *gap)
{
    *objective = 0;
    *gap = 0;
    if (solve_locked(m, time_limit_s, cancel) != 0) {
        /* No turn at the solver in time, or cancelled while waiting. */
        *status = PARTD_SAC_SOLVED_NONE;
        return NULL;
    }
    if (Cbc_isProvenInfeasible(m)) {
        *status = PARTD_SAC_SOLVED_INFEASIBLE;
        return NULL;
    }
    const double *x = Cbc_bestSolution(m);
    if (!x && Cbc_isProvenOptimal(m))
        x = Cbc_getColSolution(m); /* a model without integer columns */
    if (!x) {
        *status = PARTD_SAC_SOLVED_NONE;
        return NULL;
    }
    *objective = Cbc_getObjValue(m);
    double bound = Cbc_getBestPossibleObjValue(m);
    if (Cbc_getNumIntegers(m) == 0 || bound >= *objective)
        *gap = 0;
    else
        *gap = relative_gap(*objective, bound);
    *status = *gap == 0 && Cbc_isProvenOptimal(m) ? PARTD_SAC_SOLVED_OPTIMAL
                                                  : PARTD_SAC_SOLVED_FEASIBLE;
    return x;
}

/* ---- the module-level model --------------------------------------------- */

typedef struct cols {
    int *y, *r, *rcp, *s, *e; /* per module, -1 when absent */
    int peak;
} cols;

static int cols_alloc(cols *c, uint32_t n)
{
    int **arrs[5] = { &c->y, &c->r, &c->rcp, &c->s, &c->e };
    for (int k = 0; k < 5; k++) {
        *arrs[k] = malloc((n ? n : 1) * sizeof(int));
        if (!*arrs[k])
            return -1;
        for (uint32_t i = 0; i < n; i++)
            (*arrs[k])[i] = -1;
    }
    return 0;
}

static void cols_free(cols *c)
{
    free(c->y);
    free(c->r);
    free(c->rcp);
    free(c->s);
    free(c->e);
}

/* y, r, rcp, s columns and their rows for eligible module j. */
static void add_module(lp_builder *b, const partd_sac_tree *t, partd_sac_goal goal,
                       cols *c, uint32_t j)
{
    const partd_module *mod = &t->m->mods[j];
    c->y[j] = add_col(b, 0, 1, 0, 1);
    if (t->eligible_parent[j] == PARTD_NONE) {
        c->s[j] = c->y[j];
    } else { /* s_j - s_e - y_j = 0, s_j <= 1 */
        c->s[j] = add_col(b, 0, 1, 0, 0);
        int cs[3] = { c->s[j], c->s[t->eligible_parent[j]], c->y[j] };
        double vs[3] = { 1, -1, -1 };
        add_row(b, 0, 0, 3, cs, vs);
    }
    if (goal == PARTD_SAC_MIN_PEAK)
        return; /* r_j = y_j: full discard, the least memory */
    c->r[j] = add_col(b, 0, 1, 0, 0);
    int cr[2] = { c->r[j], c->y[j] };
    double vr[2] = { 1, -1 };
    add_row(b, -INF, 0, 2, cr, vr);
    if (t->acm[j] > 0 && t->acm[j] > t->ia[j]) {
        double lo = (double)(t->acm[j] - t->ia[j]) / (double)t->acm[j];
        double vl[2] = { 1, -lo };
        add_row(b, 0, INF, 2, cr, vl);
    }
    if (mod->sac_runtime > 0 && mod->n_segments > 0) {
        c->rcp[j] = add_col(b, 0, INF, mod->sac_runtime, 0);
        for (uint32_t k = 0; k < mod->n_segments; k++) {
            int cc[3] = { c->rcp[j], c->r[j], c->y[j] };
            double vc[3] = { 1, -mod->slopes[k], -mod->intercepts[k] };
            add_row(b, 0, INF, 3, cc, vc);
        }
    }
}

/* Running sums of discards in forward post-order and the peak rows. */
static void add_memory_rows(lp_builder *b, const partd_sac_tree *t,
                            partd_sac_goal goal, cols *c, double *peak_floor)
{
    int last = -1;       /* E column of the latest eligible module */
    double rhs = -INF;   /* largest right-hand side sharing `last` */
    *peak_floor = 0;
    for (uint32_t k = 0; k < t->n; k++) {
        uint32_t i = t->m->post_order[k];
        double need = ((double)t->act[i] +
                       (double)t->fixed[i] / (double)t->world_size) / GIB;
        if (last < 0 && need > *peak_floor)
            *peak_floor = need;
        if (last >= 0 && need > rhs)
            rhs = need;
        if (!t->eligible[i])
            continue;
        if (last >= 0 && rhs > -INF) { /* close the group of `last` */
            int cp[2] = { c->peak, last };
            double vp[2] = { 1, 1 };
            add_row(b, rhs, INF, 2, cp, vp);
        }
        c->e[i] = add_col(b, -INF, INF, 0, 0);
        double acm = (double)t->acm[i] / GIB, ia = (double)t->ia[i] / GIB;
        int ce[4], n = 0;
        double ve[4];
        ce[n] = c->e[i], ve[n++] = 1;
        if (last >= 0)
            ce[n] = last, ve[n++] = -1;
        if (goal == PARTD_SAC_MIN_PEAK) {
            ce[n] = c->y[i], ve[n++] = -ia;
        } else {
            ce[n] = c->y[i], ve[n++] = acm - ia;
            ce[n] = c->r[i], ve[n++] = -acm;
        }
        add_row(b, 0, 0, n, ce, ve);
        last = c->e[i];
        rhs = -INF;
    }
    if (last >= 0 && rhs > -INF) {
        int cp[2] = { c->peak, last };
        double vp[2] = { 1, 1 };
        add_row(b, rhs, INF, 2, cp, vp);
    }
}

static void extract(const partd_sac_tree *t, const cols *c, const double *x,
                    partd_sac_goal goal, partd_sac_milp_out *out)
{
    for (uint32_t i = 0; i < t->n; i++) {
        out->y[i] = c->y[i] >= 0 && x[c->y[i]] > 0.5;
        if (!out->y[i])
            out->r[i] = 0;
        else if (goal == PARTD_SAC_MIN_PEAK)
            out->r[i] = 1;
        else
            out->r[i] = fmin(1.0, fmax(0.0, x[c->r[i]]));
    }
}

int partd_sac_milp_solve(const partd_sac_tree *t, const partd_sac_milp_params *p,
                         partd_sac_milp_out *out)
{
    lp_builder b;
    memset(&b, 0, sizeof b);
    cols c;
    memset(&c, 0, sizeof c);
    int rc = PARTD_ENOMEM;
    if (cols_alloc(&c, t->n) < 0)
        goto done;
    int min_peak = p->goal == PARTD_SAC_MIN_PEAK;
    /* The peak column first: its bounds are set once the floor is known. */
    c.peak = add_col(&b, 0, min_peak ? INF : p->cap_bytes / GIB,
                     min_peak ? 1 : 0, 0);
    for (uint32_t j = 0; j < t->n; j++)
        if (t->eligible[j])
            add_module(&b, t, p->goal, &c, j);
    double floor_gib = 0;
    add_memory_rows(&b, t, p->goal, &c, &floor_gib);
    if (b.oom)
        goto done;
    b.col_lb[c.peak] = floor_gib;
    if (!min_peak && floor_gib > b.col_ub[c.peak]) {
        out->status = PARTD_SAC_SOLVED_INFEASIBLE;
        rc = PARTD_OK;
        goto done;
    }
    Cbc_Model *m = load(&b);
    if (!m)
        goto done;
    configure(m, min_peak ? 0 : p->relative_gap);
    const double *x = run(m, p->time_limit_s, p->cancel, &out->status, &out->objective,
                          &out->gap);
    if (x)
        extract(t, &c, x, p->goal, out);
    if (min_peak)
        out->objective *= GIB;
    rc = Cbc_status(m) == 2 ? PARTD_EINTERNAL : PARTD_OK;
    Cbc_deleteModel(m);
done:
    cols_free(&c);
    builder_free(&b);
    return rc;
}

/* ---- the op-level knapsack ---------------------------------------------- */

int partd_sac_knapsack_solve(uint32_t n, const double *value,
                             const double *weight, double cap,
                             double time_limit_s, const partd_cancel *cancel, uint8_t *x,
                             partd_sac_solve_status *status)
{
    lp_builder b;
    memset(&b, 0, sizeof b);
    int rc = PARTD_ENOMEM;
    int *cols_idx = malloc((n ? n : 1) * sizeof *cols_idx);
    if (!cols_idx)
        goto done;
    /* Weights scaled by the largest so CBC's tolerances act near 1. */
    double scale = 1;
    for (uint32_t i = 0; i < n; i++)
        if (weight[i] > scale)
            scale = weight[i];
    double *w = malloc((n ? n : 1) * sizeof *w);
    if (!w)
        goto done;
    for (uint32_t i = 0; i < n; i++) {
        cols_idx[i] = add_col(&b, 0, 1, -value[i], 1); /* CBC minimises */
        w[i] = weight[i] / scale;
    }
    add_row(&b, -INF, cap / scale, (int)n, cols_idx, w);
    free(w);
    if (b.oom)
        goto done;
    Cbc_Model *m = load(&b);
    if (!m)
        goto done;
    configure(m, 0);
    /* Tight tolerances: the answer is checked in integer bytes afterwards. */
    Cbc_setParameter(m, "primalTolerance", "1e-9");
    Cbc_setParameter(m, "integerTolerance", "1e-9");
    double obj, gap;
    const double *sol = run(m, time_limit_s, cancel, status, &obj, &gap);
    for (uint32_t i = 0; sol && i < n; i++)
        x[i] = sol[cols_idx[i]] > 0.5;
    rc = Cbc_status(m) == 2 ? PARTD_EINTERNAL : PARTD_OK;
    Cbc_deleteModel(m);
done:
    free(cols_idx);
    builder_free(&b);
    return rc;
}
