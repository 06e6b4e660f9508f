/* Hugging Face byte-level BPE tokenizers (tokenizer.json, or vocab.json +
 * merges.txt) read into our Bpe. Both forms come down to the same three
 * things, checked the same way in build(): the vocabulary (byte-level
 * spelling -> id), the merges as pairs of spellings in rank order, and the
 * special tokens. */
#include "hf/tokenizer_import.h"
#include "lm/hf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lm/json.h"
#include "lm/utf8.h"
#include "lm/ds.h"
#include "lm/files.h"
#include "lm/bpe.h"

#define MAX_MERGES (1u << 24) /* as many as the saved form reads back (tok/bpe.c) */
#define MAX_SPECIALS 65536
/* The longest token read, in bytes: far above any real vocabulary's
 * (GPT-2's longest is 128), far below what would slow the checks. */
#define TOKEN_BYTES_MAX 65536u
#define N_BYTE_CHARS 0x144 /* the byte-level spelling uses code points below this */

typedef struct HfSource {
    const char *origin;
    const json_t *vocab;  /* object: spelled token -> id */
    const json_t *added;  /* array of added tokens ({id, content, special}), or NULL */
    char *parts;          /* stb_ds: each merge's two spellings, NUL-terminated, one after another */
    size_t *part_at;      /* stb_ds: offsets into parts, two per merge */
    char pattern[32];     /* the split pattern's name: gpt2, gpt4, none or custom */
    const char *regex;
} HfSource;

/* err's message after "'origin': " and `what`. */
static int prefix_error(Error *err, const char *origin, const char *what) {
    char why[sizeof err->msg];
    snprintf(why, sizeof why, "%s", err->msg);
    return err_set(err, "'%s': %s%s", origin, what, why);
}

/* A spelling for an error line: at most 40 bytes, control characters as '?'. */
static const char *shown(const char *s, char buf[48]) {
    size_t n = 0;
    for (; s[n] && n < 40; n++) buf[n] = (unsigned char)s[n] < 0x20 || s[n] == 0x7f ? '?' : s[n];
    snprintf(buf + n, 48 - n, "%s", s[n] ? "..." : "");
    return buf;
}

static void add_merge(HfSource *s, const char *left, size_t left_len, const char *right, size_t right_len) {
    arrput(s->part_at, arrlenu(s->parts));
    memcpy(arraddnptr(s->parts, left_len), left, left_len);
    arrput(s->parts, '\0');
    arrput(s->part_at, arrlenu(s->parts));
    memcpy(arraddnptr(s->parts, right_len), right, right_len);
    arrput(s->parts, '\0');
}

/* "left right": exactly one space, both sides non-empty (the byte-level
 * spelling has no space: byte 0x20 is spelled U+0120). */
static int add_merge_line(HfSource *s, const char *line, size_t len) {
    const char *space = memchr(line, ' ', len);
    if (!space || space == line || space + 1 == line + len || memchr(space + 1, ' ', (size_t)(line + len - space - 1)))
        return -1;
    add_merge(s, line, (size_t)(space - line), space + 1, (size_t)(line + len - space - 1));
    return 0;
}

static const char *type_of(const json_t *o) {
    const json_t *t = json_object_get(o, "type");
    return json_is_string(t) ? json_string_value(t) : "(no type)";
}

static int is_type(const json_t *o, const char *type) { return strcmp(type_of(o), type) == 0; }

/* A boolean field; `absent` when missing or null (Hugging Face's default), -1 when not a boolean. */
static int flag(const json_t *o, const char *field, int absent) {
    const json_t *v = json_object_get(o, field);
    if (!v || json_is_null(v)) return absent;
    return json_is_boolean(v) ? json_is_true(v) : -1;
}

/* A field that must be null, absent or "" (a string option our BPE has no use for). */
static int empty_text(const json_t *o, const char *field) {
    const json_t *v = json_object_get(o, field);
    return !v || json_is_null(v) || (json_is_string(v) && json_string_length(v) == 0);
}

/* ByteLevel: maps bytes to their spelling; with use_regex it splits by
 * GPT-2's regex first. A prefix space changes the text, so is refused. */
