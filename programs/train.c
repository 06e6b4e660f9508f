/* bin/train: trains a model on a prepared data directory.
 * forward -> backward -> all-reduce over the ranks -> clip -> AdamW, with
 * warm-up + cosine schedule, gradient accumulation, periodic validation,
 * logging and checkpoints (atomic), Ctrl-C that saves, and exact resume; one
 * process, or a job of several under mpirun (src/runtime/dist.h), where rank 0
 * prints, logs and checkpoints for all. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <omp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blas/blas_setup.h"
#include "model/checkpoint.h"
#include "cli/cli.h"
#include "cli/options.h"
#include "model/config.h"
#include "data/tokens.h"
#include "runtime/dist.h"
#include "io/json.h"
#include "data/loss_mask.h"
#include "model/model.h"
#include "model/optim.h"
#include "runtime/machine.h"
#include "runtime/rng.h"
#include "runtime/threads.h"
#include "model/trainer.h"

static const char *prog = "train";

typedef struct TrainOpts {
    const char *data, *out, *resume, *log, *dump, *mixer, *pos, *windows;
    size_t batch_size, grad_accum, max_iters, stop_at, warmup_iters, eval_interval, eval_iters;
    size_t log_interval, ckpt_interval, seed, threads;
    size_t window_align; /* probes: data of fixed-length sequences */
    float max_seconds;   /* equal-time comparisons */
    float lr, min_lr, weight_decay, grad_clip, beta1, beta2, eps;
    ModelConfig cfg;
} TrainOpts;

/* One row per numeric option: parsing, --help, and which of them a
 * checkpoint remembers (RUN) or fixes (ARCH: refused with --resume). */
enum { RUN = 1, ARCH = 2, OTHER = 0 };
typedef struct NumOpt {
    const char *name;
    int is_float;
    size_t off;
    double lo, hi;
    int kind;
    const char *help;
    int set;
} NumOpt;

#define SZ(field) 0, offsetof(TrainOpts, field)
#define FL(field) 1, offsetof(TrainOpts, field)
static NumOpt num_opts[] = {
    {"n-layer", SZ(cfg.n_layer), 1, MAX_LAYERS, ARCH, "transformer blocks (4)", 0},
    {"n-head", SZ(cfg.n_head), 1, 256, ARCH, "attention heads (4)", 0},
    {"n-embd", SZ(cfg.n_embd), 1, 8192, ARCH, "embedding width C (128)", 0},
    {"block-size", SZ(cfg.block_size), 2, 16384, ARCH, "context length T (64)", 0},
    {"dropout", FL(cfg.dropout), 0, 0.95, ARCH, "dropout on the residual branches (0)", 0},
    {"grassmann-rank", SZ(cfg.grassmann_rank), 0, 1024, ARCH, "Grassmann reduced rank r (32)", 0},
    {"batch-size", SZ(batch_size), 1, 65536, RUN, "sequences per micro-batch B (12)", 0},
    {"grad-accum", SZ(grad_accum), 1, 4096, RUN, "micro-batches per optimizer step (1)", 0},
    {"max-iters", SZ(max_iters), 1, 100000000, RUN, "optimizer steps; defines the schedule (2000)", 0},
    {"stop-at", SZ(stop_at), 1, 100000000, OTHER, "stop after this step with a checkpoint (max-iters)", 0},
    {"lr", FL(lr), 0, 10, RUN, "peak learning rate (1e-3)", 0},
    {"min-lr", FL(min_lr), 0, 10, RUN, "final learning rate of the cosine decay (1e-4)", 0},
    {"warmup-iters", SZ(warmup_iters), 0, 100000000, RUN, "linear warm-up steps (100)", 0},
    {"weight-decay", FL(weight_decay), 0, 10, RUN, "AdamW decoupled weight decay, matrices only (0.1)", 0},
    {"grad-clip", FL(grad_clip), 0, 1e6, RUN, "global gradient-norm clip, 0 = off (1.0)", 0},
    {"beta1", FL(beta1), 0, 0.999999, RUN, "AdamW beta1 (0.9)", 0},
    {"beta2", FL(beta2), 0, 0.999999, RUN, "AdamW beta2 (0.99)", 0},
    {"adam-eps", FL(eps), 1e-30, 1, RUN, "AdamW epsilon (1e-8)", 0},
    {"eval-interval", SZ(eval_interval), 0, 100000000, RUN, "validate at step 0, every N steps and at the end; 0 = start and end (250)", 0},
    {"eval-iters", SZ(eval_iters), 1, 100000, RUN, "validation batches per estimate (20)", 0},
    {"log-interval", SZ(log_interval), 1, 100000000, RUN, "progress line every N steps (10)", 0},
    {"ckpt-interval", SZ(ckpt_interval), 0, 100000000, RUN, "checkpoint every N steps, 0 = only at the end (0)", 0},
    {"seed", SZ(seed), 0, 1e18, RUN, "seed for weights, batches and dropout (1337)", 0},
    {"threads", SZ(threads), 0, 1024, OTHER, "threads, fixed; 0 = up to all cores, fewer while that is faster (0)", 0},
    {"max-seconds", FL(max_seconds), 0, 1e7, OTHER, "stop after X seconds of training steps (validation not counted); the cosine then follows the elapsed time, not the step; 0 = off (0)", 0},
    {"window-align", SZ(window_align), 0, 100000000, RUN, "training and validation windows start only at multiples of N; 0 = anywhere (0)", 0},
};
#define N_NUM (sizeof num_opts / sizeof num_opts[0])

