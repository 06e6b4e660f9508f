/* A run as a folder (bin/train --run DIR): its checkpoint (ckpt), the best
 * one by validation loss (best.ckpt), numbered ones on request
 * (step-N.ckpt, --keep-checkpoints 1), the log as CSV and JSON lines
 * (log.csv, log.jsonl), the options as an experiment file (config.json,
 * bin/train --print-config's format), and the marker that says the folder
 * is a run's (.lm-run): bin/train writes only into a folder that is new,
 * empty or marked. --resume DIR continues it; bin/info reads it back
 * (train/run_info.h), and the programs that read a model take its best.ckpt
 * (lm/run_folder.h). The folder is one unit, under one lock (ckpt's):
 * its other checkpoints are never continued in place, and nothing from
 * outside the run writes into it. */
#ifndef LM_RUN_DIR_H
#define LM_RUN_DIR_H

#include <stddef.h>

#include "lm/error.h"
#include "lm/run_folder.h" /* the folder's file names, run_dir_is_run */
#include "run_options.h"

/* Whether the file at path is in a run folder, whose path (as written:
 * runs/a of runs/a/ckpt) goes into dir. */
int run_dir_holding(const char *path, char *dir, size_t size);
/* Writes the marker into the run folder dir, unless it is there. */
int run_dir_mark(const char *dir, Error *err);
/* Before anything reads a checkpoint: --resume naming a run folder, or its
 * ckpt with nothing else said of where the run goes, continues the run in
 * it (o->run = the folder, o->resume = its checkpoint; best.ckpt when a
 * kill came before its first); --resume of another file in a run folder
 * (best.ckpt, step-N.ckpt) without --out is refused: never continued in
 * place. With a run folder, --out and --log are its files (given too:
 * refused); a new run (--run) refuses a folder that holds a run already,
 * or that is not empty and not a run's. */
int run_dir_setup(RunOptions *o, Error *err);
/* Where the checkpoint of `step` is kept (--keep-checkpoints 1): DIR/step-N.ckpt
 * in a run folder, else CKPT.step-N beside --out. */
int run_dir_numbered(const RunOptions *o, size_t step, char *buf, size_t size, Error *err);

#endif
