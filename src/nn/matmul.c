/* The layers' matrix products and their bf16 operands (see lm/matmul.h). */
#include "lm/matmul.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
