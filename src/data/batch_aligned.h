/* Training windows that start only at multiples of an alignment: for data
 * made of fixed-length sequences (the synthetic probes), with the block size
 * equal to the sequence length, every window is exactly one sequence. */
#ifndef LM_BATCH_ALIGNED_H
#define LM_BATCH_ALIGNED_H

#include <stddef.h>
#include <stdint.h>

#include "data/tokens.h"
#include "runtime/rng.h"

/* Like batch_sample, with window starts drawn uniformly from 0, align,
 * 2 align, ... up to the last that leaves T + 1 tokens. align = 1 draws
 * exactly what batch_sample draws. Needs tf->n > T. mask (NULL: none): one
 * byte per token of tf; targets it does not mark become LOSS_IGNORE
 * (loss_mask.h). */
void batch_sample_aligned(const TokenFile *tf, Rng *rng, int32_t *inputs, int32_t *targets, size_t B, size_t T,
                          size_t align, const uint8_t *mask);

#endif
