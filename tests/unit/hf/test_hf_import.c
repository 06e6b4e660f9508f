/* Hugging Face tokenizers read into our Bpe (src/hf/tokenizer_import.h), and the byte
 * order for ids 0..255 they need: a permuted tokenizer encodes and decodes
 * as the byte-ordered one with its ids renamed, saves and exports with its
 * order and reads back to the same hash, while a byte-ordered one saves as
 * it always did; GPT-2's layout (bytes in bytes_to_unicode order) from
 * tokenizer.json with "a b" and ["a", "b"] merges and from vocab.json +
 * merges.txt gives the ids counted by hand; every kind of tokenizer we
 * cannot be, and every inconsistent file, is refused with one line that
 * says what is wrong. */
#include "testutil.h"

#include "lm/json.h"
#include "lm/utf8.h"
#include "lm/ds.h"
#include "lm/bpe.h"
#include "hf/tokenizer_import.h"
#include "lm/tokenizer.h"

static const char *corpus =
    "Call me Ishmael. Some years ago--never mind how long precisely--having little or no money in my purse, "
    "and nothing particular to interest me on shore, I thought I would sail about a little and see the watery "
    "part of the world.\nSome 1851, 2024: 33 ships. Caf\xc3\xa9 na\xc3\xafve \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x90\xb3 "
    "whale's WHALE'S they'll\n\n\t  x\x01\x7f";

/* A learned Bpe (bytes in byte order) with one special token. */
static void learned_bpe(Bpe *b, size_t merges) {
    Error err;
    assert_int_equal(bpe_init(b, "gpt2", bpe_pattern_regex("gpt2"), &err), 0);
    BpeCounter c;
    bpe_counter_init(&c, &b->pre);
    bpe_count(&c, corpus, strlen(corpus));
    assert_int_equal(bpe_train(b, &c, merges), merges);
    bpe_counter_free(&c);
    arrput(b->specials, strdup("<|endoftext|>"));
}

/* GPT-2's order: ids 0..255 are the bytes in bytes_to_unicode's order (the
 * printable ones ascending, then the others ascending). */
static void gpt2_byte_order(uint8_t byte_of_id[256]) {
    uint32_t cp[256];
    bpe_byte_chars(cp);
    int n = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int b = 0; b < 256; b++)
            if ((cp[b] == (uint32_t)b) == (pass == 0)) byte_of_id[n++] = (uint8_t)b;
    assert_int_equal(n, 256);
}

/* The same tokenizer with ids 0..255 in another order: merges renamed. */
static void permuted_copy(const Bpe *from, Bpe *to, const uint8_t byte_of_id[256]) {
    Error err;
    assert_int_equal(bpe_init(to, from->pattern, from->regex, &err), 0);
    assert_int_equal(bpe_set_byte_order(to, byte_of_id, &err), 0);
    for (size_t k = 0; k < arrlenu(from->merges); k++) {
        BpeMerge m = from->merges[k];
        if (m.left < 256) m.left = to->id_of_byte[m.left];
        if (m.right < 256) m.right = to->id_of_byte[m.right];
        arrput(to->merges, m);
    }
    for (size_t i = 0; i < arrlenu(from->specials); i++) arrput(to->specials, strdup(from->specials[i]));
}

static void assert_one_line(const Error *err) { assert_true(strlen(err->msg) > 0 && !strchr(err->msg, '\n')); }

