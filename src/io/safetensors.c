/* safetensors files: ours written with a checksum and read with every offset and the checksum checked; other
 * programs' read with every entry checked and their F16 and BF16 tensors turned into floats (see lm/safetensors.h). */
#include "lm/safetensors.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lm/files.h"
#include "runtime/hash.h"

/* xxHash (Debian's libxxhash-dev) compiled into this file: no library to
 * link, and XXH3 at the build's vector width. */
#define XXH_INLINE_ALL
#include <xxhash.h>

/* The checksum's value: a kind of 8 characters, then 16 hex digits of a
 * 64-bit hash of the whole file with those digits read as '0'. */
#define CHECKSUM_KEY "\"checksum\":\""
#define CHECKSUM_KIND 8
#define CHECKSUM_DIGITS 16
static const char zero_digits[] = "0000000000000000";

/* The dtypes of the safetensors format whose element size is known, so that
 * an entry's data offsets can be checked against its shape; ours first, in
 * StDtype's order. Any other dtype only needs offsets inside the file. */
static const struct {
    const char *name;
    size_t size;
} dtypes[] = {{"F32", 4}, {"I32", 4},  {"F16", 2},  {"BF16", 2}, {"F64", 8},     {"I64", 8},     {"U64", 8},
              {"U32", 4}, {"I16", 2},  {"U16", 2},  {"I8", 1},   {"U8", 1},      {"BOOL", 1},    {"F8_E5M2", 1},
              {"F8_E4M3", 1}};

static size_t dtype_size(const char *name) {
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (strcmp(dtypes[i].name, name) == 0) return dtypes[i].size;
    return 0;
}

static size_t tensor_bytes(const StTensor *t) {
    size_t n = dtypes[t->dtype].size;
    for (size_t d = 0; d < t->ndim; d++) n *= t->shape[d];
    return n;
}

/* FNV-1a: byte after byte, a multiply each. */
static uint64_t fnv1a_checksum(const char *buf, size_t len, size_t digits_at) {
    uint64_t h = fnv1a(FNV_OFFSET, buf, digits_at);
    h = fnv1a(h, zero_digits, CHECKSUM_DIGITS);
    return fnv1a(h, buf + digits_at + CHECKSUM_DIGITS, len - digits_at - CHECKSUM_DIGITS);
}

/* XXH3-64 (seed 0), streamed over the same three pieces: 64-byte stripes
 * in SIMD vectors (SSE2, AVX2, NEON: the build's), at memory speed. */
static uint64_t xxh3_checksum(const char *buf, size_t len, size_t digits_at) {
    XXH3_state_t state;
    XXH3_64bits_reset(&state);
    XXH3_64bits_update(&state, buf, digits_at);
    XXH3_64bits_update(&state, zero_digits, CHECKSUM_DIGITS);
    XXH3_64bits_update(&state, buf + digits_at + CHECKSUM_DIGITS, len - digits_at - CHECKSUM_DIGITS);
    return XXH3_64bits_digest(&state);
}

/* The kinds a reader accepts, the writer's first: the older files hold
 * FNV-1a's, and still load. */
static const struct {
    const char *kind;
    uint64_t (*hash)(const char *buf, size_t len, size_t digits_at);
} checksums[] = {{"xxh3-64:", xxh3_checksum}, {"fnv1a64:", fnv1a_checksum}};

/* A tensor's bytes at dst: as stored, or transposed (t->transpose: the
 * source is the [shape[1], shape[0]] matrix). Ours are 4-byte elements. */
static void copy_tensor(char *dst, const StTensor *t) {
    if (!t->transpose) {
        memcpy(dst, t->data, tensor_bytes(t));
        return;
    }
    size_t rows = t->shape[0], cols = t->shape[1];
    const uint32_t *src = t->data;
    uint32_t *out = (uint32_t *)(void *)dst; /* the header is padded to 8 bytes and tensors are 4-byte: aligned */
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++) out[i * cols + j] = src[j * rows + i];
}

