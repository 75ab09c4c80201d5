/* export_ctx.c - the context every format writer works in: its refusals,
 * its approximations, its output's text and the JSON parts several formats
 * share; see export_internal.h. */
#include "export_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "partd/enums.h"
#include "partd/partd.h"

/* ---- refusals and approximations -------------------------------------------- */

static void vrefuse(partd__export_ctx *c, const char *pointer, const char *fmt, va_list ap)
{
    if (c->n_refusals++ == 0)
        partd_problem_set(c->pb, 422, "export-not-expressible", "The plan cannot be exported",
                          "the %s format cannot express this %s plan%s (see errors)",
                          partd_export_format_name(c->format), c->plan->mode,
                          c->flags & PARTD_EXPORT_STRICT ? " exactly" : "");
    char msg[768];
    vsnprintf(msg, sizeof msg, fmt, ap);
    partd_problem_add(c->pb, pointer, "%s", msg);
}

void partd__export_refuse(partd__export_ctx *c, const char *pointer, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vrefuse(c, pointer, fmt, ap);
    va_end(ap);
}

void partd__export_approx(partd__export_ctx *c, const char *code, const char *pointer,
                          const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (c->flags & PARTD_EXPORT_STRICT) {
        vrefuse(c, pointer, fmt, ap);
        va_end(ap);
        return;
    }
    char msg[768];
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    partd__export_note *w = realloc(c->warnings, (c->n_warnings + 1) * sizeof *w);
    if (!w) {
        c->rc = PARTD_ENOMEM;
        return;
    }
    c->warnings = w;
    w[c->n_warnings].code = strdup(code);
    w[c->n_warnings].message = strdup(msg);
    if (!w[c->n_warnings].code || !w[c->n_warnings].message)
        c->rc = PARTD_ENOMEM;
    c->n_warnings++;
}

void partd__export_stage_pointer(char *buf, size_t cap, uint32_t j, const char *key, size_t i)
{
    int n = snprintf(buf, cap, "/partitions/%u", j);
    if (n < 0 || (size_t)n >= cap || !key)
        return;
    partd_problem_pointer_append(buf, cap, key);
    if (i != (size_t)-1)
        partd_problem_pointer_append_index(buf, cap, i);
}

/* ---- output ----------------------------------------------------------------- */

void partd__export_text_init(partd__export_text *t)
{
    *t = (partd__export_text){NULL, 0, 0, 0};
}

void partd__export_printf(partd__export_text *t, const char *fmt, ...)
{
    for (int round = 0; !t->failed && round < 2; round++) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->buf ? t->buf + t->len : NULL, t->cap - t->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            t->failed = 1;
        } else if ((size_t)n < t->cap - t->len) {
            t->len += (size_t)n;
            return;
        } else {
            size_t cap = t->cap ? 2 * t->cap : 1024;
            while (cap < t->len + (size_t)n + 1)
                cap *= 2;
            char *b = realloc(t->buf, cap);
            if (!b)
                t->failed = 1;
            else {
                t->buf = b;
                t->cap = cap;
            }
        }
    }
}

int partd__export_text_finish(partd__export_text *t, char **out, size_t *len)
{
    if (t->failed || !t->buf) {
        free(t->buf);
        *t = (partd__export_text){NULL, 0, 0, 0};
        return PARTD_ENOMEM;
    }
    *out = t->buf;
    *len = t->len;
    return PARTD_OK;
}

void partd__export_comment_header(const partd__export_ctx *c, partd__export_text *f, const char *prefix)
{
    const partd__export_plan *p = c->plan;
    partd__export_printf(f, "%s partd export --format %s: a %s plan", prefix, partd_export_format_name(c->format),
            p->mode);
    if (p->training)
        partd__export_printf(f, " of %u stages on %u ranks, schedule %s, %u microbatches, checkpoint %s",
                p->n_stages, p->n_ranks, partd_training_schedule_name(p->sched), p->microbatches,
                partd_checkpoint_name(p->checkpoint));
    partd__export_printf(f, ".\n");
    for (uint32_t r = 0; p->training && r < p->n_ranks; r++)
        partd__export_printf(f, "%s rank %u runs on device %s\n", prefix, r, p->rank_device[r]);
}

