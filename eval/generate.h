/* Generation: a prompt read in one batched forward (model_prefill), then
 * continued one token at a time with the model's incremental decoder
 * (model_step: a KV cache for attention, a rolling window of reduced vectors
 * for Grassmann layers, a recurrent state for gla), each token drawn by the
 * sampler (eval/sampler.h), each sample ending at a stop string. */
#ifndef LM_GENERATE_H
#define LM_GENERATE_H

#include <stddef.h>
#include <stdint.h>

#include "lm/model.h"
#include "lm/error.h"
#include "lm/rng.h"
#include "lm/tokenizer.h"
#include "sampler.h"

typedef struct SampleOptions {
    SamplerSettings sampling; /* SAMPLER_DEFAULTS, or the program's */
    const char *const *stop;  /* n_stop strings: a sample ends where it writes one, which its text leaves out */
    size_t n_stop;
    uint64_t seed;     /* sample i draws from an Rng seeded with seed + i */
    size_t n_samples;  /* samples decoded together from the one prompt (0 = 1) */
    struct GenerateTiming *timing; /* NULL, or where generate says how long its parts took */
} SampleOptions;

/* Where a generation's time went (wall seconds): the prompt's prefill, and
 * the steps (each decoding every sample) with the refills among them. */
typedef struct GenerateTiming {
    size_t prefill_tokens, steps, refills;
    double prefill_seconds, decode_seconds;
} GenerateTiming;

/* Where a stop string first begins in text[0 .. len) among the places
 * from `from` on: its offset, or SIZE_MAX when none does. *hold gets how
 * many of the text's last bytes may begin one that the next tokens
 * complete (the longest end of the text that begins a stop string): a
 * stream keeps those back, and a later search starts at len - *hold. */
size_t stop_find(const char *text, size_t len, size_t from, const char *const *stop, size_t n_stop, size_t *hold);

/* Receives the generated text of sample `sample`. One sample streams: its
 * text in pieces as it comes, each ending on a UTF-8 character boundary (a
 * token may end inside a character the next one completes), the last piece
 * whatever is left. A batch of samples is kept until all are done, then
 * each sample's whole text in one piece (possibly empty), in order. */
typedef void (*TextSink)(void *ctx, size_t sample, const char *text, size_t len);

/* Continues `prompt` (its last block_size tokens; a prompt that encodes to
 * nothing starts from token 0) with n_tokens tokens in each of
 * opt->n_samples samples, handing their text to `out`. The prompt goes
 * through one batched forward (model_prefill), whose state every sample
 * starts from; then each step decodes every sample at once
 * (model_step_batch), sample i drawing with an Rng seeded with seed + i, so
 * that it is the text a single sample with that seed gives, bit for bit
 * (a stop string ends a sample's text; the others go on, and the steps end
 * when every sample has stopped).
 * When the context is full each sample restarts from its last half:
 * positions are absolute, so its state is rebuilt by a prefill of
 * block_size / 2 tokens once per block_size / 2 new tokens. m's activations
 * are overwritten (and allocated for one sequence). */
int generate(Model *m, const Tokenizer *tok, const char *prompt, size_t n_tokens, const SampleOptions *opt,
             TextSink out, void *ctx, Error *err);

#endif
