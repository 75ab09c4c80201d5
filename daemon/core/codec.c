/*
 * codec.c - streaming gzip/zstd decompression and zstd compression;
 * see codec.h.
 */
#include "codec.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "partd/partd.h"

/* Output is handed on in pieces of this size. */
#define PIECE_BYTES ((size_t)64 << 10)
/* windowBits 15 + 16: a gzip wrapper (RFC 1952) instead of zlib's. */
#define GZIP_WINDOW_BITS (15 + 16)
/* Bodies are packed once and unpacked at most a few times (a restart, a
 * takeover): the fastest level keeps packing below the cost of parsing. */
#define PACK_LEVEL 1
#define PACK_SLICE ((size_t)16 << 10)

/* ---- unpacking ------------------------------------------------------------ */

struct partd_unpacker {
    partd_coding coding;
    z_stream zs;        /* gzip */
    ZSTD_DCtx *dctx;    /* zstd */
    int started;        /* any input seen */
    int at_end;         /* the last member or frame is complete */
    int failed;
    char piece[PIECE_BYTES];
};

partd_unpacker *partd_codec_unpacker_new(partd_coding coding)
{
    if (coding != PARTD_CODING_GZIP && coding != PARTD_CODING_ZSTD)
        return NULL;
    partd_unpacker *u = calloc(1, sizeof *u);
    if (!u)
        return NULL;
    u->coding = coding;
    if (coding == PARTD_CODING_GZIP ? inflateInit2(&u->zs, GZIP_WINDOW_BITS) != Z_OK
                                    : (u->dctx = ZSTD_createDCtx()) == NULL) {
        free(u);
        return NULL;
    }
    return u;
}

static int take_gzip(partd_unpacker *u, const char *data, size_t n, partd_piece_fn out,
                     void *ctx)
{
    while (n) {
        uInt slice = n < ((size_t)1 << 30) ? (uInt)n : (uInt)1 << 30;
        u->zs.next_in = (Bytef *)data;
        u->zs.avail_in = slice;
        data += slice;
        n -= slice;
        /* Until the input is used up and inflate has nothing more to say
         * (a full piece may leave output pending). */
        for (;;) {
            if (u->at_end && u->zs.avail_in) {
                /* Another member follows the one that ended. */
                if (inflateReset(&u->zs) != Z_OK)
                    return PARTD_EMALFORMED;
                u->at_end = 0;
            }
            u->zs.next_out = (Bytef *)u->piece;
            u->zs.avail_out = (uInt)PIECE_BYTES;
            uInt before = u->zs.avail_in;
            int z = inflate(&u->zs, Z_NO_FLUSH);
            size_t got = PIECE_BYTES - u->zs.avail_out;
            if (z == Z_MEM_ERROR)
                return PARTD_ENOMEM;
            if ((z != Z_OK && z != Z_STREAM_END && z != Z_BUF_ERROR) ||
                (z == Z_BUF_ERROR && got == 0 && u->zs.avail_in == before && before))
                return PARTD_EMALFORMED;
            if (z == Z_STREAM_END)
                u->at_end = 1;
            int rc = got ? out(ctx, u->piece, got) : PARTD_OK;
            if (rc != PARTD_OK)
                return rc;
            if (u->zs.avail_in == 0 && (u->zs.avail_out != 0 || u->at_end))
                break;
        }
    }
    return PARTD_OK;
}

static int take_zstd(partd_unpacker *u, const char *data, size_t n, partd_piece_fn out,
                     void *ctx)
{
    ZSTD_inBuffer input = {data, n, 0};
    for (;;) {
        size_t in_before = input.pos;
        ZSTD_outBuffer output = {u->piece, PIECE_BYTES, 0};
        size_t left = ZSTD_decompressStream(u->dctx, &output, &input);
        if (ZSTD_isError(left))
            return ZSTD_getErrorCode(left) == ZSTD_error_memory_allocation ? PARTD_ENOMEM
                                                                           : PARTD_EMALFORMED;
        u->at_end = left == 0;
        int rc = output.pos ? out(ctx, u->piece, output.pos) : PARTD_OK;
        if (rc != PARTD_OK)
            return rc;
        /* zstd may stop after a block with output room left and more to
         * give: with the input used up, only the frame's end (everything
         * flushed) or a call that did nothing ends the loop. */
        if (input.pos == input.size &&
            (left == 0 || (output.pos == 0 && input.pos == in_before)))
            break;
    }
    return PARTD_OK;
}

