/* The bf16 products' error bounds, their double-precision reference, and the
 * start-up check built on them (see lm/bf16.h). */
#include "lm/bf16.h"

#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "lm/rng.h"
#include "lm/threads.h"

#define U_FP32 0x1p-24 /* fp32's unit round-off */
#define U_BF16 0x1p-8  /* bf16's: 8 bits of precision */

static double gamma_n(size_t n) { return (double)n * U_FP32 / (1.0 - (double)n * U_FP32); }

double bf16_accumulation_bound(size_t k, float alpha, double abs_sum, float beta, float c0) {
    return gamma_n(k + 2) * (fabs((double)alpha) * abs_sum + fabs((double)beta * c0)) + (double)k * 0x1p-126;
}

double bf16_rounding_bound(size_t k, float alpha, double abs_sum, float beta, float c0) {
    double input = fabs((double)alpha) * (2.0 * U_BF16 + U_BF16 * U_BF16) * abs_sum;
    double grown = (1.0 + U_BF16) * (1.0 + U_BF16);
    return input + gamma_n(k + 2) * (fabs((double)alpha) * (1.0 + grown) * abs_sum + 2.0 * fabs((double)beta * c0)) +
           (double)k * 0x1p-126;
}

void bf16_reference(int trans_a, int trans_b, size_t n, size_t k, const uint16_t *a, size_t lda, const uint16_t *b,
                    size_t ldb, size_t rows, const size_t *row_index, double *want, double *abs_sum) {
    for (size_t r = 0; r < rows; r++) {
        size_t i = row_index[r];
        double *w = want + r * n, *s = abs_sum + r * n;
        for (size_t j = 0; j < n; j++) w[j] = s[j] = 0.0;
        for (size_t p = 0; p < k; p++) {
            double aip = bf16_to_float(trans_a ? a[p * lda + i] : a[i * lda + p]);
            for (size_t j = 0; j < n; j++) {
                double bpj = bf16_to_float(trans_b ? b[j * ldb + p] : b[p * ldb + j]);
                w[j] += aip * bpj;
                s[j] += fabs(aip * bpj);
            }
        }
    }
}

/* A ragged product (partial tiles everywhere), the baby config's k = 128,
 * the medium's k = 384 and a long k = 1536 (the MLP's down projection): all
 * small enough that the reference costs a few ms. */
static const Bf16Shape default_shapes[] = {{97, 83, 61}, {200, 96, 128}, {96, 160, 384}, {64, 48, 1536}};

#define CHECK_ROWS 24

typedef enum { FORM_NT, FORM_NN, FORM_TN } Form;
static const char *const form_names[] = {"NT", "NN", "TN"};

static uint16_t *random_bf16(size_t count, Rng *r) {
    uint16_t *x = malloc(count * sizeof *x);
    for (size_t i = 0; x && i < count; i++) x[i] = bf16_from_float(2.0f * rng_uniform(r) - 1.0f);
    return x;
}

/* Checks one shape; 0, or -1 with err set. */
static int check_shape(const Bf16Shape *sh, uint64_t seed, bool perturb, double *worst, Error *err) {
    size_t m = sh->m, n = sh->n, k = sh->k;
    size_t rows = m < CHECK_ROWS ? m : CHECK_ROWS, row_index[CHECK_ROWS];
    for (size_t r = 0; r < rows; r++) row_index[r] = rows == m ? r : r * (m - 1) / (rows - 1);
    Rng rng;
    rng_seed(&rng, seed);
    uint16_t *a = random_bf16(m * k, &rng), *b = random_bf16(k * n, &rng);
    uint16_t *at = malloc(k * m * sizeof *at), *bt = malloc(n * k * sizeof *bt);
    float *c0 = malloc(m * n * sizeof *c0), *c = malloc(m * n * sizeof *c);
    double *want = malloc(rows * n * sizeof *want), *abs_sum = malloc(rows * n * sizeof *abs_sum);
    int rc = 0;
    if (!a || !b || !at || !bt || !c0 || !c || !want || !abs_sum) {
        rc = err_set(err, "bf16 check: out of memory for %zux%zux%zu", m, n, k);
        goto done;
    }
    for (size_t i = 0; i < m; i++)
        for (size_t p = 0; p < k; p++) at[p * m + i] = a[i * k + p];
    for (size_t p = 0; p < k; p++)
        for (size_t j = 0; j < n; j++) bt[j * k + p] = b[p * n + j];
    for (size_t i = 0; i < m * n; i++) c0[i] = 2.0f * rng_uniform(&rng) - 1.0f;
    bf16_reference(0, 0, n, k, a, k, b, n, rows, row_index, want, abs_sum); /* the same product in every form */
    for (int form = FORM_NT; form <= FORM_TN && rc == 0; form++)
        for (size_t width = 1; width <= 2 && rc == 0; width++)
            for (int with_beta = 0; with_beta <= 1 && rc == 0; with_beta++) {
                float beta = (float)with_beta;
                memcpy(c, c0, m * n * sizeof *c);
                threads_set_width(width);
                if (form == FORM_NT) rc = bf16_gemm(0, 1, m, n, k, 1.0f, a, k, bt, k, beta, c, n, err);
                else if (form == FORM_NN) rc = bf16_gemm(0, 0, m, n, k, 1.0f, a, k, b, n, beta, c, n, err);
                else rc = bf16_gemm(1, 0, m, n, k, 1.0f, at, m, b, n, beta, c, n, err);
                if (rc) break;
                size_t last = (row_index[rows - 1] + 1) * n - 1; /* a partial tile's last entry */
                if (perturb && form == FORM_TN && width == 2 && with_beta)
                    c[last] += (float)(1e-3 * (abs_sum[rows * n - 1] + 1.0));
                for (size_t r = 0; r < rows && rc == 0; r++)
                    for (size_t j = 0; j < n; j++) {
                        size_t i = row_index[r], at_ij = i * n + j;
                        double ref = want[r * n + j] + beta * (double)c0[at_ij];
                        double bound = bf16_accumulation_bound(k, 1.0f, abs_sum[r * n + j], beta, c0[at_ij]);
                        double ratio = fabs((double)c[at_ij] - ref) / bound;
                        if (isnan(ratio)) ratio = INFINITY;
                        if (ratio > *worst) *worst = ratio;
                        if (ratio > 1.0) {
                            rc = err_set(err,
                                         "bf16 check: %zux%zux%zu %s beta %g width %zu: entry (%zu,%zu) is %.9g, "
                                         "want %.9g, %.3gx the fp32 accumulation bound",
                                         m, n, k, form_names[form], (double)beta, width, i, j, (double)c[at_ij], ref,
                                         ratio);
                            break;
                        }
                    }
            }
done:
    free(a), free(b), free(at), free(bt), free(c0), free(c), free(want), free(abs_sum);
    return rc;
}

int bf16_check(const Bf16Shape *shapes, size_t n_shapes, bool perturb, double *worst, Error *err) {
    if (!shapes) {
        shapes = default_shapes;
        n_shapes = sizeof default_shapes / sizeof default_shapes[0];
    }
    *worst = 0.0;
    /* The tiles of widths 1 and 2 computed on one thread: the same calls on
     * the same tiles as 2 threads make, without waking a pool at start-up. */
    int saved_threads = omp_get_max_threads();
    omp_set_num_threads(1);
    int rc = 0;
    for (size_t s = 0; s < n_shapes && rc == 0; s++)
        rc = check_shape(&shapes[s], 2000 + s, perturb && s == n_shapes - 1, worst, err);
    threads_set_width(0);
    omp_set_num_threads(saved_threads);
    return rc;
}
