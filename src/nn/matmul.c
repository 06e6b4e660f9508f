/* The layers' matrix products and their bf16 operands (see lm/matmul.h). */
#include "lm/matmul.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blas/gemv.h"
#include "lm/bf16.h"
#include "lm/ops.h"

/* ---- bf16 operands ---------------------------------------------------------- */

const uint16_t *matmul_bf16_weight(const MatmulBf16 *bf, const float *w) {
    if (w < bf->params || w >= bf->params + bf->n_params) {
        fprintf(stderr, "internal error: a bf16 product's weight lies outside the model's parameters\n");
        abort();
    }
    return bf->params_h + (w - bf->params);
}

static uint16_t *slot_room(const MatmulBf16 *bf, int slot, size_t at, size_t n) {
    if (at + n > bf->scratch_len) {
        fprintf(stderr, "internal error: a bf16 operand of %zu entries exceeds its scratch (%zu)\n", at + n,
                bf->scratch_len);
        abort();
    }
    return bf->scratch[slot] + at;
}

uint16_t *matmul_bf16_round_serial(const MatmulBf16 *bf, int slot, size_t at, const float *x, size_t n) {
    uint16_t *h = slot_room(bf, slot, at, n);
    bf16_from_floats(n, x, h);
    return h;
}

uint32_t *matmul_bf16_packed(const MatmulBf16 *bf, size_t words) {
    if (words > bf->packed_len) {
        fprintf(stderr, "internal error: %zu words of packed bf16 operands exceed their buffer (%zu)\n", words,
                bf->packed_len);
        abort();
    }
    return bf->packed;
}

const uint16_t *matmul_bf16_round(const MatmulBf16 *bf, int slot, const float *x, size_t n) {
    uint16_t *h = slot_room(bf, slot, 0, n);
    bf16_from_floats_parallel(n, x, h);
    return h;
}

void matmul_bf16_record(const MatmulBf16 *bf, int rc, const Error *err) {
    if (!rc) return;
#pragma omp critical(matmul_bf16_failure)
    if (!bf->failure->failed) {
        bf->failure->failed = 1;
        err_set(&bf->failure->err, "a bf16 matrix product failed: %s", err->msg);
    }
}

/* ---- products ---------------------------------------------------------------- */

void matmul_rows(const MatmulBf16 *bf, int slot, size_t at, float *out, const float *in, const float *w,
                 const float *bias, size_t rows, size_t in_dim, size_t out_dim) {
    if (bias)
        for (size_t i = 0; i < rows; i++) memcpy(out + i * out_dim, bias, out_dim * sizeof(float));
    if (!bf) {
        gemm_serial(0, 1, rows, out_dim, in_dim, 1.0f, in, in_dim, w, in_dim, bias ? 1.0f : 0.0f, out, out_dim);
        return;
    }
    Error err;
    const uint16_t *in_h = matmul_bf16_round_serial(bf, slot, at, in, rows * in_dim);
    matmul_bf16_record(bf, bf16_gemm_serial(0, 1, rows, out_dim, in_dim, 1.0f, in_h, in_dim, matmul_bf16_weight(bf, w),
                                       in_dim, bias ? 1.0f : 0.0f, out, out_dim, &err),
                      &err);
}

void matmul_rows_backward(const MatmulBf16 *bf, int slot, size_t at, float *din, const float *dout, const float *w,
                          size_t rows, size_t in_dim, size_t out_dim) {
    if (!bf) {
        gemm_serial(0, 0, rows, in_dim, out_dim, 1.0f, dout, out_dim, w, in_dim, 0.0f, din, in_dim);
        return;
    }
    Error err;
    const uint16_t *dout_h = matmul_bf16_round_serial(bf, slot, at, dout, rows * out_dim);
    matmul_bf16_record(bf, bf16_gemm_serial(0, 0, rows, in_dim, out_dim, 1.0f, dout_h, out_dim, matmul_bf16_weight(bf, w),
                                       in_dim, 0.0f, din, in_dim, &err),
                      &err);
}

/* out = in w^T + beta out (bias: every row set to it first, beta 1). */
static void forward_product(const MatmulBf16 *bf, float *out, const float *in, const float *w, size_t ldw,
                            const float *bias, float beta, size_t n, size_t in_dim, size_t out_dim) {
    if (!bf) {
        gemm_tiled(0, 1, n, out_dim, in_dim, 1.0f, in, in_dim, w, ldw, beta, out, out_dim, bias, NULL, NULL);
        return;
    }
    Error err;
    const uint16_t *in_h = matmul_bf16_round(bf, 0, in, n * in_dim);
    matmul_bf16_record(bf, bf16_gemm_tiled(0, 1, n, out_dim, in_dim, 1.0f, in_h, in_dim, matmul_bf16_weight(bf, w), ldw,
                                      beta, out, out_dim, bias, NULL, NULL, &err),
                      &err);
}

