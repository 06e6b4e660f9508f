/* bin/train's options, their defaults and their checkpoint form (see train/run_options.h). */
#include "run_options.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lm/json.h"

/* A row of RunOptions' field: a size_t (N) or a float (X). */
#define SZ(NAME, FIELD, LO, HI, ROLE, HELP) \
    {.name = (NAME), .kind = OPT_SIZE, .offset = offsetof(RunOptions, FIELD), .lo = (LO), .hi = (HI), .value = "N", \
     .help = (HELP), .role = (ROLE)}
#define FL(NAME, FIELD, LO, HI, ROLE, HELP) \
    {.name = (NAME), .kind = OPT_FLOAT, .offset = offsetof(RunOptions, FIELD), .lo = (LO), .hi = (HI), .value = "X", \
     .help = (HELP), .role = (ROLE)}
/* The model's sizes; then (run_option_rows) each mixer's rows. */
static const OptionRow model_rows[] = {
    SZ("n-layer", cfg.n_layer, 1, MAX_LAYERS, RUN_ARCH, "transformer blocks (4)"),
    SZ("n-head", cfg.n_head, 1, MAX_HEADS, RUN_ARCH, "attention heads (4)"),
    SZ("n-embd", cfg.n_embd, 1, MAX_EMBD, RUN_ARCH, "embedding width C (128)"),
    SZ("block-size", cfg.block_size, 2, MAX_BLOCK, RUN_ARCH, "context length T (64)"),
    FL("dropout", cfg.dropout, 0, 0.95, RUN_ARCH, "dropout on the residual branches (0)"),
};

/* The recipe's switches and the run's own; then (run_option_rows) each optimizer's rows. */
static const OptionRow run_rows[] = {
    SZ("qk-norm", cfg.qk_norm, 0, 1, RUN_ARCH, "1: RMSNorm (no gain) of each attention head's q and k (0)"),
    SZ("untied-head", cfg.untied_head, 0, 1, RUN_ARCH, "1: an LM head of its own (lm_head), not wte (0)"),
    SZ("zero-init", cfg.zero_init, 0, 1, RUN_ARCH,
       "1: the output projections (attention's, gla's, the MLP's, an\nuntied head) start at zero; Grassmann has none (0)"),
    FL("logit-softcap", cfg.logit_softcap, 0, 1e4, RUN_ARCH, "cap the logits at X: X tanh(z / X); 0 = off (0)"),
    SZ("batch-size", batch_size, 1, 65536, RUN_KEPT, "sequences per micro-batch B (12)"),
    SZ("grad-accum", grad_accum, 1, 4096, RUN_KEPT, "micro-batches per optimizer step (1)"),
    SZ("max-iters", max_iters, 1, MAX_STEPS, RUN_KEPT, "optimizer steps; defines the schedule (2000)"),
    SZ("stop-at", stop_at, 1, MAX_STEPS, RUN_ONCE, "stop after this step with a checkpoint (max-iters)"),
    FL("lr", lr, 0, 10, RUN_KEPT, "peak learning rate (1e-3)"),
    FL("min-lr", min_lr, 0, 10, RUN_KEPT, "final learning rate of the cosine decay (1e-4)"),
    SZ("warmup-iters", warmup_iters, 0, 100000000, RUN_KEPT, "linear warm-up steps (100)"),
    FL("weight-decay", weight_decay, 0, 10, RUN_KEPT, "AdamW decoupled weight decay, matrices only (0.1)"),
    FL("grad-clip", grad_clip, 0, 1e6, RUN_KEPT, "global gradient-norm clip, 0 = off (1.0)"),
    FL("beta1", beta1, 0, 0.999999, RUN_KEPT, "AdamW beta1 (0.9)"),
    FL("beta2", beta2, 0, 0.999999, RUN_KEPT, "AdamW beta2 (0.99)"),
    FL("adam-eps", eps, 1e-30, 1, RUN_KEPT, "AdamW epsilon (1e-8)"),
    SZ("eval-interval", eval_interval, 0, 100000000, RUN_KEPT,
       "validate at step 0, every N steps and at the end; 0 = start and end (250)"),
    SZ("eval-iters", eval_iters, 1, 100000, RUN_KEPT, "validation batches per estimate (20)"),
    SZ("log-interval", log_interval, 1, 100000000, RUN_KEPT, "progress line every N steps (10)"),
    SZ("ckpt-interval", ckpt_interval, 0, 100000000, RUN_KEPT, "checkpoint every N steps, 0 = only at the end (0)"),
    SZ("keep-checkpoints", keep_ckpts, 0, 1, RUN_KEPT,
       "1: keep each --ckpt-interval checkpoint too, as DIR/step-N.ckpt\nin a run folder, else as CKPT.step-N (0)"),
    SZ("seed", seed, 0, 1e18, RUN_KEPT, "seed for weights, batches and dropout (1337)"),
    SZ("threads", threads, 0, 1024, RUN_ONCE, "threads, fixed; 0 = up to all cores, fewer while that is faster (0)"),
    FL("max-seconds", max_seconds, 0, 1e7, RUN_ONCE,
       "stop after X seconds of training steps (validation not counted); the cosine then follows the elapsed time, "
       "not the step; 0 = off (0)"),
    SZ("window-align", window_align, 0, 100000000, RUN_KEPT,
       "training and validation windows start only at multiples of N; 0 = anywhere (0)"),
};

