#include "nn/embedding.h"

#include <math.h>
#include <string.h>

void embedding_forward(float *out, const int32_t *tokens, const float *wte, const float *pos,
                       size_t B, size_t T, size_t C) {
#pragma omp parallel for schedule(static)
    for (size_t n = 0; n < B * T; n++) {
        const float *e = wte + (size_t)tokens[n] * C;
        float *o = out + n * C;
        if (!pos) {
            memcpy(o, e, C * sizeof(float));
            continue;
        }
        const float *p = pos + (n % T) * C;
        for (size_t c = 0; c < C; c++) o[c] = e[c] + p[c];
    }
}

void embedding_backward(float *dwte, float *dwpe, const float *dout, const int32_t *tokens,
                        size_t B, size_t T, size_t C) {
    /* Parallel over channels: two positions with the same token add into the
     * same row, and a fixed per-channel order keeps the sum deterministic. */
#pragma omp parallel for schedule(static)
    for (size_t c = 0; c < C; c++)
        for (size_t n = 0; n < B * T; n++) dwte[(size_t)tokens[n] * C + c] += dout[n * C + c];
    if (!dwpe) return;
#pragma omp parallel for schedule(static)
    for (size_t t = 0; t < T; t++)
        for (size_t b = 0; b < B; b++)
            for (size_t c = 0; c < C; c++) dwpe[t * C + c] += dout[(b * T + t) * C + c];
}

void sinusoidal_table(float *pe, size_t T, size_t C) {
    for (size_t t = 0; t < T; t++)
        for (size_t i = 0; 2 * i < C; i++) {
            double angle = (double)t / pow(10000.0, (double)(2 * i) / (double)C);
            pe[t * C + 2 * i] = (float)sin(angle);
            if (2 * i + 1 < C) pe[t * C + 2 * i + 1] = (float)cos(angle);
        }
}
