/* The training loss mask (loss_mask.h): ignored targets add nothing to the
 * loss or the gradient, the masked loss's gradient against finite
 * differences, the sampler marks exactly the unmasked targets, and mask files
 * are read (or refused) beside their token files. */
#include "testutil.h"
#include "test_model_util.h"

#include <sys/stat.h>
#include <unistd.h>

#include "lm/batch.h"
#include "lm/loss_mask.h"
#include "lm/config.h"
#include "lm/model.h"
#include "nn/loss.h"

/* Cross-entropy: an ignored row has loss 0 and zero gradient; the others are
 * what they are without the mask. */
static void test_crossentropy_ignore(void **s) {
    (void)s;
    enum { N = 5, V = 7 };
    float *logits = rand_tensor(N * V, 1.0f, 3), losses[N], losses2[N];
    float d[N * V], d2[N * V];
    int32_t all[N] = {1, 4, 0, 6, 2}, some[N] = {1, LOSS_IGNORE, 0, LOSS_IGNORE, 2};
    crossentropy_forward(losses, logits, all, N, V);
    crossentropy_forward(losses2, logits, some, N, V);
    crossentropy_backward(d, logits, all, 0.25f, N, V);
    memset(d2, 0x7f, sizeof d2); /* garbage: backward must overwrite every row */
    crossentropy_backward(d2, logits, some, 0.25f, N, V);
    assert_int_equal(crossentropy_scored(some, N), 3);
    assert_int_equal(crossentropy_scored(all, N), N);
    for (size_t n = 0; n < N; n++) {
        int ignored = some[n] < 0;
        assert_true(ignored ? losses2[n] == 0.0f : losses2[n] == losses[n]);
        assert_true(losses[n] > 0.0f);
        for (size_t v = 0; v < V; v++) assert_true(ignored ? d2[n * V + v] == 0.0f : d2[n * V + v] == d[n * V + v]);
    }
    free(logits);
}

typedef struct Ctx {
    Model *m;
    int32_t *in, *tg;
    size_t B, T;
} Ctx;

static double masked_obj(void *p) {
    Ctx *c = p;
    model_forward(c->m, c->in, c->tg, c->B, c->T, NULL);
    return c->m->run.loss;
}

/* The whole model with a third of its targets ignored: the loss is the mean
 * over the others, every gradient matches finite differences of that loss,
 * and changing an ignored position's target id changes nothing. */
static void run_masked_model(const char *mixers) {
    Model m;
    tiny_test_model(&m, mixers, POS_LEARNED, 0.0f);
    enum { B = 2, T = 8, N = B * T };
    int32_t in[N], tg[N], tg_all[N];
    for (size_t i = 0; i < N; i++) {
        in[i] = (int32_t)((i * 7 + 3) % 11);
        tg_all[i] = (int32_t)((i * 5 + 1) % 11);
        tg[i] = i % 3 == 1 ? LOSS_IGNORE : tg_all[i];
    }
    model_forward(&m, in, tg_all, B, T, NULL);
    double sum = 0.0;
    size_t kept = 0;
    for (size_t i = 0; i < N; i++)
        if (tg[i] >= 0) sum += m.run.losses[i], kept++;
    Ctx c = {&m, in, tg, B, T};
    assert_float_equal(masked_obj(&c), sum / (double)kept, 1e-5);
    assert_int_equal(m.run.scored, kept);
    char label[96];
    snprintf(label, sizeof label, "masked model[%s]", mixers);
    check_model_grads(&m, masked_obj, &c, label);
    /* The check above can fail: the masked gradient (and loss) differ from
     * the unmasked ones, so the finite differences did see the mask. */
    float *g = malloc(m.weights.n_params * sizeof(float));
    model_zero_grads(&m);
    masked_obj(&c);
    model_backward(&m, 1.0f, NULL);
    memcpy(g, m.weights.grads, m.weights.n_params * sizeof(float));
    double full_loss;
    model_forward(&m, in, tg_all, B, T, NULL);
    full_loss = m.run.loss;
    model_zero_grads(&m);
    model_backward(&m, 1.0f, NULL);
    double differ = 0.0;
    for (size_t i = 0; i < m.weights.n_params; i++) differ += fabs(g[i] - m.weights.grads[i]);
    assert_true(differ > 1e-4); /* the mask does change the gradient */
    assert_true(fabs(full_loss - sum / (double)kept) > 1e-4);
    free(g);
    /* A batch with nothing scored: loss 0, no gradient. */
    int32_t none[N];
    for (size_t i = 0; i < N; i++) none[i] = LOSS_IGNORE;
    model_forward(&m, in, none, B, T, NULL);
    assert_int_equal(m.run.scored, 0);
    assert_true(m.run.loss == 0.0f);
    model_zero_grads(&m);
    model_backward(&m, 1.0f, NULL);
    for (size_t i = 0; i < m.weights.n_params; i++) assert_true(m.weights.grads[i] == 0.0f);
    model_free(&m);
}

