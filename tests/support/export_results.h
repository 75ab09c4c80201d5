/*
 * export_results.h - result documents for the export tests, shaped as
 * contract v3 says a training result is ("The training result"), and the
 * export of one with its outcome checked.
 *
 * Ownership: every char * returned is malloc'd and the caller's; json_t *
 * results are new references.
 */
#ifndef PARTD_TEST_EXPORT_RESULTS_H
#define PARTD_TEST_EXPORT_RESULTS_H

#include <jansson.h>
#include <stdint.h>

#include "partd/export.h"
#include "partd/problem.h"

typedef struct tu_training_spec {
    const char *schedule;            /* PyTorch's name: "1F1B", "Interleaved1F1B", ... */
    uint32_t ranks, v, microbatches; /* S, stages per rank, M */
    const char *checkpoint;          /* summary.checkpoint: "auto", "never", ... */
    const char *const *units;        /* per stage (S x v): names separated by spaces */
    const char *const *checkpointed; /* per stage, the same way; NULL: none */
    int no_actions;                  /* leave schedule.actions out */
} tu_training_spec;

/* The result as a document: partitions with rank, device ("gpu<rank>"),
 * units, checkpointed, nodes (one per unit, "n_<unit>"), the timing
 * figures; ranks[]; schedule {name, virtual_stages, actions: the class's
 * own order}; summary. */
json_t *tu_training_result(const tu_training_spec *s);

/* The same as compact JSON text. */
char *tu_training_result_text(const tu_training_spec *s);

/* Exports `doc_text` and asserts the return code; the output (NULL when
 * not PARTD_OK), the problem in pb (initialised here; caller frees). */
char *tu_export_expect(const char *doc_text, partd_export_format f, unsigned flags,
                       int expected_rc, partd_problem *pb);

/* Exports a document (taking no reference) as tu_export_expect does. */
char *tu_export_doc(json_t *doc, partd_export_format f, unsigned flags, int expected_rc,
                    partd_problem *pb);

/* Exports the result of spec s as tu_export_expect does, and parses the
 * output: a new JSON document, NULL when the export was refused. */
json_t *tu_export_spec_json(const tu_training_spec *s, partd_export_format f, unsigned flags,
                            int expected_rc, partd_problem *pb);

#endif
