#include "mixers/grassmann.h"
#include "mixers/grassmann_loops.h"

#include <stdio.h>
#include <string.h>

#include "lm/cpu.h"
#include "lm/options.h"
#include "nn/layernorm.h"
#include "lm/matmul.h"
#include "lm/ops.h"
#include "runtime/arena.h"

/* Forward keeps z, qbar, g, the gate a, m and the LayerNorm statistics;
 * backward uses the d* regions, u and coef as scratch. */
typedef struct GrActs {
    float *z, *qbar, *g, *a, *m, *mean, *rstd;
    float *dm, *dg, *dapre, *dqbar, *dz, *u, *coef;
} GrActs;

/* F, the features of each position: the layer's map of rank r. */
static size_t n_features(const MixerSpec *spec) {
    return grassmann_n_features(grassmann_layer(spec)->pair, grassmann_layer(spec)->rank);
}

static const GrassmannMapLoops *map_loops(const MixerSpec *spec) { return &grassmann_loops()->map[grassmann_layer(spec)->pair]; }

static size_t coef_size(const MixerSpec *spec, size_t N) { return N * (grassmann_layer(spec)->n_windows * GRASSMANN_COEF_PER_OFFSET + 1); }

/* With base == NULL it only measures (the activation size). */
static size_t gr_layout(float *base, const MixerSpec *spec, size_t N, GrActs *a) {
    size_t C = spec->n_embd, r = grassmann_layer(spec)->rank, P = n_features(spec), used = 0;
    TAKE(a->z, N * r);
    TAKE(a->qbar, N * P);
    TAKE(a->g, N * C);
    TAKE(a->a, N * C);
    TAKE(a->m, N * C);
    TAKE(a->mean, N);
    TAKE(a->rstd, N);
    TAKE(a->dm, N * C);
    TAKE(a->dg, N * C);
    TAKE(a->dapre, N * C);
    TAKE(a->dqbar, N * P);
    TAKE(a->dz, N * r);
    TAKE(a->u, N * r);
    TAKE(a->coef, coef_size(spec, N));
    return used;
}

static GrActs gr_acts(float *acts, const MixerSpec *spec, size_t N) {
    GrActs a;
    gr_layout(acts, spec, N, &a);
    return a;
}

static int grassmann_validate(const MixerSpec *spec, Error *err) {
    if (grassmann_layer(spec)->rank < 2) return err_set(err, "grassmann rank must be at least 2 (got %zu)", grassmann_layer(spec)->rank);
    if (grassmann_layer(spec)->rank > GRASSMANN_MAX_RANK)
        return err_set(err, "grassmann rank %zu is too large (max %d)", grassmann_layer(spec)->rank, GRASSMANN_MAX_RANK);
    if (grassmann_layer(spec)->n_windows == 0) return err_set(err, "grassmann window list is empty");
    for (size_t i = 0; i < grassmann_layer(spec)->n_windows; i++)
        if (grassmann_layer(spec)->windows[i] == 0 || grassmann_layer(spec)->windows[i] >= spec->block_size)
            return err_set(err, "grassmann window offset %zu must be between 1 and block_size - 1 (%zu)",
                           grassmann_layer(spec)->windows[i], spec->block_size - 1);
    return 0;
}

