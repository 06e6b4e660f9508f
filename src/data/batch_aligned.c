/* Training windows aligned to sequence starts (see batch_aligned.h). */
#include "data/batch_aligned.h"

#include "data/loss_mask.h"

void batch_sample_aligned(const TokenFile *tf, Rng *rng, int32_t *inputs, int32_t *targets, size_t B, size_t T,
                          size_t align, const uint8_t *mask) {
    size_t starts = (tf->n - 1 - T) / align + 1; /* start + T <= n - 1 */
    for (size_t b = 0; b < B; b++) {
        size_t start = align * (size_t)rng_below(rng, starts);
        for (size_t t = 0; t < T; t++) {
            inputs[b * T + t] = (int32_t)token_at(tf, start + t);
            targets[b * T + t] = (int32_t)token_at(tf, start + t + 1);
        }
        if (mask) loss_mask_targets(mask, start, targets + b * T, T);
    }
}
