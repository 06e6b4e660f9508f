#include "mixers/grassmann.h"
#include "mixers/grassmann_loops.h"

#include <stdio.h>
#include <string.h>

#include "runtime/registry.h"
#include "lm/cpu.h"
#include "lm/json.h"
#include "lm/options.h"
#include "nn/layernorm.h"
#include "lm/matmul.h"
#include "lm/ops.h"

/* Forward keeps z, qbar, g, the gate a, m and the LayerNorm statistics;
 * backward uses the d* regions, u and coef as scratch. */
typedef struct GrActs {
    float *z, *qbar, *g, *a, *m, *mean, *rstd;
    float *dm, *dg, *dapre, *dqbar, *dz, *u, *coef;
} GrActs;

/* F, the features of each position: the layer's map of rank r. */
static size_t n_features(const MixerSpec *spec) {
    return grassmann_n_features(grassmann_layer(spec)->pair, grassmann_layer(spec)->rank);
}

static const GrassmannMapLoops *map_loops(const MixerSpec *spec) { return &grassmann_loops()->map[grassmann_layer(spec)->pair]; }

static size_t coef_size(const MixerSpec *spec, size_t N) { return N * (grassmann_layer(spec)->n_windows * GRASSMANN_COEF_PER_OFFSET + 1); }

GrParams gr_params(const float *p, const MixerSpec *spec) {
    size_t C = spec->n_embd, r = grassmann_layer(spec)->rank, P = n_features(spec);
    GrParams g;
    g.red_w = p;
    g.red_b = g.red_w + r * C;
    g.plu_w = g.red_b + r;
    g.plu_b = g.plu_w + C * P;
    g.gate_w = g.plu_b + C;
    g.gate_b = g.gate_w + 2 * C * C;
    g.ln_w = g.gate_b + C;
    g.ln_b = g.ln_w + C;
    return g;
}

/* With base == NULL it only measures (the activation size). */
static size_t gr_layout(float *base, const MixerSpec *spec, size_t N, GrActs *a) {
    size_t C = spec->n_embd, r = grassmann_layer(spec)->rank, P = n_features(spec), used = 0;
#define TAKE(field, count) (a->field = base ? base + used : NULL, used += (count))
    TAKE(z, N * r);
    TAKE(qbar, N * P);
    TAKE(g, N * C);
    TAKE(a, N * C);
    TAKE(m, N * C);
    TAKE(mean, N);
    TAKE(rstd, N);
    TAKE(dm, N * C);
    TAKE(dg, N * C);
    TAKE(dapre, N * C);
    TAKE(dqbar, N * P);
    TAKE(dz, N * r);
    TAKE(u, N * r);
    TAKE(coef, coef_size(spec, N));
#undef TAKE
    return used;
}

static GrActs gr_acts(float *acts, const MixerSpec *spec, size_t N) {
    GrActs a;
    gr_layout(acts, spec, N, &a);
    return a;
}

static int grassmann_validate(const MixerSpec *spec, Error *err) {
    if (grassmann_layer(spec)->rank < 2) return err_set(err, "grassmann rank must be at least 2 (got %zu)", grassmann_layer(spec)->rank);
    if (grassmann_layer(spec)->rank > GRASSMANN_MAX_RANK)
        return err_set(err, "grassmann rank %zu is too large (max %d)", grassmann_layer(spec)->rank, GRASSMANN_MAX_RANK);
    if (grassmann_layer(spec)->n_windows == 0) return err_set(err, "grassmann window list is empty");
    for (size_t i = 0; i < grassmann_layer(spec)->n_windows; i++)
        if (grassmann_layer(spec)->windows[i] == 0 || grassmann_layer(spec)->windows[i] >= spec->block_size)
            return err_set(err, "grassmann window offset %zu must be between 1 and block_size - 1 (%zu)",
                           grassmann_layer(spec)->windows[i], spec->block_size - 1);
    return 0;
}

