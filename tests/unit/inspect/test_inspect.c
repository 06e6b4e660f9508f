/* bin/inspect's measurements on models whose weights are set by hand, where
 * the right answers are known; its pictures read back with stb_image. */
#include "testutil.h"

#include <sys/stat.h>
#include <unistd.h>

#include "lm/inspect.h"
#include "eval/report.h"
#include "lm/json.h"
#include "lm/plot_png.h"
#include "mixers/attention.h"
#include "mixers/grassmann.h"
#include "lm/config.h"
#include "lm/model.h"
#include "nn/svd.h"
#include "lm/ds.h"
#include "lm/files.h"
#include "tok/char.h"
#include "lm/tokenizer.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#include "stb_image.h"
#pragma GCC diagnostic pop

static void make_model(Model *m, const char *mixers, size_t V, size_t block, size_t L, size_t H, size_t C,
                       float weight_scale) {
    ModelConfig cfg;
    Error err;
    config_defaults(&cfg);
    cfg.vocab_size = V, cfg.block_size = block, cfg.n_layer = L, cfg.n_head = H, cfg.n_embd = C;
    assert_int_equal(config_set_option(&cfg, "grassmann-rank", "6", &err), 0);
    assert_int_equal(config_set_option(&cfg, "grassmann-windows", "1,2,4", &err), 0);
    assert_int_equal(config_set_mixers(&cfg, mixers, &err), 0);
    assert_int_equal(model_init(m, &cfg, 42, &err), 0);
    Rng r;
    rng_seed(&r, 7);
    for (size_t i = 0; weight_scale > 0 && i < m->weights.n_tensors; i++) {
        const ParamTensor *t = &m->weights.tensors[i];
        if (t->init == INIT_NORMAL || t->init == INIT_RESIDUAL)
            for (size_t j = 0; j < t->rows * (t->cols ? t->cols : 1); j++)
                m->weights.params[t->offset + j] = weight_scale * rng_normal(&r);
    }
}

static float *tensor(Model *m, const char *name) {
    const ParamTensor *t = model_find_tensor(m, name);
    if (!t) fail_msg("no tensor %s", name);
    return m->weights.params + t->offset;
}

/* A char tokenizer of text and a model over it (mixers, block, L layers of
 * H heads, C wide; random weights of 0.3). */
static void char_model(Model *m, Tokenizer *tok, const char *text, const char *mixers, size_t block, size_t L, size_t H,
                       size_t C) {
    Error err;
    assert_int_equal(tokenizer_build_char(tok, text, strlen(text), &err), 0);
    make_model(m, mixers, tok->vocab_size, block, L, H, C, 0.3f);
}

/* dir/name read whole (free it), or the test fails. */
static char *read_output(const char *dir, const char *name, size_t *len) {
    char path[256];
    Error err;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    char *text = read_file(path, len, &err);
    if (!text) fail_msg("%s: %s", name, err.msg);
    return text;
}

/* dir/inspect.json parsed (json_decref it), or the test fails. */
static json_t *read_inspect_json(const char *dir) {
    size_t len;
    Error err;
    char *text = read_output(dir, "inspect.json", &len);
    json_t *j = json_parse(text, len, &err);
    if (!j) fail_msg("inspect.json: %s", err.msg);
    free(text);
    return j;
}

