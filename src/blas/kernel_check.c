/* The kernels' check: our products against a double-precision reference (see blas/kernel_check.h). */
#include "blas/kernel_check.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "lm/gemm.h"
#include "blas/tile_gemm.h"
#include "lm/rng.h"
#include "lm/threads.h"

void blas_reference_gemm(size_t m, size_t n, size_t k, const float *a, const float *b, double *want) {
    for (size_t i = 0; i < m; i++) {
        double *row = want + i * n;
        for (size_t j = 0; j < n; j++) row[j] = 0.0;
        for (size_t p = 0; p < k; p++) {
            double aip = a[i * k + p];
            const float *brow = b + p * n;
            for (size_t j = 0; j < n; j++) row[j] += aip * brow[j];
        }
    }
}

double blas_gemm_error(size_t count, const float *got, const double *want, float alpha, float beta, const float *c0) {
    double scale = 0.0, worst = 0.0;
    for (size_t i = 0; i < count; i++) {
        double ref = alpha * want[i] + (beta != 0.0f ? beta * (double)c0[i] : 0.0);
        double diff = fabs((double)got[i] - ref);
        if (isnan(diff)) return INFINITY; /* a broken kernel can produce NaN */
        if (fabs(ref) > scale) scale = fabs(ref);
        if (diff > worst) worst = diff;
    }
    return scale > 0.0 ? worst / scale : worst;
}

/* Products like the model's, as m x n x k: a ragged one that leaves partial
 * tiles everywhere, a model-like one with k = 128 (C of the baby config), and
 * one with k = 384 (C of the medium config, more than one of the kernels' k
 * blocks). Small enough that the double-precision reference costs ~10 ms:
 * every program start on a CPU the library misjudges runs them. */
static const struct {
    size_t m, n, k;
} probe_shapes[] = {{97, 83, 61}, {200, 96, 128}, {96, 160, 384}};

/* The three forms the model uses, row-major: C = A B^T (out = in W^T), C = A B, C = A^T B. */
typedef enum { FORM_NT, FORM_NN, FORM_TN } GemmForm;

int blas_probe_gemm(bool perturb, double *worst) {
    *worst = 0.0;
    /* Tiles for 1 and 2 threads, computed on one: the same calls on the same
     * tiles as 2 threads make, without waking a thread pool at start-up. */
    int saved_threads = omp_get_max_threads();
    omp_set_num_threads(1);
    int rc = 0;
    size_t n_shapes = sizeof probe_shapes / sizeof probe_shapes[0];
    for (size_t s = 0; s < n_shapes && rc == 0; s++) {
        size_t m = probe_shapes[s].m, n = probe_shapes[s].n, k = probe_shapes[s].k;
        float *a = malloc(m * k * sizeof *a), *b = malloc(k * n * sizeof *b);
        float *at = malloc(k * m * sizeof *at), *bt = malloc(n * k * sizeof *bt);
        float *c0 = malloc(m * n * sizeof *c0), *c = malloc(m * n * sizeof *c);
        double *want = malloc(m * n * sizeof *want);
        if (!a || !b || !at || !bt || !c0 || !c || !want) {
            *worst = INFINITY;
            rc = -1;
        } else {
            Rng r;
            rng_seed(&r, 1000 + s);
            for (size_t i = 0; i < m * k; i++) a[i] = 2.0f * rng_uniform(&r) - 1.0f;
            for (size_t i = 0; i < k * n; i++) b[i] = 2.0f * rng_uniform(&r) - 1.0f;
            for (size_t i = 0; i < m * n; i++) c0[i] = 2.0f * rng_uniform(&r) - 1.0f;
            tile_transpose(m, k, a, k, at, m);
            tile_transpose(k, n, b, n, bt, k);
            blas_reference_gemm(m, n, k, a, b, want); /* the same product in every form below */
            for (int form = FORM_NT; form <= FORM_TN; form++)
                for (size_t width = 1; width <= 2; width++)
                    for (int with_beta = 0; with_beta <= 1; with_beta++) {
                        float beta = (float)with_beta;
                        memcpy(c, c0, m * n * sizeof *c);
                        threads_set_width(width);
                        if (form == FORM_NT) gemm(0, 1, m, n, k, 1.0f, a, k, bt, k, beta, c, n);
                        else if (form == FORM_NN) gemm(0, 0, m, n, k, 1.0f, a, k, b, n, beta, c, n);
                        else gemm(1, 0, m, n, k, 1.0f, at, m, b, n, beta, c, n);
                        /* The test hook spoils the last entry (a partial tile) of the last case. */
                        if (perturb && s == n_shapes - 1 && form == FORM_TN && width == 2 && with_beta)
                            c[m * n - 1] += 0.03f * (float)fabs(want[m * n - 1]) + 0.03f;
                        double e = blas_gemm_error(m * n, c, want, 1.0f, beta, c0);
                        if (!(e <= *worst)) *worst = e;
                    }
            if (!(*worst <= BLAS_PROBE_TOLERANCE)) rc = -1;
        }
        free(a), free(b), free(at), free(bt), free(c0), free(c), free(want);
    }
    threads_set_width(0);
    omp_set_num_threads(saved_threads);
    return rc;
}

