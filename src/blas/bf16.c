/* bf16 conversion and the tiled bf16 products on oneDNN (see lm/bf16.h).
 * oneDNN is optional: the Makefile sets LM_HAVE_ONEDNN to 1 where it finds
 * the library, and a build without it refuses bf16 as a CPU without
 * AVX512_BF16 does (the conversions still run). The conversion's kernels
 * are the run's level's (blas/bf16_loops.h). */
#include "lm/bf16.h"

#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if LM_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#endif

#include "blas/bf16_loops.h"
#include "lm/cpu.h"

bool bf16_supported(void) { return LM_HAVE_ONEDNN && cpu_bf16(); }

const Bf16Loops *bf16_loops(void) {
    static const Bf16Loops *const by_level[CPU_ISA_COUNT] = CPU_ISA_BY_LEVEL(bf16_loops);
#if defined(__x86_64__)
    if (cpu_bf16()) return &bf16_loops_avx512bf16;
#endif
    return by_level[cpu_isa()];
}

const char *bf16_unavailable(void) {
    if (!LM_HAVE_ONEDNN) return "this build has no oneDNN";
    return bf16_supported() ? NULL : "this CPU has no AVX512_BF16";
}

int bf16_require(const char *what, Error *err) {
    if (!LM_HAVE_ONEDNN) return err_set(err, "%s needs oneDNN, which this build lacks (libdnnl-dev)", what);
    return bf16_supported() ? 0 : err_set(err, "%s needs a CPU with AVX512_BF16, which this one lacks", what);
}

/* ---- conversion ---------------------------------------------------------------
 *
 * The level's kernel (blas/bf16_kernel.h): AVX-512F's integer arithmetic 16
 * lanes at a time, or AVX512_BF16's vcvtne2ps2bf16 32 at a time where that
 * gives the same bits, else the scalar definition compiled at the level;
 * all bit for bit bf16_from_float. */

void bf16_from_floats_scalar(size_t n, const float *x, uint16_t *out) {
    for (size_t i = 0; i < n; i++) out[i] = bf16_from_float(x[i]);
}

void bf16_from_floats(size_t n, const float *x, uint16_t *out) { bf16_loops()->from_floats(n, x, out); }

void bf16_from_floats_parallel(size_t n, const float *x, uint16_t *out) {
    enum { CHUNK = 1 << 14 }; /* 64 KiB of floats: enough to pay for a task */
#pragma omp parallel for schedule(static)
    for (size_t c = 0; c < (n + CHUNK - 1) / CHUNK; c++)
        bf16_from_floats(n - c * CHUNK < CHUNK ? n - c * CHUNK : CHUNK, x + c * CHUNK, out + c * CHUNK);
}

void bf16_to_floats(size_t n, const uint16_t *h, float *out) {
    for (size_t i = 0; i < n; i++) out[i] = bf16_to_float(h[i]); /* the compiler vectorises the shift */
}

