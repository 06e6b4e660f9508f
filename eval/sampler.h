/* The sampler: the next token from a step's logits, as llama.cpp users
 * know it. In order: the repetition penalty on the logits of the last
 * tokens, top-k, top-p, min-p (those three judging the probabilities at
 * temperature 1, as llama.cpp's default chain does), then a draw from the
 * softmax at the temperature over what is left; greedy at temperature 0. */
#ifndef LM_SAMPLER_H
#define LM_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

#include "lm/error.h"
#include "lm/rng.h"

typedef struct SamplerSettings {
    float temperature;    /* softmax temperature; 0 = greedy (the first largest logit, after the penalty) */
    size_t top_k;         /* only the top_k largest logits; 0 = all */
    float top_p;          /* only the fewest most likely tokens whose probabilities add up to top_p or more; 1 = all */
    float min_p;          /* only tokens at least min_p times as likely as the most likely; 0 = all */
    float repeat_penalty; /* a logit of a token among the last repeat_last_n: divided by it when positive,
                             multiplied by it otherwise (once however often the token occurs); 1 = none */
    size_t repeat_last_n; /* how many of the sequence's last tokens (the prompt's too) are penalised */
} SamplerSettings;

/* llama.cpp's defaults but for the temperature (0.8 in both), none of the
 * three filters or the penalty on: plain sampling. */
#define SAMPLER_DEFAULTS {.temperature = 0.8f, .top_p = 1.0f, .repeat_penalty = 1.0f, .repeat_last_n = 64}

/* The sampler's scratch, for a vocabulary of V. */
typedef struct Sampler {
    float *probs;         /* the candidates' weights (softmax numerators) */
    size_t *order;        /* the candidates' ids */
    float *penalised;     /* the logits after the repetition penalty */
    unsigned char *seen;  /* marks: a token already penalised */
    size_t V;
} Sampler;

int sampler_init(Sampler *s, size_t V, Error *err);
void sampler_free(Sampler *s);

/* A draw's candidates: the ids into s->order[0 .. n) and their weights,
 * exp((z - z_max) / temperature) of the penalised logits z, into
 * s->probs[0 .. n); returns n (1 at temperature 0: the greedy id). The
 * order is the ids' rank (the larger logit, the lower id among equals)
 * when top-k or top-p is on, else their id order. recent: the sequence's
 * last n_recent tokens (the penalty's; NULL when none). */
size_t sampler_candidates(Sampler *s, const float *logits, const SamplerSettings *o, const uint32_t *recent,
                          size_t n_recent);
/* The next token: greedy at temperature 0 (no draw), else one uniform draw
 * from rng over the candidates, in their order. Top-k finds its ids in
 * O(V log top_k); top-p ranks as many as its nucleus needs. */
uint32_t sampler_pick(Sampler *s, const float *logits, const SamplerSettings *o, const uint32_t *recent,
                      size_t n_recent, Rng *rng);

#endif
