/* Option tables: parsing and --help from the same rows (see lm/options.h). */
#include "lm/options.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lm/cli.h"

/* getopt_long's value for row i; clear of every short-option character. */
#define ROW_BASE 1000
#define HELP_ROW (ROW_BASE - 1)
#define VERSION_ROW (ROW_BASE - 2)

int parse_size(const char *s, size_t max, size_t *out, const char *what, Error *err) {
    if (!s || !*s) return err_set(err, "%s: empty value", what);
    for (const char *c = s; *c; c++)
        if (!isdigit((unsigned char)*c)) return err_set(err, "%s: '%s' is not a non-negative integer", what, s);
    errno = 0;
    unsigned long long v = strtoull(s, NULL, 10);
    if (errno == ERANGE || v > max) return err_set(err, "%s: %s is too large (max %zu)", what, s, max);
    *out = (size_t)v;
    return 0;
}

/* A decimal number, the whole string: [+-]digits[.digits][e[+-]digits]
 * (digits on at least one side of the point); strtod alone would also take
 * leading spaces, hex (0x10), "inf" and "nan". */
static int is_decimal(const char *s) {
    const char *c = s + (*s == '+' || *s == '-');
    size_t digits = 0;
    while (isdigit((unsigned char)*c)) c++, digits++;
    if (*c == '.')
        for (c++; isdigit((unsigned char)*c); c++) digits++;
    if (!digits) return 0;
    if (*c == 'e' || *c == 'E') {
        c += 1 + (c[1] == '+' || c[1] == '-');
        if (!isdigit((unsigned char)*c)) return 0;
        while (isdigit((unsigned char)*c)) c++;
    }
    return *c == '\0';
}

int parse_float(const char *s, double lo, double hi, float *out, const char *what, Error *err) {
    char *end;
    errno = 0;
    double v = s && is_decimal(s) ? strtod(s, &end) : 0.0;
    if (!s || !is_decimal(s) || *end || errno == ERANGE || v != v)
        return err_set(err, "%s: '%s' is not a number (write it in decimal: 0.5, 1e-3)", what, s ? s : "");
    if (v < lo || v > hi) return err_set(err, "%s: %s is out of range [%g, %g]", what, s, lo, hi);
    *out = (float)v;
    return 0;
}

const char *cli_arg_value(int argc, char **argv, const char *name, int *missing) {
    const char *value = NULL;
    size_t len = strlen(name);
    *missing = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) break;
        if (strncmp(a, "--", 2) != 0 || strncmp(a + 2, name, len) != 0) continue;
        if (a[2 + len] == '=') value = a + 3 + len;
        else if (a[2 + len] == '\0') {
            if (i + 1 == argc) *missing = 1;
            else value = argv[++i];
        }
    }
    return value;
}

OptionRow *cli_option(OptionRow *opts, size_t n, const char *name) {
    for (size_t i = 0; i < n; i++)
        if (opts[i].kind != OPT_HEADING && strcmp(opts[i].name, name) == 0) return &opts[i];
    return NULL;
}

double option_number(const OptionRow *r, const void *base) {
    const void *p = option_at(r, base);
    return r->kind == OPT_FLOAT ? (double)*(const float *)p : (double)*(const size_t *)p;
}

void option_set_number(const OptionRow *r, void *base, double x) {
    void *p = option_at(r, base);
    if (r->kind == OPT_FLOAT) *(float *)p = (float)x;
    else *(size_t *)p = (size_t)x;
}

int option_parse(const OptionRow *r, void *base, const char *value, Error *err) {
    char what[80];
    snprintf(what, sizeof what, "--%s", r->name);
    void *p = option_at(r, base);
    switch (r->kind) {
    case OPT_FLAG: *(int *)p = 1; return 0;
    case OPT_TEXT: *(const char **)p = value; return 0;
    case OPT_FLOAT: return parse_float(value, r->lo, r->hi, (float *)p, what, err);
    case OPT_CALL: return r->call(r->ctx, value, err);
    case OPT_SIZE: {
        size_t v;
        if (parse_size(value, (size_t)r->hi, &v, what, err)) return -1;
        if ((double)v < r->lo) return err_set(err, "%s must be at least %g (got %zu)", what, r->lo, v);
        *(size_t *)p = v;
        return 0;
    }
    case OPT_HEADING: break;
    }
    return 0;
}

