/* bin/gemm-rate: how fast the model's matrix products (src/nn/ops.c's gemm:
 * the BLAS library's sgemm on tiles shared by our threads) run on this machine at given
 * shapes, with the kernels and threads the programs use. make bench measures
 * the model's own products with it and divides the model's FLOP rate by the
 * result (model FLOP utilisation). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lm/backend.h"
#include "lm/bf16.h"
#include "lm/blas_setup.h"
#include "lm/cli.h"
#include "lm/options.h"
#include "lm/json.h"
#include "lm/config.h"
#include "lm/ops.h"
#include "lm/error.h"
#include "lm/machine.h"
#include "lm/rng.h"
#include "lm/threads.h"

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
             "a few milliseconds; the best repetition counts.\n"
             "\n"
             "--bf16 compares the fp32 products with bf16 ones (lm/bf16.h: bf16 inputs,\n"
             "fp32 accumulation and C, on oneDNN), both cut into the same tiles: the median\n"
             "of 9 repetitions of each, in GFLOP/s, for beta 0 and for beta 1 (C += A B,\n"
             "oneDNN's sum post-op). The inputs' rounding to bf16 is not timed. Needs a CPU\n"
             "with AVX512_BF16. With --json one object: per product fp32_gflops,\n"
             "bf16_gflops, bf16_acc_gflops and kernel; fp32_gflops and gflops (bf16) over\n"
             "all, by count, TN at C += A B as the weight gradients accumulate.\n",
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

/* Entries uniform in [-0.5, 0.5): the values do not matter to the rate. */
static float *random_matrix(size_t count, Rng *rng) {
    float *x = malloc(count * sizeof *x);
    for (size_t i = 0; x && i < count; i++) x[i] = rng_uniform(rng) - 0.5f;
    return x;
}

/* Best seconds per call over repetitions of `inner` calls each, about
 * budget_s in all (at least 3 repetitions); 0 if memory ran out. */
