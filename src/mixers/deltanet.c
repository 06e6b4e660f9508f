/* Gated DeltaNet (see mixers/deltanet.h). */
#include "mixers/deltanet.h"

#include <math.h>
#include <string.h>

#include "lm/matmul.h"
#include "mixers/head_decay.h"
#include "mixers/head_parts.h"
#include "nn/rmsnorm.h"
#include "runtime/arena.h"

/* Its tensors, in storage order: the one declaration of its layout (lm/mixer.h's MIXER_TENSOR). */
static void delta_tensors(const MixerSpec *spec, MixerLayout *L) {
    size_t C = spec->n_embd, H = spec->n_head;
    MIXER_TENSOR(L, DeltaParams, qkv_w, "deltanet.qkv.weight", 3 * C, C, INIT_NORMAL, 0);
    MIXER_TENSOR(L, DeltaParams, qkv_b, "deltanet.qkv.bias", 3 * C, 0, INIT_ZERO, 0);
    MIXER_TENSOR(L, DeltaParams, decay_w, "deltanet.decay.weight", H, C, INIT_NORMAL, 0);
    MIXER_TENSOR(L, DeltaParams, decay_b, "deltanet.decay.bias", H, 0, INIT_ZERO, 0);
    MIXER_TENSOR(L, DeltaParams, beta_w, "deltanet.beta.weight", H, C, INIT_NORMAL, 0);
    MIXER_TENSOR(L, DeltaParams, beta_b, "deltanet.beta.bias", H, 0, INIT_ZERO, 0);
    MIXER_TENSOR(L, DeltaParams, proj_w, "deltanet.proj.weight", C, C, INIT_RESIDUAL, 1);
    MIXER_TENSOR(L, DeltaParams, proj_b, "deltanet.proj.bias", C, 0, INIT_ZERO, 0);
}

DeltaParams deltanet_params(const float *params, const MixerSpec *spec) {
    DeltaParams p;
    mixer_params(delta_tensors, spec, params, &p, sizeof p);
    return p;
}

/* acts: qkv (B,T,3C) with q and k RMS-normalised in place per head and
 * their rstd (B,T,2H), alpha and beta (B,T,H), y (B,T,C) the normalised o
 * and its rstd (B,T,H), the state at the start of every chunk
 * (B,H,ceil(T/L),hs,hs); backward's dqkv (B,T,3C), dy (B,T,C), dalpha and
 * dbeta (B,T,H), and a ChunkRoom per (b, h). */
typedef struct DeltaActs {
    float *qkv, *qk_rstd, *alpha, *beta, *y, *rstd, *starts; /* forward, kept for backward */
    float *dqkv, *dy, *dalpha, *dbeta, *scratch;             /* backward; scratch: a ChunkRoom per (b, h) */
} DeltaActs;

static size_t n_chunks(size_t T) { return (T + DELTANET_CHUNK - 1) / DELTANET_CHUNK; }

/* One (b, h)'s room: the running state S (forward leaves S_T there, for
 * fill_state; u and w its scratch), a chunk's L + 1 states as backward
 * recomputes them with each position's u and w (L x hs), the gradient
 * reaching the state dS (hs x hs), and g, du (hs). */
typedef struct ChunkRoom {
    float *S, *states, *u, *w, *dS, *g, *du;
} ChunkRoom;

static size_t chunk_room(float *base, size_t hs, ChunkRoom *c) {
    size_t L = DELTANET_CHUNK, used = 0;
    TAKE(c->S, hs * hs);
    TAKE(c->states, (L + 1) * hs * hs);
    TAKE(c->u, L * hs);
    TAKE(c->w, L * hs);
    TAKE(c->dS, hs * hs);
    TAKE(c->g, hs);
    TAKE(c->du, hs);
    return used;
}

static size_t room_per_head(size_t hs) { return chunk_room(NULL, hs, &(ChunkRoom){0}); }

