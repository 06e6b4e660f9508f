/* Heads as a mixer's parts, for bin/eval --ablate (mixers/head_parts.h). */
#include "mixers/head_parts.h"

#include <stdio.h>
#include <string.h>

#include "lm/error.h"

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

int head_shares(LayerInspection *L, const float *proj_w, const float *proj_b, const float *y, size_t C, size_t H,
                const char *bias_name, Error *err) {
    size_t hs = C / H;
    L->part_name = lm_calloc(H + 1, sizeof *L->part_name, err);
    L->part_out = L->part_name ? lm_calloc((H + 1) * C, sizeof(float), err) : NULL;
    if (!L->part_out) return -1;
    for (size_t h = 0; h < H; h++) {
        float *out = L->part_out + h * C;
        for (size_t c = 0; c < C; c++) {
            double s = 0.0;
            for (size_t d = 0; d < hs; d++) s += (double)proj_w[c * C + h * hs + d] * y[h * hs + d];
            out[c] = (float)s;
        }
        snprintf(L->part_name[h], sizeof L->part_name[h], "H%zu", h);
    }
    memcpy(L->part_out + H * C, proj_b, C * sizeof(float));
    snprintf(L->part_name[H], sizeof L->part_name[H], "%s", bias_name);
    L->n_parts = H + 1;
    return 0;
}