void partd__export_comment_warnings(const partd__export_ctx *c, partd__export_text *f, const char *prefix)
{
    for (uint32_t i = 0; i < c->n_warnings; i++)
        partd__export_printf(f, "%s warning (%s): %s\n", prefix, c->warnings[i].code,
                c->warnings[i].message);
}

int partd__export_json_finish(partd__export_ctx *c, json_t *doc, char **out, size_t *len)
{
    int rc = doc && c->rc == PARTD_OK ? PARTD_OK : PARTD_ENOMEM;
    if (rc == PARTD_OK && c->n_warnings) {
        json_t *ws = json_array();
        for (uint32_t i = 0; ws && i < c->n_warnings; i++)
            if (json_array_append_new(ws, json_pack("{s:s, s:s}", "code", c->warnings[i].code,
                                                    "message", c->warnings[i].message)) != 0)
                rc = PARTD_ENOMEM;
        if (!ws || json_object_set_new(doc, "warnings", ws) != 0)
            rc = PARTD_ENOMEM;
    }
    *out = NULL;
    if (rc == PARTD_OK) {
        *out = partd_problem_json_dump_line(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER, len);
        return *out ? PARTD_OK : PARTD_ENOMEM;
    }
    json_decref(doc);
    return rc;
}

json_t *partd__export_json_rank_devices(const partd__export_plan *p)
{
    json_t *a = json_array();
    for (uint32_t r = 0; a && r < p->n_ranks; r++)
        if (json_array_append_new(a, json_string(p->rank_device[r])) != 0) {
            json_decref(a);
            return NULL;
        }
    return a;
}

json_t *partd__export_json_module_list(const partd__export_names *m, uint32_t n_stages)
{
    json_t *a = json_array();
    for (uint32_t j = 0; a && j < n_stages; j++)
        for (size_t i = 0; i < m[j].n; i++)
            if (json_array_append_new(a, json_string(m[j].v[i])) != 0) {
                json_decref(a);
                return NULL;
            }
    return a;
}

void partd__export_ctx_free(partd__export_ctx *c)
{
    for (uint32_t i = 0; i < c->n_warnings; i++) {
        free(c->warnings[i].code);
        free(c->warnings[i].message);
    }
    free(c->warnings);
}

void partd__export_refuse_tied(partd__export_ctx *c, int same_device, const char *why)
{
    const partd__export_plan *p = c->plan;
    const json_t *tied = json_object_get(p->doc, "tied_params");
    for (size_t i = 0; i < json_array_size(tied); i++) {
        const json_t *t = json_array_get(tied, i);
        const json_t *parts = json_object_get(t, "partitions");
        const char *param = json_string_value(json_object_get(t, "param"));
        const char *first = NULL;
        int apart = 0;
        for (size_t k = 0; param && k < json_array_size(parts); k++) {
            const json_t *id = json_array_get(parts, k);
            json_int_t j = json_integer_value(id);
            if (!json_is_integer(id) || j < 0 || j >= p->n_stages)
                continue;
            const char *d = same_device ? p->stages[j].device : "";
            apart |= first && (!same_device || strcmp(first, d) != 0);
            if (!first)
                first = d;
        }
        if (apart) {
            char ptr[64];
            snprintf(ptr, sizeof ptr, "/tied_params/%zu", i);
            partd__export_refuse(c, ptr, "%s %s", param, why);
        }
    }
}

json_t *partd__export_json_tied(const partd__export_plan *p)
{
    const json_t *tied = json_object_get(p->doc, "tied_params");
    return json_is_array(tied) ? json_deep_copy(tied) : json_array();
}