/* Edit distance (insertions, deletions, substitutions) between a and b,
 * stopped at 99 for names longer than the rows below hold. */
static size_t edit_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b), row[64];
    if (la >= 64 || lb >= 64) return 99;
    for (size_t j = 0; j <= lb; j++) row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            diag = up;
            row[j] = best;
        }
    }
    return row[lb];
}

void cli_suggest(char *out, size_t size, const OptionRow *opts, size_t n, const char *arg) {
    *out = '\0';
    if (strncmp(arg, "--", 2) != 0) return;
    char typed[64];
    snprintf(typed, sizeof typed, "%.*s", (int)strcspn(arg + 2, "="), arg + 2);
    size_t len = strlen(typed), prefixed = 0, used = 0;
    if (!len) return;
    const char *best = NULL;
    size_t near = len / 3 > 2 ? len / 3 : 2, best_d = near + 1; /* within `near` edits, the fewest */
    for (size_t i = 0; i < n; i++) {
        if (opts[i].kind == OPT_HEADING) continue;
        if (strncmp(opts[i].name, typed, len) == 0) {
            if (prefixed++ < 4)
                used += (size_t)snprintf(out + used, used < size ? size - used : 0, "%s--%s",
                                         prefixed == 1 ? ": could be " : ", ", opts[i].name);
            continue;
        }
        size_t d = edit_distance(typed, opts[i].name);
        if (d < best_d) best = opts[i].name, best_d = d;
    }
    if (prefixed > 4) snprintf(out + used, used < size ? size - used : 0, " and %zu more", prefixed - 4);
    else if (!prefixed && best) snprintf(out, size, ": did you mean --%s?", best);
}

/* The argument getopt_long just took as a long option ("--name" or
 * "--name=value"), when it took one: its last element, or the one before
 * when the value was the next argument. */
static const char *long_typed(int argc, char **argv, int is_long) {
    if (!is_long || optind < 1 || optind > argc) return NULL;
    const char *a = argv[optind - 1];
    if (optarg && optarg == a && optind >= 2) a = argv[optind - 2]; /* "--name value" */
    return strncmp(a, "--", 2) == 0 ? a : NULL;
}

/* Whether typed ("--conf" or "--conf=x") is a shortening of name: getopt
 * takes unique prefixes, which the pre-scans for --config and --recipe
 * (cli_arg_value: whole names) would not see, so a prefix is refused, in
 * every program alike. */
static int abbreviated(const char *typed, const char *name) {
    size_t len = strcspn(typed + 2, "=");
    return len != strlen(name) || strncmp(typed + 2, name, len) != 0;
}

