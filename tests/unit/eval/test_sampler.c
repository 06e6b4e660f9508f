/* Unit tests of the sampler (eval/sampler.h) and of the stop strings'
 * search (eval/generate.h): every option against a reference computation on
 * fixed logits, in doubles and sorts of all the ids; the draws against the
 * distribution; the defaults drawing exactly what a plain softmax draw does. */
#include "testutil.h"

#include "eval/generate.h"
#include "eval/sampler.h"

/* A stable sort of ids by logit, largest first: the rank order. */
static const float *cmp_logits;
static int stable_desc(const void *a, const void *b) {
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    float x = cmp_logits[i], y = cmp_logits[j];
    return x > y ? -1 : x < y ? 1 : (i > j) - (i < j);
}

/* The sampler's answer computed from its definition: the penalty on the
 * distinct ids of the last repeat_last_n tokens, all ids sorted, the first
 * top_k, then the shortest prefix whose softmax (temperature 1, over those
 * k) reaches top_p, then those at least min_p times the first's
 * probability; ids (in rank order) and their probabilities at the
 * temperature into ids and p; returns how many. */
static size_t reference(const float *logits, size_t V, const SamplerSettings *o, const uint32_t *recent,
                        size_t n_recent, size_t *ids, double *p) {
    float *z = malloc(V * sizeof *z);
    memcpy(z, logits, V * sizeof *z);
    size_t last = n_recent < o->repeat_last_n ? n_recent : o->repeat_last_n;
    for (size_t v = 0; v < V; v++) {
        int recent_v = 0;
        for (size_t i = n_recent - last; i < n_recent; i++) recent_v |= recent[i] == v;
        if (recent_v) z[v] = z[v] > 0 ? z[v] / o->repeat_penalty : z[v] * o->repeat_penalty;
    }
    for (size_t v = 0; v < V; v++) ids[v] = v;
    cmp_logits = z;
    qsort(ids, V, sizeof *ids, stable_desc);
    size_t n = o->top_k && o->top_k < V ? o->top_k : V;
    if (o->temperature == 0.0f) n = 1;
    double total = 0.0, acc = 0.0, top = z[ids[0]];
    for (size_t i = 0; i < n; i++) total += exp(z[ids[i]] - top);
    size_t m = 0;
    while (m < n && (m == 0 || acc < (double)o->top_p * total)) acc += exp(z[ids[m++]] - top);
    n = m;
    while (n > 1 && exp(z[ids[n - 1]] - top) < o->min_p) n--;
    double sum = 0.0;
    for (size_t i = 0; i < n; i++) sum += p[i] = o->temperature == 0.0f ? 1.0 : exp((z[ids[i]] - top) / o->temperature);
    for (size_t i = 0; i < n; i++) p[i] /= sum;
    free(z);
    return n;
}

enum { V = 64 };
/* A history with repeats, the penalty's tokens among them of both signs. */
static const uint32_t recent[] = {3, 9, 3, 17, 40, 40, 40, 5, 63, 9, 0, 21, 33, 3, 12, 7};
#define N_RECENT (sizeof recent / sizeof recent[0])

/* Every combination of the options against the reference: the same ids,
 * in rank order when top-k or top-p is on (id order else), and the same
 * probabilities. */
static void test_against_reference(void **s) {
    (void)s;
    Error err;
    float *z = rand_tensor(V, 2.0f, 7);
    z[40] = 5.0f;  /* the largest, until penalised */
    z[17] = -1.5f; /* a negative penalised one */
    Sampler sm;
    assert_int_equal(sampler_init(&sm, V, &err), 0);
    size_t ids[V];
    double p[V];
    const float temps[] = {0.0f, 0.7f, 1.5f}, top_ps[] = {1.0f, 0.9f, 0.5f, 0.0f}, min_ps[] = {0.0f, 0.05f, 0.4f};
    const float penalties[] = {1.0f, 1.3f, 0.8f};
    const size_t top_ks[] = {0, 10}, last_ns[] = {64, 4};
    size_t checked = 0, sizes = 0;
    for (size_t a = 0; a < 3; a++) for (size_t b = 0; b < 4; b++) for (size_t c = 0; c < 3; c++)
    for (size_t d = 0; d < 3; d++) for (size_t e = 0; e < 2; e++) for (size_t f = 0; f < 2; f++) {
        SamplerSettings o = {.temperature = temps[a], .top_p = top_ps[b], .min_p = min_ps[c],
                             .repeat_penalty = penalties[d], .top_k = top_ks[e], .repeat_last_n = last_ns[f]};
        size_t want = reference(z, V, &o, recent, N_RECENT, ids, p);
        size_t n = sampler_candidates(&sm, z, &o, recent, N_RECENT);
        if (n != want) fail_msg("T %g top-p %g min-p %g penalty %g top-k %zu last %zu: %zu candidates, the reference %zu",
                                o.temperature, o.top_p, o.min_p, o.repeat_penalty, o.top_k, o.repeat_last_n, n, want);
        double want_p[V] = {0}, got_p[V] = {0}, sum = 0.0;
        for (size_t i = 0; i < n; i++) sum += sm.probs[i];
        for (size_t i = 0; i < n; i++) {
            want_p[ids[i]] = p[i];
            got_p[sm.order[i]] = sm.probs[i] / sum;
        }
        for (size_t v = 0; v < V; v++) /* the same ids, at the same probabilities */
            if ((want_p[v] > 0) != (got_p[v] > 0) || fabs(want_p[v] - got_p[v]) > 1e-6)
                fail_msg("T %g top-p %g min-p %g penalty %g top-k %zu: id %zu at %g, the reference's %g", o.temperature,
                         o.top_p, o.min_p, o.repeat_penalty, o.top_k, v, got_p[v], want_p[v]);
        if (o.temperature == 0.0f || o.top_k || o.top_p < 1.0f) /* rank order */
            assert_memory_equal(sm.order, ids, n * sizeof *ids);
        else
            for (size_t i = 1; i < n; i++) assert_true(sm.order[i - 1] < sm.order[i]);
        checked++;
        sizes += n;
    }
    assert_int_equal(checked, 432);
    assert_true(sizes > 432 * 3); /* not all greedy */
    sampler_free(&sm);
    free(z);
}