static int read_byte_level(const json_t *o, int *use_regex, const char *origin, Error *err) {
    int prefix = flag(o, "add_prefix_space", 1);
    *use_regex = flag(o, "use_regex", 1);
    if (prefix != 0)
        return err_set(err, "'%s': the ByteLevel pre-tokenizer %s (add_prefix_space): not supported", origin,
                       prefix > 0 ? "puts a space before the text" : "has a bad add_prefix_space");
    if (*use_regex < 0) return err_set(err, "'%s': the ByteLevel pre-tokenizer's use_regex is not a boolean", origin);
    return 0;
}

/* Split with a regex, each match its own piece (Isolated): our pre-tokenizer. */
static int read_split(const json_t *o, const char **regex, const char *origin, Error *err) {
    const json_t *re = json_object_get(json_object_get(o, "pattern"), "Regex"),
                 *behavior = json_object_get(o, "behavior");
    if (!json_is_string(re))
        return err_set(err, "'%s': the Split pre-tokenizer's pattern is not a regex ({\"Regex\": ...}): not supported", origin);
    if (!json_is_string(behavior) || strcmp(json_string_value(behavior), "Isolated") != 0)
        return err_set(err, "'%s': the Split pre-tokenizer's behavior is %s, not Isolated: not supported", origin,
                       json_is_string(behavior) ? json_string_value(behavior) : "missing");
    if (flag(o, "invert", 0) != 0) return err_set(err, "'%s': the Split pre-tokenizer is inverted: not supported", origin);
    *regex = json_string_value(re);
    return 0;
}

/* ByteLevel alone, or a Sequence of an optional Split then ByteLevel
 * without its own regex (what bpe_export_hf_json writes). */
static int read_pre_tokenizer(const json_t *pre, HfSource *s, Error *err) {
    const char *o = s->origin, *regex = NULL;
    int use_regex;
    if (is_type(pre, "ByteLevel")) {
        if (read_byte_level(pre, &use_regex, o, err)) return -1;
    } else if (is_type(pre, "Sequence")) {
        const json_t *list = json_object_get(pre, "pretokenizers");
        size_t n = json_array_size(list);
        if (n < 1 || n > 2 || !is_type(json_array_get(list, n - 1), "ByteLevel") ||
            (n == 2 && !is_type(json_array_get(list, 0), "Split")))
            return err_set(err, "'%s': the pre-tokenizer Sequence is not [Split,] ByteLevel: not supported", o);
        if (read_byte_level(json_array_get(list, n - 1), &use_regex, o, err)) return -1;
        if (n == 2 && read_split(json_array_get(list, 0), &regex, o, err)) return -1;
        if (regex && use_regex)
            return err_set(err, "'%s': the pre-tokenizer splits twice (a Split, then ByteLevel's own regex): not supported", o);
    } else if (!pre || json_is_null(pre)) {
        return err_set(err, "'%s' has no pre-tokenizer, so it is not byte-level BPE (that needs ByteLevel)", o);
    } else {
        return err_set(err, "'%s': pre-tokenizer %s is not supported (byte-level BPE needs ByteLevel, alone or after a Split)",
                       o, type_of(pre));
    }
    if (!regex) regex = use_regex ? bpe_pattern_regex("gpt2") : bpe_pattern_regex("none");
    s->regex = regex;
    const char *name = "custom";
    static const char *const named[] = {"gpt4", "gpt2", "none"};
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
        if (strcmp(regex, bpe_pattern_regex(named[i])) == 0) name = named[i];
    snprintf(s->pattern, sizeof s->pattern, "%s", name);
    return 0;
}

/* The parts of a tokenizer.json that would change the ids or the text
 * around the model are refused; truncation and padding are left alone (they
 * shape batches, not the ids of one text). */
static int read_surroundings(const json_t *root, const char *o, Error *err) {
    const json_t *norm = json_object_get(root, "normalizer"), *dec = json_object_get(root, "decoder"),
                 *post = json_object_get(root, "post_processor");
    int no_norm = !norm || json_is_null(norm) ||
                  (is_type(norm, "Sequence") && json_array_size(json_object_get(norm, "normalizers")) == 0);
    if (!no_norm) return err_set(err, "'%s': normalizer %s changes the text before encoding: not supported", o, type_of(norm));
    if (dec && !json_is_null(dec) && !is_type(dec, "ByteLevel"))
        return err_set(err, "'%s': decoder %s is not byte-level: not supported", o, type_of(dec));
    if (post && !json_is_null(post) && !is_type(post, "ByteLevel"))
        return err_set(err, "'%s': post-processor %s adds or changes tokens: not supported", o, type_of(post));
    return 0;
}

