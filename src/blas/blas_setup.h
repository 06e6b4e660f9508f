/* Start-up choice of BLIS kernels: the fastest this CPU runs correctly.
 *
 * BLIS (built for the x86_64 family, as Debian builds it) picks its kernels,
 * a "configuration", when it initialises, from the CPU's vendor and family.
 * A release older than the CPU does not recognise it and falls back to its
 * portable C kernels: 0.9.0 on an AMD EPYC of family 26 (Zen 5, AVX-512)
 * chooses "generic" and runs sgemm at a fifth of the skx (AVX-512) kernels'
 * speed. BLIS reads BLIS_ARCH_TYPE (a configuration's number) only when it
 * initialises, so the fix is to restart the program with it set:
 *
 *   1. Compare the library's configuration with the best one the CPU supports
 *      (CPUID, plus XGETBV: the OS must save the AVX / AVX-512 registers).
 *   2. If the library's is slower, run a probe: this program again
 *      (/proc/self/exe) with BLIS_ARCH_TYPE=<candidate>, which checks that
 *      BLIS runs that configuration and that sgemm at the model's shapes
 *      gives the reference results, then exits. A crash, a hang or a wrong
 *      result hurts only the probe.
 *   3. If the probe passed, re-exec the program with BLIS_ARCH_TYPE set.
 *      A marker in the environment tells the new process that the value came
 *      from here, so it reports "selected" and never selects again.
 *
 * A BLIS_ARCH_TYPE set by the environment (a number, or a configuration's
 * name, which is translated to its number) is never overridden; if it names a
 * slower configuration than the CPU could run, the start-up line
 * (blas_describe) says so. One that names no configuration of this BLIS is
 * ignored with a line on stderr (BLIS itself would abort or misread it). Any
 * failed step keeps the library's own choice and prints one line on stderr
 * saying why. When the library already chose the best, nothing is printed.
 *
 * OPENBLAS_CORETYPE, which some environments set because old OpenBLAS builds
 * compute wrong results on their CPU, concerns OpenBLAS only: this project
 * does not link OpenBLAS (PyTorch, in the reference scripts, does).
 *
 * Test hooks (for CPUs where the library already chooses well):
 *   LM_TEST_BLAS_CORENAME=generic   pretend the library chose this
 *                                   configuration by itself (ignored when
 *                                   BLIS_ARCH_TYPE is set)
 *   LM_TEST_BLAS_PROBE=fail         the probe perturbs one sgemm result, so it
 *                                   reports wrong results
 *   LM_TEST_BLAS_PROBE=crash        the probe dies of SIGILL, as an unsupported
 *                                   instruction would make it
 */
#ifndef LM_BLAS_SETUP_H
#define LM_BLAS_SETUP_H

#include <stddef.h>

#include "runtime/cpu.h"

/* Call first thing in main, before any matrix work and before printing
 * anything: it may replace the process (execv) with the same arguments.
 * Never fails the program; at worst the library's own kernels stay. */
void blas_setup(int argc, char **argv);

/* One line for humans, e.g. "BLIS 0.9.0, kernel skx (selected: the library
 * chose generic on this CPU)". Valid until the next call. */
const char *blas_describe(void);
/* The name of the BLIS configuration in use ("skx", "zen3", ...). */
const char *blas_kernel(void);

/* ---- the parts, exposed for tests ------------------------------------------- */

/* BLIS x86_64 configuration names ranked by the instruction set their kernels use. */
typedef enum BlasLevel {
    BLAS_LEVEL_UNKNOWN = 0, /* a name not in the table: never compared */
    BLAS_LEVEL_PORTABLE,    /* generic: plain C */
    BLAS_LEVEL_SSE,         /* penryn */
    BLAS_LEVEL_AVX,         /* sandybridge, bulldozer, piledriver, steamroller, excavator */
    BLAS_LEVEL_AVX2,        /* haswell, zen, zen2, zen3 */
    BLAS_LEVEL_AVX512,      /* skx, knl */
} BlasLevel;

BlasLevel blas_core_level(const char *core); /* case-insensitive */

/* The fastest configuration this CPU supports, or NULL for none worth choosing (no AVX). */
const char *blas_best_core(const CpuFeatures *cpu);

typedef struct BlasDecision {
    const char *switch_to; /* configuration to try instead of the library's; NULL: keep the library's */
    char reason[160];      /* why, for messages */
} BlasDecision;

/* The pure decision: the library's configuration and the CPU's features in,
 * whether to try another one out. Only a known, strictly slower one is replaced. */
BlasDecision blas_decide(const char *library_core, const CpuFeatures *cpu);

#endif
