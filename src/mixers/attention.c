#include "mixers/attention.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>

#include "blas/tile_gemm.h"
#include "lm/matmul.h"
#include "lm/ops.h"
#include "lm/threads.h"
#include "mixers/attention_tiles.h"
#include "mixers/head_parts.h"
#include "nn/rmsnorm.h"
#include "nn/rope.h"
#include "runtime/arena.h"

typedef struct AttnActs {
    float *qkv, *y, *lse;       /* forward: (B,T,3C), (B,T,C), (B,H,T) log-sum-exp of each score row */
    float *dqkv, *dy, *delta;   /* backward: (B,T,3C), (B,T,C), (B,H,T) rowsum(dY * Y) */
    float *tiles;               /* per forward task: a score tile and Q^T of its queries;
                                   per backward task: two score tiles and the head's copies (head_copy_floats) */
    float *qk_rstd;             /* with qk-norm: (B,T,2H) each head's 1/rms of q, then of k */
} AttnActs;

_Static_assert(sizeof(AttentionSettings) <= MIXER_SETTINGS_BYTES, "attention's settings fit their block");
_Static_assert(sizeof(AttentionSettings) <= MIXER_LAYER_BYTES, "and a layer's part of its spec");

size_t attention_window(const MixerSpec *spec) {
    return ((const AttentionSettings *)(const void *)spec->own.bytes)->window;
}

static size_t ceil_div(size_t a, size_t b) { return (a + b - 1) / b; }

/* The side of a score tile: attn_tile(window), or T when shorter. */
static size_t tile_side(size_t T, size_t tile) { return T < tile ? T : tile; }

/* Forward tasks are (b, h, query tile), backward tasks (b, h). */
static size_t forward_task_floats(size_t T, size_t hs, size_t tile) {
    return tile_side(T, tile) * (tile_side(T, tile) + hs);
}
/* The row stride of backward's K^T and V^T copies (hs rows of T): T plus 16
 * floats, so that at a power-of-two T (4096: 16 KB) the rows a tile product
 * reads do not all fall in the same few sets of the L1 cache. */
static size_t transposed_ld(size_t T) { return T + 16; }
/* A head's K^T and V^T at that stride. */
static size_t transposed_floats(size_t T, size_t hs) { return 2 * hs * transposed_ld(T); }
/* A head's copies for backward in fp32, one task per head: K^T and V^T
 * (hs rows of transposed_ld(T)), then Q, K and dY with rows of hs (T rows
 * each). In place, a head's rows of Q, K (stride 3C) and dY (stride C) put
 * the 128 rows a tile product reads at strides that share a few L1 sets
 * (C = 128: 8 of 64); contiguous they share none. The long config's step:
 * 905 -> 686 ms on one Zen 3 core with these copies and the padding. The
 * tile tasks (attention_backward_by_tiles) keep only K^T and V^T, to fit
 * in the forward pass's tiles. */
static size_t head_copy_floats(size_t T, size_t hs) { return transposed_floats(T, hs) + 3 * hs * T; }

/* dst (T, hs) = a head's T rows of hs at row stride ld (the copies above). */
static void copy_head(size_t T, size_t hs, const float *x, size_t ld, float *dst) {
    for (size_t t = 0; t < T; t++) memcpy(dst + t * hs, x + t * ld, hs * sizeof(float));
}
static size_t backward_task_floats(size_t T, size_t hs, size_t tile) {
    return 2 * tile_side(T, tile) * tile_side(T, tile) + head_copy_floats(T, hs);
}

/* Forward's tiles: each task's, then each head's K and V copied with rows of
 * hs (fp32), for the reason head_copy_floats gives. */
static size_t tile_floats(size_t B, size_t T, size_t H, size_t hs, size_t tile) {
    size_t fwd = B * H * (ceil_div(T, tile) * forward_task_floats(T, hs, tile) + 2 * hs * T);
    size_t bwd = B * H * backward_task_floats(T, hs, tile);
    return fwd > bwd ? fwd : bwd;
}

