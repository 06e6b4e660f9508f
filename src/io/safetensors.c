/* safetensors files: writing with a checksum, reading with every offset and the checksum checked (see io/safetensors.h). */
#include "io/safetensors.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/files.h"
#include "runtime/hash.h"

#define CHECKSUM_KEY "\"checksum\":\"fnv1a64:"
#define CHECKSUM_DIGITS 16

static size_t tensor_bytes(const StTensor *t) {
    size_t n = 4;
    for (size_t d = 0; d < t->ndim; d++) n *= t->shape[d];
    return n;
}

static uint64_t file_checksum(const char *buf, size_t len, size_t digits_at) {
    uint64_t h = fnv1a(FNV_OFFSET, buf, digits_at);
    h = fnv1a(h, "0000000000000000", CHECKSUM_DIGITS);
    return fnv1a(h, buf + digits_at + CHECKSUM_DIGITS, len - digits_at - CHECKSUM_DIGITS);
}

int st_write(const char *path, const StTensor *tensors, size_t n, const StMeta *meta, size_t n_meta, Error *err) {
    char *h = NULL;
    sb_appendf(&h, "{\"__metadata__\":{" CHECKSUM_KEY "0000000000000000\"");
    for (size_t i = 0; i < n_meta; i++) {
        sb_appendf(&h, ",");
        sb_append_json_string(&h, meta[i].key);
        sb_appendf(&h, ":");
        sb_append_json_string(&h, meta[i].value);
    }
    sb_appendf(&h, "}");
    size_t offset = 0;
    for (size_t i = 0; i < n; i++) {
        const StTensor *t = &tensors[i];
        sb_appendf(&h, ",");
        sb_append_json_string(&h, t->name);
        sb_appendf(&h, ":{\"dtype\":\"%s\",\"shape\":[", t->dtype == ST_F32 ? "F32" : "I32");
        for (size_t d = 0; d < t->ndim; d++) sb_appendf(&h, "%s%zu", d ? "," : "", t->shape[d]);
        sb_appendf(&h, "],\"data_offsets\":[%zu,%zu]}", offset, offset + tensor_bytes(t));
        offset += tensor_bytes(t);
    }
    sb_appendf(&h, "}");
    while ((strlen(h) + 8) % 8) sb_appendf(&h, " ");
    size_t hlen = strlen(h), total = 8 + hlen + offset;
    char *buf = lm_calloc(total, 1, err);
    if (!buf) {
        sb_free(&h);
        return -1;
    }
    for (int i = 0; i < 8; i++) buf[i] = (char)((uint64_t)hlen >> (8 * i));
    memcpy(buf + 8, h, hlen);
    sb_free(&h);
    char *data = buf + 8 + hlen;
    for (size_t i = 0; i < n; i++) {
        /* x86 and every target we build for are little-endian, as the format is. */
        memcpy(data, tensors[i].data, tensor_bytes(&tensors[i]));
        data += tensor_bytes(&tensors[i]);
    }
    size_t at = (size_t)(strstr(buf + 8, CHECKSUM_KEY) - buf) + strlen(CHECKSUM_KEY);
    char digits[CHECKSUM_DIGITS + 1];
    snprintf(digits, sizeof digits, "%016" PRIx64, file_checksum(buf, total, at));
    memcpy(buf + at, digits, CHECKSUM_DIGITS);
    int rc = write_file_atomic(path, buf, total, err);
    free(buf);
    return rc;
}

/* The header length in a file's first 8 bytes (0 if it has fewer). */
static uint64_t st_header_len(const char *buf, size_t len) {
    uint64_t hlen = 0;
    for (int i = 7; i >= 0 && len >= 8; i--) hlen = hlen << 8 | (unsigned char)buf[i];
    return hlen;
}

/* Parses the header in f->buf (f->len bytes: the whole file or only its
 * head) of a file of file_len bytes. */
static int st_parse_header(StFile *f, size_t file_len, const char *path, Error *err) {
    uint64_t hlen = st_header_len(f->buf, f->len);
    if (f->len < 8 || hlen < 2 || hlen > file_len - 8)
        return err_set(err, "'%s' is not a safetensors checkpoint (bad or truncated header)", path);
    if (hlen > ST_HEADER_MAX || hlen > f->len - 8)
        return err_set(err, "'%s' has a %" PRIu64 "-byte header, more than the %d this reader accepts", path, hlen,
                       ST_HEADER_MAX);
    Error perr;
    f->header = json_parse(f->buf + 8, (size_t)hlen, &perr);
    if (!json_is_object(f->header)) return err_set(err, "'%s' is corrupt: header is not valid JSON", path);
    f->data_start = 8 + (size_t)hlen;
    return 0;
}

