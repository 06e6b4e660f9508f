/* Unit tests of safetensors files (lm/safetensors.h): our checksum's two
 * kinds; and of the files other programs write: F16 and BF16 turned into
 * floats exactly, the foreign reader's checks, and the foreign writer's
 * layout (no checksum, the caller's metadata, Conv1D transposition). */
#include "testutil.h"

#include "lm/safetensors.h"
#include "lm/files.h"
#include "runtime/hash.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

/* Every one of the 65,536 halves against the compiler's own conversion
 * (_Float16: the F16C instruction or libgcc), bit for bit; NaNs stay NaN
 * with their payload (ours keeps a signalling NaN signalling, which the
 * hardware quiets, so only the payload below the quiet bit is compared). */
static void test_f16_every_value(void **s) {
    (void)s;
    for (uint32_t h = 0; h < 65536; h++) {
        _Float16 half;
        uint16_t bits = (uint16_t)h;
        memcpy(&half, &bits, sizeof half);
        float want = (float)half, got = st_f16_value(bits);
        uint32_t wb, gb;
        memcpy(&wb, &want, 4);
        memcpy(&gb, &got, 4);
        if (isnan(want)) {
            assert_true(isnan(got));
            assert_int_equal(gb & 0xffbfffffu, wb & 0xffbfffffu);
        } else {
            assert_int_equal(gb, wb);
        }
    }
    /* and a few known values, so the test does not rest on the compiler alone */
    assert_true(st_f16_value(0x3c00) == 1.0f);
    assert_true(st_f16_value(0xc000) == -2.0f);
    assert_true(st_f16_value(0x7bff) == 65504.0f);
    assert_true(st_f16_value(0x0001) == 0x1p-24f);
    assert_true(st_f16_value(0x03ff) == 1023 * 0x1p-24f);
    assert_true(isinf(st_f16_value(0xfc00)) && st_f16_value(0xfc00) < 0);
    assert_true(signbit(st_f16_value(0x8000)) && st_f16_value(0x8000) == 0.0f);
}

static void test_bf16_values(void **s) {
    (void)s;
    assert_true(st_bf16_value(0x3f80) == 1.0f);
    assert_true(st_bf16_value(0xc040) == -3.0f);
    assert_true(st_bf16_value(0x0001) == 0x1p-133f);
    assert_true(isinf(st_bf16_value(0x7f80)));
    assert_true(isnan(st_bf16_value(0x7fc1)));
    for (uint32_t h = 0; h < 65536; h++) {
        float v = st_bf16_value((uint16_t)h);
        uint32_t b;
        memcpy(&b, &v, 4);
        assert_int_equal(b, h << 16);
    }
}

/* A file as another program writes it: header text, then data. */
static void write_raw(const char *path, const char *header, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    uint64_t n = strlen(header);
    assert_non_null(f);
    fwrite(&n, 8, 1, f);
    fwrite(header, 1, n, f);
    fwrite(data, 1, len, f);
    fclose(f);
}

