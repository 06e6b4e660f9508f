/* The tiny model the whole-model gradient checks share: vocabulary 11,
 * block 8, 2 layers x 8 wide, 2 heads, Grassmann rank 4 over offsets 1-3,
 * activations for 2 x 8, and weights of size 0.3 instead of the 0.02 init, so
 * that every path carries signal. */
#ifndef LM_TEST_MODEL_UTIL_H
#define LM_TEST_MODEL_UTIL_H

#include <omp.h>

#include "testutil.h"

#include "lm/config.h"
#include "lm/model.h"
#include "lm/optim.h"
#include "lm/threads.h"
#include "mixers/attention.h"

/* windows: NULL for 1,2,3 in every layer, or a --grassmann-windows text;
 * with norm NORM_POST the LayerNorm gains and biases are drawn too (1 and
 * 0 would hide a LayerNorm applied in the wrong place). */
/* The tiny model's config (see tiny_test_model_ex). */
static inline ModelConfig tiny_test_config(const char *mixers, PosKind pos, float dropout, NormKind norm,
                                           const char *windows) {
    ModelConfig cfg;
    config_defaults(&cfg);
    cfg.vocab_size = 11, cfg.block_size = 8, cfg.n_layer = 2, cfg.n_head = 2, cfg.n_embd = 8;
    cfg.pos = pos, cfg.dropout = dropout, cfg.norm = norm;
    Error err;
    assert_int_equal(config_set_option(&cfg, "grassmann-rank", "4", &err), 0);
    assert_int_equal(config_set_option(&cfg, "grassmann-windows", windows ? windows : "1,2,3", &err), 0);
    assert_int_equal(config_set_mixers(&cfg, mixers, &err), 0);
    return cfg;
}

/* The tiny model of cfg, its weights drawn of size 0.3; with all_params
 * the norms' gains and biases (and whatever zero_init zeroed) too, around 1
 * and 0. */
static inline void tiny_test_model_of(Model *m, const ModelConfig *cfg, int all_params) {
    Error err;
    assert_int_equal(model_init(m, cfg, 5, &err), 0);
    assert_int_equal(model_alloc_grads(m, &err), 0);
    assert_int_equal(model_alloc_acts(m, 2, 8, &err), 0);
    Rng r;
    rng_seed(&r, 77);
    for (size_t i = 0; i < m->weights.n_tensors; i++) {
        const ParamTensor *t = &m->weights.tensors[i];
        int norm_param = t->init == INIT_ONE || t->init == INIT_ZERO;
        if (norm_param && !all_params) continue;
        int one = t->init == INIT_ONE || strstr(t->name, "ln.weight") || strstr(t->name, "ln1.weight") ||
                  strstr(t->name, "ln2.weight") || strstr(t->name, "ln_f.weight");
        for (size_t j = 0; j < t->rows * (t->cols ? t->cols : 1); j++)
            m->weights.params[t->offset + j] = (one ? 1.0f : 0.0f) + 0.3f * rng_normal(&r);
    }
}

static inline void tiny_test_model_ex(Model *m, const char *mixers, PosKind pos, float dropout, NormKind norm,
                                      const char *windows) {
    ModelConfig cfg = tiny_test_config(mixers, pos, dropout, norm, windows);
    tiny_test_model_of(m, &cfg, norm == NORM_POST);
}

static inline void tiny_test_model(Model *m, const char *mixers, PosKind pos, float dropout) {
    tiny_test_model_ex(m, mixers, pos, dropout, NORM_PRE, NULL);
}

/* Backward from f(ctx) (a forward with targets), then every tensor's gradient
 * against finite differences of f; label names the model in failures. */
static inline void check_model_grads(Model *m, Objective f, void *ctx, const char *label) {
    model_zero_grads(m);
    f(ctx);
    model_backward(m, 1.0f, NULL);
    for (size_t i = 0; i < m->weights.n_tensors; i++) {
        const ParamTensor *t = &m->weights.tensors[i];
        char what[160];
        snprintf(what, sizeof what, "%s %s", label, t->name);
        CHECK_GRAD(f, ctx, m->weights.params + t->offset, m->weights.grads + t->offset, t->rows * (t->cols ? t->cols : 1), 24, 1e-2f,
                   2e-2, what);
    }
}

/* ---- optimizer state and AdamW's closed form ---------------------------------- */

/* opt's state for m, every buffer zero (a new run's). */
static inline void test_optim_state(OptimizerState *s, const Optimizer *opt, const Model *m) {
    Error err;
    ParamView p = params_view(m);
    assert_int_equal(optim_state_init(s, opt, &p, &err), 0);
}

