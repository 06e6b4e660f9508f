/* The tokenizer registry (the one place that names the kinds) and what every
 * kind shares: the token table, decoding, the saved text form and its hash. */
#include "tok/tokenizer.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/json.h"
#include "io/utf8.h"
#include "runtime/ds.h"
#include "runtime/files.h"
#include "runtime/hash.h"
#include "runtime/registry.h"
#include "tok/bpe.h"
#include "tok/byte.h"
#include "tok/char.h"

#define TOKENIZER_MAGIC "lm-tokenizer 1"

_Static_assert(offsetof(TokenizerKind, name) == 0, "a registry entry starts with its name");

static const void *const registry[] = {&tokenizer_char, &tokenizer_byte, &tokenizer_bpe};
#define N_KINDS (sizeof registry / sizeof registry[0])

const TokenizerKind *tokenizer_find(const char *name) { return registry_find(registry, N_KINDS, name); }

const char *tokenizer_names(void) {
    static char names[128];
    return registry_names(registry, N_KINDS, names, sizeof names);
}

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

size_t tokenizer_safe_cut(const Tokenizer *tok, const char *text, size_t len, size_t at) {
    const Bpe *b = tokenizer_bpe_of(tok);
    if (at >= len) return len;
    if (b) return b->pre.cuttable ? bpe_safe_cut(text, len, at) : len;
    return utf8_boundary(text, len, at);
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

int tokenizer_from_text(Tokenizer *tok, const char *text, const char *origin, Error *err) {
    memset(tok, 0, sizeof *tok);
    char name[16];
    size_t vocab;
    int consumed = 0;
    if (strncmp(text, TOKENIZER_MAGIC "\n", strlen(TOKENIZER_MAGIC) + 1) != 0 ||
        sscanf(text + strlen(TOKENIZER_MAGIC) + 1, "%15s %zu\n%n", name, &vocab, &consumed) != 2 || consumed == 0)
        return err_set(err, "'%s' is not a tokenizer file", origin);
    tok->kind = tokenizer_find(name);
    if (!tok->kind) return err_set(err, "'%s': unknown tokenizer kind '%s' (%s)", origin, name, tokenizer_names());
    int rc = tok->kind->parse(tok, text + strlen(TOKENIZER_MAGIC) + 1 + consumed, vocab, origin, err);
    if (rc == 0 && tok->vocab_size != vocab)
        rc = err_set(err, "'%s' is corrupt: it declares %zu tokens but defines %zu", origin, vocab, tok->vocab_size);
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
