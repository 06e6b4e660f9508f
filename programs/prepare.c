/* bin/prepare: text files -> train/val/test token files and the tokenizer. */
#include <signal.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tok/bpe.h"
#include "cli/cli.h"
#include "cli/options.h"
#include "model/config.h"
#include "data/tokens.h"
#include "runtime/ds.h"
#include "runtime/files.h"
#include "tok/byte.h"
#include "tok/char.h"
#include "tok/tokenizer.h"

static const char *prog = "prepare";

static void usage(FILE *f) {
    fprintf(f,
            "usage: bin/prepare --input FILE|DIR [--input ...] --out DIR [options]\n"
            "Tokenizes text into DIR/train.bin, DIR/val.bin, DIR/test.bin and\n"
            "DIR/tokenizer.txt. The inputs are read in order as one stream of documents\n"
            "(a directory: its files, by name); the split is contiguous over that stream:\n"
            "train first, then val, then test. The tokenizer learns from train only.\n"
            "\n"
            "  -i, --input FILE|DIR     a text file, or a directory of them; repeatable\n"
            "  -o, --out DIR            output directory (created if missing)\n"
            "  -t, --tokenizer KIND     char (characters of the training text + unknown;\n"
            "                           default), byte (256 symbols) or bpe (byte-level BPE)\n"
            "      --val-fraction F     share of the text for validation (default 0.05)\n"
            "      --test-fraction F    share of the text for test (default 0.05; 0 = none)\n"
            "bpe only:\n"
            "      --vocab-size N       257..65536: 256 bytes + merges + special tokens\n"
            "                           (default 4096)\n"
            "      --split-pattern P    pre-tokenizer: gpt4 (default), gpt2 or none (the\n"
            "                           whole text is one piece: small texts only)\n"
            "      --special TEXT       add a special token (repeatable)\n"
            "      --doc-separator TEXT a special token put between documents\n"
            "                           (e.g. \"<|endoftext|>\")\n"
            "  -h, --help               this help\n"
            "For bpe it also writes DIR/tokenizer.json (Hugging Face tokenizers format).\n");
}

/* One input file, mapped. */
typedef struct Doc {
    const char *path; /* stb_ds-owned copy in `paths` */
    const char *text;
    size_t len;
} Doc;

/* A part of a document that belongs to one split. */
typedef struct Segment {
    size_t doc, from, to;
} Segment;

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Appends path, or the regular files of a directory sorted by name. */
static int add_input(char ***paths, const char *path, Error *err) {
    struct stat st;
    if (stat(path, &st) != 0) return err_set(err, "cannot open '%s': %s", path, strerror(errno));
    if (!S_ISDIR(st.st_mode)) {
        arrput(*paths, strdup(path));
        return 0;
    }
    DIR *d = opendir(path);
    if (!d) return err_set(err, "cannot read directory '%s': %s", path, strerror(errno));
    char **found = NULL;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        char full[4096];
        snprintf(full, sizeof full, "%s/%s", path, e->d_name);
        if (stat(full, &st) == 0 && S_ISREG(st.st_mode)) arrput(found, strdup(full));
    }
    closedir(d);
    if (arrlenu(found) == 0) {
        arrfree(found);
        return err_set(err, "directory '%s' holds no files", path);
    }
    qsort(found, arrlenu(found), sizeof(char *), cmp_str);
    for (size_t i = 0; i < arrlenu(found); i++) arrput(*paths, found[i]);
    arrfree(found);
    return 0;
}

static int map_doc(Doc *d, const char *path, Error *err) {
    d->path = path;
    d->text = NULL;
    d->len = 0;
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        if (fd >= 0) close(fd);
        return err_set(err, "cannot open '%s': %s", path, strerror(errno));
    }
    d->len = (size_t)st.st_size;
    if (d->len) d->text = mmap(NULL, d->len, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (d->text == MAP_FAILED) {
        d->text = NULL;
        return err_set(err, "cannot map '%s': %s", path, strerror(errno));
    }
    return 0;
}

/* Moves a byte offset forward to the start of a UTF-8 character. */
static size_t char_boundary(const char *text, size_t len, size_t at) {
    while (at < len && ((unsigned char)text[at] & 0xC0) == 0x80) at++;
    return at;
}

/* Where a block of a segment may end: the tokenizer must see the same
 * pieces in blocks as in the whole. */
static size_t block_end(const Tokenizer *tok, const char *text, size_t len, size_t at) {
    const Bpe *b = tokenizer_bpe_of(tok);
    if (at >= len) return len;
    if (b) return b->pre.cuttable ? bpe_safe_cut(text, len, at) : len;
    return char_boundary(text, len, at);
}

#define BLOCK (16u << 20)
#define PROGRESS_MIN (32u << 20) /* inputs smaller than this print no progress */