#if LM_HAVE_ONEDNN
/* ---- oneDNN --------------------------------------------------------------------
 *
 * One engine for the process. Each thread that runs tiles keeps its own
 * stream, its own cache of primitives (one per tile shape, form, leading
 * dimensions, alpha and beta: creating one costs far more than a tile's
 * product, so it is paid once) with their memory objects (re-pointed at each
 * call's operands), and its own scratchpad: nothing is shared between
 * threads but the engine, so tiles run concurrently without locks, and
 * nothing is allocated once a shape has been seen.
 *
 * Single-threaded tiles: this oneDNN is built on OpenMP (libgomp, the pool we
 * share) and runs its parallel loops on one thread when called inside an
 * active parallel region, our tiles' region. But a primitive plans its work
 * split for the thread count at its creation (the brgemm matmul may cut K
 * across threads, which changes the summation order), so primitives are
 * created with the OpenMP thread count set to 1: each then runs the same
 * serial plan whether the region it is called from has 1 thread or many.
 * A tile runs with the count at 1 too, for a caller outside any parallel
 * region (the jit gemm below sizes its threads, and may cut K, at each call).
 *
 * One implementation for every tile: oneDNN's jit gemm ("gemm:jit"), not
 * the one it would pick. The tiles depend on the parallel width, which
 * --threads sets, so an entry of C must come out the same from any tile
 * shape, offset and leading dimensions. oneDNN's own choice does not give
 * that: it takes brgemm (AMX's where the CPU has it, else AVX512_BF16's)
 * for operands that are whole matrices and the jit gemm for the strided
 * views of most tiles, and these differ in the last bits: AMX's brgemm adds
 * beta C after the sum where the jit gemm sums into it, and the AVX512_BF16
 * brgemm blocks K differently from the gemm at larger K (measured on a
 * Sapphire Rapids Xeon with oneDNN 2.6.3: whole against split products of
 * 64x16x496 and 128x768x768 differ in most entries, with or without AMX;
 * the CLI test's 1- and 2-thread bf16 Grassmann runs differed). The jit gemm
 * takes every layout and gave identical bits for whole, row-split and
 * column-split products of every form; only where a oneDNN lacks it does a
 * tile take oneDNN's choice. The cost: brgemm's speed on whole operands,
 * AMX's above all (see docs/performance.md, bf16). */

static pthread_mutex_t dnnl_lock = PTHREAD_MUTEX_INITIALIZER;
static dnnl_engine_t engine;

typedef struct PrimKey {
    int trans_a, trans_b;
    size_t m, n, k, lda, ldb, ldc;
    float alpha, beta;
} PrimKey;

typedef struct Prim {
    PrimKey key;
    dnnl_primitive_t prim;
    dnnl_memory_t a, b, c, scratch; /* scratch NULL when the primitive needs none */
    size_t scratch_bytes;
} Prim;

#define PRIMS_PER_THREAD 128 /* the model makes a few dozen tile shapes; beyond this the oldest are replaced */

typedef struct ThreadCache {
    dnnl_stream_t stream;
    Prim prims[PRIMS_PER_THREAD];
    size_t n_prims, next_victim;
    void *scratch; /* the thread's scratchpad, shared by its primitives (one runs at a time) */
    size_t scratch_bytes;
    struct ThreadCache *next; /* every thread's cache, for bf16_release */
} ThreadCache;

static _Thread_local ThreadCache *my_cache;
static ThreadCache *all_caches;

static const char *status_name(dnnl_status_t s) {
    switch (s) {
    case dnnl_success: return "success";
    case dnnl_out_of_memory: return "out of memory";
    case dnnl_invalid_arguments: return "invalid arguments";
    case dnnl_unimplemented: return "unimplemented";
    case dnnl_runtime_error: return "runtime error";
    default: return "error";
    }
}

#define DNNL_TRY(call, what)                                                                                       \
    do {                                                                                                           \
        dnnl_status_t _s = (call);                                                                                 \
        if (_s != dnnl_success) return err_set(err, "oneDNN: %s failed (%s)", what, status_name(_s));            \
    } while (0)

static int engine_get(Error *err) {
    pthread_mutex_lock(&dnnl_lock);
    dnnl_status_t s = engine ? dnnl_success : dnnl_engine_create(&engine, dnnl_cpu, 0);
    pthread_mutex_unlock(&dnnl_lock);
    if (s != dnnl_success) return err_set(err, "oneDNN: cannot create a CPU engine (%s)", status_name(s));
    return 0;
}

static ThreadCache *cache_get(Error *err) {
    if (my_cache) return my_cache;
    if (engine_get(err)) return NULL;
    ThreadCache *tc = lm_calloc(1, sizeof *tc, err);
    if (!tc) return NULL;
    dnnl_status_t s = dnnl_stream_create(&tc->stream, engine, dnnl_stream_default_flags);
    if (s != dnnl_success) {
        free(tc);
        err_set(err, "oneDNN: cannot create a stream (%s)", status_name(s));
        return NULL;
    }
    pthread_mutex_lock(&dnnl_lock);
    tc->next = all_caches;
    all_caches = tc;
    pthread_mutex_unlock(&dnnl_lock);
    my_cache = tc;
    return tc;
}