static void test_byte_order(void **s) {
    (void)s;
    Bpe plain, perm;
    Error err;
    uint8_t order[256];
    gpt2_byte_order(order);
    learned_bpe(&plain, 120);
    permuted_copy(&plain, &perm, order);
    assert_true(bpe_bytes_in_order(&plain));
    assert_false(bpe_bytes_in_order(&perm));
    Tokenizer a, b, back;
    assert_int_equal(tokenizer_from_bpe(&a, &plain, &err), 0);
    assert_int_equal(tokenizer_from_bpe(&b, &perm, &err), 0);
    assert_string_not_equal(a.hash, b.hash);
    /* Ids 0..255 are the permuted bytes; the rest are the same tokens. */
    for (uint32_t id = 0; id < a.vocab_size; id++) {
        size_t la, lb;
        const char *ta = tokenizer_token(&a, id, &la), *tb = tokenizer_token(&b, id, &lb);
        if (id < 256) assert_true(lb == 1 && (uint8_t)tb[0] == order[id]);
        else assert_true(la == lb && memcmp(ta, tb, la) == 0);
    }
    /* Encoding: the byte-ordered ids with bytes renamed; any bytes round trip. */
    Rng r;
    rng_seed(&r, 3);
    for (int trial = 0; trial < 200; trial++) {
        size_t len = rng_below(&r, 200);
        char buf[200];
        for (size_t i = 0; i < len; i++)
            buf[i] = trial % 2 ? (char)rng_below(&r, 256) : corpus[rng_below(&r, strlen(corpus))];
        uint32_t *x = NULL, *y = NULL;
        tokenizer_encode(&a, buf, len, &x);
        tokenizer_encode(&b, buf, len, &y);
        assert_int_equal(arrlenu(x), arrlenu(y));
        for (size_t i = 0; i < arrlenu(x); i++)
            assert_int_equal(y[i], x[i] < 256 ? tokenizer_bpe_of(&b)->id_of_byte[x[i]] : x[i]);
        char *text = tokenizer_decode(&b, y, arrlenu(y));
        assert_memory_equal(text, buf, len);
        free(text);
        arrfree(x);
        arrfree(y);
    }
    /* The saved form: a byte-order line only for the permuted one, and both read back to their hash. */
    char *ta = tokenizer_to_text(&a), *tb = tokenizer_to_text(&b);
    assert_null(strstr(ta, "byte-order"));
    const char *line = strstr(tb, "\nbyte-order 33 34 35 ");
    assert_non_null(line);
    assert_string_equal(strchr(line + 1, '\n'), "\n"); /* the last line */
    assert_int_equal(tokenizer_from_text(&back, tb, "t", &err), 0);
    assert_string_equal(back.hash, b.hash);
    tokenizer_free(&back);
    /* An identity byte-order line, a repeated byte or a short line is refused. */
    char *sb = NULL;
    sb_appendf(&sb, "%s", ta);
    sb_appendf(&sb, "byte-order");
    for (int i = 0; i < 256; i++) sb_appendf(&sb, " %d", i);
    sb_appendf(&sb, "\n");
    assert_int_equal(tokenizer_from_text(&back, sb, "t", &err), -1);
    assert_one_line(&err);
    char *repeat = strdup(tb);
    memcpy(strstr(repeat, "byte-order 33 34") + 14, "33", 2); /* "33 33" */
    assert_int_equal(tokenizer_from_text(&back, repeat, "t", &err), -1);
    char *cut = strdup(tb);
    strcpy(strrchr(cut, ' '), "\n");
    assert_int_equal(tokenizer_from_text(&back, cut, "t", &err), -1);
    /* tokenizer.json: the vocabulary keeps the order, and imports back to the same tokenizer. */
    for (int which = 0; which < 2; which++) {
        const Tokenizer *t = which ? &b : &a;
        char *json = bpe_export_hf_json(tokenizer_bpe_of(t), &err);
        assert_non_null(json);
        assert_int_equal(tokenizer_import_hf_json(&back, json, strlen(json), "export", &err), 0);
        assert_string_equal(back.hash, t->hash);
        if (which) assert_non_null(strstr(json, "\"vocab\": {\n      \"!\": 0,"));
        free(json);
        tokenizer_free(&back);
    }
    sb_free(&sb);
    free(repeat);
    free(cut);
    free(ta);
    free(tb);
    tokenizer_free(&a);
    tokenizer_free(&b);
}

