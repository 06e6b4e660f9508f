/* The token table every kind fills, and the saved text form (see lm/table.h). */
#include "lm/table.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lm/json.h"
#include "lm/ds.h"
#include "lm/files.h"
#include "runtime/hash.h"

void tokenizer_table_add(Tokenizer *tok, const char *bytes, size_t len, int special) {
    if (arrlenu(tok->offsets) == 0) arrput(tok->offsets, 0);
    if (len) memcpy(arraddnptr(tok->bytes, len), bytes, len);
    arrput(tok->offsets, arrlenu(tok->bytes));
    arrput(tok->special, (uint8_t)(special != 0));
    tok->vocab_size = arrlenu(tok->special);
}

/* The saved form; its hash is the tokenizer's identity. */
static char *serialize(const Tokenizer *tok) {
    char *sb = NULL;
    sb_appendf(&sb, "%s\n%s %zu\n", TOKENIZER_MAGIC, tok->kind->name, tok->vocab_size);
    tok->kind->serialize(tok, &sb);
    return sb;
}

void tokenizer_finish(Tokenizer *tok) {
    char *sb = serialize(tok);
    snprintf(tok->hash, sizeof tok->hash, "%016llx", (unsigned long long)fnv1a(FNV_OFFSET, sb, strlen(sb)));
    sb_free(&sb);
}

void tokenizer_free(Tokenizer *tok) {
    if (tok->kind && tok->kind->free_impl) tok->kind->free_impl(tok);
    arrfree(tok->bytes);
    arrfree(tok->offsets);
    arrfree(tok->special);
    memset(tok, 0, sizeof *tok);
}

void tokenizer_encode(const Tokenizer *tok, const char *text, size_t len, uint32_t **ids) {
    tok->kind->encode(tok, text, len, ids);
}

const char *tokenizer_token(const Tokenizer *tok, uint32_t id, size_t *len) {
    if (id >= tok->vocab_size) {
        *len = 3;
        return "\xEF\xBF\xBD";
    }
    *len = tok->offsets[id + 1] - tok->offsets[id];
    return tok->bytes + tok->offsets[id];
}

size_t tokenizer_token_bytes(const Tokenizer *tok, uint32_t id) {
    size_t len;
    if (id < tok->vocab_size && tok->special[id]) return 0;
    tokenizer_token(tok, id, &len);
    return len;
}

void tokenizer_text_spans(const Tokenizer *tok, const char *text, size_t len, const uint32_t *ids, size_t n,
                          uint64_t base, TokenSpan **spans) {
    const TokenizerKind *k = tok->kind;
    if (k->unknown < 0 || !k->unknown_span) return;
    size_t at = 0; /* where token i's text starts */
    for (size_t i = 0; i < n && at < len; i++) {
        size_t table = tokenizer_token_bytes(tok, ids[i]), bytes = table;
        if (ids[i] == (uint32_t)k->unknown) {
            bytes = k->unknown_span(text + at, len - at);
            if (bytes != table) arrput(*spans, ((TokenSpan){base + i, (uint32_t)bytes}));
        }
        at += bytes;
    }
}

char *tokenizer_decode(const Tokenizer *tok, const uint32_t *ids, size_t n) {
    size_t total = 1, len;
    for (size_t i = 0; i < n; i++) total += (tokenizer_token(tok, ids[i], &len), len);
    char *out = malloc(total), *p = out;
    if (!out) return NULL;
    for (size_t i = 0; i < n; i++) {
        const char *b = tokenizer_token(tok, ids[i], &len);
        memcpy(p, b, len);
        p += len;
    }
    *p = '\0';
    return out;
}

uint32_t tokenizer_special_id(const Tokenizer *tok, const char *text) {
    for (size_t i = 0; i < tok->vocab_size; i++) {
        size_t len;
        const char *b = tokenizer_token(tok, (uint32_t)i, &len);
        if (tok->special[i] && len == strlen(text) && memcmp(b, text, len) == 0) return (uint32_t)i;
    }
    return (uint32_t)tok->vocab_size;
}

const char *tokenizer_unit(const Tokenizer *tok) { return tok->kind->unit; }

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