/* With base == NULL it only measures. */
static size_t delta_layout(float *base, size_t B, size_t T, size_t C, size_t H, DeltaActs *a) {
    size_t N = B * T, hs = C / H, used = 0;
    TAKE(a->qkv, N * 3 * C);
    TAKE(a->qk_rstd, N * 2 * H);
    TAKE(a->alpha, N * H);
    TAKE(a->beta, N * H);
    TAKE(a->y, N * C);
    TAKE(a->rstd, N * H);
    TAKE(a->starts, B * H * n_chunks(T) * hs * hs);
    TAKE(a->dqkv, N * 3 * C);
    TAKE(a->dy, N * C);
    TAKE(a->dalpha, N * H);
    TAKE(a->dbeta, N * H);
    TAKE(a->scratch, B * H * room_per_head(hs));
    return used;
}

static int delta_validate(const MixerSpec *spec, Error *err) {
    if (spec->n_head == 0) return err_set(err, "n_head must be positive");
    if (spec->n_embd % spec->n_head != 0)
        return err_set(err, "n_embd (%zu) must be divisible by n_head (%zu)", spec->n_embd, spec->n_head);
    return 0;
}

static size_t delta_act_size(const MixerSpec *spec, size_t B, size_t T) {
    DeltaActs unused;
    return delta_layout(NULL, B, T, spec->n_embd, spec->n_head, &unused);
}

static float sigmoid(float z) { return 1.0f / (1.0f + expf(-z)); }

/* alpha, beta (N, H): sigmoid(x . decay_w^T + decay_b + offset) and
 * sigmoid(x . beta_w^T + beta_b). */
void deltanet_gates(float *alpha, float *beta, const DeltaParams *p, const float *in, size_t N, size_t C, size_t H) {
    matmul_forward(NULL, alpha, in, p->decay_w, p->decay_b, N, C, H);
    matmul_forward(NULL, beta, in, p->beta_w, p->beta_b, N, C, H);
    for (size_t h = 0; h < H; h++) {
        float offset = head_decay_offset(h, H); /* once per head, not per token */
        for (size_t n = 0; n < N; n++) {
            alpha[n * H + h] = sigmoid(alpha[n * H + h] + offset);
            beta[n * H + h] = sigmoid(beta[n * H + h]);
        }
    }
}

/* u = S^T k: the state read at a key. */
static void state_at(float *u, const float *S, const float *k, size_t hs) {
    for (size_t j = 0; j < hs; j++) u[j] = 0.0f;
    for (size_t i = 0; i < hs; i++) {
        const float ki = k[i], *Si = S + i * hs;
#pragma omp simd
        for (size_t j = 0; j < hs; j++) u[j] += ki * Si[j];
    }
}

/* One position of one head's recurrence, k the RMS-normalised key (k^ = k c,
 * c = 1 / sqrt(hs)), ac = alpha c, bc = beta c and u = S^T k:
 *   w = v - ac u,  S' = alpha S + bc k w^T
 * which is alpha (I - beta k^ k^^T) S + beta k^ v^T (S is hs x hs, row i the
 * key dimension). In the same pass over S' (written to out, which may be S):
 * o = S'^T q, the readout, and un = S'^T kn, the next position's u (kn its
 * key; un may be u; NULL, with kn, where there is no next key: a step's).
 * u is read only before o is written, and w only after v is read at the
 * same place: u may be o, and w may be v. */
static void advance(float *out, const float *S, const float *k, const float *v, float alpha, float ac, float bc,
                    const float *u, float *w, const float *q, float *o, const float *kn, float *un, size_t hs) {
    for (size_t j = 0; j < hs; j++) w[j] = v[j] - ac * u[j];
    for (size_t j = 0; j < hs; j++) o[j] = 0.0f;
    if (un)
        for (size_t j = 0; j < hs; j++) un[j] = 0.0f;
    for (size_t i = 0; i < hs; i++) {
        const float bk = bc * k[i], qi = q[i], *Si = S + i * hs;
        float *oi = out + i * hs;
        if (un) {
            const float kni = kn[i];
#pragma omp simd
            for (size_t j = 0; j < hs; j++) {
                float sij = alpha * Si[j] + bk * w[j];
                oi[j] = sij;
                o[j] += qi * sij;
                un[j] += kni * sij;
            }
        } else {
#pragma omp simd
            for (size_t j = 0; j < hs; j++) {
                float sij = alpha * Si[j] + bk * w[j];
                oi[j] = sij;
                o[j] += qi * sij;
            }
        }
    }
}

