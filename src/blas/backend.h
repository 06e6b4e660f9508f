/* The BLAS library this build links (make BLAS=blis or BLAS=openblas): the
 * few things that differ between libraries, implemented once per library in
 * src/blas/backends/<library>.c, of which the Makefile compiles exactly one.
 * The tiles (lm/gemm.h) and the start-up choice of kernels
 * (lm/blas_setup.h) are written once, against this. */
#ifndef LM_BLAS_BACKEND_H
#define LM_BLAS_BACKEND_H

#include <stddef.h>

#include "lm/cores.h"

/* The linked library's kernel sets, their ranking and the variable that selects them. */
const BlasCores *blas_backend_cores(void);

/* Initialises the library once (any thread may call it, any number of times). */
void blas_backend_init(void);

/* "BLIS 0.9.0", "OpenBLAS 0.3.21": the library as loaded, not as compiled against. */
const char *blas_backend_version(void);

/* The kernel set in use, as the library names it ("skx", "Cooperlake"). */
const char *blas_backend_core(void);

/* Writes the value of the selecting variable (BlasCores.env_var) that makes
 * the library run `core` (a name of its table). Returns 0, or -1 if this
 * build of the library lacks that kernel set. */
int blas_backend_select_value(const char *core, char *value, size_t len);

/* The kernel set the environment's selecting variable names, checked
 * against this library: its name, or NULL when the variable is unset (an
 * empty one counts as unset and is removed). A value that names nothing this
 * library runs is removed from the environment, with one line on stderr, so
 * that the library's own choice stands and no restart inherits it. */
const char *blas_backend_environment_core(void);

/* 1 if the library read its selecting variable before main (OpenBLAS, when
 * it loads), so that removing the variable changes nothing until the
 * program restarts; 0 if it reads it when first used (BLIS). */
int blas_backend_reads_variable_at_load(void);

/* Row-major C (m,n) = alpha op(A) op(B) + beta C, computed by the calling
 * thread alone whatever thread settings the library has (the parallelism is
 * ours: lm/gemm.h), so that each result depends only on the call. */
void blas_backend_sgemm(int trans_a, int trans_b, size_t m, size_t n, size_t k, float alpha, const float *a,
                        size_t lda, const float *b, size_t ldb, float beta, float *c, size_t ldc);

/* One row of such a product as a matrix-vector product, single-threaded
 * like blas_backend_sgemm: c (n) = alpha op(B)^T x + beta c, x holding k
 * entries incx apart. sgemm would pack all of B into its panels for each
 * row (a token at a time, in sampling); gemv reads it once, in place. */
void blas_backend_sgemv_row(int trans_b, size_t n, size_t k, float alpha, const float *b, size_t ldb,
                            const float *x, size_t incx, float beta, float *c);

#endif
