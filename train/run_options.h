/* bin/train's options: the numeric ones as one table with their bounds,
 * help and role (which of them a checkpoint remembers, which fix the
 * model), the run's defaults, which were given on the command line, and
 * their JSON form inside checkpoints, written and read back (the resumed
 * run's options, refused where they contradict the checkpoint's).
 *
 * The run's set-up from them is train/run.h. */
#ifndef LM_RUN_OPTIONS_H
#define LM_RUN_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

#include "lm/config.h"
#include "lm/error.h"
#include "lm/files.h"
#include "lm/optim.h"
#include "lm/options.h"

#define RUN_MAX_MIXER_TEXTS 8

typedef struct RunOptions {
    const char *data, *out, *resume, *init, *log, *dump; /* paths; resume, init, log and dump may be NULL */
    /* A run folder (train/run_dir.h): --run DIR, or the folder --resume
     * named; NULL: none. Its files' paths below; log_twin is the log again
     * as JSON lines (NULL: none). */
    const char *run, *log_twin;
    char run_ckpt[PATH_BUF], run_log[PATH_BUF], run_jsonl[PATH_BUF], run_best[PATH_BUF];
    char run_dir[PATH_BUF]; /* the folder --resume DIR/ckpt named */
    const char *mixer, *pos, *norm;               /* as given on the command line (NULL: the default) */
    const char *norm_type, *mlp_act, *recipe;     /* likewise (--recipe: its options are in argv already) */
    const char *precision_given;                  /* --precision as given (NULL: not given) */
    const char *optimizer_given;                  /* --optimizer as given (NULL: not given) */
    const char *best_by_given;                    /* --best-by as given (NULL: not given) */
    /* --best-by full: each validation scores the whole split too, and that
     * chooses best.ckpt and is the progress's loss; kept in the checkpoint's
     * run options ("best_by":"full", absent: the estimate) */
    int best_full;
    /* kept in the checkpoint's run options ("optimizer", absent: adamw) */
    const Optimizer *optimizer;
    Precision precision; /* the products': kept in the checkpoint's run options ("precision", absent: fp32) */
    size_t batch_size, grad_accum, max_iters, stop_at, warmup_iters, eval_interval, eval_iters;
    size_t log_interval, ckpt_interval, seed, threads;
    size_t keep_ckpts;   /* 1: each --ckpt-interval checkpoint is kept under its step too */
    size_t window_align; /* probes: data of fixed-length sequences */
    float max_seconds;   /* equal-time comparisons */
    float lr, min_lr, weight_decay, grad_clip, beta1, beta2, eps;
    /* Each registered optimizer's own settings, by its place in the
     * registry (optimizer_index): its rows of run options write them. */
    OptimizerSettings optim_settings[MAX_OPTIMIZERS];
    /* The mixers' text options as given (NULL: the default), in the order
     * of run_mixer_texts (--grassmann-windows). */
    const char *mixer_text[RUN_MAX_MIXER_TEXTS];
    ModelConfig cfg;
    uint64_t given;      /* bit i: row i of run_option_rows was given on the command line */
    int no_loss_mask;    /* every target learned, masks or not: kept in the checkpoint ("no_loss_mask", absent: 0) */
    /* The corpus, kept in the checkpoint so that --resume alone continues on
     * it: its absolute path and dataset_hash (set by run_open). */
    char data_real[PATH_BUF], data_hash[17];
    char *data_owned;    /* data, when it came from --resume's checkpoint (malloc'd; the caller frees it) */
} RunOptions;

/* Where a run stands besides its step, kept in its checkpoints (the
 * "progress" object of the run options' JSON) for bin/info and for the
 * best checkpoint across resumes: the tokens trained on, the last
 * validation loss and the best one with its step (NaN: none yet). */
typedef struct RunProgress {
    size_t tokens;
    float val_loss, best_val_loss;
    size_t best_step;
} RunProgress;

/* bin/train's numeric options, at most 64 (RunOptions.given), each a row
 * (lm/options.h) whose offset is into RunOptions and whose role says what
 * a checkpoint makes of it: the model's sizes, each registered mixer's
 * number rows (RUN_ARCH, in the config), the recipe's switches, the run's
 * own, then each registered optimizer's rows (RUN_KEPT, their optimizer
 * set: lm/optim.h); n of them. A mixer's or an optimizer's row is its own,
 * its offset moved to where its settings lie in RunOptions. bin/train's
 * table takes them in with base the RunOptions it fills. */
const OptionRow *run_option_rows(size_t *n);

/* The mixers' text options (Grassmann's window list), in registry order,
 * at most RUN_MAX_MIXER_TEXTS; n of them. Each is its mixer's row with its
 * offset that of its text as given in RunOptions (mixer_text[j]), which
 * the mixer's hooks parse into the config (model_config_from_options). */
const OptionRow *run_mixer_texts(size_t *n);

/* bin/train's text options of the run (--best-by) as command-line rows
 * writing into o (room for RUN_TEXT_ROWS); returns how many. */
#define RUN_TEXT_ROWS 1
size_t run_text_rows(RunOptions *o, OptionRow *rows);
/* The text options as given (--precision, --optimizer, --best-by) into
 * their values; one line naming the choices for a value that is none. */
int run_options_parse_texts(RunOptions *o, Error *err);

/* bin/train's defaults (the model's from config_defaults). */
void run_options_defaults(RunOptions *o);
/* Whether row i of run_option_rows was given on the command line; or the
 * row named name (0: no row has that name). */
int run_option_given(const RunOptions *o, size_t i);
int run_option_given_named(const RunOptions *o, const char *name);
/* The run's options as JSON, stored in checkpoints so --resume needs none:
 * the kept numbers, the precision and optimizer, --best-by full,
 * --no-loss-mask, and the corpus (its absolute path and hash). grad-accum is stored for the whole
 * job (per rank x ranks), so that the checkpoint resumes on any number of
 * ranks that divides it. */
char *run_options_json(const RunOptions *o, size_t ranks);
/* What a checkpoint keeps of its run: run_options_json with the
 * "progress" object added. */
char *run_state_json(const RunOptions *o, const RunProgress *p, size_t ranks);
/* The progress in a checkpoint's run options (json may be NULL); returns 1
 * when it had one, else 0 with *p empty (no tokens, NaN losses). */
int run_progress_from_json(const char *json, RunProgress *p);
/* An optimizer's own option given (--muon-lr, ...) to a run whose optimizer
 * is another would change nothing: refused rather than ignored. */
int run_check_optimizer_options(const RunOptions *o, Error *err);
/* Takes the RUN_KEPT options (the optimizers' too) from a checkpoint's JSON, except
 * those given on the command line; a checkpoint is input too: its values keep
 * the command line's bounds. The precision is the checkpoint's (absent: fp32),
 * and so is the optimizer (absent: adamw): a --precision or --optimizer given
 * that differs is refused, since a resumed run continues the one that wrote
 * the checkpoint exactly; so is --best-by (absent: the estimate), whose best
 * loss so far is of its kind; so is its own corpus (o->data_real the path it
 * names) whose hash (o->data_hash, when set) has changed since. */
int run_options_from_json(RunOptions *o, const char *json, size_t ranks, Error *err);

#endif