void deltanet_state_step(float *S, const float *q, const float *k, float *v, float alpha, float beta, float *o,
                         size_t hs) {
    const float c = 1.0f / sqrtf((float)hs);
    state_at(o, S, k, hs); /* u = S^T k, in o until the readout replaces it; w in v */
    advance(S, S, k, v, alpha, alpha * c, beta * c, o, v, q, o, NULL, NULL, hs);
}

/* advance as backward recomputes it: the same S' (into out, not S), and
 * instead of the readout its gradient's dq = S' do. */
static void advance_again(float *out, const float *S, const float *k, const float *v, float alpha, float ac, float bc,
                          const float *u, float *w, const float *d_o, float *dq, const float *kn, float *un,
                          size_t hs) {
    for (size_t j = 0; j < hs; j++) w[j] = v[j] - ac * u[j];
    for (size_t j = 0; j < hs; j++) un[j] = 0.0f;
    for (size_t i = 0; i < hs; i++) {
        const float bk = bc * k[i], kni = kn[i], *Si = S + i * hs;
        float *oi = out + i * hs, d = 0.0f;
#pragma omp simd reduction(+ : d)
        for (size_t j = 0; j < hs; j++) {
            float sij = alpha * Si[j] + bk * w[j];
            oi[j] = sij;
            d += sij * d_o[j];
            un[j] += kni * sij;
        }
        dq[i] = d;
    }
}

static void delta_forward(const MixerSpec *spec, const MixerRuntime *rt, const float *params, float *acts, float *out,
                          const float *in, size_t B, size_t T) {
    size_t C = spec->n_embd, H = spec->n_head, hs = C / H, N = B * T, nc = n_chunks(T);
    DeltaParams p = deltanet_params(params, spec);
    DeltaActs a;
    delta_layout(acts, B, T, C, H, &a);
    matmul_forward(rt->bf16, a.qkv, in, p.qkv_w, p.qkv_b, N, C, 3 * C);
    rmsnorm_heads_forward(a.qkv, a.qk_rstd, N, 3 * C, 2 * H, hs); /* q's and k's 2H runs */
    deltanet_gates(a.alpha, a.beta, &p, in, N, C, H);
    const float c = 1.0f / sqrtf((float)hs);
#pragma omp parallel for schedule(static)
    for (size_t bh = 0; bh < B * H; bh++) {
        size_t b = bh / H, h = bh % H;
        ChunkRoom r;
        chunk_room(a.scratch + bh * room_per_head(hs), hs, &r);
        float *starts = a.starts + bh * nc * hs * hs;
        memset(r.S, 0, hs * hs * sizeof(float));
        memset(r.u, 0, hs * sizeof(float)); /* S_{-1}^T k_0 */
        for (size_t t = 0; t < T; t++) {
            if (t % DELTANET_CHUNK == 0) memcpy(starts + t / DELTANET_CHUNK * hs * hs, r.S, hs * hs * sizeof(float));
            size_t n = b * T + t;
            const float *q = a.qkv + n * 3 * C + h * hs, alpha = a.alpha[n * H + h];
            const float *kn = t + 1 < T ? q + 3 * C + C : q + C; /* the last position's next: unused */
            advance(r.S, r.S, q + C, q + 2 * C, alpha, alpha * c, a.beta[n * H + h] * c, r.u, r.w, q,
                    a.y + n * C + h * hs, kn, r.u, hs);
        }
    }
    rmsnorm_heads_forward(a.y, a.rstd, N, C, H, hs);
    mute_heads(a.y, N, C, hs, spec->muted); /* bin/eval --ablate's heads */
    matmul_forward(rt->bf16, out, a.y, p.proj_w, p.proj_b, N, C, C);
}

