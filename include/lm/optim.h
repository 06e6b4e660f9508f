/* The optimizer, as an interface, with its two implementations: AdamW with
 * decoupled weight decay (2-D weights only) on every tensor, and Muon on the
 * hidden layers' matrices with AdamW for the rest; the learning-rate
 * schedule (linear warm-up, cosine decay to min_lr) and global-norm clipping.
 *
 * An optimizer steps over a view of the parameters (ParamView: the
 * tensors, the weights and their gradients; no Model) and keeps a state of
 * its own, apart from the model: it declares what it keeps per tensor
 * (buffers of the tensor's shape, named as checkpoints store them: AdamW
 * its two moments "m" and "v" for every tensor, Muon its momentum "m" for
 * each matrix it updates and AdamW's two for the rest), and
 * optim_state_init allocates that (OptimizerState, in one allocation) with
 * the scratch its step needs (Optimizer.scratch_floats: Muon's
 * Newton-Schulz products), so nothing is allocated inside a step.
 * Checkpoints store the state as optim.<name>.<tensor> (lm/checkpoint.h's
 * OptimBuffers).
 *
 * An optimizer owns its settings besides AdamW's (which every optimizer
 * shares for the tensors it leaves to AdamW): a struct of its own in a block
 * of bin/train's run options (OptimizerSettings), and its rows of options
 * (OptionRow, lm/options.h: bin/train's option, bounds, default, help),
 * which a run with this optimizer keeps in its checkpoint under the
 * option's name. The trainer refreshes the bf16 weights once after any
 * step (model_round_weights).
 *
 * Adding an optimizer: write src/optim/<name>.c exporting a `const
 * Optimizer`, and list it in the registry in src/optim/optim.c, the one
 * place that names the implementations. No other file changes: bin/train's
 * --optimizer takes its name and its option rows join bin/train's options.
 * See src/mixers/README.md. */
#ifndef LM_OPTIM_H
#define LM_OPTIM_H

#include <stddef.h>

#include "lm/checkpoint.h"
#include "lm/model.h"
#include "lm/options.h"

typedef struct AdamWConfig {
    float beta1, beta2, eps, weight_decay;
} AdamWConfig;

#define MAX_OPTIMIZERS 8            /* entries of the registry, at most */
#define OPTIMIZER_SETTINGS_BYTES 256 /* an optimizer's own settings, at most */

/* An optimizer's own settings, a struct of its own inside (its size at most
 * OPTIMIZER_SETTINGS_BYTES: a _Static_assert beside it). */
typedef union OptimizerSettings {
    unsigned char bytes[OPTIMIZER_SETTINGS_BYTES];
    size_t align_size;
    double align_double;
} OptimizerSettings;

/* What a step is told besides the gradients: AdamW's settings, the
 * optimizer's own (own: its settings struct, NULL for none), and the peak
 * AdamW rate lr_peak, against which a step's scheduled lr gives the
 * schedule's factor for an optimizer's own rate. */
typedef struct OptimSettings {
    AdamWConfig adam;
    const void *own;
    float lr_peak;
} OptimSettings;

/* The parameters an optimizer steps over: the tensors (names, shapes and
 * offsets), and the weights and gradients they lie in, each one allocation
 * of n_params floats. A view: it owns nothing. params and grads may be NULL
 * where only the layout is asked (scratch_floats, describe,
 * optim_state_init). */
typedef struct ParamView {
    const ParamTensor *tensors;
    size_t n_tensors, n_params;
    float *params;
    const float *grads;
} ParamView;

/* The model's parameters as the optimizer sees them. */
ParamView params_view(const Model *m);

#define OPTIM_MAX_BUFFERS 2 /* an optimizer's buffers per tensor, at most: the checkpoint format's "m" and "v" */

typedef struct OptimizerState OptimizerState;

