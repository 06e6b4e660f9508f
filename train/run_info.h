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
    char name[256];       /* the run folder's name, or the checkpoint's file name */
    int is_run;           /* path is a run folder */
    int has_best;         /* the folder holds best.ckpt */
    CkptHeader h;
    RunProgress progress; /* NaN losses: none kept (a checkpoint older than the progress, or not bin/train's) */
    size_t max_iters;     /* 0: not kept */
    char *config;         /* the run folder's config.json, or NULL */
} RunInfo;

/* Reads path: a run folder (its ckpt, best.ckpt and config.json) or a checkpoint. */
int run_info_read(const char *path, RunInfo *info, Error *err);
void run_info_free(RunInfo *info);
void run_info_print(FILE *f, const RunInfo *info);
/* One JSON object (malloc'd; NULL when out of memory). */
char *run_info_json(const RunInfo *info);

typedef enum { RUN_SORT_VAL, RUN_SORT_NAME, RUN_SORT_STEP } RunSort;
/* RUN_SORT_* from "val", "name" or "step"; -1 for anything else. */
int run_sort_parse(const char *name);
/* The run folders directly in dir (the folders holding a ckpt), sorted:
 * by best validation loss (none last), name or step (most first); *infos
 * malloc'd (run_infos_free). A folder whose checkpoint cannot be read is
 * an error naming it. */
int run_info_list(const char *dir, RunSort sort, RunInfo **infos, size_t *n, Error *err);
void run_infos_free(RunInfo *infos, size_t n);
/* The listing's header line and one line per run. */
void run_info_list_print(FILE *f, const RunInfo *infos, size_t n);

#endif
