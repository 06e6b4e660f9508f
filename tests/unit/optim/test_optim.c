/* The optimizers (lm/optim.h): AdamW's step against its closed form, Muon's
 * orthogonalisation, which tensors it takes, and that its step does not
 * depend on the thread count. Its update
 * against a PyTorch Muon written from the published algorithm is
 * tests/parity/muon_test.py, which runs this binary with
 *   test_optim --dump FILE
 * to write a tiny model's weights before and after STEPS Muon steps on
 * random gradients (safetensors: before.<name>, grad.<k>.<name>,
 * after.<k>.<name>, metadata "settings": the step's settings as JSON). */
#include "test_model_util.h"

#include "lm/checkpoint.h"
#include "lm/gemm.h"
#include "lm/optim.h"
#include "lm/threads.h"
#include "optim/muon.h"

#define STEPS 3
static const float step_lr[STEPS] = {4e-4f, 1e-3f, 7e-4f}; /* AdamW's scheduled rate at each step */
static const MuonSettings muon_settings = {0.02f, 0.95f, 0.05f};
static const OptimSettings settings = {.adam = {0.9f, 0.99f, 1e-8f, 0.1f}, .own = &muon_settings, .lr_peak = 1e-3f};
static const float grad_scale = 0.7f; /* a clipping factor */

/* The tiny hybrid model (attention, then Grassmann) and its Muon state. */
static void muon_model(Model *m, OptimizerState *os) {
    tiny_test_model(m, "attention,grassmann", POS_LEARNED, 0.0f);
    const Optimizer *muon = optimizer_find("muon");
    assert_non_null(muon);
    test_optim_state(os, muon, m);
}

/* One Muon step (the settings above) at the 1-based step t. */
static void muon_step(OptimizerState *os, Model *m, float lr, size_t t) {
    ParamView p = params_view(m);
    optim_step(os, &p, &settings, lr, t, grad_scale);
}

/* Gradient k of the run, the same on every call. */
static void fill_grads(Model *m, size_t k) {
    float *g = rand_tensor(m->weights.n_params, 0.1f, 1000 + k);
    memcpy(m->weights.grads, g, m->weights.n_params * sizeof(float));
    free(g);
}

/* A diagonal matrix keeps its form through Newton-Schulz, each entry mapped by
 * the quintic on its own: entries spread over three decades all end in the
 * band the tuned coefficients aim at (about 0.7..1.2), the off-diagonal stays
 * zero, and the tall and the wide orientations agree. */
static void test_ns_diagonal(void **s) {
    (void)s;
    enum { R = 6, C = 10 };
    float wide[R * C] = {0}, tall[C * R] = {0};
    const float diag[R] = {1.0f, 0.5f, 0.1f, 0.03f, 0.01f, 0.002f};
    for (size_t i = 0; i < R; i++) wide[i * C + i] = diag[i], tall[i * R + i] = diag[i];
    float *scratch = calloc(muon_ns_scratch_floats(R, C), sizeof(float));
    muon_orthogonalize(wide, R, C, scratch);
    muon_orthogonalize(tall, C, R, scratch);
    for (size_t i = 0; i < R; i++)
        for (size_t j = 0; j < C; j++) {
            float w = wide[i * C + j], t = tall[j * R + i];
            if (i == j) {
                assert_true(w > 0.6f && w < 1.25f);
            } else {
                assert_true(fabsf(w) < 1e-6f);
            }
            assert_true(fabsf(w - t) < 1e-5f);
        }
    free(scratch);
}

/* A random matrix comes out near orthonormal rows: X X^T near the identity
 * (every singular value in the band), far from the input's own spread. */
static void test_ns_random(void **s) {
    (void)s;
    enum { R = 16, C = 48 };
    float *x = rand_tensor(R * C, 1.0f, 3), *scratch = calloc(muon_ns_scratch_floats(R, C), sizeof(float));
    for (size_t j = 0; j < C; j++) x[j] *= 30.0f; /* one row dominates the input */
    muon_orthogonalize(x, R, C, scratch);
    float gram[R * R];
    gemm(0, 1, R, R, C, 1.0f, x, C, x, C, 0.0f, gram, R);
    for (size_t i = 0; i < R; i++)
        for (size_t j = 0; j < R; j++)
            if (i == j) assert_true(gram[i * R + j] > 0.45f && gram[i * R + j] < 1.5f);
            else assert_true(fabsf(gram[i * R + j]) < 0.35f);
    free(x);
    free(scratch);
}