int partd_codec_unpacker_take(partd_unpacker *u, const char *data, size_t n, partd_piece_fn out,
                        void *ctx)
{
    if (u->failed)
        return u->failed;
    if (n == 0)
        return PARTD_OK;
    u->started = 1;
    int rc = u->coding == PARTD_CODING_GZIP ? take_gzip(u, data, n, out, ctx)
                                            : take_zstd(u, data, n, out, ctx);
    if (rc != PARTD_OK)
        u->failed = rc;
    return rc;
}

int partd_codec_unpacker_finish(partd_unpacker *u)
{
    if (u->failed)
        return u->failed;
    return u->started && u->at_end ? PARTD_OK : PARTD_EMALFORMED;
}

void partd_codec_unpacker_free(partd_unpacker *u)
{
    if (!u)
        return;
    if (u->coding == PARTD_CODING_GZIP)
        inflateEnd(&u->zs);
    else
        ZSTD_freeDCtx(u->dctx);
    free(u);
}

/* ---- packing -------------------------------------------------------------- */

struct partd_packer {
    ZSTD_CCtx *cctx;
    char *data;
    size_t len, cap;
    partd_grow_fn grow;
    void *grow_ctx;
    int failed;
};

partd_packer *partd_codec_packer_new(partd_grow_fn grow, void *grow_ctx)
{
    partd_packer *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->grow = grow;
    p->grow_ctx = grow_ctx;
    p->cctx = ZSTD_createCCtx();
    if (!p->cctx || ZSTD_isError(ZSTD_CCtx_setParameter(p->cctx, ZSTD_c_compressionLevel,
                                                        PACK_LEVEL)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(p->cctx, ZSTD_c_checksumFlag, 1))) {
        partd_codec_packer_free(p);
        return NULL;
    }
    return p;
}

/* Room for at least `want` more bytes of frame. */
static int packer_reserve(partd_packer *p, size_t want)
{
    if (p->cap - p->len >= want)
        return PARTD_OK;
    size_t cap = p->cap ? p->cap : PACK_SLICE;
    while (cap - p->len < want) {
        if (cap > SIZE_MAX / 2)
            return PARTD_ENOMEM;
        cap *= 2;
    }
    if (p->grow && !p->grow(p->grow_ctx, cap))
        return PARTD_ENOMEM;
    char *d = realloc(p->data, cap);
    if (!d)
        return PARTD_ENOMEM;
    p->data = d;
    p->cap = cap;
    return PARTD_OK;
}

static int pack(partd_packer *p, const char *data, size_t n, ZSTD_EndDirective mode)
{
    if (p->failed)
        return p->failed;
    ZSTD_inBuffer input = {data, n, 0};
    size_t left;
    do {
        /* Room for this input compressed, or a slice of what zstd still
         * holds when the frame ends. */
        int rc = packer_reserve(p, mode == ZSTD_e_end ? PACK_SLICE : ZSTD_compressBound(n));
        if (rc != PARTD_OK)
            return p->failed = rc;
        ZSTD_outBuffer output = {p->data + p->len, p->cap - p->len, 0};
        left = ZSTD_compressStream2(p->cctx, &output, &input, mode);
        if (ZSTD_isError(left))
            return p->failed = ZSTD_getErrorCode(left) == ZSTD_error_memory_allocation
                                   ? PARTD_ENOMEM
                                   : PARTD_EINTERNAL;
        p->len += output.pos;
    } while (mode == ZSTD_e_end ? left != 0 : input.pos < input.size);
    return PARTD_OK;
}

int partd_codec_packer_take(partd_packer *p, const char *data, size_t n)
{
    return n ? pack(p, data, n, ZSTD_e_continue) : PARTD_OK;
}

int partd_codec_packer_finish(partd_packer *p, partd_blob *out)
{
    int rc = pack(p, NULL, 0, ZSTD_e_end);
    if (rc != PARTD_OK)
        return rc;
    out->data = p->data;
    out->len = p->len;
    p->data = NULL;
    p->len = p->cap = 0;
    return PARTD_OK;
}

void partd_codec_packer_free(partd_packer *p)
{
    if (!p)
        return;
    ZSTD_freeCCtx(p->cctx);
    free(p->data);
    free(p);
}

int partd_codec_is_zstd_frame(const char *data, size_t n)
{
    static const unsigned char magic[4] = {0x28, 0xb5, 0x2f, 0xfd};
    return n >= 4 && memcmp(data, magic, 4) == 0;
}
