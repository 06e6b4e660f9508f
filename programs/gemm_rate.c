/* bin/gemm-rate: how fast the model's matrix products (src/nn/ops.c's gemm:
 * the BLAS library's sgemm on tiles shared by our threads) run on this machine at given
 * shapes, with the kernels and threads the programs use. make bench measures
 * the model's own products with it and divides the model's FLOP rate by the
 * result (model FLOP utilisation). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blas/backend.h"
#include "blas/blas_setup.h"
#include "cli/cli.h"
#include "cli/options.h"
#include "io/json.h"
#include "model/config.h"
#include "nn/ops.h"
#include "runtime/error.h"
#include "runtime/machine.h"
#include "runtime/threads.h"

#define MAX_DIM (1u << 20)
#define MAX_ELEMS ((size_t)1 << 28) /* 1 GiB of floats per matrix */
#define MAX_COUNT 100000

static const CliProgram program = {
    .name = "gemm-rate",
    .usage = "bin/gemm-rate [options] PRODUCT...\nbin/gemm-rate --best-core",
    .about = "Times single-precision matrix products (row-major, alpha 1, beta 0) as the\n"
             "model makes them: the BLAS library's sgemm (BLIS or OpenBLAS, as built) with\n"
             "the kernels the other programs choose, on\n"
             "tiles shared by the threads; prints each product's GFLOP/s and the rate of\n"
             "all of them together.\n"
             "\n"
             "PRODUCT is MxNxK:FORM or MxNxK:FORM:COUNT, C being M x N and 2MNK FLOPs:\n"
             "  NT   C = A B^T, A M x K, B N x K   (forward: out = in W^T)\n"
             "  NN   C = A B,   A M x K, B K x N   (backward: dX = dY W)\n"
             "  TN   C = A^T B, A K x M, B K x N   (backward: dW = dY^T X)\n"
             "  COUNT how many such products one step makes (default 1): the combined rate\n"
             "        is their total FLOPs over their total time.\n"
             "Each product is warmed up, then timed in repetitions of enough calls to last\n"
             "a few milliseconds; the best repetition counts.\n",
    .column = 22,
    .positional = 1,
};

typedef struct Product {
    size_t m, n, k, count;
    char form[3];
    double seconds; /* best time of one call */
} Product;

/* "MxNxK:FORM[:COUNT]" into p; a one-line reason on failure. */
static int parse_product(const char *s, Product *p, Error *err) {
    char buf[128];
    if (strlen(s) >= sizeof buf) return err_set(err, "product '%.40s...' is too long", s);
    strcpy(buf, s);
    char *dims = buf, *form = strchr(buf, ':');
    if (!form) return err_set(err, "product '%s' needs a form: MxNxK:NT, :NN or :TN", s);
    *form++ = '\0';
    char *count = strchr(form, ':');
    if (count) *count++ = '\0';
    size_t d[3];
    char *part = dims;
    for (int i = 0; i < 3; i++) {
        char *x = strchr(part, 'x');
        if ((i < 2) != (x != NULL)) return err_set(err, "product '%s' needs three sizes MxNxK", s);
        if (x) *x = '\0';
        if (parse_size(part, MAX_DIM, &d[i], "a product's size", err)) return -1;
        if (d[i] == 0) return err_set(err, "product '%s' has a zero size", s);
        part = x ? x + 1 : part;
    }
    if (strcmp(form, "NT") && strcmp(form, "NN") && strcmp(form, "TN"))
        return err_set(err, "product '%s': the form must be NT, NN or TN (got '%s')", s, form);
    p->count = 1;
    if (count) {
        if (parse_size(count, MAX_COUNT, &p->count, "a product's count", err)) return -1;
        if (p->count == 0) return err_set(err, "product '%s' has a zero count", s);
    }
    p->m = d[0], p->n = d[1], p->k = d[2];
    if (p->m * p->k > MAX_ELEMS || p->n * p->k > MAX_ELEMS || p->m * p->n > MAX_ELEMS)
        return err_set(err, "product '%s' is too large (at most %zu entries per matrix)", s, MAX_ELEMS);
    memcpy(p->form, form, 3);
    p->seconds = 0.0;
    return 0;
}

