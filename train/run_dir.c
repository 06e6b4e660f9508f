/* A run as a folder (see train/run_dir.h). */
#include "run_dir.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "lm/files.h"

int run_dir_setup(RunOptions *o, Error *err) {
    struct stat st;
    if (o->resume && stat(o->resume, &st) == 0 && S_ISDIR(st.st_mode)) { /* --resume DIR: the run in it */
        if (o->run && strcmp(o->run, o->resume) != 0)
            return err_set(err, "--run %s and --resume %s: a resumed run goes on in its own folder (leave --run out)",
                           o->run, o->resume);
        o->run = o->resume;
        if (path_format(o->run_ckpt, sizeof o->run_ckpt, err, "%s/%s", o->run, RUN_DIR_CKPT)) return -1;
        if (stat(o->run_ckpt, &st) != 0)
            return err_set(err, "--resume %s: the folder holds no run (no %s in it)", o->run, RUN_DIR_CKPT);
        o->resume = o->run_ckpt;
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
    if (!o->resume && stat(o->run_ckpt, &st) == 0)
        return err_set(err, "'%s' holds a run already: continue it with --resume %s, or give another folder", o->run,
                       o->run);
    o->out = o->run_ckpt;
    o->log = o->run_log;
    o->log_twin = o->run_jsonl;
    return 0;
}

int run_dir_numbered(const RunOptions *o, size_t step, char *buf, size_t size, Error *err) {
    if (o->run) return path_format(buf, size, err, "%s/step-%06zu.ckpt", o->run, step);
    return path_format(buf, size, err, "%s.step-%06zu", o->out, step);
}