static int read_model(const json_t *model, HfSource *s, Error *err) {
    const char *o = s->origin;
    const json_t *type = json_object_get(model, "type"), *dropout = json_object_get(model, "dropout");
    if (type && !is_type(model, "BPE"))
        return err_set(err, "'%s': the model is %s, not BPE: only byte-level BPE tokenizers are read", o, type_of(model));
    if (dropout && !json_is_null(dropout) && !(json_is_number(dropout) && json_number_value(dropout) == 0.0))
        return err_set(err, "'%s': the BPE model has dropout (random merges): not supported", o);
    if (!empty_text(model, "continuing_subword_prefix") || !empty_text(model, "end_of_word_suffix"))
        return err_set(err, "'%s': the BPE model marks word pieces (continuing_subword_prefix or end_of_word_suffix): "
                            "not byte-level BPE", o);
    if (flag(model, "byte_fallback", 0) != 0 || flag(model, "ignore_merges", 0) != 0)
        return err_set(err, "'%s': the BPE model has byte_fallback or ignore_merges: not supported", o);
    s->vocab = json_object_get(model, "vocab");
    const json_t *merges = json_object_get(model, "merges");
    if (!json_is_object(s->vocab) || !json_is_array(merges))
        return err_set(err, "'%s': the BPE model needs a vocab object and a merges list", o);
    for (size_t k = 0; k < json_array_size(merges); k++) {
        const json_t *m = json_array_get(merges, k), *l = json_array_get(m, 0), *r = json_array_get(m, 1);
        int ok = json_is_string(m) ? add_merge_line(s, json_string_value(m), json_string_length(m)) == 0
                                   : json_array_size(m) == 2 && json_is_string(l) && json_is_string(r) &&
                                         json_string_length(l) && json_string_length(r);
        if (ok && !json_is_string(m)) add_merge(s, json_string_value(l), json_string_length(l), json_string_value(r),
                                               json_string_length(r));
        if (!ok) return err_set(err, "'%s': merge %zu is neither \"a b\" nor [\"a\", \"b\"]", o, k);
    }
    return 0;
}

/* Refuses a token longer than TOKEN_BYTES_MAX. */
static int too_long(const char *token, size_t id, const char *o, Error *err) {
    size_t len = strlen(token);
    char a[48];
    if (len <= TOKEN_BYTES_MAX) return 0;
    return err_set(err, "'%s': token '%s' (id %zu) is %zu bytes long, more than the %u a token may be", o, shown(token, a), id,
                   len, TOKEN_BYTES_MAX);
}

/* Polynomial hashes of byte strings modulo the prime 2^61 - 1 (no string
 * family collides for every base, as they do modulo 2^64). */
#define HASH_MOD ((1ull << 61) - 1)
#define HASH_BASE 1000003ull

static uint64_t hash_mul(uint64_t x, uint64_t y) {
    unsigned __int128 p = (unsigned __int128)x * y;
    uint64_t r = (uint64_t)(p & HASH_MOD) + (uint64_t)(p >> 61);
    return r >= HASH_MOD ? r - HASH_MOD : r;
}
static uint64_t hash_sub(uint64_t x, uint64_t y) { return x >= y ? x - y : x + HASH_MOD - y; }
static uint64_t hash_step(uint64_t h, unsigned char byte) {
    uint64_t r = hash_mul(h, HASH_BASE) + byte + 1;
    return r >= HASH_MOD ? r - HASH_MOD : r;
}

/* The hashes of the tokens the bytes and merges make (ids below 256 +
 * merges): a set by open addressing, each slot a hash + 1 (0: empty; a
 * hash is below 2^61 - 1, so + 1 never wraps). Its own, not stb_ds's: that
 * hashes 8-byte keys with int shifts that overflow for high bytes (UBSan). */
typedef struct TokenHashes {
    uint64_t *slot;
    size_t mask;
} TokenHashes;

