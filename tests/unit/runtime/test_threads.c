/* The thread count never changes a result, and the tuner that changes it
 * follows the load: training steps computed with 1 or 2 threads (and with a
 * width that is not their count) are bit-identical, and the tuner, fed step
 * times and idle cores of a simulated machine, moves to one thread while
 * another process holds a core and back to two when it leaves, without trying
 * two threads blind while no core is idle. */
#include "test_model_util.h"

#include <omp.h>

#include "lm/config.h"
#include "lm/model.h"
#include "lm/optim.h"
#include "lm/threads.h"

/* A model big enough that its products are cut into several tiles. */
static void train_steps(const char *mixers, size_t threads, Model *m, OptimizerState *os) {
    ModelConfig cfg;
    Error err;
    config_defaults(&cfg);
    cfg.vocab_size = 50, cfg.block_size = 64, cfg.n_layer = 2, cfg.n_head = 4, cfg.n_embd = 64;
    assert_int_equal(config_set_option(&cfg, "grassmann-rank", "12", &err), 0);
    assert_int_equal(config_set_mixers(&cfg, mixers, &err), 0);
    assert_int_equal(model_init(m, &cfg, 7, &err), 0);
    assert_int_equal(model_alloc_grads(m, &err), 0);
    test_optim_state(os, optimizer_at(0), m);
    size_t B = 6, T = 64;
    assert_int_equal(model_alloc_acts(m, B, T, &err), 0);
    int32_t in[6 * 64], tg[6 * 64];
    Rng r;
    rng_seed(&r, 3);
    AdamWConfig adam = {0.9f, 0.99f, 1e-8f, 0.1f};
    omp_set_num_threads((int)threads);
    for (size_t step = 0; step < 3; step++) {
        for (size_t i = 0; i < B * T; i++) in[i] = (int32_t)rng_below(&r, 50), tg[i] = (int32_t)rng_below(&r, 50);
        model_zero_grads(m);
        model_forward(m, in, tg, B, T, NULL);
        model_backward(m, 1.0f, NULL);
        test_optim_step(os, m, &adam, 1e-3f, step + 1, clip_scale(grad_norm(m->weights.grads, m->weights.n_params), 1.0f));
    }
    omp_set_num_threads(2);
}

static void check_invariance(const char *mixers, size_t width) {
    Model a, b;
    OptimizerState oa, ob;
    threads_set_width(width);
    train_steps(mixers, 1, &a, &oa);
    train_steps(mixers, 2, &b, &ob);
    threads_set_width(0);
    assert_int_equal(a.weights.n_params, b.weights.n_params);
    assert_memory_equal(a.weights.params, b.weights.params, a.weights.n_params * sizeof(float));
    assert_memory_equal(a.weights.grads, b.weights.grads, a.weights.n_params * sizeof(float));
    assert_int_equal(oa.n_floats, ob.n_floats);
    assert_memory_equal(oa.floats, ob.floats, oa.n_floats * sizeof(float));
    optim_state_free(&oa), optim_state_free(&ob);
    model_free(&a);
    model_free(&b);
}

static void test_invariance_attention(void **s) { (void)s; check_invariance("attention", 2); }
static void test_invariance_grassmann(void **s) { (void)s; check_invariance("grassmann", 2); }
static void test_invariance_width3(void **s) { (void)s; check_invariance("grassmann,attention", 3); }
/* The cut of a 16-core run (small row blocks and tiles) on 1 and 2 threads. */
static void test_invariance_width16(void **s) { (void)s; check_invariance("attention,grassmann", 16); }

/* LM_PARALLEL_WIDTH sets the width whatever the thread count; a value that
 * is not a count in 1..4096 is ignored (the width is then the thread count). */
static void test_width_from_environment(void **s) {
    (void)s;
    setenv("LM_PARALLEL_WIDTH", "16", 1);
    threads_use(1);
    assert_int_equal(threads_width(), 16);
    assert_int_equal(threads_max(), 1);
    const char *ignored[] = {"0", "-3", "16x", "5000", ""};
    for (size_t i = 0; i < sizeof ignored / sizeof ignored[0]; i++) {
        setenv("LM_PARALLEL_WIDTH", ignored[i], 1);
        threads_use(2);
        assert_int_equal(threads_width(), 2);
    }
    unsetenv("LM_PARALLEL_WIDTH");
    threads_use(2);
    assert_int_equal(threads_width(), 2);
    threads_set_width(0);
}

/* ---- the tuner on a simulated machine ------------------------------------------ */

/* A simulated two-core machine, as measured. Quiet: 30 ms a step with two
 * threads, 55 ms with one (the other core then idle). While another process
 * is busy, one thread keeps a core (58 ms) and no core is idle; two threads
 * either mostly keep up (56 ms, one step in four stalling for a time slice at
 * a barrier: 200 ms; an Intel Xeon) or collapse (every barrier waits for a
 * time slice: 1.5 s; an AMD EPYC beside other jobs). A little noise. */
typedef enum { QUIET, LOADED_STALLS, LOADED_COLLAPSE } Machine;

