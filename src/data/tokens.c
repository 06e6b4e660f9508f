#include "lm/tokens.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lm/ds.h"
#include "lm/files.h"

#define TOKENS_MAGIC "LMTOKENS"
#define TOKENS_VERSION 1       /* the tokens alone */
#define TOKENS_VERSION_SPANS 2 /* the tokens, then the text of those that are not their table bytes */
#define TOKENS_HEADER 32
#define SPAN_BYTES 12          /* u64 index + u32 bytes */

static void put_u32(unsigned char *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i)); }
static void put_u64(unsigned char *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i)); }
static uint32_t get_u32(const unsigned char *p) { uint32_t v = 0; for (int i = 3; i >= 0; i--) v = v << 8 | p[i]; return v; }
static uint64_t get_u64(const unsigned char *p) { uint64_t v = 0; for (int i = 7; i >= 0; i--) v = v << 8 | p[i]; return v; }

size_t tokens_width(size_t vocab_size) { return vocab_size <= 65536 ? 2 : 4; }

static void header(unsigned char *h, uint32_t version, size_t width, size_t vocab_size, size_t n) {
    memcpy(h, TOKENS_MAGIC, 8);
    put_u32(h + 8, version);
    put_u32(h + 12, (uint32_t)width);
    put_u64(h + 16, vocab_size);
    put_u64(h + 24, n);
}

int token_writer_open(TokenWriter *w, const char *path, size_t vocab_size, Error *err) {
    memset(w, 0, sizeof *w);
    if (path_format(w->path, sizeof w->path, err, "%s", path)) return -1;
    w->f = temp_create(path, w->tmp, sizeof w->tmp, err);
    if (!w->f) return -1;
    w->width = tokens_width(vocab_size);
    w->vocab_size = vocab_size;
    unsigned char h[TOKENS_HEADER];
    header(h, TOKENS_VERSION, w->width, vocab_size, 0); /* the count (and version) is filled in on close */
    if (fwrite(h, 1, sizeof h, w->f) != sizeof h) {
        int e = errno;
        token_writer_abort(w);
        return err_set(err, "cannot write '%s': %s", path, strerror(e));
    }
    return 0;
}

static int flush(TokenWriter *w, Error *err) {
    size_t len = arrlenu(w->buf);
    if (len && fwrite(w->buf, 1, len, w->f) != len) return err_set(err, "cannot write '%s': %s", w->path, strerror(errno));
    arrclear(w->buf);
    return 0;
}

int token_writer_add(TokenWriter *w, const uint32_t *ids, size_t n, Error *err) {
    size_t bytes = n * w->width;
    unsigned char *p = arraddnptr(w->buf, bytes);
    for (size_t i = 0; i < n; i++, p += w->width) {
        if (w->width == 2) { p[0] = (unsigned char)ids[i]; p[1] = (unsigned char)(ids[i] >> 8); }
        else put_u32(p, ids[i]);
    }
    w->n += n;
    return arrlenu(w->buf) >= (1u << 20) ? flush(w, err) : 0;
}

int token_writer_add_text(TokenWriter *w, const Tokenizer *tok, const char *text, size_t len, const uint32_t *ids,
                          size_t n, Error *err) {
    tokenizer_text_spans(tok, text, len, ids, n, w->n, &w->spans);
    return token_writer_add(w, ids, n, err);
}

/* Version 2's trailer: the count, the indices, the bytes. */
static void put_spans(TokenWriter *w) {
    size_t k = arrlenu(w->spans);
    unsigned char *p = arraddnptr(w->buf, 8 + k * SPAN_BYTES);
    put_u64(p, k);
    p += 8;
    for (size_t i = 0; i < k; i++, p += 8) put_u64(p, w->spans[i].at);
    for (size_t i = 0; i < k; i++, p += 4) put_u32(p, w->spans[i].bytes);
}

int token_writer_close(TokenWriter *w, Error *err) {
    unsigned char h[TOKENS_HEADER];
    header(h, w->spans ? TOKENS_VERSION_SPANS : TOKENS_VERSION, w->width, w->vocab_size, w->n);
    if (w->spans) put_spans(w);
    errno = 0;
    int failed = flush(w, err) != 0 || fseek(w->f, 0, SEEK_SET) != 0 || fwrite(h, 1, sizeof h, w->f) != sizeof h;
    int rc = temp_commit(w->f, w->tmp, w->path, failed, err);
    w->f = NULL;
    arrfree(w->buf);
    arrfree(w->spans);
    return rc;
}

void token_writer_abort(TokenWriter *w) {
    if (w->f) {
        fclose(w->f);
        unlink(w->tmp);
    }
    w->f = NULL;
    arrfree(w->buf);
    arrfree(w->spans);
}

int tokens_write(const char *path, const uint32_t *tokens, size_t n, size_t vocab_size, Error *err) {
    TokenWriter w;
    if (token_writer_open(&w, path, vocab_size, err)) return -1;
    if (token_writer_add(&w, tokens, n, err)) {
        token_writer_abort(&w);
        return -1;
    }
    return token_writer_close(&w, err);
}