void matmul_forward_strided(const MatmulBf16 *bf, float *out, const float *in, const float *w, size_t ldw,
                            const float *bias, size_t n, size_t in_dim, size_t out_dim) {
    forward_product(bf, out, in, w, ldw, bias, bias ? 1.0f : 0.0f, n, in_dim, out_dim);
}

void matmul_add_strided(const MatmulBf16 *bf, float *out, const float *in, const float *w, size_t ldw, size_t n,
                        size_t in_dim, size_t out_dim) {
    if (!bf) { /* gemm, as the layers called it before bf16 (fp32 results stay bit for bit) */
        gemm(0, 1, n, out_dim, in_dim, 1.0f, in, in_dim, w, ldw, 1.0f, out, out_dim);
        return;
    }
    forward_product(bf, out, in, w, ldw, NULL, 1.0f, n, in_dim, out_dim);
}

void matmul_forward(const MatmulBf16 *bf, float *out, const float *in, const float *w, const float *bias, size_t n,
                    size_t in_dim, size_t out_dim) {
    matmul_forward_strided(bf, out, in, w, in_dim, bias, n, in_dim, out_dim);
}

void matmul_forward_then(float *out, const float *in, const float *w, const float *bias, size_t n, size_t in_dim,
                         size_t out_dim, TileEpilogue epilogue, void *ctx) {
    gemm_tiled(0, 1, n, out_dim, in_dim, 1.0f, in, in_dim, w, in_dim, bias ? 1.0f : 0.0f, out, out_dim, bias,
               epilogue, ctx);
}

void matmul_backward_strided(const MatmulBf16 *bf, float *din, float din_beta, float *dw, size_t ldw, float *dbias,
                             const float *dout, const float *in, const float *w, size_t n, size_t in_dim,
                             size_t out_dim) {
    if (!bf) {
        if (din) gemm(0, 0, n, in_dim, out_dim, 1.0f, dout, out_dim, w, ldw, din_beta, din, in_dim);
        if (dw) gemm(1, 0, out_dim, in_dim, n, 1.0f, dout, out_dim, in, in_dim, 1.0f, dw, ldw);
    } else if (din || dw) {
        Error err;
        const uint16_t *dout_h = matmul_bf16_round(bf, 0, dout, n * out_dim); /* once for both products */
        if (din)
            matmul_bf16_record(bf, bf16_gemm(0, 0, n, in_dim, out_dim, 1.0f, dout_h, out_dim, matmul_bf16_weight(bf, w),
                                        ldw, din_beta, din, in_dim, &err),
                              &err);
        if (dw) {
            const uint16_t *in_h = matmul_bf16_round(bf, 1, in, n * in_dim);
            matmul_bf16_record(bf, 
                bf16_gemm(1, 0, out_dim, in_dim, n, 1.0f, dout_h, out_dim, in_h, in_dim, 1.0f, dw, ldw, &err), &err);
        }
    }
    if (dbias) column_sum_add(dbias, dout, n, out_dim);
}

void matmul_backward(const MatmulBf16 *bf, float *din, float din_beta, float *dw, float *dbias, const float *dout,
                     const float *in, const float *w, size_t n, size_t in_dim, size_t out_dim) {
    matmul_backward_strided(bf, din, din_beta, dw, in_dim, dbias, dout, in, w, n, in_dim, out_dim);
}

/* ---- the decode step's products ------------------------------------------------ */

static const char *const WEIGHTS_NAMES[] = {"fp32", "bf16", "int8"};

const char *weights_format_name(WeightsFormat f) { return WEIGHTS_NAMES[f]; }

int weights_format_parse(const char *name, WeightsFormat *f, Error *err) {
    for (int i = 0; i < 3; i++)
        if (!strcmp(name, WEIGHTS_NAMES[i])) {
            *f = (WeightsFormat)i;
            return 0;
        }
    return err_set(err, "--weights must be fp32, bf16 or int8 (got '%s')", name);
}

static size_t q8_groups(size_t cols) { return (cols + GEMV_GROUP - 1) / GEMV_GROUP; }