static int write_file(const char *path, const StTensor *tensors, size_t n, const StMeta *meta, size_t n_meta,
                      int checksum, Error *err) {
    char *h = NULL;
    sb_appendf(&h, "{");
    if (checksum || n_meta) {
        sb_appendf(&h, "\"__metadata__\":{");
        if (checksum) sb_appendf(&h, CHECKSUM_KEY "%s%s\"", checksums[0].kind, zero_digits);
        for (size_t i = 0; i < n_meta; i++) {
            if (checksum || i) sb_appendf(&h, ",");
            sb_append_json_string(&h, meta[i].key);
            sb_appendf(&h, ":");
            sb_append_json_string(&h, meta[i].value);
        }
        sb_appendf(&h, "}");
    }
    size_t offset = 0;
    for (size_t i = 0; i < n; i++) {
        const StTensor *t = &tensors[i];
        if (checksum || n_meta || i) sb_appendf(&h, ",");
        sb_append_json_string(&h, t->name);
        sb_appendf(&h, ":{\"dtype\":\"%s\",\"shape\":[", dtypes[t->dtype].name);
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
        copy_tensor(data, &tensors[i]);
        data += tensor_bytes(&tensors[i]);
    }
    if (checksum) {
        size_t at = (size_t)(strstr(buf + 8, CHECKSUM_KEY) - buf) + strlen(CHECKSUM_KEY) + CHECKSUM_KIND;
        char digits[CHECKSUM_DIGITS + 1];
        snprintf(digits, sizeof digits, "%016" PRIx64, checksums[0].hash(buf, total, at));
        memcpy(buf + at, digits, CHECKSUM_DIGITS);
    }
    int rc = write_file_atomic(path, buf, total, err);
    free(buf);
    return rc;
}

int st_write(const char *path, const StTensor *tensors, size_t n, const StMeta *meta, size_t n_meta, Error *err) {
    return write_file(path, tensors, n, meta, n_meta, 1, err);
}

int st_write_foreign(const char *path, const StTensor *tensors, size_t n, const StMeta *meta, size_t n_meta,
                     Error *err) {
    return write_file(path, tensors, n, meta, n_meta, 0, err);
}

/* A tensor entry's data offsets [*a, *b) within data_len bytes of data.
 * Offsets are integers, so exact beyond 2^53; checked without overflow. */
static int entry_offsets(const json_t *off, const char *name, size_t data_len, size_t *a, size_t *b, Error *err) {
    if (!json_is_array(off) || json_array_size(off) != 2) return err_set(err, "tensor '%s' has no data offsets", name);
    if (json_size(json_array_get(off, 0), SIZE_MAX, a) || json_size(json_array_get(off, 1), SIZE_MAX, b) || *b < *a)
        return err_set(err, "tensor '%s' has bad data offsets", name);
    if (*b > data_len)
        return err_set(err, "tensor '%s' has bad data offsets: past the %zu bytes of data the file holds (truncated?)",
                       name, data_len);
    return 0;
}

typedef struct Span {
    size_t a, b;
    const char *name;
} Span;

static int span_order(const void *x, const void *y) {
    const Span *p = x, *q = y;
    return p->a != q->a ? (p->a < q->a ? -1 : 1) : p->b != q->b ? (p->b < q->b ? -1 : 1) : 0;
}

/* The rules of the format's reference reader, for every file read, ours or
 * not: __metadata__ (if there) maps strings to strings, every other key is
 * a tensor entry, and the tensors tile the data region exactly: in offset
 * order each begins where the one before it ends, the first at 0, the last
 * at the end of the file: no two share bytes, and no byte belongs to none. */
static int check_layout(const json_t *header, size_t data_len, const char *path, Error *err) {
    const json_t *meta = json_object_get(header, "__metadata__");
    if (meta) {
        const char *key;
        const json_t *value;
        if (!json_is_object(meta)) return err_set(err, "'%s' is corrupt: its __metadata__ is not a map of strings", path);
        json_object_foreach((json_t *)meta, key, value) {
            if (!json_is_string(value))
                return err_set(err, "'%s' is corrupt: __metadata__ entry '%s' is not a string", path, key);
        }
    }
    size_t n = json_object_size(header) - (meta != NULL), k = 0;
    Span *spans = lm_calloc(n + 1, sizeof *spans, err);
    if (!spans) return -1;
    const char *name;
    const json_t *entry;
    int rc = 0;
    json_object_foreach((json_t *)header, name, entry) {
        if (strcmp(name, "__metadata__") == 0) continue;
        Error oerr;
        if (!json_is_object(entry)) rc = err_set(err, "'%s': '%s' is not a tensor entry", path, name);
        else if (entry_offsets(json_object_get(entry, "data_offsets"), name, data_len, &spans[k].a, &spans[k].b, &oerr))
            rc = err_set(err, "'%s': %s", path, oerr.msg);
        if (rc) break;
        spans[k++].name = name;
    }
    if (rc == 0) qsort(spans, k, sizeof *spans, span_order);
    /* Overlaps first: a tensor moved onto another's bytes leaves a gap too,
     * and the overlap is what names the fault. */
    for (size_t i = 1; rc == 0 && i < k; i++)
        if (spans[i].a < spans[i - 1].b)
            rc = err_set(err, "'%s' is corrupt: tensors '%s' and '%s' overlap", path, spans[i - 1].name, spans[i].name);
    for (size_t i = 0, end = 0; rc == 0 && i <= k; end = spans[i++].b) {
        size_t at = i < k ? spans[i].a : data_len;
        if (at > end && i == k)
            rc = err_set(err, "'%s' is corrupt: %zu bytes after its last tensor belong to none", path, at - end);
        else if (at > end)
            rc = err_set(err, "'%s' is corrupt: %zu bytes before tensor '%s' belong to none", path, at - end,
                         spans[i].name);
    }
    free(spans);
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
        return err_set(err, "'%s' is not a safetensors file (bad or truncated header)", path);
    if (hlen > ST_HEADER_MAX || hlen > f->len - 8)
        return err_set(err, "'%s' has a %" PRIu64 "-byte header, more than the %d this reader accepts", path, hlen,
                       ST_HEADER_MAX);
    Error perr;
    f->header = json_parse(f->buf + 8, (size_t)hlen, &perr);
    if (!json_is_object(f->header)) return err_set(err, "'%s' is corrupt: header is not valid JSON", path);
    f->data_start = 8 + (size_t)hlen;
    return 0;
}

