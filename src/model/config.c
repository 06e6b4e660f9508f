#include "model/config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/options.h"
#include "io/json.h"
#include "mixers/mixer.h"

/* Upper bounds that catch typos (an extra zero or three) before they turn
 * into a multi-gigabyte allocation. */
#define MAX_VOCAB (1u << 24)
#define MAX_BLOCK 16384
#define MAX_EMBD 8192
#define MAX_HEADS 256

void config_defaults(ModelConfig *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->block_size = 64;
    cfg->n_layer = 4;
    cfg->n_head = 4;
    cfg->n_embd = 128;
    cfg->pos = POS_LEARNED;
    const Mixer *attention = mixer_find("attention");
    for (size_t l = 0; l < MAX_LAYERS; l++) cfg->mixers[l] = attention;
    cfg->grassmann_rank = 32;
    static const size_t windows[] = {1, 2, 4, 8, 12, 16};
    cfg->n_windows = sizeof windows / sizeof windows[0];
    memcpy(cfg->windows, windows, sizeof windows);
    cfg->dropout = 0.0f;
}

int config_validate(const ModelConfig *cfg, Error *err) {
    if (cfg->vocab_size == 0 || cfg->vocab_size > MAX_VOCAB)
        return err_set(err, "vocab_size must be between 1 and %u (got %zu)", MAX_VOCAB, cfg->vocab_size);
    if (cfg->block_size < 2 || cfg->block_size > MAX_BLOCK)
        return err_set(err, "block_size must be between 2 and %d (got %zu)", MAX_BLOCK, cfg->block_size);
    if (cfg->n_layer == 0 || cfg->n_layer > MAX_LAYERS)
        return err_set(err, "n_layer must be between 1 and %d (got %zu)", MAX_LAYERS, cfg->n_layer);
    if (cfg->n_embd == 0 || cfg->n_embd > MAX_EMBD)
        return err_set(err, "n_embd must be between 1 and %d (got %zu)", MAX_EMBD, cfg->n_embd);
    if (cfg->n_head == 0 || cfg->n_head > MAX_HEADS)
        return err_set(err, "n_head must be between 1 and %d (got %zu)", MAX_HEADS, cfg->n_head);
    if (!(cfg->dropout >= 0.0f && cfg->dropout < 1.0f))
        return err_set(err, "dropout must be in [0, 1) (got %g)", cfg->dropout);
    for (size_t l = 0; l < cfg->n_layer; l++) {
        if (!cfg->mixers[l]) return err_set(err, "layer %zu has no mixer", l);
        if (cfg->mixers[l]->validate(cfg, err)) return -1;
    }
    return 0;
}

static const char *const POS_NAMES[] = {"learned", "sinusoidal", "rope"};

const char *pos_name(PosKind pos) { return POS_NAMES[pos]; }

int pos_parse(const char *name, PosKind *out) {
    for (size_t i = 0; i < sizeof POS_NAMES / sizeof POS_NAMES[0]; i++)
        if (strcmp(name, POS_NAMES[i]) == 0) {
            *out = (PosKind)i;
            return 0;
        }
    return -1;
}

/* Copies the next comma-separated item of *s into item and advances *s past
 * it (to NULL after the last). Returns -1 for an empty or over-long item. */
static int next_item(const char **s, char *item, size_t cap) {
    const char *comma = strchr(*s, ',');
    size_t len = comma ? (size_t)(comma - *s) : strlen(*s);
    if (len == 0 || len >= cap) return -1;
    memcpy(item, *s, len);
    item[len] = '\0';
    *s = comma ? comma + 1 : NULL;
    return 0;
}

int config_set_mixers(ModelConfig *cfg, const char *spec, Error *err) {
    const Mixer *list[MAX_LAYERS + 1];
    size_t n = 0;
    char name[64];
    for (const char *s = spec; s;) {
        if (next_item(&s, name, sizeof name)) return err_set(err, "bad mixer list '%s'", spec);
        const Mixer *mx = mixer_find(name);
        if (!mx) return err_set(err, "unknown mixer '%s' (known: %s)", name, mixer_names());
        if (n == MAX_LAYERS) return err_set(err, "mixer list has more than %d entries", MAX_LAYERS);
        list[n++] = mx;
    }
    if (n == 1) {
        for (size_t l = 0; l < MAX_LAYERS; l++) cfg->mixers[l] = list[0];
        return 0;
    }
    if (n != cfg->n_layer)
        return err_set(err, "mixer list has %zu entries but n_layer is %zu", n, cfg->n_layer);
    for (size_t l = 0; l < n; l++) cfg->mixers[l] = list[l];
    return 0;
}

const char *config_mixer_list(const ModelConfig *cfg, char *buf, size_t len) {
    buf[0] = '\0';
    for (size_t l = 0; l < cfg->n_layer; l++)
        snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", l ? "," : "", cfg->mixers[l]->name);
    return buf;
}

