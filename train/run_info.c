/* A run read back (see train/run_info.h). */
#include "run_info.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lm/json.h"
#include "lm/model.h"
#include "run_dir.h"

static int is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int is_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The last part of path, trailing slashes left out. */
static void base_name(const char *path, char *out, size_t size) {
    size_t len = strlen(path);
    while (len > 1 && path[len - 1] == '/') len--;
    size_t start = len;
    while (start > 0 && path[start - 1] != '/') start--;
    snprintf(out, size, "%.*s", (int)(len - start), path + start);
}

int run_info_read(const char *path, RunInfo *info, Error *err) {
    memset(info, 0, sizeof *info);
    info->progress = (RunProgress){0, NAN, NAN, 0};
    if (path_format(info->path, sizeof info->path, err, "%s", path)) return -1;
    base_name(path, info->name, sizeof info->name);
    info->is_run = is_dir(path);
    if (info->is_run) {
        char best[PATH_BUF], config[PATH_BUF];
        if (path_format(info->ckpt, sizeof info->ckpt, err, "%s/%s", path, RUN_DIR_CKPT) ||
            path_format(best, sizeof best, err, "%s/%s", path, RUN_DIR_BEST) ||
            path_format(config, sizeof config, err, "%s/%s", path, RUN_DIR_CONFIG))
            return -1;
        if (!is_file(info->ckpt)) return err_set(err, "'%s' is not a run folder: it holds no %s", path, RUN_DIR_CKPT);
        info->has_best = is_file(best);
        Error config_err; /* a folder without config.json is still a run */
        info->config = is_file(config) ? read_file(config, NULL, &config_err) : NULL;
    } else if (path_format(info->ckpt, sizeof info->ckpt, err, "%s", path)) {
        return -1;
    }
    if (ckpt_read_header(info->ckpt, &info->h, err)) {
        run_info_free(info);
        return -1;
    }
    run_progress_from_json(info->h.train, &info->progress);
    Error json_err;
    json_t *train = json_parse(info->h.train, strlen(info->h.train), &json_err);
    if (train) {
        json_size(json_object_get(train, "max-iters"), SIZE_MAX, &info->max_iters);
        json_decref(train);
    }
    return 0;
}

