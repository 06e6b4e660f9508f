/* bin/inspect's inspect.html: one self-contained page (the template
 * eval/inspect_page.html, built into the program) with the inspection's data
 * in a JSON script tag. The maps travel as 8-bit weights (round(255 p)), each
 * head's causal triangle a zlib stream in base64, which the browser inflates
 * itself (DecompressionStream): at GPT-2 small's 144 heads on 1,024 tokens
 * the 75M weights would be 75 MB as bytes; zeros, most of a long map, cost
 * next to nothing compressed. zlib at level 6 rather than stb's compressor
 * (the PNGs'): its dynamic Huffman codes fit the small weights of a long
 * map's rows (GPT-2 small's shape, random weights, 1,020 tokens: a page of
 * 9.3 MB against stb's 14.6), for about 3 s of CPU. Thumbnails are the maps
 * max-pooled to at most
 * INSPECT_MAP_CELLS a side, as the PNGs draw them. Every other exhibit
 * travels as inspect.json has it (report_exhibit_json). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "lm/ds.h"
#include "lm/json.h"
#include <zlib.h>

extern const char inspect_page_html[]; /* eval/inspect_page.html, quoted by the Makefile */
#define PAGE_DATA_MARK "@INSPECT_DATA@"

static uint8_t quantise(float p) {
    float q = p * 255.0f + 0.5f;
    return q <= 0.0f ? 0 : q >= 255.0f ? 255 : (uint8_t)q;
}

/* bytes as zlib in base64, a JSON string; -1 when out of memory. */
static int append_packed(char **sb, const uint8_t *bytes, size_t n) {
    static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    uLongf zn = compressBound(n);
    unsigned char *z = malloc(zn);
    if (z && compress2(z, &zn, bytes, n, 6) != Z_OK) zn = 0;
    char *b64 = z && zn ? malloc((zn + 2) / 3 * 4 + 3) : NULL;
    if (!b64) {
        free(z);
        return -1;
    }
    size_t o = 0;
    b64[o++] = '"';
    for (size_t i = 0; i < zn; i += 3) {
        uint32_t v = (uint32_t)z[i] << 16 | (i + 1 < zn ? (uint32_t)z[i + 1] << 8 : 0) | (i + 2 < zn ? z[i + 2] : 0);
        b64[o++] = digits[v >> 18 & 63];
        b64[o++] = digits[v >> 12 & 63];
        b64[o++] = i + 1 < zn ? digits[v >> 6 & 63] : '=';
        b64[o++] = i + 2 < zn ? digits[v & 63] : '=';
    }
    b64[o++] = '"';
    b64[o] = '\0';
    sb_appendf(sb, "%s", b64);
    free(b64);
    free(z);
    return 0;
}

static void num(char **sb, const char *fmt, double v) {
    char buf[JSON_NUMBER_MAX];
    sb_appendf(sb, "%s", json_number(buf, fmt, v));
}

static void label(char **sb, const Tokenizer *tok, uint32_t id) {
    char lab[TOKEN_LABEL_MAX];
    token_label(tok, id, 0, lab, sizeof lab);
    sb_append_json_string(sb, lab);
}

/* A layer's maps exhibit: what bin/inspect measured of each map, the
 * thumbnails and the maps. */
static int maps_exhibit(char **sb, const Inspection *in, const Induction *ind, size_t l, const Exhibit *e) {
    size_t H = e->rows, T = in->T;
    report_exhibit_head_json(sb, e);
    if (e == in->maps[l]) report_map_stats_json(sb, in, ind, l);
    /* Thumbnails: blocks of b x b positions max-pooled, as the PNGs. */
    size_t b = (T + INSPECT_MAP_CELLS - 1) / INSPECT_MAP_CELLS, P = (T + b - 1) / b, tri = T * (T + 1) / 2;
    uint8_t *thumbs = calloc(H * P * P, 1), *tris = malloc(H * tri);
    char **packed = calloc(H, sizeof *packed);
    int rc = thumbs && tris && packed ? 0 : -1;
    for (size_t h = 0; !rc && h < H; h++) {
        const float *p = e->values + h * T * T;
        for (size_t i = 0; i < T; i++)
            for (size_t j = 0; j <= i; j++) {
                uint8_t q = quantise(p[i * T + j]), *cell = &thumbs[(h * P + i / b) * P + j / b];
                tris[h * tri + i * (i + 1) / 2 + j] = q;
                if (q > *cell) *cell = q;
            }
    }
    sb_appendf(sb, ",\"thumb_size\":%zu,\"thumbs\":", P);
    if (!rc) rc = append_packed(sb, thumbs, H * P * P);
    /* The heads' maps compressed in parallel: the page's biggest cost to write. */
    int failed = 0;
#pragma omp parallel for schedule(dynamic, 1) reduction(| : failed)
    for (size_t h = 0; h < (rc ? 0 : H); h++) failed |= append_packed(&packed[h], tris + h * tri, tri);
    rc |= failed;
    sb_appendf(sb, ",\"maps\":[");
    for (size_t h = 0; !rc && h < H; h++) sb_appendf(sb, "%s%s", h ? "," : "", packed[h]);
    sb_appendf(sb, "]}");
    for (size_t h = 0; packed && h < H; h++) sb_free(&packed[h]);
    free(packed);
    free(thumbs);
    free(tris);
    return rc;
}

