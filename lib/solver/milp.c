/*
 * milp.c - a MILP in arrays, checked and solved by CBC in a child process;
 * see milp.h.
 *
 * The child loads the arrays into CBC, solves, and writes one answer: a
 * fixed header (what CBC said: proven infeasible/optimal, objective, best
 * bound, whether a solution exists) followed by the solution as raw doubles.
 * The parent derives status and gap from it exactly as an in-process solve
 * did, so results are unchanged bit for bit.
 */
#include "milp.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "partd/partd.h"
#include "solver_cbc.h"
#include "solver_child.h"

/* ---- building ------------------------------------------------------------ */

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

int partd_milp_add_col(partd_milp *b, double lb, double ub, double obj, int is_int)
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

int partd_milp_add_row(partd_milp *b, double lb, double ub, int n, const int *cols,
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

void partd_milp_free(partd_milp *b)
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
    memset(b, 0, sizeof *b);
}

/* ---- the pre-check ------------------------------------------------------- */

/* A coefficient: finite and within PARTD_MILP_MAX_ABS. */
static int bad_coef(double v)
{
    return !isfinite(v) || fabs(v) > PARTD_MILP_MAX_ABS;
}

/* A bound: infinite at +-PARTD_MILP_INF or beyond, else as a coefficient. */
static int bad_bound(double v)
{
    return isnan(v) || (fabs(v) < PARTD_MILP_INF && fabs(v) > PARTD_MILP_MAX_ABS);
}

/* A lower bound of +infinity (or NaN or out of range): no value can meet it. */
static int bad_lower(double lb)
{
    return bad_bound(lb) || lb >= PARTD_MILP_INF;
}

static int bad_range(double lb, double ub)
{
    return bad_lower(lb) || bad_bound(ub) || ub <= -PARTD_MILP_INF;
}

/* The first number the solver could not take (NaN, infinite, out of range,
 * an index off the model); NULL when the model is sound. *value is it. */
static const char *precheck(const partd_milp *b, double *value)
{
    for (int c = 0; c < b->n_cols; c++) {
        if (bad_range(b->col_lb[c], b->col_ub[c]))
            return *value = bad_lower(b->col_lb[c]) ? b->col_lb[c] : b->col_ub[c],
                   "a variable bound";
        if (bad_coef(b->obj[c]))
            return *value = b->obj[c], "an objective coefficient";
    }
    for (int r = 0; r < b->n_rows; r++)
        if (bad_range(b->row_lb[r], b->row_ub[r]))
            return *value = bad_lower(b->row_lb[r]) ? b->row_lb[r] : b->row_ub[r],
                   "a constraint bound";
    for (int k = 0; k < b->n_nz; k++) {
        if (b->nz_col[k] < 0 || b->nz_col[k] >= b->n_cols || b->nz_row[k] < 0 ||
            b->nz_row[k] >= b->n_rows)
            return *value = k, "a matrix index";
        if (bad_coef(b->nz_val[k]))
            return *value = b->nz_val[k], "a constraint coefficient";
    }
    return NULL;
}

/* ---- the child: load, solve, answer -------------------------------------- */

#define ANSWER_MAGIC 0x50444d31u /* "PDM1" */

typedef struct answer_head {
    uint32_t magic;
    int32_t n_cols;
    int32_t loaded;            /* 0: CBC's model could not be made (memory) */
    int32_t proven_infeasible, proven_optimal, has_x, n_integers, cbc_status;
    double objective, bound;
} answer_head;

typedef struct child_job {
    const partd_milp *b;
    const partd_milp_params *p;
} child_job;

/* Loads the arrays into a new CBC model (column-major), NULL on ENOMEM. */
static Cbc_Model *load(const partd_milp *b)
{
    int *start = calloc((size_t)b->n_cols + 1, sizeof *start);
    int *index = malloc(((size_t)b->n_nz + 1) * sizeof *index);
    double *value = malloc(((size_t)b->n_nz + 1) * sizeof *value);
    int *fill = calloc((size_t)b->n_cols + 1, sizeof *fill);
    Cbc_Model *m = NULL;
    if (!start || !index || !value || !fill)
        goto done;
    for (int k = 0; k < b->n_nz; k++)
        start[b->nz_col[k] + 1]++;
    for (int c = 0; c < b->n_cols; c++)
        start[c + 1] += start[c];
    memcpy(fill, start, ((size_t)b->n_cols + 1) * sizeof *fill);
    for (int k = 0; k < b->n_nz; k++) { /* rows ascending within a column */
        int pos = fill[b->nz_col[k]]++;
        index[pos] = b->nz_row[k];
        value[pos] = b->nz_val[k];
    }
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
    free(fill);
    return m;
}

