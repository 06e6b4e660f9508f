/* The element-wise hot loops outside the matrix products, one set per
 * instruction-set level (lm/cpu.h): GELU and its gradient, the attention
 * tiles' softmax, LayerNorm's rows, AdamW, the loss's rows and its soft cap.
 * Each level's set is the same template (nn/vec_loops_kernel.h) compiled
 * with that level's flags (nn/vec_loops_{portable,avx2,avx512}.c), so a
 * build for any x86-64 (-march=x86-64) still runs these loops in AVX2 or
 * AVX-512 where the CPU has them, and LM_MAX_ISA caps them with the
 * attention tiles. */
#ifndef NN_VEC_LOOPS_H
#define NN_VEC_LOOPS_H

#include <stddef.h>

/* AdamW's constants for one span (see src/optim/optim.c): m = b1 m + (1 - b1) g,
 * v = b2 v + (1 - b2) g^2, p = p decay - lr (m / c1) / (sqrt(v / c2) + eps),
 * g = grad * grad_scale. */
typedef struct AdamWLoop {
    float b1, b2, c1, c2, decay, lr, eps, grad_scale;
} AdamWLoop;

typedef struct VecLoops {
    const char *isa; /* the level's name, as cpu_isa_name says it */
    /* out[i] = gelu(in[i]) over n. */
    void (*gelu)(float *out, const float *in, size_t n);
    /* d[i] *= gelu'(x[i]) over n (the MLP's dL/d(fc) from dL/d(act)). */
    void (*gelu_grad_mul)(float *d, const float *x, size_t n);
    /* din[i] += gelu'(in[i]) * dout[i] over n. */
    void (*gelu_grad_add)(float *din, const float *in, const float *dout, size_t n);
    /* Online softmax over one key row of a transposed score tile, queries
     * r0 .. n-1 (the ones before r0 are masked): mx[r] = max(mx[r], row[r]). */
    void (*tile_row_max)(float *mx, const float *row, size_t r0, size_t n);
    /* row[r] = exp(row[r] - mx[r]), sum[r] += row[r] for r0 <= r < n; row[r] = 0 before r0. */
    void (*tile_row_exp)(float *row, const float *mx, float *sum, size_t r0, size_t n);
    /* After a tile's maxima, for r < n: corr[r] = exp(mx[r] - mx_new[r]) (below
     * 2e-38 from mx = -inf, the first tile's, whose sums and outputs are 0),
     * sum[r] *= corr[r], mx[r] = mx_new[r]. */
    void (*tile_running_max)(float *corr, float *mx, float *sum, const float *mx_new, size_t n);
    /* o[r][d] *= s[r] for r < rows, d < n (rows ldo apart): the output rows
     * rescaled by their corr, and at the end by 1 / sum. */
    void (*tile_rows_scale)(float *o, size_t ldo, const float *s, size_t rows, size_t n);
    /* Attention backward, one score row: p[c] = exp(p[c] - lse), d[c] = p[c] (d[c] - delta) over n. */
    void (*softmax_grad_row)(float *p, float *d, float lse, float delta, size_t n);
    /* One LayerNorm row of C: out = (x - mean) rstd weight + bias; its mean and rstd. */
    void (*layernorm_row)(float *out, float *mean, float *rstd, const float *x, const float *weight,
                          const float *bias, size_t C);
    /* Its input gradient: dx += rstd (dy w - mean(dy w) - xhat mean(dy w xhat)). */
    void (*layernorm_row_backward)(float *dx, const float *dy, const float *x, const float *weight, float mean,
                                   float rstd, size_t C);
    /* AdamW over n parameters. */
    void (*adamw)(float *params, const float *grads, float *m, float *v, size_t n, const AdamWLoop *k);
    /* The loss's rows over the vocabulary: max z[v] (n >= 1); the sum in
     * double of exp(z[v] - shift); out = softmax(in) (n >= 1; out may equal in). */
    float (*row_max)(const float *z, size_t n);
    double (*row_sum_exp)(const float *z, float shift, size_t n);
    void (*softmax)(float *out, const float *in, size_t n);
    /* Logit soft-capping: x[i] = cap tanh(x[i] / cap) over n, tanh as GELU's (lm/ops.h's fast_tanhf). */
    void (*softcap)(float *x, size_t n, float cap);
    /* Through the softmax and the cap at once, from the capped logits y (d may be y):
     * d[i] = exp(y[i] - shift) scale (1 - (y[i] inv_cap)^2) over n. */
    void (*softcap_softmax_grad)(float *d, const float *y, float shift, float scale, float inv_cap, size_t n);
} VecLoops;

/* Element-wise loops over n run in chunks of VEC_CHUNK across the threads
 * (each element's result is the same whichever thread computes it): chunk
 * lo .. vec_chunk_end(lo, n). */
#define VEC_CHUNK 4096
static inline size_t vec_chunk_end(size_t lo, size_t n) { return lo + VEC_CHUNK < n ? lo + VEC_CHUNK : n; }

/* The set for this run's level (cpu_isa()), chosen at the first call. */
const VecLoops *vec_loops(void);

/* Each level's set (above portable: x86-64's or ARM64's), for the tests that compare them. */
extern const VecLoops vec_loops_portable;
#if defined(__x86_64__)
extern const VecLoops vec_loops_avx2, vec_loops_avx512;
#elif defined(__aarch64__)
extern const VecLoops vec_loops_neon;
#endif

#endif
