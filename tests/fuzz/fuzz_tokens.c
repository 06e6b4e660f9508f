/* Fuzzes the token-file reader (tokens_read: the header, the size, every
 * token below the vocabulary) and reads what it accepts. */
#include <stdlib.h>

#include "lm/tokens.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char path[64];
    int fd = fuzz_input_file(data, size, path, sizeof path);
    if (fd < 0) return 0;
    TokenFile tf;
    Error err;
    if (tokens_read(path, &tf, &err) == 0) {
        uint64_t sum = 0;
        for (size_t i = 0; i < tf.n; i++) sum += token_at(&tf, i);
        uint32_t *copy = tokens_copy_u32(&tf, 0, tf.n, &err);
        for (size_t i = 0; copy && i < tf.n; i++) sum -= copy[i];
        if (sum != 0) __builtin_trap(); /* the copy must equal the mapped tokens */
        free(copy);
        tokens_free(&tf);
    }
    close(fd);
    return 0;
}
