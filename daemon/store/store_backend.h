/*
 * store_backend.h - what a store backend implements: a partd_store_ops
 * table of functions, one per operation of store.h, over the backend's own
 * state. store.c picks the table by the store URL's scheme and dispatches
 * every partd_store_* call through it; only store.c and the backends include
 * this header.
 *
 * Adding a backend: a folder daemon/store/<name>/ with its files, names
 * private to it (partd__<name>_*) declared in its <name>_internal.h, and
 * its ops (each with the semantics, error codes and thread safety that
 * store.h states for the public function of the same name) in the one
 * public table partd_store_<name>_ops; declare the table here and list it
 * in store.c's BACKENDS.
 *
 * Errors: as store.h - PARTD_OK, a negative PARTD_E* code (partd/partd.h), or
 * PARTD_STORE_MISSING / PARTD_STORE_CONFLICT; `open` writes a sentence to err
 * and a PARTD_EXIT_STORE_* code to *exit_code.
 *
 * Ownership: `open` returns the backend's state (owned by the partd_store
 * handle that store.c makes) and `close` frees it.
 */
#ifndef PARTD_DAEMON_STORE_BACKEND_H
#define PARTD_DAEMON_STORE_BACKEND_H

#include "store.h"

typedef struct partd_store_ops {
    /* The URL scheme this backend answers, matched case-insensitively
     * ("sqlite" or "sqlite:..."). */
    const char *scheme;
    /* Another name of the scheme, or NULL ("postgres" for "postgresql"). */
    const char *alias;

    /* The state for `url` (its whole text, scheme included), or NULL with
     * err and *exit_code set. */
    void *(*open)(const char *url, const char *data_dir, char *err, size_t errcap,
                  int *exit_code);
    void (*close)(void *state);

    int (*limit_size)(void *state, uint64_t max_bytes);
    /* As partd_store_room; NULL when the backend has no size cap. */
    int (*room)(void *state, uint64_t *bytes);
    int (*healthy)(void *state);
    int (*probe)(void *state);
    /* As partd_store_now_ms; NULL: this process's clock. */
    int (*now_ms)(void *state, int64_t *now_ms);
    /* Round trips to a database server so far; NULL when there are none. */
    uint64_t (*round_trips)(void *state);

    int (*insert_job)(void *state, const partd_job_row *row, const char *idem_key,
                      const char *digest, const void *body, size_t body_len);
    int (*get_job)(void *state, const char *id, partd_job_row *row);
    int (*get_job_by_idem)(void *state, const char *idem_key, partd_job_row *row,
                           char digest[72]);
    int (*mark_running)(void *state, const char *id, int64_t started_ms, const char *runner);
    /* result and rows as partd_store_finish_jobs; result may be NULL and
     * n_rows 0 (partd_store_put_result). */
    int (*finish_jobs)(void *state, const partd_store_result *result,
                       const partd_job_row *const *rows, size_t n_rows);
    int (*cancel_job)(void *state, const char *id, int64_t finished_ms, partd_job_row *row);

    int (*get_result)(void *state, const char *cache_key, partd_blob *forms, char etag[72],
                      char **summary);
    int (*touch_result)(void *state, const char *cache_key, int64_t now_ms);

    int (*list)(void *state, int status, int64_t before_seq, unsigned limit,
                partd_store_row_fn fn, void *ctx);
    int (*pending)(void *state, partd_store_pending_fn fn, void *ctx);
    int (*sweep)(void *state, int64_t cutoff_ms, partd_store_key_fn fn, void *ctx,
                 unsigned *jobs_deleted, unsigned *results_deleted);

    /* Work sharing (store.h): NULL in a backend that is not shared. */
    int (*claim)(void *state, const char *runner, int64_t lease_ms, unsigned max_jobs,
                 int max_attempts, partd_store_claimed_fn fn, void *ctx);
    int (*renew)(void *state, const char *runner, int64_t lease_ms,
                 const partd_store_lease *leases, size_t n, partd_store_key_fn lost, void *ctx);
    int64_t (*count_queued)(void *state);
    int (*listen_fd)(void *state);
    int (*listen_consume)(void *state);
    void (*listen_reset)(void *state);
} partd_store_ops;

/* SQLite in WAL mode (sqlite/store_sqlite.c). */
extern const partd_store_ops partd_store_sqlite_ops;
/* PostgreSQL through libpq, shared by replicas (pg/store_pg.c). */
extern const partd_store_ops partd_store_pg_ops;

#endif
