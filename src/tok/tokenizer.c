/* The tokenizer registry, the one place that names the kinds, and what needs
 * a kind found by name: reading a saved tokenizer; where a text may be cut. */
#include "lm/tokenizer.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lm/utf8.h"
#include "lm/files.h"
#include "runtime/registry.h"
#include "lm/bpe.h"
#include "lm/byte.h"
#include "tok/char.h"

_Static_assert(offsetof(TokenizerKind, name) == 0, "a registry entry starts with its name");

static const void *const registry[] = {&tokenizer_char, &tokenizer_byte, &tokenizer_bpe};
#define N_KINDS (sizeof registry / sizeof registry[0])

const TokenizerKind *tokenizer_find(const char *name) { return registry_find(registry, N_KINDS, name); }

const char *tokenizer_names(void) {
    static char names[128];
    return registry_names(registry, N_KINDS, names, sizeof names);
}

size_t tokenizer_safe_cut(const Tokenizer *tok, const char *text, size_t len, size_t at) {
    const Bpe *b = tokenizer_bpe_of(tok);
    if (at >= len) return len;
    if (b) return b->pre.cuttable ? bpe_safe_cut(text, len, at) : len;
    return utf8_boundary(text, len, at);
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

