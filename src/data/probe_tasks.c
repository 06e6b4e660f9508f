/* Generators of the synthetic recall probes (see probe_tasks.h). */
#include "lm/probe_tasks.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lm/token_mask.h"
#include "lm/tokens.h"

static int is_mqar(const ProbeSpec *s) { return s->task != PROBE_COPY; }

static size_t stored_len(const ProbeSpec *s) { return is_mqar(s) ? 2 * s->pairs : s->segment; }

size_t probe_vocab(const ProbeSpec *s) { return s->task == PROBE_ZOOLOGY ? s->vocab : 256; }

/* zoology: the query slots after the pairs, each two tokens (query, answer). */
static size_t zoology_slots(const ProbeSpec *s) { return (s->seq_len - 2 * s->pairs) / 2; }

size_t probe_queries(const ProbeSpec *s) {
    if (s->task == PROBE_ZOOLOGY) return s->pairs;
    size_t used = 2 * s->pairs + s->gap;
    return used < s->seq_len ? (s->seq_len - used) / 2 : 0;
}

static size_t query_len(const ProbeSpec *s) { return is_mqar(s) ? 2 * probe_queries(s) : s->segment + 1; }

/* The query slots' weights live on the stack: 16,384 of them at most. */
#define ZOOLOGY_MAX_LEN 32768

/* Zoology's own limits: at least 4 tokens per pair (the pairs, and as many
 * slots as queries twice over), an even length, keys and values that fit. */
static int zoology_check(const ProbeSpec *s, size_t vocab, Error *err) {
    if (s->pairs == 0) return err_set(err, "MQAR needs at least one key-value pair");
    if (s->seq_len % 2) return err_set(err, "zoology MQAR needs an even seq_len (got %zu)", s->seq_len);
    if (s->seq_len > ZOOLOGY_MAX_LEN) return err_set(err, "zoology MQAR takes seq_len up to %d (got %zu)", ZOOLOGY_MAX_LEN, s->seq_len);
    if (4 * s->pairs > s->seq_len)
        return err_set(err, "zoology MQAR needs 4 tokens per pair: %zu pairs need seq_len %zu (got %zu)", s->pairs,
                       4 * s->pairs, s->seq_len);
    if (s->gap) return err_set(err, "zoology MQAR places its queries itself: no --gap");
    if (s->fill != PROBE_FILL_ZERO && s->fill != PROBE_FILL_RANDOM) return err_set(err, "unknown filler %d", (int)s->fill);
    if (vocab < 4 || s->pairs > vocab / 2 - 1)
        return err_set(err, "%zu distinct keys need a vocabulary of at least %zu (got %zu)", s->pairs,
                       2 * s->pairs + 2, vocab);
    return 0;
}

int probe_check(const ProbeSpec *s, size_t vocab, Error *err) {
    if (s->task == PROBE_ZOOLOGY) return zoology_check(s, vocab, err);
    if (s->fill != PROBE_FILL_ZERO) return err_set(err, "a random filler is the zoology task's: mqar and copy keep id 0");
    if (s->symbols == 0) return err_set(err, "the number of symbols must be positive");
    if (s->task == PROBE_MQAR && s->pairs == 0) return err_set(err, "MQAR needs at least one key-value pair");
    if (s->task == PROBE_COPY && s->segment == 0) return err_set(err, "the copy segment must be at least 1 token");
    if (s->task == PROBE_MQAR && s->pairs > s->symbols)
        return err_set(err, "%zu pairs need %zu distinct keys but there are only %zu symbols", s->pairs, s->pairs,
                       s->symbols);
    if (s->task == PROBE_MQAR && probe_queries(s) == 0)
        return err_set(err, "no room for queries: %zu pairs and gap %zu fill seq_len %zu", s->pairs, s->gap, s->seq_len);
    size_t need = stored_len(s) + query_len(s) + s->gap;
    if (need > s->seq_len)
        return err_set(err, "the sequence needs %zu tokens (stored part, gap %zu, queries) but seq_len is %zu", need,
                       s->gap, s->seq_len);
    size_t ids = PROBE_FIRST_SYMBOL + (s->task == PROBE_MQAR ? 2 : 1) * s->symbols;
    if (ids > vocab) return err_set(err, "%zu symbols need %zu token ids but the vocabulary has %zu", s->symbols, ids, vocab);
    return 0;
}

/* n distinct draws from lo .. hi-1 (n small beside hi - lo: redrawn on a repeat). */
static void distinct_draws(Rng *rng, uint32_t *out, size_t n, uint32_t lo, uint32_t hi) {
    for (size_t i = 0; i < n; i++) {
        int again;
        do {
            out[i] = lo + (uint32_t)rng_below(rng, hi - lo);
            again = 0;
            for (size_t j = 0; j < i; j++) again |= out[j] == out[i];
        } while (again);
    }
}

/* Zoology's MQAR (probe_tasks.h): the pairs, then each key once at slot g,
 * the slots drawn one after another without replacement, each with
 * probability proportional to (g+1)^(a-1) among those left; then, with the
 * random filler, every position still holding id 0 (no key or value is 0)
 * a token of the whole vocabulary, as Zoology replaces its inputs' zeros. */
