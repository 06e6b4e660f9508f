/* Fuzzes the Hugging Face tokenizer import (src/hf/tokenizer_import.c): an input with
 * a NUL byte is vocab.json before it and merges.txt after it, any other a
 * tokenizer.json. What it accepts must encode and decode a little text
 * (fuzz_tokenizer_check.h), and be the same tokenizer (the same hash) once
 * saved and read back, and once exported as tokenizer.json and imported. */
#include <stdlib.h>
#include <string.h>

#include "fuzz_input.h"
#include "fuzz_tokenizer_check.h"
#include "lm/bpe.h"
#include "hf/tokenizer_import.h"

static void same_hash(const Tokenizer *a, int read_rc, Tokenizer *b) {
    if (read_rc != 0 || strcmp(a->hash, b->hash) != 0) __builtin_trap();
    tokenizer_free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *text = (const char *)data, *nul = memchr(text, '\0', size);
    Tokenizer tok, back;
    Error err;
    int rc = nul ? tokenizer_import_hf_vocab_merges(&tok, text, (size_t)(nul - text), nul + 1, size - (size_t)(nul - text) - 1,
                                                    "fuzz", &err)
                 : tokenizer_import_hf_json(&tok, text, size, "fuzz", &err);
    if (rc != 0) return 0;
    fuzz_check_tokenizer(&tok);
    char *saved = tokenizer_to_text(&tok);
    same_hash(&tok, tokenizer_from_text(&back, saved, "saved", &err), &back);
    char *json = bpe_export_hf_json(tokenizer_bpe_of(&tok), &err);
    if (!json) __builtin_trap();
    same_hash(&tok, tokenizer_import_hf_json(&back, json, strlen(json), "exported", &err), &back);
    free(json);
    free(saved);
    tokenizer_free(&tok);
    return 0;
}
