/* A Hugging Face tokenizer's vocabulary, merges and added tokens checked
 * against our Bpe's layout, in linear time however long a token, and the
 * tokenizer built (see tokenizer_source.h). */
#include "hf/tokenizer_source.h"

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

/* Refuses a token longer than TOKEN_BYTES_MAX. */
static int too_long(const char *token, size_t id, const char *o, Error *err) {
    size_t len = strlen(token);
    char a[48];
    if (len <= TOKEN_BYTES_MAX) return 0;
    return err_set(err, "'%s': token '%s' (id %zu) is %zu bytes long, more than the %u a token may be", o, hf_shown(token, a), id,
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
                            "vocabulary and the merges disagree", o, hf_shown(token, a), id, n_merges);
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
                              "text, not a special token: the vocabulary and the merges disagree", o, hf_shown(token, a), id,
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
                              "is missing, the vocabulary and the merges disagree", o, hf_shown(token, a), id, n_merges,
                         hf_shown(head, b), hf_shown(token + at, c));
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
        if (!json_is_integer(v)) return err_set(err, "'%s': token '%s' has an id that is not an integer", o, hf_shown(key, a));
        if (json_size(v, L->limit - 1, &id))
            return err_set(err, "'%s': token '%s' has id %lld, outside 0..%zu (ids run from 0 without gaps)", o,
                           hf_shown(key, a), (long long)json_integer_value(v), L->limit - 1);
        if (L->spelled[id])
            return err_set(err, "'%s': tokens '%s' and '%s' both have id %zu", o, hf_shown(L->spelled[id], a), hf_shown(key, b),
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
                           sp ? hf_shown(sp, a) : "missing", sp ? "'" : "");
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
            rc = err_set(err, "'%s': merge %zu ('%s' '%s'): '%s' is not in the vocabulary", o, k, hf_shown(left, a),
                         hf_shown(right, b), lv ? b : a);
            break;
        }
        size_t l = (size_t)json_integer_value(lv), r = (size_t)json_integer_value(rv);
        if (l >= 256 + k || r >= 256 + k) {
            rc = err_set(err, "'%s': merge %zu ('%s' '%s') joins id %zu, made by no earlier merge: the merges must be in "
                              "rank order, merge k making id 256 + k", o, k, hf_shown(left, a), hf_shown(right, b), l > r ? l : r);
            break;
        }
        arrclear(joined);
        size_t ll = strlen(left), rl = strlen(right);
        memcpy(arraddnptr(joined, ll), left, ll);
        memcpy(arraddnptr(joined, rl + 1), right, rl + 1);
        const json_t *jv = json_object_get(s->vocab, joined);
        if (!jv)
            rc = err_set(err, "'%s': merge %zu ('%s' '%s') makes '%s', which is not in the vocabulary", o, k,
                         hf_shown(left, a), hf_shown(right, b), hf_shown(joined, c));
        else if ((size_t)json_integer_value(jv) != 256 + k)
            rc = err_set(err, "'%s': merge %zu makes '%s', which has id %lld, not %zu: the vocabulary must be the 256 "
                              "bytes, then one token per merge in merge order, then the special tokens", o, k,
                         hf_shown(joined, a), (long long)json_integer_value(jv), 256 + k);
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
        if (hf_flag(t, "special", 1) != 1)
            return err_set(err, "'%s': added token '%s' is not special: text holding it would encode differently here", o,
                           hf_shown(text, a));
        if (id < L->first)
            return err_set(err, "'%s': added token '%s' has id %zu, among the bytes and merges (0..%zu): special tokens "
                                "must follow the merges", o, hf_shown(text, a), id, L->first - 1);
        if (L->spelled[id] && strcmp(L->spelled[id], text) != 0)
            return err_set(err, "'%s': id %zu is '%s' in the vocabulary but added token '%s'", o, id,
                           hf_shown(L->spelled[id], a), hf_shown(text, b));
        if (L->special[id])
            return err_set(err, "'%s': added tokens '%s' and '%s' both have id %zu", o, hf_shown(L->special[id], a),
                           hf_shown(text, b), id);
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
            rc = err_set(err, "'%s': special token '%s' is given twice", o, hf_shown(L->special[id], a));
        else json_object_set_new(seen, L->special[id], json_true());
    }
    free(made.slot);
    json_decref(seen);
    return rc;
}

/* The tokenizer from a checked layout. */
static int make_tokenizer(Tokenizer *tok, const HfSource *s, const Layout *L, Error *err) {
    Bpe bpe;
    if (bpe_init(&bpe, s->pattern, s->regex, err)) return hf_prefix_error(err, s->origin, "");
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

int hf_tokenizer_build(Tokenizer *tok, const HfSource *s, Error *err) {
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
