/* Unit tests of the comparison harness's training options: the wall-time
 * schedule (bin/train --max-seconds) and windows aligned to sequence starts
 * (--window-align). */
#include "testutil.h"

#include "lm/batch.h"
#include "lm/tokens.h"
#include "lm/optim.h"

static void test_lr_schedule_timed(void **s) {
    (void)s;
    /* Warm-up in steps as before; then the cosine follows elapsed / max_seconds. */
    assert_float_equal(lr_schedule_timed(0, 100, 0.0, 60.0, 1e-3f, 1e-4f), 1e-5f, 1e-9);
    assert_float_equal(lr_schedule_timed(99, 100, 5.0, 60.0, 1e-3f, 1e-4f), 1e-3f, 1e-9);
    assert_float_equal(lr_schedule_timed(100, 100, 0.0, 60.0, 1e-3f, 1e-4f), 1e-3f, 1e-9);
    assert_float_equal(lr_schedule_timed(500, 100, 30.0, 60.0, 1e-3f, 1e-4f), 5.5e-4f, 1e-8); /* half the time */
    assert_float_equal(lr_schedule_timed(700, 100, 45.0, 60.0, 1e-3f, 1e-4f), 1e-4f + 0.9e-3f * 0.5 * (1 + cos(M_PI * 0.75)), 1e-8);
    assert_float_equal(lr_schedule_timed(900, 100, 60.0, 60.0, 1e-3f, 1e-4f), 1e-4f, 1e-9);
    assert_float_equal(lr_schedule_timed(901, 100, 75.0, 60.0, 1e-3f, 1e-4f), 1e-4f, 1e-9);
}

static void test_aligned_windows(void **s) {
    (void)s;
    enum { L = 5, SEQS = 7, N = L * SEQS + 1, B = 200 };
    uint32_t toks[N];
    for (size_t i = 0; i < N; i++) toks[i] = (uint32_t)i;
    TokenFile tf = {.data = toks, .width = 4, .n = N, .vocab_size = N};
    int32_t in[B * L], tg[B * L], in2[B * L], tg2[B * L];
    Rng a, b;
    /* align 1 draws exactly what align 0 (anywhere) draws. */
    rng_seed(&a, 11), rng_seed(&b, 11);
    batch_sample(&tf, &a, B, L, 0, NULL, in, tg);
    batch_sample(&tf, &b, B, L, 1, NULL, in2, tg2);
    assert_memory_equal(in, in2, sizeof in);
    assert_memory_equal(tg, tg2, sizeof tg);
    /* align L: every window is one whole sequence, and every sequence is drawn. */
    int drawn[SEQS] = {0};
    batch_sample(&tf, &a, B, L, L, NULL, in, tg);
    for (size_t w = 0; w < B; w++) {
        assert_int_equal(in[w * L] % L, 0);
        drawn[in[w * L] / L]++;
        for (size_t t = 0; t < L; t++) {
            assert_int_equal(in[w * L + t], in[w * L] + (int32_t)t);
            assert_int_equal(tg[w * L + t], in[w * L] + (int32_t)t + 1);
        }
    }
    for (size_t q = 0; q < SEQS; q++) assert_true(drawn[q] > 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lr_schedule_timed),
        cmocka_unit_test(test_aligned_windows),
    };
    return cmocka_run_group_tests_name("budget", tests, NULL, NULL);
}