static void test_foreign_reader(void **s) {
    (void)s;
    char path[] = "/tmp/test_safetensors_XXXXXX";
    temp_file(path);
    /* F16 [2, 3]: 1 .. 6; BF16 [3]: -1, 0.5, 2; F32 []: 7; BOOL [1, 1, 2, 2]; an unknown dtype; I64 [1] */
    unsigned char data[12 + 6 + 4 + 4 + 3 + 8];
    const uint16_t f16[6] = {0x3c00, 0x4000, 0x4200, 0x4400, 0x4500, 0x4600}, bf16[3] = {0xbf80, 0x3f00, 0x4000};
    const float seven = 7.0f;
    const int64_t big = 5;
    memcpy(data, f16, 12);
    memcpy(data + 12, bf16, 6);
    memcpy(data + 18, &seven, 4);
    memcpy(data + 22, "\1\0\1\1", 4);
    memcpy(data + 26, "abc", 3);
    memcpy(data + 29, &big, 8);
    const char *header =
        "{\"__metadata__\":{\"format\":\"pt\"},\"h\":{\"dtype\":\"F16\",\"shape\":[2,3],\"data_offsets\":[0,12]},"
        "\"b\":{\"dtype\":\"BF16\",\"shape\":[3],\"data_offsets\":[12,18]},"
        "\"s\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[18,22]},"
        "\"mask\":{\"dtype\":\"BOOL\",\"shape\":[1,1,2,2],\"data_offsets\":[22,26]},"
        "\"odd\":{\"dtype\":\"Q7\",\"shape\":[1],\"data_offsets\":[26,29]},"
        "\"i\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[29,37]}}";
    write_raw(path, header, data, sizeof data);
    StFile f;
    Error err;
    assert_int_equal(st_open(&f, path, &err), -1); /* ours must have a checksum */
    assert_non_null(strstr(err.msg, "no checksum"));
    assert_int_equal(st_open_foreign(&f, path, &err), 0);
    size_t n;
    const char **names = st_names(&f, &n, &err);
    assert_int_equal(n, 6);
    const char *want[] = {"h", "b", "s", "mask", "odd", "i"};
    for (size_t i = 0; i < n; i++) assert_string_equal(names[i], want[i]);
    free(names);
    StInfo t;
    float out[6];
    assert_int_equal(st_info(&f, "h", &t, &err), 0);
    assert_int_equal(t.ndim, 2);
    assert_int_equal(t.shape[1], 3);
    assert_int_equal(t.count, 6);
    assert_int_equal(st_to_f32(&t, "h", 0, 6, out, &err), 0);
    for (int i = 0; i < 6; i++) assert_true(out[i] == (float)(i + 1));
    assert_int_equal(st_to_f32(&t, "h", 4, 2, out, &err), 0); /* a piece from the middle */
    assert_true(out[0] == 5.0f && out[1] == 6.0f);
    assert_int_equal(st_info(&f, "b", &t, &err), 0);
    assert_int_equal(st_to_f32(&t, "b", 0, 3, out, &err), 0);
    assert_true(out[0] == -1.0f && out[1] == 0.5f && out[2] == 2.0f);
    assert_int_equal(st_info(&f, "s", &t, &err), 0);
    assert_int_equal(t.ndim, 0);
    assert_int_equal(t.count, 1);
    assert_int_equal(st_to_f32(&t, "s", 0, 1, out, &err), 0);
    assert_true(out[0] == 7.0f);
    assert_int_equal(st_info(&f, "mask", &t, &err), 0);
    assert_int_equal(t.ndim, 4);
    assert_int_equal(st_to_f32(&t, "mask", 0, 1, out, &err), -1);
    assert_non_null(strstr(err.msg, "BOOL"));
    assert_int_equal(st_info(&f, "i", &t, &err), 0);
    assert_int_equal(st_to_f32(&t, "i", 0, 1, out, &err), -1);
    assert_non_null(strstr(err.msg, "only F32, F16 and BF16"));
    st_close(&f);

    /* each broken entry is refused when the file is opened */
    const char *broken[][2] = {
        {"{\"h\":{\"dtype\":\"F16\",\"shape\":[2,3],\"data_offsets\":[0,10]}}", "10 bytes for 6 F16"},
        {"{\"h\":{\"dtype\":\"F16\",\"shape\":[2,3],\"data_offsets\":[0,400]}}", "truncated"},
        {"{\"h\":{\"dtype\":\"F16\",\"shape\":[2.0,3],\"data_offsets\":[0,12]}}", "not a size"},
        {"{\"h\":{\"shape\":[2,3],\"data_offsets\":[0,12]}}", "no dtype"},
        {"{\"h\":{\"dtype\":\"F16\",\"data_offsets\":[0,12]}}", "no shape"},
        {"{\"h\":{\"dtype\":\"F16\",\"shape\":[2,3],\"data_offsets\":[12,0]}}", "bad data offsets"},
        {"{\"h\":{\"dtype\":\"F16\",\"shape\":[2,3]}}", "no data offsets"},
        {"{\"h\":{\"dtype\":\"F16\",\"shape\":[4294967296,4294967296,4294967296],\"data_offsets\":[0,12]}}",
         "impossible shape"},
        {"{\"h\":1", "not valid JSON"},
    };
    for (size_t i = 0; i < sizeof broken / sizeof broken[0]; i++) {
        write_raw(path, broken[i][0], data, 37);
        assert_int_equal(st_open_foreign(&f, path, &err), -1);
        if (!strstr(err.msg, broken[i][1])) fail_msg("%s: '%s' lacks '%s'", broken[i][0], err.msg, broken[i][1]);
    }
    unlink(path);
}

