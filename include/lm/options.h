/* One row type for every option: a program's command line, bin/train's
 * run options, each mixer's settings and each optimizer's. A table of rows
 * is parsed (getopt_long underneath) and --help is generated from it, so
 * the two never disagree; the same rows are what a mixer's settings are
 * written to and read from the config JSON by, and what a checkpoint keeps
 * of a run. Each row names an option, what kind of value it takes, where
 * the value goes and one or more lines of help; the facets only some
 * tables use (a checkpoint's role, a JSON key, a mixer's text hooks) are
 * fields of the same row, left zero elsewhere.
 *
 * Errors are one line on stderr ("<prog>: error: ...", lm/cli.h) and exit
 * status 2: an unknown option, an abbreviated one (getopt_long takes a
 * unique prefix; options are written in full, so that the pre-scans of
 * cli_arg_value, which match whole names, read the command line as the
 * parse does), a missing value, a value that is not a number or is out of
 * the row's bounds, or a stray argument. */
#ifndef LM_CLI_OPTIONS_H
#define LM_CLI_OPTIONS_H

#include <stddef.h>
#include <stdio.h>

#include "lm/error.h"

struct json_t;
struct Optimizer;

/* What a row's value is, at its place (base + offset, below). */
typedef enum {
    OPT_FLAG,    /* no value: the int = 1 */
    OPT_TEXT,    /* the const char * = the value as given (a mixer's text setting: what its hooks parse) */
    OPT_SIZE,    /* the size_t = a decimal integer in [lo, hi] */
    OPT_FLOAT,   /* the float = a finite number in [lo, hi] */
    OPT_CALL,    /* call(ctx, value, err), in command-line order: repeatable options, lists */
    OPT_HEADING, /* not an option: a line of --help between the rows ("bpe only:") */
} OptKind;

/* What a number option is to bin/train's checkpoints (train/run_options.h);
 * every other table's rows are RUN_ONCE, the zero. */
typedef enum {
    RUN_ONCE = 0, /* this invocation only (threads, stop-at, time budget) */
    RUN_KEPT = 1, /* stored in the checkpoint; --resume takes it unless given again */
    RUN_ARCH = 2, /* fixes the model: with --resume it must equal the checkpoint's */
} OptionRole;

typedef struct OptionRow {
    const char *name;  /* the long option without "--" (the heading's text for OPT_HEADING) */
    char letter;       /* the short option, or 0 */
    OptKind kind;
    /* Where the value lies: base + offset. A program's own rows name their
     * variable as base (offset 0). Rows declared against a struct (a
     * mixer's settings, an optimizer's, bin/train's RunOptions) hold the
     * offset into it and no base: the table that takes them in supplies
     * base (the struct it fills), and a row read against any one instance
     * of its struct is read at option_at(row, that instance). A table
     * describing a struct that holds another (RunOptions holds each
     * mixer's settings) takes the inner rows in with their offsets moved
     * by where the inner struct lies. */
    void *base;
    size_t offset;
    double lo, hi;     /* bounds of OPT_SIZE and OPT_FLOAT values */
    const char *value; /* what the value is called in --help: DIR, N, X (NULL for flags) */
    const char *help;  /* lines separated by '\n'; the default in parentheses, as the programs write it */
    int (*call)(void *ctx, const char *value, Error *err); /* OPT_CALL */
    void *ctx;
    int given;         /* set by cli_parse: the option was on the command line */

    /* A setting's (a mixer's, an optimizer's): the default of a number. */
    double def;

    /* bin/train's (train/run_options.h): what a checkpoint makes of it; and
     * for an optimizer's own row its optimizer, whose runs alone store it
     * (every other run's checkpoint is as it was without it; NULL: every
     * run's). */
    OptionRole role;
    const struct Optimizer *optimizer;

    /* A mixer's (lm/mixer.h): the config JSON's key ("grassmann_rank"). */
    const char *json_key;
    /* A setting written to the config only when it is not its default, so
     * that the configs (and checkpoints) of models that do not use it are
     * what they were before the option existed. */
    int omit_default;
    /* A mixer's text setting (OPT_TEXT; a list such as Grassmann's window
     * offsets): the default, parsed by set like any value; set parses text
     * into the settings (n_layer: the model's, for a list per layer); get
     * writes the settings back in the form set takes (canonical, so two
     * values compare as text); to_json appends the JSON value, from_json
     * reads one back into the settings. */
    const char *def_text;
    int (*set)(void *settings, size_t n_layer, const char *text, Error *err);
    const char *(*get)(const void *settings, size_t n_layer, char *buf, size_t len);
    void (*to_json)(const void *settings, size_t n_layer, char **sb);
    int (*from_json)(void *settings, size_t n_layer, const struct json_t *value, Error *err);
    /* What the harnesses make of a mixer's setting (bin/info --mixers,
     * harness/registry.py): arch_key, its key in an architecture ("window"
     * in swa=attention:window=17; NULL: given for every architecture only,
     * as bin/train's option); size_knob, 1 for the one option of the mixer
     * that sizes its layer, which a size match (match=) varies to bring the
     * parameter count to another architecture's (Grassmann's rank); family,
     * what a model whose layers set this option to anything but its default
     * is called ("sliding-window attention"; NULL: the mixer's name). */
    const char *arch_key;
    int size_knob;
    const char *family;
} OptionRow;

/* The rows, as a program's table writes them. */
#define CLI_FLAG(NAME, LETTER, DST, HELP) \
    {.name = (NAME), .letter = (LETTER), .kind = OPT_FLAG, .base = (DST), .help = (HELP)}
