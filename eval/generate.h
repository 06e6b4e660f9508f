/* Generation: a prompt read in one batched forward (model_prefill), then
 * continued one token at a time with the model's incremental decoder
 * (model_step: a KV cache for attention, a rolling window of reduced vectors
 * for Grassmann layers, a recurrent state for gla), each token drawn by the
 * sampler. */
#ifndef LM_GENERATE_H
#define LM_GENERATE_H

#include <stddef.h>
#include <stdint.h>

#include "lm/model.h"
#include "lm/error.h"
#include "lm/rng.h"
#include "lm/tokenizer.h"

typedef struct SampleOptions {
    float temperature; /* softmax temperature; 0 = greedy (the first largest logit) */
    size_t top_k;      /* draw among the top_k largest logits; 0 = all */
    uint64_t seed;
} SampleOptions;

/* The sampler's scratch, for a vocabulary of V. */
typedef struct Sampler {
    float *probs;
    size_t *order;
    size_t V;
} Sampler;

int sampler_init(Sampler *s, size_t V, Error *err);
void sampler_free(Sampler *s);
/* The next token from logits (V): greedy at temperature 0, else a draw from
 * softmax(logits / temperature) over the top_k largest (0: all; the lower id
 * first among equal logits), found in O(V log top_k). */
uint32_t sampler_pick(Sampler *s, const float *logits, float temperature, size_t top_k, Rng *rng);

/* Receives the generated text as it comes, in pieces that end on UTF-8
 * character boundaries (a token may end inside a character the next one
 * completes); the last piece carries whatever is left. */
typedef void (*TextSink)(void *ctx, const char *text, size_t len);

/* Continues `prompt` (its last block_size tokens; a prompt that encodes to
 * nothing starts from token 0) with n_tokens tokens, handing their text to
 * `out`. The prompt goes through one batched forward (model_prefill), then
 * one step per new token. When the context is full it restarts from its
 * last half: positions are absolute, so the decoder's state is rebuilt by a
 * prefill of block_size / 2 tokens once per block_size / 2 new tokens. m's
 * activations are overwritten (and allocated for one sequence). */
int generate(Model *m, const Tokenizer *tok, const char *prompt, size_t n_tokens, const SampleOptions *opt,
             TextSink out, void *ctx, Error *err);

#endif
