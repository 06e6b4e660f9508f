/* An attention layer seen from outside (its Mixer's inspect hook, for
 * bin/inspect): the maps recomputed from the layer's q and k, their
 * statistics, the geometry of the query-key projections, and each head's
 * share of the output. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mixers/attention.h"
#include "nn/ops.h"
#include "nn/rope.h"
#include "nn/svd.h"

void attention_probs(float *probs, const float *qkv, size_t T, size_t C, size_t H, size_t h) {
    size_t hs = C / H;
    double scale = 1.0 / sqrt((double)hs);
    double *row = malloc(T * sizeof *row);
    if (!row) { /* out of memory: a map of NaN says so rather than a crash */
        for (size_t i = 0; i < T * T; i++) probs[i] = NAN;
        return;
    }
    for (size_t i = 0; i < T; i++) {
        const float *q = qkv + i * 3 * C + h * hs;
        double mx = -INFINITY, sum = 0.0;
        for (size_t j = 0; j <= i; j++) {
            const float *k = qkv + j * 3 * C + C + h * hs;
            double s = 0.0;
            for (size_t d = 0; d < hs; d++) s += (double)q[d] * k[d];
            row[j] = s * scale;
            mx = row[j] > mx ? row[j] : mx;
        }
        for (size_t j = 0; j <= i; j++) sum += (row[j] = exp(row[j] - mx));
        float *p = probs + i * T;
        for (size_t j = 0; j < T; j++) p[j] = j <= i ? (float)(row[j] / sum) : 0.0f;
    }
    free(row);
}

void attention_map_stats(HeadStats *s, const float *probs, size_t T) {
    double ent = 0.0, diag = 0.0, prev = 0.0;
    for (size_t i = 0; i < T; i++) {
        const float *p = probs + i * T;
        for (size_t j = 0; j <= i; j++)
            if (p[j] > 0.0f) ent -= (double)p[j] * log((double)p[j]);
        diag += p[i];
        if (i > 0) prev += p[i - 1];
    }
    s->entropy = ent / (double)T;
    s->diagonal = diag / (double)T;
    s->previous = T > 1 ? prev / (double)(T - 1) : NAN;
}

double similarity_logit_corr(const float *x, const float *qkv, size_t T, size_t C, size_t H, size_t h) {
    size_t hs = C / H;
    double scale = 1.0 / sqrt((double)hs);
    double *norm = malloc(T * sizeof *norm);
    if (!norm) return NAN;
    for (size_t i = 0; i < T; i++) {
        double s = 0.0;
        for (size_t c = 0; c < C; c++) s += (double)x[i * C + c] * x[i * C + c];
        norm[i] = sqrt(s);
    }
    /* Pearson's r from running sums, centred on the first pair to keep the
     * sums small (cancellation in sum x^2 - n mean^2). */
    double n = 0, sa = 0, sb = 0, saa = 0, sbb = 0, sab = 0, a0 = 0, b0 = 0;
    for (size_t i = 0; i < T; i++)
        for (size_t j = 0; j <= i; j++) {
            double dot = 0.0, qk = 0.0;
            for (size_t c = 0; c < C; c++) dot += (double)x[i * C + c] * x[j * C + c];
            const float *q = qkv + i * 3 * C + h * hs, *k = qkv + j * 3 * C + C + h * hs;
            for (size_t d = 0; d < hs; d++) qk += (double)q[d] * k[d];
            double a = norm[i] > 0 && norm[j] > 0 ? dot / (norm[i] * norm[j]) : 0.0, b = qk * scale;
            if (n == 0) a0 = a, b0 = b;
            a -= a0;
            b -= b0;
            n += 1;
            sa += a;
            sb += b;
            saa += a * a;
            sbb += b * b;
            sab += a * b;
        }
    free(norm);
    double va = saa - sa * sa / n, vb = sbb - sb * sb / n, cov = sab - sa * sb / n;
    if (!(va > 1e-12 * (saa + 1e-300)) || !(vb > 1e-12 * (sbb + 1e-300))) return NAN; /* a constant: undefined */
    return cov / sqrt(va * vb);
}