static size_t grassmann_tensors(const MixerSpec *spec, TensorSpec *out) {
    size_t C = spec->n_embd, r = grassmann_layer(spec)->rank, P = n_features(spec);
    out[0] = (TensorSpec){"grassmann.red.weight", r, C, INIT_NORMAL, 0};
    out[1] = (TensorSpec){"grassmann.red.bias", r, 0, INIT_ZERO, 0};
    out[2] = (TensorSpec){"grassmann.plu.weight", C, P, INIT_NORMAL, 0};
    out[3] = (TensorSpec){"grassmann.plu.bias", C, 0, INIT_ZERO, 0};
    out[4] = (TensorSpec){"grassmann.gate.weight", C, 2 * C, INIT_NORMAL, 0};
    out[5] = (TensorSpec){"grassmann.gate.bias", C, 0, INIT_ZERO, 0};
    /* The layer has no output projection, so zero_init leaves it as it is.
     * Its last map onto the stream is this LayerNorm's gain, but a zero gain
     * also zeroes the gradient of every weight before it, and a gain leaves
     * zero only at AdamW's pace: under the modern recipe the layers stayed
     * shut (docs/compare.md, "the zero start"). */
    out[6] = (TensorSpec){"grassmann.ln.weight", C, 0, INIT_ONE, 0};
    out[7] = (TensorSpec){"grassmann.ln.bias", C, 0, INIT_ZERO, 0};
    return 8;
}

static size_t grassmann_act_size(const MixerSpec *spec, size_t B, size_t T) {
    GrActs unused;
    return gr_layout(NULL, spec, B * T, &unused);
}

/* ---- the mixing (mixers/grassmann_kernel.h, at this run's level) ---- */

const GrassmannLoops *grassmann_loops(void) {
    static const GrassmannLoops *const by_level[CPU_ISA_COUNT] = CPU_ISA_BY_LEVEL(grassmann_loops);
    return by_level[cpu_isa()];
}

void grassmann_wedge(float *p, const float *a, const float *b, size_t r) { grassmann_loops()->wedge(p, a, b, r); }

void grassmann_pair_forward(float *qbar, const float *zc, const float *zp, float scale, float eps, size_t r) {
    grassmann_loops()->pair_forward(qbar, zc, zp, scale, eps, r);
}

void grassmann_mix_forward(GrassmannPair pair, float *qbar, const float *z, const size_t *windows, size_t n_windows,
                           uint32_t muted, size_t B, size_t T, size_t r, float eps) {
    grassmann_loops()->map[pair].mix_forward(qbar, z, windows, n_windows, muted, B, T, r, eps);
}

void grassmann_mix_backward(GrassmannPair pair, float *dz, float *u, float *coef, const float *dqbar, const float *z,
                            const size_t *windows, size_t n_windows, size_t B, size_t T, size_t r, float eps) {
    grassmann_loops()->map[pair].mix_backward(dz, u, coef, dqbar, z, windows, n_windows, B, T, r, eps);
}

void grassmann_gate_forward(float *m, float *a, const float *x, const float *g, size_t n) {
    grassmann_loops()->gate_forward(m, a, x, g, n);
}

void grassmann_gate_backward(float *dx, float *dg, float *dapre, const float *dm, const float *a,
                             const float *x, const float *g, size_t n) {
    grassmann_loops()->gate_backward(dx, dg, dapre, dm, a, x, g, n);
}

/* ---- the layer ---------------------------------------------------------- */

static size_t min_window(const MixerSpec *spec) {
    size_t m = grassmann_layer(spec)->windows[0];
    for (size_t w = 1; w < grassmann_layer(spec)->n_windows; w++) m = grassmann_layer(spec)->windows[w] < m ? grassmann_layer(spec)->windows[w] : m;
    return m;
}

/* The gate's weight is [W_x | W_g], (C, 2C): its two column blocks, row
 * stride 2C, multiply x and g without building [x ; g]. */
static const float *gate_w_x(GrParams p) { return p.gate_w; }
static const float *gate_w_g(GrParams p, size_t C) { return p.gate_w + C; }

/* out = in . w^T (+ bias; or added to out), w's rows ldw apart: the batched
 * forward's product, or the sampling step's (step: lm/matmul.h's matmul_step). */
