/* Gated linear attention with a per-head scalar decay (see mixers/gla.h). */
#include "mixers/gla.h"

#include <math.h>
#include <string.h>

#include "lm/matmul.h"
#include "nn/rmsnorm.h"

typedef struct GlaParams {
    const float *qkv_w, *qkv_b, *decay_w, *decay_b, *proj_w, *proj_b;
} GlaParams;

static GlaParams gla_params(const float *p, size_t C, size_t H) {
    GlaParams g;
    g.qkv_w = p;
    g.qkv_b = g.qkv_w + 3 * C * C;
    g.decay_w = g.qkv_b + 3 * C;
    g.decay_b = g.decay_w + H * C;
    g.proj_w = g.decay_b + H;
    g.proj_b = g.proj_w + C * C;
    return g;
}

typedef struct GlaActs {
    float *qkv, *gamma, *y, *rstd, *starts; /* forward, kept for backward */
    float *dqkv, *dy, *dz, *scratch;        /* backward */
} GlaActs;

static size_t n_chunks(size_t T) { return (T + GLA_CHUNK - 1) / GLA_CHUNK; }
/* Backward's room per (b, h): a chunk's states S_{t0-1} .. S_{t1-1}, dS,
 * and the read-out its recomputation writes (hs, unused). */
static size_t scratch_per_head(size_t hs) { return (GLA_CHUNK + 2) * hs * hs + hs; }

/* With base == NULL it only measures. */
static size_t gla_layout(float *base, size_t B, size_t T, size_t C, size_t H, GlaActs *a) {
    size_t N = B * T, hs = C / H, used = 0;
#define TAKE(field, count) (a->field = base ? base + used : NULL, used += (count))
    TAKE(qkv, N * 3 * C);
    TAKE(gamma, N * H);
    TAKE(y, N * C);
    TAKE(rstd, N * H);
    TAKE(starts, B * H * n_chunks(T) * hs * hs);
    TAKE(dqkv, N * 3 * C);
    TAKE(dy, N * C);
    TAKE(dz, N * H);
    TAKE(scratch, B * H * scratch_per_head(hs));
#undef TAKE
    return used;
}

/* The decay's starting logit for head h of H (mixers/gla.h). */
static float decay_offset(size_t h, size_t H) {
    double e = 3.0 + 5.0 * (double)h / (double)(H > 1 ? H - 1 : 1), keep = 1.0 - exp2(-e);
    return (float)log(keep / (1.0 - keep));
}

static int gla_validate(const MixerSpec *spec, Error *err) {
    if (spec->n_head == 0) return err_set(err, "n_head must be positive");
    if (spec->n_embd % spec->n_head != 0)
        return err_set(err, "n_embd (%zu) must be divisible by n_head (%zu)", spec->n_embd, spec->n_head);
    return 0;
}

static size_t gla_tensors(const MixerSpec *spec, TensorSpec *out) {
    size_t C = spec->n_embd, H = spec->n_head;
    out[0] = (TensorSpec){"gla.qkv.weight", 3 * C, C, INIT_NORMAL, 0};
    out[1] = (TensorSpec){"gla.qkv.bias", 3 * C, 0, INIT_ZERO, 0};
    out[2] = (TensorSpec){"gla.decay.weight", H, C, INIT_NORMAL, 0};
    out[3] = (TensorSpec){"gla.decay.bias", H, 0, INIT_ZERO, 0};
    out[4] = (TensorSpec){"gla.proj.weight", C, C, INIT_RESIDUAL, 1};
    out[5] = (TensorSpec){"gla.proj.bias", C, 0, INIT_ZERO, 0};
    return 6;
}

static size_t gla_act_size(const MixerSpec *spec, size_t B, size_t T) {
    GlaActs unused;
    return gla_layout(NULL, B, T, spec->n_embd, spec->n_head, &unused);
}

/* gamma (N, H) = sigmoid(z), z = x . decay_w^T + decay_b + offset. */
static void decays(float *gamma, const GlaParams *p, const float *in, size_t N, size_t C, size_t H) {
    matmul_forward(NULL, gamma, in, p->decay_w, p->decay_b, N, C, H);
    for (size_t h = 0; h < H; h++) {
        float offset = decay_offset(h, H); /* once per head, not per token */
        for (size_t n = 0; n < N; n++) gamma[n * H + h] = 1.0f / (1.0f + expf(-(gamma[n * H + h] + offset)));
    }
}

/* One position of the recurrence for one head: S = g S + k v^T, then
 * o = S^T q. S is hs x hs, row i the key dimension. */