#define CLI_TEXT(NAME, LETTER, DST, VALUE, HELP) \
    {.name = (NAME), .letter = (LETTER), .kind = OPT_TEXT, .base = (DST), .value = (VALUE), .help = (HELP)}
#define CLI_SIZE(NAME, LETTER, DST, LO, HI, VALUE, HELP) \
    {.name = (NAME), .letter = (LETTER), .kind = OPT_SIZE, .base = (DST), .lo = (LO), .hi = (HI), \
     .value = (VALUE), .help = (HELP)}
#define CLI_FLOAT(NAME, LETTER, DST, LO, HI, VALUE, HELP) \
    {.name = (NAME), .letter = (LETTER), .kind = OPT_FLOAT, .base = (DST), .lo = (LO), .hi = (HI), \
     .value = (VALUE), .help = (HELP)}
#define CLI_CALL(NAME, LETTER, CALL, CTX, VALUE, HELP) \
    {.name = (NAME), .letter = (LETTER), .kind = OPT_CALL, .value = (VALUE), .help = (HELP), .call = (CALL), \
     .ctx = (CTX)}
#define CLI_HEADING(TEXT) {.name = (TEXT), .kind = OPT_HEADING}

/* Row r's value in the struct at base (a table's row: at its own base). */
static inline void *option_at(const OptionRow *r, const void *base) { return (char *)base + r->offset; }
/* A row declared against a struct, as a row of a table that fills the one
 * at base (bin/train's run rows, with base the RunOptions parsed into). */
static inline OptionRow option_row_for(const OptionRow *r, void *base) {
    OptionRow row = *r;
    row.base = base;
    return row;
}
/* A number row's value (OPT_SIZE or OPT_FLOAT) in the struct at base, and set to x. */
double option_number(const OptionRow *r, const void *base);
void option_set_number(const OptionRow *r, void *base, double x);
/* value taken into the struct at base as the command line takes it: a flag
 * set, text kept, a number parsed within the row's bounds (the message
 * names "--<name>"), or the row's call. */
int option_parse(const OptionRow *r, void *base, const char *value, Error *err);

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
 * --help or --version ("<name> (lm) LM_VERSION", lm/cli.h), or
 * EXIT_BAD_INPUT after printing one line. With p->positional,
 * *first (if not NULL) gets the index of the first argument that is not an
 * option. */
int cli_parse(const CliProgram *p, OptionRow *opts, size_t n, int argc, char **argv, int *first);
void cli_help(FILE *f, const CliProgram *p, const OptionRow *opts, size_t n);
/* The value of --name in argv (its last, up to "--"; "--name=value" or
 * "--name value"), before parsing: the options that change what is parsed
 * (--config, --recipe). NULL when absent; *missing when it ends argv
 * without its value. */
const char *cli_arg_value(int argc, char **argv, const char *name, int *missing);
/* The row of a long option, or NULL. */
OptionRow *cli_option(OptionRow *opts, size_t n, const char *name);

/* What a mistyped option (arg: "--mixr" or "--mixr=x") most likely meant,
 * as the end of its error: the names it is a prefix of, when several
 * (getopt refuses an ambiguous prefix), else the nearest name by edit
 * distance within a third of its length (at least 2), ": did you mean
 * --mixer?"; "" when nothing is near. */
void cli_suggest(char *out, size_t size, const OptionRow *opts, size_t n, const char *arg);

/* ---- experiment files (src/cli/config_file.c) --------------------------------
 * A JSON object whose keys are the program's long options without "--":
 * "lr": 3e-4 is --lr 3e-4, "no-loss-mask": true is --no-loss-mask (false
 * and null: left out, the default). */

/* The arguments with --config FILE's options first: argv[0], then one
 * "--name=value" per key of FILE in its order, then argv[1..]; so the
 * command line wins, and each value is parsed and refused exactly as on
 * the command line. Without --config in argv, *out is argv itself. An
 * unknown key, a value of the wrong JSON type or a file that is not a JSON
 * object is one line in err ("did you mean" from cli_suggest). The new
 * array and its strings are malloc'd (free with cli_args_free). */
typedef struct CliArgs {
    int argc;
    char **argv;
    char **made; /* the "--name=value" strings (n_made), and argv itself when it is not the caller's */
    size_t n_made;
} CliArgs;
int cli_config_args(const OptionRow *opts, size_t n, int argc, char **argv, CliArgs *out, Error *err);
void cli_args_free(CliArgs *a);
/* The options' values as an experiment file (malloc'd, one key a line, in
 * the table's order), which --config reads back to the same values: flags
 * true or false, texts a string or null (not given), numbers as the rows
 * hold them (a number outside its row's bounds, an unset default such as
 * 0 for "the maximum", is null). Rows named in skip (NULL-terminated) and
 * OPT_CALL rows (no value to show) are left out. With base (an experiment
 * file's text, or NULL), the rows not given on the command line keep
 * base's value where it has one that the row takes (a string for a text,
 * a number within the bounds for a number, a boolean for a switch; else
 * the row's own): a resumed run's file, updated. */
char *cli_config_json(const OptionRow *opts, size_t n, const char *const *skip, const char *base, Error *err);

/* ---- values ----------------------------------------------------------------- */

/* A decimal size: no sign, no junk, at most `max`. `what` names the value in
 * the message ("--batch-size"). */
int parse_size(const char *s, size_t max, size_t *out, const char *what, Error *err);
/* A finite number in [lo, hi]. */
int parse_float(const char *s, double lo, double hi, float *out, const char *what, Error *err);

#endif
