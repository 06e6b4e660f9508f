/* Gated DeltaNet (src/mixers/deltanet.c) through the Mixer interface:
 * finite-difference gradients of every tensor and of the input over one
 * chunk and over several; causality (bitwise); step against forward;
 * step_batch against step (bitwise, also with int8 weights in a model);
 * fill_state then step against forward; equal bits at 1 and 2 threads;
 * and gla's parameter count plus beta's. */
#include <omp.h>

#include "testutil.h"

#include "lm/config.h"
#include "lm/model.h"
#include "mixers/deltanet.h"
#include "mixers/gla.h"

static const Mixer *const mx = &deltanet_mixer;

static MixerSpec spec_of(size_t C, size_t H, size_t block) {
    ModelConfig cfg;
    config_defaults(&cfg);
    cfg.n_embd = C, cfg.n_head = H, cfg.block_size = block, cfg.vocab_size = 5;
    return model_mixer_spec(&cfg, 0);
}

/* The relative gap of a (n) to b, relative to 1 + |b|, folded into *worst. */
static void fold_gap(double *worst, const float *a, const float *b, size_t n) {
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]) / (1.0 + fabs(b[i]));
        *worst = d > *worst ? d : *worst;
    }
}

/* ---- gradients ------------------------------------------------------------- */

typedef struct {
    MixerSpec spec;
    MixerRuntime rt;
    size_t B, T;
    float *params, *acts, *in, *out, *w;
} Ctx;

static double objective(void *p) {
    Ctx *c = p;
    mx->forward(&c->spec, &c->rt, c->params, c->acts, c->out, c->in, c->B, c->T);
    return dot_objective(c->out, c->w, c->B * c->T * c->spec.n_embd);
}

/* sum(out * w) against finite differences: the input, then each tensor alone. */
static void check_grads(size_t C, size_t H, size_t B, size_t T) {
    Ctx c = {spec_of(C, H, T), {NULL, NULL, NULL}, B, T, NULL, NULL, NULL, NULL, NULL};
    size_t np = mixer_param_count(mx, &c.spec), N = B * T;
    c.params = rand_tensor(np, 0.3f, 8);
    c.acts = zeros(mx->act_size(&c.spec, B, T));
    c.in = rand_tensor(N * C, 1.0f, 9);
    c.out = zeros(N * C);
    c.w = rand_tensor(N * C, 1.0f, 10);
    float *dp = zeros(np), *din = rand_tensor(N * C, 1e3f, 27); /* backward writes din: stale values must go */
    objective(&c);
    mx->backward(&c.spec, &c.rt, c.params, dp, c.acts, c.in, c.w, din, B, T);
    char what[96];
    snprintf(what, sizeof what, "deltanet %zux%zu B %zu T %zu input", C, H, B, T);
    CHECK_GRAD(objective, &c, c.in, din, N * C, 400, 1e-2f, 1e-2, what);
    TensorSpec specs[MIXER_MAX_TENSORS];
    size_t ns = mx->tensors(&c.spec, specs), off = 0;
    for (size_t i = 0; i < ns; i++) {
        size_t n = specs[i].rows * (specs[i].cols ? specs[i].cols : 1);
        snprintf(what, sizeof what, "deltanet %zux%zu B %zu T %zu %s", C, H, B, T, specs[i].name);
        CHECK_GRAD(objective, &c, c.params + off, dp + off, n, 300, 1e-2f, 1e-2, what);
        off += n;
    }
    assert_int_equal(off, np);
    free(c.params), free(c.acts), free(c.in), free(c.out), free(c.w), free(dp), free(din);
}

/* One chunk (7 positions, 2 sequences), then three (16, 16 and 8): backward's
 * recomputation from each kept start and the gradient carried across
 * chunks; heads of 4 and of 8. */
static void test_gradients(void **s) {
    (void)s;
    assert_int_equal(DELTANET_CHUNK, 16); /* the chunk counts above */
    check_grads(12, 3, 2, 7);
    check_grads(12, 3, 1, 40);
    check_grads(16, 2, 2, 19);
}

/* ---- causality, threads ----------------------------------------------------- */

/* Changing x at position k (each k in turn) leaves out before k unchanged,
 * to the bit, and changes out at k. */