static int token_hashes_init(TokenHashes *t, const char *const *tokens, size_t n, Error *err) {
    size_t cap = 16;
    while (cap < 2 * n) cap *= 2;
    t->mask = cap - 1;
    t->slot = lm_calloc(cap, sizeof *t->slot, err);
    if (!t->slot) return -1;
    for (size_t i = 0; i < n; i++) {
        uint64_t h = 0;
        for (const unsigned char *p = (const unsigned char *)tokens[i]; *p; p++) h = hash_step(h, *p);
        size_t at = (size_t)h & t->mask;
        while (t->slot[at] && t->slot[at] != h + 1) at = (at + 1) & t->mask;
        t->slot[at] = h + 1;
    }
    return 0;
}

static int token_hashes_has(const TokenHashes *t, uint64_t h) {
    for (size_t at = (size_t)h & t->mask; t->slot[at]; at = (at + 1) & t->mask)
        if (t->slot[at] == h + 1) return 1;
    return 0;
}

/* A vocabulary entry after the merges that no added token names. vocab.json
 * has no other way to hold a special token (GPT-2's <|endoftext|>), but a
 * merges.txt cut short leaves its last merges' tokens there too: an entry
 * that two tokens before it join into, or that is spelled with byte-level
 * stand-ins (U+0100.., for space and control bytes), is taken for such a
 * token and the files for disagreeing. tokenizer.json lists its specials as
 * added tokens, so there every such entry is a disagreement. */
static int check_unlisted(const HfSource *s, const TokenHashes *made, const char *token, size_t id, size_t first,
                          Error *err) {
    const char *o = s->origin;
    char a[48], b[48], c[48];
    size_t n_merges = first - 256, len = strlen(token);
    if (s->added)
        return err_set(err, "'%s': '%s' (id %zu) follows the last of the %zu merges but is not an added token: the "
                            "vocabulary and the merges disagree", o, shown(token, a), id, n_merges);
    if (len == 0) return err_set(err, "'%s': the empty token (id %zu) cannot be a special token", o, id);
    /* Every split into two tokens the merges made, found in linear time: the
     * two halves' hashes from the token's prefix hashes, looked up among the
     * made tokens' hashes, and only a match compared in full. */
    uint64_t *prefix = malloc((len + 1) * sizeof *prefix), *power = malloc((len + 1) * sizeof *power);
    if (!prefix || !power) {
        free(prefix);
        free(power);
        return err_set(err, "out of memory reading '%s'", o);
    }
    prefix[0] = 0;
    power[0] = 1;
    for (size_t i = 0; i < len; i++) {
        prefix[i + 1] = hash_step(prefix[i], (unsigned char)token[i]);
        power[i + 1] = hash_mul(power[i], HASH_BASE);
    }
    int rc = 0;
    for (size_t at = 0; at < len && rc == 0;) {
        uint32_t cp;
        size_t n = utf8_decode((const unsigned char *)token + at, len - at, &cp);
        if (n && cp >= 0x100 && cp < N_BYTE_CHARS) {
            rc = err_set(err, "'%s': '%s' (id %zu) follows the last of the %zu merges but is spelled as byte-level "
                              "text, not a special token: the vocabulary and the merges disagree", o, shown(token, a), id,
                         n_merges);
            break;
        }
        at += n ? n : 1;
        if (at >= len || !token_hashes_has(made, prefix[at]) ||
            !token_hashes_has(made, hash_sub(prefix[len], hash_mul(prefix[at], power[len - at]))))
            continue;
        const json_t *left = json_object_getn(s->vocab, token, at), *right = json_object_get(s->vocab, token + at);
        if (left && right && (size_t)json_integer_value(left) < first && (size_t)json_integer_value(right) < first) {
            char head[48];
            snprintf(head, sizeof head, "%.*s", (int)(at < 40 ? at : 40), token);
            rc = err_set(err, "'%s': '%s' (id %zu) follows the last of the %zu merges but joins '%s' and '%s': a merge "
                              "is missing, the vocabulary and the merges disagree", o, shown(token, a), id, n_merges,
                         shown(head, b), shown(token + at, c));
        }
    }
    free(prefix);
    free(power);
    return rc;
}

/* The vocabulary as our Bpe lays it out: ids 0..255 the bytes, then one
 * token per merge, then the specials. */
