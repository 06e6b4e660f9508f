/* Singular values of small dense matrices (one-sided Jacobi), for
 * bin/inspect's spectra of W_q W_k^T; LAPACK is not a dependency. */
#ifndef LM_SVD_H
#define LM_SVD_H

#include <stddef.h>

/* a (m x n, row-major, m >= n) is overwritten; sv (n) gets the singular
 * values in decreasing order. Sweeps until every column pair is orthogonal
 * to ~1e-13 relative (or 60 sweeps); returns the sweeps used. */
int singular_values(double *a, size_t m, size_t n, double *sv);

#endif