/* The format's reference rules for every file, ours and others': the
 * tensors tile the data exactly (no overlap, no gap, nothing after the last,
 * nothing before the first) and __metadata__ maps strings to strings. */
static void test_layout(void **s) {
    (void)s;
    char path[] = "/tmp/test_safetensors_XXXXXX";
    temp_file(path);
    unsigned char data[16] = {0};
    const char *broken[][3] = {
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
         "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", "8", "tensors 'w' and 'b' overlap"},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
         "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", "12", "overlap"},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", "16", "8 bytes after its last tensor"},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}", "16", "8 bytes before tensor 'w'"},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
         "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}", "12", "4 bytes before tensor 'b'"},
        {"{\"__metadata__\":[\"pt\"],\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", "8",
         "__metadata__ is not a map of strings"},
        {"{\"__metadata__\":{\"format\":1},\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", "8",
         "entry 'format' is not a string"},
    };
    StFile f;
    Error err;
    for (size_t i = 0; i < sizeof broken / sizeof broken[0]; i++) {
        write_raw(path, broken[i][0], data, (size_t)atoi(broken[i][1]));
        assert_int_equal(st_open_foreign(&f, path, &err), -1);
        if (!strstr(err.msg, broken[i][2])) fail_msg("%s: '%s' lacks '%s'", broken[i][0], err.msg, broken[i][2]);
    }
    /* tiled exactly, in any order of the header, with an empty tensor anywhere: read */
    write_raw(path,
              "{\"__metadata__\":{\"format\":\"pt\"},\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]},"
              "\"e\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,8]},"
              "\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
              data, 16);
    assert_int_equal(st_open_foreign(&f, path, &err), 0);
    st_close(&f);
    unlink(path);
}

static void test_foreign_writer(void **s) {
    (void)s;
    char path[] = "/tmp/test_safetensors_XXXXXX";
    temp_file(path);
    const float w[6] = {1, 2, 3, 4, 5, 6}; /* [3, 2]: written as its [2, 3] transpose */
    const float b[2] = {-1, -2};
    StTensor ts[] = {{.name = "conv.weight", .dtype = ST_F32, .ndim = 2, .shape = {2, 3}, .data = w, .transpose = 1},
                     {.name = "conv.bias", .dtype = ST_F32, .ndim = 1, .shape = {2}, .data = b}};
    StMeta meta[] = {{"format", "pt"}};
    Error err;
    assert_int_equal(st_write_foreign(path, ts, 2, meta, 1, &err), 0);
    size_t len;
    char *raw = read_file_head(path, 1 << 20, &len, NULL, &err);
    assert_non_null(raw);
    assert_null(strstr(raw + 8, "checksum"));
    assert_non_null(strstr(raw + 8, "{\"__metadata__\":{\"format\":\"pt\"},\"conv.weight\":{\"dtype\":\"F32\",\"shape\":[2,3]"));
    free(raw);
    StFile f;
    StInfo t;
    float out[6];
    assert_int_equal(st_open_foreign(&f, path, &err), 0);
    assert_int_equal(st_info(&f, "conv.weight", &t, &err), 0);
    assert_int_equal(st_to_f32(&t, "conv.weight", 0, 6, out, &err), 0);
    const float want[6] = {1, 3, 5, 2, 4, 6};
    assert_memory_equal(out, want, sizeof want);
    st_close(&f);
    /* no metadata at all: no __metadata__ key */
    assert_int_equal(st_write_foreign(path, ts + 1, 1, NULL, 0, &err), 0);
    raw = read_file_head(path, 1 << 20, &len, NULL, &err);
    assert_non_null(raw);
    assert_non_null(strstr(raw + 8, "{\"conv.bias\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}"));
    free(raw);
    unlink(path);
}

