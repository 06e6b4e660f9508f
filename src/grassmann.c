#include "grassmann.h"

#include <math.h>
#include <string.h>

#include "layernorm.h"
#include "ops.h"

typedef struct GrParams {
    const float *red_w, *red_b, *plu_w, *plu_b, *gate_w, *gate_b, *ln_w, *ln_b;
} GrParams;

/* Forward keeps z, qbar, g, xg = [x ; g], a (the gate), m and LN statistics;
 * backward uses the d* regions as scratch. */
typedef struct GrActs {
    float *z, *qbar, *g, *xg, *a, *m, *mean, *rstd;
    float *dm, *dg, *dxg, *dapre, *dqbar, *dz, *coef;
} GrActs;

static size_t n_pairs(size_t r) { return r * (r - 1) / 2; }

static GrParams gr_params(const float *p, const ModelConfig *cfg) {
    size_t C = cfg->n_embd, r = cfg->grassmann_rank, P = n_pairs(r);
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

static GrActs gr_acts(float *acts, const ModelConfig *cfg, size_t N) {
    size_t C = cfg->n_embd, r = cfg->grassmann_rank, P = n_pairs(r);
    GrActs a;
    float *cur = acts;
#define TAKE(field, count) (a.field = cur, cur += (count))
    TAKE(z, N * r);
    TAKE(qbar, N * P);
    TAKE(g, N * C);
    TAKE(xg, N * 2 * C);
    TAKE(a, N * C);
    TAKE(m, N * C);
    TAKE(mean, N);
    TAKE(rstd, N);
    TAKE(dm, N * C);
    TAKE(dg, N * C);
    TAKE(dxg, N * 2 * C);
    TAKE(dapre, N * C);
    TAKE(dqbar, N * P);
    TAKE(dz, N * r);
    TAKE(coef, N * cfg->n_windows * 2);
#undef TAKE
    return a;
}

static int grassmann_validate(const ModelConfig *cfg, Error *err) {
    if (cfg->grassmann_rank < 2) return err_set(err, "grassmann rank must be at least 2 (got %zu)", cfg->grassmann_rank);
    if (cfg->grassmann_rank > 1024) return err_set(err, "grassmann rank %zu is too large (max 1024)", cfg->grassmann_rank);
    if (cfg->n_windows == 0) return err_set(err, "grassmann window list is empty");
    for (size_t i = 0; i < cfg->n_windows; i++)
        if (cfg->windows[i] == 0 || cfg->windows[i] >= cfg->block_size)
            return err_set(err, "grassmann window offset %zu must be between 1 and block_size - 1 (%zu)",
                           cfg->windows[i], cfg->block_size - 1);
    return 0;
}

static size_t grassmann_tensors(const ModelConfig *cfg, TensorSpec *out) {
    size_t C = cfg->n_embd, r = cfg->grassmann_rank, P = n_pairs(r);
    out[0] = (TensorSpec){"grassmann.red.weight", r, C, INIT_NORMAL};
    out[1] = (TensorSpec){"grassmann.red.bias", r, 0, INIT_ZERO};
    out[2] = (TensorSpec){"grassmann.plu.weight", C, P, INIT_NORMAL};
    out[3] = (TensorSpec){"grassmann.plu.bias", C, 0, INIT_ZERO};
    out[4] = (TensorSpec){"grassmann.gate.weight", C, 2 * C, INIT_NORMAL};
    out[5] = (TensorSpec){"grassmann.gate.bias", C, 0, INIT_ZERO};
    out[6] = (TensorSpec){"grassmann.ln.weight", C, 0, INIT_ONE};
    out[7] = (TensorSpec){"grassmann.ln.bias", C, 0, INIT_ZERO};
    return 8;
}

static size_t grassmann_act_size(const ModelConfig *cfg, size_t B, size_t T) {
    size_t N = B * T, C = cfg->n_embd, r = cfg->grassmann_rank, P = n_pairs(r);
    return 2 * (N * r + N * P) + 10 * N * C + 2 * N + 2 * N * cfg->n_windows; /* exactly what gr_acts takes */
}

/* ---- the parts ---------------------------------------------------------- */

/* The inner loops run over j for a fixed i, where the Plücker index k of
 * (i, j) is contiguous; `omp simd` lets the float reductions vectorise in a
 * fixed order, so results stay deterministic. */
static size_t pair_index(size_t i, size_t r) { return i * (2 * r - i - 1) / 2; } /* k of (i, i+1) */

/* |p|^2, and p . dq in the same pass when dq is given; two loops so that
 * neither carries a branch. */
static void pair_norm_dot(const float *zc, const float *zp, const float *dq, size_t r, float *ss_out, float *dot_out) {
    float ss = 0.0f, dot = 0.0f;
    for (size_t i = 0; i < r; i++) {
        const float ci = zc[i], pi = zp[i];
        if (dq) {
            const float *dqi = dq + pair_index(i, r) - (i + 1);
#pragma omp simd reduction(+ : ss, dot)
            for (size_t j = i + 1; j < r; j++) {
                float p = ci * zp[j] - zc[j] * pi;
                ss += p * p;
                dot += p * dqi[j];
            }
        } else {
#pragma omp simd reduction(+ : ss)
            for (size_t j = i + 1; j < r; j++) {
                float p = ci * zp[j] - zc[j] * pi;
                ss += p * p;
            }
        }
    }
    *ss_out = ss;
    *dot_out = dot;
}

void grassmann_pair_forward(float *qbar, const float *zc, const float *zp, float scale,
                            float eps, size_t r) {
    float ss, unused;
    pair_norm_dot(zc, zp, NULL, r, &ss, &unused);
    float nrm = sqrtf(ss);
    float s = scale / (nrm > eps ? nrm : eps);
    for (size_t i = 0; i < r; i++) {
        const float ci = zc[i], pi = zp[i];
        float *qi = qbar + pair_index(i, r) - (i + 1);
#pragma omp simd
        for (size_t j = i + 1; j < r; j++) qi[j] += s * (ci * zp[j] - zc[j] * pi);
    }
}

/* The gradient of scale * p / max(|p|, eps) with respect to p, given dq, is
 * dp = A dq - B p: above the clamp A = scale/|p| and B = scale (p.dq)/|p|^3
 * (the projection off the unit sphere); at the clamp the divisor is a
 * constant, A = scale/eps and B = 0. */
static void pair_coef(const float *zc, const float *zp, const float *dq, float scale, float eps, size_t r,
                      float *A, float *Bc) {
    float ss, dot;
    pair_norm_dot(zc, zp, dq, r, &ss, &dot);
    float nrm = sqrtf(ss);
    if (nrm > eps) {
        *A = scale / nrm;
        *Bc = scale * dot / (nrm * nrm * nrm);
    } else {
        *A = scale / eps;
        *Bc = 0.0f;
    }
}

/* p_ij = zc_i zp_j - zc_j zp_i, so with dp as above:
 * dzc_i += dp_ij zp_j, dzc_j -= dp_ij zp_i, dzp_j += dp_ij zc_i, dzp_i -= dp_ij zc_j.
 * Either of dzc, dzp may be NULL. */
static void pair_accumulate(float *dzc, float *dzp, const float *zc, const float *zp, const float *dq, float A,
                            float Bc, size_t r) {
    for (size_t i = 0; i < r; i++) {
        const float ci = zc[i], pi = zp[i];
        const float *dqi = dq + pair_index(i, r) - (i + 1);
        float acc = 0.0f;
        if (dzc) {
#pragma omp simd reduction(+ : acc)
            for (size_t j = i + 1; j < r; j++) {
                float dp = A * dqi[j] - Bc * (ci * zp[j] - zc[j] * pi);
                acc += dp * zp[j];
                dzc[j] -= dp * pi;
            }
            dzc[i] += acc;
        } else {
#pragma omp simd reduction(+ : acc)
            for (size_t j = i + 1; j < r; j++) {
                float dp = A * dqi[j] - Bc * (ci * zp[j] - zc[j] * pi);
                acc += dp * zc[j];
                dzp[j] += dp * ci;
            }
            dzp[i] -= acc;
        }
    }
}

void grassmann_pair_backward(float *dzc, float *dzp, const float *zc, const float *zp,
                             const float *dqbar, float scale, float eps, size_t r) {
    float A, Bc;
    pair_coef(zc, zp, dqbar, scale, eps, r, &A, &Bc);
    if (dzc) pair_accumulate(dzc, NULL, zc, zp, dqbar, A, Bc, r);
    if (dzp) pair_accumulate(NULL, dzp, zc, zp, dqbar, A, Bc, r);
}

static size_t n_valid(const size_t *windows, size_t n_windows, size_t t) {
    size_t n = 0;
    for (size_t w = 0; w < n_windows; w++) n += windows[w] <= t;
    return n;
}

void grassmann_mean_forward(float *qbar, const float *z, const size_t *windows, size_t n_windows,
                            size_t B, size_t T, size_t r, float eps) {
    size_t P = n_pairs(r);
#pragma omp parallel for schedule(static)
    for (size_t n = 0; n < B * T; n++) {
        size_t t = n % T, cnt = n_valid(windows, n_windows, t);
        float *qb = qbar + n * P;
        memset(qb, 0, P * sizeof(float));
        for (size_t w = 0; w < n_windows; w++)
            if (windows[w] <= t)
                grassmann_pair_forward(qb, z + n * r, z + (n - windows[w]) * r, 1.0f / (float)cnt, eps, r);
    }
}

void grassmann_mean_backward(float *dz, float *coef, const float *dqbar, const float *z, const size_t *windows,
                             size_t n_windows, size_t B, size_t T, size_t r, float eps) {
    size_t P = n_pairs(r);
    /* Phase 1: each pair's (A, B) once. */
#pragma omp parallel for schedule(static)
    for (size_t n = 0; n < B * T; n++) {
        size_t t = n % T, cnt = n_valid(windows, n_windows, t);
        for (size_t w = 0; w < n_windows; w++)
            if (windows[w] <= t)
                pair_coef(z + n * r, z + (n - windows[w]) * r, dqbar + n * P, 1.0f / (float)cnt, eps, r,
                          &coef[(n * n_windows + w) * 2], &coef[(n * n_windows + w) * 2 + 1]);
    }
    /* Phase 2: z_s enters position s (as the current vector) and positions
     * s + d (as the past one); gathering both here keeps each dz row to one
     * thread and its sum in a fixed order. */
#pragma omp parallel for schedule(static)
    for (size_t n = 0; n < B * T; n++) {
        size_t t = n % T;
        for (size_t w = 0; w < n_windows; w++) {
            size_t d = windows[w];
            if (d <= t) {
                const float *c = coef + (n * n_windows + w) * 2;
                pair_accumulate(dz + n * r, NULL, z + n * r, z + (n - d) * r, dqbar + n * P, c[0], c[1], r);
            }
            if (t + d < T) { /* only then does position n + d exist */
                const float *c = coef + ((n + d) * n_windows + w) * 2;
                pair_accumulate(NULL, dz + n * r, z + (n + d) * r, z + n * r, dqbar + (n + d) * P, c[0], c[1], r);
            }
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
        dx[i] += dm[i] * a[i];
        dg[i] += dm[i] * (1.0f - a[i]);
        dapre[i] = dm[i] * (x[i] - g[i]) * a[i] * (1.0f - a[i]);
    }
}

/* ---- the layer ---------------------------------------------------------- */

static size_t min_window(const ModelConfig *cfg) {
    size_t m = cfg->windows[0];
    for (size_t w = 1; w < cfg->n_windows; w++) m = cfg->windows[w] < m ? cfg->windows[w] : m;
    return m;
}

/* From qbar to the output, for N rows whose positions are t0, t0+1, ... mod T:
 * shared by the batched forward and the one-position sampling step. */
static void gr_tail_forward(const ModelConfig *cfg, GrParams p, GrActs a, float *out, const float *x,
                            size_t N, size_t T, size_t t0) {
    size_t C = cfg->n_embd, P = n_pairs(cfg->grassmann_rank), dmin = min_window(cfg);
    matmul_forward(a.g, a.qbar, p.plu_w, p.plu_b, N, P, C);
#pragma omp parallel for schedule(static)
    for (size_t n = 0; n < N; n++) {
        if ((t0 + n) % T < dmin) memset(a.g + n * C, 0, C * sizeof(float)); /* no offset fits: g = 0 */
        memcpy(a.xg + n * 2 * C, x + n * C, C * sizeof(float));
        memcpy(a.xg + n * 2 * C + C, a.g + n * C, C * sizeof(float));
    }
    matmul_forward(a.a, a.xg, p.gate_w, p.gate_b, N, 2 * C, C);
    grassmann_gate_forward(a.m, a.a, x, a.g, N * C);
    layernorm_forward(out, a.mean, a.rstd, a.m, p.ln_w, p.ln_b, N, C);
}

static void grassmann_forward(const ModelConfig *cfg, const float *params, float *acts,
                              float *out, const float *in, size_t B, size_t T) {
    size_t N = B * T, C = cfg->n_embd, r = cfg->grassmann_rank;
    GrParams p = gr_params(params, cfg);
    GrActs a = gr_acts(acts, cfg, N);
    matmul_forward(a.z, in, p.red_w, p.red_b, N, C, r);
    grassmann_mean_forward(a.qbar, a.z, cfg->windows, cfg->n_windows, B, T, r, GRASSMANN_EPS);
    gr_tail_forward(cfg, p, a, out, in, N, T, 0);
}

static void grassmann_backward(const ModelConfig *cfg, const float *params, float *dparams,
                               float *acts, const float *in, const float *dout, float *din,
                               size_t B, size_t T) {
    size_t N = B * T, C = cfg->n_embd, r = cfg->grassmann_rank, P = n_pairs(r), dmin = min_window(cfg);
    GrParams p = gr_params(params, cfg);
    GrParams g = gr_params(dparams, cfg);
    GrActs a = gr_acts(acts, cfg, N);
    memset(a.dm, 0, N * C * sizeof(float));
    memset(a.dg, 0, N * C * sizeof(float));
    memset(a.dxg, 0, N * 2 * C * sizeof(float));
    memset(a.dqbar, 0, N * P * sizeof(float));
    memset(a.dz, 0, N * r * sizeof(float));
    layernorm_backward(a.dm, (float *)g.ln_w, (float *)g.ln_b, dout, a.m, p.ln_w, a.mean, a.rstd, N, C);
    grassmann_gate_backward(din, a.dg, a.dapre, a.dm, a.a, in, a.g, N * C);
    matmul_backward(a.dxg, (float *)g.gate_w, (float *)g.gate_b, a.dapre, a.xg, p.gate_w, N, 2 * C, C);
#pragma omp parallel for schedule(static)
    for (size_t n = 0; n < N; n++) {
        float *dx = din + n * C, *dg = a.dg + n * C;
        const float *dxg = a.dxg + n * 2 * C;
        for (size_t c = 0; c < C; c++) {
            dx[c] += dxg[c];
            dg[c] += dxg[C + c];
        }
        if (n % T < dmin) memset(dg, 0, C * sizeof(float)); /* g was held at 0 there */
    }
    matmul_backward(a.dqbar, (float *)g.plu_w, (float *)g.plu_b, a.dg, a.qbar, p.plu_w, N, P, C);
    grassmann_mean_backward(a.dz, a.coef, a.dqbar, a.z, cfg->windows, cfg->n_windows, B, T, r, GRASSMANN_EPS);
    matmul_backward(din, (float *)g.red_w, (float *)g.red_b, a.dz, in, p.red_w, N, C, r);
}

/* Sampling state: a ring of the last max(D) + 1 reduced vectors, then one
 * position's worth of the forward activations. Constant in the text length. */
static size_t ring_len(const ModelConfig *cfg) {
    size_t m = 0;
    for (size_t w = 0; w < cfg->n_windows; w++) m = cfg->windows[w] > m ? cfg->windows[w] : m;
    return m + 1;
}

static size_t grassmann_state_size(const ModelConfig *cfg) {
    return ring_len(cfg) * cfg->grassmann_rank + grassmann_act_size(cfg, 1, 1);
}

static void grassmann_step(const ModelConfig *cfg, const float *params, float *state,
                           const float *in_t, float *out_t, size_t t) {
    size_t C = cfg->n_embd, r = cfg->grassmann_rank, P = n_pairs(r), R = ring_len(cfg);
    GrParams p = gr_params(params, cfg);
    float *ring = state;
    GrActs a = gr_acts(state + R * r, cfg, 1);
    float *zt = ring + (t % R) * r;
    matmul_forward(zt, in_t, p.red_w, p.red_b, 1, C, r);
    size_t cnt = n_valid(cfg->windows, cfg->n_windows, t);
    memset(a.qbar, 0, P * sizeof(float));
    for (size_t w = 0; w < cfg->n_windows; w++)
        if (cfg->windows[w] <= t)
            grassmann_pair_forward(a.qbar, zt, ring + ((t - cfg->windows[w]) % R) * r, 1.0f / (float)cnt,
                                   GRASSMANN_EPS, r);
    /* One row at position t: "T" is taken past any t so that t0 = t is used as is. */
    gr_tail_forward(cfg, p, a, out_t, in_t, 1, (size_t)-1, t);
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
};
