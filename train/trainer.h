/* One training step and the validation estimate, as bin/train runs them:
 *   forward -> backward over grad_accum micro-batches -> all-reduce over the
 *   ranks (lm/dist.h) -> clip -> the optimizer (AdamW or Muon, lm/optim.h) at the
 *   scheduled learning rate.
 * The batch RNG is the caller's, so a checkpoint can carry the data position;
 * dropout keys come from (seed, step, micro-batch), so a resumed run draws the
 * same masks as an uninterrupted one. */
#ifndef LM_TRAINER_H
#define LM_TRAINER_H

#include <stddef.h>
#include <stdint.h>

#include "lm/tokens.h"
#include "lm/tokenizer.h"
#include "lm/model.h"
#include "lm/optim.h"
#include "lm/dist.h"
#include "lm/rng.h"

typedef struct TrainHyper {
    size_t batch_size, grad_accum, max_iters, warmup_iters, eval_iters;
    size_t window_align; /* > 1: windows start only at multiples of it (lm/batch.h) */
    double max_seconds;  /* > 0: the schedule follows the elapsed training time (lr_schedule_timed) */
    float lr, min_lr, grad_clip;
    AdamWConfig adam;
    const void *optim_settings; /* the optimizer's own (OptimSettings.own) */
    uint64_t seed;
    /* Loss masks (lm/loss_mask.h), one byte per token of the training and
     * validation files; NULL: every target counts. */
    const uint8_t *train_mask, *val_mask;
} TrainHyper;

typedef struct StepStats {
    float loss;      /* mean over the micro-batches */
    float lr;        /* the rate the step used */
    float grad_norm; /* before clipping */
} StepStats;

/* Step `step` (0-based) of the model with its optimizer's state optim (the
 * optimizer is the state's). inputs/targets: scratch of batch_size * block_size.
 * dist: the job (NULL: one process); prof: NULL, or where the step's
 * time goes, per part (bin/train --profile); grad_accum is per rank, so the step
 * takes grad_accum * ranks micro-batches from the stream, and every rank
 * ends with the same weights. elapsed: seconds of training steps before this
 * one (used only with max_seconds). A non-finite loss or gradient, or a bf16
 * product that failed (model_bf16_failed) on any rank, returns -1 before the
 * weights change. */
int train_step(Model *m, OptimizerState *optim, const TokenFile *train, Rng *data_rng, const TrainHyper *h, Dist *dist,
               Profile *prof, size_t step, double elapsed, int32_t *inputs, int32_t *targets, StepStats *out,
               Error *err);

/* Mean loss over eval_iters batches drawn from a fixed seed: the same batches
 * every time, so successive estimates along a run are comparable. Shared out
 * over the ranks of dist (NULL: one process); NaN if their sum failed. With
 * a tokenizer also in bits per byte of the text the targets stand for, which
 * compares runs with different tokenizers (NaN without one). Into *out;
 * returns 0, or -1 with err set if a bf16 product failed on any rank. */
typedef struct ValLoss {
    float loss, bits_per_byte;
} ValLoss;
int estimate_loss(Model *m, const TokenFile *tf, const TrainHyper *h, Dist *dist, const Tokenizer *tok,
                  int32_t *inputs, int32_t *targets, ValLoss *out, Error *err);
/* The loss of the whole split tf, every token after the first scored once
 * in windows of block_size, batch_size of them a forward (lm/evaluate.h:
 * bin/eval's number for the same weights, with val_mask as bin/eval --mask
 * takes it), and its bits per byte (NaN with a mask); each rank scores it
 * all, its forwards on the step's activations. bin/train --best-by full. */
int full_val_loss(Model *m, const TokenFile *tf, const TrainHyper *h, Dist *dist, const Tokenizer *tok,
                  ValLoss *out, Error *err);

#endif
