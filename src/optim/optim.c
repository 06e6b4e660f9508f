/* The optimizer registry (the one place that names the implementations),
 * the learning-rate schedule and gradient clipping. */
#include "lm/optim.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "lm/ops.h"
#include "optim/adamw.h"
#include "optim/muon.h"
#include "runtime/registry.h"

_Static_assert(offsetof(Optimizer, name) == 0, "a registry entry starts with its name");

static const void *const registry[] = {&adamw_optimizer, &muon_optimizer};
#define N_OPTIMIZERS (sizeof registry / sizeof registry[0])
_Static_assert(N_OPTIMIZERS <= MAX_OPTIMIZERS, "a settings block in the run options for every optimizer");

const Optimizer *optimizer_find(const char *name) { return registry_find(registry, N_OPTIMIZERS, name); }

size_t optimizer_count(void) { return N_OPTIMIZERS; }

const Optimizer *optimizer_at(size_t i) { return i < N_OPTIMIZERS ? registry[i] : NULL; }

size_t optimizer_index(const Optimizer *opt) { return registry_index(registry, N_OPTIMIZERS, opt); }

const char *optimizer_names(void) {
    static char names[128];
    return registry_names(registry, N_OPTIMIZERS, names, sizeof names);
}

ParamView params_view(const Model *m) {
    return (ParamView){m->weights.tensors, m->weights.n_tensors, m->weights.n_params, m->weights.params, m->weights.grads};
}

/* The floats of opt's buffers for these tensors, and (ptrs not NULL) each
 * tensor's buffer k pointed into base: buffer k of every tensor that keeps
 * one, then buffer k + 1. */
static size_t lay_out_state(const Optimizer *opt, const ParamView *p, float *base, float **ptrs) {
    size_t used = 0, nb = opt->n_state_names;
    for (size_t k = 0; k < nb; k++)
        for (size_t i = 0; i < p->n_tensors; i++) {
            const ParamTensor *t = &p->tensors[i];
            int kept = k < opt->state_buffers(t);
            if (ptrs) ptrs[i * nb + k] = kept ? base + used : NULL;
            if (kept) used += t->rows * (t->cols ? t->cols : 1);
        }
    return used;
}

int optim_state_init(OptimizerState *s, const Optimizer *opt, const ParamView *p, Error *err) {
    memset(s, 0, sizeof *s);
    size_t nb = opt->n_state_names, n = lay_out_state(opt, p, NULL, NULL), scratch = opt->scratch_floats(p);
    float **ptrs = lm_calloc(p->n_tensors * nb + 1, sizeof *ptrs, err);
    s->floats = ptrs && n ? lm_calloc(n, sizeof(float), err) : NULL;
    s->scratch = ptrs && (s->floats || !n) && scratch ? lm_calloc(scratch, sizeof(float), err) : NULL;
    if (!ptrs || (n && !s->floats) || (scratch && !s->scratch)) {
        free(ptrs), free(s->floats), free(s->scratch);
        memset(s, 0, sizeof *s);
        return -1;
    }
    lay_out_state(opt, p, s->floats, ptrs);
    s->opt = opt;
    s->buffers = (OptimBuffers){nb, opt->state_names, ptrs};
    s->n_floats = n;
    s->n_scratch = scratch;
    return 0;
}

void optim_state_free(OptimizerState *s) {
    free((void *)s->buffers.buf);
    free(s->floats);
    free(s->scratch);
    memset(s, 0, sizeof *s);
}

void optim_step(OptimizerState *s, const ParamView *p, const OptimSettings *set, float lr, size_t t,
                float grad_scale) {
    s->opt->step(p, s, set, lr, t, grad_scale);
}

/* Calls f with the layout of a model of cfg; 0 if it cannot be laid out. */
static size_t with_layout(const Optimizer *opt, const ModelConfig *cfg, size_t (*f)(const Optimizer *, const ParamView *)) {
    Model m;
    Error err;
    if (model_layout(&m, cfg, &err)) return 0;
    ParamView p = params_view(&m);
    size_t n = f(opt, &p);
    model_free(&m);
    return n;
}

static size_t state_floats(const Optimizer *opt, const ParamView *p) { return lay_out_state(opt, p, NULL, NULL); }
static size_t scratch_floats(const Optimizer *opt, const ParamView *p) { return opt->scratch_floats(p); }

size_t optimizer_state_bytes(const Optimizer *opt, const ModelConfig *cfg) {
    return with_layout(opt, cfg, state_floats) * sizeof(float);
}

size_t optimizer_scratch_bytes(const Optimizer *opt, const ModelConfig *cfg) {
    return with_layout(opt, cfg, scratch_floats) * sizeof(float);
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
