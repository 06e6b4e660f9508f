#include "attention.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ops.h"

typedef struct AttnParams {
    const float *qkv_w, *qkv_b, *proj_w, *proj_b;
} AttnParams;

typedef struct AttnActs {
    float *qkv, *att, *y, *dqkv, *datt, *dy;
} AttnActs;

static AttnParams attn_params(const float *p, size_t C) {
    AttnParams a;
    a.qkv_w = p;
    a.qkv_b = a.qkv_w + 3 * C * C;
    a.proj_w = a.qkv_b + 3 * C;
    a.proj_b = a.proj_w + C * C;
    return a;
}

static AttnActs attn_acts(float *acts, size_t B, size_t T, size_t C, size_t H) {
    AttnActs a;
    size_t N = B * T;
    a.qkv = acts;
    a.att = a.qkv + N * 3 * C;
    a.y = a.att + B * H * T * T;
    a.dqkv = a.y + N * C;
    a.datt = a.dqkv + N * 3 * C;
    a.dy = a.datt + B * H * T * T;
    return a;
}

static int attention_validate(const ModelConfig *cfg, Error *err) {
    if (cfg->n_head == 0) return err_set(err, "n_head must be positive");
    if (cfg->n_embd % cfg->n_head != 0)
        return err_set(err, "n_embd (%zu) must be divisible by n_head (%zu)", cfg->n_embd, cfg->n_head);
    return 0;
}

static size_t attention_tensors(const ModelConfig *cfg, TensorSpec *out) {
    size_t C = cfg->n_embd;
    out[0] = (TensorSpec){"attn.qkv.weight", 3 * C, C, INIT_NORMAL};
    out[1] = (TensorSpec){"attn.qkv.bias", 3 * C, 0, INIT_ZERO};
    out[2] = (TensorSpec){"attn.proj.weight", C, C, INIT_RESIDUAL};
    out[3] = (TensorSpec){"attn.proj.bias", C, 0, INIT_ZERO};
    return 4;
}

static size_t attention_act_size(const ModelConfig *cfg, size_t B, size_t T) {
    size_t C = cfg->n_embd, H = cfg->n_head;
    return 2 * (B * T * 3 * C + B * H * T * T + B * T * C);
}

static void attention_forward(const ModelConfig *cfg, const float *params, float *acts,
                              float *out, const float *in, size_t B, size_t T) {
    size_t C = cfg->n_embd, H = cfg->n_head, hs = C / H;
    float scale = 1.0f / sqrtf((float)hs);
    AttnParams p = attn_params(params, C);
    AttnActs a = attn_acts(acts, B, T, C, H);
    matmul_forward(a.qkv, in, p.qkv_w, p.qkv_b, B * T, C, 3 * C);
#pragma omp parallel for schedule(static)
    for (size_t bh = 0; bh < B * H; bh++) {
        size_t b = bh / H, h = bh % H;
        const float *q = a.qkv + b * T * 3 * C + h * hs, *k = q + C, *v = q + 2 * C;
        float *att = a.att + bh * T * T;
        gemm(0, 1, T, T, hs, scale, q, 3 * C, k, 3 * C, 0.0f, att, T);
        for (size_t t = 0; t < T; t++) {
            float *row = att + t * T;
            softmax(row, row, t + 1); /* causal: position t sees 0..t */
            memset(row + t + 1, 0, (T - t - 1) * sizeof(float));
        }
        gemm(0, 0, T, hs, T, 1.0f, att, T, v, 3 * C, 0.0f, a.y + b * T * C + h * hs, C);
    }
    matmul_forward(out, a.y, p.proj_w, p.proj_b, B * T, C, C);
}

