/* Fuzzes the safetensors reader under every checkpoint and gradient dump
 * (st_open, st_meta, st_read): each tensor the header lists is read at the
 * shape the header claims. */
#include <stdlib.h>
#include <string.h>

#include "fuzz_input.h"
#include "io/safetensors.h"

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
    close(fd);
    return 0;
}
