/* One table of options per program: the command line is parsed from it
 * (getopt_long underneath) and --help is generated from it, so the two
 * never disagree. Each row names an option, what kind of value it takes,
 * where the value goes and one or more lines of help.
 *
 * Errors are one line on stderr ("<prog>: error: ...", lm/cli.h) and exit
 * status 2: an unknown option, a missing value, a value that is not a
 * number or is out of the row's bounds, or a stray argument. */
#ifndef LM_CLI_OPTIONS_H
#define LM_CLI_OPTIONS_H

#include <stddef.h>
#include <stdio.h>

#include "lm/error.h"

typedef enum {
    OPT_FLAG,    /* no value: *(int *)dst = 1 */
    OPT_TEXT,    /* *(const char **)dst = the value as given */
    OPT_SIZE,    /* *(size_t *)dst = a decimal integer in [lo, hi] */
    OPT_FLOAT,   /* *(float *)dst = a finite number in [lo, hi] */
    OPT_CALL,    /* call(ctx, value, err), in command-line order: repeatable options, lists */
    OPT_HEADING, /* not an option: a line of --help between the rows ("bpe only:") */
} OptKind;

typedef struct CliOption {
    const char *name;  /* the long option without "--" (the heading's text for OPT_HEADING) */
    char letter;       /* the short option, or 0 */
    OptKind kind;
    void *dst;
    double lo, hi;     /* bounds of OPT_SIZE and OPT_FLOAT values */
    const char *value; /* what the value is called in --help: DIR, N, X (NULL for flags) */
    const char *help;  /* lines separated by '\n'; the default in parentheses, as the programs write it */
    int (*call)(void *ctx, const char *value, Error *err); /* OPT_CALL */
    void *ctx;
    int given;         /* set by cli_parse: the option was on the command line */
} CliOption;

/* The rows, as a program's table writes them. */
#define CLI_FLAG(name, letter, dst, help) {(name), (letter), OPT_FLAG, (dst), 0, 0, NULL, (help), NULL, NULL, 0}
#define CLI_TEXT(name, letter, dst, value, help) {(name), (letter), OPT_TEXT, (dst), 0, 0, (value), (help), NULL, NULL, 0}
#define CLI_SIZE(name, letter, dst, lo, hi, value, help) \
    {(name), (letter), OPT_SIZE, (dst), (lo), (hi), (value), (help), NULL, NULL, 0}
#define CLI_FLOAT(name, letter, dst, lo, hi, value, help) \
    {(name), (letter), OPT_FLOAT, (dst), (lo), (hi), (value), (help), NULL, NULL, 0}
#define CLI_CALL(name, letter, call, ctx, value, help) \
    {(name), (letter), OPT_CALL, NULL, 0, 0, (value), (help), (call), (ctx), 0}
#define CLI_HEADING(text) {(text), 0, OPT_HEADING, NULL, 0, 0, NULL, NULL, NULL, NULL, 0}

/* What --help says around the option rows. */
typedef struct CliProgram {
    const char *name;  /* "train": errors read "train: error: ..." */
    const char *usage; /* the usage line(s), each starting with "bin/<name>", '\n' between them */
    const char *about; /* what the program does, before the options (may be NULL) */
    const char *after; /* text after the options (may be NULL) */
    int column;        /* where the help of an option row starts */
    int positional;    /* arguments after the options are the program's (else each is an error) */
} CliProgram;

/* cli_parse's "go on": anything else is the exit status to return from main. */
#define CLI_CONTINUE (-1)

/* Parses argv against opts (n rows). Returns CLI_CONTINUE, 0 after printing
 * --help, or EXIT_BAD_INPUT after printing one line. With p->positional,
 * *first (if not NULL) gets the index of the first argument that is not an
 * option. */
int cli_parse(const CliProgram *p, CliOption *opts, size_t n, int argc, char **argv, int *first);
void cli_help(FILE *f, const CliProgram *p, const CliOption *opts, size_t n);
/* The row of a long option, or NULL. */
CliOption *cli_option(CliOption *opts, size_t n, const char *name);

/* ---- values ----------------------------------------------------------------- */

/* A decimal size: no sign, no junk, at most `max`. `what` names the value in
 * the message ("--batch-size"). */
int parse_size(const char *s, size_t max, size_t *out, const char *what, Error *err);
/* A finite number in [lo, hi]. */
int parse_float(const char *s, double lo, double hi, float *out, const char *what, Error *err);

#endif