/* Backward through one position (advance), from dS, the gradient reaching
 * S_t from later positions, and do = d o_t; Sp = S_{t-1}, u and w as advance
 * left them (dq = S_t do came with the recomputation). With D = dS + q do^T
 * (the whole gradient of S_t) and g = D^T k:
 *   dk = bc D w + S_{t-1} du     dv = dw = bc g
 *   d alpha = <D, S_{t-1}> - c u . dw                     d beta = c g . w
 *   du = -ac dw              dS_{t-1} = alpha D + k du^T
 * (the last two: through u = S_{t-1}^T k). Writes dk, dv (hs each),
 * *dalpha, *dbeta; leaves dS_{t-1} in dS. */
typedef struct StepGrads {
    float *dk, *dv, *dalpha, *dbeta;
} StepGrads;

static void advance_backward(float *dS, const float *Sp, const float *q, const float *k, const float *u, const float *w,
                             const float *d_o, float alpha, float beta, float c, float *g, float *du, StepGrads d,
                             size_t hs) {
    const float ac = alpha * c, bc = beta * c;
    float da = 0.0f;
    for (size_t j = 0; j < hs; j++) g[j] = 0.0f;
    for (size_t i = 0; i < hs; i++) {
        const float qi = q[i], ki = k[i], *Spi = Sp + i * hs;
        float *Di = dS + i * hs, dai = 0.0f, dk = 0.0f;
#pragma omp simd reduction(+ : dai, dk)
        for (size_t j = 0; j < hs; j++) {
            float D = Di[j] + qi * d_o[j];
            Di[j] = D;
            dai += D * Spi[j];
            dk += D * w[j];
            g[j] += ki * D;
        }
        d.dk[i] = bc * dk;
        da += dai;
    }
    float gw = 0.0f, udw = 0.0f;
    for (size_t j = 0; j < hs; j++) {
        float dw = bc * g[j];
        d.dv[j] = dw;
        gw += g[j] * w[j];
        udw += u[j] * dw;
        du[j] = -ac * dw;
    }
    *d.dalpha = da - c * udw;
    *d.dbeta = c * gw;
    for (size_t i = 0; i < hs; i++) {
        const float ki = k[i], *Spi = Sp + i * hs;
        float *Di = dS + i * hs, s = 0.0f;
#pragma omp simd reduction(+ : s)
        for (size_t j = 0; j < hs; j++) {
            s += Spi[j] * du[j];
            Di[j] = alpha * Di[j] + ki * du[j];
        }
        d.dk[i] += s;
    }
}

