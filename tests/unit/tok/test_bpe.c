/* Byte-level BPE: training picks the pairs a hand count gives, in the
 * documented tie order; encoding equals a naive reference; any bytes round
 * trip; parallel encoding equals serial; the saved form round trips and
 * corrupt ones are rejected. */
#include "testutil.h"

#include <unistd.h>

#include "lm/tokens.h"
#include "lm/utf8.h"
#include "lm/ds.h"
#include "lm/bpe.h"
#include "lm/text_units.h"
#include "lm/tokenizer.h"

static void train_on(Bpe *b, const char *pattern, const char *const *words, size_t n_words, size_t merges,
                     size_t *learned) {
    Error err;
    assert_int_equal(bpe_init(b, pattern, bpe_pattern_regex(pattern), &err), 0);
    BpeCounter c;
    bpe_counter_init(&c, &b->pre);
    for (size_t i = 0; i < n_words; i++) bpe_count(&c, words[i], strlen(words[i]));
    *learned = bpe_train(b, &c, merges);
    bpe_counter_free(&c);
    bpe_index(b);
}

/* "aaabdaaabac" as one piece: aa (4) first; then (256 a) and (a b) both
 * have 2 and the smaller left id, a = 97, wins; then aa+ab (2). After that
 * every pair has count 1 and the order is by left id: (a c), (d 258),
 * (258 260), (261 259): 7 merges, then nothing is left. */
static void test_hand_counted_merges(void **s) {
    (void)s;
    const char *text[] = {"aaabdaaabac"};
    Bpe b;
    size_t learned;
    train_on(&b, "none", text, 1, 100, &learned);
    assert_int_equal(learned, 7);
    uint32_t want[7][2] = {{'a', 'a'}, {'a', 'b'}, {256, 257}, {'a', 'c'}, {'d', 258}, {258, 260}, {261, 259}};
    for (int k = 0; k < 7; k++) {
        assert_int_equal(b.merges[k].left, want[k][0]);
        assert_int_equal(b.merges[k].right, want[k][1]);
    }
    uint32_t *ids = NULL;
    bpe_encode(&b, "aaabdaaabac", 11, &ids);
    assert_int_equal(arrlenu(ids), 1); /* the whole text is the last token */
    assert_int_equal(ids[0], 262);
    arrclear(ids);
    bpe_encode(&b, "aaaa", 4, &ids); /* (a a) leftmost first: aa aa */
    assert_int_equal(arrlenu(ids), 2);
    assert_int_equal(ids[0], 256);
    assert_int_equal(ids[1], 256);
    arrfree(ids);
    bpe_free(&b);
}

/* Counts are per piece and weighted: "ab ab ab" under gpt4 is "ab", " ab",
 * " ab": (a b) x3, then (' ' 256) x2; no pair crosses a piece boundary. */
static void test_pieces_bound_merges(void **s) {
    (void)s;
    const char *text[] = {"ab ab ab"};
    Bpe b;
    size_t learned;
    train_on(&b, "gpt4", text, 1, 10, &learned);
    assert_int_equal(learned, 2);
    assert_int_equal(b.merges[0].left, 'a');
    assert_int_equal(b.merges[0].right, 'b');
    assert_int_equal(b.merges[1].left, ' ');
    assert_int_equal(b.merges[1].right, 256);
    bpe_free(&b);
}

/* The reference: find the lowest-ranked adjacent pair, leftmost, merge it,
 * repeat -- quadratic, obviously right. */
static void naive_encode(const Bpe *b, const char *p, size_t len, uint32_t **out) {
    uint32_t *t = NULL;
    for (size_t i = 0; i < len; i++) arrput(t, (unsigned char)p[i]);
    for (;;) {
        size_t best = SIZE_MAX;
        uint32_t best_rank = UINT32_MAX;
        for (size_t i = 0; i + 1 < arrlenu(t); i++)
            for (size_t k = 0; k < arrlenu(b->merges); k++)
                if (b->merges[k].left == t[i] && b->merges[k].right == t[i + 1] && 256 + k < best_rank) {
                    best_rank = (uint32_t)(256 + k);
                    best = i;
                }
        if (best == SIZE_MAX) break;
        t[best] = best_rank;
        arrdel(t, best + 1);
    }
    for (size_t i = 0; i < arrlenu(t); i++) arrput(*out, t[i]);
    arrfree(t);
}

