/*
 * store_pg_row.c - reading the PostgreSQL backend's results: every query
 * asks for binary format, and these readers decode its int4, int8, bool,
 * text and bytea values and the job columns (PARTD_PG_JOB_COLUMNS) into a
 * partd_job_row. See pg_internal.h.
 */
#include "pg_internal.h"

#include <endian.h>
#include <stdlib.h>
#include <string.h>

#include "partd/partd.h"

/* Type oids of the binary results read below (pg_type.h). */
#define OID_BOOL 16
#define OID_INT8 20
#define OID_INT4 23

int64_t partd__pg_int(const PGresult *res, int i, int col)
{
    if (PQgetisnull(res, i, col))
        return 0;
    const char *v = PQgetvalue(res, i, col);
    uint64_t u8;
    uint32_t u4;
    switch (PQftype(res, col)) {
    case OID_INT8:
        memcpy(&u8, v, 8);
        return (int64_t)be64toh(u8);
    case OID_INT4:
        memcpy(&u4, v, 4);
        return (int32_t)be32toh(u4);
    case OID_BOOL:
        return v[0] != 0;
    default:
        return 0;
    }
}

char *partd__pg_text_dup(const PGresult *res, int i, int col)
{
    if (PQgetisnull(res, i, col))
        return NULL;
    return strndup(PQgetvalue(res, i, col), (size_t)PQgetlength(res, i, col));
}

void partd__pg_text_copy(const PGresult *res, int i, int col, char *out, size_t cap)
{
    size_t n = PQgetisnull(res, i, col) ? 0 : (size_t)PQgetlength(res, i, col);
    if (n >= cap)
        n = cap - 1;
    memcpy(out, PQgetvalue(res, i, col), n);
    out[n] = '\0';
}

int partd__pg_read_job(const PGresult *res, int i, partd_job_row *row)
{
    memset(row, 0, sizeof *row);
    partd__pg_text_copy(res, i, 0, row->id, sizeof row->id);
    row->seq = partd__pg_int(res, i, 1);
    char status[16];
    partd__pg_text_copy(res, i, 2, status, sizeof status);
    int st = partd_job_status_parse(status);
    row->status = st < 0 ? PARTD_JOB_FAILED : (partd_job_status)st;
    row->created_ms = partd__pg_int(res, i, 3);
    row->started_ms = partd__pg_int(res, i, 4);
    row->finished_ms = partd__pg_int(res, i, 5);
    partd__pg_text_copy(res, i, 6, row->graph_hash, sizeof row->graph_hash);
    partd__pg_text_copy(res, i, 7, row->cache_key, sizeof row->cache_key);
    row->cached = (int)partd__pg_int(res, i, 8);
    row->summary = partd__pg_text_dup(res, i, 9);
    row->error = partd__pg_text_dup(res, i, 10);
    row->error_status = (int)partd__pg_int(res, i, 11);
    row->attempts = (int)partd__pg_int(res, i, 12);
    partd__pg_text_copy(res, i, 13, row->runner, sizeof row->runner);
    if (PQgetlength(res, i, 14) < (int)sizeof row->about) /* JSON: whole or none */
        partd__pg_text_copy(res, i, 14, row->about, sizeof row->about);
    if ((!PQgetisnull(res, i, 9) && !row->summary) || (!PQgetisnull(res, i, 10) && !row->error)) {
        partd_job_row_clear(row);
        return PARTD_ENOMEM;
    }
    return PARTD_OK;
}

int partd__pg_bytes_dup(const PGresult *r, int i, int col, partd_blob *out)
{
    out->data = NULL;
    out->len = 0;
    if (PQgetisnull(r, i, col))
        return PARTD_OK;
    size_t n = (size_t)PQgetlength(r, i, col);
    out->data = malloc(n + 1);
    if (!out->data)
        return PARTD_ENOMEM;
    memcpy(out->data, PQgetvalue(r, i, col), n);
    out->data[n] = '\0';
    out->len = n;
    return PARTD_OK;
}
