/* Attention's sampling step (mixers/attention.h): the per-sequence caches of
 * keys and values, the step over them for n sequences at once, and the
 * caches filled from a prefill's forward. The forward and backward passes
 * are attention.c's. */
#include "mixers/attention.h"

#include <math.h>
#include <string.h>

#include "blas/gemv.h"
#include "lm/matmul.h"
#include "lm/ops.h"
#include "lm/threads.h"
#include "mixers/head_parts.h"
#include "nn/rope.h"

/* The positions the sampling caches hold: block_size, or with a window a
 * ring of that many. */
static size_t cache_slots(const MixerSpec *spec) {
    size_t w = attention_window(spec);
    return w && w < spec->block_size ? w : spec->block_size;
}

/* The sampling state of one sequence (slots = cache_slots, rounded up to
 * whole key tiles in `tiled`):
 *   keys   (H, tiled / 16, hs, 16): each head's keys in the tiles the
 *          decode kernels read (blas/gemv.h's key_scores), so that a step
 *          streams them with no sums across lanes;
 *   values (slots, C), as the forward's qkv holds them;
 *   then scratch for one position's qkv (3C), each head's scores (H, tiled)
 *   and y (C). */
typedef struct StepState {
    float *keys, *values, *qkv, *scores, *y;
    size_t slots, tiled;
} StepState;

static StepState step_state(const MixerSpec *spec, float *state) {
    size_t C = spec->n_embd, slots = cache_slots(spec);
    size_t tiled = (slots + GEMV_KEY_TILE - 1) / GEMV_KEY_TILE * GEMV_KEY_TILE;
    StepState s = {.keys = state, .slots = slots, .tiled = tiled};
    s.values = s.keys + tiled * C;
    s.qkv = s.values + slots * C;
    s.scores = s.qkv + 3 * C;
    s.y = s.scores + spec->n_head * tiled;
    return s;
}

size_t attention_memory_size(const MixerSpec *spec) { return 2 * cache_slots(spec) * spec->n_embd; }

size_t attention_state_size(const MixerSpec *spec) {
    StepState s = step_state(spec, NULL);
    return (size_t)(s.y - s.keys) + spec->n_embd;
}

/* Position t's key k (C) and value v (C) into their cache slot: t itself,
 * or with a window the ring's slot, whose slots hold the last `slots`
 * positions (in ring order: the softmax and its sum do not care which key
 * comes first). */
static void cache_put(const MixerSpec *spec, const StepState *s, size_t t, const float *k, const float *v) {
    size_t C = spec->n_embd, H = spec->n_head, hs = C / H, at = t % s->slots;
    float *tile = s->keys + at / GEMV_KEY_TILE * hs * GEMV_KEY_TILE + at % GEMV_KEY_TILE;
    for (size_t h = 0; h < H; h++)
        for (size_t d = 0; d < hs; d++) tile[h * s->tiled * hs + d * GEMV_KEY_TILE] = k[h * hs + d];
    memcpy(s->values + at * C, v, C * sizeof(float));
}

/* Sampling steps of n sequences at position t (Mixer.step_batch): the
 * projections over the n rows at once, each sequence's attention over its
 * own caches between them, its heads shared among the threads when the
 * caches are large enough to share. */
void attention_step_batch(const MixerSpec *spec, const MixerRuntime *rt, const float *params, float *state,
                                 size_t stride, const float *in, float *out, size_t t, size_t n) {
    size_t C = spec->n_embd, H = spec->n_head, hs = C / H;
    float scale = 1.0f / sqrtf((float)hs);
    AttnParams p = attn_params(params, C);
    StepState s0 = step_state(spec, state);
    size_t qkv_at = (size_t)(s0.qkv - state), y_at = (size_t)(s0.y - state);
    size_t keys = t + 1 < s0.slots ? t + 1 : s0.slots;
    const GemvLoops *loops = gemv_loops();
    int threads = keys * C >= GEMV_SHARED_ENTRIES ? threads_width() : 1;
    matmul_step_rows(rt->bf16, rt->decode, state + qkv_at, stride, in, C, p.qkv_w, C, p.qkv_b, n, C, 3 * C, 0);
    for (size_t i = 0; i < n; i++) {
        StepState s = step_state(spec, state + i * stride);
        if (spec->rope) rope_forward(s.qkv, rt->rope, 1, 1, t, C, hs); /* the cache holds rotated keys */
        attn_qk_norm(spec, s.qkv, NULL, 1);
        cache_put(spec, &s, t, s.qkv + C, s.qkv + 2 * C);
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
        for (size_t h = 0; h < H; h++) {
            float *row = s.scores + h * s.tiled;
            loops->key_scores(row, s.qkv + h * hs, s.keys + h * s.tiled * hs, hs, keys, scale);
            softmax(row, row, keys);
            loops->value_sum(s.y + h * hs, row, s.values + h * hs, C, keys, hs);
        }
        mute_heads(s.y, 1, C, hs, spec->muted); /* bin/eval --ablate's heads */
    }
    matmul_step_rows(rt->bf16, rt->decode, out, C, state + y_at, stride, p.proj_w, C, p.proj_b, n, C, C, 0);
}

void attention_step(const MixerSpec *spec, const MixerRuntime *rt, const float *params, float *state,
                           const float *in_t, float *out_t, size_t t) {
    attention_step_batch(spec, rt, params, state, attention_state_size(spec), in_t, out_t, t, 1);
}

/* The caches from forward's qkv (rotated, normalised keys, as step keeps
 * them): the last cache_slots positions of the T, each in its slot. */
void attention_fill_state(const MixerSpec *spec, const float *acts, size_t T, float *state) {
    size_t C = spec->n_embd;
    StepState s = step_state(spec, state);
    const float *qkv = attn_forward_qkv(acts, spec, 1, T);
    for (size_t t = T > s.slots ? T - s.slots : 0; t < T; t++)
        cache_put(spec, &s, t, qkv + t * 3 * C + C, qkv + t * 3 * C + 2 * C);
}