/* The whole file mapped into f->buf and its header parsed: what st_open and
 * st_open_foreign check further. Mapped, its pages filled at once from the
 * page cache, not copied into memory of our own: the checksum and st_read
 * read the cache itself (a 1 GB copy costs more than XXH3 over it). Our
 * writers replace a file by renaming a new one over it, never in place, so
 * a mapped file does not shrink under its reader. */
static int read_whole(StFile *f, const char *path, Error *err) {
    memset(f, 0, sizeof *f);
    int fd = open_input(path, &f->len, err);
    if (fd < 0) return -1;
    void *map = f->len ? mmap(NULL, f->len, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0) : NULL;
    int map_errno = errno;
    close(fd);
    if (map == MAP_FAILED) {
        f->len = 0;
        return err_set(err, "cannot read '%s': %s", path, strerror(map_errno));
    }
    f->buf = map;
    f->mapped = 1;
    if (st_parse_header(f, f->len, path, err)) {
        st_close(f);
        return -1;
    }
    return 0;
}

/* The checksum in f's header checked against the file: 0, or -1 with err set. */
static int check_checksum(const StFile *f, const char *path, Error *err) {
    const char *key = memmem(f->buf + 8, f->data_start - 8, CHECKSUM_KEY, strlen(CHECKSUM_KEY));
    size_t at = key ? (size_t)(key - f->buf) + strlen(CHECKSUM_KEY) : 0;
    const char *stored = st_meta(f, "checksum");
    if (!key || !stored || at + CHECKSUM_KIND + CHECKSUM_DIGITS > f->data_start)
        return err_set(err, "'%s' is corrupt or not ours: no checksum in its metadata", path);
    size_t kind = 0;
    while (kind < sizeof checksums / sizeof checksums[0] && memcmp(f->buf + at, checksums[kind].kind, CHECKSUM_KIND))
        kind++;
    if (kind == sizeof checksums / sizeof checksums[0])
        return err_set(err, "'%s' has a checksum of a kind this program does not know ('%.*s'): corrupt, or written "
                            "by a newer version", path, CHECKSUM_KIND, f->buf + at);
    char value[CHECKSUM_KIND + CHECKSUM_DIGITS + 1];
    snprintf(value, sizeof value, "%s%016" PRIx64, checksums[kind].kind,
             checksums[kind].hash(f->buf, f->len, at + CHECKSUM_KIND));
    int checksum_ok = strcmp(stored, value) == 0;
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
    checksum_ok = 1; /* the fuzzers skip the checksum: the parsing behind it is what they test */
#endif
    if (!checksum_ok) return err_set(err, "'%s' is corrupt: checksum mismatch (truncated or modified file)", path);
    return 0;
}

