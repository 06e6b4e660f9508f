/* bin/inspect's measurements: one evaluation forward pass, then each layer's
 * attention maps or Grassmann gates, the logit lens, the direct attribution
 * of the last prediction, and induction scores on repeated random tokens. */
#include "inspect/inspect.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/ds.h"
#include "nn/layernorm.h"
#include "nn/ops.h"
#include "runtime/rng.h"
#include "nn/rope.h"

const float *inspect_layer_tensor(const Model *m, size_t l, const char *suffix) {
    char name[TENSOR_NAME_MAX + 32];
    snprintf(name, sizeof name, "h.%zu.%s", l, suffix);
    const ParamTensor *t = model_find_tensor(m, name);
    return t ? m->params + t->offset : NULL;
}

static int is_attention(const Model *m, size_t l) { return strcmp(m->cfg.mixers[l]->name, "attention") == 0; }

/* qkv (T, 3C) of attention layer l from its input x (T, C), q and k rotated
 * as the layer does with rope positions, so that the maps are the model's. */
static void layer_qkv(float *qkv, const Model *m, size_t l, const float *x, size_t T) {
    size_t C = m->cfg.n_embd;
    matmul_forward(qkv, x, inspect_layer_tensor(m, l, "attn.qkv.weight"), inspect_layer_tensor(m, l, "attn.qkv.bias"),
                   T, C, 3 * C);
    if (m->cfg.pos == POS_ROPE) rope_forward(qkv, m->cfg.rope, 1, T, 0, C, C / m->cfg.n_head);
}

/* Direct attribution: what `part` (C) adds to token v's logit at row n,
 * through LN_f linearised at that row (its 1/std frozen, its centring linear). */
static double attribute(const Model *m, const float *part, size_t n, uint32_t v) {
    size_t C = m->cfg.n_embd;
    const float *w = m->params + m->lnf_w, *e = m->params + m->wte + (size_t)v * C;
    double mean = 0.0, s = 0.0;
    for (size_t c = 0; c < C; c++) mean += part[c];
    mean /= (double)C;
    for (size_t c = 0; c < C; c++) s += (double)e[c] * w[c] * (part[c] - mean);
    return s * m->lnf_rstd[n];
}

static void add_part(Inspection *in, const char *name, double value) {
    AttributionPart p;
    snprintf(p.name, sizeof p.name, "%s", name);
    p.value = value;
    arrput(in->parts, p);
}

/* Each head's share of the attention output at row n: proj_w[:, head] y_h,
 * with y_h = sum_j p[n][j] v_j. */
static void head_outputs_attribution(Inspection *in, const Model *m, size_t l, const float *qkv, const float *probs,
                                     size_t T, float *y, float *out) {
    size_t C = m->cfg.n_embd, H = m->cfg.n_head, hs = C / H, n = T - 1;
    const float *proj_w = inspect_layer_tensor(m, l, "attn.proj.weight"), *proj_b = inspect_layer_tensor(m, l, "attn.proj.bias");
    char name[32];
    for (size_t h = 0; h < H; h++) {
        const float *p = probs + (h * T + n) * T;
        for (size_t d = 0; d < hs; d++) {
            double s = 0.0;
            for (size_t j = 0; j <= n; j++) s += (double)p[j] * qkv[j * 3 * C + 2 * C + h * hs + d];
            y[d] = (float)s;
        }
        for (size_t c = 0; c < C; c++) {
            double s = 0.0;
            for (size_t d = 0; d < hs; d++) s += (double)proj_w[c * C + h * hs + d] * y[d];
            out[c] = (float)s;
        }
        snprintf(name, sizeof name, "L%zu H%zu", l, h);
        add_part(in, name, attribute(m, out, n, in->predicted));
    }
    snprintf(name, sizeof name, "L%zu attn bias", l);
    add_part(in, name, attribute(m, proj_b, n, in->predicted));
}