static double simulated_step(Machine m, size_t threads, Rng *r, double *idle_cores) {
    double base;
    *idle_cores = 0.05 * rng_uniform(r);
    if (m == QUIET) {
        base = threads == 2 ? 0.030 : 0.055;
        if (threads == 1) *idle_cores += 0.9;
    } else if (threads == 1) base = 0.058;
    else if (m == LOADED_STALLS) base = rng_uniform(r) < 0.25f ? 0.200 : 0.056;
    else base = 1.5;
    return base * (1.0 + 0.04 * rng_uniform(r));
}

/* 1200 steps: quiet, then loaded in steps [300, 700), then quiet again. */
static void follow_load(Machine loaded_kind) {
    ThreadTuner t;
    thread_tuner_init(&t, 2, 1);
    assert_int_equal(t.n_cand, 2);
    thread_tuner_start_with(&t, 1.95); /* both cores idle at the start */
    assert_int_equal(t.cand[t.cur], 2);
    Rng r;
    rng_seed(&r, 5);
    size_t two_quiet = 0, one_loaded = 0, back_at = 0, two_late = 0;
    double spent_loaded = 0.0;
    for (size_t step = 0; step < 1200; step++) {
        int loaded = step >= 300 && step < 700;
        size_t n = thread_tuner_begin(&t);
        double idle, sec = simulated_step(loaded ? loaded_kind : QUIET, n, &r, &idle);
        thread_tuner_record_idle(&t, sec, idle);
        if (step >= 20 && step < 300) two_quiet += n == 2;
        if (step >= 320 && step < 700) {
            one_loaded += n == 1;
            spent_loaded += sec;
            two_late += n == 2;
        }
        if (step >= 700 && !back_at && n == 2 && t.cand[t.cur] == 2) back_at = step;
    }
    omp_set_num_threads(2);
    /* Quiet: two threads but for the occasional probe step. */
    assert_true(two_quiet >= 280 * 9 / 10);
    /* Loaded: within 20 steps on one thread, and the probes cost little: no
     * step at two threads after that while no core is idle. */
    assert_true(one_loaded >= 380 * 9 / 10);
    assert_int_equal(two_late, 0);
    assert_true(spent_loaded <= 1.05 * 380 * 0.058 * 1.02);
    /* Quiet again: back to two threads within the longest probe interval. */
    assert_true(back_at > 0 && back_at < 700 + 260);
}

static void test_tuner_follows_load_stalls(void **s) { (void)s; follow_load(LOADED_STALLS); }
static void test_tuner_follows_load_collapse(void **s) { (void)s; follow_load(LOADED_COLLAPSE); }

/* Started on a busy machine, it starts on the threads the idle cores hold,
 * and finds its way up when they free. */
static void test_tuner_start(void **s) {
    (void)s;
    ThreadTuner t;
    thread_tuner_init(&t, 8, 1);
    thread_tuner_start_with(&t, 3.9);
    assert_int_equal(t.cand[t.cur], 4);
    thread_tuner_start_with(&t, 0.2);
    assert_int_equal(t.cand[t.cur], 1);
    thread_tuner_start_with(&t, -1.0); /* unknown: unchanged */
    assert_int_equal(t.cand[t.cur], 1);
    thread_tuner_init(&t, 2, 1);
    thread_tuner_start_with(&t, 0.9); /* another process holds a core */
    assert_int_equal(t.cand[t.cur], 1);
    Rng r;
    rng_seed(&r, 9);
    size_t two_at = 0;
    for (size_t step = 0; step < 400 && !two_at; step++) {
        size_t n = thread_tuner_begin(&t);
        double idle, sec = simulated_step(step < 100 ? LOADED_COLLAPSE : QUIET, n, &r, &idle);
        assert_true(step >= 100 || n == 1); /* never tried blind while loaded */
        thread_tuner_record_idle(&t, sec, idle);
        if (step >= 100 && t.cand[t.cur] == 2) two_at = step;
    }
    omp_set_num_threads(2);
    assert_true(two_at > 0 && two_at < 100 + 20);
    /* The machine's idle time is readable here (Linux). */
    double a = machine_idle_seconds();
    assert_true(a >= 0.0);
    assert_true(machine_idle_seconds() >= a);
}

static void test_tuner_candidates(void **s) {
    (void)s;
    ThreadTuner t;
    thread_tuner_init(&t, 8, 1);
    assert_int_equal(t.n_cand, 4);
    assert_int_equal(t.cand[0], 8);
    assert_int_equal(t.cand[3], 1);
    thread_tuner_init(&t, 3, 1);
    assert_int_equal(t.n_cand, 3); /* 3, 2, 1 */
    thread_tuner_init(&t, 1, 1);
    assert_false(t.adaptive);
    thread_tuner_init(&t, 4, 0);
    for (int i = 0; i < 50; i++) {
        assert_int_equal(thread_tuner_begin(&t), 4); /* pinned */
        thread_tuner_record(&t, i < 25 ? 0.01 : 1.0);
    }
    omp_set_num_threads(2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_invariance_attention),
        cmocka_unit_test(test_invariance_grassmann),
        cmocka_unit_test(test_invariance_width3),
        cmocka_unit_test(test_invariance_width16),
        cmocka_unit_test(test_width_from_environment),
        cmocka_unit_test(test_tuner_follows_load_stalls),
        cmocka_unit_test(test_tuner_follows_load_collapse),
        cmocka_unit_test(test_tuner_start),
        cmocka_unit_test(test_tuner_candidates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
