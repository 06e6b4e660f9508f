/* The character tokenizer: id 0 is the unknown token, ids 1.. the distinct
 * code points of the training text in code-point order. */
#include "tok/char.h"

#include <stdlib.h>
#include <string.h>

#include "lm/json.h"
#include "lm/utf8.h"
#include "lm/ds.h"

#define UNKNOWN_CP 0xFFFDu

typedef struct CodepointEntry {
    uint32_t key;   /* code point */
    uint32_t value; /* token id */
} CodepointEntry;

typedef struct CharImpl {
    uint32_t *codepoints;  /* id -> code point (stb_ds array; [0] is U+FFFD) */
    CodepointEntry *index; /* code point -> id (stb_ds hash map) */
} CharImpl;


/* Builds the table and index from impl->codepoints. */
static void char_index(Tokenizer *tok) {
    CharImpl *impl = tok->impl;
    for (size_t i = 0; i < arrlenu(impl->codepoints); i++) {
        char buf[4];
        tokenizer_table_add(tok, buf, utf8_encode(impl->codepoints[i], buf), 0);
        if (i) hmput(impl->index, impl->codepoints[i], (uint32_t)i);
    }
    tokenizer_finish(tok);
}

static CharImpl *char_start(Tokenizer *tok) {
    memset(tok, 0, sizeof *tok);
    tok->kind = &tokenizer_char;
    tok->impl = calloc(1, sizeof(CharImpl));
    if (tok->impl) arrput(((CharImpl *)tok->impl)->codepoints, UNKNOWN_CP); /* id 0 */
    return tok->impl;
}

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

int tokenizer_build_char(Tokenizer *tok, const char *text, size_t len, Error *err) {
    return tokenizer_build_char_parts(tok, &text, &len, 1, err);
}

int tokenizer_build_char_parts(Tokenizer *tok, const char *const *texts, const size_t *lens, size_t parts, Error *err) {
    CharImpl *impl = char_start(tok);
    if (!impl) return err_set(err, "out of memory");
    CodepointEntry *seen = NULL;
    for (size_t p = 0; p < parts; p++) {
        const unsigned char *s = (const unsigned char *)texts[p];
        for (size_t i = 0; i < lens[p];) {
            uint32_t cp;
            size_t n = utf8_decode(s + i, lens[p] - i, &cp);
            if (n == 0) { i++; continue; } /* invalid UTF-8 becomes the unknown token */
            hmput(seen, cp, 1u);
            i += n;
        }
    }
    if (hmlenu(seen) == 0) {
        hmfree(seen);
        tokenizer_free(tok);
        return err_set(err, "the text has no characters to build a vocabulary from");
    }
    for (size_t i = 0; i < hmlenu(seen); i++) arrput(impl->codepoints, seen[i].key);
    hmfree(seen);
    qsort(impl->codepoints + 1, arrlenu(impl->codepoints) - 1, sizeof(uint32_t), cmp_u32);
    char_index(tok);
    return 0;
}

static int char_parse(Tokenizer *tok, const char *body, size_t vocab, const char *origin, Error *err) {
    if (vocab < 2 || vocab > (1u << 21)) return err_set(err, "'%s' is corrupt: %zu characters", origin, vocab);
    CharImpl *impl = char_start(tok);
    if (!impl) return err_set(err, "out of memory");
    const char *cur = body;
    for (size_t i = 1; i < vocab; i++) {
        char *end;
        unsigned long cp = strtoul(cur, &end, 16);
        if (end == cur || *end != '\n' || cp > 0x10FFFF)
            return err_set(err, "'%s': bad code point on line %zu", origin, i + 2);
        arrput(impl->codepoints, (uint32_t)cp);
        cur = end + 1;
    }
    char_index(tok);
    return 0;
}

static void char_serialize(const Tokenizer *tok, char **sb) {
    const CharImpl *impl = tok->impl;
    for (size_t i = 1; i < arrlenu(impl->codepoints); i++) sb_appendf(sb, "%x\n", impl->codepoints[i]);
}

static void char_encode(const Tokenizer *tok, const char *text, size_t len, uint32_t **ids) {
    CharImpl *impl = tok->impl;
    const unsigned char *s = (const unsigned char *)text;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t n = utf8_decode(s + i, len - i, &cp);
        ptrdiff_t at = n ? hmgeti(impl->index, cp) : -1;
        arrput(*ids, at >= 0 ? impl->index[at].value : 0u);
        i += n ? n : 1;
    }
}

static size_t char_unknown_span(const char *text, size_t len) {
    uint32_t cp;
    size_t n = utf8_decode((const unsigned char *)text, len, &cp);
    return n ? n : 1; /* as char_encode steps */
}

static void char_free(Tokenizer *tok) {
    CharImpl *impl = tok->impl;
    if (!impl) return;
    arrfree(impl->codepoints);
    hmfree(impl->index);
    free(impl);
}

const TokenizerKind tokenizer_char = {
    .name = "char", .unit = "char", .unknown = 0, .parse = char_parse, .serialize = char_serialize,
    .encode = char_encode, .free_impl = char_free, .unknown_span = char_unknown_span};