/* Single-threaded, fixed seeds, silent: the same model gives the same answer
 * on every run (unless the time limit cuts it). */
static void configure(Cbc_Model *m, const partd_milp_params *p)
{
    Cbc_setLogLevel(m, 0);
    Cbc_setParameter(m, "log", "0");
    Cbc_setParameter(m, "slog", "0");
    Cbc_setParameter(m, "threads", "0");
    Cbc_setParameter(m, "randomSeed", "1234567");
    Cbc_setParameter(m, "randomCbcSeed", "1234567");
    Cbc_setParameter(m, "timeMode", "elapsed");
    Cbc_setAllowableFractionGap(m, p->relative_gap);
    Cbc_setAllowableGap(m, 1e-9);
    if (p->tight_tolerances) {
        /* The answer is checked in integer bytes afterwards. */
        Cbc_setParameter(m, "primalTolerance", "1e-9");
        Cbc_setParameter(m, "integerTolerance", "1e-9");
    }
    double limit = p->time_limit_s < 0.001 ? 0.001 : p->time_limit_s;
    char buf[64];
    snprintf(buf, sizeof buf, "%.6f", limit);
    Cbc_setParameter(m, "sec", buf);
    Cbc_setMaximumSeconds(m, limit);
}

static int solve_in_child(void *arg, int fd)
{
    const child_job *job = arg;
    answer_head h;
    memset(&h, 0, sizeof h);
    h.magic = ANSWER_MAGIC;
    h.n_cols = job->b->n_cols;
    Cbc_Model *m = load(job->b);
    if (!m)
        return partd__child_write(fd, &h, sizeof h) == 0 ? 0 : 1;
    h.loaded = 1;
    configure(m, job->p);
    Cbc_solve(m);
    h.proven_infeasible = Cbc_isProvenInfeasible(m) != 0;
    h.proven_optimal = Cbc_isProvenOptimal(m) != 0;
    const double *x = Cbc_bestSolution(m);
    if (!x && h.proven_optimal)
        x = Cbc_getColSolution(m); /* a model without integer columns */
    h.has_x = x != NULL;
    h.n_integers = Cbc_getNumIntegers(m);
    h.cbc_status = Cbc_status(m);
    if (x) {
        h.objective = Cbc_getObjValue(m);
        h.bound = Cbc_getBestPossibleObjValue(m);
    }
    if (partd__child_write(fd, &h, sizeof h) != 0)
        return 1;
    if (x && partd__child_write(fd, x, (size_t)h.n_cols * sizeof *x) != 0)
        return 1;
    return 0; /* the process ends: CBC's model goes with it */
}

/* ---- the parent: limits, answer, status ---------------------------------- */

static double relative_gap(double obj, double bound)
{
    double diff = obj - bound;
    if (diff <= 1e-9 * (fabs(obj) > 1 ? fabs(obj) : 1))
        return 0;
    return diff / (fabs(obj) > 1e-12 ? fabs(obj) : 1e-12);
}

