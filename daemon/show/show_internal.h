/*
 * show_internal.h - what the files of daemon/show/ share; not for use
 * outside this directory (the public interface is show.h). Names private to
 * the folder are partd__show_*; the units below with a header of their own
 * declare theirs there.
 *
 * The files and what each owns:
 *   show_svg.c       partd_show_svg: the SVG document, its title and key
 *                    figures, and the panels below stacked top to bottom
 *   show_ranks.c     the panel of memory and busy time per rank (training)
 *   show_stages.c    the panel of memory and time per stage
 *   show_units.c     the panel of each training stage's units, checkpointed
 *                    ones marked
 *   show_timeline.c  the panel of one training step's timeline, every
 *                    action where the step model (partd/timeline.h) puts it
 *   show_sac.c       the panel of activation checkpointing and its frontier
 *   show_text.c      partd_show_text: the table
 *   show_text_training.c  the table's training parts: ranks, the stages'
 *                    v3 figures and units, each rank's order of actions
 *   show_table.c     the table's cells (show_table.h)
 *   show_result.c    a result document read for drawing, a training step
 *                    re-timed (show_result.h)
 *   show_draw.c      SVG primitives (show_draw.h)
 *   show_fmt.c       number and text formatting (show_fmt.h)
 *   console.html     the console page served at / (compiled in by the build)
 *
 * The panels (declared here): each appends its elements to b starting at
 * height y and returns the height below it. Panels that do not apply to
 * the result return y unchanged. Failures only set the buffer's `failed`
 * flag, except the timeline's, whose status comes back in *rc (PARTD_OK or
 * a negative PARTD_E* code).
 *
 * The table's pieces append to b and fail only by its `failed` flag.
 */
#ifndef PARTD_SHOW_INTERNAL_H
#define PARTD_SHOW_INTERNAL_H

#include "core/buf.h"
#include "show_result.h"

double partd__show_ranks_panel(partd_buf *b, const partd__show_result *r, double y);
double partd__show_stages_panel(partd_buf *b, const partd__show_result *r, double y);
double partd__show_units_panel(partd_buf *b, const partd__show_result *r, double y);
double partd__show_timeline_panel(partd_buf *b, const partd__show_result *r, double y, int *rc);
double partd__show_sac_panel(partd_buf *b, const partd__show_result *r, double y);

/* v3 training (r->n_ranks > 0): the step re-timed, after the summary
 * line; the table of ranks; the stage table's v3 columns (header and
 * row i, before `checkpointed`; units_w from ..._units_width); each
 * rank's order of actions. */
void partd__show_text_retimed(partd_buf *b, const partd__show_result *r);
void partd__show_text_ranks(partd_buf *b, const partd__show_result *r);
size_t partd__show_text_units_width(const partd__show_result *r);
void partd__show_text_stage_header(partd_buf *b, size_t units_w);
void partd__show_text_stage_cells(partd_buf *b, const partd__show_result *r, size_t i,
                                  size_t units_w);
void partd__show_text_actions(partd_buf *b, const partd__show_result *r);

#endif