static void prim_destroy(Prim *p) {
    if (p->prim) dnnl_primitive_destroy(p->prim);
    if (p->a) dnnl_memory_destroy(p->a);
    if (p->b) dnnl_memory_destroy(p->b);
    if (p->c) dnnl_memory_destroy(p->c);
    if (p->scratch) dnnl_memory_destroy(p->scratch);
    memset(p, 0, sizeof *p);
}

/* op(A) (m x k), op(B) (k x n) and C (m x n) as oneDNN memory descriptors:
 * row-major with leading dimensions, a transposed operand by swapped strides. */
static int describe(const PrimKey *key, dnnl_memory_desc_t *a, dnnl_memory_desc_t *b, dnnl_memory_desc_t *c,
                    Error *err) {
    dnnl_dims_t a_dims = {(dnnl_dim_t)key->m, (dnnl_dim_t)key->k}, b_dims = {(dnnl_dim_t)key->k, (dnnl_dim_t)key->n};
    dnnl_dims_t c_dims = {(dnnl_dim_t)key->m, (dnnl_dim_t)key->n};
    dnnl_dims_t a_strides = {key->trans_a ? 1 : (dnnl_dim_t)key->lda, key->trans_a ? (dnnl_dim_t)key->lda : 1};
    dnnl_dims_t b_strides = {key->trans_b ? 1 : (dnnl_dim_t)key->ldb, key->trans_b ? (dnnl_dim_t)key->ldb : 1};
    dnnl_dims_t c_strides = {(dnnl_dim_t)key->ldc, 1};
    DNNL_TRY(dnnl_memory_desc_init_by_strides(a, 2, a_dims, dnnl_bf16, a_strides), "describing A");
    DNNL_TRY(dnnl_memory_desc_init_by_strides(b, 2, b_dims, dnnl_bf16, b_strides), "describing B");
    DNNL_TRY(dnnl_memory_desc_init_by_strides(c, 2, c_dims, dnnl_f32, c_strides), "describing C");
    return 0;
}

/* The jit gemm's primitive descriptor for desc and attr (see above), else
 * (a oneDNN without it) the first, oneDNN's own choice. */
#define TILE_IMPL "gemm:jit"

static dnnl_status_t pick_impl(const dnnl_matmul_desc_t *desc, const_dnnl_primitive_attr_t attr,
                               dnnl_primitive_desc_t *pd) {
    dnnl_primitive_desc_iterator_t it;
    dnnl_status_t s = dnnl_primitive_desc_iterator_create(&it, desc, attr, engine, NULL);
    if (s != dnnl_success) return s;
    dnnl_primitive_desc_t first = NULL;
    *pd = NULL;
    do {
        dnnl_primitive_desc_t cand = dnnl_primitive_desc_iterator_fetch(it);
        if (!cand) break;
        const char *name = NULL;
        if (dnnl_primitive_desc_query(cand, dnnl_query_impl_info_str, 0, &name) == dnnl_success && name &&
            !strncmp(name, TILE_IMPL, strlen(TILE_IMPL))) {
            *pd = cand;
            break;
        }
        if (!first) first = cand;
        else dnnl_primitive_desc_destroy(cand);
    } while (dnnl_primitive_desc_iterator_next(it) == dnnl_success);
    dnnl_primitive_desc_iterator_destroy(it);
    if (*pd) {
        if (first) dnnl_primitive_desc_destroy(first);
        return dnnl_success;
    }
    *pd = first;
    return first ? dnnl_success : dnnl_unimplemented;
}

/* The primitive descriptor for key: alpha as an output scale, beta as a sum
 * post-op (C = alpha A B + beta C in one pass over C; beta 0: none, so C is
 * not read). The caller destroys it. */
