/* bin/train's loop (see loop.h). */
#include "loop.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "lm/cli.h"
#include "eta.h"
#include "run_dir.h"
#include "say.h"
#include "trainer.h"

static volatile sig_atomic_t interrupted = 0;
static void on_signal(int sig) {
    (void)sig;
    interrupted = 1;
    /* A closed terminal or ssh connection (SIGHUP) takes the reader of a
     * pipe (| tee) with it: what is left to print then fails with EPIPE
     * instead of killing the run before its checkpoint. */
    signal(SIGPIPE, SIG_IGN);
}

/* The signals that stop the run after its step, with a checkpoint: Ctrl-C,
 * kill, a closed terminal or ssh connection, Ctrl-\, and the reader of its
 * output gone (| head, or | tee gone with the terminal a moment before the
 * SIGHUP comes). */
static const int stop_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE};

/* The pace since the last progress line, and whether the ranks agreed to
 * stop on a signal. That is decided by one collective after each step and
 * never re-read from `interrupted`: a signal landing on one rank just after
 * the collective would otherwise stop that rank alone, and the others would
 * wait for it in the next step's all-reduce for ever. */
typedef struct Pace {
    size_t last_logged;
    double t_last;    /* when the last progress line was printed */
    double step_secs; /* training steps since then, validation not counted */
    double wait_secs; /* waiting for the all-reduce since then */
    EtaWindow eta;    /* the last progress intervals: the ETA's pace */
    int signalled;
} Pace;

/* A failure that ends the run before it saves: one line (from rank 0), and
 * the last good checkpoint stays as it was. Returns the exit status, 1. */
static int stop_unsaved(const char *prog, const Dist *dist, const char *msg) {
    if (dist->rank == 0) fprintf(stderr, "%s: error: %s; stopping without saving, the last good checkpoint is kept\n", prog, msg);
    return 1;
}

/* The last checkpoint this run saved (any of them: each holds the whole
 * state), or the one it resumed: what a failure leaves to go on from. */
static void saved(TrainLoop *L, const char *path, size_t step) {
    snprintf(L->last_good, sizeof L->last_good, "%s", path);
    L->last_good_step = step;
}

/* A failed write of best.ckpt or a kept step-N.ckpt (why): the run stops,
 * saving its own checkpoint at step `done` first unless it is saved
 * already (out_saved); else one line that it could not, and which file
 * holds the last good state. Returns the exit status, 2. */
static int stop_saving(TrainLoop *L, const char *prog, size_t done, int out_saved, const char *why) {
    Run *r = L->r;
    const RunOptions *o = &r->o;
    Error err;
    if (out_saved || run_save(r, o->out, done, &err) == 0)
        return cli_error(prog, "%s; the run stopped at step %zu, its checkpoint saved to %s (continue with --resume %s)",
                         why, done, o->out, o->run ? o->run : o->out);
    if (!L->last_good[0])
        return cli_error(prog, "%s; nor could the run's checkpoint be saved (%s): no checkpoint of this run was saved",
                         why, err.msg);
    return cli_error(prog, "%s; nor could the run's checkpoint be saved (%s): the last good state is %s, at step %zu",
                     why, err.msg, L->last_good, L->last_good_step);
}

int train_loop_open(TrainLoop *L, Run *r, int profile, Error *err) {
    memset(L, 0, sizeof *L);
    L->r = r;
    L->profile = profile;
    L->step = r->start_step;
    L->loss = NAN, L->val_loss = NAN;
    const RunOptions *o = &r->o;
    if (o->resume) saved(L, o->resume, r->start_step);
    Dist *dist = r->dist;
    /* A resumed run's rows go on from its checkpoint's step (a run resumed
     * at step 0 measures step 0 again: none are kept). */
    int resume = r->start_step > 0;
    double twin_elapsed;
    if (dist_agree(dist, dist->rank == 0 &&
                             ((o->log && run_log_open(&L->log, o->log, resume, r->start_step, &L->elapsed0, err)) ||
                              (o->log_twin && run_log_open(&L->twin, o->log_twin, resume, r->start_step, &twin_elapsed,
                                                           err))), err))
        return -1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    for (size_t i = 0; i < sizeof stop_signals / sizeof stop_signals[0]; i++) cleanup_catch(stop_signals[i], &sa);
    thread_tuner_init(&L->tuner, threads_max(), o->threads == 0 && dist->size == 1); /* ranks wait for the slowest: fixed */
    L->tokens_per_step = o->batch_size * o->cfg.block_size * o->grad_accum * (size_t)dist->size;
    return 0;
}

