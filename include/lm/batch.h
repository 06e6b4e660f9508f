/* Batches of training and validation windows, as bin/train draws them: B
 * windows of T tokens from a token file, inputs[b] = tokens[i .. i+T) and
 * targets[b] = tokens[i+1 .. i+T], each start drawn uniformly by the caller's
 * RNG (so a checkpoint can carry where the data stream is).
 *
 * align > 1: windows start only at multiples of align, for data made of
 * fixed-length sequences (the synthetic probes): with T equal to the
 * sequence length every window is exactly one sequence. align 0 or 1 draws
 * starts anywhere, the same numbers either way.
 * mask (NULL: none): one byte per token of the file (lm/loss_mask.h);
 * targets it does not mark become LOSS_IGNORE (nn/loss.h). */
#ifndef LM_BATCH_H
#define LM_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "lm/tokens.h"
#include "lm/rng.h"

/* Needs tf->n > T. */
void batch_sample(const TokenFile *tf, Rng *rng, size_t B, size_t T, size_t align, const uint8_t *mask,
                  int32_t *inputs, int32_t *targets);
/* The same, with each window's first token's index into starts[0..B). */
void batch_sample_at(const TokenFile *tf, Rng *rng, size_t B, size_t T, size_t align, const uint8_t *mask,
                     int32_t *inputs, int32_t *targets, size_t *starts);

#endif
