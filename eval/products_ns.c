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

/* "RxC[:COUNT]" into rows, cols, count. */
static int matrix_parse(const char *s, size_t *rows, size_t *cols, size_t *count, Error *err) {
    char buf[64];
    if (strlen(s) >= sizeof buf) return err_set(err, "matrix '%.40s...' is too long", s);
    strcpy(buf, s);
    char *x = strchr(buf, 'x'), *c = strchr(buf, ':');
    if (!x) return err_set(err, "--newton-schulz takes matrices RxC[:COUNT] (got '%s')", s);
    *x = '\0';
    if (c) *c = '\0';
    *count = 1;
    if (parse_size(buf, MAX_DIM, rows, "a matrix's rows", err) || parse_size(x + 1, MAX_DIM, cols, "a matrix's columns", err) ||
        (c && parse_size(c + 1, MAX_COUNT, count, "a matrix's count", err)))
        return -1;
    if (*rows == 0 || *cols == 0 || *count == 0 || *rows * *cols > MAX_ELEMS)
        return err_set(err, "matrix '%s' is empty or too large", s);
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

/* The matrices of one call: every one's input, its copy to work on, their shapes. */
typedef struct NsSet {
    size_t n, per_thread;
    float **orig, **x, *scratch;
    size_t n_scratch;
    size_t *rows, *cols;
} NsSet;

/* Best seconds of orthogonalising the whole set as Muon's step does, over about budget_s (at least 3 calls). */
static double ns_time(const NsSet *set, double budget_s) {
    double best = 0.0, start = wall_seconds();
    for (int rep = 0; rep < 3 || (wall_seconds() - start < budget_s && rep < 1000); rep++) {
        for (size_t i = 0; i < set->n; i++) /* the same inputs every call, not timed */
            memcpy(set->x[i], set->orig[i], set->rows[i] * set->cols[i] * sizeof(float));
        double t0 = wall_seconds();
        muon_orthogonalize_all(set->x, set->rows, set->cols, set->n, set->scratch, set->n_scratch, set->per_thread);
        double s = wall_seconds() - t0;
        if (best == 0.0 || s < best) best = s;
    }
    return best;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void set_free(NsSet *set) {
    for (size_t i = 0; set->orig && i < set->n; i++) free(set->orig[i]), free(set->x[i]);
    free(set->orig), free(set->x), free(set->scratch), free(set->rows), free(set->cols);
}

int compare_newton_schulz(const char *prog, char **shapes, size_t n, size_t budget_ms, int json) {
    size_t total = 0, rows[64], cols[64], count[64];
    if (n > 64) return cli_error(prog, "--newton-schulz: at most 64 shapes (got %zu)", n);
    for (size_t i = 0; i < n; i++) {
        Error err;
        if (matrix_parse(shapes[i], &rows[i], &cols[i], &count[i], &err)) return cli_error(prog, "%s", err.msg);
        total += count[i];
        if (total > 4096) return cli_error(prog, "--newton-schulz: at most 4096 matrices in all");
    }
    Rng seed;
    rng_seed(&seed, 1337);
    NsSet set = {.n = total};
    set.orig = calloc(total, sizeof *set.orig), set.x = calloc(total, sizeof *set.x);
    set.rows = calloc(total, sizeof *set.rows), set.cols = calloc(total, sizeof *set.cols);
    int ok = set.orig && set.x && set.rows && set.cols;
    double flop = 0.0, alone[ROUNDS], whole[ROUNDS], shape_s[64] = {0};
    for (size_t i = 0, at = 0; ok && i < n; i++) {
        size_t need = rows[i] * cols[i] + muon_ns_scratch_floats(rows[i], cols[i]);
        if (need > set.per_thread) set.per_thread = need;
        Product prods[3];
        ns_products(rows[i], cols[i], prods);
        for (int p = 0; p < 3; p++) flop += (double)count[i] * NS_ITERATIONS * product_flops(&prods[p]);
        for (size_t c = 0; c < count[i]; c++, at++) {
            set.rows[at] = rows[i], set.cols[at] = cols[i];
            set.orig[at] = product_operand(rows[i] * cols[i], &seed);
            set.x[at] = malloc(rows[i] * cols[i] * sizeof(float));
            ok = ok && set.orig[at] && set.x[at];
        }
    }
    set.n_scratch = threads_width() * set.per_thread;
    set.scratch = ok ? malloc(set.n_scratch * sizeof(float)) : NULL;
    if (!set.scratch) {
        set_free(&set);
        fprintf(stderr, "%s: error: out of memory\n", prog);
        return 1;
    }
    double budget_s = (double)budget_ms * 1e-3;
    ns_time(&set, 0.1); /* warm-up */
    for (int round = 0; round < ROUNDS; round++) { /* alternating, so that a busy spell hits both */
        whole[round] = ns_time(&set, budget_s);
        alone[round] = 0.0;
        for (size_t i = 0; i < n; i++) {
            Product prods[3];
            ns_products(rows[i], cols[i], prods);
            double s = 0.0;
            for (int p = 0; p < 3; p++) s += NS_ITERATIONS * product_time(&prods[p], budget_s / 3.0, &seed);
            alone[round] += (double)count[i] * s;
            if (round == ROUNDS / 2) shape_s[i] = s;
        }
    }
    set_free(&set);
    qsort(whole, ROUNDS, sizeof whole[0], cmp_double);
    qsort(alone, ROUNDS, sizeof alone[0], cmp_double);
    double ns = whole[ROUNDS / 2], gemm_s = alone[ROUNDS / 2];
    if (json) {
        printf("{\"blas\":\"%s\",\"threads\":%zu,\"matrices\":%zu,\"flop\":%.6g,\"seconds\":%.9g,\"gflops\":%.4f,"
               "\"gemm_seconds\":%.9g,\"gemm_gflops\":%.4f,\"ratio\":%.4f}\n",
               blas_describe(), threads_max(), total, flop, ns, flop / ns * 1e-9, gemm_s, flop / gemm_s * 1e-9,
               gemm_s / ns);
        return 0;
    }
    printf("blas: %s | %zu threads | isa %s\n", blas_describe(), threads_max(), cpu_isa_describe());
    printf("Newton-Schulz (%d iterations, 3 products each) of %zu matrices, shared among the threads a matrix\n"
           "each as Muon's step does, against the same products through gemm alone; medians of %d rounds\n",
           NS_ITERATIONS, total, ROUNDS);
    for (size_t i = 0; i < n; i++) {
        Product prods[3];
        ns_products(rows[i], cols[i], prods);
        double f = 0.0;
        for (int p = 0; p < 3; p++) f += NS_ITERATIONS * product_flops(&prods[p]);
        printf("  %zux%zu x %zu: products alone %.1f GFLOP/s\n", rows[i], cols[i], count[i], f / shape_s[i] * 1e-9);
    }
    printf("all: %.4g GFLOP | Newton-Schulz %.1f ms, %.1f GFLOP/s | products alone %.1f ms, %.1f GFLOP/s | ratio %.2f\n",
           flop * 1e-9, ns * 1e3, flop / ns * 1e-9, gemm_s * 1e3, flop / gemm_s * 1e-9, gemm_s / ns);
    return 0;
}