static void zoology_sequence(const ProbeSpec *s, Rng *rng, uint32_t *tokens, uint8_t *marked) {
    size_t p = s->pairs, slots = zoology_slots(s), half = s->vocab / 2;
    uint32_t keys[p], values[p];
    double weight[slots];
    distinct_draws(rng, keys, p, 1, (uint32_t)half);
    distinct_draws(rng, values, p, (uint32_t)half, (uint32_t)s->vocab);
    double left = 0.0;
    for (size_t g = 0; g < slots; g++) left += weight[g] = pow((double)(g + 1), PROBE_ZOOLOGY_POWER_A - 1.0);
    for (size_t i = 0; i < p; i++) {
        tokens[2 * i] = keys[i];
        tokens[2 * i + 1] = values[i];
        double u = rng_uniform(rng) * left;
        size_t g = 0, last = 0;
        for (; g < slots; g++) { /* the slot whose share of the weight left holds u (the last one left, at round-off) */
            if (weight[g] == 0.0) continue;
            last = g;
            if ((u -= weight[g]) < 0.0) break;
        }
        if (g == slots) g = last;
        left -= weight[g];
        weight[g] = 0.0;
        size_t q = 2 * p + 2 * g;
        tokens[q] = keys[i];
        tokens[q + 1] = values[i];
        marked[q + 1] = 1;
    }
    if (s->fill == PROBE_FILL_RANDOM)
        for (size_t t = 2 * p; t < s->seq_len; t++)
            if (tokens[t] == PROBE_FILLER) tokens[t] = (uint32_t)rng_below(rng, s->vocab);
}

void probe_sequence(const ProbeSpec *s, Rng *rng, uint32_t *tokens, uint8_t *marked) {
    size_t L = s->seq_len, K = s->symbols;
    for (size_t i = 0; i < L; i++) tokens[i] = PROBE_FILLER;
    memset(marked, 0, L);
    size_t q = stored_len(s) + s->gap; /* where the queries (or the repeat) start */
    if (s->task == PROBE_ZOOLOGY) {
        zoology_sequence(s, rng, tokens, marked);
    } else if (s->task == PROBE_MQAR) {
        /* p distinct keys: a partial Fisher-Yates shuffle of 0..K-1. */
        uint32_t keys[K], values[K], order[K];
        size_t nq = probe_queries(s);
        for (size_t i = 0; i < K; i++) keys[i] = (uint32_t)i;
        for (size_t i = 0; i < s->pairs; i++) {
            size_t j = i + (size_t)rng_below(rng, K - i);
            uint32_t t = keys[i];
            keys[i] = keys[j], keys[j] = t;
            values[i] = (uint32_t)rng_below(rng, K);
            tokens[2 * i] = PROBE_FIRST_SYMBOL + keys[i];
            tokens[2 * i + 1] = PROBE_FIRST_SYMBOL + (uint32_t)K + values[i];
        }
        /* The queries: independent draws, or shuffled rounds of all p stored pairs cut at nq. */
        for (size_t i = 0; i < nq; i++) {
            int rounds = s->queries == PROBE_QUERIES_ROUNDS;
            if (rounds && i % s->pairs == 0) {
                for (size_t k = 0; k < s->pairs; k++) order[k] = (uint32_t)k;
                for (size_t k = 0; k + 1 < s->pairs; k++) {
                    size_t j = k + (size_t)rng_below(rng, s->pairs - k);
                    uint32_t t = order[k];
                    order[k] = order[j], order[j] = t;
                }
            }
            size_t pick = rounds ? order[i % s->pairs] : (size_t)rng_below(rng, s->pairs);
            tokens[q + 2 * i] = tokens[2 * pick];
            tokens[q + 2 * i + 1] = tokens[2 * pick + 1];
            marked[q + 2 * i + 1] = 1;
        }
    } else {
        for (size_t i = 0; i < s->segment; i++) tokens[i] = PROBE_FIRST_SYMBOL + (uint32_t)rng_below(rng, K);
        tokens[q] = PROBE_MARK;
        for (size_t i = 0; i < s->segment; i++) {
            tokens[q + 1 + i] = tokens[i];
            marked[q + 1 + i] = 1;
        }
    }
}

int probe_write_split(const char *dir, const char *name, const ProbeSpec *s, size_t seqs, uint64_t seed, Error *err) {
    size_t L = s->seq_len, n = seqs * L + 1;
    uint32_t *tokens = lm_calloc(n, sizeof *tokens, err);
    uint8_t *marked = tokens ? lm_calloc(n, 1, err) : NULL;
    int rc = -1;
    if (!marked) goto done;
    Rng rng;
    rng_seed(&rng, seed);
    for (size_t q = 0; q < seqs; q++) probe_sequence(s, &rng, tokens + q * L, marked + q * L);
    tokens[n - 1] = PROBE_FILLER;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.bin", dir, name);
    if (tokens_write(path, tokens, n, probe_vocab(s), err)) goto done;
    snprintf(path, sizeof path, "%s/%s.mask", dir, name);
    if (mask_write(path, marked, n, err)) goto done;
    rc = 0;
done:
    free(tokens);
    free(marked);
    return rc;
}
