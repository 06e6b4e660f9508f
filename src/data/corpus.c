/* A corpus from text files to token files (see lm/corpus.h). */
#include "lm/corpus.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lm/tokens.h"
#include "lm/utf8.h"
#include "lm/ds.h"
#include "lm/files.h"
#include "lm/machine.h"
#include "lm/bpe.h"
#include "lm/byte.h"
#include "tok/char.h"

/* Text is counted and encoded in blocks of about this many bytes. */
#define BLOCK (16u << 20)

static const char *const split_names[N_SPLITS] = {"train", "val", "test"};

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* A file, or a directory's regular files sorted by name (dotfiles skipped),
 * into *found; *bytes gets their sizes' sum. */
static int list_input(const char *path, char ***found, size_t *bytes, Error *err) {
    struct stat st;
    *bytes = 0;
    if (stat(path, &st) != 0) return err_set(err, "cannot open '%s': %s", path, strerror(errno));
    if (!S_ISDIR(st.st_mode)) {
        if (input_refusal(path, st.st_mode, err)) return -1;
        arrput(*found, strdup(path));
        *bytes = (size_t)st.st_size;
        return 0;
    }
    DIR *d = opendir(path);
    if (!d) return err_set(err, "cannot read directory '%s': %s", path, strerror(errno));
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        char full[PATH_BUF];
        if (path_format(full, sizeof full, err, "%s/%s", path, e->d_name)) {
            closedir(d);
            return -1;
        }
        if (stat(full, &st) == 0 && S_ISREG(st.st_mode)) {
            arrput(*found, strdup(full));
            *bytes += (size_t)st.st_size;
        }
    }
    closedir(d);
    if (arrlenu(*found) == 0) return err_set(err, "directory '%s' holds no files", path);
    qsort(*found, arrlenu(*found), sizeof(char *), cmp_str);
    return 0;
}

static int add_paths(Corpus *c, int split, const char *path, Error *err) {
    char **found = NULL;
    size_t bytes = 0;
    int rc = list_input(path, &found, &bytes, err);
    if (rc == 0 && split >= 0 && bytes == 0) rc = err_set(err, "'%s' is empty", path);
    for (size_t i = 0; i < arrlenu(found); i++) {
        if (rc) {
            free(found[i]);
            continue;
        }
        arrput(c->paths, found[i]);
        if (split >= 0) arrput(c->path_split, split);
    }
    arrfree(found);
    return rc;
}

int corpus_add_input(Corpus *c, const char *path, Error *err) { return add_paths(c, -1, path, err); }

int corpus_add_split_input(Corpus *c, int split, const char *path, Error *err) {
    if (split < 0 || split >= N_SPLITS) return err_set(err, "no split %d", split);
    return add_paths(c, split, path, err);
}