/* A large text takes the parallel path: the same ids as one serial pass. */
static void test_byte_order_parallel(void **s) {
    (void)s;
    Bpe plain, perm;
    Error err;
    uint8_t order[256];
    for (int i = 0; i < 256; i++) order[i] = (uint8_t)(255 - i);
    learned_bpe(&plain, 60);
    permuted_copy(&plain, &perm, order);
    Tokenizer t;
    assert_int_equal(tokenizer_from_bpe(&t, &perm, &err), 0);
    size_t one = strlen(corpus), n = (5u << 20) / one + 1;
    char *big = malloc(n * one);
    for (size_t i = 0; i < n; i++) memcpy(big + i * one, corpus, one);
    uint32_t *whole = NULL, *piece = NULL;
    tokenizer_encode(&t, big, n * one, &whole);
    tokenizer_encode(&t, corpus, one, &piece);
    /* corpus ends in a control byte, so each copy splits into the same pieces */
    assert_int_equal(arrlenu(whole), n * arrlenu(piece));
    for (size_t i = 0; i < n; i++) assert_memory_equal(whole + i * arrlenu(piece), piece, arrlenu(piece) * 4);
    arrfree(whole);
    arrfree(piece);
    free(big);
    tokenizer_free(&t);
    bpe_free(&plain);
}

/* ---- GPT-2's layout, by hand ---------------------------------------------- */

/* Byte-level spelling of a string. */
static void spell(const char *text, char *out) {
    uint32_t cp[256];
    bpe_byte_chars(cp);
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) out += utf8_encode(cp[*p], out);
    *out = '\0';
}

/* Merges: "t h", "th e", "Ġ c", "a t", "Ġc at" make ids 256..260; <|endoftext|> is 261. */
static const char *const hand_merges[][2] = {{"t", "h"}, {"th", "e"}, {" ", "c"}, {"a", "t"}, {" c", "at"}};
#define N_HAND (sizeof hand_merges / sizeof hand_merges[0])

static json_t *hand_vocab(void) {
    uint8_t order[256];
    gpt2_byte_order(order);
    json_t *v = json_object();
    char sp[64], text[16];
    for (int id = 0; id < 256; id++) {
        text[0] = (char)order[id];
        text[1] = 0;
        if (!order[id]) { /* byte 0 is spelled U+0100 */
            json_object_set_new(v, "\xc4\x80", json_integer(id));
            continue;
        }
        spell(text, sp);
        json_object_set_new(v, sp, json_integer(id));
    }
    for (size_t k = 0; k < N_HAND; k++) {
        snprintf(text, sizeof text, "%s%s", hand_merges[k][0], hand_merges[k][1]);
        spell(text, sp);
        json_object_set_new(v, sp, json_integer((json_int_t)(256 + k)));
    }
    return v;
}

static json_t *hand_merge_list(int pairs) {
    json_t *m = json_array();
    for (size_t k = 0; k < N_HAND; k++) {
        char l[32], r[32], both[64];
        spell(hand_merges[k][0], l);
        spell(hand_merges[k][1], r);
        snprintf(both, sizeof both, "%s %s", l, r);
        json_array_append_new(m, pairs ? json_pack("[s, s]", l, r) : json_string(both));
    }
    return m;
}

/* GPT-2's tokenizer.json, in miniature. */
static json_t *hand_json(int pairs) {
    json_t *byte_level = json_pack("{s:s, s:b, s:b, s:b}", "type", "ByteLevel", "add_prefix_space", 0, "trim_offsets", 1,
                                   "use_regex", 1);
    json_t *vocab = hand_vocab();
    json_object_set_new(vocab, "<|endoftext|>", json_integer(256 + N_HAND));
    return json_pack("{s:s, s:n, s:n, s:[{s:i, s:s, s:b, s:b}], s:n, s:O, s:O, s:o, s:{s:s, s:n, s:n, s:s, s:s, s:b, s:o, s:o}}",
                     "version", "1.0", "truncation", "padding", "added_tokens", "id", (int)(256 + N_HAND), "content",
                     "<|endoftext|>", "normalized", 1, "special", 1, "normalizer", "pre_tokenizer", byte_level,
                     "post_processor", byte_level, "decoder", byte_level, "model", "type", "BPE", "dropout", "unk_token",
                     "continuing_subword_prefix", "", "end_of_word_suffix", "", "fuse_unk", 0, "vocab", vocab, "merges",
                     hand_merge_list(pairs));
}

