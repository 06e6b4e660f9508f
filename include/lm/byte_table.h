/* A hash set of byte strings (any bytes, NUL included) that numbers its
 * entries 0, 1, 2, ... in insertion order: BPE training counts pre-tokens
 * with it and encoding caches their ids. */
#ifndef LM_BYTE_TABLE_H
#define LM_BYTE_TABLE_H

#include <stddef.h>
#include <stdint.h>

typedef struct ByteTable {
    uint32_t *slots;   /* entry + 1, 0 = empty; capacity a power of two */
    size_t cap;
    uint64_t *hashes;  /* stb_ds, per entry */
    size_t *offsets;   /* stb_ds, per entry + 1: entry i is keys[offsets[i] .. offsets[i+1]) */
    char *keys;        /* stb_ds */
} ByteTable;

/* The entry of key, added if new (*added says which). */
size_t byte_table_intern(ByteTable *t, const char *key, size_t len, int *added);
/* The entry of key, or -1. */
ptrdiff_t byte_table_find(const ByteTable *t, const char *key, size_t len);
size_t byte_table_count(const ByteTable *t);
const char *byte_table_key(const ByteTable *t, size_t entry, size_t *len);
void byte_table_free(ByteTable *t);

#endif