static int map_doc(CorpusDoc *d, const char *path, Error *err) {
    d->path = path;
    d->text = NULL;
    d->len = 0;
    int fd = open_input(path, &d->len, err);
    if (fd < 0) return -1;
    if (d->len) d->text = mmap(NULL, d->len, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (d->text == MAP_FAILED) {
        d->text = NULL;
        return err_set(err, "cannot map '%s': %s", path, strerror(errno));
    }
    return 0;
}

int corpus_open(Corpus *c, Error *err) {
    c->n_docs = arrlenu(c->paths);
    c->total = 0;
    c->docs = lm_calloc(c->n_docs, sizeof(CorpusDoc), err);
    if (!c->docs) return -1;
    for (size_t d = 0; d < c->n_docs; d++) {
        if (map_doc(&c->docs[d], c->paths[d], err)) return -1;
        c->total += c->docs[d].len;
    }
    if (c->path_split) {
        /* Explicit splits: every document whole, in its own split. */
        for (size_t d = 0; d < c->n_docs; d++)
            if (c->docs[d].len) {
                CorpusSegment sg = {d, 0, c->docs[d].len};
                arrput(c->splits[c->path_split[d]], sg);
            }
        for (int s = SPLIT_TRAIN; s <= SPLIT_VAL; s++)
            if (!c->splits[s]) return err_set(err, "the %s split is empty", split_names[s]);
        return 0;
    }
    if (c->total == 0) return err_set(err, "'%s' is empty", c->n_docs == 1 ? c->paths[0] : "the input");
    return 0;
}

void corpus_split(Corpus *c, double val_frac, double test_frac) {
    /* The split points are byte offsets of the documents' concatenation. */
    size_t total = c->total;
    size_t bounds[N_SPLITS + 1] = {0, (size_t)((double)total * (1.0 - val_frac - test_frac)),
                                   (size_t)((double)total * (1.0 - test_frac)), total};
    for (size_t d = 0, base = 0; d < c->n_docs; base += c->docs[d].len, d++) {
        const CorpusDoc *doc = &c->docs[d];
        for (int s = 0; s < N_SPLITS; s++) {
            size_t lo = bounds[s] > base ? bounds[s] - base : 0, hi = bounds[s + 1] > base ? bounds[s + 1] - base : 0;
            lo = utf8_boundary(doc->text, doc->len, lo < doc->len ? lo : doc->len);
            hi = utf8_boundary(doc->text, doc->len, hi < doc->len ? hi : doc->len);
            if (s == SPLIT_TEST) hi = doc->len;
            if (hi > lo) {
                CorpusSegment sg = {d, lo, hi};
                arrput(c->splits[s], sg);
            }
        }
    }
}

size_t corpus_split_bytes(const Corpus *c, int split) {
    size_t bytes = 0;
    for (size_t i = 0; i < arrlenu(c->splits[split]); i++) bytes += c->splits[split][i].to - c->splits[split][i].from;
    return bytes;
}

void corpus_free(Corpus *c) {
    for (size_t d = 0; d < c->n_docs; d++)
        if (c->docs && c->docs[d].text) munmap((void *)c->docs[d].text, c->docs[d].len);
    free(c->docs);
    for (int s = 0; s < N_SPLITS; s++) arrfree(c->splits[s]);
    for (size_t i = 0; i < arrlenu(c->paths); i++) free(c->paths[i]);
    arrfree(c->paths);
    arrfree(c->path_split);
    memset(c, 0, sizeof *c);
}

/* ---- the tokenizer -------------------------------------------------------------- */

static int char_tokenizer(const Corpus *c, Tokenizer *tok, Error *err) {
    const CorpusSegment *train = c->splits[SPLIT_TRAIN];
    const char **texts = NULL;
    size_t *lens = NULL;
    for (size_t i = 0; i < arrlenu(train); i++) {
        arrput(texts, c->docs[train[i].doc].text + train[i].from);
        arrput(lens, train[i].to - train[i].from);
    }
    int rc = 0;
    if (tokenizer_build_char_parts(tok, texts, lens, arrlenu(texts), err)) {
        char why[sizeof err->msg];
        snprintf(why, sizeof why, "%s", err->msg);
        rc = err_set(err, "the training split: %s", why);
    }
    arrfree(texts);
    arrfree(lens);
    return rc;
}

static int bpe_tokenizer(const Corpus *c, const TokenizerRecipe *r, Tokenizer *tok, CorpusProgress progress, void *ctx,
                         BpeStats *stats, Error *err) {
    Bpe b;
    if (bpe_init(&b, r->pattern, bpe_pattern_regex(r->pattern), err)) return -1;
    const CorpusSegment *train = c->splits[SPLIT_TRAIN];
    size_t train_bytes = corpus_split_bytes(c, SPLIT_TRAIN), done = 0;
    const char *phase = "counting pieces of";
    BpeCounter counter;
    bpe_counter_init(&counter, &b.pre);
    if (progress) progress(ctx, phase, 0, train_bytes, 0);
    for (size_t i = 0; i < arrlenu(train); i++) {
        const CorpusDoc *d = &c->docs[train[i].doc];
        for (size_t at = train[i].from; at < train[i].to;) {
            /* Blocks end where the pieces of the parts are those of the whole. */
            size_t end = b.pre.cuttable ? bpe_safe_cut(d->text, train[i].to, at + BLOCK) : train[i].to;
            bpe_count(&counter, d->text + at, end - at);
            done += end - at;
            if (progress) progress(ctx, phase, done, train_bytes, 0);
            at = end;
        }
    }
    if (progress) progress(ctx, phase, done, train_bytes, 1);
    size_t want = r->vocab_size - 256 - r->n_specials, learned = bpe_train(&b, &counter, want);
    if (stats) *stats = (BpeStats){learned, train_bytes, byte_table_count(&counter.words), 0.0};
    bpe_counter_free(&counter);
    if (learned < want && !(r->fit_vocab && learned > 0)) {
        bpe_free(&b);
        return err_set(err, "the training split (%zu bytes) has only %zu merges to learn, not %zu: use --vocab-size %zu or less",
                       train_bytes, learned, want, 256 + learned + r->n_specials);
    }
    for (size_t i = 0; i < r->n_specials; i++) arrput(b.specials, strdup(r->specials[i]));
    return tokenizer_from_bpe(tok, &b, err);
}

int corpus_tokenizer(const Corpus *c, const TokenizerRecipe *r, Tokenizer *tok, CorpusProgress progress, void *ctx,
                     BpeStats *stats, Error *err) {
    memset(tok, 0, sizeof *tok);
    if (strcmp(r->kind, "char") == 0) return char_tokenizer(c, tok, err);
    if (strcmp(r->kind, "byte") == 0) {
        tokenizer_init_byte(tok);
        return 0;
    }
    double t0 = wall_seconds();
    int rc = bpe_tokenizer(c, r, tok, progress, ctx, stats, err);
    if (stats) stats->seconds = wall_seconds() - t0;
    return rc;
}

/* ---- encoding ----------------------------------------------------------------------- */

/* Releases mapped pages already read (they are file-backed: nothing is lost). */
static void release(const CorpusDoc *d, size_t upto) {
    long page = sysconf(_SC_PAGESIZE);
    size_t n = upto / (size_t)page * (size_t)page;
    if (n) madvise((void *)d->text, n, MADV_DONTNEED);
}

/* One split into `path`, streamed block by block; *count gets its tokens. */
static int encode_split(const Corpus *c, int s, const Tokenizer *tok, uint32_t sep_id, const char *path,
                        size_t *count, size_t *done, CorpusProgress progress, void *ctx, Error *err) {
    TokenWriter w;
    if (token_writer_open(&w, path, tok->vocab_size, err)) return -1;
    uint32_t *ids = NULL;
    int rc = 0;
    for (size_t i = 0; i < arrlenu(c->splits[s]) && rc == 0; i++) {
        const CorpusSegment *sg = &c->splits[s][i];
        const CorpusDoc *d = &c->docs[sg->doc];
        /* Between documents: of the one stream, or with explicit splits of this split. */
        int between = sg->from == 0 && (c->path_split ? i > 0 : sg->doc > 0);
        if (sep_id < tok->vocab_size && between) rc = token_writer_add(&w, &sep_id, 1, err);
        for (size_t at = sg->from; at < sg->to && rc == 0;) {
            size_t end = tokenizer_safe_cut(tok, d->text, sg->to, at + BLOCK);
            tokenizer_encode(tok, d->text + at, end - at, &ids);
            rc = token_writer_add_text(&w, tok, d->text + at, end - at, ids, arrlenu(ids), err);
            arrclear(ids);
            *done += end - at;
            if (progress) progress(ctx, "encoding", *done, c->total, 0);
            release(d, end);
            at = end;
        }
    }
    arrfree(ids);
    *count = w.n;
    if (rc) token_writer_abort(&w);
    else if (w.n < 2) {
        token_writer_abort(&w);
        rc = err_set(err, "the %s split is too small (%zu tokens)", split_names[s], w.n);
    } else rc = token_writer_close(&w, err);
    return rc;
}

int corpus_encode(const Corpus *c, const Tokenizer *tok, const char *separator, const char *dir, int skip_test,
                  size_t counts[N_SPLITS], CorpusProgress progress, void *ctx, Error *err) {
    uint32_t sep_id = separator ? tokenizer_special_id(tok, separator) : (uint32_t)tok->vocab_size;
    size_t done = 0;
    if (progress) progress(ctx, "encoding", 0, c->total, 0);
    for (int s = 0; s < N_SPLITS; s++) {
        counts[s] = 0;
        if (s == SPLIT_TEST && skip_test) break;
        char path[PATH_BUF];
        if (path_format(path, sizeof path, err, "%s/%s.bin", dir, split_names[s])) return -1;
        if (encode_split(c, s, tok, sep_id, path, &counts[s], &done, progress, ctx, err)) return -1;
    }
    if (progress) progress(ctx, "encoding", done, c->total, 1);
    return 0;
}