/* The nonzero singular values of M = W_q^T W_k (hs of them) from a C x hs
 * matrix rather than the C x C one: with W_k^T = Q R (modified Gram-Schmidt;
 * a dependent column leaves q_j = 0 and row j of R zero),
 * M = (W_q^T R^T) Q^T, and Q^T only rotates. */
static void form_singular_values(double *sv, const float *wq, const float *wk, size_t C, size_t hs) {
    double *Q = calloc(hs * C, sizeof *Q), *R = calloc(hs * hs, sizeof *R), *X = calloc(C * hs, sizeof *X);
    if (!Q || !R || !X) {
        for (size_t i = 0; i < hs; i++) sv[i] = NAN;
        free(Q);
        free(R);
        free(X);
        return;
    }
    for (size_t j = 0; j < hs; j++) {
        double *v = Q + j * C, norm0 = 0.0, norm = 0.0;
        for (size_t c = 0; c < C; c++) v[c] = wk[j * C + c], norm0 += v[c] * v[c];
        for (size_t i = 0; i < j; i++) {
            double r = 0.0;
            for (size_t c = 0; c < C; c++) r += Q[i * C + c] * v[c];
            R[i * hs + j] = r;
            for (size_t c = 0; c < C; c++) v[c] -= r * Q[i * C + c];
        }
        for (size_t c = 0; c < C; c++) norm += v[c] * v[c];
        norm = sqrt(norm);
        if (norm > 1e-12 * sqrt(norm0) && norm > 0.0) {
            R[j * hs + j] = norm;
            for (size_t c = 0; c < C; c++) v[c] /= norm;
        } else {
            memset(v, 0, C * sizeof *v);
        }
    }
    for (size_t a = 0; a < C; a++) /* X = W_q^T R^T: X[a][j] = sum_d W_q[d][a] R[j][d] */
        for (size_t j = 0; j < hs; j++) {
            double x = 0.0;
            for (size_t d = j; d < hs; d++) x += (double)wq[d * C + a] * R[j * hs + d];
            X[a * hs + j] = x;
        }
    singular_values(X, C, hs, sv);
    free(Q);
    free(R);
    free(X);
}

void bilinear_spectrum(HeadStats *s, const float *qkv_w, size_t C, size_t H, size_t h) {
    size_t hs = C / H;
    const float *wq = qkv_w + h * hs * C, *wk = qkv_w + (C + h * hs) * C;
    double *M = calloc(C * C, sizeof *M), *sv = malloc(hs * sizeof *sv);
    if (!M || !sv) {
        s->sv_max = s->sv_min = s->effective_rank = s->antisym_share = s->identity_dist = NAN;
        free(M);
        free(sv);
        return;
    }
    /* logit = x^T M x' with M = W_q^T W_k (C x C): the form that compares two
     * positions' inputs; its rank is at most d_head. */
    for (size_t d = 0; d < hs; d++)
        for (size_t a = 0; a < C; a++) {
            double qa = wq[d * C + a];
            for (size_t b = 0; b < C; b++) M[a * C + b] += qa * wk[d * C + b];
        }
    double fro = 0.0, anti = 0.0, trace = 0.0;
    for (size_t a = 0; a < C; a++) {
        trace += M[a * C + a];
        for (size_t b = 0; b < C; b++) {
            double x = M[a * C + b], y = 0.5 * (x - M[b * C + a]);
            fro += x * x;
            anti += y * y;
        }
    }
    double off = 0.0, mu = trace / (double)C;
    for (size_t a = 0; a < C; a++)
        for (size_t b = 0; b < C; b++) {
            double y = M[a * C + b] - (a == b ? mu : 0.0);
            off += y * y;
        }
    form_singular_values(sv, wq, wk, C, hs);
    double total = 0.0, ent = 0.0;
    for (size_t i = 0; i < hs; i++) total += sv[i];
    for (size_t i = 0; i < hs && total > 0; i++)
        if (sv[i] > 0) ent -= sv[i] / total * log(sv[i] / total);
    s->sv_max = sv[0];
    s->sv_min = sv[hs - 1];
    s->effective_rank = total > 0 ? exp(ent) : 0.0;
    s->antisym_share = fro > 0 ? anti / fro : NAN;
    s->identity_dist = fro > 0 ? sqrt(off / fro) : NAN;
    free(M);
    free(sv);
}

