/* The Grassmann mixer's hot loops in portable C (mixers/grassmann_kernel.h):
 * the Makefile compiles this file without AVX (SSE2 on any x86-64) and, on
 * ARM64, without fused multiply-adds (the neon level's file has them). */
#define GRASSMANN_LOOPS grassmann_loops_portable
#define GRASSMANN_ISA "portable"
#include "mixers/grassmann_kernel.h"