static int import_json(Tokenizer *t, const json_t *j, Error *err) {
    char *text = json_dumps(j, 0);
    int rc = tokenizer_import_hf_json(t, text, strlen(text), "tokenizer.json", err);
    free(text);
    return rc;
}

static char *hand_merges_txt(const char *first_line) {
    char *sb = NULL;
    sb_appendf(&sb, "%s", first_line);
    json_t *m = hand_merge_list(0);
    for (size_t k = 0; k < N_HAND; k++) sb_appendf(&sb, "%s\n", json_string_value(json_array_get(m, k)));
    json_decref(m);
    return sb;
}

static int import_files(Tokenizer *t, const json_t *vocab, const char *merges, Error *err) {
    char *v = json_dumps(vocab, 0);
    int rc = tokenizer_import_hf_vocab_merges(t, v, strlen(v), merges, strlen(merges), "dir", err);
    free(v);
    return rc;
}

static void test_gpt2_layout(void **s) {
    (void)s;
    Error err;
    Tokenizer t[4];
    json_t *strings = hand_json(0), *pairs = hand_json(1), *vocab = hand_vocab();
    json_object_set_new(vocab, "<|endoftext|>", json_integer(256 + N_HAND));
    char *with_version = hand_merges_txt("#version: 0.2\n"), *without = hand_merges_txt("");
    assert_int_equal(import_json(&t[0], strings, &err), 0);
    assert_int_equal(import_json(&t[1], pairs, &err), 0);
    assert_int_equal(import_files(&t[2], vocab, with_version, &err), 0);
    assert_int_equal(import_files(&t[3], vocab, without, &err), 0);
    for (int i = 1; i < 4; i++) assert_string_equal(t[i].hash, t[0].hash);
    const Bpe *b = tokenizer_bpe_of(&t[0]);
    assert_non_null(b);
    assert_string_equal(b->pattern, "gpt2");
    assert_int_equal(t[0].vocab_size, 256 + N_HAND + 1);
    /* '!' is id 0, 't' (116) is 116 - 33 = 83, byte 0 is id 188 (the first
     * byte spelled U+0100). */
    assert_int_equal(b->id_of_byte['!'], 0);
    assert_int_equal(b->id_of_byte['t'], 83);
    assert_int_equal(b->id_of_byte[0], 188);
    uint32_t *ids = NULL;
    tokenizer_encode(&t[0], "the cat hat", 11, &ids);
    /* pieces "the", " cat", " hat": 257; 260; ' ' (32 is id 220), 'h' (71), "at" (259) */
    uint32_t want[] = {257, 260, 220, 71, 259};
    assert_int_equal(arrlenu(ids), 5);
    assert_memory_equal(ids, want, sizeof want);
    char *text = tokenizer_decode(&t[0], ids, arrlenu(ids));
    assert_string_equal(text, "the cat hat");
    free(text);
    assert_int_equal(tokenizer_special_id(&t[0], "<|endoftext|>"), 261);
    assert_int_equal(tokenizer_token_bytes(&t[0], 261), 0);
    arrfree(ids);
    for (int i = 0; i < 4; i++) tokenizer_free(&t[i]);
    json_decref(strings);
    json_decref(pairs);
    json_decref(vocab);
    sb_free(&with_version);
    sb_free(&without);
}

/* The regex of a Split before ByteLevel decides the pattern's name, as our
 * export writes it; ByteLevel without a regex alone is "none". */
static void test_pre_tokenizers(void **s) {
    (void)s;
    Error err;
    Tokenizer t;
    const char *names[] = {"gpt4", "gpt2", "none", "custom"};
    for (int i = 0; i < 4; i++) {
        json_t *j = hand_json(0);
        const char *regex = i == 3 ? "\\p{L}+|[^\\p{L}]+" : bpe_pattern_regex(names[i]);
        json_t *bl = json_pack("{s:s, s:b, s:b}", "type", "ByteLevel", "add_prefix_space", 0, "use_regex", 0);
        json_t *seq = regex[0] ? json_pack("{s:s, s:[{s:s, s:{s:s}, s:s, s:b}, o]}", "type", "Sequence", "pretokenizers",
                                           "type", "Split", "pattern", "Regex", regex, "behavior", "Isolated", "invert", 0, bl)
                               : json_pack("{s:s, s:[o]}", "type", "Sequence", "pretokenizers", bl);
        json_object_set_new(j, "pre_tokenizer", seq);
        assert_int_equal(import_json(&t, j, &err), 0);
        assert_string_equal(tokenizer_bpe_of(&t)->pattern, names[i]);
        assert_string_equal(tokenizer_bpe_of(&t)->regex, regex);
        tokenizer_free(&t);
        json_decref(j);
    }
}

