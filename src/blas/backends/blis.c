/* BLIS behind blas/backend.h (make BLAS=blis): Debian's libblis-openmp-dev 0.9. */
#include "blas/backend.h"

#include <blis.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const BlasCores *blas_backend_cores(void) { return &blas_cores_blis; }

/* ---- initialisation ------------------------------------------------------------- */

/* BLIS 0.9.0 aborts when BLIS_ARCH_TYPE is set and its error checking is on
 * while it initialises (it checks the number before registering its
 * configurations), so the check is off for that moment; blas_setup has made
 * sure by then that the number names a configuration this BLIS has. */
static void init_once(void) {
    if (getenv("BLIS_ARCH_TYPE")) {
        errlev_t level = bli_error_checking_level();
        bli_error_checking_level_set(BLIS_NO_ERROR_CHECKING);
        bli_init();
        bli_error_checking_level_set(level);
    } else bli_init();
}

void blas_backend_init(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, init_once);
}

const char *blas_backend_version(void) {
    static char text[64];
    snprintf(text, sizeof text, "BLIS %s", bli_info_get_version_str());
    return text;
}

const char *blas_backend_core(void) {
    blas_backend_init();
    return bli_arch_string(bli_arch_query_id());
}

/* ---- BLIS's configurations by name ---------------------------------------------- */

/* The x86_64 configurations this BLIS was built with (blis.h says which). */
static const arch_t built_archs[] = {
#ifdef BLIS_CONFIG_SKX
    BLIS_ARCH_SKX,
#endif
#ifdef BLIS_CONFIG_KNL
    BLIS_ARCH_KNL,
#endif
#ifdef BLIS_CONFIG_HASWELL
    BLIS_ARCH_HASWELL,
#endif
#ifdef BLIS_CONFIG_SANDYBRIDGE
    BLIS_ARCH_SANDYBRIDGE,
#endif
#ifdef BLIS_CONFIG_PENRYN
    BLIS_ARCH_PENRYN,
#endif
#ifdef BLIS_CONFIG_ZEN3
    BLIS_ARCH_ZEN3,
#endif
#ifdef BLIS_CONFIG_ZEN2
    BLIS_ARCH_ZEN2,
#endif
#ifdef BLIS_CONFIG_ZEN
    BLIS_ARCH_ZEN,
#endif
#ifdef BLIS_CONFIG_EXCAVATOR
    BLIS_ARCH_EXCAVATOR,
#endif
#ifdef BLIS_CONFIG_STEAMROLLER
    BLIS_ARCH_STEAMROLLER,
#endif
#ifdef BLIS_CONFIG_PILEDRIVER
    BLIS_ARCH_PILEDRIVER,
#endif
#ifdef BLIS_CONFIG_BULLDOZER
    BLIS_ARCH_BULLDOZER,
#endif
#ifdef BLIS_CONFIG_GENERIC
    BLIS_ARCH_GENERIC,
#endif
};

/* BLIS_ARCH_TYPE's number for a configuration this BLIS was built with, or -1. */
static int arch_id(const char *name) {
    for (size_t i = 0; i < sizeof built_archs / sizeof built_archs[0]; i++)
        if (strcasecmp(bli_arch_string(built_archs[i]), name) == 0) return (int)built_archs[i];
    return -1;
}

int blas_backend_select_value(const char *core, char *value, size_t len) {
    int id = arch_id(core);
    if (id < 0) return -1;
    snprintf(value, len, "%d", id);
    return 0;
}

/* BLIS reads BLIS_ARCH_TYPE when it initialises, after this check: a number
 * or a name of a configuration this BLIS was built with (a name is rewritten
 * as its number, the form BLIS 0.9 reads). Anything else is removed, since
 * BLIS would abort on it or read a name as 0. */
const char *blas_backend_environment_core(void) {
    const char *v = getenv("BLIS_ARCH_TYPE");
    if (v && !*v) unsetenv("BLIS_ARCH_TYPE"); /* BLIS 0.9 would read "" as 0 (skx) */
    v = getenv("BLIS_ARCH_TYPE");
    if (!v || !*v) return NULL;
    char *end;
    long number = strtol(v, &end, 10);
    int id = *end != '\0' ? arch_id(v) /* a name */
             : number >= 0 && number < BLIS_NUM_ARCHS ? arch_id(bli_arch_string((arch_t)number)) : -1;
    if (id >= 0) {
        char text[16];
        snprintf(text, sizeof text, "%d", id);
        if (strcmp(text, v) == 0 || setenv("BLIS_ARCH_TYPE", text, 1) == 0) return bli_arch_string((arch_t)id);
    }
    fprintf(stderr, "blas: ignored BLIS_ARCH_TYPE=%s: not a configuration of this BLIS (a number or a name: haswell, "
                    "skx, ...)\n", v);
    unsetenv("BLIS_ARCH_TYPE");
    return NULL;
}

int blas_backend_reads_variable_at_load(void) { return 0; } /* at bli_init: blas_backend_init */

/* ---- products ------------------------------------------------------------------- */

/* One thread per call whatever BLIS_NUM_THREADS or OMP_NUM_THREADS say. */
static rntm_t one_thread(void) {
    rntm_t rntm = BLIS_RNTM_INITIALIZER;
    bli_rntm_set_num_threads(1, &rntm);
    return rntm;
}

void blas_backend_sgemm(int trans_a, int trans_b, size_t m, size_t n, size_t k, float alpha, const float *a,
                        size_t lda, const float *b, size_t ldb, float beta, float *c, size_t ldc) {
    blas_backend_init();
    rntm_t rntm = one_thread();
    /* Row-major: a row stride of ld and a column stride of 1, for the matrix as stored. */
    bli_sgemm_ex(trans_a ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, trans_b ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, (dim_t)m,
                 (dim_t)n, (dim_t)k, &alpha, (float *)a, (inc_t)lda, 1, (float *)b, (inc_t)ldb, 1, &beta, c, (inc_t)ldc,
                 1, NULL, &rntm);
}

void blas_backend_sgemv_row(int trans_b, size_t n, size_t k, float alpha, const float *b, size_t ldb,
                            const float *x, size_t incx, float beta, float *c) {
    blas_backend_init();
    rntm_t rntm = one_thread();
    /* op(B)^T (n x k) with general strides: B^T of a row-major k x n B, or B itself stored n x k. */
    inc_t rs_bt = trans_b ? (inc_t)ldb : 1, cs_bt = trans_b ? 1 : (inc_t)ldb;
    bli_sgemv_ex(BLIS_NO_TRANSPOSE, BLIS_NO_CONJUGATE, (dim_t)n, (dim_t)k, &alpha, (float *)b, rs_bt, cs_bt, (float *)x,
                 (inc_t)incx, &beta, c, 1, NULL, &rntm);
}