static double time_product(const Product *p, double budget_s, Rng *seed) {
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

/* ---- --bf16: fp32 against bf16 ------------------------------------------------ */

typedef enum { RUN_FP32, RUN_BF16, RUN_BF16_ACC } RunKind;

typedef struct Operands {
    float *a, *b, *c;
    uint16_t *ah, *bh; /* a and b rounded to bf16 */
} Operands;

static int run_kind(RunKind kind, const Product *p, const Operands *o, Error *err) {
    size_t m = p->m, n = p->n, k = p->k;
    if (kind == RUN_FP32) {
        run_product(p, o->a, o->b, o->c);
        return 0;
    }
    float beta = kind == RUN_BF16_ACC ? 1.0f : 0.0f;
    if (!strcmp(p->form, "NT")) return bf16_gemm(0, 1, m, n, k, 1.0f, o->ah, k, o->bh, k, beta, o->c, n, err);
    if (!strcmp(p->form, "NN")) return bf16_gemm(0, 0, m, n, k, 1.0f, o->ah, k, o->bh, n, beta, o->c, n, err);
    return bf16_gemm(1, 0, m, n, k, 1.0f, o->ah, m, o->bh, n, beta, o->c, n, err);
}

static int compare_seconds(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

#define MEDIAN_REPS 9

/* Median seconds per call over MEDIAN_REPS repetitions of enough calls to
 * last budget_s / MEDIAN_REPS each (the median, not the best: on a shared
 * machine it is the rate a training run would see); 0 on failure. */
static double time_median(RunKind kind, const Product *p, const Operands *o, double budget_s, Error *err) {
    if (run_kind(kind, p, o, err)) return 0.0; /* warm-up: primitives, buffers, caches */
    double t0 = wall_seconds();
    if (run_kind(kind, p, o, err)) return 0.0;
    double one = wall_seconds() - t0, rep_s = budget_s / MEDIAN_REPS;
    size_t inner = one > 0.0 && one < rep_s ? (size_t)(rep_s / one) : 1;
    double per_call[MEDIAN_REPS];
    for (int rep = 0; rep < MEDIAN_REPS; rep++) {
        t0 = wall_seconds();
        for (size_t i = 0; i < inner; i++)
            if (run_kind(kind, p, o, err)) return 0.0;
        per_call[rep] = (wall_seconds() - t0) / (double)inner;
    }
    qsort(per_call, MEDIAN_REPS, sizeof per_call[0], compare_seconds);
    return per_call[MEDIAN_REPS / 2];
}

/* The CPU's model name from /proc/cpuinfo ("unknown CPU" if unreadable). */
static void cpu_name(char *buf, size_t len) {
    snprintf(buf, len, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (!strncmp(line, "model name", 10) && colon) {
            snprintf(buf, len, "%s", colon + 2);
            buf[strcspn(buf, "\n")] = '\0';
            break;
        }
    }
    fclose(f);
}

/* One product's --bf16 results: median GFLOP/s and oneDNN's kernel. */
typedef struct Bf16Row {
    double fp32, bf16, acc;
    char impl[64];
} Bf16Row;

/* --bf16: per product fp32, bf16 (beta 0) and bf16 C += A B (beta 1), as text
 * or with json one object whose combined rates are total FLOPs over total
 * time weighted by the products' counts; bf16's takes TN at beta 1, since
 * the weight gradients accumulate, and NT and NN at beta 0. */
static int compare_bf16(const char *prog, Product *prods, size_t n_prod, size_t budget_ms, int json) {
    if (!bf16_supported()) return cli_error(prog, "--bf16: this CPU has no AVX512_BF16 (bf16 products are not emulated)");
    char cpu[128];
    cpu_name(cpu, sizeof cpu);
    Bf16Row *rows = calloc(n_prod, sizeof *rows);
    if (!rows) {
        fprintf(stderr, "%s: error: out of memory\n", prog);
        return 1;
    }
    Rng seed;
    rng_seed(&seed, 1337);
    int rc = 0;
    for (size_t i = 0; i < n_prod && rc == 0; i++) {
        const Product *p = &prods[i];
        Bf16Row *row = &rows[i];
        Error err;
        Operands o = {random_matrix(p->m * p->k, &seed), random_matrix(p->n * p->k, &seed), random_matrix(p->m * p->n, &seed),
                      malloc(p->m * p->k * sizeof(uint16_t)), malloc(p->n * p->k * sizeof(uint16_t))};
        if (!o.a || !o.b || !o.c || !o.ah || !o.bh) {
            fprintf(stderr, "%s: error: out of memory for product %zux%zux%zu\n", prog, p->m, p->n, p->k);
            rc = 1;
        } else {
            bf16_from_floats(p->m * p->k, o.a, o.ah);
            bf16_from_floats(p->n * p->k, o.b, o.bh);
            TileGrid g = gemm_tile_grid(p->m, p->n, p->k);
            int ta = !strcmp(p->form, "TN"), tb = !strcmp(p->form, "NT");
            size_t lda = ta ? p->m : p->k, ldb = tb ? p->k : p->n;
            double budget = (double)budget_ms * 1e-3, fp32 = time_median(RUN_FP32, p, &o, budget, &err);
            double bf16 = time_median(RUN_BF16, p, &o, budget, &err);
            double acc = bf16 > 0.0 ? time_median(RUN_BF16_ACC, p, &o, budget, &err) : 0.0;
            if (fp32 <= 0.0 || bf16 <= 0.0 || acc <= 0.0 ||
                bf16_gemm_impl(ta, tb, g.mt, g.nt, p->k, lda, ldb, p->n, row->impl, sizeof row->impl, &err)) {
                fprintf(stderr, "%s: error: %s\n", prog, err.msg);
                rc = 1;
            } else {
                row->fp32 = fp32, row->bf16 = bf16, row->acc = acc;
            }
        }
        free(o.a), free(o.b), free(o.c), free(o.ah), free(o.bh);
    }
    bf16_release();
    if (rc) {
        free(rows);
        return rc;
    }
    double flop = 0.0, s32 = 0.0, s16 = 0.0;
    for (size_t i = 0; i < n_prod; i++) {
        const Product *p = &prods[i];
        flop += (double)p->count * flops(p);
        s32 += (double)p->count * rows[i].fp32;
        s16 += (double)p->count * (!strcmp(p->form, "TN") ? rows[i].acc : rows[i].bf16);
    }
    if (json) {
        char *blas = NULL, *lib = NULL, *name = NULL;
        sb_append_json_string(&blas, blas_describe());
        sb_append_json_string(&lib, bf16_library());
        sb_append_json_string(&name, cpu);
        printf("{\"cpu\":%s,\"blas\":%s,\"bf16\":%s,\"threads\":%zu,\"products\":[", name, blas, lib, threads_max());
        sb_free(&blas), sb_free(&lib), sb_free(&name);
        for (size_t i = 0; i < n_prod; i++) {
            const Product *p = &prods[i];
            printf("%s{\"m\":%zu,\"n\":%zu,\"k\":%zu,\"form\":\"%s\",\"count\":%zu,\"fp32_gflops\":%.9g,"
                   "\"bf16_gflops\":%.9g,\"bf16_acc_gflops\":%.9g,\"kernel\":\"%s\"}",
                   i ? "," : "", p->m, p->n, p->k, p->form, p->count, flops(p) / rows[i].fp32 * 1e-9,
                   flops(p) / rows[i].bf16 * 1e-9, flops(p) / rows[i].acc * 1e-9, rows[i].impl);
        }
        printf("],\"total_flop\":%.6g,\"fp32_gflops\":%.9g,\"gflops\":%.9g}\n", flop, flop / s32 * 1e-9,
               flop / s16 * 1e-9);
    } else {
        printf("cpu: %s | %zu threads, parallel width %zu\n", cpu, threads_max(), threads_width());
        printf("fp32: %s\nbf16: %s, bf16 inputs, fp32 accumulation and C\n", blas_describe(), bf16_library());
        printf("median of %d repetitions, GFLOP/s\n", MEDIAN_REPS);
        printf("%-16s %4s %9s %9s %11s %6s  %s\n", "MxNxK", "form", "fp32", "bf16", "bf16 C+=AB", "ratio",
               "oneDNN kernel (one tile)");
        for (size_t i = 0; i < n_prod; i++) {
            const Product *p = &prods[i];
            char dims[64];
            snprintf(dims, sizeof dims, "%zux%zux%zu", p->m, p->n, p->k);
            printf("%-16s %4s %9.1f %9.1f %11.1f %5.2fx  %s\n", dims, p->form, flops(p) / rows[i].fp32 * 1e-9,
                   flops(p) / rows[i].bf16 * 1e-9, flops(p) / rows[i].acc * 1e-9, rows[i].fp32 / rows[i].bf16,
                   rows[i].impl);
        }
        if (n_prod > 1)
            printf("all, by count:   fp32 %.1f, bf16 %.1f GFLOP/s (TN at C+=AB, as weight gradients accumulate)\n",
                   flop / s32 * 1e-9, flop / s16 * 1e-9);
    }
    free(rows);
    return 0;
}

int main(int argc, char **argv) {
    blas_setup(argc, argv); /* first: it may restart the program with faster kernels */
    size_t threads = 0, budget_ms = 30;
    int json = 0, best_core = 0, bf16 = 0, first;
    Error err;
    CliOption opts[] = {
        CLI_SIZE("threads", 0, &threads, 0, 1024, "N", "OpenMP/OpenBLAS threads (default: all cores)"),
        CLI_SIZE("ms", 0, &budget_ms, 0, 60000, "T", "time spent timing each product, in ms (default 30)"),
        CLI_FLAG("json", 0, &json, "print one JSON object instead of text"),
        CLI_FLAG("bf16", 0, &bf16, "compare fp32 with bf16 products (median GFLOP/s; see above)"),
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
    if (bf16) {
        rc = compare_bf16(prog, prods, n_prod, budget_ms, json);
        free(prods);
        return rc;
    }

    Rng seed;
    rng_seed(&seed, 1337);
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
