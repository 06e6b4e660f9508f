/* bin/gemm-rate's products: parsing, operands, the timed loop (see products.h). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "products.h"
#include "lm/blas_setup.h"
#include "lm/cli.h"
#include "lm/cpu.h"
#include "lm/gemm.h"
#include "lm/machine.h"
#include "lm/options.h"

/* "MxNxK:FORM[:COUNT]" into p; a one-line reason on failure. */
int product_parse(const char *s, Product *p, Error *err) {
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

void product_run(const Product *p, const float *a, const float *b, float *c) {
    size_t m = p->m, n = p->n, k = p->k;
    int ta = !strcmp(p->form, "TN"), tb = !strcmp(p->form, "NT");
    if (p->engine == ENGINE_TILE) tile_gemm(m, n, k, 1.0f, a, ta ? 1 : k, ta ? m : 1, b, n, 0.0f, c, n);
    else if (p->engine == ENGINE_SGEMM_SERIAL)
        gemm_serial(ta, tb, m, n, k, 1.0f, a, ta ? m : k, b, tb ? k : n, 0.0f, c, n); /* the library's sgemm, this thread */
    else if (tb) gemm(0, 1, m, n, k, 1.0f, a, k, b, k, 0.0f, c, n);
    else if (!strcmp(p->form, "NN")) gemm(0, 0, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
    else gemm(1, 0, m, n, k, 1.0f, a, m, b, n, 0.0f, c, n);
}

/* Entries uniform in [-0.5, 0.5): the values do not matter to the rate. */
float *product_operand(size_t count, Rng *rng) {
    float *x = malloc(count * sizeof *x);
    for (size_t i = 0; x && i < count; i++) x[i] = rng_uniform(rng) - 0.5f;
    return x;
}

/* Best seconds per call over repetitions of `inner` calls each, about
 * budget_s in all (at least 3 repetitions); 0 if memory ran out. */
double product_time(const Product *p, double budget_s, Rng *seed) {
    float *a = product_operand(p->m * p->k, seed), *b = product_operand(p->n * p->k, seed);
    float *c = malloc(p->m * p->n * sizeof *c);
    double best = 0.0;
    if (a && b && c) {
        product_run(p, a, b, c); /* warm-up: thread pool, buffers, caches */
        double t0 = wall_seconds();
        product_run(p, a, b, c);
        double one = wall_seconds() - t0;
        double rep_s = budget_s / 8.0; /* aim at ~8 repetitions */
        size_t inner = one > 0.0 && one < rep_s ? (size_t)(rep_s / one) : 1;
        double start = wall_seconds();
        for (int rep = 0; rep < 3 || (wall_seconds() - start < budget_s && rep < 100); rep++) {
            t0 = wall_seconds();
            for (size_t i = 0; i < inner; i++) product_run(p, a, b, c);
            double per_call = (wall_seconds() - t0) / (double)inner;
            if (best == 0.0 || per_call < best) best = per_call;
        }
    }
    free(a);
    free(b);
    free(c);
    return best;
}

double product_flops(const Product *p) { return 2.0 * (double)p->m * (double)p->n * (double)p->k; }
int compare_tile(const char *prog, Product *prods, size_t n_prod, size_t budget_ms, int json) {
    for (size_t i = 0; i < n_prod; i++)
        if (!strcmp(prods[i].form, "NT"))
            return cli_error(prog, "--tile times NN and TN products (the tile kernel reads B by rows), not %zux%zux%zu:NT",
                             prods[i].m, prods[i].n, prods[i].k);
    Rng seed;
    rng_seed(&seed, 1337);
    if (json) printf("{\"blas\":\"%s\",\"isa\":\"%s\",\"threads\":1,\"products\":[", blas_kernel(), cpu_isa_name(cpu_isa()));
    else {
        printf("tile kernel (isa %s) against %s sgemm, 1 thread, best of 3 alternating rounds\n", cpu_isa_describe(),
               blas_kernel());
        printf("%-16s %4s %12s %12s %10s\n", "MxNxK", "form", "sgemm GF/s", "tile GF/s", "tile/sgemm");
    }
    for (size_t i = 0; i < n_prod; i++) {
        Product s = prods[i], t = prods[i];
        s.engine = ENGINE_SGEMM_SERIAL, t.engine = ENGINE_TILE;
        double best_s = 0.0, best_t = 0.0;
        for (int round = 0; round < 3; round++) { /* alternating: a loaded machine slows both alike */
            double ss = product_time(&s, (double)budget_ms * 1e-3 / 3.0, &seed);
            double ts = product_time(&t, (double)budget_ms * 1e-3 / 3.0, &seed);
            if (ss <= 0.0 || ts <= 0.0) {
                fprintf(stderr, "%s: error: out of memory for product %zux%zux%zu\n", prog, s.m, s.n, s.k);
                return 1;
            }
            if (best_s == 0.0 || ss < best_s) best_s = ss;
            if (best_t == 0.0 || ts < best_t) best_t = ts;
        }
        double f = product_flops(&s) * 1e-9;
        if (json)
            printf("%s{\"m\":%zu,\"n\":%zu,\"k\":%zu,\"form\":\"%s\",\"sgemm_gflops\":%.4f,\"tile_gflops\":%.4f}",
                   i ? "," : "", s.m, s.n, s.k, s.form, f / best_s, f / best_t);
        else {
            char dims[64];
            snprintf(dims, sizeof dims, "%zux%zux%zu", s.m, s.n, s.k);
            printf("%-16s %4s %12.1f %12.1f %9.0f%%\n", dims, s.form, f / best_s, f / best_t, 100.0 * best_s / best_t);
        }
    }
    if (json) printf("]}\n");
    return 0;
}
