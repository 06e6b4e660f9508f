#include "cli/cli.h"

#include <omp.h>
#include <stdarg.h>
#include <stdio.h>

#include "runtime/error.h"
#include "nn/ops.h"
#include "runtime/machine.h"

static int quiet = 0;

void cli_set_quiet(int q) { quiet = q; }

int cli_error(const char *prog, const char *fmt, ...) {
    if (quiet) return EXIT_BAD_INPUT;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    for (char *c = msg; *c; c++)
        if (*c == '\n') *c = ' '; /* one line, always */
    fprintf(stderr, "%s: error: %s\n", prog, msg);
    return EXIT_BAD_INPUT;
}

void cli_set_threads(size_t n) {
    if (n > 0) omp_set_num_threads((int)n);
    gemm_set_parallel_width((size_t)omp_get_max_threads()); /* fixed for the run: see ops.h */
}

size_t cli_threads(void) { return (size_t)omp_get_max_threads(); }

double cli_now(void) { return wall_seconds(); }

void cli_duration(double s, char *buf, size_t len) {
    long t = (long)(s + 0.5);
    if (t >= 3600) snprintf(buf, len, "%ldh%02ldm", t / 3600, (t % 3600) / 60);
    else if (t >= 60) snprintf(buf, len, "%ldm%02lds", t / 60, t % 60);
    else snprintf(buf, len, "%lds", t);
}
