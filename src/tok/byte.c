/* The byte tokenizer: ids 0..255 are the bytes. */
#include "lm/byte.h"

#include <string.h>

#include "lm/ds.h"

static void byte_table(Tokenizer *tok) {
    for (int b = 0; b < 256; b++) {
        char c = (char)b;
        tokenizer_table_add(tok, &c, 1, 0);
    }
    tokenizer_finish(tok);
}

static int byte_parse(Tokenizer *tok, const char *body, size_t vocab, const char *origin, Error *err) {
    (void)body;
    if (vocab != 256) return err_set(err, "'%s' is corrupt: a byte tokenizer has 256 tokens, not %zu", origin, vocab);
    byte_table(tok);
    return 0;
}

static void byte_serialize(const Tokenizer *tok, char **sb) { (void)tok, (void)sb; }

static void byte_encode(const Tokenizer *tok, const char *text, size_t len, uint32_t **ids) {
    (void)tok;
    uint32_t *out = arraddnptr(*ids, len);
    for (size_t i = 0; i < len; i++) out[i] = (unsigned char)text[i];
}

const TokenizerKind tokenizer_byte = {
    .name = "byte", .unit = "byte", .unknown = -1, .parse = byte_parse, .serialize = byte_serialize,
    .encode = byte_encode, .free_impl = NULL};

void tokenizer_init_byte(Tokenizer *tok) {
    memset(tok, 0, sizeof *tok);
    tok->kind = &tokenizer_byte;
    byte_table(tok);
}
