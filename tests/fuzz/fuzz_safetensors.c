/* Fuzzes the safetensors reader under every checkpoint and gradient dump
 * (st_open, st_meta, st_read): each tensor the header lists is read at the
 * shape the header claims. */
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char path[64];
    int fd = fuzz_input_file(data, size, path, sizeof path);
    if (fd < 0) return 0;
    StFile f;
    Error err;
    if (st_open(&f, path, &err) == 0) {
        (void)st_meta(&f, "config");
        for (size_t i = 0; i < json_len(f.header); i++) {
            const char *name = f.header->keys[i];
            const Json *t = &f.header->items[i], *shape = json_get(t, "shape");
            if (!strcmp(name, "__metadata__") || !shape || shape->type != JSON_ARRAY || json_len(shape) > 2) continue;
            size_t dims[2] = {1, 1}, count = 1;
            int ok = 1;
            for (size_t d = 0; d < json_len(shape); d++) {
                double v = shape->items[d].num;
                if (!(v >= 0 && v <= 1e6)) ok = 0; /* only what the file could hold */
                else dims[d] = (size_t)v, count *= dims[d];
            }
            if (!ok || count > size) continue;
            float *dst = malloc(count * 4 + 4);
            if (dst) {
                st_read(&f, name, ST_F32, json_len(shape), dims, dst, &err);
                st_read(&f, name, ST_I32, json_len(shape), dims, dst, &err);
            }
            free(dst);
        }
        st_close(&f);
    }
    close(fd);
    return 0;
}
