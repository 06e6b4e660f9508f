#include "data.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOKENS_MAGIC "LMTOKENS"
#define TOKENS_VERSION 1
#define TOKENS_HEADER 32

static void put_u32(unsigned char *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i)); }
static void put_u64(unsigned char *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i)); }
static uint32_t get_u32(const unsigned char *p) { uint32_t v = 0; for (int i = 3; i >= 0; i--) v = v << 8 | p[i]; return v; }
static uint64_t get_u64(const unsigned char *p) { uint64_t v = 0; for (int i = 7; i >= 0; i--) v = v << 8 | p[i]; return v; }

int tokens_write(const char *path, const uint32_t *tokens, size_t n, size_t vocab_size, Error *err) {
    size_t width = vocab_size <= 65536 ? 2 : 4;
    unsigned char *buf = lm_calloc(TOKENS_HEADER + n * width, 1, err);
    if (!buf) return -1;
    memcpy(buf, TOKENS_MAGIC, 8);
    put_u32(buf + 8, TOKENS_VERSION);
    put_u32(buf + 12, (uint32_t)width);
    put_u64(buf + 16, vocab_size);
    put_u64(buf + 24, n);
    for (size_t i = 0; i < n; i++) {
        unsigned char *p = buf + TOKENS_HEADER + i * width;
        if (width == 2) { p[0] = (unsigned char)tokens[i]; p[1] = (unsigned char)(tokens[i] >> 8); }
        else put_u32(p, tokens[i]);
    }
    int rc = write_file_atomic(path, buf, TOKENS_HEADER + n * width, err);
    free(buf);
    return rc;
}

int tokens_read(const char *path, TokenFile *tf, Error *err) {
    memset(tf, 0, sizeof *tf);
    size_t len;
    unsigned char *buf = (unsigned char *)read_file(path, &len, err);
    if (!buf) return -1;
    int rc = -1;
    if (len < TOKENS_HEADER || memcmp(buf, TOKENS_MAGIC, 8) != 0) {
        err_set(err, "'%s' is not a token file (run bin/prepare on a text file first)", path);
        goto done;
    }
    uint32_t version = get_u32(buf + 8), width = get_u32(buf + 12);
    uint64_t vocab = get_u64(buf + 16), n = get_u64(buf + 24);
    if (version != TOKENS_VERSION) {
        err_set(err, "'%s': token file version %u is not supported", path, version);
        goto done;
    }
    if ((width != 2 && width != 4) || vocab == 0 || n > (len - TOKENS_HEADER) / width ||
        TOKENS_HEADER + n * width != len) {
        err_set(err, "'%s': corrupt token file (header says %llu tokens of %u bytes, file has %zu bytes)", path,
                (unsigned long long)n, width, len);
        goto done;
    }
    if (n == 0) {
        err_set(err, "'%s': token file is empty", path);
        goto done;
    }
    tf->tokens = lm_calloc(n, sizeof(uint32_t), err);
    if (!tf->tokens) goto done;
    for (size_t i = 0; i < n; i++) {
        const unsigned char *p = buf + TOKENS_HEADER + i * width;
        uint32_t t = width == 2 ? (uint32_t)(p[0] | p[1] << 8) : get_u32(p);
        if (t >= vocab) {
            err_set(err, "'%s': token %zu has id %u, outside the vocabulary of %llu", path, i, t,
                    (unsigned long long)vocab);
            tokens_free(tf);
            goto done;
        }
        tf->tokens[i] = t;
    }
    tf->n = n;
    tf->vocab_size = vocab;
    rc = 0;
done:
    free(buf);
    return rc;
}

void tokens_free(TokenFile *tf) {
    free(tf->tokens);
    memset(tf, 0, sizeof *tf);
}

int dataset_open(Dataset *ds, const char *dir, int need_test, Error *err) {
    memset(ds, 0, sizeof *ds);
    char path[4096];
    snprintf(path, sizeof path, "%s/tokenizer.txt", dir);
    if (tokenizer_load(&ds->tok, path, err)) return -1;
    const char *names[] = {"train", "val", "test"};
    TokenFile *files[] = {&ds->train, &ds->val, &ds->test};
    for (int i = 0; i < (need_test ? 3 : 2); i++) {
        snprintf(path, sizeof path, "%s/%s.bin", dir, names[i]);
        if (tokens_read(path, files[i], err)) {
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

void batch_sample(const TokenFile *tf, Rng *rng, int32_t *inputs, int32_t *targets, size_t B, size_t T) {
    for (size_t b = 0; b < B; b++) {
        size_t start = (size_t)rng_below(rng, tf->n - T);
        for (size_t t = 0; t < T; t++) {
            inputs[b * T + t] = (int32_t)tf->tokens[start + t];
            targets[b * T + t] = (int32_t)tf->tokens[start + t + 1];
        }
    }
}