int decode_weights_add(DecodeWeights *d, const float *w, size_t rows, size_t cols, Error *err) {
    if (d->format == WEIGHTS_FP32) return 0;
    DecodeTensor *grown = realloc(d->t, (d->n + 1) * sizeof *grown);
    if (!grown) return err_set(err, "out of memory");
    d->t = grown;
    DecodeTensor *t = &d->t[d->n];
    *t = (DecodeTensor){.w = w, .rows = rows, .cols = cols};
    if (d->format == WEIGHTS_BF16) {
        if (!(t->h = lm_calloc(rows * cols, sizeof(uint16_t), err))) return -1;
        gemv_to_bf16(t->h, w, cols, rows, cols);
    } else {
        t->q = lm_calloc(rows * cols, 1, err);
        t->scale = t->q ? lm_calloc(rows * q8_groups(cols), sizeof(float), err) : NULL;
        if (!t->scale) {
            free(t->q);
            return -1;
        }
        gemv_to_q8(t->q, t->scale, w, cols, rows, cols);
    }
    d->n++;
    return 0;
}

void decode_weights_free(DecodeWeights *d) {
    for (size_t i = 0; i < d->n; i++) free(d->t[i].h), free(d->t[i].q), free(d->t[i].scale);
    free(d->t);
    d->t = NULL;
    d->n = 0;
}

/* The converted copy of t as the kernels read it, from row r0 and column c0
 * (c0 a multiple of the group for int8). */
static GemvWeights tensor_weights(const DecodeTensor *t, WeightsFormat f, size_t r0, size_t c0) {
    if (f == WEIGHTS_BF16) return (GemvWeights){.format = GEMV_BF16, .h = t->h + r0 * t->cols + c0, .ld = t->cols};
    size_t groups = q8_groups(t->cols);
    return (GemvWeights){.format = GEMV_Q8, .q = t->q + r0 * t->cols + c0, .ld = t->cols,
                         .scale = t->scale + r0 * groups + c0 / GEMV_GROUP, .lds = groups};
}

void decode_weights_round_trip(const DecodeWeights *d) {
    for (size_t i = 0; i < d->n; i++) {
        const DecodeTensor *t = &d->t[i];
        GemvWeights gw = tensor_weights(t, d->format, 0, 0);
        float *w = (float *)t->w;
        for (size_t r = 0; r < t->rows; r++)
            for (size_t c = 0; c < t->cols; c++) w[r * t->cols + c] = gemv_weight(&gw, r, c);
    }
}

/* w's place in dec: its converted copy, or fp32 where it has none (or, in
 * int8, a column block that starts inside a group). */
static GemvWeights step_weights(const DecodeWeights *dec, const float *w, size_t ldw) {
    GemvWeights fp32 = {.format = GEMV_F32, .f = w, .ld = ldw};
    if (!dec) return fp32;
    for (size_t i = 0; i < dec->n; i++) {
        const DecodeTensor *t = &dec->t[i];
        if (w < t->w || w >= t->w + t->rows * t->cols) continue;
        size_t at = (size_t)(w - t->w), r0 = at / t->cols, c0 = at % t->cols;
        if (ldw != t->cols || (dec->format == WEIGHTS_INT8 && c0 % GEMV_GROUP)) return fp32;
        return tensor_weights(t, dec->format, r0, c0);
    }
    return fp32;
}

void matmul_step_rows(const MatmulBf16 *bf, const DecodeWeights *dec, float *out, size_t ldo, const float *in, size_t ldi,
                      const float *w, size_t ldw, const float *bias, size_t n, size_t in_dim, size_t out_dim,
                      int accumulate) {
    if (bf) { /* bf16 precision: matmul_forward's products, a row at a time */
        for (size_t i = 0; i < n; i++) {
            if (accumulate) matmul_add_strided(bf, out + i * ldo, in + i * ldi, w, ldw, 1, in_dim, out_dim);
            else matmul_forward_strided(bf, out + i * ldo, in + i * ldi, w, ldw, bias, 1, in_dim, out_dim);
        }
        return;
    }
    GemvArgs a = {n, in_dim, in, ldi, step_weights(dec, w, ldw), accumulate ? NULL : bias, out, ldo, accumulate};
    gemv(&a, out_dim);
}

void matmul_step(const MatmulBf16 *bf, const DecodeWeights *dec, float *out, const float *in, const float *w, size_t ldw,
                 const float *bias, size_t n, size_t in_dim, size_t out_dim, int accumulate) {
    if (bf) {
        if (accumulate) matmul_add_strided(bf, out, in, w, ldw, n, in_dim, out_dim);
        else matmul_forward_strided(bf, out, in, w, ldw, bias, n, in_dim, out_dim);
        return;
    }
    matmul_step_rows(bf, dec, out, out_dim, in, in_dim, w, ldw, bias, n, in_dim, out_dim, accumulate);
}