static void write_bytes(const char *path, const char *raw, size_t len) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(raw, 1, len, f), len);
    fclose(f);
}

/* raw (len bytes) with its checksum's kind set to `kind` and its digits
 * to that hash of the file with them read as '0': XXH3 in one call, or
 * FNV-1a, as the older writer made them. */
static void sign(char *raw, size_t len, const char *kind) {
    char *at = strstr(raw + 8, "\"checksum\":\"") + strlen("\"checksum\":\"");
    memcpy(at, kind, 8);
    memset(at + 8, '0', 16);
    uint64_t h = strcmp(kind, "fnv1a64:") == 0 ? fnv1a(FNV_OFFSET, raw, len) : XXH3_64bits(raw, len);
    char digits[17];
    snprintf(digits, sizeof digits, "%016llx", (unsigned long long)h);
    memcpy(at + 8, digits, 16);
}

/* Ours carry XXH3's checksum; the older kind, FNV-1a, still loads; a
 * flipped byte is refused under either; a kind it does not know is named. */
static void test_checksum_kinds(void **s) {
    (void)s;
    char path[] = "/tmp/test_safetensors_XXXXXX";
    temp_file(path);
    const float w[6] = {1, 2, 3, 4, 5, 6};
    StTensor ts[] = {{.name = "w", .dtype = ST_F32, .ndim = 2, .shape = {2, 3}, .data = w}};
    StMeta meta[] = {{"format", "test"}};
    Error err;
    assert_int_equal(st_write(path, ts, 1, meta, 1, &err), 0);
    size_t len;
    char *raw = read_file(path, &len, &err), *copy = malloc(len);
    assert_non_null(raw);
    assert_non_null(strstr(raw + 8, "{\"__metadata__\":{\"checksum\":\"xxh3-64:"));
    memcpy(copy, raw, len);
    sign(copy, len, "xxh3-64:"); /* the writer's digits are XXH3_64bits of the file, digits read as '0' */
    assert_memory_equal(copy, raw, len);
    StFile f;
    float out[6];
    const size_t shape[2] = {2, 3};
    const char *kinds[] = {"xxh3-64:", "fnv1a64:"};
    for (int k = 0; k < 2; k++) {
        sign(copy, len, kinds[k]);
        write_bytes(path, copy, len);
        if (st_open(&f, path, &err)) fail_msg("%s: %s", kinds[k], err.msg);
        assert_int_equal(st_read(&f, "w", ST_F32, 2, shape, out, &err), 0);
        assert_memory_equal(out, w, sizeof w);
        assert_string_equal(st_meta(&f, "format"), "test");
        st_close(&f);
        copy[len - 3] ^= 0x10; /* a bit of the data flipped */
        write_bytes(path, copy, len);
        assert_int_equal(st_open(&f, path, &err), -1);
        if (!strstr(err.msg, "checksum mismatch")) fail_msg("%s, a flipped bit: '%s'", kinds[k], err.msg);
        copy[len - 3] ^= 0x10;
    }
    sign(copy, len, "xxh3-64:");
    memcpy(strstr(copy + 8, "xxh3-64:"), "xxh9-64:", 8); /* a kind no reader knows */
    write_bytes(path, copy, len);
    assert_int_equal(st_open(&f, path, &err), -1);
    if (!strstr(err.msg, "a checksum of a kind this program does not know ('xxh9-64:')")) fail_msg("'%s'", err.msg);
    free(copy);
    free(raw);
    unlink(path);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_checksum_kinds),
        cmocka_unit_test(test_f16_every_value),
        cmocka_unit_test(test_bf16_values),
        cmocka_unit_test(test_foreign_reader),
        cmocka_unit_test(test_foreign_writer),
        cmocka_unit_test(test_layout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