void train_loop_close(TrainLoop *L) {
    run_log_close(&L->log);
    run_log_close(&L->twin);
}

/* One validation: the estimate, and with --best-by full the whole split
 * (NaN: not measured). */
typedef struct Validation {
    ValLoss est, full;
} Validation;
static const Validation no_validation = {{NAN, NAN}, {NAN, NAN}};

/* The loss of v that is the run's: kept in its progress, choosing best.ckpt. */
static float run_loss(const TrainLoop *L, const Validation *v) {
    return L->r->o.best_full ? v->full.loss : v->est.loss;
}

/* A row of both logs, elapsed_s going on from the log's last. */
static void log_row(TrainLoop *L, size_t step, float loss, const Validation *v, float lr, float norm, double ms,
                    double threads) {
    LogRow row = {step, L->r->progress.tokens, loss, lr, norm, v->est, isnan(v->est.loss) ? 0 : L->r->o.eval_iters,
                  v->full, ms, L->elapsed0 + (step == 0 ? 0.0 : cli_now() - L->t_start), threads};
    run_log_row(&L->log, &row);
    run_log_row(&L->twin, &row);
}

/* The validation line after step `done`: the run's loss, saying which it is. */
static void say_validation(const TrainLoop *L, size_t done, const Validation *v, int final) {
    const RunOptions *o = &L->r->o;
    const ValLoss *mine = o->best_full ? &v->full : &v->est;
    char est[64], bpb[48] = "", other[96] = "";
    snprintf(est, sizeof est, "the estimate over %zu batch%s", o->eval_iters, o->eval_iters == 1 ? "" : "es");
    if (!isnan(mine->bits_per_byte)) snprintf(bpb, sizeof bpb, " | %.4f bits per byte", mine->bits_per_byte);
    if (o->best_full) snprintf(other, sizeof other, " | %s: %.4f", est, v->est.loss);
    say("step %5zu | val loss %.4f (%s)%s%s%s\n", done, mine->loss, o->best_full ? "the full split" : est, bpb, other,
        final ? " (final)" : "");
}

/* A validation loss measured after step `done`: the run's last, and in a
 * run folder best.ckpt when it is the best yet. */
static int validated(TrainLoop *L, size_t done, float loss, Error *err) {
    Run *r = L->r;
    RunProgress *p = &r->progress;
    L->val_loss = p->val_loss = loss;
    if (!isnan(p->best_val_loss) && !(loss < p->best_val_loss)) return 0;
    RunProgress before = *p;
    p->best_val_loss = loss;
    p->best_step = done;
    if (!r->o.run) return 0;
    if (run_save(r, r->o.run_best, done, err)) {
        *p = before; /* the best is still the one best.ckpt holds */
        p->val_loss = loss;
        return -1;
    }
    saved(L, r->o.run_best, done);
    return 0;
}

static int validate(TrainLoop *L, Validation *v, Error *err) {
    Run *r = L->r;
    *v = no_validation;
    return estimate_loss(&r->model, &r->ds.val, &r->hyper, r->dist, &r->ds.tok, r->inputs, r->targets, &v->est, err) ||
           (r->o.best_full && full_val_loss(&r->model, &r->ds.val, &r->hyper, r->dist, &r->ds.tok, &v->full, err))
               ? -1 : 0;
}

/* The progress line after step `done`, with the ETA: the steps left at the
 * pace of the last few progress intervals (eta.h), or with --max-seconds the
 * time budget left, whichever ends first; and a note when the tuner has
 * stepped down or the all-reduce kept this rank waiting. */
