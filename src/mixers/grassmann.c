#include "mixers/grassmann.h"

#include <math.h>
#include <string.h>

#include "nn/layernorm.h"
#include "lm/matmul.h"
#include "lm/ops.h"

/* Forward keeps z, qbar, g, the gate a, m and the LayerNorm statistics;
 * backward uses the d* regions, u and coef as scratch. */
typedef struct GrActs {
    float *z, *qbar, *g, *a, *m, *mean, *rstd;
    float *dm, *dg, *dapre, *dqbar, *dz, *u, *coef;
} GrActs;

/* Per (position, offset) the backward keeps s, kappa and a.b (see
 * grassmann_mix_backward), and per position |a|^2. */
#define COEF_PER_OFFSET 3

static size_t n_pairs(size_t r) { return r * (r - 1) / 2; }

static size_t coef_size(const MixerSpec *spec, size_t N) { return N * (spec->n_windows * COEF_PER_OFFSET + 1); }

GrParams gr_params(const float *p, const MixerSpec *spec) {
    size_t C = spec->n_embd, r = spec->grassmann_rank, P = n_pairs(r);
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
    size_t C = spec->n_embd, r = spec->grassmann_rank, P = n_pairs(r), used = 0;
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
    size_t C = spec->n_embd, r = spec->grassmann_rank, P = n_pairs(r);
    out[0] = (TensorSpec){"grassmann.red.weight", r, C, INIT_NORMAL, 0};
    out[1] = (TensorSpec){"grassmann.red.bias", r, 0, INIT_ZERO, 0};
    out[2] = (TensorSpec){"grassmann.plu.weight", C, P, INIT_NORMAL, 0};
    out[3] = (TensorSpec){"grassmann.plu.bias", C, 0, INIT_ZERO, 0};
    out[4] = (TensorSpec){"grassmann.gate.weight", C, 2 * C, INIT_NORMAL, 0};
    out[5] = (TensorSpec){"grassmann.gate.bias", C, 0, INIT_ZERO, 0};
    /* The layer has no output projection: its last map onto the stream is
     * this LayerNorm's gain, which zero_init zeroes (the branch starts at 0). */
    out[6] = (TensorSpec){"grassmann.ln.weight", C, 0, INIT_ONE, 1};
    out[7] = (TensorSpec){"grassmann.ln.bias", C, 0, INIT_ZERO, 0};
    return 8;
}

static size_t grassmann_act_size(const MixerSpec *spec, size_t B, size_t T) {
    GrActs unused;
    return gr_layout(NULL, spec, B * T, &unused);
}

/* ---- the mixing: normalised Plücker coordinates, averaged over offsets ----
 *
 * For a = z_t and the valid past vectors b_d = z_{t-d} (cnt of them):
 *   qbar_t = (1/cnt) sum_d (a ^ b_d) / max(|a ^ b_d|, eps)
 * where (a ^ b)_ij = a_i b_j - a_j b_i, i < j, are the Plücker coordinates.
 * Two identities make this cheap:
 * - a ^ b is linear in b, so the sum over offsets is a single wedge:
 *     qbar_t = a ^ c,  c = sum_d s_d b_d,  s_d = 1 / (cnt max(|a ^ b_d|, eps));
 * - |a ^ b|^2 = |a|^2 |b|^2 - (a.b)^2 (Lagrange's identity): O(r), not O(r^2).
 * Dot products are taken in double, so the difference keeps float accuracy
 * down to angles far smaller than a float computation of the coordinates
 * themselves would resolve. Per position: one wedge (r^2 work) instead of
 * one per offset. */

static double dot_d(const float *x, const float *y, size_t r) {
    double s = 0.0;
#pragma omp simd reduction(+ : s)
    for (size_t i = 0; i < r; i++) s += (double)x[i] * y[i];
    return s;
}

/* |a ^ b| from |a|^2, |b|^2 and a.b (never negative: round-off can make the
 * difference a hair below zero for parallel vectors). */
static double wedge_norm(double aa, double bb, double ab) {
    double n2 = aa * bb - ab * ab;
    return n2 > 0.0 ? sqrt(n2) : 0.0;
}

/* The offset of coordinate (i, i+1) in the packed i < j order; the
 * coordinates (i, j), j > i, follow it contiguously. */
static size_t pair_row(size_t i, size_t r) { return i * (2 * r - i - 1) / 2; }

void grassmann_wedge(float *p, const float *a, const float *b, size_t r) {
    for (size_t i = 0; i < r; i++) {
        const float ai = a[i], bi = b[i];
        float *pi = p + pair_row(i, r) - (i + 1);
#pragma omp simd
        for (size_t j = i + 1; j < r; j++) pi[j] = ai * b[j] - a[j] * bi;
    }
}