int st_open(StFile *f, const char *path, Error *err) {
    if (read_whole(f, path, err)) return -1;
    if (check_checksum(f, path, err)) {
        st_close(f);
        return -1;
    }
    if (check_layout(f->header, f->len - f->data_start, path, err)) {
        st_close(f);
        return -1;
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

int st_open_foreign(StFile *f, const char *path, Error *err) {
    if (read_whole(f, path, err)) return -1;
    const char *name;
    json_t *entry;
    json_object_foreach(f->header, name, entry) {
        StInfo t;
        Error terr;
        if (strcmp(name, "__metadata__") == 0) continue;
        if (st_info(f, name, &t, &terr)) {
            st_close(f);
            return err_set(err, "'%s': %s", path, terr.msg);
        }
    }
    if (check_layout(f->header, f->len - f->data_start, path, err)) {
        st_close(f);
        return -1;
    }
    return 0;
}

const char *st_meta(const StFile *f, const char *key) {
    return json_string_value(json_object_get(json_object_get(f->header, "__metadata__"), key));
}

int st_has(const StFile *f, const char *name) { return json_object_get(f->header, name) != NULL; }

const char **st_names(const StFile *f, size_t *n, Error *err) {
    *n = 0;
    const char **names = lm_calloc(json_object_size(f->header) + 1, sizeof *names, err);
    if (!names) return NULL;
    const char *name;
    json_t *entry;
    json_object_foreach((json_t *)f->header, name, entry) {
        if (strcmp(name, "__metadata__") != 0) names[(*n)++] = name;
    }
    return names;
}

int st_info(const StFile *f, const char *name, StInfo *info, Error *err) {
    memset(info, 0, sizeof *info);
    const json_t *t = json_object_get(f->header, name);
    if (!t) return err_set(err, "checkpoint has no tensor '%s'", name);
    const json_t *sh = json_object_get(t, "shape"), *off = json_object_get(t, "data_offsets");
    info->dtype = json_string_value(json_object_get(t, "dtype"));
    if (!info->dtype) return err_set(err, "tensor '%s' has no dtype", name);
    if (!json_is_array(sh)) return err_set(err, "tensor '%s' has no shape", name);
    size_t elem = dtype_size(info->dtype);
    info->ndim = json_array_size(sh);
    info->count = 1;
    for (size_t d = 0; d < info->ndim; d++) {
        size_t dim;
        if (json_size(json_array_get(sh, d), SIZE_MAX, &dim))
            return err_set(err, "tensor '%s' has a shape dimension that is not a size", name);
        if (d < ST_MAX_RANK) info->shape[d] = dim;
        if (dim && info->count > SIZE_MAX / 8 / dim) return err_set(err, "tensor '%s' has an impossible shape", name);
        info->count *= dim;
    }
    size_t a, b;
    if (entry_offsets(off, name, f->len - f->data_start, &a, &b, err)) return -1;
    if (elem && b - a != info->count * elem)
        return err_set(err, "tensor '%s' has bad data offsets: %zu bytes for %zu %s values", name, b - a, info->count,
                       info->dtype);
    info->data = f->buf + f->data_start + a;
    info->bytes = b - a;
    return 0;
}

int st_read(const StFile *f, const char *name, StDtype dtype, size_t ndim, const size_t *shape, void *dst, Error *err) {
    StInfo t;
    if (st_info(f, name, &t, err)) return -1;
    if (strcmp(t.dtype, dtypes[dtype].name) != 0) return err_set(err, "tensor '%s' has the wrong dtype", name);
    if (t.ndim != ndim) return err_set(err, "tensor '%s' has the wrong rank", name);
    for (size_t d = 0; d < ndim; d++)
        if (t.shape[d] != shape[d])
            return err_set(err, "tensor '%s' has shape dimension %zu, expected %zu", name, t.shape[d], shape[d]);
    memcpy(dst, t.data, t.bytes);
    return 0;
}

float st_f16_value(unsigned short h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff, bits;
    if (exponent == 0x1f) { /* infinity, or NaN with its payload */
        bits = sign | 0x7f800000u | mantissa << 13;
    } else if (exponent) { /* normal: rebias 15 -> 127 */
        bits = sign | (exponent + 112) << 23 | mantissa << 13;
    } else { /* zero or subnormal, mantissa x 2^-24: a normal float, exactly */
        float v = (float)mantissa * 0x1p-24f;
        memcpy(&bits, &v, sizeof bits);
        bits |= sign;
    }
    float v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

float st_bf16_value(unsigned short bits) {
    uint32_t wide = (uint32_t)bits << 16;
    float v;
    memcpy(&v, &wide, sizeof v);
    return v;
}

int st_to_f32(const StInfo *t, const char *name, size_t first, size_t count, float *dst, Error *err) {
    if (strcmp(t->dtype, "F32") == 0) {
        memcpy(dst, (const char *)t->data + 4 * first, count * sizeof(float));
    } else if (strcmp(t->dtype, "F16") == 0 || strcmp(t->dtype, "BF16") == 0) {
        float (*value)(unsigned short) = t->dtype[0] == 'F' ? st_f16_value : st_bf16_value;
        const unsigned char *src = (const unsigned char *)t->data + 2 * first;
        for (size_t i = 0; i < count; i++) dst[i] = value((unsigned short)(src[2 * i] | src[2 * i + 1] << 8));
    } else {
        return err_set(err, "tensor '%s' is %s: only F32, F16 and BF16 tensors are read", name, t->dtype);
    }
    return 0;
}

void st_close(StFile *f) {
    if (f->mapped && f->buf) munmap((void *)f->buf, f->len);
    else free((void *)f->buf);
    json_decref(f->header);
    memset(f, 0, sizeof *f);
}
