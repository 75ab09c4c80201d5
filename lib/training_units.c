/*
 * training_units.c - units, per-operation figures and device classes of the
 * training planner; see training_model.h.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "partd.h"
#include "training_model.h"

/* ---- module keys ----------------------------------------------------------- */

/* Length of the first d dot-separated components of s (all of s when it has
 * fewer). */
static uint32_t key_len(const char *s, uint32_t len, uint32_t d)
{
    uint32_t comps = 1;
    for (uint32_t i = 0; i < len; i++)
        if (s[i] == '.' && comps++ == d)
            return i;
    return len;
}

static uint32_t module_depth(const char *s, uint32_t len)
{
    uint32_t d = 1;
    for (uint32_t i = 0; i < len; i++)
        d += s[i] == '.';
    return d;
}

typedef struct key_src {
    const char *s;
    uint32_t len;              /* 0 with s == "" for a node without module */
    uint32_t depth;            /* 0 without module */
} key_src;

static key_src node_key(const partd_request *req, uint32_t v)
{
    uint32_t mod = req->graph.module[v];
    if (mod == PARTD_NONE)
        return (key_src){"", 0, 0};
    const char *s = partd_str(&req->strings, mod);
    uint32_t len = partd_strlen(&req->strings, mod);
    return (key_src){s, len, module_depth(s, len)};
}

static int same_key(key_src x, key_src y, uint32_t d)
{
    if (x.depth == 0 || y.depth == 0)
        return x.depth == y.depth;
    uint32_t lx = key_len(x.s, x.len, d), ly = key_len(y.s, y.len, d);
    return lx == ly && memcmp(x.s, y.s, lx) == 0;
}

/* Smallest depth at which two consecutive operations fall in different
 * units (UINT32_MAX: never). Keys at depth d refine those at d - 1, so the
 * number of units grows with d and this threshold says it all. */
static uint32_t split_depth(key_src x, key_src y)
{
    uint32_t top = x.depth > y.depth ? x.depth : y.depth;
    for (uint32_t d = 1; d <= top; d++)
        if (!same_key(x, y, d))
            return d;
    return UINT32_MAX;
}

uint32_t tr_default_depth(const partd_request *req)
{
    const partd_graph *g = &req->graph;
    uint32_t max_depth = 0, prev = PARTD_NONE;
    uint32_t need = 2 * req->n_devices;
    /* count[d] = consecutive pairs that split at depth d (capped). */
    uint32_t cap = 64;
    uint32_t *count = calloc(cap + 2, sizeof *count);
    uint64_t beyond = 0;
    if (!count)
        return 1;
    for (uint32_t v = 0; v < g->n_nodes; v++) {
        if (!partd_op_is_operation(g->op[v]))
            continue;
        key_src k = node_key(req, v);
        if (k.depth > max_depth)
            max_depth = k.depth;
        if (prev != PARTD_NONE) {
            uint32_t s = split_depth(node_key(req, prev), k);
            if (s <= cap)
                count[s]++;
            else if (s != UINT32_MAX)
                beyond++;
        }
        prev = v;
    }
    uint64_t units = 1;
    uint32_t depth = 0;
    for (uint32_t d = 1; d <= max_depth && d <= cap; d++) {
        units += count[d];
        if (units >= need) {
            depth = d;
            break;
        }
    }
    if (!depth && max_depth > cap && units + beyond >= need) {
        /* Deeper than the counted range: step through the rest directly. */
        for (uint32_t d = cap + 1; d <= max_depth && !depth; d++) {
            uint64_t n = 1;
            prev = PARTD_NONE;
            for (uint32_t v = 0; v < g->n_nodes; v++) {
                if (!partd_op_is_operation(g->op[v]))
                    continue;
                if (prev != PARTD_NONE && !same_key(node_key(req, prev), node_key(req, v), d))
                    n++;
                prev = v;
            }
            if (n >= need)
                depth = d;
        }
    }
    free(count);
    if (!depth)
        depth = max_depth ? max_depth : 1;
    return depth;
}

/* ---- units ------------------------------------------------------------------ */

typedef struct name_ref {
    const char *s;
    uint32_t index;
} name_ref;

static int cmp_name_ref(const void *x, const void *y)
{
    const name_ref *a = x, *b = y;
    int c = strcmp(a->s, b->s);
    if (c)
        return c;
    return a->index < b->index ? -1 : a->index > b->index;
}