#define N_ROWS(a) (sizeof(a) / sizeof(a)[0])
#define MAX_ROWS 128

/* A mixer's or an optimizer's row in bin/train's table: its own, its
 * offset moved to where its settings lie in RunOptions (at `block`). */
static OptionRow moved(const OptionRow *own, size_t block, OptionRole role, const Optimizer *optimizer) {
    OptionRow row = *own;
    row.offset += block;
    row.role = role;
    row.optimizer = optimizer;
    return row;
}

const OptionRow *run_option_rows(size_t *n) {
    static OptionRow rows[MAX_ROWS];
    static size_t count;
    if (!count) {
        for (size_t i = 0; i < N_ROWS(model_rows); i++) rows[count++] = model_rows[i];
        for (size_t i = 0; i < mixer_count(); i++) { /* in the config: they fix the model */
            const Mixer *mx = mixer_at(i);
            size_t block = offsetof(RunOptions, cfg.mixer_settings) + i * sizeof(MixerSettings);
            for (size_t k = 0; k < mx->n_options && count < MAX_ROWS; k++)
                if (mx->options[k].kind != OPT_TEXT) rows[count++] = moved(&mx->options[k], block, RUN_ARCH, NULL);
        }
        for (size_t i = 0; i < N_ROWS(run_rows) && count < MAX_ROWS; i++) rows[count++] = run_rows[i];
        for (size_t i = 0; i < optimizer_count(); i++) {
            const Optimizer *opt = optimizer_at(i);
            size_t block = offsetof(RunOptions, optim_settings) + i * sizeof(OptimizerSettings);
            for (size_t k = 0; k < opt->n_options && count < MAX_ROWS; k++)
                rows[count++] = moved(&opt->options[k], block, RUN_KEPT, opt);
        }
    }
    *n = count;
    return rows;
}

const OptionRow *run_mixer_texts(size_t *n) {
    static OptionRow rows[RUN_MAX_MIXER_TEXTS];
    static size_t count;
    static int done;
    for (size_t i = 0; !done && i < mixer_count(); i++) {
        const Mixer *mx = mixer_at(i);
        for (size_t k = 0; k < mx->n_options && count < RUN_MAX_MIXER_TEXTS; k++) {
            if (mx->options[k].kind != OPT_TEXT) continue;
            rows[count] = mx->options[k]; /* its settings are the hooks': in RunOptions, the text as given */
            rows[count].offset = offsetof(RunOptions, mixer_text) + count * sizeof(const char *);
            rows[count++].role = RUN_ARCH;
        }
    }
    done = 1;
    *n = count;
    return rows;
}