static int make_pd(const PrimKey *key, dnnl_primitive_desc_t *pd, Error *err) {
    dnnl_memory_desc_t a, b, c;
    if (describe(key, &a, &b, &c, err)) return -1;
    dnnl_matmul_desc_t desc;
    DNNL_TRY(dnnl_matmul_desc_init(&desc, &a, &b, NULL, &c), "the matmul descriptor");
    dnnl_primitive_attr_t attr;
    DNNL_TRY(dnnl_primitive_attr_create(&attr), "the attributes");
    dnnl_status_t s = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
    if (s == dnnl_success && key->alpha != 1.0f) s = dnnl_primitive_attr_set_output_scales(attr, 1, 0, &key->alpha);
    if (s == dnnl_success && key->beta != 0.0f) {
        dnnl_post_ops_t ops;
        s = dnnl_post_ops_create(&ops);
        if (s == dnnl_success) {
            s = dnnl_post_ops_append_sum(ops, key->beta);
            if (s == dnnl_success) s = dnnl_primitive_attr_set_post_ops(attr, ops);
            dnnl_post_ops_destroy(ops);
        }
    }
    /* Planned for one thread (see above); the setting is the calling task's own. */
    int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    if (s == dnnl_success) s = pick_impl(&desc, attr, pd);
    omp_set_num_threads(threads);
    dnnl_primitive_attr_destroy(attr);
    if (s != dnnl_success)
        return err_set(err, "oneDNN: no bf16 matmul for %zux%zux%zu (trans %d%d, ld %zu %zu %zu): %s", key->m, key->n,
                       key->k, key->trans_a, key->trans_b, key->lda, key->ldb, key->ldc, status_name(s));
    return 0;
}

/* Fills p for key; on failure p is left empty (no key, nothing to free). */
static int prim_create(const PrimKey *key, Prim *p, Error *err) {
    memset(p, 0, sizeof *p);
    dnnl_primitive_desc_t pd;
    if (make_pd(key, &pd, err)) return -1;
    int threads = omp_get_max_threads();
    omp_set_num_threads(1); /* the kernels are generated for the plan of one thread too */
    dnnl_status_t s = dnnl_primitive_create(&p->prim, pd);
    omp_set_num_threads(threads);
    const dnnl_memory_desc_t *a = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
    const dnnl_memory_desc_t *b = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    const dnnl_memory_desc_t *c = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    const dnnl_memory_desc_t *sp = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    if (s == dnnl_success) s = dnnl_memory_create(&p->a, a, engine, DNNL_MEMORY_NONE);
    if (s == dnnl_success) s = dnnl_memory_create(&p->b, b, engine, DNNL_MEMORY_NONE);
    if (s == dnnl_success) s = dnnl_memory_create(&p->c, c, engine, DNNL_MEMORY_NONE);
    p->scratch_bytes = sp ? dnnl_memory_desc_get_size(sp) : 0;
    if (s == dnnl_success && p->scratch_bytes > 0) s = dnnl_memory_create(&p->scratch, sp, engine, DNNL_MEMORY_NONE);
    dnnl_primitive_desc_destroy(pd);
    if (s != dnnl_success) {
        prim_destroy(p);
        return err_set(err, "oneDNN: cannot create the bf16 matmul for %zux%zux%zu (%s)", key->m, key->n, key->k,
                       status_name(s));
    }
    p->key = *key;
    return 0;
}

/* The thread's scratchpad, grown to at least `bytes`. */
static int scratch_reserve(ThreadCache *tc, size_t bytes, Error *err) {
    if (bytes <= tc->scratch_bytes) return 0;
    free(tc->scratch);
    tc->scratch_bytes = 0;
    tc->scratch = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!tc->scratch) return err_set(err, "out of memory for a %zu-byte oneDNN scratchpad", bytes);
    tc->scratch_bytes = bytes;
    return 0;
}

