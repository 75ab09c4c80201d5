/*
 * store.h - the durable store interface: jobs and result documents that
 * survive a restart, whatever keeps them.
 *
 * A store is opened from a store URL whose scheme picks the backend
 * (store_backend.h: a table of partd_store_ops); this build has `sqlite`
 * (sqlite/: SQLite in WAL mode, DIR/partd.db) and `postgresql` (pg/: a
 * server that several replicas share). Callers only use the
 * functions below; they dispatch through the backend's ops, so a backend is
 * added without touching them.
 *
 * What a store keeps: `jobs` (one row per accepted job: status, times,
 * hashes, idempotency key and request digest, summary or error, and the
 * request body while the job is unfinished so that a restart can queue it
 * again) and `results` (result documents by cache_key with their ETag,
 * summary and coded forms, encoding.h).
 *
 * Threads: every function may be called from any thread concurrently (HTTP
 * threads and the loop thread), except partd_store_close.
 *
 * Errors (the daemon convention): functions return PARTD_OK, a negative
 * PARTD_E* code from partd/partd.h - PARTD_ENOMEM, or PARTD_EIO when the
 * backend failed (disk full, read-only, I/O error; logged, and for writes
 * partd_store_healthy() turns false until a write succeeds again) - or one
 * of the store's positive outcomes PARTD_STORE_MISSING (no such row) and
 * PARTD_STORE_CONFLICT (idempotency key already used; job already
 * finished). partd_store_open writes a sentence to `err` and a sysexits.h
 * code to *exit_code, since there the caller needs the reason.
 *
 * Ownership: rows handed back own their summary/error (job.h); results are
 * malloc'd copies the caller frees as each function says. Strings passed in
 * are borrowed for the duration of the call.
 */
#ifndef PARTD_DAEMON_STORE_H
#define PARTD_DAEMON_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "core/encoding.h"
#include "core/job.h"

#define PARTD_STORE_MISSING 1
#define PARTD_STORE_CONFLICT 2
#define PARTD_STORE_DAMAGED 3 /* a stored result that does not match its hash */

/* Exit codes for partd_store_open failures. An existing store that is not
 * a partd store (an empty file, another program's database, one that fails
 * SQLite's quick_check, a newer schema) is 1, as the contract says; the
 * others are sysexits.h values. */
#define PARTD_EXIT_STORE_URL 64        /* EX_USAGE: a store URL this build cannot open */
#define PARTD_EXIT_STORE_CORRUPT 1     /* not a partd store (contract: exit 1) */
#define PARTD_EXIT_STORE_UNAVAILABLE 69 /* EX_UNAVAILABLE: the server cannot be reached */
#define PARTD_EXIT_STORE_UNWRITABLE 73 /* EX_CANTCREAT */

/* The store URL used when none is given. */
#define PARTD_STORE_DEFAULT_URL "sqlite"

typedef struct partd_store partd_store;

/* Opens the store that `url` names (NULL or "" = PARTD_STORE_DEFAULT_URL);
 * data_dir is where an embedded backend keeps its files (sqlite: creates
 * data_dir and data_dir/partd.db when missing, checks that it is a partd
 * store - not an empty file - that passes SQLite's quick_check and can be
 * written, and upgrades an
 * older schema in place). A scheme no backend of this build handles is
 * refused naming the scheme only (a URL may carry a password). On failure
 * returns NULL, writes a sentence to err and the exit code to *exit_code. */
partd_store *partd_store_open_url(const char *url, const char *data_dir, char *err,
                                  size_t errcap, int *exit_code);

/* partd_store_open_url(PARTD_STORE_DEFAULT_URL, dir, ...). */
partd_store *partd_store_open(const char *dir, char *err, size_t errcap, int *exit_code);

/* Closes the store (NULL is fine); no call may be running. */
void partd_store_close(partd_store *s);

/* "sqlite", ...: the scheme of the backend behind s. */
const char *partd_store_kind(const partd_store *s);

/* Caps the store's size at about max_bytes (0 = no cap; never below its
 * current size; sqlite: the database file and its write-ahead log
 * together): writes past it fail as on a full disk. PARTD_OK or
 * PARTD_EIO. */
int partd_store_limit_size(partd_store *s, uint64_t max_bytes);

/* Bytes the store can still take before its size cap (partd_store_limit_size):
 * UINT64_MAX when it has none. PARTD_OK or PARTD_EIO. */
int partd_store_room(partd_store *s, uint64_t *bytes);