static void defaults(TrainOpts *o) {
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
    o->eval_interval = 250;
    o->eval_iters = 20;
    o->log_interval = 10;
    o->seed = 1337;
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: bin/train --data DIR --out CKPT [options]\n"
            "       bin/train --data DIR --out CKPT --resume CKPT [options]\n"
            "Trains a Transformer, Grassmann or hybrid language model on DIR (from bin/prepare).\n"
            "\n"
            "  -d, --data DIR             prepared data directory (train.bin, val.bin, tokenizer.txt)\n"
            "  -o, --out CKPT             checkpoint to write (safetensors; written atomically)\n"
            "      --resume CKPT          continue a run exactly where CKPT stopped; the model and\n"
            "                             the run's options come from CKPT (run options given here win)\n"
            "      --mixer M              attention | grassmann | a comma list, one per layer (attention)\n"
            "      --pos P                learned | sinusoidal | rope positions (learned)\n"
            "      --grassmann-windows L  Grassmann window offsets (1,2,4,8,12,16)\n"
            "      --log FILE             per-step log for plotting: CSV, or JSON lines if FILE ends in .jsonl\n"
            "      --dump-grads FILE      write weights, gradients, loss and the first batch, then exit\n"
            "      --count-params         print the model's parameter count and exit\n"
            "      --profile              at the end, print where a step's time went, per part\n"
            "      --no-loss-mask         learn every target even where DIR has train.mask / val.mask\n"
            "                             (by default only the targets they mark are in the loss)\n");
    for (size_t i = 0; i < N_NUM; i++) {
        char flag[48];
        snprintf(flag, sizeof flag, "%s %s", num_opts[i].name, num_opts[i].is_float ? "X" : "N");
        fprintf(f, "      --%-20s %s\n", flag, num_opts[i].help);
    }
    fprintf(f, "  -h, --help                 this help\n"
               "\n"
               "On several processes: mpirun -np N bin/train ... (Open MPI). Micro-batch i of a step goes\n"
               "to rank i mod N, so N ranks with --grad-accum A train exactly as one process with\n"
               "--grad-accum N*A; rank 0 prints, logs and writes the checkpoint, which resumes on any\n"
               "number of ranks. --threads is per rank (default: the cores / the ranks on the machine).\n");
}

static NumOpt *find_num(const char *name) {
    for (size_t i = 0; i < N_NUM; i++)
        if (strcmp(num_opts[i].name, name) == 0) return &num_opts[i];
    return NULL;
}

static int set_num(TrainOpts *o, NumOpt *n, const char *arg, Error *err) {
    char what[64];
    snprintf(what, sizeof what, "--%s", n->name);
    void *p = (char *)o + n->off;
    if (n->is_float) return parse_float(arg, n->lo, n->hi, (float *)p, what, err);
    size_t v;
    if (parse_size(arg, (size_t)n->hi, &v, what, err)) return -1;
    if ((double)v < n->lo) return err_set(err, "%s must be at least %g (got %zu)", what, n->lo, v);
    *(size_t *)p = v;
    return 0;
}

/* The run's options as JSON, stored in checkpoints so --resume needs none.
 * grad-accum is stored for the whole job (per rank x ranks), so that the
 * checkpoint resumes on any number of ranks that divides it. */
static char *run_json(const TrainOpts *o, size_t ranks) {
    char *sb = NULL;
    sb_appendf(&sb, "{");
    int first = 1;
    for (size_t i = 0; i < N_NUM; i++) {
        if (num_opts[i].kind != RUN) continue;
        const void *p = (const char *)o + num_opts[i].off;
        if (num_opts[i].is_float) sb_appendf(&sb, "%s\"%s\":%.9g", first ? "" : ",", num_opts[i].name, *(const float *)p);
        else sb_appendf(&sb, "%s\"%s\":%zu", first ? "" : ",", num_opts[i].name,
                        *(const size_t *)p * (p == (const void *)&o->grad_accum ? ranks : 1));
        first = 0;
    }
    sb_appendf(&sb, "}");
    char *out = strdup(sb);
    sb_free(&sb);
    return out;
}