static void gr_product(const MixerRuntime *rt, int step, float *out, const float *in, const float *w, size_t ldw,
                       const float *bias, size_t N, size_t in_dim, size_t out_dim, int accumulate) {
    if (step) matmul_step(rt->bf16, rt->decode, out, in, w, ldw, bias, N, in_dim, out_dim, accumulate);
    else if (accumulate) matmul_add_strided(rt->bf16, out, in, w, ldw, N, in_dim, out_dim);
    else matmul_forward_strided(rt->bf16, out, in, w, ldw, bias, N, in_dim, out_dim);
}

/* From qbar to the output, for N rows whose positions are t0, t0+1, ... mod T:
 * shared by the batched forward and the one-position sampling step (step). */
static void gr_tail_forward(const MixerSpec *spec, const MixerRuntime *rt, GrParams p, GrActs a, float *out, const float *x,
                            size_t N, size_t T, size_t t0, int step) {
    size_t C = spec->n_embd, P = n_features(spec), dmin = min_window(spec);
    gr_product(rt, step, a.g, a.qbar, p.plu_w, P, p.plu_b, N, P, C, 0);
#pragma omp parallel for schedule(static)
    for (size_t n = 0; n < N; n++)
        if ((t0 + n) % T < dmin) memset(a.g + n * C, 0, C * sizeof(float)); /* no offset fits: g = 0 */
    gr_product(rt, step, a.a, x, gate_w_x(p), 2 * C, p.gate_b, N, C, C, 0);
    gr_product(rt, step, a.a, a.g, gate_w_g(p, C), 2 * C, NULL, N, C, C, 1);
    grassmann_gate_forward(a.m, a.a, x, a.g, N * C);
    layernorm_forward(out, a.mean, a.rstd, a.m, p.ln_w, p.ln_b, N, C);
}

static void grassmann_forward(const MixerSpec *spec, const MixerRuntime *rt, const float *params, float *acts,
                              float *out, const float *in, size_t B, size_t T) {
    size_t N = B * T, C = spec->n_embd, r = grassmann_layer(spec)->rank;
    GrParams p = gr_params(params, spec);
    GrActs a = gr_acts(acts, spec, N);
    matmul_forward(rt->bf16, a.z, in, p.red_w, p.red_b, N, C, r);
    grassmann_mix_forward(grassmann_layer(spec)->pair, a.qbar, a.z, grassmann_layer(spec)->windows, grassmann_layer(spec)->n_windows, spec->muted, B, T, r, GRASSMANN_EPS);
    gr_tail_forward(spec, rt, p, a, out, in, N, T, 0, 0);
}

static void grassmann_backward(const MixerSpec *spec, const MixerRuntime *rt, const float *params, float *dparams,
                               float *acts, const float *in, const float *dout, float *din,
                               size_t B, size_t T) {
    size_t N = B * T, C = spec->n_embd, r = grassmann_layer(spec)->rank, P = n_features(spec), dmin = min_window(spec);
    GrParams p = gr_params(params, spec);
    GrParams g = gr_params(dparams, spec);
    GrActs a = gr_acts(acts, spec, N);
    memset(a.dm, 0, N * C * sizeof(float));
    layernorm_backward(a.dm, (float *)g.ln_w, (float *)g.ln_b, dout, a.m, p.ln_w, a.mean, a.rstd, N, C);
    grassmann_gate_backward(din, a.dg, a.dapre, a.dm, a.a, in, a.g, N * C);
    /* apre = x W_x^T + g W_g^T + b: both column blocks of the gate weight. */
    matmul_backward_strided(rt->bf16, din, 1.0f, (float *)gate_w_x(g), 2 * C, (float *)g.gate_b, a.dapre, in,
                            gate_w_x(p), N, C, C);
    matmul_backward_strided(rt->bf16, a.dg, 1.0f, (float *)gate_w_g(g, C), 2 * C, NULL, a.dapre, a.g,
                            gate_w_g(p, C), N, C, C);
#pragma omp parallel for schedule(static)
    for (size_t n = 0; n < N; n++)
        if (n % T < dmin) memset(a.dg + n * C, 0, C * sizeof(float)); /* g was held at 0 there */
    matmul_backward(rt->bf16, a.dqbar, 0.0f, (float *)g.plu_w, (float *)g.plu_b, a.dg, a.qbar, p.plu_w, N, P, C);
    grassmann_mix_backward(grassmann_layer(spec)->pair, a.dz, a.u, a.coef, a.dqbar, a.z, grassmann_layer(spec)->windows, grassmann_layer(spec)->n_windows, B, T, r, GRASSMANN_EPS);
    matmul_backward(rt->bf16, din, 1.0f, (float *)g.red_w, (float *)g.red_b, a.dz, in, p.red_w, N, C, r);
}

