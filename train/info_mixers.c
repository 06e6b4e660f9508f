/* bin/info --mixers (see train/info_mixers.h). */
#include "info_mixers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lm/cli.h"
#include "lm/json.h"
#include "lm/model.h"
#include "run_info.h"

#define STDIN_MAX (1u << 20) /* a config JSON is a few kilobytes */

size_t info_mixers_rows(InfoMixers *im, OptionRow *rows, size_t first) {
    memset(im, 0, sizeof *im);
    run_options_defaults(&im->o);
    im->vocab = 256;
    size_t n = 0;
    rows[n++] = (OptionRow)CLI_FLAG("mixers", 0, &im->wanted,
                                    "describe the registered mixers: options, and at the model (given by\n"
                                    "the options below, or CKPT_OR_RUN's, or - for a config JSON on\n"
                                    "standard input) each one's tensors, parameters, state and FLOPs");
    rows[n++] = (OptionRow)CLI_HEADING("with --mixers, the model, as bin/train takes it:");
    im->first = first + n;
    rows[n++] = (OptionRow)CLI_SIZE("vocab-size", 0, &im->vocab, 1, MAX_VOCAB, "N",
                                    "vocabulary (256; bin/train's comes from its data)");
    n += model_text_rows(&im->o, rows + n, im->mixer_help);
    n += model_mixer_text_rows(&im->o, rows + n);
    size_t n_run;
    const OptionRow *run = run_option_rows(&n_run);
    for (size_t i = 0; i < n_run; i++)
        if (run[i].role == RUN_ARCH) rows[n++] = option_row_for(&run[i], &im->o);
    im->n = first + n - im->first;
    return n;
}

static const char *const KINDS[] = {[OPT_SIZE] = "size", [OPT_FLOAT] = "float", [OPT_TEXT] = "text"};
static const char *const INITS[] = {[INIT_NORMAL] = "normal", [INIT_RESIDUAL] = "residual", [INIT_ZERO] = "zero",
                                    [INIT_ONE] = "one"};

static json_t *string_or_null(const char *s) { return s ? json_string(s) : json_null(); }

static json_t *option_json(const OptionRow *opt) {
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(opt->name));
    json_object_set_new(o, "json_key", json_string(opt->json_key));
    json_object_set_new(o, "kind", json_string(KINDS[opt->kind]));
    json_object_set_new(o, "value", json_string(opt->value));
    json_object_set_new(o, "help", json_string(opt->help));
    if (opt->kind == OPT_TEXT) {
        json_object_set_new(o, "default", json_string(opt->def_text));
    } else {
        int size = opt->kind == OPT_SIZE;
        json_object_set_new(o, "default", size ? json_integer((json_int_t)opt->def) : json_real(opt->def));
        json_object_set_new(o, "min", size ? json_integer((json_int_t)opt->lo) : json_real(opt->lo));
        json_object_set_new(o, "max", size ? json_integer((json_int_t)opt->hi) : json_real(opt->hi));
    }
    json_object_set_new(o, "arch_key", string_or_null(opt->arch_key));
    json_object_set_new(o, "size_knob", json_boolean(opt->size_knob));
    json_object_set_new(o, "family", string_or_null(opt->family));
    return o;
}

/* What one layer with mixer mx and spec is: its tensors (names relative to
 * "h.{l}."), parameters, state floats per sequence (the past it carries,
 * Mixer.memory_size, and all its sampling step keeps, state_size) and
 * training FLOPs per token at T = block_size, its weight matrices counted
 * as model_flops does. */
static void layer_json(json_t *o, const Mixer *mx, const MixerSpec *spec) {
    TensorSpec t[MIXER_MAX_TENSORS];
    size_t n = mixer_tensors(mx, spec, t);
    json_t *tensors = json_array();
    double weights = 0.0;
    for (size_t i = 0; i < n; i++) {
        json_t *x = json_object(), *shape = json_array();
        json_array_append_new(shape, json_integer((json_int_t)t[i].rows));
        if (t[i].cols) json_array_append_new(shape, json_integer((json_int_t)t[i].cols));
        json_object_set_new(x, "name", json_string(t[i].name));
        json_object_set_new(x, "shape", shape);
        json_object_set_new(x, "init", json_string(INITS[t[i].init]));
        json_object_set_new(x, "output", json_boolean(t[i].output));
        json_array_append_new(tensors, x);
        if (t[i].cols) weights += 6.0 * (double)t[i].rows * (double)t[i].cols;
    }
    double mixing = mx->flops ? mx->flops(spec, spec->block_size) : 0.0;
    json_t *flops = json_object();
    json_object_set_new(flops, "mixing", json_real(mixing));
    json_object_set_new(flops, "weights", json_real(weights));
    json_object_set_new(flops, "total", json_real(mixing + weights));
    json_object_set_new(o, "params", json_integer((json_int_t)mixer_param_count(mx, spec)));
    size_t memory = mx->memory_size ? mx->memory_size(spec) : mx->state_size(spec);
    json_object_set_new(o, "state_floats", json_integer((json_int_t)memory));
    json_object_set_new(o, "step_floats", json_integer((json_int_t)mx->state_size(spec)));
    json_object_set_new(o, "flops_per_token", flops);
    json_object_set_new(o, "tensors", tensors);
}

