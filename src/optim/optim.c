#include "lm/optim.h"

#include <math.h>

#include "lm/ops.h"
#include "nn/vec_loops.h"

/* Parameters per piece of a span: a piece is one call of the level's loop
 * (nn/vec_loops.h), handed to one thread. */
#define ADAMW_PIECE 2048

/* The update of one span of parameters, in pieces shared among the threads
 * of the enclosing parallel region (an orphaned `omp for`: one region serves
 * all tensors). Each element's result is the same whichever thread computes it. */
static void adamw_span(float *params, const float *grads, float grad_scale, float *m, float *v, size_t n, float lr,
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

void model_adamw_step(Model *model, const AdamWConfig *cfg, float lr, size_t t, float grad_scale) {
#pragma omp parallel
    for (size_t i = 0; i < model->n_tensors; i++) {
        const ParamTensor *pt = &model->tensors[i];
        size_t off = pt->offset, n = pt->rows * (pt->cols ? pt->cols : 1);
        adamw_span(model->params + off, model->grads + off, grad_scale, model->m + off, model->v + off, n, lr,
                   pt->cols ? cfg->weight_decay : 0.0f, cfg, t);
    }
    model_round_weights(model); /* bf16: the products' weights, once per step */
}

/* Cosine from lr (ratio 0) down to min_lr (ratio >= 1). */
static float lr_cosine(double ratio, float lr, float min_lr) {
    if (ratio >= 1.0) return min_lr;
    double coeff = 0.5 * (1.0 + cos(M_PI * ratio));
    return (float)(min_lr + coeff * (lr - min_lr));
}

float lr_schedule(size_t step, size_t warmup, size_t max_iters, float lr, float min_lr) {
    if (step < warmup) return lr * (float)(step + 1) / (float)warmup;
    if (step >= max_iters || max_iters <= warmup) return min_lr;
    return lr_cosine((double)(step - warmup) / (double)(max_iters - warmup), lr, min_lr);
}

float lr_schedule_timed(size_t step, size_t warmup, double elapsed, double max_seconds, float lr, float min_lr) {
    if (step < warmup) return lr * (float)(step + 1) / (float)warmup;
    return lr_cosine(elapsed / max_seconds, lr, min_lr);
}

float grad_norm(const float *grads, size_t n) { return (float)sqrt(sum_squares(grads, n)); }

float clip_scale(float norm, float max_norm) {
    return max_norm > 0.0f && norm > max_norm ? max_norm / (norm + 1e-6f) : 1.0f;
}
