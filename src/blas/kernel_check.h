/* The check a candidate set of BLAS kernels must pass before the programs
 * use it (lm/blas_setup.h runs it in a probe process): our tiled products
 * against a double-precision reference, at the model's kinds of shapes. */
#ifndef LM_KERNEL_CHECK_H
#define LM_KERNEL_CHECK_H

#include <stdbool.h>
#include <stddef.h>

/* The probe's check. An sgemm result may differ from the double-accumulated
 * reference only by float round-off: at most this much relative to the
 * largest entry of the reference. A wrong kernel misses by far more. */
#define BLAS_PROBE_TOLERANCE 1e-5

/* want[m x n] = a[m x k] b[k x n] accumulated in double; row-major. */
void blas_reference_gemm(size_t m, size_t n, size_t k, const float *a, const float *b, double *want);

/* max_i |got_i - (alpha want_i + beta c0_i)| / max_i |alpha want_i + beta c0_i|
 * over `count` entries; c0 may be NULL when beta is 0. */
double blas_gemm_error(size_t count, const float *got, const double *want, float alpha, float beta, const float *c0);

/* Runs gemm (lm/gemm.h: the tiled products the model makes) in the three
 * forms the model uses (NT: out = in W^T, NN, TN; row-major) at model-like and
 * ragged shapes, alpha 1 with beta 0 and 1, cut into tiles for 1 and 2
 * threads, against blas_reference_gemm. `perturb` spoils one
 * result first (the LM_TEST_BLAS_PROBE=fail hook). Stores the largest error
 * seen in *worst; returns 0 if every case is within BLAS_PROBE_TOLERANCE, -1
 * if not (or if memory ran out: *worst is then infinite). */
int blas_probe_gemm(bool perturb, double *worst);

#endif
