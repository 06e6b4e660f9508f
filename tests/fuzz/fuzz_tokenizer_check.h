/* What every tokenizer a fuzzed reader accepts must do: encode a little
 * text to ids inside the vocabulary that decode to the text again (every
 * tokenizer of this project encodes every byte string, but for the char
 * kind's unknown characters). A failure traps, so the fuzzer reports it. */
#ifndef LM_FUZZ_TOKENIZER_CHECK_H
#define LM_FUZZ_TOKENIZER_CHECK_H

#include <stdlib.h>
#include <string.h>

#include "lm/ds.h"
#include "lm/tokenizer.h"

static void fuzz_check_tokenizer(const Tokenizer *tok) {
    static const char sample[] = "Call me Ishmael. \xc3\xa9\xff\n";
    uint32_t *ids = NULL;
    tokenizer_encode(tok, sample, sizeof sample - 1, &ids);
    for (size_t i = 0; i < arrlenu(ids); i++)
        if (ids[i] >= tok->vocab_size) __builtin_trap();
    char *back = tokenizer_decode(tok, ids, arrlenu(ids));
    if (back && strcmp(tok->kind->name, "char") != 0 && strcmp(back, sample) != 0) __builtin_trap();
    free(back);
    arrfree(ids);
}

#endif
