/* Experiment files: a program's options as a JSON object, read into its
 * command line and written from its option table (see lm/options.h). */
#include "lm/options.h"

#include <stdlib.h>
#include <string.h>

#include "lm/files.h"
#include "lm/json.h"

/* The shortest decimal that reads back as the same double. */
static void shortest(char *buf, size_t size, double v) {
    for (int digits = 6; digits <= 17; digits++) {
        snprintf(buf, size, "%.*g", digits, v);
        if (strtod(buf, NULL) == v) return;
    }
}

/* One key of the file as one argument, "--name=value" (NULL: left out), or -1 with err. */
static int key_arg(const OptionRow *opts, size_t n, const char *path, const char *key, const json_t *v, char **arg,
                   Error *err) {
    *arg = NULL;
    if (strcmp(key, "config") == 0)
        return err_set(err, "'%s': an experiment file names no other (\"config\"): put its options in this one", path);
    const OptionRow *o = cli_option((OptionRow *)opts, n, key);
    if (!o) {
        char typed[80], hint[320];
        snprintf(typed, sizeof typed, "--%s", key);
        cli_suggest(hint, sizeof hint, opts, n, typed);
        return err_set(err, "'%s': unknown option '%s'%s (see --help)", path, key, hint);
    }
    if (json_is_null(v) || json_is_false(v)) return 0;
    char value[64];
    const char *text = NULL;
    if (o->kind == OPT_FLAG) {
        if (!json_is_true(v)) return err_set(err, "'%s': '%s' is a switch: true or false", path, key);
    } else if (json_is_string(v)) text = json_string_value(v);
    else if (json_is_integer(v)) snprintf(value, sizeof value, "%lld", (long long)json_integer_value(v)), text = value;
    else if (json_is_real(v)) shortest(value, sizeof value, json_real_value(v)), text = value;
    else return err_set(err, "'%s': '%s' takes a value: a number or a string", path, key);
    size_t len = strlen(key) + (text ? strlen(text) : 0) + 4;
    if (!(*arg = malloc(len))) return err_set(err, "out of memory");
    snprintf(*arg, len, text ? "--%s=%s" : "--%s", key, text ? text : "");
    return 0;
}

void cli_args_free(CliArgs *a) {
    for (size_t i = 0; i < a->n_made; i++) free(a->made[i]);
    free(a->made);
    a->made = NULL;
    a->n_made = 0;
}

int cli_config_args(const OptionRow *opts, size_t n, int argc, char **argv, CliArgs *out, Error *err) {
    *out = (CliArgs){argc, argv, NULL, 0};
    int missing;
    const char *path = cli_arg_value(argc, argv, "config", &missing);
    if (!path) return missing ? err_set(err, "option '--config' needs a value (see --help)") : 0;
    size_t len;
    char *text = read_file(path, &len, err);
    if (!text) return -1;
    Error parse_err;
    json_t *root = json_parse(text, len, &parse_err);
    free(text);
    if (!root || !json_is_object(root)) {
        if (root) json_decref(root);
        return err_set(err, "'%s' is not an experiment file: %s", path, root ? "not a JSON object" : parse_err.msg);
    }
    size_t keys = json_object_size(root);
    char **made = calloc(keys + 2, sizeof *made), **args = calloc((size_t)argc + keys + 1, sizeof *args);
    int rc = made && args ? 0 : err_set(err, "out of memory"), k = 1;
    size_t n_made = 0;
    const char *key;
    json_t *v;
    if (rc == 0) args[0] = argv[0];
    json_object_foreach(root, key, v) {
        char *arg;
        if (rc || (rc = key_arg(opts, n, path, key, v, &arg, err))) break;
        if (arg) args[k++] = made[n_made++] = arg;
    }
    json_decref(root);
    if (rc) {
        for (size_t i = 0; made && i < n_made; i++) free(made[i]);
        free(made);
        free(args);
        return -1;
    }
    for (int i = 1; i <= argc; i++) args[k++] = argv[i]; /* and argv's NULL */
    made[n_made++] = (char *)args;
    *out = (CliArgs){k - 1, args, made, n_made};
    return 0;
}

