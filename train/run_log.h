/* The per-step log of a training run (bin/train --log): CSV, or JSON lines
 * when the name ends in .jsonl; one row per step with its loss, learning
 * rate, gradient norm, time and thread count, and on the steps that
 * measured them the validation estimate with its batch count, and the
 * whole split's loss (bin/train --best-by full). A resumed run goes on from
 * its checkpoint's row. */
#ifndef LM_RUN_LOG_H
#define LM_RUN_LOG_H

#include <stddef.h>
#include <stdio.h>

#include "trainer.h"
#include "lm/error.h"

typedef struct RunLog {
    FILE *f; /* NULL: no log, and log_row does nothing */
    int jsonl;
    const char *path;
    int failed; /* errno of the first failed write, 0 if none: the run stops, keeping its last checkpoint */
} RunLog;

/* 0 when path is absent, empty or a log of ours (its first line a CSV
 * header or a JSON line of this format); else -1: a run never appends to
 * or truncates another file (a checkpoint) given as --log. */
int run_log_check(const char *path, Error *err);
/* Opens the log as a new file renamed over path (never written through a
 * link, nor into a name it shares with another file: a run folder copied
 * with cp -al): a new run's, or with resume the rows of the log at path
 * up to step `through`, the resumed checkpoint's (rows past it, which a
 * failure or a kill after that checkpoint left, would be written twice),
 * *elapsed the last one's elapsed_s (0: none). */
int run_log_open(RunLog *log, const char *path, int resume, size_t through, double *elapsed, Error *err);
/* One row. A value it does not have is NaN (val_batches 0): an empty CSV
 * field, or null. */
typedef struct LogRow {
    size_t step, tokens;
    float loss, lr, norm;
    ValLoss val;        /* the validation estimate after this step */
    size_t val_batches; /* its batches (--eval-iters) */
    ValLoss full;       /* the whole validation split after this step */
    double ms, elapsed, threads;
} LogRow;
void run_log_row(RunLog *log, const LogRow *row);
void run_log_close(RunLog *log);

#endif
