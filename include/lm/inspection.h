/* What a mixer shows of one of its layers when asked (the optional
 * `inspect` hook of lm/mixer.h, used by bin/inspect through src/inspect/):
 * a list of named exhibits, each of one of a few kinds, which every report
 * (the printed summary, the text files, the JSON, the PNGs, the page)
 * draws by its kind, never by the mixer; and the parts of the layer's
 * output for the direct attribution of the last prediction.
 *
 * The kinds, and what `values` holds:
 *   EXHIBIT_MAPS    a (T, T) map per head: (rows = n_head, T, T), row i of
 *                   a map where query position i puts its weight over the
 *                   key positions (a distribution: non-negative, summing to
 *                   1, zero above the diagonal). bin/inspect measures every
 *                   map of a layer's first maps exhibit (entropy, weight on
 *                   the diagonal and on the previous position) and scores
 *                   induction on it.
 *   EXHIBIT_SERIES  a series over the prompt's T positions per row (a head,
 *                   an offset, or a single row): (rows, T); NaN where a
 *                   row has no value.
 *   EXHIBIT_TABLE   numbers by row and column: (rows, cols). With column
 *                   names each row is a record (a head's statistics); with
 *                   none (col_names NULL) a sequence (a spectrum), drawn as
 *                   bars.
 *   EXHIBIT_SCALAR  one number: values[0].
 * Every exhibit has a name (lower case letters, digits and '_': its key in
 * the JSON and in picture names), a caption (a short phrase with its units,
 * for titles), named rows ("H0", "d=4"; a maps exhibit's rows are its
 * heads, "H0" ...) and a colour scale [lo, hi] (NaN: from the data).
 * Exhibits of one name are drawn together across layers (a series name is
 * one picture, a table name one table), so a name means one thing.
 *
 * Showing something new: in the mixer's inspect hook, exhibit_add, then
 * fill values (and row names, the scale). Nothing else changes. */
#ifndef LM_MIXERS_INSPECTION_H
#define LM_MIXERS_INSPECTION_H

#include <stddef.h>

#include "lm/error.h"

typedef enum { EXHIBIT_MAPS, EXHIBIT_SERIES, EXHIBIT_TABLE, EXHIBIT_SCALAR } ExhibitKind;

#define EXHIBIT_NAME 32
#define EXHIBIT_CAPTION 256
#define EXHIBIT_LABEL 32
#define MIXER_PART_NAME 24

typedef struct Exhibit {
    ExhibitKind kind;
    char name[EXHIBIT_NAME];
    char caption[EXHIBIT_CAPTION];
    size_t rows, cols;                 /* maps: n_head and T; series: rows and T; table: rows and cols; scalar: 1, 1 */
    char (*row_names)[EXHIBIT_LABEL];  /* rows */
    char (*col_names)[EXHIBIT_LABEL];  /* a table's cols, or NULL */
    float *values;                     /* as the kind says (above) */
    float lo, hi;                      /* the colour scale; NaN: the data's least or largest */
} Exhibit;

typedef struct LayerInspection {
    const char *mixer;   /* the layer's mixer (its name), set by the inspection */
    const char *label;   /* the whole output in the attribution, "attn"; NULL: the mixer's name */
    size_t n_exhibits;
    Exhibit *exhibits;   /* in the order the mixer added them */
    /* parts of the output at position T - 1, for the attribution: n_parts
     * vectors of C, each a share of the layer's output, with a short name
     * ("H0", "attn bias"); the inspection shows them as "L<l> <name>" below
     * the whole output, which it names "L<l> <label>". */
    size_t n_parts;
    char (*part_name)[MIXER_PART_NAME]; /* n_parts */
    float *part_out;                    /* (n_parts, C) */
} LayerInspection;

/* Appends an exhibit to L with its values zeroed (maps: rows maps of
 * cols x cols), the scale NaN, rows named "H0", "H1" ... for maps and "0",
 * "1" ... otherwise, and a table's columns named by `columns` (cols names;
 * NULL: a sequence per row). Returns it, or NULL with err set when out of
 * memory or L holds EXHIBITS_MAX already. */
#define EXHIBITS_MAX 16
Exhibit *exhibit_add(LayerInspection *L, ExhibitKind kind, const char *name, const char *caption, size_t rows,
                     size_t cols, const char *const *columns, Error *err);
/* Names e's rows prefix0, prefix1 ... ("H": its heads). */
void exhibit_name_rows(Exhibit *e, const char *prefix);
/* The first exhibit of L of that kind, or NULL. */
const Exhibit *layer_exhibit_of(const LayerInspection *L, ExhibitKind kind);
/* "maps", "series", "table", "scalar". */
const char *exhibit_kind_name(ExhibitKind kind);
/* The number of floats in e's values. */
size_t exhibit_size(const Exhibit *e);

/* Frees what a mixer's inspect hook allocated and zeroes L. */
void layer_inspection_free(LayerInspection *L);

#endif