static const char *corpus =
    "Call me Ishmael. Some years ago--never mind how long precisely--having little or no money in my purse, "
    "and nothing particular to interest me on shore, I thought I would sail about a little and see the watery "
    "part of the world. It is a way I have of driving off the spleen and regulating the circulation.\n"
    "There now is your insular city of the Manhattoes, belted round by wharves as Indian isles by coral reefs\n"
    "--commerce surrounds it with her surf. Right and left, the streets take you waterward. 1851, 2024: 33 ships.\n"
    "Caf\xc3\xa9 na\xc3\xafve \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e \xf0\x9f\x90\xb3 whale's WHALE'S they'll we've\n";

static void small_bpe(Bpe *b, size_t merges) {
    const char *text[] = {corpus};
    size_t learned;
    train_on(b, "gpt4", text, 1, merges, &learned);
    assert_int_equal(learned, merges);
}

static void test_encode_matches_naive(void **s) {
    (void)s;
    Bpe b;
    small_bpe(&b, 200);
    Rng r;
    rng_seed(&r, 5);
    for (int trial = 0; trial < 300; trial++) {
        /* pieces cut from the corpus, and random bytes */
        size_t len = 1 + rng_below(&r, 40), from = rng_below(&r, strlen(corpus) - len);
        char buf[64];
        if (trial % 3 == 2)
            for (size_t i = 0; i < len; i++) buf[i] = (char)rng_below(&r, 256);
        else memcpy(buf, corpus + from, len);
        uint32_t *fast = NULL, *slow = NULL;
        bpe_encode_piece(&b, buf, len, &fast);
        naive_encode(&b, buf, len, &slow);
        assert_int_equal(arrlenu(fast), arrlenu(slow));
        assert_memory_equal(fast, slow, arrlenu(fast) * sizeof(uint32_t));
        arrfree(fast);
        arrfree(slow);
    }
    bpe_free(&b);
}

/* Any bytes, valid UTF-8 or not, NUL included, decode to themselves. */
static void test_roundtrip_any_bytes(void **s) {
    (void)s;
    Bpe b;
    small_bpe(&b, 240);
    const char *specials[] = {"<|endoftext|>"};
    arrput(b.specials, strdup(specials[0]));
    Tokenizer tok;
    Error err;
    assert_int_equal(tokenizer_from_bpe(&tok, &b, &err), 0);
    assert_int_equal(tok.vocab_size, 256 + 240 + 1);
    Rng r;
    rng_seed(&r, 9);
    for (int trial = 0; trial < 200; trial++) {
        size_t len = rng_below(&r, 300);
        char *buf = malloc(len + 1);
        for (size_t i = 0; i < len; i++)
            buf[i] = trial % 2 ? (char)rng_below(&r, 256) : corpus[rng_below(&r, strlen(corpus))];
        uint32_t *ids = NULL;
        tokenizer_encode(&tok, buf, len, &ids);
        char *back = tokenizer_decode(&tok, ids, arrlenu(ids));
        assert_memory_equal(back, buf, len);
        TextUnits u = text_units_scored(&tok, ids, arrlenu(ids));
        size_t first = arrlenu(ids) ? tokenizer_token_bytes(&tok, ids[0]) : 0;
        assert_int_equal(u.bytes + first, len);
        free(back);
        free(buf);
        arrfree(ids);
    }
    /* A special token's text is ordinary text when encoding. */
    uint32_t *ids = NULL;
    tokenizer_encode(&tok, "<|endoftext|>", 13, &ids);
    for (size_t i = 0; i < arrlenu(ids); i++) assert_true(ids[i] < 256 + 240);
    assert_int_equal(tokenizer_token_bytes(&tok, 256 + 240), 0);
    arrfree(ids);
    tokenizer_free(&tok);
}

/* The words behind word perplexity (text_units_scored): a word counts where
 * it starts in the scored text, which begins after token 0 (nothing predicts
 * token 0). With "the" one token: "the cat sat on the mat" scores 5 words
 * (the first "the" is token 0's), "thermal cat" 1 (token 0 ends inside
 * "thermal"), " cat" 1 (token 0 is the space before it), a special token
 * ends a word; the bytes are every token's but token 0's. */