size_t run_text_rows(RunOptions *o, OptionRow *rows) {
    rows[0] = (OptionRow)CLI_TEXT("best-by", 0, &o->best_by_given, "M",
                                  "estimate | full: what chooses best.ckpt in a run folder, the\n"
                                  "validation estimate (--eval-iters batches) or the whole val\n"
                                  "split, scored at each validation besides the estimate\n"
                                  "(every token once, as bin/eval; its cost: the split's tokens\n"
                                  "in forwards of the batch); kept by --resume (estimate)");
    return RUN_TEXT_ROWS;
}

int run_options_parse_texts(RunOptions *o, Error *err) {
    if (o->precision_given && precision_parse(o->precision_given, &o->precision))
        return err_set(err, "--precision must be fp32 or bf16 (got '%s')", o->precision_given);
    if (o->optimizer_given && !(o->optimizer = optimizer_find(o->optimizer_given)))
        return err_set(err, "--optimizer must be one of %s (got '%s')", optimizer_names(), o->optimizer_given);
    if (o->best_by_given && strcmp(o->best_by_given, "estimate") != 0 && strcmp(o->best_by_given, "full") != 0)
        return err_set(err, "--best-by must be estimate or full (got '%s')", o->best_by_given);
    if (o->best_by_given) o->best_full = strcmp(o->best_by_given, "full") == 0;
    return 0;
}

void run_options_defaults(RunOptions *o) {
    memset(o, 0, sizeof *o);
    config_defaults(&o->cfg);
    o->batch_size = 12;
    o->grad_accum = 1;
    o->max_iters = 2000;
    o->lr = 1e-3f;
    o->min_lr = 1e-4f;
    o->warmup_iters = 100;
    o->weight_decay = 0.1f;
    o->grad_clip = 1.0f;
    o->beta1 = 0.9f;
    o->beta2 = 0.99f;
    o->eps = 1e-8f;
    o->optimizer = optimizer_at(0); /* the registry's first: adamw */
    for (size_t i = 0; i < optimizer_count(); i++) { /* every optimizer's own, at their defaults */
        const Optimizer *opt = optimizer_at(i);
        for (size_t k = 0; k < opt->n_options; k++)
            option_set_number(&opt->options[k], o->optim_settings[i].bytes, opt->options[k].def);
    }
    o->eval_interval = 250;
    o->eval_iters = 20;
    o->log_interval = 10;
    o->seed = 1337;
}

int run_option_given(const RunOptions *o, size_t i) { return (o->given >> i) & 1; }

int run_option_given_named(const RunOptions *o, const char *name) {
    size_t n;
    const OptionRow *rows = run_option_rows(&n);
    for (size_t i = 0; i < n; i++)
        if (strcmp(rows[i].name, name) == 0) return run_option_given(o, i);
    return 0;
}

char *run_options_json(const RunOptions *o, size_t ranks) {
    char *sb = NULL;
    sb_appendf(&sb, "{");
    int first = 1, default_optimizer = o->optimizer == optimizer_at(0);
    size_t n;
    const OptionRow *rows = run_option_rows(&n);
    for (size_t i = 0; i < n; i++) {
        const OptionRow *r = &rows[i];
        if (r->role != RUN_KEPT || (r->optimizer && r->optimizer != o->optimizer)) continue;
        const void *p = option_at(r, o);
        if (r->kind == OPT_FLOAT) sb_appendf(&sb, "%s\"%s\":%.9g", first ? "" : ",", r->name, *(const float *)p);
        else sb_appendf(&sb, "%s\"%s\":%zu", first ? "" : ",", r->name,
                        *(const size_t *)p * (r->offset == offsetof(RunOptions, grad_accum) ? ranks : 1));
        first = 0;
    }
    /* fp32 is the absence of the key: fp32 checkpoints are what they were before bf16. */
    if (o->precision != PRECISION_FP32) sb_appendf(&sb, ",\"precision\":\"%s\"", precision_name(o->precision));
    /* adamw (the default) is the absence of the key, as fp32 is: AdamW checkpoints are what they were before Muon. */
    if (!default_optimizer) sb_appendf(&sb, ",\"optimizer\":\"%s\"", o->optimizer->name);
    /* The estimate (the default) is the absence of the key: such checkpoints are what they were before --best-by. */
    if (o->best_full) sb_appendf(&sb, ",\"best_by\":\"full\"");
    if (o->no_loss_mask) sb_appendf(&sb, ",\"no_loss_mask\":1");
    if (o->data_hash[0]) {
        sb_appendf(&sb, ",\"data\":");
        sb_append_json_string(&sb, o->data_real);
        sb_appendf(&sb, ",\"data_hash\":\"%s\"", o->data_hash);
    }
    sb_appendf(&sb, "}");
    char *out = strdup(sb);
    sb_free(&sb);
    return out;
}

