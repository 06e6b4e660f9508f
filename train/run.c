/* A training run's set-up and the checks of a resumed one (see train/run.h). */
#include "run.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lm/json.h"
#include "lm/checkpoint.h"
#include "lm/files.h"
#include "lm/machine.h"
#include "model_options.h"
#include "run_dir.h"
#include "run_log.h"

int run_resume_defaults(RunOptions *o, Error *err) {
    if (!o->resume) return 0;
    if (!o->out) o->out = o->resume; /* continued in place: the new checkpoint is renamed over it */
    if (o->data) return 0;
    char *train;
    if (ckpt_read_train(o->resume, &train, err)) return -1;
    json_t *root = json_parse(train, strlen(train), err);
    free(train);
    if (!root) return -1;
    const json_t *data = json_object_get(root, "data");
    int rc = 0;
    if (!json_is_string(data) || !*json_string_value(data))
        rc = err_set(err, "--data DIR is required: '%s' does not name the data it was trained on (it is older than "
                          "bin/train keeping it)", o->resume);
    else if (!(o->data = o->data_owned = strdup(json_string_value(data))))
        rc = err_set(err, "out of memory");
    json_decref(root);
    return rc;
}

int run_check_model(const RunOptions *o, const ModelConfig *ckpt, int init, Error *err) {
    size_t n_rows;
    const OptionRow *rows = run_option_rows(&n_rows);
    for (size_t i = 0; i < n_rows; i++) {
        const OptionRow *r = &rows[i];
        if (r->role != RUN_ARCH || !run_option_given(o, i)) continue;
        if (init && r->offset == offsetof(RunOptions, cfg.dropout)) continue;
        const void *mine = option_at(r, o);
        const void *have = (const char *)ckpt + (r->offset - offsetof(RunOptions, cfg)); /* RUN_ARCH: in cfg */
        int is_float = r->kind == OPT_FLOAT;
        if (is_float ? *(const float *)mine != *(const float *)have : *(const size_t *)mine != *(const size_t *)have) {
            if (is_float)
                return err_set(err, "--%s %g differs from the checkpoint's %g: the model comes from the checkpoint",
                               r->name, *(const float *)mine, *(const float *)have);
            return err_set(err, "--%s %zu differs from the checkpoint's %zu: the model comes from the checkpoint", r->name,
                           *(const size_t *)mine, *(const size_t *)have);
        }
    }
    if (o->pos && strcmp(o->pos, pos_name(ckpt->pos)) != 0)
        return err_set(err, "--pos %s differs from the checkpoint's %s", o->pos, pos_name(ckpt->pos));
    if (o->norm && strcmp(o->norm, norm_name(ckpt->norm)) != 0)
        return err_set(err, "--norm %s differs from the checkpoint's %s", o->norm, norm_name(ckpt->norm));
    if (o->norm_type && strcmp(o->norm_type, norm_type_name(ckpt->norm_type)) != 0)
        return err_set(err, "--norm-type %s differs from the checkpoint's %s", o->norm_type, norm_type_name(ckpt->norm_type));
    if (o->mlp_act && strcmp(o->mlp_act, mlp_act_name(ckpt->mlp_act)) != 0)
        return err_set(err, "--mlp-act %s differs from the checkpoint's %s", o->mlp_act, mlp_act_name(ckpt->mlp_act));
    ModelConfig mine = *ckpt;
    if (o->mixer) {
        if (config_set_mixers(&mine, o->mixer, err)) return -1;
        char have[256];
        /* Only the model's layers: one name fills every slot, and the
         * checkpoint's slots past n_layer hold whatever its defaults left. */
        if (memcmp(mine.mixers, ckpt->mixers, ckpt->n_layer * sizeof mine.mixers[0]) != 0)
            return err_set(err, "--mixer %s differs from the checkpoint's %s", o->mixer,
                           config_mixer_list(ckpt, have, sizeof have));
    }
    size_t n_texts;
    const OptionRow *texts = run_mixer_texts(&n_texts);
    for (size_t j = 0; j < n_texts; j++) {
        const char *text = o->mixer_text[j], *name = texts[j].name;
        if (!text) continue;
        if (config_set_option(&mine, name, text, err)) return -1;
        char want[1024], have[1024]; /* compared in the mixer's canonical form (each layer's window offsets) */
        if (strcmp(config_option_text(&mine, name, want, sizeof want), config_option_text(ckpt, name, have, sizeof have)) != 0)
            return err_set(err, "--%s %s differs from the checkpoint's %s", name, text, have);
    }
    return 0;
}

