/*
 * intake.c - a request body decompressed, digested, decoded and packed as
 * it arrives; see intake.h.
 */
#include "intake.h"

#include <stdio.h>
#include <stdlib.h>

#include "core/codec.h"
#include "partd/hash.h"
#include "partd/partd.h"
#include "partd/sha256.h"

struct partd_intake {
    partd_intake_limits lim;
    partd_decode_limits decode_limits;
    partd_coding coding;
    partd_unpacker *unpacker;     /* NULL for an identity body */
    partd_decoder *decoder;
    partd_problem decode_problem; /* the decoder's */
    int decode_rc;                /* PARTD_OK until the decoder refuses the body */
    partd_packer *packer;         /* NULL once the body cannot become a job */
    int pack_rc;
    partd_sha256 digest;
    uint64_t sent_bytes, plain_bytes;
    uint64_t approved;            /* plain bytes the grow callback approved */
    int rc;                       /* the body's own state: size and coding */
    int ended;
};

static void intake_oom(partd_problem *pb)
{
    partd_problem_set(pb, 503, "out-of-memory", "Out of memory",
                      "the request could not be decoded in the memory available");
}

partd_intake *partd_intake_new(partd_coding coding, const partd_intake_limits *limits)
{
    partd_intake *in = calloc(1, sizeof *in);
    if (!in)
        return NULL;
    in->lim = *limits;
    if (limits->decode) {
        in->decode_limits = *limits->decode;
        in->lim.decode = &in->decode_limits;
    }
    in->coding = coding;
    partd_problem_init(&in->decode_problem);
    int ok = !limits->digest || partd_sha256_init(&in->digest) == PARTD_OK;
    if (ok && coding != PARTD_CODING_IDENTITY)
        ok = (in->unpacker = partd_codec_unpacker_new(coding)) != NULL;
    if (ok)
        ok = (in->decoder = partd_request_decoder_new(in->lim.decode, &in->decode_problem)) != NULL;
    if (ok)
        ok = (in->packer = partd_codec_packer_new(NULL, NULL)) != NULL;
    if (!ok) {
        partd_intake_free(in);
        return NULL;
    }
    return in;
}

/* Asks for the memory of the plain bytes so far, doubling, so that the
 * caller's budget is consulted a few times per body, not per piece. */
static int approve(partd_intake *in)
{
    uint64_t cap = in->approved ? in->approved : 65536;
    while (cap < in->plain_bytes)
        cap *= 2;
    if (cap > in->lim.max_body_bytes + 1)
        cap = in->lim.max_body_bytes + 1;
    if (in->lim.grow && !in->lim.grow(in->lim.grow_ctx, (size_t)cap))
        return PARTD_ENOMEM;
    in->approved = cap;
    return PARTD_OK;
}

/* A piece of the plain body. Once the decoder has refused the body only the
 * digest goes on (a retry's Idempotency-Key is checked before the body's
 * content), and the packed copy is dropped: it can never be stored. */
static int take_plain(void *ctx, const char *data, size_t n)
{
    partd_intake *in = ctx;
    in->plain_bytes += n;
    if (in->plain_bytes > in->lim.max_body_bytes)
        return PARTD_ETOOBIG;
    if (in->plain_bytes > in->approved && approve(in) != PARTD_OK)
        return PARTD_ENOMEM;
    if (in->lim.digest)
        partd_sha256_update(&in->digest, data, n);
    if (in->decode_rc == PARTD_OK && (in->decode_rc = partd_request_decoder_feed(in->decoder, data, n))) {
        /* Refused: the problem is kept for the answer, the partial model is
         * not. */
        partd_request_decoder_free(in->decoder);
        in->decoder = NULL;
    }
    if (in->packer && in->decode_rc == PARTD_OK && in->pack_rc == PARTD_OK)
        in->pack_rc = partd_codec_packer_take(in->packer, data, n);
    if (in->packer && (in->decode_rc != PARTD_OK || in->pack_rc != PARTD_OK)) {
        partd_codec_packer_free(in->packer);
        in->packer = NULL;
    }
    /* Stopped (cancelled, past its deadline): nothing of the body is wanted
     * any more, not even its digest, so the decompression stops too. */
    if (in->decode_rc == PARTD_ECANCELLED || in->decode_rc == PARTD_ETIMEOUT)
        return in->decode_rc;
    return PARTD_OK;
}

int partd_intake_take(partd_intake *in, const char *data, size_t n)
{
    in->sent_bytes += n;
    if (in->rc != PARTD_OK)
        return in->rc;
    if (in->sent_bytes > in->lim.max_body_bytes)
        return in->rc = PARTD_ETOOBIG;
    in->rc = in->unpacker ? partd_codec_unpacker_take(in->unpacker, data, n, take_plain, in)
                          : take_plain(in, data, n);
    if (in->rc == PARTD_OK && in->pack_rc != PARTD_OK)
        in->rc = in->pack_rc; /* no memory to keep the body: it cannot be taken */
    return in->rc;
}

