/* bin/inspect's inspect.json: every exhibit of every layer by its kind
 * (each head's map in full up to INSPECT_JSON_MAPS positions, beyond that
 * each row's strongest keys), the maps' statistics, the lens and the
 * attribution. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "lm/json.h"
#include "lm/plot_png.h"
#include "lm/utf8.h"
#include "lm/ds.h"
#include "lm/files.h"

/* Each row's strongest keys, in the JSON of a long prompt. */
#define JSON_TOP_KEYS 3

static void json_num(char **sb, double v) {
    char buf[JSON_NUMBER_MAX];
    sb_appendf(sb, "%s", json_number(buf, "%.6g", v));
}

/* , "name": value */
static void json_field(char **sb, const char *name, double v) {
    sb_appendf(sb, ", \"%s\": ", name);
    json_num(sb, v);
}

/* [v, ...] of n numbers from d (doubles) or else f (floats); with a name,
 * as the field , "name": [...]. */
static void json_numbers(char **sb, const char *name, const double *d, const float *f, size_t n) {
    if (name) sb_appendf(sb, ", \"%s\": ", name);
    sb_appendf(sb, "[");
    for (size_t i = 0; i < n; i++) {
        sb_appendf(sb, "%s", i ? ", " : "");
        json_num(sb, d ? d[i] : f[i]);
    }
    sb_appendf(sb, "]");
}

/* The token's own text, as a JSON string (bytes that are not UTF-8: U+FFFD). */
static void json_token_text(char **sb, const Tokenizer *tok, uint32_t id) {
    size_t n;
    const char *bytes = tokenizer_token(tok, id, &n);
    char *text = malloc(n + 1);
    if (text) {
        memcpy(text, bytes, n);
        text[n] = '\0';
    }
    sb_append_json_string(sb, text ? text : "");
    free(text);
}

static void json_label(char **sb, const Tokenizer *tok, uint32_t id) {
    char lab[TOKEN_LABEL_MAX];
    token_label(tok, id, 0, lab, sizeof lab);
    sb_append_json_string(sb, lab);
}

/* A head's map as a JSON array: every row in full, or for a long prompt
 * each row's strongest JSON_TOP_KEYS keys as [key, weight] pairs. */
static void json_map(char **sb, const float *p, size_t T) {
    int full = T <= INSPECT_JSON_MAPS;
    double *row = full ? NULL : malloc(T * sizeof *row);
    sb_appendf(sb, "[");
    for (size_t i = 0; i < T; i++) {
        sb_appendf(sb, "%s[", i ? ", " : "");
        if (full) {
            for (size_t j = 0; j <= i; j++) sb_appendf(sb, "%s%.4g", j ? ", " : "", p[i * T + j]);
        } else if (row) {
            size_t keys[JSON_TOP_KEYS];
            for (size_t j = 0; j <= i; j++) row[j] = p[i * T + j];
            size_t k = report_top_k(row, i + 1, JSON_TOP_KEYS, 0, keys);
            for (size_t r = 0; r < k; r++) sb_appendf(sb, "%s[%zu, %.4g]", r ? ", " : "", keys[r], p[i * T + keys[r]]);
        }
        sb_appendf(sb, "]");
    }
    sb_appendf(sb, "]");
    free(row);
}

void report_exhibit_head_json(char **sb, const Exhibit *e) {
    sb_appendf(sb, "{\"name\": ");
    sb_append_json_string(sb, e->name);
    sb_appendf(sb, ", \"kind\": \"%s\", \"caption\": ", exhibit_kind_name(e->kind));
    sb_append_json_string(sb, e->caption);
    for (size_t r = 0; e->kind != EXHIBIT_SCALAR && r < e->rows; r++) {
        sb_appendf(sb, "%s", r ? ", " : ", \"rows\": [");
        sb_append_json_string(sb, e->row_names[r]);
    }
    sb_appendf(sb, "%s, \"scale\": [", e->kind == EXHIBIT_SCALAR ? "" : e->rows ? "]" : ", \"rows\": []");
    json_num(sb, e->lo);
    sb_appendf(sb, ", ");
    json_num(sb, e->hi);
    sb_appendf(sb, "]");
}

void report_exhibit_json(char **sb, const Exhibit *e) {
    report_exhibit_head_json(sb, e);
    if (e->kind == EXHIBIT_SCALAR) {
        json_field(sb, "value", e->values[0]);
    } else {
        if (e->kind == EXHIBIT_TABLE) {
            sb_appendf(sb, ", \"columns\": ");
            for (size_t c = 0; e->col_names && c < e->cols; c++) {
                sb_appendf(sb, "%s", c ? ", " : "[");
                sb_append_json_string(sb, e->col_names[c]);
            }
            sb_appendf(sb, "%s", !e->col_names ? "null" : e->cols ? "]" : "[]");
        }
        sb_appendf(sb, ", \"values\": [");
        for (size_t r = 0; r < e->rows; r++) {
            sb_appendf(sb, "%s", r ? ", " : "");
            json_numbers(sb, NULL, NULL, e->values + r * e->cols, e->cols);
        }
        sb_appendf(sb, "]");
    }
    sb_appendf(sb, "}");
}

