/* The matrix products bin/gemm-rate times: parsed from "MxNxK:FORM[:COUNT]",
 * filled with random operands, run through the model's gemm (lm/gemm.h) and
 * timed (products.c); the fp32 against bf16 comparison of --bf16
 * (products_bf16.c); Muon's Newton-Schulz against its products alone
 * (products_ns.c). */
#ifndef LM_EVAL_PRODUCTS_H
#define LM_EVAL_PRODUCTS_H

#include <stddef.h>

#include "lm/error.h"
#include "lm/rng.h"

#define MAX_DIM (1u << 20)
#define MAX_ELEMS ((size_t)1 << 28) /* 1 GiB of floats per matrix */
#define MAX_COUNT 100000

/* What runs a product: the model's gemm (tiled, parallel), the BLAS
 * library's sgemm on the calling thread alone (lm/backend.h), or the
 * attention tiles' kernel (lm/gemm.h's tile_gemm, forms NN and TN). */
typedef enum ProductEngine { ENGINE_GEMM, ENGINE_SGEMM_SERIAL, ENGINE_TILE } ProductEngine;

typedef struct Product {
    size_t m, n, k, count;
    char form[3];
    ProductEngine engine;
    double seconds; /* best time of one call */
} Product;

/* "MxNxK:FORM[:COUNT]" into p; a one-line reason on failure. */
int product_parse(const char *s, Product *p, Error *err);
/* C = op(A) op(B) in p's form, by p's engine. */
void product_run(const Product *p, const float *a, const float *b, float *c);
/* count floats uniform in [-0.5, 0.5) (NULL if out of memory). */
float *product_operand(size_t count, Rng *rng);
/* Best seconds per call over repetitions of enough calls to last a few
 * milliseconds, about budget_s in all (at least 3); 0 if memory ran out. */
double product_time(const Product *p, double budget_s, Rng *seed);
/* 2 M N K. */
double product_flops(const Product *p);

/* --bf16: per product fp32, bf16 (beta 0) and bf16 C += A B (beta 1), as text
 * or with json one object; 0, or 2 after one line on stderr naming prog. */
int compare_bf16(const char *prog, Product *prods, size_t n_prod, size_t budget_ms, int json);

/* --tile: per product (NN or TN) the tile kernel against the library's sgemm
 * on one thread, alternating; 0, or 2 after one line on stderr naming prog. */
int compare_tile(const char *prog, Product *prods, size_t n_prod, size_t budget_ms, int json);

/* --newton-schulz: matrices "RxC[:COUNT]" orthogonalised as Muon's step
 * does (muon_orthogonalize_all), timed whole, against their products timed
 * alone through gemm, alternating, medians; 0, or 2 after one line on stderr
 * naming prog. */
int compare_newton_schulz(const char *prog, char **shapes, size_t n, size_t budget_ms, int json);

#endif