int run_check_memory(const ModelConfig *cfg, const RunOptions *o, size_t ckpt_bytes, Error *err) {
    char what[240];
    int bf16 = o->precision == PRECISION_BF16;
    size_t scratch = optimizer_scratch_bytes(o->optimizer, cfg); /* Muon's Newton-Schulz products; AdamW's 0 */
    size_t state = optimizer_state_bytes(o->optimizer, cfg);
    snprintf(what, sizeof what, "%sweights, gradients, %s and activations for batch %zu x %zu%s",
             ckpt_bytes ? "the checkpoint file, " : "",
             scratch ? "the optimizer's state and scratch" : "AdamW moments", o->batch_size, cfg->block_size,
             bf16 ? ", with the bf16 weights and operands" : "");
    size_t need = ckpt_bytes + model_memory_bytes(cfg, o->batch_size, cfg->block_size, 1, o->grad_accum > 1) +
                  state + scratch + (bf16 ? model_bf16_bytes(cfg, o->batch_size, cfg->block_size) : 0);
    /* A checkpoint fixes the model: only the batch is the run's to choose. */
    const char *advice = o->resume || o->init ? "use a smaller --batch-size (--grad-accum keeps the tokens per step)"
                                              : "use a smaller model, --batch-size or --block-size";
    return memory_check(need, "this run", what, advice, err);
}

/* The run's optimizer state for its model, every buffer zero (a new run's),
 * and the model's gradients. */
static int alloc_training(Run *r, Error *err) {
    ParamView p = params_view(&r->model);
    return model_alloc_grads(&r->model, err) || optim_state_init(&r->optim, r->o.optimizer, &p, err) ? -1 : 0;
}

/* Loads a checkpoint for --resume or --init: the config from the header
 * first (loading reads the whole file) for the memory check, then the model,
 * whose tokenizer must be the data's and whose config the model options given
 * must match. For --resume (file not NULL) the checkpoint stays open in
 * *file, for its optimizer's state once the run's options name the
 * optimizer (ckpt_close). */
static int load_checkpoint(Run *r, const char *path, CkptFile *file, CkptState *st, Error *err) {
    RunOptions *o = &r->o;
    ModelConfig cfg;
    size_t file_bytes;
    CkptFile own;
    CkptFile *f = file ? file : &own;
    if (ckpt_read_config(path, &cfg, &file_bytes, err) || run_check_memory(&cfg, o, file_bytes, err) ||
        ckpt_open(f, path, err))
        return -1;
    if (ckpt_read_model(f, &r->model, st, file != NULL, err)) {
        ckpt_close(f);
        return -1;
    }
    int rc = 0;
    if (strcmp(st->tokenizer, r->ds.tok.hash) != 0)
        rc = err_set(err, "checkpoint '%s' was trained with tokenizer %s but '%s' has tokenizer %s", path,
                     st->tokenizer, o->data, r->ds.tok.hash);
    else if (run_check_model(o, &r->model.cfg, file == NULL, err))
        rc = -1;
    if (rc) {
        ckpt_state_free(st);
        model_free(&r->model);
    }
    if (rc || !file) ckpt_close(f);
    return rc;
}

/* The checkpoint of --resume: the model, the step, the data position, the
 * run's options (those given on the command line win) and the state of the
 * optimizer they name. */