/* Muon takes the hidden layers' matrices; AdamW keeps embeddings, gains, biases. */
static void test_muon_takes_hidden_matrices(void **s) {
    (void)s;
    Model m;
    tiny_test_model(&m, "attention,grassmann", POS_LEARNED, 0.0f);
    size_t taken = 0;
    for (size_t i = 0; i < m.weights.n_tensors; i++) {
        const ParamTensor *t = &m.weights.tensors[i];
        int hidden_matrix = t->cols && strncmp(t->name, "h.", 2) == 0;
        assert_int_equal(muon_updates(t), hidden_matrix);
        taken += hidden_matrix;
    }
    assert_true(taken >= 6);
    assert_false(muon_updates(model_find_tensor(&m, "wte")));
    assert_false(muon_updates(model_find_tensor(&m, "wpe")));
    assert_true(muon_updates(model_find_tensor(&m, "h.0.attn.qkv.weight")));
    assert_true(muon_updates(model_find_tensor(&m, "h.0.mlp.fc.weight")));
    assert_true(muon_updates(model_find_tensor(&m, "h.1.grassmann.red.weight")));
    assert_false(muon_updates(model_find_tensor(&m, "h.0.mlp.fc.bias")));
    assert_false(muon_updates(model_find_tensor(&m, "h.0.ln1.weight")));
    model_free(&m);
}

/* STEPS Muon steps with `threads` threads at a fixed parallel width: the weights after. */
static float *muon_run(size_t threads) {
    Model m;
    OptimizerState os;
    threads_use(threads);
    threads_set_width(2);
    muon_model(&m, &os);
    for (size_t k = 0; k < STEPS; k++) {
        fill_grads(&m, k);
        muon_step(&os, &m, step_lr[k], k + 1);
    }
    threads_use(0);
    float *out = malloc(m.weights.n_params * sizeof(float));
    memcpy(out, m.weights.params, m.weights.n_params * sizeof(float));
    optim_state_free(&os);
    model_free(&m);
    return out;
}

static void test_muon_threads(void **s) {
    (void)s;
    Model m;
    tiny_test_model(&m, "attention,grassmann", POS_LEARNED, 0.0f);
    size_t n = m.weights.n_params;
    model_free(&m);
    float *one = muon_run(1), *two = muon_run(2);
    assert_memory_equal(one, two, n * sizeof(float));
    free(one);
    free(two);
}

/* One AdamW step from a known state (drawn weights, gradients and moments, at
 * step 5, with decay on and a clipping factor) against its closed form:
 * matrices decay, vectors (biases, gains) do not. Its state is its two
 * moments, each laid out as the weights. */
static void test_adamw_closed_form(void **s) {
    (void)s;
    const AdamWConfig adam = {0.9f, 0.99f, 1e-8f, 0.1f};
    Model m;
    OptimizerState os;
    tiny_test_model(&m, "attention,grassmann", POS_LEARNED, 0.0f);
    test_optim_state(&os, optimizer_find("adamw"), &m);
    size_t n = m.weights.n_params;
    assert_int_equal(os.n_floats, 2 * n);
    for (size_t i = 0; i < m.weights.n_tensors; i++) {
        assert_ptr_equal(optim_buffer(&os, i, 0), os.floats + m.weights.tensors[i].offset);
        assert_ptr_equal(optim_buffer(&os, i, 1), os.floats + n + m.weights.tensors[i].offset);
    }
    fill_grads(&m, 7);
    float *m0 = rand_tensor(n, 0.05f, 8), *v0 = rand_tensor(n, 0.05f, 9), *p0 = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) v0[i] *= v0[i]; /* a second moment: positive */
    memcpy(p0, m.weights.params, n * sizeof(float)), memcpy(os.floats, m0, n * sizeof(float));
    memcpy(os.floats + n, v0, n * sizeof(float));
    test_optim_step(&os, &m, &adam, 2e-2f, 5, 0.7f);
    check_adamw_closed_form(&m, os.floats, p0, m0, v0, &adam, 2e-2f, 0.7f, 5, "optimizer adamw");
    free(m0), free(v0), free(p0);
    optim_state_free(&os);
    model_free(&m);
}

/* The registry: both by name, and nothing else; AdamW the first entry,
 * which is the default. What each keeps: AdamW two buffers of every
 * tensor, Muon one of each matrix it updates and two of the rest. */