/* Top-p over a vocabulary larger than the first ranking (256 ids): a
 * nucleus of a few ids, one of hundreds (the ranking grown once) and one of
 * thousands (grown to the whole), each the reference's, in rank order. */
static void test_nucleus_grows(void **s) {
    (void)s;
    Error err;
    size_t n = 5000, *ids = malloc(n * sizeof *ids);
    double *p = malloc(n * sizeof *p);
    Sampler sm;
    assert_int_equal(sampler_init(&sm, n, &err), 0);
    const float scales[] = {8.0f, 2.2f, 0.3f};
    size_t sizes[3];
    for (int c = 0; c < 3; c++) {
        float *z = rand_tensor(n, scales[c], 20 + c);
        SamplerSettings o = SAMPLER_DEFAULTS;
        o.top_p = 0.9f;
        size_t want = reference(z, n, &o, NULL, 0, ids, p);
        sizes[c] = sampler_candidates(&sm, z, &o, NULL, 0);
        assert_int_equal(sizes[c], want);
        assert_memory_equal(sm.order, ids, want * sizeof *ids);
        free(z);
    }
    if (!(sizes[0] < 256 && sizes[1] > 256 && sizes[1] < 1024 && sizes[2] > 1024))
        fail_msg("nuclei of %zu, %zu and %zu ids", sizes[0], sizes[1], sizes[2]);
    sampler_free(&sm);
    free(ids);
    free(p);
}

/* The penalty by hand: a positive logit divided, a negative one multiplied,
 * once however often the token came, only within the last repeat_last_n;
 * greedy picks after it. */
static void test_penalty(void **s) {
    (void)s;
    Error err;
    float z[V] = {0};
    z[40] = 3.0f; /* three times in recent */
    z[12] = 2.9f; /* once, the last but one */
    z[7] = -1.0f; /* the last token */
    z[50] = 2.0f; /* never */
    Sampler sm;
    assert_int_equal(sampler_init(&sm, V, &err), 0);
    SamplerSettings o = SAMPLER_DEFAULTS;
    o.temperature = 0.0f;
    assert_int_equal(sampler_pick(&sm, z, &o, recent, N_RECENT, NULL), 40);
    o.repeat_penalty = 2.0f;
    assert_int_equal(sampler_pick(&sm, z, &o, recent, N_RECENT, NULL), 50); /* 40 at 1.5, 12 at 1.45 */
    assert_true(sm.penalised[40] == 1.5f && sm.penalised[12] == 1.45f && sm.penalised[7] == -2.0f);
    assert_true(sm.penalised[50] == 2.0f && sm.penalised[0] == 0.0f); /* 0 is in recent: 0 stays 0 */
    o.repeat_last_n = 2; /* 12 and 7 */
    assert_int_equal(sampler_pick(&sm, z, &o, recent, N_RECENT, NULL), 40);
    assert_true(sm.penalised[40] == 3.0f && sm.penalised[12] == 1.45f && sm.penalised[7] == -2.0f);
    o.repeat_last_n = 0;
    assert_int_equal(sampler_pick(&sm, z, &o, recent, N_RECENT, NULL), 40);
    for (size_t v = 0; v < V; v++) assert_int_equal(sm.seen[v], 0); /* the marks cleared */
    sampler_free(&sm);
}

/* The defaults draw exactly what a softmax draw over all ids in id order
 * does (the sampler before top-p, min-p and the penalty), draw for draw;
 * and with the options on, the draws follow the reference's probabilities. */
