/* bfloat16 matrix products for mixed-precision training.
 *
 * The recipe: a product's inputs are rounded from fp32 to bf16 (round to
 * nearest even, once per operand per step), multiplied and accumulated in
 * fp32 into an fp32 C. bf16 keeps fp32's exponent and 8 of its 24 bits of
 * precision, so a rounded operand is within 2^-8 of the original
 * (relatively), while the product of two bf16 numbers is exact in fp32: the
 * only errors are the inputs' rounding and the fp32 accumulation.
 *
 * The products run on oneDNN's matmul, cut into the same tiles as the fp32
 * gemm (lm/gemm.h: tiles fixed by the shape and the parallel width, never by
 * the threads that run them), each tile one single-threaded oneDNN call on
 * one kernel, its jit gemm, whatever the tile's shape and layout (where
 * oneDNN's own pick, brgemm for whole operands, would round some entries
 * differently: src/blas/bf16.c), so results depend neither on the thread
 * count nor on the width that --threads sets. Only on CPUs with AVX512_BF16 (bf16_supported): on
 * others oneDNN would emulate bf16 arithmetic at a fraction of fp32's speed,
 * which is never what a user asking for bf16 wants.
 *
 * Row-major throughout, like gemm(); trans_a / trans_b select op(A) = A^T /
 * op(B) = B^T. bf16 values are held as uint16_t (their bits: the top half of
 * the fp32 number they came from). */
#ifndef LM_BF16_H
#define LM_BF16_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lm/gemm.h"
#include "lm/error.h"

/* The build has oneDNN and the CPU AVX512_BF16 (and the AVX-512 state
 * saved by the OS): the products can run. oneDNN is optional (the Makefile
 * builds without it where it finds none, e.g. on ARM64); such a build, and
 * any non-x86 CPU, runs bf16 nowhere. */
bool bf16_supported(void);
/* 0 where bf16_supported(), else -1 with one line in err: "WHAT needs a
 * CPU with AVX512_BF16, which this one lacks", or in a build without oneDNN
 * "WHAT needs oneDNN, which this build lacks (libdnnl-dev)": bf16 is never
 * emulated (without the instructions it would be slower than fp32). */
int bf16_require(const char *what, Error *err);
/* NULL where bf16_supported(), else why not ("this CPU has no AVX512_BF16",
 * "this build has no oneDNN"): what the tests print when they skip. */
const char *bf16_unavailable(void);

/* ---- conversion ------------------------------------------------------------ */

/* fp32 -> bf16, round to nearest, ties to even. NaN stays NaN (sign and top
 * payload bits kept, made quiet so that rounding never turns it into
 * infinity); values beyond bf16's largest finite number round to infinity;
 * denormals are rounded like any other value (not flushed, unlike the
 * vcvtneps2bf16 instruction). The scalar definition: */
