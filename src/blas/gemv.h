/* The decode step's products: a few vectors (the sequences decoded at once)
 * times a weight matrix read once, y = x W^T, on our own kernels per
 * instruction-set level (blas/gemv_kernel.h, compiled per level as the
 * attention tiles' kernel is; LM_MAX_ISA caps it). A step multiplies one
 * token's vector by every weight matrix of the model: the weights stream
 * from memory and the product runs at the read rate, not the FMA rate, so
 * the weights may come narrower than fp32, converted once at load:
 *   fp32  as the model keeps them;
 *   bf16  the upper half of each fp32 (lm/bf16.h's rounding), 2 bytes;
 *   q8    int8 entries with one fp32 scale per group of GEMV_GROUP entries
 *         of a row (llama.cpp's Q8_0): W(r, k) = scale(r, k / 32) q(r, k),
 *         q = round(W / scale), scale = max |W| over the group / 127.
 * Each entry of y is the same sequence of operations whichever rows and
 * vectors are computed with it and on whichever thread. fp32 and bf16: one
 * vector accumulator along k (vectors of LANES entries in order, the last
 * one padded with zeros), then its lanes added by halves (a register
 * block's accumulators folded together, each sum the same adds); the levels
 * with FMA differ from each other only in the vector width. q8: in
 * integers (blas/gemv_q8_kernel.h): x quantised as the weights are, each
 * group an exact int32 dot product of int8 pairs, added in order as
 *   y += (scale_w scale_x) sum_group q_w q_x.
 * So a sequence decoded in a batch gets the bits it gets alone. */
#ifndef BLAS_GEMV_H
#define BLAS_GEMV_H

#include <stddef.h>
#include <stdint.h>

#define GEMV_GROUP 32

typedef enum { GEMV_F32, GEMV_BF16, GEMV_Q8 } GemvFormat;

/* A weight matrix of `rows` rows of K entries, row r at r * ld entries
 * (and for q8 its scales at r * lds), in one of the formats above. */
typedef struct GemvWeights {
    GemvFormat format;
    const float *f;
    const uint16_t *h;
    const int8_t *q;
    const float *scale;
    size_t ld, lds;
} GemvWeights;

/* y[n * ldy + r] = (accumulate ? y[n * ldy + r] : bias ? bias[r] : 0) + sum_k x[n * ldx + k] W(r, k)
 * for n < N, r0 <= r < r1. */
typedef struct GemvArgs {
    size_t N, K;
    const float *x;
    size_t ldx;
    GemvWeights w;
    const float *bias;
    float *y;
    size_t ldy;
    int accumulate;
} GemvArgs;

/* Keys per tile of the attention step's key cache (below). */
#define GEMV_KEY_TILE 16

typedef struct GemvLoops {
    const char *isa;
    void (*rows[3])(const GemvArgs *a, size_t r0, size_t r1); /* by GemvFormat */
    /* The attention step over one head's caches (mixers/attention.c). Its
     * keys are kept in tiles of GEMV_KEY_TILE keys, a tile hs rows of
     * GEMV_KEY_TILE floats (one row per channel, the keys along it), so
     * that a tile's scores are vector multiply-adds down its rows, with no
     * sums across lanes:
     *   s[j] = scale * sum_{d < hs} q[d] kt[(j / 16) hs 16 + 16 d + j % 16]
     * for every j of the ceil(n / 16) tiles, the channels in order. */
    void (*key_scores)(float *s, const float *q, const float *kt, size_t hs, size_t n, float scale);
    /* y[d] = sum_{j < n} p[j] v[j * ldv + d] for d < hs, the rows in order. */
    void (*value_sum)(float *y, const float *p, const float *v, size_t ldv, size_t n, size_t hs);
} GemvLoops;

/* Each level's set, for the tests that compare them. */
extern const GemvLoops gemv_loops_portable;
#if defined(__x86_64__)
extern const GemvLoops gemv_loops_avx2, gemv_loops_avx512;
#elif defined(__aarch64__)
extern const GemvLoops gemv_loops_neon;
#endif
/* The set for this run's level (cpu_isa()). */
const GemvLoops *gemv_loops(void);

/* Below this many entries read (weights, or a step's key and value cache)
 * one thread is done before a team of them would start (a 256 x 256 matrix
 * is 64K entries: 256 KB in fp32). */
#define GEMV_SHARED_ENTRIES (1u << 17)

/* All `rows` rows, at this run's level, the rows split among the threads
 * (lm/threads.h's width) when the matrix has GEMV_SHARED_ENTRIES or more. */
void gemv(const GemvArgs *a, size_t rows);

/* Conversions at load: `rows` rows of K fp32 entries (row stride ld) into
 * bf16 (h, row stride K) or q8 (q, row stride K; scales, ceil(K / 32) per row). */
void gemv_to_bf16(uint16_t *h, const float *w, size_t ld, size_t rows, size_t K);
void gemv_to_q8(int8_t *q, float *scale, const float *w, size_t ld, size_t rows, size_t K);
/* W(r, k) as the kernels read it, in fp32 (q8: scale q, rounded once). */
float gemv_weight(const GemvWeights *w, size_t r, size_t k);

#endif