static void test_masked_attention(void **s) { (void)s; run_masked_model("attention"); }
static void test_masked_grassmann(void **s) { (void)s; run_masked_model("grassmann,attention"); }

/* The head at the scored positions alone (what a forward under a loss mask
 * runs) against the head at every position with the ignored ones weighted 0
 * (PassOptions.full_head): the same loss, per-position losses, logits at the
 * scored positions and gradients of every tensor. */
static void compare_gathered_head(ModelConfig cfg, const char *label) {
    Model m;
    tiny_test_model_of(&m, &cfg, 1);
    enum { B = 2, T = 8, N = B * T };
    size_t V = cfg.vocab_size, kept = 0;
    int32_t in[N], tg[N];
    for (size_t i = 0; i < N; i++) {
        in[i] = (int32_t)((i * 7 + 3) % V);
        tg[i] = i % 5 == 2 || i == N - 1 ? (int32_t)((i * 5 + 1) % V) : LOSS_IGNORE;
        kept += tg[i] >= 0;
    }
    PassOptions full = {.full_head = 1};
    model_forward(&m, in, tg, B, T, &full);
    assert_int_equal(m.run.head_n, N);
    float loss = m.run.loss, losses[N], *logits = malloc(N * V * sizeof(float)), *grads = malloc(m.weights.n_params * sizeof(float));
    memcpy(losses, m.run.losses, sizeof losses);
    memcpy(logits, m.run.logits, N * V * sizeof(float));
    model_zero_grads(&m);
    model_backward(&m, 1.0f, NULL);
    memcpy(grads, m.weights.grads, m.weights.n_params * sizeof(float));
    model_forward(&m, in, tg, B, T, NULL);
    assert_int_equal(m.run.head_n, kept);
    assert_true(fabsf(m.run.loss - loss) <= 1e-5f * (1.0f + fabsf(loss)));
    for (size_t n = 0; n < N; n++) {
        if (tg[n] < 0) assert_true(m.run.losses[n] == 0.0f);
        else assert_true(fabsf(m.run.losses[n] - losses[n]) <= 1e-5f * (1.0f + fabsf(losses[n])));
    }
    for (size_t k = 0; k < kept; k++) {
        assert_int_equal(tg[m.run.head_rows[k]], m.run.head_targets[k]);
        for (size_t v = 0; v < V; v++) {
            float want = logits[(size_t)m.run.head_rows[k] * V + v];
            assert_true(fabsf(m.run.logits[k * V + v] - want) <= 1e-5f * (1.0f + fabsf(want)));
        }
    }
    model_zero_grads(&m);
    model_backward(&m, 1.0f, NULL);
    double worst = 0.0, biggest = 0.0;
    for (size_t i = 0; i < m.weights.n_params; i++) {
        double d = fabs((double)m.weights.grads[i] - grads[i]);
        worst = d > worst ? d : worst;
        biggest = fabs(grads[i]) > biggest ? fabs(grads[i]) : biggest;
    }
    if (!(biggest > 1e-3 && worst <= 1e-5 * biggest)) fail_msg("%s: gradients differ by %g (largest %g)", label, worst, biggest);
    free(logits), free(grads);
    model_free(&m);
}

static void test_gathered_head(void **s) {
    (void)s;
    ModelConfig cfg = tiny_test_config("attention", POS_LEARNED, 0.0f, NORM_PRE, NULL);
    compare_gathered_head(cfg, "tied head");
    cfg = tiny_test_config("grassmann,attention", POS_LEARNED, 0.0f, NORM_POST, NULL);
    cfg.untied_head = 1;
    cfg.logit_softcap = 3.0f;
    compare_gathered_head(cfg, "post-norm, untied, soft-capped head");
    cfg = tiny_test_config("attention", POS_ROPE, 0.0f, NORM_PRE, NULL);
    cfg.norm_type = NORM_TYPE_RMSNORM;
    compare_gathered_head(cfg, "rmsnorm, rope");
}

