/* bin/gemm-rate --newton-schulz: Muon's orthogonalisation (lm/optim.h:
 * muon_orthogonalize) timed whole, against the same products timed alone
 * through gemm (see products.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "products.h"
#include "lm/blas_setup.h"
#include "lm/cli.h"
#include "lm/cpu.h"
#include "lm/machine.h"
#include "lm/optim.h"
#include "lm/options.h"
#include "lm/threads.h"

#define NS_ITERATIONS 5
#define ROUNDS 5

/* "RxC" into rows, cols. */
static int matrix_parse(const char *s, size_t *rows, size_t *cols, Error *err) {
    char buf[64];
    if (strlen(s) >= sizeof buf) return err_set(err, "matrix '%.40s...' is too long", s);
    strcpy(buf, s);
    char *x = strchr(buf, 'x');
    if (!x) return err_set(err, "--newton-schulz takes matrices RxC (got '%s')", s);
    *x = '\0';
    if (parse_size(buf, MAX_DIM, rows, "a matrix's rows", err) || parse_size(x + 1, MAX_DIM, cols, "a matrix's columns", err))
        return -1;
    if (*rows == 0 || *cols == 0 || *rows * *cols > MAX_ELEMS) return err_set(err, "matrix '%s' is empty or too large", s);
    return 0;
}

/* One iteration's three products on the wide form (k = the smaller side, n
 * the larger), in the forms muon.c calls them: A = X X^T (or X^T X), A A, and
 * B X (or X B^T). */
static void ns_products(size_t rows, size_t cols, Product out[3]) {
    size_t k = rows < cols ? rows : cols;
    if (rows > cols) {
        out[0] = (Product){.m = k, .n = k, .k = rows, .count = 1, .form = "TN"};
        out[2] = (Product){.m = rows, .n = cols, .k = k, .count = 1, .form = "NT"};
    } else {
        out[0] = (Product){.m = k, .n = k, .k = cols, .count = 1, .form = "NT"};
        out[2] = (Product){.m = rows, .n = cols, .k = k, .count = 1, .form = "NN"};
    }
    out[1] = (Product){.m = k, .n = k, .k = k, .count = 1, .form = "NN"};
}

/* Best seconds of one orthogonalisation over about budget_s (at least 3 calls). */
static double ns_time(float *x, const float *orig, size_t rows, size_t cols, float *scratch, double budget_s) {
    double best = 0.0, start = wall_seconds();
    for (int rep = 0; rep < 3 || (wall_seconds() - start < budget_s && rep < 1000); rep++) {
        memcpy(x, orig, rows * cols * sizeof *x); /* the same input every call, not timed */
        double t0 = wall_seconds();
        muon_orthogonalize(x, rows, cols, scratch);
        double s = wall_seconds() - t0;
        if (best == 0.0 || s < best) best = s;
    }
    return best;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int compare_newton_schulz(const char *prog, char **shapes, size_t n, size_t budget_ms, int json) {
    size_t rows[64], cols[64];
    if (n > 64) return cli_error(prog, "--newton-schulz: at most 64 matrices (got %zu)", n);
    for (size_t i = 0; i < n; i++) {
        Error err;
        if (matrix_parse(shapes[i], &rows[i], &cols[i], &err)) return cli_error(prog, "%s", err.msg);
    }
    double budget_s = (double)budget_ms * 1e-3;
    Rng seed;
    rng_seed(&seed, 1337);
    if (json) printf("{\"blas\":\"%s\",\"threads\":%zu,\"matrices\":[", blas_describe(), threads_max());
    else {
        printf("blas: %s | %zu threads | isa %s\n", blas_describe(), threads_max(), cpu_isa_describe());
        printf("Newton-Schulz (%d iterations) against its products through gemm alone; medians of %d rounds\n",
               NS_ITERATIONS, ROUNDS);
        printf("%-12s %11s %12s %14s %7s\n", "RxC", "ms/call", "NS GFLOP/s", "gemm GFLOP/s", "ratio");
    }
    for (size_t i = 0; i < n; i++) {
        size_t r = rows[i], c = cols[i];
        float *orig = product_operand(r * c, &seed), *x = malloc(r * c * sizeof *x);
        float *scratch = malloc(muon_ns_scratch_floats(r, c) * sizeof *scratch);
        if (!orig || !x || !scratch) {
            free(orig), free(x), free(scratch);
            fprintf(stderr, "%s: error: out of memory for matrix %zux%zu\n", prog, r, c);
            return 1;
        }
        Product prods[3];
        ns_products(r, c, prods);
        double flop = 0.0, ns_s[ROUNDS], gemm_s[ROUNDS];
        for (int p = 0; p < 3; p++) flop += NS_ITERATIONS * product_flops(&prods[p]);
        ns_time(x, orig, r, c, scratch, 0.1); /* warm-up */
        for (int round = 0; round < ROUNDS; round++) { /* alternating, so that a busy spell hits both */
            ns_s[round] = ns_time(x, orig, r, c, scratch, budget_s);
            gemm_s[round] = 0.0;
            for (int p = 0; p < 3; p++) gemm_s[round] += NS_ITERATIONS * product_time(&prods[p], budget_s / 3.0, &seed);
        }
        free(orig), free(x), free(scratch);
        qsort(ns_s, ROUNDS, sizeof ns_s[0], cmp_double);
        qsort(gemm_s, ROUNDS, sizeof gemm_s[0], cmp_double);
        double ns = ns_s[ROUNDS / 2], alone = gemm_s[ROUNDS / 2];
        if (json)
            printf("%s{\"rows\":%zu,\"cols\":%zu,\"flop\":%.6g,\"seconds\":%.9g,\"gflops\":%.4f,\"gemm_gflops\":%.4f,"
                   "\"ratio\":%.4f}", i ? "," : "", r, c, flop, ns, flop / ns * 1e-9, flop / alone * 1e-9, alone / ns);
        else {
            char dims[32];
            snprintf(dims, sizeof dims, "%zux%zu", r, c);
            printf("%-12s %11.4f %12.1f %14.1f %7.2f\n", dims, ns * 1e3, flop / ns * 1e-9, flop / alone * 1e-9,
                   alone / ns);
        }
    }
    if (json) printf("]}\n");
    return 0;
}