static void delta_backward(const MixerSpec *spec, const MixerRuntime *rt, const float *params, float *dparams,
                           float *acts, const float *in, const float *dout, float *din, size_t B, size_t T) {
    size_t C = spec->n_embd, H = spec->n_head, hs = C / H, N = B * T, nc = n_chunks(T), hs2 = hs * hs;
    DeltaParams p = deltanet_params(params, spec), g = deltanet_params(dparams, spec);
    DeltaActs a;
    delta_layout(acts, B, T, C, H, &a);
    matmul_backward(rt->bf16, a.dy, 0.0f, (float *)g.proj_w, (float *)g.proj_b, dout, a.y, p.proj_w, N, C, C);
    rmsnorm_heads_backward(a.dy, a.y, a.rstd, N, C, H, hs);
    const float c = 1.0f / sqrtf((float)hs);
#pragma omp parallel for schedule(static)
    for (size_t bh = 0; bh < B * H; bh++) {
        size_t b = bh / H, h = bh % H;
        ChunkRoom r;
        chunk_room(a.scratch + bh * room_per_head(hs), hs, &r);
        memset(r.dS, 0, hs2 * sizeof(float));
        for (size_t k = nc; k-- > 0;) {
            size_t t0 = k * DELTANET_CHUNK, L = T - t0 < DELTANET_CHUNK ? T - t0 : DELTANET_CHUNK;
            const float *row0 = a.qkv + (b * T + t0) * 3 * C + h * hs;
            /* The chunk's states again, from its kept start, as forward made them. */
            memcpy(r.states, a.starts + (bh * nc + k) * hs2, hs2 * sizeof(float));
            state_at(r.u, r.states, row0 + C, hs);
            for (size_t j = 0; j < L; j++) {
                size_t n = b * T + t0 + j;
                const float *q = row0 + j * 3 * C, alpha = a.alpha[n * H + h];
                int last = j + 1 == L; /* the next u is the next chunk's to compute */
                advance_again(r.states + (j + 1) * hs2, r.states + j * hs2, q + C, q + 2 * C, alpha, alpha * c,
                              a.beta[n * H + h] * c, r.u + j * hs, r.w + j * hs, a.dy + n * C + h * hs,
                              a.dqkv + n * 3 * C + h * hs, last ? q + C : q + 3 * C + C, last ? r.du : r.u + (j + 1) * hs,
                              hs);
            }
            for (size_t j = L; j-- > 0;) {
                size_t n = b * T + t0 + j;
                const float *q = row0 + j * 3 * C;
                float *dq = a.dqkv + n * 3 * C + h * hs;
                StepGrads d = {dq + C, dq + 2 * C, a.dalpha + n * H + h, a.dbeta + n * H + h};
                advance_backward(r.dS, r.states + j * hs2, q, q + C, r.u + j * hs, r.w + j * hs, a.dy + n * C + h * hs,
                                 a.alpha[n * H + h], a.beta[n * H + h], c, r.g, r.du, d, hs);
            }
        }
    }
    rmsnorm_heads_backward(a.dqkv, a.qkv, a.qk_rstd, N, 3 * C, 2 * H, hs);
    /* Through the sigmoids: d z = d gate gate (1 - gate). */
    for (size_t i = 0; i < N * H; i++) {
        a.dalpha[i] *= a.alpha[i] * (1.0f - a.alpha[i]);
        a.dbeta[i] *= a.beta[i] * (1.0f - a.beta[i]);
    }
    matmul_backward(rt->bf16, din, 0.0f, (float *)g.qkv_w, (float *)g.qkv_b, a.dqkv, in, p.qkv_w, N, C, 3 * C);
    matmul_backward(NULL, din, 1.0f, (float *)g.decay_w, (float *)g.decay_b, a.dalpha, in, p.decay_w, N, C, H);
    matmul_backward(NULL, din, 1.0f, (float *)g.beta_w, (float *)g.beta_b, a.dbeta, in, p.beta_w, N, C, H);
}

/* Sampling state: S for every head (H hs^2 = C hs), then scratch for one
 * position's qkv (3C), alpha and beta (H each) and o (C): gla's size, u
 * and w living in o and v (deltanet_state_step). */
static size_t delta_state_size(const MixerSpec *spec) {
    size_t C = spec->n_embd, H = spec->n_head;
    return C * (C / H) + 4 * C + 2 * H;
}

/* Mixer.memory_size: each head's hs x hs state S, all that carries the past. */
static size_t delta_memory_size(const MixerSpec *spec) { return spec->n_embd * (spec->n_embd / spec->n_head); }

/* Sampling steps of n sequences at position t (Mixer.step_batch): the
 * projections over the n rows at once, each sequence's recurrence between. */
