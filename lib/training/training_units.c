/*
 * training_units.c - units, per-operation figures and device classes of the
 * training planner; see training_internal.h.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "partd/partd.h"
#include "training_internal.h"

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

uint32_t partd__training_units_default_depth(const partd_request *req)
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

uint32_t partd__training_units_count(const partd_request *req, uint32_t depth)
{
    const partd_graph *g = &req->graph;
    uint32_t n = 0, prev = PARTD_NONE;
    for (uint32_t v = 0; v < g->n_nodes; v++) {
        if (!partd_op_is_operation(g->op[v]))
            continue;
        if (prev == PARTD_NONE || !same_key(node_key(req, prev), node_key(req, v), depth))
            n++;
        prev = v;
    }
    return n;
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
static int dedupe_names(partd_training_model *md)
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

static int build_units(partd_training_model *md)
{
    const partd_request *req = md->req;
    const partd_pipeline_model *pl = &md->pl;
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
        partd_training_unit *u = &md->units[n - 1];
        u->hi = (int32_t)r + 1;
        u->f += md->f[r];
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

static int build_op_figures(partd_training_model *md)
{
    const partd_graph *g = &md->req->graph;
    const partd_pipeline_model *pl = &md->pl;
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

/* A node holds parameters when it names some, has param_bytes, or reads a
 * get_attr node (contract, "Figures of a stage"). */
static int holds_params(const partd_graph *g, uint32_t v)
{
    if (g->has_params[v] || g->param_bytes[v] > 0)
        return 1;
    for (uint32_t k = g->in_off[v]; k < g->in_off[v + 1]; k++)
        if (g->op[g->in_idx[k]] == PARTD_OP_GET_ATTR)
            return 1;
    return 0;
}

static int build_readers(partd_training_model *md)
{
    const partd_graph *g = &md->req->graph;
    const partd_pipeline_model *pl = &md->pl;
    for (uint32_t u = 0; u < md->n_units; u++) {
        partd_training_unit *un = &md->units[u];
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
            un->b += b;
            un->w += g->has_weight_grad[v] ? g->weight_grad_ms[v]
                     : holds_params(g, v) ? md->opt->weight_grad_fraction * b
                                          : 0.0;
        }
    }
    uint32_t n = md->n_units;
    md->pf = malloc((n + 1) * sizeof *md->pf);
    md->pb = malloc((n + 1) * sizeof *md->pb);
    md->pw = malloc((n + 1) * sizeof *md->pw);
    if (!md->pf || !md->pb || !md->pw)
        return -1;
    md->pf[0] = md->pb[0] = md->pw[0] = 0;
    for (uint32_t u = 0; u < n; u++) {
        md->pf[u + 1] = md->pf[u] + md->units[u].f;
        md->pb[u + 1] = md->pb[u] + md->units[u].b;
        md->pw[u + 1] = md->pw[u] + md->units[u].w;
    }
    if (csr_by(pl->m, md->last_user, &md->lu_off, &md->lu_idx) ||
        csr_by(pl->m, md->next_outside, &md->no_off, &md->no_idx))
        return -1;
    return 0;
}

/* ---- device classes --------------------------------------------------------- */

static int build_classes(partd_training_model *md)
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
    }
    md->cls_dev_off = calloc(md->n_classes + 1, sizeof *md->cls_dev_off);
    md->cls_dev = malloc(n * sizeof *md->cls_dev);
    if (!md->cls_dev_off || !md->cls_dev)
        return -1;
    for (uint32_t c = 0; c < md->n_classes; c++)
        md->cls_dev_off[c + 1] = md->cls_dev_off[c] + md->cls_count[c];
    for (uint32_t c = 0, k = 0; c < md->n_classes; c++)
        for (uint32_t d = 0; d < n; d++)
            if (md->dev_class[d] == c)
                md->cls_dev[k++] = d;
    return 0;
}

/* ---- bytes live across each cut, parameters read by each unit ------------ */

/* live[u]: output bytes of the placeholders and operations born before
 * unit u's first operation and read at or after it (the output node reads
 * after the last operation): the pipeline's boundaries. */
static int build_live(partd_training_model *md)
{
    const partd_graph *g = &md->req->graph;
    const partd_pipeline_model *pl = &md->pl;
    uint32_t m = pl->m, n = md->n_units;
    int64_t *diff = calloc((size_t)m + 2, sizeof *diff);
    md->live = malloc((n + 1) * sizeof *md->live);
    if (!diff || !md->live) {
        free(diff);
        return -1;
    }
    for (uint32_t v = 0; v < g->n_nodes; v++) {
        int32_t birth;
        if (partd_op_is_operation(g->op[v]))
            birth = (int32_t)pl->node_rank[v];
        else if (g->op[v] == PARTD_OP_PLACEHOLDER)
            birth = -1;
        else
            continue;
        int32_t last = -1;
        for (uint32_t k = g->user_off[v]; k < g->user_off[v + 1]; k++) {
            uint32_t r = pl->node_rank[g->user_idx[k]];
            int32_t x = r == PARTD_NONE ? (int32_t)m : (int32_t)r;
            last = x > last ? x : last;
        }
        if (last > birth) { /* cut positions birth + 1 .. last */
            diff[birth + 1] += g->output_bytes[v];
            diff[last + 1] -= g->output_bytes[v];
        }
    }
    int64_t acc = 0;
    uint32_t u = 0;
    for (uint32_t x = 0; x <= m && u <= n; x++) {
        acc += diff[x];
        while (u <= n && (u == n ? (int32_t)m : md->units[u].lo) == (int32_t)x)
            md->live[u++] = acc;
    }
    free(diff);
    md->live[0] = md->live[n] = 0;
    md->min_live = INT64_MAX;
    for (uint32_t c = 1; c < n; c++)
        md->min_live = md->live[c] < md->min_live ? md->live[c] : md->min_live;
    if (md->min_live == INT64_MAX)
        md->min_live = 0;
    return 0;
}