/* About what storing the next job takes, for readiness: twice the largest
 * request body or result written through s so far (a write-ahead log holds
 * it before the database file does), and at least
 * PARTD_STORE_JOB_MIN_BYTES (a small job, before any was written). */
#define PARTD_STORE_JOB_MIN_BYTES ((uint64_t)64 << 10)
uint64_t partd_store_job_bytes(partd_store *s);

/* 1 while the last write succeeded. */
int partd_store_healthy(partd_store *s);

/* A small real write that turns the store healthy again when it succeeds
 * (for readiness probes while it is not). PARTD_OK or PARTD_EIO. */
int partd_store_probe(partd_store *s);

/* Inserts a new job. idem_key/digest may be NULL; body (the request) is kept
 * for unfinished jobs. PARTD_STORE_CONFLICT when idem_key is taken. The job
 * is durable when this returns PARTD_OK. */
int partd_store_insert_job(partd_store *s, const partd_job_row *row, const char *idem_key,
                           const char *digest, const void *body, size_t body_len);

/* Fills *row (caller clears it). PARTD_STORE_MISSING when there is none. */
int partd_store_get_job(partd_store *s, const char *id, partd_job_row *row);

/* The job created with this idempotency key and its request digest. */
int partd_store_get_job_by_idem(partd_store *s, const char *idem_key, partd_job_row *row,
                                char digest[72]);

/* Marks the job running since started_ms on `runner` (a replica's name) and
 * counts the attempt (attempts + 1); durable when it returns, so that a run
 * that takes the process down is counted. PARTD_STORE_MISSING when there is
 * no such job. */
int partd_store_mark_running(partd_store *s, const char *id, int64_t started_ms,
                             const char *runner);

/* A result to store together with finishing jobs. */
typedef struct partd_store_result {
    const char *cache_key;
    const char *etag;
    const char *summary;
    const partd_blob *forms; /* [PARTD_CODINGS]; the document and its coded forms */
} partd_store_result;

/* In one transaction: stores `result` (when not NULL; replacing one stored
 * under the same key, as partd_store_put_result) and sets each row's status,
 * finished time, summary/error and cached flag, and its started time when
 * not 0 (else the one mark_running wrote stays), dropping its request body.
 * Rows whose status is queued or running are put back in the queue instead
 * (started time cleared; a running one's attempt is not counted, since it
 * was stopped, not lost), which is how a shutdown leaves them. On a shared
 * store a row is written only while the job is still the row's claim
 * (unfinished, same runner and attempts); a job cancelled or taken over
 * meanwhile is left as it is (not an error). */
int partd_store_finish_jobs(partd_store *s, const partd_store_result *result,
                            const partd_job_row *const *rows, size_t n_rows);

/* Stores a result without finishing any job (a run whose jobs were all
 * cancelled); an existing one is replaced (results are deterministic, so
 * only a damaged copy differs) and counts as used now. */
int partd_store_put_result(partd_store *s, const partd_store_result *result);

/* Atomically cancels an unfinished (queued or running) job: status
 * cancelled, finished at finished_ms, request body dropped, as a cancel
 * through partd_store_finish_jobs leaves it. Fills *row (when not NULL;
 * caller clears it) with the cancelled job. PARTD_STORE_MISSING when there
 * is no such job, PARTD_STORE_CONFLICT when it has already finished (then
 * the row is left unchanged and *row is not filled); on PARTD_ENOMEM the
 * job may be cancelled while *row is not filled. */
int partd_store_cancel_job(partd_store *s, const char *id, int64_t finished_ms,
                           partd_job_row *row);

/* Fills forms[0..PARTD_CODINGS) with malloc'd copies (caller frees with
 * partd_encoding_forms_free; coded forms absent for results stored before schema 2)
 * and *summary (malloc'd). On any error nothing is left allocated. */
int partd_store_get_result(partd_store *s, const char *cache_key,
                           partd_blob *forms, char etag[72], char **summary);

/* partd_store_get_result, checked before anything is served from it: the
 * document must hash to its ETag, else PARTD_STORE_DAMAGED (logged, nothing
 * left allocated); a coded form that does not decode to the document is
 * dropped (logged), so that only the document is served. Whatever the
 * backend, so every caller that serves a stored result or answers a cache
 * hit from one uses this. */
int partd_store_load_result(partd_store *s, const char *cache_key, partd_blob *forms,
                            char etag[72], char **summary);

/* Marks a result used now (retention counts from its last use).
 * PARTD_STORE_MISSING when it is no longer there. */