static void test_optimizer_registry(void **s) {
    (void)s;
    assert_ptr_equal(optimizer_at(0), optimizer_find("adamw"));
    assert_string_equal(optimizer_find("adamw")->name, "adamw");
    assert_string_equal(optimizer_find("muon")->name, "muon");
    assert_null(optimizer_find("sgd"));
    assert_string_equal(optimizer_names(), "adamw, muon");
    ModelConfig cfg;
    config_defaults(&cfg);
    cfg.vocab_size = 65;
    assert_int_equal(optimizer_scratch_bytes(optimizer_find("adamw"), &cfg), 0);
    size_t n = model_count_params(&cfg), C = cfg.n_embd, L = cfg.n_layer;
    assert_int_equal(optimizer_state_bytes(optimizer_find("adamw"), &cfg), 2 * n * sizeof(float));
    /* every layer's hidden matrices: attention's qkv and proj, the MLP's fc and proj */
    size_t hidden = L * (3 * C * C + C * C + 4 * C * C + 4 * C * C);
    assert_int_equal(optimizer_state_bytes(optimizer_find("muon"), &cfg), (2 * n - hidden) * sizeof(float));
    /* per thread of the width: the largest hidden matrix's update (the MLP's 4C x C) and its iterations' scratch */
    threads_set_width(3);
    assert_int_equal(optimizer_scratch_bytes(optimizer_find("muon"), &cfg),
                     3 * (3 * 4 * C * C + 2 * C * C) * sizeof(float));
    threads_use(0);
}

/* --dump FILE: the fixture of tests/parity/muon_test.py. */
static int dump(const char *path) {
    Model m;
    OptimizerState os;
    muon_model(&m, &os);
    size_t nt = m.weights.n_tensors, total = nt * (1 + 2 * STEPS);
    StTensor *ts = calloc(total, sizeof *ts);
    char (*names)[TENSOR_NAME_MAX + 32] = calloc(total, sizeof *names);
    float *copies = calloc((1 + 2 * STEPS) * m.weights.n_params, sizeof(float));
    size_t at = 0;
    /* copy c of the weights (or gradients) under names "<prefix><name>" */
    for (size_t c = 0; c <= 2 * STEPS; c++) {
        float *base = copies + c * m.weights.n_params;
        if (c == 0) memcpy(base, m.weights.params, m.weights.n_params * sizeof(float));
        else if (c % 2 == 1) {
            fill_grads(&m, c / 2);
            memcpy(base, m.weights.grads, m.weights.n_params * sizeof(float));
            muon_step(&os, &m, step_lr[c / 2], c / 2 + 1);
        } else {
            memcpy(base, m.weights.params, m.weights.n_params * sizeof(float));
        }
        for (size_t i = 0; i < nt; i++) {
            const ParamTensor *pt = &m.weights.tensors[i];
            if (c == 0) snprintf(names[at], sizeof names[0], "before.%s", pt->name);
            else snprintf(names[at], sizeof names[0], "%s.%zu.%s", c % 2 ? "grad" : "after", (c - 1) / 2, pt->name);
            ts[at] = (StTensor){.name = names[at], .dtype = ST_F32, .ndim = pt->cols ? 2 : 1,
                                .shape = {pt->rows, pt->cols}, .data = base + pt->offset};
            at++;
        }
    }
    char json[512];
    snprintf(json, sizeof json,
             "{\"steps\":%d,\"lr\":[%.9g,%.9g,%.9g],\"lr_peak\":%.9g,\"grad_scale\":%.9g,\"beta1\":%.9g,"
             "\"beta2\":%.9g,\"eps\":%.9g,\"weight_decay\":%.9g,\"muon_lr\":%.9g,\"muon_momentum\":%.9g,"
             "\"muon_weight_decay\":%.9g}",
             STEPS, step_lr[0], step_lr[1], step_lr[2], settings.lr_peak, grad_scale, settings.adam.beta1,
             settings.adam.beta2, settings.adam.eps, settings.adam.weight_decay, muon_settings.lr,
             muon_settings.momentum, muon_settings.weight_decay);
    StMeta meta[] = {{"settings", json}};
    Error err;
    int rc = st_write(path, ts, total, meta, 1, &err);
    if (rc) fprintf(stderr, "test_optim: %s\n", err.msg);
    free(copies);
    free(names);
    free(ts);
    optim_state_free(&os);
    model_free(&m);
    return rc ? 1 : 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "--dump") == 0) return dump(argv[2]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ns_diagonal),
        cmocka_unit_test(test_ns_random),
        cmocka_unit_test(test_muon_takes_hidden_matrices),
        cmocka_unit_test(test_muon_threads),
        cmocka_unit_test(test_optimizer_registry),
        cmocka_unit_test(test_adamw_closed_form),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