/* With base == NULL it only measures. */
static size_t attn_layout(float *base, const MixerSpec *spec, size_t B, size_t T, AttnActs *a) {
    size_t N = B * T, C = spec->n_embd, H = spec->n_head, used = 0;
    int qk_norm = spec->qk_norm;
    TAKE(a->qkv, N * 3 * C);
    TAKE(a->y, N * C);
    TAKE(a->lse, B * H * T);
    TAKE(a->dqkv, N * 3 * C);
    TAKE(a->dy, N * C);
    TAKE(a->delta, B * H * T);
    TAKE(a->tiles, tile_floats(B, T, H, C / H, attn_tile(attention_window(spec))));
    TAKE(a->qk_rstd, qk_norm ? N * 2 * H : 0);
    return used;
}

const float *attn_forward_qkv(const float *acts, const MixerSpec *spec, size_t B, size_t T) {
    AttnActs a;
    attn_layout((float *)acts, spec, B, T, &a);
    return a.qkv;
}

void attn_qk_norm(const MixerSpec *spec, float *qkv, float *rstd, size_t N) {
    /* q's H heads and k's H heads lie side by side, 2C values from a row's start */
    if (spec->qk_norm) rmsnorm_heads_forward(qkv, rstd, N, 3 * spec->n_embd, 2 * spec->n_head, spec->n_embd / spec->n_head);
}

static int attention_validate(const MixerSpec *spec, Error *err) {
    if (spec->n_head == 0) return err_set(err, "n_head must be positive");
    if (spec->n_embd % spec->n_head != 0)
        return err_set(err, "n_embd (%zu) must be divisible by n_head (%zu)", spec->n_embd, spec->n_head);
    if (spec->rope && (spec->n_embd / spec->n_head) % 2 != 0)
        return err_set(err, "rope positions rotate pairs of dimensions: the head size n_embd / n_head (%zu) must be even",
                       spec->n_embd / spec->n_head);
    return 0;
}

/* Its tensors, in storage order: the one declaration of its layout (lm/mixer.h's MIXER_TENSOR). */
static void attention_tensors(const MixerSpec *spec, MixerLayout *L) {
    size_t C = spec->n_embd;
    MIXER_TENSOR(L, AttnParams, qkv_w, "attn.qkv.weight", 3 * C, C, INIT_NORMAL, 0);
    MIXER_TENSOR(L, AttnParams, qkv_b, "attn.qkv.bias", 3 * C, 0, INIT_ZERO, 0);
    MIXER_TENSOR(L, AttnParams, proj_w, "attn.proj.weight", C, C, INIT_RESIDUAL, 1);
    MIXER_TENSOR(L, AttnParams, proj_b, "attn.proj.bias", C, 0, INIT_ZERO, 0);
}

AttnParams attn_params(const float *params, const MixerSpec *spec) {
    AttnParams p;
    mixer_params(attention_tensors, spec, params, &p, sizeof p);
    return p;
}

static size_t attention_act_size(const MixerSpec *spec, size_t B, size_t T) {
    AttnActs unused;
    return attn_layout(NULL, spec, B, T, &unused);
}

/* The tiles' products (blas/tile_gemm.h's tile_product) read each head's
 * Q, K, V and dY (X: T x hs, the head's columns of qkv or dy) in three roles:
 *   X as A, the inner dimension hs:      K in s^T = K Q^T, Q in S = Q K^T, dY in dP = dY V^T
 *   X^T as B, the inner dimension hs:    Q^T, K^T, V^T in those
 *   X as B, the inner dimension tokens:  V in O += P V, dY in dV += P^T dY, K in dQ += dS K, Q in dK += dS^T Q
 * In fp32 the first and last read X in place and the second a transposed
 * copy. With --precision bf16 each role reads X rounded to bf16 and packed
 * by pairs once per head (tile_pack_bf16_rows, _rows_transposed, _columns),
 * so every tile and diagonal strip reads the head's packing instead of
 * rounding and packing its operands again; the probabilities P and score
 * gradients dS, fresh for each tile, are rounded and packed by each product
 * (as A). Accumulation, softmax and its backward stay fp32. */
