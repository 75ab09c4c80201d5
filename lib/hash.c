/*
 * hash.c - graph_hash and cache_key; see hash.h.
 *
 * The canonical texts are produced with jansson (JSON_SORT_KEYS |
 * JSON_COMPACT) one node at a time and streamed into the digest, so hashing a
 * million-node graph needs no second copy of the graph in memory. Every
 * member is written with its default filled in, so a request that spells out
 * a default hashes like one that leaves it out.
 */
#include "hash.h"

#include <jansson.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "partd.h"

#define DUMP_FLAGS (JSON_SORT_KEYS | JSON_COMPACT | JSON_ENSURE_ASCII | JSON_REAL_PRECISION(17))

static void to_hex(const unsigned char *md, unsigned n, char out[72])
{
    static const char digits[] = "0123456789abcdef";
    memcpy(out, "sha256:", 7);
    for (unsigned i = 0; i < n && i < 32; i++) {
        out[7 + 2 * i] = digits[md[i] >> 4];
        out[8 + 2 * i] = digits[md[i] & 15];
    }
    out[71] = '\0';
}

int partd_sha256_hex(const void *data, size_t len, char out[72])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned n = 0;
    if (!EVP_Digest(data, len, md, &n, EVP_sha256(), NULL))
        return PARTD_EINTERNAL;
    to_hex(md, n, out);
    return PARTD_OK;
}

static int update_str(EVP_MD_CTX *ctx, const char *s)
{
    return EVP_DigestUpdate(ctx, s, strlen(s)) ? 0 : -1;
}

/* Dumps v (stolen reference) into the digest. */
static int update_json(EVP_MD_CTX *ctx, json_t *v)
{
    if (!v)
        return -1;
    char *s = json_dumps(v, DUMP_FLAGS | JSON_ENCODE_ANY);
    json_decref(v);
    if (!s)
        return -1;
    int rc = update_str(ctx, s);
    free(s);
    return rc;
}

static const char *const op_names[] = {"placeholder", "get_attr", "call_module",
                                       "call_function", "call_method", "output"};

static json_t *str(const partd_request *r, uint32_t id)
{
    return json_stringn(partd_str(&r->strings, id), partd_strlen(&r->strings, id));
}

static json_t *canonical_node(const partd_request *r, uint32_t p)
{
    const partd_graph *g = &r->graph;
    json_t *o = json_object();
    json_t *inputs = json_array();
    if (!o || !inputs) {
        json_decref(o);
        json_decref(inputs);
        return NULL;
    }
    json_object_set_new(o, "name", str(r, g->name[p]));
    json_object_set_new(o, "op", json_string(op_names[g->op[p]]));
    if (g->target[p] != PARTD_NONE)
        json_object_set_new(o, "target", str(r, g->target[p]));
    if (g->module[p] != PARTD_NONE)
        json_object_set_new(o, "module", str(r, g->module[p]));
    for (uint32_t k = g->in_off[p]; k < g->in_off[p + 1]; k++)
        json_array_append_new(inputs, str(r, g->name[g->in_idx[k]]));
    json_object_set_new(o, "inputs", inputs);
    json_object_set_new(o, "output_bytes", json_integer(g->output_bytes[p]));
    json_object_set_new(o, "param_bytes", json_integer(g->param_bytes[p]));
    if (g->has_params[p]) {
        json_t *params = json_array();
        for (uint32_t k = g->par_off[p]; k < g->par_off[p + 1]; k++) {
            json_t *e = json_object();
            json_object_set_new(e, "name", str(r, g->param_name[g->par_idx[k]]));
            json_object_set_new(e, "bytes", json_integer(g->param_size[g->par_idx[k]]));
            json_array_append_new(params, e);
        }
        json_object_set_new(o, "params", params);
    }
    json_object_set_new(o, "latency_ms", json_real(g->latency_ms[p]));
    json_object_set_new(o, "mem_latency_ms", json_real(g->mem_latency_ms[p]));
    return o;
}

/* Nodes in request order: the order is part of what the client asked for
 * (size_based fills devices in it). */
