/* A run folder as every program sees it (see include/lm/run_folder.h). */
#include "lm/run_folder.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "lm/checkpoint.h"
#include "lm/files.h"
#include "lm/json.h"

/* Whether dir/name is a regular file. */
static int file_in(const char *dir, const char *name) {
    char path[PATH_BUF];
    struct stat st;
    Error err;
    return path_format(path, sizeof path, &err, "%s/%s", dir, name) == 0 && stat(path, &st) == 0 &&
           S_ISREG(st.st_mode);
}

int run_dir_is_run(const char *dir) {
    if (file_in(dir, RUN_DIR_MARK)) return 1;
    /* A folder from before the marker: the three files every run folder has from its first step. */
    return file_in(dir, RUN_DIR_CKPT) && file_in(dir, RUN_DIR_CONFIG) && file_in(dir, RUN_DIR_LOG);
}

RunValKind run_val_kind(const char *train_json) {
    RunValKind kind = {0, 0};
    Error err;
    json_t *root = train_json ? json_parse(train_json, strlen(train_json), &err) : NULL;
    if (!json_is_object(root)) {
        if (root) json_decref(root);
        return kind;
    }
    const json_t *by = json_object_get(root, "best_by");
    kind.full = json_is_string(by) && strcmp(json_string_value(by), "full") == 0;
    if (json_size(json_object_get(root, "eval-iters"), SIZE_MAX, &kind.batches)) kind.batches = 0;
    json_decref(root);
    return kind;
}

const char *run_val_kind_text(RunValKind kind, char *buf, size_t size) {
    if (kind.full) snprintf(buf, size, "the full split");
    else if (kind.batches) snprintf(buf, size, "the estimate over %zu batch%s", kind.batches, kind.batches == 1 ? "" : "es");
    else snprintf(buf, size, "the estimate");
    return buf;
}

int run_folder_model(const char *path, char *ckpt, size_t size, char *note, size_t note_size, Error *err) {
    struct stat st;
    *note = '\0';
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) return path_format(ckpt, size, err, "%s", path);
    int best = file_in(path, RUN_DIR_BEST);
    if (!best && !file_in(path, RUN_DIR_CKPT))
        return err_set(err, "'%s' is a folder that holds no checkpoint: give a checkpoint, or a run folder of "
                            "bin/train (it holds %s and %s)", path, RUN_DIR_BEST, RUN_DIR_CKPT);
    if (path_format(ckpt, size, err, "%s/%s", path, best ? RUN_DIR_BEST : RUN_DIR_CKPT)) return -1;
    CkptHeader h;
    if (ckpt_read_header(ckpt, &h, err)) return -1;
    char kind[64];
    if (best)
        snprintf(note, note_size, "--model %s: reading %s (step %zu), the run's lowest validation loss by %s; its "
                 "last checkpoint is %s/%s", path, ckpt, h.step, run_val_kind_text(run_val_kind(h.train), kind,
                 sizeof kind), path, RUN_DIR_CKPT);
    else
        snprintf(note, note_size, "--model %s: reading %s (step %zu), the run's last checkpoint: it has no %s", path, ckpt,
                 h.step, RUN_DIR_BEST);
    ckpt_header_free(&h);
    return 1;
}
