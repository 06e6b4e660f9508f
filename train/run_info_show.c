/* A run read back, shown (see train/run_info.h): as text, where every
 * string that came from a file or a folder's name is escaped, and as JSON
 * built through jansson from the values read, never from their text. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lm/cli.h"
#include "lm/json.h"
#include "lm/model.h"
#include "lm/run_folder.h"
#include "run_info.h"
#include "run_dir.h"

/* s as it may reach a terminal: control bytes (a newline too) as \xNN. */
typedef struct Shown {
    char s[4 * PATH_BUF];
} Shown;
static const char *shown(Shown *buf, const char *s) {
    cli_escaped(s ? s : "", buf->s, sizeof buf->s);
    return buf->s;
}

/* A string member of the run options (NULL when absent). */
static const char *train_string(const json_t *train, const char *key) {
    const json_t *v = train ? json_object_get(train, key) : NULL;
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static void print_loss(FILE *f, float v) {
    if (isnan(v)) fprintf(f, "-");
    else fprintf(f, "%.4f", v);
}

/* Sets key to v in o; whether that worked (v NULL: out of memory). */
static int put(json_t *o, const char *key, json_t *v) { return v && json_object_set_new(o, key, v) == 0; }

static json_t *number_or_null(double v) { return isfinite(v) ? json_real(v) : json_null(); }

/* JSON text parsed into an object, or null (not JSON, or not an object). */
static json_t *object_or_null(const char *text) {
    Error err;
    json_t *v = text ? json_parse(text, strlen(text), &err) : NULL;
    if (v && json_is_object(v)) return v;
    if (v) json_decref(v);
    return json_null();
}

void run_info_print(FILE *f, const RunInfo *info) {
    const ModelConfig *c = &info->h.cfg;
    const RunProgress *p = &info->progress;
    Error err;
    json_t *train = json_parse(info->h.train, strlen(info->h.train), &err);
    if (train && !json_is_object(train)) json_decref(train), train = NULL;
    char mixers[1024], recipe[160];
    Shown a, b;
    if (info->is_run) fprintf(f, "run:        %s\n", shown(&a, info->path));
    fprintf(f, "checkpoint: %s (%.1f MiB%s)\n", shown(&a, info->ckpt), (double)info->h.file_bytes / (1024.0 * 1024.0),
            info->h.moments ? ", with optimizer state: resumable" : ", weights only");
    fprintf(f, "step:       %zu", info->h.step);
    if (info->max_iters) fprintf(f, " of %zu", info->max_iters);
    if (!isnan(p->val_loss) || p->tokens) fprintf(f, " | %zu tokens seen", p->tokens);
    fprintf(f, "\nval loss:   last ");
    print_loss(f, p->val_loss);
    fprintf(f, ", best ");
    print_loss(f, p->best_val_loss);
    if (!isnan(p->best_val_loss)) fprintf(f, " at step %zu%s", p->best_step, info->has_best ? " (best.ckpt)" : "");
    char kind[64];
    RunValKind k = run_val_kind(info->h.train);
    if (!isnan(p->val_loss) || !isnan(p->best_val_loss))
        fprintf(f, " | %s%s", run_val_kind_text(k, kind, sizeof kind),
                k.full ? " (--best-by full), as bin/eval scores it" : " (bin/eval scores the whole split)");
    fprintf(f, "\nmodel:      %zu parameters | n_layer %zu, n_head %zu, n_embd %zu, block %zu, vocab %zu | mixers %s | "
               "pos %s | norm %s\n",
            model_count_params(c), c->n_layer, c->n_head, c->n_embd, c->block_size, c->vocab_size,
            config_mixer_list(c, mixers, sizeof mixers), pos_name(c->pos), norm_name(c->norm));
    fprintf(f, "recipe:     %s\n", config_has_recipe_switch(c) ? config_recipe_list(c, recipe, sizeof recipe)
                                                                 : "gpt2 (no switch of the modern recipe)");
    const char *optimizer = train_string(train, "optimizer"), *precision = train_string(train, "precision");
    fprintf(f, "optimizer:  %s | precision %s\n", shown(&a, optimizer ? optimizer : "adamw"),
            shown(&b, precision ? precision : "fp32"));
    fprintf(f, "tokenizer:  %s, %zu tokens (hash %s)\n", info->h.tok.kind ? info->h.tok.kind->name : "?",
            info->h.tok.vocab_size, info->h.tokenizer[0] ? shown(&a, info->h.tokenizer) : "-");
    const char *data = train_string(train, "data"), *hash = train_string(train, "data_hash");
    fprintf(f, "data:       %s (hash %s)\n", data ? shown(&a, data) : "- (not kept)", hash ? shown(&b, hash) : "-");
    fprintf(f, "options:   ");
    const char *key;
    json_t *v;
    int any = 0;
    json_object_foreach(train, key, v) { /* the kept numbers, as bin/train --resume takes them */
        if (!json_is_number(v)) continue;
        char num[JSON_NUMBER_MAX];
        fprintf(f, "%s %s %s", any ? "," : "", shown(&a, key),
                json_is_integer(v) ? (snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v)), num)
                                   : json_number(num, "%.6g", json_real_value(v)));
        any = 1;
    }
    fprintf(f, "%s\n", any ? "" : " - (not kept: not a bin/train checkpoint)");
    json_t *config = object_or_null(info->config);
    if (!json_is_null(config))
        fprintf(f, "config:     %s/%s (bin/train --config reads it)\n", shown(&a, info->path), RUN_DIR_CONFIG);
    else if (info->config)
        fprintf(f, "config:     %s/%s (not an experiment file: not a JSON object)\n", shown(&a, info->path),
                RUN_DIR_CONFIG);
    else if (info->config_note[0])
        fprintf(f, "config:     %s/%s (%s)\n", shown(&a, info->path), RUN_DIR_CONFIG, info->config_note);
    if (train) json_decref(train);
    json_decref(config);
}

