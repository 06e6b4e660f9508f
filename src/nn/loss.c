#include "nn/loss.h"

#include <math.h>
#include <string.h>

#include "lm/ops.h"
#include "nn/vec_loops.h"

void crossentropy_forward(float *losses, const float *logits, const int32_t *targets, size_t N, size_t V) {
    const VecLoops *loops = vec_loops();
#pragma omp parallel for schedule(static)
    for (size_t n = 0; n < N; n++) {
        const float *z = logits + n * V;
        if (targets[n] < 0) {
            losses[n] = 0.0f;
            continue;
        }
        /* log-softmax directly, so a tiny probability gives a finite loss;
         * the sum in double, in vector lanes (its terms are at most 1). */
        float maxv = loops->row_max(z, V);
        double s = loops->row_sum_exp(z, maxv, V);
        losses[n] = (float)(log(s) - (double)(z[targets[n]] - maxv));
    }
}

void crossentropy_backward(float *dlogits, const float *logits, const int32_t *targets, float dloss, size_t N,
                           size_t V) {
    const VecLoops *loops = vec_loops();
#pragma omp parallel for schedule(static)
    for (size_t n = 0; n < N; n++) {
        float *d = dlogits + n * V;
        if (targets[n] < 0) {
            for (size_t v = 0; v < V; v++) d[v] = 0.0f;
            continue;
        }
        loops->softmax(d, logits + n * V, V); /* the probabilities, recomputed: the forward keeps none */
        for (size_t v = 0; v < V; v++) d[v] *= dloss;
        d[targets[n]] -= dloss;
    }
}

size_t crossentropy_scored(const int32_t *targets, size_t N) {
    size_t k = 0;
    for (size_t n = 0; n < N; n++) k += targets[n] >= 0;
    return k;
}

size_t loss_rows(int32_t *rows, int32_t *row_targets, const int32_t *targets, size_t N) {
    size_t k = 0;
    for (size_t n = 0; n < N; n++)
        if (targets[n] >= 0) rows[k] = (int32_t)n, row_targets[k++] = targets[n];
    return k;
}

void gather_rows(float *dst, const float *src, const int32_t *rows, size_t K, size_t C) {
    for (size_t k = 0; k < K; k++) memcpy(dst + k * C, src + (size_t)rows[k] * C, C * sizeof(float));
}

void scatter_rows(float *dst, const float *src, const int32_t *rows, size_t K, size_t C) {
    for (size_t k = 0; k < K; k++) memcpy(dst + (size_t)rows[k] * C, src + k * C, C * sizeof(float));
}

void spread_in_place(float *x, const int32_t *rows, size_t K, size_t N) {
    size_t next = N; /* every position from next on is final */
    for (size_t k = K; k-- > 0;) {
        size_t r = (size_t)rows[k];
        float v = x[k];
        for (size_t n = r + 1; n < next; n++) x[n] = 0.0f;
        x[r] = v;
        next = r;
    }
    for (size_t n = 0; n < next; n++) x[n] = 0.0f;
}

void softcap_forward(float *x, size_t n, float cap) {
    const VecLoops *loops = vec_loops();
#pragma omp parallel for schedule(static)
    for (size_t lo = 0; lo < n; lo += VEC_CHUNK) loops->softcap(x + lo, vec_chunk_end(lo, n) - lo, cap);
}

void crossentropy_softcap_backward(float *dlogits, const float *capped, const int32_t *targets, float dloss,
                                   size_t N, size_t V, float cap) {
    const VecLoops *loops = vec_loops();
    float inv_cap = 1.0f / cap;
#pragma omp parallel for schedule(static)
    for (size_t n = 0; n < N; n++) {
        float *d = dlogits + n * V;
        const float *y = capped + n * V;
        int32_t t = targets[n];
        if (t < 0) {
            for (size_t v = 0; v < V; v++) d[v] = 0.0f;
            continue;
        }
        /* Every row constant and y[t] first: the loop may overwrite y. */
        float shift = loops->row_max(y, V), yt = y[t], ct = yt * inv_cap;
        float scale = (float)((double)dloss / loops->row_sum_exp(y, shift, V)); /* dloss / the softmax's sum */
        loops->softcap_softmax_grad(d, y, shift, scale, inv_cap, V);
        d[t] = (fast_expf(yt - shift) * scale - dloss) * (1.0f - ct * ct);
    }
}