static int resume(Run *r, Error *err) {
    RunOptions *o = &r->o;
    CkptState st;
    CkptFile file;
    int moments;
    size_t ranks = (size_t)r->dist->size;
    if (ckpt_has_moments(o->resume, &moments, err)) return -1;
    if (!moments)
        return err_set(err, "'%s' holds weights only, no optimizer state to continue: start a new run from it with "
                            "--init %s", o->resume, o->resume);
    if (load_checkpoint(r, o->resume, &file, &st, err)) return -1;
    int rc = 0;
    if (run_options_from_json(o, st.train, ranks, err)) {
        char why[sizeof err->msg];
        snprintf(why, sizeof why, "%s", err->msg);
        rc = err_set(err, "'%s': %s", o->resume, why);
    }
    if (rc == 0 && (alloc_training(r, err) || ckpt_read_optim(&file, &r->model, &r->optim.buffers, err))) rc = -1;
    ckpt_close(&file);
    o->cfg = r->model.cfg;
    r->start_step = st.step;
    if (!run_progress_from_json(st.train, &r->progress)) /* older than the progress it keeps: its tokens from its step */
        r->progress.tokens = st.step * o->batch_size * o->cfg.block_size * o->grad_accum * ranks;
    r->data_rng.state = st.data_rng;
    ckpt_state_free(&st);
    if (rc) model_free(&r->model), optim_state_free(&r->optim);
    return rc;
}

/* --init: a new run from a checkpoint's weights, its model and tokenizer,
 * with a fresh (zero) optimizer state, step 0, the data stream from the
 * seed and every run option from the command line; --dropout, when given,
 * is the new run's. What the checkpoint's own run stored (optimizer state,
 * step, data position, options) is not read. */
static int init_from(Run *r, Error *err) {
    RunOptions *o = &r->o;
    CkptState st;
    if (load_checkpoint(r, o->init, NULL, &st, err)) return -1;
    ckpt_state_free(&st);
    Model *m = &r->model;
    if (run_option_given_named(o, "dropout")) m->cfg.dropout = o->cfg.dropout;
    o->cfg = m->cfg;
    rng_seed(&r->data_rng, o->seed);
    return alloc_training(r, err);
}

/* Whether an option's text (config_option_text's) is its default. */
static int at_default(const OptionRow *opt, const char *text) {
    if (opt->kind == OPT_TEXT) return opt->def_text && strcmp(text, opt->def_text) == 0;
    return strtod(text, NULL) == opt->def;
}

/* A new model's mixers' options: one kept only where a layer uses it
 * (OptionRow.omit_default: --attn-window, --grassmann-pair), set for a
 * model with no layer of its mixer, would be stored and change nothing;
 * and a window longer than the block is the whole block. Both refused. */
static int check_mixer_options(const ModelConfig *cfg, Error *err) {
    char text[1024], mixers[256];
    for (size_t i = 0; i < mixer_count(); i++) {
        const Mixer *mx = mixer_at(i);
        int used = 0;
        for (size_t l = 0; l < cfg->n_layer; l++) used |= cfg->mixers[l] == mx;
        for (size_t k = 0; k < mx->n_options && !used; k++) {
            const OptionRow *opt = &mx->options[k];
            if (!opt->omit_default || at_default(opt, config_option_text(cfg, opt->name, text, sizeof text))) continue;
            return err_set(err, "--%s %s is for %s layers, and this model has none (--mixer %s): leave it out",
                           opt->name, text, mx->name, config_mixer_list(cfg, mixers, sizeof mixers));
        }
    }
    /* The one option that counts positions (attention's sliding window). */
    size_t window = config_find_option("attn-window", NULL)
                        ? strtoul(config_option_text(cfg, "attn-window", text, sizeof text), NULL, 10) : 0;
    if (window > cfg->block_size)
        return err_set(err, "--attn-window %zu is longer than the block (--block-size %zu): every position would see "
                            "its whole context; leave it out (0: all of it) or give at most %zu", window,
                       cfg->block_size, cfg->block_size);
    return 0;
}