/* Its tensors, in storage order: the one declaration of its layout (lm/mixer.h's MIXER_TENSOR). */
static void grassmann_tensors(const MixerSpec *spec, MixerLayout *L) {
    size_t C = spec->n_embd, r = grassmann_layer(spec)->rank, P = n_features(spec);
    MIXER_TENSOR(L, GrParams, red_w, "grassmann.red.weight", r, C, INIT_NORMAL, 0);
    MIXER_TENSOR(L, GrParams, red_b, "grassmann.red.bias", r, 0, INIT_ZERO, 0);
    MIXER_TENSOR(L, GrParams, plu_w, "grassmann.plu.weight", C, P, INIT_NORMAL, 0);
    MIXER_TENSOR(L, GrParams, plu_b, "grassmann.plu.bias", C, 0, INIT_ZERO, 0);
    MIXER_TENSOR(L, GrParams, gate_w, "grassmann.gate.weight", C, 2 * C, INIT_NORMAL, 0);
    MIXER_TENSOR(L, GrParams, gate_b, "grassmann.gate.bias", C, 0, INIT_ZERO, 0);
    /* The layer has no output projection, so zero_init leaves it as it is.
     * Its last map onto the stream is this LayerNorm's gain, but a zero gain
     * also zeroes the gradient of every weight before it, and a gain leaves
     * zero only at AdamW's pace: under the modern recipe the layers stayed
     * shut (docs/compare.md, "the zero start"). */
    MIXER_TENSOR(L, GrParams, ln_w, "grassmann.ln.weight", C, 0, INIT_ONE, 0);
    MIXER_TENSOR(L, GrParams, ln_b, "grassmann.ln.bias", C, 0, INIT_ZERO, 0);
}

GrParams gr_params(const float *params, const MixerSpec *spec) {
    GrParams p;
    mixer_params(grassmann_tensors, spec, params, &p, sizeof p);
    return p;
}

static size_t grassmann_act_size(const MixerSpec *spec, size_t B, size_t T) {
    GrActs unused;
    return gr_layout(NULL, spec, B * T, &unused);
}

/* ---- the mixing (mixers/grassmann_kernel.h, at this run's level) ---- */

const GrassmannLoops *grassmann_loops(void) {
    static const GrassmannLoops *const by_level[CPU_ISA_COUNT] = CPU_ISA_BY_LEVEL(grassmann_loops);
    return by_level[cpu_isa()];
}

void grassmann_wedge(float *p, const float *a, const float *b, size_t r) { grassmann_loops()->wedge(p, a, b, r); }

void grassmann_pair_forward(float *qbar, const float *zc, const float *zp, float scale, float eps, size_t r) {
    grassmann_loops()->pair_forward(qbar, zc, zp, scale, eps, r);
}

void grassmann_mix_forward(GrassmannPair pair, float *qbar, const float *z, const size_t *windows, size_t n_windows,
                           uint32_t muted, size_t B, size_t T, size_t r, float eps) {
    grassmann_loops()->map[pair].mix_forward(qbar, z, windows, n_windows, muted, B, T, r, eps);
}

void grassmann_mix_backward(GrassmannPair pair, float *dz, float *u, float *coef, const float *dqbar, const float *z,
                            const size_t *windows, size_t n_windows, size_t B, size_t T, size_t r, float eps) {
    grassmann_loops()->map[pair].mix_backward(dz, u, coef, dqbar, z, windows, n_windows, B, T, r, eps);
}

void grassmann_gate_forward(float *m, float *a, const float *x, const float *g, size_t n) {
    grassmann_loops()->gate_forward(m, a, x, g, n);
}

void grassmann_gate_backward(float *dx, float *dg, float *dapre, const float *dm, const float *a,
                             const float *x, const float *g, size_t n) {
    grassmann_loops()->gate_backward(dx, dg, dapre, dm, a, x, g, n);
}

/* ---- the layer ---------------------------------------------------------- */

static size_t min_window(const MixerSpec *spec) {
    size_t m = grassmann_layer(spec)->windows[0];
    for (size_t w = 1; w < grassmann_layer(spec)->n_windows; w++) m = grassmann_layer(spec)->windows[w] < m ? grassmann_layer(spec)->windows[w] : m;
    return m;
}

/* The gate's weight is [W_x | W_g], (C, 2C): its two column blocks, row
 * stride 2C, multiply x and g without building [x ; g]. */
static const float *gate_w_x(GrParams p) { return p.gate_w; }
static const float *gate_w_g(GrParams p, size_t C) { return p.gate_w + C; }

/* From qbar to the output, for the N = B T rows of the batched forward. The
 * sampling step (grassmann_step_batch) takes the same path a row at a time. */
