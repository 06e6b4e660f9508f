/* bin/inspect's measurements: one evaluation forward pass, then what each
 * layer's mixer shows (its inspect hook's exhibits), the statistics of
 * every map, the logit lens, the direct attribution of the last
 * prediction, and induction scores on repeated random tokens. No mixer is
 * named here: a layer is what its hook shows. */
#include "lm/inspect.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/layernorm.h"
#include "lm/matmul.h"
#include "lm/ops.h"
#include "lm/ds.h"
#include "lm/rng.h"

/* Asks layer l's mixer about x (T, C), its input (model_mixer_input);
 * nothing (0) for a mixer without an inspect hook. */
static int ask_mixer(LayerInspection *L, const Model *m, size_t l, const float *x, size_t T, MixerInspectWhat what,
                     Error *err) {
    const Mixer *mx = m->mixers[l];
    MixerSpec spec = model_mixer_spec(&m->cfg, l);
    MixerRuntime rt = {m->weights.rope_table, m->weights.bf16, NULL}; /* inspection runs forward alone, in fp32 or bf16 */
    memset(L, 0, sizeof *L);
    int rc = mx->inspect ? mx->inspect(&spec, &rt, m->weights.params + m->weights.layer[l].mixer, x, T, what, L, err) : 0;
    L->mixer = mx->name;
    if (!L->label) L->label = mx->name;
    return rc;
}

void map_stats(MapStats *s, const float *map, size_t T) {
    double ent = 0.0, diag = 0.0, prev = 0.0;
    for (size_t i = 0; i < T; i++) {
        const float *p = map + i * T;
        for (size_t j = 0; j <= i; j++)
            if (p[j] > 0.0f) ent -= (double)p[j] * log((double)p[j]);
        diag += p[i];
        if (i > 0) prev += p[i - 1];
    }
    s->entropy = ent / (double)T;
    s->diagonal = diag / (double)T;
    s->previous = T > 1 ? prev / (double)(T - 1) : NAN;
}

/* The maps of layer l (its first maps exhibit), and their statistics. */
static int layer_map_stats(Inspection *in, size_t l, Error *err) {
    const Exhibit *e = layer_exhibit_of(&in->layer[l], EXHIBIT_MAPS);
    if (!e) return 0;
    if (e->rows != in->n_head || e->cols != in->T)
        return err_set(err, "layer %zu's maps '%s' are %zu of %zu x %zu: a map per head (%zu) of the prompt's %zu tokens",
                       l, e->name, e->rows, e->cols, e->cols, in->n_head, in->T);
    in->maps[l] = e;
    if (!(in->map_stats[l] = lm_calloc(e->rows, sizeof(MapStats), err))) return -1;
    for (size_t h = 0; h < e->rows; h++) map_stats(&in->map_stats[l][h], e->values + h * in->T * in->T, in->T);
    return 0;
}

/* Direct attribution: what `part` (C) adds to token v's logit (before any
 * soft cap) at row n, through LN_f linearised at that row (its 1/std
 * frozen, its centring linear; RMSNorm does not centre) and the head. */
static double attribute(const Model *m, const float *part, size_t n, uint32_t v) {
    size_t C = m->cfg.n_embd;
    const float *w = m->weights.params + m->weights.lnf_w, *e = m->weights.params + m->weights.head + (size_t)v * C;
    double mean = 0.0, s = 0.0;
    for (size_t c = 0; c < C && m->cfg.norm_type == NORM_TYPE_LAYERNORM; c++) mean += part[c];
    mean /= (double)C;
    for (size_t c = 0; c < C; c++) s += (double)e[c] * w[c] * (part[c] - mean);
    return s * m->run.lnf_rstd[n];
}

static void add_part(Inspection *in, const char *name, double value, int share) {
    AttributionPart p;
    snprintf(p.name, sizeof p.name, "%s", name);
    p.value = value;
    p.share = share;
    arrput(in->parts, p);
}

/* The k largest of z (V) in decreasing order (the first index among equals)
 * and their softmax probabilities, in one pass over the row. */
