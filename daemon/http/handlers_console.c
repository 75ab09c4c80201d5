/*
 * handlers_console.c - GET /: the console, one HTML page with its style
 * and script inline (daemon/show/console.html, embedded by the build as
 * partd_console_page), and its security headers.
 *
 * The page holds no job data (it reads the API from the browser with the
 * user's token), so it is one static response made at start. Its
 * Content-Security-Policy allows nothing from anywhere but the page's own
 * inline <script> and <style> blocks, named by their SHA-256 (computed here
 * from the embedded bytes, so that editing the page never leaves a stale
 * hash behind), and API calls to this origin. See http_internal.h.
 */
#define _GNU_SOURCE /* memmem */
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>

#include "http_internal.h"
#include "partd/partd.h"

/* Everything but the hashes: no other origin, no plugins, no framing, no
 * <base>, no form posts (the page submits with fetch()). */
#define CSP_TAIL                                                                              \
    "img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; "     \
    "form-action 'none'"

/* The next inline block <tag>...</tag> at or after *pos, outside HTML
 * comments; its content's offset and length. 0 when there is none. The
 * page writes its blocks as bare "<script>" and "<style>" tags. */
static int next_block(const unsigned char *page, size_t len, const char *tag, size_t *pos,
                      size_t *start, size_t *n)
{
    char open[16], close[16];
    snprintf(open, sizeof open, "<%s>", tag);
    snprintf(close, sizeof close, "</%s>", tag);
    for (;;) {
        const unsigned char *o = memmem(page + *pos, len - *pos, open, strlen(open));
        const unsigned char *k = memmem(page + *pos, len - *pos, "<!--", 4);
        if (!o)
            return 0;
        if (k && k < o) { /* a tag in a comment is text */
            const unsigned char *e = memmem(k + 4, len - (size_t)(k + 4 - page), "-->", 3);
            if (!e)
                return 0;
            *pos = (size_t)(e - page) + 3;
            continue;
        }
        size_t s = (size_t)(o - page) + strlen(open);
        const unsigned char *c = memmem(page + s, len - s, close, strlen(close));
        if (!c)
            return 0;
        *start = s;
        *n = (size_t)(c - page) - s;
        *pos = (size_t)(c - page) + strlen(close);
        return 1;
    }
}

/* Appends " 'sha256-<base64>'" of each inline <tag> block. */
static int append_hashes(const unsigned char *page, size_t len, const char *tag, char *out,
                         size_t cap, size_t *used)
{
    size_t pos = 0, start, n;
    while (next_block(page, len, tag, &pos, &start, &n)) {
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned mdlen = 0;
        unsigned char b64[4 * ((EVP_MAX_MD_SIZE + 2) / 3) + 1];
        if (!EVP_Digest(page + start, n, md, &mdlen, EVP_sha256(), NULL))
            return PARTD_ENOMEM;
        EVP_EncodeBlock(b64, md, (int)mdlen);
        int w = snprintf(out + *used, cap - *used, " 'sha256-%s'", (const char *)b64);
        if (w < 0 || (size_t)w >= cap - *used)
            return PARTD_ETOOBIG;
        *used += (size_t)w;
    }
    return PARTD_OK;
}

int partd__http_console_csp(const unsigned char *page, size_t len, char *out, size_t cap)
{
    size_t used = 0;
    int w = snprintf(out, cap, "default-src 'none'; script-src");
    int err = w < 0 || (size_t)w >= cap ? PARTD_ETOOBIG : PARTD_OK;
    if (err == PARTD_OK) {
        used = (size_t)w;
        err = append_hashes(page, len, "script", out, cap, &used);
    }
    if (err == PARTD_OK) {
        w = snprintf(out + used, cap - used, "; style-src");
        err = w < 0 || (size_t)w >= cap - used ? PARTD_ETOOBIG : PARTD_OK;
        used += err == PARTD_OK ? (size_t)w : 0;
    }
    if (err == PARTD_OK)
        err = append_hashes(page, len, "style", out, cap, &used);
    if (err == PARTD_OK) {
        w = snprintf(out + used, cap - used, "; %s", CSP_TAIL);
        err = w < 0 || (size_t)w >= cap - used ? PARTD_ETOOBIG : PARTD_OK;
    }
    if (err != PARTD_OK && cap)
        out[0] = '\0';
    return err;
}

void partd__http_console_prepare(partd_http *h)
{
    char csp[512];
    h->console = NULL;
    if (partd__http_console_csp(partd_console_page, partd_console_page_len, csp, sizeof csp) !=
        PARTD_OK)
        return;
    struct MHD_Response *r = MHD_create_response_from_buffer(
        partd_console_page_len, (void *)partd_console_page, MHD_RESPMEM_PERSISTENT);
    if (!r)
        return;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/html; charset=utf-8");
    MHD_add_response_header(r, "Content-Security-Policy", csp);
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
    MHD_add_response_header(r, "X-Frame-Options", "DENY");
    MHD_add_response_header(r, "Cross-Origin-Opener-Policy", "same-origin");
    MHD_add_response_header(r, "Cross-Origin-Resource-Policy", "same-origin");
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    h->console = r;
}

void partd__http_console_release(partd_http *h)
{
    if (h->console)
        MHD_destroy_response(h->console);
    h->console = NULL;
}

enum MHD_Result partd__http_console(struct MHD_Connection *c, partd__http_req *rq, partd_http *h)
{
    return partd__http_send_static(c, rq, h->console);
}