/* Every registered mixer: what it is, its options, and its layer at cfg's
 * sizes and settings as if every layer had it (or why it cannot be). */
static json_t *mixers_json(const ModelConfig *cfg) {
    json_t *list = json_array();
    for (size_t i = 0; i < mixer_count(); i++) {
        const Mixer *mx = mixer_at(i);
        json_t *o = json_object(), *opts = json_array();
        json_object_set_new(o, "name", json_string(mx->name));
        json_object_set_new(o, "about", string_or_null(mx->about));
        for (size_t k = 0; k < mx->n_options; k++) json_array_append_new(opts, option_json(&mx->options[k]));
        json_object_set_new(o, "options", opts);
        ModelConfig all = *cfg;
        for (size_t l = 0; l < MAX_LAYERS; l++) all.mixers[l] = mx;
        MixerSpec spec = model_mixer_spec(&all, 0);
        Error err;
        if (mx->validate(&spec, &err)) json_object_set_new(o, "invalid", json_string(err.msg));
        else layer_json(o, mx, &spec);
        json_array_append_new(list, o);
    }
    return list;
}

static json_t *layers_json(const ModelConfig *cfg) {
    json_t *list = json_array();
    for (size_t l = 0; l < cfg->n_layer; l++) {
        json_t *o = json_object();
        json_object_set_new(o, "layer", json_integer((json_int_t)l));
        json_object_set_new(o, "mixer", json_string(cfg->mixers[l]->name));
        MixerSpec spec = model_mixer_spec(cfg, l);
        layer_json(o, cfg->mixers[l], &spec);
        json_array_append_new(list, o);
    }
    return list;
}

static json_t *describe(const ModelConfig *cfg, Error *err) {
    char *text = config_to_json(cfg);
    json_t *model = text ? json_parse(text, strlen(text), err) : NULL;
    free(text);
    if (!model) return NULL;
    json_object_set_new(model, "params", json_integer((json_int_t)model_count_params(cfg)));
    json_t *root = json_object();
    json_object_set_new(root, "model", model);
    json_object_set_new(root, "mixers", mixers_json(cfg));
    json_object_set_new(root, "layers", layers_json(cfg));
    return root;
}

/* A size as a person reads it: 12,345. */
static const char *grouped(size_t v, char *buf, size_t len) {
    char digits[32];
    int n = snprintf(digits, sizeof digits, "%zu", v), out = 0;
    for (int i = 0; i < n && (size_t)out + 2 < len; i++) {
        if (i && (n - i) % 3 == 0) buf[out++] = ',';
        buf[out++] = digits[i];
    }
    buf[out] = '\0';
    return buf;
}

static size_t get_size(const json_t *o, const char *key) { return (size_t)json_integer_value(json_object_get(o, key)); }

/* One layer's numbers, as text. */
static void print_layer(FILE *f, const json_t *o) {
    char a[32], b[32], c[32];
    const json_t *flops = json_object_get(o, "flops_per_token");
    fprintf(f, "%s parameters, %s state floats per sequence (%s with the step's scratch), %.3g FLOPs per token "
               "(mixing %.3g, weights %.3g):",
            grouped(get_size(o, "params"), a, sizeof a), grouped(get_size(o, "state_floats"), b, sizeof b),
            grouped(get_size(o, "step_floats"), c, sizeof c),
            json_real_value(json_object_get(flops, "total")), json_real_value(json_object_get(flops, "mixing")),
            json_real_value(json_object_get(flops, "weights")));
    size_t i;
    const json_t *t;
    json_array_foreach(json_object_get(o, "tensors"), i, t) {
        const json_t *shape = json_object_get(t, "shape");
        fprintf(f, "%s %s %zu", i ? "," : "", json_string_value(json_object_get(t, "name")),
                (size_t)json_integer_value(json_array_get(shape, 0)));
        if (json_array_size(shape) > 1) fprintf(f, "x%zu", (size_t)json_integer_value(json_array_get(shape, 1)));
    }
    fprintf(f, "\n");
}

