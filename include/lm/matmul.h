/* The layers' matrix products (matmul_*), over lm/gemm.h's tiled gemm, in
 * fp32 or with bf16 operands; each output computed the same way on any
 * number of threads.
 *
 * Weights are stored [out, in] row-major (nn.Linear): out = in W^T + b.
 * Backward functions ACCUMULATE (+=) into every gradient they produce, so
 * that a tensor used twice (or over several micro-batches) sums correctly;
 * callers zero what must start at zero. */
#ifndef LM_MATMUL_H
#define LM_MATMUL_H

#include <stddef.h>
#include <stdint.h>

#include "lm/error.h"
#include "lm/gemm.h"

/* How the layers' products run (mixed precision). NULL: in fp32.
 * Else in bf16: each product's operands are rounded to bf16 (round to
 * nearest even) and multiplied with fp32 accumulation into its fp32 result
 * (lm/bf16.h); weight gradients accumulate (beta 1) straight into the
 * fp32 gradients. The weights come rounded already: params_h mirrors params
 * entry for entry (refreshed once per optimizer step by the model), and a
 * product's weight w (a pointer into params) is read at the same offset in
 * params_h. Activations and output gradients are rounded per product into
 * the scratch buffers (scratch_len entries each: the model sizes them for
 * its widest product). A mixer with bf16 kernels of its own keeps their
 * packed operands in `packed` (the attention core's heads: blas/tile_gemm.h),
 * packed_len 32-bit words that the model sizes by the mixers' bf16_words
 * (lm/mixer.h) and every layer uses in turn. Nothing here is global: the
 * model hands this to its layers (MixerRuntime, lm/mixer.h). */
typedef struct MatmulBf16 {
    const float *params;      /* the fp32 weights ... */
    const uint16_t *params_h; /* ... and their bf16 rounding, same layout */
    size_t n_params;
    uint16_t *scratch[2];     /* rounded activations, scratch_len entries each */
    size_t scratch_len;
    uint32_t *packed;         /* the mixers' packed operands, packed_len words */
    size_t packed_len;
    struct MatmulBf16Failure *failure; /* where a failed product is recorded (matmul_bf16_record) */
} MatmulBf16;

/* The first bf16 product that failed since the model set its precision, if
 * any: the layers' functions return nothing, so a failure (oneDNN refusing a
 * tile shape the start-up check did not cover, or memory running out inside
 * it) is recorded here, the product's output left undefined, and whoever ran
 * the forward or backward pass asks (model_bf16_failed) before using it. */
typedef struct MatmulBf16Failure {
    int failed;
    Error err;
} MatmulBf16Failure;

/* w's bf16 rounding: params_h at w's offset in params (w must lie inside). */
const uint16_t *matmul_bf16_weight(const MatmulBf16 *bf, const float *w);
/* Rounds n floats of x into scratch[slot] (rows of a product operand) and
 * returns it; parallel over chunks (serial: the calling thread alone, for
 * callers inside their own parallel region, at offset `at` of the slot). */
const uint16_t *matmul_bf16_round(const MatmulBf16 *bf, int slot, const float *x, size_t n);
uint16_t *matmul_bf16_round_serial(const MatmulBf16 *bf, int slot, size_t at, const float *x, size_t n);
/* The packed-operand buffer, checked to hold `words` words (the model sized
 * it by the same mixer's bf16_words: more is an internal error). */
uint32_t *matmul_bf16_packed(const MatmulBf16 *bf, size_t words);
/* Records a bf16 product's failure (rc != 0, err its message) in
 * bf->failure, keeping the first; safe from concurrent threads. */
void matmul_bf16_record(const MatmulBf16 *bf, int rc, const Error *err);

/* Every matmul_* takes bf (NULL: fp32) first.
 *
 * out (n, out_dim) = in (n, in_dim) . w^T (out_dim, in_dim) + bias (out_dim, may be NULL) */
void matmul_forward(const MatmulBf16 *bf, float *out, const float *in, const float *w, const float *bias, size_t n,
                    size_t in_dim, size_t out_dim);

/* The same with w a column block of a wider matrix: row o of w starts at
 * w + o * ldw (ldw >= in_dim). */
void matmul_forward_strided(const MatmulBf16 *bf, float *out, const float *in, const float *w, size_t ldw,
                            const float *bias, size_t n, size_t in_dim, size_t out_dim);
/* out += in . w^T, w strided as above. */
void matmul_add_strided(const MatmulBf16 *bf, float *out, const float *in, const float *w, size_t ldw, size_t n,
                        size_t in_dim, size_t out_dim);