static int apply_run_json(TrainOpts *o, const char *json, size_t ranks, Error *err) {
    json_t *root = json_parse(json, strlen(json), err);
    if (!root) return -1;
    int rc = 0;
    for (size_t i = 0; i < N_NUM && rc == 0; i++) {
        if (num_opts[i].kind != RUN || num_opts[i].set) continue; /* the command line wins */
        const json_t *v = json_object_get(root, num_opts[i].name);
        if (!v) continue;
        /* A checkpoint is input too: its values keep the command line's bounds. */
        void *p = (char *)o + num_opts[i].off;
        double x = json_number_value(v), hi = num_opts[i].hi * (p == (void *)&o->grad_accum ? (double)ranks : 1.0);
        if (!(num_opts[i].is_float ? json_is_number(v) : json_is_integer(v)) || x < num_opts[i].lo || x > hi) {
            rc = err_set(err, "its run options hold a bad '%s'", num_opts[i].name);
            break;
        }
        if (num_opts[i].is_float) *(float *)p = (float)x;
        else *(size_t *)p = (size_t)json_integer_value(v);
        if (p == (void *)&o->grad_accum) { /* the job's: shared over this job's ranks */
            if (o->grad_accum % ranks)
                rc = err_set(err, "its steps take %zu micro-batches, which %zu ranks cannot share evenly: "
                                  "run on a divisor of %zu ranks, or give --grad-accum",
                             o->grad_accum, ranks, o->grad_accum);
            else
                o->grad_accum /= ranks;
        }
    }
    json_decref(root);
    return rc;
}

static volatile sig_atomic_t interrupted = 0;
static void on_signal(int sig) {
    (void)sig;
    interrupted = 1;
}

/* The per-step log: CSV, or JSON lines when the name ends in .jsonl. */
typedef struct RunLog {
    FILE *f;
    int jsonl;
    const char *path;
    int failed; /* errno of the first failed write, 0 if none */
} RunLog;

static int open_log(RunLog *log, const char *path, int append, Error *err) {
    size_t n = strlen(path);
    log->jsonl = n > 6 && strcmp(path + n - 6, ".jsonl") == 0;
    log->path = path;
    log->failed = 0;
    log->f = fopen(path, append ? "a" : "w");
    if (!log->f) return err_set(err, "cannot open log '%s'", path);
    if (!log->jsonl && ftell(log->f) == 0)
        fprintf(log->f, "step,tokens,train_loss,val_loss,val_bits_per_byte,lr,grad_norm,ms_per_step,elapsed_s,threads\n");
    return 0;
}

/* NaN (a value a row does not have) is written as an empty CSV field or null. */
static void put_num(FILE *f, const char *fmt, double v, int jsonl) {
    if (isnan(v)) fputs(jsonl ? "null" : "", f);
    else fprintf(f, fmt, v);
}

/* A failed write (a full disk) is remembered in log->failed: the run stops. */
static void log_row(RunLog *log, size_t step, size_t tokens, float loss, ValLoss val, float lr, float norm,
                    double ms, double elapsed, double threads) {
    if (!log->f) return;
    static const char *const names[] = {"train_loss", "val_loss", "val_bits_per_byte", "lr", "grad_norm",
                                        "ms_per_step", "elapsed_s", "threads"};
    static const char *const fmts[] = {"%.6f", "%.6f", "%.6f", "%.6g", "%.6g", "%.3f", "%.3f", "%.0f"};
    double vals[] = {loss, val.loss, val.bits_per_byte, lr, norm, ms, elapsed, threads};
    if (log->jsonl) fprintf(log->f, "{\"step\":%zu,\"tokens\":%zu", step, tokens);
    else fprintf(log->f, "%zu,%zu", step, tokens);
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        if (log->jsonl) fprintf(log->f, ",\"%s\":", names[i]);
        else fputc(',', log->f);
        put_num(log->f, fmts[i], vals[i], log->jsonl);
    }
    fputs(log->jsonl ? "}\n" : "\n", log->f);
    if ((fflush(log->f) != 0 || ferror(log->f)) && !log->failed) log->failed = errno ? errno : EIO;
}

/* Rank 0 writes; every rank learns whether it worked. */
static int save(const char *path, const Model *m, const Dataset *ds, const TrainOpts *o, size_t step, Rng rng,
                Dist *dist, Error *err) {
    int failed = 0;
    if (dist->rank == 0) {
        CkptState s = {.step = step, .data_rng = rng.state};
        memcpy(s.tokenizer, ds->tok.hash, 17);
        s.tokenizer_text = tokenizer_to_text(&ds->tok);
        s.train = run_json(o, (size_t)dist->size);
        failed = ckpt_save(path, m, &s, err) != 0;
        ckpt_state_free(&s);
    }
    return dist_agree(dist, failed, err);
}