/* The object of a run that could be read. */
static int run_fields(json_t *o, const RunInfo *info) {
    const ModelConfig *c = &info->h.cfg;
    const RunProgress *p = &info->progress;
    char *config = config_to_json(c), recipe[160];
    RunValKind kind = run_val_kind(info->h.train);
    int measured = !isnan(p->val_loss) || !isnan(p->best_val_loss);
    /* The data and tokenizer, by hash: runs of one group compare (bin/info --list groups them). */
    char group[40];
    snprintf(group, sizeof group, "%s/%s", info->data_hash[0] ? info->data_hash : "-",
             info->h.tokenizer[0] ? info->h.tokenizer : "-");
    json_t *data = info->data_hash[0] ? json_object() : json_null();
    if (data && json_is_object(data) &&
        (!put(data, "path", json_string_lossy(info->data)) || !put(data, "hash", json_string_lossy(info->data_hash)))) {
        json_decref(data);
        data = NULL;
    }
    json_t *tok = json_object();
    int ok = tok && put(tok, "kind", json_string_lossy(info->h.tok.kind ? info->h.tok.kind->name : "")) &&
             put(tok, "vocab", json_integer((json_int_t)info->h.tok.vocab_size)) &&
             put(tok, "hash", json_string_lossy(info->h.tokenizer));
    ok = ok && put(o, "resumable", json_boolean(info->h.moments)) && put(o, "step", json_integer((json_int_t)info->h.step)) &&
         put(o, "max_iters", info->max_iters ? json_integer((json_int_t)info->max_iters) : json_null()) &&
         put(o, "tokens", json_integer((json_int_t)p->tokens)) && put(o, "val_loss", number_or_null(p->val_loss)) &&
         put(o, "best_val_loss", number_or_null(p->best_val_loss)) &&
         put(o, "best_step", isnan(p->best_val_loss) ? json_null() : json_integer((json_int_t)p->best_step)) &&
         put(o, "best_checkpoint", json_boolean(info->has_best)) &&
         put(o, "val_loss_kind", !measured ? json_null() : json_string(kind.full ? "full" : "estimate")) &&
         put(o, "val_loss_batches", !measured || kind.full || !kind.batches ? json_null()
                                                                         : json_integer((json_int_t)kind.batches)) &&
         put(o, "params", json_integer((json_int_t)model_count_params(c))) && put(o, "model", object_or_null(config)) &&
         put(o, "recipe", json_string_lossy(config_has_recipe_switch(c) ? config_recipe_list(c, recipe, sizeof recipe)
                                                                          : "gpt2")) &&
         put(o, "tokenizer", tok) && put(o, "data", data) && put(o, "group", json_string_lossy(group)) &&
         put(o, "options", object_or_null(info->h.train)) &&
         put(o, "config", object_or_null(info->config));
    if (!ok && tok && !json_object_get(o, "tokenizer")) json_decref(tok);
    if (!ok && data && !json_object_get(o, "data")) json_decref(data);
    free(config);
    return ok;
}

