/* Unit tests of the probe generators: the layout of MQAR and copy sequences
 * and which tokens are marked. */
#include "testutil.h"

#include "lm/probe_tasks.h"

static void test_copy_layout(void **s) {
    (void)s;
    ProbeSpec spec = {.task = PROBE_COPY, .seq_len = 24, .symbols = 5, .segment = 6, .gap = 4};
    Error err;
    assert_int_equal(probe_check(&spec, 256, &err), 0);
    uint32_t t[24];
    uint8_t m[24];
    Rng r;
    rng_seed(&r, 1);
    probe_sequence(&spec, &r, t, m);
    /* s1..s6 | 4 filler | MARK | s1..s6 | filler to 24 */
    for (size_t i = 0; i < 6; i++) {
        assert_true(t[i] >= PROBE_FIRST_SYMBOL && t[i] < PROBE_FIRST_SYMBOL + 5);
        assert_int_equal(t[11 + i], t[i]);
        assert_int_equal(m[11 + i], 1);
    }
    for (size_t i = 6; i < 10; i++) assert_int_equal(t[i], PROBE_FILLER);
    assert_int_equal(t[10], PROBE_MARK);
    size_t marked = 0;
    for (size_t i = 0; i < 24; i++) marked += m[i];
    assert_int_equal(marked, 6);
    for (size_t i = 17; i < 24; i++) assert_int_equal(t[i], PROBE_FILLER);
    spec.gap = 12; /* 6 + 12 + 1 + 6 = 25 > 24 */
    assert_int_equal(probe_check(&spec, 256, &err), -1);
}

static void test_mqar_layout(void **s) {
    (void)s;
    ProbeSpec spec = {.task = PROBE_MQAR, .seq_len = 30, .symbols = 4, .pairs = 3, .gap = 2};
    Error err;
    assert_int_equal(probe_check(&spec, 256, &err), 0);
    assert_int_equal(probe_queries(&spec), 11); /* (30 - 6 - 2) / 2 */
    uint32_t t[30];
    uint8_t m[30];
    Rng r;
    rng_seed(&r, 2);
    probe_sequence(&spec, &r, t, m);
    uint32_t value_of[256] = {0};
    for (size_t i = 0; i < 3; i++) {
        assert_true(t[2 * i] >= 2 && t[2 * i] < 6);          /* keys 2..5 */
        assert_true(t[2 * i + 1] >= 6 && t[2 * i + 1] < 10); /* values 6..9 */
        assert_int_equal(value_of[t[2 * i]], 0);             /* distinct keys */
        value_of[t[2 * i]] = t[2 * i + 1];
    }
    assert_int_equal(t[6], PROBE_FILLER);
    assert_int_equal(t[7], PROBE_FILLER);
    int asked[256] = {0};
    for (size_t i = 0; i < 11; i++) {
        size_t q = 8 + 2 * i;
        assert_int_equal(m[q], 0);
        assert_int_equal(m[q + 1], 1);
        assert_int_equal(t[q + 1], value_of[t[q]]);
        if (i < 3) asked[t[q]]++; /* the first round asks every key once */
    }
    for (size_t i = 0; i < 3; i++) assert_int_equal(asked[t[2 * i]], 1);
    spec.pairs = 5; /* more pairs than keys */
    assert_int_equal(probe_check(&spec, 256, &err), -1);
    spec.pairs = 3, spec.symbols = 200; /* 2 + 400 ids > 256 */
    assert_int_equal(probe_check(&spec, 256, &err), -1);
}

/* Random queries: every answer is still the value stored with its key, but
 * the keys are independent draws, so a round of p queries is not always a
 * permutation of the keys (which would let the last be guessed). */
static void test_mqar_random_queries(void **s) {
    (void)s;
    ProbeSpec spec = {.task = PROBE_MQAR, .seq_len = 40, .symbols = 8, .pairs = 4,
                      .queries = PROBE_QUERIES_RANDOM};
    Error err;
    assert_int_equal(probe_check(&spec, 256, &err), 0);
    size_t nq = probe_queries(&spec), repeats_in_first_round = 0;
    assert_int_equal(nq, 16); /* (40 - 8) / 2 */
    Rng r;
    rng_seed(&r, 3);
    for (int seq = 0; seq < 20; seq++) {
        uint32_t t[40], value_of[256] = {0};
        uint8_t m[40];
        probe_sequence(&spec, &r, t, m);
        for (size_t i = 0; i < 4; i++) value_of[t[2 * i]] = t[2 * i + 1];
        int asked[256] = {0};
        for (size_t i = 0; i < nq; i++) {
            size_t q = 8 + 2 * i;
            assert_int_not_equal(value_of[t[q]], 0); /* a stored key */
            assert_int_equal(t[q + 1], value_of[t[q]]);
            assert_int_equal(m[q], 0);
            assert_int_equal(m[q + 1], 1);
            if (i < 4 && asked[t[q]]++) repeats_in_first_round++;
        }
    }
    /* 20 sequences: a first round that is a permutation has probability 4!/4^4 ~ 0.09 each */
    assert_true(repeats_in_first_round > 0);
}

/* Zoology's MQAR: keys from the vocabulary's first half and values from its
 * second, each distinct; every key asked exactly once, at an even offset
 * after the pairs, its value right after it and only that marked; and the
 * power law puts most queries near the pairs. */
