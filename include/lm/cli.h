/* Small helpers shared by the programs in programs/ (their option tables:
 * lm/options.h). None of them exits: a program returns cli_error(...) from
 * main. */
#ifndef LM_CLI_H
#define LM_CLI_H

#include <stddef.h>

/* Exit status for bad input: usage errors, unreadable or invalid files. */
#define EXIT_BAD_INPUT 2

/* Prints "<prog>: error: <message>" on one line to stderr; returns EXIT_BAD_INPUT. */
int cli_error(const char *prog, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints "<prog>: <message>" on one line to stderr, shown as cli_error
 * shows it: a notice that is no error (which checkpoint was read). */
void cli_note(const char *prog, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* s as it may be shown on a terminal, into out (size bytes, cut if need be):
 * control characters (ESC, BEL, C1) and bytes that are not UTF-8 written as
 * \xNN, newlines as spaces. cli_error shows every message so. */
void cli_printable(const char *s, char *out, size_t size);
/* The same with newlines escaped too (\x0a): a name from a file or a
 * folder, shown in one line of a listing. */
void cli_escaped(const char *s, char *out, size_t size);
/* Quiet: cli_error prints nothing (the ranks of a job other than rank 0,
 * which reports for all of them). */
void cli_set_quiet(int quiet);
double cli_now(void); /* monotonic seconds */
/* "1h02m", "3m05s", "42s" */
void cli_duration(double seconds, char *buf, size_t len);

#endif
