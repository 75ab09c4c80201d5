/*
 * store_pg_libpq.c - libpq loaded when a PostgreSQL store is opened
 * (pg_internal.h, partd/dynlib.h): a daemon on SQLite, and the offline
 * commands, never load it or its Kerberos, LDAP and TLS libraries.
 */
#include "pg_internal.h"

PARTD_DYNLIB_DEFINE(partd__pg_libpq, PARTD_PQ_SONAME, PARTD__PG_LIBPQ_FUNCTIONS)
