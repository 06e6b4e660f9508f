/* An attention layer seen from outside (its Mixer's inspect hook, for
 * bin/inspect): the maps recomputed from the layer's q and k, their
 * statistics, the geometry of the query-key projections, and each head's
 * share of the output. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lm/gemm.h"
#include "mixers/attention.h"
#include "lm/matmul.h"
#include "lm/ops.h"
#include "nn/rope.h"
#include "nn/svd.h"

/* The scaled logits q_i.k_j / sqrt(d_head) of head h, all T x T of them
 * (the map uses j <= i), in one product through the tiled gemm. */
static void attention_scores(float *scores, const float *qkv, size_t T, size_t C, size_t H, size_t h) {
    size_t hs = C / H;
    gemm(0, 1, T, T, hs, 1.0f / sqrtf((float)hs), qkv + h * hs, 3 * C, qkv + C + h * hs, 3 * C, 0.0f, scores, T);
}

/* Scores (T, T) into a causal map in place: row i the softmax of columns
 * 0..i (with a window, i - window + 1 .. i; sum in double), zero elsewhere. */
static void causal_softmax(float *p, size_t T, size_t window) {
#pragma omp parallel for schedule(dynamic, 16)
    for (size_t i = 0; i < T; i++) {
        size_t j0 = window && i + 1 > window ? i + 1 - window : 0;
        float *row = p + i * T, mx = row[j0];
        for (size_t j = j0 + 1; j <= i; j++) mx = row[j] > mx ? row[j] : mx;
        double sum = 0.0;
#pragma omp simd reduction(+ : sum)
        for (size_t j = j0; j <= i; j++) {
            row[j] = fast_expf(row[j] - mx);
            sum += row[j];
        }
        float inv = (float)(1.0 / sum);
        for (size_t j = j0; j <= i; j++) row[j] *= inv;
        for (size_t j = 0; j < j0; j++) row[j] = 0.0f;
        for (size_t j = i + 1; j < T; j++) row[j] = 0.0f;
    }
}

void attention_probs(float *probs, const float *qkv, size_t T, size_t C, size_t H, size_t h, size_t window) {
    attention_scores(probs, qkv, T, C, H, h);
    causal_softmax(probs, T, window);
}

int input_cosines(float *cos, const float *x, size_t T, size_t C, Error *err) {
    float *unit = lm_calloc(T * C, sizeof(float), err);
    if (!unit) return -1;
    for (size_t i = 0; i < T; i++) {
        double s = 0.0;
        for (size_t c = 0; c < C; c++) s += (double)x[i * C + c] * x[i * C + c];
        float inv = s > 0.0 ? (float)(1.0 / sqrt(s)) : 0.0f; /* a zero row: cosine 0 */
        for (size_t c = 0; c < C; c++) unit[i * C + c] = x[i * C + c] * inv;
    }
    gemm(0, 1, T, T, C, 1.0f, unit, C, unit, C, 0.0f, cos, T);
    free(unit);
    return 0;
}

double similarity_logit_corr(const float *cos, const float *scores, size_t T) {
    /* Pearson's r from running sums, centred on the first pair to keep the
     * sums small (cancellation in sum x^2 - n mean^2). */
    double n = 0, sa = 0, sb = 0, saa = 0, sbb = 0, sab = 0, a0 = cos[0], b0 = scores[0];
    for (size_t i = 0; i < T; i++)
        for (size_t j = 0; j <= i; j++) {
            double a = (double)cos[i * T + j] - a0, b = (double)scores[i * T + j] - b0;
            n += 1;
            sa += a;
            sb += b;
            saa += a * a;
            sbb += b * b;
            sab += a * b;
        }
    double va = saa - sa * sa / n, vb = sbb - sb * sb / n, cov = sab - sa * sb / n;
    if (!(va > 1e-12 * (saa + 1e-300)) || !(vb > 1e-12 * (sbb + 1e-300))) return NAN; /* a constant: undefined */
    return cov / sqrt(va * vb);
}