static void top_tokens(const float *z, size_t V, size_t k, uint32_t *ids, float *probs) {
    float best[LENS_TOP], mx = z[0];
    size_t n = 0;
    for (size_t v = 0; v < V; v++) {
        mx = z[v] > mx ? z[v] : mx;
        if (n == k && !(z[v] > best[k - 1])) continue;
        size_t i = n < k ? n++ : k - 1; /* the slot it takes, then moved up past smaller ones */
        for (; i > 0 && z[v] > best[i - 1]; i--) best[i] = best[i - 1], ids[i] = ids[i - 1];
        best[i] = z[v];
        ids[i] = (uint32_t)v;
    }
    double sum = 0.0;
#pragma omp simd reduction(+ : sum)
    for (size_t v = 0; v < V; v++) sum += (double)fast_expf(z[v] - mx);
    for (size_t i = 0; i < k; i++) probs[i] = (float)(exp((double)best[i] - mx) / sum);
}

/* The logit lens: every stage's stream through LN_f and the head, as the
 * forward pass takes the last (model_head_forward). */
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
    size_t k = V < LENS_TOP ? V : LENS_TOP;
    for (size_t s = 0; s <= L; s++) {
        const float *h = s < L ? m->run.la[s].resid : m->run.resid_out;
        model_head_forward(m, logits, ln, mean, rstd, h, T);
#pragma omp parallel for schedule(static)
        for (size_t t = 0; t < T; t++)
            top_tokens(logits + t * V, V, k, in->lens_top + (s * T + t) * LENS_TOP,
                       in->lens_prob + (s * T + t) * LENS_TOP);
    }
    free(ln);
    return 0;
}

/* The k-th character (UTF-8 sequence) of s, for messages. */
static void nth_char(const char *s, size_t k, char *buf, size_t len) {
    size_t i = 0;
    for (size_t c = 0; s[i] && c < k; c++)
        for (i++; ((unsigned char)s[i] & 0xC0) == 0x80; i++) {}
    size_t n = 1;
    while (((unsigned char)s[i + n] & 0xC0) == 0x80) n++;
    snprintf(buf, len, "%.*s", (int)n, s + i);
}

