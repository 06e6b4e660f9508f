/* bin/gemm-rate: how fast the model's matrix products (src/blas/gemm.c's gemm:
 * the BLAS library's sgemm on tiles shared by our threads) run on this machine at given
 * shapes, with the kernels and threads the programs use. make bench measures
 * the model's own products with it and divides the model's FLOP rate by the
 * result (model FLOP utilisation). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "products.h"
#include "lm/bf16.h"
#include "lm/blas_setup.h"
#include "lm/cpu.h"
#include "lm/cli.h"
#include "lm/options.h"
#include "lm/json.h"
#include "lm/config.h"
#include "lm/error.h"
#include "lm/machine.h"
#include "lm/rng.h"
#include "lm/threads.h"


static const CliProgram program = {
    .name = "gemm-rate",
    .usage = "bin/gemm-rate [options] PRODUCT...\nbin/gemm-rate --best-core\nbin/gemm-rate --isa-levels\n"
             "bin/gemm-rate --read-rate MB",
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
             "a few milliseconds; the best repetition counts.\n"
             "\n"
             "--bf16 compares the fp32 products with bf16 ones (lm/bf16.h: bf16 inputs,\n"
             "fp32 accumulation and C, on oneDNN), both cut into the same tiles: the median\n"
             "of 9 repetitions of each, in GFLOP/s, for beta 0 and for beta 1 (C += A B,\n"
             "oneDNN's sum post-op). The inputs' rounding to bf16 is not timed. Needs a CPU\n"
             "with AVX512_BF16. With --json one object: per product fp32_gflops,\n"
             "bf16_gflops, bf16_acc_gflops and kernel; fp32_gflops and gflops (bf16) over\n"
             "all, by count, TN at C += A B as the weight gradients accumulate.\n"
             "\n"
             "--tile compares the attention tiles' own kernel (lm/gemm.h's tile_gemm, at\n"
             "the run's instruction-set level: LM_MAX_ISA caps it) with the library's sgemm\n"
             "on one thread, at NN and TN products: best of 3 alternating rounds each, in\n"
             "GFLOP/s, and their ratio.\n"
             "\n"
             "--newton-schulz takes matrices RxC[:COUNT] instead of products: Muon's\n"
             "orthogonalisation of all of them (lm/optim.h: 5 iterations of 3 products\n"
             "each, the matrices shared among the threads, each on one, as the step does)\n"
             "timed whole, against the same products timed alone through the tiled gemm:\n"
             "medians of 5 alternating rounds, in GFLOP/s, and their ratio.\n"
             "\n"
             "--read-rate MB times a plain read of a buffer of MB megabytes (10^6 bytes) on\n"
             "one thread, the sum of its floats, as a decode step reads its weights: the\n"
             "best of 9 passes after one untimed, in GB/s (what a matrix-vector product\n"
             "can reach at that size: from cache below the last level's size, else memory).\n",
    .column = 22,
    .positional = 1,
};

/* The sum of n floats, 64 at a time into 4 accumulators of 16 lanes (the
 * loads, not the adds, are the limit), so that nothing is optimised away. */
static float read_floats(const float *x, size_t n) {
    float acc[64] = {0};
    size_t i = 0;
    for (; i + 64 <= n; i += 64)
#pragma omp simd
        for (size_t j = 0; j < 64; j++) acc[j] += x[i + j];
    float s = 0.0f;
    for (size_t j = 0; j < 64; j++) s += acc[j];
    for (; i < n; i++) s += x[i];
    return s;
}

/* --read-rate: the best of 9 timed passes over mb megabytes, in GB/s. */
static int read_rate(const char *prog, size_t mb, int json) {
    size_t n = mb * 1000000 / sizeof(float);
    float *x = malloc(n * sizeof *x);
    if (!x) return cli_error(prog, "out of memory for %zu MB", mb);
    for (size_t i = 0; i < n; i++) x[i] = (float)(i & 1023);
    volatile float sink = read_floats(x, n);
    double best = 0.0;
    for (int pass = 0; pass < 9; pass++) {
        double t0 = wall_seconds();
        sink = read_floats(x, n);
        double s = wall_seconds() - t0;
        best = s > 0 && (best == 0.0 || s < best) ? s : best;
    }
    (void)sink;
    free(x);
    double gbs = (double)n * sizeof(float) / best * 1e-9;
    if (json) printf("{\"read_mb\":%zu,\"seconds\":%.9g,\"gb_per_s\":%.3f}\n", mb, best, gbs);
    else printf("read %zu MB: %.3f ms, %.2f GB/s (1 thread, best of 9)\n", mb, best * 1e3, gbs);
    return 0;
}