/* Sampling state: a ring of the last max(D) + 1 reduced vectors, then one
 * position's worth of the forward activations. Constant in the text length. */
static size_t ring_len(const MixerSpec *spec) {
    size_t m = 0;
    for (size_t w = 0; w < grassmann_layer(spec)->n_windows; w++) m = grassmann_layer(spec)->windows[w] > m ? grassmann_layer(spec)->windows[w] : m;
    return m + 1;
}

static size_t grassmann_state_size(const MixerSpec *spec) {
    return ring_len(spec) * grassmann_layer(spec)->rank + grassmann_act_size(spec, 1, 1);
}

static void grassmann_step(const MixerSpec *spec, const MixerRuntime *rt, const float *params, float *state,
                           const float *in_t, float *out_t, size_t t) {
    size_t C = spec->n_embd, r = grassmann_layer(spec)->rank, R = ring_len(spec);
    GrParams p = gr_params(params, spec);
    float *ring = state;
    GrActs a = gr_acts(state + R * r, spec, 1);
    float *zt = ring + (t % R) * r;
    matmul_step(rt->bf16, rt->decode, zt, in_t, p.red_w, C, p.red_b, 1, C, r, 0);
    const float *past[GRASSMANN_MAX_WINDOWS];
    for (size_t k = 0; k < grassmann_layer(spec)->n_windows; k++)
        past[k] = grassmann_layer(spec)->windows[k] <= t ? ring + ((t - grassmann_layer(spec)->windows[k]) % R) * r : NULL;
    map_loops(spec)->mix_row(a.qbar, zt, past, grassmann_layer(spec)->windows, grassmann_layer(spec)->n_windows, spec->muted, t,
                               GRASSMANN_EPS, r);
    /* One row at position t: "T" is taken past any t so that t0 = t is used as is. */
    gr_tail_forward(spec, rt, p, a, out_t, in_t, 1, (size_t)-1, t, 1);
}

/* The ring from forward's z: the last ring_len positions of the T, each in its slot. */
static void grassmann_fill_state(const MixerSpec *spec, const float *acts, size_t T, float *state) {
    size_t r = grassmann_layer(spec)->rank, R = ring_len(spec), from = T > R ? T - R : 0;
    GrActs a = gr_acts((float *)acts, spec, T);
    for (size_t t = from; t < T; t++) memcpy(state + (t % R) * r, a.z + t * r, r * sizeof(float));
}

/* Forward: one wedge of P coordinates at 2 FLOPs each and, per offset, three
 * dot products and an axpy over r; backward twice the forward. The outer
 * map: r^2 products and two dot products and an axpy per offset; the sum:
 * an axpy per offset. */
static double grassmann_flops(const MixerSpec *spec, size_t T) {
    (void)T;
    double r = (double)grassmann_layer(spec)->rank, nw = (double)grassmann_layer(spec)->n_windows;
    switch (grassmann_layer(spec)->pair) {
    case GRASSMANN_PAIR_OUTER: return 3.0 * (r * r + 6.0 * r * nw);
    case GRASSMANN_PAIR_SUM: return 3.0 * (2.0 * r * nw + 2.0 * r);
    default: return 3.0 * (2.0 * (double)grassmann_n_pairs(grassmann_layer(spec)->rank) + 8.0 * r * nw);
    }
}

/* ---- its settings ------------------------------------------------------- */

_Static_assert(sizeof(GrassmannSettings) <= MIXER_SETTINGS_BYTES, "the settings fit the config's block");
_Static_assert(sizeof(GrassmannLayer) <= MIXER_LAYER_BYTES, "a layer's settings fit its spec");

