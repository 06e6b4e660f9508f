/* A training run as bin/train sets it up: --resume's defaults, the checks
 * that a resumed run continues the one that wrote the checkpoint, and the
 * run's data, model and buffers opened together on every rank of a job
 * (lm/dist.h).
 *
 * Its options (which of them a checkpoint remembers, which fix the model)
 * and their JSON form inside checkpoints are train/run_options.h; the
 * training step itself is train/trainer.h; the per-step log is
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
#include "run_options.h"

/* bin/train --resume CKPT alone: --out defaults to CKPT (the run continues
 * in place) and --data to the corpus its options name (read from its
 * header; a checkpoint that names none needs --data). */
int run_resume_defaults(RunOptions *o, Error *err);
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
    OptimizerState optim;      /* the optimizer's state and its step's scratch (lm/optim.h) */
    TrainHyper hyper;
    /* With bf16 products: bin/train's start-up check (worst error as a
     * fraction of its bound) and the kernel it ran, for the start-up line. */
    double bf16_worst;
    char bf16_impl[64];
} Run;

/* Sets the run up on every rank of dist together (a failure on any rank is
 * one line on all): the dataset, the model (new from o; or o->resume with its
 * step, data position, kept options and optimizer state; or a new run from
 * o->init's weights, with a fresh optimizer state, step 0 and this run's
 * options), the loss masks (unless o->no_loss_mask),
 * activations and batch buffers. With count_only it stops after the model's
 * layout (model.weights.n_params), allocating no weights' gradients or activations. */
/* Before any work: the folders of --out and --log created (with their
 * parents, as --run's), then every file the run writes (--out,
 * --dump-grads, --log) held to lm/files.h's rule (no device, folder or input of the run; an
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