typedef struct Progress {
    const char *phase;
    size_t done, total;
    double start, last;
} Progress;

static void progress_start(Progress *p, const char *phase, size_t total) {
    p->phase = phase;
    p->done = 0;
    p->total = total;
    p->start = p->last = cli_now();
}

static void progress_add(Progress *p, size_t bytes, int final) {
    p->done += bytes;
    double now = cli_now();
    if (p->total < PROGRESS_MIN || (!final && now - p->last < 1.0)) return;
    p->last = now;
    double rate = (double)p->done / (now - p->start + 1e-9);
    char eta[32];
    cli_duration(rate > 0 ? (double)(p->total - p->done) / rate : 0.0, eta, sizeof eta);
    int tty = isatty(2);
    fprintf(stderr, "%sprepare: %s %.1f/%.1f MB, %.1f MB/s, ETA %s%s", tty ? "\r" : "", p->phase, p->done / 1e6,
            p->total / 1e6, rate / 1e6, final ? "0s" : eta, tty && !final ? "   " : "\n");
    fflush(stderr);
}

/* Releases mapped pages already read (they are file-backed: nothing lost). */
static void release(const Doc *d, size_t upto) {
    long page = sysconf(_SC_PAGESIZE);
    size_t n = upto / (size_t)page * (size_t)page;
    if (n) madvise((void *)d->text, n, MADV_DONTNEED);
}