/* The positions a loss mask scores, gathered and spread back. */
static void test_loss_rows(void **s) {
    (void)s;
    int32_t tg[7] = {LOSS_IGNORE, 3, LOSS_IGNORE, LOSS_IGNORE, 0, 5, LOSS_IGNORE}, rows[7], row_tg[7];
    assert_int_equal(loss_rows(rows, row_tg, tg, 7), 3);
    assert_int_equal(rows[0], 1), assert_int_equal(rows[1], 4), assert_int_equal(rows[2], 5);
    assert_int_equal(row_tg[0], 3), assert_int_equal(row_tg[1], 0), assert_int_equal(row_tg[2], 5);
    float x[7] = {1, 2, 3, 9, 9, 9, 9};
    spread_in_place(x, rows, 3, 7);
    float want[7] = {0, 1, 0, 0, 2, 3, 0};
    for (size_t i = 0; i < 7; i++) assert_true(x[i] == want[i]);
    float src[14], packed[6], back[14] = {0};
    for (size_t i = 0; i < 14; i++) src[i] = (float)i + 1.0f;
    gather_rows(packed, src, rows, 3, 2);
    assert_true(packed[0] == 3.0f && packed[1] == 4.0f && packed[2] == 9.0f && packed[5] == 12.0f);
    scatter_rows(back, packed, rows, 3, 2);
    for (size_t i = 0; i < 7; i++)
        for (size_t c = 0; c < 2; c++) assert_true(back[i * 2 + c] == (tg[i] >= 0 ? src[i * 2 + c] : 0.0f));
}

/* The sampler with a mask draws the same windows as without, and ignores
 * exactly the targets the mask leaves out. */
static void test_sampler_mask(void **s) {
    (void)s;
    enum { L = 6, SEQS = 9, N = L * SEQS + 1, B = 50 };
    uint32_t toks[N];
    uint8_t mask[N];
    for (size_t i = 0; i < N; i++) toks[i] = (uint32_t)i, mask[i] = (uint8_t)(i % 4 == 0 || i % 7 == 3);
    TokenFile tf = {.data = toks, .width = 4, .n = N, .vocab_size = N};
    int32_t in[B * L], tg[B * L], in2[B * L], tg2[B * L];
    for (size_t align = 1; align <= L; align += L - 1) {
        Rng a, b;
        rng_seed(&a, 5), rng_seed(&b, 5);
        batch_sample(&tf, &a, B, L, align, NULL, in, tg);
        batch_sample(&tf, &b, B, L, align, mask, in2, tg2);
        assert_memory_equal(in, in2, sizeof in);
        size_t kept = 0;
        for (size_t i = 0; i < B * L; i++) {
            assert_int_equal(tg[i], in[i] + 1);
            assert_int_equal(tg2[i], mask[tg[i]] ? tg[i] : LOSS_IGNORE);
            kept += tg2[i] >= 0;
        }
        assert_true(kept > 0 && kept < B * L);
    }
}

/* Mask files: absent (none used), present (read), covering the wrong count
 * (refused with the names). */
static void test_masks_open(void **s) {
    (void)s;
    char dir[] = "/tmp/lossmaskXXXXXX", p[256];
    assert_non_null(mkdtemp(dir));
    Dataset ds = {0}; /* only the token counts are read */
    ds.train.n = 40, ds.val.n = 20;
    Error err;
    LossMasks lm;
    assert_int_equal(loss_masks_open(&lm, dir, &ds, &err), 0);
    assert_null(lm.train.marked);
    assert_null(lm.val.marked);
    uint8_t m40[40] = {0}, m21[21] = {0};
    m40[7] = 1;
    snprintf(p, sizeof p, "%s/train.mask", dir);
    assert_int_equal(mask_write(p, m40, 40, &err), 0);
    assert_int_equal(loss_masks_open(&lm, dir, &ds, &err), 0);
    assert_non_null(lm.train.marked);
    assert_null(lm.val.marked);
    assert_int_equal(lm.train.marked[7], 1);
    loss_masks_free(&lm);
    snprintf(p, sizeof p, "%s/val.mask", dir);
    assert_int_equal(mask_write(p, m21, 21, &err), 0);
    assert_int_equal(loss_masks_open(&lm, dir, &ds, &err), -1);
    assert_non_null(strstr(err.msg, "covers 21 tokens"));
    assert_null(lm.train.marked);
    const char *names[] = {"train.mask", "val.mask"};
    for (size_t i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        unlink(p);
    }
    rmdir(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crossentropy_ignore), cmocka_unit_test(test_masked_attention),
        cmocka_unit_test(test_masked_grassmann),    cmocka_unit_test(test_sampler_mask),
        cmocka_unit_test(test_masks_open),          cmocka_unit_test(test_gathered_head),
        cmocka_unit_test(test_loss_rows),
    };
    return cmocka_run_group_tests_name("loss mask", tests, NULL, NULL);
}
