/* Start-up choice of OpenBLAS kernels: the fastest this CPU runs correctly.
 *
 * OpenBLAS built with DYNAMIC_ARCH picks its kernels (a "core") when it is
 * loaded, from the CPU's model number. A release older than the CPU does not
 * recognise it and falls back to its slowest x86_64 kernels (Prescott, SSE3):
 * 0.3.21 on a Xeon with AVX-512 and AMX ran sgemm ~4x slower than with
 * OPENBLAS_CORETYPE=Cooperlake. The library reads OPENBLAS_CORETYPE only when
 * it loads, so the fix is to restart the program with it set:
 *
 *   1. Compare the library's core with the best one the CPU supports (CPUID,
 *      plus XGETBV: the OS must save the AVX / AVX-512 registers).
 *   2. If the library's is slower, run a probe: this program again
 *      (/proc/self/exe) with OPENBLAS_CORETYPE=<candidate>, which checks that
 *      the library knows the name and that sgemm at the model's shapes gives
 *      the reference results, then exits. A crash, a hang or a wrong result
 *      hurts only the probe.
 *   3. If the probe passed, re-exec the program with OPENBLAS_CORETYPE set.
 *      A marker in the environment tells the new process that the value came
 *      from here, so it reports "selected" and never selects again.
 *
 * An OPENBLAS_CORETYPE set by the environment is never overridden (some sites
 * pin it because a kernel is wrong or crashes on their CPU); if it names a
 * slower kernel than the CPU could run, the start-up line (blas_describe)
 * says so. Any failed
 * step keeps the library's own choice and prints one line on stderr saying
 * why. When the library already chose the best, nothing is printed.
 *
 * Test hooks (for CPUs where the library already chooses well, like the one
 * this project is developed on):
 *   LM_TEST_BLAS_CORENAME=Prescott  pretend the library chose this core by
 *                                   itself (ignored when OPENBLAS_CORETYPE is set)
 *   LM_TEST_BLAS_PROBE=fail         the probe perturbs one sgemm result, so it
 *                                   reports wrong results
 *   LM_TEST_BLAS_PROBE=crash        the probe dies of SIGILL, as an unsupported
 *                                   instruction would make it
 */
#ifndef LM_BLAS_SETUP_H
#define LM_BLAS_SETUP_H

#include <stdbool.h>
#include <stddef.h>

/* Call first thing in main, before any matrix work and before printing
 * anything: it may replace the process (execv) with the same arguments.
 * Never fails the program; at worst the library's own kernels stay. */
void blas_setup(int argc, char **argv);

/* One line for humans, e.g. "OpenBLAS 0.3.21, kernel Cooperlake (selected:
 * the library chose Prescott on this CPU)". Valid until the next call. */
const char *blas_describe(void);

/* ---- the parts, exposed for tests ------------------------------------------- */

/* What the CPU can run. A flag is set only if the OS also saves the
 * registers it needs (XCR0), since otherwise the instructions fault. */
typedef struct CpuFeatures {
    char vendor[13]; /* "GenuineIntel", "AuthenticAMD", ... ("" if unknown) */
    bool avx, avx2, fma;
    bool avx512f, avx512bw, avx512vl, avx512dq, avx512cd;
    bool avx512_bf16;
    bool amx; /* AMX tiles (Sapphire Rapids and later) */
} CpuFeatures;

void cpu_features_detect(CpuFeatures *cpu);

/* OpenBLAS x86_64 core names ranked by the instruction set their kernels use. */
typedef enum BlasLevel {
    BLAS_LEVEL_UNKNOWN = 0, /* a name not in the table: never compared */
    BLAS_LEVEL_SSE,         /* Prescott, Core2, Nehalem, Opteron, Barcelona, ... */
    BLAS_LEVEL_AVX,         /* Sandybridge, Bulldozer, Piledriver, Steamroller */
    BLAS_LEVEL_AVX2,        /* Haswell, Excavator, Zen */
    BLAS_LEVEL_AVX512,      /* SkylakeX */
    BLAS_LEVEL_AVX512_BF16, /* Cooperlake */
    BLAS_LEVEL_AMX,         /* Sapphirerapids (not known to OpenBLAS 0.3.21) */
} BlasLevel;

BlasLevel blas_core_level(const char *core); /* case-insensitive, as OpenBLAS matches names */

/* The fastest core this CPU supports, or NULL for none worth choosing (no AVX). */
const char *blas_best_core(const CpuFeatures *cpu);

typedef struct BlasDecision {
    const char *switch_to; /* core to try instead of the library's; NULL: keep the library's */
    char reason[160];      /* why, for messages */
} BlasDecision;

/* The pure decision: the library's core and the CPU's features in, whether
 * to try another core out. Only a known, strictly slower core is replaced. */
BlasDecision blas_decide(const char *library_core, const CpuFeatures *cpu);

/* The probe's check. An sgemm result may differ from the double-accumulated
 * reference only by float round-off: at most this much relative to the
 * largest entry of the reference. A wrong kernel misses by far more. */
#define BLAS_PROBE_TOLERANCE 1e-5

/* want[m x n] = a[m x k] b[k x n] accumulated in double; row-major. */
void blas_reference_gemm(size_t m, size_t n, size_t k, const float *a, const float *b, double *want);

/* max_i |got_i - (alpha want_i + beta c0_i)| / max_i |alpha want_i + beta c0_i|
 * over `count` entries; c0 may be NULL when beta is 0. */
double blas_gemm_error(size_t count, const float *got, const double *want, float alpha, float beta, const float *c0);

/* Runs cblas_sgemm in the three forms the model uses (NT: out = in W^T, NN,
 * TN; row-major) at model-like and ragged shapes, alpha 1 with beta 0 and 1,
 * on 1 and 2 OpenMP threads, against blas_reference_gemm. `perturb` spoils one
 * result first (the LM_TEST_BLAS_PROBE=fail hook). Stores the largest error
 * seen in *worst; returns 0 if every case is within BLAS_PROBE_TOLERANCE, -1
 * if not (or if memory ran out: *worst is then infinite). */
int blas_probe_gemm(bool perturb, double *worst);

#endif