typedef struct HeadPacking {
    size_t T, hs, pairs, T_padded, hs_padded; /* pairs: ceil(hs / 2) words per packed row */
} HeadPacking;

static HeadPacking head_packing(size_t T, size_t hs) {
    return (HeadPacking){T, hs, (hs + 1) / 2, tile_bf16_padded(T), tile_bf16_padded(hs)};
}

/* Words of each role's packing of one head's X. */
static size_t packed_a_words(HeadPacking h) { return h.T * h.pairs; }
static size_t packed_bt_words(HeadPacking h) { return h.pairs * h.T_padded; }
static size_t packed_b_words(HeadPacking h) { return (h.T + 1) / 2 * h.hs_padded; }

/* Backward packs Q and dY as A, K and V as B^T, dY, K and Q as B; forward
 * K as A, Q as B^T and V as B: fewer. */
static size_t head_packed_words(HeadPacking h) {
    return 2 * packed_a_words(h) + 2 * packed_bt_words(h) + 3 * packed_b_words(h);
}

/* X (T x hs, row stride ld) in each role: fp32, X as it is (the transposed
 * copy for B^T is the caller's); bf16, packed into dst, and the operand that
 * reads it there. */
static TileOperand fp32_a(const float *x, size_t ld) { return (TileOperand){.f = x, .rs = ld, .cs = 1}; }
static TileOperand fp32_b(const float *x, size_t ld) { return (TileOperand){.f = x, .rs = ld}; }

static void pack_a(HeadPacking h, const float *x, size_t ld, uint32_t *dst) {
    tile_pack_bf16_rows(h.T, h.hs, x, ld, dst, h.pairs);
}
static void pack_bt(HeadPacking h, const float *x, size_t ld, uint32_t *dst) {
    tile_pack_bf16_rows_transposed(h.T, h.hs, x, ld, dst, h.T_padded);
}
static void pack_b(HeadPacking h, const float *x, size_t ld, uint32_t *dst) {
    tile_pack_bf16_columns(h.T, h.hs, x, ld, dst, h.hs_padded);
}
static TileOperand packed_a(HeadPacking h, const uint32_t *w) { return (TileOperand){.w = w, .rs = h.pairs, .cs = 1}; }
static TileOperand packed_bt(HeadPacking h, const uint32_t *w) { return (TileOperand){.w = w, .rs = h.T_padded}; }
static TileOperand packed_b(HeadPacking h, const uint32_t *w) { return (TileOperand){.w = w, .rs = h.hs_padded}; }

/* Forward's packing of one head in its room: K as A, Q as B^T, V as B. */
typedef struct ForwardRoom {
    uint32_t *k, *qt, *v;
} ForwardRoom;

static ForwardRoom forward_room(HeadPacking h, uint32_t *room) {
    return (ForwardRoom){room, room + packed_a_words(h), room + packed_a_words(h) + packed_bt_words(h)};
}

/* The head's packing room in the model's bf16 buffer (lm/ops.h). */
static uint32_t *head_room(const MixerRuntime *rt, HeadPacking h, size_t B, size_t H, size_t bh) {
    return matmul_bf16_packed(rt->bf16, B * H * head_packed_words(h)) + bh * head_packed_words(h);
}

/* Whether backward cuts heads into tile tasks (attention.h): one task per head takes
 * ceil(BH / P) heads' time on P threads, tile tasks about 1.4 BH / P (7
 * products for 5), so the cut pays when 7 BH < 5 P ceil(BH / P) (BH = 4: from
 * 6 threads). And only where the tile tasks' room (each head's K^T and V^T,
 * two score tiles per thread) fits in the tiles the forward pass uses, so
 * the model's memory does not depend on its thread count. */
