/*
 * store.h - the durable store: SQLite in WAL mode under --data-dir.
 *
 * Two tables: `jobs` (one row per accepted job: status, times, hashes,
 * idempotency key and request digest, summary or error, and the request body
 * while the job is unfinished so that a restart can queue it again) and
 * `results` (result documents by cache_key with their ETag, summary and
 * coded forms, encoding.h).
 *
 * Threads: one write connection behind a mutex, and a small pool of read
 * connections (WAL readers never block the writer), so HTTP threads and the
 * loop thread may call any function concurrently.
 *
 * Errors: functions return PARTD_OK, PARTD_STORE_MISSING (no such row),
 * PARTD_STORE_CONFLICT (idempotency key already used), PARTD_ENOMEM or
 * PARTD_EIO (SQLite failed: disk full, read-only, I/O error; logged, and
 * partd_store_healthy() turns false until a write succeeds again).
 */
#ifndef PARTD_DAEMON_STORE_H
#define PARTD_DAEMON_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "encoding.h"
#include "job.h"

#define PARTD_STORE_MISSING 1
#define PARTD_STORE_CONFLICT 2

/* Exit codes for partd_store_open failures (sysexits.h values). */
#define PARTD_EXIT_STORE_CORRUPT 65   /* EX_DATAERR */
#define PARTD_EXIT_STORE_UNWRITABLE 73 /* EX_CANTCREAT */

typedef struct partd_store partd_store;

/* Opens (creating when missing) DIR/partd.db, checks that it is a partd store
 * and passes SQLite's quick_check, and that it can be written. On failure
 * returns NULL, writes a sentence to err and the exit code to *exit_code. */
partd_store *partd_store_open(const char *dir, char *err, size_t errcap, int *exit_code);
void partd_store_close(partd_store *s);

/* Caps the database file at about max_bytes (0 = no cap; never below its
 * current size): writes past it fail as on a full disk. PARTD_OK or
 * PARTD_EIO. */
int partd_store_limit_size(partd_store *s, uint64_t max_bytes);

/* 1 while the last write succeeded. */
int partd_store_healthy(partd_store *s);

/* A one-page write that turns the store healthy again when it succeeds
 * (for readiness probes while it is not). PARTD_OK or PARTD_EIO. */
int partd_store_probe(partd_store *s);

/* Inserts a new job. idem_key/digest may be NULL; body (the request) is kept
 * for unfinished jobs. PARTD_STORE_CONFLICT when idem_key is taken. */
int partd_store_insert_job(partd_store *s, const partd_job_row *row, const char *idem_key,
                           const char *digest, const void *body, size_t body_len);

/* Fills *row (caller clears it). */
int partd_store_get_job(partd_store *s, const char *id, partd_job_row *row);

/* The job created with this idempotency key and its request digest. */
int partd_store_get_job_by_idem(partd_store *s, const char *idem_key, partd_job_row *row,
                                char digest[72]);

int partd_store_mark_running(partd_store *s, const char *id, int64_t started_ms);

/* A result to store together with finishing jobs. */
typedef struct partd_store_result {
    const char *cache_key;
    const char *etag;
    const char *summary;
    const partd_blob *forms; /* [PARTD_CODINGS]; the document and its coded forms */
} partd_store_result;

/* In one transaction: stores `result` (when not NULL; kept if present) and
 * sets each row's status, finished time, summary/error, dropping its request
 * body. Rows whose status is queued are put back in the queue instead
 * (started time cleared), which is how a shutdown leaves them. */
int partd_store_finish_jobs(partd_store *s, const partd_store_result *result,
                            const partd_job_row *const *rows, size_t n_rows);

/* Fills forms[0..PARTD_CODINGS) with malloc'd copies (caller frees with
 * partd_blobs_free; coded forms absent for results stored before schema 2)
 * and *summary (malloc'd). On any error nothing is left allocated. */
int partd_store_get_result(partd_store *s, const char *cache_key,
                           partd_blob *forms, char etag[72], char **summary);

/* Marks a result used now (retention counts from its last use).
 * PARTD_STORE_MISSING when it is no longer there. */
int partd_store_touch_result(partd_store *s, const char *cache_key, int64_t now_ms);

/* Jobs newest first: status -1 = any, before_seq 0 = from the newest.
 * Calls fn for each (the row is cleared after fn returns). */
typedef void (*partd_store_row_fn)(const partd_job_row *row, void *ctx);
int partd_store_list(partd_store *s, int status, int64_t before_seq, unsigned limit,
                     partd_store_row_fn fn, void *ctx);

/* Unfinished jobs in submission order with their request bodies. */
typedef void (*partd_store_pending_fn)(const partd_job_row *row, const char *body,
                                       size_t len, void *ctx);
int partd_store_pending(partd_store *s, partd_store_pending_fn fn, void *ctx);

/* Deletes finished jobs finished before cutoff and results unused since
 * cutoff; fn(cache_key) is called for each deleted result before it goes. */
int partd_store_sweep(partd_store *s, int64_t cutoff_ms, void (*fn)(const char *key, void *ctx),
                      void *ctx, unsigned *jobs_deleted, unsigned *results_deleted);
/* (fn may be NULL.) */

#endif
