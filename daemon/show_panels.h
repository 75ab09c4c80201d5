/*
 * show_panels.h - the panels of the picture that partd_show_svg() stacks
 * top to bottom: memory and time per stage (show_svg.c), the training
 * timeline (show_timeline.c), activation checkpointing and its frontier
 * (show_sac.c).
 *
 * Each panel appends its elements to b starting at height y and returns the
 * height below it. Panels that do not apply to the result return y
 * unchanged. Failures only set the buffer's `failed` flag, except the
 * timeline's simulation, whose status comes back in *rc (PARTD_OK or a
 * negative PARTD_E* code).
 */
#ifndef PARTD_SHOW_PANELS_H
#define PARTD_SHOW_PANELS_H

#include "buf.h"
#include "show_result.h"

/* Width given to row labels (stage number and device) left of the charts. */
#define SHOW_LABEL_W 190.0

double show_panel_stages(partd_buf *b, const show_result *r, double y);
double show_panel_timeline(partd_buf *b, const show_result *r, double y, int *rc);
double show_panel_sac(partd_buf *b, const show_result *r, double y);

/* "stage" for pipelines, "partition" otherwise. */
const char *show_part_word(const show_result *r);
/* A row label: the stage number, the device name (truncated, escaped, with
 * the full name as a tooltip when it had to be cut) and, when nodes >= 0,
 * the number of operation nodes right-aligned before the chart. */
void show_row_label(partd_buf *b, double y, size_t first, size_t last, const char *device,
                    long nodes);

#endif