char *run_state_json(const RunOptions *o, const RunProgress *p, size_t ranks) {
    char *options = run_options_json(o, ranks), *sb = NULL, num[3][JSON_NUMBER_MAX];
    if (!options) return NULL;
    options[strlen(options) - 1] = '\0'; /* its closing brace */
    sb_appendf(&sb, "%s,\"progress\":{\"tokens\":%zu,\"val_loss\":%s,\"best_val_loss\":%s,\"best_step\":%s}}", options,
               p->tokens, json_number(num[0], "%.9g", p->val_loss), json_number(num[1], "%.9g", p->best_val_loss),
               isnan(p->best_val_loss) ? "null" : (snprintf(num[2], sizeof num[2], "%zu", p->best_step), num[2]));
    free(options);
    char *out = strdup(sb);
    sb_free(&sb);
    return out;
}

int run_progress_from_json(const char *json, RunProgress *p) {
    *p = (RunProgress){0, NAN, NAN, 0};
    Error err;
    json_t *root = json ? json_parse(json, strlen(json), &err) : NULL;
    const json_t *g = root ? json_object_get(root, "progress") : NULL;
    if (!json_is_object(g)) {
        if (root) json_decref(root);
        return 0;
    }
    const json_t *v;
    size_t n;
    if ((v = json_object_get(g, "tokens")) && json_size(v, SIZE_MAX, &n) == 0) p->tokens = n;
    if ((v = json_object_get(g, "val_loss")) && json_is_number(v)) p->val_loss = (float)json_number_value(v);
    if ((v = json_object_get(g, "best_val_loss")) && json_is_number(v)) p->best_val_loss = (float)json_number_value(v);
    if ((v = json_object_get(g, "best_step")) && json_size(v, SIZE_MAX, &n) == 0) p->best_step = n;
    json_decref(root);
    return 1;
}

/* The checkpoint's optimizer (absent: adamw); a different one given is refused. */
static int kept_optimizer(RunOptions *o, const json_t *v, Error *err) {
    const Optimizer *have = v ? (json_is_string(v) ? optimizer_find(json_string_value(v)) : NULL)
                              : optimizer_at(0);
    if (!have) return err_set(err, "its run options hold a bad 'optimizer'");
    if (o->optimizer_given && o->optimizer != have)
        return err_set(err, "--optimizer %s differs from the run's %s: a resumed run keeps its optimizer",
                       o->optimizer->name, have->name);
    o->optimizer = have;
    return 0;
}

/* The checkpoint's --best-by (absent: the estimate): its best loss so far is
 * of that kind, so another given is refused. */
static int kept_best_by(RunOptions *o, const json_t *v, Error *err) {
    if (v && !(json_is_string(v) && strcmp(json_string_value(v), "full") == 0))
        return err_set(err, "its run options hold a bad 'best_by'");
    int full = v != NULL;
    if (o->best_by_given && o->best_full != full)
        return err_set(err, "--best-by %s differs from the run's %s: a resumed run keeps what chooses its best.ckpt",
                       o->best_by_given, full ? "full" : "estimate");
    o->best_full = full;
    return 0;
}