/* The page's data as JSON; NULL when out of memory. */
static char *page_data(const Inspection *in, const Induction *ind, const Tokenizer *tok) {
    size_t T = in->T, H = in->n_head, S = in->n_layer + 1;
    char *sb = NULL;
    sb_appendf(&sb, "{\"T\":%zu,\"n_layer\":%zu,\"n_head\":%zu,\"tokens\":[", T, in->n_layer, H);
    for (size_t t = 0; t < T; t++) {
        sb_appendf(&sb, "%s{\"id\":%d,\"label\":", t ? "," : "", (int)in->tokens[t]);
        label(&sb, tok, (uint32_t)in->tokens[t]);
        sb_appendf(&sb, "}");
    }
    sb_appendf(&sb, "],\"layers\":[");
    int rc = 0;
    for (size_t l = 0; l < in->n_layer && !rc; l++) {
        const LayerInspection *li = &in->layer[l];
        sb_appendf(&sb, "%s{\"layer\":%zu,\"mixer\":\"%s\",\"exhibits\":[", l ? "," : "", l, li->mixer);
        for (size_t i = 0; i < li->n_exhibits && !rc; i++) {
            const Exhibit *e = &li->exhibits[i];
            sb_appendf(&sb, "%s", i ? "," : "");
            if (e->kind == EXHIBIT_MAPS) rc = maps_exhibit(&sb, in, ind, l, e);
            else report_exhibit_json(&sb, e);
        }
        sb_appendf(&sb, "]}");
    }
    /* The lens as flat arrays (stage, position, rank), labels once each in vocab. */
    sb_appendf(&sb, "],\"lens\":{\"k\":%d,\"stages\":[\"embedding\"", LENS_TOP);
    for (size_t s = 1; s < S; s++) sb_appendf(&sb, ",\"layer %zu\"", s - 1);
    sb_appendf(&sb, "],\"ids\":[");
    for (size_t i = 0; i < S * T * LENS_TOP; i++) sb_appendf(&sb, "%s%u", i ? "," : "", in->lens_top[i]);
    sb_appendf(&sb, "],\"p\":[");
    for (size_t i = 0; i < S * T * LENS_TOP; i++) {
        if (i) sb_appendf(&sb, ",");
        num(&sb, "%.4g", in->lens_prob[i]);
    }
    sb_appendf(&sb, "]},\"vocab\":{");
    uint8_t *seen = calloc(in->vocab, 1);
    if (!seen) rc = -1;
    int first = 1;
    for (size_t i = 0; !rc && i < S * T * LENS_TOP + T + 1; i++) {
        uint32_t id = i < S * T * LENS_TOP ? in->lens_top[i]
                    : i < S * T * LENS_TOP + T ? (uint32_t)in->tokens[i - S * T * LENS_TOP] : in->predicted;
        if (id >= in->vocab || seen[id]) continue;
        seen[id] = 1;
        sb_appendf(&sb, "%s\"%u\":", first ? "" : ",", id);
        label(&sb, tok, id);
        first = 0;
    }
    free(seen);
    sb_appendf(&sb, "},\"attribution\":{\"position\":%zu,\"predicted_id\":%u,\"predicted\":", T - 1, in->predicted);
    label(&sb, tok, in->predicted);
    sb_appendf(&sb, ",\"logit\":");
    num(&sb, "%.6g", in->predicted_logit);
    sb_appendf(&sb, ",\"parts\":[");
    for (size_t i = 0; i < arrlenu(in->parts); i++) {
        sb_appendf(&sb, "%s{\"name\":\"%s\",\"share\":%d,\"value\":", i ? "," : "", in->parts[i].name, in->parts[i].share);
        num(&sb, "%.6g", in->parts[i].value);
        sb_appendf(&sb, "}");
    }
    sb_appendf(&sb, "]}");
    if (ind) {
        sb_appendf(&sb, ",\"induction\":{\"length\":%zu,\"sequences\":%zu,\"loss_first_copy\":", ind->n, ind->n_seq);
        num(&sb, "%.6g", ind->loss_first);
        sb_appendf(&sb, ",\"loss_second_copy\":");
        num(&sb, "%.6g", ind->loss_second);
        sb_appendf(&sb, ",\"uniform_head_score\":");
        num(&sb, "%.6g", ind->uniform);
        sb_appendf(&sb, "}");
    }
    sb_appendf(&sb, "}");
    if (rc) sb_free(&sb);
    return sb;
}

char *report_page(const Inspection *in, const Induction *ind, const Tokenizer *tok) {
    char *data = page_data(in, ind, tok);
    const char *mark = strstr(inspect_page_html, PAGE_DATA_MARK);
    if (!data || !mark) {
        sb_free(&data);
        return NULL;
    }
    char *page = NULL;
    sb_appendf(&page, "%.*s", (int)(mark - inspect_page_html), inspect_page_html);
    /* '<' appears only inside the JSON's strings (token labels), where \u003c
     * means the same and no "</script>" can end the tag early. */
    size_t start = 0, n = strlen(data);
    for (size_t i = 0; i <= n; i++)
        if (i == n || data[i] == '<') {
            sb_appendf(&page, "%.*s%s", (int)(i - start), data + start, i < n ? "\\u003c" : "");
            start = i + 1;
        }
    sb_appendf(&page, "%s", mark + strlen(PAGE_DATA_MARK));
    sb_free(&data);
    return page;
}
