#include "trainer.h"

#include <math.h>

#include "batch_aligned.h"

/* The training batches: anywhere in the stream, or at multiples of window_align. */
static void sample(const TokenFile *tf, Rng *rng, const TrainHyper *h, int32_t *inputs, int32_t *targets, size_t T) {
    if (h->window_align > 1) batch_sample_aligned(tf, rng, inputs, targets, h->batch_size, T, h->window_align);
    else batch_sample(tf, rng, inputs, targets, h->batch_size, T);
}

int train_step(Model *m, const TokenFile *train, Rng *data_rng, const TrainHyper *h, size_t step, double elapsed,
               int32_t *inputs, int32_t *targets, StepStats *out, Error *err) {
    size_t B = h->batch_size, T = m->cfg.block_size;
    model_zero_grads(m);
    double total = 0.0;
    for (size_t micro = 0; micro < h->grad_accum; micro++) {
        sample(train, data_rng, h, inputs, targets, T);
        uint64_t key = rng_hash(h->seed, step * h->grad_accum + micro);
        model_forward(m, inputs, targets, B, T, &key);
        total += m->loss;
        model_backward(m, 1.0f / (float)h->grad_accum);
    }
    /* A data-parallel all-reduce of m->grads belongs here. */
    out->loss = (float)(total / (double)h->grad_accum);
    double t0 = profile_start(m->prof);
    out->grad_norm = grad_norm(m->grads, m->n_params);
    if (!isfinite(out->loss) || !isfinite(out->grad_norm))
        return err_set(err, "training diverged at step %zu (loss %g, gradient norm %g)", step, out->loss,
                       out->grad_norm);
    out->lr = h->max_seconds > 0 ? lr_schedule_timed(step, h->warmup_iters, elapsed, h->max_seconds, h->lr, h->min_lr)
                                 : lr_schedule(step, h->warmup_iters, h->max_iters, h->lr, h->min_lr);
    model_adamw_step(m, &h->adam, out->lr, step + 1, clip_scale(out->grad_norm, h->grad_clip));
    profile_stop(m->prof, "optimizer", PASS_FORWARD, t0);
    if (m->prof) m->prof->steps++;
    return 0;
}

float estimate_loss(Model *m, const TokenFile *tf, const TrainHyper *h, int32_t *inputs, int32_t *targets) {
    Rng rng;
    rng_seed(&rng, h->seed ^ 0x76616cULL);
    double total = 0.0;
    for (size_t i = 0; i < h->eval_iters; i++) {
        sample(tf, &rng, h, inputs, targets, m->cfg.block_size);
        model_forward(m, inputs, targets, h->batch_size, m->cfg.block_size, NULL);
        total += m->loss;
    }
    return (float)(total / (double)h->eval_iters);
}
