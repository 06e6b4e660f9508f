/* The "bpe" tokenizer kind: a Bpe and its saved form.
 *
 *   pattern <name>
 *   regex <the split regex, rest of the line; empty for none>
 *   specials <K>
 *   <each special token's bytes in hexadecimal>   (K lines)
 *   merges <M>
 *   <left id> <right id>                          (M lines; merge k makes id 256 + k)
 *   byte-order <the bytes of ids 0..255>          (only when not 0 1 2 ... 255)
 *
 * The vocabulary is 256 + M + K; the specials take the last K ids. The
 * byte-order line comes last and only for imported tokenizers, so every
 * learned tokenizer's text, and its hash, is what it was before the line
 * existed. */
#include "lm/bpe.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lm/json.h"
#include "lm/ds.h"

int bpe_init(Bpe *b, const char *pattern_name, const char *regex, Error *err) {
    memset(b, 0, sizeof *b);
    /* The saved form keeps the regex on one line; PCRE2 reads \n and \r as the characters. */
    if (strpbrk(regex, "\r\n")) return err_set(err, "the split regex holds a line break (write it as \\n or \\r)");
    for (int i = 0; i < 256; i++) {
        b->byte_of_id[i] = (uint8_t)i;
        b->id_of_byte[i] = (uint32_t)i;
    }
    snprintf(b->pattern, sizeof b->pattern, "%s", pattern_name);
    b->regex = strdup(regex);
    if (!b->regex) return err_set(err, "out of memory");
    if (pretok_init(&b->pre, regex, err)) {
        free(b->regex);
        b->regex = NULL;
        return -1;
    }
    return 0;
}

int bpe_set_byte_order(Bpe *b, const uint8_t byte_of_id[256], Error *err) {
    int seen[256] = {0};
    for (int i = 0; i < 256; i++)
        if (seen[byte_of_id[i]]++) return err_set(err, "byte 0x%02x stands for two ids", byte_of_id[i]);
    for (int i = 0; i < 256; i++) {
        b->byte_of_id[i] = byte_of_id[i];
        b->id_of_byte[byte_of_id[i]] = (uint32_t)i;
    }
    return 0;
}

int bpe_bytes_in_order(const Bpe *b) {
    for (int i = 0; i < 256; i++)
        if (b->byte_of_id[i] != i) return 0;
    return 1;
}

void bpe_index(Bpe *b) {
    hmfree(b->ranks);
    for (size_t k = 0; k < arrlenu(b->merges); k++)
        hmput(b->ranks, (uint64_t)b->merges[k].left << 32 | b->merges[k].right, (uint32_t)(256 + k));
    if (!b->caches) {
        b->n_caches = (size_t)omp_get_max_threads();
        b->caches = calloc(b->n_caches, sizeof(BpeCache));
    }
}

void bpe_free(Bpe *b) {
    for (size_t i = 0; i < b->n_caches; i++) {
        byte_table_free(&b->caches[i].pieces);
        arrfree(b->caches[i].ids);
        arrfree(b->caches[i].starts);
    }
    free(b->caches);
    for (size_t i = 0; i < arrlenu(b->specials); i++) free(b->specials[i]);
    arrfree(b->specials);
    arrfree(b->merges);
    hmfree(b->ranks);
    pretok_free(&b->pre);
    free(b->regex);
    memset(b, 0, sizeof *b);
}

/* The token table from the merges and specials; takes ownership of b. */
static void bpe_table(Tokenizer *tok, Bpe *b) {
    tok->kind = &tokenizer_bpe;
    tok->impl = b;
    bpe_index(b);
    for (int i = 0; i < 256; i++) {
        char c = (char)b->byte_of_id[i];
        tokenizer_table_add(tok, &c, 1, 0);
    }
    char *buf = NULL;
    for (size_t k = 0; k < arrlenu(b->merges); k++) {
        size_t ll, rl;
        const char *l = tokenizer_token(tok, b->merges[k].left, &ll);
        arrclear(buf);
        memcpy(arraddnptr(buf, ll), l, ll); /* copy first: adding may move the table */
        const char *r = tokenizer_token(tok, b->merges[k].right, &rl);
        memcpy(arraddnptr(buf, rl), r, rl);
        tokenizer_table_add(tok, buf, ll + rl, 0);
    }
    arrfree(buf);
    for (size_t i = 0; i < arrlenu(b->specials); i++) tokenizer_table_add(tok, b->specials[i], strlen(b->specials[i]), 1);
    tokenizer_finish(tok);
}

int tokenizer_from_bpe(Tokenizer *tok, Bpe *b, Error *err) {
    memset(tok, 0, sizeof *tok);
    Bpe *own = malloc(sizeof *own);
    if (!own) return err_set(err, "out of memory");
    *own = *b;
    memset(b, 0, sizeof *b);
    bpe_table(tok, own);
    return 0;
}

const Bpe *tokenizer_bpe_of(const Tokenizer *tok) { return tok->kind == &tokenizer_bpe ? tok->impl : NULL; }

static const char *line_end(const char *s) {
    const char *e = strchr(s, '\n');
    return e ? e : s + strlen(s);
}

static int parse_hex(const char *s, const char *end, char **out) {
    size_t n = (size_t)(end - s);
    if (n == 0 || n % 2) return -1;
    char *str = malloc(n / 2 + 1);
    for (size_t i = 0; i < n / 2; i++) {
        unsigned v;
        if (sscanf(s + 2 * i, "%2x", &v) != 1 || v == 0) {
            free(str);
            return -1;
        }
        str[i] = (char)v;
    }
    str[n / 2] = '\0';
    *out = str;
    return 0;
}

