/*
 * cmd_export.h - `partd export`: a result document turned into the input
 * of a runtime (torchtitan, PyTorch, Megatron-LM, DeepSpeed, fairscale, FX)
 * through partd_export() (partd/export.h).
 *
 * partd_cmd_export() reads a result (file or stdin) and writes the export
 * (stdout or -o FILE, replaced whole: output.h). Exit codes: 0 exported,
 * 1 a file could not be read or written (or usage, memory), 2 the input is
 * not a result document or the format cannot express the plan (the problem
 * document on stderr).
 */
#ifndef PARTD_CMD_EXPORT_H
#define PARTD_CMD_EXPORT_H

int partd_cmd_export(int argc, char **argv);

#endif
