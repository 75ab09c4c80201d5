/*
 * show_svg.c - the picture of a plan: the SVG document, its title and key
 * figures, and the panels of show_internal.h stacked below them; see show.h.
 */
#include <math.h>
#include <stdio.h>

#include "partd/partd.h"
#include "show.h"
#include "show_draw.h"
#include "show_fmt.h"
#include "show_internal.h"

/* The title and the plan's key figures. */
static double title(partd_buf *b, const partd__show_result *r, double y)
{
    char text[512], a[PARTD_SHOW_NUM_CAP], c[PARTD_SHOW_NUM_CAP], d[PARTD_SHOW_NUM_CAP],
        e[PARTD_SHOW_NUM_CAP];
    partd__show_draw_text_open(b, PARTD_SHOW_MARGIN, y + 18, "title", "start");
    partd_buf_puts(b, "partd plan: ");
    partd__show_fmt_xml(b, r->mode, 40);
    snprintf(text, sizeof text, ", %zu %s%s", r->n_parts, partd__show_result_part_word(r),
             r->n_parts == 1 ? "" : "s");
    partd_buf_puts(b, text);
    if (r->n_ranks) {
        snprintf(text, sizeof text, " on %zu rank%s", r->n_ranks, r->n_ranks == 1 ? "" : "s");
        partd_buf_puts(b, text);
    }
    partd_buf_puts(b, "</text>\n");
    partd__show_fmt_bytes(c, r->peak_bytes);
    partd__show_fmt_bytes(d, r->transfer_bytes);
    partd__show_fmt_ms(e, r->bottleneck_ms);
    if (r->training) {
        partd__show_fmt_ms(a, r->step_ms);
        char bubble[PARTD_SHOW_NUM_CAP];
        partd__show_fmt_fixed(bubble, 100 * r->bubble_fraction, 1);
        if (r->n_ranks)
            snprintf(text, sizeof text,
                     "step %s (bubble %s%%), %.40s schedule, %ld microbatches, busiest rank %s, "
                     "peak %s",
                     a, bubble, r->schedule, r->microbatches, e, c);
        else
            snprintf(text, sizeof text,
                     "step %s (bubble %s%%), %.40s schedule, %ld microbatches, bottleneck %s per "
                     "microbatch, peak %s",
                     a, bubble, r->schedule, r->microbatches, e, c);
    } else {
        partd__show_fmt_ms(a, r->total_ms);
        snprintf(text, sizeof text, "bottleneck %s, total %s, peak memory %s, transferred %s", e,
                 a, c, d);
    }
    partd__show_draw_text(b, PARTD_SHOW_MARGIN, y + 38, "cap", "start", text);
    return y + 50;
}

static int render(const partd__show_result *r, partd_buf *out)
{
    partd_buf body;
    partd_buf_init(&body);
    int rc = PARTD_OK;
    double y = title(&body, r, 0);
    y = partd__show_ranks_panel(&body, r, y);
    y = partd__show_stages_panel(&body, r, y);
    y = partd__show_units_panel(&body, r, y);
    y = partd__show_timeline_panel(&body, r, y, &rc);
    y = partd__show_sac_panel(&body, r, y);
    y += PARTD_SHOW_MARGIN;
    if (rc == PARTD_OK)
        rc = partd_buf_status(&body);
    if (rc == PARTD_OK) {
        char h[PARTD_SHOW_NUM_CAP];
        partd__show_fmt_coord(h, ceil(y));
        partd_buf_cat(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"960\" height=\"", h,
                      "\" viewBox=\"0 0 960 ", h, "\" role=\"img\">\n<title>partd plan: ", NULL);
        partd__show_fmt_xml(out, r->mode, 40);
        partd_buf_puts(out, "</title>\n");
        partd__show_draw_style(out);
        partd_buf_puts(out, "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n");
        partd_buf_append(out, body.data, body.len);
        partd_buf_puts(out, "</svg>\n");
        rc = partd_buf_status(out);
    }
    partd_buf_free(&body);
    return rc;
}

int partd_show_svg(const char *result_json, size_t len, partd_buf *out, char *err, size_t errcap)
{
    partd__show_result r;
    int rc = partd__show_result_parse(result_json, len, &r, err, errcap);
    if (rc != PARTD_OK)
        return rc;
    rc = render(&r, out);
    if (rc != PARTD_OK && errcap)
        snprintf(err, errcap, "%s while drawing the plan", partd_strerror(rc));
    partd__show_result_free(&r);
    return rc;
}
