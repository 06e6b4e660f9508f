/* OpenBLAS behind blas/backend.h (make BLAS=openblas): Debian's
 * libopenblas-openmp-dev 0.3.21, built with DYNAMIC_ARCH (kernels for every
 * x86_64 core in one library, chosen when it loads) and USE_OPENMP. */
#include "blas/backend.h"

#include <cblas.h>
#include <omp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <unistd.h>

#define ENV_CORETYPE "OPENBLAS_CORETYPE"

const BlasCores *blas_backend_cores(void) { return &blas_cores_openblas; }

/* ---- an address-space limit (ulimit -v) ---------------------------------------
 * OpenBLAS 0.3.21 maps a large buffer per thread (when it loads, and more at
 * the first products), and when mmap fails under RLIMIT_AS it retries for
 * ever: the program hangs, before main or in its first step. So before any
 * library initialises (.preinit_array runs first), a limit below what that
 * needs is refused in one line, exit 2. Measured here with 2 threads: start-up
 * needs 350 MiB, a small training run hung at 439 and ran at 586; with 1
 * thread start-up needs 215. The floor below is above all of these. */
#define START_BASE_MIB 128
#define START_THREAD_MIB 256

/* The threads OpenBLAS's OpenMP build starts with: the CPUs this process may
 * use, or OMP_NUM_THREADS when that is fewer. */
static long start_threads(char **envp) {
    cpu_set_t set;
    long cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
    long omp = 0; /* from envp: getenv does not work yet before the libraries initialise */
    for (char **e = envp; e && *e; e++)
        if (strncmp(*e, "OMP_NUM_THREADS=", 16) == 0) omp = strtol(*e + 16, NULL, 10);
    return omp > 0 && omp < cpus ? omp : cpus > 0 ? cpus : 1;
}

static void refuse_small_address_space(int argc, char **argv, char **envp) {
    struct rlimit lim;
    if (getrlimit(RLIMIT_AS, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) return;
    long threads = start_threads(envp);
    unsigned long long need = ((unsigned long long)START_BASE_MIB + (unsigned long long)START_THREAD_MIB * threads) << 20;
    if (lim.rlim_cur >= need) return;
    const char *name = argc > 0 && argv[0] ? argv[0] : "program";
    const char *slash = strrchr(name, '/');
    char line[512];
    int n = snprintf(line, sizeof line,
                     "%s: error: the address-space limit (ulimit -v) of %llu MiB is below the %llu MiB OpenBLAS "
                     "needs for %ld thread%s (it would hang): raise it, or set OMP_NUM_THREADS lower\n",
                     slash ? slash + 1 : name, (unsigned long long)lim.rlim_cur >> 20, need >> 20, threads,
                     threads == 1 ? "" : "s");
    ssize_t written = n > 0 ? write(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1) : 0;
    (void)written; /* nothing else to say it with */
    _exit(2);
}

__attribute__((used, section(".preinit_array"))) static void (*const preinit_address_space)(int, char **, char **) =
    refuse_small_address_space;

/* OpenBLAS initialises itself when it loads (a constructor), reading
 * OPENBLAS_CORETYPE there: nothing left to do. */
void blas_backend_init(void) {}

const char *blas_backend_version(void) {
    /* openblas_get_config() begins "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ...":
     * the library loaded, whatever header this was compiled against. */
    static char text[64];
    char name[24] = "", version[24] = "";
    if (sscanf(openblas_get_config(), "%23s %23s", name, version) == 2) snprintf(text, sizeof text, "%s %s", name, version);
    else snprintf(text, sizeof text, "OpenBLAS");
    return text;
}

const char *blas_backend_core(void) { return openblas_get_corename(); }

int blas_backend_select_value(const char *core, char *value, size_t len) {
    const char *name = blas_core_name(&blas_cores_openblas, core);
    if (!name) return -1;
    snprintf(value, len, "%s", name);
    return 0;
}

/* OpenBLAS has read OPENBLAS_CORETYPE already, when it loaded. A name it does
 * not know (nor "") makes it fall back to its own choice without a word, so
 * the value counts as the environment's choice only if the library runs it,
 * or if it is one of the library's names (Katmai runs Prescott's kernels;
 * SapphireRapids is unknown to 0.3.21): those are never overridden. */
const char *blas_backend_environment_core(void) {
    const char *v = getenv(ENV_CORETYPE);
    if (v && !*v) unsetenv(ENV_CORETYPE);
    v = getenv(ENV_CORETYPE);
    if (!v || !*v) return NULL;
    const char *in_use = blas_backend_core();
    if (strcasecmp(v, in_use) == 0 || blas_core_name(&blas_cores_openblas, v)) return in_use;
    fprintf(stderr, "blas: ignored " ENV_CORETYPE "=%s: not a core of this OpenBLAS (a name: Haswell, SkylakeX, ...)\n", v);
    unsetenv(ENV_CORETYPE);
    return NULL;
}

int blas_backend_reads_variable_at_load(void) { return 1; }

/* ---- products ------------------------------------------------------------------- */

/* The OpenMP build (0.3.21: num_cpu_avail, common_thread.h) runs a call on
 * the calling thread alone when it is inside an active parallel region or
 * omp_get_max_threads() is 1, and otherwise on omp_get_max_threads()
 * threads. The tiles (lm/gemm.h) call from inside our region, but a
 * region of one thread is not active, and the sampler calls from outside
 * any. Those calls run in a region of one thread whose own thread setting is
 * 1: omp_set_num_threads changes only the setting of the task that calls it,
 * here that region's, so the program's thread count is untouched.
 * (openblas_set_num_threads would set the program's, through
 * omp_set_num_threads.) */
#define RUN_ALONE(call)                                                                                                 \
    do {                                                                                                               \
        if (omp_in_parallel() || omp_get_max_threads() == 1) {                                                         \
            call;                                                                                                      \
        } else {                                                                                                       \
            _Pragma("omp parallel num_threads(1)") {                                                                   \
                omp_set_num_threads(1);                                                                                \
                call;                                                                                                  \
            }                                                                                                          \
        }                                                                                                              \
    } while (0)

void blas_backend_sgemm(int trans_a, int trans_b, size_t m, size_t n, size_t k, float alpha, const float *a,
                        size_t lda, const float *b, size_t ldb, float beta, float *c, size_t ldc) {
    RUN_ALONE(cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
                          (blasint)m, (blasint)n, (blasint)k, alpha, a, (blasint)lda, b, (blasint)ldb, beta, c,
                          (blasint)ldc));
}

void blas_backend_sgemv_row(int trans_b, size_t n, size_t k, float alpha, const float *b, size_t ldb,
                            const float *x, size_t incx, float beta, float *c) {
    /* op(B)^T: B^T of a row-major k x n B, or B itself stored n x k. */
    RUN_ALONE(cblas_sgemv(CblasRowMajor, trans_b ? CblasNoTrans : CblasTrans, (blasint)(trans_b ? n : k),
                          (blasint)(trans_b ? k : n), alpha, b, (blasint)ldb, x, (blasint)incx, beta, c, 1));
}
