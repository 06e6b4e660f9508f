/* Fuzzes the tokenizer-file parser of every kind (char, byte, bpe: its
 * pattern, merges and special tokens), then encodes and decodes a little
 * text with what it accepts: decoding the ids must give the text back
 * (every tokenizer of this project encodes every byte string, but for the
 * char kind's unknown characters). */
#include <stdlib.h>
#include <string.h>

#include "fuzz_input.h"
#include "tok/tokenizer.h"
#include "runtime/ds.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    Tokenizer tok;
    Error err;
    if (tokenizer_from_text(&tok, text, "fuzz", &err) == 0) {
        static const char sample[] = "Call me Ishmael. \xc3\xa9\xff\n";
        uint32_t *ids = NULL;
        tokenizer_encode(&tok, sample, sizeof sample - 1, &ids);
        for (size_t i = 0; i < arrlenu(ids); i++)
            if (ids[i] >= tok.vocab_size) __builtin_trap();
        char *back = tokenizer_decode(&tok, ids, arrlenu(ids));
        if (back && strcmp(tok.kind->name, "char") != 0 && strcmp(back, sample) != 0) __builtin_trap();
        free(back);
        arrfree(ids);
        tokenizer_free(&tok);
    }
    free(text);
    return 0;
}
