/* The optimizer registry (the one place that names the implementations),
 * the learning-rate schedule and gradient clipping. */
#include "lm/optim.h"

#include <math.h>
#include <stddef.h>

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

size_t optimizer_scratch_bytes(const Optimizer *opt, const ModelConfig *cfg) {
    Model m;
    Error err;
    if (model_layout(&m, cfg, &err)) return 0;
    size_t n = opt->scratch_floats(&m);
    model_free(&m);
    return n * sizeof(float);
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