/* What inspect_print says (free it). */
static char *printed_summary(const Inspection *in, const Induction *ind, const Tokenizer *tok) {
    FILE *f = tmpfile();
    assert_non_null(f);
    inspect_print(f, in, ind, tok);
    long len = ftell(f);
    char *text = calloc((size_t)len + 1, 1);
    assert_non_null(text);
    rewind(f);
    assert_int_equal(fread(text, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    return text;
}

/* Whether a line of text starts with prefix. */
static int has_line(const char *text, const char *prefix) {
    for (const char *line = text; line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
        if (strncmp(line, prefix, strlen(prefix)) == 0) return 1;
    return 0;
}

/* Layer l's exhibit of that name, or the test fails. */
static const Exhibit *exhibit(const Inspection *in, size_t l, const char *name) {
    for (size_t i = 0; i < in->layer[l].n_exhibits; i++)
        if (strcmp(in->layer[l].exhibits[i].name, name) == 0) return &in->layer[l].exhibits[i];
    fail_msg("layer %zu shows no '%s'", l, name);
    return NULL;
}

/* Row r, column `column` of a table exhibit with named columns. */
static double table_value(const Exhibit *e, size_t r, const char *column) {
    for (size_t c = 0; c < e->cols; c++)
        if (strcmp(e->col_names[c], column) == 0) return e->values[r * e->cols + c];
    fail_msg("table '%s' has no column '%s'", e->name, column);
    return NAN;
}

/* Removes the n files from dir, each of which must be there, then dir. */
static void remove_outputs(const char *dir, const char *const *files, size_t n) {
    char path[256];
    for (size_t i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        if (unlink(path) != 0) fail_msg("%s was not written", files[i]);
    }
    assert_int_equal(rmdir(dir), 0);
}

/* q = 0 makes every logit of a row equal: row t is uniform over t + 1 keys,
 * entropy log(t + 1). */
static void test_equal_logits_entropy(void **s) {
    (void)s;
    Model m;
    Error err;
    size_t T = 9, C = 16, H = 2;
    make_model(&m, "attention", 7, 12, 1, H, C, 0.3f);
    memset(tensor(&m, "h.0.attn.qkv.weight"), 0, C * C * sizeof(float)); /* the q rows */
    memset(tensor(&m, "h.0.attn.qkv.bias"), 0, C * sizeof(float));
    int32_t tokens[9] = {1, 3, 5, 2, 2, 6, 0, 4, 1};
    Inspection in;
    assert_int_equal(inspect_run(&in, &m, tokens, T, &err), 0);
    double mean_log = 0.0;
    for (size_t h = 0; h < H; h++)
        for (size_t t = 0; t < T; t++) {
            const float *row = in.maps[0]->values + (h * T + t) * T;
            double ent = 0.0;
            for (size_t j = 0; j < T; j++) {
                if (j <= t) assert_float_equal(row[j], 1.0 / (double)(t + 1), 1e-6);
                else assert_true(row[j] == 0.0f);
                if (row[j] > 0) ent -= row[j] * log(row[j]);
            }
            assert_float_equal(ent, log((double)(t + 1)), 1e-5);
            if (h == 0) mean_log += log((double)(t + 1)) / (double)T;
        }
    for (size_t h = 0; h < H; h++) {
        assert_float_equal(in.map_stats[0][h].entropy, mean_log, 1e-5);
        double diag = 0.0, prev = 0.0;
        for (size_t t = 0; t < T; t++) diag += 1.0 / (double)(t + 1) / (double)T;
        for (size_t t = 1; t < T; t++) prev += 1.0 / (double)(t + 1) / (double)(T - 1);
        assert_float_equal(in.map_stats[0][h].diagonal, diag, 1e-6);
        assert_float_equal(in.map_stats[0][h].previous, prev, 1e-6);
    }
    inspect_free(&in);
    model_free(&m);
}

/* W_q = W_k = I with one head of the full width: q_i.k_j = x_i.x_j, and
 * LayerNorm-ed rows have (nearly) equal norms, so the logit is the cosine
 * times a constant: correlation 1. The form is the identity: all singular
 * values 1, effective rank C, nothing antisymmetric. */
static void test_identity_form_correlates(void **s) {
    (void)s;
    Model m;
    Error err;
    size_t T = 10, C = 8;
    make_model(&m, "attention", 9, 12, 1, 1, C, 0.5f);
    float *w = tensor(&m, "h.0.attn.qkv.weight");
    memset(w, 0, 2 * C * C * sizeof(float));
    for (size_t i = 0; i < C; i++) w[i * C + i] = w[(C + i) * C + i] = 1.0f;
    int32_t tokens[10] = {1, 2, 3, 4, 5, 6, 7, 8, 1, 5};
    Inspection in;
    assert_int_equal(inspect_run(&in, &m, tokens, T, &err), 0);
    /* The table holds floats: the values to float precision. */
    const Exhibit *form = exhibit(&in, 0, "qk_form");
    assert_float_equal(table_value(form, 0, "similarity_logit_corr"), 1.0, 1e-4);
    assert_float_equal(table_value(form, 0, "sv_max"), 1.0, 1e-6);
    assert_float_equal(table_value(form, 0, "sv_min"), 1.0, 1e-6);
    assert_float_equal(table_value(form, 0, "effective_rank"), (double)C, 1e-5);
    assert_float_equal(table_value(form, 0, "antisymmetric_share"), 0.0, 1e-7);
    assert_float_equal(table_value(form, 0, "identity_distance"), 0.0, 1e-7);
    const Exhibit *angles = exhibit(&in, 0, "qk_angles"), *sv = exhibit(&in, 0, "singular_values");
    assert_int_equal(angles->cols, C);
    for (size_t i = 0; i < C; i++) { /* the same space read as query and as key: every angle 0 */
        assert_float_equal(angles->values[i], 0.0, 0.1);
        assert_float_equal(sv->values[i], 1.0, 1e-6);
    }
    inspect_free(&in);
    /* A rotation by 90 degrees in each plane: W_q^T W_k antisymmetric, the
     * logits no longer follow similarity (x.Jx = 0 on the diagonal). */
    memset(w + C * C, 0, C * C * sizeof(float));
    for (size_t i = 0; i < C; i += 2) w[(C + i) * C + i + 1] = 1.0f, w[(C + i + 1) * C + i] = -1.0f;
    assert_int_equal(inspect_run(&in, &m, tokens, T, &err), 0);
    form = exhibit(&in, 0, "qk_form");
    assert_float_equal(table_value(form, 0, "antisymmetric_share"), 1.0, 1e-7);
    assert_float_equal(table_value(form, 0, "sv_max"), 1.0, 1e-6);
    assert_true(fabs(table_value(form, 0, "similarity_logit_corr")) < 0.9);
    inspect_free(&in);
    model_free(&m);
}

static void test_singular_values(void **s) {
    (void)s;
    /* R(a) diag(5, 2, 0.5) R(b)^T in the first two coordinates, plus a third. */
    double a = 0.7, b = -1.9, d[3] = {5, 2, 0.5};
    double Ra[3][3] = {{cos(a), -sin(a), 0}, {sin(a), cos(a), 0}, {0, 0, 1}};
    double Rb[3][3] = {{1, 0, 0}, {0, cos(b), -sin(b)}, {0, sin(b), cos(b)}};
    double M[9] = {0}, sv[3];
    for (size_t i = 0; i < 3; i++)
        for (size_t j = 0; j < 3; j++)
            for (size_t k = 0; k < 3; k++) M[i * 3 + j] += Ra[i][k] * d[k] * Rb[j][k];
    singular_values(M, 3, 3, sv);
    for (size_t i = 0; i < 3; i++) assert_float_equal(sv[i], d[i], 1e-12);
    /* Rank one: u v^T has one singular value |u||v|, the rest 0. */
    double u[4] = {1, -2, 3, 0.5}, v[3] = {2, 0, -1}, R[12];
    for (size_t i = 0; i < 4; i++)
        for (size_t j = 0; j < 3; j++) R[i * 3 + j] = u[i] * v[j];
    singular_values(R, 4, 3, sv);
    assert_float_equal(sv[0], sqrt(14.25) * sqrt(5.0), 1e-12);
    assert_float_equal(sv[1], 0.0, 1e-12);
    assert_float_equal(sv[2], 0.0, 1e-12);
}

/* The principal angles between the query and key spaces: W_k's rows mixing
 * W_q's give cosines 1; rows in orthogonal coordinates give 0; sharing two of
 * four directions gives 1, 1, 0, 0. */
static void test_query_key_angles(void **s) {
    (void)s;
    size_t C = 12, H = 3, hs = 4; /* head 0: query rows 0-3, key rows C+0 to C+3 */
    float w[3 * 12 * 12];
    double sv[4], cosines[4];
    FormStats st;
    const double expect[3][4] = {{1, 1, 1, 1}, {0, 0, 0, 0}, {1, 1, 0, 0}};
    for (int k = 0; k < 3; k++) {
        memset(w, 0, sizeof w);
        for (size_t d = 0; d < hs; d++)
            for (size_t c = 0; c < C; c++) w[d * C + c] = (float)((d * 7 + c * 3) % 5) - 2.0f + (c == d ? 3.0f : 0.0f);
        for (size_t d = 0; d < hs; d++) {
            float *wk = w + (C + d) * C;
            if (k == 0) /* a mix of the query rows */
                for (size_t c = 0; c < C; c++) wk[c] = w[d * C + c] + 0.5f * w[((d + 1) % hs) * C + c];
            else if (k == 1) { /* queries read e_0..e_3 only, keys e_4..e_7 */
                for (size_t q = 0; q < hs; q++) memset(w + q * C + hs, 0, (C - hs) * sizeof(float));
                wk[hs + d] = 1.0f + (float)d;
            } else { /* keys read e_0, e_1 (the queries' span holds them) and e_8, e_9 */
                for (size_t q = 0; q < hs; q++) memset(w + q * C + hs, 0, (C - hs) * sizeof(float));
                wk[d < 2 ? d : 8 + d - 2] = 2.0f;
            }
        }
        bilinear_spectrum(&st, sv, cosines, w, C, H, 0);
        for (size_t i = 0; i < hs; i++) assert_float_equal(cosines[i], expect[k][i], 1e-6);
    }
}

/* The spectrum from the reduced C x d_head matrix equals the full C x C
 * matrix's, for random heads and for a head whose W_k has dependent rows. */
static void test_form_spectrum_matches_full(void **s) {
    (void)s;
    size_t C = 12, H = 3, hs = 4;
    float *w = rand_tensor(3 * C * C, 1.0f, 77);
    for (size_t c = 0; c < C; c++) w[(C + 2 * hs + 1) * C + c] = 2.0f * w[(C + 2 * hs) * C + c]; /* head 2: rank 3 */
    for (size_t h = 0; h < H; h++) {
        FormStats st;
        double all_sv[4], qk_cos[4];
        bilinear_spectrum(&st, all_sv, qk_cos, w, C, H, h);
        double M[144] = {0}, A[144], sv[12];
        for (size_t d = 0; d < hs; d++)
            for (size_t a = 0; a < C; a++)
                for (size_t b = 0; b < C; b++) M[a * C + b] += (double)w[(h * hs + d) * C + a] * w[(C + h * hs + d) * C + b];
        memcpy(A, M, sizeof M);
        singular_values(A, C, C, sv); /* overwrites A */
        assert_float_equal(st.sv_max, sv[0], 1e-9 * sv[0]);
        assert_float_equal(st.sv_min, sv[hs - 1], 1e-9 * sv[0]);
        for (size_t i = 0; i < hs; i++) assert_float_equal(all_sv[i], sv[i], 1e-9 * sv[0]);
        if (h == 2) assert_true(st.sv_min < 1e-9 * sv[0]);
        else assert_true(st.sv_min > 1e-3);
        double total = 0, ent = 0;
        for (size_t i = 0; i < C; i++) total += sv[i];
        for (size_t i = 0; i < C; i++)
            if (sv[i] > 1e-12 * sv[0]) ent -= sv[i] / total * log(sv[i] / total);
        assert_float_equal(st.effective_rank, exp(ent), 1e-6);
        /* The norms from d_head x d_head products equal the full form's. */
        double fro = 0, anti = 0, trace = 0, off = 0;
        for (size_t a = 0; a < C; a++) {
            trace += M[a * C + a];
            for (size_t b = 0; b < C; b++) {
                double y = 0.5 * (M[a * C + b] - M[b * C + a]);
                fro += M[a * C + b] * M[a * C + b];
                anti += y * y;
            }
        }
        for (size_t a = 0; a < C; a++)
            for (size_t b = 0; b < C; b++) {
                double y = M[a * C + b] - (a == b ? trace / (double)C : 0.0);
                off += y * y;
            }
        assert_float_equal(st.antisym_share, anti / fro, 1e-9);
        assert_float_equal(st.identity_dist, sqrt(off / fro), 1e-9);
    }
    free(w);
}

/* The maps (one gemm, then the causal softmax) and the similarity
 * correlation (the cosines once per layer) equal a direct computation in
 * double, over a length that cuts the gemm into several tiles. */
static void test_maps_match_direct(void **s) {
    (void)s;
    Error err;
    size_t T = 77, C = 24, H = 3, hs = 8;
    float *qkv = rand_tensor(T * 3 * C, 1.5f, 91), *x = rand_tensor(T * C, 1.0f, 92);
    float *probs = malloc(T * T * sizeof(float)), *cos = malloc(T * T * sizeof(float));
    float *scores = malloc(T * T * sizeof(float));
    assert_int_equal(input_cosines(cos, x, T, C, &err), 0);
    for (size_t h = 0; h < H; h++) {
        attention_probs(probs, qkv, T, C, H, h, 0);
        double n = 0, sa = 0, sb = 0, saa = 0, sbb = 0, sab = 0;
        for (size_t i = 0; i < T; i++) {
            double row[77], mx = -INFINITY, sum = 0;
            for (size_t j = 0; j <= i; j++) {
                double qk = 0, dot = 0, ni = 0, nj = 0;
                for (size_t d = 0; d < hs; d++) qk += (double)qkv[i * 3 * C + h * hs + d] * qkv[j * 3 * C + C + h * hs + d];
                for (size_t c = 0; c < C; c++) {
                    dot += (double)x[i * C + c] * x[j * C + c];
                    ni += (double)x[i * C + c] * x[i * C + c];
                    nj += (double)x[j * C + c] * x[j * C + c];
                }
                double a = dot / sqrt(ni * nj), b = qk / sqrt((double)hs);
                assert_float_equal(cos[i * T + j], a, 1e-5);
                scores[i * T + j] = (float)b;
                row[j] = b;
                mx = b > mx ? b : mx;
                n++, sa += a, sb += b, saa += a * a, sbb += b * b, sab += a * b;
            }
            for (size_t j = 0; j <= i; j++) sum += exp(row[j] - mx);
            for (size_t j = 0; j < T; j++) {
                double want = j <= i ? exp(row[j] - mx) / sum : 0.0;
                if (fabs(probs[i * T + j] - want) > 1e-6 * (1 + want))
                    fail_msg("head %zu p[%zu][%zu] = %g, want %g", h, i, j, probs[i * T + j], want);
            }
        }
        double r = (sab - sa * sb / n) / sqrt((saa - sa * sa / n) * (sbb - sb * sb / n));
        assert_float_equal(similarity_logit_corr(cos, scores, T), r, 1e-5);
    }
    free(qkv), free(x), free(probs), free(cos), free(scores);
}

/* The un-normalised coordinates of a wedge satisfy the relations to float
 * round-off; coordinates that are no wedge (e01 + e23) do not. */
static void test_plucker_residual(void **s) {
    (void)s;
    size_t r = 9, P = 36;
    float p[36];
    for (int trial = 0; trial < 10; trial++) {
        float *a = rand_tensor(r, 1.0f, 10 + trial), *b = rand_tensor(r, 3.0f, 50 + trial);
        grassmann_wedge(p, a, b, r);
        double res = plucker_residual(p, r);
        assert_true(res < 1e-6);
        free(a), free(b);
    }
    memset(p, 0, sizeof p);
    p[0] = 1.0f;                          /* (0, 1) */
    p[(2 * (2 * r - 2 - 1)) / 2 + 0] = 1.0f; /* (2, 3) */
    assert_float_equal(plucker_residual(p, r), 0.5, 1e-12);
    (void)P;
}

/* A Grassmann layer: gates in (0, 1), its offsets' norms by position,
 * relations exact. */
static void test_grassmann_layer(void **s) {
    (void)s;
    Model m;
    Error err;
    size_t T = 12;
    make_model(&m, "attention,grassmann", 9, 16, 2, 2, 16, 0.3f);
    int32_t tokens[12] = {1, 2, 3, 4, 5, 6, 7, 8, 1, 5, 3, 3};
    Inspection in;
    assert_int_equal(inspect_run(&in, &m, tokens, T, &err), 0);
    assert_null(in.maps[1]); /* not an attention layer */
    assert_null(in.map_stats[1]);
    assert_string_equal(in.layer[1].mixer, "grassmann");
    const Exhibit *gate = exhibit(&in, 1, "gates"), *norms = exhibit(&in, 1, "offset_norms");
    assert_int_equal(gate->kind, EXHIBIT_SERIES);
    assert_int_equal(gate->rows, 1);
    assert_int_equal(gate->cols, T);
    assert_true(gate->lo == 0.0f && gate->hi == 1.0f);
    for (size_t t = 0; t < T; t++) assert_true(gate->values[t] > 0.0f && gate->values[t] < 1.0f);
    /* Per position: NaN before the offset fits, positive after. */
    MixerSpec spec = model_mixer_spec(&m.cfg, 1);
    const GrassmannLayer *gl = grassmann_layer(&spec);
    assert_int_equal(norms->rows, gl->n_windows);
    for (size_t k = 0; k < gl->n_windows; k++) {
        size_t d = gl->windows[k];
        char name[16];
        snprintf(name, sizeof name, "d=%zu", d);
        assert_string_equal(norms->row_names[k], name);
        for (size_t t = 0; t < T; t++) {
            float v = norms->values[k * T + t];
            if (t < d) assert_true(isnan(v));
            else assert_true(v > 0.0f);
        }
        assert_true(isfinite(report_row_mean(norms, k)) && report_row_mean(norms, k) > 0.0);
    }
    const Exhibit *plucker = exhibit(&in, 1, "plucker_residual");
    assert_int_equal(plucker->kind, EXHIBIT_SCALAR);
    assert_true(plucker->values[0] < 1e-6f && plucker->values[0] >= 0.0f);
    inspect_free(&in);
    model_free(&m);
}

/* Direct attribution: the parts add up to the predicted logit; each layer's
 * shares (attention's and gla's heads and output bias) add up to the
 * layer's mixer part. The logit lens's last stage is the model's own
 * prediction. */
static void test_attribution_and_lens(void **s) {
    (void)s;
    Model m;
    Error err;
    size_t T = 11, H = 2;
    make_model(&m, "attention,grassmann,gla,attention", 9, 16, 4, H, 16, 0.3f);
    int32_t tokens[11] = {1, 2, 3, 4, 5, 6, 7, 8, 1, 5, 3};
    Inspection in;
    assert_int_equal(inspect_run(&in, &m, tokens, T, &err), 0);
    double total = 0.0, layer = 0.0, shares = 0.0;
    size_t groups = 0, in_shares = 0;
    for (size_t i = 0; i <= arrlenu(in.parts); i++) {
        const AttributionPart *p = i < arrlenu(in.parts) ? &in.parts[i] : NULL;
        if (p && p->share) { /* "L<l> H<h>" or "L<l> ... bias", after its layer's mixer part */
            assert_true(p->name[0] == 'L' && (strstr(p->name, " H") || strstr(p->name, " bias")));
            shares += p->value;
            in_shares++;
            continue;
        }
        if (in_shares) { /* a layer's shares ended: they must sum to its mixer part */
            assert_int_equal(in_shares, H + 1);
            assert_float_equal(shares, layer, 1e-4 * (1 + fabs(layer)));
            groups++;
            in_shares = 0;
            shares = 0.0;
        }
        if (!p) break;
        layer = p->value;
        total += p->value;
    }
    assert_int_equal(groups, 3); /* both attention layers and the gla layer */
    assert_float_equal(total, in.predicted_logit, 1e-4 * (1 + fabs(in.predicted_logit)));
    const uint32_t *last = in.lens_top + ((in.n_layer * T) + (T - 1)) * LENS_TOP;
    assert_int_equal(last[0], in.predicted);
    assert_true(in.lens_prob[((in.n_layer * T) + (T - 1)) * LENS_TOP] >=
                in.lens_prob[((in.n_layer * T) + (T - 1)) * LENS_TOP + 1]);
    inspect_free(&in);
    model_free(&m);
}

/* A gla layer's exhibits: each head's decay along the prompt and its
 * state's norm. With the decay's projection zeroed each head's decay is its
 * starting rate, 1 - 2^-(3 + 5h / (H - 1)), at every position; the state
 * norm follows S_t = gamma_t S_{t-1} + k_t v_t^T, here recomputed in
 * double from the layer's input. No maps: NaN induction scores. */
static void test_gla_exhibits(void **s) {
    (void)s;
    Model m;
    Error err;
    size_t T = 10, H = 2, C = 16, hs = 8;
    make_model(&m, "gla,attention", 9, 16, 2, H, C, 0.3f);
    memset(tensor(&m, "h.0.gla.decay.weight"), 0, H * C * sizeof(float));
    int32_t tokens[10] = {1, 2, 3, 4, 5, 6, 7, 8, 1, 5}, seqs[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    Inspection in;
    assert_int_equal(inspect_run(&in, &m, tokens, T, &err), 0);
    assert_null(in.maps[0]);
    const Exhibit *decay = exhibit(&in, 0, "decay"), *norm = exhibit(&in, 0, "state_norm");
    assert_int_equal(decay->kind, EXHIBIT_SERIES);
    assert_int_equal(norm->kind, EXHIBIT_SERIES);
    assert_int_equal(decay->rows, H);
    assert_int_equal(decay->cols, T);
    assert_string_equal(decay->row_names[1], "H1");
    assert_true(decay->lo == 0.0f && decay->hi == 1.0f);
    const float *x = model_mixer_input(&m, 0), *w = tensor(&m, "h.0.gla.qkv.weight"), *b = tensor(&m, "h.0.gla.qkv.bias");
    for (size_t h = 0; h < H; h++) {
        double want = 1.0 - exp2(-(3.0 + 5.0 * (double)h / (double)(H - 1))), S[64] = {0};
        for (size_t t = 0; t < T; t++) {
            assert_float_equal(decay->values[h * T + t], want, 1e-6);
            double k[8], v[8], n2 = 0.0;
            for (size_t d = 0; d < hs; d++) {
                k[d] = b[C + h * hs + d], v[d] = b[2 * C + h * hs + d];
                for (size_t c = 0; c < C; c++) {
                    k[d] += (double)w[(C + h * hs + d) * C + c] * x[t * C + c];
                    v[d] += (double)w[(2 * C + h * hs + d) * C + c] * x[t * C + c];
                }
            }
            for (size_t i = 0; i < hs; i++)
                for (size_t j = 0; j < hs; j++) {
                    S[i * hs + j] = decay->values[h * T + t] * S[i * hs + j] + k[i] * v[j];
                    n2 += S[i * hs + j] * S[i * hs + j];
                }
            assert_float_equal(norm->values[h * T + t], sqrt(n2), 1e-5 * (1 + sqrt(n2)));
        }
    }
    Induction ind;
    assert_int_equal(inspect_induction_on(&ind, &m, seqs, 4, 2, &err), 0);
    assert_true(isnan(ind.score[0]) && isnan(ind.score[1]) && isfinite(ind.score[2]));
    induction_free(&ind);
    inspect_free(&in);
    model_free(&m);
}

/* A mixer without an inspect hook (here attention's forward under another
 * name): its layer is inspected through what the model sees of every layer
 * (its whole output in the attribution, the logit lens), has no measurements
 * of its own and NaN induction scores; the other layers are as before. */
static double part_value(const Inspection *in, const char *name) {
    for (size_t i = 0; i < arrlenu(in->parts); i++)
        if (strcmp(in->parts[i].name, name) == 0) return in->parts[i].value;
    fail_msg("no attribution part %s", name);
    return NAN;
}

static void test_mixer_without_hook(void **s) {
    (void)s;
    Model m;
    Error err;
    Tokenizer tok;
    char_model(&m, &tok, "abcdefgh", "attention,attention", 16, 2, 2, 16);
    size_t T = 10, H = 2;
    int32_t tokens[10] = {1, 2, 3, 4, 5, 6, 7, 8, 1, 5}, seqs[2 * 4] = {1, 2, 3, 4, 5, 6, 7, 8};
    Inspection in;
    Induction ind;
    assert_int_equal(inspect_run(&in, &m, tokens, T, &err), 0);
    assert_int_equal(inspect_induction_on(&ind, &m, seqs, 4, 2, &err), 0);
    double whole = part_value(&in, "L1 attn"), logit = in.predicted_logit, score0[2] = {ind.score[0], ind.score[1]};
    inspect_free(&in);
    induction_free(&ind);

    static Mixer stub;
    stub = attention_mixer;
    stub.name = "stub";
    stub.inspect = NULL;
    m.mixers[1] = &stub;
    assert_int_equal(inspect_run(&in, &m, tokens, T, &err), 0);
    const LayerInspection *li = &in.layer[1];
    assert_string_equal(li->mixer, "stub");
    assert_int_equal(li->n_exhibits, 0);
    assert_null(in.maps[1]);
    assert_int_equal(li->n_parts, 0);
    assert_non_null(in.maps[0]);
    assert_true(part_value(&in, "L1 stub") == whole); /* the same output, attributed the same way */
    assert_true(in.predicted_logit == logit);
    double total = 0.0;
    for (size_t i = 0; i < arrlenu(in.parts); i++) {
        total += in.parts[i].share ? 0.0 : in.parts[i].value;
        if (in.parts[i].share) assert_true(strncmp(in.parts[i].name, "L0 ", 3) == 0);
    }
    assert_float_equal(total, in.predicted_logit, 1e-4 * (1 + fabs(in.predicted_logit)));
    assert_int_equal(in.lens_top[((in.n_layer * T) + (T - 1)) * LENS_TOP], in.predicted);

    assert_int_equal(inspect_induction_on(&ind, &m, seqs, 4, 2, &err), 0);
    for (size_t h = 0; h < H; h++) {
        assert_true(ind.score[h] == score0[h]);
        assert_true(isnan(ind.score[H + h]));
    }

    /* The outputs: no pictures of its own, the JSON names its mixer. */
    char dir[] = "/tmp/lm_inspect_XXXXXX", path[256];
    assert_non_null(mkdtemp(dir));
    assert_int_equal(inspect_write(dir, &in, &ind, &tok, "abcdefghae", &err), 0);
    snprintf(path, sizeof path, "%s/attn_L1_H0.png", dir);
    assert_int_equal(access(path, F_OK), -1);
    json_t *j = read_inspect_json(dir);
    const json_t *layer1 = json_array_get(json_object_get(j, "layers"), 1);
    assert_string_equal(json_string_value(json_object_get(layer1, "mixer")), "stub");
    assert_int_equal(json_array_size(json_object_get(layer1, "exhibits")), 0);
    json_decref(j);
    char *said = printed_summary(&in, &ind, &tok);
    assert_true(has_line(said, "layer 1 stub: no measurements"));
    free(said);
    const char *files[] = {"attn_L0_H0.png", "attn_L0_H1.png", "attn_L0.png", "heads.png", "heads.txt",
                           "attribution.png", "lens.txt", "tokens.txt", "inspect.json", "inspect.html"};
    remove_outputs(dir, files, sizeof files / sizeof *files);
    inspect_free(&in);
    induction_free(&ind);
    tokenizer_free(&tok);
    model_free(&m);
}

/* ---- induction ------------------------------------------------------------- */

/* A two-layer circuit built by hand (V = 6, one head per layer).
 * Channels: token one-hot, position one-hot, previous-token one-hot, and one
 * balancing channel per block so that every row has mean 0 and the same norm
 * (LayerNorm then only rescales by a constant).
 *   layer 0: a previous-token head (q of position t matches k of t - 1) whose
 *            value copies the token block into the previous-token block;
 *   layer 1: q = the current token, k = the previous token: attends to the
 *            position just after the current token's earlier occurrence. A
 *            constant query direction and a large negative key at position 0
 *            keep it off position 0, whose "previous token" is its own.
 * MLPs are zero. */
enum { IV = 6, IT = 12, TOK = 0, POS = IV, PREV = IV + IT, BAL_TOK = 2 * IV + IT, BAL_POS, BAL_PREV, CONST, IC };

static void build_induction_model(Model *m) {
    make_model(m, "attention,attention", IV, IT, 2, 1, IC, 0.0f);
    memset(m->weights.params, 0, m->weights.n_params * sizeof(float));
    for (size_t l = 0; l < 2; l++) {
        char name[64];
        snprintf(name, sizeof name, "h.%zu.ln1.weight", l);
        for (size_t c = 0; c < IC; c++) tensor(m, name)[c] = 1.0f;
        snprintf(name, sizeof name, "h.%zu.ln2.weight", l);
        for (size_t c = 0; c < IC; c++) tensor(m, name)[c] = 1.0f;
        snprintf(name, sizeof name, "h.%zu.attn.proj.weight", l);
        for (size_t c = 0; c < IC; c++) tensor(m, name)[c * IC + c] = l == 0 ? 1.0f : 0.0f;
    }
    for (size_t c = 0; c < IC; c++) tensor(m, "ln_f.weight")[c] = 1.0f;
    float *wte = tensor(m, "wte"), *wpe = tensor(m, "wpe");
    for (size_t v = 0; v < IV; v++) wte[v * IC + TOK + v] = 1.0f, wte[v * IC + BAL_TOK] = -1.0f;
    for (size_t t = 0; t < IT; t++) wpe[t * IC + POS + t] = 1.0f, wpe[t * IC + BAL_POS] = -1.0f;
    float *w0 = tensor(m, "h.0.attn.qkv.weight"), *w1 = tensor(m, "h.1.attn.qkv.weight");
    float *q0 = w0, *k0 = w0 + IC * IC, *v0 = w0 + 2 * IC * IC, *q1 = w1, *k1 = w1 + IC * IC;
    for (size_t t = 1; t < IT; t++) q0[(POS + t - 1) * IC + POS + t] = 25.0f;
    for (size_t t = 0; t < IT; t++) k0[(POS + t) * IC + POS + t] = 1.0f;
    for (size_t v = 0; v < IV; v++) v0[(PREV + v) * IC + TOK + v] = 1.0f;
    v0[BAL_PREV * IC + BAL_TOK] = 1.0f;
    for (size_t v = 0; v < IV; v++) q1[(TOK + v) * IC + TOK + v] = 40.0f, k1[(TOK + v) * IC + PREV + v] = 1.0f;
    tensor(m, "h.1.attn.qkv.bias")[CONST] = 1.0f; /* q: a constant direction ... */
    k1[CONST * IC + POS + 0] = -200.0f;           /* ... that position 0's key opposes */
}

static void test_induction_circuit(void **s) {
    (void)s;
    Model m;
    Error err;
    build_induction_model(&m);
    int32_t seqs[2 * 5] = {3, 1, 5, 2, 4, 2, 5, 4, 1, 3};
    Induction ind;
    assert_int_equal(inspect_induction_on(&ind, &m, seqs, 5, 2, &err), 0);
    if (getenv("VERBOSE")) printf("  induction head %.6f, previous-token head %.6f\n", ind.score[1], ind.score[0]);
    assert_true(ind.score[1] > 0.99); /* layer 1: the induction head */
    assert_true(ind.score[0] < 0.05); /* layer 0: the previous-token head (attends to i - 1, not i - n + 1) */
    induction_free(&ind);
    /* Layer 0 really is a previous-token head. */
    Inspection in;
    int32_t tokens[8] = {3, 1, 5, 2, 3, 1, 5, 2};
    assert_int_equal(inspect_run(&in, &m, tokens, 8, &err), 0);
    assert_true(in.map_stats[0][0].previous > 0.99);
    inspect_free(&in);
    /* A uniform head (q = 0): score = mean over the second copy of 1/(i + 1). */
    memset(tensor(&m, "h.1.attn.qkv.weight"), 0, IC * IC * sizeof(float));
    memset(tensor(&m, "h.1.attn.qkv.bias"), 0, IC * sizeof(float));
    assert_int_equal(inspect_induction_on(&ind, &m, seqs, 5, 2, &err), 0);
    double want = 0.0;
    for (size_t i = 5; i < 10; i++) want += 1.0 / (double)(i + 1) / 5.0;
    assert_float_equal(ind.score[1], want, 1e-6);
    assert_float_equal(ind.uniform, want, 1e-12);
    induction_free(&ind);
    model_free(&m);
}

/* Random sequences: inside the vocabulary without the unknown token, no
 * repeats within a copy when the vocabulary allows; bad lengths rejected. */
static void test_induction_random(void **s) {
    (void)s;
    Model m;
    Error err;
    make_model(&m, "attention", 9, 16, 1, 2, 16, 0.3f);
    Induction ind;
    assert_int_equal(inspect_induction(&ind, &m, 8, 3, 5, &err), 0);
    assert_true(isfinite(ind.loss_first) && isfinite(ind.loss_second));
    for (size_t h = 0; h < 2; h++) assert_true(ind.score[h] > 0 && ind.score[h] < 1);
    induction_free(&ind);
    assert_int_equal(inspect_induction(&ind, &m, 9, 1, 5, &err), -1);
    assert_non_null(strstr(err.msg, "block_size"));
    assert_int_equal(inspect_induction(&ind, &m, 1, 1, 5, &err), -1);
    model_free(&m);
}

/* ---- pictures and files ---------------------------------------------------- */

static void test_heatmap_png(void **s) {
    (void)s;
    Error err;
    char dir[] = "/tmp/lm_inspect_XXXXXX", path[128];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/h.png", dir);
    size_t rows = 3, cols = 3;
    float vals[9] = {1.0f, 0.3f, 0.2f, 0.5f, 0.5f, 0.9f, 0.0f, 0.25f, 0.75f};
    const char *labels[3] = {"a", "b", "c"};
    HeatmapSpec spec = {"title", NULL, labels, labels, 1, 0.0f, 1.0f, 0, 0};
    const float *p = vals;
    assert_int_equal(png_heatmap(path, &p, 1, rows, cols, &spec, &err), 0);
    int w, h, n;
    unsigned char *img = stbi_load(path, &w, &h, &n, 3);
    assert_non_null(img);
    HeatmapLayout L = heatmap_layout(rows, cols, 1, &spec);
    assert_int_equal(w, (int)L.width);
    assert_int_equal(h, (int)L.height);
    unsigned char lo[3], hi[3], grey[3] = {200, 200, 200};
    colormap(0.0, lo);
    colormap(1.0, hi);
    /* Every pixel of a cell has the cell's colour: the extremes at (0,0) = 1
     * and (2,0) = 0, masked above the diagonal. */
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++)
            for (size_t y = 0; y < L.cell; y++)
                for (size_t x = 0; x < L.cell; x++) {
                    const unsigned char *px = img + ((L.top + r * L.cell + y) * (size_t)w + heatmap_panel_x(&L, 0) + c * L.cell + x) * 3;
                    unsigned char want[3];
                    if (c > r) memcpy(want, grey, 3);
                    else colormap(vals[r * cols + c], want);
                    if (memcmp(px, want, 3) != 0) fail_msg("cell (%zu, %zu) pixel (%zu, %zu) wrong colour", r, c, x, y);
                }
    const unsigned char *one = img + (L.top * (size_t)w + heatmap_panel_x(&L, 0)) * 3;
    const unsigned char *zero = img + ((L.top + 2 * L.cell) * (size_t)w + heatmap_panel_x(&L, 0)) * 3;
    assert_memory_equal(one, hi, 3);
    assert_memory_equal(zero, lo, 3);
    /* The darkest and the brightest pixels of the picture's cells are those. */
    stbi_image_free(img);
    unlink(path);
    rmdir(dir);
}

/* Panels in a grid (columns) with a given cell size: every cell of every
 * panel where heatmap_panel_x / heatmap_panel_y say, in its colour. */
static void test_heatmap_grid(void **s) {
    (void)s;
    Error err;
    char dir[] = "/tmp/lm_inspect_XXXXXX", path[128];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/g.png", dir);
    float a[4] = {0.0f, 0.5f, 1.0f, 0.25f}, b[4] = {1.0f, 0.0f, 0.75f, 0.5f}, c[4] = {0.1f, 0.9f, 0.4f, 0.6f};
    const float *panels[3] = {a, b, c};
    const char *titles[3] = {"a", "b", "c"};
    HeatmapSpec spec = {.title = "grid", .panel_titles = titles, .vmin = 0.0f, .vmax = 1.0f, .columns = 2, .cell = 5};
    assert_int_equal(png_heatmap(path, panels, 3, 2, 2, &spec, &err), 0);
    int w, h, n;
    unsigned char *img = stbi_load(path, &w, &h, &n, 3);
    assert_non_null(img);
    HeatmapLayout L = heatmap_layout(2, 2, 3, &spec);
    assert_int_equal(L.cell, 5);
    assert_int_equal(w, (int)L.width);
    assert_int_equal(h, (int)L.height);
    assert_true(heatmap_panel_y(&L, 2) > heatmap_panel_y(&L, 1) + L.panel_h); /* the third panel on a second row */
    assert_int_equal(heatmap_panel_x(&L, 2), heatmap_panel_x(&L, 0));
    for (size_t p = 0; p < 3; p++)
        for (size_t r = 0; r < 2; r++)
            for (size_t col = 0; col < 2; col++) {
                unsigned char want[3];
                colormap(panels[p][r * 2 + col], want);
                for (size_t y = 0; y < L.cell; y++)
                    for (size_t x = 0; x < L.cell; x++) {
                        size_t px = heatmap_panel_x(&L, p) + col * L.cell + x, py = heatmap_panel_y(&L, p) + r * L.cell + y;
                        if (memcmp(img + (py * (size_t)w + px) * 3, want, 3) != 0)
                            fail_msg("panel %zu cell (%zu, %zu) wrong colour", p, r, col);
                    }
            }
    stbi_image_free(img);
    unlink(path);
    rmdir(dir);
}

/* Token labels: BPE tokens with their leading space, newlines, bytes that are
 * not UTF-8, control bytes and long tokens, as text and for the pictures. */
static void test_token_labels(void **s) {
    (void)s;
    Error err;
    Tokenizer tok;
    /* 256 " t", 257 " th", 258 "\n\n", 259 "é", 260 "aa" .. 264 32 x 'a', then the special */
    const char *text = "lm-tokenizer 1\nbpe 266\npattern gpt2\nregex 'x\nspecials 1\n3c7c656e647c3e\nmerges 9\n"
                       "32 116\n256 104\n10 10\n195 169\n97 97\n260 260\n261 261\n262 262\n263 263\n";
    if (tokenizer_from_text(&tok, text, "test", &err)) fail_msg("%s", err.msg);
    struct {
        uint32_t id;
        const char *text, *ascii;
    } want[] = {{257, "\xE2\x90\xA3th", "_th"},   {32, "\xE2\x90\xA3", "_"}, {258, "\\n\\n", "$$"},
                {259, "\xC3\xA9", "?"},           {195, "<0xC3>", "?"},      {9, "\\t", "?"},
                {1, "<0x01>", "?"},               {97, "a", "a"},            {265, "<|end|>", "<|end|>"},
                {264, "aaaaaaaaaaaaaaaaaaaaaaaa\xE2\x80\xA6", "aaaaaaaaaa~"}};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        char buf[TOKEN_LABEL_MAX];
        token_label(&tok, want[i].id, 0, buf, sizeof buf);
        if (strcmp(buf, want[i].text)) fail_msg("token %u: text label '%s', want '%s'", want[i].id, buf, want[i].text);
        token_label(&tok, want[i].id, 1, buf, sizeof buf);
        if (strcmp(buf, want[i].ascii)) fail_msg("token %u: picture label '%s', want '%s'", want[i].id, buf, want[i].ascii);
    }
    /* A buffer too small for the whole label gets its start and the mark. */
    char small[8];
    token_label(&tok, 264, 0, small, sizeof small);
    assert_string_equal(small, "aaaa\xE2\x80\xA6");
    tokenizer_free(&tok);
}

/* A prompt longer than INSPECT_JSON_MAPS and a model of more than 32 heads:
 * the JSON keeps each row's 3 strongest keys (in order, causal, the row's
 * true largest weights), the pictures stay small (maps pooled, heads in a
 * grid), heads.txt has a line per head, and the summary goes per layer with
 * the heads that stand out. */
static void test_long_prompt_many_heads(void **s) {
    (void)s;
    Model m;
    Error err;
    Tokenizer tok;
    size_t T = 150, L = 3, H = 12;
    char_model(&m, &tok, "abcdefghij", "attention", 160, L, H, 48);
    int32_t *tokens = malloc(T * sizeof *tokens);
    for (size_t t = 0; t < T; t++) tokens[t] = (int32_t)(1 + (t * 7 + t / 5) % (tok.vocab_size - 1));
    Inspection in;
    Induction ind;
    assert_int_equal(inspect_induction(&ind, &m, 8, 2, 3, &err), 0);
    assert_int_equal(inspect_run(&in, &m, tokens, T, &err), 0);
    char dir[] = "/tmp/lm_inspect_XXXXXX", path[256];
    assert_non_null(mkdtemp(dir));
    assert_int_equal(inspect_write(dir, &in, &ind, &tok, "x", &err), 0);
    json_t *j = read_inspect_json(dir);
    assert_string_equal(json_string_value(json_object_get(j, "maps")), "top keys");
    const json_t *maps = json_array_get(json_object_get(json_array_get(json_object_get(j, "layers"), 2), "exhibits"), 0);
    assert_string_equal(json_string_value(json_object_get(maps, "kind")), "maps");
    assert_null(json_object_get(maps, "maps"));
    const json_t *rows = json_array_get(json_object_get(maps, "maps_top"), 5);
    assert_int_equal(json_array_size(rows), T);
    const float *p = in.maps[2]->values + 5 * T * T;
    for (size_t i = 0; i < T; i++) {
        const json_t *row = json_array_get(rows, i);
        assert_int_equal(json_array_size(row), i + 1 < 3 ? i + 1 : 3);
        double last = INFINITY;
        for (size_t k = 0; k < json_array_size(row); k++) {
            size_t key = (size_t)json_integer_value(json_array_get(json_array_get(row, k), 0));
            double w = json_number_value(json_array_get(json_array_get(row, k), 1));
            assert_true(key <= i);
            assert_float_equal(w, p[i * T + key], 1e-4);
            assert_true(w <= last);
            last = w;
        }
        size_t above = 0; /* no weight outside the three is larger than the third */
        for (size_t jj = 0; jj <= i; jj++) above += p[i * T + jj] > last + 1e-4;
        assert_true(above < 3);
    }
    json_decref(j);
    const char *small[] = {"attn_L0_H0.png", "attn_L2.png", "heads.png"};
    for (size_t i = 0; i < 3; i++) {
        int w, h, n;
        snprintf(path, sizeof path, "%s/%s", dir, small[i]);
        unsigned char *img = stbi_load(path, &w, &h, &n, 3);
        assert_non_null(img);
        if (w > 1400 || h > 1400) fail_msg("%s is %d x %d", small[i], w, h);
        stbi_image_free(img);
    }
    size_t len, lines = 0;
    char *heads = read_output(dir, "heads.txt", &len);
    for (const char *c = heads; (c = strstr(c, "\n  H")); c++) lines++;
    assert_int_equal(lines, 4 * L * H); /* the maps' statistics, and each of attention's three tables */
    free(heads);
    char *said = printed_summary(&in, &ind, &tok);
    assert_true(has_line(said, "maps: 36 heads; per layer"));
    assert_true(has_line(said, "  L2 qk_form (means of 12 rows): similarity_logit_corr"));
    assert_true(has_line(said, "most weight on the previous token: L"));
    assert_false(has_line(said, "layer 0 attention"));
    const char *top = strstr(said, "top heads (a uniform head scores");
    assert_non_null(top);
    size_t listed = 0;
    for (const char *c = top; (c = strstr(c, " H")) && c < strchr(top, '\n'); c++) listed++;
    assert_int_equal(listed, 10);
    free(said);
    const char *files[] = {"heads.png", "heads.txt", "attribution.png", "lens.txt", "tokens.txt", "inspect.json", "inspect.html"};
    for (size_t l = 0; l < L; l++) {
        snprintf(path, sizeof path, "%s/attn_L%zu.png", dir, l);
        assert_int_equal(unlink(path), 0);
        for (size_t h = 0; h < H; h++) {
            snprintf(path, sizeof path, "%s/attn_L%zu_H%zu.png", dir, l, h);
            assert_int_equal(unlink(path), 0);
        }
    }
    remove_outputs(dir, files, sizeof files / sizeof *files);
    free(tokens);
    inspect_free(&in);
    induction_free(&ind);
    tokenizer_free(&tok);
    model_free(&m);
}

static int file_exists(const char *dir, const char *name) {
    char path[256];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return stat(path, &st) == 0 && st.st_size > 0;
}

/* inspect_write makes the directory (and its parents), every picture decodes,
 * and the JSON parses and holds what was measured. */
static void test_write_outputs(void **s) {
    (void)s;
    Model m;
    Error err;
    Tokenizer tok;
    size_t T = 7;
    char_model(&m, &tok, "abcdefgh", "attention,grassmann", 16, 2, 2, 16);
    int32_t tokens[7] = {1, 2, 3, 1, 2, 3, 4};
    Inspection in;
    Induction ind;
    assert_int_equal(inspect_induction(&ind, &m, 4, 2, 1, &err), 0);
    assert_int_equal(inspect_run(&in, &m, tokens, T, &err), 0);
    char base[] = "/tmp/lm_inspect_XXXXXX", dir[128], path[256];
    assert_non_null(mkdtemp(base));
    snprintf(dir, sizeof dir, "%s/new/deeper", base);
    assert_int_equal(inspect_write(dir, &in, &ind, &tok, "abcabcd", &err), 0);
    const char *files[] = {"attn_L0_H0.png", "attn_L0_H1.png", "attn_L0.png", "heads.png", "heads.txt", "gates.png",
                           "offset_norms.png", "attribution.png", "lens.txt", "tokens.txt", "inspect.json", "inspect.html"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++)
        if (!file_exists(dir, files[i])) fail_msg("%s missing", files[i]);
    int w, h, n;
    snprintf(path, sizeof path, "%s/attn_L0_H0.png", dir);
    unsigned char *img = stbi_load(path, &w, &h, &n, 3);
    assert_non_null(img);
    stbi_image_free(img);
    json_t *j = read_inspect_json(dir);
    const json_t *layers = json_object_get(j, "layers");
    assert_int_equal(json_array_size(layers), 2);
    /* Every exhibit as the layer showed it, in its order, by its kind. */
    for (size_t l = 0; l < 2; l++) {
        const json_t *ex = json_object_get(json_array_get(layers, l), "exhibits");
        assert_int_equal(json_array_size(ex), in.layer[l].n_exhibits);
        for (size_t i = 0; i < in.layer[l].n_exhibits; i++) {
            const Exhibit *e = &in.layer[l].exhibits[i];
            const json_t *o = json_array_get(ex, i);
            assert_string_equal(json_string_value(json_object_get(o, "name")), e->name);
            assert_string_equal(json_string_value(json_object_get(o, "kind")), exhibit_kind_name(e->kind));
            assert_string_equal(json_string_value(json_object_get(o, "caption")), e->caption);
            if (e->kind == EXHIBIT_SCALAR) {
                double v = json_number_value(json_object_get(o, "value")); /* written with 6 digits */
                assert_float_equal(v, e->values[0], 1e-5 * fabs(e->values[0]) + 1e-30);
                continue;
            }
            assert_int_equal(json_array_size(json_object_get(o, "rows")), e->rows);
            assert_string_equal(json_string_value(json_array_get(json_object_get(o, "rows"), e->rows - 1)),
                                e->row_names[e->rows - 1]);
            if (e->kind == EXHIBIT_MAPS) continue;
            const json_t *values = json_object_get(o, "values");
            assert_int_equal(json_array_size(values), e->rows);
            for (size_t r = 0; r < e->rows; r++) {
                const json_t *row = json_array_get(values, r);
                assert_int_equal(json_array_size(row), e->cols);
                for (size_t c = 0; c < e->cols; c++) {
                    float v = e->values[r * e->cols + c];
                    if (isnan(v)) assert_true(json_is_null(json_array_get(row, c)));
                    else assert_float_equal(json_number_value(json_array_get(row, c)), v, 1e-5 * (1 + fabs(v)));
                }
            }
            if (e->kind == EXHIBIT_TABLE && e->col_names)
                assert_string_equal(json_string_value(json_array_get(json_object_get(o, "columns"), 0)), e->col_names[0]);
            if (e->kind == EXHIBIT_TABLE && !e->col_names) assert_true(json_is_null(json_object_get(o, "columns")));
        }
    }
    const json_t *maps = json_array_get(json_object_get(json_array_get(layers, 0), "exhibits"), 0);
    assert_string_equal(json_string_value(json_object_get(maps, "name")), "attn");
    assert_int_equal(json_array_size(json_object_get(maps, "stats")), 2);
    assert_float_equal(json_number_value(json_object_get(json_array_get(json_object_get(maps, "stats"), 1), "entropy")),
                       in.map_stats[0][1].entropy, 1e-5);
    assert_float_equal(json_number_value(json_object_get(json_array_get(json_object_get(maps, "stats"), 1), "induction")),
                       ind.score[1], 1e-5);
    assert_int_equal(json_array_size(json_array_get(json_object_get(maps, "maps"), 0)), T);
    assert_string_equal(json_string_value(json_object_get(j, "prompt")), "abcabcd");
    assert_int_equal(json_array_size(json_object_get(j, "logit_lens")), 3);
    assert_non_null(json_object_get(json_object_get(j, "induction"), "loss_second_copy"));
    json_decref(j);
    /* The page: the template with the data in its script tag, nothing loaded from elsewhere. */
    size_t len;
    char *page = read_output(dir, "inspect.html", &len);
    assert_non_null(strstr(page, "<script type=\"application/json\" id=\"inspect-data\">{\"T\":7,"));
    assert_null(strstr(page, "@INSPECT_DATA@"));
    assert_null(strstr(page, "src="));
    free(page);
    /* A path through a file: one clear error. */
    snprintf(path, sizeof path, "%s/inspect.json/x", dir);
    assert_int_equal(inspect_write(path, &in, &ind, &tok, "abcabcd", &err), -1);
    assert_non_null(strstr(err.msg, "not a directory"));
    remove_outputs(dir, files, sizeof files / sizeof *files);
    snprintf(path, sizeof path, "%s/new", base);
    rmdir(path);
    rmdir(base);
    inspect_free(&in);
    induction_free(&ind);
    tokenizer_free(&tok);
    model_free(&m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_equal_logits_entropy),
        cmocka_unit_test(test_identity_form_correlates),
        cmocka_unit_test(test_singular_values),
        cmocka_unit_test(test_form_spectrum_matches_full),
        cmocka_unit_test(test_query_key_angles),
        cmocka_unit_test(test_maps_match_direct),
        cmocka_unit_test(test_plucker_residual),
        cmocka_unit_test(test_grassmann_layer),
        cmocka_unit_test(test_attribution_and_lens),
        cmocka_unit_test(test_gla_exhibits),
        cmocka_unit_test(test_mixer_without_hook),
        cmocka_unit_test(test_induction_circuit),
        cmocka_unit_test(test_induction_random),
        cmocka_unit_test(test_heatmap_png),
        cmocka_unit_test(test_heatmap_grid),
        cmocka_unit_test(test_token_labels),
        cmocka_unit_test(test_long_prompt_many_heads),
        cmocka_unit_test(test_write_outputs),
    };
    return cmocka_run_group_tests_name("inspect", tests, NULL, NULL);
}
