#include "mixers/grassmann.h"
#include "mixers/grassmann_loops.h"

#include <string.h>

#include "lm/cpu.h"
#include "nn/layernorm.h"
#include "lm/matmul.h"
#include "lm/ops.h"

/* Forward keeps z, qbar, g, the gate a, m and the LayerNorm statistics;
 * backward uses the d* regions, u and coef as scratch. */
typedef struct GrActs {
    float *z, *qbar, *g, *a, *m, *mean, *rstd;
    float *dm, *dg, *dapre, *dqbar, *dz, *u, *coef;
} GrActs;

static size_t coef_size(const MixerSpec *spec, size_t N) { return N * (spec->n_windows * GRASSMANN_COEF_PER_OFFSET + 1); }

GrParams gr_params(const float *p, const MixerSpec *spec) {
    size_t C = spec->n_embd, r = spec->grassmann_rank, P = grassmann_n_pairs(r);
    GrParams g;
    g.red_w = p;
    g.red_b = g.red_w + r * C;
    g.plu_w = g.red_b + r;
    g.plu_b = g.plu_w + C * P;
    g.gate_w = g.plu_b + C;
    g.gate_b = g.gate_w + 2 * C * C;
    g.ln_w = g.gate_b + C;
    g.ln_b = g.ln_w + C;
    return g;
}

/* With base == NULL it only measures (the activation size). */
static size_t gr_layout(float *base, const MixerSpec *spec, size_t N, GrActs *a) {
    size_t C = spec->n_embd, r = spec->grassmann_rank, P = grassmann_n_pairs(r), used = 0;
#define TAKE(field, count) (a->field = base ? base + used : NULL, used += (count))
    TAKE(z, N * r);
    TAKE(qbar, N * P);
    TAKE(g, N * C);
    TAKE(a, N * C);
    TAKE(m, N * C);
    TAKE(mean, N);
    TAKE(rstd, N);
    TAKE(dm, N * C);
    TAKE(dg, N * C);
    TAKE(dapre, N * C);
    TAKE(dqbar, N * P);
    TAKE(dz, N * r);
    TAKE(u, N * r);
    TAKE(coef, coef_size(spec, N));
#undef TAKE
    return used;
}

static GrActs gr_acts(float *acts, const MixerSpec *spec, size_t N) {
    GrActs a;
    gr_layout(acts, spec, N, &a);
    return a;
}

static int grassmann_validate(const MixerSpec *spec, Error *err) {
    if (spec->grassmann_rank < 2) return err_set(err, "grassmann rank must be at least 2 (got %zu)", spec->grassmann_rank);
    if (spec->grassmann_rank > GRASSMANN_MAX_RANK)
        return err_set(err, "grassmann rank %zu is too large (max %d)", spec->grassmann_rank, GRASSMANN_MAX_RANK);
    if (spec->n_windows == 0) return err_set(err, "grassmann window list is empty");
    for (size_t i = 0; i < spec->n_windows; i++)
        if (spec->windows[i] == 0 || spec->windows[i] >= spec->block_size)
            return err_set(err, "grassmann window offset %zu must be between 1 and block_size - 1 (%zu)",
                           spec->windows[i], spec->block_size - 1);
    return 0;
}

static size_t grassmann_tensors(const MixerSpec *spec, TensorSpec *out) {
    size_t C = spec->n_embd, r = spec->grassmann_rank, P = grassmann_n_pairs(r);
    out[0] = (TensorSpec){"grassmann.red.weight", r, C, INIT_NORMAL, 0};
    out[1] = (TensorSpec){"grassmann.red.bias", r, 0, INIT_ZERO, 0};
    out[2] = (TensorSpec){"grassmann.plu.weight", C, P, INIT_NORMAL, 0};
    out[3] = (TensorSpec){"grassmann.plu.bias", C, 0, INIT_ZERO, 0};
    out[4] = (TensorSpec){"grassmann.gate.weight", C, 2 * C, INIT_NORMAL, 0};
    out[5] = (TensorSpec){"grassmann.gate.bias", C, 0, INIT_ZERO, 0};
    /* The layer has no output projection, so zero_init leaves it as it is.
     * Its last map onto the stream is this LayerNorm's gain, but a zero gain
     * also zeroes the gradient of every weight before it, and a gain leaves
     * zero only at AdamW's pace: under the modern recipe the layers stayed
     * shut (docs/compare.md, "the zero start"). */
    out[6] = (TensorSpec){"grassmann.ln.weight", C, 0, INIT_ONE, 0};
    out[7] = (TensorSpec){"grassmann.ln.bias", C, 0, INIT_ZERO, 0};
    return 8;
}

