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

/* The folder's config.json, when it is there and not larger than
 * RUN_INFO_CONFIG_MAX (a folder without one is still a run). */
static void read_config(RunInfo *info, const char *path) {
    struct stat st;
    if (lstat(path, &st) != 0) return;
    Error err;
    size_t len, size;
    if (!S_ISREG(st.st_mode)) snprintf(info->config_note, sizeof info->config_note, "not a regular file");
    else if (st.st_size > RUN_INFO_CONFIG_MAX)
        snprintf(info->config_note, sizeof info->config_note, "larger than %d bytes: not read", RUN_INFO_CONFIG_MAX);
    else if (!(info->config = read_file_head(path, RUN_INFO_CONFIG_MAX, &len, &size, &err)))
        snprintf(info->config_note, sizeof info->config_note, "cannot be read");
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
        read_config(info, config);
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
        const json_t *data = json_object_get(train, "data"), *hash = json_object_get(train, "data_hash");
        if (json_is_string(data)) snprintf(info->data, sizeof info->data, "%s", json_string_value(data));
        if (json_is_string(hash)) snprintf(info->data_hash, sizeof info->data_hash, "%s", json_string_value(hash));
        json_decref(train);
    }
    return 0;
}

int run_info_same_group(const RunInfo *a, const RunInfo *b) {
    return strcmp(a->data_hash, b->data_hash) == 0 && strcmp(a->h.tokenizer, b->h.tokenizer) == 0;
}

void run_info_free(RunInfo *info) {
    ckpt_header_free(&info->h);
    free(info->config);
    info->config = NULL;
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
    if (!a->error[0] != !b->error[0]) return a->error[0] ? 1 : -1; /* the unreadable last */
    int by_group = a->error[0] ? 0 : strcmp(a->data, b->data); /* a group's runs together: only theirs compare */
    if (!by_group) by_group = strcmp(a->data_hash, b->data_hash);
    if (!by_group) by_group = strcmp(a->h.tokenizer, b->h.tokenizer);
    if (by_group) return by_group;
    if (sort_by == RUN_SORT_VAL) {
        float x = a->progress.best_val_loss, y = b->progress.best_val_loss;
        if (isnan(x) != isnan(y)) return isnan(x) ? 1 : -1;
        if (!isnan(x) && x != y) return x < y ? -1 : 1;
    } else if (sort_by == RUN_SORT_STEP && a->h.step != b->h.step) {
        return a->h.step > b->h.step ? -1 : 1;
    }
    return strcmp(a->name, b->name);
}

/* A listing being made: the runs read so far. */
typedef struct Listing {
    RunInfo *infos;
    size_t n, cap;
} Listing;

/* Reads path (a run folder, or a checkpoint) into the listing under name;
 * one that cannot be read is listed with its error. */
static int list_one(Listing *l, const char *path, const char *name, Error *err) {
    if (l->n == l->cap) {
        RunInfo *more = realloc(l->infos, (l->cap = l->cap ? 2 * l->cap : 8) * sizeof *more);
        if (!more) return err_set(err, "out of memory");
        l->infos = more;
    }
    RunInfo *info = &l->infos[l->n++];
    Error why;
    if (run_info_read(path, info, &why)) { /* listed with its error: the others are still shown */
        memset(info, 0, sizeof *info);
        snprintf(info->path, sizeof info->path, "%s", path);
        info->is_run = is_dir(path);
        info->progress = (RunProgress){0, NAN, NAN, 0};
        snprintf(info->error, sizeof info->error, "%s", why.msg);
    }
    snprintf(info->name, sizeof info->name, "%s", name);
    return 0;
}

static int is_ckpt_name(const char *name) {
    size_t len = strlen(name);
    return name[0] != '.' && len > 5 && strcmp(name + len - 5, ".ckpt") == 0;
}

/* The checkpoints (*.ckpt) in the folder DIR/sub, named "sub/NAME". */
static int list_checkpoints_in(Listing *l, const char *folder, const char *sub, Error *err) {
    DIR *d = opendir(folder);
    if (!d) return 0; /* unreadable: nothing of it to list */
    int rc = 0;
    for (struct dirent *e; rc == 0 && (e = readdir(d));) {
        char path[PATH_BUF], name[512];
        if (!is_ckpt_name(e->d_name)) continue;
        if (path_format(path, sizeof path, err, "%s/%s", folder, e->d_name)) rc = -1;
        else if (is_file(path)) snprintf(name, sizeof name, "%s/%s", sub, e->d_name), rc = list_one(l, path, name, err);
    }
    closedir(d);
    return rc;
}

int run_info_list(const char *dir, RunSort sort, RunInfo **infos, size_t *n, Error *err) {
    *infos = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) return err_set(err, "cannot open folder '%s'", dir);
    struct dirent *e;
    Listing l = {NULL, 0, 0};
    int rc = 0;
    while (rc == 0 && (e = readdir(d))) {
        char sub[PATH_BUF], ckpt[PATH_BUF];
        if (e->d_name[0] == '.') continue;
        if (path_format(sub, sizeof sub, err, "%s/%s", dir, e->d_name) ||
            path_format(ckpt, sizeof ckpt, err, "%s/%s", sub, RUN_DIR_CKPT)) {
            rc = -1;
            break;
        }
        if (is_dir(sub) && is_file(ckpt)) rc = list_one(&l, sub, e->d_name, err); /* a run folder */
        else if (is_dir(sub)) rc = list_checkpoints_in(&l, sub, e->d_name, err); /* bin/train --out's, runs/demo */
        else if (is_ckpt_name(e->d_name) && is_file(sub)) rc = list_one(&l, sub, e->d_name, err);
    }
    closedir(d);
    *infos = l.infos;
    *n = l.n;
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