static void test_text_units_words(void **s) {
    (void)s;
    const char *text[] = {"the the the the"};
    Bpe b;
    size_t learned;
    train_on(&b, "gpt4", text, 1, 2, &learned); /* (t h), (th e) */
    arrput(b.specials, strdup("<|sep|>"));
    Tokenizer tok;
    Error err;
    assert_int_equal(tokenizer_from_bpe(&tok, &b, &err), 0);
    uint32_t sep = tok.vocab_size - 1;
    const struct {
        const char *text;
        size_t words;
    } cases[] = {{"the cat sat on the mat", 5}, {"thermal cat", 1}, {" cat", 1}, {"the", 0}, {"the  \n the\tend ", 2}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        uint32_t *ids = NULL;
        size_t len = strlen(cases[c].text), first;
        tokenizer_encode(&tok, cases[c].text, len, &ids);
        tokenizer_token(&tok, ids[0], &first);
        assert_int_equal(first, cases[c].text[0] == 't' ? 3 : 1); /* the premise: "the" is one token */
        TextUnits u = text_units_scored(&tok, ids, arrlenu(ids));
        if (u.words != cases[c].words)
            fail_msg("\"%s\": %zu scored words, not %zu", cases[c].text, u.words, cases[c].words);
        assert_int_equal(u.bytes, len - first);
        arrfree(ids);
    }
    /* "cat" then a separator then "sat": the separator is no text and ends "cat"'s word. */
    uint32_t *ids = NULL;
    tokenizer_encode(&tok, "the cat", 7, &ids);
    arrput(ids, sep);
    tokenizer_encode(&tok, "sat", 3, &ids);
    TextUnits u = text_units_scored(&tok, ids, arrlenu(ids));
    assert_int_equal(u.words, 2);
    assert_int_equal(u.bytes, 7);
    arrfree(ids);
    tokenizer_free(&tok);
}

typedef struct PieceCtx {
    const Bpe *b;
    uint32_t **ids;
} PieceCtx;

static void piece(const char *p, size_t len, void *c) {
    PieceCtx *ctx = c;
    bpe_encode_piece(ctx->b, p, len, ctx->ids);
}

/* A text over the parallel threshold gives the same ids as piece by piece. */
static void test_parallel_equals_serial(void **s) {
    (void)s;
    Bpe b;
    small_bpe(&b, 250);
    char *big = NULL;
    Rng r;
    rng_seed(&r, 11);
    while (arrlenu(big) < (5u << 20)) {
        size_t from = rng_below(&r, strlen(corpus) - 80), len = 1 + rng_below(&r, 80);
        memcpy(arraddnptr(big, len), corpus + from, len);
    }
    uint32_t *par = NULL, *ser = NULL;
    bpe_encode(&b, big, arrlenu(big), &par);
    PieceCtx ctx = {&b, &ser};
    pretok_split(&b.pre, big, arrlenu(big), piece, &ctx);
    assert_int_equal(arrlenu(par), arrlenu(ser));
    assert_memory_equal(par, ser, arrlenu(par) * sizeof(uint32_t));
    arrfree(par);
    arrfree(ser);
    arrfree(big);
    bpe_free(&b);
}

/* Training twice gives the same merges; every token's bytes are distinct. */
static void test_deterministic_distinct(void **s) {
    (void)s;
    Bpe a, b;
    small_bpe(&a, 260);
    small_bpe(&b, 260);
    assert_int_equal(arrlenu(a.merges), arrlenu(b.merges));
    assert_memory_equal(a.merges, b.merges, arrlenu(a.merges) * sizeof(BpeMerge));
    Tokenizer tok;
    Error err;
    assert_int_equal(tokenizer_from_bpe(&tok, &a, &err), 0);
    ByteTable seen = {0};
    for (uint32_t id = 0; id < tok.vocab_size; id++) {
        size_t len;
        const char *t = tokenizer_token(&tok, id, &len);
        int added;
        byte_table_intern(&seen, t, len, &added);
        assert_true(added);
    }
    byte_table_free(&seen);
    tokenizer_free(&tok);
    bpe_free(&b);
}

