/* bin/inspect's report of an Inspection (lm/inspect.h): pictures, tables,
 * JSON and the printed summary, written by report.c, report_png.c,
 * report_text.c and report_json.c, with report_parts.c between them. */
#ifndef LM_EVAL_REPORT_H
#define LM_EVAL_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lm/error.h"
#include "lm/inspect.h"
#include "lm/model.h"
#include "lm/tokenizer.h"

/* One token as readable text, for the tables and the pictures. Text (ascii
 * 0): its characters, with space as U+2423 '␣' (BPE tokens carry their
 * leading space), newline, tab and carriage return as \n \t \r, and control
 * bytes or bytes that are not UTF-8 as <0xNN>; at most TOKEN_LABEL_CHARS
 * characters, then '…'. Pictures (ascii 1: the font has printable ASCII
 * only): space '_', newline '$', anything else outside printable ASCII '?'
 * (one per character); at most TOKEN_LABEL_ASCII characters, then '~'.
 * buf: TOKEN_LABEL_MAX bytes hold any label. */
#define TOKEN_LABEL_CHARS 24
#define TOKEN_LABEL_ASCII 10
#define TOKEN_LABEL_MAX (TOKEN_LABEL_CHARS * 6 + 8)
void token_label(const Tokenizer *tok, uint32_t id, int ascii, char *buf, size_t len);

/* Writes into dir (created if missing), for each layer's maps exhibit
 * <name>_L<l>_H<h>.png and <name>_L<l>.png (maps of more than
 * INSPECT_MAP_CELLS positions max-pooled in blocks), heads.png (every
 * map's statistics), for each series name <name>.png (every layer's rows),
 * heads.txt (every map's statistics and every table in full),
 * attribution.png, lens.txt, tokens.txt, inspect.json (every exhibit;
 * maps in full up to INSPECT_JSON_MAPS positions, beyond that each row's
 * top 3 keys) and inspect.html (all of it in one page for a browser, every
 * map in full). */
#define INSPECT_MAP_CELLS 64
#define INSPECT_JSON_MAPS 128
int inspect_write(const char *dir, const Inspection *in, const Induction *ind, const Tokenizer *tok,
                  const char *prompt, Error *err);
/* A summary on f: per head for models of at most 32 heads; beyond, per layer
 * (means over its heads) and the heads that stand out on each measure. */
void inspect_print(FILE *f, const Inspection *in, const Induction *ind, const Tokenizer *tok);

/* ---- between the report's files ---- */

/* Beyond this many attribution parts, the picture and the summary keep the largest. */
#define MANY_PARTS 40

/* What bin/inspect measures of every map, by layer and head (NaN for a layer without maps). */
typedef enum { HM_ENTROPY, HM_DIAGONAL, HM_PREVIOUS, HM_INDUCTION } HeadMeasure;
double report_head_measure(const Inspection *in, const Induction *ind, size_t l, size_t h, HeadMeasure which);
/* One measure over every head, layer-major (n_layer x n_head); NULL if out of memory. */
double *report_head_measures(const Inspection *in, const Induction *ind, HeadMeasure which);
/* The k indices of v (n) with the largest values (absolute: largest |v|), NaN
 * left out, in decreasing order and the first index first among equals;
 * returns how many (at most k). */
size_t report_top_k(const double *v, size_t n, size_t k, int absolute, size_t *out);
/* Whether any layer has maps; whether any has an exhibit of `kind`. */
int report_any_maps(const Inspection *in);
int report_any(const Inspection *in, ExhibitKind kind);

/* The names of the exhibits of `kind`, each once, in the order the layers
 * show them (at most max; returns how many): a series name is one picture. */
#define REPORT_NAMES_MAX 64
size_t report_names(const Inspection *in, ExhibitKind kind, const char **names, size_t max);
/* Layer l's exhibit of that kind and name, or NULL. */
const Exhibit *report_exhibit(const Inspection *in, size_t l, ExhibitKind kind, const char *name);
/* The colour scale of every exhibit of that kind and name: their lo and hi
 * where given, else the least and largest of their values (NaN left out). */
void report_scale(const Inspection *in, ExhibitKind kind, const char *name, float *lo, float *hi);
/* The mean of row r of a series over the positions where it has a value (NaN: none). */
double report_row_mean(const Exhibit *e, size_t r);

/* report_json.c: an exhibit other than maps as a JSON object, and what
 * bin/inspect measures of a layer's maps (",\"stats\":[...]"); the page
 * writes the same. */
void report_exhibit_json(char **sb, const Exhibit *e);
void report_exhibit_head_json(char **sb, const Exhibit *e);
void report_map_stats_json(char **sb, const Inspection *in, const Induction *ind, size_t l);

/* report_png.c: every picture into dir. */
int report_pictures(const char *dir, const Inspection *in, const Induction *ind, const Tokenizer *tok, Error *err);
/* report_text.c: the logit lens as a table; heads.txt's text (NULL when
 * there are neither maps nor tables). */
char *report_lens_table(const Inspection *in, const Tokenizer *tok);
char *report_heads_text(const Inspection *in, const Induction *ind);
/* report_html.c: inspect.html's text, the page with its data (free with
 * sb_free); NULL when out of memory. */
char *report_page(const Inspection *in, const Induction *ind, const Tokenizer *tok);
/* report_json.c: inspect.json's text (free with sb_free). */
char *report_json(const Inspection *in, const Induction *ind, const Tokenizer *tok,
                 const char *prompt);

#endif
