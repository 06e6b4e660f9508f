#include "optim.h"

#include <math.h>

#include "ops.h"

void adamw_update(float *params, const float *grads, float *m, float *v, size_t n, float lr,
                  float weight_decay, const AdamWConfig *cfg, size_t t) {
    float b1 = cfg->beta1, b2 = cfg->beta2;
    float c1 = 1.0f - powf(b1, (float)t), c2 = 1.0f - powf(b2, (float)t);
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) {
        float g = grads[i];
        m[i] = b1 * m[i] + (1.0f - b1) * g;
        v[i] = b2 * v[i] + (1.0f - b2) * g * g;
        float p = params[i] * (1.0f - lr * weight_decay); /* decoupled decay, as torch.optim.AdamW */
        params[i] = p - lr * (m[i] / c1) / (sqrtf(v[i] / c2) + cfg->eps);
    }
}

void model_adamw_step(Model *model, const AdamWConfig *cfg, float lr, size_t t) {
    for (size_t i = 0; i < model->n_tensors; i++) {
        const ParamTensor *pt = &model->tensors[i];
        size_t off = pt->offset, n = pt->rows * (pt->cols ? pt->cols : 1);
        adamw_update(model->params + off, model->grads + off, model->m + off, model->v + off, n, lr,
                     pt->cols ? cfg->weight_decay : 0.0f, cfg, t);
    }
}

float lr_schedule(size_t step, size_t warmup, size_t max_iters, float lr, float min_lr) {
    if (step < warmup) return lr * (float)(step + 1) / (float)warmup;
    if (step >= max_iters || max_iters <= warmup) return min_lr;
    double ratio = (double)(step - warmup) / (double)(max_iters - warmup);
    double coeff = 0.5 * (1.0 + cos(M_PI * ratio));
    return (float)(min_lr + coeff * (lr - min_lr));
}

float clip_grad_norm(float *grads, size_t n, float max_norm) {
    float norm = (float)sqrt(sum_squares(grads, n));
    if (max_norm > 0.0f && norm > max_norm) {
        float s = max_norm / (norm + 1e-6f);
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < n; i++) grads[i] *= s;
    }
    return norm;
}