static void gr_tail_forward(const MixerSpec *spec, const MixerRuntime *rt, GrParams p, GrActs a, float *out, const float *x,
                            size_t N, size_t T) {
    size_t C = spec->n_embd, P = n_features(spec), dmin = min_window(spec);
    matmul_forward_strided(rt->bf16, a.g, a.qbar, p.plu_w, P, p.plu_b, N, P, C);
#pragma omp parallel for schedule(static)
    for (size_t n = 0; n < N; n++)
        if (n % T < dmin) memset(a.g + n * C, 0, C * sizeof(float)); /* no offset fits: g = 0 */
    matmul_forward_strided(rt->bf16, a.a, x, gate_w_x(p), 2 * C, p.gate_b, N, C, C);
    matmul_add_strided(rt->bf16, a.a, a.g, gate_w_g(p, C), 2 * C, N, C, C);
    grassmann_gate_forward(a.m, a.a, x, a.g, N * C);
    layernorm_forward(out, a.mean, a.rstd, a.m, p.ln_w, p.ln_b, N, C);
}

static void grassmann_forward(const MixerSpec *spec, const MixerRuntime *rt, const float *params, float *acts,
                              float *out, const float *in, size_t B, size_t T) {
    size_t N = B * T, C = spec->n_embd, r = grassmann_layer(spec)->rank;
    GrParams p = gr_params(params, spec);
    GrActs a = gr_acts(acts, spec, N);
    matmul_forward(rt->bf16, a.z, in, p.red_w, p.red_b, N, C, r);
    grassmann_mix_forward(grassmann_layer(spec)->pair, a.qbar, a.z, grassmann_layer(spec)->windows, grassmann_layer(spec)->n_windows, spec->muted, B, T, r, GRASSMANN_EPS);
    gr_tail_forward(spec, rt, p, a, out, in, N, T);
}

static void grassmann_backward(const MixerSpec *spec, const MixerRuntime *rt, const float *params, float *dparams,
                               float *acts, const float *in, const float *dout, float *din,
                               size_t B, size_t T) {
    size_t N = B * T, C = spec->n_embd, r = grassmann_layer(spec)->rank, P = n_features(spec), dmin = min_window(spec);
    GrParams p = gr_params(params, spec);
    GrParams g = gr_params(dparams, spec);
    GrActs a = gr_acts(acts, spec, N);
    memset(a.dm, 0, N * C * sizeof(float));
    layernorm_backward(a.dm, (float *)g.ln_w, (float *)g.ln_b, dout, a.m, p.ln_w, a.mean, a.rstd, N, C);
    grassmann_gate_backward(din, a.dg, a.dapre, a.dm, a.a, in, a.g, N * C);
    /* apre = x W_x^T + g W_g^T + b: both column blocks of the gate weight. */
    matmul_backward_strided(rt->bf16, din, 1.0f, (float *)gate_w_x(g), 2 * C, (float *)g.gate_b, a.dapre, in,
                            gate_w_x(p), N, C, C);
    matmul_backward_strided(rt->bf16, a.dg, 1.0f, (float *)gate_w_g(g, C), 2 * C, NULL, a.dapre, a.g,
                            gate_w_g(p, C), N, C, C);
#pragma omp parallel for schedule(static)
    for (size_t n = 0; n < N; n++)
        if (n % T < dmin) memset(a.dg + n * C, 0, C * sizeof(float)); /* g was held at 0 there */
    matmul_backward(rt->bf16, a.dqbar, 0.0f, (float *)g.plu_w, (float *)g.plu_b, a.dg, a.qbar, p.plu_w, N, P, C);
    grassmann_mix_backward(grassmann_layer(spec)->pair, a.dz, a.u, a.coef, a.dqbar, a.z, grassmann_layer(spec)->windows, grassmann_layer(spec)->n_windows, B, T, r, GRASSMANN_EPS);
    matmul_backward(rt->bf16, din, 1.0f, (float *)g.red_w, (float *)g.red_b, a.dz, in, p.red_w, N, C, r);
}