static Prim *prim_get(ThreadCache *tc, const PrimKey *key, Error *err) {
    for (size_t i = 0; i < tc->n_prims; i++)
        if (!memcmp(&tc->prims[i].key, key, sizeof *key)) return &tc->prims[i];
    Prim *p;
    if (tc->n_prims < PRIMS_PER_THREAD) p = &tc->prims[tc->n_prims++];
    else { /* full: replace the oldest */
        p = &tc->prims[tc->next_victim];
        tc->next_victim = (tc->next_victim + 1) % PRIMS_PER_THREAD;
        prim_destroy(p);
    }
    if (prim_create(key, p, err)) return NULL; /* an empty entry, which no key matches */
    return p;
}

/* One tile on the calling thread: C = alpha op(A) op(B) + beta C. The key
 * holds everything but the pointers; memset first so padding compares equal. */
static int run_tile(int trans_a, int trans_b, size_t m, size_t n, size_t k, float alpha, const uint16_t *a,
                    size_t lda, const uint16_t *b, size_t ldb, float beta, float *c, size_t ldc, Error *err) {
    ThreadCache *tc = cache_get(err);
    if (!tc) return -1;
    PrimKey key;
    memset(&key, 0, sizeof key);
    key.trans_a = trans_a, key.trans_b = trans_b, key.m = m, key.n = n, key.k = k;
    key.lda = lda, key.ldb = ldb, key.ldc = ldc, key.alpha = alpha, key.beta = beta;
    Prim *p = prim_get(tc, &key, err);
    if (!p || scratch_reserve(tc, p->scratch_bytes, err)) return -1;
    dnnl_memory_set_data_handle(p->a, (void *)a);
    dnnl_memory_set_data_handle(p->b, (void *)b);
    dnnl_memory_set_data_handle(p->c, c);
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, p->a}, {DNNL_ARG_WEIGHTS, p->b}, {DNNL_ARG_DST, p->c}};
    int nargs = 3;
    if (p->scratch) {
        dnnl_memory_set_data_handle(p->scratch, tc->scratch);
        args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, p->scratch};
    }
    int threads = omp_get_max_threads(); /* one thread here too (see above) */
    if (threads > 1) omp_set_num_threads(1);
    dnnl_status_t s = dnnl_primitive_execute(p->prim, tc->stream, nargs, args);
    if (s == dnnl_success) s = dnnl_stream_wait(tc->stream);
    if (threads > 1) omp_set_num_threads(threads);
    if (s != dnnl_success) return err_set(err, "oneDNN: a bf16 matmul failed (%s)", status_name(s));
    return 0;
}

static int bf16_tile(const TileOperands *o, TileRect r, float *ct, Error *err) {
    const uint16_t *at = (const uint16_t *)o->a + tile_a_offset(o, r), *bt = (const uint16_t *)o->b + tile_b_offset(o, r);
    return run_tile(o->trans_a, o->trans_b, r.rows, r.cols, o->k, o->alpha, at, o->lda, bt, o->ldb, o->beta, ct, o->ldc,
                    err);
}

int bf16_gemm_tiled(int trans_a, int trans_b, size_t m, size_t n, size_t k, float alpha, const uint16_t *a,
                    size_t lda, const uint16_t *b, size_t ldb, float beta, float *c, size_t ldc,
                    const float *bias_rows, TileEpilogue epilogue, void *ctx, Error *err) {
    TileOperands o = {trans_a, trans_b, k, lda, ldb, ldc, alpha, beta, a, b};
    return gemm_tile_loop(m, n, &o, c, bias_rows, bf16_tile, epilogue, ctx, err);
}

int bf16_gemm_serial(int trans_a, int trans_b, size_t m, size_t n, size_t k, float alpha, const uint16_t *a,
                     size_t lda, const uint16_t *b, size_t ldb, float beta, float *c, size_t ldc, Error *err) {
    if (m == 0 || n == 0) return 0;
    if (k == 0) {
        gemm_tile_scale(c, ldc, beta, m, n);
        return 0;
    }
    return run_tile(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, err);
}

int bf16_gemm(int trans_a, int trans_b, size_t m, size_t n, size_t k, float alpha, const uint16_t *a, size_t lda,
              const uint16_t *b, size_t ldb, float beta, float *c, size_t ldc, Error *err) {
    return bf16_gemm_tiled(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, NULL, NULL, NULL, err);
}