static void progress_line(TrainLoop *L, Pace *p, size_t done, size_t threads, const StepStats *st) {
    const RunOptions *o = &L->r->o;
    const Dist *dist = L->r->dist;
    double n = (double)(done - p->last_logged), per = p->step_secs / n;
    char eta[32], busy[64] = "";
    eta_window_add(&p->eta, n, cli_now() - p->t_last, p->step_secs);
    double left = eta_wall_per_step(&p->eta) * (double)(o->stop_at - done);
    if (o->max_seconds > 0 && per > 0.0) {
        double budget = (o->max_seconds - L->train_clock) * eta_wall_per_train(&p->eta); /* validation's share too */
        left = budget < left ? (budget > 0.0 ? budget : 0.0) : left;
    }
    cli_duration(left, eta, sizeof eta);
    if (threads < L->tuner.cand[0]) snprintf(busy, sizeof busy, " | %zu of %zu threads", threads, L->tuner.cand[0]);
    if (dist->size > 1) snprintf(busy, sizeof busy, " | all-reduce wait %.1f ms/step", 1e3 * p->wait_secs / n);
    p->wait_secs = 0.0;
    say("step %5zu/%zu | loss %.4f | lr %.2e | norm %6.3f | %7.0f tok/s | %6.1f ms/step | ETA %s%s\n", done,
        o->max_iters, L->loss, st->lr, st->grad_norm, (double)L->tokens_per_step / per, 1e3 * per, eta, busy);
    fflush(stdout);
    p->t_last = cli_now();
    p->step_secs = 0.0;
    p->last_logged = done;
}

/* Step L->step and what follows it: validation when due, the log row, a
 * progress line, a checkpoint on its interval. Returns 0 to go on, 1 to
 * stop after it (a signal, the time budget), or -1 with *rc set. */
static int one_step(TrainLoop *L, Pace *p, const char *prog, int *rc) {
    Run *r = L->r;
    const RunOptions *o = &r->o;
    Model *model = &r->model;
    Dist *dist = r->dist;
    Error err;
    double t0 = cli_now();
    StepStats st;
    int profiled = L->profile && L->step > r->start_step;
    size_t threads = thread_tuner_begin(&L->tuner);
    int failed = train_step(model, &r->ds.train, &r->data_rng, &r->hyper, dist, profiled ? &L->prof : NULL, L->step,
                            L->train_clock, r->inputs, r->targets, &st, &err);
    thread_tuner_record(&L->tuner, cli_now() - t0);
    if (failed) return *rc = stop_unsaved(prog, dist, err.msg), -1;
    p->wait_secs += dist->wait_seconds;
    L->loss = st.loss;
    double now = cli_now(), ms = 1e3 * (now - t0);
    p->step_secs += now - t0;
    L->train_clock += now - t0;
    int time_up = o->max_seconds > 0 && L->train_clock >= o->max_seconds;
    if (profiled) L->train_secs += now - t0;
    size_t done = L->step + 1;
    Validation val = no_validation;
    if (((o->eval_interval && done % o->eval_interval == 0) || done == o->max_iters || time_up) &&
        validate(L, &val, &err))
        return *rc = stop_unsaved(prog, dist, err.msg), -1;
    r->progress.tokens += L->tokens_per_step;
    log_row(L, done, L->loss, &val, st.lr, st.grad_norm, ms, (double)threads);
    if (done % o->log_interval == 0 || done == o->stop_at || time_up) progress_line(L, p, done, threads, &st);
    if (!isnan(val.est.loss)) {
        if (validated(L, done, run_loss(L, &val), &err)) return *rc = stop_saving(L, prog, done, 0, err.msg), -1;
        say_validation(L, done, &val, done == o->max_iters || time_up);
    }
    if (o->ckpt_interval && done % o->ckpt_interval == 0 && done < o->stop_at) {
        char kept[PATH_BUF];
        if (run_save(r, o->out, done, &err)) return *rc = cli_error(prog, "%s", err.msg), -1;
        saved(L, o->out, done);
        if (o->keep_ckpts && (run_dir_numbered(o, done, kept, sizeof kept, &err) || run_save(r, kept, done, &err)))
            return *rc = stop_saving(L, prog, done, 1, err.msg), -1;
    }
    const RunLog *broken = L->log.failed ? &L->log : &L->twin;
    if (dist_any(dist, broken->failed != 0)) { /* rank 0 could not write a log: stop, keep the last checkpoint */
        char msg[512];
        snprintf(msg, sizeof msg, "cannot write the log '%s': %s", broken->path, strerror(broken->failed));
        return *rc = stop_unsaved(prog, dist, msg), -1;
    }
    p->signalled = dist_any(dist, interrupted); /* a signal to any rank stops them all, after the same step */
    if (time_up) say("time budget: %.1f s of training steps reached after step %zu\n", L->train_clock, done);
    return p->signalled || time_up;
}

