/* bin/gemm-rate --bf16: the same products in fp32 and in bf16 (bf16 inputs,
 * fp32 accumulation and C, on oneDNN), cut into the same tiles. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "products.h"
#include "lm/bf16.h"
#include "lm/blas_setup.h"
#include "lm/cli.h"
#include "lm/json.h"
#include "lm/machine.h"
#include "lm/threads.h"

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

typedef enum { RUN_FP32, RUN_BF16, RUN_BF16_ACC } RunKind;

typedef struct Operands {
    float *a, *b, *c;
    uint16_t *ah, *bh; /* a and b rounded to bf16 */
} Operands;

static int run_kind(RunKind kind, const Product *p, const Operands *o, Error *err) {
    size_t m = p->m, n = p->n, k = p->k;
    if (kind == RUN_FP32) {
        product_run(p, o->a, o->b, o->c);
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

/* One product's --bf16 results: median GFLOP/s and oneDNN's kernel. */
typedef struct Bf16Row {
    double fp32, bf16, acc;
    char impl[64];
} Bf16Row;

/* --bf16: per product fp32, bf16 (beta 0) and bf16 C += A B (beta 1), as text
 * or with json one object whose combined rates are total FLOPs over total
 * time weighted by the products' counts; bf16's takes TN at beta 1, since
 * the weight gradients accumulate, and NT and NN at beta 0. */
int compare_bf16(const char *prog, Product *prods, size_t n_prod, size_t budget_ms, int json) {
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
        Operands o = {product_operand(p->m * p->k, &seed), product_operand(p->n * p->k, &seed), product_operand(p->m * p->n, &seed),
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
        flop += (double)p->count * product_flops(p);
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
                   i ? "," : "", p->m, p->n, p->k, p->form, p->count, product_flops(p) / rows[i].fp32 * 1e-9,
                   product_flops(p) / rows[i].bf16 * 1e-9, product_flops(p) / rows[i].acc * 1e-9, rows[i].impl);
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
            printf("%-16s %4s %9.1f %9.1f %11.1f %5.2fx  %s\n", dims, p->form, product_flops(p) / rows[i].fp32 * 1e-9,
                   product_flops(p) / rows[i].bf16 * 1e-9, product_flops(p) / rows[i].acc * 1e-9, rows[i].fp32 / rows[i].bf16,
                   rows[i].impl);
        }
        if (n_prod > 1)
            printf("all, by count:   fp32 %.1f, bf16 %.1f GFLOP/s (TN at C+=AB, as weight gradients accumulate)\n",
                   flop / s32 * 1e-9, flop / s16 * 1e-9);
    }
    free(rows);
    return 0;
}
