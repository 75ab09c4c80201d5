/*
 * store_pg_claim.c - work sharing on the PostgreSQL store: claiming queued
 * jobs and jobs whose replica died (FOR UPDATE SKIP LOCKED, so replicas
 * claiming at once never take the same job), and renewing the leases of
 * the jobs a replica runs. See store.h ("work shared by replicas") and
 * pg_internal.h.
 *
 * Leases are compared on the database's clock (PARTD_PG_NOW_MS), so that
 * replicas with skewed clocks agree on when one ran out.
 */
#include "pg_internal.h"

#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "partd/cancel.h"
#include "partd/clock.h"
#include "partd/partd.h"

/* How long a count of the queue is used (adjusted by this replica's own
 * changes) before the server is asked again. */
#define QUEUED_MAX_AGE_MS 1000

void partd__pg_queued_changed(partd__pg_store *s, int64_t delta, int forget)
{
    pthread_mutex_lock(&s->queued_lock);
    if (forget)
        s->queued_ms = 0;
    else if (s->queued_ms)
        s->queued = s->queued + delta > 0 ? s->queued + delta : 0;
    pthread_mutex_unlock(&s->queued_lock);
}

/* Records a fresh count of the queue. */
static void queued_counted(partd__pg_store *s, int64_t n)
{
    int64_t now = partd_clock_ns() / 1000000;
    pthread_mutex_lock(&s->queued_lock);
    s->queued = n > 0 ? n : 0;
    s->queued_ms = now > 0 ? now : 1;
    pthread_mutex_unlock(&s->queued_lock);
}

/* One statement: pick the oldest claimable jobs that no other transaction
 * holds, and make them ours. The attempt is counted, except for a job
 * whose lease ran out after max_attempts attempts: that one is only taken
 * (to be failed by the caller), and flagged `exhausted`. Each row also
 * says how many jobs were queued when the statement began (its snapshot),
 * so the queue's depth after the claim comes with it: the caller learns
 * whether any are left without asking again. */
static const char CLAIM_SQL[] =
    "WITH c AS (SELECT seq, status AS old_status, attempts AS old_attempts FROM jobs "
    " WHERE status = 'queued' OR (status = 'running' AND "
    "  (lease_until_ms IS NULL OR lease_until_ms < " PARTD_PG_NOW_MS "))"
    " ORDER BY seq LIMIT $3 FOR UPDATE SKIP LOCKED) "
    "UPDATE jobs j SET status = 'running', runner = $1, started_ms = " PARTD_PG_NOW_MS ","
    " lease_until_ms = " PARTD_PG_NOW_MS " + $2,"
    " attempts = CASE WHEN c.old_status = 'running' AND c.old_attempts >= $4"
    "  THEN j.attempts ELSE j.attempts + 1 END "
    "FROM c WHERE j.seq = c.seq RETURNING j.id, j.seq, j.status, j.created_ms, j.started_ms,"
    " j.finished_ms, j.graph_hash, j.cache_key, j.cached, j.summary, j.error, j.error_status,"
    " j.attempts, j.runner, j.about, j.request,"
    " (c.old_status = 'running' AND c.old_attempts >= $4) AS exhausted,"
    " (c.old_status = 'queued') AS was_queued,"
    " (SELECT count(*) FROM jobs WHERE status = 'queued') AS queued_before";

int partd__pg_claim(void *state, const char *runner, int64_t lease_ms, unsigned max_jobs,
                    int max_attempts, partd_store_claimed_fn fn, void *ctx)
{
    partd__pg_store *s = state;
    atomic_store(&s->lease_ms, lease_ms);
    if (max_jobs == 0)
        return PARTD_OK;
    partd__pg_params p = {0};
    partd__pg_param_text(&p, runner);
    partd__pg_param_i64(&p, lease_ms);
    partd__pg_param_i64(&p, max_jobs);
    partd__pg_param_i64(&p, max_attempts);
    partd__pg_conn *c = partd__pg_acquire(s);
    if (!c)
        return PARTD_EIO;
    /* Autocommit: the claim is durable before any of it runs. */
    PGresult *r = partd__pg_exec(s, c, CLAIM_SQL, &p, "claiming jobs", NULL);
    partd__pg_release(s, c);
    if (!r)
        return PARTD_EIO;
    int rc = PARTD_OK;
    int body_col = PARTD_PG_N_JOB_COLUMNS, exhausted_col = PARTD_PG_N_JOB_COLUMNS + 1;
    int64_t was_queued = 0;
    for (int i = 0; i < PQntuples(r); i++)
        was_queued += partd__pg_int(r, i, PARTD_PG_N_JOB_COLUMNS + 2);
    if (PQntuples(r) > 0)
        queued_counted(s, partd__pg_int(r, 0, PARTD_PG_N_JOB_COLUMNS + 3) - was_queued);
    for (int i = 0; rc == PARTD_OK && i < PQntuples(r); i++) {
        partd_job_row row;
        rc = partd__pg_read_job(r, i, &row);
        if (rc != PARTD_OK)
            break; /* the rest stay claimed; their leases run out */
        fn(&row, PQgetvalue(r, i, body_col), (size_t)PQgetlength(r, i, body_col),
           partd__pg_int(r, i, exhausted_col) != 0, ctx);
        partd_job_row_clear(&row);
    }
    PQclear(r);
    return rc;
}

