/* The passes through the model: forward and backward, through one plan of
 * a block (block_plan, model/block.h) for pre- and post-norm alike, which
 * the sampling step and the prefill (decode.c) share. The layout, memory
 * and precision are model.c's. */
#include "lm/model.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/dropout.h"
#include "nn/embedding.h"
#include "nn/layernorm.h"
#include "nn/loss.h"
#include "nn/mlp.h"
#include "nn/rmsnorm.h"
#include "lm/matmul.h"
#include "lm/ops.h"
#include "lm/rng.h"
#include "model/block.h"

MixerRuntime block_runtime(const Model *m) {
    const ModelWeights *w = &m->weights;
    return (MixerRuntime){w->rope_table, w->bf16, w->decode.format == WEIGHTS_FP32 ? NULL : &w->decode};
}

static MlpParams mlp_params(const Model *m, const float *p, const LayerOffsets *lo) {
    return (MlpParams){p + lo->fc_w, p + lo->fc_b, p + lo->proj_w, p + lo->proj_b,
                       m->cfg.mlp_act == MLP_ACT_RELU2 ? MLP_RELU2 : MLP_GELU};
}

const float *block_positions(const Model *m) {
    return m->cfg.pos == POS_LEARNED ? m->weights.params + m->weights.wpe : m->weights.pos_table;
}

/* Zeroes x in parallel chunks: one thread's memset of the gradients (43 MB at
 * the medium config) would be a serial section of every step on many cores. */
static void zero_floats(float *x, size_t n) {
    enum { CHUNK = 1 << 16 };
#pragma omp parallel for schedule(static)
    for (size_t c = 0; c < (n + CHUNK - 1) / CHUNK; c++)
        memset(x + c * CHUNK, 0, (n - c * CHUNK < CHUNK ? n - c * CHUNK : CHUNK) * sizeof(float));
}

/* ---- the block plan (model/block.h) ---------------------------------------------- */

BlockPlan block_plan(const Model *m, size_t l, LayerActs *L, LayerActs *next) {
    const LayerOffsets *lo = &m->weights.layer[l];
    int last = l + 1 == m->cfg.n_layer;
    BlockPlan p;
    if (m->cfg.norm == NORM_POST) {
        /* LN1 reads h + mix (resid_mid) into ln1, the MLP's input and
         * residual; LN2 reads ln1 + mlp (kept in ln2) into the next h. */
        LnSlot ln1 = {L->resid_mid, L->ln1, L->ln1_mean, L->ln1_rstd, lo->ln1_w, lo->ln1_b};
        LnSlot ln2 = {L->ln2, next->resid, L->ln2_mean, L->ln2_rstd, lo->ln2_w, lo->ln2_b};
        p.mix = (Branch){L->resid, L->resid, L->mix, L->drop1, L->resid_mid, ln1, ln1, 2 * l};
        p.mlp = (Branch){L->ln1, L->ln1, L->mlp, L->drop2, L->ln2, ln2, ln2, 2 * l + 1};
    } else {
        LnSlot ln1 = {L->resid, L->ln1, L->ln1_mean, L->ln1_rstd, lo->ln1_w, lo->ln1_b};
        LnSlot ln2 = {L->resid_mid, L->ln2, L->ln2_mean, L->ln2_rstd, lo->ln2_w, lo->ln2_b};
        LnSlot after = {next->resid, next->ln1, next->ln1_mean, next->ln1_rstd,
                        last ? m->weights.lnf_w : m->weights.layer[l + 1].ln1_w,
                        last ? m->weights.lnf_b : m->weights.layer[l + 1].ln1_b};
        p.mix = (Branch){L->ln1, L->resid, L->mix, L->drop1, L->resid_mid, ln1, ln2, 2 * l};
        p.mlp = (Branch){L->ln2, L->resid_mid, L->mlp, L->drop2, next->resid, ln2, after, 2 * l + 1};
    }
    return p;
}

/* The buffers after the last layer, as block_plan's `next`. */
static LayerActs final_acts(Model *m) {
    const ModelRunState *s = &m->run;
    return (LayerActs){.resid = s->resid_out, .ln1 = s->lnf, .ln1_mean = s->lnf_mean, .ln1_rstd = s->lnf_rstd};
}

LnSlot block_final_ln(const Model *m, const LayerActs *fin) {
    return (LnSlot){fin->resid, fin->ln1, fin->ln1_mean, fin->ln1_rstd, m->weights.lnf_w, m->weights.lnf_b};
}

