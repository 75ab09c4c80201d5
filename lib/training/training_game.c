/*
 * training_game.c - a zero-sum matrix game solved by regret matching+;
 * see training_game.h.
 */
#include "training_game.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The game's matrix: A[p * stride + k] what row p gets against column k. */
typedef struct game {
    const double *A;
    uint32_t stride, P, K;
} game;

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
static double regrets(const game *r, int rows, const double *x, const double *y, double *u,
                      double *q, double sign)
{
    uint32_t n = rows ? r->P : r->K, m = rows ? r->K : r->P;
    double v = 0;
    for (uint32_t i = 0; i < n; i++) {
        double s = 0;
        for (uint32_t k = 0; k < m; k++)
            s += (rows ? r->A[i * r->stride + k] : r->A[k * r->stride + i]) * x[k];
        u[i] = s;
        v += y[i] * s;
    }
    for (uint32_t i = 0; i < n; i++)
        q[i] = fmax(0, q[i] + sign * (u[i] - v));
    return v;
}

double partd__training_game_play(const double *A, uint32_t stride, uint32_t P, uint32_t K,
                                 uint32_t rounds, double *lam, double *mu)
{
    const game gm = {A, stride, P, K}, *r = &gm;
    double *qr = calloc(P, sizeof *qr), *qc = calloc(K, sizeof *qc);
    double *xr = calloc(P, sizeof *xr), *xc = calloc(K, sizeof *xc);
    double *u = calloc(P > K ? P : K, sizeof *u);
    double value = INFINITY;
    if (!qr || !qc || !xr || !xc || !u)
        goto out;
    memset(lam, 0, P * sizeof *lam);
    memset(mu, 0, K * sizeof *mu);
    for (uint32_t t = 1; t <= rounds; t++) {
        /* the rows' regrets against the columns' mix, then the columns'
         * (a minimiser's) against the rows' new mix */
        mix_of(qc, K, xc);
        mix_of(qr, P, xr);
        regrets(r, 1, xc, xr, u, qr, 1);
        mix_of(qr, P, xr);
        regrets(r, 0, xr, xc, u, qc, -1);
        for (uint32_t q = 0; q < P; q++)
            lam[q] += t * xr[q];
        for (uint32_t k = 0; k < K; k++)
            mu[k] += t * xc[k];
    }
    double total = (double)rounds * (rounds + 1) / 2;
    for (uint32_t q = 0; q < P; q++)
        lam[q] /= total;
    for (uint32_t k = 0; k < K; k++)
        mu[k] /= total;
    /* what lam guarantees against every column */
    regrets(r, 0, lam, mu, u, qc, 0);
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