static void test_causality(void **s) {
    (void)s;
    size_t C = 12, H = 3, T = 35;
    MixerSpec spec = spec_of(C, H, T);
    MixerRuntime rt = {NULL, NULL, NULL};
    float *params = rand_tensor(mixer_param_count(mx, &spec), 0.3f, 5), *in = rand_tensor(T * C, 1.0f, 6);
    float *acts = zeros(mx->act_size(&spec, 1, T)), *ref = zeros(T * C), *out = zeros(T * C);
    mx->forward(&spec, &rt, params, acts, ref, in, 1, T);
    for (size_t k = 1; k < T; k++) {
        float saved = in[k * C + k % C];
        in[k * C + k % C] += 0.5f;
        mx->forward(&spec, &rt, params, acts, out, in, 1, T);
        in[k * C + k % C] = saved;
        if (memcmp(out, ref, k * C * sizeof(float))) fail_msg("changing x at %zu changed out before it", k);
        if (!memcmp(out + k * C, ref + k * C, C * sizeof(float))) fail_msg("changing x at %zu left out at %zu", k, k);
    }
    free(params), free(in), free(acts), free(ref), free(out);
}

/* Forward and backward give the same bits on 1 and 2 threads. */
static void test_threads(void **s) {
    (void)s;
    size_t C = 16, H = 4, B = 3, T = 21, N = B * T;
    MixerSpec spec = spec_of(C, H, T);
    MixerRuntime rt = {NULL, NULL, NULL};
    size_t np = mixer_param_count(mx, &spec);
    float *params = rand_tensor(np, 0.3f, 5), *in = rand_tensor(N * C, 1.0f, 6), *dout = rand_tensor(N * C, 1.0f, 7);
    float *acts = zeros(mx->act_size(&spec, B, T)), *out[2], *dp[2], *din[2];
    int saved = omp_get_max_threads();
    for (int i = 0; i < 2; i++) {
        omp_set_num_threads(i + 1);
        out[i] = zeros(N * C), dp[i] = zeros(np), din[i] = zeros(N * C);
        mx->forward(&spec, &rt, params, acts, out[i], in, B, T);
        mx->backward(&spec, &rt, params, dp[i], acts, in, dout, din[i], B, T);
    }
    omp_set_num_threads(saved);
    assert_memory_equal(out[0], out[1], N * C * sizeof(float));
    assert_memory_equal(dp[0], dp[1], np * sizeof(float));
    assert_memory_equal(din[0], din[1], N * C * sizeof(float));
    free(params), free(in), free(dout), free(acts);
    for (int i = 0; i < 2; i++) free(out[i]), free(dp[i]), free(din[i]);
}

/* ---- sampling -------------------------------------------------------------- */

/* The step from position 0, and after fill_state of forward's first 1, 16
 * (a chunk's end) and 21 positions, against forward over all T: the step's
 * products take one row and forward's all, summing in other orders. A
 * wrong step or a wrong state is off by O(1). */
static void test_step_and_fill(void **s) {
    (void)s;
    size_t C = 8, H = 2, T = 37;
    MixerSpec spec = spec_of(C, H, 40);
    MixerRuntime rt = {NULL, NULL, NULL};
    float *params = rand_tensor(mixer_param_count(mx, &spec), 0.3f, 5), *in = rand_tensor(T * C, 1.0f, 6);
    float *acts = zeros(mx->act_size(&spec, 1, T)), *ref = zeros(T * C), *pre = zeros(T * C), *out_t = zeros(C);
    float *state = rand_tensor(mx->state_size(&spec), 1.0f, 7); /* stale: step at 0 must start afresh */
    mx->forward(&spec, &rt, params, acts, ref, in, 1, T);
    double worst = 0.0;
    for (size_t t = 0; t < T; t++) {
        mx->step(&spec, &rt, params, state, in + t * C, out_t, t);
        fold_gap(&worst, out_t, ref + t * C, C);
    }
    const size_t prefills[] = {1, 16, 21};
    for (size_t i = 0; i < 3; i++) {
        size_t k = prefills[i];
        float *a = zeros(mx->act_size(&spec, 1, k));
        mx->forward(&spec, &rt, params, a, pre, in, 1, k);
        fold_gap(&worst, pre, ref, k * C);
        mx->fill_state(&spec, a, k, state);
        free(a);
        for (size_t t = k; t < T; t++) {
            mx->step(&spec, &rt, params, state, in + t * C, out_t, t);
            fold_gap(&worst, out_t, ref + t * C, C);
        }
    }
    if (getenv("VERBOSE")) printf("  deltanet step and fill_state against forward: %.2e\n", worst);
    if (worst > 1e-4) fail_msg("deltanet step differs from forward by %g (relative)", worst);
    free(params), free(in), free(acts), free(ref), free(pre), free(out_t), free(state);
}

