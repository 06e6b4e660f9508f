/* The tile kernels of causal flash attention: what each computes is in
 * attention_tiles.h, the operands' layout and the tasks in attention.c. */
#include "mixers/attention_tiles.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "nn/vec_loops.h"

/* A diagonal tile (query tile = key tile, the only kind that needs the
 * causal mask) is computed in strips of STRIP rows, each only as far as the
 * mask lets it see: key c meets query r only when c <= r, so about half the
 * tile is never computed (62% of a 64-wide tile is, against 100%). The parts
 * left out would be exact zeros (masked P and dS), so results are unchanged. */
#define STRIP 16
static size_t strip_rows(size_t s0, size_t n) { return n - s0 < STRIP ? n - s0 : STRIP; }

/* How many keys of a key tile starting at j0 query row t may see (causal). */
static size_t visible(size_t t, size_t j0, size_t nk) {
    size_t n = t + 1 - j0;
    return n < nk ? n : nk;
}

/* The first key of a tile starting at j0 that query t sees in its window
 * (0 without one; at most nk). */
static size_t band_first_key(size_t t, size_t j0, size_t nk, size_t window) {
    if (!window || t + 1 <= j0 + window) return 0;
    size_t c = t + 1 - window - j0;
    return c < nk ? c : nk;
}

/* The end of the queries of a tile starting at i0 (nq of them) that key j
 * is in the window of: nq without one. */
static size_t band_query_end(size_t j, size_t i0, size_t nq, size_t window) {
    if (!window) return nq;
    if (j + window <= i0) return 0;
    size_t e = j + window - i0;
    return e < nq ? e : nq;
}

void flash_forward_tile(float *o, size_t ldo, float *lse, float *st, size_t lds, TileOperand k, TileOperand qt,
                        TileOperand v, size_t i0, size_t nq, size_t hs, float scale, size_t window) {
    const VecLoops *loops = vec_loops();
    size_t tile = attn_tile(window);
    float m[TILE], l[TILE], m_new[TILE], corr[TILE];
    for (size_t r = 0; r < nq; r++) {
        /* With a window a query may see no key of the first tiles: its max
         * stays where it started, and exp(m - m_new) must be 1 there, not
         * exp(-inf + inf). */
        m[r] = window ? -FLT_MAX : -INFINITY;
        l[r] = 0.0f;
        memset(o + r * ldo, 0, hs * sizeof(float));
    }
    for (size_t j0 = band_first_tile(i0, window); j0 < i0 + nq; j0 += tile) {
        size_t nk = i0 + nq - j0 < tile ? i0 + nq - j0 : tile;
        int diagonal = j0 + nk > i0 + 1; /* some key comes after some query: mask */
        if (!diagonal) tile_product(nk, nq, hs, scale, tile_a_at(k, j0, 0), qt, 0.0f, st, lds); /* s^T = K Q^T */
        else /* (nk == nq) key strip c0 meets queries c0 .. nq-1; what it leaves unwritten is masked below */
            for (size_t c0 = 0; c0 < nk; c0 += STRIP)
                tile_product(strip_rows(c0, nk), nq - c0, hs, scale, tile_a_at(k, j0 + c0, 0), tile_b_at(qt, 0, c0),
                             0.0f, st + c0 * lds + c0, lds);
        /* key row c meets the queries r with j0 + c <= i0 + r: on the diagonal
         * (j0 == i0) those from r = c, elsewhere all */
        memcpy(m_new, m, nq * sizeof(float));
        /* with a window, key row c meets only the queries up to end(c) */
#define BAND_END(c) band_query_end(j0 + (c), i0, nq, window)
        for (size_t c = 0; c < nk; c++)
            if (BAND_END(c) > (diagonal ? c : 0)) loops->tile_row_max(m_new, st + c * lds, diagonal ? c : 0, BAND_END(c));
        loops->tile_running_max(corr, m, l, m_new, nq); /* the first tile: m = -inf, l 0 */
        if (j0 > 0) loops->tile_rows_scale(o, ldo, corr, nq, hs); /* the first tile's o is 0 */
        for (size_t c = 0; c < nk; c++) {
            size_t from = diagonal ? c : 0, end = BAND_END(c);
            if (end > from) loops->tile_row_exp(st + c * lds, m, l, from, end);
            else end = 0;
            memset(st + c * lds + end, 0, (nq - end) * sizeof(float)); /* outside the band */
        }
#undef BAND_END
        TileOperand vj = tile_b_at(v, j0, 0);
        if (!diagonal) /* O += (s^T)^T V */
            tile_product(nq, hs, nk, 1.0f, (TileOperand){.f = st, .rs = 1, .cs = lds}, vj, 1.0f, o, ldo);
        else /* query strip r0 sees keys 0 .. r0 + rows - 1 */
            for (size_t r0 = 0; r0 < nq; r0 += STRIP) {
                size_t rows = strip_rows(r0, nq);
                tile_product(rows, hs, r0 + rows, 1.0f, (TileOperand){.f = st + r0, .rs = 1, .cs = lds}, vj, 1.0f,
                             o + r0 * ldo, ldo);
            }
    }
    for (size_t r = 0; r < nq; r++) {
        corr[r] = 1.0f / l[r];
        lse[r] = m[r] + logf(l[r]);
    }
    loops->tile_rows_scale(o, ldo, corr, nq, hs);
}

