/*
 * store.c - the store interface: picks a backend by the store URL's scheme
 * and dispatches every call through its ops. See store.h and
 * store_backend.h.
 */
#include "store.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/log.h"
#include "core/time.h"
#include "partd/hash.h"
#include "partd/partd.h"
#include "store_backend.h"

struct partd_store {
    const partd_store_ops *ops;
    void *state; /* the backend's, freed by ops->close */
    /* The largest request body or result (all its forms) written so far:
     * what the next job is likely to need (partd_store_job_bytes). */
    atomic_uint_fast64_t largest_write;
};

static void note_write(partd_store *s, uint64_t bytes)
{
    uint64_t seen = atomic_load(&s->largest_write);
    while (bytes > seen && !atomic_compare_exchange_weak(&s->largest_write, &seen, bytes))
        ;
}

static uint64_t result_bytes(const partd_store_result *result)
{
    uint64_t n = 0;
    for (int i = 0; result && i < PARTD_CODINGS; i++)
        n += result->forms[i].len;
    return n;
}

/* Every backend this build has, by scheme. */
static const partd_store_ops *const BACKENDS[] = {
    &partd_store_sqlite_ops,
    &partd_store_pg_ops,
};

#define N_BACKENDS (sizeof BACKENDS / sizeof BACKENDS[0])

/* The length of url's scheme: the text before the first ':', or all of it
 * (a bare kind such as "sqlite"). */
static size_t scheme_len(const char *url)
{
    const char *colon = strchr(url, ':');
    return colon ? (size_t)(colon - url) : strlen(url);
}

static const partd_store_ops *backend_for(const char *url)
{
    size_t n = scheme_len(url);
    for (size_t i = 0; i < N_BACKENDS; i++) {
        const char *names[] = {BACKENDS[i]->scheme, BACKENDS[i]->alias};
        for (size_t k = 0; k < 2; k++)
            if (names[k] && strlen(names[k]) == n && strncasecmp(url, names[k], n) == 0)
                return BACKENDS[i];
    }
    return NULL;
}

/* "unknown store scheme "x"; this build supports sqlite": only the scheme
 * is quoted, since the rest of a URL may hold a password. */
static void unknown_scheme(const char *url, char *err, size_t cap)
{
    char supported[128] = "";
    size_t used = 0;
    for (size_t i = 0; i < N_BACKENDS && used < sizeof supported; i++)
        used += (size_t)snprintf(supported + used, sizeof supported - used, "%s%s",
                                 i ? ", " : "", BACKENDS[i]->scheme);
    size_t n = scheme_len(url);
    if (n == 0)
        snprintf(err, cap, "the store URL has no scheme; this build supports: %s", supported);
    else
        snprintf(err, cap, "unknown store scheme \"%.*s\"; this build supports: %s",
                 n > 64 ? 64 : (int)n, url, supported);
}

partd_store *partd_store_open_url(const char *url, const char *data_dir, char *err,
                                  size_t errcap, int *exit_code)
{
    if (!url || !*url)
        url = PARTD_STORE_DEFAULT_URL;
    const partd_store_ops *ops = backend_for(url);
    if (!ops) {
        unknown_scheme(url, err, errcap);
        *exit_code = PARTD_EXIT_STORE_URL;
        return NULL;
    }
    partd_store *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errcap, "out of memory");
        *exit_code = PARTD_EXIT_STORE_UNWRITABLE;
        return NULL;
    }
    s->ops = ops;
    s->state = ops->open(url, data_dir, err, errcap, exit_code);
    if (!s->state) {
        free(s);
        return NULL;
    }
    return s;
}

partd_store *partd_store_open(const char *dir, char *err, size_t errcap, int *exit_code)
{
    return partd_store_open_url(PARTD_STORE_DEFAULT_URL, dir, err, errcap, exit_code);
}

void partd_store_close(partd_store *s)
{
    if (!s)
        return;
    s->ops->close(s->state);
    free(s);
}

const char *partd_store_kind(const partd_store *s)
{
    return s->ops->scheme;
}

int partd_store_limit_size(partd_store *s, uint64_t max_bytes)
{
    return s->ops->limit_size(s->state, max_bytes);
}

int partd_store_room(partd_store *s, uint64_t *bytes)
{
    if (!s->ops->room) {
        *bytes = UINT64_MAX;
        return PARTD_OK;
    }
    return s->ops->room(s->state, bytes);
}

uint64_t partd_store_job_bytes(partd_store *s)
{
    uint64_t twice = 2 * atomic_load(&s->largest_write);
    return twice > PARTD_STORE_JOB_MIN_BYTES ? twice : PARTD_STORE_JOB_MIN_BYTES;
}

int partd_store_healthy(partd_store *s)
{
    return s->ops->healthy(s->state);
}

int partd_store_probe(partd_store *s)
{
    return s->ops->probe(s->state);
}

int partd_store_insert_job(partd_store *s, const partd_job_row *row, const char *idem_key,
                           const char *digest, const void *body, size_t body_len)
{
    note_write(s, body_len);
    return s->ops->insert_job(s->state, row, idem_key, digest, body, body_len);
}

int partd_store_get_job(partd_store *s, const char *id, partd_job_row *row)
{
    return s->ops->get_job(s->state, id, row);
}

int partd_store_get_job_by_idem(partd_store *s, const char *idem_key, partd_job_row *row,
                                char digest[72])
{
    return s->ops->get_job_by_idem(s->state, idem_key, row, digest);
}