int st_open(StFile *f, const char *path, Error *err) {
    memset(f, 0, sizeof *f);
    f->buf = read_file(path, &f->len, err);
    if (!f->buf) return -1;
    if (st_parse_header(f, f->len, path, err)) {
        st_close(f);
        return -1;
    }
    char *key = memmem(f->buf + 8, f->data_start - 8, CHECKSUM_KEY, strlen(CHECKSUM_KEY));
    size_t at = key ? (size_t)(key - f->buf) + strlen(CHECKSUM_KEY) : 0;
    const char *stored = st_meta(f, "checksum");
    char digits[CHECKSUM_DIGITS + 1];
    if (!key || !stored || at + CHECKSUM_DIGITS > f->data_start) {
        st_close(f);
        return err_set(err, "'%s' is corrupt or not ours: no checksum in its metadata", path);
    }
    snprintf(digits, sizeof digits, "%016" PRIx64, file_checksum(f->buf, f->len, at));
    int checksum_ok = strlen(stored) == 8 + CHECKSUM_DIGITS && memcmp(stored + 8, digits, CHECKSUM_DIGITS) == 0;
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
    checksum_ok = 1; /* the fuzzers skip the checksum: the parsing behind it is what they test */
#endif
    if (!checksum_ok) {
        st_close(f);
        return err_set(err, "'%s' is corrupt: checksum mismatch (truncated or modified file)", path);
    }
    return 0;
}

int st_open_header(StFile *f, const char *path, size_t *file_len, Error *err) {
    memset(f, 0, sizeof *f);
    char *head = read_file_head(path, 8, &f->len, file_len, err);
    if (!head) return -1;
    uint64_t hlen = st_header_len(head, f->len);
    free(head);
    /* A bad length is reported by st_parse_header from the first 8 bytes. */
    size_t want = 8 + (size_t)(hlen < ST_HEADER_MAX ? hlen : 0);
    f->buf = read_file_head(path, want, &f->len, file_len, err);
    if (!f->buf) return -1;
    if (st_parse_header(f, *file_len, path, err)) {
        st_close(f);
        return -1;
    }
    return 0;
}

const char *st_meta(const StFile *f, const char *key) {
    return json_string_value(json_object_get(json_object_get(f->header, "__metadata__"), key));
}

int st_has(const StFile *f, const char *name) { return json_object_get(f->header, name) != NULL; }

int st_read(const StFile *f, const char *name, StDtype dtype, size_t ndim, const size_t *shape, void *dst, Error *err) {
    const json_t *t = json_object_get(f->header, name);
    if (!t) return err_set(err, "checkpoint has no tensor '%s'", name);
    const char *dt = json_string_value(json_object_get(t, "dtype"));
    const json_t *sh = json_object_get(t, "shape"), *off = json_object_get(t, "data_offsets");
    if (!dt || strcmp(dt, dtype == ST_F32 ? "F32" : "I32") != 0) return err_set(err, "tensor '%s' has the wrong dtype", name);
    size_t count = 1;
    if (!json_is_array(sh) || json_array_size(sh) != ndim) return err_set(err, "tensor '%s' has the wrong rank", name);
    for (size_t d = 0; d < ndim; d++) {
        size_t dim;
        if (json_size(json_array_get(sh, d), SIZE_MAX, &dim))
            return err_set(err, "tensor '%s' has a shape dimension that is not a size", name);
        if (dim != shape[d]) return err_set(err, "tensor '%s' has shape dimension %zu, expected %zu", name, dim, shape[d]);
        count *= shape[d];
    }
    /* Offsets are integers, so exact beyond 2^53; checked without overflow. */
    size_t a, b, data_len = f->len - f->data_start;
    if (!json_is_array(off) || json_array_size(off) != 2) return err_set(err, "tensor '%s' has no data offsets", name);
    if (json_size(json_array_get(off, 0), data_len, &a) || json_size(json_array_get(off, 1), data_len, &b) || b < a ||
        b - a != count * 4)
        return err_set(err, "tensor '%s' has bad data offsets", name);
    memcpy(dst, f->buf + f->data_start + a, count * 4);
    return 0;
}

void st_close(StFile *f) {
    free(f->buf);
    json_decref(f->header);
    memset(f, 0, sizeof *f);
}

