/*
 * training_paths.c - the path through every rank's whole list; see
 * training_paths.h.
 */
#include "training_paths.h"

#include <stdlib.h>
#include <string.h>

#include "partd/partd.h"

int partd__training_paths_ranks(const partd_training_cfg *c,
                                const partd_training_durations *du, const double *dmin,
                                double *rpath, uint64_t *work)
{
    const partd_training_sim *s = &c->sim;
    const partd_training_lists *l = &c->lists;
    uint32_t V = c->V, n = l->n;
    double *tail = malloc((size_t)n * sizeof *tail), *p = malloc(5 * (size_t)V * sizeof *p);
    uint32_t *next = malloc((size_t)n * sizeof *next), *nd = malloc((size_t)n * sizeof *nd);
    if (!tail || !p || !next || !nd) {
        free(tail);
        free(p);
        free(next);
        free(nd);
        return PARTD_ENOMEM;
    }
    memset(rpath, 0, (size_t)l->S * 5 * V * sizeof *rpath);
    /* tail[a]: the longest path after a ends, next[a] its first action,
     * nd[a] the delay crossed to it (V: none) */
    for (uint32_t i = 0; i < n; i++) {
        tail[i] = 0;
        next[i] = nd[i] = PARTD_TRAINING_NO;
    }
    for (uint32_t k = n; k-- > 0;) {
        uint32_t a = s->order[k];
        const partd_training_action *y = &l->act[a];
        double t = partd__training_sim_duration(du, y) + tail[a];
        uint32_t pred[3] = {s->prev[a], s->dep1[a], s->dep2[a]};
        uint32_t dl[3] = {V, y->kind == PARTD_TRAINING_F && y->stage ? y->stage - 1 : V, y->stage};
        for (int e = 0; e < 3; e++) {
            if (pred[e] == PARTD_TRAINING_NO)
                continue;
            double x = t + (dl[e] < V ? dmin[dl[e]] : 0);
            if (x > tail[pred[e]] || next[pred[e]] == PARTD_TRAINING_NO) {
                tail[pred[e]] = x;
                next[pred[e]] = a;
                nd[pred[e]] = dl[e];
            }
        }
    }
    *work += 2 * (uint64_t)n;
    for (uint32_t q = 0; q < l->S; q++) {
        if (l->off[q] == l->off[q + 1])
            continue;
        memset(p, 0, 5 * (size_t)V * sizeof *p);
        /* into its first action, as the critical path is read */
        uint32_t a = l->off[q];
        a = s->why[a] == 2 ? s->dep1[a] : s->why[a] == 3 ? s->dep2[a] : PARTD_TRAINING_NO;
        if (a != PARTD_TRAINING_NO) {
            const partd_training_action *x = &l->act[l->off[q]];
            if (s->why[l->off[q]] == 3)
                p[4 * V + x->stage]++;
            else if (x->kind == PARTD_TRAINING_F)
                p[4 * V + x->stage - 1]++;
        }
        while (a != PARTD_TRAINING_NO) {
            const partd_training_action *x = &l->act[a];
            p[x->kind * V + x->stage]++;
            uint8_t why = s->why[a];
            if (why == 2 && x->kind == PARTD_TRAINING_F)
                p[4 * V + x->stage - 1]++;
            if (why == 3)
                p[4 * V + x->stage]++;
            a = why == 1 ? s->prev[a] : why == 2 ? s->dep1[a] : why == 3 ? s->dep2[a]
                                                                       : PARTD_TRAINING_NO;
        }
        for (uint32_t i = l->off[q]; i < l->off[q + 1]; i++)
            p[l->act[i].kind * V + l->act[i].stage]++;
        for (a = l->off[q + 1] - 1; next[a] != PARTD_TRAINING_NO; a = next[a]) {
            if (nd[a] < V)
                p[4 * V + nd[a]]++;
            const partd_training_action *x = &l->act[next[a]];
            p[x->kind * V + x->stage]++;
        }
        memcpy(rpath + (size_t)q * 5 * V, p, 5 * (size_t)V * sizeof *p);
    }
    free(tail);
    free(p);
    free(next);
    free(nd);
    return PARTD_OK;
}