/* A new model from the options. */
static int create(Run *r, int count_only, Error *err) {
    RunOptions *o = &r->o;
    o->cfg.vocab_size = r->ds.tok.vocab_size;
    /* The config is the same on every rank; the memory may not be. */
    int bad_config = model_config_from_options(o, err) != 0 || check_mixer_options(&o->cfg, err) != 0;
    int failed = bad_config || (!count_only && run_check_memory(&o->cfg, o, 0, err)) ||
                 model_init(&r->model, &o->cfg, o->seed, err);
    if (dist_agree(r->dist, failed, err)) return -1;
    if (dist_agree(r->dist, alloc_training(r, err) != 0, err)) return -1;
    rng_seed(&r->data_rng, o->seed);
    return 0;
}

/* A resumed run told to stop where it stands already (a typo: --max-iters
 * 100 at step 297) would save its checkpoint again and exit 0: a
 * --max-iters or --stop-at given that ends it at or before `start` is
 * refused. */
static int check_stop(const RunOptions *o, size_t start, Error *err) {
    if (!o->resume || o->stop_at > start) return 0;
    if (run_option_given_named(o, "max-iters") && o->max_iters <= start)
        return err_set(err, "--max-iters %zu is not above step %zu, where the run resumes: nothing would be trained "
                            "(leave it out to keep the run's schedule, or give more than %zu to extend it)",
                       o->max_iters, start, start);
    if (run_option_given_named(o, "stop-at") && o->stop_at < o->max_iters)
        return err_set(err, "--stop-at %zu is not above step %zu, where the run resumes: nothing would be trained "
                            "(give more than %zu, or leave it out to train to the end of the schedule)",
                       o->stop_at, start, start);
    if (run_option_given_named(o, "stop-at"))
        return err_set(err, "--stop-at: the run's schedule ends at step %zu, where it resumes: nothing would be "
                            "trained (extend it with a --max-iters above %zu)", o->max_iters, start);
    return 0;
}

/* The buffers of a training step, and the schedule's and optimizer's settings. */
static int prepare_steps(Run *r, Error *err) {
    RunOptions *o = &r->o;
    Dist *dist = r->dist;
    size_t B = o->batch_size, T = o->cfg.block_size;
    /* --stop-at defaults to the end of the schedule */
    if (!run_option_given_named(o, "stop-at")) o->stop_at = o->max_iters;
    if (o->stop_at > o->max_iters) o->stop_at = o->max_iters;
    if (check_stop(o, r->start_step, err)) return -1;
    if (r->ds.train.n <= T || r->ds.val.n <= T)
        return err_set(err, "'%s' is too small for block_size %zu (train %zu, val %zu tokens)", o->data, T,
                       r->ds.train.n, r->ds.val.n);
    if (o->min_lr > o->lr) return err_set(err, "--min-lr (%g) must not exceed --lr (%g)", o->min_lr, o->lr);
    if (dist_agree(dist, model_alloc_acts(&r->model, B, T, err) != 0 ||
                             (o->grad_accum > 1 && model_alloc_grad_accum(&r->model, err) != 0) ||
                             model_set_precision(&r->model, o->precision, err) != 0, err))
        return -1;
    r->inputs = calloc(B * T, sizeof(int32_t));
    r->targets = calloc(B * T, sizeof(int32_t));
    if (dist_agree(dist, !r->inputs || !r->targets ? err_set(err, "out of memory") : 0, err)) return -1;
    r->hyper = (TrainHyper){.batch_size = B, .grad_accum = o->grad_accum, .max_iters = o->max_iters,
                            .warmup_iters = o->warmup_iters, .eval_iters = o->eval_iters, .lr = o->lr,
                            .min_lr = o->min_lr, .grad_clip = o->grad_clip,
                            .adam = {o->beta1, o->beta2, o->eps, o->weight_decay},
                            .optim_settings = o->optim_settings[optimizer_index(o->optimizer)].bytes, .seed = o->seed,
                            .window_align = o->window_align, .max_seconds = o->max_seconds,
                            .train_mask = r->masks.train.marked, .val_mask = r->masks.val.marked};
    return 0;
}

/* A run folder's files are its run's alone: --out and --log of a run
 * outside it are refused there (a run continues its folder with --resume
 * DIR). */