/* The logit lens: every stage's stream through LN_f and the tied head. */
static int logit_lens(Inspection *in, const Model *m, size_t T, Error *err) {
    size_t C = m->cfg.n_embd, V = m->cfg.vocab_size, L = m->cfg.n_layer;
    float *ln = lm_calloc(T * (C + V) + 2 * T, sizeof(float), err);
    in->lens_top = ln ? lm_calloc((L + 1) * T * LENS_TOP, sizeof(uint32_t), err) : NULL;
    in->lens_prob = in->lens_top ? lm_calloc((L + 1) * T * LENS_TOP, sizeof(float), err) : NULL;
    if (!in->lens_prob) {
        free(ln);
        return -1;
    }
    float *logits = ln + T * C, *mean = logits + T * V, *rstd = mean + T;
    for (size_t s = 0; s <= L; s++) {
        const float *h = s < L ? m->la[s].resid : m->resid_out;
        layernorm_forward(ln, mean, rstd, h, m->params + m->lnf_w, m->params + m->lnf_b, T, C);
        matmul_forward(logits, ln, m->params + m->wte, NULL, T, C, V);
        for (size_t t = 0; t < T; t++) {
            float *row = logits + t * V;
            softmax(row, row, V);
            uint32_t *top = in->lens_top + (s * T + t) * LENS_TOP;
            float *pr = in->lens_prob + (s * T + t) * LENS_TOP;
            for (size_t k = 0; k < LENS_TOP; k++) {
                size_t best = 0;
                float bp = -1.0f;
                for (size_t v = 0; v < V; v++) {
                    int taken = 0;
                    for (size_t j = 0; j < k; j++) taken |= top[j] == v;
                    if (!taken && row[v] > bp) bp = row[v], best = v;
                }
                top[k] = (uint32_t)best;
                pr[k] = bp;
            }
        }
    }
    free(ln);
    return 0;
}

int inspect_run(Inspection *in, Model *m, const int32_t *tokens, size_t T, Error *err) {
    memset(in, 0, sizeof *in);
    const ModelConfig *cfg = &m->cfg;
    size_t C = cfg->n_embd, H = cfg->n_head, V = cfg->vocab_size, L = cfg->n_layer;
    if (T == 0 || T > cfg->block_size)
        return err_set(err, "the prompt is %zu tokens; the model takes 1 to %zu", T, cfg->block_size);
    if (model_alloc_acts(m, 1, T, err)) return -1;
    in->T = T;
    in->n_layer = L;
    in->n_head = H;
    in->vocab = V;
    in->tokens = lm_calloc(T, sizeof(int32_t), err);
    float *qkv = in->tokens ? lm_calloc(T * 3 * C + 2 * C, sizeof(float), err) : NULL;
    if (!qkv) goto fail;
    memcpy(in->tokens, tokens, T * sizeof(int32_t));
    model_forward(m, tokens, NULL, 1, T, NULL);
    const float *last = m->logits + (T - 1) * V;
    for (size_t v = 1; v < V; v++) in->predicted = last[v] > last[in->predicted] ? (uint32_t)v : in->predicted;
    in->predicted_logit = last[in->predicted];
    add_part(in, "embed", attribute(m, m->la[0].resid + (T - 1) * C, T - 1, in->predicted));
    for (size_t l = 0; l < L; l++) {
        LayerInspection *li = &in->layer[l];
        const float *x = m->la[l].ln1;
        char name[32];
        li->attention = is_attention(m, l);
        if (li->attention) {
            li->probs = lm_calloc(H * T * T, sizeof(float), err);
            li->heads = li->probs ? lm_calloc(H, sizeof(HeadStats), err) : NULL;
            if (!li->heads) goto fail;
            layer_qkv(qkv, m, l, x, T);
            for (size_t h = 0; h < H; h++) {
                attention_probs(li->probs + h * T * T, qkv, T, C, H, h);
                attention_map_stats(&li->heads[h], li->probs + h * T * T, T);
                li->heads[h].similarity_corr = similarity_logit_corr(x, qkv, T, C, H, h);
                bilinear_spectrum(&li->heads[h], inspect_layer_tensor(m, l, "attn.qkv.weight"), C, H, h);
            }
        } else if (inspect_grassmann_layer(li, m, l, x, T, err)) {
            goto fail;
        }
        snprintf(name, sizeof name, "L%zu %s", l, li->attention ? "attn" : "grassmann");
        add_part(in, name, attribute(m, m->la[l].mix + (T - 1) * C, T - 1, in->predicted));
        if (li->attention) head_outputs_attribution(in, m, l, qkv, li->probs, T, qkv + T * 3 * C, qkv + T * 3 * C + C);
        snprintf(name, sizeof name, "L%zu mlp", l);
        add_part(in, name, attribute(m, m->la[l].mlp + (T - 1) * C, T - 1, in->predicted));
    }
    {
        const float *e = m->params + m->wte + (size_t)in->predicted * C, *b = m->params + m->lnf_b;
        double s = 0.0;
        for (size_t c = 0; c < C; c++) s += (double)e[c] * b[c];
        add_part(in, "ln_f bias", s);
    }
    if (logit_lens(in, m, T, err)) goto fail;
    free(qkv);
    return 0;
fail:
    free(qkv);
    inspect_free(in);
    return -1;
}

void inspect_free(Inspection *in) {
    for (size_t l = 0; l < MAX_LAYERS; l++) {
        free(in->layer[l].probs);
        free(in->layer[l].heads);
        free(in->layer[l].gate_mean);
        free(in->layer[l].offset_norm);
    }
    free(in->tokens);
    free(in->lens_top);
    free(in->lens_prob);
    arrfree(in->parts);
    memset(in, 0, sizeof *in);
}

