/* The decode step's products at this run's level, their threads, and the
 * weights' conversions (blas/gemv.h). */
#include "blas/gemv.h"

#include <math.h>
#include <string.h>

#include "lm/bf16.h"
#include "lm/cpu.h"
#include "lm/threads.h"

const GemvLoops *gemv_loops(void) {
    static const GemvLoops *const by_level[CPU_ISA_COUNT] = CPU_ISA_BY_LEVEL(gemv_loops);
    return by_level[cpu_isa()];
}


void gemv(const GemvArgs *a, size_t rows) {
    void (*run)(const GemvArgs *, size_t, size_t) = gemv_loops()->rows[a->w.format];
    size_t P = threads_width();
    if (P <= 1 || rows * a->K < GEMV_SHARED_ENTRIES || rows < 8 * P) {
        run(a, 0, rows);
        return;
    }
    /* Contiguous runs of rows, multiples of 4 (a row's result does not depend on its run). */
    size_t per = (rows + P - 1) / P;
    per = (per + 3) / 4 * 4;
#pragma omp parallel for schedule(static) num_threads(P)
    for (size_t t = 0; t < P; t++) {
        size_t r0 = t * per, r1 = r0 + per < rows ? r0 + per : rows;
        if (r0 < r1) run(a, r0, r1);
    }
}

void gemv_to_bf16(uint16_t *h, const float *w, size_t ld, size_t rows, size_t K) {
    for (size_t r = 0; r < rows; r++) bf16_from_floats(K, w + r * ld, h + r * K);
}

void gemv_to_q8(int8_t *q, float *scale, const float *w, size_t ld, size_t rows, size_t K) {
    size_t groups = (K + GEMV_GROUP - 1) / GEMV_GROUP;
    for (size_t r = 0; r < rows; r++)
        for (size_t g = 0; g < groups; g++) {
            size_t k0 = g * GEMV_GROUP, k1 = k0 + GEMV_GROUP < K ? k0 + GEMV_GROUP : K;
            float amax = 0.0f;
            for (size_t k = k0; k < k1; k++) amax = fabsf(w[r * ld + k]) > amax ? fabsf(w[r * ld + k]) : amax;
            float s = amax / 127.0f, inv = s > 0.0f ? 1.0f / s : 0.0f;
            scale[r * groups + g] = s;
            for (size_t k = k0; k < k1; k++) {
                float v = roundf(w[r * ld + k] * inv);
                q[r * K + k] = (int8_t)(v > 127.0f ? 127.0f : v < -127.0f ? -127.0f : v);
            }
        }
}

float gemv_weight(const GemvWeights *w, size_t r, size_t k) {
    switch (w->format) {
    case GEMV_F32: return w->f[r * w->ld + k];
    case GEMV_BF16: {
        uint32_t u = (uint32_t)w->h[r * w->ld + k] << 16;
        float f;
        memcpy(&f, &u, sizeof f);
        return f;
    }
    default: return w->scale[r * w->lds + k / GEMV_GROUP] * (float)w->q[r * w->ld + k];
    }
}