static void test_zoology_layout(void **s) {
    (void)s;
    ProbeSpec spec = {.task = PROBE_ZOOLOGY, .seq_len = 64, .pairs = 4, .vocab = 8192};
    Error err;
    assert_int_equal(probe_check(&spec, probe_vocab(&spec), &err), 0);
    assert_int_equal(probe_vocab(&spec), 8192);
    assert_int_equal(probe_queries(&spec), 4);
    Rng r;
    rng_seed(&r, 5);
    size_t near = 0, far = 0;
    for (int seq = 0; seq < 200; seq++) {
        uint32_t t[64];
        uint8_t m[64];
        probe_sequence(&spec, &r, t, m);
        for (size_t i = 0; i < 4; i++) {
            assert_true(t[2 * i] >= 1 && t[2 * i] < 4096);
            assert_true(t[2 * i + 1] >= 4096 && t[2 * i + 1] < 8192);
            assert_int_equal(m[2 * i], 0);
            assert_int_equal(m[2 * i + 1], 0);
            for (size_t j = 0; j < i; j++) {
                assert_int_not_equal(t[2 * i], t[2 * j]);
                assert_int_not_equal(t[2 * i + 1], t[2 * j + 1]);
            }
        }
        size_t asked = 0;
        for (size_t q = 8; q < 64; q += 2) { /* slot by slot: (query, answer) or two fillers */
            assert_int_equal(m[q], 0);
            if (t[q] == PROBE_FILLER) {
                assert_int_equal(t[q + 1], PROBE_FILLER);
                assert_int_equal(m[q + 1], 0);
                continue;
            }
            size_t k = 0;
            while (k < 4 && t[2 * k] != t[q]) k++;
            assert_true(k < 4);                       /* a stored key */
            assert_int_equal(t[q + 1], t[2 * k + 1]); /* its value */
            assert_int_equal(m[q + 1], 1);
            asked++;
            if (q < 8 + 2 * 7) near++; /* the first 7 of the 28 slots */
            else far++;
        }
        assert_int_equal(asked, 4);
    }
    assert_true(near > far); /* a uniform draw would give 7 : 21 */
    spec.seq_len = 15; /* 4 pairs need 16 tokens, and an odd length is refused */
    assert_int_equal(probe_check(&spec, 8192, &err), -1);
    spec.seq_len = 64, spec.vocab = 8; /* 3 keys for 4 pairs */
    assert_int_equal(probe_check(&spec, 8, &err), -1);
}

/* Zoology's random filler (its random_non_queries, on by default): the same
 * draws as the plain filler's, so the pairs, queries, answers and marks are
 * the plain sequence's, byte for byte; every position that held id 0 holds a
 * token drawn from the whole vocabulary (over 300 sequences of a 64-token
 * vocabulary each of the 64 ids, keys' and values' halves and 0 alike, shows
 * up, about evenly), and the next sequence starts from the same state only
 * with the plain filler: the fill's draws come after the sequence's. */
static void test_zoology_random_fill(void **s) {
    (void)s;
    ProbeSpec plain = {.task = PROBE_ZOOLOGY, .seq_len = 64, .pairs = 4, .vocab = 64};
    ProbeSpec rand_fill = plain;
    rand_fill.fill = PROBE_FILL_RANDOM;
    Error err;
    assert_int_equal(probe_check(&rand_fill, probe_vocab(&rand_fill), &err), 0);
    size_t count[64] = {0}, fillers = 0;
    for (int seq = 0; seq < 300; seq++) {
        Rng a, b;
        rng_seed(&a, 100 + (uint64_t)seq);
        rng_seed(&b, 100 + (uint64_t)seq);
        uint32_t t0[64], t1[64];
        uint8_t m0[64], m1[64];
        probe_sequence(&plain, &a, t0, m0);
        probe_sequence(&rand_fill, &b, t1, m1);
        assert_memory_equal(m0, m1, 64);
        for (size_t i = 0; i < 64; i++) {
            if (t0[i] != PROBE_FILLER) {
                assert_int_equal(t1[i], t0[i]); /* a stored pair, a query or its answer */
                continue;
            }
            assert_true(i >= 8 && m1[i] == 0); /* never inside the pairs, never an answer */
            assert_true(t1[i] < 64);
            count[t1[i]]++;
            fillers++;
        }
    }
    assert_int_equal(fillers, 300 * (64 - 8 - 8)); /* 4 pairs, 4 queries and their answers */
    for (size_t id = 0; id < 64; id++) /* 225 expected per id: a uniform draw stays well inside 120..330 */
        assert_true(count[id] > 120 && count[id] < 330);
    ProbeSpec copy = {.task = PROBE_COPY, .seq_len = 32, .symbols = 4, .segment = 4, .fill = PROBE_FILL_RANDOM};
    assert_int_equal(probe_check(&copy, 256, &err), -1); /* mqar and copy keep their filler id 0 */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_copy_layout),
        cmocka_unit_test(test_mqar_layout),
        cmocka_unit_test(test_mqar_random_queries),
        cmocka_unit_test(test_zoology_layout),
        cmocka_unit_test(test_zoology_random_fill),
    };
    return cmocka_run_group_tests_name("probe_tasks", tests, NULL, NULL);
}