int main(int argc, char **argv) {
    Error setup_err; /* first: it may restart the program with faster kernels */
    if (blas_setup(argc, argv, &setup_err)) return cli_error(program.name, "%s", setup_err.msg);
    size_t threads = 0, budget_ms = 30, read_mb = 0;
    int json = 0, best_core = 0, bf16 = 0, tile = 0, isa_levels = 0, newton_schulz = 0, first;
    Error err;
    OptionRow opts[] = {
        CLI_SIZE("threads", 0, &threads, 0, 1024, "N", "OpenMP/OpenBLAS threads (default: all cores)"),
        CLI_SIZE("ms", 0, &budget_ms, 0, 60000, "T", "time spent timing each product, in ms (default 30)"),
        CLI_FLAG("json", 0, &json, "print one JSON object instead of text"),
        CLI_FLAG("bf16", 0, &bf16, "compare fp32 with bf16 products (median GFLOP/s; see above)"),
        CLI_FLAG("tile", 0, &tile, "compare the attention tile kernel with the library's sgemm, 1 thread (see above)"),
        CLI_FLAG("newton-schulz", 0, &newton_schulz, "time Muon's orthogonalisation of matrices RxC[:COUNT] against its products (see above)"),
        CLI_FLAG("isa-levels", 0, &isa_levels, "print the instruction-set levels of our kernels this CPU runs, lowest first, one a line (LM_MAX_ISA takes each) and exit"),
        CLI_SIZE("read-rate", 0, &read_mb, 1, 100000, "MB", "time a plain read of MB megabytes on one thread, in GB/s, and exit"),
        CLI_FLAG("best-core", 0, &best_core, "print the fastest kernels of the linked library (a BLIS configuration, an OpenBLAS core) this CPU supports and exit"),
    };
    int rc = cli_parse(&program, opts, sizeof opts / sizeof opts[0], argc, argv, &first);
    if (rc != CLI_CONTINUE) return rc;
    const char *prog = program.name;
    if (budget_ms == 0) return cli_error(prog, "--ms must be positive");
    if (isa_levels) {
        if (first < argc) return cli_error(prog, "--isa-levels takes no products (got '%s')", argv[first]);
        for (int level = CPU_ISA_PORTABLE; level < CPU_ISA_COUNT; level++)
            if (cpu_isa_runs((CpuIsa)level)) printf("%s\n", cpu_isa_name((CpuIsa)level));
        return 0;
    }
    if (read_mb) {
        if (first < argc) return cli_error(prog, "--read-rate takes no products (got '%s')", argv[first]);
        return read_rate(prog, read_mb, json);
    }
    if (best_core) {
        if (first < argc) return cli_error(prog, "--best-core takes no products (got '%s')", argv[first]);
        const char *best = blas_best_kernel();
        printf("%s\n", best ? best : "none");
        return 0;
    }
    if (first == argc) return cli_error(prog, "no products to time: give MxNxK:FORM (see --help)");
    if (newton_schulz) {
        if (bf16 || tile) return cli_error(prog, "--newton-schulz is a comparison of its own: give it alone");
        threads_use(threads);
        return compare_newton_schulz(prog, argv + first, (size_t)(argc - first), budget_ms, json);
    }
    size_t n_prod = (size_t)(argc - first);
    Product *prods = calloc(n_prod, sizeof *prods);
    if (!prods) {
        fprintf(stderr, "%s: error: out of memory\n", prog);
        return 1;
    }
    for (size_t i = 0; i < n_prod; i++)
        if (product_parse(argv[first + (int)i], &prods[i], &err)) {
            free(prods);
            return cli_error(prog, "%s", err.msg);
        }
    threads_use(threads);
    if (bf16 && tile) {
        free(prods);
        return cli_error(prog, "--bf16 and --tile are separate comparisons: give one");
    }
    if (bf16 || tile) {
        rc = bf16 ? compare_bf16(prog, prods, n_prod, budget_ms, json) : compare_tile(prog, prods, n_prod, budget_ms, json);
        free(prods);
        return rc;
    }

    Rng seed;
    rng_seed(&seed, 1337);
    /* Warm-up: a freshly started process sometimes runs its first ~50 ms of
     * two-thread products at a fraction of the speed (seen here as 8 ms
     * instead of 0.5 ms a call through a whole product's timing), so the
     * machine gets 100 ms of products before anything is timed. */
    product_time(&prods[0], 0.1, &seed);
    double total_flop = 0.0, total_s = 0.0;
    for (size_t i = 0; i < n_prod; i++) {
        Product *p = &prods[i];
        p->seconds = product_time(p, (double)budget_ms * 1e-3, &seed);
        if (p->seconds <= 0.0) {
            fprintf(stderr, "%s: error: out of memory for product %zux%zux%zu\n", prog, p->m, p->n, p->k);
            free(prods);
            return 1;
        }
        total_flop += (double)p->count * product_flops(p);
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
                   i ? "," : "", p->m, p->n, p->k, p->form, p->count, p->seconds, product_flops(p) / p->seconds * 1e-9);
        }
        printf("],\"total_flop\":%.6g,\"total_seconds\":%.9g,\"gflops\":%.4f}\n", total_flop, total_s,
               total_flop / total_s * 1e-9);
    } else {
        printf("blas: %s | %zu threads | isa %s\n", blas_describe(), threads_max(), cpu_isa_describe());
        printf("%-20s %4s %6s %11s %9s\n", "MxNxK", "form", "count", "ms/call", "GFLOP/s");
        for (size_t i = 0; i < n_prod; i++) {
            const Product *p = &prods[i];
            char dims[64];
            snprintf(dims, sizeof dims, "%zux%zux%zu", p->m, p->n, p->k);
            printf("%-20s %4s %6zu %11.4f %9.1f\n", dims, p->form, p->count, p->seconds * 1e3,
                   product_flops(p) / p->seconds * 1e-9);
        }
        printf("all: %.4g GFLOP in %.3f ms: %.1f GFLOP/s\n", total_flop * 1e-9, total_s * 1e3, total_flop / total_s * 1e-9);
    }
    free(prods);
    return 0;
}
