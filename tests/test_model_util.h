/* The tiny model the whole-model gradient checks share: vocabulary 11,
 * block 8, 2 layers x 8 wide, 2 heads, Grassmann rank 4 over offsets 1-3,
 * activations for 2 x 8, and weights of size 0.3 instead of the 0.02 init, so
 * that every path carries signal. */
#ifndef LM_TEST_MODEL_UTIL_H
#define LM_TEST_MODEL_UTIL_H

#include "testutil.h"

#include "lm/config.h"
#include "lm/model.h"

/* windows: NULL for 1,2,3 in every layer, or a --grassmann-windows text;
 * with norm NORM_POST the LayerNorm gains and biases are drawn too (1 and
 * 0 would hide a LayerNorm applied in the wrong place). */
/* The tiny model's config (see tiny_test_model_ex). */
static inline ModelConfig tiny_test_config(const char *mixers, PosKind pos, float dropout, NormKind norm,
                                           const char *windows) {
    ModelConfig cfg;
    config_defaults(&cfg);
    cfg.vocab_size = 11, cfg.block_size = 8, cfg.n_layer = 2, cfg.n_head = 2, cfg.n_embd = 8;
    cfg.pos = pos, cfg.dropout = dropout, cfg.grassmann_rank = 4, cfg.norm = norm;
    Error err;
    assert_int_equal(config_set_windows(&cfg, windows ? windows : "1,2,3", &err), 0);
    assert_int_equal(config_set_mixers(&cfg, mixers, &err), 0);
    return cfg;
}

/* The tiny model of cfg, its weights drawn of size 0.3; with all_params
 * the norms' gains and biases (and whatever zero_init zeroed) too, around 1
 * and 0. */
static inline void tiny_test_model_of(Model *m, const ModelConfig *cfg, int all_params) {
    Error err;
    assert_int_equal(model_init(m, cfg, 5, &err), 0);
    assert_int_equal(model_alloc_training(m, &err), 0);
    assert_int_equal(model_alloc_acts(m, 2, 8, &err), 0);
    Rng r;
    rng_seed(&r, 77);
    for (size_t i = 0; i < m->n_tensors; i++) {
        const ParamTensor *t = &m->tensors[i];
        int norm_param = t->init == INIT_ONE || t->init == INIT_ZERO;
        if (norm_param && !all_params) continue;
        int one = t->init == INIT_ONE || strstr(t->name, "ln.weight") || strstr(t->name, "ln1.weight") ||
                  strstr(t->name, "ln2.weight") || strstr(t->name, "ln_f.weight");
        for (size_t j = 0; j < t->rows * (t->cols ? t->cols : 1); j++)
            m->params[t->offset + j] = (one ? 1.0f : 0.0f) + 0.3f * rng_normal(&r);
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
    for (size_t i = 0; i < m->n_tensors; i++) {
        const ParamTensor *t = &m->tensors[i];
        char what[160];
        snprintf(what, sizeof what, "%s %s", label, t->name);
        CHECK_GRAD(f, ctx, m->params + t->offset, m->grads + t->offset, t->rows * (t->cols ? t->cols : 1), 24, 1e-2f,
                   2e-2, what);
    }
}

#endif