static int rms(const Model *m) { return m->cfg.norm_type == NORM_TYPE_RMSNORM; }

void block_ln_forward(const Model *m, const LnSlot *s, size_t N) {
    const float *P = m->weights.params;
    if (rms(m)) rmsnorm_forward(s->out, s->rstd, s->in, P + s->w, N, m->cfg.n_embd);
    else layernorm_forward(s->out, s->mean, s->rstd, s->in, P + s->w, P + s->b, N, m->cfg.n_embd);
}

/* sum = a + b, then the norm s reads it (s->in is sum). */
static void residual_ln_forward(const Model *m, const LnSlot *s, float *sum, const float *a, const float *b, size_t N) {
    const float *P = m->weights.params;
    if (rms(m)) residual_rmsnorm_forward(sum, s->out, s->rstd, a, b, P + s->w, N, m->cfg.n_embd);
    else residual_layernorm_forward(sum, s->out, s->mean, s->rstd, a, b, P + s->w, P + s->b, N, m->cfg.n_embd);
}

/* din += d(loss)/d(s's input) from dout; the gain's (and bias's) gradients into G. */
static void ln_backward(const Model *m, const LnSlot *s, float *din, const float *dout, float *G, size_t N) {
    const float *P = m->weights.params;
    if (rms(m)) rmsnorm_backward(din, G + s->w, dout, s->in, P + s->w, s->rstd, N, m->cfg.n_embd);
    else layernorm_backward(din, G + s->w, G + s->b, dout, s->in, P + s->w, s->mean, s->rstd, N, m->cfg.n_embd);
}

/* logits (N, V) = ln (N, C) times the head, soft-capped when the config caps them. */
static void head_forward(const Model *m, float *logits, const float *ln, size_t N) {
    const ModelConfig *c = &m->cfg;
    matmul_forward(m->weights.bf16, logits, ln, m->weights.params + m->weights.head, NULL, N, c->n_embd, c->vocab_size);
    if (c->logit_softcap > 0.0f) softcap_forward(logits, N * c->vocab_size, c->logit_softcap);
}

void model_head_forward(const Model *m, float *logits, float *ln, float *mean, float *rstd, const float *h, size_t T) {
    LnSlot s = {h, ln, mean, rstd, m->weights.lnf_w, m->weights.lnf_b};
    block_ln_forward(m, &s, T);
    head_forward(m, logits, ln, T);
}

/* ---- forward ------------------------------------------------------------------ */

/* The sampling step of B sequences' mixer, one sequence at a time. */
static void mixer_steps(const Mixer *mx, const MixerSpec *spec, const MixerRuntime *rt, const float *params,
                        const MixerPass *mp, const float *in, float *out, size_t C) {
    if (mx->step_batch && mp->B > 1) {
        mx->step_batch(spec, rt, params, mp->state, mp->stride, in, out, mp->t, mp->B);
        return;
    }
    for (size_t b = 0; b < mp->B; b++)
        mx->step(spec, rt, params, mp->state + b * mp->stride, in + b * C, out + b * C, mp->t);
}

/* The branch's dropout, in place, with the mask drawn from the step's key
 * and the branch's site (nothing when dropout is off). */
static void branch_dropout(const Model *m, const Branch *br, size_t N, int dropout) {
    if (!dropout) return;
    size_t n = N * m->cfg.n_embd;
    dropout_mask(br->mask, n, m->cfg.dropout, rng_hash(m->run.dropout_key, br->site));
    dropout_forward(br->out, br->mask, n);
}

/* After the branch: its dropout, then sum = resid + out fused with the
 * LayerNorm that reads it. */
static void branch_sum_forward(const Model *m, const Branch *br, size_t N, int dropout, Profile *pr) {
    PROFILED(pr, "residual", PASS_FORWARD, branch_dropout(m, br, N, dropout));
    PROFILED(pr, "layernorm", PASS_FORWARD, residual_ln_forward(m, &br->next, br->sum, br->resid, br->out, N));
}

