/* What this CPU can run, from CPUID: the vector instruction sets the
 * kernels may use. */
#ifndef LM_CPU_H
#define LM_CPU_H

#include <stdbool.h>

/* What the CPU can run. A flag is set only if the OS also saves the
 * registers it needs (XCR0), since otherwise the instructions fault. */
typedef struct CpuFeatures {
    char vendor[13]; /* "GenuineIntel", "AuthenticAMD", ... ("" if unknown) */
    bool avx, avx2, fma;
    bool avx512f, avx512bw, avx512vl, avx512dq, avx512cd;
    bool avx512bf16; /* bfloat16 dot products: OpenBLAS's Cooperlake kernels check for it */
} CpuFeatures;

/* Fills cpu. Test hook: LM_TEST_CPU_HIDE, a comma-separated list of the
 * flags' names above (e.g. "avx512bf16"), makes detection report those
 * absent, as on a CPU without them, so that the paths taken there can be
 * tested here (tests/cli_test.sh: bin/train --precision bf16's refusal).
 * Hiding avx or avx512f hides what needs it too; names not listed above are
 * ignored. Read once, at the first call. */
void cpu_features_detect(CpuFeatures *cpu);

#endif
