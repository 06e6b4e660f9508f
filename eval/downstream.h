/* Downstream evaluation (bin/eval --pairs, --cloze, --choice): tasks whose
 * items are scored by the log-probability the model gives a continuation
 * after a context, through the model's own tokenizer (docs/evals.md).
 *
 *   pairs:  minimal pairs, BLiMP's JSON lines (sentence_good, sentence_bad;
 *           field, linguistics_term, UID the categories): right when the good
 *           sentence has the higher total log-probability.
 *   cloze:  passages, one a line (LAMBADA's plain text): the last word after
 *           the rest, right when each of its tokens is the greedy prediction;
 *           and the last word's perplexity.
 *   choice: multiple choice, HellaSwag's JSON lines (ctx, endings, label;
 *           activity_label the category): right when the labelled ending has
 *           the highest log-probability, summed (acc) and per byte (acc_norm).
 *
 * Reading (downstream_read.c) checks every line and fails with one line
 * naming the file and the line; scoring (downstream.c) batches the
 * sequences through the evaluation forward (evaluate.h); printing is
 * downstream_print.c. */
#ifndef LM_EVAL_DOWNSTREAM_H
#define LM_EVAL_DOWNSTREAM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lm/error.h"
#include "lm/model.h"
#include "lm/tokenizer.h"

typedef enum { TASK_PAIRS, TASK_CLOZE, TASK_CHOICE, N_TASKS } TaskKind;

/* What a task file may hold: more is refused in one line. */
#define DS_MAX_FILE_BYTES ((size_t)256 << 20)
#define DS_MAX_LINE_BYTES ((size_t)64 << 10)
#define DS_MAX_CHOICES 16
#define DS_MAX_KEYS 3 /* categories an item may belong to (BLiMP's three) */

typedef struct DsItem {
    size_t line;              /* in its file, from 1 */
    char *context;            /* what comes before the choices ("" for a pair) */
    char *choices[DS_MAX_CHOICES]; /* the continuations: a pair's good then bad sentence; the
                                      cloze's last word with the space before it; each ending
                                      with a space before it */
    size_t n_choices, label;  /* label: the right choice */
    char *keys[DS_MAX_KEYS];  /* its category under each of the task's keys (NULL: none) */
} DsItem;

typedef struct DsTask {
    TaskKind kind;
    const char *path;
    DsItem *items;
    size_t n;
    size_t n_keys;
    const char *key_names[DS_MAX_KEYS];
} DsTask;

const char *ds_task_name(TaskKind kind); /* "pairs", "cloze", "choice": its option and JSON key */

/* Reads path as a task of this kind: every item, or -1 with one line in err
 * ("--pairs 'F' line N: ..."). */
int ds_read(TaskKind kind, const char *path, DsTask *t, Error *err);
/* The same from a buffer of len bytes (the fuzzer's way in). */
int ds_parse(TaskKind kind, const char *path, const char *text, size_t len, DsTask *t, Error *err);
void ds_task_free(DsTask *t);

/* A count of right answers among those scored, with its 95% Wilson score interval. */
typedef struct DsCount {
    size_t scored, correct;
    double accuracy, lo, hi; /* NaN when nothing was scored */
} DsCount;
/* The Wilson score interval for `correct` of `n` at z (1.959964: 95%). */
void wilson_interval(size_t correct, size_t n, double z, double *lo, double *hi);
void ds_count_finish(DsCount *c);

/* One category of a task under one key: its name and counts. */
typedef struct DsCategory {
    const char *name; /* the items' own string */
    DsCount acc, acc_norm;
} DsCategory;

/* An item's scores: each choice's log-probability (summed over its tokens)
 * and its length in bytes. */
typedef struct DsScore {
    int scored;      /* 0: skipped (see DsResult.skip_why) */
    int truncated;   /* the context was cut from the left to fit the block */
    double logprob[DS_MAX_CHOICES];
    size_t bytes[DS_MAX_CHOICES], tokens[DS_MAX_CHOICES];
    int greedy;      /* cloze: every token of the word is the model's first choice */
    int correct, correct_norm;
} DsScore;

typedef struct DsResult {
    const DsTask *task;
    const char *start, *start_text; /* the start token: as ds_start_token names it, and its text */
    DsScore *scores;               /* one per item */
    DsCount acc, acc_norm;         /* acc_norm: choice only */
    size_t skipped, truncated;
    const char *skip_why;          /* why an item is skipped */
    double word_nats;              /* cloze: mean nats of the last word over the items scored */
    DsCategory *by[DS_MAX_KEYS];   /* each key's categories, by name (stb_ds arrays) */
} DsResult;

/* The context every sequence is scored after: the tokenizer's
 * <|endoftext|> when it has one, else its newline token. -1 with one line
 * when it has neither. *name: how to say it ("a newline"), *text: its text. */
int ds_start_token(const Tokenizer *tok, uint32_t *id, const char **name, const char **text, Error *err);
/* Scores every item of t through the evaluation forward: `batch`
 * sequences at a time, or with batch 0 as many (up to DS_MAX_BATCH) as
 * `tokens` hold at the longest sequence's length; activations are
 * allocated for that many of the longest (at most the block).
 * show_progress: a count on stderr when it is a terminal. On error too, r
 * is ds_result_free's to free. */
#define DS_MAX_BATCH 256
int ds_score(Model *m, const Tokenizer *tok, const DsTask *t, size_t batch, size_t tokens, int show_progress,
             DsResult *r, Error *err);
void ds_result_free(DsResult *r);

/* The report of a result: text lines, or one JSON member ("pairs":{...},
 * without a separator before it). items: each item's scores too. */
void ds_print_text(FILE *f, const DsResult *r, int items);
void ds_print_json(FILE *f, const DsResult *r, int items);

#endif