/* Version 2's trailer (p, len bytes) into tf->spans: every index below the
 * n tokens, in increasing order, and nothing after the byte counts. */
static int read_spans(TokenFile *tf, const unsigned char *p, size_t len, uint64_t n, const char *path, Error *err) {
    uint64_t k = len >= 8 ? get_u64(p) : 0;
    if (len < 8 || k == 0 || k > n || k > (len - 8) / SPAN_BYTES || 8 + k * SPAN_BYTES != len)
        return err_set(err, "'%s': corrupt token file (its list of tokens' text does not fit the file)", path);
    tf->spans = lm_calloc(k, sizeof *tf->spans, err);
    if (!tf->spans) return -1;
    tf->n_spans = k;
    for (size_t i = 0; i < k; i++) {
        TokenSpan *s = &tf->spans[i];
        s->at = get_u64(p + 8 + 8 * i);
        s->bytes = get_u32(p + 8 + 8 * k + 4 * i);
        if (s->at >= n || (i > 0 && s->at <= s[-1].at))
            return err_set(err, "'%s': corrupt token file (the text of token %llu is recorded %s)", path,
                           (unsigned long long)s->at, s->at >= n ? "but there is no such token" : "out of order");
    }
    return 0;
}

int tokens_read(const char *path, TokenFile *tf, Error *err) {
    memset(tf, 0, sizeof *tf);
    size_t len;
    int fd = open_input(path, &len, err);
    if (fd < 0) return -1;
    const unsigned char *buf = len ? mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
    close(fd);
    if (buf == MAP_FAILED) return err_set(err, "cannot map '%s': %s", path, strerror(errno));
    tf->map = (void *)buf;
    tf->map_len = len;
    if (len < TOKENS_HEADER || memcmp(buf, TOKENS_MAGIC, 8) != 0) {
        tokens_free(tf);
        return err_set(err, "'%s' is not a token file (run bin/prepare on a text file first)", path);
    }
    uint32_t version = get_u32(buf + 8), width = get_u32(buf + 12);
    uint64_t vocab = get_u64(buf + 16), n = get_u64(buf + 24);
    if (version != TOKENS_VERSION && version != TOKENS_VERSION_SPANS) {
        tokens_free(tf);
        return err_set(err, "'%s': token file version %u is not supported", path, version);
    }
    size_t tokens_end = TOKENS_HEADER + (size_t)n * width; /* checked below before use */
    int sized = (width == 2 || width == 4) && vocab != 0 && n <= (len - TOKENS_HEADER) / width &&
                (version == TOKENS_VERSION ? tokens_end == len : tokens_end <= len);
    if (!sized) {
        tokens_free(tf);
        return err_set(err, "'%s': corrupt token file (header says %llu tokens of %u bytes, file has %zu bytes)", path,
                       (unsigned long long)n, width, len);
    }
    if (version == TOKENS_VERSION_SPANS && read_spans(tf, buf + tokens_end, len - tokens_end, n, path, err)) {
        tokens_free(tf);
        return -1;
    }
    if (n == 0) {
        tokens_free(tf);
        return err_set(err, "'%s': token file is empty", path);
    }
    tf->data = buf + TOKENS_HEADER;
    tf->width = width;
    tf->n = n;
    tf->vocab_size = vocab;
    madvise(tf->map, len, MADV_SEQUENTIAL); /* the check below reads it once, in order */
    for (size_t i = 0; i < n; i++) {
        uint32_t t = token_at(tf, i);
        if (t >= vocab) {
            tokens_free(tf);
            return err_set(err, "'%s': token %zu has id %u, outside the vocabulary of %llu", path, i, t,
                           (unsigned long long)vocab);
        }
    }
    madvise(tf->map, len, MADV_RANDOM); /* training reads random windows */
    return 0;
}

uint32_t *tokens_copy_u32(const TokenFile *tf, size_t from, size_t n, Error *err) {
    uint32_t *out = lm_calloc(n, sizeof(uint32_t), err);
    if (out)
        for (size_t i = 0; i < n; i++) out[i] = token_at(tf, from + i);
    return out;
}

int tokens_from_text(TokenFile *tf, const Tokenizer *tok, const char *text, size_t len, Error *err) {
    memset(tf, 0, sizeof *tf);
    uint32_t *ids = NULL;
    TokenSpan *spans = NULL;
    tokenizer_encode(tok, text, len, &ids);
    tokenizer_text_spans(tok, text, len, ids, arrlenu(ids), 0, &spans);
    size_t n = arrlenu(ids), k = arrlenu(spans);
    tf->owned = lm_calloc(n ? n : 1, sizeof(uint32_t), err);
    tf->spans = tf->owned && k ? lm_calloc(k, sizeof *spans, err) : NULL;
    int rc = !tf->owned || (k && !tf->spans) ? -1 : 0;
    if (rc == 0) {
        if (n) memcpy(tf->owned, ids, n * sizeof(uint32_t));
        if (k) memcpy(tf->spans, spans, k * sizeof *spans);
        tf->data = tf->owned;
        tf->width = 4;
        tf->n = n;
        tf->vocab_size = tok->vocab_size;
        tf->n_spans = k;
    } else {
        tokens_free(tf);
    }
    arrfree(ids);
    arrfree(spans);
    return rc;
}

