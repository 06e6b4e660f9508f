#include "trainer.h"

#include <math.h>
#include <stdlib.h>

#include "lm/batch.h"
#include "lm/evaluate.h"

/* The model's hook: sum this part of the gradients over the ranks. */
static void start_bucket(void *dist, float *grads, size_t offset, size_t count) {
    dist_bucket_start(dist, grads, offset, count);
}

/* Whether a bf16 product failed on any rank since the precision was set
 * (model_bf16_failed): agreed as one, so that every rank stops at the same
 * point. -1 with err. Nothing to ask in fp32. */
static int bf16_failed(const Model *m, Dist *dist, Error *err) {
    if (!m->weights.bf16) return 0;
    int failed = model_bf16_failed(m, err) != 0;
    return dist ? dist_agree(dist, failed, err) : -failed;
}

int train_step(Model *m, OptimizerState *optim, const TokenFile *train, Rng *data_rng, const TrainHyper *h, Dist *dist,
               Profile *prof, size_t step, double elapsed, int32_t *inputs, int32_t *targets, StepStats *out,
               Error *err) {
    size_t B = h->batch_size, T = m->cfg.block_size;
    size_t ranks = dist ? (size_t)dist->size : 1, rank = dist ? (size_t)dist->rank : 0;
    size_t job_accum = h->grad_accum * ranks; /* the job's micro-batches per step */
    if (h->grad_accum > 1 && !m->weights.grads_micro)
        return err_set(err, "gradient accumulation needs model_alloc_grad_accum");
    model_zero_grads(m);
    double total = 0.0;
    size_t mine = 0; /* this rank's micro-batches so far */
    for (size_t micro = 0; micro < job_accum; micro++) {
        /* Every rank draws every micro-batch, so the job reads one stream;
         * micro-batch i is rank i mod N's. */
        batch_sample(train, data_rng, B, T, h->window_align, h->train_mask, inputs, targets);
        if (micro % ranks != rank) continue;
        uint64_t key = rng_hash(h->seed, step * job_accum + micro);
        /* With one micro-batch per rank, each part of the model is summed
         * over the ranks as soon as backward has finished it. */
        PassOptions pass = {.dropout_key = &key, .prof = prof,
                            .grads_ready = ranks > 1 && h->grad_accum == 1 ? start_bucket : NULL,
                            .grads_ready_ctx = dist};
        model_forward(m, inputs, targets, B, T, &pass);
        total += m->run.loss;
        if (mine++ == 0) model_backward(m, 1.0f / (float)job_accum, &pass);
        else model_backward_accumulate(m, 1.0f / (float)job_accum, &pass);
    }
    if (ranks > 1 && h->grad_accum > 1) /* the accumulated sum */
        dist_bucket_start(dist, m->weights.grads, 0, m->weights.n_params);
    if (ranks > 1) {
        double t0 = profile_start(prof);
        if (dist_buckets_wait(dist, err) || dist_sum_doubles(dist, &total, 1, err)) return -1;
        profile_stop(prof, "allreduce", PASS_BACKWARD, t0);
    }
    if (bf16_failed(m, dist, err)) return -1; /* the gradients are undefined: before the weights change */
    out->loss = (float)(total / (double)job_accum);
    double t0 = profile_start(prof);
    out->grad_norm = grad_norm(m->weights.grads, m->weights.n_params);
    if (!isfinite(out->loss) || !isfinite(out->grad_norm))
        return err_set(err, "training diverged at step %zu (loss %g, gradient norm %g)", step, out->loss,
                       out->grad_norm);
    out->lr = h->max_seconds > 0 ? lr_schedule_timed(step, h->warmup_iters, elapsed, h->max_seconds, h->lr, h->min_lr)
                                 : lr_schedule(step, h->warmup_iters, h->max_iters, h->lr, h->min_lr);
    float scale = clip_scale(out->grad_norm, h->grad_clip);
    OptimSettings set = {.adam = h->adam, .own = h->optim_settings, .lr_peak = h->lr};
    ParamView params = params_view(m);
    optim_step(optim, &params, &set, out->lr, step + 1, scale);
    model_round_weights(m); /* bf16: the products' weights, once per step, whichever the optimizer */
    profile_stop(prof, "optimizer", PASS_FORWARD, t0);
    if (prof) prof->steps++;
    return 0;
}

int estimate_loss(Model *m, const TokenFile *tf, const TrainHyper *h, Dist *dist, const Tokenizer *tok,
                  int32_t *inputs, int32_t *targets, ValLoss *out, Error *err) {
    size_t ranks = dist ? (size_t)dist->size : 1, rank = dist ? (size_t)dist->rank : 0;
    size_t BT = h->batch_size * m->cfg.block_size;
    Rng rng;
    rng_seed(&rng, h->seed ^ 0x76616cULL);
    /* The batches' mean losses; the bytes of text their scored targets stand for; their summed loss. */
    double sums[3] = {0.0, 0.0, 0.0};
    size_t T = m->cfg.block_size, *starts = lm_calloc(h->batch_size, sizeof(size_t), err);
    if (!starts) return -1;
    for (size_t i = 0; i < h->eval_iters; i++) {
        batch_sample_at(tf, &rng, h->batch_size, T, h->window_align, h->val_mask, inputs, targets, starts);
        if (i % ranks != rank) continue; /* shared out over the ranks */
        model_forward(m, inputs, targets, h->batch_size, T, NULL);
        sums[0] += m->run.loss;
        sums[2] += (double)m->run.loss * (double)m->run.scored;
        for (size_t j = 0; tok && j < BT; j++) /* target j is token starts[j / T] + j % T + 1 of the file */
            if (targets[j] >= 0) sums[1] += (double)tokens_token_bytes(tf, tok, starts[j / T] + j % T + 1);
    }
    free(starts);
    if (bf16_failed(m, dist, err)) return -1;
    Error sum_err;
    if (ranks > 1 && dist_sum_doubles(dist, sums, 3, &sum_err)) {
        *out = (ValLoss){NAN, NAN};
        return 0;
    }
    double loss = sums[0] / (double)h->eval_iters;
    *out = (ValLoss){(float)loss, tok && sums[1] > 0 ? (float)(sums[2] / log(2.0) / sums[1]) : NAN};
    return 0;
}

int full_val_loss(Model *m, const TokenFile *tf, const TrainHyper *h, Dist *dist, const Tokenizer *tok,
                  ValLoss *out, Error *err) {
    EvalDetail d = {.mask = h->val_mask};
    EvalReport e;
    /* Every rank scores the whole split (the same weights, the same number); a failure on one is one on all.
     * Its forwards run on the step's activations (batch_size x block_size), which they fit. */
    int failed = evaluate_token_file(m, tok, tf, 0, h->batch_size, NULL, &d, &e, err) != 0;
    eval_detail_free(&d);
    if ((dist ? dist_agree(dist, failed, err) : -failed) || bf16_failed(m, dist, err)) return -1;
    *out = (ValLoss){(float)e.r.loss, (float)e.bits_per_byte};
    return 0;
}