static int outside_runs(const RunOptions *o, const char *path, const char *what, Error *err) {
    char dir[PATH_BUF];
    if (o->run || !run_dir_holding(path, dir, sizeof dir)) return 0;
    return err_set(err, "%s '%s' is in the run folder '%s', whose files its own run writes: give a path elsewhere "
                        "(continue that run with --resume %s)", what, path, dir, dir);
}

/* Every file the run writes (--out, --dump-grads, --log) against the one
 * rule of lm/files.h, before any work: none of them a device, folder or
 * one of the run's inputs; --out may be --resume's or --init's checkpoint
 * (a run continued in place: the new one is renamed over it), the others
 * may not. An existing log is appended to or replaced only if it is one. */
static int check_outputs(const RunOptions *o, Error *err) {
    static const char *const data_files[] = {"train.bin", "val.bin", "test.bin", "tokenizer.txt", "tokenizer.json",
                                             "train.mask", "val.mask"};
    enum { N_DATA = sizeof data_files / sizeof data_files[0] };
    char paths[N_DATA][PATH_BUF];
    NamedPath inputs[N_DATA + 4];
    size_t n = 0;
    for (size_t i = 0; i < N_DATA; i++) {
        if (path_format(paths[i], sizeof paths[i], err, "%s/%s", o->data, data_files[i])) return -1;
        inputs[n++] = (NamedPath){"a file of --data", paths[i]};
    }
    size_t n_data = n;
    inputs[n++] = (NamedPath){"--resume", o->resume};
    inputs[n++] = (NamedPath){"--init", o->init};
    if (o->dump) return output_check(o->dump, "--dump-grads", OUTPUT_FILE, inputs, n, err);
    if (output_check(o->out, "--out", OUTPUT_FILE, inputs, n_data, err) || outside_runs(o, o->out, "--out", err))
        return -1;
    if (!o->log) return 0;
    if (output_same_path(o->log, o->out))
        return err_set(err, "--log '%s' is --out too: the checkpoint would replace the log; give another path", o->log);
    if (outside_runs(o, o->log, "--log", err)) return -1;
    inputs[n++] = (NamedPath){"--out", o->out};
    if (output_check(o->log, "--log", OUTPUT_FILE, inputs, n, err) || run_log_check(o->log, err)) return -1;
    return o->log_twin && (output_check(o->log_twin, "the run's JSON log", OUTPUT_FILE, inputs, n, err) ||
                           run_log_check(o->log_twin, err)) ? -1 : 0;
}

/* What killed runs left: the temporaries of every file the run writes (in
 * a run folder, of every file in it); how many were removed. */
static int remove_left_temporaries(const RunOptions *o, Error *err) {
    if (o->run) return remove_dead_temporaries_like(o->run, "", err);
    char dir[PATH_BUF], numbered[PATH_BUF];
    const char *slash = strrchr(o->out, '/'), *base = slash ? slash + 1 : o->out;
    if (path_format(dir, sizeof dir, err, "%.*s", slash ? (int)(slash - o->out) + 1 : 1, slash ? o->out : ".") ||
        path_format(numbered, sizeof numbered, err, "%s.step-", base))
        return 0;
    int n = remove_dead_temporaries(o->out, err) + remove_dead_temporaries_like(dir, numbered, err);
    return n + (o->log ? remove_dead_temporaries(o->log, err) : 0);
}

/* The folders --out and --log go into, created with their parents as
 * --run's is (--out runs/bpe/model.ckpt in a new runs/bpe). */
static int create_folders(const RunOptions *o, Error *err) {
    const char *paths[] = {o->out, o->log}, *names[] = {"--out", "--log"};
    for (size_t i = 0; i < 2; i++) {
        const char *cut = paths[i] ? strrchr(paths[i], '/') : NULL;
        char dir[PATH_BUF];
        Error why;
        if (!cut || cut == paths[i]) continue; /* here, or in / */
        if (path_format(dir, sizeof dir, err, "%.*s", (int)(cut - paths[i]), paths[i])) return -1;
        if (dirs_create(dir, &why)) return err_set(err, "%s '%s': %s", names[i], paths[i], why.msg);
    }
    return 0;
}