/* Each head's share of the output at the last row n: proj_w[:, head] y_h,
 * with y_h = sum_j p[n][j] v_j; then the output bias. y: room for hs. */
static void head_parts(LayerInspection *L, AttnParams p, const float *qkv, size_t T, size_t C, size_t H, float *y) {
    size_t hs = C / H, n = T - 1;
    for (size_t h = 0; h < H; h++) {
        const float *pr = L->probs + (h * T + n) * T;
        float *out = L->part_out + h * C;
        for (size_t d = 0; d < hs; d++) {
            double s = 0.0;
            for (size_t j = 0; j <= n; j++) s += (double)pr[j] * qkv[j * 3 * C + 2 * C + h * hs + d];
            y[d] = (float)s;
        }
        for (size_t c = 0; c < C; c++) {
            double s = 0.0;
            for (size_t d = 0; d < hs; d++) s += (double)p.proj_w[c * C + h * hs + d] * y[d];
            out[c] = (float)s;
        }
        snprintf(L->part_name[h], sizeof L->part_name[h], "H%zu", h);
    }
    memcpy(L->part_out + H * C, p.proj_b, C * sizeof(float));
    snprintf(L->part_name[H], sizeof L->part_name[H], "attn bias");
}

int attention_inspect(const ModelConfig *cfg, const float *params, const float *x, size_t T,
                      MixerInspectWhat what, LayerInspection *L, Error *err) {
    size_t C = cfg->n_embd, H = cfg->n_head, hs = C / H;
    int all = what == MIXER_INSPECT_ALL;
    AttnParams p = attn_params(params, C);
    L->label = "attn";
    float *qkv = lm_calloc(T * 3 * C + hs, sizeof(float), err); /* then y of one head */
    L->probs = qkv ? lm_calloc(H * T * T, sizeof(float), err) : NULL;
    if (all && L->probs) {
        L->heads = lm_calloc(H, sizeof(HeadStats), err);
        L->part_name = L->heads ? lm_calloc(H + 1, sizeof *L->part_name, err) : NULL;
        L->part_out = L->part_name ? lm_calloc((H + 1) * C, sizeof(float), err) : NULL;
    }
    if (!L->probs || (all && !L->part_out)) {
        free(qkv);
        return -1;
    }
    /* q and k as the layer has them, rotated by position with rope. */
    matmul_forward(NULL, qkv, x, p.qkv_w, p.qkv_b, T, C, 3 * C);
    if (cfg->pos == POS_ROPE) rope_forward(qkv, cfg->rope, 1, T, 0, C, hs);
    for (size_t h = 0; h < H; h++) {
        attention_probs(L->probs + h * T * T, qkv, T, C, H, h);
        if (!all) continue;
        attention_map_stats(&L->heads[h], L->probs + h * T * T, T);
        L->heads[h].similarity_corr = similarity_logit_corr(x, qkv, T, C, H, h);
        bilinear_spectrum(&L->heads[h], p.qkv_w, C, H, h);
    }
    if (all) {
        L->n_parts = H + 1;
        head_parts(L, p, qkv, T, C, H, qkv + T * 3 * C);
    }
    free(qkv);
    return 0;
}