int bf16_gemm_impl(int trans_a, int trans_b, size_t m, size_t n, size_t k, size_t lda, size_t ldb, size_t ldc,
                   char *buf, size_t len, Error *err) {
    if (engine_get(err)) return -1;
    PrimKey key;
    memset(&key, 0, sizeof key);
    key.trans_a = trans_a, key.trans_b = trans_b, key.m = m, key.n = n, key.k = k;
    key.lda = lda, key.ldb = ldb, key.ldc = ldc, key.alpha = 1.0f, key.beta = 0.0f;
    dnnl_primitive_desc_t pd;
    if (make_pd(&key, &pd, err)) return -1;
    const char *name = NULL;
    dnnl_status_t s = dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &name);
    snprintf(buf, len, "%s", s == dnnl_success && name ? name : "unknown");
    dnnl_primitive_desc_destroy(pd);
    return 0;
}

const char *bf16_library(void) {
    static char text[64];
    const dnnl_version_t *v = dnnl_version();
    const char *runtime = v->cpu_runtime == DNNL_RUNTIME_OMP ? "OpenMP"
                          : v->cpu_runtime == DNNL_RUNTIME_SEQ ? "sequential"
                                                               : "other threading";
    snprintf(text, sizeof text, "oneDNN %d.%d.%d (%s)", v->major, v->minor, v->patch, runtime);
    return text;
}

void bf16_release(void) {
    pthread_mutex_lock(&dnnl_lock);
    for (ThreadCache *tc = all_caches, *next; tc; tc = next) {
        next = tc->next;
        for (size_t i = 0; i < tc->n_prims; i++) prim_destroy(&tc->prims[i]);
        tc->n_prims = tc->next_victim = 0;
        free(tc->scratch);
        tc->scratch = NULL;
        tc->scratch_bytes = 0;
        /* The cache itself stays, empty: its thread still points at it. */
    }
    pthread_mutex_unlock(&dnnl_lock);
}
#else
/* Built without oneDNN: bf16_supported() is false, so nothing calls these
 * but a caller that skipped bf16_require, which gets its error. */
static int no_onednn(Error *err) { return bf16_require("a bf16 product", err); }

int bf16_gemm_tiled(int trans_a, int trans_b, size_t m, size_t n, size_t k, float alpha, const uint16_t *a,
                    size_t lda, const uint16_t *b, size_t ldb, float beta, float *c, size_t ldc,
                    const float *bias_rows, TileEpilogue epilogue, void *ctx, Error *err) {
    (void)trans_a, (void)trans_b, (void)m, (void)n, (void)k, (void)alpha, (void)a, (void)lda, (void)b, (void)ldb;
    (void)beta, (void)c, (void)ldc, (void)bias_rows, (void)epilogue, (void)ctx;
    return no_onednn(err);
}

int bf16_gemm_serial(int trans_a, int trans_b, size_t m, size_t n, size_t k, float alpha, const uint16_t *a,
                     size_t lda, const uint16_t *b, size_t ldb, float beta, float *c, size_t ldc, Error *err) {
    return bf16_gemm_tiled(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, NULL, NULL, NULL, err);
}

int bf16_gemm(int trans_a, int trans_b, size_t m, size_t n, size_t k, float alpha, const uint16_t *a, size_t lda,
              const uint16_t *b, size_t ldb, float beta, float *c, size_t ldc, Error *err) {
    return bf16_gemm_tiled(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, NULL, NULL, NULL, err);
}

int bf16_gemm_impl(int trans_a, int trans_b, size_t m, size_t n, size_t k, size_t lda, size_t ldb, size_t ldc,
                   char *buf, size_t len, Error *err) {
    (void)trans_a, (void)trans_b, (void)m, (void)n, (void)k, (void)lda, (void)ldb, (void)ldc;
    snprintf(buf, len, "none");
    return no_onednn(err);
}

const char *bf16_library(void) { return "no oneDNN (not found at build time)"; }

void bf16_release(void) {}
#endif
