/* validate.c - checks over the whole decoded request; see validate.h. */
#include "validate.h"

#include <stdio.h>
#include <stdlib.h>

#include "json_read.h"
#include "modules/modules.h"
#include "partd/partd.h"
#include "pipeline/pipeline_cuts.h"
#include "training/training.h"

static int check_cut_after(const partd_request *req, partd_problem *pb)
{
    if (req->options.mode != PARTD_MODE_PIPELINE || req->options.pipeline.n_cut_after == 0)
        return PARTD_OK;
    int32_t *cuts = NULL;
    uint32_t n = 0;
    int rc = partd_pipeline_resolve_cuts(req, &cuts, &n, pb);
    free(cuts);
    return rc;
}

/* Every name of a unit list (ac_units, fsdp_units) names a module; *root
 * set when one names the root module. */
static int check_units(const partd_request *req, const uint32_t *names, uint32_t n,
                       const char *what, int *root, partd_problem *pb)
{
    int bad = 0;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t m = partd_modules_find(req->modules, names[k]);
        if (m == PARTD_NONE) {
            char ptr[96];
            snprintf(ptr, sizeof ptr, "/options/sac/%s/%u", what, k);
            partd_problem_add(pb, ptr, "no module \"%s\" in graph.modules",
                              partd_str(&req->strings, names[k]));
            bad = 1;
        }
        *root |= m == 0;
    }
    return bad;
}

/* The SAC model's byte figures stay within 2^53 (the contract's bound on
 * every sum partd forms): a module's peak is at most its activations
 * (act_total + act_grad_per_module) plus the fixed bytes (the root's
 * param_per_module + its grad_total), and with FSDP units every budget and
 * peak in the result may add the reserve, three times the largest unit's
 * parameters (at most three times all modules' param_per_module). Sums in
 * 128 bits: each figure is at most 2^53 and there are fewer than 2^32. */
static int check_sac_bytes(const partd_request *req, int fsdp, partd_problem *pb)
{
    const partd_modules *m = req->modules;
    const __int128 max = PARTD_MAX_BYTES;
    char ptr[128];
    __int128 params = 0;
    for (uint32_t i = 0; i < m->n; i++)
        params += m->mods[i].param_per_module;
    __int128 reserve = fsdp ? 3 * params : 0;
    if (reserve > max) {
        partd_problem_add(pb, "/graph/modules/mod_stats",
                          "three times the modules' param_per_module (the FSDP reserve) "
                          "is more than 2^53 bytes");
        return PARTD_EINVALID;
    }
    int bad = 0;
    for (uint32_t i = 0; i < m->n; i++) {
        const partd_module *mod = &m->mods[i];
        __int128 peak = (__int128)mod->act_total + mod->act_grad_per_module +
                        m->mods[0].param_per_module + mod->grad_total + reserve;
        if (peak <= max)
            continue;
        snprintf(ptr, sizeof ptr, "/graph/modules/mod_stats/%u", mod->request_index);
        partd_problem_add(pb, ptr,
                          "act_total + act_grad_per_module + grad_total + the root's "
                          "param_per_module%s add up to more than 2^53 bytes",
                          fsdp ? " + the FSDP reserve" : "");
        bad = 1;
    }
    return bad ? PARTD_EINVALID : PARTD_OK;
}

/* What sac.c's build_tree requires of the options. */
static int check_sac(const partd_request *req, partd_problem *pb)
{
    const partd_sac_options *o = &req->options.sac;
    if (!o->enabled)
        return PARTD_OK;
    if (!req->modules) {
        partd_problem_add(pb, "/graph/modules",
                          "options.sac needs graph.modules (PyTorch's module_info)");
        return PARTD_EINVALID;
    }
    /* Empty lists mean "not given", as PyTorch's `if ac_units:`. */
    uint32_t n_ac = o->has_ac_units ? o->n_ac_units : 0;
    uint32_t n_fsdp = o->has_fsdp_units ? o->n_fsdp_units : 0;
    int unused = 0, root_unit = n_fsdp == 0;
    int bad = check_units(req, o->ac_units, n_ac, "ac_units", &unused, pb);
    bad |= check_units(req, o->fsdp_units, n_fsdp, "fsdp_units", &root_unit, pb);
    if (!bad && !root_unit) {
        partd_problem_add(pb, "/options/sac/fsdp_units",
                          "the root module \"%s\" must be an FSDP unit",
                          partd_str(&req->strings, req->modules->mods[0].fqn));
        bad = 1;
    }
    if (!bad)
        return check_sac_bytes(req, n_fsdp > 0, pb);
    return PARTD_EINVALID;
}

int partd__validate_request(const partd_request *req, partd_problem *pb)
{
    int rc = check_cut_after(req, pb);
    if (rc == PARTD_ENOMEM)
        return rc;
    int sac = check_sac(req, pb);
    int training = partd_training_validate(req, pb);
    return rc != PARTD_OK ? rc : sac != PARTD_OK ? sac : training;
}
