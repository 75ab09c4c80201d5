/*
 * show_fmt.h - the number and text formatting shared by `partd show`'s
 * renderers (show_draw.c, show_svg.c, show_stages.c, show_timeline.c,
 * show_sac.c, show_text.c). Private to daemon/show.
 *
 * Every number is formatted from integers rounded here, never through
 * printf's %f or %g, so the bytes do not depend on the locale or the C
 * library. Functions write into caller-provided buffers of PARTD_SHOW_NUM_CAP
 * bytes, or append to a partd_buf (buf.h); none of them fails except by
 * setting the buffer's `failed` flag.
 */
#ifndef PARTD_SHOW_FMT_H
#define PARTD_SHOW_FMT_H

#include <stddef.h>

#include "core/buf.h"

#define PARTD_SHOW_NUM_CAP 48

/* v with exactly `decimals` digits after the point (0..6), rounded half away
 * from zero; values beyond +-1e18 / 10^decimals are clamped. */
void partd__show_fmt_fixed(char out[PARTD_SHOW_NUM_CAP], double v, int decimals);
/* A coordinate: one decimal, trailing ".0" dropped. */
void partd__show_fmt_coord(char out[PARTD_SHOW_NUM_CAP], double v);
/* A byte count for people: "512 B", "1.04 GiB", "576 KiB" (3 significant
 * digits, binary units). */
void partd__show_fmt_bytes(char out[PARTD_SHOW_NUM_CAP], double bytes);
/* A byte count in a fixed binary unit (0 B, 1 KiB, 2 MiB, 3 GiB, 4 TiB),
 * without the unit name: for axis ticks. */
void partd__show_fmt_bytes_in(char out[PARTD_SHOW_NUM_CAP], double bytes, int unit);
/* The largest binary unit (0..4) that max_bytes reaches, and its name. */
int partd__show_fmt_bytes_unit(double max_bytes);
const char *partd__show_fmt_unit_name(int unit);
double partd__show_fmt_unit_scale(int unit);
/* Milliseconds for people: "13904 ms", "2.05 ms", "0.060 ms". */
void partd__show_fmt_ms(char out[PARTD_SHOW_NUM_CAP], double ms);
/* A tick step of 1, 2 or 5 times a power of ten so that [0, max] holds at
 * most `target` steps; max > 0. */
double partd__show_fmt_nice_step(double max, int target);

/* XML text: escapes & < > " ' and replaces characters XML 1.0 forbids
 * (controls, U+FFFE, U+FFFF) with U+FFFD. At most max_chars characters
 * (code points) are written, followed by an ellipsis when s is longer;
 * max_chars 0 means no limit. s must be valid UTF-8 (as jansson gives). */
void partd__show_fmt_xml(partd_buf *b, const char *s, size_t max_chars);
/* Terminal text: control characters (C0, DEL, C1) become '?', so a name
 * cannot move the cursor or change colours; truncated like
 * partd__show_fmt_xml. */
void partd__show_fmt_plain(partd_buf *b, const char *s, size_t max_chars);
/* Number of characters (code points) of a UTF-8 string. */
size_t partd__show_fmt_chars(const char *s);

#endif