void tokens_free(TokenFile *tf) {
    if (tf->map) munmap(tf->map, tf->map_len);
    free(tf->owned);
    free(tf->spans);
    memset(tf, 0, sizeof *tf);
}

/* The first span at index >= i. */
static size_t first_span(const TokenFile *tf, size_t i) {
    size_t lo = 0, hi = tf->n_spans;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (tf->spans[mid].at < i) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

size_t tokens_token_bytes(const TokenFile *tf, const Tokenizer *tok, size_t i) {
    size_t s = first_span(tf, i);
    if (s < tf->n_spans && tf->spans[s].at == i) return tf->spans[s].bytes;
    return tokenizer_token_bytes(tok, token_at(tf, i));
}

size_t tokens_text_bytes(const TokenFile *tf, const Tokenizer *tok, size_t from, size_t n) {
    size_t bytes = 0;
    for (size_t i = from; i < from + n; i++) bytes += tokenizer_token_bytes(tok, token_at(tf, i));
    for (size_t s = first_span(tf, from); s < tf->n_spans && tf->spans[s].at < from + n; s++)
        bytes = bytes - tokenizer_token_bytes(tok, token_at(tf, tf->spans[s].at)) + tf->spans[s].bytes;
    return bytes;
}

int dataset_open(Dataset *ds, const char *dir, int need_test, Error *err) {
    memset(ds, 0, sizeof *ds);
    char path[PATH_BUF];
    if (path_format(path, sizeof path, err, "%s/tokenizer.txt", dir) || tokenizer_load(&ds->tok, path, err)) return -1;
    const char *names[] = {"train", "val", "test"};
    TokenFile *files[] = {&ds->train, &ds->val, &ds->test};
    for (int i = 0; i < (need_test ? 3 : 2); i++) {
        if (path_format(path, sizeof path, err, "%s/%s.bin", dir, names[i]) || tokens_read(path, files[i], err)) {
            dataset_free(ds);
            return -1;
        }
        if (files[i]->vocab_size != ds->tok.vocab_size) {
            err_set(err, "'%s' has vocabulary %zu but the tokenizer in '%s' has %zu", path, files[i]->vocab_size,
                    dir, ds->tok.vocab_size);
            dataset_free(ds);
            return -1;
        }
    }
    return 0;
}

void dataset_free(Dataset *ds) {
    tokens_free(&ds->train);
    tokens_free(&ds->val);
    tokens_free(&ds->test);
    tokenizer_free(&ds->tok);
}

/* 64-bit words (little-endian, the tail zero-padded) mixed as FNV-1a mixes
 * bytes: eight times FNV's speed over a large corpus; it detects accidents. */
static uint64_t hash_bytes(uint64_t h, const unsigned char *p, size_t len) {
    size_t i = 0;
    for (; i + 8 <= len; i += 8) h = (h ^ get_u64(p + i)) * 0x100000001b3ULL;
    unsigned char tail[8] = {0};
    if (i < len) memcpy(tail, p + i, len - i);
    h = (h ^ get_u64(tail)) * 0x100000001b3ULL;
    return (h ^ len) * 0x100000001b3ULL;
}

void dataset_hash(const Dataset *ds, char out[17]) {
    uint64_t h = 0xcbf29ce484222325ULL;
    const TokenFile *files[] = {&ds->train, &ds->val};
    for (size_t i = 0; i < 2; i++) {
        const TokenFile *tf = files[i];
        if (!tf->map) continue;
        madvise(tf->map, tf->map_len, MADV_SEQUENTIAL);
        h = hash_bytes(h, tf->map, tf->map_len);
        madvise(tf->map, tf->map_len, MADV_RANDOM);
    }
    snprintf(out, 17, "%016llx", (unsigned long long)h);
}

void data_paths(const char *data, const char *split, char *tokens, char *tokenizer, size_t len) {
    struct stat st;
    if (stat(data, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(tokens, len, "%s/%s.bin", data, split);
        snprintf(tokenizer, len, "%s/tokenizer.txt", data);
    } else {
        snprintf(tokens, len, "%s", data);
        const char *slash = strrchr(data, '/');
        snprintf(tokenizer, len, "%.*stokenizer.txt", slash ? (int)(slash - data + 1) : 0, data);
    }
}

int tokens_check_tokenizer(const TokenFile *tf, const char *tf_path, const char *tok_path, const Tokenizer *model,
                           Error *err) {
    if (access(tok_path, F_OK) != 0) {
        if (tf->vocab_size != model->vocab_size)
            return err_set(err, "'%s' has vocabulary %zu but the model has %zu", tf_path, tf->vocab_size,
                           model->vocab_size);
        return 0;
    }
    Tokenizer data;
    if (tokenizer_load(&data, tok_path, err)) return -1;
    int same = strcmp(data.hash, model->hash) == 0;
    if (!same) err_set(err, "the model's tokenizer (%s) does not match '%s' (%s)", model->hash, tok_path, data.hash);
    tokenizer_free(&data);
    return same ? 0 : -1;
}
