/* AdamW with decoupled weight decay (2-D weights only), the learning-rate
 * schedule (linear warm-up, cosine decay to min_lr) and global-norm clipping. */
#ifndef LM_OPTIM_H
#define LM_OPTIM_H

#include <stddef.h>

#include "lm/model.h"

typedef struct AdamWConfig {
    float beta1, beta2, eps, weight_decay;
} AdamWConfig;

/* One AdamW update of n parameters with gradient grads * grad_scale (the
 * clipping factor, applied here rather than in a pass of its own); t is the
 * 1-based step count. */
void adamw_update(float *params, const float *grads, float grad_scale, float *m, float *v, size_t n, float lr,
                  float weight_decay, const AdamWConfig *cfg, size_t t);
/* adamw_update over every tensor of the model, decaying only matrices. */
void model_adamw_step(Model *model, const AdamWConfig *cfg, float lr, size_t t, float grad_scale);

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
