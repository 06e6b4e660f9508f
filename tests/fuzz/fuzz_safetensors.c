/* Fuzzes the safetensors readers: ours under every checkpoint and gradient
 * dump (st_open, st_meta, st_read: each tensor the header lists is read at
 * the shape the header claims), and the reader of files other programs
 * write, what bin/convert --from-hf reads (read_foreign). */
#include <stdlib.h>
#include <string.h>

#include "fuzz_input.h"
#include "lm/safetensors.h"

/* st_open_foreign, st_names, st_info and st_to_f32: every tensor whatever its
 * dtype or rank, turned into floats where it is F32, F16 or BF16, whole and
 * from its middle. */
static void read_foreign(const char *path, size_t size) {
    StFile f;
    Error err;
    if (st_open_foreign(&f, path, &err) != 0) return;
    size_t n;
    const char **names = st_names(&f, &n, &err);
    for (size_t i = 0; names && i < n; i++) {
        StInfo t;
        if (st_info(&f, names[i], &t, &err) || t.count > size) continue; /* only what the file could hold */
        float *dst = malloc(t.count * sizeof(float) + 4);
        if (dst) {
            st_to_f32(&t, names[i], 0, t.count, dst, &err);
            if (t.count > 1) st_to_f32(&t, names[i], t.count / 2, t.count - t.count / 2, dst, &err);
        }
        free(dst);
    }
    free(names);
    st_close(&f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char path[64];
    int fd = fuzz_input_file(data, size, path, sizeof path);
    if (fd < 0) return 0;
    StFile f;
    Error err;
    if (st_open(&f, path, &err) == 0) {
        (void)st_meta(&f, "config");
        const char *name;
        json_t *t;
        json_object_foreach(f.header, name, t) {
            const json_t *shape = json_object_get(t, "shape");
            size_t ndim = json_array_size(shape), dims[2] = {1, 1}, count = 1;
            if (!strcmp(name, "__metadata__") || !json_is_array(shape) || ndim > 2) continue;
            int ok = 1;
            for (size_t d = 0; d < ndim; d++) {
                /* only what the file could hold */
                if (json_size(json_array_get(shape, d), 1000000, &dims[d])) ok = 0;
                else count *= dims[d];
            }
            if (!ok || count > size) continue;
            float *dst = malloc(count * 4 + 4);
            if (dst) {
                st_read(&f, name, ST_F32, ndim, dims, dst, &err);
                st_read(&f, name, ST_I32, ndim, dims, dst, &err);
            }
            free(dst);
        }
        st_close(&f);
    }
    read_foreign(path, size);
    close(fd);
    return 0;
}