uint64_t partd_intake_bytes(const partd_intake *in)
{
    return in->sent_bytes;
}

/* Moves the decoder's problem document into pb. */
static void hand_problem(partd_intake *in, partd_problem *pb)
{
    partd_problem_free(pb);
    *pb = in->decode_problem;
    partd_problem_init(&in->decode_problem);
}

int partd_intake_end(partd_intake *in, char digest[72], partd_problem *pb)
{
    const char *coding = partd_encoding_name(in->coding);
    if (in->rc == PARTD_OK && in->unpacker)
        in->rc = partd_codec_unpacker_finish(in->unpacker);
    unsigned char md[PARTD_SHA256_BYTES];
    if (in->lim.digest) {
        if (in->rc == PARTD_OK)
            in->rc = partd_sha256_final(&in->digest, md);
        else
            partd_sha256_abort(&in->digest);
    }
    in->ended = 1;
    switch (in->rc) {
    case PARTD_OK:
        if (in->lim.digest)
            partd_hash_digest_text(md, digest);
        else
            digest[0] = '\0';
        return PARTD_OK;
    case PARTD_ETOOBIG:
        if (in->unpacker && in->sent_bytes <= in->lim.max_body_bytes)
            partd_problem_set(pb, 413, "body-too-large", "Body too large",
                              "decoded from %s, the body is larger than %llu bytes "
                              "(--max-body-bytes)",
                              coding, (unsigned long long)in->lim.max_body_bytes);
        else
            partd_problem_set(pb, 413, "body-too-large", "Body too large",
                              "the body is larger than %llu bytes (--max-body-bytes)",
                              (unsigned long long)in->lim.max_body_bytes);
        return PARTD_ETOOBIG;
    case PARTD_ETIMEOUT:
    case PARTD_ECANCELLED:
        hand_problem(in, pb); /* the decoder's 408 request-timeout or 503 */
        return in->rc;
    case PARTD_EMALFORMED:
        partd_problem_set(pb, 400, "undecodable-body", "Undecodable body",
                          "the body is not a complete %s stream (Content-Encoding: %s)", coding,
                          coding);
        return PARTD_EMALFORMED;
    default:
        intake_oom(pb);
        return PARTD_ENOMEM;
    }
}

int partd_intake_finish(partd_intake *in, partd_request **out, partd_blob *packed,
                        partd_problem *pb)
{
    *out = NULL;
    packed->data = NULL;
    packed->len = 0;
    if (!in->ended || in->rc != PARTD_OK) {
        intake_oom(pb);
        return PARTD_EINTERNAL;
    }
    int rc = in->decode_rc != PARTD_OK ? in->decode_rc : partd_request_decoder_finish(in->decoder, out);
    if (rc == PARTD_OK && (!in->packer || partd_codec_packer_finish(in->packer, packed) != PARTD_OK))
        rc = PARTD_ENOMEM;
    if (rc == PARTD_OK)
        return PARTD_OK;
    partd_request_free(*out);
    *out = NULL;
    free(packed->data);
    packed->data = NULL;
    packed->len = 0;
    hand_problem(in, pb);
    if (pb->status == 0 || rc == PARTD_ENOMEM)
        intake_oom(pb);
    return rc;
}

void partd_intake_free(partd_intake *in)
{
    if (!in)
        return;
    if (!in->ended && in->lim.digest)
        partd_sha256_abort(&in->digest);
    partd_codec_unpacker_free(in->unpacker);
    partd_request_decoder_free(in->decoder);
    partd_problem_free(&in->decode_problem);
    partd_codec_packer_free(in->packer);
    free(in);
}

/* ---- stored bodies -------------------------------------------------------- */

static int feed_decoder(void *ctx, const char *data, size_t n)
{
    return partd_request_decoder_feed(ctx, data, n);
}

int partd_intake_decode_stored(const char *body, size_t len, const partd_decode_limits *limits,
                               partd_request **out, partd_problem *pb)
{
    if (!partd_codec_is_zstd_frame(body, len))
        return partd_request_decode(body, len, limits, out, pb);
    *out = NULL;
    partd_unpacker *u = partd_codec_unpacker_new(PARTD_CODING_ZSTD);
    partd_decoder *d = u ? partd_request_decoder_new(limits, pb) : NULL;
    int rc = d ? PARTD_OK : PARTD_ENOMEM;
    if (rc == PARTD_OK)
        rc = partd_codec_unpacker_take(u, body, len, feed_decoder, d);
    if (rc == PARTD_OK)
        rc = partd_codec_unpacker_finish(u);
    if (rc == PARTD_EMALFORMED && pb->status == 0)
        /* The store's own frame is damaged: not the client's doing. */
        partd_problem_set(pb, 500, "damaged-request", "Stored request damaged",
                          "the stored request body is not a complete zstd frame");
    if (rc == PARTD_OK)
        rc = partd_request_decoder_finish(d, out);
    else if (rc == PARTD_ENOMEM && pb->status == 0)
        intake_oom(pb);
    partd_request_decoder_free(d);
    partd_codec_unpacker_free(u);
    return rc;
}