void grassmann_pair_forward(float *qbar, const float *zc, const float *zp, float scale, float eps, size_t r) {
    double nrm = wedge_norm(dot_d(zc, zc, r), dot_d(zp, zp, r), dot_d(zc, zp, r));
    float s = (float)(scale / (nrm > eps ? nrm : eps));
    for (size_t i = 0; i < r; i++) {
        const float ci = zc[i], pi = zp[i];
        float *qi = qbar + pair_row(i, r) - (i + 1);
#pragma omp simd
        for (size_t j = i + 1; j < r; j++) qi[j] += s * (ci * zp[j] - zc[j] * pi);
    }
}

static size_t n_valid(const size_t *windows, size_t n_windows, size_t t) {
    size_t n = 0;
    for (size_t w = 0; w < n_windows; w++) n += windows[w] <= t;
    return n;
}

/* c = sum over valid offsets of s_d b_d for the row at position t, whose past
 * vectors are past(w) (z rows); returns cnt. s_out[w] (may be NULL) gets s_d.
 * Muted offsets (bit k of muted) add nothing but still count in cnt. */
static size_t combine_past(float *c, float *s_out, const float *a, const float *const *past, const size_t *windows,
                           size_t n_windows, uint32_t muted, size_t t, float eps, size_t r) {
    size_t cnt = n_valid(windows, n_windows, t);
    memset(c, 0, r * sizeof(float));
    if (cnt == 0) return 0;
    double aa = dot_d(a, a, r), w = 1.0 / (double)cnt;
    for (size_t k = 0; k < n_windows; k++) {
        if (windows[k] > t || (muted >> k & 1u)) continue;
        const float *b = past[k];
        double nrm = wedge_norm(aa, dot_d(b, b, r), dot_d(a, b, r));
        float s = (float)(w / (nrm > eps ? nrm : eps));
        if (s_out) s_out[k] = s;
#pragma omp simd
        for (size_t i = 0; i < r; i++) c[i] += s * b[i];
    }
    return cnt;
}

/* The past vectors of row n (position t) of z: z_{n-d} where d <= t. */
static void past_rows(const float **past, const float *z, size_t n, size_t t, const size_t *windows,
                      size_t n_windows, size_t r) {
    for (size_t k = 0; k < n_windows; k++) past[k] = windows[k] <= t ? z + (n - windows[k]) * r : NULL;
}

void grassmann_mix_forward(float *qbar, const float *z, const size_t *windows, size_t n_windows, uint32_t muted,
                           size_t B, size_t T, size_t r, float eps) {
    size_t P = n_pairs(r);
#pragma omp parallel for schedule(static)
    for (size_t n = 0; n < B * T; n++) {
        const float *past[MIXER_MAX_WINDOWS];
        float c[GRASSMANN_MAX_RANK];
        size_t t = n % T;
        past_rows(past, z, n, t, windows, n_windows, r);
        if (combine_past(c, NULL, z + n * r, past, windows, n_windows, muted, t, eps, r) == 0)
            memset(qbar + n * P, 0, P * sizeof(float));
        else
            grassmann_wedge(qbar + n * P, z + n * r, c, r);
    }
}

/* With dQ the antisymmetric matrix of dq (dQ_ij = dq_ij for i < j), the
 * products u = -dQ a and v = dQ c in one pass over the packed triangle. */
static void antisym_matvecs(float *u, float *v, const float *dq, const float *a, const float *c, size_t r) {
    memset(u, 0, r * sizeof(float));
    memset(v, 0, r * sizeof(float));
    for (size_t i = 0; i < r; i++) {
        const float *row = dq + pair_row(i, r) - (i + 1), ai = a[i], ci = c[i];
        float ui = 0.0f, vi = 0.0f;
#pragma omp simd reduction(+ : ui, vi)
        for (size_t j = i + 1; j < r; j++) {
            vi += row[j] * c[j];
            v[j] -= row[j] * ci;
            ui -= row[j] * a[j];
            u[j] += row[j] * ai;
        }
        u[i] += ui;
        v[i] += vi;
    }
}

/* Backward, for the loss L = sum_t dqbar_t . qbar_t = sum_t a^T dQ_t c:
 *   dL/da = dQ c + sum_d kappa_d (|b_d|^2 a - (a.b_d) b_d)        (a as itself)
 *   dL/db_d = s_d u + kappa_d (|a|^2 b_d - (a.b_d) a)             (b_d in c and in s_d)
 * with u = dQ^T a = -dQ a, e_d = u.b_d = dL/ds_d and, above the clamp,
 * kappa_d = -e_d s_d / |a ^ b_d|^2 (ds/d|a^b| = -s/|a^b|); at the clamp s_d
 * is constant and kappa_d = 0. Phase 1 does each position's own part and keeps
 * u, s, kappa and a.b; phase 2 adds what z_n receives as the past vector of
 * positions n + d, so each dz row has one writer and a fixed order. */