static inline uint16_t bf16_from_float(float x) {
    union {
        float f;
        uint32_t u;
    } v = {.f = x};
    if ((v.u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((v.u >> 16) | 0x0040u);
    v.u += 0x7fffu + ((v.u >> 16) & 1u); /* adds half an ulp, and the tie goes to the even neighbour */
    return (uint16_t)(v.u >> 16);
}

/* bf16 -> fp32: exact. */
static inline float bf16_to_float(uint16_t h) {
    union {
        uint32_t u;
        float f;
    } v = {.u = (uint32_t)h << 16};
    return v.f;
}

/* out[i] = bf16_from_float(x[i]) for n entries, bit for bit the same, with
 * AVX-512 where the CPU has it. */
void bf16_from_floats(size_t n, const float *x, uint16_t *out);
/* The same in parallel over chunks (the calling thread's region or a new
 * one), for whole operands and the weights' shadow. */
void bf16_from_floats_parallel(size_t n, const float *x, uint16_t *out);
/* The scalar loop, always (the tests compare the two). */
void bf16_from_floats_scalar(size_t n, const float *x, uint16_t *out);
/* out[i] = bf16_to_float(h[i]). */
void bf16_to_floats(size_t n, const uint16_t *h, float *out);

/* ---- products --------------------------------------------------------------- */

/* Row-major C (m,n) = alpha * op(A) op(B) + beta * C, A and B in bf16, C in
 * fp32, cut into gemm_tile_grid's tiles run in parallel; with every row of
 * each tile of C first set to bias_rows[j0 ..] (NULL for none; beta must
 * then be 1) and epilogue (NULL for none) called on each finished tile, as
 * gemm_tiled does. beta 0 overwrites C without reading it. Returns 0, or -1
 * with err set (the library refused a shape, or memory ran out; C is then
 * undefined). Requires bf16_supported(). */
int bf16_gemm_tiled(int trans_a, int trans_b, size_t m, size_t n, size_t k, float alpha, const uint16_t *a,
                    size_t lda, const uint16_t *b, size_t ldb, float beta, float *c, size_t ldc,
                    const float *bias_rows, TileEpilogue epilogue, void *ctx, Error *err);

/* The same product computed by the calling thread alone, as one tile (no
 * tiling, no parallel region): for chains of per-row-block products inside a
 * parallel region of the caller's own (nn/mlp.c's, with gemm_row_blocks), as
 * gemm_serial is for fp32. Returns 0, or -1 with err set. */
int bf16_gemm_serial(int trans_a, int trans_b, size_t m, size_t n, size_t k, float alpha, const uint16_t *a,
                     size_t lda, const uint16_t *b, size_t ldb, float beta, float *c, size_t ldc, Error *err);

/* bf16_gemm_tiled without bias or epilogue. */
int bf16_gemm(int trans_a, int trans_b, size_t m, size_t n, size_t k, float alpha, const uint16_t *a, size_t lda,
              const uint16_t *b, size_t ldb, float beta, float *c, size_t ldc, Error *err);

/* The oneDNN implementation that runs one tile of this shape, e.g.
 * "gemm:jit" (for the start-up line and the bench; "ref" ones are
 * slow fallbacks), into buf. Returns 0, or -1 with err set. */
int bf16_gemm_impl(int trans_a, int trans_b, size_t m, size_t n, size_t k, size_t lda, size_t ldb, size_t ldc,
                   char *buf, size_t len, Error *err);

/* "oneDNN 2.6.3 (OpenMP)": the library as loaded. */
const char *bf16_library(void);

/* Frees every thread's cached primitives and buffers (the library and its
 * engine stay). Call when no product runs, e.g. before exit. */
void bf16_release(void);

/* ---- the check ---------------------------------------------------------------- */

/* Error bounds, derived (u = 2^-24, fp32's unit round-off; gamma(n) =
 * n u / (1 - n u)):
 *
 * Against the exact product of the ROUNDED inputs: the products of two bf16
 * numbers are exact in fp32, so the only errors are the k additions of the
 * accumulation (in whatever order and blocking the kernel sums), the scaling
 * by alpha and the addition of beta C: at most k + 2 roundings, so
 *   |c_ij - (alpha S_ij + beta c0_ij)| <= gamma(k + 2) (|alpha| sum_p |a_ip b_pj| + |beta c0_ij|)
 * (a and b the rounded inputs, S their exact product), plus k * 2^-126 for
 * the kernel's flushing of denormal products to zero. */
double bf16_accumulation_bound(size_t k, float alpha, double abs_sum, float beta, float c0);

/* Against the fp32 gemm of the UNROUNDED inputs: each rounded operand is
 * within 2^-8 of the original, so each product term is within
 * 2 * 2^-8 + 2^-16 of its fp32 value, relatively; both results also carry
 * their own accumulation error (as above, with sum |a_r b_r| <= (1 + 2^-8)^2
 * sum |a b|):
 *   |c_bf16 - c_fp32| <= |alpha| (2^-7 + 2^-16) sum_p |a_ip b_pj|
 *                        + gamma(k + 2) (|alpha| (1 + (1 + 2^-8)^2) sum_p |a_ip b_pj| + 2 |beta c0_ij|)
 * with a and b the unrounded inputs. */
double bf16_rounding_bound(size_t k, float alpha, double abs_sum, float beta, float c0);

/* want[i * n + j] = sum_p A(row_i, p) B(p, j) and abs_sum likewise of
 * |A||B|, in double, for the `rows` rows listed in row_index (want and
 * abs_sum have `rows` x n entries). A and B as bf16_gemm takes them (trans,
 * leading dimensions). */
void bf16_reference(int trans_a, int trans_b, size_t n, size_t k, const uint16_t *a, size_t lda, const uint16_t *b,
                    size_t ldb, size_t rows, const size_t *row_index, double *want, double *abs_sum);

/* A product shape the check runs (C m x n, inner size k). */
typedef struct Bf16Shape {
    size_t m, n, k;
} Bf16Shape;

/* The start-up check of the bf16 products, like blas_probe_gemm for fp32:
 * bf16_gemm in the three forms the model uses (NT: out = in W^T, NN, TN)
 * at the given shapes (NULL, 0: a ragged one and model-like ones), alpha 1
 * with beta 0 and 1 (over a C of random values), cut for widths 1 and 2,
 * each against the double-precision product of the rounded inputs on up to
 * 24 rows spread over C (all of them for small m), within
 * bf16_accumulation_bound per entry. *worst: the largest error seen as a
 * fraction of its bound (within bounds: <= 1; infinite for NaN).
 * `perturb` spoils one result first (to see the check fail). Returns 0 if
 * every entry is within its bound, -1 if not (err says where) or if a
 * product or memory failed. Requires bf16_supported(). Like blas_probe_gemm,
 * it leaves the parallel width at its default (threads_set_width(0)): call
 * it before threads_use. */
int bf16_check(const Bf16Shape *shapes, size_t n_shapes, bool perturb, double *worst, Error *err);

#endif