/* The k-th unit (k >= 2) with a name already used gets "#k" appended. */
static int dedupe_names(tr_model *md)
{
    uint32_t n = md->n_units;
    name_ref *refs = malloc((n ? n : 1) * sizeof *refs);
    if (!refs)
        return -1;
    for (uint32_t u = 0; u < n; u++)
        refs[u] = (name_ref){md->unit_name[u], u};
    qsort(refs, n, sizeof *refs, cmp_name_ref);
    int rc = 0;
    uint32_t k = 1;
    for (uint32_t i = 1; i < n && rc == 0; i++) {
        /* Compare the original names: an earlier one may be renamed already. */
        k = strcmp(md->unit_name[refs[i].index], md->unit_name[refs[i - 1].index]) == 0
                ? k + 1
                : 1;
        if (k < 2)
            continue;
        size_t len = strlen(refs[i].s) + 16;
        char *s = malloc(len);
        if (!s) {
            rc = -1;
            break;
        }
        snprintf(s, len, "%s#%u", refs[i].s, k);
        refs[i].s = s;
    }
    for (uint32_t i = 0; i < n; i++) {
        uint32_t u = refs[i].index;
        if (refs[i].s != md->unit_name[u]) {
            free(md->unit_name[u]);
            md->unit_name[u] = (char *)refs[i].s;
        }
    }
    free(refs);
    return rc;
}

static char *unit_key_name(const partd_request *req, uint32_t first_node, uint32_t depth)
{
    key_src k = node_key(req, first_node);
    const char *s = k.depth ? k.s : partd_node_name(req, first_node);
    size_t len = k.depth ? key_len(k.s, k.len, depth) : strlen(s);
    char *out = malloc(len + 1);
    if (out) {
        memcpy(out, s, len);
        out[len] = '\0';
    }
    return out;
}

static int build_units(tr_model *md)
{
    const partd_request *req = md->req;
    const pl_model *pl = &md->pl;
    uint32_t m = pl->m;
    md->units = calloc(m ? m : 1, sizeof *md->units);
    md->unit_name = calloc(m ? m : 1, sizeof *md->unit_name);
    if (!md->units || !md->unit_name)
        return -1;
    uint32_t n = 0;
    for (uint32_t r = 0; r < m; r++) {
        uint32_t v = pl->op_node[r];
        if (r == 0 || !same_key(node_key(req, pl->op_node[r - 1]), node_key(req, v), md->depth)) {
            md->units[n].lo = (int32_t)r;
            if (!(md->unit_name[n] = unit_key_name(req, v, md->depth)))
                return -1;
            n++;
        }
        tr_unit *u = &md->units[n - 1];
        u->hi = (int32_t)r + 1;
        u->fwd += md->f[r];
        u->act += req->graph.output_bytes[v];
    }
    md->n_units = n;
    md->unit_of = malloc((m ? m : 1) * sizeof *md->unit_of);
    if (!md->unit_of)
        return -1;
    for (uint32_t u = 0; u < n; u++)
        for (int32_t r = md->units[u].lo; r < md->units[u].hi; r++)
            md->unit_of[r] = u;
    return dedupe_names(md);
}

/* ---- per-operation figures -------------------------------------------------- */

static int csr_by(uint32_t m, const int32_t *key, uint32_t **off_out, uint32_t **idx_out)
{
    uint32_t *off = calloc(m + 2, sizeof *off), *idx = malloc((m ? m : 1) * sizeof *idx);
    if (!off || !idx) {
        free(off);
        free(idx);
        return -1;
    }
    for (uint32_t r = 0; r < m; r++)
        if (key[r] >= 0 && key[r] < (int32_t)m)
            off[key[r] + 1]++;
    for (uint32_t i = 0; i < m; i++)
        off[i + 1] += off[i];
    off[m + 1] = off[m];
    uint32_t *fill = malloc((m + 1) * sizeof *fill);
    if (!fill) {
        free(off);
        free(idx);
        return -1;
    }
    memcpy(fill, off, (m + 1) * sizeof *fill);
    for (uint32_t r = 0; r < m; r++)
        if (key[r] >= 0 && key[r] < (int32_t)m)
            idx[fill[key[r]]++] = r;
    free(fill);
    *off_out = off;
    *idx_out = idx;
    return 0;
}

static int build_op_figures(tr_model *md)
{
    const partd_graph *g = &md->req->graph;
    const pl_model *pl = &md->pl;
    uint32_t m = pl->m;
    md->f = malloc((m ? m : 1) * sizeof *md->f);
    md->next_outside = malloc((m ? m : 1) * sizeof *md->next_outside);
    md->last_user = malloc((m ? m : 1) * sizeof *md->last_user);
    if (!md->f || !md->next_outside || !md->last_user)
        return -1;
    for (uint32_t r = 0; r < m; r++)
        md->f[r] = partd_node_time_ms(g, pl->op_node[r]);
    return 0;
}