/* The byte-order line's numbers from s; *end gets the next line. A line that
 * gives the identity is refused: it is never written, so the saved form
 * (and the hash) of a tokenizer stays one text. */
static int parse_byte_order(Bpe *b, const char *s, const char **end) {
    uint8_t order[256];
    for (int i = 0; i < 256; i++) {
        char *e;
        if (*s < '0' || *s > '9') return -1;
        unsigned long v = strtoul(s, &e, 10);
        if (v > 255 || e - s > 3 || *e != (i == 255 ? '\n' : ' ')) return -1;
        order[i] = (uint8_t)v;
        s = e + 1;
    }
    Error ignored;
    if (bpe_set_byte_order(b, order, &ignored) || bpe_bytes_in_order(b)) return -1;
    *end = s;
    return 0;
}

static int bpe_parse(Tokenizer *tok, const char *body, size_t vocab, const char *origin, Error *err) {
    (void)vocab;
    char name[32];
    const char *cur = body, *end;
    size_t count;
    int n = 0;
    if (sscanf(cur, "pattern %31s\n%n", name, &n) != 1 || n == 0 || strncmp(cur + n, "regex ", 6) != 0)
        return err_set(err, "'%s' is corrupt: no pattern and regex lines", origin);
    cur += n + 6;
    end = line_end(cur);
    if (!*end) return err_set(err, "'%s' is corrupt: it ends after the regex", origin);
    char *regex = strndup(cur, (size_t)(end - cur));
    Bpe *b = calloc(1, sizeof *b);
    int rc = bpe_init(b, name, regex, err);
    free(regex);
    if (rc) {
        free(b);
        char why[sizeof err->msg];
        snprintf(why, sizeof why, "%s", err->msg);
        return err_set(err, "'%s' is corrupt: %s", origin, why);
    }
    tok->kind = &tokenizer_bpe;
    tok->impl = b; /* freed by tokenizer_free on any error below */
    cur = end + 1;
    n = 0;
    if (sscanf(cur, "specials %zu\n%n", &count, &n) != 1 || n == 0 || count > 65536)
        return err_set(err, "'%s' is corrupt: bad specials line", origin);
    cur += n;
    for (size_t i = 0; i < count; i++) {
        end = line_end(cur);
        char *special;
        if (!*end || parse_hex(cur, end, &special)) return err_set(err, "'%s' is corrupt: bad special token %zu", origin, i);
        arrput(b->specials, special);
        cur = end + 1;
    }
    n = 0;
    if (sscanf(cur, "merges %zu\n%n", &count, &n) != 1 || n == 0 || count > (1u << 24))
        return err_set(err, "'%s' is corrupt: bad merges line", origin);
    cur += n;
    for (size_t k = 0; k < count; k++) {
        char *e1, *e2 = NULL;
        unsigned long l = strtoul(cur, &e1, 10), r = e1 > cur && *e1 == ' ' ? strtoul(e1 + 1, &e2, 10) : 0;
        if (e1 == cur || *e1 != ' ' || e2 == e1 + 1 || *e2 != '\n' || l >= 256 + k || r >= 256 + k)
            return err_set(err, "'%s' is corrupt: bad merge %zu (each joins two earlier tokens)", origin, k);
        BpeMerge m = {(uint32_t)l, (uint32_t)r};
        arrput(b->merges, m);
        cur = e2 + 1;
    }
    if (strncmp(cur, "byte-order ", 11) == 0 && parse_byte_order(b, cur + 11, &cur))
        return err_set(err, "'%s' is corrupt: bad byte-order line (the 256 bytes, each once, not in order)", origin);
    if (*cur) return err_set(err, "'%s' is corrupt: text after the last merge", origin);
    bpe_table(tok, b);
    return 0;
}

static void bpe_serialize(const Tokenizer *tok, char **sb) {
    const Bpe *b = tok->impl;
    sb_appendf(sb, "pattern %s\nregex %s\nspecials %zu\n", b->pattern, b->regex, (size_t)arrlenu(b->specials));
    for (size_t i = 0; i < arrlenu(b->specials); i++) {
        for (const unsigned char *p = (const unsigned char *)b->specials[i]; *p; p++) sb_appendf(sb, "%02x", *p);
        sb_appendf(sb, "\n");
    }
    sb_appendf(sb, "merges %zu\n", (size_t)arrlenu(b->merges));
    for (size_t k = 0; k < arrlenu(b->merges); k++) sb_appendf(sb, "%u %u\n", b->merges[k].left, b->merges[k].right);
    if (bpe_bytes_in_order(b)) return;
    sb_appendf(sb, "byte-order");
    for (int i = 0; i < 256; i++) sb_appendf(sb, " %u", b->byte_of_id[i]);
    sb_appendf(sb, "\n");
}

/* Special tokens inside the text are ordinary text here (like tiktoken's
 * encode_ordinary): they only enter token files as document separators. */
static void bpe_kind_encode(const Tokenizer *tok, const char *text, size_t len, uint32_t **ids) {
    bpe_encode(tok->impl, text, len, ids);
}

static void bpe_kind_free(Tokenizer *tok) {
    if (!tok->impl) return;
    bpe_free(tok->impl);
    free(tok->impl);
}

const TokenizerKind tokenizer_bpe = {
    .name = "bpe", .unit = "token", .unknown = -1, .parse = bpe_parse, .serialize = bpe_serialize,
    .encode = bpe_kind_encode, .free_impl = bpe_kind_free};
