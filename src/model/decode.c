/* Incremental decoding: the sampling step of one or many sequences, and the
 * prefill that reads a prompt in one inference forward (see lm/model.h), both
 * through the block's plan (model/block.h). */
#include <stdlib.h>
#include <string.h>

#include "lm/matmul.h"
#include "lm/ops.h"
#include "model/block.h"
#include "nn/loss.h"

/* One position's buffers per sequence: x, ln, mix, mid, ln2, mlp (C each),
 * fc, act (4C each), mean and rstd. */
#define STEP_BUF(C) (6 * (C) + 8 * (C) + 2)

int model_state_init_batch(const Model *m, ModelState *s, size_t n_seq, Error *err) {
    memset(s, 0, sizeof *s);
    const ModelConfig *c = &m->cfg;
    if (n_seq == 0) return err_set(err, "no sequences to decode");
    size_t total = n_seq * STEP_BUF(c->n_embd);
    for (size_t l = 0; l < c->n_layer; l++) {
        MixerSpec spec = model_mixer_spec(c, l);
        s->stride[l] = m->mixers[l]->state_size(&spec);
        total += n_seq * s->stride[l];
    }
    s->buf = lm_calloc(total, sizeof(float), err);
    if (!s->buf) return -1;
    s->n_seq = n_seq;
    float *cur = s->buf + n_seq * STEP_BUF(c->n_embd);
    for (size_t l = 0; l < c->n_layer; l++) {
        s->mixer_state[l] = cur;
        cur += n_seq * s->stride[l];
    }
    return 0;
}

int model_state_init(const Model *m, ModelState *s, Error *err) { return model_state_init_batch(m, s, 1, err); }

void model_state_reset(ModelState *s) { s->t = 0; }

void model_state_free(ModelState *s) {
    free(s->buf);
    memset(s, 0, sizeof *s);
}

void model_step_batch(const Model *m, ModelState *s, const int32_t *tokens, float *logits) {
    const ModelConfig *c = &m->cfg;
    size_t C = c->n_embd, t = s->t, N = s->n_seq;
    MixerRuntime rt = block_runtime(m);
    /* One set of buffers (N rows each) for every layer: each block reads x
     * (the stream) and leaves the next layer's x there; the LayerNorms share
     * mean and rstd. */
    float *x = s->buf, *ln = x + N * C, *mix = ln + N * C, *mid = mix + N * C, *ln2 = mid + N * C, *mlp = ln2 + N * C;
    float *fc = mlp + N * C, *act = fc + N * 4 * C, *mean = act + N * 4 * C, *rstd = mean + N;
    LayerActs L = {.resid = x, .ln1 = ln, .ln1_mean = mean, .ln1_rstd = rstd, .mix = mix, .resid_mid = mid,
                   .ln2 = ln2, .ln2_mean = mean, .ln2_rstd = rstd, .fc = fc, .act = act, .mlp = mlp};
    const float *pos = block_positions(m);
    for (size_t n = 0; n < N; n++) {
        const float *e = m->weights.params + m->weights.wte + (size_t)tokens[n] * C;
        for (size_t i = 0; i < C; i++) x[n * C + i] = e[i] + (pos ? pos[t * C + i] : 0.0f);
    }
    for (size_t l = 0; l < c->n_layer; l++) {
        BlockPlan bp = block_plan(m, l, &L, &L);
        if (l == 0 && c->norm == NORM_PRE) block_ln_forward(m, &bp.mix.ln, N);
        MixerPass mp = {N, 1, NULL, s->mixer_state[l], t, s->stride[l]};
        block_forward(m, l, &bp, &L, &mp, &rt, 0, NULL);
    }
    LnSlot lnf = block_final_ln(m, &L);
    if (c->norm == NORM_POST) block_ln_forward(m, &lnf, N);
    matmul_step(m->weights.bf16, rt.decode, logits, ln, m->weights.params + m->weights.head, C, NULL, N, C, c->vocab_size,
                0);
    if (c->logit_softcap > 0.0f) softcap_forward(logits, N * c->vocab_size, c->logit_softcap);
    s->t++;
}

void model_step(const Model *m, ModelState *s, int32_t token, float *logits) { model_step_batch(m, s, &token, logits); }

/* What a prefill's forward fills: sequences seq .. seq + n_seq - 1 of s,
 * each layer's as soon as its mixer has run (the next layer writes over
 * its activations). */
typedef struct Prefill {
    const Model *m;
    ModelState *s;
    size_t seq, n_seq, T;
} Prefill;

static void fill_states(void *ctx, size_t l, const float *mixer_acts) {
    const Prefill *p = ctx;
    MixerSpec spec = model_mixer_spec(&p->m->cfg, l);
    for (size_t i = p->seq; i < p->seq + p->n_seq; i++)
        p->m->mixers[l]->fill_state(&spec, mixer_acts, p->T, p->s->mixer_state[l] + i * p->s->stride[l]);
}

int model_prefill(Model *m, ModelState *s, size_t seq, size_t n_seq, const int32_t *tokens, size_t T, float *logits,
                  Error *err) {
    const ModelConfig *c = &m->cfg;
    if (T == 0 || T > c->block_size)
        return err_set(err, "a prefill of %zu tokens does not fit the model (block_size %zu)", T, c->block_size);
    if (model_alloc_forward(m, 1, T, err)) return -1;
    /* Every target ignored but the last: the head runs at the last position alone. */
    int32_t *targets = lm_calloc(T, sizeof(int32_t), err);
    if (!targets) return -1;
    for (size_t i = 0; i + 1 < T; i++) targets[i] = LOSS_IGNORE;
    Prefill p = {m, s, seq, n_seq, T};
    model_forward(m, tokens, targets, 1, T, &(PassOptions){.layer_done = fill_states, .layer_done_ctx = &p});
    free(targets);
    memcpy(logits, m->run.logits, c->vocab_size * sizeof(float));
    s->t = T;
    return model_bf16_failed(m, err);
}
