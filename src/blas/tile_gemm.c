/* Small matrix products for the attention tiles, without packing (see src/blas/tile_gemm.h): the
 * kernel of the run's instruction-set level, and the transposition. */
#include "blas/tile_gemm.h"

#include <pthread.h>

#include "lm/cpu.h"

/* One kernel per instruction-set level, each its own file compiled with its
 * level's flags (blas/tile_gemm_kernel.h), and the one this run uses:
 * cpu_isa()'s level, chosen once. */
typedef void TileKernel(size_t m, size_t n, size_t k, float alpha, const float *a, size_t rsa, size_t csa,
                        const float *b, size_t ldb, float beta, float *c, size_t ldc);
TileKernel tile_gemm_portable;
#if defined(__x86_64__)
TileKernel tile_gemm_avx2, tile_gemm_avx512;
#elif defined(__aarch64__)
TileKernel tile_gemm_neon;
#endif

static TileKernel *kernel = tile_gemm_portable;
static pthread_once_t kernel_once = PTHREAD_ONCE_INIT;

static void choose_kernel(void) {
#if defined(__x86_64__)
    switch (cpu_isa()) {
    case CPU_ISA_AVX512: kernel = tile_gemm_avx512; break;
    case CPU_ISA_AVX2: kernel = tile_gemm_avx2; break;
    default: kernel = tile_gemm_portable; break;
    }
#elif defined(__aarch64__)
    kernel = cpu_isa() == CPU_ISA_NEON ? tile_gemm_neon : tile_gemm_portable;
#endif
}

void tile_gemm(size_t m, size_t n, size_t k, float alpha, const float *a, size_t rsa, size_t csa, const float *b,
               size_t ldb, float beta, float *c, size_t ldc) {
    pthread_once(&kernel_once, choose_kernel);
    kernel(m, n, k, alpha, a, rsa, csa, b, ldb, beta, c, ldc);
}

/* In 16 x 16 blocks: a block's rows are read and its columns written while
 * both stay in cache (row by row, every write would touch another line). */
void tile_transpose(size_t rows, size_t cols, const float *src, size_t lds, float *dst, size_t ldd) {
    for (size_t i0 = 0; i0 < rows; i0 += 16)
        for (size_t j0 = 0; j0 < cols; j0 += 16) {
            size_t i1 = i0 + 16 < rows ? i0 + 16 : rows, j1 = j0 + 16 < cols ? j0 + 16 : cols;
            for (size_t j = j0; j < j1; j++)
                for (size_t i = i0; i < i1; i++) dst[j * ldd + i] = src[i * lds + j];
        }
}
