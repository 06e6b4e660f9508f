/* BPE training by incremental pair counting.
 *
 * The training text is reduced to its unique pre-tokens ("words") with their
 * counts. A table holds, for every adjacent pair of tokens, its count over all
 * words and the words it occurs in; a max-heap orders the pairs by count. A
 * merge rewrites only the words that hold the pair and changes only the
 * counts of the pairs around each occurrence; the heap is lazy: entries whose
 * count is no longer the pair's are dropped when they reach the top. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "lm/ds.h"
#include "lm/bpe.h"

/* ---- counting pre-tokens ------------------------------------------------ */

void bpe_counter_init(BpeCounter *c, const Pretokenizer *pre) {
    memset(c, 0, sizeof *c);
    c->pre = pre;
}

void bpe_counter_free(BpeCounter *c) {
    byte_table_free(&c->words);
    arrfree(c->counts);
    memset(c, 0, sizeof *c);
}

static void count_piece(const char *piece, size_t len, void *ctx) {
    BpeCounter *c = ctx;
    int added;
    size_t e = byte_table_intern(&c->words, piece, len, &added);
    if (added) arrput(c->counts, 0);
    c->counts[e]++;
}

#define COUNT_CHUNK (4u << 20)

void bpe_count(BpeCounter *c, const char *text, size_t len) {
    c->bytes += len;
    if (!c->pre->cuttable || len < 2 * COUNT_CHUNK) {
        pretok_split(c->pre, text, len, count_piece, c);
        return;
    }
    /* Cut at safe points, count each chunk into its own table in parallel,
     * then add the tables in chunk order (the result is the serial one). */
    size_t *cuts = bpe_safe_cuts(text, len, COUNT_CHUNK);
    size_t n_chunks = arrlenu(cuts) > 1 ? arrlenu(cuts) - 1 : 0;
    BpeCounter *parts = calloc(n_chunks, sizeof(BpeCounter));
#pragma omp parallel for schedule(dynamic, 1)
    for (size_t k = 0; k < n_chunks; k++) {
        bpe_counter_init(&parts[k], c->pre);
        pretok_split(c->pre, text + cuts[k], cuts[k + 1] - cuts[k], count_piece, &parts[k]);
    }
    for (size_t k = 0; k < n_chunks; k++) {
        for (size_t w = 0; w < byte_table_count(&parts[k].words); w++) {
            size_t wl;
            const char *key = byte_table_key(&parts[k].words, w, &wl);
            int added;
            size_t e = byte_table_intern(&c->words, key, wl, &added);
            if (added) arrput(c->counts, 0);
            c->counts[e] += parts[k].counts[w];
        }
        bpe_counter_free(&parts[k]);
    }
    free(parts);
    arrfree(cuts);
}

/* ---- training ----------------------------------------------------------- */

typedef struct PairInfo {
    uint64_t key;
    int64_t count;
    uint32_t *words; /* stb_ds: words that held the pair at some point (may be stale) */
    uint32_t stamp;  /* the last merge that changed the count */
    uint8_t forbidden;
} PairInfo;

typedef struct PairSlot {
    uint64_t key;
    uint32_t value; /* index into infos */
} PairSlot;

typedef struct HeapEntry {
    int64_t count;
    uint64_t key;
} HeapEntry;

typedef struct Trainer {
    uint32_t *syms;   /* all words' tokens; word w at syms[start[w] .. + len[w]) */
    size_t *start;
    uint32_t *len;
    const uint64_t *freq;
    size_t n_words;
    PairSlot *pairs;  /* stb_ds hash map */
    PairInfo *infos;  /* stb_ds */
    HeapEntry *heap;  /* stb_ds */
    uint32_t *touched;
    uint32_t stamp;
    ByteTable tokens; /* the bytes of every token; entry = id */
} Trainer;

static uint64_t pair_key(uint32_t a, uint32_t b) { return (uint64_t)a << 32 | b; }

/* Higher count first; equal counts: smaller (left, right) first. */
static int heap_before(HeapEntry x, HeapEntry y) { return x.count > y.count || (x.count == y.count && x.key < y.key); }

static void heap_push(Trainer *t, HeapEntry e) {
    arrput(t->heap, e);
    size_t i = arrlenu(t->heap) - 1;
    while (i > 0 && heap_before(t->heap[i], t->heap[(i - 1) / 2])) {
        HeapEntry tmp = t->heap[i];
        t->heap[i] = t->heap[(i - 1) / 2];
        t->heap[(i - 1) / 2] = tmp;
        i = (i - 1) / 2;
    }
}

static HeapEntry heap_pop(Trainer *t) {
    HeapEntry top = t->heap[0];
    t->heap[0] = arrpop(t->heap);
    size_t n = arrlenu(t->heap), i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, best = i;
        if (l < n && heap_before(t->heap[l], t->heap[best])) best = l;
        if (r < n && heap_before(t->heap[r], t->heap[best])) best = r;
        if (best == i) break;
        HeapEntry tmp = t->heap[i];
        t->heap[i] = t->heap[best];
        t->heap[best] = tmp;
        i = best;
    }
    return top;
}