static size_t grassmann_act_size(const MixerSpec *spec, size_t B, size_t T) {
    GrActs unused;
    return gr_layout(NULL, spec, B * T, &unused);
}

/* ---- the mixing (mixers/grassmann_kernel.h, at this run's level) ---- */

/* The set of cpu_isa()'s level (read once by cpu_isa, so this is cheap per call). */
const GrassmannLoops *grassmann_loops(void) {
#if defined(__x86_64__)
    static const GrassmannLoops *const by_level[CPU_ISA_COUNT] = {
        [CPU_ISA_PORTABLE] = &grassmann_loops_portable, [CPU_ISA_AVX2] = &grassmann_loops_avx2,
        [CPU_ISA_AVX512] = &grassmann_loops_avx512};
#elif defined(__aarch64__)
    static const GrassmannLoops *const by_level[CPU_ISA_COUNT] = {[CPU_ISA_PORTABLE] = &grassmann_loops_portable,
                                                                  [CPU_ISA_NEON] = &grassmann_loops_neon};
#else
    static const GrassmannLoops *const by_level[CPU_ISA_COUNT] = {[CPU_ISA_PORTABLE] = &grassmann_loops_portable};
#endif
    const GrassmannLoops *set = by_level[cpu_isa()];
    return set ? set : &grassmann_loops_portable;
}

void grassmann_wedge(float *p, const float *a, const float *b, size_t r) { grassmann_loops()->wedge(p, a, b, r); }

void grassmann_pair_forward(float *qbar, const float *zc, const float *zp, float scale, float eps, size_t r) {
    grassmann_loops()->pair_forward(qbar, zc, zp, scale, eps, r);
}

void grassmann_mix_forward(float *qbar, const float *z, const size_t *windows, size_t n_windows, uint32_t muted,
                           size_t B, size_t T, size_t r, float eps) {
    grassmann_loops()->mix_forward(qbar, z, windows, n_windows, muted, B, T, r, eps);
}

void grassmann_mix_backward(float *dz, float *u, float *coef, const float *dqbar, const float *z,
                            const size_t *windows, size_t n_windows, size_t B, size_t T, size_t r, float eps) {
    grassmann_loops()->mix_backward(dz, u, coef, dqbar, z, windows, n_windows, B, T, r, eps);
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
    size_t m = spec->windows[0];
    for (size_t w = 1; w < spec->n_windows; w++) m = spec->windows[w] < m ? spec->windows[w] : m;
    return m;
}

/* The gate's weight is [W_x | W_g], (C, 2C): its two column blocks, row
 * stride 2C, multiply x and g without building [x ; g]. */
static const float *gate_w_x(GrParams p) { return p.gate_w; }
static const float *gate_w_g(GrParams p, size_t C) { return p.gate_w + C; }

/* From qbar to the output, for N rows whose positions are t0, t0+1, ... mod T:
 * shared by the batched forward and the one-position sampling step. */
static void gr_tail_forward(const MixerSpec *spec, const MixerRuntime *rt, GrParams p, GrActs a, float *out, const float *x,
                            size_t N, size_t T, size_t t0) {
    size_t C = spec->n_embd, P = grassmann_n_pairs(spec->grassmann_rank), dmin = min_window(spec);
    matmul_forward(rt->bf16, a.g, a.qbar, p.plu_w, p.plu_b, N, P, C);
#pragma omp parallel for schedule(static)
    for (size_t n = 0; n < N; n++)
        if ((t0 + n) % T < dmin) memset(a.g + n * C, 0, C * sizeof(float)); /* no offset fits: g = 0 */
    matmul_forward_strided(rt->bf16, a.a, x, gate_w_x(p), 2 * C, p.gate_b, N, C, C);
    matmul_add_strided(rt->bf16, a.a, a.g, gate_w_g(p, C), 2 * C, N, C, C);
    grassmann_gate_forward(a.m, a.a, x, a.g, N * C);
    layernorm_forward(out, a.mean, a.rstd, a.m, p.ln_w, p.ln_b, N, C);
}