static void delta_step_batch(const MixerSpec *spec, const MixerRuntime *rt, const float *params, float *state,
                             size_t stride, const float *in, float *out, size_t t, size_t n) {
    size_t C = spec->n_embd, H = spec->n_head, hs = C / H, qkv_at = C * hs, o_at = qkv_at + 3 * C + 2 * H;
    DeltaParams p = deltanet_params(params, spec);
    matmul_step_rows(rt->bf16, rt->decode, state + qkv_at, stride, in, C, p.qkv_w, C, p.qkv_b, n, C, 3 * C, 0);
    for (size_t i = 0; i < n; i++) {
        float *S = state + i * stride, *qkv = S + qkv_at, *alpha = qkv + 3 * C, *beta = alpha + H, *o = beta + H;
        if (t == 0) memset(S, 0, C * hs * sizeof(float)); /* a new sequence */
        rmsnorm_heads_forward(qkv, NULL, 1, 3 * C, 2 * H, hs);
        deltanet_gates(alpha, beta, &p, in + i * C, 1, C, H);
        for (size_t h = 0; h < H; h++) {
            float *q = qkv + h * hs;
            deltanet_state_step(S + h * hs * hs, q, q + C, q + 2 * C, alpha[h], beta[h], o + h * hs, hs);
        }
        rmsnorm_heads_forward(o, NULL, 1, C, H, hs);
        mute_heads(o, 1, C, hs, spec->muted);
    }
    matmul_step_rows(rt->bf16, rt->decode, out, C, state + o_at, stride, p.proj_w, C, p.proj_b, n, C, C, 0);
}

static void delta_step(const MixerSpec *spec, const MixerRuntime *rt, const float *params, float *state,
                       const float *in_t, float *out_t, size_t t) {
    delta_step_batch(spec, rt, params, state, delta_state_size(spec), in_t, out_t, t, 1);
}

/* Each head's state at T: where forward left it, in the head's ChunkRoom. */
static void delta_fill_state(const MixerSpec *spec, const float *acts, size_t T, float *state) {
    size_t C = spec->n_embd, H = spec->n_head, hs = C / H;
    DeltaActs a;
    delta_layout((float *)acts, 1, T, C, H, &a);
    for (size_t h = 0; h < H; h++) {
        ChunkRoom r;
        chunk_room(a.scratch + h * room_per_head(hs), hs, &r);
        memcpy(state + h * hs * hs, r.S, hs * hs * sizeof(float));
    }
}

/* Per token and head, in multiply-adds over the hs x hs state: forward's
 * three (the update, the readout, the next u); backward's nine (the update,
 * dq and the next u again, then D, d alpha, dk, g, S_{t-1} du and dS_{t-1}).
 * Over the heads (H hs = C), 24 C hs FLOPs, whatever T. */
static double delta_flops(const MixerSpec *spec, size_t T) {
    (void)T;
    double C = (double)spec->n_embd, hs = C / (double)spec->n_head;
    return 24.0 * C * hs;
}

const Mixer deltanet_mixer = {
    .name = "deltanet",
    .about = "Gated DeltaNet: gla's decaying recurrent state of C^2 / heads floats, written by the delta rule",
    .parts = head_parts,
    .validate = delta_validate,
    .layout = delta_tensors,
    .act_size = delta_act_size,
    .forward = delta_forward,
    .backward = delta_backward,
    .state_size = delta_state_size,
    .memory_size = delta_memory_size,
    .step = delta_step,
    .step_batch = delta_step_batch,
    .fill_state = delta_fill_state,
    .flops = delta_flops,
    .inspect = deltanet_inspect,
    /* On the contract suite's test layer (tests/unit/mixers/test_mixers.c), at the
     * portable and AVX2 levels alike: decode bf16 6.8e-2 from fp32, int8
     * 9.0e-2 with its activations in int8 too, 0.184 with the weights alone
     * (gla's, to 3%: the same products and a recurrence as long); the
     * bounds 2.5 times the larger. bf16 training: not measured (set on a CPU
     * without AVX512_BF16), chosen as gla's were. Forward as
     * tests/unit/train/test_bf16_train.c's rule gives it, P 2^-7 K with K = 4 and P =
     * 2 products (qkv, proj; the gates' products and the recurrence stay
     * fp32). Backward: bf16 rounding of the product weights (qkv, proj),
     * the input and dout alone, in fp32 products, moves din by 5.9e-2
     * normwise (qkv.weight's gradient 5.7e-2, decay.weight's 2.6e-2; out by
     * 7.5e-3; gla's din by 7.2e-2 alike), so three times that. */
    .bounds = {.decode_bf16 = 0.17, .decode_int8 = 0.46, .train_bf16_forward = 0.0625, .train_bf16_backward = 0.18},
};