/* A change to a valid file, and what the error must mention. */
typedef struct Spoil {
    const char *path; /* "model.type": object keys from the root; "" for the root */
    const char *value; /* JSON; NULL deletes the key */
    const char *says;
} Spoil;

static json_t *at_path(json_t *root, const char *path, const char **last) {
    char buf[128];
    snprintf(buf, sizeof buf, "%s", path);
    json_t *node = root;
    char *dot;
    const char *key = buf;
    while ((dot = strchr(key, '.'))) {
        *dot = 0;
        node = json_object_get(node, key);
        key = dot + 1;
    }
    *last = path + (key - buf);
    return node;
}

static void test_refusals(void **s) {
    (void)s;
    const Spoil spoils[] = {
        {"model.type", "\"WordPiece\"", "not BPE"},
        {"model.type", "\"Unigram\"", "not BPE"},
        {"model.dropout", "0.1", "dropout"},
        {"model.continuing_subword_prefix", "\"##\"", "word pieces"},
        {"model.byte_fallback", "true", "byte_fallback"},
        {"model.merges", "[\"a b c\"]", "neither"},
        {"model.merges", "[[\"a\"]]", "neither"},
        {"model.vocab", "[]", "vocab object"},
        /* merges that contradict the vocabulary */
        {"model.merges", "[\"t h\", \"a t\", \"th e\", \"\xc4\xa0 c\", \"\xc4\xa0" "c at\"]", "has id 259, not 257"}, /* out of order */
        {"model.merges", "[\"t h\", \"th e\", \"\xc4\xa0 c\", \"a t\", \"\xc4\xa0" "c at\", \"x y\"]", "makes 'xy'"},  /* one merge too many */
        {"model.merges", "[\"t h\", \"th e\", \"\xc4\xa0 c\", \"a t\", \"\xc4\xa0" "c at\", \"x y\", \"y z\"]", "disagree"}, /* two */
        {"model.merges", "[\"t h\", \"th e\", \"\xc4\xa0 c\", \"a t\", \"\xc4\xa0" "c q\"]", "makes"},                 /* a result not in it */
        {"model.merges", "[\"t h\", \"th e\", \"\xc4\xa0 c\", \"a t\", \"\xc4\xa0" "c \xe2\x82\xac\"]", "not in the vocabulary"},
        {"model.merges", "[\"t h\", \"the th\", \"\xc4\xa0 c\", \"a t\", \"\xc4\xa0" "c at\"]", "made by no earlier merge"}, /* refers ahead */
        {"model", NULL, "no model"},
        {"pre_tokenizer", "null", "no pre-tokenizer"},
        {"pre_tokenizer", "{\"type\": \"Whitespace\"}", "Whitespace"},
        {"pre_tokenizer.add_prefix_space", "true", "add_prefix_space"},
        {"pre_tokenizer.add_prefix_space", NULL, "add_prefix_space"},
        {"pre_tokenizer", "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": {\"Regex\": \"(\"}, "
                          "\"behavior\": \"Isolated\"}, {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": false}]}",
         "regex"},
        {"pre_tokenizer", "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": {\"Regex\": \"a\\nb\"}, "
                          "\"behavior\": \"Isolated\"}, {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": false}]}",
         "line break"}, /* the saved form holds the regex on one line (found by fuzz_hf_tokenizer) */
        {"pre_tokenizer", "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": {\"String\": \" \"}, "
                          "\"behavior\": \"Isolated\"}, {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": false}]}",
         "not a regex"},
        {"pre_tokenizer", "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": {\"Regex\": \" \"}, "
                          "\"behavior\": \"Removed\"}, {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": false}]}",
         "Removed"},
        {"pre_tokenizer", "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": {\"Regex\": \" \"}, "
                          "\"behavior\": \"Isolated\"}, {\"type\": \"ByteLevel\", \"add_prefix_space\": false}]}",
         "splits twice"},
        {"normalizer", "{\"type\": \"NFC\"}", "normalizer NFC"},
        {"decoder", "{\"type\": \"WordPiece\"}", "decoder WordPiece"},
        {"post_processor", "{\"type\": \"TemplateProcessing\"}", "TemplateProcessing"},
        {"added_tokens", "{}", "not a list"},
        {"added_tokens", "[{\"id\": 261, \"content\": \"<|endoftext|>\", \"special\": false}]", "not special"},
        {"added_tokens", "[{\"id\": 100, \"content\": \"<|endoftext|>\", \"special\": true}]", "among the bytes"},
        {"added_tokens", "[{\"id\": 261, \"content\": \"<|other|>\", \"special\": true}]", "in the vocabulary but"},
        {"added_tokens", "[{\"id\": 261, \"content\": \"\", \"special\": true}]", "non-empty"},
        {"added_tokens", "[{\"id\": 261, \"content\": \"<|endoftext|>\"}, {\"id\": 263, \"content\": \"<|x|>\"}]", "no token has id 262"},
        {"added_tokens", "[{\"id\": 261, \"content\": \"<|endoftext|>\"}, {\"id\": 262, \"content\": \"<|endoftext|>\"}]", "given twice"},
        {"added_tokens", "[{\"id\": 261, \"content\": \"<|endoftext|>\"}, {\"id\": 261, \"content\": \"<|endoftext|>\"}]", "both have id"},
        {"model.vocab.<|endoftext|>", "-1", "outside"},
        {"model.vocab.<|endoftext|>", "1000000000000", "outside"},
        {"model.vocab.<|endoftext|>", "261.5", "not an integer"},
        {"model.vocab.<|endoftext|>", "\"261\"", "not an integer"},
        {"model.vocab.<|endoftext|>", "5", "both have id 5"},
        {"model.vocab.!", NULL, "id 0 is missing"},
        {"model.vocab.at", NULL, "makes 'at', which is not in the vocabulary"}, /* merge 3's result */
        {"model.vocab.\xc4\xa0" "c", "262", "has id 262, not 258"},                   /* merge 2's result moved */
        {"model.vocab.ab", "0", "both have id 0"},
        {"model.vocab.<|x|>", "262", "'<|x|>' (id 262) follows the last of the 5 merges but is not an added token"},
    };
    Error err;
    Tokenizer t;
    /* id 0 spelled as the empty string: refused, not read past its end (found by fuzz_hf_tokenizer) */
    {
        json_t *j = hand_json(0);
        const char *key;
        json_t *vocab = at_path(j, "model.vocab.!", &key);
        json_object_del(vocab, key);
        json_object_set_new(vocab, "", json_integer(0));
        err.msg[0] = 0;
        assert_int_not_equal(import_json(&t, j, &err), 0);
        if (!strstr(err.msg, "id 0 is '', not a byte")) fail_msg("empty spelling: got \"%s\"", err.msg);
        assert_one_line(&err);
        json_decref(j);
    }
    for (size_t i = 0; i < sizeof spoils / sizeof spoils[0]; i++) {
        json_t *j = hand_json(0);
        const char *key;
        json_t *node = at_path(j, spoils[i].path, &key);
        assert_non_null(node);
        if (spoils[i].value) json_object_set_new(node, key, json_loads(spoils[i].value, JSON_DECODE_ANY, NULL));
        else json_object_del(node, key);
        err.msg[0] = 0;
        int rc = import_json(&t, j, &err);
        if (rc == 0 || !strstr(err.msg, spoils[i].says)) fail_msg("spoil %zu (%s): got \"%s\"", i, spoils[i].path, err.msg);
        assert_one_line(&err);
        json_decref(j);
    }
}