void run_info_free(RunInfo *info) {
    ckpt_header_free(&info->h);
    free(info->config);
    info->config = NULL;
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

void run_info_print(FILE *f, const RunInfo *info) {
    const ModelConfig *c = &info->h.cfg;
    const RunProgress *p = &info->progress;
    Error err;
    json_t *train = json_parse(info->h.train, strlen(info->h.train), &err);
    char mixers[1024], recipe[160];
    if (info->is_run) fprintf(f, "run:        %s\n", info->path);
    fprintf(f, "checkpoint: %s (%.1f MiB%s)\n", info->ckpt, (double)info->h.file_bytes / (1024.0 * 1024.0),
            info->h.moments ? ", with optimizer state: resumable" : ", weights only");
    fprintf(f, "step:       %zu", info->h.step);
    if (info->max_iters) fprintf(f, " of %zu", info->max_iters);
    if (!isnan(p->val_loss) || p->tokens) fprintf(f, " | %zu tokens seen", p->tokens);
    fprintf(f, "\nval loss:   last ");
    print_loss(f, p->val_loss);
    fprintf(f, ", best ");
    print_loss(f, p->best_val_loss);
    if (!isnan(p->best_val_loss)) fprintf(f, " at step %zu%s", p->best_step, info->has_best ? " (best.ckpt)" : "");
    fprintf(f, "\nmodel:      %zu parameters | n_layer %zu, n_head %zu, n_embd %zu, block %zu, vocab %zu | mixers %s | "
               "pos %s | norm %s\n",
            model_count_params(c), c->n_layer, c->n_head, c->n_embd, c->block_size, c->vocab_size,
            config_mixer_list(c, mixers, sizeof mixers), pos_name(c->pos), norm_name(c->norm));
    fprintf(f, "recipe:     %s\n", config_has_recipe_switch(c) ? config_recipe_list(c, recipe, sizeof recipe)
                                                                 : "gpt2 (no switch of the modern recipe)");
    const char *optimizer = train_string(train, "optimizer"), *precision = train_string(train, "precision");
    fprintf(f, "optimizer:  %s | precision %s\n", optimizer ? optimizer : "adamw", precision ? precision : "fp32");
    fprintf(f, "tokenizer:  %s, %zu tokens (hash %s)\n", info->h.tok.kind ? info->h.tok.kind->name : "?",
            info->h.tok.vocab_size, info->h.tokenizer[0] ? info->h.tokenizer : "-");
    const char *data = train_string(train, "data"), *hash = train_string(train, "data_hash");
    fprintf(f, "data:       %s (hash %s)\n", data ? data : "- (not kept)", hash ? hash : "-");
    fprintf(f, "options:   ");
    const char *key;
    json_t *v;
    int any = 0;
    json_object_foreach(train, key, v) { /* the kept numbers, as bin/train --resume takes them */
        if (!json_is_number(v)) continue;
        char num[JSON_NUMBER_MAX];
        fprintf(f, "%s %s %s", any ? "," : "", key,
                json_is_integer(v) ? (snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v)), num)
                                   : json_number(num, "%.6g", json_real_value(v)));
        any = 1;
    }
    fprintf(f, "%s\n", any ? "" : " - (not kept: not a bin/train checkpoint)");
    if (info->config) fprintf(f, "config:     %s/%s (bin/train --config reads it)\n", info->path, RUN_DIR_CONFIG);
    if (train) json_decref(train);
}

char *run_info_json(const RunInfo *info) {
    const ModelConfig *c = &info->h.cfg;
    const RunProgress *p = &info->progress;
    char *sb = NULL, *config = config_to_json(c), num[JSON_NUMBER_MAX], recipe[160];
    sb_appendf(&sb, "{\"path\":");
    sb_append_json_string(&sb, info->path);
    sb_appendf(&sb, ",\"name\":");
    sb_append_json_string(&sb, info->name);
    sb_appendf(&sb, ",\"run\":%s,\"checkpoint\":", info->is_run ? "true" : "false");
    sb_append_json_string(&sb, info->ckpt);
    sb_appendf(&sb, ",\"resumable\":%s,\"step\":%zu,\"max_iters\":", info->h.moments ? "true" : "false", info->h.step);
    if (info->max_iters) sb_appendf(&sb, "%zu", info->max_iters);
    else sb_appendf(&sb, "null");
    sb_appendf(&sb, ",\"tokens\":%zu,\"val_loss\":%s", p->tokens, json_number(num, "%.9g", p->val_loss));
    sb_appendf(&sb, ",\"best_val_loss\":%s,\"best_step\":", json_number(num, "%.9g", p->best_val_loss));
    if (isnan(p->best_val_loss)) sb_appendf(&sb, "null");
    else sb_appendf(&sb, "%zu", p->best_step);
    sb_appendf(&sb, ",\"best_checkpoint\":%s,\"params\":%zu,\"model\":%s,\"recipe\":", info->has_best ? "true" : "false",
               model_count_params(c), config ? config : "null");
    sb_append_json_string(&sb, config_has_recipe_switch(c) ? config_recipe_list(c, recipe, sizeof recipe) : "gpt2");
    sb_appendf(&sb, ",\"tokenizer\":{\"kind\":");
    sb_append_json_string(&sb, info->h.tok.kind ? info->h.tok.kind->name : "");
    sb_appendf(&sb, ",\"vocab\":%zu,\"hash\":\"%s\"},\"options\":%s,\"config\":%s}", info->h.tok.vocab_size,
               info->h.tokenizer, info->h.train, info->config ? info->config : "null");
    free(config);
    char *out = sb ? strdup(sb) : NULL;
    sb_free(&sb);
    return out;
}