typedef struct Optimizer {
    const char *name;
    const char *title; /* in messages: "Muon" */
    /* Its own settings (none: NULL, 0), in the order of bin/train's --help:
     * each a number (OPT_FLOAT or OPT_SIZE) at `offset` in its settings
     * struct, bin/train's option `name` within [lo, hi] (default def; its
     * value called `value` in --help: X, N), kept in the checkpoint's run
     * options under that name by a run with this optimizer (and by no other
     * run). */
    const OptionRow *options;
    size_t n_options;
    /* The state it keeps: buffers named state_names[0 .. n_state_names)
     * (at most OPTIM_MAX_BUFFERS, named as a checkpoint stores them: "m"
     * and "v"), of which tensor t keeps the first state_buffers(t), each of
     * t's shape. */
    const char *const *state_names;
    size_t n_state_names;
    size_t (*state_buffers)(const ParamTensor *t);
    /* Floats of scratch a step needs for parameters of this layout (0: none). */
    size_t (*scratch_floats)(const ParamView *p);
    /* One update of every parameter from the gradient grads * grad_scale
     * (the clipping factor), at AdamW's scheduled rate lr; t is the 1-based
     * step count; s is its state (optim_state_init), whose scratch the step
     * uses (and fewer threads if it must). The result does not depend on the
     * thread count. The bf16 weights are the caller's to refresh
     * (model_round_weights). */
    void (*step)(const ParamView *p, OptimizerState *s, const OptimSettings *set, float lr, size_t t,
                 float grad_scale);
    /* Optional (NULL: an AdamW run's lines): bin/train's start-up line about
     * it (own: its settings; lr: the AdamW peak rate), without the newline,
     * into line. */
    void (*describe)(const ParamView *p, const void *own, float lr, char *line, size_t len);
} Optimizer;

/* An optimizer's state for one model, as the optimizer declares it, and
 * the scratch of its step: allocated by optim_state_init and owned here,
 * apart from the model. The buffers lie in one allocation, buffer k of
 * every tensor that keeps one in tensor order, then buffer k + 1 (AdamW's
 * two moments each mirror the weights' layout). */
struct OptimizerState {
    const Optimizer *opt;
    OptimBuffers buffers; /* tensor i's buffer k, as checkpoints store it (lm/checkpoint.h) */
    float *floats;        /* the buffers' allocation: n_floats */
    size_t n_floats;
    float *scratch;       /* the step's: n_scratch floats (Optimizer.scratch_floats), or NULL */
    size_t n_scratch;
};

/* opt's state for the parameters p (their layout: values not read), every
 * buffer zero (a new run's), and its step's scratch for the parallel width
 * now (lm/threads.h). Returns 0, or -1 with err set. */
int optim_state_init(OptimizerState *s, const Optimizer *opt, const ParamView *p, Error *err);
void optim_state_free(OptimizerState *s);
/* Tensor i's buffer k of the state (NULL: the tensor keeps none). */
static inline float *optim_buffer(const OptimizerState *s, size_t i, size_t k) {
    return s->buffers.buf[i * s->buffers.n_names + k];
}
/* One step of the state's optimizer over p (Optimizer.step). */
void optim_step(OptimizerState *s, const ParamView *p, const OptimSettings *set, float lr, size_t t,
                float grad_scale);

const Optimizer *optimizer_find(const char *name);
/* The registry's entries in order (the first is the default: adamw):
 * optimizer_count() of them, optimizer_at(i) the i-th; optimizer_index is
 * opt's place (its settings block in bin/train's run options). */
size_t optimizer_count(void);
const Optimizer *optimizer_at(size_t i);
size_t optimizer_index(const Optimizer *opt);
/* "adamw, muon" for messages. */
const char *optimizer_names(void);
/* The bytes of opt's state (its buffers), and of the scratch its step
 * needs, for a model of this config: for the memory check before
 * allocating (0 if the layout cannot be counted). */
size_t optimizer_state_bytes(const Optimizer *opt, const ModelConfig *cfg);
size_t optimizer_scratch_bytes(const Optimizer *opt, const ModelConfig *cfg);

/* One AdamW update of n parameters with gradient grads * grad_scale (the
 * clipping factor, applied here rather than in a pass of its own); t is the
 * 1-based step count. */
void adamw_update(float *params, const float *grads, float grad_scale, float *m, float *v, size_t n, float lr,
                  float weight_decay, const AdamWConfig *cfg, size_t t);

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