static void attention_backward(const ModelConfig *cfg, const float *params, float *dparams,
                               float *acts, const float *in, const float *dout, float *din,
                               size_t B, size_t T) {
    size_t C = cfg->n_embd, H = cfg->n_head, hs = C / H;
    float scale = 1.0f / sqrtf((float)hs);
    AttnParams p = attn_params(params, C);
    AttnParams g = attn_params(dparams, C);
    AttnActs a = attn_acts(acts, B, T, C, H);
    memset(a.dy, 0, B * T * C * sizeof(float));
    matmul_backward(a.dy, (float *)g.proj_w, (float *)g.proj_b, dout, a.y, p.proj_w, B * T, C, C);
#pragma omp parallel for schedule(static)
    for (size_t bh = 0; bh < B * H; bh++) {
        size_t b = bh / H, h = bh % H;
        size_t off = b * T * 3 * C + h * hs;
        const float *q = a.qkv + off, *k = q + C, *v = q + 2 * C;
        float *dq = a.dqkv + off, *dk = dq + C, *dv = dq + 2 * C;
        const float *att = a.att + bh * T * T, *dy = a.dy + b * T * C + h * hs;
        float *datt = a.datt + bh * T * T;
        gemm(0, 1, T, T, hs, 1.0f, dy, C, v, 3 * C, 0.0f, datt, T);   /* dP = dY V^T */
        gemm(1, 0, T, hs, T, 1.0f, att, T, dy, C, 0.0f, dv, 3 * C);   /* dV = P^T dY */
        for (size_t t = 0; t < T; t++) {                              /* softmax backward */
            const float *pr = att + t * T;
            float *dr = datt + t * T, dot = 0.0f;
            for (size_t j = 0; j <= t; j++) dot += pr[j] * dr[j];
            for (size_t j = 0; j <= t; j++) dr[j] = pr[j] * (dr[j] - dot);
            memset(dr + t + 1, 0, (T - t - 1) * sizeof(float));
        }
        gemm(0, 0, T, hs, T, scale, datt, T, k, 3 * C, 0.0f, dq, 3 * C); /* dQ = dS K */
        gemm(1, 0, T, hs, T, scale, datt, T, q, 3 * C, 0.0f, dk, 3 * C); /* dK = dS^T Q */
    }
    matmul_backward(din, (float *)g.qkv_w, (float *)g.qkv_b, a.dqkv, in, p.qkv_w, B * T, C, 3 * C);
}

/* Sampling state: K and V caches (block_size, C) each, then scratch for
 * one position's qkv (3C), attention row (block_size) and y (C). */
static size_t attention_state_size(const ModelConfig *cfg) {
    return 2 * cfg->block_size * cfg->n_embd + 4 * cfg->n_embd + cfg->block_size;
}

static void attention_step(const ModelConfig *cfg, const float *params, float *state,
                           const float *in_t, float *out_t, size_t t) {
    size_t C = cfg->n_embd, H = cfg->n_head, hs = C / H, Tm = cfg->block_size;
    float scale = 1.0f / sqrtf((float)hs);
    AttnParams p = attn_params(params, C);
    float *kc = state, *vc = kc + Tm * C, *qkv = vc + Tm * C, *row = qkv + 3 * C, *y = row + Tm;
    matmul_forward(qkv, in_t, p.qkv_w, p.qkv_b, 1, C, 3 * C);
    memcpy(kc + t * C, qkv + C, C * sizeof(float));
    memcpy(vc + t * C, qkv + 2 * C, C * sizeof(float));
    for (size_t h = 0; h < H; h++) {
        gemm(0, 1, 1, t + 1, hs, scale, qkv + h * hs, C, kc + h * hs, C, 0.0f, row, t + 1);
        softmax(row, row, t + 1);
        gemm(0, 0, 1, hs, t + 1, 1.0f, row, t + 1, vc + h * hs, C, 0.0f, y + h * hs, C);
    }
    matmul_forward(out_t, y, p.proj_w, p.proj_b, 1, C, C);
}

const Mixer attention_mixer = {
    .name = "attention",
    .validate = attention_validate,
    .tensors = attention_tensors,
    .act_size = attention_act_size,
    .forward = attention_forward,
    .backward = attention_backward,
    .state_size = attention_state_size,
    .step = attention_step,
};