/* Not JSON, not a tokenizer.json, and vocab.json + merges.txt that disagree. */
static void test_bad_files(void **s) {
    (void)s;
    Error err;
    Tokenizer t;
    const char *texts[][2] = {
        {"{\"model\": {\"type\": \"BPE\", ", "invalid JSON"},
        {"[1, 2]", "no model"},
        {"{\"!\": 0, \"\\\"\": 1}", "give the directory"},
        {"", "invalid JSON"},
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        err.msg[0] = 0;
        assert_int_equal(tokenizer_import_hf_json(&t, texts[i][0], strlen(texts[i][0]), "x.json", &err), -1);
        if (!strstr(err.msg, texts[i][1])) fail_msg("text %zu: got \"%s\"", i, err.msg);
        assert_one_line(&err);
    }
    json_t *vocab = hand_vocab();
    char *merges = hand_merges_txt("#version: 0.2\n");
    /* A byte-level token after the merges is a missing merge's token, not a special. */
    json_object_set_new(vocab, "\xc4\xa0the", json_integer(256 + N_HAND));
    assert_int_equal(import_files(&t, vocab, merges, &err), -1);
    assert_non_null(strstr(err.msg, "disagree"));
    json_object_del(vocab, "\xc4\xa0the");
    /* ... and so is one that two earlier tokens join into: its merge is missing. */
    char *four = hand_merges_txt("");
    *strrchr(four, ' ') = 0; /* cut the last merge: "...\na t\nĠc" */
    *strrchr(four, '\n') = 0;
    json_object_del(vocab, "\xc4\xa0" "cat");
    json_object_set_new(vocab, "ath", json_integer(260));
    assert_int_equal(import_files(&t, vocab, four, &err), -1);
    assert_non_null(strstr(err.msg, "'ath' (id 260) follows the last of the 4 merges but joins 'a' and 'th'"));
    json_object_del(vocab, "ath");
    json_object_set_new(vocab, "\xc4\xa0" "cat", json_integer(260));
    sb_free(&four);
    const char *bad_merges[][2] = {
        {"#version: 0.2\nt h\n\nth e\n", "line 3 is empty"},
        {"th\n", "line 1 is not two tokens"},
        {"t  h\n", "line 1 is not two tokens"},
        {"t h\nq\xc4\xa0 z\n", "not in the vocabulary"},
        {"t h\n#version: 0.2\n", "'#version:' is not in the vocabulary"}, /* only a first line is skipped */
    };
    for (size_t i = 0; i < sizeof bad_merges / sizeof bad_merges[0]; i++) {
        err.msg[0] = 0;
        assert_int_equal(import_files(&t, vocab, bad_merges[i][0], &err), -1);
        if (!strstr(err.msg, bad_merges[i][1])) fail_msg("merges.txt %zu: got \"%s\"", i, err.msg);
        assert_one_line(&err);
    }
    /* CRLF line ends and trailing blank lines are fine; vocab.json's extra token is the special. */
    char *crlf = NULL;
    for (const char *p = merges; *p; p++) {
        if (*p == '\n') sb_appendf(&crlf, "\r");
        sb_appendf(&crlf, "%c", *p);
    }
    sb_appendf(&crlf, "\r\n\n");
    json_object_set_new(vocab, "<|endoftext|>", json_integer(256 + N_HAND));
    assert_int_equal(import_files(&t, vocab, crlf, &err), 0);
    assert_int_equal(t.vocab_size, 256 + N_HAND + 1);
    assert_int_equal(tokenizer_special_id(&t, "<|endoftext|>"), 256 + N_HAND);
    tokenizer_free(&t);
    assert_int_equal(import_files(&t, vocab, "", &err), -1); /* no merges: the tokens after the bytes disagree */
    assert_one_line(&err);
    sb_free(&crlf);
    sb_free(&merges);
    json_decref(vocab);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_byte_order),      cmocka_unit_test(test_byte_order_parallel),
        cmocka_unit_test(test_gpt2_layout),     cmocka_unit_test(test_pre_tokenizers),
        cmocka_unit_test(test_refusals),        cmocka_unit_test(test_bad_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