void block_forward(const Model *m, size_t l, const BlockPlan *bp, const LayerActs *L, const MixerPass *mp,
                          const MixerRuntime *rt, int dropout, Profile *pr) {
    const float *P = m->weights.params;
    const LayerOffsets *lo = &m->weights.layer[l];
    const Mixer *mx = m->mixers[l];
    MixerSpec spec = model_mixer_spec(&m->cfg, l);
    spec.muted = m->run.muted[l];
    size_t N = mp->B * mp->T;
    PROFILED(pr, mx->name, PASS_FORWARD,
             mp->state ? mixer_steps(mx, &spec, rt, P + lo->mixer, mp, bp->mix.in, bp->mix.out, m->cfg.n_embd)
                       : mx->forward(&spec, rt, P + lo->mixer, mp->acts, bp->mix.out, bp->mix.in, mp->B, mp->T));
    branch_sum_forward(m, &bp->mix, N, dropout, pr);
    if (mp->state)
        mlp_step(m->weights.bf16, rt->decode, bp->mlp.out, L->fc, L->act, bp->mlp.in, mlp_params(m, P, lo), N,
                 m->cfg.n_embd);
    else
        PROFILED(pr, "mlp", PASS_FORWARD,
                 mlp_forward(m->weights.bf16, bp->mlp.out, L->fc, L->act, bp->mlp.in, mlp_params(m, P, lo), N,
                             m->cfg.n_embd));
    branch_sum_forward(m, &bp->mlp, N, dropout, pr);
}

void model_forward(Model *m, const int32_t *inputs, const int32_t *targets, size_t B, size_t T,
                   const PassOptions *opt) {
    const ModelConfig *c = &m->cfg;
    size_t N = B * T, C = c->n_embd, V = c->vocab_size;
    const float *P = m->weights.params;
    Profile *pr = opt ? opt->prof : NULL;
    const Pass F = PASS_FORWARD;
    MixerRuntime rt = block_runtime(m);
    m->run.B = B;
    m->run.T = T;
    m->run.dropout_on = opt && opt->dropout_key && c->dropout > 0.0f;
    m->run.dropout_key = m->run.dropout_on ? *opt->dropout_key : 0;
    memcpy(m->run.inputs, inputs, N * sizeof(int32_t));
    PROFILED(pr, "embedding", F,
             embedding_forward(m->run.la[0].resid, inputs, P + m->weights.wte, block_positions(m), B, T, C));
    LayerActs fin = final_acts(m);
    for (size_t l = 0; l < c->n_layer; l++) {
        BlockPlan bp = block_plan(m, l, &m->run.la[l], l + 1 < c->n_layer ? &m->run.la[l + 1] : &fin);
        if (l == 0 && c->norm == NORM_PRE) PROFILED(pr, "layernorm", F, block_ln_forward(m, &bp.mix.ln, N));
        MixerPass mp = {B, T, m->run.la[l].mixer, NULL, 0, 0};
        block_forward(m, l, &bp, &m->run.la[l], &mp, &rt, m->run.dropout_on, pr);
        if (opt && opt->layer_done) opt->layer_done(opt->layer_done_ctx, l, m->run.la[l].mixer);
    }
    LnSlot lnf = block_final_ln(m, &fin);
    if (c->norm == NORM_POST) PROFILED(pr, "layernorm", F, block_ln_forward(m, &lnf, N));
    double t0 = profile_start(pr);
    /* Under a loss mask the head, and the loss, run at the scored positions
     * alone: their rows of LN_f's output gathered (the rest add nothing). */
    const float *head_in = m->run.lnf;
    const int32_t *head_targets = targets;
    m->run.head_n = N;
    if (targets) {
        memcpy(m->run.targets, targets, N * sizeof(int32_t));
        m->run.scored = crossentropy_scored(targets, N);
        if (m->run.scored < N && !(opt && opt->full_head)) {
            m->run.head_n = loss_rows(m->run.head_rows, m->run.head_targets, targets, N);
            gather_rows(m->run.lnf_rows, m->run.lnf, m->run.head_rows, m->run.head_n, C);
            head_in = m->run.lnf_rows;
            head_targets = m->run.head_targets;
        }
    }
    size_t K = m->run.head_n;
    if (K) head_forward(m, m->run.logits, head_in, K);
    m->run.loss = NAN;
    if (targets) {
        crossentropy_forward(m->run.losses, m->run.logits, head_targets, K, V);
        if (K < N) spread_in_place(m->run.losses, m->run.head_rows, K, N); /* each position's loss, 0 where ignored */
        /* The mean over the scored targets (all of them without a loss mask); a
         * batch with none scored has loss 0 and no gradient. */
        m->run.loss = m->run.scored ? (float)(sum_floats(m->run.losses, N) / (double)m->run.scored) : 0.0f;
    }
    profile_stop(pr, "head", F, t0);
}