/* Appends `text` to a growing buffer. 0 or -1 (ENOMEM). */
static int append(char **buf, size_t *len, size_t *cap, const char *text)
{
    size_t n = strlen(text);
    if (*len + n + 1 > *cap) {
        size_t want = (*cap ? *cap * 2 : 256) + n;
        char *p = realloc(*buf, want);
        if (!p)
            return -1;
        *buf = p;
        *cap = want;
    }
    memcpy(*buf + *len, text, n + 1);
    *len += n;
    return 0;
}

/* The leases as two array literals, '{id,...}' and '{attempts,...}' (ids
 * are hex: nothing to quote). */
static int lease_arrays(const partd_store_lease *leases, size_t n, char **ids, char **atts)
{
    size_t il = 0, ic = 0, al = 0, ac = 0;
    int bad = append(ids, &il, &ic, "{") | append(atts, &al, &ac, "{");
    for (size_t i = 0; i < n && !bad; i++) {
        char num[24];
        snprintf(num, sizeof num, "%s%d", i ? "," : "", leases[i].attempts);
        bad |= append(ids, &il, &ic, i ? "," : "") | append(ids, &il, &ic, leases[i].id) |
               append(atts, &al, &ac, num);
    }
    bad |= append(ids, &il, &ic, "}") | append(atts, &al, &ac, "}");
    return bad ? PARTD_ENOMEM : PARTD_OK;
}

int partd__pg_renew(void *state, const char *runner, int64_t lease_ms,
                    const partd_store_lease *leases, size_t n, partd_store_key_fn lost,
                    void *ctx)
{
    partd__pg_store *s = state;
    if (n == 0)
        return PARTD_OK;
    char *ids = NULL, *atts = NULL;
    int rc = lease_arrays(leases, n, &ids, &atts);
    PGresult *r = NULL;
    if (rc == PARTD_OK) {
        partd__pg_params p = {0};
        partd__pg_param_text(&p, runner);
        partd__pg_param_i64(&p, lease_ms);
        partd__pg_param_text(&p, ids);
        partd__pg_param_text(&p, atts);
        partd__pg_conn *c = partd__pg_acquire(s);
        rc = PARTD_EIO;
        if (c) {
            r = partd__pg_exec(s, c,
                               "UPDATE jobs j SET lease_until_ms = " PARTD_PG_NOW_MS " + $2 "
                               "FROM unnest($3::text[], $4::int[]) AS l(id, attempts) "
                               "WHERE j.id = l.id AND j.attempts = l.attempts AND j.runner = $1 "
                               "AND j.status = 'running' RETURNING j.id",
                               &p, "renewing leases", NULL);
            partd__pg_release(s, c);
            rc = r ? PARTD_OK : PARTD_EIO;
        }
    }
    free(ids);
    free(atts);
    for (size_t i = 0; r && i < n; i++) {
        int held = 0;
        for (int k = 0; k < PQntuples(r) && !held; k++)
            held = strcmp(PQgetvalue(r, k, 0), leases[i].id) == 0 &&
                   (size_t)PQgetlength(r, k, 0) == strlen(leases[i].id);
        if (!held)
            lost(leases[i].id, ctx);
    }
    PQclear(r);
    return rc;
}

int64_t partd__pg_count_queued(void *state)
{
    partd__pg_store *s = state;
    int64_t now = partd_clock_ns() / 1000000;
    int64_t cached = -1;
    pthread_mutex_lock(&s->queued_lock);
    if (s->queued_ms && now - s->queued_ms < QUEUED_MAX_AGE_MS)
        cached = s->queued;
    pthread_mutex_unlock(&s->queued_lock);
    if (cached >= 0)
        return cached;
    partd__pg_conn *c = partd__pg_acquire(s);
    if (!c)
        return PARTD_EIO;
    PGresult *r = partd__pg_exec(s, c, "SELECT count(*) FROM jobs WHERE status = 'queued'", NULL,
                                 "counting queued jobs", NULL);
    partd__pg_release(s, c);
    if (!r)
        return PARTD_EIO;
    int64_t n = partd__pg_int(r, 0, 0);
    PQclear(r);
    queued_counted(s, n);
    return n;
}