int run_sort_parse(const char *name) {
    static const char *const names[] = {"val", "name", "step"};
    for (int i = 0; i < 3; i++)
        if (strcmp(name, names[i]) == 0) return i;
    return -1;
}

static RunSort sort_by;
static int compare_runs(const void *pa, const void *pb) {
    const RunInfo *a = pa, *b = pb;
    if (sort_by == RUN_SORT_VAL) {
        float x = a->progress.best_val_loss, y = b->progress.best_val_loss;
        if (isnan(x) != isnan(y)) return isnan(x) ? 1 : -1;
        if (!isnan(x) && x != y) return x < y ? -1 : 1;
    } else if (sort_by == RUN_SORT_STEP && a->h.step != b->h.step) {
        return a->h.step > b->h.step ? -1 : 1;
    }
    return strcmp(a->name, b->name);
}

int run_info_list(const char *dir, RunSort sort, RunInfo **infos, size_t *n, Error *err) {
    *infos = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) return err_set(err, "cannot open folder '%s'", dir);
    struct dirent *e;
    size_t cap = 0;
    int rc = 0;
    while (rc == 0 && (e = readdir(d))) {
        char sub[PATH_BUF], ckpt[PATH_BUF];
        if (e->d_name[0] == '.') continue;
        if (path_format(sub, sizeof sub, err, "%s/%s", dir, e->d_name) ||
            path_format(ckpt, sizeof ckpt, err, "%s/%s", sub, RUN_DIR_CKPT)) {
            rc = -1;
            break;
        }
        if (!is_dir(sub) || !is_file(ckpt)) continue; /* not a run folder */
        if (*n == cap) {
            RunInfo *more = realloc(*infos, (cap = cap ? 2 * cap : 8) * sizeof **infos);
            if (!more) {
                rc = err_set(err, "out of memory");
                break;
            }
            *infos = more;
        }
        if (run_info_read(sub, &(*infos)[*n], err)) rc = -1;
        else (*n)++;
    }
    closedir(d);
    if (rc) {
        run_infos_free(*infos, *n);
        *infos = NULL;
        *n = 0;
        return -1;
    }
    sort_by = sort;
    if (*n) qsort(*infos, *n, sizeof **infos, compare_runs);
    return 0;
}

void run_infos_free(RunInfo *infos, size_t n) {
    for (size_t i = 0; i < n; i++) run_info_free(&infos[i]);
    free(infos);
}

static void loss_text(char *buf, size_t size, float v) {
    if (isnan(v)) snprintf(buf, size, "-");
    else snprintf(buf, size, "%.4f", v);
}

void run_info_list_print(FILE *f, const RunInfo *infos, size_t n) {
    size_t w = 4;
    for (size_t i = 0; i < n; i++) w = strlen(infos[i].name) > w ? strlen(infos[i].name) : w;
    fprintf(f, "%-*s  %9s  %12s  %9s  %9s  %10s  %s\n", (int)w, "run", "step", "tokens", "best val", "last val",
            "params", "mixers");
    for (size_t i = 0; i < n; i++) {
        const RunInfo *r = &infos[i];
        char steps[48], best[32], last[32], mixers[256];
        if (r->max_iters) snprintf(steps, sizeof steps, "%zu/%zu", r->h.step, r->max_iters);
        else snprintf(steps, sizeof steps, "%zu", r->h.step);
        loss_text(best, sizeof best, r->progress.best_val_loss);
        loss_text(last, sizeof last, r->progress.val_loss);
        fprintf(f, "%-*s  %9s  %12zu  %9s  %9s  %10zu  %s\n", (int)w, r->name, steps, r->progress.tokens, best, last,
                model_count_params(&r->h.cfg), config_mixer_list(&r->h.cfg, mixers, sizeof mixers));
    }
}
