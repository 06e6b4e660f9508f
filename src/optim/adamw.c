/* AdamW on every tensor: decoupled weight decay on the matrices only; its
 * state the two moments of every tensor. */
#include "optim/adamw.h"

#include <math.h>

#include "nn/vec_loops.h"

/* Parameters per piece of a span: a piece is one call of the level's loop
 * (nn/vec_loops.h), handed to one thread. */
#define ADAMW_PIECE 2048

void adamw_span(float *params, const float *grads, float grad_scale, float *m, float *v, size_t n, float lr,
                float weight_decay, const AdamWConfig *cfg, size_t t) {
    float b1 = cfg->beta1, b2 = cfg->beta2;
    AdamWLoop k = {.b1 = b1, .b2 = b2, .c1 = 1.0f - powf(b1, (float)t), .c2 = 1.0f - powf(b2, (float)t),
                   .decay = 1.0f - lr * weight_decay, /* decoupled, as torch.optim.AdamW */
                   .lr = lr, .eps = cfg->eps, .grad_scale = grad_scale};
    const VecLoops *loops = vec_loops();
#pragma omp for schedule(static) nowait
    for (size_t lo = 0; lo < n; lo += ADAMW_PIECE) {
        size_t len = n - lo < ADAMW_PIECE ? n - lo : ADAMW_PIECE;
        loops->adamw(params + lo, grads + lo, m + lo, v + lo, len, &k);
    }
}

void adamw_update(float *params, const float *grads, float grad_scale, float *m, float *v, size_t n, float lr,
                  float weight_decay, const AdamWConfig *cfg, size_t t) {
#pragma omp parallel
    adamw_span(params, grads, grad_scale, m, v, n, lr, weight_decay, cfg, t);
}

void adamw_tensor(const ParamView *p, const OptimizerState *s, size_t i, const AdamWConfig *cfg, float lr, size_t t,
                  float grad_scale) {
    const ParamTensor *pt = &p->tensors[i];
    size_t off = pt->offset, n = pt->rows * (pt->cols ? pt->cols : 1);
    adamw_span(p->params + off, p->grads + off, grad_scale, optim_buffer(s, i, 0), optim_buffer(s, i, 1), n, lr,
               pt->cols ? cfg->weight_decay : 0.0f, cfg, t);
}

/* Its two moments, "m" and "v", for every tensor. */
static size_t adamw_state_buffers(const ParamTensor *t) {
    (void)t;
    return 2;
}

static size_t adamw_scratch_floats(const ParamView *p) {
    (void)p;
    return 0;
}

/* Every tensor, decaying only matrices. */
static void adamw_step(const ParamView *p, OptimizerState *s, const OptimSettings *set, float lr, size_t t,
                       float grad_scale) {
#pragma omp parallel
    for (size_t i = 0; i < p->n_tensors; i++) adamw_tensor(p, s, i, &set->adam, lr, t, grad_scale);
}

const char *const adamw_state_names[2] = {"m", "v"};

const Optimizer adamw_optimizer = {
    .name = "adamw",
    .title = "AdamW",
    .state_names = adamw_state_names,
    .n_state_names = 2,
    .state_buffers = adamw_state_buffers,
    .scratch_floats = adamw_scratch_floats,
    .step = adamw_step,
};
