/* The decode step's matrix-vector kernels for ARM64 Advanced SIMD (NEON),
 * which every ARM64 CPU has (blas/gemv_kernel.h): vectors of 4 floats with
 * fused multiply-adds. Run only where cpu_isa() says neon. */
#if defined(__aarch64__)
#define GEMV_LOOPS gemv_loops_neon
#define GEMV_ISA "neon"
#define LANES 4
#define VECS 4
#include <arm_neon.h>
/* 4 int8 as floats: widened to 16, then 32 bits, converted (sxtl, sxtl, scvtf). */
#define LOAD_Q8(v, p)                                                                          \
    do {                                                                                       \
        int8_t b_[8] = {0};                                                                    \
        memcpy(b_, (p), 4);                                                                    \
        float32x4_t f_ = vcvtq_f32_s32(vmovl_s16(vget_low_s16(vmovl_s8(vld1_s8(b_)))));         \
        memcpy(&(v), &f_, sizeof f_);                                                          \
    } while (0)
#include "blas/gemv_kernel.h"
#else
typedef int gemv_neon_unused; /* ARM64 only: an empty file is not C */
#endif