int inspect_prompt(const Model *m, const Tokenizer *tok, const char *prompt, int32_t **tokens, size_t *T, Error *err) {
    uint32_t *ids = NULL;
    tokenizer_encode(tok, prompt, strlen(prompt), &ids);
    size_t n = arrlenu(ids);
    int rc = 0;
    *tokens = NULL;
    for (size_t t = 0; t < n && tok->kind->unknown >= 0 && rc == 0; t++)
        if (ids[t] == (uint32_t)tok->kind->unknown) {
            char ch[8];
            nth_char(prompt, t, ch, sizeof ch); /* the unknown token stands for one character */
            rc = err_set(err, "prompt character %zu ('%s') is not in the model's vocabulary", t + 1, ch);
        }
    if (rc == 0 && n > m->cfg.block_size)
        rc = err_set(err, "the prompt is %zu tokens, longer than the model's block size %zu", n, m->cfg.block_size);
    if (rc == 0 && !(*tokens = lm_calloc(n, sizeof **tokens, err))) rc = -1;
    for (size_t t = 0; rc == 0 && t < n; t++) (*tokens)[t] = (int32_t)ids[t];
    *T = n;
    arrfree(ids);
    return rc;
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
    snprintf(in->lens_head, sizeof in->lens_head, "%s%s", cfg->untied_head ? "the untied head (lm_head)" : "the tied head",
             cfg->logit_softcap > 0.0f ? ", soft-capped" : "");
    in->tokens = lm_calloc(T, sizeof(int32_t), err);
    if (!in->tokens) goto fail;
    memcpy(in->tokens, tokens, T * sizeof(int32_t));
    model_forward(m, tokens, NULL, 1, T, NULL);
    const float *last = m->run.logits + (T - 1) * V;
    for (size_t v = 1; v < V; v++) in->predicted = last[v] > last[in->predicted] ? (uint32_t)v : in->predicted;
    in->predicted_logit = last[in->predicted];
    if (cfg->logit_softcap > 0.0f) { /* the parts add up to the logit before the cap: that one */
        const float *x = m->run.lnf + (T - 1) * C, *e = m->weights.params + m->weights.head + (size_t)in->predicted * C;
        double z = 0.0;
        for (size_t c = 0; c < C; c++) z += (double)x[c] * e[c];
        in->predicted_logit = z;
    }
    add_part(in, "embed", attribute(m, m->run.la[0].resid + (T - 1) * C, T - 1, in->predicted), 0);
    for (size_t l = 0; l < L; l++) {
        LayerInspection *li = &in->layer[l];
        char name[32];
        if (ask_mixer(li, m, l, model_mixer_input(m, l), T, MIXER_INSPECT_ALL, err) || layer_map_stats(in, l, err))
            goto fail;
        snprintf(name, sizeof name, "L%zu %s", l, li->label);
        add_part(in, name, attribute(m, m->run.la[l].mix + (T - 1) * C, T - 1, in->predicted), 0);
        for (size_t i = 0; i < li->n_parts; i++) {
            snprintf(name, sizeof name, "L%zu %s", l, li->part_name[i]);
            add_part(in, name, attribute(m, li->part_out + i * C, T - 1, in->predicted), 1);
        }
        snprintf(name, sizeof name, "L%zu mlp", l);
        add_part(in, name, attribute(m, m->run.la[l].mlp + (T - 1) * C, T - 1, in->predicted), 0);
    }
    if (cfg->norm_type == NORM_TYPE_LAYERNORM) { /* RMSNorm has no bias */
        const float *e = m->weights.params + m->weights.head + (size_t)in->predicted * C;
        const float *b = m->weights.params + m->weights.lnf_b;
        double s = 0.0;
        for (size_t c = 0; c < C; c++) s += (double)e[c] * b[c];
        add_part(in, "ln_f bias", s, 0);
    }
    if (logit_lens(in, m, T, err)) goto fail;
    return 0;
fail:
    inspect_free(in);
    return -1;
}

void inspect_free(Inspection *in) {
    for (size_t l = 0; l < MAX_LAYERS; l++) {
        layer_inspection_free(&in->layer[l]);
        free(in->map_stats[l]);
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
    out->score = tokens ? lm_calloc(L * H, sizeof(double), err) : NULL;
    if (!out->score) {
        free(tokens);
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
        for (size_t t = 0; t + 1 < T; t++) *(t + 1 < n ? &first : &second) += m->run.losses[b * T + t];
    out->loss_first = first / (double)(n_seq * (n - 1));
    out->loss_second = second / (double)(n_seq * n);
    for (size_t i = n; i < T; i++) out->uniform += 1.0 / (double)(i + 1) / (double)n;
    int rc = 0;
    for (size_t l = 0; l < L && !rc; l++)
        for (size_t b = 0; b < n_seq; b++) {
            /* Only the maps, sequence by sequence; a layer without them: NaN. */
            LayerInspection li;
            rc = ask_mixer(&li, m, l, model_mixer_input(m, l) + b * T * C, T, MIXER_INSPECT_MAPS, err);
            const Exhibit *e = rc ? NULL : layer_exhibit_of(&li, EXHIBIT_MAPS);
            int maps = e && e->rows == H && e->cols == T;
            for (size_t h = 0; h < H; h++) {
                if (!maps) {
                    out->score[l * H + h] = NAN;
                    continue;
                }
                const float *probs = e->values + h * T * T;
                double s = 0.0;
                for (size_t i = n; i < T; i++) s += probs[i * T + (i - n + 1)];
                out->score[l * H + h] += s / (double)n / (double)n_seq;
            }
            layer_inspection_free(&li);
            if (!maps) break;
        }
    free(tokens);
    if (rc) induction_free(out);
    return rc;
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
