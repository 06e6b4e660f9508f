/* The per-step log (see train/run_log.h). */
#include "run_log.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lm/json.h"

/* A log's first line begins with one of these (CSV's header, a JSON line). */
static const char *const log_starts[] = {"step,tokens,", "{\"step\":"};

int run_log_check(const char *path, Error *err) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return 0; /* none yet (or a link: refused when opened) */
    char head[16];
    ssize_t n = read(fd, head, sizeof head);
    close(fd);
    if (n <= 0) return 0; /* empty */
    for (size_t i = 0; i < sizeof log_starts / sizeof log_starts[0]; i++) {
        size_t len = strlen(log_starts[i]);
        if ((size_t)n >= len && memcmp(head, log_starts[i], len) == 0) return 0;
    }
    return err_set(err, "--log '%s' exists and is not a training log: it is neither appended to nor replaced "
                        "(give another path, or remove it)", path);
}

int run_log_open(RunLog *log, const char *path, int append, Error *err) {
    size_t n = strlen(path);
    log->jsonl = n > 6 && strcmp(path + n - 6, ".jsonl") == 0;
    log->path = path;
    log->failed = 0;
    log->f = NULL;
    /* Never through a link, never waiting on a FIFO; a regular file only. */
    int fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | (append ? O_APPEND : O_TRUNC), 0666);
    struct stat st = {0};
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || fcntl(fd, F_SETFL, append ? O_APPEND : 0) != 0 ||
        !(log->f = fdopen(fd, append ? "a" : "w"))) {
        int e = errno;
        if (fd >= 0) close(fd);
        return err_set(err, "cannot open log '%s': %s", path, fd >= 0 && !S_ISREG(st.st_mode) ? "not a regular file"
                                                                                              : strerror(e));
    }
    if (append) fseek(log->f, 0, SEEK_END);
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

double run_log_last_elapsed(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return 0.0;
    char buf[4096];
    long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    size_t n = size > 0 && fseek(f, size > (long)sizeof buf - 1 ? size - (long)sizeof buf + 1 : 0, SEEK_SET) == 0
                   ? fread(buf, 1, sizeof buf - 1, f) : 0;
    fclose(f);
    buf[n] = '\0';
    while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r')) buf[--n] = '\0';
    char *line = strrchr(buf, '\n');
    line = line ? line + 1 : buf;
    double v = 0.0;
    if (*line == '{') { /* a JSON line: its "elapsed_s" */
        const char *at = strstr(line, "\"elapsed_s\":");
        if (at) v = strtod(at + 12, NULL);
    } else { /* a CSV row: its 9th cell */
        const char *cell = line;
        for (int i = 0; i < 8 && cell; i++) cell = (cell = strchr(cell, ',')) ? cell + 1 : NULL;
        if (cell) v = strtod(cell, NULL);
    }
    return isfinite(v) && v > 0.0 ? v : 0.0;
}

void run_log_close(RunLog *log) {
    if (log->f) fclose(log->f);
    log->f = NULL;
}