int cli_parse(const CliProgram *p, OptionRow *opts, size_t n, int argc, char **argv, int *first) {
    struct option *longs = calloc(n + 3, sizeof *longs);
    char *shorts = calloc(2 * n + 4, 1);
    if (!longs || !shorts) {
        free(longs);
        free(shorts);
        return cli_error(p->name, "out of memory");
    }
    size_t nl = 0, ns = 0;
    shorts[ns++] = ':'; /* a missing value is reported as ':' */
    for (size_t i = 0; i < n; i++) {
        if (opts[i].kind == OPT_HEADING) continue;
        int has_arg = opts[i].kind == OPT_FLAG ? no_argument : required_argument;
        longs[nl++] = (struct option){opts[i].name, has_arg, NULL, ROW_BASE + (int)i};
        if (opts[i].letter) {
            shorts[ns++] = opts[i].letter;
            if (has_arg == required_argument) shorts[ns++] = ':';
        }
    }
    longs[nl++] = (struct option){"help", no_argument, NULL, HELP_ROW};
    longs[nl++] = (struct option){"version", no_argument, NULL, VERSION_ROW};
    shorts[ns++] = 'h';
    opterr = 0;
    optind = 1;
    int rc = CLI_CONTINUE, c;
    Error err;
    while (rc == CLI_CONTINUE && (c = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
        OptionRow *o = NULL;
        if (c >= ROW_BASE) o = &opts[c - ROW_BASE];
        const char *typed = long_typed(argc, argv, c >= VERSION_ROW);
        const char *name = c == HELP_ROW ? "help" : c == VERSION_ROW ? "version" : o ? o->name : NULL;
        if (typed && abbreviated(typed, name)) {
            rc = cli_error(p->name, "option '--%.*s' is short for --%s: write options in full (see --help)",
                           (int)strcspn(typed + 2, "="), typed + 2, name);
            break;
        }
        struct stat st; /* bin/info * in a folder holding a run named --help */
        if (typed && p->positional && lstat(typed, &st) == 0) {
            rc = cli_error(p->name, "'%s' is an option, and a file or folder here too: write ./%s for the file or "
                                    "folder (or put -- before it)", typed, typed);
            break;
        }
        for (size_t i = 0; !o && c != '?' && c != ':' && i < n; i++)
            if (opts[i].kind != OPT_HEADING && opts[i].letter == c) o = &opts[i];
        if (c == HELP_ROW || c == 'h') {
            cli_help(stdout, p, opts, n);
            rc = 0;
        } else if (c == VERSION_ROW) {
            printf("%s (lm) %s\n", p->name, LM_VERSION);
            rc = 0;
        } else if (c == ':') rc = cli_error(p->name, "option '%s' needs a value (see --help)", argv[optind - 1]);
        else if (!o) {
            char hint[320];
            cli_suggest(hint, sizeof hint, opts, n, argv[optind - 1]);
            rc = cli_error(p->name, "unknown option '%s'%s (see --help)", argv[optind - 1], hint);
        }
        else if (option_parse(o, o->base, optarg, &err)) rc = cli_error(p->name, "%s", err.msg);
        else o->given = 1;
    }
    if (rc == CLI_CONTINUE && optind < argc && !p->positional)
        rc = cli_error(p->name, "unexpected argument '%s' (see --help)", argv[optind]);
    if (first) *first = optind;
    free(longs);
    free(shorts);
    return rc;
}

/* "  -d, --data DIR" then the help's lines from p->column. */
static void help_row(FILE *f, int column, char letter, const char *name, const char *value, const char *help) {
    int len = letter ? fprintf(f, "  -%c, --%s", letter, name) : fprintf(f, "      --%s", name);
    if (value) len += fprintf(f, " %s", value);
    for (const char *line = help; line;) {
        const char *end = strchr(line, '\n');
        fprintf(f, "%*s%.*s\n", len < column ? column - len : 1, "", end ? (int)(end - line) : (int)strlen(line), line);
        line = end ? end + 1 : NULL;
        len = 0;
    }
}

void cli_help(FILE *f, const CliProgram *p, const OptionRow *opts, size_t n) {
    for (const char *line = p->usage, *prefix = "usage: "; line; prefix = "       ") {
        const char *end = strchr(line, '\n');
        fprintf(f, "%s%.*s\n", prefix, end ? (int)(end - line) : (int)strlen(line), line);
        line = end ? end + 1 : NULL;
    }
    if (p->about) fputs(p->about, f);
    fputc('\n', f);
    for (size_t i = 0; i < n; i++) {
        if (opts[i].kind == OPT_HEADING) fprintf(f, "%s\n", opts[i].name);
        else help_row(f, p->column, opts[i].letter, opts[i].name, opts[i].value, opts[i].help);
    }
    help_row(f, p->column, 'h', "help", NULL, "this help");
    help_row(f, p->column, 0, "version", NULL, "the version");
    if (p->after) fputs(p->after, f);
}
