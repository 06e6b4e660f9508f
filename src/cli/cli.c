#include "lm/cli.h"

#include <stdarg.h>
#include <stdio.h>

#include "lm/error.h"
#include "lm/machine.h"

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

double cli_now(void) { return wall_seconds(); }

void cli_duration(double s, char *buf, size_t len) {
    long t = (long)(s + 0.5);
    if (t >= 3600) snprintf(buf, len, "%ldh%02ldm", t / 3600, (t % 3600) / 60);
    else if (t >= 60) snprintf(buf, len, "%ldm%02lds", t / 60, t % 60);
    else snprintf(buf, len, "%lds", t);
}
