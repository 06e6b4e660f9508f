/* The Grassmann mixer's settings: its options (rank, the window offsets,
 * per layer or for all, and the pair map), how they read from the command
 * line and the config's JSON, and what each layer's spec takes of them. The
 * mixing itself is mixers/grassmann.c. */
#include "mixers/grassmann.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lm/json.h"
#include "lm/options.h"
#include "runtime/registry.h"

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

const OptionRow grassmann_options[GRASSMANN_N_OPTIONS] = {
    {.name = "grassmann-rank", .json_key = "grassmann_rank", .kind = OPT_SIZE, .value = "N",
     .help = "Grassmann reduced rank r (32)", .offset = offsetof(GrassmannSettings, rank), .lo = 0, .hi = 1024,
     .def = 32, .arch_key = "rank", .size_knob = 1},
    {.name = "grassmann-windows", .json_key = "grassmann_windows", .kind = OPT_TEXT, .value = "L",
     .help = "Grassmann window offsets for every layer (1,2,4,8,12,16),\nor one list per layer separated by ';'\n"
             "(\"1;1;2;2;4;4\")",
     .def_text = "1,2,4,8,12,16", .set = windows_set, .get = windows_get, .to_json = windows_to_json,
     .from_json = windows_from_json},
    {.name = "grassmann-pair", .json_key = "grassmann_pair", .kind = OPT_TEXT, .value = "MAP",
     .help = "the map of each pair (z_t, z_t-d), a control for the geometry (wedge):\n"
             "wedge (the normalised Plücker coordinates, r(r-1)/2 features),\n"
             "outer (the normalised outer product, r^2), sum (z_t + z_t-d, r)",
     .def_text = "wedge", .omit_default = 1, .set = pair_set, .get = pair_get, .to_json = pair_to_json,
     .from_json = pair_from_json, .arch_key = "pair"},
};

void grassmann_layer_spec(const void *settings, size_t l, MixerSpec *spec) {
    const GrassmannSettings *g = settings;
    GrassmannLayer *gl = (GrassmannLayer *)(void *)spec->own.bytes;
    gl->rank = g->rank;
    gl->pair = g->pair;
    gl->n_windows = grassmann_layer_windows(g, l, gl->windows);
}

void grassmann_describe(const void *settings, size_t n_layer, char *buf, size_t len) {
    const GrassmannSettings *g = settings;
    char windows[1024];
    snprintf(buf, len, "grassmann r %zu, windows %s%s%s", g->rank, grassmann_window_list(settings, n_layer, windows, sizeof windows),
             g->pair == GRASSMANN_PAIR_WEDGE ? "" : ", pair map ", g->pair == GRASSMANN_PAIR_WEDGE ? "" : PAIR_NAMES[g->pair]);
}