/* One step of s's optimizer over m's parameters with AdamW's settings a. */
static inline void test_optim_step(OptimizerState *s, Model *m, const AdamWConfig *a, float lr, size_t t,
                                   float grad_scale) {
    OptimSettings set = {.adam = *a, .lr_peak = lr};
    ParamView p = params_view(m);
    optim_step(s, &p, &set, lr, t, grad_scale);
}

/* One AdamW step at the 1-based step t from weights p0 and moments m0, v0,
 * with the gradient m holds (m->weights.grads, times grad_scale: the clipping
 * factor) at rate lr, decoupled decay on the matrices alone, in double:
 * every weight of m and every first moment in m1 (laid out as the weights,
 * as AdamW's state keeps it) must match it (label names the run in
 * failures). */
static inline void check_adamw_closed_form(const Model *m, const float *m1, const float *p0, const float *m0,
                                           const float *v0, const AdamWConfig *a, double lr, double grad_scale,
                                           size_t t, const char *label) {
    double c1 = 1.0 - pow(a->beta1, (double)t), c2 = 1.0 - pow(a->beta2, (double)t);
    for (size_t k = 0; k < m->weights.n_tensors; k++) {
        const ParamTensor *pt = &m->weights.tensors[k];
        double decay = pt->cols ? a->weight_decay : 0.0;
        for (size_t j = 0; j < pt->rows * (pt->cols ? pt->cols : 1); j++) {
            size_t i = pt->offset + j;
            double g = (double)m->weights.grads[i] * grad_scale;
            double mm = a->beta1 * (double)m0[i] + (1.0 - a->beta1) * g;
            double vv = a->beta2 * (double)v0[i] + (1.0 - a->beta2) * g * g;
            double p = (double)p0[i] * (1.0 - lr * decay) - lr * (mm / c1) / (sqrt(vv / c2) + a->eps);
            double m_tol = 1e-6 * (a->beta1 * fabs(m0[i]) + (1.0 - a->beta1) * fabs(g)) + 1e-12;
            if (!(fabs(m->weights.params[i] - p) <= 1e-6 * fabs(p0[i]) + 1e-4 * lr && fabs(m1[i] - mm) <= m_tol))
                fail_msg("%s: %s[%zu] after step %zu: %.9g, AdamW's closed form %.9g (moment %.9g, closed form %.9g)",
                         label, pt->name, j, t, (double)m->weights.params[i], p, (double)m1[i], mm);
        }
    }
}

/* ---- attention's backward cut into tile tasks (attention_backward_by_tiles) ---- */

/* One head of 8 over 600 tokens (tiles of 128 x 4 and 88): fewer heads than threads. */
#define BY_TILES_T 600
static inline ModelConfig by_tiles_config(void) {
    ModelConfig cfg;
    config_defaults(&cfg);
    cfg.n_embd = 8, cfg.n_head = 1, cfg.block_size = 640, cfg.vocab_size = 5;
    return cfg;
}

/* Attention forward and backward of by_tiles_config (batch 1) at parallel
 * widths 1 (a task per head) and 2 (tile tasks, asserted taken), on 2
 * OpenMP threads (the tasks' room counts 2 threads' score tiles), with
 * runtime rt (fp32, or bf16 over these params): the gradients must be equal
 * at the byte. Restores the width and the thread count. */
static inline void check_by_tiles_bitwise(const float *params, MixerRuntime rt) {
    int saved = omp_get_max_threads();
    omp_set_num_threads(2);
    ModelConfig cfg = by_tiles_config();
    MixerSpec spec = model_mixer_spec(&cfg, 0);
    size_t N = BY_TILES_T, C = cfg.n_embd, np = mixer_param_count(&attention_mixer, &spec);
    float *in = rand_tensor(N * C, 1.0f, 22), *dout = rand_tensor(N * C, 1.0f, 23);
    float *acts = zeros(attention_mixer.act_size(&spec, 1, N)), *out = zeros(N * C), *g[2], *din[2];
    for (size_t width = 1; width <= 2; width++) {
        threads_set_width(width);
        assert_int_equal(attention_backward_by_tiles(1, N, 1, C, 0), width == 2);
        g[width - 1] = zeros(np), din[width - 1] = zeros(N * C);
        attention_mixer.forward(&spec, &rt, params, acts, out, in, 1, N);
        attention_mixer.backward(&spec, &rt, params, g[width - 1], acts, in, dout, din[width - 1], 1, N);
    }
    assert_memory_equal(g[0], g[1], np * sizeof(float));
    assert_memory_equal(din[0], din[1], N * C * sizeof(float));
    threads_set_width(0);
    omp_set_num_threads(saved);
    free(in), free(dout), free(acts), free(out);
    for (int i = 0; i < 2; i++) free(g[i]), free(din[i]);
}

#endif