static void print_text(FILE *f, const ModelConfig *cfg, const json_t *root) {
    char mixers[1024];
    fprintf(f, "%zu mixers registered; at n_layer %zu, n_head %zu, n_embd %zu, block %zu (each as if in every layer):\n",
            mixer_count(), cfg->n_layer, cfg->n_head, cfg->n_embd, cfg->block_size);
    size_t i;
    const json_t *m;
    json_array_foreach(json_object_get(root, "mixers"), i, m) {
        const Mixer *mx = mixer_at(i);
        fprintf(f, "\n%s: %s\n", mx->name, mx->about ? mx->about : "");
        for (size_t k = 0; k < mx->n_options; k++) {
            const OptionRow *opt = &mx->options[k];
            char bounds[96] = "";
            if (opt->kind != OPT_TEXT) snprintf(bounds, sizeof bounds, ", %g to %g", opt->lo, opt->hi);
            fprintf(f, "  --%s %s (config %s%s", opt->name, opt->value, opt->json_key, bounds);
            if (opt->arch_key) fprintf(f, "; architectures %s=%s", opt->arch_key, opt->size_knob ? ", sizes the layer" : "");
            if (opt->family) fprintf(f, "; set: %s", opt->family);
            fprintf(f, "): ");
            for (const char *c = opt->help; *c; c++) fputc(*c == '\n' ? ' ' : *c, f);
            fprintf(f, "\n");
        }
        const json_t *why = json_object_get(m, "invalid");
        fprintf(f, "  a layer: ");
        if (why) fprintf(f, "not at this model: %s\n", json_string_value(why));
        else print_layer(f, m);
    }
    fprintf(f, "\nthe model's layers (%s):\n", config_mixer_list(cfg, mixers, sizeof mixers));
    json_array_foreach(json_object_get(root, "layers"), i, m) {
        fprintf(f, "  layer %zu, %s: ", i, json_string_value(json_object_get(m, "mixer")));
        print_layer(f, m);
    }
}

/* The whole of standard input (a config JSON), NUL-terminated. */
static char *read_stdin(Error *err) {
    size_t len = 0, cap = 4096;
    char *buf = malloc(cap);
    while (buf) {
        len += fread(buf + len, 1, cap - 1 - len, stdin);
        if (ferror(stdin)) {
            free(buf);
            err_set(err, "cannot read the config JSON from standard input");
            return NULL;
        }
        if (feof(stdin)) break;
        if (cap >= STDIN_MAX) {
            free(buf);
            err_set(err, "standard input holds more than %u bytes: not a config JSON", STDIN_MAX);
            return NULL;
        }
        char *more = realloc(buf, cap *= 2);
        if (!more) free(buf);
        buf = more;
    }
    if (!buf) err_set(err, "out of memory");
    else buf[len] = '\0';
    return buf;
}

const char *info_mixers_given(const InfoMixers *im, const OptionRow *opts) {
    for (size_t i = im->first; i < im->first + im->n; i++)
        if (opts[i].given) return opts[i].name;
    return NULL;
}

/* The model: from source (a checkpoint, a run folder, "-") or the options. */
static int model_config(InfoMixers *im, const OptionRow *opts, const char *source, ModelConfig *cfg, Error *err) {
    if (!source) {
        im->o.cfg.vocab_size = im->vocab;
        if (model_config_from_options(&im->o, err)) return -1;
        *cfg = im->o.cfg;
        return 0;
    }
    const char *given = info_mixers_given(im, opts);
    if (given)
        return err_set(err, "--%s: the model comes from '%s': give model options or a model, not both", given, source);
    int rc;
    if (strcmp(source, "-") == 0) {
        char *text = read_stdin(err);
        rc = text ? config_from_json(cfg, text, err) : -1;
        free(text);
    } else {
        RunInfo info;
        rc = run_info_read(source, &info, err);
        if (rc == 0) *cfg = info.h.cfg, run_info_free(&info);
    }
    return rc ? -1 : model_check_config(cfg, err);
}

int info_mixers_print(InfoMixers *im, const OptionRow *opts, const char *prog, const char *source, int json) {
    Error err;
    ModelConfig cfg;
    if (model_config(im, opts, source, &cfg, &err)) return cli_error(prog, "%s", err.msg);
    json_t *root = describe(&cfg, &err);
    if (!root) return cli_error(prog, "%s", err.msg);
    int rc = 0;
    if (json) {
        char *text = json_dumps_ascii(root, 0);
        if (text) printf("%s\n", text);
        else rc = cli_error(prog, "out of memory");
        free(text);
    } else {
        print_text(stdout, &cfg, root);
    }
    json_decref(root);
    if (fflush(stdout) != 0) rc = cli_error(prog, "cannot write the description");
    return rc;
}
