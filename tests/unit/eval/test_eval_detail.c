/* Unit tests of bin/eval's breakdowns: the n-gram recall split on hand-made
 * windows, the loss by position, scoring only masked tokens, mask files. */
#include "testutil.h"

#include <unistd.h>

#include "lm/loss_breakdown.h"
#include "lm/token_mask.h"
#include "lm/config.h"
#include "eval/evaluate.h"
#include "lm/model.h"

#define V 7
#define T 8

static void tiny_model(Model *m, int zero_weights) {
    ModelConfig cfg;
    Error err;
    config_defaults(&cfg);
    cfg.vocab_size = V, cfg.block_size = T, cfg.n_layer = 1, cfg.n_head = 2, cfg.n_embd = 8;
    assert_int_equal(config_set_mixers(&cfg, "attention", &err), 0);
    assert_int_equal(model_init(m, &cfg, 5, &err), 0);
    if (zero_weights) memset(m->weights.params, 0, m->weights.n_params * sizeof(float)); /* logits 0: every loss is ln V */
}

static void check_marks(const uint32_t *win, size_t n, const uint8_t *want) {
    uint8_t got[T];
    Error err;
    assert_int_equal(recall_mark_window(win, T, n, got, &err), 0);
    for (size_t t = 0; t < T; t++) {
        if (got[t] != want[t]) fprintf(stderr, "n=%zu target %zu: got %u want %u\n", n, t, got[t], want[t]);
        assert_int_equal(got[t], want[t]);
    }
}

static void test_recall_marks_by_hand(void **s) {
    (void)s;
    /* Targets t = 0..7 are win[1..8]; target t completes the n-gram ending at win[t+1]. */
    const uint32_t win[T + 1] = {1, 2, 3, 1, 2, 3, 4, 1, 2};
    /* n=1: is win[t+1] among win[0..t]?  2 3 | 1 2 3 | 4 | 1 2 */
    check_marks(win, 1, (const uint8_t[T]){0, 0, 1, 1, 1, 0, 1, 1});
    /* n=2: bigrams (1,2) (2,3) (3,1) (1,2)* (2,3)* (3,4) (4,1) (1,2)* */
    check_marks(win, 2, (const uint8_t[T]){0, 0, 0, 1, 1, 0, 0, 1});
    /* n=3: target 0 has no full trigram; (1,2,3) (2,3,1) (3,1,2) (1,2,3)* (2,3,4) (3,4,1) (4,1,2) */
    check_marks(win, 3, (const uint8_t[T]){0, 0, 0, 0, 1, 0, 0, 0});
    /* An n-gram seen only as the one being completed does not count: all distinct. */
    const uint32_t fresh[T + 1] = {0, 1, 2, 3, 4, 5, 6, 0, 1};
    check_marks(fresh, 2, (const uint8_t[T]){0, 0, 0, 0, 0, 0, 0, 1});
    check_marks(fresh, 9, (const uint8_t[T]){0});
    uint8_t out[T];
    Error err;
    assert_int_equal(recall_mark_window(win, T, 0, out, &err), -1);
}

/* The hash table agrees with a direct scan on random windows over a small vocabulary. */
static void test_recall_matches_scan(void **s) {
    (void)s;
    enum { L = 300 };
    uint32_t win[L + 1];
    uint8_t got[L];
    Rng r;
    rng_seed(&r, 3);
    Error err;
    for (size_t n = 1; n <= 5; n++) {
        for (size_t i = 0; i <= L; i++) win[i] = (uint32_t)rng_below(&r, 3);
        assert_int_equal(recall_mark_window(win, L, n, got, &err), 0);
        for (size_t t = 0; t < L; t++) {
            int want = 0;
            if (t + 2 >= n)
                for (size_t j = 0; j + n <= t + 1 && !want; j++)
                    want = memcmp(win + j, win + t + 2 - n, n * sizeof *win) == 0;
            assert_int_equal(got[t], want);
        }
    }
}