typedef struct Layout {
    size_t n_vocab, n_added, n_merges;
    size_t limit;             /* ids 0..limit-1 may be used */
    size_t first;             /* the first id after the merges: 256 + n_merges */
    size_t n_tokens;          /* the bytes, the merges and the specials */
    const char **spelled;     /* [limit]: each vocabulary entry's spelling by id */
    const char **special;     /* [limit]: each special token's text by id */
    uint8_t byte_of_id[256];  /* which byte ids 0..255 stand for */
} Layout;

/* Every vocabulary entry by id: integers from 0, none twice, none too long. */
static int spell_ids(const HfSource *s, Layout *L, Error *err) {
    const char *o = s->origin;
    char a[48], b[48];
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)s->vocab, key, v) {
        size_t id;
        if (!json_is_integer(v)) return err_set(err, "'%s': token '%s' has an id that is not an integer", o, shown(key, a));
        if (json_size(v, L->limit - 1, &id))
            return err_set(err, "'%s': token '%s' has id %lld, outside 0..%zu (ids run from 0 without gaps)", o,
                           shown(key, a), (long long)json_integer_value(v), L->limit - 1);
        if (L->spelled[id])
            return err_set(err, "'%s': tokens '%s' and '%s' both have id %zu", o, shown(L->spelled[id], a), shown(key, b),
                           id);
        L->spelled[id] = key;
    }
    for (size_t id = 0; id < L->limit; id++)
        if (L->spelled[id] && too_long(L->spelled[id], id, o, err)) return -1;
    return 0;
}

/* Ids 0..255: each one character of the byte-level spelling. */
static int read_bytes(const HfSource *s, Layout *L, Error *err) {
    char a[48];
    uint32_t code_point[256];
    int byte_at[N_BYTE_CHARS];
    bpe_byte_chars(code_point);
    for (int i = 0; i < N_BYTE_CHARS; i++) byte_at[i] = -1;
    for (int i = 0; i < 256; i++) byte_at[code_point[i]] = i;
    for (size_t id = 0; id < 256; id++) {
        const char *sp = L->spelled[id];
        uint32_t cp = 0;
        size_t n = sp ? utf8_decode((const unsigned char *)sp, strlen(sp), &cp) : 0;
        if (!sp || !n || sp[n] || cp >= N_BYTE_CHARS || byte_at[cp] < 0)
            return err_set(err, "'%s': id %zu is %s%s%s, not a byte: ids 0..255 must be the 256 bytes in byte-level "
                                "spelling (vocabularies laid out otherwise are not read)", s->origin, id, sp ? "'" : "",
                           sp ? shown(sp, a) : "missing", sp ? "'" : "");
        L->byte_of_id[id] = (uint8_t)byte_at[cp];
    }
    return 0;
}

/* Merge k joins two earlier tokens into the token with id 256 + k. */
static int check_merges(const HfSource *s, const Layout *L, Error *err) {
    const char *o = s->origin;
    char a[48], b[48], c[48], *joined = NULL;
    int rc = 0;
    for (size_t k = 0; k < L->n_merges && !rc; k++) {
        const char *left = s->parts + s->part_at[2 * k], *right = s->parts + s->part_at[2 * k + 1];
        const json_t *lv = json_object_get(s->vocab, left), *rv = json_object_get(s->vocab, right);
        if (!lv || !rv) {
            rc = err_set(err, "'%s': merge %zu ('%s' '%s'): '%s' is not in the vocabulary", o, k, shown(left, a),
                         shown(right, b), lv ? b : a);
            break;
        }
        size_t l = (size_t)json_integer_value(lv), r = (size_t)json_integer_value(rv);
        if (l >= 256 + k || r >= 256 + k) {
            rc = err_set(err, "'%s': merge %zu ('%s' '%s') joins id %zu, made by no earlier merge: the merges must be in "
                              "rank order, merge k making id 256 + k", o, k, shown(left, a), shown(right, b), l > r ? l : r);
            break;
        }
        arrclear(joined);
        size_t ll = strlen(left), rl = strlen(right);
        memcpy(arraddnptr(joined, ll), left, ll);
        memcpy(arraddnptr(joined, rl + 1), right, rl + 1);
        const json_t *jv = json_object_get(s->vocab, joined);
        if (!jv)
            rc = err_set(err, "'%s': merge %zu ('%s' '%s') makes '%s', which is not in the vocabulary", o, k,
                         shown(left, a), shown(right, b), shown(joined, c));
        else if ((size_t)json_integer_value(jv) != 256 + k)
            rc = err_set(err, "'%s': merge %zu makes '%s', which has id %lld, not %zu: the vocabulary must be the 256 "
                              "bytes, then one token per merge in merge order, then the special tokens", o, k,
                         shown(joined, a), (long long)json_integer_value(jv), 256 + k);
    }
    arrfree(joined);
    return rc;
}