/* ---- induction heads ------------------------------------------------------ */

int inspect_induction_on(Induction *out, Model *m, const int32_t *seqs, size_t n, size_t n_seq, Error *err) {
    memset(out, 0, sizeof *out);
    const ModelConfig *cfg = &m->cfg;
    size_t C = cfg->n_embd, H = cfg->n_head, L = cfg->n_layer, T = 2 * n;
    if (n < 2 || T > cfg->block_size)
        return err_set(err, "induction sequences of %zu tokens repeated twice do not fit block_size %zu (need 2 to %zu)",
                       n, cfg->block_size, cfg->block_size / 2);
    if (model_alloc_acts(m, n_seq, T, err)) return -1;
    int32_t *tokens = lm_calloc(2 * n_seq * T, sizeof(int32_t), err), *targets = tokens ? tokens + n_seq * T : NULL;
    float *qkv = tokens ? lm_calloc(T * 3 * C + T * T, sizeof(float), err) : NULL;
    out->score = qkv ? lm_calloc(L * H, sizeof(double), err) : NULL;
    if (!out->score) {
        free(tokens);
        free(qkv);
        return -1;
    }
    out->n = n;
    out->n_seq = n_seq;
    out->n_layer = L;
    out->n_head = H;
    for (size_t b = 0; b < n_seq; b++)
        for (size_t t = 0; t < T; t++) {
            tokens[b * T + t] = seqs[b * n + t % n];
            targets[b * T + t] = t + 1 < T ? seqs[b * n + (t + 1) % n] : 0; /* the last target is not scored */
        }
    model_forward(m, tokens, targets, n_seq, T, NULL);
    double first = 0.0, second = 0.0;
    for (size_t b = 0; b < n_seq; b++)
        for (size_t t = 0; t + 1 < T; t++) *(t + 1 < n ? &first : &second) += m->losses[b * T + t];
    out->loss_first = first / (double)(n_seq * (n - 1));
    out->loss_second = second / (double)(n_seq * n);
    for (size_t i = n; i < T; i++) out->uniform += 1.0 / (double)(i + 1) / (double)n;
    float *probs = qkv + T * 3 * C;
    for (size_t l = 0; l < L; l++) {
        if (!is_attention(m, l)) {
            for (size_t h = 0; h < H; h++) out->score[l * H + h] = NAN;
            continue;
        }
        for (size_t b = 0; b < n_seq; b++) {
            layer_qkv(qkv, m, l, m->la[l].ln1 + b * T * C, T);
            for (size_t h = 0; h < H; h++) {
                attention_probs(probs, qkv, T, C, H, h);
                double s = 0.0;
                for (size_t i = n; i < T; i++) s += probs[i * T + (i - n + 1)];
                out->score[l * H + h] += s / (double)n / (double)n_seq;
            }
        }
    }
    free(tokens);
    free(qkv);
    return 0;
}

int inspect_induction(Induction *out, Model *m, size_t n, size_t n_seq, uint64_t seed, Error *err) {
    size_t V = m->cfg.vocab_size;
    memset(out, 0, sizeof *out);
    if (V < 2) return err_set(err, "a vocabulary of %zu tokens has no random sequences", V);
    if (n < 2 || 2 * n > m->cfg.block_size)
        return err_set(err, "induction sequences of %zu tokens repeated twice do not fit block_size %zu (need 2 to %zu)",
                       n, m->cfg.block_size, m->cfg.block_size / 2);
    int32_t *seqs = lm_calloc(n_seq * n + V, sizeof(int32_t), err), *pool = seqs ? seqs + n_seq * n : NULL;
    if (!seqs) return -1;
    Rng rng;
    rng_seed(&rng, seed);
    /* ids 1..V-1 (0 is the char tokenizer's unknown token); without repeats
     * when they suffice, so that each token's earlier occurrence is unique. */
    for (size_t b = 0; b < n_seq; b++) {
        for (size_t v = 1; v < V; v++) pool[v - 1] = (int32_t)v;
        for (size_t i = 0; i < n; i++) {
            if (n < V) {
                size_t j = i + (size_t)rng_below(&rng, V - 1 - i);
                int32_t tmp = pool[i];
                pool[i] = pool[j];
                pool[j] = tmp;
                seqs[b * n + i] = pool[i];
            } else {
                seqs[b * n + i] = (int32_t)(1 + rng_below(&rng, V - 1));
            }
        }
    }
    int rc = inspect_induction_on(out, m, seqs, n, n_seq, err);
    free(seqs);
    return rc;
}

void induction_free(Induction *ind) {
    free(ind->score);
    memset(ind, 0, sizeof *ind);
}