static void run_product(const Product *p, const float *a, const float *b, float *c) {
    size_t m = p->m, n = p->n, k = p->k;
    if (!strcmp(p->form, "NT")) gemm(0, 1, m, n, k, 1.0f, a, k, b, k, 0.0f, c, n);
    else if (!strcmp(p->form, "NN")) gemm(0, 0, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
    else gemm(1, 0, m, n, k, 1.0f, a, m, b, n, 0.0f, c, n);
}

static float *random_matrix(size_t count, uint64_t *state) {
    float *x = malloc(count * sizeof *x);
    for (size_t i = 0; x && i < count; i++) {
        *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
        x[i] = (float)((double)(*state >> 40) / (double)(1u << 24) - 0.5);
    }
    return x;
}

/* Best seconds per call over repetitions of `inner` calls each, about
 * budget_s in all (at least 3 repetitions); 0 if memory ran out. */
static double time_product(const Product *p, double budget_s, uint64_t *seed) {
    float *a = random_matrix(p->m * p->k, seed), *b = random_matrix(p->n * p->k, seed);
    float *c = malloc(p->m * p->n * sizeof *c);
    double best = 0.0;
    if (a && b && c) {
        run_product(p, a, b, c); /* warm-up: thread pool, buffers, caches */
        double t0 = wall_seconds();
        run_product(p, a, b, c);
        double one = wall_seconds() - t0;
        double rep_s = budget_s / 8.0; /* aim at ~8 repetitions */
        size_t inner = one > 0.0 && one < rep_s ? (size_t)(rep_s / one) : 1;
        double start = wall_seconds();
        for (int rep = 0; rep < 3 || (wall_seconds() - start < budget_s && rep < 100); rep++) {
            t0 = wall_seconds();
            for (size_t i = 0; i < inner; i++) run_product(p, a, b, c);
            double per_call = (wall_seconds() - t0) / (double)inner;
            if (best == 0.0 || per_call < best) best = per_call;
        }
    }
    free(a);
    free(b);
    free(c);
    return best;
}

static double flops(const Product *p) { return 2.0 * (double)p->m * (double)p->n * (double)p->k; }

int main(int argc, char **argv) {
    blas_setup(argc, argv); /* first: it may restart the program with faster kernels */
    size_t threads = 0, budget_ms = 30;
    int json = 0, best_core = 0, first;
    Error err;
    CliOption opts[] = {
        CLI_SIZE("threads", 0, &threads, 0, 1024, "N", "OpenMP/OpenBLAS threads (default: all cores)"),
        CLI_SIZE("ms", 0, &budget_ms, 0, 60000, "T", "time spent timing each product, in ms (default 30)"),
        CLI_FLAG("json", 0, &json, "print one JSON object instead of text"),
        CLI_FLAG("best-core", 0, &best_core, "print the fastest kernels of the linked library (a BLIS configuration, an OpenBLAS core) this CPU supports and exit"),
    };
    int rc = cli_parse(&program, opts, sizeof opts / sizeof opts[0], argc, argv, &first);
    if (rc != CLI_CONTINUE) return rc;
    const char *prog = program.name;
    if (budget_ms == 0) return cli_error(prog, "--ms must be positive");
    if (best_core) {
        if (first < argc) return cli_error(prog, "--best-core takes no products (got '%s')", argv[first]);
        CpuFeatures cpu;
        cpu_features_detect(&cpu);
        const char *best = blas_best_core(blas_backend_cores(), &cpu);
        printf("%s\n", best ? best : "none");
        return 0;
    }
    if (first == argc) return cli_error(prog, "no products to time: give MxNxK:FORM (see --help)");
    size_t n_prod = (size_t)(argc - first);
    Product *prods = calloc(n_prod, sizeof *prods);
    if (!prods) {
        fprintf(stderr, "%s: error: out of memory\n", prog);
        return 1;
    }
    for (size_t i = 0; i < n_prod; i++)
        if (parse_product(argv[first + (int)i], &prods[i], &err)) {
            free(prods);
            return cli_error(prog, "%s", err.msg);
        }
    threads_use(threads);

    uint64_t seed = 1337;
    /* Warm-up: a freshly started process sometimes runs its first ~50 ms of
     * two-thread products at a fraction of the speed (seen here as 8 ms
     * instead of 0.5 ms a call through a whole product's timing), so the
     * machine gets 100 ms of products before anything is timed. */
    time_product(&prods[0], 0.1, &seed);
    double total_flop = 0.0, total_s = 0.0;
    for (size_t i = 0; i < n_prod; i++) {
        Product *p = &prods[i];
        p->seconds = time_product(p, (double)budget_ms * 1e-3, &seed);
        if (p->seconds <= 0.0) {
            fprintf(stderr, "%s: error: out of memory for product %zux%zux%zu\n", prog, p->m, p->n, p->k);
            free(prods);
            return 1;
        }
        total_flop += (double)p->count * flops(p);
        total_s += (double)p->count * p->seconds;
    }
    if (json) {
        char *blas = NULL;
        sb_append_json_string(&blas, blas_describe());
        printf("{\"blas\":%s,\"threads\":%zu,\"products\":[", blas, threads_max());
        sb_free(&blas);
        for (size_t i = 0; i < n_prod; i++) {
            const Product *p = &prods[i];
            printf("%s{\"m\":%zu,\"n\":%zu,\"k\":%zu,\"form\":\"%s\",\"count\":%zu,\"seconds\":%.9g,\"gflops\":%.4f}",
                   i ? "," : "", p->m, p->n, p->k, p->form, p->count, p->seconds, flops(p) / p->seconds * 1e-9);
        }
        printf("],\"total_flop\":%.6g,\"total_seconds\":%.9g,\"gflops\":%.4f}\n", total_flop, total_s,
               total_flop / total_s * 1e-9);
    } else {
        printf("blas: %s | %zu threads\n", blas_describe(), threads_max());
        printf("%-20s %4s %6s %11s %9s\n", "MxNxK", "form", "count", "ms/call", "GFLOP/s");
        for (size_t i = 0; i < n_prod; i++) {
            const Product *p = &prods[i];
            char dims[64];
            snprintf(dims, sizeof dims, "%zux%zux%zu", p->m, p->n, p->k);
            printf("%-20s %4s %6zu %11.4f %9.1f\n", dims, p->form, p->count, p->seconds * 1e3,
                   flops(p) / p->seconds * 1e-9);
        }
        printf("all: %.4g GFLOP in %.3f ms: %.1f GFLOP/s\n", total_flop * 1e-9, total_s * 1e3, total_flop / total_s * 1e-9);
    }
    free(prods);
    return 0;
}