/* The parameter resources of every unit: named parameters (of its
 * operations and of the get_attr nodes they read) and unnamed get_attr
 * nodes (n_params + node), each once per unit, as the pipeline model counts
 * them; anon: the unnamed param_bytes of operations, as a prefix. */
static int build_resources(partd_training_model *md)
{
    const partd_graph *g = &md->req->graph;
    const partd_pipeline_model *pl = &md->pl;
    uint32_t n = md->n_units, np = g->n_params;
    md->n_res = np + g->n_nodes;
    md->res_bytes = calloc(md->n_res ? md->n_res : 1, sizeof *md->res_bytes);
    md->res_off = calloc((size_t)n + 1, sizeof *md->res_off);
    md->anon = calloc((size_t)n + 1, sizeof *md->anon);
    uint32_t *seen = malloc((md->n_res ? md->n_res : 1) * sizeof *seen);
    if (!md->res_bytes || !md->res_off || !md->anon || !seen) {
        free(seen);
        return -1;
    }
    for (uint32_t x = 0; x < md->n_res; x++)
        seen[x] = UINT32_MAX;
    for (uint32_t x = 0; x < np; x++)
        md->res_bytes[x] = g->param_size[x];
    size_t cap = 0, used = 0;
    for (int pass = 0; pass < 2; pass++) {
        used = 0;
        for (uint32_t u = 0; u < n; u++) {
            md->res_off[u] = (uint32_t)used;
            if (pass == 0)
                md->anon[u + 1] = md->anon[u];
            for (int32_t r = md->units[u].lo; r < md->units[u].hi; r++) {
                uint32_t v = pl->op_node[r];
                if (pass == 0 && !g->has_params[v])
                    md->anon[u + 1] += g->param_bytes[v];
                for (uint32_t k = g->in_off[v]; k <= g->in_off[v + 1]; k++) {
                    uint32_t src = k < g->in_off[v + 1] ? g->in_idx[k] : v;
                    if (src != v && g->op[src] != PARTD_OP_GET_ATTR)
                        continue;
                    uint32_t first = g->par_off[src], last = g->par_off[src + 1];
                    int unnamed = src != v && !g->has_params[src];
                    for (uint32_t j = unnamed ? 0 : first; j < (unnamed ? 1 : last); j++) {
                        uint32_t x = unnamed ? np + src : g->par_idx[j];
                        if (unnamed)
                            md->res_bytes[x] = g->output_bytes[src] > g->param_bytes[src]
                                                   ? g->output_bytes[src]
                                                   : g->param_bytes[src];
                        if (seen[x] == u + (uint32_t)pass * n)
                            continue;
                        seen[x] = u + (uint32_t)pass * n;
                        if (pass)
                            md->res_idx[used] = x;
                        used++;
                    }
                }
            }
        }
        md->res_off[n] = (uint32_t)used;
        if (pass == 0) {
            cap = used ? used : 1;
            if (!(md->res_idx = malloc(cap * sizeof *md->res_idx))) {
                free(seen);
                return -1;
            }
            for (uint32_t x = 0; x < md->n_res; x++)
                seen[x] = UINT32_MAX;
        }
    }
    free(seen);
    return 0;
}

int partd__training_grow(void *array, size_t size, size_t *cap, size_t need)
{
    if (need <= *cap)
        return PARTD_OK;
    size_t c = *cap ? *cap : 16;
    while (c < need)
        c *= 2;
    void **a = array;
    void *p = realloc(*a, c * size);
    if (!p)
        return PARTD_ENOMEM;
    *a = p;
    *cap = c;
    return PARTD_OK;
}

/* ---- entry ------------------------------------------------------------------ */

int partd__training_model_build(partd_training_model *md, const partd_request *req, partd_problem *pb)
{
    memset(md, 0, sizeof *md);
    md->stats = &md->own_stats;
    md->req = req;
    md->opt = &req->options.training;
    md->M = md->opt->microbatches;
    int rc = partd_pipeline_model_build(&md->pl, req, NULL, 0, pb);
    if (rc != PARTD_OK)
        return rc;
    md->depth = md->opt->unit_depth ? md->opt->unit_depth : partd__training_units_default_depth(req);
    md->ms_per_byte = 1000.0 / req->options.transfer_bytes_per_sec;
    if (build_op_figures(md) || build_units(md) || build_readers(md) || build_classes(md) ||
        build_live(md) || build_resources(md))
        return PARTD_ENOMEM;
    (void)pb;
    return PARTD_OK;
}

void partd__training_model_free(partd_training_model *md)
{
    partd_pipeline_model_free(&md->pl);
    for (uint32_t u = 0; md->unit_name && u < md->n_units; u++)
        free(md->unit_name[u]);
    free(md->unit_name);
    free(md->units);
    free(md->unit_of);
    free(md->pf);
    free(md->pb);
    free(md->pw);
    free(md->live);
    free(md->res_off);
    free(md->res_idx);
    free(md->res_bytes);
    free(md->anon);
    free(md->cls_dev_off);
    free(md->cls_dev);
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
    memset(md, 0, sizeof *md);
}