/* step_batch over 3 sequences (different inputs, states stride apart, the
 * gaps between them poisoned) gives each the bits step gives it alone. */
static void test_step_batch(void **s) {
    (void)s;
    size_t C = 12, H = 3, T = 20, n = 3;
    MixerSpec spec = spec_of(C, H, T);
    MixerRuntime rt = {NULL, NULL, NULL};
    size_t size = mx->state_size(&spec), stride = size + 5;
    float *params = rand_tensor(mixer_param_count(mx, &spec), 0.3f, 5), *in = rand_tensor(T * n * C, 1.0f, 6);
    float *batch = rand_tensor(n * size + 3 * 5, 1.0f, 8) /* n * stride */, *one = rand_tensor(n * size, 1.0f, 9);
    float *out = zeros(n * C), *alone = zeros(C);
    for (size_t t = 0; t < T; t++) {
        mx->step_batch(&spec, &rt, params, batch, stride, in + t * n * C, out, t, n);
        for (size_t i = 0; i < n; i++) {
            mx->step(&spec, &rt, params, one + i * size, in + (t * n + i) * C, alone, t);
            if (memcmp(alone, out + i * C, C * sizeof(float)))
                fail_msg("sequence %zu at position %zu differs from its step alone", i, t);
        }
    }
    free(params), free(in), free(batch), free(one), free(out), free(alone);
}

/* The same in a model (deltanet alone, and after attention), with int8
 * weights: the decode step's products over the rows, from one prefill. */
static void check_model_step_batch(const char *mixers, WeightsFormat f) {
    size_t T = 20, V = 13, N = 3;
    ModelConfig cfg;
    Error err;
    config_defaults(&cfg);
    cfg.vocab_size = V, cfg.block_size = T, cfg.n_layer = 2, cfg.n_head = 2, cfg.n_embd = 16;
    assert_int_equal(config_set_mixers(&cfg, mixers, &err), 0);
    Model m;
    assert_int_equal(model_init(&m, &cfg, 42, &err), 0);
    assert_int_equal(model_alloc_acts(&m, 1, T, &err), 0);
    Rng r;
    rng_seed(&r, 9);
    for (size_t i = 0; i < m.n_params; i++) m.params[i] += 0.2f * rng_normal(&r);
    assert_int_equal(model_set_weights(&m, f, &err), 0);
    ModelState batch, one[3];
    assert_int_equal(model_state_init_batch(&m, &batch, N, &err), 0);
    int32_t prompt[4] = {1, 5, 2, 7}, tok[3];
    float logits[3 * 13], alone[13];
    assert_int_equal(model_prefill(&m, &batch, 0, N, prompt, 4, logits, &err), 0);
    for (size_t i = 0; i < N; i++) {
        assert_int_equal(model_state_init(&m, &one[i], &err), 0);
        assert_int_equal(model_prefill(&m, &one[i], 0, 1, prompt, 4, alone, &err), 0);
    }
    for (size_t t = 4; t < T; t++) {
        for (size_t i = 0; i < N; i++) tok[i] = (int32_t)((t * 5 + i * 3 + 1) % V);
        model_step_batch(&m, &batch, tok, logits);
        for (size_t i = 0; i < N; i++) {
            model_step(&m, &one[i], tok[i], alone);
            if (memcmp(alone, logits + i * V, sizeof alone))
                fail_msg("%s: sequence %zu at position %zu differs from its step alone", mixers, i, t);
        }
    }
    for (size_t i = 0; i < N; i++) model_state_free(&one[i]);
    model_state_free(&batch);
    model_free(&m);
}

static void test_model_step_batch(void **s) {
    (void)s;
    check_model_step_batch("deltanet", WEIGHTS_FP32);
    check_model_step_batch("attention,deltanet", WEIGHTS_INT8);
}

/* gla's tensors plus beta's weight and bias (H x C and H): the two compare
 * at one size. */
static void test_param_count(void **s) {
    (void)s;
    MixerSpec spec = spec_of(24, 3, 8);
    assert_int_equal(mixer_param_count(mx, &spec), mixer_param_count(&gla_mixer, &spec) + 3 * 24 + 3);
    assert_int_equal(mx->state_size(&spec) >= 24 * 8, 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gradients),     cmocka_unit_test(test_causality),
        cmocka_unit_test(test_threads),       cmocka_unit_test(test_step_and_fill),
        cmocka_unit_test(test_step_batch),    cmocka_unit_test(test_model_step_batch),
        cmocka_unit_test(test_param_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
