/* The Grassmann mixer's hot loops for ARM64 Advanced SIMD with its fused
 * multiply-adds (mixers/grassmann_kernel.h). Run only where cpu_isa() says
 * neon (lm/cpu.h). */
#if defined(__aarch64__)
#define GRASSMANN_LOOPS grassmann_loops_neon
#define GRASSMANN_ISA "neon"
#include "mixers/grassmann_kernel.h"
#else
typedef int grassmann_loops_neon_unused; /* ARM64 only: an empty file is not C */
#endif
