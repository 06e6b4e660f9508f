/* A layer's exhibits (lm/inspection.h): added by a mixer's inspect hook,
 * freed with its LayerInspection. */
#include "lm/inspection.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t exhibit_size(const Exhibit *e) { return e->rows * e->cols * (e->kind == EXHIBIT_MAPS ? e->cols : 1); }

Exhibit *exhibit_add(LayerInspection *L, ExhibitKind kind, const char *name, const char *caption, size_t rows,
                     size_t cols, const char *const *columns, Error *err) {
    if (L->n_exhibits == EXHIBITS_MAX) {
        err_set(err, "a layer shows at most %d exhibits ('%s' is one more)", EXHIBITS_MAX, name);
        return NULL;
    }
    if (!*name || strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_") != strlen(name) || strlen(name) >= EXHIBIT_NAME) {
        err_set(err, "an exhibit's name is 1 to %d of a-z, 0-9 and _ (got '%s')", EXHIBIT_NAME - 1, name);
        return NULL;
    }
    /* Room for all of them at once: an exhibit stays where it is while more are added. */
    if (!L->exhibits && !(L->exhibits = lm_calloc(EXHIBITS_MAX, sizeof *L->exhibits, err))) return NULL;
    Exhibit *e = &L->exhibits[L->n_exhibits];
    memset(e, 0, sizeof *e);
    e->kind = kind;
    snprintf(e->name, sizeof e->name, "%s", name);
    snprintf(e->caption, sizeof e->caption, "%s", caption);
    e->rows = kind == EXHIBIT_SCALAR ? 1 : rows;
    e->cols = kind == EXHIBIT_SCALAR ? 1 : cols;
    e->lo = e->hi = NAN;
    e->values = lm_calloc(exhibit_size(e) ? exhibit_size(e) : 1, sizeof(float), err);
    e->row_names = e->values ? lm_calloc(e->rows ? e->rows : 1, sizeof *e->row_names, err) : NULL;
    if (e->row_names && kind == EXHIBIT_TABLE && columns) {
        e->col_names = lm_calloc(e->cols ? e->cols : 1, sizeof *e->col_names, err);
        for (size_t c = 0; e->col_names && c < e->cols; c++)
            snprintf(e->col_names[c], sizeof e->col_names[c], "%s", columns[c]);
    }
    if (!e->row_names || (kind == EXHIBIT_TABLE && columns && !e->col_names)) {
        free(e->values);
        free(e->row_names);
        memset(e, 0, sizeof *e);
        return NULL;
    }
    exhibit_name_rows(e, kind == EXHIBIT_MAPS ? "H" : "");
    L->n_exhibits++;
    return e;
}

void exhibit_name_rows(Exhibit *e, const char *prefix) {
    for (size_t r = 0; r < e->rows; r++) snprintf(e->row_names[r], sizeof e->row_names[r], "%s%zu", prefix, r);
}

const Exhibit *layer_exhibit_of(const LayerInspection *L, ExhibitKind kind) {
    for (size_t i = 0; i < L->n_exhibits; i++)
        if (L->exhibits[i].kind == kind) return &L->exhibits[i];
    return NULL;
}

const char *exhibit_kind_name(ExhibitKind kind) {
    switch (kind) {
    case EXHIBIT_MAPS: return "maps";
    case EXHIBIT_SERIES: return "series";
    case EXHIBIT_TABLE: return "table";
    case EXHIBIT_SCALAR: return "scalar";
    }
    return "?";
}

void layer_inspection_free(LayerInspection *L) {
    for (size_t i = 0; i < L->n_exhibits; i++) {
        free(L->exhibits[i].values);
        free(L->exhibits[i].row_names);
        free(L->exhibits[i].col_names);
    }
    free(L->exhibits);
    free(L->part_name);
    free(L->part_out);
    memset(L, 0, sizeof *L);
}
