/*
 * cmd_show.h - `partd show`: the picture (SVG) or table (text) of a plan
 * from its result document, through the renderers of show.h.
 *
 * partd_cmd_show() reads a result (file or stdin) and writes the rendering
 * (stdout or -o FILE). Exit codes: 0 drawn, 1 a file could not be read or
 * written (or usage, memory), 2 the input is not a result document (one
 * line on stderr naming what is wrong).
 */
#ifndef PARTD_CMD_SHOW_H
#define PARTD_CMD_SHOW_H

int partd_cmd_show(int argc, char **argv);

#endif
