/* The bf16 kernels of each instruction-set level (the template
 * blas/bf16_kernel.h, compiled per level like the fp32 kernels): the
 * fp32 -> bf16 conversion behind bf16_from_floats (lm/bf16.h) and the
 * attention tiles' bf16 packings and product behind tile_pack_bf16_* and
 * tile_product (blas/tile_gemm.h).
 *
 * Every level has them all, with the same results: portable, avx2 and
 * neon in C (the compiler vectorises the conversion at the level); avx512
 * converts 16 floats at a time with AVX-512F; avx512bf16 is the avx512
 * level's second table, for CPUs with AVX512_BF16 (cpu_bf16(): the avx512
 * level, so LM_MAX_ISA below it turns it off), converting 32 at a time
 * with vcvtne2ps2bf16 and multiplying with vdpbf16ps. The conversions
 * agree bit for bit; the products each keep bf16_accumulation_bound
 * (lm/bf16.h) against the exact product of the rounded inputs. */
#ifndef LM_BF16_LOOPS_H
#define LM_BF16_LOOPS_H

#include <stddef.h>
#include <stdint.h>

#include "lm/bf16.h"

typedef struct Bf16Loops {
    const char *isa; /* the level's name, or "avx512bf16" */
    /* out[i] = bf16_from_float(x[i]) for n entries */
    void (*from_floats)(size_t n, const float *x, uint16_t *out);
    /* tile_pack_bf16_rows, _columns and _rows_transposed (blas/tile_gemm.h) */
    void (*pack_rows)(size_t rows, size_t cols, const float *x, size_t ldx, uint32_t *dst, size_t ldd);
    void (*pack_columns)(size_t rows, size_t cols, const float *x, size_t ldx, uint32_t *dst, size_t ldd);
    void (*pack_rows_transposed)(size_t rows, size_t cols, const float *x, size_t ldx, uint32_t *dst, size_t ldd);
    /* C (m x n, row stride ldc) = alpha A B + beta C over kp pairs along k:
     * A's pair (i, q) at ap[i * ars + q * aqs], B's pair (q, j) at
     * bp[q * ldb + j], B's pair rows read in whole vectors of 16 words
     * (blas/tile_gemm.h's tile_product). */
    void (*product)(size_t m, size_t n, size_t kp, float alpha, const uint32_t *ap, size_t ars, size_t aqs,
                    const uint32_t *bp, size_t ldb, float beta, float *c, size_t ldc);
} Bf16Loops;

extern const Bf16Loops bf16_loops_portable;
#if defined(__x86_64__)
extern const Bf16Loops bf16_loops_avx2, bf16_loops_avx512, bf16_loops_avx512bf16;
#elif defined(__aarch64__)
extern const Bf16Loops bf16_loops_neon;
#endif

/* This run's: avx512bf16's where cpu_bf16(), else the level cpu_isa() names. */
const Bf16Loops *bf16_loops(void);

/* One bf16 half of a packed pair word, as a float: the low half holds the even k. */
static inline float bf16_pair_half(uint32_t w, int high) { return bf16_to_float((uint16_t)(high ? w >> 16 : w)); }

#endif