/* ---- backward ----------------------------------------------------------------- */

/* d(loss)/d(the stream) at the point backward has reached, and a spare buffer
 * as large for the branches' input gradients; post-norm's LayerNorms write
 * their input gradient into the spare, and the two trade places. */
typedef struct StreamGrad {
    float *d, *spare;
} StreamGrad;

/* Where backward writes the gradients (the model's, or one micro-batch's),
 * and the caller's options. */
typedef struct BackwardTo {
    float *G;
    const PassOptions *opt;
} BackwardTo;

/* Tells the caller's hook that G[from .. to) are final. */
static void grads_ready(const BackwardTo *to, size_t from, size_t end) {
    if (to->opt && to->opt->grads_ready) to->opt->grads_ready(to->opt->grads_ready_ctx, to->G, from, end - from);
}

/* d(branch output) from d(sum): through the branch's dropout into
 * m->run.dbranch, or d(sum) itself when dropout is off. */
static const float *branch_grad(Model *m, const float *mask, const float *dsum) {
    if (!m->run.dropout_on) return dsum;
    size_t n = m->run.B * m->run.T * m->cfg.n_embd;
    zero_floats(m->run.dbranch, n);
    dropout_backward(m->run.dbranch, dsum, mask, n);
    return m->run.dbranch;
}

/* Back through a post-norm LayerNorm: g->d holds d(its output), and the
 * spare gets d(its input); the two then trade places (the old gradient is no
 * longer needed). */
static void post_ln_backward(Model *m, const LnSlot *ln, StreamGrad *g, float *G) {
    size_t N = m->run.B * m->run.T, C = m->cfg.n_embd;
    zero_floats(g->spare, N * C);
    ln_backward(m, ln, g->spare, g->d, G, N);
    *g = (StreamGrad){g->spare, g->d};
}

/* Into the branch from above: post-norm back through its LayerNorm first
 * (g->d becomes d(sum)); then through its dropout. Returns d(branch output). */
static const float *branch_backward_in(Model *m, const Branch *br, StreamGrad *g, float *G, Profile *pr) {
    const float *dbranch;
    if (m->cfg.norm == NORM_POST) PROFILED(pr, "layernorm", PASS_BACKWARD, post_ln_backward(m, &br->ln, g, G));
    PROFILED(pr, "residual", PASS_BACKWARD, dbranch = branch_grad(m, br->mask, g->d));
    return dbranch;
}

/* Out of the branch, whose backward wrote d(in) into g->spare: d(h) =
 * d(sum) + d(in) post-norm (the branch read h), d(sum) + LN'(d(in)) pre-norm. */
static void branch_backward_out(Model *m, const Branch *br, StreamGrad *g, float *G, Profile *pr) {
    size_t N = m->run.B * m->run.T, C = m->cfg.n_embd;
    if (m->cfg.norm == NORM_POST)
        PROFILED(pr, "residual", PASS_BACKWARD, add_inplace(g->d, g->spare, N * C));
    else
        PROFILED(pr, "layernorm", PASS_BACKWARD, ln_backward(m, &br->ln, g->d, g->spare, G, N));
}

/* Layer l's block, backward: g->d holds d(loss)/d(its output) on entry and
 * d(loss)/d(its input) on exit. */
static void block_backward(Model *m, size_t l, const BlockPlan *bp, StreamGrad *g, const MixerRuntime *rt,
                           float *G, Profile *pr) {
    const float *P = m->weights.params;
    LayerActs *L = &m->run.la[l];
    const LayerOffsets *lo = &m->weights.layer[l];
    const Mixer *mx = m->mixers[l];
    MixerSpec spec = model_mixer_spec(&m->cfg, l);
    size_t B = m->run.B, T = m->run.T, C = m->cfg.n_embd;
    MlpGrads mg = {G + lo->fc_w, G + lo->fc_b, G + lo->proj_w, G + lo->proj_b};
    const float *dbranch = branch_backward_in(m, &bp->mlp, g, G, pr);
    PROFILED(pr, "mlp", PASS_BACKWARD,
             mlp_backward(m->weights.bf16, g->spare, mg, m->run.dfc, dbranch, bp->mlp.in, L->fc, L->act,
                          mlp_params(m, P, lo), B * T, C));
    branch_backward_out(m, &bp->mlp, g, G, pr);
    dbranch = branch_backward_in(m, &bp->mix, g, G, pr);
    PROFILED(pr, mx->name, PASS_BACKWARD,
             mx->backward(&spec, rt, P + lo->mixer, G + lo->mixer, L->mixer, bp->mix.in, dbranch, g->spare, B, T));
    branch_backward_out(m, &bp->mix, g, G, pr);
}