/* Sampling state: a ring of the last max(D) + 1 reduced vectors, then one
 * position's worth of the forward activations. Constant in the text length. */
static size_t ring_len(const MixerSpec *spec) {
    size_t m = 0;
    for (size_t w = 0; w < grassmann_layer(spec)->n_windows; w++) m = grassmann_layer(spec)->windows[w] > m ? grassmann_layer(spec)->windows[w] : m;
    return m + 1;
}

/* Mixer.memory_size: the reduced vectors z of the last max(offset)
 * positions that a step pairs with its own (the ring keeps one more slot,
 * for the position being stepped). */
static size_t grassmann_memory_size(const MixerSpec *spec) {
    return (ring_len(spec) - 1) * grassmann_layer(spec)->rank;
}

static size_t grassmann_state_size(const MixerSpec *spec) {
    return ring_len(spec) * grassmann_layer(spec)->rank + grassmann_act_size(spec, 1, 1);
}

/* Sampling steps of n sequences at position t (Mixer.step_batch): the
 * forward's path for one row of each, sequence i's state at state + i *
 * stride. Each product takes the n rows at once (the weights read once, each
 * row's result its own: blas/gemv.h); the mixing, gate and LayerNorm go
 * sequence by sequence. */
static void grassmann_step_batch(const MixerSpec *spec, const MixerRuntime *rt, const float *params, float *state,
                                 size_t stride, const float *in, float *out, size_t t, size_t n) {
    const GrassmannLayer *gl = grassmann_layer(spec);
    size_t C = spec->n_embd, r = gl->rank, R = ring_len(spec), P = n_features(spec);
    GrParams p = gr_params(params, spec);
    GrActs a = gr_acts(state + R * r, spec, 1); /* sequence 0's; sequence i's are i * stride on */
    const float *past[GRASSMANN_MAX_WINDOWS];
    const DecodeWeights *dec = rt->decode;
    matmul_step_rows(rt->bf16, dec, state + (t % R) * r, stride, in, C, p.red_w, C, p.red_b, n, C, r, 0);
    for (size_t i = 0; i < n; i++) {
        float *ring = state + i * stride;
        for (size_t k = 0; k < gl->n_windows; k++)
            past[k] = gl->windows[k] <= t ? ring + ((t - gl->windows[k]) % R) * r : NULL;
        map_loops(spec)->mix_row(a.qbar + i * stride, ring + (t % R) * r, past, gl->windows, gl->n_windows,
                                 spec->muted, t, GRASSMANN_EPS, r);
    }
    matmul_step_rows(rt->bf16, dec, a.g, stride, a.qbar, stride, p.plu_w, P, p.plu_b, n, P, C, 0);
    if (t < min_window(spec)) /* no offset fits: g = 0 */
        for (size_t i = 0; i < n; i++) memset(a.g + i * stride, 0, C * sizeof(float));
    matmul_step_rows(rt->bf16, dec, a.a, stride, in, C, gate_w_x(p), 2 * C, p.gate_b, n, C, C, 0);
    matmul_step_rows(rt->bf16, dec, a.a, stride, a.g, stride, gate_w_g(p, C), 2 * C, NULL, n, C, C, 1);
    for (size_t i = 0; i < n; i++) {
        size_t at = i * stride;
        grassmann_gate_forward(a.m + at, a.a + at, in + i * C, a.g + at, C);
        layernorm_forward(out + i * C, a.mean + at, a.rstd + at, a.m + at, p.ln_w, p.ln_b, 1, C);
    }
}

static void grassmann_step(const MixerSpec *spec, const MixerRuntime *rt, const float *params, float *state,
                           const float *in_t, float *out_t, size_t t) {
    grassmann_step_batch(spec, rt, params, state, grassmann_state_size(spec), in_t, out_t, t, 1);
}