int run_check_optimizer_options(const RunOptions *o, Error *err) {
    size_t n;
    const OptionRow *rows = run_option_rows(&n);
    for (size_t i = 0; i < n; i++) {
        const OptionRow *r = &rows[i];
        if (r->optimizer && r->optimizer != o->optimizer && run_option_given(o, i))
            return err_set(err, "--%s is %s's, and this run's optimizer is %s: give --optimizer %s, or leave "
                                "--%s out", r->name, r->optimizer->title, o->optimizer->name, r->optimizer->name,
                           r->name);
    }
    return 0;
}

int run_options_from_json(RunOptions *o, const char *json, size_t ranks, Error *err) {
    json_t *root = json_parse(json, strlen(json), err);
    if (!root) return -1;
    int rc = 0;
    size_t n;
    const OptionRow *rows = run_option_rows(&n);
    for (size_t i = 0; i < n && rc == 0; i++) {
        const OptionRow *r = &rows[i];
        if (r->role != RUN_KEPT || run_option_given(o, i)) continue; /* the command line wins */
        const json_t *v = json_object_get(root, r->name);
        if (!v) continue;
        void *p = option_at(r, o);
        int job_wide = r->offset == offsetof(RunOptions, grad_accum);
        double x = json_number_value(v), hi = r->hi * (job_wide ? (double)ranks : 1.0);
        if (!(r->kind == OPT_FLOAT ? json_is_number(v) : json_is_integer(v)) || x < r->lo || x > hi) {
            rc = err_set(err, "its run options hold a bad '%s'", r->name);
            break;
        }
        if (r->kind == OPT_FLOAT) *(float *)p = (float)x;
        else *(size_t *)p = (size_t)json_integer_value(v);
        if (job_wide) { /* the job's: shared over this job's ranks */
            if (o->grad_accum % ranks)
                rc = err_set(err, "its steps take %zu micro-batches, which %zu ranks cannot share evenly: "
                                  "run on a divisor of %zu ranks, or give --grad-accum",
                             o->grad_accum, ranks, o->grad_accum);
            else
                o->grad_accum /= ranks;
        }
    }
    const json_t *pv = json_object_get(root, "precision");
    Precision have = PRECISION_FP32;
    if (rc == 0 && pv && (!json_is_string(pv) || precision_parse(json_string_value(pv), &have)))
        rc = err_set(err, "its run options hold a bad 'precision'");
    else if (rc == 0 && o->precision_given && o->precision != have)
        rc = err_set(err, "--precision %s differs from the run's %s: a resumed run keeps its precision",
                     precision_name(o->precision), precision_name(have));
    else if (rc == 0)
        o->precision = have;
    if (rc == 0) rc = kept_optimizer(o, json_object_get(root, "optimizer"), err);
    if (rc == 0) rc = kept_best_by(o, json_object_get(root, "best_by"), err);
    if (rc == 0) rc = run_check_optimizer_options(o, err);
    const json_t *mask = json_object_get(root, "no_loss_mask"), *hash = json_object_get(root, "data_hash"),
                 *data = json_object_get(root, "data");
    if (rc == 0 && mask && !json_is_integer(mask)) rc = err_set(err, "its run options hold a bad 'no_loss_mask'");
    else if (rc == 0 && mask) o->no_loss_mask |= json_integer_value(mask) != 0;
    /* Its own corpus, changed since: refused. Another directory given with
     * --data is a choice (a curriculum's next stage), as any option given. */
    int its_own = !json_is_string(data) || strcmp(json_string_value(data), o->data_real) == 0;
    if (rc == 0 && hash && !json_is_string(hash)) rc = err_set(err, "its run options hold a bad 'data_hash'");
    else if (rc == 0 && hash && its_own && o->data_hash[0] && strcmp(json_string_value(hash), o->data_hash) != 0)
        rc = err_set(err, "its data '%s' has changed since (data hash %s, it was %s): a resumed run continues on the "
                          "corpus it was trained on (to go on with other data, give that with --data DIR elsewhere)",
                     o->data, o->data_hash, json_string_value(hash));
    json_decref(root);
    return rc;
}
