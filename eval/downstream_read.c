/* The task files of bin/eval --pairs, --cloze and --choice, read line by
 * line: every line checked (length, NUL, UTF-8, its JSON and the keys the
 * format needs, with their types), and the first that is wrong is one line
 * naming the file and the line. */
#include "downstream.h"

#include <stdlib.h>
#include <string.h>

#include "lm/ds.h"
#include "lm/files.h"
#include "lm/json.h"
#include "lm/utf8.h"

static const char *const task_names[N_TASKS] = {"pairs", "cloze", "choice"};
const char *ds_task_name(TaskKind kind) { return task_names[kind]; }

/* The keys whose values name an item's categories, per task. */
static const char *const pair_keys[] = {"field", "linguistics_term", "UID"};
static const char *const choice_keys[] = {"activity_label"};

/* Where a line's errors are: "--pairs 'F' line N". */
typedef struct LineAt {
    const char *option, *path;
    size_t line;
} LineAt;

static int line_error(const LineAt *at, Error *err, const char *what) {
    return err_set(err, "--%s '%s' line %zu: %s", at->option, at->path, at->line, what);
}

static char *copy_text(const char *prefix, const char *s, size_t len) {
    size_t p = strlen(prefix);
    char *out = malloc(p + len + 1);
    if (!out) return NULL;
    memcpy(out, prefix, p);
    memcpy(out + p, s, len);
    out[p + len] = '\0';
    return out;
}

/* o[key] as a string: required (absent is an error) or not (absent: *out
 * NULL); never another type; non_empty refuses "". */
static int get_string(const json_t *o, const char *key, int required, int non_empty, const char **out,
                      const LineAt *at, Error *err) {
    char why[160];
    const json_t *v = json_object_get(o, key);
    *out = NULL;
    if (!v) {
        if (!required) return 0;
        snprintf(why, sizeof why, "no \"%s\" (the format's every line has one)", key);
        return line_error(at, err, why);
    }
    if (!json_is_string(v)) {
        snprintf(why, sizeof why, "\"%s\" is not a string", key);
        return line_error(at, err, why);
    }
    *out = json_string_value(v);
    if (non_empty && !**out) {
        snprintf(why, sizeof why, "\"%s\" is empty", key);
        return line_error(at, err, why);
    }
    return 0;
}

/* HellaSwag's label: an integer, or (as some copies write it) a string of
 * decimal digits, naming one of the n endings. */
static int get_label(const json_t *o, size_t n, size_t *label, const LineAt *at, Error *err) {
    char why[160];
    const json_t *v = json_object_get(o, "label");
    if (!v) return line_error(at, err, "no \"label\" (an unlabelled file cannot be scored)");
    long long value = -1;
    if (json_is_integer(v)) value = json_integer_value(v);
    else if (json_is_string(v)) {
        const char *s = json_string_value(v);
        char *end;
        if (*s < '0' || *s > '9' || strlen(s) > 9) return line_error(at, err, "\"label\" is not a number");
        value = strtoll(s, &end, 10);
        if (*end) return line_error(at, err, "\"label\" is not a number");
    } else return line_error(at, err, "\"label\" is not an integer");
    if (value < 0 || (unsigned long long)value >= n) {
        snprintf(why, sizeof why, "\"label\" %lld is not one of the %zu endings (0 to %zu)", value, n, n - 1);
        return line_error(at, err, why);
    }
    *label = (size_t)value;
    return 0;
}

static int keys_of(DsItem *it, const json_t *o, const char *const *keys, size_t n_keys, const LineAt *at,
                   Error *err) {
    for (size_t k = 0; k < n_keys; k++) {
        const char *s;
        if (get_string(o, keys[k], 0, 0, &s, at, err)) return -1;
        if (s && !(it->keys[k] = copy_text("", s, strlen(s)))) return err_set(err, "out of memory");
    }
    return 0;
}

static int parse_pair(DsItem *it, const json_t *o, const LineAt *at, Error *err) {
    const char *good, *bad;
    if (get_string(o, "sentence_good", 1, 1, &good, at, err) || get_string(o, "sentence_bad", 1, 1, &bad, at, err))
        return -1;
    it->context = copy_text("", "", 0);
    it->choices[0] = copy_text("", good, strlen(good));
    it->choices[1] = copy_text("", bad, strlen(bad));
    it->n_choices = 2;
    it->label = 0;
    if (!it->context || !it->choices[0] || !it->choices[1]) return err_set(err, "out of memory");
    return keys_of(it, o, pair_keys, 3, at, err);
}

static int parse_choice(DsItem *it, const json_t *o, const LineAt *at, Error *err) {
    char why[160];
    const char *ctx;
    if (get_string(o, "ctx", 1, 0, &ctx, at, err)) return -1;
    const json_t *endings = json_object_get(o, "endings");
    if (!endings) return line_error(at, err, "no \"endings\" (the format's every line has them)");
    if (!json_is_array(endings)) return line_error(at, err, "\"endings\" is not an array");
    size_t n = json_array_size(endings);
    if (n < 2 || n > DS_MAX_CHOICES) {
        snprintf(why, sizeof why, "\"endings\" has %zu entr%s: 2 to %d are scored", n, n == 1 ? "y" : "ies",
                 DS_MAX_CHOICES);
        return line_error(at, err, why);
    }
    if (get_label(o, n, &it->label, at, err)) return -1;
    it->n_choices = n;
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(endings, i);
        if (!json_is_string(e) || !*json_string_value(e)) {
            snprintf(why, sizeof why, "\"endings\"[%zu] is %s", i, json_is_string(e) ? "empty" : "not a string");
            return line_error(at, err, why);
        }
        const char *s = json_string_value(e);
        if (!(it->choices[i] = copy_text(" ", s, strlen(s)))) return err_set(err, "out of memory");
    }
    if (!(it->context = copy_text("", ctx, strlen(ctx)))) return err_set(err, "out of memory");
    return keys_of(it, o, choice_keys, 1, at, err);
}