/* The ring from forward's z: the last ring_len positions of the T, each in its slot. */
static void grassmann_fill_state(const MixerSpec *spec, const float *acts, size_t T, float *state) {
    size_t r = grassmann_layer(spec)->rank, R = ring_len(spec), from = T > R ? T - R : 0;
    GrActs a = gr_acts((float *)acts, spec, T);
    for (size_t t = from; t < T; t++) memcpy(state + (t % R) * r, a.z + t * r, r * sizeof(float));
}

/* Forward: one wedge of P coordinates at 2 FLOPs each and, per offset, three
 * dot products and an axpy over r; backward twice the forward. The outer
 * map: r^2 products and two dot products and an axpy per offset; the sum:
 * an axpy per offset. */
static double grassmann_flops(const MixerSpec *spec, size_t T) {
    (void)T;
    double r = (double)grassmann_layer(spec)->rank, nw = (double)grassmann_layer(spec)->n_windows;
    switch (grassmann_layer(spec)->pair) {
    case GRASSMANN_PAIR_OUTER: return 3.0 * (r * r + 6.0 * r * nw);
    case GRASSMANN_PAIR_SUM: return 3.0 * (2.0 * r * nw + 2.0 * r);
    default: return 3.0 * (2.0 * (double)grassmann_n_pairs(grassmann_layer(spec)->rank) + 8.0 * r * nw);
    }
}

/* ---- its settings ------------------------------------------------------- */

_Static_assert(sizeof(GrassmannSettings) <= MIXER_SETTINGS_BYTES, "the settings fit the config's block");
_Static_assert(sizeof(GrassmannLayer) <= MIXER_LAYER_BYTES, "a layer's settings fit its spec");
_Static_assert(GRASSMANN_MAX_WINDOWS <= MIXER_MAX_PARTS, "an offset is a part: a bit of MixerSpec.muted");

/* Mixer.parts: "offset<d>" for each window offset d, bit k windows[k]: its
 * term is left out of the mean (its share of 1/count stays). */
static size_t grassmann_parts(const MixerSpec *spec, char (*names)[MIXER_PART_NAME]) {
    const GrassmannLayer *gl = grassmann_layer(spec);
    for (size_t k = 0; k < gl->n_windows; k++) snprintf(names[k], MIXER_PART_NAME, "offset%zu", gl->windows[k]);
    return gl->n_windows;
}

const Mixer grassmann_mixer = {
    .name = "grassmann",
    .about = "causal Grassmann mixing (arXiv 2512.19428): pairs of reduced vectors at fixed offsets, gated",
    .options = grassmann_options,
    .n_options = GRASSMANN_N_OPTIONS,
    .layer_spec = grassmann_layer_spec,
    .describe = grassmann_describe,
    .parts = grassmann_parts,
    .validate = grassmann_validate,
    .layout = grassmann_tensors,
    .act_size = grassmann_act_size,
    .forward = grassmann_forward,
    .backward = grassmann_backward,
    .state_size = grassmann_state_size,
    .memory_size = grassmann_memory_size,
    .step = grassmann_step,
    .step_batch = grassmann_step_batch,
    .fill_state = grassmann_fill_state,
    .flops = grassmann_flops,
    .inspect = grassmann_inspect,
    /* On the contract suite's test layer (tests/unit/mixers/test_mixers.c), at the
     * portable and AVX2 levels alike: decode bf16 1.7e-3 from fp32, int8
     * 6.7e-3 (its weights and activations in int8; the weights alone
     * 6.4e-3); the bounds three times that. bf16 training as
     * tests/unit/train/test_bf16_train.c bounds the layer, P 2^-7 K with K = 4 and
     * P = 3 products forward (reduce, Plücker projection, gate), 6 backward;
     * not measured on this layer (set on a CPU without AVX512_BF16; bf16
     * rounding of the weights, input and dout alone, in fp32 products,
     * moves out by 1.6e-3 and the gradients by 3.8e-3, normwise). */
    .bounds = {.decode_bf16 = 5e-3, .decode_int8 = 2e-2, .train_bf16_forward = 0.09375, .train_bf16_backward = 0.1875},
};
