/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpquic-ctl's human-readable rendering of a reply (its default; -j prints
 * JSON). Any reply renders, without knowing the command:
 *   - scalars as aligned "key  value" lines;
 *   - a nested object under a "key:" heading, indented;
 *   - an array of scalars on one line, comma-separated;
 *   - an array of objects as a table: one row per element when it has
 *     few columns (nested members flattened to "a.b"), otherwise
 *     transposed, one row per field and one column per element (labelled
 *     by its "id"), so per-shard counters read side by side.
 * Known lists get the columns an operator scans first: `connections`
 * shows id, shard, peer, state, age, RTT, cwnd, bytes, streams, cipher,
 * ALPN (`conn ID` or -j has every field).
 */
#ifndef DPQ_CONTROL_CTL_PRINT_H
#define DPQ_CONTROL_CTL_PRINT_H

#include <stdio.h>

#include "control/ctl/json.h"

/* Tables with more columns than this are printed transposed. */
#define DPQ_CTL_PRINT_WIDE	8

/* Print reply (an object; "ok" and "id" are left out) to f. */
void dpq_ctl_print_human(FILE *f, const json_t *reply);

#endif /* DPQ_CONTROL_CTL_PRINT_H */
