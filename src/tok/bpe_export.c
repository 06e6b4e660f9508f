/* tokenizer.json in the Hugging Face tokenizers format. Byte-level BPE there
 * spells each byte as a printable character (GPT-2's table: the printable
 * Latin-1 bytes as themselves, the other 68 as U+0100 onwards, in order), so
 * the vocabulary and merges are written in that spelling. */
#include <stdlib.h>
#include <string.h>

#include "lm/json.h"
#include "lm/utf8.h"
#include "lm/ds.h"
#include "lm/bpe.h"

void bpe_byte_chars(uint32_t code_point[256]) {
    uint32_t next = 256;
    for (int b = 0; b < 256; b++) {
        int printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        code_point[b] = printable ? (uint32_t)b : next++;
    }
}

/* The byte-level spelling of bytes as a JSON string. */
static void append_spelled(char **sb, const uint32_t map[256], const char *bytes, size_t len) {
    char *s = NULL, buf[4];
    for (size_t i = 0; i < len; i++) {
        size_t n = utf8_encode(map[(unsigned char)bytes[i]], buf);
        memcpy(arraddnptr(s, n), buf, n);
    }
    arrput(s, '\0');
    sb_append_json_string(sb, s);
    arrfree(s);
}

char *bpe_export_hf_json(const Bpe *b, Error *err) {
    uint32_t map[256];
    bpe_byte_chars(map);
    /* The bytes of every token, built the same way as the tokenizer's table. */
    char **tokens = NULL;
    size_t *lens = NULL;
    for (int i = 0; i < 256; i++) {
        char *t = malloc(1);
        t[0] = (char)b->byte_of_id[i]; /* id i's byte: the vocabulary keeps an imported order */
        arrput(tokens, t);
        arrput(lens, 1);
    }
    for (size_t k = 0; k < arrlenu(b->merges); k++) {
        size_t ll = lens[b->merges[k].left], rl = lens[b->merges[k].right];
        char *t = malloc(ll + rl);
        memcpy(t, tokens[b->merges[k].left], ll);
        memcpy(t + ll, tokens[b->merges[k].right], rl);
        arrput(tokens, t);
        arrput(lens, ll + rl);
    }
    char *sb = NULL;
    sb_appendf(&sb, "{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n  \"padding\": null,\n  \"added_tokens\": [");
    for (size_t i = 0; i < arrlenu(b->specials); i++) {
        sb_appendf(&sb, "%s\n    {\"id\": %zu, \"content\": ", i ? "," : "", arrlenu(tokens) + i);
        sb_append_json_string(&sb, b->specials[i]);
        sb_appendf(&sb, ", \"single_word\": false, \"lstrip\": false, \"rstrip\": false, \"normalized\": false, "
                        "\"special\": true}");
    }
    sb_appendf(&sb, "%s],\n  \"normalizer\": null,\n  \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [",
               arrlenu(b->specials) ? "\n  " : "");
    if (b->regex[0]) {
        sb_appendf(&sb, "\n    {\"type\": \"Split\", \"pattern\": {\"Regex\": ");
        sb_append_json_string(&sb, b->regex);
        sb_appendf(&sb, "}, \"behavior\": \"Isolated\", \"invert\": false},");
    }
    sb_appendf(&sb, "\n    {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"trim_offsets\": true, \"use_regex\": false}]},\n"
                    "  \"post_processor\": null,\n"
                    "  \"decoder\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"trim_offsets\": true, \"use_regex\": false},\n"
                    "  \"model\": {\"type\": \"BPE\", \"dropout\": null, \"unk_token\": null, \"continuing_subword_prefix\": null, "
                    "\"end_of_word_suffix\": null, \"fuse_unk\": false, \"byte_fallback\": false, \"ignore_merges\": false,\n"
                    "    \"vocab\": {");
    for (size_t i = 0; i < arrlenu(tokens); i++) {
        sb_appendf(&sb, "%s\n      ", i ? "," : "");
        append_spelled(&sb, map, tokens[i], lens[i]);
        sb_appendf(&sb, ": %zu", i);
    }
    sb_appendf(&sb, "},\n    \"merges\": [");
    for (size_t k = 0; k < arrlenu(b->merges); k++) {
        sb_appendf(&sb, "%s\n      [", k ? "," : "");
        append_spelled(&sb, map, tokens[b->merges[k].left], lens[b->merges[k].left]);
        sb_appendf(&sb, ", ");
        append_spelled(&sb, map, tokens[b->merges[k].right], lens[b->merges[k].right]);
        sb_appendf(&sb, "]");
    }
    sb_appendf(&sb, "]\n  }\n}\n");
    for (size_t i = 0; i < arrlenu(tokens); i++) free(tokens[i]);
    arrfree(tokens);
    arrfree(lens);
    char *out = strdup(sb);
    sb_free(&sb);
    if (!out) err_set(err, "out of memory");
    return out;
}