/* With --resume, model options given on the command line must equal the
 * checkpoint's (so the command that started a run, plus --resume, continues
 * it); the first that differs is named with both values. */
static int check_resume_options(const TrainOpts *o, const ModelConfig *ckpt, Error *err) {
    for (size_t i = 0; i < N_NUM; i++) {
        const NumOpt *n = &num_opts[i];
        if (n->kind != ARCH || !n->set) continue;
        const void *given = (const char *)o + n->off;
        const void *have = (const char *)ckpt + (n->off - offsetof(TrainOpts, cfg));
        if (n->is_float ? *(const float *)given != *(const float *)have : *(const size_t *)given != *(const size_t *)have) {
            if (n->is_float)
                return err_set(err, "--%s %g differs from the checkpoint's %g: the model comes from the checkpoint",
                               n->name, *(const float *)given, *(const float *)have);
            return err_set(err, "--%s %zu differs from the checkpoint's %zu: the model comes from the checkpoint", n->name,
                           *(const size_t *)given, *(const size_t *)have);
        }
    }
    if (o->pos && strcmp(o->pos, pos_name(ckpt->pos)) != 0)
        return err_set(err, "--pos %s differs from the checkpoint's %s", o->pos, pos_name(ckpt->pos));
    ModelConfig given = *ckpt;
    if (o->mixer) {
        if (config_set_mixers(&given, o->mixer, err)) return -1;
        char have[256] = "";
        for (size_t l = 0; l < ckpt->n_layer; l++)
            snprintf(have + strlen(have), sizeof have - strlen(have), "%s%s", l ? "," : "", ckpt->mixers[l]->name);
        if (memcmp(given.mixers, ckpt->mixers, sizeof given.mixers) != 0)
            return err_set(err, "--mixer %s differs from the checkpoint's %s", o->mixer, have);
    }
    if (o->windows) {
        if (config_set_windows(&given, o->windows, err)) return -1;
        if (given.n_windows != ckpt->n_windows || memcmp(given.windows, ckpt->windows, sizeof given.windows) != 0) {
            char have[256] = "";
            for (size_t w = 0; w < ckpt->n_windows; w++)
                snprintf(have + strlen(have), sizeof have - strlen(have), "%s%zu", w ? "," : "", ckpt->windows[w]);
            return err_set(err, "--grassmann-windows %s differs from the checkpoint's %s", o->windows, have);
        }
    }
    return 0;
}

/* The run must fit the machine's memory: said before allocating, rather
 * than found by the kernel's OOM killer. */
static int check_memory(const ModelConfig *cfg, const TrainOpts *o, size_t ckpt_bytes, Error *err) {
    char what[200];
    snprintf(what, sizeof what, "%sweights, gradients, AdamW moments and activations for batch %zu x %zu",
             ckpt_bytes ? "the checkpoint file, " : "", o->batch_size, cfg->block_size);
    return memory_check(ckpt_bytes + model_memory_bytes(cfg, o->batch_size, cfg->block_size, 1, o->grad_accum > 1),
                        "this run", what, "use a smaller model, --batch-size or --block-size", err);
}

/* The checkpoint of --resume: the model, the step, the data position and
 * the run's options (those given on the command line win). */
static int resume_from(TrainOpts *o, const Dataset *ds, Model *model, size_t *start_step, Rng *data_rng,
                       size_t ranks, Error *err) {
    CkptState st;
    ModelConfig cfg; /* first from the header alone: loading reads the whole file */
    size_t file_bytes;
    if (ckpt_read_config(o->resume, &cfg, &file_bytes, err) || check_memory(&cfg, o, file_bytes, err) ||
        ckpt_load(o->resume, model, &st, 1, err))
        return -1;
    int rc = 0;
    if (strcmp(st.tokenizer, ds->tok.hash) != 0)
        rc = err_set(err, "checkpoint '%s' was trained with tokenizer %s but '%s' has tokenizer %s", o->resume,
                     st.tokenizer, o->data, ds->tok.hash);
    else if (check_resume_options(o, &model->cfg, err))
        rc = -1;
    else if (apply_run_json(o, st.train, ranks, err)) {
        char why[sizeof err->msg];
        snprintf(why, sizeof why, "%s", err->msg);
        rc = err_set(err, "'%s': %s", o->resume, why);
    }
    o->cfg = model->cfg;
    *start_step = st.step;
    data_rng->state = st.data_rng;
    ckpt_state_free(&st);
    if (rc) model_free(model);
    return rc;
}

