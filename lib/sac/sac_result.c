/*
 * sac_result.c - releasing a SAC result and rendering it as the result
 * document's `sac` member; see sac.h.
 */
#include "sac.h"

#include <stdlib.h>

#include "modules/modules.h"
#include "partd/enums.h"
#include "sac_result.h"

void partd_sac_result_free(struct partd_sac_result *r)
{
    if (!r)
        return;
    partd__sac_plan_vec_free(&r->main.plan);
    if (r->policies)
        for (uint32_t i = 0; i < r->n_modules; i++)
            free(r->policies[i].ops);
    free(r->policies);
    for (uint32_t k = 0; k < r->n_frontier; k++)
        partd__sac_plan_vec_free(&r->frontier[k].plan);
    free(r->frontier);
    free(r);
}

double partd__sac_result_solve_ms(const struct partd_sac_result *r)
{
    return r ? r->solve_ms : 0;
}

/* ---- JSON --------------------------------------------------------------- */

static json_t *decisions_json(const partd_request *req, const partd_sac_plan_vec *p)
{
    json_t *o = json_object();
    const partd_modules *m = req->modules;
    for (uint32_t i = 0; o && i < m->n; i++)
        if (p->y[i] && json_object_set_new(o, partd_str(&req->strings, m->mods[i].fqn),
                                           json_real((double)p->ratio_e4[i] /
                                                     PARTD_SAC_RATIO_SCALE)) != 0) {
            json_decref(o);
            return NULL;
        }
    return o;
}

/* status, ac_decisions, recomputation_time_ms, peak_memory_bytes, gap. */
static int answer_json(const partd_request *req, const partd_sac_answer *a, json_t *o)
{
    int has_plan = a->status == PARTD_SAC_OPTIMAL || a->status == PARTD_SAC_FEASIBLE;
    int rc = json_object_set_new(o, "status",
                                 json_string(partd_sac_status_name(a->status)));
    if (a->status == PARTD_SAC_NO_SOLUTION)
        return rc;
    json_t *d = has_plan ? decisions_json(req, &a->plan) : json_object();
    rc |= json_object_set_new(o, "ac_decisions", d);
    rc |= json_object_set_new(o, "recomputation_time_ms",
                              json_real(has_plan ? a->recompute_ms : 0));
    if (has_plan)
        rc |= json_object_set_new(o, "peak_memory_bytes", json_integer(a->peak_bytes));
    return rc;
}

static json_t *policies_json(const partd_request *req,
                             const struct partd_sac_result *r)
{
    json_t *o = json_object();
    const partd_modules *m = req->modules;
    for (uint32_t i = 0; o && i < m->n; i++) {
        if (!r->policies[i].computed)
            continue;
        json_t *list = json_array();
        const partd_sac_stats *s = m->mods[i].sac_stats;
        for (uint32_t k = 0; list && r->policies[i].feasible && k < s->n_ops; k++)
            if (json_array_append_new(list, json_integer(r->policies[i].ops[k])) != 0) {
                json_decref(list);
                list = NULL;
            }
        if (!list || json_object_set_new(o, partd_str(&req->strings, m->mods[i].fqn),
                                         list) != 0) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
}

static json_t *frontier_json(const partd_request *req,
                             const struct partd_sac_result *r)
{
    json_t *arr = json_array();
    for (uint32_t k = 0; arr && k < r->n_frontier; k++) {
        const partd_sac_answer *a = &r->frontier[k];
        json_t *p = json_object();
        int rc = !p || json_object_set_new(p, "budget_bytes",
                                           json_integer(a->budget_bytes));
        rc |= p ? answer_json(req, a, p) : -1;
        if (a->status == PARTD_SAC_OPTIMAL || a->status == PARTD_SAC_FEASIBLE)
            rc |= json_object_set_new(p, "gap", json_real(a->gap));
        if (rc || json_array_append_new(arr, p) != 0) {
            if (rc)
                json_decref(p); /* not appended: still ours */
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

json_t *partd_sac_result_to_json(const partd_request *req,
                                 const struct partd_sac_result *r)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    const partd_sac_answer *a = &r->main;
    int rc = answer_json(req, a, o);
    rc |= json_object_set_new(o, "baseline_peak_memory_bytes",
                              json_integer(r->baseline_peak_bytes));
    if (r->has_min_peak)
        rc |= json_object_set_new(o, "min_peak_memory_bytes",
                                  json_integer(r->min_peak_bytes));
    rc |= json_object_set_new(o, "budget_bytes", json_integer(a->budget_bytes));
    if (r->has_fsdp)
        rc |= json_object_set_new(o, "fsdp_reserved_bytes",
                                  json_integer(r->reserve_bytes));
    if (a->status != PARTD_SAC_INFEASIBLE)
        rc |= json_object_set_new(o, "gap", json_real(a->gap));
    if (r->policies) {
        json_t *p = policies_json(req, r);
        rc |= !p || json_object_set_new(o, "op_policies", p);
    }
    if (r->frontier) {
        json_t *f = frontier_json(req, r);
        rc |= !f || json_object_set_new(o, "frontier", f);
    }
    if (rc) {
        json_decref(o);
        return NULL;
    }
    return o;
}