static int build_readers(tr_model *md)
{
    const partd_graph *g = &md->req->graph;
    const pl_model *pl = &md->pl;
    for (uint32_t u = 0; u < md->n_units; u++) {
        tr_unit *un = &md->units[u];
        for (int32_t r = un->lo; r < un->hi; r++) {
            uint32_t v = pl->op_node[r];
            md->next_outside[r] = INT32_MAX;
            md->last_user[r] = -1;
            for (uint32_t k = g->user_off[v]; k < g->user_off[v + 1]; k++) {
                uint32_t w = pl->node_rank[g->user_idx[k]];
                if (w == PARTD_NONE)
                    continue;
                if ((int32_t)w >= un->hi && (int32_t)w < md->next_outside[r])
                    md->next_outside[r] = (int32_t)w;
                if ((int32_t)w > md->last_user[r])
                    md->last_user[r] = (int32_t)w;
            }
            double b = g->has_backward[v] ? g->backward_ms[v]
                                          : md->opt->backward_factor * md->f[r];
            un->bwd += b;
        }
    }
    md->fb_prefix = malloc((md->n_units + 1) * sizeof *md->fb_prefix);
    if (!md->fb_prefix)
        return -1;
    md->fb_prefix[0] = 0;
    for (uint32_t u = 0; u < md->n_units; u++)
        md->fb_prefix[u + 1] = md->fb_prefix[u] + md->units[u].fwd + md->units[u].bwd;
    if (csr_by(pl->m, md->last_user, &md->lu_off, &md->lu_idx) ||
        csr_by(pl->m, md->next_outside, &md->no_off, &md->no_idx))
        return -1;
    return 0;
}

/* ---- device classes --------------------------------------------------------- */

static int build_classes(tr_model *md)
{
    const partd_request *req = md->req;
    uint32_t n = req->n_devices;
    md->cls_speed = malloc(n * sizeof *md->cls_speed);
    md->cls_mem = malloc(n * sizeof *md->cls_mem);
    md->cls_count = calloc(n, sizeof *md->cls_count);
    md->dev_class = malloc(n * sizeof *md->dev_class);
    if (!md->cls_speed || !md->cls_mem || !md->cls_count || !md->dev_class)
        return -1;
    for (uint32_t d = 0; d < n; d++) {
        const partd_device *dv = &req->devices[d];
        uint32_t c = 0;
        while (c < md->n_classes &&
               !(md->cls_speed[c] == dv->speed && md->cls_mem[c] == dv->memory_bytes))
            c++;
        if (c == md->n_classes) {
            md->cls_speed[c] = dv->speed;
            md->cls_mem[c] = dv->memory_bytes;
            md->n_classes++;
        }
        md->cls_count[c]++;
        md->dev_class[d] = c;
        if (dv->memory_bytes > md->max_mem)
            md->max_mem = dv->memory_bytes;
    }
    return 0;
}

/* ---- entry ------------------------------------------------------------------ */

int tr_model_build(tr_model *md, const partd_request *req, partd_problem *pb)
{
    memset(md, 0, sizeof *md);
    md->stats = &md->own_stats;
    md->req = req;
    md->opt = &req->options.training;
    md->M = md->opt->microbatches;
    int rc = pl_model_build(&md->pl, req, NULL, 0, pb);
    if (rc != PARTD_OK)
        return rc;
    md->depth = md->opt->unit_depth ? md->opt->unit_depth : tr_default_depth(req);
    if (build_op_figures(md) || build_units(md) || build_readers(md) || build_classes(md))
        return PARTD_ENOMEM;
    uint32_t S = md->opt->stages;
    if (S > md->n_units) {
        partd_problem_set(pb, 422, "invalid-request", "Invalid request",
                          "the training options do not fit the graph");
        partd_problem_add(pb, "/options/training/stages",
                          "%u stages need %u units; the graph has %u at unit_depth %u", S, S,
                          md->n_units, md->depth);
        return PARTD_EINVALID;
    }
    md->max_stages = S ? S : (req->n_devices < md->n_units ? req->n_devices : md->n_units);
    md->n_k = md->opt->schedule == PARTD_SCHEDULE_GPIPE
                  ? 1
                  : (md->M < md->max_stages ? md->M : md->max_stages);
    return PARTD_OK;
}

void tr_model_free(tr_model *md)
{
    pl_model_free(&md->pl);
    for (uint32_t u = 0; md->unit_name && u < md->n_units; u++)
        free(md->unit_name[u]);
    free(md->unit_name);
    free(md->units);
    free(md->unit_of);
    free(md->fb_prefix);
    free(md->f);
    free(md->next_outside);
    free(md->last_user);
    free(md->lu_off);
    free(md->lu_idx);
    free(md->no_off);
    free(md->no_idx);
    free(md->cls_speed);
    free(md->cls_mem);
    free(md->cls_count);
    free(md->dev_class);
    free(md->len);
    memset(md, 0, sizeof *md);
}