int attention_backward_by_tiles(size_t B, size_t T, size_t H, size_t hs, size_t window) {
    size_t BH = B * H, P = threads_width(), tile = attn_tile(window), ts = tile_side(T, tile);
    if (T <= tile || 7 * BH >= 5 * P * ceil_div(BH, P)) return 0;
    return BH * transposed_floats(T, hs) + threads_max() * 2 * ts * ts <= tile_floats(B, T, H, hs, tile);
}

static void attention_forward(const MixerSpec *spec, const MixerRuntime *rt, const float *params, float *acts,
                              float *out, const float *in, size_t B, size_t T) {
    size_t window = attention_window(spec), tile = attn_tile(window);
    size_t C = spec->n_embd, H = spec->n_head, hs = C / H, nt = ceil_div(T, tile), ts = tile_side(T, tile);
    float scale = 1.0f / sqrtf((float)hs);
    AttnParams p = attn_params(params, spec);
    AttnActs a;
    attn_layout(acts, spec, B, T, &a);
    matmul_forward(rt->bf16, a.qkv, in, p.qkv_w, p.qkv_b, B * T, C, 3 * C);
    if (spec->rope) rope_forward(a.qkv, rt->rope, B, T, 0, C, hs); /* qkv keeps the rotated q, k */
    attn_qk_norm(spec, a.qkv, a.qk_rstd, B * T);
    HeadPacking hp = head_packing(T, hs);
    float *kv_copies = a.tiles + B * H * nt * forward_task_floats(T, hs, tile);
    if (rt->bf16) { /* each head's K, Q and V packed once for all its query tiles */
#pragma omp parallel for schedule(static)
        for (size_t bh = 0; bh < B * H; bh++) {
            const float *q = a.qkv + (bh / H) * T * 3 * C + (bh % H) * hs;
            ForwardRoom r = forward_room(hp, head_room(rt, hp, B, H, bh));
            pack_a(hp, q + C, 3 * C, r.k);
            pack_bt(hp, q, 3 * C, r.qt);
            pack_b(hp, q + 2 * C, 3 * C, r.v);
        }
    } else { /* each head's K and V copied with rows of hs (tile_floats) */
#pragma omp parallel for schedule(static)
        for (size_t bh = 0; bh < B * H; bh++) {
            const float *q = a.qkv + (bh / H) * T * 3 * C + (bh % H) * hs;
            float *kc = kv_copies + bh * 2 * hs * T;
            copy_head(T, hs, q + C, 3 * C, kc);
            copy_head(T, hs, q + 2 * C, 3 * C, kc + hs * T);
        }
    }
    /* Later query tiles see more keys: hand out tasks one by one. */
#pragma omp parallel for schedule(dynamic, 1)
    for (size_t task = 0; task < B * H * nt; task++) {
        size_t bh = task / nt, b = bh / H, h = bh % H, i0 = (task % nt) * tile;
        size_t nq = tile_rows(T, i0, tile);
        const float *q = a.qkv + b * T * 3 * C + h * hs;
        float *st = a.tiles + task * forward_task_floats(T, hs, tile), *qt = st + ts * ts;
        TileOperand k_a, qt_b, v_b;
        if (rt->bf16) {
            ForwardRoom r = forward_room(hp, head_room(rt, hp, B, H, bh));
            k_a = packed_a(hp, r.k), qt_b = tile_b_at(packed_bt(hp, r.qt), 0, i0), v_b = packed_b(hp, r.v);
        } else {
            tile_transpose(nq, hs, q + i0 * 3 * C, 3 * C, qt, ts);
            const float *kc = kv_copies + bh * 2 * hs * T;
            k_a = fp32_a(kc, hs), qt_b = fp32_b(qt, ts), v_b = fp32_b(kc + hs * T, hs);
        }
        flash_forward_tile(a.y + (b * T + i0) * C + h * hs, C, a.lse + bh * T + i0, st, ts, k_a, qt_b, v_b, i0, nq,
                           hs, scale, window);
    }
    mute_heads(a.y, B * T, C, hs, spec->muted); /* bin/eval --ablate's heads */
    matmul_forward(rt->bf16, out, a.y, p.proj_w, p.proj_b, B * T, C, C);
}