int run_claim_output(const RunOptions *o, Dist *dist, const char *prog, OutputLock *lock, Error *err) {
    lock->fd = -1;
    /* The marker last: a folder the checks refuse is not made a run's. */
    int failed = dist->rank == 0 && ((o->run ? dirs_create(o->run, err) : !o->dump && create_folders(o, err)) ||
                                     check_outputs(o, err) != 0 || (o->run && run_dir_mark(o->run, err)));
    if (dist_agree(dist, failed, err)) return -1;
    if (o->dump) return 0;
    failed = dist->rank == 0 && output_lock(o->out, lock, err) != 0;
    if (dist_agree(dist, failed, err)) return -1;
    if (dist->rank != 0) return 0;
    int removed = remove_left_temporaries(o, err);
    if (removed > 0)
        fprintf(stderr, "%s: removed %d temporar%s of %s left by runs that were killed\n", prog, removed,
                removed == 1 ? "y" : "ies", o->run ? o->run : o->out);
    return 0;
}

int run_open(Run *r, const RunOptions *o, Dist *dist, int count_only, Error *err) {
    memset(r, 0, sizeof *r);
    r->o = *o;
    r->progress = (RunProgress){0, NAN, NAN, 0};
    r->dist = dist;
    if (o->resume && o->init)
        return err_set(err, "--init and --resume cannot be used together: --init starts a new run from a checkpoint's "
                            "weights, --resume continues the run that wrote it");
    /* Every rank reads the same data (and checkpoint). */
    char train_bin[4096], val_bin[4096], tok_txt[4096];
    snprintf(train_bin, sizeof train_bin, "%s/train.bin", o->data);
    snprintf(val_bin, sizeof val_bin, "%s/val.bin", o->data);
    snprintf(tok_txt, sizeof tok_txt, "%s/tokenizer.txt", o->data);
    const char *same_files[] = {train_bin, val_bin, tok_txt, o->resume ? o->resume : o->init, NULL};
    if (dist_check_files(dist, same_files, err)) return -1;
    if (dist_agree(dist, dataset_open(&r->ds, o->data, 0, err) != 0, err)) return -1;
    dataset_hash(&r->ds, r->o.data_hash);
    if (!realpath(o->data, r->o.data_real)) snprintf(r->o.data_real, sizeof r->o.data_real, "%s", o->data);
    if (o->resume) {
        if (o->max_seconds > 0)
            return err_set(err, "--max-seconds cannot be used with --resume: the time budget belongs to one run");
        if (dist_agree(dist, resume(r, err) != 0, err)) return -1;
        /* A checkpoint's model is allocated already; its activations are not. */
        if (dist_agree(dist, run_check_memory(&r->o.cfg, &r->o, 0, err) != 0, err)) return -1;
    } else if (o->init) {
        if (dist_agree(dist, init_from(r, err) != 0, err)) return -1;
    } else if (create(r, count_only, err)) {
        return -1;
    }
    if (count_only) return 0;
    if (!r->o.no_loss_mask && dist_agree(dist, loss_masks_open(&r->masks, o->data, &r->ds, err) != 0, err)) return -1;
    return prepare_steps(r, err);
}

void run_close(Run *r) {
    free(r->inputs);
    free(r->targets);
    optim_state_free(&r->optim);
    model_free(&r->model);
    loss_masks_free(&r->masks);
    dataset_free(&r->ds);
    memset(r, 0, sizeof *r);
}

int run_save(Run *r, const char *path, size_t step, Error *err) {
    int failed = 0;
    if (r->dist->rank == 0) {
        CkptState s = {.step = step, .data_rng = r->data_rng.state};
        memcpy(s.tokenizer, r->ds.tok.hash, 17);
        s.tokenizer_text = tokenizer_to_text(&r->ds.tok);
        s.train = run_state_json(&r->o, &r->progress, (size_t)r->dist->size);
        failed = !s.train ? err_set(err, "out of memory"), 1 : ckpt_save(path, &r->model, &r->optim.buffers, &s, err) != 0;
        ckpt_state_free(&s);
    }
    return dist_agree(r->dist, failed, err);
}
