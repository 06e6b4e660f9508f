/* What is special to Gated DeltaNet (src/mixers/deltanet.c), beyond the
 * contract every mixer keeps (tests/unit/mixers/test_mixers.c: gradients, causality,
 * step, step_batch, fill_state, threads, bounds): the delta rule itself,
 * one head's step at a time (deltanet_state_step), and the layer's size.
 *   erase      with alpha = beta = 1, writing (k, v2) over (k, v1) leaves
 *              S = k^ v2^T: what the state held at k is replaced, not
 *              added to (gla's additive state would hold k (v1 + v2)^T),
 *              and the same pair written 50 times leaves it unchanged;
 *   bounded    |S_t|_F <= alpha_t |S_{t-1}|_F + beta_t |v_t| at every step
 *              over random unit keys: I - beta k^ k^^T never stretches S;
 *   key scale  scaling the layer's key projection by 8 or 1/2 leaves its
 *              output where it was (to RMSNorm's eps): the state sees each
 *              key's direction alone;
 *   size       gla's parameters plus beta's H (C + 1), and gla's state. */
#include "testutil.h"

#include "lm/config.h"
#include "lm/model.h"
#include "mixers/deltanet.h"
#include "mixers/gla.h"
#include "mixer_contract.h" /* rel_gap */

enum { HS = 8 };

/* A key as deltanet_state_step takes it: RMS-normalised (|k|^2 = hs). */
static void unit_rms(float *k, size_t hs) {
    double s = 0.0;
    for (size_t i = 0; i < hs; i++) s += (double)k[i] * k[i];
    float r = (float)sqrt((double)hs / s);
    for (size_t i = 0; i < hs; i++) k[i] *= r;
}

/* The larger, NaN winning. Not fmax: GCC 12 for ARM64 fails (an internal
 * compiler error) vectorising an fmax reduction at -O3. */
static double worse(double worst, double d) { return d > worst || d != d ? d : worst; }

static double frobenius(const float *S, size_t n) {
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += (double)S[i] * S[i];
    return sqrt(s);
}

/* One step: v is overwritten by the step, so it takes a copy. */
static void write_pair(float *S, const float *q, const float *k, const float *v, float alpha, float beta, float *o) {
    float vv[HS];
    memcpy(vv, v, sizeof vv);
    deltanet_state_step(S, q, k, vv, alpha, beta, o, HS);
}

static void test_erase(void **s) {
    (void)s;
    float *k = rand_tensor(HS, 1.0f, 1), *v1 = rand_tensor(HS, 1.0f, 2), *v2 = rand_tensor(HS, 1.0f, 3);
    float S[HS * HS] = {0}, o[HS];
    unit_rms(k, HS);
    const float c = 1.0f / sqrtf((float)HS); /* k^ = k c */
    write_pair(S, k, k, v1, 1.0f, 1.0f, o);
    write_pair(S, k, k, v2, 1.0f, 1.0f, o);
    double worst = 0.0;
    for (size_t i = 0; i < HS; i++)
        for (size_t j = 0; j < HS; j++) worst = worse(worst, fabs(S[i * HS + j] - k[i] * c * v2[j]));
    /* The readout at q = k: S^T k = v2 |k| |k^| = sqrt(hs) v2. */
    for (size_t j = 0; j < HS; j++) worst = worse(worst, fabs(o[j] * c - v2[j]));
    if (worst > 1e-5) fail_msg("(k, v2) over (k, v1) left S %.3e from k^ v2^T: v1 not erased", worst);
    for (int t = 0; t < 50; t++) write_pair(S, k, k, v2, 1.0f, 1.0f, o);
    double norm = frobenius(S, HS * HS), want = frobenius(v2, HS);
    if (fabs(norm - want) > 1e-4 * want) fail_msg("the same pair 51 times: |S| %.6f, |v| %.6f (it grew)", norm, want);
    free(k), free(v1), free(v2);
}

static void test_bounded(void **s) {
    (void)s;
    float S[HS * HS] = {0}, o[HS];
    Rng r;
    rng_seed(&r, 7);
    for (int t = 0; t < 300; t++) {
        float k[HS], q[HS], v[HS];
        for (size_t i = 0; i < HS; i++) k[i] = rng_normal(&r), q[i] = rng_normal(&r), v[i] = 3.0f * rng_normal(&r);
        unit_rms(k, HS);
        unit_rms(q, HS);
        float alpha = 0.9f + 0.1f * rng_uniform(&r), beta = rng_uniform(&r); /* slow decay: the norm builds */
        double before = frobenius(S, HS * HS), bound = alpha * before + beta * frobenius(v, HS);
        write_pair(S, q, k, v, alpha, beta, o);
        double after = frobenius(S, HS * HS);
        if (after > bound * (1.0 + 1e-5) + 1e-6)
            fail_msg("step %d: |S| %.6f after %.6f, above alpha |S| + beta |v| = %.6f", t, after, before, bound);
    }
}

static MixerSpec spec_of(size_t C, size_t H, size_t block) {
    ModelConfig cfg;
    config_defaults(&cfg);
    cfg.n_embd = C, cfg.n_head = H, cfg.block_size = block, cfg.vocab_size = 5;
    return model_mixer_spec(&cfg, 0);
}

static void test_key_scale(void **s) {
    (void)s;
    const Mixer *mx = &deltanet_mixer;
    size_t C = 16, H = 2, T = 37;
    MixerSpec spec = spec_of(C, H, 40);
    MixerRuntime rt = {NULL, NULL, NULL};
    size_t np = mixer_param_count(mx, &spec);
    float *params = rand_tensor(np, 0.3f, 5), *in = rand_tensor(T * C, 1.0f, 6);
    float *acts = zeros(mx->act_size(&spec, 1, T)), *ref = zeros(T * C), *out = zeros(T * C);
    mx->forward(&spec, &rt, params, acts, ref, in, 1, T);
    DeltaParams p = deltanet_params(params, &spec);
    const float scales[] = {8.0f, 1.0f / 16.0f}; /* by 8, then from 8 to 1/2 */
    for (int i = 0; i < 2; i++) {
        float *kw = (float *)p.qkv_w + C * C, *kb = (float *)p.qkv_b + C; /* k's C rows */
        for (size_t j = 0; j < C * C; j++) kw[j] *= scales[i];
        for (size_t j = 0; j < C; j++) kb[j] *= scales[i];
        mx->forward(&spec, &rt, params, acts, out, in, 1, T);
        double worst = rel_gap(out, ref, T * C);
        if (getenv("VERBOSE")) printf("  keys scaled (%d): out moved by %.3e\n", i, worst);
        if (worst > 1e-4) fail_msg("keys scaled (%d): out moved by %.3e", i, worst);
    }
    free(params), free(in), free(acts), free(ref), free(out);
}

static void test_size(void **s) {
    (void)s;
    MixerSpec spec = spec_of(24, 3, 8);
    assert_int_equal(mixer_param_count(&deltanet_mixer, &spec), mixer_param_count(&gla_mixer, &spec) + 3 * (24 + 1));
    assert_int_equal(deltanet_mixer.state_size(&spec), gla_mixer.state_size(&spec));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_erase),
        cmocka_unit_test(test_bounded),
        cmocka_unit_test(test_key_scale),
        cmocka_unit_test(test_size),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