/* Whether name is one of skip's. */
static int skipped(const char *const *skip, const char *name) {
    for (size_t i = 0; skip && skip[i]; i++)
        if (strcmp(skip[i], name) == 0) return 1;
    return 0;
}

/* A row's value as JSON text into sb. */
static void row_value(char **sb, const OptionRow *o) {
    char num[64];
    const void *p = option_at(o, o->base);
    switch (o->kind) {
    case OPT_FLAG: sb_appendf(sb, "%s", *(const int *)p ? "true" : "false"); break;
    case OPT_TEXT: {
        const char *s = *(const char *const *)p;
        if (s) sb_append_json_string(sb, s);
        else sb_appendf(sb, "null");
        break;
    }
    case OPT_SIZE: {
        size_t v = *(const size_t *)p;
        if ((double)v < o->lo || (double)v > o->hi) sb_appendf(sb, "null");
        else sb_appendf(sb, "%zu", v);
        break;
    }
    case OPT_FLOAT: {
        float v = *(const float *)p;
        if (!(v >= o->lo && v <= o->hi)) sb_appendf(sb, "null");
        else {
            for (int digits = 6; digits <= 9; digits++) { /* the shortest that reads back as the same float */
                snprintf(num, sizeof num, "%.*g", digits, (double)v);
                if (strtof(num, NULL) == v) break;
            }
            sb_appendf(sb, "%s", num);
        }
        break;
    }
    case OPT_CALL:
    case OPT_HEADING: break;
    }
}

/* Whether v is a value the row takes from an experiment file (null: not
 * given): a file's value that is not is never carried over. */
static int value_fits(const OptionRow *o, const json_t *v) {
    if (json_is_null(v)) return 1;
    switch (o->kind) {
    case OPT_FLAG: return json_is_boolean(v);
    case OPT_TEXT: return json_is_string(v) || json_is_number(v);
    case OPT_SIZE: {
        size_t x;
        return json_size(v, (size_t)o->hi, &x) == 0 && (double)x >= o->lo;
    }
    case OPT_FLOAT: return json_is_number(v) && json_number_value(v) >= o->lo && json_number_value(v) <= o->hi;
    case OPT_CALL:
    case OPT_HEADING: break;
    }
    return 0;
}

char *cli_config_json(const OptionRow *opts, size_t n, const char *const *skip, const char *base, Error *err) {
    json_t *old = NULL;
    if (base && !(old = json_parse(base, strlen(base), err))) return NULL;
    char *sb = NULL;
    int first = 1;
    sb_appendf(&sb, "{");
    for (size_t i = 0; i < n; i++) {
        const OptionRow *o = &opts[i];
        if (o->kind == OPT_HEADING || o->kind == OPT_CALL || skipped(skip, o->name)) continue;
        sb_appendf(&sb, "%s\n  ", first ? "" : ",");
        sb_append_json_string(&sb, o->name);
        sb_appendf(&sb, ": ");
        const json_t *kept = old && !o->given ? json_object_get(old, o->name) : NULL;
        if (kept && !value_fits(o, kept)) kept = NULL; /* "n-layer": "abc": the row's own value instead */
        char *dumped = kept && !json_is_real(kept) ? json_dumps(kept, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
        char num[64];
        if (kept && json_is_real(kept)) shortest(num, sizeof num, json_real_value(kept)), sb_appendf(&sb, "%s", num);
        else if (dumped) sb_appendf(&sb, "%s", dumped);
        else row_value(&sb, o);
        free(dumped);
        first = 0;
    }
    sb_appendf(&sb, "\n}\n");
    if (old) json_decref(old);
    char *out = strdup(sb);
    sb_free(&sb);
    if (!out) err_set(err, "out of memory");
    return out;
}
