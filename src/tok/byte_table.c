/* A hash set of byte strings numbering its entries in insertion order. */
#include "lm/byte_table.h"

#include <stdlib.h>
#include <string.h>

#include "lm/ds.h"
#include "lm/error.h"
#include "runtime/hash.h"

static uint64_t hash_bytes(const char *key, size_t len) {
    uint64_t h = fnv1a(FNV_OFFSET, key, len);
    return h ^ (h >> 29); /* FNV's low bits mix poorly; the slot index uses them */
}

size_t byte_table_count(const ByteTable *t) { return arrlenu(t->hashes); }

const char *byte_table_key(const ByteTable *t, size_t entry, size_t *len) {
    *len = t->offsets[entry + 1] - t->offsets[entry];
    return t->keys + t->offsets[entry];
}

static size_t probe(const ByteTable *t, const char *key, size_t len, uint64_t h) {
    size_t mask = t->cap - 1, i = (size_t)h & mask;
    for (;; i = (i + 1) & mask) {
        uint32_t s = t->slots[i];
        if (s == 0) return i;
        size_t e = s - 1, elen;
        const char *k = byte_table_key(t, e, &elen);
        if (t->hashes[e] == h && elen == len && memcmp(k, key, len) == 0) return i;
    }
}

static void grow(ByteTable *t) {
    size_t cap = t->cap ? 2 * t->cap : 1024;
    uint32_t *slots = calloc(cap, sizeof(uint32_t));
    if (!slots) abort(); /* out of memory for a few MB of slots: nothing sensible to continue with */
    free(t->slots);
    t->slots = slots;
    t->cap = cap;
    for (size_t e = 0; e < arrlenu(t->hashes); e++) {
        size_t i = (size_t)t->hashes[e] & (cap - 1);
        while (t->slots[i]) i = (i + 1) & (cap - 1);
        t->slots[i] = (uint32_t)(e + 1);
    }
}

ptrdiff_t byte_table_find(const ByteTable *t, const char *key, size_t len) {
    if (!t->cap) return -1;
    uint32_t s = t->slots[probe(t, key, len, hash_bytes(key, len))];
    return s ? (ptrdiff_t)s - 1 : -1;
}

size_t byte_table_intern(ByteTable *t, const char *key, size_t len, int *added) {
    if (2 * (arrlenu(t->hashes) + 1) > t->cap) grow(t);
    uint64_t h = hash_bytes(key, len);
    size_t i = probe(t, key, len, h);
    if (t->slots[i]) {
        *added = 0;
        return t->slots[i] - 1;
    }
    *added = 1;
    if (arrlenu(t->offsets) == 0) arrput(t->offsets, 0);
    if (len) memcpy(arraddnptr(t->keys, len), key, len);
    arrput(t->offsets, arrlenu(t->keys));
    arrput(t->hashes, h);
    t->slots[i] = (uint32_t)arrlenu(t->hashes);
    return arrlenu(t->hashes) - 1;
}

void byte_table_free(ByteTable *t) {
    free(t->slots);
    arrfree(t->hashes);
    arrfree(t->offsets);
    arrfree(t->keys);
    memset(t, 0, sizeof *t);
}