/* The added tokens: special, after the merges, agreeing with the vocabulary. */
static int read_added(const HfSource *s, Layout *L, Error *err) {
    const char *o = s->origin;
    char a[48], b[48];
    for (size_t i = 0; i < L->n_added; i++) {
        const json_t *t = json_array_get(s->added, i), *content = json_object_get(t, "content");
        size_t id;
        if (!json_is_string(content) || json_string_length(content) == 0 ||
            json_size(json_object_get(t, "id"), L->limit - 1, &id))
            return err_set(err, "'%s': added token %zu needs a non-empty content and an id from 0 to %zu", o, i,
                           L->limit - 1);
        const char *text = json_string_value(content);
        if (too_long(text, id, o, err)) return -1;
        if (flag(t, "special", 1) != 1)
            return err_set(err, "'%s': added token '%s' is not special: text holding it would encode differently here", o,
                           shown(text, a));
        if (id < L->first)
            return err_set(err, "'%s': added token '%s' has id %zu, among the bytes and merges (0..%zu): special tokens "
                                "must follow the merges", o, shown(text, a), id, L->first - 1);
        if (L->spelled[id] && strcmp(L->spelled[id], text) != 0)
            return err_set(err, "'%s': id %zu is '%s' in the vocabulary but added token '%s'", o, id,
                           shown(L->spelled[id], a), shown(text, b));
        if (L->special[id])
            return err_set(err, "'%s': added tokens '%s' and '%s' both have id %zu", o, shown(L->special[id], a),
                           shown(text, b), id);
        L->special[id] = text;
    }
    return 0;
}

/* The special tokens: the added tokens, and any vocabulary entry after the
 * merges (vocab.json holds GPT-2's <|endoftext|> so) that no merge could
 * have made; their ids without gaps, none twice. */
static int read_specials(const HfSource *s, Layout *L, Error *err) {
    const char *o = s->origin;
    char a[48];
    TokenHashes made = {NULL, 0};
    json_t *seen = json_object();
    int rc = !seen ? err_set(err, "out of memory reading '%s'", o) : read_added(s, L, err) ? -1
             : token_hashes_init(&made, L->spelled, L->first, err) ? -1 : 0;
    for (size_t id = L->first; id < L->limit && !rc; id++) {
        if (!L->spelled[id] || L->special[id]) continue;
        if (check_unlisted(s, &made, L->spelled[id], id, L->first, err)) rc = -1;
        else L->special[id] = L->spelled[id];
    }
    L->n_tokens = L->first;
    while (!rc && L->n_tokens < L->limit && L->special[L->n_tokens]) L->n_tokens++;
    for (size_t id = L->n_tokens; id < L->limit && !rc; id++)
        if (L->special[id])
            rc = err_set(err, "'%s': no token has id %zu, yet id %zu is used (ids run from 0 without gaps)", o,
                         L->n_tokens, id);
    if (!rc && L->n_tokens - L->first > MAX_SPECIALS)
        rc = err_set(err, "'%s': %zu special tokens, more than %d", o, L->n_tokens - L->first, MAX_SPECIALS);
    for (size_t id = L->first; id < L->n_tokens && !rc; id++) {
        if (json_object_get(seen, L->special[id]))
            rc = err_set(err, "'%s': special token '%s' is given twice", o, shown(L->special[id], a));
        else json_object_set_new(seen, L->special[id], json_true());
    }
    free(made.slot);
    json_decref(seen);
    return rc;
}

