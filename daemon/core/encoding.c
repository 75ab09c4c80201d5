/*
 * encoding.c - gzip (zlib) and zstd (libzstd) forms of result documents,
 * and Accept-Encoding negotiation.
 */
#include "encoding.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>
#include <zstd.h>

#include "codec.h"
#include "partd/partd.h"

/* zlib's default level: the document is compressed once per plan, but it
 * may be tens of megabytes, and higher levels gain nothing on these
 * documents (measured on a 1 MB result: level 9 is no smaller). */
#define GZIP_LEVEL 6
/* zstd's default level. Its window for large inputs (2 MiB) stays inside
 * the 8 MiB that RFC 9659 lets HTTP clients insist on. */
#define ZSTD_LEVEL 3
/* windowBits 15 + 16: a gzip wrapper (RFC 1952) instead of zlib's. */
#define GZIP_WINDOW_BITS (15 + 16)

const char *partd_encoding_name(partd_coding coding)
{
    switch (coding) {
    case PARTD_CODING_ZSTD:
        return "zstd";
    case PARTD_CODING_GZIP:
        return "gzip";
    default:
        return "identity";
    }
}

/* Input goes to the compressor in slices of this size, the job's cancel
 * flag and deadline checked between them: a large document is compressed in
 * seconds, and a job stops within a slice of its deadline. */
#define ENCODE_SLICE ((size_t)1 << 20)

static int encode_gzip(const char *in, size_t len, partd_blob *out, const partd_cancel *cancel)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (deflateInit2(&zs, GZIP_LEVEL, Z_DEFLATED, GZIP_WINDOW_BITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return PARTD_EINTERNAL;
    /* deflateBound covers the whole input however it is fed, so the output
     * never needs to grow. */
    size_t cap = deflateBound(&zs, (uLong)len);
    char *buf = malloc(cap ? cap : 1);
    if (!buf) {
        deflateEnd(&zs);
        return PARTD_ENOMEM;
    }
    /* avail_out is 32-bit: a large output space goes in slices. */
    const size_t out_slice = (size_t)1 << 30;
    const Bytef *next_in = (const Bytef *)in;
    size_t in_left = len, out_left = cap;
    zs.next_out = (Bytef *)buf;
    int rc = Z_OK, stopped = PARTD_OK;
    while (rc == Z_OK) {
        if (zs.avail_in == 0 && in_left) {
            if ((stopped = partd_cancel_check(cancel)) != PARTD_OK)
                break;
            size_t n = in_left < ENCODE_SLICE ? in_left : ENCODE_SLICE;
            zs.next_in = (Bytef *)next_in;
            zs.avail_in = (uInt)n;
            next_in += n;
            in_left -= n;
        }
        if (zs.avail_out == 0) {
            size_t n = out_left < out_slice ? out_left : out_slice;
            zs.avail_out = (uInt)n;
            out_left -= n;
        }
        rc = deflate(&zs, in_left ? Z_NO_FLUSH : Z_FINISH);
    }
    size_t produced = (size_t)((char *)zs.next_out - buf);
    deflateEnd(&zs);
    if (stopped != PARTD_OK || rc != Z_STREAM_END) {
        free(buf);
        return stopped != PARTD_OK ? stopped : PARTD_EINTERNAL;
    }
    out->data = buf;
    out->len = produced;
    return PARTD_OK;
}

static int encode_zstd(const char *in, size_t len, partd_blob *out, const partd_cancel *cancel)
{
    size_t cap = ZSTD_compressBound(len);
    if (ZSTD_isError(cap))
        return PARTD_EINTERNAL;
    char *buf = malloc(cap);
    ZSTD_CCtx *cctx = buf ? ZSTD_createCCtx() : NULL;
    if (!cctx) {
        free(buf);
        return PARTD_ENOMEM;
    }
    int rc = ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, ZSTD_LEVEL)) ||
                     ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1)) ||
                     ZSTD_isError(ZSTD_CCtx_setPledgedSrcSize(cctx, len))
                 ? PARTD_EINTERNAL
                 : PARTD_OK;
    ZSTD_outBuffer output = {buf, cap, 0};
    size_t at = 0, left = 1;
    while (rc == PARTD_OK && left != 0) {
        if ((rc = partd_cancel_check(cancel)) != PARTD_OK)
            break;
        size_t n = len - at < ENCODE_SLICE ? len - at : ENCODE_SLICE;
        ZSTD_inBuffer input = {in + at, n, 0};
        ZSTD_EndDirective mode = at + n == len ? ZSTD_e_end : ZSTD_e_continue;
        do
            left = ZSTD_compressStream2(cctx, &output, &input, mode);
        while (!ZSTD_isError(left) && (input.pos < input.size || (mode == ZSTD_e_end && left)));
        if (ZSTD_isError(left))
            rc = PARTD_EINTERNAL;
        at += n;
        if (mode == ZSTD_e_continue)
            left = 1;
    }
    ZSTD_freeCCtx(cctx);
    if (rc != PARTD_OK) {
        free(buf);
        return rc;
    }
    out->data = buf;
    out->len = output.pos;
    return PARTD_OK;
}

