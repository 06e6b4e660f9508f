/* A run's options as an experiment file (see train/run_config.h). */
#include "run_config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lm/checkpoint.h"
#include "lm/cli.h"
#include "lm/files.h"
#include "lm/json.h"
#include "run.h"
#include "run_dir.h"

/* The row whose value lives at dst (a field of the RunOptions the table
 * points into), or NULL. */
static OptionRow *row_at(OptionRow *opts, size_t n, const void *dst) {
    for (size_t i = 0; i < n; i++)
        if (opts[i].kind != OPT_HEADING && option_at(&opts[i], opts[i].base) == dst) return &opts[i];
    return NULL;
}

/* *dst = text, its row marked as given. */
static void give_text(OptionRow *opts, size_t n, const char **dst, const char *text) {
    OptionRow *row = row_at(opts, n, dst);
    *dst = text;
    if (row) row->given = 1;
}

void run_config_take(OptionRow *opts, size_t n, RunOptions *o, const RunOptions *run) {
    /* The texts live as long as the table's output is being made: one run per process. */
    static char mixers[1024], texts[RUN_MAX_MIXER_TEXTS][1024];
    size_t n_rows, n_texts;
    const OptionRow *rows = run_option_rows(&n_rows);
    for (size_t i = 0; i < n_rows; i++) {
        if (rows[i].role == RUN_ONCE) continue;
        void *dst = option_at(&rows[i], o); /* copied, not through a double: a seed has 60 bits */
        memcpy(dst, option_at(&rows[i], run), rows[i].kind == OPT_FLOAT ? sizeof(float) : sizeof(size_t));
        OptionRow *row = row_at(opts, n, dst);
        if (row) row->given = 1;
    }
    const ModelConfig *c = &run->cfg;
    give_text(opts, n, &o->mixer, config_mixer_list(c, mixers, sizeof mixers));
    give_text(opts, n, &o->pos, pos_name(c->pos));
    give_text(opts, n, &o->norm, norm_name(c->norm));
    give_text(opts, n, &o->norm_type, norm_type_name(c->norm_type));
    give_text(opts, n, &o->mlp_act, mlp_act_name(c->mlp_act));
    const OptionRow *mixer_texts = run_mixer_texts(&n_texts);
    for (size_t j = 0; j < n_texts; j++) {
        const char *now = config_option_text(c, mixer_texts[j].name, texts[j], sizeof texts[j]);
        /* At its default it stays as given (or null): a mixer's option set
         * away from its default is refused where no layer is that mixer's. */
        if (!mixer_texts[j].def_text || strcmp(now, mixer_texts[j].def_text) != 0)
            give_text(opts, n, &o->mixer_text[j], now);
    }
    give_text(opts, n, &o->precision_given, precision_name(run->precision));
    give_text(opts, n, &o->optimizer_given, run->optimizer->name);
    give_text(opts, n, &o->best_by_given, run->best_full ? "full" : "estimate");
}

/* The rows an experiment file leaves out: `base`'s, and the other
 * optimizers' own (given, they are refused: run_check_optimizer_options),
 * into skip (room for 64 + the base's and the NULL). */
static void config_skips(const RunOptions *o, const char *const *base, const char **skip) {
    size_t k = 0, n;
    while (base[k]) skip[k] = base[k], k++;
    const Optimizer *mine = o->optimizer_given ? optimizer_find(o->optimizer_given) : optimizer_at(0);
    const OptionRow *rows = run_option_rows(&n);
    for (size_t i = 0; i < n && k < 64; i++)
        if (rows[i].optimizer && rows[i].optimizer != mine) skip[k++] = rows[i].name;
    skip[k] = NULL;
}

/* --print-config of --resume: the run as its checkpoint's header gives it
 * (the folder's checkpoint for a run folder), the options given winning;
 * --resume, --run, --out and --log stay as given. */
static int take_resumed(OptionRow *opts, size_t n, RunOptions *o, size_t ranks, Error *err) {
    static RunOptions run; /* static: large */
    run = *o;
    if (run_dir_setup(&run, err) || run_resume_defaults(&run, err)) return -1;
    if (!o->data) o->data = o->data_owned = run.data_owned;
    if (run_options_parse_texts(&run, err)) return -1;
    CkptHeader h;
    if (ckpt_read_header(run.resume, &h, err)) return -1;
    run.cfg = h.cfg;
    int rc = run_options_from_json(&run, h.train, ranks, err);
    if (rc) {
        char why[sizeof err->msg];
        snprintf(why, sizeof why, "%s", err->msg);
        err_set(err, "'%s': %s", run.resume, why);
    }
    ckpt_header_free(&h);
    if (rc == 0) run_config_take(opts, n, o, &run);
    return rc;
}

int run_config_print(OptionRow *opts, size_t n, RunOptions *o, size_t ranks, const char *prog) {
    static const char *const not_config[] = {"config", "print-config", NULL};
    Error err;
    if (o->resume && take_resumed(opts, n, o, ranks, &err)) return cli_error(prog, "%s", err.msg);
    const char *skip[80];
    config_skips(o, not_config, skip);
    char *text = cli_config_json(opts, n, skip, NULL, &err);
    if (!text) return cli_error(prog, "%s", err.msg);
    fputs(text, stdout);
    free(text);
    return fflush(stdout) == 0 ? 0 : cli_error(prog, "cannot write the configuration: %s", strerror(errno));
}

int run_config_write(OptionRow *opts, size_t n, RunOptions *o, const RunOptions *run, const char *prog, Error *err) {
    /* --stop-at is where one invocation stops, not the run's: kept, the file would repeat only that part. */
    static const char *const own[] = {"config", "print-config", "resume", "out", "log", "stop-at", NULL};
    char path[PATH_BUF], *old = NULL;
    if (path_format(path, sizeof path, err, "%s/%s", o->run, RUN_DIR_CONFIG)) return -1;
    if (o->resume) {
        run_config_take(opts, n, o, run);
        Error read_err; /* none (a run from before config.json): written anew */
        old = read_file_head(path, 1 << 20, NULL, NULL, &read_err);
        json_t *parsed = old ? json_parse(old, strlen(old), &read_err) : NULL;
        if (old && !json_is_object(parsed)) {
            fprintf(stderr, "%s: warning: '%s' is not an experiment file (%s): written anew from the run's options\n",
                    prog, path, parsed ? "not a JSON object" : read_err.msg);
            free(old);
            old = NULL;
        }
        if (parsed) json_decref(parsed);
    }
    const char *skip[80];
    config_skips(o, own, skip);
    char *text = cli_config_json(opts, n, skip, old, err);
    free(old);
    int rc = text ? write_text_in(o->run, RUN_DIR_CONFIG, text, err) : -1;
    free(text);
    return rc;
}
