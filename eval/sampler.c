/* The sampler (see eval/sampler.h). */
#include "sampler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lm/machine.h"

int sampler_init(Sampler *s, size_t V, Error *err) {
    memset(s, 0, sizeof *s);
    s->V = V;
    s->probs = lm_calloc(V, sizeof(float), err);
    s->order = s->probs ? lm_calloc(V, sizeof(size_t), err) : NULL;
    s->penalised = s->order ? lm_calloc(V, sizeof(float), err) : NULL;
    s->seen = s->penalised ? lm_calloc(V, 1, err) : NULL;
    if (s->seen) return 0;
    sampler_free(s);
    return -1;
}

void sampler_free(Sampler *s) {
    free(s->probs);
    free(s->order);
    free(s->penalised);
    free(s->seen);
    memset(s, 0, sizeof *s);
}

/* Whether id i ranks before id j: the larger logit, the lower id among equals. */
static int ranks_before(const float *z, size_t i, size_t j) { return z[i] > z[j] || (z[i] == z[j] && i < j); }

/* Sinks heap[at] in a heap of n ids whose root is the one that ranks last. */
static void sift_down(size_t *heap, size_t n, size_t at, const float *z) {
    for (;;) {
        size_t last = at, l = 2 * at + 1, r = l + 1;
        if (l < n && ranks_before(z, heap[last], heap[l])) last = l;
        if (r < n && ranks_before(z, heap[last], heap[r])) last = r;
        if (last == at) return;
        size_t t = heap[at];
        heap[at] = heap[last];
        heap[last] = t;
        at = last;
    }
}

/* The k ids of logits (V) that rank first, in rank order, into order[0..k):
 * O(V log k) through a heap of the best k so far (a sort of all 50,257 of
 * GPT-2's logits for every token would cost more than the token's head). */
static void top_ids(size_t *order, const float *z, size_t V, size_t k) {
    for (size_t i = 0; i < k; i++) order[i] = i;
    for (size_t i = k / 2; i-- > 0;) sift_down(order, k, i, z);
    for (size_t v = k; v < V; v++)
        if (ranks_before(z, v, order[0])) {
            order[0] = v;
            sift_down(order, k, 0, z);
        }
    for (size_t n = k; n > 1; n--) { /* the last-ranked to the back, one at a time */
        size_t t = order[0];
        order[0] = order[n - 1];
        order[n - 1] = t;
        sift_down(order, n - 1, 0, z);
    }
}

/* The logits with the repetition penalty applied to the last tokens, each
 * once: s->penalised, or logits itself when there is no penalty. */
static const float *penalise(Sampler *s, const float *logits, const SamplerSettings *o, const uint32_t *recent,
                             size_t n_recent) {
    size_t n = n_recent < o->repeat_last_n ? n_recent : o->repeat_last_n;
    if (o->repeat_penalty == 1.0f || n == 0) return logits;
    float *z = s->penalised;
    memcpy(z, logits, s->V * sizeof *z);
    recent += n_recent - n;
    for (size_t i = 0; i < n; i++)
        if (recent[i] < s->V && !s->seen[recent[i]]) {
            s->seen[recent[i]] = 1;
            z[recent[i]] = z[recent[i]] > 0 ? z[recent[i]] / o->repeat_penalty : z[recent[i]] * o->repeat_penalty;
        }
    for (size_t i = 0; i < n; i++)
        if (recent[i] < s->V) s->seen[recent[i]] = 0;
    return z;
}

/* Top-p: the fewest ids in rank order, among the k that rank first, whose
 * probabilities at temperature 1 reach top_p of those k's (at least one),
 * into s->order, their exp(z - z_best) into s->probs; returns how many.
 * Over the whole vocabulary the ranking grows from the first 256 ids, four
 * times over, until they reach it: a trained model's nucleus is a few
 * hundred ids, and a sort of all 50,257 of GPT-2's costs more than a token. */
static size_t nucleus(Sampler *s, const float *z, size_t k, size_t best, float top_p) {
    double total = 0.0;
    size_t m = k;
    if (k < s->V) {
        top_ids(s->order, z, s->V, k);
        for (size_t i = 0; i < k; i++) total += expf(z[s->order[i]] - z[best]);
    } else {
        for (size_t v = 0; v < s->V; v++) total += expf(z[v] - z[best]);
        m = k < 256 ? k : 256;
    }
    for (;;) {
        if (k == s->V) top_ids(s->order, z, s->V, m);
        double acc = 0.0;
        size_t i = 0;
        while (i < m && (i == 0 || acc < top_p * total)) acc += s->probs[i] = expf(z[s->order[i]] - z[best]), i++;
        if (i < m || acc >= top_p * total || m == k) return i;
        m = m < k / 4 ? 4 * m : k;
    }
}

size_t sampler_candidates(Sampler *s, const float *logits, const SamplerSettings *o, const uint32_t *recent,
                          size_t n_recent) {
    const float *z = penalise(s, logits, o, recent, n_recent);
    size_t V = s->V, best = 0;
    for (size_t v = 1; v < V; v++) best = z[v] > z[best] ? v : best;
    if (o->temperature == 0.0f) {
        s->order[0] = best;
        s->probs[0] = 1.0f;
        return 1;
    }
    size_t n = o->top_k && o->top_k < V ? o->top_k : V;
    if (o->top_p < 1.0f) n = nucleus(s, z, n, best, o->top_p);
    else if (n < V) top_ids(s->order, z, V, n);
    else
        for (size_t v = 0; v < V; v++) s->order[v] = v;
    if (o->min_p > 0.0f) { /* the probabilities at temperature 1 over the largest's: its own is 1, so it stays */
        size_t m = 0;
        for (size_t i = 0; i < n; i++)
            if (expf(z[s->order[i]] - z[best]) >= o->min_p) s->order[m++] = s->order[i];
        n = m;
    }
    for (size_t i = 0; i < n; i++) s->probs[i] = expf((z[s->order[i]] - z[best]) / o->temperature);
    return n;
}

uint32_t sampler_pick(Sampler *s, const float *logits, const SamplerSettings *o, const uint32_t *recent,
                      size_t n_recent, Rng *rng) {
    size_t n = sampler_candidates(s, logits, o, recent, n_recent);
    if (o->temperature == 0.0f) return (uint32_t)s->order[0];
    double sum = 0.0;
    for (size_t i = 0; i < n; i++) sum += s->probs[i];
    double u = rng_uniform(rng) * sum, acc = 0.0;
    for (size_t i = 0; i < n; i++) {
        acc += s->probs[i];
        if (u < acc) return (uint32_t)s->order[i];
    }
    return (uint32_t)s->order[n - 1];
}
