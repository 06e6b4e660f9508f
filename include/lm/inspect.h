/* Looking inside a trained model (bin/inspect): what each layer does with a
 * prompt, computed from the model's public weights and one evaluation
 * forward pass. The training path is untouched. What a layer shows of its
 * own comes from its mixer's inspect hook (lm/mixer.h), as exhibits
 * (lm/inspection.h: maps, series, tables, scalars) recomputed from the
 * layer's weights and input; around them, whatever the mixer:
 *
 *   every map of a layer's first maps exhibit (a map per head): its mean row
 *     entropy, its weight on the diagonal and on the previous position,
 *     and an induction score on repeated random tokens;
 *   every layer: the logit lens (top-3 next tokens of the residual stream
 *     through LN_f and the head) and the direct attribution of the last
 *     position's predicted logit to each mixer and MLP, and to the parts
 *     of a mixer's output its hook gives (each head and an output bias,
 *     say). A layer without maps scores NaN for induction. */
#ifndef LM_INSPECT_H
#define LM_INSPECT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lm/inspection.h"
#include "lm/model.h"
#include "lm/error.h"
#include "lm/tokenizer.h"

#define LENS_TOP 3

/* Direct attribution of the last position's predicted logit: each part's
 * output (centred, times LN_f's gain and the position's 1/std, dotted with the
 * token's embedding); the parts sum to the logit. */
typedef struct AttributionPart {
    char name[32];  /* "embed", "L0 attn", "L0 mlp", "L0 H1", "L0 attn bias", "ln_f bias" */
    double value;
    int share;      /* 1: a share of the layer's mixer part, listed after it ("L0 H1", "L0 attn bias") */
} AttributionPart;

/* One map's statistics (bin/inspect's own, for the maps of any mixer). */
typedef struct MapStats {
    double entropy;   /* mean over rows of -sum p log p (nats) */
    double diagonal;  /* mean over rows of p[t][t] */
    double previous;  /* mean over rows t >= 1 of p[t][t-1] (NaN when T = 1) */
} MapStats;
/* Those of a (T, T) causal map. */
void map_stats(MapStats *s, const float *map, size_t T);

typedef struct Inspection {
    size_t T, n_layer, n_head, vocab;
    int32_t *tokens;             /* T */
    LayerInspection layer[MAX_LAYERS]; /* what each layer's mixer showed (lm/inspection.h) */
    /* Each layer's first maps exhibit (layer_exhibit_of), its maps' statistics: NULL for a layer without maps. */
    const Exhibit *maps[MAX_LAYERS];
    MapStats *map_stats[MAX_LAYERS];
    /* logit lens: stage 0 is the embedding, stage l+1 the stream after layer l */
    uint32_t *lens_top;          /* (n_layer + 1, T, LENS_TOP) token ids */
    char lens_head[64];          /* what the lens reads the stream through after ln_f, for reports */
    float *lens_prob;            /* (n_layer + 1, T, LENS_TOP) their probabilities */
    uint32_t predicted;          /* argmax of the model's logits at the last position */
    double predicted_logit;      /* its logit; with a logit soft cap the one before it, which the parts add up to */
    AttributionPart *parts;      /* stb_ds array; a layer's shares sum to its mixer part */
} Inspection;

/* The prompt as the model's tokens (a malloc'd array of *T): one line and
 * -1 when a character of it is outside the vocabulary (a tokenizer with an
 * unknown id) or it is longer than block_size. */
int inspect_prompt(const Model *m, const Tokenizer *tok, const char *prompt, int32_t **tokens, size_t *T, Error *err);

/* Runs the model on tokens (T <= block_size) and fills `out`. Allocates the
 * model's activations for one sequence of T tokens. */
int inspect_run(Inspection *out, Model *m, const int32_t *tokens, size_t T, Error *err);
void inspect_free(Inspection *in);

/* Induction heads: n_seq random sequences of n tokens (ids 1..V-1, without
 * repeats when n < V), each repeated twice. Per head, the mean attention from
 * each position i of the second copy to position i - n + 1, just after the
 * first occurrence of its token, on the layer's first maps exhibit; NaN for
 * layers without maps. */
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

#endif