/* The largest window offset a list may name: the config's largest block. */
#define MAX_OFFSET 16384


size_t grassmann_layer_windows(const GrassmannSettings *g, size_t l, size_t *out) {
    uint32_t mask = g->layer_windows[l];
    size_t n = 0;
    for (size_t k = 0; k < g->n_windows; k++)
        if (!mask || mask >> k & 1u) out[n++] = g->windows[k];
    return n;
}

/* Parses one comma list of offsets into out (at most GRASSMANN_MAX_WINDOWS). */
static int parse_window_list(const char *list, const char *spec, size_t *out, size_t *n_out, Error *err) {
    size_t n = 0;
    char num[32];
    for (const char *s = list; s;) {
        if (list_next_item(&s, num, sizeof num, ',')) return err_set(err, "bad grassmann window list '%s'", spec);
        if (n == GRASSMANN_MAX_WINDOWS)
            return err_set(err, "grassmann window list has more than %d offsets", GRASSMANN_MAX_WINDOWS);
        if (parse_size(num, MAX_OFFSET, &out[n], "grassmann window offset", err)) return -1;
        if (out[n] == 0) return err_set(err, "grassmann window offset must be positive (got 0)");
        for (size_t k = 0; k < n; k++)
            if (out[k] == out[n]) return err_set(err, "grassmann window list '%s' lists %zu twice", list, out[n]);
        n++;
    }
    *n_out = n;
    return 0;
}

int grassmann_set_windows(GrassmannSettings *g, size_t n_layer, const char *spec, Error *err) {
    if (!*spec) return err_set(err, "grassmann window list is empty");
    if (!strchr(spec, ';')) {
        memset(g->layer_windows, 0, sizeof g->layer_windows);
        return parse_window_list(spec, spec, g->windows, &g->n_windows, err);
    }
    /* A schedule: the union of the layers' offsets in order of first use,
     * and each layer's selection of it. */
    size_t n_layers = 0, n_union = 0, all[GRASSMANN_MAX_WINDOWS];
    uint32_t masks[MIXER_MAX_LAYERS];
    char list[512];
    for (const char *s = spec; s;) {
        if (list_next_item(&s, list, sizeof list, ';')) return err_set(err, "bad grassmann window schedule '%s'", spec);
        if (n_layers == n_layer || n_layers == MIXER_MAX_LAYERS)
            return err_set(err, "grassmann window schedule '%s' has more than n_layer (%zu) lists", spec, n_layer);
        size_t mine[GRASSMANN_MAX_WINDOWS], n;
        if (parse_window_list(list, spec, mine, &n, err)) return -1;
        uint32_t mask = 0;
        for (size_t i = 0; i < n; i++) {
            size_t k = 0;
            while (k < n_union && all[k] != mine[i]) k++;
            if (k == n_union) {
                if (n_union == GRASSMANN_MAX_WINDOWS)
                    return err_set(err, "grassmann window schedule uses more than %d distinct offsets",
                                   GRASSMANN_MAX_WINDOWS);
                all[n_union++] = mine[i];
            }
            mask |= 1u << k;
        }
        masks[n_layers++] = mask;
    }
    if (n_layers != n_layer)
        return err_set(err, "grassmann window schedule '%s' has %zu lists but n_layer is %zu", spec, n_layers, n_layer);
    /* A layer that uses every offset, in order, is stored as 0 (all), so
     * one list repeated for every layer reads back as that one list. */
    memset(g->layer_windows, 0, sizeof g->layer_windows);
    uint32_t full = n_union == 32 ? 0xffffffffu : (1u << n_union) - 1u;
    for (size_t l = 0; l < n_layers; l++) g->layer_windows[l] = masks[l] == full ? 0 : masks[l];
    memcpy(g->windows, all, n_union * sizeof all[0]);
    g->n_windows = n_union;
    return 0;
}

static int windows_uniform(const GrassmannSettings *g, size_t n_layer) {
    for (size_t l = 0; l < n_layer; l++)
        if (g->layer_windows[l]) return 0;
    return 1;
}