static void test_saved_form(void **s) {
    (void)s;
    Bpe b;
    small_bpe(&b, 50);
    arrput(b.specials, strdup("<|sep|>"));
    Tokenizer tok, back;
    Error err;
    assert_int_equal(tokenizer_from_bpe(&tok, &b, &err), 0);
    char *text = tokenizer_to_text(&tok);
    assert_int_equal(tokenizer_from_text(&back, text, "t", &err), 0);
    assert_string_equal(back.hash, tok.hash);
    assert_int_equal(back.vocab_size, tok.vocab_size);
    uint32_t *x = NULL, *y = NULL;
    tokenizer_encode(&tok, corpus, strlen(corpus), &x);
    tokenizer_encode(&back, corpus, strlen(corpus), &y);
    assert_int_equal(arrlenu(x), arrlenu(y));
    assert_memory_equal(x, y, arrlenu(x) * 4);
    arrfree(x), arrfree(y);
    tokenizer_free(&back);
    /* Corruptions: each is one error, never a crash. */
    const char *bad[] = {
        "lm-tokenizer 1\nbpe 300\npattern gpt4\n",                                    /* truncated */
        "lm-tokenizer 1\nbpe 257\npattern x\nregex (\nspecials 0\nmerges 1\n97 98\n", /* bad regex */
        "lm-tokenizer 1\nbpe 257\npattern none\nregex \nspecials 0\nmerges 1\n97 256\n", /* refers ahead */
        "lm-tokenizer 1\nbpe 258\npattern none\nregex \nspecials 1\nzz\nmerges 1\n97 98\n", /* bad hex */
        "lm-tokenizer 1\nbpe 999\npattern none\nregex \nspecials 0\nmerges 1\n97 98\n", /* wrong vocab */
        "lm-tokenizer 1\nbpe 257\npattern none\nregex \nspecials 0\nmerges 1\n97 98\nextra\n",
        "lm-tokenizer 1\nbpe 257\npattern none\nregex \nspecials 0\nmerges 1\n97\n",
        "lm-tokenizer 1\nwordpiece 257\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err.msg[0] = 0;
        assert_int_equal(tokenizer_from_text(&back, bad[i], "t", &err), -1);
        assert_true(strlen(err.msg) > 0 && !strchr(err.msg, '\n'));
    }
    free(text);
    tokenizer_free(&tok);
}

/* Token files keep their width and read back through the map. */
static void test_token_file_widths(void **s) {
    (void)s;
    char dir[] = "/tmp/test_bpe_XXXXXX", path[64];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/t.bin", dir);
    uint32_t ids[5] = {0, 1, 65535, 7, 3};
    Error err;
    for (int wide = 0; wide < 2; wide++) {
        size_t vocab = wide ? 70000 : 65536;
        if (wide) ids[2] = 69999;
        assert_int_equal(tokens_write(path, ids, 5, vocab, &err), 0);
        TokenFile tf;
        assert_int_equal(tokens_read(path, &tf, &err), 0);
        assert_int_equal(tf.width, wide ? 4 : 2);
        for (size_t i = 0; i < 5; i++) assert_int_equal(token_at(&tf, i), ids[i]);
        tokens_free(&tf);
        FILE *f = fopen(path, "rb");
        fseek(f, 0, SEEK_END);
        assert_int_equal(ftell(f), 32 + 5 * (wide ? 4 : 2));
        fclose(f);
    }
    assert_int_equal(tokens_write(path, ids, 5, 100, &err), 0); /* ids over the vocabulary */
    TokenFile tf;
    assert_int_equal(tokens_read(path, &tf, &err), -1);
    remove(path);
    rmdir(dir);
}

/* bin/sample holds back a character's first bytes until the rest arrive. */
static void test_utf8_complete_prefix(void **s) {
    (void)s;
    const unsigned char whale[] = "a\xf0\x9f\x90\xb3"; /* 'a' + U+1F433, 4 bytes */
    assert_int_equal(utf8_complete_prefix(whale, 1), 1);
    for (size_t cut = 2; cut < 5; cut++) assert_int_equal(utf8_complete_prefix(whale, cut), 1);
    assert_int_equal(utf8_complete_prefix(whale, 5), 5);
    const unsigned char e_acute[] = "\xc3\xa9\xc3";
    assert_int_equal(utf8_complete_prefix(e_acute, 3), 2);
    const unsigned char stray[] = "x\x80\x80"; /* continuation bytes with no lead: let them out */
    assert_int_equal(utf8_complete_prefix(stray, 3), 3);
    assert_int_equal(utf8_complete_prefix(whale, 0), 0);
    uint32_t cp = 7;
    assert_int_equal(utf8_decode((const unsigned char *)"", 0, &cp), 0); /* nothing to decode, even before a NUL */
    assert_int_equal(cp, 7);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hand_counted_merges),   cmocka_unit_test(test_pieces_bound_merges),
        cmocka_unit_test(test_encode_matches_naive),  cmocka_unit_test(test_roundtrip_any_bytes),
        cmocka_unit_test(test_parallel_equals_serial), cmocka_unit_test(test_deterministic_distinct),
        cmocka_unit_test(test_saved_form),            cmocka_unit_test(test_token_file_widths),
        cmocka_unit_test(test_utf8_complete_prefix),  cmocka_unit_test(test_text_units_words),
    };
    return cmocka_run_group_tests_name("bpe", tests, NULL, NULL);
}
