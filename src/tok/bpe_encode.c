/* BPE encoding by merge rank, with a cache of pieces' ids per thread and
 * OpenMP across chunks of a large text. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "lm/ds.h"
#include "lm/bpe.h"

#define CACHE_MAX_PIECES (1u << 18) /* then the cache stops growing */
#define CACHE_MAX_LEN 64            /* longer pieces are rare: not cached */
#define ENCODE_CHUNK (1u << 20)     /* bytes per parallel chunk */
#define DEAD UINT32_MAX

typedef struct Candidate {
    uint32_t rank; /* the merged id: lower = earlier merge */
    uint32_t pos;
    uint32_t left, right;
} Candidate;

static int cand_before(const Candidate *x, const Candidate *y) {
    return x->rank < y->rank || (x->rank == y->rank && x->pos < y->pos);
}

static void cand_push(Candidate **h, Candidate c) {
    arrput(*h, c);
    Candidate *a = *h;
    for (size_t i = arrlenu(a) - 1; i > 0 && cand_before(&a[i], &a[(i - 1) / 2]); i = (i - 1) / 2) {
        Candidate t = a[i];
        a[i] = a[(i - 1) / 2];
        a[(i - 1) / 2] = t;
    }
}

static Candidate cand_pop(Candidate **h) {
    Candidate *a = *h, top = a[0];
    a[0] = arrpop(*h);
    size_t n = arrlenu(*h), i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, best = i;
        if (l < n && cand_before(&a[l], &a[best])) best = l;
        if (r < n && cand_before(&a[r], &a[best])) best = r;
        if (best == i) break;
        Candidate t = a[i];
        a[i] = a[best];
        a[best] = t;
        i = best;
    }
    return top;
}

static void consider(const Bpe *b, Candidate **heap, const uint32_t *id, uint32_t pos, uint32_t next) {
    /* No merges, no map: hmgeti_ts on an empty map allocates a default
     * entry into the local copy, a leak on every call. */
    if (pos == DEAD || next == DEAD || !b->ranks) return;
    /* Plain hmgeti writes into the map's header, and threads share the map:
     * the _ts form, on a local copy of the pointer (it assigns that too). */
    PairRank *ranks = b->ranks;
    ptrdiff_t temp, at = hmgeti_ts(ranks, (uint64_t)id[pos] << 32 | id[next], temp);
    if (at < 0) return;
    Candidate c = {ranks[at].value, pos, id[pos], id[next]};
    cand_push(heap, c);
}

/* The symbols form a linked list; a min-heap holds every adjacent pair that
 * has a merge, by (rank, position); entries whose symbols have changed since
 * are skipped. O(n log n) in the piece's length. */
void bpe_encode_piece(const Bpe *b, const char *piece, size_t len, uint32_t **ids) {
    if (len == 0) return;
    uint32_t *id = malloc(len * sizeof(uint32_t)), *next = malloc(len * sizeof(uint32_t)),
             *prev = malloc(len * sizeof(uint32_t));
    for (size_t i = 0; i < len; i++) {
        id[i] = b->id_of_byte[(unsigned char)piece[i]];
        next[i] = i + 1 < len ? (uint32_t)(i + 1) : DEAD;
        prev[i] = i ? (uint32_t)(i - 1) : DEAD;
    }
    Candidate *heap = NULL;
    for (size_t i = 0; i + 1 < len; i++) consider(b, &heap, id, (uint32_t)i, (uint32_t)(i + 1));
    while (arrlenu(heap) > 0) {
        Candidate c = cand_pop(&heap);
        uint32_t q = next[c.pos];
        if (id[c.pos] != c.left || q == DEAD || id[q] != c.right) continue; /* stale */
        id[c.pos] = c.rank;
        id[q] = DEAD; /* removed: no candidate at q matches any more */
        next[c.pos] = next[q];
        if (next[q] != DEAD) prev[next[q]] = c.pos;
        consider(b, &heap, id, prev[c.pos], c.pos);
        consider(b, &heap, id, c.pos, next[c.pos]);
    }
    for (uint32_t i = 0; i != DEAD; i = next[i]) arrput(*ids, id[i]);
    arrfree(heap);
    free(id);
    free(next);
    free(prev);
}

typedef struct EncodeCtx {
    const Bpe *b;
    BpeCache *cache;
    uint32_t **ids;
} EncodeCtx;

static void encode_cached(const char *piece, size_t len, void *ctx) {
    EncodeCtx *e = ctx;
    if (len == 1) {
        arrput(*e->ids, e->b->id_of_byte[(unsigned char)piece[0]]);
        return;
    }
    BpeCache *c = e->cache;
    if (len <= CACHE_MAX_LEN) {
        ptrdiff_t at = byte_table_find(&c->pieces, piece, len);
        if (at >= 0) {
            size_t n = c->starts[at + 1] - c->starts[at];
            memcpy(arraddnptr(*e->ids, n), c->ids + c->starts[at], n * sizeof(uint32_t));
            return;
        }
    }
    size_t from = arrlenu(*e->ids);
    bpe_encode_piece(e->b, piece, len, e->ids);
    if (len <= CACHE_MAX_LEN && byte_table_count(&c->pieces) < CACHE_MAX_PIECES) {
        int added;
        byte_table_intern(&c->pieces, piece, len, &added);
        if (arrlenu(c->starts) == 0) arrput(c->starts, 0);
        size_t n = arrlenu(*e->ids) - from;
        memcpy(arraddnptr(c->ids, n), *e->ids + from, n * sizeof(uint32_t));
        arrput(c->starts, arrlenu(c->ids));
    }
}

static void encode_serial(const Bpe *b, BpeCache *cache, const char *text, size_t len, uint32_t **ids) {
    EncodeCtx e = {b, cache, ids};
    pretok_split(&b->pre, text, len, encode_cached, &e);
}

void bpe_encode(const Bpe *b, const char *text, size_t len, uint32_t **ids) {
    if (!b->pre.cuttable || len < 2 * ENCODE_CHUNK || b->n_caches < 2) {
        encode_serial(b, &b->caches[0], text, len, ids);
        return;
    }
    size_t *cuts = bpe_safe_cuts(text, len, ENCODE_CHUNK);
    size_t n_chunks = arrlenu(cuts) > 1 ? arrlenu(cuts) - 1 : 0;
    uint32_t **parts = calloc(n_chunks, sizeof(uint32_t *));
    int width = (int)b->n_caches;
#pragma omp parallel for schedule(dynamic, 1) num_threads(width)
    for (size_t k = 0; k < n_chunks; k++)
        encode_serial(b, &b->caches[omp_get_thread_num()], text + cuts[k], cuts[k + 1] - cuts[k], &parts[k]);
    for (size_t k = 0; k < n_chunks; k++) {
        size_t n = arrlenu(parts[k]);
        if (n) memcpy(arraddnptr(*ids, n), parts[k], n * sizeof(uint32_t));
        arrfree(parts[k]);
    }
    free(parts);
    arrfree(cuts);
}