static int encode_within(partd_coding coding, const char *in, size_t len, partd_blob *out,
                         const partd_cancel *cancel)
{
    out->data = NULL;
    out->len = 0;
    switch (coding) {
    case PARTD_CODING_GZIP:
        return encode_gzip(in, len, out, cancel);
    case PARTD_CODING_ZSTD:
        return encode_zstd(in, len, out, cancel);
    default:
        return PARTD_EINTERNAL;
    }
}

int partd_encoding_encode(partd_coding coding, const char *in, size_t len, partd_blob *out)
{
    return encode_within(coding, in, len, out, NULL);
}

/* Frees forms[from..PARTD_CODINGS) and marks them absent. */
static void free_forms(partd_blob *forms, int from)
{
    for (int c = from; c < PARTD_CODINGS; c++) {
        free(forms[c].data);
        forms[c].data = NULL;
        forms[c].len = 0;
    }
}

int partd_encoding_encode_all(partd_blob *forms)
{
    return partd_encoding_encode_all_within(forms, NULL);
}

int partd_encoding_encode_all_within(partd_blob *forms, const partd_cancel *cancel)
{
    const partd_blob *doc = &forms[PARTD_CODING_IDENTITY];
    free_forms(forms, PARTD_CODING_IDENTITY + 1);
    for (int c = PARTD_CODING_IDENTITY + 1; c < PARTD_CODINGS; c++) {
        partd_blob coded;
        int rc = encode_within((partd_coding)c, doc->data, doc->len, &coded, cancel);
        if (rc != PARTD_OK) {
            free_forms(forms, PARTD_CODING_IDENTITY + 1);
            return rc;
        }
        if (coded.len < doc->len)
            forms[c] = coded;
        else
            free(coded.data);
    }
    return PARTD_OK;
}

void partd_encoding_forms_free(partd_blob *forms)
{
    free_forms(forms, 0);
}

/* ---- Accept-Encoding ----------------------------------------------------- */

#define Q_UNSET (-1)
#define Q_INVALID (-2)

static int is_ows(char ch)
{
    return ch == ' ' || ch == '\t';
}

/* A qvalue (RFC 9110 section 12.4.2) in thousandths, or Q_INVALID. */
static int parse_qvalue(const char *p, const char *end)
{
    if (p == end || (*p != '0' && *p != '1'))
        return Q_INVALID;
    int whole = *p++ - '0';
    int frac = 0, digits = 0;
    if (p < end && *p == '.') {
        p++;
        while (p < end && digits < 3 && *p >= '0' && *p <= '9') {
            frac = frac * 10 + (*p++ - '0');
            digits++;
        }
    }
    if (p != end)
        return Q_INVALID;
    while (digits++ < 3)
        frac *= 10;
    int q = whole * 1000 + frac;
    return q > 1000 ? Q_INVALID : q;
}

/* The weight of one list element's parameters ("; q=0.5"), 1000 when none
 * is given, Q_INVALID when malformed. Other parameters are ignored. */
static int element_weight(const char *p, const char *end)
{
    int q = 1000;
    while (p < end) {
        while (p < end && (is_ows(*p) || *p == ';'))
            p++;
        const char *param = p;
        while (p < end && *p != ';')
            p++;
        const char *param_end = p;
        while (param_end > param && is_ows(param_end[-1]))
            param_end--;
        if (param_end - param >= 2 && (param[0] == 'q' || param[0] == 'Q')) {
            const char *v = param + 1;
            while (v < param_end && is_ows(*v))
                v++;
            if (v < param_end && *v == '=') {
                v++;
                while (v < param_end && is_ows(*v))
                    v++;
                q = parse_qvalue(v, param_end);
                if (q == Q_INVALID)
                    return Q_INVALID;
            }
        }
    }
    return q;
}

/* Which coding a token names: a partd_coding, PARTD_CODINGS for "*", or
 * PARTD_CODING_NONE for codings partd does not produce. */
static int token_coding(const char *p, size_t n)
{
    if (n == 1 && *p == '*')
        return PARTD_CODINGS;
    if ((n == 4 && strncasecmp(p, "gzip", 4) == 0) || (n == 6 && strncasecmp(p, "x-gzip", 6) == 0))
        return PARTD_CODING_GZIP;
    if (n == 4 && strncasecmp(p, "zstd", 4) == 0)
        return PARTD_CODING_ZSTD;
    if (n == 8 && strncasecmp(p, "identity", 8) == 0)
        return PARTD_CODING_IDENTITY;
    return PARTD_CODING_NONE;
}

