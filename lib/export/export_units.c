/* export_units.c - unit names as the training result writes them; see
 * export_internal.h.
 *
 * Contract v3, "Units": a unit is named by its module key, a run of nodes
 * without a module by its first node's name, and the k-th run (k >= 2) with
 * a name already used gets "#k" appended. So "layers.3#2" is a second run
 * of layers.3 (operations outside its module cut it), and the module a
 * runtime knows is the name before the "#". */
#include "export_internal.h"

#include <stdlib.h>
#include <string.h>

#include "partd/partd.h"

size_t partd__export_unit_base_len(const char *name)
{
    size_t len = strlen(name);
    size_t i = len;
    while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9')
        i--;
    /* "#k" with k a number of at least 2, no leading zero */
    if (i == len || i < 2 || name[i - 1] != '#' || name[i] == '0')
        return len;
    if (len - i == 1 && name[i] == '1')
        return len;
    return i - 1;
}

int partd__export_layer_index(const char *name, size_t len, size_t *prefix_len,
                              uint64_t *index)
{
    size_t i = len;
    while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9')
        i--;
    /* at least one digit, at most 18 (no overflow), after a '.' that
     * follows a non-empty prefix; "07" is not how PyTorch names an index */
    if (i == len || len - i > 18 || i < 2 || name[i - 1] != '.')
        return 0;
    if (name[i] == '0' && len - i > 1)
        return 0;
    uint64_t v = 0;
    for (size_t k = i; k < len; k++)
        v = v * 10 + (uint64_t)(name[k] - '0');
    *prefix_len = i - 1;
    *index = v;
    return 1;
}

const char *partd__export_str_at(const json_t *array, size_t i)
{
    return json_string_value(json_array_get(array, i));
}

int partd__export_is_checkpointed(const partd__export_stage *s, const char *unit)
{
    for (size_t i = 0; i < json_array_size(s->checkpointed); i++) {
        const char *c = partd__export_str_at(s->checkpointed, i);
        if (c && strcmp(c, unit) == 0)
            return 1;
    }
    return 0;
}

size_t partd__export_n_checkpointed(const partd__export_plan *p)
{
    size_t n = 0;
    for (uint32_t j = 0; j < p->n_stages; j++)
        n += json_array_size(p->stages[j].checkpointed);
    return n;
}

static int names_push(partd__export_names *l, const char *name, size_t len)
{
    char **v = realloc(l->v, (l->n + 1) * sizeof *v);
    if (!v)
        return PARTD_ENOMEM;
    l->v = v;
    v[l->n] = strndup(name, len);
    return v[l->n++] ? PARTD_OK : PARTD_ENOMEM;
}

void partd__export_modules_free(partd__export_names *m, uint32_t n_stages)
{
    for (uint32_t j = 0; m && j < n_stages; j++) {
        for (size_t i = 0; i < m[j].n; i++)
            free(m[j].v[i]);
        free(m[j].v);
    }
    free(m);
}

/* seen: module name -> the stage that holds it (a jansson object as a
 * hash set: the names are UTF-8, as the result was). */
static int stage_modules(partd__export_ctx *c, uint32_t j, json_t *seen, partd__export_names *out)
{
    const partd__export_stage *s = &c->plan->stages[j];
    for (size_t i = 0; i < json_array_size(s->units); i++) {
        const char *u = partd__export_str_at(s->units, i);
        size_t len = partd__export_unit_base_len(u);
        char *base = strndup(u, len);
        if (!base)
            return PARTD_ENOMEM;
        json_t *at = json_object_get(seen, base);
        int rc = PARTD_OK;
        if (!at) {
            rc = json_object_set_new(seen, base, json_integer(j)) == 0 ? names_push(out, u, len)
                                                                     : PARTD_ENOMEM;
        } else if (json_integer_value(at) != j) {
            char ptr[128];
            partd__export_stage_pointer(ptr, sizeof ptr, j, "units", i);
            partd__export_refuse(c, ptr,
                                 "%s continues module %s of stage %lld: a runtime that builds "
                                 "stages from whole modules cannot cut it between stages",
                                 u, base, (long long)json_integer_value(at));
        }
        free(base);
        if (rc != PARTD_OK)
            return rc;
    }
    return PARTD_OK;
}

int partd__export_modules(partd__export_ctx *c, partd__export_names **out)
{
    uint32_t n = c->plan->n_stages;
    partd__export_names *m = calloc(n, sizeof *m);
    json_t *seen = json_object();
    int rc = m && seen ? PARTD_OK : PARTD_ENOMEM;
    for (uint32_t j = 0; rc == PARTD_OK && j < n; j++)
        rc = stage_modules(c, j, seen, &m[j]);
    json_decref(seen);
    if (rc != PARTD_OK) {
        partd__export_modules_free(m, n);
        m = NULL;
    }
    *out = m;
    return rc;
}