/* din = dout . w + din_beta * din (din_beta 0 writes it, 1 accumulates);
 * dw += dout^T . in;  dbias += column sums of dout.
 * Any of din, dw, dbias may be NULL when not wanted. */
void matmul_backward(const MatmulBf16 *bf, float *din, float din_beta, float *dw, float *dbias, const float *dout,
                     const float *in, const float *w, size_t n, size_t in_dim, size_t out_dim);
/* The same with w and dw column blocks of wider matrices (row stride ldw). */
void matmul_backward_strided(const MatmulBf16 *bf, float *din, float din_beta, float *dw, size_t ldw, float *dbias,
                             const float *dout, const float *in, const float *w, size_t n, size_t in_dim,
                             size_t out_dim);

/* matmul_forward, then epilogue on each tile of out. */
void matmul_forward_then(float *out, const float *in, const float *w, const float *bias, size_t n, size_t in_dim,
                         size_t out_dim, TileEpilogue epilogue, void *ctx);

/* ---- the decode step's products --------------------------------------------
 *
 * The weights a decode step reads, converted at load (bin/sample and
 * bin/eval --weights): each product weight matrix of the model (rows x
 * cols, fp32 at w inside the parameters) beside its copy in bf16 or int8
 * with one scale per group of 32 entries of a row (blas/gemv.h). */
typedef enum { WEIGHTS_FP32, WEIGHTS_BF16, WEIGHTS_INT8 } WeightsFormat;

typedef struct DecodeTensor {
    const float *w;
    size_t rows, cols;
    uint16_t *h;   /* WEIGHTS_BF16: rows x cols */
    int8_t *q;     /* WEIGHTS_INT8: rows x cols, and ... */
    float *scale;  /* ... rows x ceil(cols / 32) scales */
} DecodeTensor;

typedef struct DecodeWeights {
    WeightsFormat format;
    DecodeTensor *t;
    size_t n;
} DecodeWeights;

/* "fp32", "bf16", "int8". */
const char *weights_format_name(WeightsFormat f);
int weights_format_parse(const char *name, WeightsFormat *f, Error *err);
/* Adds the converted copy of w (rows x cols, contiguous) to d; -1 with err when out of memory. */
int decode_weights_add(DecodeWeights *d, const float *w, size_t rows, size_t cols, Error *err);
void decode_weights_free(DecodeWeights *d);
/* The fp32 values the converted copy stands for, written over w itself (for
 * evaluating a model at the precision it decodes in: bin/eval --weights). */
void decode_weights_round_trip(const DecodeWeights *d);

/* The decode step's product, for few rows n (the sequences decoded at once):
 * out (n, out_dim) = in . w^T + bias (or, accumulate, out += in . w^T), w's
 * rows ldw apart, on our matrix-vector kernels (blas/gemv.h), reading w's
 * converted copy in dec where it has one (NULL: fp32 as it is), and the
 * rows shared among the threads on a large matrix. Under bf16 precision
 * (bf not NULL) matmul_forward's bf16 product instead. */
void matmul_step(const MatmulBf16 *bf, const DecodeWeights *dec, float *out, const float *in, const float *w, size_t ldw,
                 const float *bias, size_t n, size_t in_dim, size_t out_dim, int accumulate);
/* The same with the n rows of out and of in ldo and ldi floats apart (each
 * sequence's rows in its own decoder state). */
void matmul_step_rows(const MatmulBf16 *bf, const DecodeWeights *dec, float *out, size_t ldo, const float *in, size_t ldi,
                      const float *w, size_t ldw, const float *bias, size_t n, size_t in_dim, size_t out_dim,
                      int accumulate);

/* matmul_forward of `rows` rows on the calling thread alone (inside the
 * caller's parallel region); with bf, in is rounded first into scratch[slot]
 * at entry `at` (rows x in_dim entries: the caller's share of the slot;
 * ignored in fp32). */
void matmul_rows(const MatmulBf16 *bf, int slot, size_t at, float *out, const float *in, const float *w,
                 const float *bias, size_t rows, size_t in_dim, size_t out_dim);
/* din (rows, in_dim) = dout (rows, out_dim) . w on the calling thread alone;
 * with bf, dout is rounded first into scratch[slot] at entry `at` (rows x
 * out_dim entries). */
void matmul_rows_backward(const MatmulBf16 *bf, int slot, size_t at, float *din, const float *dout, const float *w,
                          size_t rows, size_t in_dim, size_t out_dim);

#endif