static int hash_graph(const partd_request *r, const char *modules_canonical, char out[72])
{
    const partd_graph *g = &r->graph;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    uint32_t *by_request = malloc((size_t)(g->n_nodes ? g->n_nodes : 1) * sizeof *by_request);
    int rc = -1;
    if (!ctx || !by_request || !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL))
        goto out;
    for (uint32_t p = 0; p < g->n_nodes; p++)
        by_request[g->request_index[p]] = p;
    if (update_str(ctx, "{"))
        goto out;
    if (modules_canonical &&
        (update_str(ctx, "\"modules\":") || update_str(ctx, modules_canonical) ||
         update_str(ctx, ",")))
        goto out;
    if (update_str(ctx, "\"nodes\":["))
        goto out;
    for (uint32_t i = 0; i < g->n_nodes; i++)
        if ((i && update_str(ctx, ",")) || update_json(ctx, canonical_node(r, by_request[i])))
            goto out;
    if (update_str(ctx, "]}"))
        goto out;
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned n = 0;
    if (!EVP_DigestFinal_ex(ctx, md, &n))
        goto out;
    to_hex(md, n, out);
    rc = 0;
out:
    EVP_MD_CTX_free(ctx);
    free(by_request);
    return rc;
}

static json_t *name_list(const partd_request *r, const uint32_t *ids, uint32_t n)
{
    json_t *a = json_array();
    for (uint32_t i = 0; i < n; i++)
        json_array_append_new(a, str(r, ids[i]));
    return a;
}

static json_t *canonical_options(const partd_request *r)
{
    static const char *const modes[] = {"pipeline", "size_based"};
    static const char *const balance[] = {"time", "memory", "params", "uniform"};
    static const char *const schedules[] = {"inference", "gpipe", "1f1b"};
    const partd_options *o = &r->options;
    json_t *pipe = json_pack("{s:I, s:s, s:o, s:s, s:I, s:f}",
                             "stages", (json_int_t)o->pipeline.stages,
                             "balance_by", balance[o->pipeline.balance_by],
                             "cut_after", name_list(r, o->pipeline.cut_after, o->pipeline.n_cut_after),
                             "schedule", schedules[o->pipeline.schedule],
                             "microbatches", (json_int_t)o->pipeline.microbatches,
                             "param_factor", o->pipeline.param_factor);
    json_t *sac = json_null();
    if (o->sac.enabled) {
        json_decref(sac);
        sac = json_pack("{s:I, s:I, s:o, s:o, s:b, s:f, s:f, s:I}",
                        "memory_budget_bytes", (json_int_t)o->sac.memory_budget_bytes,
                        "world_size", (json_int_t)o->sac.world_size,
                        "ac_units", o->sac.has_ac_units
                                        ? name_list(r, o->sac.ac_units, o->sac.n_ac_units)
                                        : json_null(),
                        "fsdp_units", o->sac.has_fsdp_units
                                          ? name_list(r, o->sac.fsdp_units, o->sac.n_fsdp_units)
                                          : json_null(),
                        "op_level", o->sac.op_level,
                        "time_limit_ms", o->sac.time_limit_ms,
                        "relative_gap", o->sac.relative_gap,
                        "frontier_points", (json_int_t)o->sac.frontier_points);
    }
    return json_pack("{s:s, s:f, s:o, s:o}", "mode", modes[o->mode],
                     "transfer_bytes_per_sec", o->transfer_bytes_per_sec,
                     "pipeline", pipe, "sac", sac);
}

static int hash_cache_key(const partd_request *r, char out[72])
{
    json_t *devices = json_array();
    for (uint32_t i = 0; i < r->n_devices; i++) {
        const partd_device *d = &r->devices[i];
        json_array_append_new(devices, json_pack("{s:o, s:I, s:I, s:f}",
                                                 "name", str(r, d->name),
                                                 "memory_bytes", (json_int_t)d->memory_bytes,
                                                 "logical_id", (json_int_t)d->logical_id,
                                                 "speed", d->speed));
    }
    json_t *doc = json_pack("{s:o, s:s, s:o, s:s}", "devices", devices,
                            "graph_hash", r->graph_hash,
                            "options", canonical_options(r),
                            "planner_version", PARTD_PLANNER_VERSION);
    if (!doc)
        return -1;
    char *s = json_dumps(doc, DUMP_FLAGS);
    json_decref(doc);
    if (!s)
        return -1;
    int rc = partd_sha256_hex(s, strlen(s), out);
    free(s);
    return rc == PARTD_OK ? 0 : -1;
}

int partd_request_hash(partd_request *req, const char *modules_canonical)
{
    if (hash_graph(req, modules_canonical, req->graph_hash) != 0)
        return PARTD_ENOMEM;
    if (hash_cache_key(req, req->cache_key) != 0)
        return PARTD_ENOMEM;
    return PARTD_OK;
}