static void append_offsets(char *buf, size_t len, const size_t *windows, size_t n) {
    for (size_t w = 0; w < n; w++) snprintf(buf + strlen(buf), len - strlen(buf), "%s%zu", w ? "," : "", windows[w]);
}

const char *grassmann_window_list(const GrassmannSettings *g, size_t n_layer, char *buf, size_t len) {
    buf[0] = '\0';
    if (windows_uniform(g, n_layer)) {
        append_offsets(buf, len, g->windows, g->n_windows);
        return buf;
    }
    for (size_t l = 0; l < n_layer; l++) {
        size_t windows[GRASSMANN_MAX_WINDOWS], n = grassmann_layer_windows(g, l, windows);
        if (l) snprintf(buf + strlen(buf), len - strlen(buf), ";");
        append_offsets(buf, len, windows, n);
    }
    return buf;
}

static int windows_set(void *settings, size_t n_layer, const char *text, Error *err) {
    return grassmann_set_windows(settings, n_layer, text, err);
}

static const char *windows_get(const void *settings, size_t n_layer, char *buf, size_t len) {
    return grassmann_window_list(settings, n_layer, buf, len);
}

/* "grassmann_windows": one list for every layer, or a schedule: one list per layer. */
static void windows_to_json(const void *settings, size_t n_layer, char **sb) {
    const GrassmannSettings *g = settings;
    int uniform = windows_uniform(g, n_layer);
    sb_appendf(sb, "[");
    for (size_t l = 0; l < (uniform ? 1 : n_layer); l++) {
        size_t windows[GRASSMANN_MAX_WINDOWS], n = grassmann_layer_windows(g, l, windows);
        sb_appendf(sb, "%s%s", l ? "," : "", uniform ? "" : "[");
        for (size_t w = 0; w < n; w++) sb_appendf(sb, "%s%zu", w ? "," : "", windows[w]);
        if (!uniform) sb_appendf(sb, "]");
    }
    sb_appendf(sb, "]");
}

/* A list of offsets, or one such list per layer (a schedule), rebuilt
 * through grassmann_set_windows's own form. */
static int windows_from_json(void *settings, size_t n_layer, const struct json_t *windows, Error *err) {
    const char *bad = "config: 'grassmann_windows' must be a list of offsets or one list per layer";
    if (!json_is_array(windows) || json_array_size(windows) == 0 ||
        json_array_size(windows) > MIXER_MAX_LAYERS * GRASSMANN_MAX_WINDOWS)
        return err_set(err, "%s", bad);
    int schedule = json_is_array(json_array_get(windows, 0));
    char *spec = NULL;
    size_t n = json_array_size(windows), off;
    for (size_t i = 0; i < n; i++) {
        const json_t *item = json_array_get(windows, i);
        if (schedule != json_is_array(item)) goto fail;
        if (i) sb_appendf(&spec, "%s", schedule ? ";" : ",");
        for (size_t w = 0; w < (schedule ? json_array_size(item) : 1); w++) {
            if (json_size(schedule ? json_array_get(item, w) : item, MAX_OFFSET, &off)) goto fail;
            sb_appendf(&spec, "%s%zu", w ? "," : "", off);
        }
    }
    /* A one-layer schedule has no ';': it is that layer's list. */
    int rc = grassmann_set_windows(settings, n_layer, spec ? spec : "", err);
    sb_free(&spec);
    return rc;
fail:
    sb_free(&spec);
    return err_set(err, "%s", bad);
}

static const char *const PAIR_NAMES[GRASSMANN_PAIR_COUNT] = {"wedge", "outer", "sum"};

static int pair_set(void *settings, size_t n_layer, const char *text, Error *err) {
    (void)n_layer;
    for (size_t k = 0; k < GRASSMANN_PAIR_COUNT; k++)
        if (!strcmp(text, PAIR_NAMES[k])) {
            ((GrassmannSettings *)settings)->pair = (GrassmannPair)k;
            return 0;
        }
    return err_set(err, "grassmann pair map must be wedge, outer or sum (got '%s')", text);
}

static const char *pair_get(const void *settings, size_t n_layer, char *buf, size_t len) {
    (void)n_layer;
    snprintf(buf, len, "%s", PAIR_NAMES[((const GrassmannSettings *)settings)->pair]);
    return buf;
}

