/* The tile kernels of causal flash attention (src/mixers/attention.c lays
 * out the operands and hands out the tasks): one query tile forward with the
 * online softmax, and backward's recomputed probabilities and their shares
 * of dQ, dK and dV, scheduled as a whole head or as a task per key tile and
 * one per query tile. Operands are blas/tile_gemm.h's TileOperand, fp32 or
 * bf16 packed by pairs, so one kernel serves both precisions. */
#ifndef LM_ATTENTION_TILES_H
#define LM_ATTENTION_TILES_H

#include <stddef.h>

#include "blas/tile_gemm.h"

/* Tiles of queries and keys: the score tile of one (query tile, key tile)
 * pair is the only T-dependent thing held, so memory grows linearly in T.
 * 128 measured 7% faster than 64 at T = 4096 (fewer, larger products). */
#define TILE 128

/* A sliding window (window > 0): query t sees keys t - window + 1 .. t
 * only, and the tiles wholly outside that band are skipped, so the cost per
 * token is flat in T. window 0: the whole causal past.
 *
 * The tile side: TILE, or for a window shorter than TILE the power of two
 * from 32 up that holds it. A query tile of side t spans t + window - 1
 * keys, so 128-wide tiles under a 64-wide window would compute twice the
 * band, and the per-token cost at T = 4096 was 1.37 times that at 256 (the
 * first tiles see fewer keys); tiles the window's size compute about 1.5
 * times the band at every T. */
static inline size_t attn_tile(size_t window) {
    if (!window || window >= TILE) return TILE;
    size_t t = 32;
    while (t < window) t *= 2;
    return t;
}

/* Rows of the tile (side tile) starting at t0 (of T). */
static inline size_t tile_rows(size_t T, size_t t0, size_t tile) { return T - t0 < tile ? T - t0 : tile; }

/* The first key tile query tile i0 can see. */
static inline size_t band_first_tile(size_t i0, size_t window) {
    return window && i0 + 1 > window ? (i0 + 1 - window) / attn_tile(window) * attn_tile(window) : 0;
}
/* Whether any query of the tile at i0 sees a key of the tile at j0 (nk keys),
 * given i0 >= j0: its first query within the window of its last key. */
static inline int band_meets(size_t i0, size_t j0, size_t nk, size_t window) {
    return !window || i0 < j0 + nk - 1 + window;
}

/* One head's operands for backward (attention.c's HeadPacking): Q and dY as A, K^T
 * and V^T as B, dY, K and Q as B (the inner dimension the tokens). */
typedef struct BackwardOperands {
    TileOperand q, dy, kt, vt, dy_b, k_b, q_b;
} BackwardOperands;

/* One query tile of one head: rows i0 .. i0+nq-1 attend to keys 0 .. row
 * (with a window, row - window + 1 .. row),
 * a key tile at a time, with the online softmax: each row keeps its running
 * maximum m and sum l, and the partial output is rescaled by exp(m_old -
 * m_new) whenever the maximum grows. Tiles entirely above the diagonal are
 * never touched. The scores are computed transposed, s^T = K Q^T (a key per
 * row, a query per column), so that every per-query quantity (max, sum,
 * exp(s - m)) runs down the columns in vector lanes, with no horizontal
 * reductions. k: K as A and v: V as B, from key 0; qt: Q^T of the tile's
 * queries as B (attention.c's HeadPacking); o: row stride ldo; lse: the rows'
 * log-sum-exp, for backward; st: the score tile (row stride lds). */
void flash_forward_tile(float *o, size_t ldo, float *lse, float *st, size_t lds, TileOperand k, TileOperand qt,
                        TileOperand v, size_t i0, size_t nq, size_t hs, float scale, size_t window);

/* One head, all of it: for each key tile j, each query tile i that can see
 * it recomputes P and dS and adds its share to dV_j, dK_j and dQ_i. The
 * whole head is one task, so dQ needs no reduction across threads. dq, dk,
 * dv: row stride ld; s, ds: two score tiles (row stride lds). */
void flash_backward_head(float *dq, float *dk, float *dv, size_t ld, float *s, float *ds, size_t lds,
                         BackwardOperands x, const float *lse, const float *delta, size_t T, size_t hs,
                         float scale, size_t window);

/* The same head cut into tile tasks, for when there are fewer heads than
 * threads (the long config: batch 1, 4 heads): a key tile's task owns dK_j
 * and dV_j, a query tile's task dQ_i, and each recomputes the P and dS it
 * needs, so P and dS are computed twice: 7 products per tile pair where
 * flash_backward_head takes 5. Each output row still receives the same
 * products in the same order (i ascending into dK_j and dV_j, j ascending
 * into dQ_i), so the result is bit for bit flash_backward_head's. */
void flash_backward_key_tile(float *dk, float *dv, size_t ld, float *s, float *ds, size_t lds,
                             BackwardOperands x, const float *lse, const float *delta, size_t T, size_t j0,
                             size_t hs, float scale, size_t window);

void flash_backward_query_tile(float *dq, size_t ld, float *s, float *ds, size_t lds, BackwardOperands x,
                               const float *lse, const float *delta, size_t T, size_t i0, size_t hs,
                               float scale, size_t window);

#endif
