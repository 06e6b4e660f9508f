/* The batch sampler (see lm/batch.h). */
#include "lm/batch.h"

#include "nn/loss.h"

void batch_sample(const TokenFile *tf, Rng *rng, size_t B, size_t T, size_t align, const uint8_t *mask,
                  int32_t *inputs, int32_t *targets) {
    batch_sample_at(tf, rng, B, T, align, mask, inputs, targets, NULL);
}

void batch_sample_at(const TokenFile *tf, Rng *rng, size_t B, size_t T, size_t align, const uint8_t *mask,
                     int32_t *inputs, int32_t *targets, size_t *starts) {
    if (align == 0) align = 1;
    size_t n_starts = (tf->n - 1 - T) / align + 1; /* start + T <= n - 1 */
    for (size_t b = 0; b < B; b++) {
        size_t start = align * (size_t)rng_below(rng, n_starts);
        if (starts) starts[b] = start;
        int32_t *in = inputs + b * T, *tg = targets + b * T;
        for (size_t t = 0; t < T; t++) {
            in[t] = (int32_t)token_at(tf, start + t);
            tg[t] = (int32_t)token_at(tf, start + t + 1);
        }
        if (mask) /* target t is token start + t + 1 */
            for (size_t t = 0; t < T; t++)
                if (!mask[start + t + 1]) tg[t] = LOSS_IGNORE;
    }
}
