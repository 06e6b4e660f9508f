/* The per-step log (see train/run_log.h). */
#include "run_log.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lm/files.h"
#include "lm/json.h"

/* A log's first line begins with one of these (CSV's header, a JSON line). */
static const char *const log_starts[] = {"step,tokens,", "{\"step\":"};
/* The columns after step and tokens, in order; the last three came after
 * the others (a resumed run's older rows get them empty: pad_row). val_loss
 * is the estimate over val_batches batches; val_full_* the whole split. */
static const char *const column_names[] = {"train_loss", "val_loss", "val_bits_per_byte", "lr", "grad_norm",
                                           "ms_per_step", "elapsed_s", "threads", "val_batches", "val_full_loss",
                                           "val_full_bits_per_byte"};
static const char *const column_fmts[] = {"%.6f", "%.6f", "%.6f", "%.6g", "%.6g", "%.3f", "%.3f", "%.0f", "%.0f",
                                          "%.6f", "%.6f"};
enum { N_COLUMNS = 2 + sizeof column_names / sizeof column_names[0] };

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

/* The step of a row of ours, a CSV row ("12,3072,...") or a JSON line
 * ({"step":12,...}); -1 for anything else (the header, a line a kill cut). */
static long long row_step(const char *line, int jsonl) {
    const char *at = line;
    if (jsonl) {
        if (strncmp(line, log_starts[1], strlen(log_starts[1])) != 0) return -1;
        at += strlen(log_starts[1]);
    }
    char *end;
    if (*at < '0' || *at > '9') return -1;
    errno = 0;
    long long step = strtoll(at, &end, 10);
    return errno || *end != ',' ? -1 : step;
}

/* The elapsed_s of a row: a JSON line's "elapsed_s", a CSV row's 9th cell. */
static double row_elapsed(const char *line, int jsonl) {
    double v = 0.0;
    if (jsonl) {
        const char *at = strstr(line, "\"elapsed_s\":");
        if (at) v = strtod(at + 12, NULL);
    } else {
        const char *cell = line;
        for (int i = 0; i < 8 && cell; i++) cell = (cell = strchr(cell, ',')) ? cell + 1 : NULL;
        if (cell) v = strtod(cell, NULL);
    }
    return isfinite(v) && v > 0.0 ? v : 0.0;
}

/* A row of the log (newline included) into f; a CSV row of fewer columns
 * (a log written before the last ones) with the missing cells empty, so
 * that every row has the header's. */
static void pad_row(FILE *f, const char *line, int jsonl) {
    size_t cells = 1, len = strlen(line);
    for (const char *c = line; *c; c++) cells += *c == ',';
    if (jsonl || cells >= N_COLUMNS) {
        fputs(line, f);
        return;
    }
    fwrite(line, 1, len - 1, f);
    for (; cells < N_COLUMNS; cells++) fputc(',', f);
    fputc('\n', f);
}

/* Copies the rows of the log at path up to step `through` into f; -1 with
 * err when it cannot be read. A missing log has none. */
static int copy_rows(const char *path, int jsonl, size_t through, FILE *f, double *elapsed, Error *err) {
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) return 0;
    struct stat st;
    FILE *old = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? fdopen(fd, "rb") : NULL;
    if (!old) {
        int e = errno;
        if (fd >= 0) close(fd);
        return err_set(err, "cannot open log '%s': %s", path, fd >= 0 ? "not a regular file" : strerror(e));
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, old)) > 0) {
        long long step = line[n - 1] == '\n' ? row_step(line, jsonl) : -1;
        if (step < 0 || (unsigned long long)step > through) continue; /* the header, a cut line, a row past it */
        pad_row(f, line, jsonl);
        *elapsed = row_elapsed(line, jsonl);
    }
    int bad = ferror(old);
    free(line);
    fclose(old);
    return bad ? err_set(err, "cannot read log '%s': %s", path, strerror(errno)) : 0;
}

int run_log_open(RunLog *log, const char *path, int resume, size_t through, double *elapsed, Error *err) {
    size_t n = strlen(path);
    log->jsonl = n > 6 && strcmp(path + n - 6, ".jsonl") == 0;
    log->path = path;
    log->failed = 0;
    log->f = NULL;
    *elapsed = 0.0;
    struct stat st;
    if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode))
        return err_set(err, "cannot open log '%s': %s", path,
                       S_ISLNK(st.st_mode) ? "it is a symbolic link (never written through)" : "not a regular file");
    /* A new file, renamed over the old one: never through a link, never
     * into another name of the same file (a copy made with cp -al). */
    char tmp[PATH_BUF];
    FILE *f = temp_create(path, tmp, sizeof tmp, err);
    if (!f) return -1;
    if (!log->jsonl) {
        fputs("step,tokens", f);
        for (size_t i = 0; i < N_COLUMNS - 2; i++) fprintf(f, ",%s", column_names[i]);
        fputc('\n', f);
    }
    if ((resume && copy_rows(path, log->jsonl, through, f, elapsed, err)) || temp_publish(f, tmp, path, err)) {
        fclose(f);
        unlink(tmp);
        cleanup_drop(tmp);
        return -1;
    }
    log->f = f;
    return 0;
}

/* A CSV cell (empty for NaN) or a JSON number. */
static void put_num(FILE *f, const char *fmt, double v, int jsonl) {
    char buf[JSON_NUMBER_MAX];
    if (jsonl) fputs(json_number(buf, fmt, v), f);
    else if (!isnan(v)) fprintf(f, fmt, v);
}

void run_log_row(RunLog *log, const LogRow *r) {
    if (!log->f) return;
    double vals[] = {r->loss, r->val.loss, r->val.bits_per_byte, r->lr, r->norm, r->ms, r->elapsed, r->threads,
                     r->val_batches ? (double)r->val_batches : NAN, r->full.loss, r->full.bits_per_byte};
    if (log->jsonl) fprintf(log->f, "{\"step\":%zu,\"tokens\":%zu", r->step, r->tokens);
    else fprintf(log->f, "%zu,%zu", r->step, r->tokens);
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        if (log->jsonl) fprintf(log->f, ",\"%s\":", column_names[i]);
        else fputc(',', log->f);
        put_num(log->f, column_fmts[i], vals[i], log->jsonl);
    }
    fputs(log->jsonl ? "}\n" : "\n", log->f);
    /* A failed write (a full disk) is remembered: the run stops. */
    if ((fflush(log->f) != 0 || ferror(log->f)) && !log->failed) log->failed = errno ? errno : EIO;
}

void run_log_close(RunLog *log) {
    if (log->f) fclose(log->f);
    log->f = NULL;
}