int partd_store_mark_running(partd_store *s, const char *id, int64_t started_ms,
                             const char *runner)
{
    return s->ops->mark_running(s->state, id, started_ms, runner);
}

int partd_store_finish_jobs(partd_store *s, const partd_store_result *result,
                            const partd_job_row *const *rows, size_t n_rows)
{
    note_write(s, result_bytes(result));
    return s->ops->finish_jobs(s->state, result, rows, n_rows);
}

int partd_store_put_result(partd_store *s, const partd_store_result *result)
{
    note_write(s, result_bytes(result));
    return s->ops->finish_jobs(s->state, result, NULL, 0);
}

int partd_store_cancel_job(partd_store *s, const char *id, int64_t finished_ms,
                           partd_job_row *row)
{
    return s->ops->cancel_job(s->state, id, finished_ms, row);
}

int partd_store_get_result(partd_store *s, const char *cache_key, partd_blob *forms,
                           char etag[72], char **summary)
{
    return s->ops->get_result(s->state, cache_key, forms, etag, summary);
}

int partd_store_touch_result(partd_store *s, const char *cache_key, int64_t now_ms)
{
    return s->ops->touch_result(s->state, cache_key, now_ms);
}

int partd_store_list(partd_store *s, int status, int64_t before_seq, unsigned limit,
                     partd_store_row_fn fn, void *ctx)
{
    return s->ops->list(s->state, status, before_seq, limit, fn, ctx);
}

int partd_store_pending(partd_store *s, partd_store_pending_fn fn, void *ctx)
{
    return s->ops->pending(s->state, fn, ctx);
}

int partd_store_sweep(partd_store *s, int64_t cutoff_ms, partd_store_key_fn fn, void *ctx,
                      unsigned *jobs_deleted, unsigned *results_deleted)
{
    return s->ops->sweep(s->state, cutoff_ms, fn, ctx, jobs_deleted, results_deleted);
}

int partd_store_shared(const partd_store *s)
{
    return s->ops->claim != NULL;
}

int partd_store_claim(partd_store *s, const char *runner, int64_t lease_ms, unsigned max_jobs,
                      int max_attempts, partd_store_claimed_fn fn, void *ctx)
{
    return s->ops->claim(s->state, runner, lease_ms, max_jobs, max_attempts, fn, ctx);
}

int partd_store_renew(partd_store *s, const char *runner, int64_t lease_ms,
                      const partd_store_lease *leases, size_t n, partd_store_key_fn lost,
                      void *ctx)
{
    return s->ops->renew(s->state, runner, lease_ms, leases, n, lost, ctx);
}

int partd_store_listen_fd(partd_store *s)
{
    return s->ops->listen_fd(s->state);
}

int partd_store_listen_consume(partd_store *s)
{
    return s->ops->listen_consume(s->state);
}

void partd_store_listen_reset(partd_store *s)
{
    s->ops->listen_reset(s->state);
}

int64_t partd_store_count_queued(partd_store *s)
{
    return s->ops->count_queued(s->state);
}

int partd_store_now_ms(partd_store *s, int64_t *now_ms)
{
    if (!s->ops->now_ms) {
        *now_ms = partd_time_now_ms();
        return PARTD_OK;
    }
    return s->ops->now_ms(s->state, now_ms);
}

uint64_t partd_store_round_trips(partd_store *s)
{
    return s->ops->round_trips ? s->ops->round_trips(s->state) : 0;
}

/* 1 when the coded form decodes to exactly doc. */
static int coded_form_matches(partd_coding coding, const partd_blob *form, const partd_blob *doc)
{
    partd_blob plain = {0};
    if (partd_encoding_decode(coding, form->data, form->len, doc->len, NULL, NULL, &plain) != PARTD_OK)
        return 0;
    int same = plain.len == doc->len && memcmp(plain.data, doc->data, doc->len) == 0;
    free(plain.data);
    return same;
}

int partd_store_load_result(partd_store *s, const char *cache_key, partd_blob *forms,
                            char etag[72], char **summary)
{
    int rc = partd_store_get_result(s, cache_key, forms, etag, summary);
    if (rc != PARTD_OK)
        return rc;
    const partd_blob *doc = &forms[PARTD_CODING_IDENTITY];
    char hash[72];
    rc = partd_hash_bytes(doc->data, doc->len, hash);
    if (rc == PARTD_OK && strcmp(hash, etag) != 0) {
        partd_log_msg("error", "store", "the stored result %s does not match its hash (ETag %s, "
                      "content %s): not served; planning the request again replaces it",
                      cache_key, etag, hash);
        rc = PARTD_STORE_DAMAGED;
    }
    for (int c = PARTD_CODING_IDENTITY + 1; rc == PARTD_OK && c < PARTD_CODINGS; c++) {
        if (forms[c].data && !coded_form_matches((partd_coding)c, &forms[c], doc)) {
            partd_log_msg("error", "store", "the stored %s form of result %s does not decode "
                          "to the document: serving the document only",
                          partd_encoding_name((partd_coding)c), cache_key);
            free(forms[c].data);
            forms[c].data = NULL;
            forms[c].len = 0;
        }
    }
    if (rc != PARTD_OK) {
        partd_encoding_forms_free(forms);
        free(*summary);
        *summary = NULL;
    }
    return rc;
}
