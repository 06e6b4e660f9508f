/* Heads as a mixer's parts, for bin/eval --ablate (mixers/head_parts.h). */
#include "mixers/head_parts.h"

#include <stdio.h>
#include <string.h>

size_t head_parts(const MixerSpec *spec, char (*names)[MIXER_PART_NAME]) {
    size_t n = spec->n_head < MIXER_MAX_PARTS ? spec->n_head : MIXER_MAX_PARTS;
    for (size_t h = 0; h < n; h++) snprintf(names[h], MIXER_PART_NAME, "head%zu", h);
    return n;
}

void mute_heads(float *y, size_t n, size_t ld, size_t hs, uint32_t muted) {
    for (size_t h = 0; muted >> h; h++)
        if (muted >> h & 1u)
            for (size_t i = 0; i < n; i++) memset(y + i * ld + h * hs, 0, hs * sizeof(float));
}
