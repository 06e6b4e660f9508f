/* The per-step log (see train/run_log.h). */
#include "run_log.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "lm/json.h"

int run_log_open(RunLog *log, const char *path, int append, Error *err) {
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

/* A CSV cell (empty for NaN) or a JSON number. */
static void put_num(FILE *f, const char *fmt, double v, int jsonl) {
    char buf[JSON_NUMBER_MAX];
    if (jsonl) fputs(json_number(buf, fmt, v), f);
    else if (!isnan(v)) fprintf(f, fmt, v);
}

void run_log_row(RunLog *log, size_t step, size_t tokens, float loss, ValLoss val, float lr, float norm, double ms,
                 double elapsed, double threads) {
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
    /* A failed write (a full disk) is remembered: the run stops. */
    if ((fflush(log->f) != 0 || ferror(log->f)) && !log->failed) log->failed = errno ? errno : EIO;
}

void run_log_close(RunLog *log) {
    if (log->f) fclose(log->f);
    log->f = NULL;
}