static int is_blank(char c) { return c == ' ' || c == '\t'; }

/* A passage: its last word (after the last space or tab; trailing ones
 * dropped) is the continuation, with the space before it; the rest the
 * context, which must hold a word. */
static int parse_cloze(DsItem *it, const char *s, size_t len, const LineAt *at, Error *err) {
    while (len && is_blank(s[len - 1])) len--;
    size_t ws = len;
    while (ws && !is_blank(s[ws - 1])) ws--;
    size_t before = ws ? ws - 1 : 0;
    while (before && is_blank(s[before - 1])) before--;
    if (!ws || !before) return line_error(at, err, "a passage needs words before its last word");
    it->context = copy_text("", s, ws - 1);
    it->choices[0] = copy_text("", s + ws - 1, len - (ws - 1));
    it->n_choices = 1;
    it->label = 0;
    if (!it->context || !it->choices[0]) return err_set(err, "out of memory");
    return 0;
}

/* One line (without its newline) into *it. */
static int parse_line(TaskKind kind, const char *s, size_t len, DsItem *it, const LineAt *at, Error *err) {
    char why[200];
    if (len > DS_MAX_LINE_BYTES) {
        snprintf(why, sizeof why, "longer than %zu bytes (one item a line)", DS_MAX_LINE_BYTES);
        return line_error(at, err, why);
    }
    if (memchr(s, '\0', len)) return line_error(at, err, "holds a NUL byte: not text");
    size_t bad = utf8_invalid_at(s, len);
    if (bad < len) {
        snprintf(why, sizeof why, "not UTF-8 (byte %zu of the line)", bad + 1);
        return line_error(at, err, why);
    }
    if (len == 0) return line_error(at, err, "empty (one item a line)");
    if (kind == TASK_CLOZE) return parse_cloze(it, s, len, at, err);
    Error jerr;
    json_t *o = json_parse(s, len, &jerr);
    if (!o) return line_error(at, err, jerr.msg);
    int rc = !json_is_object(o) ? line_error(at, err, "not a JSON object")
           : kind == TASK_PAIRS ? parse_pair(it, o, at, err)
                                : parse_choice(it, o, at, err);
    json_decref(o);
    return rc;
}

static void item_free(DsItem *it) {
    free(it->context);
    for (size_t i = 0; i < DS_MAX_CHOICES; i++) free(it->choices[i]);
    for (size_t k = 0; k < DS_MAX_KEYS; k++) free(it->keys[k]);
}

void ds_task_free(DsTask *t) {
    for (size_t i = 0; i < t->n; i++) item_free(&t->items[i]);
    arrfree(t->items);
    t->items = NULL;
    t->n = 0;
}

int ds_parse(TaskKind kind, const char *path, const char *text, size_t len, DsTask *t, Error *err) {
    memset(t, 0, sizeof *t);
    t->kind = kind;
    t->path = path;
    if (kind == TASK_PAIRS) {
        t->n_keys = 3;
        for (size_t k = 0; k < 3; k++) t->key_names[k] = pair_keys[k];
    } else if (kind == TASK_CHOICE) {
        t->n_keys = 1;
        t->key_names[0] = choice_keys[0];
    }
    if (len == 0) return err_set(err, "--%s '%s' is empty: it holds no items", task_names[kind], path);
    LineAt at = {task_names[kind], path, 0};
    for (size_t start = 0; start < len;) {
        const char *nl = memchr(text + start, '\n', len - start);
        size_t end = nl ? (size_t)(nl - text) : len, l = end - start;
        at.line++;
        if (l && text[start + l - 1] == '\r') l--; /* CRLF */
        DsItem it = {.line = at.line};
        if (parse_line(kind, text + start, l, &it, &at, err)) {
            item_free(&it);
            ds_task_free(t);
            return -1;
        }
        arrput(t->items, it);
        t->n++;
        start = end + 1;
    }
    return 0;
}

int ds_read(TaskKind kind, const char *path, DsTask *t, Error *err) {
    size_t size;
    Error open_err;
    FILE *f = fopen_input(path, &size, &open_err);
    if (!f) return err_set(err, "--%s: %s", task_names[kind], open_err.msg);
    if (size > DS_MAX_FILE_BYTES) {
        fclose(f);
        return err_set(err, "--%s '%s' is %zu bytes: more than the %zu MiB a task file may hold", task_names[kind],
                       path, size, DS_MAX_FILE_BYTES >> 20);
    }
    char *text = malloc(size + 1);
    if (!text) {
        fclose(f);
        return err_set(err, "out of memory reading '%s' (%zu bytes)", path, size);
    }
    size_t got = fread(text, 1, size, f);
    int bad = ferror(f) || got != size;
    fclose(f);
    int rc = bad ? err_set(err, "cannot read '%s'", path) : ds_parse(kind, path, text, size, t, err);
    free(text);
    return rc;
}
