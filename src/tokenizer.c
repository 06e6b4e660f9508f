#include "tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "ds.h"

#define TOKENIZER_MAGIC "lm-tokenizer 1"
#define UNKNOWN_CP 0xFFFDu

/* Decodes one UTF-8 sequence; returns its length, or 0 for an invalid byte
 * (the caller then consumes one byte). */
static size_t utf8_decode(const unsigned char *s, size_t len, uint32_t *cp) {
    unsigned char c = s[0];
    size_t n;
    uint32_t v, min;
    if (c < 0x80) { *cp = c; return 1; }
    if ((c & 0xE0) == 0xC0) { n = 2; v = c & 0x1F; min = 0x80; }
    else if ((c & 0xF0) == 0xE0) { n = 3; v = c & 0x0F; min = 0x800; }
    else if ((c & 0xF8) == 0xF0) { n = 4; v = c & 0x07; min = 0x10000; }
    else return 0;
    if (n > len) return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        v = (v << 6) | (s[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
    *cp = v;
    return n;
}

static size_t utf8_encode(uint32_t cp, char *out) {
    if (cp < 0x80) { out[0] = (char)cp; return 1; }
    if (cp < 0x800) { out[0] = (char)(0xC0 | (cp >> 6)); out[1] = (char)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* The saved form; its hash is the tokenizer's identity. */
static char *serialize(const Tokenizer *tok) {
    char *sb = NULL;
    sb_appendf(&sb, "%s\n%s %zu\n", TOKENIZER_MAGIC, tok->kind == TOK_CHAR ? "char" : "byte", tok->vocab_size);
    if (tok->kind == TOK_CHAR)
        for (size_t i = 1; i < tok->vocab_size; i++) sb_appendf(&sb, "%x\n", tok->codepoints[i]);
    return sb;
}

static void set_hash(Tokenizer *tok) {
    char *sb = serialize(tok);
    snprintf(tok->hash, sizeof tok->hash, "%016llx",
             (unsigned long long)fnv1a(FNV_OFFSET, sb, strlen(sb)));
    sb_free(&sb);
}

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static void index_codepoints(Tokenizer *tok) {
    for (size_t i = 1; i < arrlenu(tok->codepoints); i++) hmput(tok->index, tok->codepoints[i], (uint32_t)i);
    tok->vocab_size = arrlenu(tok->codepoints);
    set_hash(tok);
}

int tokenizer_build_char(Tokenizer *tok, const char *text, size_t len, Error *err) {
    memset(tok, 0, sizeof *tok);
    tok->kind = TOK_CHAR;
    CodepointEntry *seen = NULL;
    const unsigned char *s = (const unsigned char *)text;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t n = utf8_decode(s + i, len - i, &cp);
        if (n == 0) { i++; continue; } /* invalid UTF-8 becomes the unknown token */
        hmput(seen, cp, 1u);
        i += n;
    }
    if (hmlenu(seen) == 0) {
        hmfree(seen);
        return err_set(err, "the text has no characters to build a vocabulary from");
    }
    arrput(tok->codepoints, UNKNOWN_CP); /* id 0 */
    for (size_t i = 0; i < hmlenu(seen); i++) arrput(tok->codepoints, seen[i].key);
    hmfree(seen);
    qsort(tok->codepoints + 1, arrlenu(tok->codepoints) - 1, sizeof(uint32_t), cmp_u32);
    index_codepoints(tok);
    return 0;
}

void tokenizer_init_byte(Tokenizer *tok) {
    memset(tok, 0, sizeof *tok);
    tok->kind = TOK_BYTE;
    tok->vocab_size = 256;
    set_hash(tok);
}

void tokenizer_free(Tokenizer *tok) {
    arrfree(tok->codepoints);
    hmfree(tok->index);
    memset(tok, 0, sizeof *tok);
}

void tokenizer_encode(const Tokenizer *tok, const char *text, size_t len, uint32_t **ids) {
    const unsigned char *s = (const unsigned char *)text;
    if (tok->kind == TOK_BYTE) {
        for (size_t i = 0; i < len; i++) arrput(*ids, s[i]);
        return;
    }
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t n = utf8_decode(s + i, len - i, &cp);
        ptrdiff_t at = n ? hmgeti(((Tokenizer *)tok)->index, cp) : -1;
        arrput(*ids, at >= 0 ? tok->index[at].value : 0u);
        i += n ? n : 1;
    }
}

size_t tokenizer_token_text(const Tokenizer *tok, uint32_t id, char *buf) {
    if (tok->kind == TOK_BYTE) {
        buf[0] = (char)(id & 0xFF);
        return 1;
    }
    uint32_t cp = (id > 0 && id < tok->vocab_size) ? tok->codepoints[id] : UNKNOWN_CP;
    return utf8_encode(cp, buf);
}

char *tokenizer_decode(const Tokenizer *tok, const uint32_t *ids, size_t n) {
    char *out = malloc(4 * n + 1), *p = out;
    if (!out) return NULL;
    for (size_t i = 0; i < n; i++) p += tokenizer_token_text(tok, ids[i], p);
    *p = '\0';
    return out;
}

const char *tokenizer_unit(const Tokenizer *tok) { return tok->kind == TOK_CHAR ? "char" : "byte"; }

char *tokenizer_to_text(const Tokenizer *tok) {
    char *sb = serialize(tok), *out = strdup(sb);
    sb_free(&sb);
    return out;
}

int tokenizer_save(const Tokenizer *tok, const char *path, Error *err) {
    char *sb = serialize(tok);
    int rc = write_file_atomic(path, sb, strlen(sb), err);
    sb_free(&sb);
    return rc;
}

int tokenizer_from_text(Tokenizer *tok, const char *text, const char *origin, Error *err) {
    memset(tok, 0, sizeof *tok);
    char kind[16];
    size_t vocab;
    int consumed = 0;
    if (strncmp(text, TOKENIZER_MAGIC "\n", strlen(TOKENIZER_MAGIC) + 1) != 0 ||
        sscanf(text + strlen(TOKENIZER_MAGIC) + 1, "%15s %zu\n%n", kind, &vocab, &consumed) != 2)
        return err_set(err, "'%s' is not a tokenizer file", origin);
    const char *cur = text + strlen(TOKENIZER_MAGIC) + 1 + consumed;
    int rc = 0;
    if (strcmp(kind, "byte") == 0) {
        tokenizer_init_byte(tok);
    } else if (strcmp(kind, "char") == 0 && vocab >= 2 && vocab <= (1u << 21)) {
        tok->kind = TOK_CHAR;
        arrput(tok->codepoints, UNKNOWN_CP);
        for (size_t i = 1; i < vocab && rc == 0; i++) {
            char *end;
            unsigned long cp = strtoul(cur, &end, 16);
            if (end == cur || *end != '\n' || cp > 0x10FFFF) rc = err_set(err, "'%s': bad code point on line %zu", origin, i + 2);
            else arrput(tok->codepoints, (uint32_t)cp);
            cur = end + 1;
        }
        if (rc == 0) index_codepoints(tok);
    } else {
        rc = err_set(err, "'%s': unknown tokenizer kind '%s'", origin, kind);
    }
    if (rc) tokenizer_free(tok);
    return rc;
}

int tokenizer_load(Tokenizer *tok, const char *path, Error *err) {
    memset(tok, 0, sizeof *tok);
    char *text = read_file(path, NULL, err);
    if (!text) return -1;
    int rc = tokenizer_from_text(tok, text, path, err);
    free(text);
    return rc;
}
