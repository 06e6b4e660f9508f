/* Fuzzes the tokenizer-file parser of every kind (char, byte, bpe: its
 * pattern, merges, special tokens and byte order), then encodes and decodes
 * a little text with what it accepts (fuzz_tokenizer_check.h). */
#include <stdlib.h>
#include <string.h>

#include "fuzz_input.h"
#include "fuzz_tokenizer_check.h"
#include "lm/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    Tokenizer tok;
    Error err;
    if (tokenizer_from_text(&tok, text, "fuzz", &err) == 0) {
        fuzz_check_tokenizer(&tok);
        tokenizer_free(&tok);
    }
    free(text);
    return 0;
}
