/* AdamW with decoupled weight decay (2-D weights only), the learning-rate
 * schedule (linear warm-up, cosine decay to min_lr) and global-norm clipping. */
#ifndef LM_OPTIM_H
#define LM_OPTIM_H

#include <stddef.h>

#include "model.h"

typedef struct AdamWConfig {
    float beta1, beta2, eps, weight_decay;
} AdamWConfig;

/* One AdamW update of n parameters; t is the 1-based step count. */
void adamw_update(float *params, const float *grads, float *m, float *v, size_t n, float lr,
                  float weight_decay, const AdamWConfig *cfg, size_t t);
/* adamw_update over every tensor of the model, decaying only matrices. */
void model_adamw_step(Model *model, const AdamWConfig *cfg, float lr, size_t t);

/* lr at 0-based step: (step+1)/warmup * lr during warm-up, then cosine from lr
 * down to min_lr at max_iters. */
float lr_schedule(size_t step, size_t warmup, size_t max_iters, float lr, float min_lr);

/* Scales grads so that their global L2 norm is at most max_norm (no-op when
 * max_norm <= 0); returns the norm before clipping. */
float clip_grad_norm(float *grads, size_t n, float max_norm);

#endif