/* The tokenizer from a checked layout. */
static int make_tokenizer(Tokenizer *tok, const HfSource *s, const Layout *L, Error *err) {
    Bpe bpe;
    if (bpe_init(&bpe, s->pattern, s->regex, err)) return prefix_error(err, s->origin, "");
    int rc = bpe_set_byte_order(&bpe, L->byte_of_id, err);
    for (size_t k = 0; k < L->n_merges && !rc; k++) {
        BpeMerge m = {(uint32_t)json_integer_value(json_object_get(s->vocab, s->parts + s->part_at[2 * k])),
                      (uint32_t)json_integer_value(json_object_get(s->vocab, s->parts + s->part_at[2 * k + 1]))};
        arrput(bpe.merges, m);
    }
    for (size_t id = L->first; id < L->n_tokens && !rc; id++) arrput(bpe.specials, strdup(L->special[id]));
    if (!rc) rc = tokenizer_from_bpe(tok, &bpe, err);
    bpe_free(&bpe);
    return rc;
}

/* Checks that the vocabulary is laid out as our Bpe's (bytes, then one token
 * per merge in merge order, then the specials) and builds the tokenizer. */
static int build(Tokenizer *tok, const HfSource *s, Error *err) {
    Layout L = {.n_vocab = json_object_size(s->vocab), .n_added = json_array_size(s->added),
                .n_merges = arrlenu(s->part_at) / 2};
    L.limit = L.n_vocab + L.n_added, L.first = 256 + L.n_merges;
    if (L.n_merges > MAX_MERGES) return err_set(err, "'%s': %zu merges, more than %u", s->origin, L.n_merges, MAX_MERGES);
    if (L.n_vocab < L.first)
        return err_set(err, "'%s': %zu merges need 256 + %zu tokens, but the vocabulary holds %zu: the vocabulary and "
                            "the merges disagree", s->origin, L.n_merges, L.n_merges, L.n_vocab);
    L.spelled = calloc(L.limit, sizeof *L.spelled), L.special = calloc(L.limit, sizeof *L.special);
    int rc = !L.spelled || !L.special ? err_set(err, "out of memory reading '%s'", s->origin)
             : spell_ids(s, &L, err) || read_bytes(s, &L, err) || check_merges(s, &L, err) ||
                       read_specials(s, &L, err) || make_tokenizer(tok, s, &L, err) ? -1 : 0;
    free(L.spelled);
    free(L.special);
    return rc;
}

static void source_free(HfSource *s) {
    arrfree(s->parts);
    arrfree(s->part_at);
}

int tokenizer_import_hf_json(Tokenizer *tok, const char *text, size_t len, const char *origin, Error *err) {
    memset(tok, 0, sizeof *tok);
    HfSource s = {.origin = origin};
    json_t *root = json_parse(text, len, err);
    if (!root) return prefix_error(err, origin, "");
    int rc = -1;
    const json_t *model = json_object_get(root, "model"), *added = json_object_get(root, "added_tokens");
    if (!json_is_object(model)) {
        err_set(err, "'%s' is not a tokenizer.json: it has no model%s", origin,
                json_is_object(root) && json_object_size(root) > 0 && !json_object_get(root, "version")
                    ? " (for vocab.json + merges.txt, give the directory holding both)" : "");
        goto out;
    }
    if (added && !json_is_null(added) && !json_is_array(added)) {
        err_set(err, "'%s': added_tokens is not a list", origin);
        goto out;
    }
    s.added = json_is_array(added) ? added : NULL;
    if (read_surroundings(root, origin, err) || read_pre_tokenizer(json_object_get(root, "pre_tokenizer"), &s, err) ||
        read_model(model, &s, err))
        goto out;
    rc = build(tok, &s, err);
out:
    source_free(&s);
    json_decref(root);
    return rc;
}

