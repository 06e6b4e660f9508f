/* Synthetic recall probes (Zoology-style), one fixed-length sequence at a time:
 *   MQAR  k1 v1 k2 v2 ... kp vp | gap of filler | q1 a1 q2 a2 ... | filler
 *         p distinct keys with random values, then queries filling the rest
 *         of the sequence, each a stored key: drawn independently (RANDOM),
 *         or in shuffled rounds, every key once before any repeats (ROUNDS:
 *         the last query of a round can then be guessed by elimination); the
 *         answers a_i (the value stored with q_i) are marked. Many queries per
 *         sequence: a dense training signal.
 *   copy  s1 ... sS | gap of filler | MARK s1 ... sS | filler
 *         a random segment repeated after a gap; the repeat is marked.
 *   zoology  MQAR as the Zoology paper's generator draws it (Arora et al. 2023):
 *         k1 v1 ... kp vp, then every key queried once, each query at an even
 *         offset 2g after the pairs with g drawn without replacement from a
 *         power law (weight (g+1)^(a-1), a = 0.01: near queries likelier),
 *         its answer (the value) right after it and marked. Over a
 *         `vocab`-token vocabulary (Zoology: 8,192): keys distinct, from
 *         1 .. V/2-1, values distinct, from V/2 .. V-1. Every other position
 *         is filler: with PROBE_FILL_RANDOM (Zoology's random_non_queries,
 *         its default) a token drawn uniformly from the whole vocabulary,
 *         0 .. V-1, after the sequence's own draws; with PROBE_FILL_ZERO
 *         id 0, as this generator wrote it first (the same draws, so the
 *         two differ at the filler positions alone).
 * Token ids of mqar and copy: 0 filler, 1 the copy marker, keys (and copy
 * symbols) 2 .. 2+K-1, values 2+K .. 2+2K-1, for K = `symbols`. The distance
 * from a stored item to its query grows with the gap. */
#ifndef LM_PROBE_TASKS_H
#define LM_PROBE_TASKS_H

#include <stddef.h>
#include <stdint.h>

#include "lm/error.h"
#include "lm/rng.h"

typedef enum { PROBE_MQAR = 0, PROBE_COPY = 1, PROBE_ZOOLOGY = 2 } ProbeTask;
typedef enum { PROBE_QUERIES_ROUNDS = 0, PROBE_QUERIES_RANDOM = 1 } ProbeQueries;
typedef enum { PROBE_FILL_ZERO = 0, PROBE_FILL_RANDOM = 1 } ProbeFill;

#define PROBE_FILLER 0u
#define PROBE_MARK 1u
#define PROBE_FIRST_SYMBOL 2u
/* zoology: the power law of the query offsets (Zoology's train_power_a and test_power_a). */
#define PROBE_ZOOLOGY_POWER_A 0.01

typedef struct ProbeSpec {
    ProbeTask task;
    size_t seq_len;
    size_t symbols; /* K: distinct keys (MQAR) or segment symbols (copy) */
    size_t pairs;   /* MQAR: key-value pairs */
    size_t segment; /* copy: segment length */
    size_t gap;     /* filler between the stored part and the queries / the repeat: the distance */
    ProbeQueries queries; /* MQAR: the order of the queries */
    size_t vocab;   /* zoology: the vocabulary the keys and values are drawn from */
    ProbeFill fill; /* zoology: what the positions outside the pairs and the queries hold */
} ProbeSpec;

/* MQAR: the number of query-answer pairs after the pairs and the gap
 * (zoology: one per pair). */
size_t probe_queries(const ProbeSpec *s);
/* Checks that the parts fit in seq_len and that the ids fit in vocab (the
 * token files' vocabulary: probe_vocab). */
int probe_check(const ProbeSpec *s, size_t vocab, Error *err);
/* The vocabulary the token files are written with: 256 (bytes), or zoology's own. */
size_t probe_vocab(const ProbeSpec *s);
/* One sequence: seq_len tokens, and marked[i] = 1 for the answer tokens. */
void probe_sequence(const ProbeSpec *s, Rng *rng, uint32_t *tokens, uint8_t *marked);
/* DIR/<name>.bin and DIR/<name>.mask: `seqs` sequences drawn from `seed`,
 * back to back, plus one filler token so that the last window has its target. */
int probe_write_split(const char *dir, const char *name, const ProbeSpec *s, size_t seqs, uint64_t seed, Error *err);

#endif
