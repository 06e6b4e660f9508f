/* Start-up choice of the BLAS library's kernels: the fastest this CPU runs
 * correctly. The library is the one the build links (src/blas/backend.h): BLIS
 * or OpenBLAS; "the selecting variable" below is BLIS_ARCH_TYPE for BLIS and
 * OPENBLAS_CORETYPE for OpenBLAS, and the other one concerns a library this
 * build does not link, so it changes nothing here.
 *
 * Both libraries pick their kernels (a BLIS "configuration", an OpenBLAS
 * "core") when they initialise, from the CPU's vendor and family. A release
 * older than the CPU does not recognise it and falls back to slow kernels:
 * BLIS 0.9.0 on an AMD EPYC of family 26 (Zen 5, AVX-512) chooses "generic"
 * and runs sgemm at a fifth of the skx (AVX-512) kernels' speed; OpenBLAS
 * 0.3.21 on a recent Xeon ran Prescott (SSE3) ~4x slower. Each reads its
 * selecting variable only when it initialises (OpenBLAS when it loads,
 * before main), so the fix is to restart the program with it set:
 *
 *   1. Compare the library's choice with the best one the CPU supports
 *      (CPUID, plus XGETBV: the OS must save the AVX / AVX-512 registers).
 *   2. If the library's is slower, run a probe: this program again
 *      (/proc/self/exe) with the selecting variable set to the candidate,
 *      which checks that the library runs those kernels (an OpenBLAS that
 *      does not know a name falls back to its own choice without a word)
 *      and that sgemm at the model's shapes gives the reference results,
 *      then exits. A crash, a hang or a wrong result hurts only the probe.
 *   3. If the probe passed, re-exec the program with the variable set.
 *      A marker in the environment tells the new process that the value came
 *      from here, so it reports "selected" and never selects again.
 *
 * A selecting variable set by the environment is never overridden (a BLIS
 * configuration's name is translated to its number, the form BLIS reads);
 * if it names slower kernels than the CPU could run, the start-up line
 * (blas_describe) says so. An empty one counts as unset, and one that names
 * nothing of the library is ignored with a line on stderr: BLIS itself would
 * abort or misread it, and OpenBLAS, which read it before main, runs kernels
 * of its own fallback rather than its own choice for the CPU, so the program
 * restarts without it and the start-up line names what then runs, the
 * library's choice. Any failed step keeps the library's own
 * choice and prints one line on stderr saying why. When the library already
 * chose the best, nothing is printed.
 *
 * Some environments set OPENBLAS_CORETYPE because old OpenBLAS builds
 * compute wrong results on CPUs they do not know; PyTorch, in the reference
 * scripts, reads it too (through libblas.so.3), whichever library this build
 * links.
 *
 * Test hooks (for CPUs where the library already chooses well):
 *   LM_TEST_BLAS_CORENAME=generic   pretend the library chose these kernels
 *                                   by itself (e.g. BLIS's generic, OpenBLAS's
 *                                   Prescott; ignored when the selecting
 *                                   variable is set)
 *   LM_TEST_BLAS_PROBE=fail         the probe perturbs one sgemm result, so it
 *                                   reports wrong results
 *   LM_TEST_BLAS_PROBE=crash        the probe dies of SIGILL, as an unsupported
 *                                   instruction would make it
 */
#ifndef LM_BLAS_SETUP_H
#define LM_BLAS_SETUP_H

#include <stddef.h>

#include "lm/cores.h" /* the pure parts: ranking and decision */
#include "lm/error.h"

/* Call first thing in main, before any matrix work and before printing
 * anything: it may replace the process (execv) with the same arguments.
 * Fails only on an LM_MAX_ISA this CPU cannot run or that names no level
 * (lm/cpu.h's cpu_isa_check: -1, one line in err, which the program says
 * before it exits); a BLAS kernel that fails its check never fails the
 * program: at worst the library's own kernels stay. */
int blas_setup(int argc, char **argv, Error *err);

/* One line for humans, e.g. "BLIS 0.9.0, kernel skx (selected: the library
 * chose generic on this CPU)" or "OpenBLAS 0.3.21, kernel Cooperlake (the
 * library's choice)". Valid until the next call. */
const char *blas_describe(void);
/* The kernels in use, as the library names them ("skx", "zen3", "Cooperlake", ...). */
const char *blas_kernel(void);

/* The fastest kernels of the linked library this CPU supports, by its
 * table (NULL: none known for this CPU), whatever runs now. */
const char *blas_best_kernel(void);

#endif
