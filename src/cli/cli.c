#include "lm/cli.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "lm/error.h"
#include "lm/machine.h"
#include "lm/utf8.h"

static int quiet = 0;

void cli_set_quiet(int q) { quiet = q; }

int cli_error(const char *prog, const char *fmt, ...) {
    if (quiet) return EXIT_BAD_INPUT;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char shown[4 * sizeof msg];
    cli_printable(msg, shown, sizeof shown);
    fprintf(stderr, "%s: error: %s\n", prog, shown);
    return EXIT_BAD_INPUT;
}

void cli_note(const char *prog, const char *fmt, ...) {
    if (quiet) return;
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char shown[4 * sizeof msg];
    cli_printable(msg, shown, sizeof shown);
    fprintf(stderr, "%s: %s\n", prog, shown);
}

/* s into out with control bytes as \xNN; newlines as spaces (a message) or escaped too. */
static void printable(const char *s, char *out, size_t size, int newline_as_space) {
    size_t n = strlen(s), o = 0;
    for (size_t i = 0; i < n && o + 5 < size;) {
        uint32_t cp;
        size_t len = utf8_decode((const unsigned char *)s + i, n - i, &cp);
        if (s[i] == '\n' && newline_as_space) { /* one line, always */
            out[o++] = ' ';
            i++;
        } else if (len == 0 || cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0)) {
            /* a terminal control or a byte that is not UTF-8: shown, not sent */
            o += (size_t)snprintf(out + o, size - o, "\\x%02x", (unsigned char)s[i]);
            i++;
        } else {
            memcpy(out + o, s + i, len);
            o += len;
            i += len;
        }
    }
    out[o] = '\0';
}

void cli_printable(const char *s, char *out, size_t size) { printable(s, out, size, 1); }

void cli_escaped(const char *s, char *out, size_t size) { printable(s, out, size, 0); }

double cli_now(void) { return wall_seconds(); }

void cli_duration(double s, char *buf, size_t len) {
    long t = (long)(s + 0.5);
    if (t >= 3600) snprintf(buf, len, "%ldh%02ldm", t / 3600, (t % 3600) / 60);
    else if (t >= 60) snprintf(buf, len, "%ldm%02lds", t / 60, t % 60);
    else snprintf(buf, len, "%lds", t);
}