static int solver_failed(const partd_solver_env *env, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* PARTD_EINTERNAL, with a 500 problem when the caller wants one. */
static int solver_failed(const partd_solver_env *env, const char *fmt, ...)
{
    partd_problem *pb = env ? env->problem : NULL;
    if (!pb)
        return PARTD_EINTERNAL;
    char detail[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    partd_problem_set(pb, 500, "solver-failed", "The MILP solver failed", "%s", detail);
    return PARTD_EINTERNAL;
}

/* PARTD_EINVALID: the request's numbers make a model CBC cannot take. */
static int out_of_range(const partd_solver_env *env, const char *what, double value)
{
    partd_problem *pb = env ? env->problem : NULL;
    if (!pb)
        return PARTD_EINVALID;
    partd_problem_set(pb, 422, "invalid-request", "Invalid request",
                      "the SAC model has %s the solver cannot take (%g); its numbers "
                      "must be finite and at most %g in magnitude", what, value,
                      PARTD_MILP_MAX_ABS);
    partd_problem_add(pb, "/graph/modules",
                      "a runtime, slope or intercept is out of the solver's range (%g)",
                      value);
    return PARTD_EINVALID;
}

/* Checks the answer and turns it into status, objective, gap and x. */
static int read_answer(const partd_milp *b, const partd_milp_params *p,
                       const partd_child_answer *a, uint64_t memory,
                       partd_milp_result *out)
{
    answer_head h;
    size_t x_bytes = (size_t)b->n_cols * sizeof(double);
    if (a->len < sizeof h)
        return solver_failed(p->env, "the MILP solver crashed: no answer");
    memcpy(&h, a->data, sizeof h);
    if (h.magic != ANSWER_MAGIC || h.n_cols != b->n_cols ||
        a->len != sizeof h + (h.has_x ? x_bytes : 0))
        return solver_failed(p->env, "the MILP solver crashed: a malformed answer");
    if (!h.loaded)
        return solver_failed(p->env, "the MILP solver ran out of its memory limit "
                             "(%llu bytes)", (unsigned long long)memory);
    if (h.cbc_status == 2)
        return solver_failed(p->env, "the MILP solver stopped on numerical difficulties");
    if (h.proven_infeasible) {
        out->status = PARTD_MILP_INFEASIBLE;
        return PARTD_OK;
    }
    if (!h.has_x) {
        out->status = PARTD_MILP_NONE;
        return PARTD_OK;
    }
    memcpy(out->x, (const char *)a->data + sizeof h, x_bytes);
    out->objective = h.objective;
    out->gap = h.n_integers == 0 || h.bound >= h.objective
                   ? 0
                   : relative_gap(h.objective, h.bound);
    out->status = out->gap == 0 && h.proven_optimal ? PARTD_MILP_OPTIMAL
                                                    : PARTD_MILP_FEASIBLE;
    return PARTD_OK;
}

/* A CBC child asleep without using CPU time this long is hung on a lock
 * inherited held across fork() (solver_child.c): it is run again. CBC never
 * sleeps; its answer is read as it comes, so it never waits on the pipe. */
#define STALL_S 1.0

/* CBC stops itself at its limit, give or take its step (measured up to
 * ~150 ms at 1,200 modules); the child is killed only well after that. */
static double wall_limit(double time_limit_s)
{
    return time_limit_s * 1.5 + 2.0;
}

int partd_milp_solve(const partd_milp *b, const partd_milp_params *p,
                     partd_milp_result *out)
{
    out->status = PARTD_MILP_NONE;
    out->objective = 0;
    out->gap = 0;
    if (b->oom)
        return PARTD_ENOMEM;
    if (p->time_limit_s <= 0)
        return PARTD_OK; /* no time: no solution */
    double value = 0;
    const char *bad = precheck(b, &value);
    if (bad)
        return out_of_range(p->env, bad, value);
    const char *why;
    if (partd__cbc_load(&why) != PARTD_OK)
        return solver_failed(p->env, "%s", why);
    uint64_t memory = p->env && p->env->memory_bytes ? p->env->memory_bytes
                                                     : PARTD_SOLVER_MEMORY_DEFAULT;
    size_t cap = sizeof(answer_head) + (size_t)b->n_cols * sizeof(double);
    partd_child_answer a = { malloc(cap), cap, 0, "" };
    if (!a.data)
        return PARTD_ENOMEM;
    double wall = wall_limit(p->time_limit_s);
    partd_child_limits lim = { wall, wall + 1.0, memory, p->env ? p->env->cancel : NULL,
                               STALL_S };
    child_job job = { b, p };
    int rc = partd__child_run(solve_in_child, &job, &lim, &a);
    if (rc == PARTD_OK)
        rc = read_answer(b, p, &a, memory, out);
    else if (rc == PARTD_ETIMEOUT && partd_cancel_check(lim.cancel) == PARTD_OK)
        rc = PARTD_OK; /* the solver overran its own limit: no solution */
    else if (rc == PARTD_EINTERNAL)
        solver_failed(p->env, "the MILP solver crashed: %s (memory limit %llu bytes)",
                      a.why, (unsigned long long)memory);
    free(a.data);
    return rc;
}
