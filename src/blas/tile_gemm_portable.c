/* The attention tiles' fp32 kernel in portable C: vectors of 4 floats,
 * which GCC lowers to SSE2 on any x86-64 (the Makefile compiles this file
 * without AVX), to NEON on ARM64, to scalars elsewhere. Without FMA each
 * step takes a product and a sum (on ARM64, which has fused multiply-adds,
 * the Makefile turns contraction off for this file), so this level's tiles
 * are the same bits on every architecture: 4 x 2 accumulators, 2 of B, a
 * broadcast and a product (12 of 16 xmm). See blas/tile_gemm_kernel.h. */
#define TILE_KERNEL tile_gemm_portable
#define TILE_TRANSPOSE tile_transpose_portable
#define LANES 4
#define MAX_ROWS 4
#define MAX_VECS 2
#include "blas/tile_gemm_kernel.h"