static uint32_t pair_info(Trainer *t, uint64_t key) {
    ptrdiff_t at = hmgeti(t->pairs, key);
    if (at >= 0) return t->pairs[at].value;
    PairInfo fresh = {.key = key};
    arrput(t->infos, fresh);
    hmput(t->pairs, key, (uint32_t)(arrlenu(t->infos) - 1));
    return (uint32_t)(arrlenu(t->infos) - 1);
}

/* Adds delta to a pair's count, notes the word (delta > 0) and the change. */
static void add_count(Trainer *t, uint32_t a, uint32_t b, int64_t delta, uint32_t word) {
    uint32_t at = pair_info(t, pair_key(a, b)); /* first: it may move t->infos */
    PairInfo *p = &t->infos[at];
    p->count += delta;
    if (delta > 0 && (arrlenu(p->words) == 0 || arrlast(p->words) != word)) arrput(p->words, word);
    if (p->stamp != t->stamp) {
        p->stamp = t->stamp;
        arrput(t->touched, (uint32_t)(p - t->infos));
    }
}

/* Rewrites word w with every non-overlapping (a, b), left to right, as id. */
static void merge_word(Trainer *t, uint32_t w, uint32_t a, uint32_t b, uint32_t id) {
    uint32_t *s = t->syms + t->start[w], n = t->len[w], o = 0;
    int64_t f = (int64_t)t->freq[w];
    for (uint32_t i = 0; i < n;) {
        if (i + 1 < n && s[i] == a && s[i + 1] == b) {
            if (o > 0) {
                add_count(t, s[o - 1], a, -f, w);
                add_count(t, s[o - 1], id, f, w);
            }
            if (i + 2 < n) {
                add_count(t, b, s[i + 2], -f, w);
                add_count(t, id, s[i + 2], f, w);
            }
            add_count(t, a, b, -f, w);
            s[o++] = id;
            i += 2;
        } else {
            s[o++] = s[i++];
        }
    }
    t->len[w] = o;
}

static void trainer_free(Trainer *t) {
    for (size_t i = 0; i < arrlenu(t->infos); i++) arrfree(t->infos[i].words);
    arrfree(t->infos);
    hmfree(t->pairs);
    arrfree(t->heap);
    arrfree(t->touched);
    arrfree(t->syms);
    arrfree(t->start);
    arrfree(t->len);
    byte_table_free(&t->tokens);
}

size_t bpe_train(Bpe *b, const BpeCounter *c, size_t n_merges) {
    Trainer t = {0};
    t.freq = c->counts;
    t.n_words = byte_table_count(&c->words);
    int added;
    for (int i = 0; i < 256; i++) {
        char byte = (char)i;
        byte_table_intern(&t.tokens, &byte, 1, &added);
    }
    for (size_t w = 0; w < t.n_words; w++) {
        size_t wl;
        const unsigned char *key = (const unsigned char *)byte_table_key(&c->words, w, &wl);
        arrput(t.start, arrlenu(t.syms));
        arrput(t.len, (uint32_t)wl);
        uint32_t *dst = arraddnptr(t.syms, wl);
        for (size_t i = 0; i < wl; i++) dst[i] = key[i];
    }
    t.stamp = 1;
    for (size_t w = 0; w < t.n_words; w++)
        for (uint32_t i = 0; i + 1 < t.len[w]; i++)
            add_count(&t, t.syms[t.start[w] + i], t.syms[t.start[w] + i + 1], (int64_t)t.freq[w], (uint32_t)w);
    for (size_t i = 0; i < arrlenu(t.infos); i++) {
        HeapEntry e = {t.infos[i].count, t.infos[i].key};
        if (e.count > 0) heap_push(&t, e);
    }
    arrclear(t.touched);
    arrfree(b->merges);
    size_t learned = 0;
    while (learned < n_merges && arrlenu(t.heap) > 0) {
        HeapEntry top = heap_pop(&t);
        uint32_t info = t.pairs[hmgeti(t.pairs, top.key)].value;
        PairInfo *p = &t.infos[info];
        if (p->forbidden || p->count != top.count || p->count <= 0) continue; /* stale */
        uint32_t left = (uint32_t)(top.key >> 32), right = (uint32_t)top.key;
        size_t ll, rl;
        const char *lb = byte_table_key(&t.tokens, left, &ll), *rb = byte_table_key(&t.tokens, right, &rl);
        char *joined = malloc(ll + rl);
        memcpy(joined, lb, ll);
        memcpy(joined + ll, rb, rl);
        size_t id = byte_table_intern(&t.tokens, joined, ll + rl, &added);
        free(joined);
        if (!added) { /* those bytes are a token already */
            t.infos[info].forbidden = 1;
            continue;
        }
        BpeMerge m = {left, right};
        arrput(b->merges, m);
        learned++;
        t.stamp++;
        arrclear(t.touched);
        uint32_t *words = t.infos[info].words;
        t.infos[info].words = NULL; /* the pair is gone from every word after this merge */
        for (size_t i = 0; i < arrlenu(words); i++) merge_word(&t, words[i], left, right, (uint32_t)id);
        arrfree(words);
        for (size_t i = 0; i < arrlenu(t.touched); i++) {
            PairInfo *q = &t.infos[t.touched[i]];
            HeapEntry e = {q->count, q->key};
            if (q->count > 0 && !q->forbidden) heap_push(&t, e);
        }
    }
    trainer_free(&t);
    return learned;
}
