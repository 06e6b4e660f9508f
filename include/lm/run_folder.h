/* A run folder (bin/train --run DIR) as every program sees it: its files'
 * names, whether a folder is one, which checkpoint a program that reads a
 * model (bin/eval, bin/sample, bin/inspect: --model) takes from it, and
 * what its validation losses are. Writing one is bin/train's alone
 * (train/run_dir.h). */
#ifndef LM_RUN_FOLDER_H
#define LM_RUN_FOLDER_H

#include <stddef.h>

#include "lm/error.h"

/* The folder's file names. */
#define RUN_DIR_CKPT "ckpt"
#define RUN_DIR_BEST "best.ckpt"
#define RUN_DIR_LOG "log.csv"
#define RUN_DIR_JSONL "log.jsonl"
#define RUN_DIR_CONFIG "config.json"
#define RUN_DIR_MARK ".lm-run"

/* Whether dir is a run folder: it holds the marker, or (made before the
 * marker) ckpt, config.json and log.csv, as every run folder does from its
 * first step. */
int run_dir_is_run(const char *dir);

/* What a run's validation losses are (the progress its checkpoints keep,
 * and what chose its best.ckpt): the estimate over `batches` fixed batches
 * of the split (bin/train --eval-iters; 0: not kept), or with bin/train
 * --best-by full the whole split, every token scored once as bin/eval
 * scores it. From a checkpoint's run options (CkptHeader.train; NULL or
 * not JSON: the estimate, batches 0). */
typedef struct RunValKind {
    int full;
    size_t batches;
} RunValKind;
RunValKind run_val_kind(const char *train_json);
/* "the estimate over 20 batches", "the estimate" (batches not kept) or
 * "the full split", into buf; returns buf. */
const char *run_val_kind_text(RunValKind kind, char *buf, size_t size);

/* The checkpoint a program reads for --model PATH, into ckpt: PATH itself
 * when it is no folder (its reader says what is wrong with it); for a
 * folder, its best.ckpt, or its ckpt when it has no best.ckpt (a run killed
 * before its first validation), with one line for the program to print in
 * note (which file, its step, and by what it is the best). Returns 1 for a
 * folder, 0 for PATH as given, -1 with err for a folder holding neither. */
int run_folder_model(const char *path, char *ckpt, size_t size, char *note, size_t note_size, Error *err);

#endif