static void state_step(float *S, const float *q, const float *k, const float *v, float g, float *o, size_t hs) {
    for (size_t j = 0; j < hs; j++) o[j] = 0.0f;
    for (size_t i = 0; i < hs; i++) {
        float *Si = S + i * hs;
        const float ki = k[i], qi = q[i];
#pragma omp simd
        for (size_t j = 0; j < hs; j++) {
            Si[j] = g * Si[j] + ki * v[j];
            o[j] += qi * Si[j];
        }
    }
}

static void gla_forward(const MixerSpec *spec, const MixerRuntime *rt, const float *params, float *acts, float *out,
                        const float *in, size_t B, size_t T) {
    size_t C = spec->n_embd, H = spec->n_head, hs = C / H, N = B * T, nc = n_chunks(T);
    GlaParams p = gla_params(params, C, H);
    GlaActs a;
    gla_layout(acts, B, T, C, H, &a);
    matmul_forward(rt->bf16, a.qkv, in, p.qkv_w, p.qkv_b, N, C, 3 * C);
    decays(a.gamma, &p, in, N, C, H);
#pragma omp parallel for schedule(static)
    for (size_t bh = 0; bh < B * H; bh++) {
        size_t b = bh / H, h = bh % H;
        float *S = a.scratch + bh * scratch_per_head(hs), *starts = a.starts + bh * nc * hs * hs;
        memset(S, 0, hs * hs * sizeof(float));
        for (size_t t = 0; t < T; t++) {
            size_t n = b * T + t;
            if (t % GLA_CHUNK == 0) memcpy(starts + t / GLA_CHUNK * hs * hs, S, hs * hs * sizeof(float));
            const float *q = a.qkv + n * 3 * C + h * hs;
            state_step(S, q, q + C, q + 2 * C, a.gamma[n * H + h], a.y + n * C + h * hs, hs);
        }
    }
    rmsnorm_heads_forward(a.y, a.rstd, N, C, H, hs);
    matmul_forward(rt->bf16, out, a.y, p.proj_w, p.proj_b, N, C, C);
}

/* One head's backward over positions [t0, t1), latest first. states holds
 * S_{t0-1} (the chunk's start) .. S_{t1-1}; dS enters as the gradient that
 * reaches S_{t1-1} from later positions (already times their decay) and
 * leaves as the gradient reaching S_{t0-1}. Writes dq, dk, dv (rows of
 * dqkv) and dgamma. */
static void chunk_backward(float *dS, const float *states, const float *qkv, const float *gamma, const float *dy,
                           float *dqkv, float *dgamma, size_t t0, size_t t1, size_t C, size_t H, size_t hs) {
    for (size_t t = t1; t-- > t0;) {
        const float *q = qkv + t * 3 * C, *k = q + C, *v = q + 2 * C, *d_o = dy + t * C;
        const float *S = states + (t - t0 + 1) * hs * hs, *Sprev = states + (t - t0) * hs * hs;
        float *dq = dqkv + t * 3 * C, *dk = dq + C, *dv = dq + 2 * C, g = gamma[t * H];
        double dg = 0.0;
        for (size_t j = 0; j < hs; j++) dv[j] = 0.0f;
        for (size_t i = 0; i < hs; i++) {
            float *dSi = dS + i * hs, sq = 0.0f, sk = 0.0f, sg = 0.0f;
            const float *Si = S + i * hs, *Pi = Sprev + i * hs, qi = q[i], ki = k[i];
#pragma omp simd reduction(+ : sq, sk, sg)
            for (size_t j = 0; j < hs; j++) {
                dSi[j] += qi * d_o[j]; /* now the gradient reaching S_t */
                sq += Si[j] * d_o[j];
                sk += dSi[j] * v[j];
                sg += dSi[j] * Pi[j];
                dv[j] += dSi[j] * ki;
                dSi[j] *= g; /* its share in S_{t-1} */
            }
            dq[i] = sq;
            dk[i] = sk;
            dg += sg;
        }
        dgamma[t * H] = (float)dg;
    }
}