/* The checkpoint at the end, and the line that says so. */
static int finish(TrainLoop *L, const char *prog, int signalled) {
    const RunOptions *o = &L->r->o;
    Error err;
    if (run_save(L->r, o->out, L->step, &err)) return cli_error(prog, "%s", err.msg);
    if (signalled) {
        /* The checkpoint holds the data and the options: the log, this invocation's, is all it needs besides. */
        if (o->run)
            say("interrupted: checkpoint at step %zu saved to %s (continue with --resume %s)\n", L->step, o->out, o->run);
        else
            say("interrupted: checkpoint at step %zu saved to %s (continue with --resume %s%s%s)\n", L->step, o->out,
                o->out, o->log ? " --log " : "", o->log ? o->log : "");
        return 130;
    }
    char took[32];
    cli_duration(cli_now() - L->t_start, took, sizeof took);
    say("saved %s at step %zu (%s)\n", o->out, L->step, took);
    return 0;
}

/* The start-up line of what validation measures, when, and what it costs. */
static void say_validation_plan(const TrainLoop *L) {
    const Run *r = L->r;
    const RunOptions *o = &r->o;
    size_t B = o->batch_size, T = o->cfg.block_size, n = r->ds.val.n, windows = 1 + (n - 1 - T + T - 1) / T;
    char when[64] = "at step 0 and at the end", est[160];
    if (o->eval_interval) snprintf(when, sizeof when, "at step 0, every %zu steps and at the end", o->eval_interval);
    snprintf(est, sizeof est, "the estimate over %zu batches of %zu x %zu (%zu of val's %zu tokens)", o->eval_iters, B,
             T, o->eval_iters * B * T, n);
    if (o->best_full)
        say("validation: the full split (%zu tokens, %zu forwards of %zu x %zu) and %s, %s; the run's val loss and "
            "best.ckpt by the full split\n", n, (windows + B - 1) / B, B, T, est, when);
    else
        say("validation: %s, %s%s\n", est, when,
            o->run ? "; best.ckpt by it (--best-by full: by the whole split)" : "");
}

int train_loop_run(TrainLoop *L, const char *prog) {
    Run *r = L->r;
    Error err;
    int rc = 0;
    Pace p = {.last_logged = r->start_step};
    L->t_start = p.t_last = cli_now();
    /* Validation is measured after a step, so a log row's val_loss belongs to
     * its step and token count: the untrained model first, then every
     * eval_interval steps and at the end of the schedule. */
    say_validation_plan(L);
    if (r->start_step == 0) {
        Validation val;
        if (validate(L, &val, &err)) {
            rc = stop_unsaved(prog, r->dist, err.msg);
        } else {
            say_validation(L, 0, &val, 0);
            log_row(L, 0, NAN, &val, NAN, NAN, NAN, NAN);
            if (validated(L, 0, run_loss(L, &val), &err)) rc = stop_saving(L, prog, 0, 0, err.msg);
        }
    }
    while (rc == 0 && L->step < r->o.stop_at) {
        int next = one_step(L, &p, prog, &rc);
        if (next < 0) break;
        L->step++;
        if (next > 0) break;
    }
    return rc == 0 ? finish(L, prog, p.signalled) : rc;
}