int tokenizer_import_hf_vocab_merges(Tokenizer *tok, const char *vocab_json, size_t vocab_len, const char *merges_txt,
                                     size_t merges_len, const char *origin, Error *err) {
    memset(tok, 0, sizeof *tok);
    HfSource s = {.origin = origin};
    json_t *vocab = json_parse(vocab_json, vocab_len, err);
    if (!vocab) return prefix_error(err, origin, "vocab.json: ");
    int rc = -1;
    if (!json_is_object(vocab)) {
        err_set(err, "'%s': vocab.json is not an object of tokens and their ids", origin);
        goto out;
    }
    s.vocab = vocab;
    /* GPT2Tokenizer's defaults: byte-level with GPT-2's regex, no prefix space. */
    s.regex = bpe_pattern_regex("gpt2");
    snprintf(s.pattern, sizeof s.pattern, "gpt2");
    const char *at = merges_txt, *end = merges_txt + merges_len;
    size_t line_no = 0, blank_from = 0;
    while (at < end) {
        const char *nl = memchr(at, '\n', (size_t)(end - at)), *stop = nl ? nl : end;
        size_t len = (size_t)(stop - at);
        line_no++;
        if (len && at[len - 1] == '\r') len--;
        if (memchr(at, '\0', len)) {
            err_set(err, "'%s': merges.txt line %zu holds a NUL byte", origin, line_no);
            goto out;
        }
        if (line_no == 1 && len >= 8 && memcmp(at, "#version", 8) == 0) {
        } else if (len == 0) {
            if (!blank_from) blank_from = line_no;
        } else if (blank_from) {
            err_set(err, "'%s': merges.txt line %zu is empty", origin, blank_from);
            goto out;
        } else if (add_merge_line(&s, at, len)) {
            err_set(err, "'%s': merges.txt line %zu is not two tokens separated by one space", origin, line_no);
            goto out;
        }
        at = nl ? nl + 1 : end;
    }
    rc = build(tok, &s, err);
out:
    source_free(&s);
    json_decref(vocab);
    return rc;
}

static int is_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int tokenizer_import_hf(Tokenizer *tok, const char *path, Error *err) {
    memset(tok, 0, sizeof *tok);
    struct stat st;
    if (stat(path, &st) != 0) return err_set(err, "cannot open '%s': %s", path, strerror(errno));
    char json_path[PATH_BUF], vocab_path[PATH_BUF], merges_path[PATH_BUF];
    const char *file = path;
    if (S_ISDIR(st.st_mode)) {
        if (path_format(json_path, sizeof json_path, err, "%s/tokenizer.json", path) ||
            path_format(vocab_path, sizeof vocab_path, err, "%s/vocab.json", path) ||
            path_format(merges_path, sizeof merges_path, err, "%s/merges.txt", path))
            return -1;
        if (is_file(json_path)) file = json_path;
        else if (!is_file(vocab_path) || !is_file(merges_path))
            return err_set(err, "'%s' holds no tokenizer: no tokenizer.json, nor vocab.json and merges.txt", path);
        else {
            size_t vocab_len, merges_len;
            char *vocab = read_file(vocab_path, &vocab_len, err), *merges = vocab ? read_file(merges_path, &merges_len, err) : NULL;
            int rc = merges ? tokenizer_import_hf_vocab_merges(tok, vocab, vocab_len, merges, merges_len, path, err) : -1;
            free(vocab);
            free(merges);
            return rc;
        }
    }
    size_t len;
    char *text = read_file(file, &len, err);
    if (!text) return -1;
    int rc = tokenizer_import_hf_json(tok, text, len, file, err);
    free(text);
    return rc;
}

/* ---- any saved tokenizer, ours or Hugging Face's (lm/hf.h) ---- */

int tokenizer_open(Tokenizer *tok, const char *path, Error *err) {
    memset(tok, 0, sizeof *tok);
    struct stat st;
    if (stat(path, &st) != 0) return err_set(err, "cannot open '%s': %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode)) {
        char saved[PATH_BUF];
        if (path_format(saved, sizeof saved, err, "%s/tokenizer.txt", path)) return -1;
        return stat(saved, &st) == 0 ? tokenizer_load(tok, saved, err) : tokenizer_import_hf(tok, path, err);
    }
    size_t len;
    char *text = read_file(path, &len, err);
    if (!text) return -1;
    size_t lead = strspn(text, " \t\r\n");
    int rc;
    if (strncmp(text, TOKENIZER_MAGIC "\n", strlen(TOKENIZER_MAGIC) + 1) == 0) rc = tokenizer_from_text(tok, text, path, err);
    else if (text[lead] == '{') rc = tokenizer_import_hf_json(tok, text, len, path, err);
    else rc = err_set(err, "'%s' is neither a tokenizer.txt nor a tokenizer.json", path);
    free(text);
    return rc;
}
