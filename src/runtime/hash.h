/* 64-bit FNV-1a: the checksums of checkpoints written before XXH3
 * (src/io/safetensors.c), tokenizer identities, the files
 * every rank of a job must share, and the hash tables of byte strings and
 * n-grams. Not cryptographic: it detects accidents, not forgeries. */
#ifndef LM_HASH_H
#define LM_HASH_H

#include <stddef.h>
#include <stdint.h>

/* `h` is the running hash: start with FNV_OFFSET. */
#define FNV_OFFSET 0xcbf29ce484222325ULL

static inline uint64_t fnv1a(uint64_t h, const void *data, size_t len) {
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

#endif
