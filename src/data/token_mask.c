/* Mask files: which tokens of a token file are scored (see token_mask.h). */
#include "lm/token_mask.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lm/files.h"

#define MASK_MAGIC "LMMASK\0\0"
#define MASK_VERSION 1
#define MASK_HEADER 24

int mask_write(const char *path, const uint8_t *marked, size_t n, Error *err) {
    unsigned char *buf = lm_calloc(MASK_HEADER + n, 1, err);
    if (!buf) return -1;
    memcpy(buf, MASK_MAGIC, 8);
    for (int i = 0; i < 4; i++) buf[8 + i] = (unsigned char)(MASK_VERSION >> (8 * i));
    for (int i = 0; i < 8; i++) buf[16 + i] = (unsigned char)((uint64_t)n >> (8 * i));
    for (size_t i = 0; i < n; i++) buf[MASK_HEADER + i] = marked[i] ? 1 : 0;
    int rc = write_file_atomic(path, buf, MASK_HEADER + n, err);
    free(buf);
    return rc;
}

int mask_read(const char *path, TokenMask *mask, Error *err) {
    memset(mask, 0, sizeof *mask);
    size_t len;
    unsigned char *buf = (unsigned char *)read_file(path, &len, err);
    if (!buf) return -1;
    int rc = -1;
    if (len < MASK_HEADER || memcmp(buf, MASK_MAGIC, 8) != 0) {
        err_set(err, "'%s' is not a mask file", path);
        goto done;
    }
    uint32_t version = 0;
    uint64_t n = 0;
    for (int i = 3; i >= 0; i--) version = version << 8 | buf[8 + i];
    for (int i = 7; i >= 0; i--) n = n << 8 | buf[16 + i];
    if (version != MASK_VERSION) {
        err_set(err, "'%s': mask file version %u is not supported", path, version);
        goto done;
    }
    if (n != len - MASK_HEADER) {
        err_set(err, "'%s': corrupt mask file (header says %llu tokens, file has %zu bytes after the header)", path,
                (unsigned long long)n, len - MASK_HEADER);
        goto done;
    }
    for (size_t i = 0; i < n; i++)
        if (buf[MASK_HEADER + i] > 1) {
            err_set(err, "'%s': byte %zu is %u; a mask holds only 0 and 1", path, i, buf[MASK_HEADER + i]);
            goto done;
        }
    mask->marked = lm_calloc(n ? n : 1, 1, err);
    if (!mask->marked) goto done;
    memcpy(mask->marked, buf + MASK_HEADER, n);
    mask->n = n;
    rc = 0;
done:
    free(buf);
    return rc;
}

void mask_free(TokenMask *mask) {
    free(mask->marked);
    memset(mask, 0, sizeof *mask);
}

void mask_path_for(const char *token_path, char *out, size_t len) {
    size_t n = strlen(token_path);
    if (n >= 4 && strcmp(token_path + n - 4, ".bin") == 0) snprintf(out, len, "%.*s.mask", (int)(n - 4), token_path);
    else snprintf(out, len, "%s.mask", token_path);
}

int mask_open_for(TokenMask *mask, const char *given, const char *token_path, size_t n, char *path, size_t len,
                  Error *err) {
    memset(mask, 0, sizeof *mask);
    if (given) snprintf(path, len, "%s", given);
    else mask_path_for(token_path, path, len);
    if (!given && access(path, F_OK) != 0) return 0; /* no mask: every token is scored */
    if (mask_read(path, mask, err)) return -1;
    if (mask->n == n) return 0;
    err_set(err, "mask '%s' has %zu entries but '%s' has %zu tokens", path, mask->n, token_path, n);
    mask_free(mask);
    return -1;
}
