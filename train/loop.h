/* bin/train's loop over its steps: each step (trainer.h), validation at
 * step 0, on its interval and at the end (the estimate, and with --best-by
 * full the whole split, which then chooses best.ckpt; each line says which), the log (run_log.h), progress
 * lines with the ETA, checkpoints on their interval and at the end, the
 * thread tuner, the --max-seconds budget, and SIGINT / SIGTERM / SIGHUP /
 * SIGQUIT / SIGPIPE, which stop every rank after the same step with a
 * checkpoint. A
 * failure stops it without saving: the last good checkpoint is kept; one
 * of the best or a kept checkpoint saves the run's own first. */
#ifndef LM_TRAIN_LOOP_H
#define LM_TRAIN_LOOP_H

#include <stddef.h>

#include "lm/error.h"
#include "lm/profile.h"
#include "lm/threads.h"
#include "run.h"
#include "run_log.h"

typedef struct TrainLoop {
    Run *r;
    RunLog log, twin;      /* --log (or a run folder's log.csv); a run folder's log.jsonl */
    ThreadTuner tuner;
    int profile;           /* --profile: time the steps after the run's first (first touches of memory) */
    Profile prof;          /* where the profiled steps' time went */
    double train_secs;     /* the profiled steps' seconds */
    size_t step;           /* the next step; at the end, the step saved */
    size_t tokens_per_step;
    double t_start;        /* the loop's start */
    double elapsed0;       /* the log's elapsed_s when this invocation started: a resumed run's clock goes on */
    double train_clock;    /* every training step's seconds, validation not counted: --max-seconds' clock */
    float loss, val_loss;  /* the last step's training loss; the last validation loss (NaN: none yet) */
    char last_good[PATH_BUF]; /* the last checkpoint saved (or resumed; "": none), for a failure's message */
    size_t last_good_step;
} TrainLoop;

/* Opens the log (rank 0), installs the signal handlers and the thread tuner. */
int train_loop_open(TrainLoop *L, Run *r, int profile, Error *err);
/* Runs the steps from r->start_step to --stop-at and saves. Returns the
 * exit status: 0, 130 after a signal (saved), else 1 or 2 after one line
 * on stderr naming prog. */
int train_loop_run(TrainLoop *L, const char *prog);
void train_loop_close(TrainLoop *L);

#endif