/* Query tile i0 (nq rows) against key tile j0 (nk keys), recomputed for
 * backward: P = exp(s Q K^T - lse) into s and dS = P * (dY V^T - delta)
 * into ds (row stride lds; delta = rowsum(dY * Y)), zero where the causal
 * mask hides a key. On the diagonal (i0 == j0, so nq == nk) by strips, as in
 * the forward pass. */
static void backward_scores(float *s, float *ds, size_t lds, BackwardOperands x, const float *lse, const float *delta,
                            size_t i0, size_t nq, size_t j0, size_t nk, size_t hs, float scale, size_t window) {
    const VecLoops *loops = vec_loops();
    int diagonal = i0 == j0;
    for (size_t r0 = 0; r0 < nq; r0 += (diagonal ? STRIP : nq)) {
        size_t rows = diagonal ? strip_rows(r0, nq) : nq, keys = diagonal ? r0 + rows : nk;
        tile_product(rows, keys, hs, scale, tile_a_at(x.q, i0 + r0, 0), tile_b_at(x.kt, 0, j0), 0.0f, s + r0 * lds,
                     lds); /* S = s Q K^T */
        tile_product(rows, keys, hs, 1.0f, tile_a_at(x.dy, i0 + r0, 0), tile_b_at(x.vt, 0, j0), 0.0f, ds + r0 * lds,
                     lds); /* dP = dY V^T */
    }
    for (size_t r = 0; r < nq; r++) {
        float *p = s + r * lds, *d = ds + r * lds;
        size_t nv = visible(i0 + r, j0, nk), first = band_first_key(i0 + r, j0, nv, window);
        loops->softmax_grad_row(p + first, d + first, lse[i0 + r], delta[i0 + r], nv - first);
        for (size_t c = 0; c < first; c++) p[c] = d[c] = 0.0f;
        for (size_t c = nv; c < nk; c++) p[c] = d[c] = 0.0f;
    }
}

/* Key tile j0's share from query tile i0, from backward_scores' P and dS:
 * dV += P^T dY, dK += s dS^T Q (dk, dv: row stride ld). */
static void backward_add_dkdv(float *dk, float *dv, size_t ld, const float *s, const float *ds, size_t lds,
                              BackwardOperands x, size_t i0, size_t nq, size_t j0, size_t nk, size_t hs, float scale) {
    if (i0 != j0) {
        tile_product(nk, hs, nq, 1.0f, (TileOperand){.f = s, .rs = 1, .cs = lds}, tile_b_at(x.dy_b, i0, 0), 1.0f,
                     dv + j0 * ld, ld);
        tile_product(nk, hs, nq, scale, (TileOperand){.f = ds, .rs = 1, .cs = lds}, tile_b_at(x.q_b, i0, 0), 1.0f,
                     dk + j0 * ld, ld);
        return;
    }
    for (size_t c0 = 0; c0 < nq; c0 += STRIP) { /* key strip c0 is seen by queries c0 .. nq-1 */
        size_t rows = strip_rows(c0, nq), d0 = c0 * lds + c0;
        tile_product(rows, hs, nq - c0, 1.0f, (TileOperand){.f = s + d0, .rs = 1, .cs = lds},
                     tile_b_at(x.dy_b, i0 + c0, 0), 1.0f, dv + (j0 + c0) * ld, ld);
        tile_product(rows, hs, nq - c0, scale, (TileOperand){.f = ds + d0, .rs = 1, .cs = lds},
                     tile_b_at(x.q_b, i0 + c0, 0), 1.0f, dk + (j0 + c0) * ld, ld);
    }
}

