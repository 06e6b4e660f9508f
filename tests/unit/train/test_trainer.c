/* The training step (train/trainer.c) against what it promises, on the tiny
 * test model (test_model_util.h): the optimizer is handed the 1-based step
 * count, so two steps from zero moments move every weight as AdamW's closed
 * form at t = 1 and then t = 2 (a step count off by one moves them by a
 * quarter of the rate less or more, which the loss hides); and gradient
 * accumulation averages its micro-batches: --grad-accum 2 of batch 2 logs the
 * loss and grad_norm, and makes the weights, of one batch of 4 (summing them
 * doubles grad_norm, which clipping and Adam's indifference to scale hide from
 * the loss). */
#include "test_model_util.h"

#include "train/trainer.h"

enum { N_TOKENS = 300 };

static TokenFile token_file(uint16_t *tokens) {
    for (size_t i = 0; i < N_TOKENS; i++) tokens[i] = (uint16_t)((i * 7 + 3 + i / 13) % 11);
    return (TokenFile){.data = tokens, .width = 2, .n = N_TOKENS, .vocab_size = 11};
}

static TrainHyper hyper(size_t batch, size_t accum) {
    /* A warm-up of 10 steps: the rate at step 0 is a tenth of lr's, at 1 a
     * fifth (the rate the step used is checked against StepStats.lr). */
    return (TrainHyper){.batch_size = batch, .grad_accum = accum, .max_iters = 100, .warmup_iters = 10,
                        .eval_iters = 1, .lr = 1e-2f, .min_lr = 1e-3f, .grad_clip = 1.0f,
                        .adam = {0.9f, 0.99f, 1e-8f, 0.1f}, .seed = 3};
}

/* The tiny model for batches of up to B rows (its block: 8 positions). */
static void make_model(Model *m, size_t B) {
    Error err;
    tiny_test_model(m, "attention,grassmann", POS_LEARNED, 0.0f);
    assert_int_equal(model_alloc_acts(m, B, 8, &err), 0);
    assert_int_equal(model_alloc_grad_accum(m, &err), 0);
}

/* Two training steps (0 and 1) from zero moments, each against AdamW's
 * closed form at t = step + 1, through opt. */
static void check_step_count(const Optimizer *opt, const char *label) {
    Model m;
    make_model(&m, 2);
    OptimizerState os;
    test_optim_state(&os, opt, &m);
    uint16_t tokens[N_TOKENS];
    TokenFile tf = token_file(tokens);
    TrainHyper h = hyper(2, 1);
    size_t n = m.weights.n_params;
    float *p0 = malloc(n * sizeof(float)), *m0 = malloc(n * sizeof(float)), *v0 = malloc(n * sizeof(float));
    int32_t in[16], tg[16];
    Rng rng;
    rng_seed(&rng, 4);
    Error err;
    for (size_t step = 0; step < 2; step++) {
        /* AdamW's state: its two moments, each laid out as the weights */
        memcpy(p0, m.weights.params, n * sizeof(float)), memcpy(m0, os.floats, n * sizeof(float));
        memcpy(v0, os.floats + n, n * sizeof(float));
        StepStats st;
        assert_int_equal(train_step(&m, &os, &tf, &rng, &h, NULL, NULL, step, 0.0, in, tg, &st, &err), 0);
        assert_float_equal(st.lr, lr_schedule(step, h.warmup_iters, h.max_iters, h.lr, h.min_lr), 0);
        check_adamw_closed_form(&m, os.floats, p0, m0, v0, &h.adam, st.lr, clip_scale(st.grad_norm, h.grad_clip),
                                step + 1, label);
    }
    free(p0), free(m0), free(v0);
    optim_state_free(&os);
    model_free(&m);
}

/* The default is the registry's first entry, and that is AdamW. */
static void test_step_count_default(void **s) { (void)s; check_step_count(optimizer_at(0), "AdamW (the default)"); }
static void test_step_count_adamw(void **s) { (void)s; check_step_count(optimizer_find("adamw"), "--optimizer adamw"); }

/* One step of batch 4 against one of two micro-batches of 2, which draw the
 * same 4 windows: the same loss, gradient norm and weights (to rounding: the
 * sums run in another order). */
static void test_accumulation_averages(void **s) {
    (void)s;
    uint16_t tokens[N_TOKENS];
    TokenFile tf = token_file(tokens);
    Model whole, accum;
    OptimizerState ow, oa;
    make_model(&whole, 4);
    make_model(&accum, 2);
    test_optim_state(&ow, optimizer_at(0), &whole);
    test_optim_state(&oa, optimizer_at(0), &accum);
    TrainHyper hw = hyper(4, 1), ha = hyper(2, 2);
    hw.grad_clip = ha.grad_clip = 0.0f; /* no clipping: the weights follow the gradient's scale too */
    hw.adam.eps = ha.adam.eps = 1.0f;   /* an eps of the gradients' size: Adam's step is not scale-free */
    int32_t in[32], tg[32];
    Rng rw, ra;
    rng_seed(&rw, 9), rng_seed(&ra, 9);
    StepStats sw, sa;
    Error err;
    assert_int_equal(train_step(&whole, &ow, &tf, &rw, &hw, NULL, NULL, 0, 0.0, in, tg, &sw, &err), 0);
    assert_int_equal(train_step(&accum, &oa, &tf, &ra, &ha, NULL, NULL, 0, 0.0, in, tg, &sa, &err), 0);
    if (getenv("VERBOSE"))
        printf("  loss %.7f / %.7f, grad_norm %.7f / %.7f\n", sw.loss, sa.loss, sw.grad_norm, sa.grad_norm);
    if (!(fabs(sa.grad_norm - sw.grad_norm) <= 1e-5 * sw.grad_norm))
        fail_msg("grad_norm of 2 micro-batches of 2: %.7g, of one batch of 4: %.7g", sa.grad_norm, sw.grad_norm);
    if (!(fabs(sa.loss - sw.loss) <= 1e-6 * sw.loss))
        fail_msg("loss of 2 micro-batches of 2: %.7g, of one batch of 4: %.7g", sa.loss, sw.loss);
    for (size_t i = 0; i < whole.weights.n_params; i++)
        if (!(fabs(accum.weights.params[i] - whole.weights.params[i]) <= 1e-6 * (fabs(whole.weights.params[i]) + 1e-2)))
            fail_msg("weight %zu after a step of 2 micro-batches of 2: %.9g, of one batch of 4: %.9g", i,
                     (double)accum.weights.params[i], (double)whole.weights.params[i]);
    optim_state_free(&ow), optim_state_free(&oa);
    model_free(&whole), model_free(&accum);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_step_count_default),
        cmocka_unit_test(test_step_count_adamw),
        cmocka_unit_test(test_accumulation_averages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