static void test_draws(void **s) {
    (void)s;
    Error err;
    float *z = rand_tensor(V, 1.5f, 11);
    Sampler sm;
    assert_int_equal(sampler_init(&sm, V, &err), 0);
    SamplerSettings o = SAMPLER_DEFAULTS;
    Rng a, b;
    rng_seed(&a, 3);
    rng_seed(&b, 3);
    size_t best = 0;
    for (size_t v = 1; v < V; v++) best = z[v] > z[best] ? v : best;
    for (int draw = 0; draw < 500; draw++) {
        float w[V];
        double sum = 0.0, acc = 0.0;
        for (size_t v = 0; v < V; v++) sum += w[v] = expf((z[v] - z[best]) / o.temperature);
        double u = rng_uniform(&b) * sum;
        size_t want = V - 1;
        for (size_t v = 0; v < V; v++)
            if (u < (acc += w[v])) {
                want = v;
                break;
            }
        assert_int_equal(sampler_pick(&sm, z, &o, recent, N_RECENT, &a), want);
    }
    o = (SamplerSettings){.temperature = 1.2f, .top_p = 0.8f, .min_p = 0.05f, .repeat_penalty = 1.3f,
                          .repeat_last_n = 64};
    size_t ids[V], count[V] = {0}, draws = 40000;
    double p[V];
    size_t n = reference(z, V, &o, recent, N_RECENT, ids, p);
    assert_true(n > 3 && n < V / 2);
    for (size_t d = 0; d < draws; d++) count[sampler_pick(&sm, z, &o, recent, N_RECENT, &a)]++;
    double outside = draws;
    for (size_t i = 0; i < n; i++) {
        outside -= count[ids[i]];
        assert_true(fabs((double)count[ids[i]] / draws - p[i]) < 0.01); /* 4 standard deviations at most */
    }
    assert_true(outside == 0);
    sampler_free(&sm);
    free(z);
}

/* stop_find against a search of every place and every length by hand, on
 * texts of a small alphabet, from every offset. */
static void test_stop_find(void **s) {
    (void)s;
    const char *stops[] = {"aba", "b\n", "\n\n\n", ""};
    Rng r;
    rng_seed(&r, 2);
    for (int t = 0; t < 300; t++) {
        char text[24];
        size_t len = rng_below(&r, sizeof text);
        for (size_t i = 0; i < len; i++) text[i] = "ab\n"[rng_below(&r, 3)];
        for (size_t from = 0; from <= len; from++) {
            size_t want = SIZE_MAX, want_hold = 0;
            for (size_t k = 0; k < 3; k++) {
                size_t n = strlen(stops[k]);
                for (size_t at = from; at + n <= len && at < want; at++)
                    if (memcmp(text + at, stops[k], n) == 0) want = at;
                for (size_t h = 1; h < n && h <= len; h++)
                    if (memcmp(text + len - h, stops[k], h) == 0 && h > want_hold) want_hold = h;
            }
            size_t hold;
            assert_int_equal(stop_find(text, len, from, stops, 4, &hold), want);
            assert_int_equal(hold, want_hold);
        }
    }
    size_t hold;
    assert_int_equal(stop_find("xaba", 4, 0, stops, 1, &hold), 1);
    assert_int_equal(stop_find("xab", 3, 0, stops, 1, &hold), SIZE_MAX);
    assert_int_equal(hold, 2);
}

/* Top-k alone: exactly the k largest logits in order, the lower id first
 * among equal ones (what a stable sort of all of them gives), and every draw
 * among them; k = 1 is greedy. */
static void test_top_k(void **s) {
    (void)s;
    Error err;
    size_t n = 5000;
    float *z = rand_tensor(n, 2.0f, 41);
    for (size_t v = 0; v < n; v += 7) z[v] = z[(v * 13) % n]; /* many ties */
    size_t *ref = malloc(n * sizeof *ref);
    for (size_t v = 0; v < n; v++) ref[v] = v;
    cmp_logits = z;
    qsort(ref, n, sizeof *ref, stable_desc);
    Sampler sm;
    assert_int_equal(sampler_init(&sm, n, &err), 0);
    size_t ks[] = {1, 2, 40, 777, n - 1};
    Rng rng;
    rng_seed(&rng, 5);
    SamplerSettings o = SAMPLER_DEFAULTS;
    o.temperature = 1.5f;
    for (size_t i = 0; i < sizeof ks / sizeof *ks; i++) {
        o.top_k = ks[i];
        for (int draw = 0; draw < 50; draw++) {
            uint32_t id = sampler_pick(&sm, z, &o, NULL, 0, &rng);
            assert_memory_equal(sm.order, ref, o.top_k * sizeof *ref);
            int inside = 0;
            for (size_t j = 0; j < o.top_k; j++) inside |= ref[j] == id;
            assert_true(inside);
            if (o.top_k == 1) assert_int_equal(id, ref[0]);
        }
    }
    o.temperature = 0.0f;
    o.top_k = 40;
    assert_int_equal(sampler_pick(&sm, z, &o, NULL, 0, &rng), ref[0]); /* greedy */
    sampler_free(&sm);
    free(ref);
    free(z);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_against_reference),
        cmocka_unit_test(test_nucleus_grows),
        cmocka_unit_test(test_penalty),
        cmocka_unit_test(test_draws),
        cmocka_unit_test(test_stop_find),
        cmocka_unit_test(test_top_k),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
