/* The recall split of a window's targets (see loss_breakdown.h): a small
 * open-addressing table of the window's n-grams (their hash and first start),
 * filled left to right, so a window costs O(T n). A hit is confirmed by
 * comparing the tokens, and a hash collision falls back to a direct scan, so
 * the answer is exact. (stb_ds's 8-byte key hash shifts into the sign bit,
 * which UBSan reports, hence a table of our own.) */
#include "lm/loss_breakdown.h"

#include <stdlib.h>
#include <string.h>

#include "runtime/hash.h"

typedef struct NgramSlot {
    uint64_t hash;
    size_t start_plus_1; /* 0: empty */
} NgramSlot;

/* Does g (n tokens) occur starting at some j <= last_start? */
static int seen_by_scan(const uint32_t *win, size_t last_start, const uint32_t *g, size_t n) {
    for (size_t j = 0; j <= last_start; j++)
        if (memcmp(win + j, g, n * sizeof *g) == 0) return 1;
    return 0;
}

int recall_mark_window(const uint32_t *win, size_t T, size_t n, uint8_t *recall, Error *err) {
    if (n == 0) return err_set(err, "the recall n-gram length must be at least 1");
    memset(recall, 0, T);
    if (n > T) return 0; /* no target has an earlier n-gram to match */
    size_t cap = 16;
    while (cap < 2 * (T + 1)) cap *= 2;
    NgramSlot *table = lm_calloc(cap, sizeof *table, err);
    if (!table) return -1;
    /* The n-gram ending at e is win[e+1-n .. e]; its last token is target e-1. */
    for (size_t e = n - 1; e <= T; e++) {
        const uint32_t *g = win + e + 1 - n;
        uint64_t h = fnv1a(FNV_OFFSET, g, n * sizeof *g);
        size_t i = (size_t)h & (cap - 1);
        int collided = 0, found = 0;
        for (; table[i].start_plus_1; i = (i + 1) & (cap - 1)) {
            if (table[i].hash != h) continue;
            if (memcmp(win + table[i].start_plus_1 - 1, g, n * sizeof *g) == 0) found = 1;
            else collided = 1;
            break;
        }
        if (e >= n) /* an earlier n-gram (ending at <= e-1) exists */
            recall[e - 1] = (uint8_t)(found || (collided && seen_by_scan(win, e - n, g, n)));
        if (!table[i].start_plus_1) table[i] = (NgramSlot){h, e + 2 - n};
    }
    free(table);
    return 0;
}