int main(int argc, char **argv) {
    signal(SIGXFSZ, SIG_IGN); /* past a file-size limit a write fails (EFBIG) and is reported, not fatal */
    const char *out = NULL, *kind = "char", *pattern = "gpt4", *separator = NULL;
    char **paths = NULL;
    const char **specials = NULL;
    size_t vocab = 4096;
    int vocab_given = 0;
    float val_frac = 0.05f, test_frac = 0.05f;
    Error err;
    static const struct option opts[] = {
        {"input", required_argument, 0, 'i'},         {"out", required_argument, 0, 'o'},
        {"tokenizer", required_argument, 0, 't'},     {"val-fraction", required_argument, 0, 'v'},
        {"test-fraction", required_argument, 0, 'e'}, {"vocab-size", required_argument, 0, 'V'},
        {"split-pattern", required_argument, 0, 'P'}, {"special", required_argument, 0, 'S'},
        {"doc-separator", required_argument, 0, 'D'}, {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    opterr = 0;
    int c, rc = 0;
    while (rc == 0 && (c = getopt_long(argc, argv, ":i:o:t:h", opts, NULL)) != -1) {
        switch (c) {
        case 'i': if (add_input(&paths, optarg, &err)) rc = cli_error(prog, "%s", err.msg); break;
        case 'o': out = optarg; break;
        case 't': kind = optarg; break;
        case 'v':
            if (parse_float(optarg, 0.0, 0.9, &val_frac, "--val-fraction", &err)) rc = cli_error(prog, "%s", err.msg);
            break;
        case 'e':
            if (parse_float(optarg, 0.0, 0.9, &test_frac, "--test-fraction", &err)) rc = cli_error(prog, "%s", err.msg);
            break;
        case 'V':
            if (parse_size(optarg, (size_t)1 << 40, &vocab, "--vocab-size", &err)) rc = cli_error(prog, "%s", err.msg);
            else if (vocab < 257 || vocab > 65536) rc = cli_error(prog, "--vocab-size must be from 257 to 65536 (got %zu)", vocab);
            vocab_given = 1;
            break;
        case 'P': pattern = optarg; break;
        case 'S':
            if (!optarg[0]) rc = cli_error(prog, "--special needs a non-empty text");
            arrput(specials, optarg);
            break;
        case 'D':
            if (!optarg[0]) rc = cli_error(prog, "--doc-separator needs a non-empty text");
            separator = optarg;
            break;
        case 'h': usage(stdout); goto cleanup;
        case ':': rc = cli_error(prog, "option '%s' needs a value (see --help)", argv[optind - 1]); break;
        default: rc = cli_error(prog, "unknown option '%s' (see --help)", argv[optind - 1]); break;
        }
    }
    if (rc) goto cleanup;
    int is_bpe = strcmp(kind, "bpe") == 0;
    const char *regex = bpe_pattern_regex(pattern);
    if (optind < argc) rc = cli_error(prog, "unexpected argument '%s' (see --help)", argv[optind]);
    else if (!paths || !out) rc = cli_error(prog, "--input and --out are required (see --help)");
    else if (!tokenizer_find(kind)) rc = cli_error(prog, "unknown tokenizer '%s' (%s)", kind, tokenizer_names());
    else if (!is_bpe && (vocab_given || specials || separator || strcmp(pattern, "gpt4") != 0))
        rc = cli_error(prog, "--vocab-size, --split-pattern, --special and --doc-separator need --tokenizer bpe");
    else if (!regex) rc = cli_error(prog, "unknown --split-pattern '%s' (%s)", pattern, bpe_pattern_names());
    else if (val_frac <= 0.0f) rc = cli_error(prog, "--val-fraction must be positive: training needs validation data");
    else if (val_frac + test_frac >= 0.5f) rc = cli_error(prog, "--val-fraction + --test-fraction must be below 0.5");
    if (rc) goto cleanup;
    if (separator) {
        int listed = 0;
        for (size_t i = 0; i < arrlenu(specials); i++) listed |= strcmp(specials[i], separator) == 0;
        if (!listed) arrput(specials, separator);
    }
    for (size_t i = 0; i < arrlenu(specials); i++)
        for (size_t j = 0; j < i; j++)
            if (strcmp(specials[i], specials[j]) == 0) rc = cli_error(prog, "special token '%s' is given twice", specials[i]);
    if (rc == 0 && is_bpe && vocab < 257 + arrlenu(specials))
        rc = cli_error(prog, "--vocab-size %zu leaves no merge: it must be at least 256 + %zu special tokens + 1", vocab,
                       (size_t)arrlenu(specials));
    if (rc) goto cleanup;

    /* Map the documents; the split points are byte offsets of their concatenation. */
    size_t n_docs = arrlenu(paths), total = 0;
    Doc *docs = calloc(n_docs, sizeof(Doc));
    for (size_t d = 0; d < n_docs && rc == 0; d++) {
        if (map_doc(&docs[d], paths[d], &err)) rc = cli_error(prog, "%s", err.msg);
        total += docs[d].len;
    }
    Tokenizer tok = {0};
    Segment *segs[3] = {NULL, NULL, NULL};
    if (rc == 0 && total == 0) rc = cli_error(prog, "'%s' is empty", n_docs == 1 ? paths[0] : "the input");
    if (rc) goto unmap;
    size_t bounds[4] = {0, (size_t)((double)total * (1.0 - val_frac - test_frac)), (size_t)((double)total * (1.0 - test_frac)),
                        total};
    for (size_t d = 0, base = 0; d < n_docs; base += docs[d].len, d++) {
        for (int s = 0; s < 3; s++) {
            size_t lo = bounds[s] > base ? bounds[s] - base : 0, hi = bounds[s + 1] > base ? bounds[s + 1] - base : 0;
            lo = char_boundary(docs[d].text, docs[d].len, lo < docs[d].len ? lo : docs[d].len);
            hi = char_boundary(docs[d].text, docs[d].len, hi < docs[d].len ? hi : docs[d].len);
            if (s == 2) hi = docs[d].len;
            if (hi > lo) {
                Segment sg = {d, lo, hi};
                arrput(segs[s], sg);
            }
        }
    }
    size_t train_bytes = 0;
    for (size_t i = 0; i < arrlenu(segs[0]); i++) train_bytes += segs[0][i].to - segs[0][i].from;

    /* The tokenizer, from the training split only. */
    double t0 = cli_now();
    if (strcmp(kind, "char") == 0) {
        const char **texts = NULL;
        size_t *lens = NULL;
        for (size_t i = 0; i < arrlenu(segs[0]); i++) {
            arrput(texts, docs[segs[0][i].doc].text + segs[0][i].from);
            arrput(lens, segs[0][i].to - segs[0][i].from);
        }
        if (tokenizer_build_char_parts(&tok, texts, lens, arrlenu(texts), &err))
            rc = cli_error(prog, "the training split: %s", err.msg);
        arrfree(texts);
        arrfree(lens);
    } else if (strcmp(kind, "byte") == 0) {
        tokenizer_init_byte(&tok);
    } else {
        Bpe b;
        if (bpe_init(&b, pattern, regex, &err)) {
            rc = cli_error(prog, "%s", err.msg);
            goto unmap;
        }
        BpeCounter counter;
        bpe_counter_init(&counter, &b.pre);
        Progress pr;
        progress_start(&pr, "counting pieces of", train_bytes);
        for (size_t i = 0; i < arrlenu(segs[0]); i++) {
            const Doc *d = &docs[segs[0][i].doc];
            for (size_t at = segs[0][i].from; at < segs[0][i].to;) {
                size_t end = b.pre.cuttable ? bpe_safe_cut(d->text, segs[0][i].to, at + BLOCK) : segs[0][i].to;
                bpe_count(&counter, d->text + at, end - at);
                progress_add(&pr, end - at, 0);
                at = end;
            }
        }
        progress_add(&pr, 0, 1);
        size_t want = vocab - 256 - arrlenu(specials);
        size_t learned = bpe_train(&b, &counter, want);
        size_t words = byte_table_count(&counter.words);
        bpe_counter_free(&counter);
        if (learned < want) {
            bpe_free(&b);
            rc = cli_error(prog, "the training split (%zu bytes) has only %zu merges to learn, not %zu: use --vocab-size %zu or less",
                           train_bytes, learned, want, 256 + learned + (size_t)arrlenu(specials));
            goto unmap;
        }
        for (size_t i = 0; i < arrlenu(specials); i++) arrput(b.specials, strdup(specials[i]));
        tokenizer_from_bpe(&tok, &b, &err);
        fprintf(stderr, "prepare: learned %zu merges from %zu bytes (%zu distinct pieces) in %.2f s\n", learned,
                train_bytes, words, cli_now() - t0);
    }
    if (rc) goto unmap;
    if (mkdir(out, 0755) != 0) {
        struct stat st;
        if (stat(out, &st) != 0 || !S_ISDIR(st.st_mode)) {
            rc = cli_error(prog, "cannot create directory '%s'", out);
            goto unmap;
        }
    }

    /* Encode each split as it streams past, block by block. */
    const char *names[] = {"train", "val", "test"};
    uint32_t sep_id = (uint32_t)tok.vocab_size;
    for (size_t i = 0; separator && i < tok.vocab_size; i++) {
        size_t len;
        const char *b = tokenizer_token(&tok, (uint32_t)i, &len);
        if (tok.special[i] && len == strlen(separator) && memcmp(b, separator, len) == 0) sep_id = (uint32_t)i;
    }
    size_t counts[3] = {0, 0, 0};
    char path[4096];
    Progress pr;
    progress_start(&pr, "encoding", total);
    t0 = cli_now();
    uint32_t *ids = NULL;
    for (int s = 0; s < 3 && rc == 0; s++) {
        if (s == 2 && test_frac == 0.0f) break;
        TokenWriter w;
        snprintf(path, sizeof path, "%s/%s.bin", out, names[s]);
        if (token_writer_open(&w, path, tok.vocab_size, &err)) {
            rc = cli_error(prog, "%s", err.msg);
            break;
        }
        for (size_t i = 0; i < arrlenu(segs[s]) && rc == 0; i++) {
            const Segment *sg = &segs[s][i];
            const Doc *d = &docs[sg->doc];
            arrclear(ids);
            if (separator && sg->from == 0 && sg->doc > 0) arrput(ids, sep_id); /* between documents */
            for (size_t at = sg->from; at < sg->to && rc == 0;) {
                size_t end = block_end(&tok, d->text, sg->to, at + BLOCK);
                tokenizer_encode(&tok, d->text + at, end - at, &ids);
                if (token_writer_add(&w, ids, arrlenu(ids), &err)) rc = cli_error(prog, "%s", err.msg);
                arrclear(ids);
                progress_add(&pr, end - at, 0);
                release(d, end);
                at = end;
            }
        }
        counts[s] = w.n;
        if (rc) token_writer_abort(&w);
        else if (counts[s] < 2) {
            token_writer_abort(&w);
            rc = cli_error(prog, "the %s split is too small (%zu tokens)", names[s], counts[s]);
        } else if (token_writer_close(&w, &err)) rc = cli_error(prog, "%s", err.msg);
    }
    arrfree(ids);
    if (rc == 0) progress_add(&pr, 0, 1);
    double encode_s = cli_now() - t0;
    snprintf(path, sizeof path, "%s/tokenizer.txt", out);
    if (rc == 0 && tokenizer_save(&tok, path, &err)) rc = cli_error(prog, "%s", err.msg);
    if (rc == 0 && tokenizer_bpe_of(&tok)) {
        char *json = bpe_export_hf_json(tokenizer_bpe_of(&tok), &err);
        snprintf(path, sizeof path, "%s/tokenizer.json", out);
        if (!json || write_file_atomic(path, json, strlen(json), &err)) rc = cli_error(prog, "%s", err.msg);
        free(json);
    }
    if (rc == 0)
        printf("prepared %s: %s tokenizer, vocabulary %zu, hash %s; train %zu, val %zu, test %zu tokens "
               "(%zu bytes of text in %zu file%s, encoded in %.2f s)\n",
               out, kind, tok.vocab_size, tok.hash, counts[0], counts[1], counts[2], total, n_docs,
               n_docs == 1 ? "" : "s", encode_s);
unmap:
    for (size_t d = 0; d < n_docs; d++)
        if (docs[d].text) munmap((void *)docs[d].text, docs[d].len);
    free(docs);
    for (int s = 0; s < 3; s++) arrfree(segs[s]);
    tokenizer_free(&tok);
cleanup:
    for (size_t i = 0; i < arrlenu(paths); i++) free(paths[i]);
    arrfree(paths);
    arrfree(specials);
    return rc;
}