/* Query tile i0's share from key tile j0: dQ += s dS K (dq: row stride ld). */
static void backward_add_dq(float *dq, size_t ld, const float *ds, size_t lds, BackwardOperands x, size_t i0,
                            size_t nq, size_t j0, size_t nk, size_t hs, float scale) {
    if (i0 != j0) {
        tile_product(nq, hs, nk, scale, (TileOperand){.f = ds, .rs = lds, .cs = 1}, tile_b_at(x.k_b, j0, 0), 1.0f,
                     dq + i0 * ld, ld);
        return;
    }
    for (size_t c0 = 0; c0 < nq; c0 += STRIP) /* query strip c0 sees keys 0 .. c0 + rows - 1 */
        tile_product(strip_rows(c0, nq), hs, c0 + strip_rows(c0, nq), scale,
                     (TileOperand){.f = ds + c0 * lds, .rs = lds, .cs = 1}, tile_b_at(x.k_b, j0, 0), 1.0f,
                     dq + (i0 + c0) * ld, ld);
}

/* rows x cols of x (row stride ld) = 0 */
static void zero_rows(float *x, size_t ld, size_t rows, size_t cols) {
    for (size_t t = 0; t < rows; t++) memset(x + t * ld, 0, cols * sizeof(float));
}

void flash_backward_head(float *dq, float *dk, float *dv, size_t ld, float *s, float *ds, size_t lds,
                         BackwardOperands x, const float *lse, const float *delta, size_t T, size_t hs,
                         float scale, size_t window) {
    size_t tile = attn_tile(window);
    zero_rows(dq, ld, T, hs), zero_rows(dk, ld, T, hs), zero_rows(dv, ld, T, hs);
    for (size_t j0 = 0; j0 < T; j0 += tile)
        for (size_t i0 = j0; i0 < T && band_meets(i0, j0, tile_rows(T, j0, tile), window); i0 += tile) {
            /* the query tiles that can see key tile j0 */
            size_t nq = tile_rows(T, i0, tile), nk = tile_rows(T, j0, tile);
            backward_scores(s, ds, lds, x, lse, delta, i0, nq, j0, nk, hs, scale, window);
            backward_add_dkdv(dk, dv, ld, s, ds, lds, x, i0, nq, j0, nk, hs, scale);
            backward_add_dq(dq, ld, ds, lds, x, i0, nq, j0, nk, hs, scale);
        }
}

void flash_backward_key_tile(float *dk, float *dv, size_t ld, float *s, float *ds, size_t lds,
                             BackwardOperands x, const float *lse, const float *delta, size_t T, size_t j0,
                             size_t hs, float scale, size_t window) {
    size_t tile = attn_tile(window), nk = tile_rows(T, j0, tile);
    zero_rows(dk + j0 * ld, ld, nk, hs), zero_rows(dv + j0 * ld, ld, nk, hs);
    for (size_t i0 = j0; i0 < T && band_meets(i0, j0, nk, window); i0 += tile) {
        size_t nq = tile_rows(T, i0, tile);
        backward_scores(s, ds, lds, x, lse, delta, i0, nq, j0, nk, hs, scale, window);
        backward_add_dkdv(dk, dv, ld, s, ds, lds, x, i0, nq, j0, nk, hs, scale);
    }
}

void flash_backward_query_tile(float *dq, size_t ld, float *s, float *ds, size_t lds, BackwardOperands x,
                               const float *lse, const float *delta, size_t T, size_t i0, size_t hs,
                               float scale, size_t window) {
    size_t tile = attn_tile(window), nq = tile_rows(T, i0, tile);
    zero_rows(dq + i0 * ld, ld, nq, hs);
    for (size_t j0 = band_first_tile(i0, window); j0 <= i0; j0 += tile) {
        size_t nk = tile_rows(T, j0, tile);
        backward_scores(s, ds, lds, x, lse, delta, i0, nq, j0, nk, hs, scale, window);
        backward_add_dq(dq, ld, ds, lds, x, i0, nq, j0, nk, hs, scale);
    }
}