static void grassmann_forward(const MixerSpec *spec, const MixerRuntime *rt, const float *params, float *acts,
                              float *out, const float *in, size_t B, size_t T) {
    size_t N = B * T, C = spec->n_embd, r = spec->grassmann_rank;
    GrParams p = gr_params(params, spec);
    GrActs a = gr_acts(acts, spec, N);
    matmul_forward(rt->bf16, a.z, in, p.red_w, p.red_b, N, C, r);
    grassmann_mix_forward(a.qbar, a.z, spec->windows, spec->n_windows, spec->muted_windows, B, T, r, GRASSMANN_EPS);
    gr_tail_forward(spec, rt, p, a, out, in, N, T, 0);
}

static void grassmann_backward(const MixerSpec *spec, const MixerRuntime *rt, const float *params, float *dparams,
                               float *acts, const float *in, const float *dout, float *din,
                               size_t B, size_t T) {
    size_t N = B * T, C = spec->n_embd, r = spec->grassmann_rank, P = grassmann_n_pairs(r), dmin = min_window(spec);
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
    grassmann_mix_backward(a.dz, a.u, a.coef, a.dqbar, a.z, spec->windows, spec->n_windows, B, T, r, GRASSMANN_EPS);
    matmul_backward(rt->bf16, din, 1.0f, (float *)g.red_w, (float *)g.red_b, a.dz, in, p.red_w, N, C, r);
}

/* Sampling state: a ring of the last max(D) + 1 reduced vectors, then one
 * position's worth of the forward activations. Constant in the text length. */
static size_t ring_len(const MixerSpec *spec) {
    size_t m = 0;
    for (size_t w = 0; w < spec->n_windows; w++) m = spec->windows[w] > m ? spec->windows[w] : m;
    return m + 1;
}

static size_t grassmann_state_size(const MixerSpec *spec) {
    return ring_len(spec) * spec->grassmann_rank + grassmann_act_size(spec, 1, 1);
}

static void grassmann_step(const MixerSpec *spec, const MixerRuntime *rt, const float *params, float *state,
                           const float *in_t, float *out_t, size_t t) {
    size_t C = spec->n_embd, r = spec->grassmann_rank, R = ring_len(spec);
    GrParams p = gr_params(params, spec);
    float *ring = state;
    GrActs a = gr_acts(state + R * r, spec, 1);
    float *zt = ring + (t % R) * r;
    matmul_forward(rt->bf16, zt, in_t, p.red_w, p.red_b, 1, C, r);
    const float *past[MIXER_MAX_WINDOWS];
    for (size_t k = 0; k < spec->n_windows; k++)
        past[k] = spec->windows[k] <= t ? ring + ((t - spec->windows[k]) % R) * r : NULL;
    grassmann_loops()->mix_row(a.qbar, zt, past, spec->windows, spec->n_windows, spec->muted_windows, t,
                               GRASSMANN_EPS, r);
    /* One row at position t: "T" is taken past any t so that t0 = t is used as is. */
    gr_tail_forward(spec, rt, p, a, out_t, in_t, 1, (size_t)-1, t);
}

/* Forward: one wedge of P coordinates at 2 FLOPs each and, per offset, three
 * dot products and an axpy over r; backward twice the forward. */
static double grassmann_flops(const MixerSpec *spec, size_t T) {
    (void)T;
    double r = (double)spec->grassmann_rank;
    return 3.0 * (2.0 * (double)grassmann_n_pairs(spec->grassmann_rank) + 8.0 * r * (double)spec->n_windows);
}

const Mixer grassmann_mixer = {
    .name = "grassmann",
    .validate = grassmann_validate,
    .tensors = grassmann_tensors,
    .act_size = grassmann_act_size,
    .forward = grassmann_forward,
    .backward = grassmann_backward,
    .state_size = grassmann_state_size,
    .step = grassmann_step,
    .flops = grassmann_flops,
    .inspect = grassmann_inspect,
};