/* Backward's operands of one head (q, k, v: row stride ld; dy: ldy): in
 * bf16 packed into its room; in fp32 K^T and V^T transposed into kt and vt,
 * and with copies Q, K and dY copied after them (head_copy_floats), else
 * read in place. prepare: transpose, copy or pack them (else only say where
 * they are, for tasks after the head's preparation). */
static BackwardOperands backward_operands(const MixerRuntime *rt, HeadPacking hp, uint32_t *room, float *kt,
                                          float *vt, const float *q, const float *k, const float *v, size_t ld,
                                          const float *dy, size_t ldy, int copies, int prepare) {
    size_t T = hp.T, hs = hp.hs;
    if (!rt->bf16) {
        if (prepare) {
            tile_transpose(T, hs, k, ld, kt, transposed_ld(T));
            tile_transpose(T, hs, v, ld, vt, transposed_ld(T));
        }
        if (!copies)
            return (BackwardOperands){.q = fp32_a(q, ld), .dy = fp32_a(dy, ldy), .kt = fp32_b(kt, transposed_ld(T)),
                                      .vt = fp32_b(vt, transposed_ld(T)), .dy_b = fp32_b(dy, ldy),
                                      .k_b = fp32_b(k, ld), .q_b = fp32_b(q, ld)};
        float *qc = vt + hs * transposed_ld(T), *kc = qc + hs * T, *dyc = kc + hs * T;
        if (prepare) copy_head(T, hs, q, ld, qc), copy_head(T, hs, k, ld, kc), copy_head(T, hs, dy, ldy, dyc);
        return (BackwardOperands){.q = fp32_a(qc, hs), .dy = fp32_a(dyc, hs), .kt = fp32_b(kt, transposed_ld(T)),
                                  .vt = fp32_b(vt, transposed_ld(T)), .dy_b = fp32_b(dyc, hs), .k_b = fp32_b(kc, hs),
                                  .q_b = fp32_b(qc, hs)};
    }
    BackwardOperands x;
#define ROLE(field, pack, x_in, ldx, as, words) \
    (prepare ? pack(hp, x_in, ldx, room) : (void)0, x.field = as(hp, room), room += words(hp))
    ROLE(q, pack_a, q, ld, packed_a, packed_a_words);
    ROLE(dy, pack_a, dy, ldy, packed_a, packed_a_words);
    ROLE(kt, pack_bt, k, ld, packed_bt, packed_bt_words);
    ROLE(vt, pack_bt, v, ld, packed_bt, packed_bt_words);
    ROLE(dy_b, pack_b, dy, ldy, packed_b, packed_b_words);
    ROLE(k_b, pack_b, k, ld, packed_b, packed_b_words);
    ROLE(q_b, pack_b, q, ld, packed_b, packed_b_words);
#undef ROLE
    return x;
}

/* Head bh's backward operands (backward_operands): its Q, K and V in a's
 * qkv, its dY in a's dy, K^T and V^T (and with copies the rest) from kt. */
static BackwardOperands head_operands(const MixerRuntime *rt, HeadPacking hp, const AttnActs *a, size_t B, size_t H,
                                      size_t C, size_t bh, float *kt, int copies, int prepare) {
    size_t T = hp.T, hs = hp.hs;
    const float *q = a->qkv + (bh / H) * T * 3 * C + (bh % H) * hs, *dy = a->dy + (bh / H) * T * C + (bh % H) * hs;
    return backward_operands(rt, hp, rt->bf16 ? head_room(rt, hp, B, H, bh) : NULL, kt, kt + hs * transposed_ld(T), q,
                             q + C, q + 2 * C, 3 * C, dy, C, copies, prepare);
}

