/* One-sided Jacobi (Hestenes) singular values of a small dense matrix. */
#include "nn/svd.h"

#include <math.h>
#include <stdlib.h>

static int desc(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a < b) - (a > b);
}

/* Rotates column pairs (p, q) of a until all are orthogonal; the column
 * norms are then the singular values. Stable for rank-deficient matrices:
 * a zero column is never rotated (its products are 0). */
int singular_values(double *a, size_t m, size_t n, double *sv) {
    int sweep;
    for (sweep = 1; sweep <= 60; sweep++) {
        int rotated = 0;
        for (size_t p = 0; p + 1 < n; p++)
            for (size_t q = p + 1; q < n; q++) {
                double alpha = 0.0, beta = 0.0, gamma = 0.0;
                for (size_t i = 0; i < m; i++) {
                    double x = a[i * n + p], y = a[i * n + q];
                    alpha += x * x;
                    beta += y * y;
                    gamma += x * y;
                }
                if (gamma == 0.0 || fabs(gamma) <= 1e-13 * sqrt(alpha * beta)) continue;
                rotated = 1;
                double zeta = (beta - alpha) / (2.0 * gamma);
                double t = (zeta >= 0 ? 1.0 : -1.0) / (fabs(zeta) + sqrt(1.0 + zeta * zeta));
                double c = 1.0 / sqrt(1.0 + t * t), s = c * t;
                for (size_t i = 0; i < m; i++) {
                    double x = a[i * n + p], y = a[i * n + q];
                    a[i * n + p] = c * x - s * y;
                    a[i * n + q] = s * x + c * y;
                }
            }
        if (!rotated) break;
    }
    for (size_t j = 0; j < n; j++) {
        double s = 0.0;
        for (size_t i = 0; i < m; i++) s += a[i * n + j] * a[i * n + j];
        sv[j] = sqrt(s);
    }
    qsort(sv, n, sizeof *sv, desc);
    return sweep;
}