partd_coding partd_encoding_negotiate(const char *accept_encoding, unsigned available)
{
    if (!accept_encoding)
        return (available & 1u << PARTD_CODING_IDENTITY) ? PARTD_CODING_IDENTITY
                                                          : PARTD_CODING_NONE;
    int q[PARTD_CODINGS + 1]; /* the last slot is "*" */
    for (int c = 0; c <= PARTD_CODINGS; c++)
        q[c] = Q_UNSET;
    const char *p = accept_encoding;
    while (*p) {
        while (*p == ',' || is_ows(*p))
            p++;
        const char *elem = p;
        while (*p && *p != ',')
            p++;
        const char *elem_end = p;
        const char *tok_end = elem;
        while (tok_end < elem_end && *tok_end != ';' && !is_ows(*tok_end))
            tok_end++;
        if (tok_end == elem)
            continue;
        int coding = token_coding(elem, (size_t)(tok_end - elem));
        int weight = element_weight(tok_end, elem_end);
        if (coding == PARTD_CODING_NONE || weight == Q_INVALID)
            continue;
        if (weight > q[coding])
            q[coding] = weight;
    }
    static const partd_coding preference[PARTD_CODINGS] = {
        PARTD_CODING_ZSTD, PARTD_CODING_GZIP, PARTD_CODING_IDENTITY};
    partd_coding best = PARTD_CODING_NONE;
    int best_q = 0;
    for (int i = 0; i < PARTD_CODINGS; i++) {
        partd_coding c = preference[i];
        int w = q[c];
        if (w == Q_UNSET)
            w = q[PARTD_CODINGS];
        if (w == Q_UNSET)
            w = c == PARTD_CODING_IDENTITY ? 1 : 0; /* acceptable, least preferred */
        if ((available & 1u << c) && w > best_q) {
            best = c;
            best_q = w;
        }
    }
    return best;
}

/* ---- request bodies ------------------------------------------------------- */

partd_coding partd_encoding_parse(const char *content_encoding)
{
    if (!content_encoding)
        return PARTD_CODING_IDENTITY;
    const char *p = content_encoding;
    while (is_ows(*p))
        p++;
    size_t n = strlen(p);
    while (n && is_ows(p[n - 1]))
        n--;
    if (n == 0 || (n == 8 && strncasecmp(p, "identity", 8) == 0))
        return PARTD_CODING_IDENTITY;
    int coding = token_coding(p, n);
    return coding == PARTD_CODING_GZIP || coding == PARTD_CODING_ZSTD ? (partd_coding)coding
                                                                     : PARTD_CODING_NONE;
}

/* The decoded document as it grows: doubling, up to max + 1 bytes (room for
 * the NUL), each enlargement approved by the caller's grow function. */
typedef struct sink {
    char *data;
    size_t len, cap, max;
    partd_grow_fn grow;
    void *grow_ctx;
} sink;

/* Room for `need` more bytes; the limit was checked by the caller, and the
 * buffer never grows past max + 1 (the NUL after a document of max bytes). */
static int sink_fit(sink *s, size_t need)
{
    if (s->cap - s->len >= need)
        return PARTD_OK;
    size_t cap = s->cap ? s->cap : 65536;
    while (cap - s->len < need && cap <= s->max)
        cap *= 2;
    if (cap > s->max + 1)
        cap = s->max + 1;
    if (s->grow && !s->grow(s->grow_ctx, cap))
        return PARTD_ENOMEM;
    char *p = realloc(s->data, cap);
    if (!p)
        return PARTD_ENOMEM;
    s->data = p;
    s->cap = cap;
    return PARTD_OK;
}

static int sink_piece(void *ctx, const char *data, size_t n)
{
    sink *s = ctx;
    if (n > s->max - s->len)
        return PARTD_ETOOBIG;
    int rc = sink_fit(s, n);
    if (rc != PARTD_OK)
        return rc;
    memcpy(s->data + s->len, data, n);
    s->len += n;
    return PARTD_OK;
}

int partd_encoding_decode(partd_coding coding, const char *in, size_t len, size_t max_out,
                 partd_grow_fn grow, void *grow_ctx, partd_blob *out)
{
    out->data = NULL;
    out->len = 0;
    if (coding != PARTD_CODING_GZIP && coding != PARTD_CODING_ZSTD)
        return PARTD_EINTERNAL;
    partd_unpacker *u = partd_codec_unpacker_new(coding);
    if (!u)
        return PARTD_ENOMEM;
    sink s = {NULL, 0, 0, max_out, grow, grow_ctx};
    int rc = partd_codec_unpacker_take(u, in, len, sink_piece, &s);
    if (rc == PARTD_OK)
        rc = partd_codec_unpacker_finish(u);
    partd_codec_unpacker_free(u);
    if (rc == PARTD_OK)
        rc = sink_fit(&s, 1); /* the NUL */
    if (rc != PARTD_OK) {
        free(s.data);
        return rc;
    }
    s.data[s.len] = '\0';
    out->data = s.data;
    out->len = s.len;
    return PARTD_OK;
}
