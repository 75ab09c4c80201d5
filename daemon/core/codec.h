/*
 * codec.h - content codings a piece at a time: a request body that
 * arrives gzip- or zstd-coded is decompressed as it arrives (unpacker), and a
 * body is kept for the store as a zstd frame built as it arrives (packer), so
 * that the plain text of a large body never has to be held whole.
 *
 * Ownership: each object is the caller's (free it with its _free function);
 * a finished packer hands its frame to the caller's partd_blob.
 * Errors:
 *   unpacker: PARTD_EMALFORMED (not a valid stream of the coding, or it ends
 *             inside a member or frame), PARTD_ENOMEM, or the first error the
 *             output callback returned (the unpacker stops there);
 *   packer:   PARTD_ENOMEM (allocation failed or the grow callback refused),
 *             PARTD_EINTERNAL (the compression library failed).
 * After an error an object only accepts _free.
 */
#ifndef PARTD_DAEMON_CODEC_H
#define PARTD_DAEMON_CODEC_H

#include <stddef.h>

#include "encoding.h"

/* Receives a piece of output; returns PARTD_OK to go on, an error to stop. */
typedef int (*partd_piece_fn)(void *ctx, const char *data, size_t n);

typedef struct partd_unpacker partd_unpacker;

/* coding is PARTD_CODING_GZIP (one or more members) or PARTD_CODING_ZSTD
 * (one or more frames). NULL when out of memory or for another coding. */
partd_unpacker *partd_codec_unpacker_new(partd_coding coding);
int partd_codec_unpacker_take(partd_unpacker *u, const char *data, size_t n, partd_piece_fn out,
                        void *ctx);
/* The input has ended: PARTD_OK when it ended after a whole member or frame. */
int partd_codec_unpacker_finish(partd_unpacker *u);
void partd_codec_unpacker_free(partd_unpacker *u);

typedef struct partd_packer partd_packer;

/* grow (NULL: always yes) approves every enlargement of the frame's buffer. */
partd_packer *partd_codec_packer_new(partd_grow_fn grow, void *grow_ctx);
int partd_codec_packer_take(partd_packer *p, const char *data, size_t n);
/* Ends the frame and moves it into *out (malloc'd, caller frees). */
int partd_codec_packer_finish(partd_packer *p, partd_blob *out);
void partd_codec_packer_free(partd_packer *p);

/* 1 when bytes start with a zstd frame's magic number. No JSON text starts
 * so, which is how a stored body tells its form. */
int partd_codec_is_zstd_frame(const char *data, size_t n);

#endif
