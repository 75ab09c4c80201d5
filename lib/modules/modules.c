/*
 * modules.c - decoding and validation of graph.modules (PyTorch's SAC
 * module_info); see modules.h.
 *
 * Every violation is reported with a JSON Pointer under "/graph/modules" and
 * decoding goes on, so one answer lists every error (up to the problem cap).
 * The model is only built when no error was found. Allocation failure returns
 * PARTD_ENOMEM with whatever was decoded released. Values are read with
 * json_read.h, as the rest of the request is, so errors are worded alike.
 */
#include "modules.h"

#include <stdlib.h>
#include <string.h>

#include "decode/json_read.h"
#include "modules_internal.h"
#include "partd/partd.h"

/* ---- mod_stats ---------------------------------------------------------- */

static const char *const MOD_STATS_KEYS[] = {
    "fqn", "param_per_module", "grad_per_module", "grad_total",
    "act_fw_per_module", "act_bw_per_module", "act_grad_per_module",
    "act_total", "input_per_module", "output_per_module",
    "fw_runtime_per_module", "bw_runtime_per_module", "is_leaf",
    "sac_runtime", "sac_memory", "n_segments", "slopes", "intercepts",
    "breakpoints", "tradeoff_curve", "sac_stats", NULL
};

static void module_free_arrays(partd_module *m)
{
    free(m->slopes);
    free(m->intercepts);
    free(m->breakpoints);
    partd__modules_sac_stats_free(m->sac_stats);
}

static int decode_byte_members(partd_reader *d, json_t *obj, const char *base,
                               partd_module *m)
{
    struct { const char *key; int64_t *dst; } bytes[] = {
        { "param_per_module", &m->param_per_module },
        { "grad_per_module", &m->grad_per_module },
        { "grad_total", &m->grad_total },
        { "act_fw_per_module", &m->act_fw_per_module },
        { "act_bw_per_module", &m->act_bw_per_module },
        { "act_grad_per_module", &m->act_grad_per_module },
        { "act_total", &m->act_total },
        { "input_per_module", &m->input_per_module },
        { "output_per_module", &m->output_per_module },
        { "sac_memory", &m->sac_memory },
    };
    int bad = 0;
    for (size_t i = 0; i < sizeof bytes / sizeof bytes[0]; i++)
        /* PyTorch computes act_grad_per_module as the temporary memory at
         * the backward peak minus that before the backward: it can be < 0. */
        bad |= partd__modules_get_bytes(
            d, obj, base, bytes[i].key,
            bytes[i].dst == &m->act_grad_per_module ? -PARTD_MAX_BYTES : 0, bytes[i].dst) < 0;
    return bad ? PARTD_EINVALID : PARTD_OK;
}

static int decode_segments(partd_reader *d, json_t *obj, const char *base,
                           partd_module *m)
{
    char ptr[PARTD_POINTER_CAP];
    int bad = 0;
    json_t *ns = partd_json_read_required(d, obj, base, "n_segments", ptr);
    int ns_ok = 0;
    int64_t x;
    if (ns) {
        if (partd_json_read_int(d, ns, ptr, 0, 1000000, &x) < 0) {
            bad = 1;
        } else {
            m->n_segments = (uint32_t)x;
            ns_ok = 1;
        }
    }
    const char *keys[2] = { "slopes", "intercepts" };
    double **dst[2] = { &m->slopes, &m->intercepts };
    for (int k = 0; k < 2; k++) {
        uint32_t n = 0;
        if (partd__modules_get_numbers(d, obj, base, keys[k], 0, dst[k], &n) < 0) {
            bad = 1;
        } else if (ns_ok && n != m->n_segments) {
            partd_pointer_member(ptr, base, keys[k]);
            partd__modules_report(d, ptr, "must have n_segments (%u) entries, got %u",
                            m->n_segments, n);
            bad = 1;
        }
    }
    bad |= partd__modules_get_numbers(d, obj, base, "breakpoints", 0, &m->breakpoints,
                                &m->n_breakpoints) < 0;
    return bad ? PARTD_EINVALID : PARTD_OK;
}

/* tradeoff_curve: PyTorch's OrderedDict[float, float], i.e. an object whose
 * values are numbers. Validated, not used by the planner. */
static int check_tradeoff_curve(partd_reader *d, json_t *obj, const char *base)
{
    char tc_ptr[PARTD_POINTER_CAP], ptr[PARTD_POINTER_CAP];
    json_t *tc = partd_json_read_required(d, obj, base, "tradeoff_curve", tc_ptr);
    if (!tc || partd_json_read_object(d, tc, tc_ptr, NULL) != 0)
        return PARTD_EINVALID;
    const char *key;
    json_t *v;
    int bad = 0;
    json_object_foreach(tc, key, v) {
        double x;
        partd_pointer_member(ptr, tc_ptr, key);
        if (partd__modules_number_value(d, v, ptr, 0, &x) < 0)
            bad = 1;
    }
    return bad ? PARTD_EINVALID : PARTD_OK;
}