/* Accumulates d(loss * loss_scale)/d params into to->G. */
static void backward(Model *m, float loss_scale, const BackwardTo *to) {
    assert(!m->run.acts_shared && "backward after an inference forward: model_alloc_acts, not model_alloc_infer");
    const ModelConfig *c = &m->cfg;
    size_t B = m->run.B, T = m->run.T, N = B * T, C = c->n_embd, V = c->vocab_size;
    const float *P = m->weights.params;
    float *G = to->G;
    Profile *pr = to->opt ? to->opt->prof : NULL;
    MixerRuntime rt = block_runtime(m);
    StreamGrad g = {m->run.dresid, m->run.dln};
    double t0 = profile_start(pr);
    /* The logits become their gradient: nothing reads them after this. */
    float *dlogits = m->run.logits;
    size_t K = m->run.head_n;
    int gathered = K < N;
    const int32_t *targets = gathered ? m->run.head_targets : m->run.targets;
    float dloss = m->run.scored ? loss_scale / (float)m->run.scored : 0.0f;
    if (c->logit_softcap > 0.0f)
        crossentropy_softcap_backward(dlogits, m->run.logits, targets, dloss, K, V, c->logit_softcap);
    else
        crossentropy_backward(dlogits, m->run.logits, targets, dloss, K, V);
    if (gathered) { /* d(the gathered rows) into g.d for a moment, then onto their positions */
        if (K)
            matmul_backward(m->weights.bf16, g.d, 0.0f, G + m->weights.head, NULL, dlogits, m->run.lnf_rows,
                            P + m->weights.head, K, C, V);
        zero_floats(g.spare, N * C);
        scatter_rows(g.spare, g.d, m->run.head_rows, K, C);
    } else {
        matmul_backward(m->weights.bf16, g.spare, 0.0f, G + m->weights.head, NULL, dlogits, m->run.lnf,
                        P + m->weights.head, N, C, V);
    }
    zero_floats(g.d, N * C);
    profile_stop(pr, "head", PASS_BACKWARD, t0);
    LayerActs fin = final_acts(m);
    LnSlot lnf = block_final_ln(m, &fin);
    PROFILED(pr, "layernorm", PASS_BACKWARD, ln_backward(m, &lnf, g.d, g.spare, G, N));
    grads_ready(to, m->weights.lnf_w, m->weights.n_params);
    for (size_t l = c->n_layer; l-- > 0;) {
        BlockPlan bp = block_plan(m, l, &m->run.la[l], l + 1 < c->n_layer ? &m->run.la[l + 1] : &fin);
        block_backward(m, l, &bp, &g, &rt, G, pr);
        grads_ready(to, m->weights.layer[l].ln1_w, l + 1 < c->n_layer ? m->weights.layer[l + 1].ln1_w : m->weights.lnf_w);
    }
    PROFILED(pr, "embedding", PASS_BACKWARD,
             embedding_backward(G + m->weights.wte, c->pos == POS_LEARNED ? G + m->weights.wpe : NULL, g.d, m->run.inputs,
                                B, T, C));
    grads_ready(to, 0, m->weights.layer[0].ln1_w); /* wte also took the head's gradient, first of all */
}

void model_backward(Model *m, float loss_scale, const PassOptions *opt) {
    backward(m, loss_scale, &(BackwardTo){m->weights.grads, opt});
}

void model_zero_grads(Model *m) { zero_floats(m->weights.grads, m->weights.n_params); }

void model_backward_accumulate(Model *m, float loss_scale, const PassOptions *opt) {
    float *sum = m->weights.grads, *micro = m->weights.grads_micro;
    zero_floats(micro, m->weights.n_params);
    backward(m, loss_scale, &(BackwardTo){micro, opt});
    size_t n = m->weights.n_params;
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++) sum[i] += micro[i];
}