char *run_info_json(const RunInfo *info) {
    json_t *o = json_object();
    int ok = o && put(o, "path", json_string_lossy(info->path)) && put(o, "name", json_string_lossy(info->name)) &&
             put(o, "run", json_boolean(info->is_run));
    if (ok && info->error[0]) ok = put(o, "error", json_string_lossy(info->error)); /* --list: unreadable */
    else if (ok) ok = put(o, "checkpoint", json_string_lossy(info->ckpt)) && run_fields(o, info);
    /* Nine digits: the float each loss and option is, as the checkpoint
     * writes it; ASCII: no byte of a name reaches a terminal as a control
     * (U+009B is CSI to some, DEL is one too). */
    char *text = ok ? json_dumps_ascii(o, JSON_REAL_PRECISION(9)) : NULL;
    if (o) json_decref(o);
    return text;
}

static void loss_text(char *buf, size_t size, float v) {
    if (isnan(v)) snprintf(buf, size, "-");
    else snprintf(buf, size, "%.4f", v);
}

/* A group's line: the data and the tokenizer its runs share. */
static void group_line(FILE *f, const RunInfo *r) {
    Shown data, tok;
    fprintf(f, "data %s (hash %s) | tokenizer %s, %zu tokens (hash %s)\n",
            r->data[0] ? shown(&data, r->data) : "- (not kept)", r->data_hash[0] ? r->data_hash : "-",
            r->h.tok.kind ? r->h.tok.kind->name : "?", r->h.tok.vocab_size,
            r->h.tokenizer[0] ? shown(&tok, r->h.tokenizer) : "-");
}

void run_info_list_print(FILE *f, const RunInfo *infos, size_t n) {
    size_t w = 4;
    Shown name;
    for (size_t i = 0; i < n; i++) w = strlen(shown(&name, infos[i].name)) > w ? strlen(name.s) : w;
    for (size_t i = 0; i < n; i++) {
        const RunInfo *r = &infos[i];
        char steps[48], best[32], last[32], mixers[256], of[32] = "-";
        Shown why;
        if (r->error[0]) { /* one line, as every run: why it cannot be read */
            if (i == 0 || !infos[i - 1].error[0]) fprintf(f, "%s", i ? "\n" : "");
            fprintf(f, "%-*s  unreadable: %s\n", (int)w, shown(&name, r->name), shown(&why, r->error));
            continue;
        }
        if (i == 0 || !run_info_same_group(r, &infos[i - 1])) { /* a new group: only its runs' losses compare */
            if (i) fputc('\n', f);
            group_line(f, r);
            fprintf(f, "%-*s  %9s  %12s  %9s  %9s  %-10s  %10s  %s\n", (int)w, "run", "step", "tokens", "best val",
                    "last val", "val from", "params", "mixers");
        }
        RunValKind kind = run_val_kind(r->h.train);
        if (!isnan(r->progress.best_val_loss) && kind.full) snprintf(of, sizeof of, "full split");
        else if (!isnan(r->progress.best_val_loss) && kind.batches)
            snprintf(of, sizeof of, "%zu batch%s", kind.batches, kind.batches == 1 ? "" : "es");
        if (r->max_iters) snprintf(steps, sizeof steps, "%zu/%zu", r->h.step, r->max_iters);
        else snprintf(steps, sizeof steps, "%zu", r->h.step);
        loss_text(best, sizeof best, r->progress.best_val_loss);
        loss_text(last, sizeof last, r->progress.val_loss);
        fprintf(f, "%-*s  %9s  %12zu  %9s  %9s  %-10s  %10zu  %s\n", (int)w, shown(&name, r->name), steps,
                r->progress.tokens, best, last, of, model_count_params(&r->h.cfg),
                config_mixer_list(&r->h.cfg, mixers, sizeof mixers));
    }
}