static void gla_backward(const MixerSpec *spec, const MixerRuntime *rt, const float *params, float *dparams,
                         float *acts, const float *in, const float *dout, float *din, size_t B, size_t T) {
    size_t C = spec->n_embd, H = spec->n_head, hs = C / H, N = B * T, nc = n_chunks(T);
    GlaParams p = gla_params(params, C, H), g = gla_params(dparams, C, H);
    GlaActs a;
    gla_layout(acts, B, T, C, H, &a);
    matmul_backward(rt->bf16, a.dy, 0.0f, (float *)g.proj_w, (float *)g.proj_b, dout, a.y, p.proj_w, N, C, C);
    rmsnorm_heads_backward(a.dy, a.y, a.rstd, N, C, H, hs);
#pragma omp parallel for schedule(static)
    for (size_t bh = 0; bh < B * H; bh++) {
        size_t b = bh / H, h = bh % H;
        float *states = a.scratch + bh * scratch_per_head(hs), *dS = states + (GLA_CHUNK + 1) * hs * hs;
        float *o = dS + hs * hs;
        const float *starts = a.starts + bh * nc * hs * hs, *qkv = a.qkv + b * T * 3 * C + h * hs;
        const float *gamma = a.gamma + b * T * H + h;
        memset(dS, 0, hs * hs * sizeof(float));
        for (size_t c = nc; c-- > 0;) {
            size_t t0 = c * GLA_CHUNK, t1 = t0 + GLA_CHUNK < T ? t0 + GLA_CHUNK : T;
            memcpy(states, starts + c * hs * hs, hs * hs * sizeof(float));
            for (size_t t = t0; t < t1; t++) {
                float *S = states + (t - t0 + 1) * hs * hs;
                memcpy(S, S - hs * hs, hs * hs * sizeof(float));
                const float *q = qkv + t * 3 * C;
                state_step(S, q, q + C, q + 2 * C, gamma[t * H], o, hs);
            }
            chunk_backward(dS, states, qkv, gamma, a.dy + b * T * C + h * hs, a.dqkv + b * T * 3 * C + h * hs,
                           a.dz + b * T * H + h, t0, t1, C, H, hs);
        }
    }
    /* dz = dgamma gamma (1 - gamma): sigmoid's derivative. */
    for (size_t i = 0; i < N * H; i++) a.dz[i] *= a.gamma[i] * (1.0f - a.gamma[i]);
    matmul_backward(rt->bf16, din, 0.0f, (float *)g.qkv_w, (float *)g.qkv_b, a.dqkv, in, p.qkv_w, N, C, 3 * C);
    matmul_backward(NULL, din, 1.0f, (float *)g.decay_w, (float *)g.decay_b, a.dz, in, p.decay_w, N, C, H);
}

/* Sampling state: S for every head (H hs^2 = C hs), then scratch for one
 * position's qkv (3C), gamma (H), o (C) and its rstd (H). */
static size_t gla_state_size(const MixerSpec *spec) {
    size_t C = spec->n_embd, H = spec->n_head;
    return C * (C / H) + 4 * C + 2 * H;
}

static void gla_step(const MixerSpec *spec, const MixerRuntime *rt, const float *params, float *state,
                     const float *in_t, float *out_t, size_t t) {
    size_t C = spec->n_embd, H = spec->n_head, hs = C / H;
    GlaParams p = gla_params(params, C, H);
    float *S = state, *qkv = S + C * hs, *gamma = qkv + 3 * C, *o = gamma + H, *rstd = o + C;
    if (t == 0) memset(S, 0, C * hs * sizeof(float)); /* a new sequence */
    matmul_forward(rt->bf16, qkv, in_t, p.qkv_w, p.qkv_b, 1, C, 3 * C);
    decays(gamma, &p, in_t, 1, C, H);
    for (size_t h = 0; h < H; h++)
        state_step(S + h * hs * hs, qkv + h * hs, qkv + C + h * hs, qkv + 2 * C + h * hs, gamma[h], o + h * hs, hs);
    rmsnorm_heads_forward(o, rstd, 1, C, H, hs);
    matmul_forward(rt->bf16, out_t, o, p.proj_w, p.proj_b, 1, C, C);
}

/* Per token and head: forward's update and read-out, 2 hs^2 multiply-adds;
 * backward's recomputed update and its five hs^2 terms, 6 hs^2. Over the
 * heads, 8 C hs multiply-adds, 16 C hs FLOPs, whatever T. */
static double gla_flops(const MixerSpec *spec, size_t T) {
    (void)T;
    return 16.0 * (double)spec->n_embd * (double)(spec->n_embd / spec->n_head);
}

const Mixer gla_mixer = {
    .name = "gla",
    .validate = gla_validate,
    .tensors = gla_tensors,
    .act_size = gla_act_size,
    .forward = gla_forward,
    .backward = gla_backward,
    .state_size = gla_state_size,
    .step = gla_step,
    .flops = gla_flops,
};
