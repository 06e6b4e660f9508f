/* A run read back (bin/info): a checkpoint's or run folder's model, step,
 * tokens, validation losses, tokenizer, data and recipe, from headers
 * alone (no weights are read), as text or JSON; and the runs of a folder,
 * one line each, sorted. */
#ifndef LM_RUN_INFO_H
#define LM_RUN_INFO_H

#include <stddef.h>
#include <stdio.h>

#include "lm/checkpoint.h"
#include "lm/error.h"
#include "lm/files.h"
#include "run_options.h"

typedef struct RunInfo {
    char path[PATH_BUF];  /* as given: a checkpoint or a run folder */
    char ckpt[PATH_BUF];  /* the checkpoint read (a run folder's ckpt) */
    char name[512];       /* the run folder's name, or the checkpoint's file name (--list: its path in DIR) */
    int is_run;           /* path is a run folder */
    int has_best;         /* the folder holds best.ckpt */
    CkptHeader h;
    RunProgress progress; /* NaN losses: none kept (a checkpoint older than the progress, or not bin/train's) */
    size_t max_iters;     /* 0: not kept */
    char data[PATH_BUF];  /* the data it trained on, as its run options name it ("": not kept) */
    char data_hash[17];   /* and its hash ("": not kept) */
    char *config;         /* the run folder's config.json, or NULL (none, or not read: config_note) */
    char config_note[64]; /* why config.json was not read ("" when it was, or is not there) */
    char error[512];      /* --list: why this run folder could not be read ("": it was; nothing else is set) */
} RunInfo;

/* The most of a config.json bin/info reads: an experiment file is a few KiB. */
#define RUN_INFO_CONFIG_MAX (1 << 20)

/* Reads path: a run folder (its ckpt, best.ckpt and config.json, up to
 * RUN_INFO_CONFIG_MAX bytes) or a checkpoint. */
int run_info_read(const char *path, RunInfo *info, Error *err);
void run_info_free(RunInfo *info);
/* As text, every string from a file or a folder's name with its control
 * bytes escaped (lm/cli.h's cli_escaped). */
void run_info_print(FILE *f, const RunInfo *info);
/* One JSON object (malloc'd; NULL when out of memory), built from the
 * values read (the checkpoint's run options and config.json parsed, as
 * objects, or null), never from their text: whatever a header or a
 * config.json holds, the output is one valid object with these keys. */
char *run_info_json(const RunInfo *info);

/* Whether a and b trained on the same data with the same tokenizer (their
 * hashes): only such runs' losses compare. */
int run_info_same_group(const RunInfo *a, const RunInfo *b);

typedef enum { RUN_SORT_VAL, RUN_SORT_NAME, RUN_SORT_STEP } RunSort;
/* RUN_SORT_* from "val", "name" or "step"; -1 for anything else. */
int run_sort_parse(const char *name);
/* The runs in dir: the run folders directly in it (the folders holding a
 * ckpt), the checkpoints in it (*.ckpt) and those in its other folders
 * (DIR/demo/model.ckpt, bin/train --out's, named "demo/model.ckpt"),
 * grouped by data and tokenizer (the data's path, then the hashes), each
 * group sorted by best validation loss (none last), name or step (most
 * first); *infos malloc'd (run_infos_free). One that cannot be read is
 * listed with its error (RunInfo.error), after the others. */
int run_info_list(const char *dir, RunSort sort, RunInfo **infos, size_t *n, Error *err);
void run_infos_free(RunInfo *infos, size_t n);
/* Each group's line (its data and tokenizer), the columns' header and one
 * line per run, then the unreadable, names escaped (a newline in one never
 * breaks a line). */
void run_info_list_print(FILE *f, const RunInfo *infos, size_t n);

#endif
