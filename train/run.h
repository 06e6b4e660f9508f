/* A training run as bin/train sets it up: its options (which of them a
 * checkpoint remembers, which fix the model), their JSON form inside
 * checkpoints, the checks that a resumed run continues the one that wrote
 * the checkpoint, and the run's data, model and buffers opened together on
 * every rank of a job (lm/dist.h).
 *
 * The training step itself is train/trainer.h; the per-step log is
 * train/run_log.h. */
#ifndef LM_RUN_H
#define LM_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "lm/files.h"
#include "lm/loss_mask.h"
#include "lm/tokens.h"
#include "lm/config.h"
#include "lm/model.h"
#include "trainer.h"
#include "lm/dist.h"
#include "lm/error.h"
#include "lm/rng.h"

#define RUN_MAX_MIXER_TEXTS 8

typedef struct RunOptions {
    const char *data, *out, *resume, *init, *log, *dump; /* paths; resume, init, log and dump may be NULL */
    /* A run folder (train/run_dir.h): --run DIR, or the folder --resume
     * named; NULL: none. Its files' paths below; log_twin is the log again
     * as JSON lines (NULL: none). */
    const char *run, *log_twin;
    char run_ckpt[PATH_BUF], run_log[PATH_BUF], run_jsonl[PATH_BUF], run_best[PATH_BUF];
    const char *mixer, *pos, *norm;               /* as given on the command line (NULL: the default) */
    const char *norm_type, *mlp_act, *recipe;     /* likewise (--recipe: its options are in argv already) */
    const char *precision_given;                  /* --precision as given (NULL: not given) */
    const char *optimizer_given;                  /* --optimizer as given (NULL: not given) */
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

/* What a numeric option is to a checkpoint. */
typedef enum {
    RUN_ONCE = 0, /* this invocation only (threads, stop-at, time budget) */
    RUN_KEPT = 1, /* stored in the checkpoint; --resume takes it unless given again */
    RUN_ARCH = 2, /* fixes the model: with --resume it must equal the checkpoint's */
} RunOptionRole;

/* One numeric option: the command line's row and the checkpoint's JSON key. */
typedef struct RunOption {
    const char *name;
    int is_float; /* a float, else a size_t */
    size_t offset; /* into RunOptions */
    double lo, hi;
    RunOptionRole role;
    const char *help;
    /* An optimizer's own row (RUN_KEPT), stored only by a run with that
     * optimizer (every other run's checkpoint is as it was without it); NULL: every run's. */
    const struct Optimizer *optimizer;
} RunOption;

/* bin/train's numeric options, at most 64 (RunOptions.given): the model's
 * sizes, each registered mixer's number rows (RUN_ARCH, in the config),
 * the recipe's switches, the run's own, then each registered optimizer's
 * rows (lm/optim.h); n of them. */
const RunOption *run_option_rows(size_t *n);

/* The mixers' text options (Grassmann's window list), in registry order,
 * into rows (room for RUN_MAX_MIXER_TEXTS); returns how many. */
size_t run_mixer_texts(const MixerOption **rows);

/* bin/train's defaults (the model's from config_defaults). */
void run_options_defaults(RunOptions *o);
/* The run's options as JSON, stored in checkpoints so --resume needs none:
 * the kept numbers, the precision and optimizer, --no-loss-mask, and the
 * corpus (its absolute path and hash). grad-accum is stored for the whole
 * job (per rank x ranks), so that the checkpoint resumes on any number of
 * ranks that divides it. */
char *run_options_json(const RunOptions *o, size_t ranks);
/* What a checkpoint keeps of its run: run_options_json with the
 * "progress" object added. */
char *run_state_json(const RunOptions *o, const RunProgress *p, size_t ranks);
/* The progress in a checkpoint's run options (json may be NULL); returns 1
 * when it had one, else 0 with *p empty (no tokens, NaN losses). */
int run_progress_from_json(const char *json, RunProgress *p);
/* bin/train --resume CKPT alone: --out defaults to CKPT (the run continues
 * in place) and --data to the corpus its options name (read from its
 * header; a checkpoint that names none needs --data). */
int run_resume_defaults(RunOptions *o, Error *err);
/* An optimizer's own option given (--muon-lr, ...) to a run whose optimizer
 * is another would change nothing: refused rather than ignored. */
int run_check_optimizer_options(const RunOptions *o, Error *err);
/* Takes the RUN_KEPT options (the optimizers' too) from a checkpoint's JSON, except
 * those given on the command line; a checkpoint is input too: its values keep
 * the command line's bounds. The precision is the checkpoint's (absent: fp32),
 * and so is the optimizer (absent: adamw): a --precision or --optimizer given
 * that differs is refused, since a resumed run continues the one that wrote
 * the checkpoint exactly; so is its own corpus (o->data_real the path it
 * names) whose hash (o->data_hash, when set) has changed since. */
int run_options_from_json(RunOptions *o, const char *json, size_t ranks, Error *err);
/* With --resume or --init, model options given on the command line must
 * equal the checkpoint's (so the command that started a run, plus --resume,
 * continues it; and --init never reshapes the weights it starts from); the
 * first that differs is named with both values. With init, --dropout is the
 * new run's own: it changes no weight. */
int run_check_model(const RunOptions *o, const ModelConfig *ckpt, int init, Error *err);
/* That the run fits the machine's memory (the checkpoint file, read whole,
 * when resuming): said before allocating rather than found by the OOM killer. */
int run_check_memory(const ModelConfig *cfg, const RunOptions *o, size_t ckpt_bytes, Error *err);

/* Everything a run trains with. */
typedef struct Run {
    RunOptions o;
    Dist *dist;
    Dataset ds;
    LossMasks masks; /* the loss on marked targets only, where the data says which */
    Model model;
    size_t start_step;
    RunProgress progress; /* at start_step (from the checkpoint when resuming), then as the loop goes */
    Rng data_rng;    /* where the data stream is */
    int32_t *inputs, *targets; /* one micro-batch */
    float *optim_scratch;      /* the optimizer step's (Optimizer.scratch_floats), or NULL */
    TrainHyper hyper;
    /* With bf16 products: bin/train's start-up check (worst error as a
     * fraction of its bound) and the kernel it ran, for the start-up line. */
    double bf16_worst;
    char bf16_impl[64];
} Run;

/* Sets the run up on every rank of dist together (a failure on any rank is
 * one line on all): the dataset, the model (new from o; or o->resume with its
 * step, data position and kept options; or a new run from o->init's weights,
 * with fresh AdamW moments, step 0 and this run's options), the loss masks (unless o->no_loss_mask),
 * activations and batch buffers. With count_only it stops after the model's
 * layout (model.n_params), allocating no weights' gradients or activations. */
/* Before any work: every file the run writes (--out, --dump-grads, --log)
 * held to lm/files.h's rule (no device, folder or input of the run; an
 * existing --log only if it is a log). Then the output is this run's alone:
 * rank 0 (which writes the checkpoints) holds a lock beside o->out (a
 * second run on it refuses, naming this one's pid) in *lock until
 * output_unlock, and removes what killed runs left of it, saying so on
 * stderr as prog. No lock for --dump-grads. */
int run_claim_output(const RunOptions *o, Dist *dist, const char *prog, OutputLock *lock, Error *err);
int run_open(Run *r, const RunOptions *o, Dist *dist, int count_only, Error *err);
void run_close(Run *r);
/* The checkpoint at `step`: rank 0 writes it, atomically; every rank learns
 * whether that worked. */
int run_save(Run *r, const char *path, size_t step, Error *err);

#endif