static int decode_module(partd_reader *d, json_t *obj, const char *base,
                         partd_module *m)
{
    m->fqn = PARTD_STR_NONE;
    if (partd_json_read_object(d, obj, base, NULL) != 0)
        return PARTD_EINVALID;
    partd_json_read_reject_unknown(d, obj, base, MOD_STATS_KEYS, 0);
    char ptr[PARTD_POINTER_CAP];
    json_t *fqn = partd_json_read_required(d, obj, base, "fqn", ptr);
    if (fqn)
        m->fqn = partd_json_read_name(d, fqn, ptr);
    int bad = m->fqn == PARTD_STR_NONE;
    bad |= decode_byte_members(d, obj, base, m) < 0;
    bad |= partd__modules_get_number(d, obj, base, "fw_runtime_per_module", 1,
                               &m->fw_runtime_per_module) < 0;
    bad |= partd__modules_get_number(d, obj, base, "bw_runtime_per_module", 1,
                               &m->bw_runtime_per_module) < 0;
    bad |= partd__modules_get_number(d, obj, base, "sac_runtime", 1, &m->sac_runtime) < 0;
    bad |= partd__modules_get_bool(d, obj, base, "is_leaf", &m->is_leaf) < 0;
    bad |= decode_segments(d, obj, base, m) < 0;
    bad |= check_tradeoff_curve(d, obj, base) < 0;
    json_t *ss = json_object_get(obj, "sac_stats");
    if (ss && !json_is_null(ss)) {
        partd_pointer_member(ptr, base, "sac_stats");
        bad |= partd__modules_decode_sac_stats(d, ss, ptr, &m->sac_stats) < 0;
    }
    return bad ? PARTD_EINVALID : PARTD_OK;
}

static const char *const MODULES_KEYS[] = { "mod_order", "mod_stats", NULL };

static int decode_all(partd_reader *d, json_t *modules, partd_modules *out)
{
    const char *base = "/graph/modules";
    if (partd_json_read_object(d, modules, base, "an object with mod_order and mod_stats") != 0)
        return PARTD_EINVALID;
    partd_json_read_reject_unknown(d, modules, base, MODULES_KEYS, 0);
    char ms_ptr[PARTD_POINTER_CAP], ptr[PARTD_POINTER_CAP];
    json_t *ms = partd__modules_get_array(d, modules, base, "mod_stats", ms_ptr);
    if (!ms)
        return PARTD_EINVALID;
    uint32_t n = (uint32_t)json_array_size(ms);
    if (n == 0) {
        partd__modules_report(d, ms_ptr, "must list at least one module");
        return PARTD_EINVALID;
    }
    partd_module *stats = calloc(n, sizeof *stats);
    partd_mi_fqn_entry *map = calloc(n, sizeof *map);
    uint32_t *orders = calloc(3 * (size_t)n, sizeof *orders);
    int rc = PARTD_EINVALID;
    if (!stats || !map || !orders) {
        d->oom = 1;
        goto done;
    }
    int bad = 0;
    for (uint32_t i = 0; i < n && !d->oom; i++) {
        partd_pointer_index(ptr, ms_ptr, i);
        bad |= decode_module(d, json_array_get(ms, i), ptr, &stats[i]) < 0;
    }
    uint32_t n_map = 0;
    if (d->oom)
        goto done;
    bad |= partd__modules_build_map(d, stats, n, map, &n_map) < 0;
    bad |= partd__modules_decode_orders(d, modules, stats, n, map, n_map, orders, orders + n,
                                  orders + 2 * (size_t)n) < 0;
    if (bad || d->oom)
        goto done;
    rc = partd__modules_assemble(d, stats, map, n, orders, orders + n, out);
done:
    if (stats)
        for (uint32_t i = 0; i < n; i++)
            module_free_arrays(&stats[i]);
    free(stats);
    free(map);
    free(orders);
    return rc;
}

int partd_modules_decode(json_t *modules, partd_strtab *strings,
                         partd_problem *problem, struct partd_modules **out,
                         char **canonical)
{
    *out = NULL;
    if (canonical)
        *canonical = NULL;
    partd_modules *m = calloc(1, sizeof *m);
    if (!m)
        return PARTD_ENOMEM;
    partd_reader d = { .pb = problem, .strings = strings };
    uint32_t errors_before = problem->n_errors + problem->dropped;
    int rc = decode_all(&d, modules, m);
    if (d.oom) {
        partd_modules_free(m);
        return PARTD_ENOMEM;
    }
    if (rc < 0 || problem->n_errors + problem->dropped > errors_before) {
        partd_modules_free(m);
        if (!problem->status)
            partd_problem_set(problem, 422, "invalid-request", "Invalid request",
                              "graph.modules does not match PyTorch's module_info");
        return PARTD_EINVALID;
    }
    if (canonical) {
        *canonical = partd_problem_json_dumps(modules, JSON_SORT_KEYS | JSON_COMPACT |
                                             JSON_REAL_PRECISION(17));
        if (!*canonical) {
            partd_modules_free(m);
            return PARTD_ENOMEM;
        }
    }
    *out = m;
    return PARTD_OK;
}

void partd_modules_free(struct partd_modules *m)
{
    if (!m)
        return;
    if (m->mods)
        for (uint32_t i = 0; i < m->n; i++)
            module_free_arrays(&m->mods[i]);
    free(m->mods);
    free(m->post_order);
    free(m->by_fqn);
    free(m);
}

uint32_t partd_modules_find(const partd_modules *m, uint32_t fqn)
{
    uint32_t lo = 0, hi = m->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        uint32_t id = m->mods[m->by_fqn[mid]].fqn;
        if (id == fqn)
            return m->by_fqn[mid];
        if (id < fqn)
            lo = mid + 1;
        else
            hi = mid;
    }
    return PARTD_NONE;
}

int partd_modules_is_ancestor(const partd_modules *m, uint32_t anc,
                              uint32_t desc)
{
    for (uint32_t p = m->mods[desc].parent; p != PARTD_NONE; p = m->mods[p].parent)
        if (p == anc)
            return 1;
    return 0;
}