static void test_by_position_and_mask(void **s) {
    (void)s;
    Model m;
    tiny_model(&m, 1);
    /* n = 2T + 1 + 3: two full windows, then one ending at n-1 that scores
     * only the last 3 targets, at positions T-3..T-1. */
    enum { N = 2 * T + 4 };
    uint32_t toks[N];
    for (size_t i = 0; i < N; i++) toks[i] = (uint32_t)((i * 5 + 2) % V);
    EvalDetail d = {.by_position = 1, .recall_n = 2};
    EvalResult r;
    Error err;
    assert_int_equal(evaluate_tokens_detail(&m, toks, N, 0, 2, NULL, &d, &r, &err), 0);
    assert_int_equal(r.scored, N - 1);
    assert_int_equal(d.positions, T);
    for (size_t t = 0; t < T; t++) {
        assert_int_equal(d.pos_count[t], t >= T - 3 ? 3 : 2);
        assert_float_equal(d.pos_sum[t] / (double)d.pos_count[t], log(V), 1e-5);
    }
    assert_int_equal(d.recall_count + d.other_count, N - 1);
    eval_detail_free(&d);

    /* A mask: only tokens i = 3, 6, 9, ... are scored. Uniform logits predict
     * id 0 (the first maximum), so the accuracy is the share of 0s among them. */
    uint8_t mask[N] = {0};
    size_t marked = 0, zeros_marked = 0;
    for (size_t i = 3; i < N; i += 3) mask[i] = 1, marked++, zeros_marked += toks[i] == 0;
    d = (EvalDetail){.mask = mask, .by_position = 1};
    assert_int_equal(evaluate_tokens_detail(&m, toks, N, 0, 2, NULL, &d, &r, &err), 0);
    assert_int_equal(r.scored, marked);
    assert_float_equal(r.accuracy, (double)zeros_marked / (double)marked, 1e-12);
    size_t counted = 0;
    for (size_t t = 0; t < T; t++) counted += d.pos_count[t];
    assert_int_equal(counted, marked);
    assert_int_equal(d.pos_count[2], 1); /* token 3 is target position 2 of window 0 */
    eval_detail_free(&d);
    memset(mask, 0, sizeof mask);
    mask[0] = 1; /* token 0 is never a target */
    assert_int_equal(evaluate_tokens_detail(&m, toks, N, 0, 2, NULL, &d, &r, &err), -1);
    assert_non_null(strstr(err.msg, "mask"));
    model_free(&m);
}

/* With real (non-uniform) losses: the loss at each position is the mean of
 * that position's losses over the windows, and the two recall groups add up
 * to the whole. */
static void test_breakdowns_add_up(void **s) {
    (void)s;
    Model m;
    tiny_model(&m, 0);
    enum { W = 3, N = W * T + 1 };
    uint32_t toks[N];
    for (size_t i = 0; i < N; i++) toks[i] = (uint32_t)((i * i + i / 3) % V);
    EvalDetail d = {.by_position = 1, .recall_n = 2};
    EvalResult r;
    Error err;
    assert_int_equal(evaluate_tokens_detail(&m, toks, N, 0, 4, NULL, &d, &r, &err), 0);
    double want[T] = {0};
    int32_t in[T], tg[T];
    for (size_t w = 0; w < W; w++) {
        for (size_t t = 0; t < T; t++) in[t] = (int32_t)toks[w * T + t], tg[t] = (int32_t)toks[w * T + t + 1];
        assert_int_equal(model_alloc_acts(&m, 1, T, &err), 0);
        model_forward(&m, in, tg, 1, T, NULL);
        for (size_t t = 0; t < T; t++) want[t] += m.run.losses[t] / W;
    }
    for (size_t t = 0; t < T; t++) assert_float_equal(d.pos_sum[t] / (double)d.pos_count[t], want[t], 1e-5);
    double whole = d.recall_loss * (double)d.recall_count + d.other_loss * (double)d.other_count;
    assert_true(d.recall_count > 0 && d.other_count > 0);
    assert_float_equal(whole / (double)(N - 1), r.loss, 1e-9);
    eval_detail_free(&d);
    model_free(&m);
}

static void test_mask_file(void **s) {
    (void)s;
    char path[] = "/tmp/lm_mask_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    const uint8_t marks[5] = {0, 1, 1, 0, 1};
    Error err;
    assert_int_equal(mask_write(path, marks, 5, &err), 0);
    TokenMask mk;
    assert_int_equal(mask_read(path, &mk, &err), 0);
    assert_int_equal(mk.n, 5);
    assert_memory_equal(mk.marked, marks, 5);
    mask_free(&mk);
    /* A byte other than 0/1, a truncated file and a wrong magic are errors. */
    FILE *f = fopen(path, "r+b");
    fseek(f, 24 + 2, SEEK_SET);
    fputc(7, f);
    fclose(f);
    assert_int_equal(mask_read(path, &mk, &err), -1);
    assert_non_null(strstr(err.msg, "only 0 and 1"));
    assert_int_equal(truncate(path, 26), 0);
    assert_int_equal(mask_read(path, &mk, &err), -1);
    assert_non_null(strstr(err.msg, "corrupt"));
    f = fopen(path, "r+b");
    fputc('X', f);
    fclose(f);
    assert_int_equal(mask_read(path, &mk, &err), -1);
    assert_non_null(strstr(err.msg, "not a mask"));
    unlink(path);
    char p[64];
    mask_path_for("d/val.bin", p, sizeof p);
    assert_string_equal(p, "d/val.mask");
    mask_path_for("d/tokens", p, sizeof p);
    assert_string_equal(p, "d/tokens.mask");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_recall_marks_by_hand),
        cmocka_unit_test(test_recall_matches_scan),
        cmocka_unit_test(test_by_position_and_mask),
        cmocka_unit_test(test_breakdowns_add_up),
        cmocka_unit_test(test_mask_file),
    };
    return cmocka_run_group_tests_name("eval_detail", tests, NULL, NULL);
}
