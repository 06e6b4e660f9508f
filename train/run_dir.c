/* A run as a folder (see train/run_dir.h). */
#include "run_dir.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "lm/files.h"

int run_dir_mark(const char *dir, Error *err) {
    char path[PATH_BUF];
    struct stat st;
    if (path_format(path, sizeof path, err, "%s/%s", dir, RUN_DIR_MARK)) return -1;
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) return 0;
    return write_text_in(dir, RUN_DIR_MARK, "a run folder of bin/train: bin/train --resume DIR continues it, "
                                            "bin/info DIR shows it\n", err);
}

/* Whether the folder holds anything at all. */
static int has_entries(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int any = 0;
    for (struct dirent *e; !any && (e = readdir(d));) any = strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return any;
}

int run_dir_holding(const char *path, char *dir, size_t size) {
    /* The folder as written: a file is renamed into it, never through a link. */
    const char *cut = strrchr(path, '/');
    Error err;
    if (path_format(dir, size, &err, "%.*s", cut ? (int)(cut - path) : 1, cut ? path : ".")) return 0;
    if (cut == path) snprintf(dir, size, "/");
    return run_dir_is_run(dir);
}

/* --resume FILE, FILE a file of the run folder dir: the folder's ckpt
 * continues the run (as --resume DIR) when nothing else is said of where
 * it goes; any other file (best.ckpt, step-N.ckpt) is never continued in
 * place, which would replace the best checkpoint with a later one, but may
 * go on elsewhere (--out outside any run folder). */
static int resume_file_of_run(RunOptions *o, const char *dir, Error *err) {
    char ckpt[PATH_BUF];
    if (path_format(ckpt, sizeof ckpt, err, "%s/%s", dir, RUN_DIR_CKPT)) return -1;
    if (o->out || o->run) return 0; /* a run elsewhere, from it: their own checks follow */
    if (!output_same_path(o->resume, ckpt))
        return err_set(err, "--resume %s: a file of the run folder '%s', which is never continued in place: continue "
                            "the run with --resume %s, or go on from this checkpoint elsewhere with --out FILE",
                       o->resume, dir, dir);
    o->resume = dir; /* the run in it */
    return 0;
}

int run_dir_setup(RunOptions *o, Error *err) {
    struct stat st;
    char dir[PATH_BUF];
    if (o->resume && stat(o->resume, &st) == 0 && S_ISREG(st.st_mode) && run_dir_holding(o->resume, dir, sizeof dir)) {
        if (path_format(o->run_dir, sizeof o->run_dir, err, "%s", dir) || resume_file_of_run(o, o->run_dir, err))
            return -1;
    }
    if (o->resume && stat(o->resume, &st) == 0 && S_ISDIR(st.st_mode)) { /* --resume DIR: the run in it */
        if (o->run && strcmp(o->run, o->resume) != 0)
            return err_set(err, "--run %s and --resume %s: a resumed run goes on in its own folder (leave --run out)",
                           o->run, o->resume);
        o->run = o->resume;
        if (path_format(o->run_ckpt, sizeof o->run_ckpt, err, "%s/%s", o->run, RUN_DIR_CKPT) ||
            path_format(o->run_best, sizeof o->run_best, err, "%s/%s", o->run, RUN_DIR_BEST))
            return -1;
        int has_ckpt = stat(o->run_ckpt, &st) == 0;
        if (!run_dir_is_run(o->run)) {
            if (has_ckpt)
                return err_set(err, "--resume %s: the folder is not a run folder of bin/train, whose files a resumed "
                                    "run writes: continue its checkpoint alone with --resume %s", o->run, o->run_ckpt);
            return err_set(err, "--resume %s: the folder holds no run (no %s in it)", o->run, RUN_DIR_CKPT);
        }
        if (has_ckpt) o->resume = o->run_ckpt;
        else if (stat(o->run_best, &st) == 0) o->resume = o->run_best; /* killed before its first ckpt: from its best */
        else return err_set(err, "--resume %s: the folder holds no run (no %s in it)", o->run, RUN_DIR_CKPT);
    } else if (o->run && o->resume) {
        return err_set(err, "--run starts a run in a folder; continue one with --resume DIR alone");
    }
    if (!o->run) return 0;
    if (o->out || o->log)
        return err_set(err, "--%s: a run folder keeps its own checkpoint and log (%s/%s, %s/%s): leave --out and --log "
                            "out, or --run", o->out ? "out" : "log", o->run, RUN_DIR_CKPT, o->run, RUN_DIR_LOG);
    if (path_format(o->run_ckpt, sizeof o->run_ckpt, err, "%s/%s", o->run, RUN_DIR_CKPT) ||
        path_format(o->run_log, sizeof o->run_log, err, "%s/%s", o->run, RUN_DIR_LOG) ||
        path_format(o->run_jsonl, sizeof o->run_jsonl, err, "%s/%s", o->run, RUN_DIR_JSONL) ||
        path_format(o->run_best, sizeof o->run_best, err, "%s/%s", o->run, RUN_DIR_BEST))
        return -1;
    if (!o->resume) {
        int ours = run_dir_is_run(o->run);
        if (stat(o->run_ckpt, &st) == 0 || (ours && stat(o->run_best, &st) == 0))
            return err_set(err, "'%s' holds a run already: continue it with --resume %s, or give another folder",
                           o->run, o->run);
        /* A folder of the user's own is never written into: its files
         * (a config.json, a best.ckpt) would be replaced. */
        if (!ours && stat(o->run, &st) == 0 && S_ISDIR(st.st_mode) && has_entries(o->run))
            return err_set(err, "--run %s: the folder is not a run folder of bin/train and not empty: its files would "
                                "be replaced; give a new or empty folder", o->run);
    }
    o->out = o->run_ckpt;
    o->log = o->run_log;
    o->log_twin = o->run_jsonl;
    return 0;
}

int run_dir_numbered(const RunOptions *o, size_t step, char *buf, size_t size, Error *err) {
    if (o->run) return path_format(buf, size, err, "%s/step-%06zu.ckpt", o->run, step);
    return path_format(buf, size, err, "%s.step-%06zu", o->out, step);
}
