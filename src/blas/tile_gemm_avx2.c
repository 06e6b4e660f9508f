/* The attention tiles' fp32 kernel for x86-64 AVX2 and FMA (x86-64-v3;
 * the Makefile compiles this file with -mavx2 -mfma, and without AVX-512 on
 * any build machine): vectors of 8 floats, a register block of 6 rows x 2
 * vectors (16 columns), 12 accumulators, 2 vectors of B and a broadcast:
 * 15 of the 16 ymm registers, no spills in the loop over k (objdump: no
 * stores to the stack between the loop's label and its branch). Run only
 * where cpu_isa() says AVX2 (lm/cpu.h). See blas/tile_gemm_kernel.h. */
#if defined(__x86_64__)
#define TILE_KERNEL tile_gemm_avx2
#define TILE_TRANSPOSE tile_transpose_avx2
#define LANES 8
#define MAX_ROWS 6
#define MAX_VECS 2
#include "blas/tile_gemm_kernel.h"
#else
typedef int tile_gemm_avx2_unused; /* x86 only: an empty file is not C */
#endif
