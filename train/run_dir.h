/* A run as a folder (bin/train --run DIR): its checkpoint (ckpt), the best
 * one by validation loss (best.ckpt), numbered ones on request
 * (step-N.ckpt, --keep-checkpoints 1), the log as CSV and JSON lines
 * (log.csv, log.jsonl), and the options as an experiment file
 * (config.json, bin/train --print-config's format). --resume DIR continues
 * it; bin/info reads it back (lm/runinfo.h). */
#ifndef LM_RUN_DIR_H
#define LM_RUN_DIR_H

#include <stddef.h>

#include "lm/error.h"
#include "run_options.h"

/* The folder's file names. */
#define RUN_DIR_CKPT "ckpt"
#define RUN_DIR_BEST "best.ckpt"
#define RUN_DIR_LOG "log.csv"
#define RUN_DIR_JSONL "log.jsonl"
#define RUN_DIR_CONFIG "config.json"

/* Before anything reads a checkpoint: --resume naming a folder continues
 * the run in it (o->run = the folder, o->resume = its checkpoint); with a
 * run folder, --out and --log are its files (given too: refused), and a new
 * run (--run) refuses a folder that holds one already. */
int run_dir_setup(RunOptions *o, Error *err);
/* Where the checkpoint of `step` is kept (--keep-checkpoints 1): DIR/step-N.ckpt
 * in a run folder, else CKPT.step-N beside --out. */
int run_dir_numbered(const RunOptions *o, size_t step, char *buf, size_t size, Error *err);

#endif