void grassmann_mix_backward(float *dz, float *u, float *coef, const float *dqbar, const float *z,
                            const size_t *windows, size_t n_windows, size_t B, size_t T, size_t r, float eps) {
    size_t N = B * T, P = n_pairs(r), stride = n_windows * COEF_PER_OFFSET + 1;
#pragma omp parallel for schedule(static)
    for (size_t n = 0; n < N; n++) {
        const float *past[MIXER_MAX_WINDOWS], *a = z + n * r;
        float c[GRASSMANN_MAX_RANK], v[GRASSMANN_MAX_RANK], s[MIXER_MAX_WINDOWS];
        float *un = u + n * r, *cf = coef + n * stride, *dzn = dz + n * r;
        size_t t = n % T;
        past_rows(past, z, n, t, windows, n_windows, r);
        size_t cnt = combine_past(c, s, a, past, windows, n_windows, 0, t, eps, r);
        if (cnt == 0) {
            memset(un, 0, r * sizeof(float));
            memset(dzn, 0, r * sizeof(float));
            continue;
        }
        antisym_matvecs(un, v, dqbar + n * P, a, c, r);
        double aa = dot_d(a, a, r);
        cf[n_windows * COEF_PER_OFFSET] = (float)aa;
        for (size_t k = 0; k < n_windows; k++) {
            if (!past[k]) continue;
            const float *b = past[k];
            double bb = dot_d(b, b, r), ab = dot_d(a, b, r), nrm = wedge_norm(aa, bb, ab);
            double kappa = nrm > eps ? -dot_d(un, b, r) * s[k] / (nrm * nrm) : 0.0;
            float ka = (float)(kappa * bb), kb = (float)(kappa * ab);
#pragma omp simd
            for (size_t i = 0; i < r; i++) v[i] += ka * a[i] - kb * b[i];
            cf[k * COEF_PER_OFFSET + 0] = s[k];
            cf[k * COEF_PER_OFFSET + 1] = (float)kappa;
            cf[k * COEF_PER_OFFSET + 2] = (float)ab;
        }
        memcpy(dzn, v, r * sizeof(float));
    }
#pragma omp parallel for schedule(static)
    for (size_t n = 0; n < N; n++) {
        size_t t = n % T;
        const float *b = z + n * r;
        float *dzn = dz + n * r;
        for (size_t k = 0; k < n_windows; k++) {
            size_t d = windows[k];
            if (t + d >= T) continue; /* no position n + d in this sequence */
            size_t m = n + d;
            const float *am = z + m * r, *um = u + m * r, *cf = coef + m * stride + k * COEF_PER_OFFSET;
            float s = cf[0], ka = cf[1] * coef[m * stride + n_windows * COEF_PER_OFFSET], kb = cf[1] * cf[2];
#pragma omp simd
            for (size_t i = 0; i < r; i++) dzn[i] += s * um[i] + ka * b[i] - kb * am[i];
        }
    }
}

void grassmann_gate_forward(float *m, float *a, const float *x, const float *g, size_t n) {
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) {
        a[i] = 1.0f / (1.0f + fast_expf(-a[i]));
        m[i] = a[i] * x[i] + (1.0f - a[i]) * g[i];
    }
}

void grassmann_gate_backward(float *dx, float *dg, float *dapre, const float *dm, const float *a,
                             const float *x, const float *g, size_t n) {
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) {
        dx[i] = dm[i] * a[i];
        dg[i] = dm[i] * (1.0f - a[i]);
        dapre[i] = dm[i] * (x[i] - g[i]) * a[i] * (1.0f - a[i]);
    }
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
    size_t C = spec->n_embd, P = n_pairs(spec->grassmann_rank), dmin = min_window(spec);
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
    size_t N = B * T, C = spec->n_embd, r = spec->grassmann_rank, P = n_pairs(r), dmin = min_window(spec);
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
    size_t C = spec->n_embd, r = spec->grassmann_rank, P = n_pairs(r), R = ring_len(spec);
    GrParams p = gr_params(params, spec);
    float *ring = state;
    GrActs a = gr_acts(state + R * r, spec, 1);
    float *zt = ring + (t % R) * r;
    matmul_forward(rt->bf16, zt, in_t, p.red_w, p.red_b, 1, C, r);
    const float *past[MIXER_MAX_WINDOWS];
    float c[GRASSMANN_MAX_RANK];
    for (size_t k = 0; k < spec->n_windows; k++)
        past[k] = spec->windows[k] <= t ? ring + ((t - spec->windows[k]) % R) * r : NULL;
    if (combine_past(c, NULL, zt, past, spec->windows, spec->n_windows, spec->muted_windows, t, GRASSMANN_EPS, r) == 0)
        memset(a.qbar, 0, P * sizeof(float));
    else
        grassmann_wedge(a.qbar, zt, c, r);
    /* One row at position t: "T" is taken past any t so that t0 = t is used as is. */
    gr_tail_forward(spec, rt, p, a, out_t, in_t, 1, (size_t)-1, t);
}

/* Forward: one wedge of P coordinates at 2 FLOPs each and, per offset, three
 * dot products and an axpy over r; backward twice the forward. */
static double grassmann_flops(const MixerSpec *spec, size_t T) {
    (void)T;
    double r = (double)spec->grassmann_rank;
    return 3.0 * (2.0 * (double)n_pairs(spec->grassmann_rank) + 8.0 * r * (double)spec->n_windows);
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
