/* Small matrix products for the attention tiles, without packing (see src/blas/tile_gemm.h), and
 * the transposition: the kernels of the run's instruction-set level. */
#include "blas/tile_gemm.h"

#include <pthread.h>

#include "lm/cpu.h"

/* One kernel per instruction-set level, each its own file compiled with its
 * level's flags (blas/tile_gemm_kernel.h), and the one this run uses:
 * cpu_isa()'s level, chosen once. */
typedef void TileKernel(size_t m, size_t n, size_t k, float alpha, const float *a, size_t rsa, size_t csa,
                        const float *b, size_t ldb, float beta, float *c, size_t ldc);
typedef void TileTranspose(size_t rows, size_t cols, const float *src, size_t lds, float *dst, size_t ldd);
TileKernel tile_gemm_portable;
TileTranspose tile_transpose_portable;
#if defined(__x86_64__)
TileKernel tile_gemm_avx2, tile_gemm_avx512;
TileTranspose tile_transpose_avx2; /* AVX-512's too: the same 8-float shuffles, tested on any AVX2 CPU */
#elif defined(__aarch64__)
TileKernel tile_gemm_neon;
TileTranspose tile_transpose_neon;
#endif

static TileKernel *kernel = tile_gemm_portable;
static TileTranspose *transpose = tile_transpose_portable;
static pthread_once_t kernel_once = PTHREAD_ONCE_INIT;

static void choose_kernel(void) {
#if defined(__x86_64__)
    switch (cpu_isa()) {
    case CPU_ISA_AVX512: kernel = tile_gemm_avx512, transpose = tile_transpose_avx2; break;
    case CPU_ISA_AVX2: kernel = tile_gemm_avx2, transpose = tile_transpose_avx2; break;
    default: break;
    }
#elif defined(__aarch64__)
    if (cpu_isa() == CPU_ISA_NEON) kernel = tile_gemm_neon, transpose = tile_transpose_neon;
#endif
}

void tile_gemm(size_t m, size_t n, size_t k, float alpha, const float *a, size_t rsa, size_t csa, const float *b,
               size_t ldb, float beta, float *c, size_t ldc) {
    pthread_once(&kernel_once, choose_kernel);
    kernel(m, n, k, alpha, a, rsa, csa, b, ldb, beta, c, ldc);
}

void tile_transpose(size_t rows, size_t cols, const float *src, size_t lds, float *dst, size_t ldd) {
    pthread_once(&kernel_once, choose_kernel);
    transpose(rows, cols, src, lds, dst, ldd);
}