int config_set_windows(ModelConfig *cfg, const char *spec, Error *err) {
    if (!*spec) return err_set(err, "grassmann window list is empty");
    size_t n = 0;
    char num[32];
    for (const char *s = spec; s;) {
        if (next_item(&s, num, sizeof num)) return err_set(err, "bad grassmann window list '%s'", spec);
        if (n == MAX_WINDOWS) return err_set(err, "grassmann window list has more than %d offsets", MAX_WINDOWS);
        if (parse_size(num, MAX_BLOCK, &cfg->windows[n], "grassmann window offset", err)) return -1;
        if (cfg->windows[n] == 0) return err_set(err, "grassmann window offset must be positive (got 0)");
        n++;
    }
    cfg->n_windows = n;
    return 0;
}

char *config_to_json(const ModelConfig *cfg) {
    char *sb = NULL;
    sb_appendf(&sb, "{\"vocab_size\":%zu,\"block_size\":%zu,\"n_layer\":%zu,\"n_head\":%zu,\"n_embd\":%zu,",
               cfg->vocab_size, cfg->block_size, cfg->n_layer, cfg->n_head, cfg->n_embd);
    sb_appendf(&sb, "\"mixers\":[");
    for (size_t l = 0; l < cfg->n_layer; l++) sb_appendf(&sb, "%s\"%s\"", l ? "," : "", cfg->mixers[l]->name);
    sb_appendf(&sb, "],\"pos\":\"%s\",\"grassmann_rank\":%zu,\"grassmann_windows\":[",
               pos_name(cfg->pos), cfg->grassmann_rank);
    for (size_t w = 0; w < cfg->n_windows; w++) sb_appendf(&sb, "%s%zu", w ? "," : "", cfg->windows[w]);
    sb_appendf(&sb, "],\"dropout\":%.9g}", cfg->dropout);
    char *out = strdup(sb);
    sb_free(&sb);
    return out;
}

static int get_size(const json_t *root, const char *key, size_t *out, Error *err) {
    if (json_size(json_object_get(root, key), (size_t)1e15, out))
        return err_set(err, "config: '%s' missing or not a non-negative integer", key);
    return 0;
}

int config_from_json(ModelConfig *cfg, const char *text, Error *err) {
    config_defaults(cfg);
    json_t *root = json_parse(text, strlen(text), err);
    if (!root) return -1;
    int rc = -1;
    if (!json_is_object(root)) {
        err_set(err, "config: not a JSON object");
        goto done;
    }
    if (get_size(root, "vocab_size", &cfg->vocab_size, err) || get_size(root, "block_size", &cfg->block_size, err) ||
        get_size(root, "n_layer", &cfg->n_layer, err) || get_size(root, "n_head", &cfg->n_head, err) ||
        get_size(root, "n_embd", &cfg->n_embd, err) || get_size(root, "grassmann_rank", &cfg->grassmann_rank, err))
        goto done;
    const json_t *mixers = json_object_get(root, "mixers"), *windows = json_object_get(root, "grassmann_windows");
    const json_t *dropout = json_object_get(root, "dropout");
    const char *pos = json_string_value(json_object_get(root, "pos"));
    if (!json_is_array(mixers) || json_array_size(mixers) != cfg->n_layer || cfg->n_layer > MAX_LAYERS) {
        err_set(err, "config: 'mixers' must list one mixer per layer");
        goto done;
    }
    for (size_t l = 0; l < cfg->n_layer; l++) {
        const char *name = json_string_value(json_array_get(mixers, l));
        cfg->mixers[l] = name ? mixer_find(name) : NULL;
        if (!cfg->mixers[l]) {
            err_set(err, "config: unknown mixer in layer %zu", l);
            goto done;
        }
    }
    if (!pos || pos_parse(pos, &cfg->pos)) {
        err_set(err, "config: 'pos' must be \"learned\", \"sinusoidal\" or \"rope\"");
        goto done;
    }
    if (!json_is_array(windows) || json_array_size(windows) > MAX_WINDOWS) {
        err_set(err, "config: 'grassmann_windows' must be a list of at most %d offsets", MAX_WINDOWS);
        goto done;
    }
    cfg->n_windows = json_array_size(windows);
    for (size_t w = 0; w < cfg->n_windows; w++) {
        if (json_size(json_array_get(windows, w), MAX_BLOCK, &cfg->windows[w])) {
            err_set(err, "config: bad grassmann window offset");
            goto done;
        }
    }
    if (!json_is_number(dropout)) {
        err_set(err, "config: 'dropout' missing");
        goto done;
    }
    cfg->dropout = (float)json_number_value(dropout);
    rc = config_validate(cfg, err);
done:
    json_decref(root);
    return rc;
}