static void attention_backward(const MixerSpec *spec, const MixerRuntime *rt, const float *params, float *dparams,
                               float *acts, const float *in, const float *dout, float *din,
                               size_t B, size_t T) {
    size_t window = attention_window(spec), tile = attn_tile(window);
    size_t C = spec->n_embd, H = spec->n_head, hs = C / H, ts = tile_side(T, tile), nt = ceil_div(T, tile);
    float scale = 1.0f / sqrtf((float)hs);
    AttnParams p = attn_params(params, spec);
    AttnParams g = attn_params(dparams, spec);
    AttnActs a;
    attn_layout(acts, spec, B, T, &a);
    matmul_backward(rt->bf16, a.dy, 0.0f, (float *)g.proj_w, (float *)g.proj_b, dout, a.y, p.proj_w, B * T, C, C);
    HeadPacking hp = head_packing(T, hs);
    /* One task per head, or (by_tiles) the heads prepared first, then a
     * task per key tile and one per query tile. The tiles hold, per head,
     * two score tiles and the head's copies (one task per head), or every
     * head's K^T and V^T, then two score tiles per thread (by tiles). */
    int by_tiles = attention_backward_by_tiles(B, T, H, hs, window);
    size_t kt_floats = transposed_floats(T, hs);
    float *head_kt = a.tiles, *thread_tiles = a.tiles + B * H * kt_floats;
#pragma omp parallel for schedule(static)
    for (size_t bh = 0; bh < B * H; bh++) {
        size_t b = bh / H, h = bh % H, off = b * T * 3 * C + h * hs;
        const float *dy = a.dy + b * T * C + h * hs, *y = a.y + b * T * C + h * hs;
        float *delta = a.delta + bh * T;
        for (size_t t = 0; t < T; t++) {
            float sum = 0.0f;
            for (size_t d = 0; d < hs; d++) sum += dy[t * C + d] * y[t * C + d];
            delta[t] = sum;
        }
        if (by_tiles) {
            head_operands(rt, hp, &a, B, H, C, bh, head_kt + bh * kt_floats, 0, 1);
            continue;
        }
        float *s = a.tiles + bh * backward_task_floats(T, hs, tile), *kt = s + 2 * ts * ts;
        flash_backward_head(a.dqkv + off, a.dqkv + off + C, a.dqkv + off + 2 * C, 3 * C, s, s + ts * ts, ts,
                            head_operands(rt, hp, &a, B, H, C, bh, kt, 1, 1), a.lse + bh * T, delta, T, hs, scale,
                            window);
    }
    if (by_tiles) {
        /* Key tile j is seen by nt - j query tiles, query tile i sees i + 1
         * key tiles: the longest tasks first. */
#pragma omp parallel for schedule(dynamic, 1)
        for (size_t task = 0; task < B * H * nt; task++) {
            size_t bh = task % (B * H), j0 = task / (B * H) * tile, off = (bh / H) * T * 3 * C + (bh % H) * hs;
            float *s = thread_tiles + (size_t)omp_get_thread_num() * 2 * ts * ts;
            BackwardOperands x = head_operands(rt, hp, &a, B, H, C, bh, head_kt + bh * kt_floats, 0, 0);
            flash_backward_key_tile(a.dqkv + off + C, a.dqkv + off + 2 * C, 3 * C, s, s + ts * ts, ts, x,
                                    a.lse + bh * T, a.delta + bh * T, T, j0, hs, scale, window);
        }
#pragma omp parallel for schedule(dynamic, 1)
        for (size_t task = 0; task < B * H * nt; task++) {
            size_t bh = task % (B * H), i0 = (nt - 1 - task / (B * H)) * tile;
            size_t off = (bh / H) * T * 3 * C + (bh % H) * hs;
            float *s = thread_tiles + (size_t)omp_get_thread_num() * 2 * ts * ts;
            BackwardOperands x = head_operands(rt, hp, &a, B, H, C, bh, head_kt + bh * kt_floats, 0, 0);
            flash_backward_query_tile(a.dqkv + off, 3 * C, s, s + ts * ts, ts, x, a.lse + bh * T, a.delta + bh * T, T,
                                      i0, hs, scale, window);
        }
    }
    if (spec->qk_norm) rmsnorm_heads_backward(a.dqkv, a.qkv, a.qk_rstd, B * T, 3 * C, 2 * H, hs);
    if (spec->rope) rope_backward(a.dqkv, rt->rope, B, T, 0, C, hs);
    matmul_backward(rt->bf16, din, 0.0f, (float *)g.qkv_w, (float *)g.qkv_b, a.dqkv, in, p.qkv_w, B * T, C, 3 * C);
}

