/* AdamW on every tensor: decoupled weight decay on the matrices only. */
#include "optim/adamw.h"

#include <math.h>

void adamw_span(float *params, const float *grads, float grad_scale, float *m, float *v, size_t n, float lr,
                float weight_decay, const AdamWConfig *cfg, size_t t) {
    float b1 = cfg->beta1, b2 = cfg->beta2;
    float c1 = 1.0f - powf(b1, (float)t), c2 = 1.0f - powf(b2, (float)t);
    float decay = 1.0f - lr * weight_decay; /* decoupled, as torch.optim.AdamW */
#pragma omp for schedule(static) nowait
    for (size_t i = 0; i < n; i++) {
        float g = grads[i] * grad_scale;
        m[i] = b1 * m[i] + (1.0f - b1) * g;
        v[i] = b2 * v[i] + (1.0f - b2) * g * g;
        params[i] = params[i] * decay - lr * (m[i] / c1) / (sqrtf(v[i] / c2) + cfg->eps);
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

static size_t adamw_scratch_floats(const Model *m) {
    (void)m;
    return 0;
}

static void adamw_step(Model *m, const OptimSettings *s, float *scratch, size_t n_scratch, float lr, size_t t,
                       float grad_scale) {
    (void)scratch, (void)n_scratch;
    model_adamw_step(m, &s->adam, lr, t, grad_scale);
}

const Optimizer adamw_optimizer = {"adamw", adamw_scratch_floats, adamw_step};
