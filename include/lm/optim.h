/* The optimizer, as an interface, with its two implementations: AdamW with
 * decoupled weight decay (2-D weights only) on every tensor, and Muon on the
 * hidden layers' matrices with AdamW for the rest; the learning-rate
 * schedule (linear warm-up, cosine decay to min_lr) and global-norm clipping.
 *
 * An optimizer's state lives in the model's two buffers that mirror the
 * parameters (Model.m, Model.v: allocated by model_alloc_training and stored
 * in checkpoints as optim.m.<name> / optim.v.<name>): AdamW's moments, or
 * for a tensor that Muon updates its momentum buffer in m (v stays zero:
 * the buffers keep the parameters' one layout, so every reader addresses a
 * tensor's state by its offset; bin/train's start-up line names the unused
 * share, and the memory check counts it).
 * What a step needs besides (Muon's Newton-Schulz products) is scratch that
 * the caller allocates once (Optimizer.scratch_floats): nothing is allocated
 * inside a step.
 *
 * Adding an optimizer: write src/optim/<name>.c exporting a `const
 * Optimizer`, and list it in the registry in src/optim/optim.c, the one
 * place that names the implementations. */
#ifndef LM_OPTIM_H
#define LM_OPTIM_H

#include <stddef.h>

#include "lm/model.h"

typedef struct AdamWConfig {
    float beta1, beta2, eps, weight_decay;
} AdamWConfig;

/* Muon's own settings (bin/train --muon-lr, --muon-momentum,
 * --muon-weight-decay): its peak learning rate, which the schedule scales as
 * it scales AdamW's; the momentum (Nesterov); the decoupled weight decay of
 * the matrices it updates, as a fraction of its learning rate. */
typedef struct MuonConfig {
    float lr, momentum, weight_decay;
} MuonConfig;

/* What a step is told besides the gradients: every optimizer's settings
 * (each reads its own) and the peak AdamW rate lr_peak, against which a
 * step's scheduled lr gives the schedule's factor for Muon's rate. */
typedef struct OptimSettings {
    AdamWConfig adam;
    MuonConfig muon;
    float lr_peak;
} OptimSettings;

typedef struct Optimizer {
    const char *name;
    /* Floats of scratch a step needs for a model of this layout (0: none). */
    size_t (*scratch_floats)(const Model *m);
    /* One update of every parameter from the gradient grads * grad_scale
     * (the clipping factor), at AdamW's scheduled rate lr; t is the 1-based
     * step count; scratch holds n_scratch floats (scratch_floats asked when
     * the run began: a step uses no more, and fewer threads if it must).
     * Refreshes the bf16 weights (model_round_weights). The result does not
     * depend on the thread count. */
    void (*step)(Model *m, const OptimSettings *s, float *scratch, size_t n_scratch, float lr, size_t t,
                 float grad_scale);
} Optimizer;

const Optimizer *optimizer_find(const char *name);
/* "adamw, muon" for messages. */
const char *optimizer_names(void);
/* The bytes of scratch opt's step needs for a model of this config, for the
 * memory check before allocating (0 if the layout cannot be counted). */
size_t optimizer_scratch_bytes(const Optimizer *opt, const ModelConfig *cfg);

/* One AdamW update of n parameters with gradient grads * grad_scale (the
 * clipping factor, applied here rather than in a pass of its own); t is the
 * 1-based step count. */
void adamw_update(float *params, const float *grads, float grad_scale, float *m, float *v, size_t n, float lr,
                  float weight_decay, const AdamWConfig *cfg, size_t t);
/* adamw_update over every tensor of the model, decaying only matrices. */
void model_adamw_step(Model *model, const AdamWConfig *cfg, float lr, size_t t, float grad_scale);

/* Whether Muon updates tensor t: a matrix of the hidden layers (the mixers'
 * projections and the MLP's, names "h.<l>."); embeddings, the head, gains
 * and biases stay with AdamW. */
int muon_updates(const ParamTensor *t);
/* Muon's orthogonalisation of a rows x cols matrix x, in place, on the
 * calling thread: x divided by its Frobenius norm (+ 1e-7), then 5 quintic
 * Newton-Schulz iterations with coefficients (3.4445, -4.7750, 2.0315), on x
 * or, when rows > cols, on x^T, every product through gemm_serial
 * (lm/gemm.h). scratch: muon_ns_scratch_floats. */
void muon_orthogonalize(float *x, size_t rows, size_t cols, float *scratch);
size_t muon_ns_scratch_floats(size_t rows, size_t cols);
/* n matrices shared out among the threads as Muon's step shares them, each
 * whole on one thread, thread i using scratch + i * per_thread (per_thread >=
 * muon_ns_scratch_floats of the largest; n_scratch floats in all, so at most
 * n_scratch / per_thread threads): bin/gemm-rate --newton-schulz. */
void muon_orthogonalize_all(float *const *x, const size_t *rows, const size_t *cols, size_t n, float *scratch,
                            size_t n_scratch, size_t per_thread);

/* lr at 0-based step: (step+1)/warmup * lr during warm-up, then cosine from lr
 * down to min_lr at max_iters. */
float lr_schedule(size_t step, size_t warmup, size_t max_iters, float lr, float min_lr);
/* The same for a wall-time budget (bin/train --max-seconds): the same
 * warm-up in steps, then the cosine follows elapsed / max_seconds (elapsed:
 * seconds of training steps before this one), so runs of equal time end their
 * decay together whatever their speed. */
float lr_schedule_timed(size_t step, size_t warmup, double elapsed, double max_seconds, float lr, float min_lr);

/* The global L2 norm of n gradients (independent of the thread count). */
float grad_norm(const float *grads, size_t n);
/* The factor that scales a gradient of global norm `norm` down to max_norm,
 * as torch.nn.utils.clip_grad_norm_ does; 1 within the bound or when
 * max_norm <= 0. */
float clip_scale(float norm, float max_norm);

#endif
