/*
 * hash.h - content addresses: graph_hash, cache_key, digests of bytes.
 *
 * graph_hash = "sha256:" + hex SHA-256 of the canonical graph: `nodes` (every
 * member with its default filled in, `meta` left out) and `modules`, keys
 * sorted, compact, the graph's `name` left out.
 * cache_key  = "sha256:" + hex SHA-256 of the canonical {devices, graph_hash,
 * options (every default filled in), planner version}.
 * SHA-256 is OpenSSL's (sha256.h). Returns PARTD_OK or PARTD_ENOMEM, and
 * partd_hash_request also PARTD_ECANCELLED or PARTD_ETIMEOUT from its cancel.
 */
#ifndef PARTD_HASH_H
#define PARTD_HASH_H

#include <stddef.h>

#include "cancel.h"
#include "model.h"
#include "sha256.h"

/* out: 72 bytes ("sha256:" + 64 hex + NUL). */
int partd_hash_bytes(const void *data, size_t len, char out[72]);

/* The same text for a digest made in pieces (sha256.h). */
void partd_hash_digest_text(const unsigned char md[PARTD_SHA256_BYTES], char out[72]);

/* Fills req->graph_hash and req->cache_key. `modules_canonical` is the
 * canonical text of graph.modules (NULL when absent). A 10^6-node graph
 * takes a good part of a second: `cancel` (NULL: never) is looked at every
 * 65,536 nodes. */
int partd_hash_request(partd_request *req, const char *modules_canonical,
                       const partd_cancel *cancel);

#endif
