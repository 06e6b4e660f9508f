/* Looking inside a trained model (bin/inspect): what each layer does with a
 * prompt, computed from the model's public weights and one evaluation
 * forward pass. The training path is untouched: attention probabilities are
 * recomputed here from each layer's q and k (the flash-attention forward
 * keeps no T x T matrix), and the Grassmann layer's parts from its weights.
 *
 *   attention layers: the (H, T, T) causal attention maps; per head the mean
 *     row entropy, the weight on the diagonal and on the previous token; the
 *     projection geometry (correlation of cos(x_i, x_j) with
 *     q_i.k_j / sqrt(d_head) over causal pairs; the spectrum of the bilinear
 *     form W_q^T W_k); induction scores on repeated random tokens.
 *   Grassmann layers: the gate averaged over channels per position, the
 *     norm of each offset's contribution to g, and the largest Plücker-relation
 *     residual of the un-normalised coordinates.
 *   every layer: the logit lens (top-3 next tokens of the residual stream
 *     through LN_f and the tied head) and the direct attribution of the last
 *     position's predicted logit to each mixer, MLP and attention head. */
#ifndef LM_INSPECT_H
#define LM_INSPECT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "runtime/error.h"
#include "model/model.h"
#include "tok/tokenizer.h"

#define LENS_TOP 3

typedef struct HeadStats {
    double entropy;   /* mean over rows of -sum p log p (nats) */
    double diagonal;  /* mean over rows of p[t][t] */
    double previous;  /* mean over rows t >= 1 of p[t][t-1] (NaN when T = 1) */
    /* projection geometry */
    double similarity_corr;  /* Pearson r of cos(x_i, x_j) and the scaled logit, pairs j <= i (NaN if undefined) */
    double sv_max, sv_min;   /* largest and d_head-th largest singular value of W_q^T W_k (C x C, rank <= d_head) */
    double effective_rank;   /* exp(entropy of the normalised singular values) */
    double antisym_share;    /* |A|_F^2 / |M|_F^2, A the antisymmetric part of M */
    double identity_dist;    /* |M - (tr M / C) I|_F / |M|_F */
} HeadStats;

typedef struct LayerInspection {
    int attention;       /* 1: an attention layer; 0: Grassmann */
    /* attention */
    float *probs;        /* (H, T, T), row t: query position t; zero above the diagonal */
    HeadStats *heads;    /* H */
    /* Grassmann */
    float *gate_mean;    /* T: the gate a_t averaged over channels */
    double *offset_norm; /* n_windows: mean over positions where offset d fits of |W_plu q_t^d| / |D_t| */
    double plucker_residual; /* max over t, d, i<j<k<l of |p_ij p_kl - p_ik p_jl + p_il p_jk| / |p|^2 */
} LayerInspection;

/* Direct attribution of the last position's predicted logit: each part's
 * output (centred, times LN_f's gain and the position's 1/std, dotted with the
 * token's embedding); the parts sum to the logit. */
typedef struct AttributionPart {
    char name[32];  /* "embed", "L0 attn", "L0 mlp", "L0 H1", "L0 attn bias", "ln_f bias" */
    double value;
} AttributionPart;

typedef struct Inspection {
    size_t T, n_layer, n_head, vocab;
    int32_t *tokens;             /* T */
    LayerInspection layer[MAX_LAYERS];
    /* logit lens: stage 0 is the embedding, stage l+1 the stream after layer l */
    uint32_t *lens_top;          /* (n_layer + 1, T, LENS_TOP) token ids */
    float *lens_prob;            /* (n_layer + 1, T, LENS_TOP) their probabilities */
    uint32_t predicted;          /* argmax of the model's logits at the last position */
    double predicted_logit;
    AttributionPart *parts;      /* stb_ds array; the heads' parts sum to their layer's mixer part minus its bias */
} Inspection;

/* Runs the model on tokens (T <= block_size) and fills `out`. Allocates the
 * model's activations for one sequence of T tokens. */
int inspect_run(Inspection *out, Model *m, const int32_t *tokens, size_t T, Error *err);
void inspect_free(Inspection *in);

/* Induction heads: n_seq random sequences of n tokens (ids 1..V-1, without
 * repeats when n < V), each repeated twice. Per head, the mean attention from
 * each position i of the second copy to position i - n + 1, just after the
 * first occurrence of its token; NaN for Grassmann layers. */
typedef struct Induction {
    size_t n, n_seq, n_layer, n_head;
    double *score;               /* (n_layer, n_head) */
    double loss_first, loss_second; /* mean loss on the tokens of each copy (the first copy's first token excluded) */
    double uniform;              /* the score of a head that attends uniformly: mean of 1/(i+1) over the second copy */
} Induction;

int inspect_induction(Induction *out, Model *m, size_t n, size_t n_seq, uint64_t seed, Error *err);
/* The same on given sequences (n_seq rows of n tokens), for tests. */
int inspect_induction_on(Induction *out, Model *m, const int32_t *seqs, size_t n, size_t n_seq, Error *err);
void induction_free(Induction *ind);

/* ---- the parts, for tests ---- */

/* probs (T, T) of head h from qkv (T, 3C) rows as attention.c lays them out. */
void attention_probs(float *probs, const float *qkv, size_t T, size_t C, size_t H, size_t h);
/* entropy, diagonal, previous of a (T, T) causal map. */
void attention_map_stats(HeadStats *s, const float *probs, size_t T);
/* similarity_corr of head h: x (T, C) the LN1 output. */
double similarity_logit_corr(const float *x, const float *qkv, size_t T, size_t C, size_t H, size_t h);
/* sv_max .. identity_dist of head h from qkv.weight (3C, C). */
void bilinear_spectrum(HeadStats *s, const float *qkv_w, size_t C, size_t H, size_t h);
/* Layer l's tensor "h.<l>.<suffix>" in the model's parameters (NULL if absent). */
const float *inspect_layer_tensor(const Model *m, size_t l, const char *suffix);
/* The Grassmann part of L for layer l, from x (T, C) = its LN1 output. */
int inspect_grassmann_layer(LayerInspection *L, const Model *m, size_t l, const float *x, size_t T, Error *err);
/* Largest Plücker-relation residual of p (r(r-1)/2 coordinates), relative to |p|^2 (0 for p = 0). */
double plucker_residual(const float *p, size_t r);

/* ---- output ---- */

/* One token as readable text: printable ASCII as is, space as '_', newline
 * as "\n", others as U+XXXX or their UTF-8. For labels (`ascii` set: one
 * printable ASCII character, '?' for others) and the legend. */
void token_label(const Tokenizer *tok, uint32_t id, int ascii, char *buf, size_t len);

/* Writes into dir (created if missing): attn_L<l>_H<h>.png, attn_L<l>.png,
 * gates.png, attribution.png, lens.txt, tokens.txt and inspect.json. */
int inspect_write(const char *dir, const Inspection *in, const Induction *ind, const Model *m,
                  const Tokenizer *tok, const char *prompt, Error *err);
/* A short summary on f. */
void inspect_print(FILE *f, const Inspection *in, const Induction *ind, const Model *m, const Tokenizer *tok);

#endif