static int train_main(int argc, char **argv, Dist *dist) {
    TrainOpts o;
    defaults(&o);
    Error err;
    int count_only = 0, profile_on = 0, no_loss_mask = 0;
    enum { OPT_RESUME = 1, OPT_MIXER, OPT_POS, OPT_WINDOWS, OPT_LOG, OPT_DUMP, OPT_COUNT, OPT_PROFILE, OPT_NO_LOSS_MASK, OPT_NUM = 1000 }; /* clear of every short-option character */
    struct option opts[N_NUM + 16];
    size_t no = 0;
    opts[no++] = (struct option){"data", required_argument, 0, 'd'};
    opts[no++] = (struct option){"out", required_argument, 0, 'o'};
    opts[no++] = (struct option){"resume", required_argument, 0, OPT_RESUME};
    opts[no++] = (struct option){"mixer", required_argument, 0, OPT_MIXER};
    opts[no++] = (struct option){"pos", required_argument, 0, OPT_POS};
    opts[no++] = (struct option){"grassmann-windows", required_argument, 0, OPT_WINDOWS};
    opts[no++] = (struct option){"log", required_argument, 0, OPT_LOG};
    opts[no++] = (struct option){"dump-grads", required_argument, 0, OPT_DUMP};
    opts[no++] = (struct option){"count-params", no_argument, 0, OPT_COUNT};
    opts[no++] = (struct option){"profile", no_argument, 0, OPT_PROFILE};
    opts[no++] = (struct option){"no-loss-mask", no_argument, 0, OPT_NO_LOSS_MASK};
    opts[no++] = (struct option){"help", no_argument, 0, 'h'};
    for (size_t i = 0; i < N_NUM; i++) opts[no++] = (struct option){num_opts[i].name, required_argument, 0, OPT_NUM + (int)i};
    opts[no] = (struct option){0, 0, 0, 0};
    opterr = 0;
    /* Every rank must parse the same command line. */
    if (dist_check_args(dist, argc, argv, &err)) return cli_error(prog, "%s", err.msg);
    int c;
    while ((c = getopt_long(argc, argv, ":d:o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'd': o.data = optarg; break;
        case 'o': o.out = optarg; break;
        case 'h': usage(stdout); return 0;
        case OPT_RESUME: o.resume = optarg; break;
        case OPT_MIXER: o.mixer = optarg; break;
        case OPT_POS: o.pos = optarg; break;
        case OPT_WINDOWS: o.windows = optarg; break;
        case OPT_LOG: o.log = optarg; break;
        case OPT_DUMP: o.dump = optarg; break;
        case OPT_COUNT: count_only = 1; break;
        case OPT_PROFILE: profile_on = 1; break;
        case OPT_NO_LOSS_MASK: no_loss_mask = 1; break;
        case ':': return cli_error(prog, "option '%s' needs a value (see --help)", argv[optind - 1]);
        case '?': return cli_error(prog, "unknown option '%s' (see --help)", argv[optind - 1]);
        default:
            if (c >= OPT_NUM && c < OPT_NUM + (int)N_NUM) {
                NumOpt *n = &num_opts[c - OPT_NUM];
                if (set_num(&o, n, optarg, &err)) return cli_error(prog, "%s", err.msg);
                n->set = 1;
            }
        }
    }
    if (optind < argc) return cli_error(prog, "unexpected argument '%s' (see --help)", argv[optind]);
    if (!o.data) return cli_error(prog, "--data DIR is required (see --help)");
    if (!o.out && !o.dump && !count_only) return cli_error(prog, "--out CKPT is required (see --help)");
    if (o.dump && dist->size > 1) return cli_error(prog, "--dump-grads runs in one process (this job has %d ranks)", dist->size);
    /* Each rank's clock differs, and the learning rate would follow it. */
    if (o.max_seconds > 0 && dist->size > 1)
        return cli_error(prog, "--max-seconds runs in one process (this job has %d ranks)", dist->size);
    /* --threads is per rank; by default the cores are shared among the
     * ranks on this machine. */
    size_t threads_opt = o.threads;
    if (threads_opt == 0 && dist->local_size > 1) {
        int share = omp_get_num_procs() / dist->local_size;
        threads_opt = share > 1 ? (size_t)share : 1;
        if (threads_opt > (size_t)omp_get_max_threads()) threads_opt = (size_t)omp_get_max_threads();
    }
    threads_use(threads_opt);

    /* Every rank reads the same data (and checkpoint). */
    char train_bin[4096], val_bin[4096], tok_txt[4096];
    snprintf(train_bin, sizeof train_bin, "%s/train.bin", o.data);
    snprintf(val_bin, sizeof val_bin, "%s/val.bin", o.data);
    snprintf(tok_txt, sizeof tok_txt, "%s/tokenizer.txt", o.data);
    const char *same_files[] = {train_bin, val_bin, tok_txt, o.resume, NULL};
    if (dist_check_files(dist, same_files, &err)) return cli_error(prog, "%s", err.msg);

    Dataset ds;
    if (dist_agree(dist, dataset_open(&ds, o.data, 0, &err) != 0, &err)) return cli_error(prog, "%s", err.msg);
    LossMasks masks = {0}; /* the loss on marked targets only, where the data says which (loss_mask.h) */

    Model model;
    size_t start_step = 0;
    Rng data_rng;
    int rc = 0;
    if (o.resume) {
        if (o.max_seconds > 0) {
            dataset_free(&ds);
            return cli_error(prog, "--max-seconds cannot be used with --resume: the time budget belongs to one run");
        }
        int failed = resume_from(&o, &ds, &model, &start_step, &data_rng, (size_t)dist->size, &err) != 0;
        if (dist_agree(dist, failed, &err)) {
            if (!failed) model_free(&model); /* another rank's failure */
            dataset_free(&ds);
            return cli_error(prog, "%s", err.msg);
        }
    } else {
        o.cfg.vocab_size = ds.tok.vocab_size;
        if (o.pos && pos_parse(o.pos, &o.cfg.pos)) {
            dataset_free(&ds);
            return cli_error(prog, "--pos must be learned, sinusoidal or rope (got '%s')", o.pos);
        }
        /* The config is the same on every rank; the memory may not be. */
        int bad_config = (o.mixer && config_set_mixers(&o.cfg, o.mixer, &err)) ||
                         (o.windows && config_set_windows(&o.cfg, o.windows, &err)) || config_validate(&o.cfg, &err);
        int failed = bad_config || (!count_only && check_memory(&o.cfg, &o, 0, &err)) ||
                     model_init(&model, &o.cfg, o.seed, &err);
        if (dist_agree(dist, failed, &err)) {
            if (!failed) model_free(&model);
            dataset_free(&ds);
            return cli_error(prog, "%s", err.msg);
        }
        if (dist_agree(dist, model_alloc_training(&model, &err) != 0, &err)) {
            rc = cli_error(prog, "%s", err.msg);
            goto out_model;
        }
        rng_seed(&data_rng, o.seed);
    }
    /* A checkpoint's model is allocated already; its activations are not. */
    if (o.resume && dist_agree(dist, check_memory(&o.cfg, &o, 0, &err) != 0, &err)) {
        rc = cli_error(prog, "%s", err.msg);
        goto out_model;
    }
    if (count_only) {
        printf("%zu\n", model.n_params);
        goto out_model;
    }
    if (!no_loss_mask && dist_agree(dist, loss_masks_open(&masks, o.data, &ds, &err) != 0, &err)) {
        rc = cli_error(prog, "%s", err.msg);
        goto out_model;
    }
    size_t B = o.batch_size, T = o.cfg.block_size;
    if (!find_num("stop-at")->set) o.stop_at = o.max_iters; /* --stop-at defaults to the end of the schedule */
    if (o.stop_at > o.max_iters) o.stop_at = o.max_iters;
    if (ds.train.n <= T || ds.val.n <= T) {
        rc = cli_error(prog, "'%s' is too small for block_size %zu (train %zu, val %zu tokens)", o.data, T, ds.train.n,
                       ds.val.n);
        goto out_model;
    }
    if (o.min_lr > o.lr) {
        rc = cli_error(prog, "--min-lr (%g) must not exceed --lr (%g)", o.min_lr, o.lr);
        goto out_model;
    }
    if (dist_agree(dist, model_alloc_acts(&model, B, T, &err) != 0 ||
                             (o.grad_accum > 1 && model_alloc_grad_accum(&model, &err) != 0), &err)) {
        rc = cli_error(prog, "%s", err.msg);
        goto out_model;
    }
    int32_t *inputs = calloc(B * T, sizeof(int32_t)), *targets = calloc(B * T, sizeof(int32_t));
    if (dist_agree(dist, !inputs || !targets ? err_set(&err, "out of memory") : 0, &err)) {
        rc = cli_error(prog, "%s", err.msg);
        goto out_batch;
    }

    if (o.dump) {
        model_zero_grads(&model);
        TrainHyper first = {.batch_size = B, .window_align = o.window_align};
        train_sample(&ds.train, masks.train.marked, &data_rng, &first, inputs, targets, T);
        model_forward(&model, inputs, targets, B, T, NULL);
        model_backward(&model, 1.0f);
        if (grads_dump(o.dump, &model, &err)) rc = cli_error(prog, "%s", err.msg);
        else printf("wrote %s: loss %.6f, %zu parameters, batch %zu x %zu\n", o.dump, model.loss, model.n_params, B, T);
        goto out_batch;
    }

    TrainHyper hyper = {.batch_size = B, .grad_accum = o.grad_accum, .max_iters = o.max_iters,
                        .warmup_iters = o.warmup_iters, .eval_iters = o.eval_iters, .lr = o.lr, .min_lr = o.min_lr,
                        .grad_clip = o.grad_clip, .adam = {o.beta1, o.beta2, o.eps, o.weight_decay}, .seed = o.seed,
                        .window_align = o.window_align, .max_seconds = o.max_seconds,
                        .train_mask = masks.train.marked, .val_mask = masks.val.marked};
    RunLog logf = {0};
    if (dist_agree(dist, dist->rank == 0 && o.log && open_log(&logf, o.log, start_step > 0, &err), &err)) {
        rc = cli_error(prog, "%s", err.msg);
        goto out_batch;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGXFSZ, SIG_IGN); /* past a file-size limit a write fails (EFBIG) and is reported, not fatal */

    char mixers[256] = "";
    for (size_t l = 0; l < o.cfg.n_layer; l++)
        snprintf(mixers + strlen(mixers), sizeof mixers - strlen(mixers), "%s%s", l ? "," : "", o.cfg.mixers[l]->name);
    printf("model: %zu parameters | n_layer %zu, n_head %zu, n_embd %zu, block %zu, vocab %zu | mixers %s | pos %s\n",
           model.n_params, o.cfg.n_layer, o.cfg.n_head, o.cfg.n_embd, T, o.cfg.vocab_size, mixers,
           pos_name(o.cfg.pos));
    ThreadTuner tuner;
    size_t width = threads_max();
    thread_tuner_init(&tuner, width, o.threads == 0 && dist->size == 1); /* ranks wait for the slowest: fixed */
    size_t start_threads = thread_tuner_start(&tuner);
    char how[96] = ""; /* the tuner's part of the line */
    if (tuner.adaptive && start_threads < width)
        snprintf(how, sizeof how, " (fewer while that is faster; starting with %zu: the other cores are busy)", start_threads);
    else if (tuner.adaptive) snprintf(how, sizeof how, " (fewer while that is faster)");
    printf("train: %zu tokens, val %zu | batch %zu x %zu x accum %zu | steps %zu..%zu of %zu | %zu threads%s\n",
           ds.train.n, ds.val.n, B, T, o.grad_accum, start_step, o.stop_at, o.max_iters, width, how);
    printf("blas: %s | %zu threads\n", blas_describe(), width);
    if (masks.train.marked || masks.val.marked)
        printf("loss mask: only the targets marked in%s%s are in the loss (--no-loss-mask: all)\n",
               masks.train.marked ? " train.mask" : "", masks.val.marked ? " val.mask" : "");
    if (dist->size > 1)
        printf("mpi: %d ranks (%d on this machine) x %zu threads | micro-batch i of a step on rank i mod %d | "
               "all-reduce of %.1f MiB per step, started layer by layer during backward\n",
               dist->size, dist->local_size, width, dist->size, (double)model.n_params * 4.0 / (1024.0 * 1024.0));
    const double mib = 4.0 / (1024.0 * 1024.0); /* floats to MiB */
    printf("memory: weights %.1f MiB, gradients and AdamW moments %.1f MiB, activations %.1f MiB\n",
           (double)model.n_params * mib, 3.0 * (double)model.n_params * mib, (double)model.n_acts * mib);
    fflush(stdout);

    size_t tokens_per_step = B * T * o.grad_accum * (size_t)dist->size;
    double wait_secs = 0.0; /* waiting for the all-reduce, since the last progress line */
    double t_start = cli_now(), t_last = t_start, step_secs = 0.0; /* step_secs: training only, no validation */
    double train_secs = 0.0;                                            /* the same, over the profiled steps */
    double train_clock = 0.0; /* all training steps so far: --max-seconds' clock */
    int time_up = 0;
    Profile prof = {0};
    size_t last_logged = start_step;
    float loss = NAN;
    size_t step = start_step;
    /* Validation is measured after a step, so a log row's val_loss belongs to
     * its step and token count: the untrained model first, then every
     * eval_interval steps and at the end of the schedule. */
    if (start_step == 0) {
        ValLoss val = estimate_loss(&model, &ds.val, &hyper, dist, &ds.tok, inputs, targets);
        printf("step %5d | val loss %.4f | %.4f bits per byte\n", 0, val.loss, val.bits_per_byte);
        log_row(&logf, 0, 0, NAN, val, NAN, NAN, NAN, 0.0, NAN);
    }
    for (; step < o.stop_at; step++) {
        double t0 = cli_now();
        StepStats st;
        /* The profile skips the run's first step (first touches of memory)
         * and validation. */
        int profiled = profile_on && step > start_step;
        model.prof = profiled ? &prof : NULL;
        size_t threads = thread_tuner_begin(&tuner);
        int failed = train_step(&model, &ds.train, &data_rng, &hyper, dist, step, train_clock, inputs, targets, &st, &err);
        thread_tuner_record(&tuner, cli_now() - t0);
        model.prof = NULL;
        if (failed) {
            if (dist->rank == 0)
                fprintf(stderr, "%s: error: %s; stopping without saving, the last good checkpoint is kept\n", prog,
                        err.msg);
            rc = 1;
            break;
        }
        wait_secs += dist->wait_seconds;
        loss = st.loss;
        double now = cli_now(), ms = 1e3 * (now - t0);
        step_secs += now - t0;
        train_clock += now - t0;
        time_up = o.max_seconds > 0 && train_clock >= o.max_seconds;
        if (profiled) train_secs += now - t0;
        size_t done = step + 1;
        ValLoss val = {NAN, NAN};
        if ((o.eval_interval && done % o.eval_interval == 0) || done == o.max_iters || time_up)
            val = estimate_loss(&model, &ds.val, &hyper, dist, &ds.tok, inputs, targets);
        log_row(&logf, done, done * tokens_per_step, loss, val, st.lr, st.grad_norm, ms, cli_now() - t_start,
                (double)threads);
        if ((step + 1) % o.log_interval == 0 || step + 1 == o.stop_at || time_up) {
            double n = (double)(step + 1 - last_logged), per = step_secs / n, wall = (cli_now() - t_last) / n;
            char eta[32];
            cli_duration(wall * (double)(o.stop_at - step - 1), eta, sizeof eta);
            char busy[64] = ""; /* the tuner has stepped down, or the all-reduce kept us waiting: say so */
            if (threads < tuner.cand[0]) snprintf(busy, sizeof busy, " | %zu of %zu threads", threads, tuner.cand[0]);
            if (dist->size > 1) snprintf(busy, sizeof busy, " | all-reduce wait %.1f ms/step", 1e3 * wait_secs / n);
            wait_secs = 0.0;
            printf("step %5zu/%zu | loss %.4f | lr %.2e | norm %6.3f | %7.0f tok/s | %6.1f ms/step | ETA %s%s\n",
                   step + 1, o.max_iters, loss, st.lr, st.grad_norm, (double)tokens_per_step / per, 1e3 * per, eta, busy);
            fflush(stdout);
            t_last = cli_now();
            step_secs = 0.0;
            last_logged = step + 1;
        }
        if (!isnan(val.loss))
            printf("step %5zu | val loss %.4f | %.4f bits per byte%s\n", done, val.loss, val.bits_per_byte,
                   done == o.max_iters || time_up ? " (final)" : "");
        if (o.ckpt_interval && (step + 1) % o.ckpt_interval == 0 && step + 1 < o.stop_at) {
            if (save(o.out, &model, &ds, &o, step + 1, data_rng, dist, &err)) {
                rc = cli_error(prog, "%s", err.msg);
                break;
            }
        }
        if (dist_any(dist, logf.failed != 0)) { /* rank 0 could not write the log: stop, keep the last checkpoint */
            if (dist->rank == 0)
                fprintf(stderr, "%s: error: cannot write the log '%s': %s; stopping without saving, the last good "
                                "checkpoint is kept\n", prog, logf.path, strerror(logf.failed));
            rc = 1;
            break;
        }
        if (dist_any(dist, interrupted)) /* a signal to any rank stops them all, after the same step */
            interrupted = 1;
        if (interrupted || time_up) {
            if (time_up) printf("time budget: %.1f s of training steps reached after step %zu\n", train_clock, done);
            step++;
            break;
        }
    }
    if (rc == 0) {
        if (save(o.out, &model, &ds, &o, step, data_rng, dist, &err)) {
            rc = cli_error(prog, "%s", err.msg);
        } else if (interrupted) {
            printf("interrupted: checkpoint at step %zu saved to %s (continue with --resume %s)\n", step, o.out, o.out);
            rc = 130;
        } else {
            char took[32];
            cli_duration(cli_now() - t_start, took, sizeof took);
            printf("saved %s at step %zu (%s)\n", o.out, step, took);
        }
    }
    if (profile_on) profile_print(stdout, &prof, train_secs);
    if (logf.f) fclose(logf.f);
out_batch:
    free(inputs);
    free(targets);
out_model:
    model_free(&model);
    loss_masks_free(&masks);
    dataset_free(&ds);
    return rc;
}

int main(int argc, char **argv) {
    blas_setup(argc, argv); /* first: it may restart the program with faster BLIS kernels */
    Dist dist;
    Error err;
    if (dist_init(&dist, &argc, &argv, &err)) {
        fprintf(stderr, "%s: error: %s\n", prog, err.msg);
        return 1;
    }
    if (dist.rank != 0) { /* rank 0 speaks for the job */
        cli_set_quiet(1);
        if (!freopen("/dev/null", "w", stdout)) fclose(stdout);
    }
    int rc = train_main(argc, argv, &dist);
    dist_finalize(&dist);
    return rc;
}