void report_map_stats_json(char **sb, const Inspection *in, const Induction *ind, size_t l) {
    sb_appendf(sb, ", \"stats\": [");
    for (size_t h = 0; h < in->maps[l]->rows; h++) {
        const MapStats *s = &in->map_stats[l][h];
        sb_appendf(sb, "%s{\"entropy\": ", h ? ", " : "");
        json_num(sb, s->entropy);
        json_field(sb, "diagonal", s->diagonal);
        json_field(sb, "previous", s->previous);
        json_field(sb, "induction", report_head_measure(in, ind, l, h, HM_INDUCTION));
        sb_appendf(sb, "}");
    }
    sb_appendf(sb, "]");
}

char *report_json(const Inspection *in, const Induction *ind, const Tokenizer *tok,
                        const char *prompt) {
    size_t T = in->T, H = in->n_head;
    char *sb = NULL;
    sb_appendf(&sb, "{\"prompt\": ");
    {
        /* The prompt as the model saw it: its tokens decoded. */
        uint32_t *ids = malloc(T * sizeof *ids);
        for (size_t t = 0; ids && t < T; t++) ids[t] = (uint32_t)in->tokens[t];
        char *text = ids ? tokenizer_decode(tok, ids, T) : NULL;
        sb_append_json_string(&sb, text ? text : ""); /* not UTF-8: U+FFFD, as a byte-level model may decode */
        free(text);
        free(ids);
    }
    sb_appendf(&sb, ", \"prompt_bytes\": %zu", strlen(prompt));
    sb_appendf(&sb, ", \"tokens\": [");
    for (size_t t = 0; t < T; t++) {
        sb_appendf(&sb, "%s{\"id\": %d, \"text\": ", t ? ", " : "", (int)in->tokens[t]);
        json_token_text(&sb, tok, (uint32_t)in->tokens[t]);
        sb_appendf(&sb, ", \"label\": ");
        json_label(&sb, tok, (uint32_t)in->tokens[t]);
        sb_appendf(&sb, "}");
    }
    sb_appendf(&sb, "], \"n_layer\": %zu, \"n_head\": %zu, \"maps\": \"%s\", \"layers\": [", in->n_layer, H,
               T <= INSPECT_JSON_MAPS ? "full" : "top keys");
    for (size_t l = 0; l < in->n_layer; l++) {
        const LayerInspection *li = &in->layer[l];
        sb_appendf(&sb, "%s{\"layer\": %zu, \"mixer\": \"%s\", \"exhibits\": [", l ? ", " : "", l, li->mixer);
        for (size_t i = 0; i < li->n_exhibits; i++) {
            const Exhibit *e = &li->exhibits[i];
            sb_appendf(&sb, "%s", i ? ", " : "");
            if (e->kind != EXHIBIT_MAPS) {
                report_exhibit_json(&sb, e);
                continue;
            }
            report_exhibit_head_json(&sb, e);
            if (e == in->maps[l]) report_map_stats_json(&sb, in, ind, l);
            sb_appendf(&sb, T <= INSPECT_JSON_MAPS ? ", \"maps\": [" : ", \"maps_top\": [");
            for (size_t h = 0; h < e->rows; h++) {
                sb_appendf(&sb, "%s", h ? ", " : "");
                json_map(&sb, e->values + h * T * T, T);
            }
            sb_appendf(&sb, "]}");
        }
        sb_appendf(&sb, "]}");
    }
    sb_appendf(&sb, "], \"logit_lens\": [");
    for (size_t s = 0; s <= in->n_layer; s++) {
        sb_appendf(&sb, "%s{\"after\": \"%s", s ? ", " : "", s ? "layer " : "embedding");
        if (s) sb_appendf(&sb, "%zu", s - 1);
        sb_appendf(&sb, "\", \"positions\": [");
        for (size_t t = 0; t < T; t++) {
            sb_appendf(&sb, "%s[", t ? ", " : "");
            for (size_t k = 0; k < LENS_TOP; k++) {
                size_t i = (s * T + t) * LENS_TOP + k;
                sb_appendf(&sb, "%s{\"id\": %u, \"token\": ", k ? ", " : "", in->lens_top[i]);
                json_token_text(&sb, tok, in->lens_top[i]);
                sb_appendf(&sb, ", \"p\": %.4g}", in->lens_prob[i]);
            }
            sb_appendf(&sb, "]");
        }
        sb_appendf(&sb, "]}");
    }
    sb_appendf(&sb, "], \"attribution\": {\"position\": %zu, \"predicted_id\": %u, \"predicted\": ", T - 1, in->predicted);
    json_token_text(&sb, tok, in->predicted);
    json_field(&sb, "logit", in->predicted_logit);
    sb_appendf(&sb, ", \"parts\": [");
    for (size_t i = 0; i < arrlenu(in->parts); i++) {
        sb_appendf(&sb, "%s{\"name\": \"%s\", \"value\": ", i ? ", " : "", in->parts[i].name);
        json_num(&sb, in->parts[i].value);
        sb_appendf(&sb, "}");
    }
    sb_appendf(&sb, "]}");
    if (ind) {
        sb_appendf(&sb, ", \"induction\": {\"length\": %zu, \"sequences\": %zu, \"loss_first_copy\": ", ind->n, ind->n_seq);
        json_num(&sb, ind->loss_first);
        json_field(&sb, "loss_second_copy", ind->loss_second);
        json_field(&sb, "uniform_head_score", ind->uniform);
        sb_appendf(&sb, "}");
    }
    sb_appendf(&sb, "}\n");
    return sb;
}
