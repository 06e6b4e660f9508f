/* Rotary position embedding of q and k in place (src/nn/rope.h). */
#include "nn/rope.h"

#include <math.h>

void rope_table(float *table, size_t T_max, size_t hs) {
    size_t half = hs / 2;
    for (size_t t = 0; t < T_max; t++)
        for (size_t i = 0; i < half; i++) {
            double angle = (double)t * pow(10000.0, -2.0 * (double)i / (double)hs);
            table[(t * half + i) * 2] = (float)cos(angle);
            table[(t * half + i) * 2 + 1] = (float)sin(angle);
        }
}

/* Rotates q and k (2C floats, heads of hs) of one row by the angles cs
 * (hs/2 cos, sin pairs); sign -1 rotates back. */
static void rotate_row(float *x, const float *cs, size_t C, size_t hs, float sign) {
    for (size_t h = 0; h < 2 * C; h += hs) {
        float *v = x + h;
        for (size_t i = 0; i < hs / 2; i++) {
            float c = cs[2 * i], s = sign * cs[2 * i + 1], a = v[2 * i], b = v[2 * i + 1];
            v[2 * i] = a * c - b * s;
            v[2 * i + 1] = a * s + b * c;
        }
    }
}

static void rotate(float *qkv, const float *table, size_t B, size_t T, size_t t0, size_t C, size_t hs, float sign) {
#pragma omp parallel for schedule(static)
    for (size_t n = 0; n < B * T; n++) rotate_row(qkv + n * 3 * C, table + (t0 + n % T) * hs, C, hs, sign);
}

void rope_forward(float *qkv, const float *table, size_t B, size_t T, size_t t0, size_t C, size_t hs) {
    rotate(qkv, table, B, T, t0, C, hs, 1.0f);
}

void rope_backward(float *dqkv, const float *table, size_t B, size_t T, size_t t0, size_t C, size_t hs) {
    rotate(dqkv, table, B, T, t0, C, hs, -1.0f);
}