/* R (hs x hs, upper triangular) of W^T = Q R by modified Gram-Schmidt over
 * the hs rows of w (each of C); a dependent row leaves its q zero and its row
 * of R zero. Q: scratch of hs x C. */
static void gram_schmidt_r(double *R, double *Q, const float *w, size_t C, size_t hs) {
    for (size_t j = 0; j < hs; j++) {
        double *v = Q + j * C, norm0 = 0.0, norm = 0.0;
        for (size_t c = 0; c < C; c++) v[c] = w[j * C + c], norm0 += v[c] * v[c];
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
}

/* The nonzero singular values of M = W_q^T W_k (hs of them) from an
 * hs x hs matrix rather than the C x C one: with W_q^T = Q_q R_q and
 * W_k^T = Q_k R_k, M = Q_q (R_q R_k^T) Q_k^T, and the Q only rotate (a zero
 * column of Q meets a zero row of R). qk_cos (hs, or NULL): the cosines of
 * the principal angles between the query and key spaces (the row spaces of
 * W_q and W_k), the singular values of Q_q^T Q_k: 1 where a direction of the
 * input is both read as query and as key, 0 where the two are orthogonal. */
static void form_singular_values(double *sv, double *qk_cos, const float *wq, const float *wk, size_t C, size_t hs) {
    double *Q = calloc(2 * hs * C, sizeof *Q), *R = calloc(3 * hs * hs, sizeof *R);
    if (!Q || !R) {
        for (size_t i = 0; i < hs; i++) sv[i] = NAN;
        for (size_t i = 0; qk_cos && i < hs; i++) qk_cos[i] = NAN;
        free(Q);
        free(R);
        return;
    }
    double *Rq = R, *Rk = R + hs * hs, *Y = R + 2 * hs * hs, *Qq = Q, *Qk = Q + hs * C;
    gram_schmidt_r(Rq, Qq, wq, C, hs);
    gram_schmidt_r(Rk, Qk, wk, C, hs);
    for (size_t a = 0; a < hs; a++) /* Y = R_q R_k^T, both upper triangular */
        for (size_t b = 0; b < hs; b++) {
            double y = 0.0;
            for (size_t d = a > b ? a : b; d < hs; d++) y += Rq[a * hs + d] * Rk[b * hs + d];
            Y[a * hs + b] = y;
        }
    singular_values(Y, hs, hs, sv);
    if (qk_cos) {
        for (size_t a = 0; a < hs; a++) /* Y = Q_q^T Q_k (rows of Q are the bases' vectors) */
            for (size_t b = 0; b < hs; b++) {
                double y = 0.0;
                for (size_t c = 0; c < C; c++) y += Qq[a * C + c] * Qk[b * C + c];
                Y[a * hs + b] = y;
            }
        singular_values(Y, hs, hs, qk_cos);
        for (size_t i = 0; i < hs; i++) qk_cos[i] = qk_cos[i] > 1.0 ? 1.0 : qk_cos[i]; /* round-off */
    }
    free(Q);
    free(R);
}

void bilinear_spectrum(FormStats *s, double *sv_out, double *qk_cos, const float *qkv_w, size_t C, size_t H,
                       size_t h) {
    size_t hs = C / H;
    const float *wq = qkv_w + h * hs * C, *wk = qkv_w + (C + h * hs) * C;
    double *sv = sv_out ? sv_out : malloc(hs * sizeof *sv);
    if (!sv) {
        s->sv_max = s->sv_min = s->effective_rank = s->antisym_share = s->identity_dist = NAN;
        return;
    }
    /* logit = x^T M x' with M = W_q^T W_k (C x C, rank <= d_head): the form
     * that compares two positions' inputs. Its norms come from d_head x d_head
     * products of the head's rows, never forming M (C^2 d_head work, 37M
     * multiply-adds a head at GPT-2's width): with Gq = W_q W_q^T,
     * Gk = W_k W_k^T and X = W_q W_k^T, |M|^2 = <Gq, Gk>, tr(M M) = tr(X X)
     * and tr M = tr X; the antisymmetric part has |(M - M^T)/2|^2 =
     * (|M|^2 - tr(M M)) / 2, and |M - (tr M / C) I|^2 = |M|^2 - (tr M)^2 / C. */
    double fro = 0.0, mm = 0.0, trace = 0.0;
    for (size_t d = 0; d < hs; d++)
        for (size_t e = 0; e < hs; e++) {
            double gq = 0.0, gk = 0.0, xde = 0.0, xed = 0.0;
            for (size_t c = 0; c < C; c++) {
                gq += (double)wq[d * C + c] * wq[e * C + c];
                gk += (double)wk[d * C + c] * wk[e * C + c];
                xde += (double)wq[d * C + c] * wk[e * C + c];
                xed += (double)wq[e * C + c] * wk[d * C + c];
            }
            fro += gq * gk;
            mm += xde * xed;
            if (d == e) trace += xde;
        }
    double anti = 0.5 * (fro - mm), off = fro - trace * trace / (double)C;
    form_singular_values(sv, qk_cos, wq, wk, C, hs);
    double total = 0.0, ent = 0.0;
    for (size_t i = 0; i < hs; i++) total += sv[i];
    for (size_t i = 0; i < hs && total > 0; i++)
        if (sv[i] > 0) ent -= sv[i] / total * log(sv[i] / total);
    s->sv_max = sv[0];
    s->sv_min = sv[hs - 1];
    s->effective_rank = total > 0 ? exp(ent) : 0.0;
    s->antisym_share = fro > 0 ? (anti > 0 ? anti : 0.0) / fro : NAN;
    s->identity_dist = fro > 0 ? sqrt(off > 0 ? off / fro : 0.0) : NAN;
    if (!sv_out) free(sv);
}

/* Each head's share of the output at the last row n: proj_w[:, head] y_h,
 * with y_h = sum_j p[n][j] v_j; then the output bias. y: room for hs. */
static void head_shares(LayerInspection *L, AttnParams p, const float *probs, const float *qkv, size_t T, size_t C,
                       size_t H, float *y) {
    size_t hs = C / H, n = T - 1;
    for (size_t h = 0; h < H; h++) {
        const float *pr = probs + (h * T + n) * T;
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

/* The exhibits beside the maps: each head's form statistics, its singular
 * values and its query-key angles (tables, a row per head). */
static const char *const form_columns[] = {"similarity_logit_corr", "sv_max", "sv_min", "effective_rank",
                                           "antisymmetric_share", "identity_distance"};
#define FORM_COLUMNS (sizeof form_columns / sizeof form_columns[0])

static int form_exhibits(LayerInspection *L, const MixerSpec *spec, AttnParams p, const double *corr, Error *err) {
    size_t C = spec->n_embd, H = spec->n_head, hs = C / H;
    char caption[EXHIBIT_CAPTION];
    snprintf(caption, sizeof caption,
             "each head's query-key form W_q^T W_k: r(cos, logit) over causal pairs, singular values, effective "
             "rank, antisymmetric share, distance from a multiple of I%s",
             spec->rope ? " (rope positions: the maps include the rotation, the form does not)" : "");
    Exhibit *form = exhibit_add(L, EXHIBIT_TABLE, "qk_form", caption, H, FORM_COLUMNS, form_columns, err);
    Exhibit *sv = form ? exhibit_add(L, EXHIBIT_TABLE, "singular_values",
                                     "singular values of each head's W_q^T W_k, largest first", H, hs, NULL, err)
                       : NULL;
    Exhibit *ang = sv ? exhibit_add(L, EXHIBIT_TABLE, "qk_angles",
                                    "principal angles between each head's query and key spaces, degrees, smallest "
                                    "first (0: a direction read as both, 90: apart)",
                                    H, hs, NULL, err)
                      : NULL;
    double *svd = ang ? lm_calloc(2 * H * hs, sizeof(double), err) : NULL, *cosd = svd ? svd + H * hs : NULL;
    FormStats *st = svd ? lm_calloc(H, sizeof(FormStats), err) : NULL;
    if (!st) {
        free(svd);
        return -1;
    }
    sv->lo = ang->lo = 0.0f;
    ang->hi = 90.0f;
    exhibit_name_rows(form, "H");
    exhibit_name_rows(sv, "H");
    exhibit_name_rows(ang, "H");
    /* The weights' geometry, a head per thread: each is serial and alone. */
#pragma omp parallel for schedule(dynamic, 1)
    for (size_t h = 0; h < H; h++) bilinear_spectrum(&st[h], svd + h * hs, cosd + h * hs, p.qkv_w, C, H, h);
    for (size_t h = 0; h < H; h++) {
        const double row[FORM_COLUMNS] = {corr[h], st[h].sv_max, st[h].sv_min, st[h].effective_rank,
                                          st[h].antisym_share, st[h].identity_dist};
        for (size_t k = 0; k < FORM_COLUMNS; k++) form->values[h * FORM_COLUMNS + k] = (float)row[k];
        for (size_t i = 0; i < hs; i++) {
            sv->values[h * hs + i] = (float)svd[h * hs + i];
            double c = cosd[h * hs + i];
            ang->values[h * hs + i] = isnan(c) ? NAN : (float)(acos(c < 1.0 ? c : 1.0) * 180.0 / M_PI);
        }
    }
    free(svd);
    free(st);
    return 0;
}

int attention_inspect(const MixerSpec *spec, const MixerRuntime *rt, const float *params, const float *x, size_t T,
                      MixerInspectWhat what, LayerInspection *L, Error *err) {
    size_t C = spec->n_embd, H = spec->n_head, hs = C / H;
    int all = what == MIXER_INSPECT_ALL;
    AttnParams p = attn_params(params, spec);
    L->label = "attn";
    Exhibit *maps = exhibit_add(L, EXHIBIT_MAPS, "attn", "attention weight (rows: query position, columns: key position)",
                                H, T, NULL, err);
    if (!maps) return -1;
    maps->lo = 0.0f;
    maps->hi = 1.0f;
    float *qkv = lm_calloc(T * 3 * C + hs, sizeof(float), err); /* then y of one head */
    float *cos = qkv && all ? lm_calloc(T * T, sizeof(float), err) : NULL;
    double *corr = cos ? lm_calloc(H, sizeof(double), err) : NULL;
    if (all && corr) {
        L->part_name = lm_calloc(H + 1, sizeof *L->part_name, err);
        L->part_out = L->part_name ? lm_calloc((H + 1) * C, sizeof(float), err) : NULL;
    }
    if (!qkv || (all && !L->part_out) || (all && input_cosines(cos, x, T, C, err))) {
        free(qkv);
        free(cos);
        free(corr);
        return -1;
    }
    /* q and k as the layer has them, rotated by position with rope, normalised with qk-norm. */
    matmul_forward(NULL, qkv, x, p.qkv_w, p.qkv_b, T, C, 3 * C);
    if (spec->rope) rope_forward(qkv, rt->rope, 1, T, 0, C, hs);
    attn_qk_norm(spec, qkv, NULL, T);
    for (size_t h = 0; h < H; h++) {
        float *map = maps->values + h * T * T;
        attention_scores(map, qkv, T, C, H, h);
        if (all) corr[h] = similarity_logit_corr(cos, map, T);
        causal_softmax(map, T, attention_window(spec));
    }
    int rc = 0;
    if (all) {
        L->n_parts = H + 1;
        head_shares(L, p, maps->values, qkv, T, C, H, qkv + T * 3 * C);
        rc = form_exhibits(L, spec, p, corr, err);
    }
    free(qkv);
    free(cos);
    free(corr);
    return rc;
}