static void pair_to_json(const void *settings, size_t n_layer, char **sb) {
    (void)n_layer;
    sb_appendf(sb, "\"%s\"", PAIR_NAMES[((const GrassmannSettings *)settings)->pair]);
}

static int pair_from_json(void *settings, size_t n_layer, const struct json_t *value, Error *err) {
    if (!json_is_string(value)) return err_set(err, "config: 'grassmann_pair' must be \"wedge\", \"outer\" or \"sum\"");
    return pair_set(settings, n_layer, json_string_value(value), err);
}

static const MixerOption grassmann_options[] = {
    {.name = "grassmann-rank", .json_key = "grassmann_rank", .kind = MIXER_OPT_SIZE, .value = "N",
     .help = "Grassmann reduced rank r (32)", .offset = offsetof(GrassmannSettings, rank), .lo = 0, .hi = 1024,
     .def = 32},
    {.name = "grassmann-windows", .json_key = "grassmann_windows", .kind = MIXER_OPT_TEXT, .value = "L",
     .help = "Grassmann window offsets for every layer (1,2,4,8,12,16),\nor one list per layer separated by ';'\n"
             "(\"1;1;2;2;4;4\")",
     .def_text = "1,2,4,8,12,16", .set = windows_set, .get = windows_get, .to_json = windows_to_json,
     .from_json = windows_from_json},
    {.name = "grassmann-pair", .json_key = "grassmann_pair", .kind = MIXER_OPT_TEXT, .value = "MAP",
     .help = "the map of each pair (z_t, z_t-d), a control for the geometry (wedge):\n"
             "wedge (the normalised Plücker coordinates, r(r-1)/2 features),\n"
             "outer (the normalised outer product, r^2), sum (z_t + z_t-d, r)",
     .def_text = "wedge", .omit_default = 1, .set = pair_set, .get = pair_get, .to_json = pair_to_json,
     .from_json = pair_from_json},
};

static void grassmann_layer_spec(const void *settings, size_t l, MixerSpec *spec) {
    const GrassmannSettings *g = settings;
    GrassmannLayer *gl = (GrassmannLayer *)(void *)spec->own.bytes;
    gl->rank = g->rank;
    gl->pair = g->pair;
    gl->n_windows = grassmann_layer_windows(g, l, gl->windows);
}

static void grassmann_describe(const void *settings, size_t n_layer, char *buf, size_t len) {
    const GrassmannSettings *g = settings;
    char windows[1024];
    snprintf(buf, len, "grassmann r %zu, windows %s%s%s", g->rank, grassmann_window_list(settings, n_layer, windows, sizeof windows),
             g->pair == GRASSMANN_PAIR_WEDGE ? "" : ", pair map ", g->pair == GRASSMANN_PAIR_WEDGE ? "" : PAIR_NAMES[g->pair]);
}

/* Bit k of MixerSpec.muted: windows[k]'s term is left out of the mean (its
 * share of 1/count stays). */
static int grassmann_mute_offset(const MixerSpec *spec, size_t layer, size_t offset, Error *err) {
    const GrassmannLayer *gl = grassmann_layer(spec);
    for (size_t k = 0; k < gl->n_windows; k++)
        if (gl->windows[k] == offset) return (int)k;
    return err_set(err, "Grassmann layer %zu has no window offset %zu", layer, offset);
}

const Mixer grassmann_mixer = {
    .name = "grassmann",
    .options = grassmann_options,
    .n_options = sizeof grassmann_options / sizeof grassmann_options[0],
    .layer_spec = grassmann_layer_spec,
    .describe = grassmann_describe,
    .mute_offset = grassmann_mute_offset,
    .validate = grassmann_validate,
    .tensors = grassmann_tensors,
    .act_size = grassmann_act_size,
    .forward = grassmann_forward,
    .backward = grassmann_backward,
    .state_size = grassmann_state_size,
    .step = grassmann_step,
    .fill_state = grassmann_fill_state,
    .flops = grassmann_flops,
    .inspect = grassmann_inspect,
};