/* Words of packed operands --precision bf16 uses (MatmulBf16.packed): every
 * head's backward packing (forward's is smaller), for batch B x T. */
static size_t attention_bf16_words(const MixerSpec *spec, size_t B, size_t T) {
    return B * spec->n_head * head_packed_words(head_packing(T, spec->n_embd / spec->n_head));
}

/* A causal token meets (T + 1) / 2 keys on average, with a window W < T
 * (W (W + 1) / 2 + (T - W) W) / T; QK^T and PV take 2 multiply-adds per key
 * and channel: forward 4 C keys, backward twice that. */
static double attention_flops(const MixerSpec *spec, size_t T) {
    double W = (double)attention_window(spec), n = (double)T;
    double keys = W > 0 && W < n ? (W * (W + 1) / 2 + (n - W) * W) / n : (n + 1) / 2;
    return 12.0 * (double)spec->n_embd * keys;
}

static const OptionRow attention_options[] = {
    {.name = "attn-window", .json_key = "attn_window", .kind = OPT_SIZE, .value = "N",
     .help = "attention sees the last N positions only (a sliding window,\ncost flat in the block size); 0 = all (0)",
     .offset = offsetof(AttentionSettings, window), .lo = 0, .hi = 16384, .def = 0, .omit_default = 1,
     .arch_key = "window", .family = "sliding-window attention"},
};

static void attention_layer_spec(const void *settings, size_t l, MixerSpec *spec) {
    (void)l;
    memcpy(spec->own.bytes, settings, sizeof(AttentionSettings));
}

static void attention_describe(const void *settings, size_t n_layer, char *buf, size_t len) {
    (void)n_layer;
    size_t window = ((const AttentionSettings *)settings)->window;
    if (window) snprintf(buf, len, "attention window %zu", window);
    else buf[0] = '\0'; /* the default: the start-up line as it was */
}

const Mixer attention_mixer = {
    .name = "attention",
    .about = "causal multi-head softmax attention, over the whole block or a sliding window",
    .options = attention_options,
    .n_options = sizeof attention_options / sizeof attention_options[0],
    .layer_spec = attention_layer_spec,
    .describe = attention_describe,
    .parts = head_parts,
    .validate = attention_validate,
    .layout = attention_tensors,
    .act_size = attention_act_size,
    .forward = attention_forward,
    .backward = attention_backward,
    .state_size = attention_state_size,
    .memory_size = attention_memory_size,
    .step = attention_step,
    .step_batch = attention_step_batch,
    .fill_state = attention_fill_state,
    .flops = attention_flops,
    .bf16_words = attention_bf16_words,
    .inspect = attention_inspect,
    /* On the contract suite's test layer (tests/unit/mixers/test_mixers.c), at the
     * portable and AVX2 levels alike: decode bf16 4.8e-3 from fp32, int8
     * 1.7e-2 (its weights and activations in int8; the weights alone 1.2e-2);
     * the bounds about three times that. bf16 training as
     * tests/unit/train/test_bf16_train.c bounds attention, P 2^-7 K with K = 4 and
     * P = 4 products forward (qkv, the tiles' S and PV, proj), 6 backward;
     * not measured on this layer (set on a CPU without AVX512_BF16; bf16
     * rounding of the weights, input and dout alone, in fp32 products,
     * moves out by 2.5e-3 and the gradients by 4.8e-3, normwise). */
    .bounds = {.decode_bf16 = 1.5e-2, .decode_int8 = 4e-2, .train_bf16_forward = 0.125, .train_bf16_backward = 0.1875},
};