int partd_store_touch_result(partd_store *s, const char *cache_key, int64_t now_ms);

/* Jobs newest first: status -1 = any, before_seq 0 = from the newest, at
 * most `limit`. Calls fn for each (the row is cleared after fn returns). */
typedef void (*partd_store_row_fn)(const partd_job_row *row, void *ctx);
int partd_store_list(partd_store *s, int status, int64_t before_seq, unsigned limit,
                     partd_store_row_fn fn, void *ctx);

/* Unfinished jobs in submission order with their request bodies (body is
 * valid during the call only). fn may write to the store meanwhile. */
typedef void (*partd_store_pending_fn)(const partd_job_row *row, const char *body,
                                       size_t len, void *ctx);
int partd_store_pending(partd_store *s, partd_store_pending_fn fn, void *ctx);

/* The clock the store's times are compared against, in ms since the epoch:
 * a shared store's database server's (so that replicas whose clocks
 * disagree still agree on what is old), else this process's. A shared
 * store also writes the times retention compares (a job's finished_ms, a
 * result's last use) on that clock, whatever the caller passed, so that a
 * replica whose clock runs behind cannot make its jobs look old. PARTD_OK or
 * PARTD_EIO (the server is unreachable). */
int partd_store_now_ms(partd_store *s, int64_t *now_ms);

/* Deletes finished jobs finished before cutoff and results unused since
 * cutoff (cutoff counted on partd_store_now_ms's clock); fn(cache_key) (fn may be NULL) is called for each deleted result
 * before it goes. The counts are 0 unless it returns PARTD_OK. */
typedef void (*partd_store_key_fn)(const char *key, void *ctx);
int partd_store_sweep(partd_store *s, int64_t cutoff_ms, partd_store_key_fn fn, void *ctx,
                      unsigned *jobs_deleted, unsigned *results_deleted);

/* ---- work shared by replicas ---------------------------------------------
 * A shared store (postgresql) holds the queue of every replica: each
 * replica claims jobs, holds a lease on them that it renews while planning,
 * and finishes them only while it still holds the claim. The SQLite store
 * is not shared: the functions below are not called on it. */

/* 1 when replicas share the store (the calls below are available). */
int partd_store_shared(const partd_store *s);

/* Claims up to max_jobs jobs, oldest first, in one transaction that other
 * replicas skip: queued ones, and running ones whose lease has run out (their
 * replica died). Each becomes running on `runner` with a lease of lease_ms,
 * started now, attempts + 1; fn gets it with its request body (valid during
 * the call). A job whose lease ran out after max_attempts attempts is
 * claimed without counting another and handed over with exhausted = 1: the
 * caller fails it (partd_store_finish_jobs) instead of running it. */
typedef void (*partd_store_claimed_fn)(const partd_job_row *row, const char *body, size_t len,
                                       int exhausted, void *ctx);
int partd_store_claim(partd_store *s, const char *runner, int64_t lease_ms, unsigned max_jobs,
                      int max_attempts, partd_store_claimed_fn fn, void *ctx);

/* A claim to renew: the job and the attempt that claimed it. */
typedef struct partd_store_lease {
    const char *id;
    int attempts;
} partd_store_lease;

/* Extends the leases that `runner` still holds to now + lease_ms; lost(id)
 * is called for each job that is no longer this claim (cancelled, finished
 * or taken over): its run must stop. PARTD_OK or PARTD_EIO (then nothing is
 * reported lost). */
int partd_store_renew(partd_store *s, const char *runner, int64_t lease_ms,
                      const partd_store_lease *leases, size_t n, partd_store_key_fn lost,
                      void *ctx);

/* The number of queued jobs of every replica, or a negative PARTD_E* code.
 * Counted at most once a second (between counts, this replica's own
 * submissions and claims adjust the figure). Any thread. */
int64_t partd_store_count_queued(partd_store *s);

/* Round trips to the database server so far (0 for a store without a
 * server). Any thread. */
uint64_t partd_store_round_trips(partd_store *s);

/* New work is announced on a socket: the fd to watch for reading (-1 while
 * the server cannot be reached; ask again later), then after it turned
 * readable partd_store_listen_consume: 1 new work, 0 nothing, -1 the
 * connection is lost (stop watching the fd, then partd_store_listen_reset).
 * One thread at a time: partd_store_listen_fd may block while it connects,
 * the other two do not. */
int partd_store_listen_fd(partd_store *s);
int partd_store_listen_consume(partd_store *s);
void partd_store_listen_reset(partd_store *s);

#endif
